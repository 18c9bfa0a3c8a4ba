"""Nothing silent: each kind of bad input to records, claim rules, sweeps, Flower's run config, the explorers' grids
and the store gets a clear error naming the argument, its value and what is allowed, or the right result."""

from __future__ import annotations

import math
import sqlite3
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from fedcore import algorithms, comparisons, explore, models
from fedcore.data import federated_quadratic
from fedcore.results import FailedRun
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.store import LAYOUT, Store
from fedcore.sweeps import sweep
from papers import claims

SMALL = dict(rounds=4, clients_per_round=3, local_steps=2, batch_size=4, progress=False)


@pytest.fixture(scope="module")
def problem() -> Problem:
    return Problem(federated_quadratic(num_clients=6, dim=4, samples_per_client=8, seed=1),
                   models.make("linear_regression", (4,), None, seed=0).double())


def _build(client_lr: float):
    return algorithms.fedadam(client_lr=client_lr, server_lr=0.1)


# ---------------------------------------------------------------- records: no shadowing, one number per run


@pytest.mark.parametrize("column", ["train_loss", "test_loss", "test_accuracy", "round", "seconds"])
def test_a_record_column_cannot_take_one_of_fedcores(problem, column) -> None:
    with pytest.raises(ValueError, match=f"record=.* returned the column '{column}', which is fedcore's own"):
        simulate(problem, _build(0.1), record=lambda x: {column: x.norm()}, **SMALL)


def test_a_record_column_cannot_take_an_algorithms_metric(problem) -> None:
    """FedExP writes its server step size ``eta_g``; a record of that name is refused in the first round."""
    metric = next(name for name in simulate(problem, algorithms.fedexp(client_lr=0.1, eps=0.1), **SMALL).frame
                  if name not in ("train_loss", "test_loss", "seconds"))
    with pytest.raises(ValueError, match=f"returned the column '{metric}', which is fedcore's own"):
        simulate(problem, algorithms.fedexp(client_lr=0.1, eps=0.1), record=lambda x: {metric: x.sum()}, **SMALL)


@pytest.mark.parametrize("shape", ["scalar", "per-run vector", "python float"])
def test_a_record_gives_the_same_column_in_a_batched_pass_and_in_separate_runs(problem, shape) -> None:
    """A record returning one number over what it is given (``x.norm()``), one per row (``x.norm(dim=1)``) or a
    Python float: the sweep's column is the same with runs batched and one at a time, and each value is the norm of
    that run's final model (computed here from the run alone)."""
    record = {"scalar": lambda x: {"norm": x.norm()}, "per-run vector": lambda x: {"norm": x.norm(dim=1)},
              "python float": lambda x: {"norm": float(x.norm())}}[shape]
    grid = {"client_lr": [0.01, 0.05, 0.2]}
    last = {"summary": lambda history: {"norm": float(history.frame["norm"].iloc[-1])}}
    batched = sweep(problem, _build, grid, batch="auto", record=record, **last, **SMALL)
    alone = sweep(problem, _build, grid, batch="off", record=record, **last, **SMALL)
    assert batched["norm"].tolist() == alone["norm"].tolist()
    assert len(set(batched["norm"])) == 3  # three different models, not one number over the pass
    for lr, norm in zip(grid["client_lr"], batched["norm"]):
        history = simulate(problem, _build(lr), **SMALL)
        assert norm == pytest.approx(float(history.final_state["x"].norm()), rel=1e-12)


@pytest.mark.parametrize("returned, refusal", [
    (lambda x: {"m": x}, r"returned 'm': a Tensor of shape \[1, 4\]; it must be one number"),
    (lambda x: {"m": "far"}, r"returned 'm': a str 'far'; it must be one number"),
    (lambda x: {"m": [1.0]}, r"returned 'm': a list \[1.0\]; it must be one number"),
    (lambda x: x.norm(), r"returned tensor\(.*\); it must return \{name: one number\}"),
])
def test_a_record_that_returns_no_number_per_run_is_named(problem, returned, refusal) -> None:
    for run in (lambda: simulate(problem, _build(0.1), record=returned, **SMALL),
                lambda: simulate_runs(problem, [_build(0.1), _build(0.2)], record=returned, **SMALL)):
        with pytest.raises(TypeError, match=refusal):
            run()


# ---------------------------------------------------------------- claim rules pair by label


def test_claims_pair_seed_labelled_scores_by_seed() -> None:
    """b's seeds in reverse order: paired by position the differences are 3, 1, -1, -3 (within the noise); by seed
    they are all 0.5 (confirmed)."""
    a = pd.Series([1.0, 2.0, 3.0, 4.0], index=[0, 1, 2, 3])
    b = pd.Series([0.5, 1.5, 2.5, 3.5], index=[0, 1, 2, 3])
    assert comparisons.compare(a, b)[0] == comparisons.CONFIRMED
    assert comparisons.compare(a, b.iloc[::-1]) == comparisons.compare(a, b)
    by_position = comparisons.compare(a.to_numpy(), b.iloc[::-1].to_numpy())[0]  # no labels: paired by position
    assert by_position == comparisons.WITHIN_NOISE
    assert comparisons.compare(a.to_dict(), {3: 3.5, 1: 1.5, 0: 0.5, 2: 2.5}) == comparisons.compare(a, b)
    assert comparisons.paired(a, b.iloc[::-1]).differences == (0.5, 0.5, 0.5, 0.5)


@pytest.mark.parametrize("call, error, refusal", [
    (lambda: comparisons.compare(pd.Series([1.0, 2.0], index=[0, 1]), pd.Series([1.0, 2.0], index=[5, 6])), ValueError,
     r"a is labelled by seeds \[0, 1\] and b by \[5, 6\]"),
    (lambda: comparisons.compare(np.ones((2, 2)), np.zeros((2, 2))), ValueError,
     r"a has shape \(2, 2\): give one score"),
    (lambda: comparisons.paired(pd.DataFrame({"x": [1.0, 2.0]}), [1.0, 2.0]), ValueError, r"a has shape \(2, 1\)"),
    (lambda: comparisons.compare(pd.Series([1.0, 2.0], index=[0, 0]), [1.0, 2.0]), ValueError,
     r"seeds \[0, 0\], one of"),
    (lambda: comparisons.compare("0.1 0.2", [1.0, 2.0]), TypeError, r"a='0.1 0.2' must hold one score per seed"),
    (lambda: comparisons.compare([1.0, 2.0], [1.0, 2.0], margin=math.nan), ValueError, r"margin=nan must be finite"),
    (lambda: comparisons.compare([1.0, 2.0], [1.0, 2.0], higher_is_better="yes"), TypeError, r"higher_is_better='yes'"),
    (lambda: claims.verdict(5, 3), ValueError, r"hits=5 must be in \[0, 3\]"),
    (lambda: claims.verdict(-1, 3), ValueError, r"hits=-1 must be in \[0, 3\]"),
    (lambda: claims.verdict(1, 2.5), TypeError, r"total=2.5 must be an int"),
    (lambda: claims.learned_something({"FedAvg": 80.0}, math.nan, 1.0), ValueError, r"baseline=nan must be finite"),
    (lambda: claims.learned_something([80.0], 10.0, 1.0), TypeError, r"scores=\[80.0\] must map each method"),
    (lambda: claims.judge("confirmed"), TypeError, r"outcomes='confirmed' must be a list of outcomes"),
    (lambda: claims.judge(["confirmed", "yes"]), ValueError, r"outcomes \['yes'\] are not among"),
])
def test_claim_rules_refuse_what_they_cannot_pair_or_count(call, error, refusal) -> None:
    with pytest.raises(error, match=refusal):
        call()


def test_learned_something_counts_a_nan_score_as_not_beating() -> None:
    assert claims.learned_something({"A": 50.0, "B": 60.0, "C": math.nan}, 10.0, 5.0)
    assert not claims.learned_something({"A": 50.0, "B": math.nan, "C": math.nan}, 10.0, 5.0)


# ---------------------------------------------------------------- sweeps: seeds, and a run that fails mid-sweep


def test_a_sweep_refuses_a_seed_twice_and_takes_arrays_of_seeds(problem) -> None:
    with pytest.raises(ValueError, match=r"seeds=\[0, 0\] repeats a seed"):
        sweep(problem, _build, {"client_lr": [0.1]}, seeds=[0, 0], **SMALL)
    listed = sweep(problem, _build, {"client_lr": [0.1]}, seeds=[0, 1], **SMALL)
    for seeds in (np.arange(2), torch.arange(2)):
        pd.testing.assert_frame_equal(sweep(problem, _build, {"client_lr": [0.1]}, seeds=seeds, **SMALL), listed)
    histories = simulate_runs(problem, [_build(0.1)] * 2, seeds=np.array([0, 1]), **SMALL)
    assert [h.frame["train_loss"].iloc[-1] for h in histories] == listed["final_train_loss"].tolist()


def _turning(start: float):
    """FedAvg whose client step ``start - 0.04 t`` turns negative in round 3 (t = 2) when ``start = 0.07``."""
    return algorithms.fedavg(client_lr=lambda t: start - 0.04 * t)


def test_a_run_that_fails_mid_sweep_is_an_error_row_and_the_others_are_kept(problem, tmp_path) -> None:
    store = Store(tmp_path / "store.sqlite")
    table = sweep(problem, _turning, {"start": [0.2, 0.07, 0.3]}, store=store, **SMALL)
    failed = table.loc[table["start"] == 0.07].iloc[0]
    assert failed["error"].startswith("failed in round 3: ValueError: client_lr=")
    assert math.isnan(failed["final_train_loss"])
    finished = table.loc[table["start"] != 0.07]
    assert finished["error"].isna().all() and finished["final_train_loss"].notna().all()
    assert len(store) == 2  # the finished runs are kept; the failed one is not
    alone = simulate(problem, _turning(0.3), **SMALL)
    assert finished["final_train_loss"].iloc[-1] == alone.frame["train_loss"].iloc[-1]


def test_a_batched_pass_that_fails_is_rerun_one_run_at_a_time(problem) -> None:
    """A record that raises for the run that moved furthest: in a pass of three, that run is a FailedRun with its
    round; the other two equal their runs alone."""
    def norms(lr: float) -> pd.Series:
        return simulate(problem, _build(lr), record=lambda x: {"norm": x.norm()}, **SMALL).frame["norm"]

    far = max(norms(0.01).max(), norms(0.05).max()) * (1 + 1e-9)  # the others never reach it
    assert norms(0.2).max() > far
    first = int(norms(0.2).index[norms(0.2) >= far][0])  # the round where the run alone first reaches it

    def picky(x):
        if float(x.norm()) >= far:
            raise ValueError("moved too far")
        return {"norm": x.norm()}

    built = [_build(0.01), _build(0.2), _build(0.05)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = simulate_runs(problem, built, record=picky, errors="keep", **SMALL)
    assert isinstance(runs[1], FailedRun) and runs[1].round == first > 0
    assert str(runs[1]) == f"failed in round {first}: ValueError: moved too far"
    for i in (0, 2):
        alone = simulate(problem, built[i], record=picky, **SMALL)
        pd.testing.assert_frame_equal(runs[i].frame.drop(columns="seconds"), alone.frame.drop(columns="seconds"))
    with pytest.raises(ValueError, match="moved too far") as raised:
        simulate_runs(problem, built, record=picky, **SMALL)
    assert raised.value.round == first and any(f"raised in round {first}" in note for note in raised.value.__notes__)
    with pytest.raises(ValueError, match=r"errors='skip' not one of \['keep', 'raise'\]"):
        simulate_runs(problem, built, errors="skip", **SMALL)


# ---------------------------------------------------------------- the smaller kinds


def test_grid_options_refuse_a_value_that_is_not_a_finite_number() -> None:
    with pytest.raises(ValueError, match=r"values=\[nan, 0.1\]: each value=nan must be finite"):
        explore.grid_options([math.nan, 0.1])
    with pytest.raises(TypeError, match=r"each value='0.1' must be a number"):
        explore.grid_options(["0.1", 0.2])


def test_a_store_without_its_runs_table_says_so(tmp_path) -> None:
    path = tmp_path / "store.sqlite"
    Store(path)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE fedcore_runs")
    before = path.read_bytes()
    with pytest.raises(ValueError, match=rf"of layout '{LAYOUT}' without its table\(s\) \['fedcore_runs'\] "
                                         r"\(damaged\)"):
        Store(path)
    assert path.read_bytes() == before


def test_a_read_only_store_is_read_and_never_written(problem, tmp_path, monkeypatch) -> None:
    """The store's file may not be written (as for a user without write access; root may write anything, so the
    permission is taken away from ``os.access`` here): the run it holds is read back, a new one is computed, not
    kept, and said once; the file is byte-identical and no journal is left."""
    path = tmp_path / "store.sqlite"
    kept = simulate(problem, _build(0.1), store=path, **SMALL)
    before = path.read_bytes()
    real_access = __import__("os").access
    monkeypatch.setattr("os.access", lambda p, mode: False if mode & __import__("os").W_OK else real_access(p, mode))
    store = Store(path)
    assert store.read_only
    again = simulate(problem, _build(0.1), store=store, **SMALL)
    assert again.stored and again.frame.equals(kept.frame)
    with pytest.warns(RuntimeWarning, match="is read-only: the runs computed now are not kept"):
        simulate(problem, _build(0.2), store=store, **SMALL)
    assert path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["store.sqlite"]
    with pytest.raises(ValueError, match="is not a file: a read-only store reads an existing one"):
        Store(tmp_path / "missing.sqlite", read_only=True)


def test_an_x0_that_holds_no_numbers_in_memory_is_named(problem) -> None:
    for x0, refusal in ((torch.zeros(4, device="meta"), r"x0 is a torch.float32 tensor on meta"),
                        (torch.zeros(4, dtype=torch.complex64), r"x0 is a torch.complex64 tensor"),
                        (torch.zeros(3), r"x0 has shape \(3,\); expected a tensor of shape \(4,\)")):
        with pytest.raises(ValueError, match=refusal):
            simulate(problem, _build(0.1), x0=x0, **SMALL)


def test_a_sweeps_summary_or_grid_cannot_take_the_sweeps_own_columns(problem) -> None:
    with pytest.raises(ValueError, match=r"summary=.* returned the column 'final_train_loss', which is the sweep's"):
        sweep(problem, _build, {"client_lr": [0.1]}, summary=lambda h: {"final_train_loss": 0.0}, **SMALL)
    with pytest.raises(ValueError, match=r"summary=.* returned the column 'client_lr', which is the sweep's own"):
        sweep(problem, _build, {"client_lr": [0.1]}, summary=lambda h: {"client_lr": 0.0}, **SMALL)
    with pytest.raises(TypeError, match=r"summary=.* returned 0.5; it must return \{name: one number\}"):
        sweep(problem, _build, {"client_lr": [0.1]}, summary=lambda h: 0.5, **SMALL)
    with pytest.raises(ValueError, match=r"grid has the key 'seed', a column the sweep writes itself"):
        sweep(problem, lambda seed: _build(0.1), {"seed": [0, 1]}, **SMALL)
