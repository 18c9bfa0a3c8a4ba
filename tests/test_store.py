"""The results store (issue 9, part 3): a hit only for the same identity, corrupt entries recomputed,
sweeps that keep each finished point and record invalid ones."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import blobs, damage_store_entry

from fedcore import algorithms, models, store
from fedcore.run import Problem, simulate
from fedcore.store import Store
from fedcore.sweeps import sweep

OPTIONS = dict(rounds=3, clients_per_round=3, local_steps=2, batch_size=4, progress=False)


def problem(data=None, model_seed=0) -> Problem:
    return Problem(data if data is not None else blobs(),
                   models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=model_seed))


def test_a_hit_returns_the_identical_history_without_computing(tmp_path) -> None:
    runs = Store(tmp_path / "runs.sqlite")
    first = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    assert len(runs) == 1 and not first.stored
    second = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    assert second.stored and len(runs) == 1
    pd.testing.assert_frame_equal(first.frame, second.frame, check_exact=True)
    assert torch.equal(first.final_state["x"], second.final_state["x"])
    assert (second.algorithm, second.backend, second.diverged_round) == (first.algorithm, first.backend, None)


@pytest.mark.parametrize("change", ["hyperparameter", "server option", "seed", "data", "model", "rounds", "source"])
def test_anything_that_determines_the_run_misses(tmp_path, monkeypatch, change: str) -> None:
    runs = Store(tmp_path / "runs.sqlite")
    simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    algorithm, options, prob = algorithms.fedadam(0.1, server_lr=0.05), dict(OPTIONS), problem()
    if change == "hyperparameter":
        algorithm = algorithms.fedadam(0.1, server_lr=0.06)
    elif change == "server option":
        algorithm = algorithms.fedadam(0.1, server_lr=0.05, bias_correction="keras")
    elif change == "seed":
        options["seed"] = 1
    elif change == "data":
        prob = problem(blobs(seed=1))
    elif change == "model":
        prob = problem(model_seed=1)
    elif change == "rounds":
        options["rounds"] = 4
    else:
        source_of = store.source_of
        monkeypatch.setattr(store, "source_of", lambda *args: source_of(*args)._replace(hash="another fedcore"))
    history = simulate(prob, algorithm, store=runs, **options)
    assert not history.stored and len(runs) == 2


@pytest.mark.parametrize("change", ["mul_", "through numpy", "through .data", "test set"])
def test_data_changed_in_place_is_another_run(tmp_path, change) -> None:
    """The store never returns the history of the data as it was before an in-place change, and a sweep (many
    runs on one data set) sees it too."""
    from test_checkpoint import IN_PLACE

    runs, data = Store(tmp_path / "runs.sqlite"), blobs()
    first = simulate(problem(data), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    sweep(problem(data), algorithms.fedavg, {"client_lr": [0.1, 0.2]}, store=runs, **OPTIONS)
    IN_PLACE[change](data)
    again = simulate(problem(data), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    assert not again.stored and len(runs) == 3
    if change != "test set":
        assert not again.frame["train_loss"].equals(first.frame["train_loss"])
    passes = sweep(problem(data), algorithms.fedavg, {"client_lr": [0.1, 0.2]}, store=runs, **OPTIONS)
    assert len(runs) == 4 and passes["final_train_loss"].iloc[0] == again.frame["train_loss"].iloc[-1]


def test_a_corrupt_entry_is_detected_and_recomputed(tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    runs = Store(path)
    first = simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS)
    damage_store_entry(path)
    with pytest.warns(RuntimeWarning, match="is corrupt"):
        again = simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS)
    assert not again.stored and torch.equal(again.final_state["x"], first.final_state["x"])
    assert simulate(problem(), algorithms.scaffold(0.1), store=runs, **OPTIONS).stored  # kept again


def test_runs_that_cannot_be_keyed_are_neither_looked_up_nor_kept(tmp_path) -> None:
    """A schedule reading an object of no known kind (its content unknown), or a callback (which sees every round),
    cannot be keyed."""
    runs = Store(tmp_path / "runs.sqlite")
    opaque = object()
    simulate(problem(), algorithms.fedavg(lambda t: 0.1 if opaque else 0.2), store=runs, **OPTIONS)
    simulate(problem(), algorithms.fedavg(0.1), store=runs, callback=lambda t, state: None, **OPTIONS)
    assert len(runs) == 0


def test_a_short_trace_is_kept_with_its_run_and_a_long_one_is_not(tmp_path, monkeypatch) -> None:
    """A traced run comes back from the store with the identical trace; an untraced entry of the same run does
    not answer a traced call (it has no trace); a trace above MAX_TRACE_BYTES is computed every time."""
    from fedcore import run as run_module

    runs = Store(tmp_path / "runs.sqlite", keep_models=False)
    plain = simulate(problem(), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    traced = simulate(problem(), algorithms.fedavg(0.1), store=runs, trace=True, **OPTIONS)
    assert not traced.stored and len(runs) == 2 and len(traced.trace) == OPTIONS["rounds"]
    again = simulate(problem(), algorithms.fedavg(0.1), store=runs, trace=True, **OPTIONS)
    assert again.stored and len(runs) == 2
    for (clients, steps), (clients_again, steps_again) in zip(traced.trace, again.trace, strict=True):
        assert torch.equal(clients, clients_again) and torch.equal(steps, steps_again)
    pd.testing.assert_frame_equal(again.frame.drop(columns="seconds"), plain.frame.drop(columns="seconds"),
                                  check_exact=True)
    assert simulate(problem(), algorithms.fedavg(0.1), store=runs, **OPTIONS).trace is None  # the plain entry
    dim = problem().model.dim  # this trace: rounds x K x S x d float32 numbers
    monkeypatch.setattr(run_module, "MAX_TRACE_BYTES", 3 * 2 * 3 * dim * 4 - 1)
    longer = simulate(problem(), algorithms.fedavg(0.2), store=runs, trace=True, **OPTIONS)
    assert not longer.stored and len(runs) == 2 and len(longer.trace) == 3


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


def file_digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_table_of_an_earlier_fedcore_is_left_as_it_is(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("CREATE TABLE runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, created REAL, "
                   "payload BLOB)")
        db.execute("INSERT INTO runs VALUES ('k', '{}', 1, 0, x'00')")
    runs = Store(path)
    assert len(runs) == 0
    assert not simulate(problem(), algorithms.fedavg(0.1), store=runs, **OPTIONS).stored and len(runs) == 1
    assert simulate(problem(), algorithms.fedavg(0.1), store=Store(path), **OPTIONS).stored
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT * FROM runs").fetchall() == [("k", "{}", 1, 0.0, b"\x00")]


@pytest.mark.parametrize("tables", [
    ["CREATE TABLE runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, created REAL, checksum TEXT, "
     "payload BLOB)"],
    ["CREATE TABLE runs (name TEXT, score REAL)"],
    ["CREATE TABLE experiments (name TEXT, score REAL)"],
    ["CREATE TABLE fedcore_runs (key TEXT)", "CREATE TABLE fedcore_meta (name TEXT PRIMARY KEY, value TEXT)",
     "INSERT INTO fedcore_meta VALUES ('layout', '99')"],
    ["CREATE TABLE fedcore_runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, source TEXT, created REAL, "
     "payload BLOB)", "CREATE TABLE fedcore_meta (name TEXT PRIMARY KEY, value TEXT)",
     "INSERT INTO fedcore_meta VALUES ('layout', '3')",
     "INSERT INTO fedcore_runs VALUES ('k', '{}', 1, 'v1', 0, x'00')"],
], ids=["a runs table with other columns", "a user's runs", "a user's other table", "a later layout",
        "layout 3 (one source for all families)"])
def test_a_file_that_is_not_a_store_of_this_layout_is_refused_untouched(tmp_path, tables) -> None:
    """A user's SQLite file (or a store of another layout) is never dropped or altered: refused, byte for byte."""
    path = tmp_path / "mine.sqlite"
    with closing(sqlite3.connect(path)) as db, db:
        for statement in tables:
            db.execute(statement)
        if "score" in tables[0]:
            db.executemany(f"INSERT INTO {tables[0].split()[2]} VALUES (?, ?)", [("a", 1.0), ("b", 2.0), ("c", 3.0)])
    before = file_digest(path)
    with pytest.raises(ValueError, match=r"store='.*mine.sqlite' is (an SQLite file with tables|a fedcore results "
                                         r"store of layout '(99|3)').*left as it is"):
        Store(path)
    with pytest.raises(ValueError, match=r"left as it is"):
        simulate(problem(), algorithms.fedavg(0.1), store=path, **OPTIONS)
    assert file_digest(path) == before


def test_an_entry_moved_under_another_key_is_not_another_run(tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    runs = Store(path)
    slow = simulate(problem(), algorithms.fedavg(0.01), store=runs, **OPTIONS)
    fast = simulate(problem(), algorithms.fedavg(0.5), store=runs, **OPTIONS)
    with closing(sqlite3.connect(path)) as db, db:  # the fast run's entry put under the slow run's key
        rows = dict(db.execute("SELECT key, payload FROM fedcore_runs ORDER BY created").fetchall())
        slow_key, fast_key = list(rows)
        db.execute("UPDATE fedcore_runs SET payload = ? WHERE key = ?", (rows[fast_key], slow_key))
    with pytest.warns(RuntimeWarning, match=r"is corrupt \(it was written under key .* moved or edited\)"):
        again = simulate(problem(), algorithms.fedavg(0.01), store=runs, **OPTIONS)
    assert not again.stored
    pd.testing.assert_frame_equal(again.frame.drop(columns="seconds"), slow.frame.drop(columns="seconds"))
    assert not again.frame["train_loss"].equals(fast.frame["train_loss"])


def test_a_store_without_models_keeps_the_history_and_says_so(tmp_path) -> None:
    runs = Store(tmp_path / "runs.sqlite", keep_models=False)
    first = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    second = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    assert second.stored
    pd.testing.assert_frame_equal(first.frame, second.frame, check_exact=True)
    with pytest.raises(KeyError, match=r"keeps no final models.*store=None"):
        second.final_state["x"]
    assert Store(tmp_path / "other.sqlite").keep_models and not store.default_store(str(tmp_path / "d")).keep_models
    assert store.default_store(str(tmp_path / "d"), keep_models=True).keep_models
    whole = Store(tmp_path / "runs.sqlite")  # the same file, keeping models: the entry without one is computed again
    third = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=whole, **OPTIONS)
    assert not third.stored and third.final_state["x"].shape == first.final_state["x"].shape
    fourth = simulate(problem(), algorithms.fedadam(0.1, server_lr=0.05), store=whole, **OPTIONS)
    assert fourth.stored and torch.equal(fourth.final_state["x"], first.final_state["x"])


def test_entries_of_older_sources_are_capped_per_family(tmp_path, monkeypatch) -> None:
    """Only the two most recent versions of a family's source keep their entries (a store does not grow a copy per
    change of the code), and one family's new versions delete none of another family's entries (an edit of FAFED's
    module leaves FedAvg's runs current)."""
    path = tmp_path / "runs.sqlite"
    source_of = store.source_of
    for version in ("v1", "v2", "v3"):
        monkeypatch.setattr(store, "source_of", lambda *args, version=version: source_of(*args)._replace(hash=version))
        simulate(problem(), algorithms.fedavg(0.1), store=Store(path), **OPTIONS)
        simulate(problem(), algorithms.fedavg(0.2), store=Store(path), **OPTIONS)
        if version == "v1":
            simulate(problem(), algorithms.fafed(0.05, alpha=0.9), store=Store(path), **OPTIONS)
    with closing(sqlite3.connect(path)) as db:
        kept = db.execute("SELECT family, source, COUNT(*) FROM fedcore_runs GROUP BY family, source "
                          "ORDER BY family, source").fetchall()
    assert kept == [("algorithms/fafed.py", "v1", 1), ("algorithms/fedopt.py", "v2", 2),
                    ("algorithms/fedopt.py", "v3", 2)]


@pytest.mark.parametrize("values", [(0.1, 0.2), np.array([0.1, 0.2]), torch.tensor([0.1, 0.2], dtype=torch.float64),
                                    pd.Series([0.1, 0.2])], ids=["tuple", "numpy", "tensor", "series"])
def test_a_grid_takes_any_sequence_of_values(values) -> None:
    """The same table as for the list [0.1, 0.2], with plain Python numbers in the point columns."""
    expected = sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.2]}, **OPTIONS)
    table = sweep(problem(), algorithms.fedavg, {"client_lr": values}, **OPTIONS)
    pd.testing.assert_frame_equal(table, expected)
    assert all(type(value) is float for value in table["client_lr"])
    steps = sweep(problem(), lambda client_lr, local: algorithms.fedavg(client_lr * local),
                  {"client_lr": [0.1], "local": range(1, 3)}, **OPTIONS)
    assert list(steps["local"]) == [1, 2]
