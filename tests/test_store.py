"""The results store (issue 9, part 3): a hit only for the same identity, corrupt entries recomputed,
sweeps that keep each finished point and record invalid ones."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models, store
from fedcore.run import Problem, simulate, sweep
from fedcore.store import Store

OPTIONS = dict(rounds=3, clients_per_round=3, local_steps=2, batch_size=4, progress=False)


def problem(data=None, model_seed=0) -> Problem:
    return Problem(data if data is not None else blobs(),
                   models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=model_seed))


def test_a_hit_returns_the_identical_history_without_computing(tmp_path) -> None:
    runs = Store(tmp_path / "runs.sqlite")
    first = simulate(problem(), algorithms.fedadam(0.1, 0.05), store=runs, **OPTIONS)
    assert len(runs) == 1 and not first.stored
    second = simulate(problem(), algorithms.fedadam(0.1, 0.05), store=runs, **OPTIONS)
    assert second.stored and len(runs) == 1
    pd.testing.assert_frame_equal(first.frame, second.frame, check_exact=True)
    assert torch.equal(first.final_state["x"], second.final_state["x"])
    assert (second.algorithm, second.backend, second.diverged_round) == (first.algorithm, first.backend, None)


@pytest.mark.parametrize("change", ["hyperparameter", "server option", "seed", "data", "model", "rounds", "source"])
def test_anything_that_determines_the_run_misses(tmp_path, monkeypatch, change: str) -> None:
    runs = Store(tmp_path / "runs.sqlite")
    simulate(problem(), algorithms.fedadam(0.1, 0.05), store=runs, **OPTIONS)
    algorithm, options, prob = algorithms.fedadam(0.1, 0.05), dict(OPTIONS), problem()
    if change == "hyperparameter":
        algorithm = algorithms.fedadam(0.1, 0.06)
    elif change == "server option":
        algorithm = algorithms.fedadam(0.1, 0.05, bias_correction="keras")
    elif change == "seed":
        options["seed"] = 1
    elif change == "data":
        prob = problem(blobs(seed=1))
    elif change == "model":
        prob = problem(model_seed=1)
    elif change == "rounds":
        options["rounds"] = 4
    else:
        monkeypatch.setattr(store, "source_hash", lambda: "another fedcore")
    history = simulate(prob, algorithm, store=runs, **options)
    assert not history.stored and len(runs) == 2


def test_a_corrupt_entry_is_detected_and_recomputed(tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    runs = Store(path)
    first = simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS)
    with sqlite3.connect(path) as db:
        (payload,) = db.execute("SELECT payload FROM runs").fetchone()
        damaged = bytearray(payload)
        damaged[len(damaged) // 2] ^= 0xFF
        db.execute("UPDATE runs SET payload = ?", (bytes(damaged),))
    with pytest.warns(RuntimeWarning, match="is corrupt"):
        again = simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS)
    assert not again.stored and torch.equal(again.final_state["x"], first.final_state["x"])
    assert simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS).stored  # kept again


def test_runs_that_cannot_be_keyed_are_neither_looked_up_nor_kept(tmp_path) -> None:
    runs = Store(tmp_path / "runs.sqlite")
    simulate(problem(), algorithms.fedavg(lambda t: 0.1), store=runs, **OPTIONS)
    simulate(problem(), algorithms.fedavg(0.1), store=runs, callback=lambda t, state: None, **OPTIONS)
    assert len(runs) == 0


def test_an_invalid_point_is_a_row_with_its_error(tmp_path) -> None:
    table = sweep(problem(), lambda client_lr: algorithms.fedavg(client_lr), {"client_lr": [0.1, -0.1, 0.2]},
                  **OPTIONS)
    assert list(table["client_lr"]) == [0.1, -0.1, 0.2]
    assert table["error"].isna().tolist() == [True, False, True]
    assert "client_lr=-0.1" in table.loc[1, "error"]
    assert table["final_train_loss"].notna().tolist() == [True, False, True]


@pytest.mark.parametrize("grid", [{"client_lr": 0.1}, {"client_lr": "0.1"}, {"client_lr": []}, {}, [0.1]])
def test_the_grid_is_validated(grid) -> None:
    with pytest.raises(ValueError, match=r"grid"):
        sweep(problem(), algorithms.fedavg, grid, **OPTIONS)


def test_default_store_follows_the_environment(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FEDCORE_STORE", "off")
    assert store.default_store() is None
    monkeypatch.setenv("FEDCORE_STORE", str(tmp_path / "mine.sqlite"))
    assert store.default_store().path == tmp_path / "mine.sqlite"
    monkeypatch.delenv("FEDCORE_STORE")
    monkeypatch.setattr(store, "DEFAULT_PATH", tmp_path / "default.sqlite")
    assert store.default_store().path == tmp_path / "default.sqlite"
    with pytest.raises(ValueError, match="is a folder"):
        Store(tmp_path)


def test_a_store_of_another_layout_is_dropped_not_an_error(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, created REAL, "
                   "checksum TEXT, payload BLOB)")
        db.execute("INSERT INTO runs VALUES ('k', '{}', 1, 0, 'x', x'00')")
    with pytest.warns(RuntimeWarning, match="has another layout"):
        runs = Store(path)
    assert len(runs) == 0
    assert simulate(problem(), algorithms.fedavg(0.1), store=runs, **OPTIONS) is not None and len(runs) == 1
