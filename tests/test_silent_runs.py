"""Nothing silent in the runs' entry points (issue 58, points 4, 5, 10 and part of 15): a seed given two ways is
refused and one given once is honoured, ``record=`` and ``callback=`` cannot change a run, a sweep keeps its table
when a ``summary`` raises and lets the store's warnings through, and the smaller inputs are named."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from conftest import damage_store_entry

from fedcore import algorithms, models
from fedcore.data import federated_quadratic
from fedcore.engine.options import RunOptions
from fedcore.engine.streams import Streams
from fedcore.results import History
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep

SMALL = dict(rounds=4, clients_per_round=3, local_steps=2, batch_size=4)
QUIET = dict(progress=False)


@pytest.fixture(scope="module")
def problem() -> Problem:
    return Problem(federated_quadratic(num_clients=6, dim=4, samples_per_client=8, seed=1),
                   models.make("linear_regression", (4,), None, seed=0).double())


def _build(client_lr: float):
    return algorithms.fedadam(client_lr=client_lr, server_lr=0.1)


def _final(history: History) -> torch.Tensor:
    return history.final_state["x"]


# ---------------------------------------------------------------- 4. a seed is honoured, or refused when given twice


@pytest.mark.parametrize("call", ["simulate_runs", "sweep"])
def test_the_seed_of_options_is_the_seed_of_the_runs(problem, call) -> None:
    """``options=RunOptions(seed=3)`` without ``seeds=``: the runs are seed 3's, as ``simulate`` runs it."""
    alone = simulate(problem, _build(0.1), seed=3, **SMALL, **QUIET)
    assert not torch.equal(_final(alone), _final(simulate(problem, _build(0.1), **SMALL, **QUIET)))
    options = RunOptions(**SMALL, seed=3)
    if call == "simulate_runs":
        runs = simulate_runs(problem, [_build(0.1), _build(0.1)], options=options, **QUIET)
        for run in runs:
            torch.testing.assert_close(_final(run), _final(alone), rtol=1e-12, atol=0)
    else:
        table = sweep(problem, _build, {"client_lr": [0.1]}, options=options, **QUIET)
        assert "seed" not in table  # one seed: as sweep(..., seed=3)
        assert table["final_train_loss"].iloc[0] == pytest.approx(alone.frame["train_loss"].iloc[-1], rel=1e-12)


@pytest.mark.parametrize("call, given, named", [
    ("sweep", dict(seed=1, seeds=[0]), r"seeds=\[0\] and seed=1"),  # seeds equal to the default is given
    ("sweep", dict(seed=1, seeds=(0,)), r"seeds=\(0,\) and seed=1"),
    ("sweep", dict(seed=0, seeds=[1]), r"seeds=\[1\] and seed=0"),
    ("sweep", dict(options=RunOptions(**SMALL, seed=2), seeds=[0, 1]),
     r"seeds=\[0, 1\] and options=RunOptions\(seed=2\)"),
    ("simulate_runs", dict(options=RunOptions(**SMALL, seed=2), seeds=[0]),
     r"seeds=\[0\] and options=RunOptions\(seed=2\)"),
    ("simulate_runs", dict(options=RunOptions(**SMALL, seed=2), seeds=[5, 6]),
     r"seeds=\[5, 6\] and options=RunOptions\(seed=2\)"),
])
def test_a_seed_given_two_ways_is_refused_naming_both(problem, call, given, named) -> None:
    settings = {} if "options" in given else dict(SMALL)
    with pytest.raises(ValueError, match=rf"{call}\(\) got {named}: give the seeds one way"):
        if call == "sweep":
            sweep(problem, _build, {"client_lr": [0.1]}, **given, **settings, **QUIET)
        else:
            simulate_runs(problem, [_build(0.1), _build(0.2)], **given, **settings, **QUIET)


def test_a_seed_given_once_runs_that_seed(problem) -> None:
    """``seeds=[0]`` runs seed 0 and ``seed=1`` seed 1, whatever the options' default."""
    zero, one = (simulate(problem, _build(0.1), seed=seed, **SMALL, **QUIET) for seed in (0, 1))
    for seeds, expected in (([0], zero), ([1], one)):
        table = sweep(problem, _build, {"client_lr": [0.1]}, seeds=seeds, **SMALL, **QUIET)
        assert table["final_train_loss"].iloc[0] == pytest.approx(expected.frame["train_loss"].iloc[-1], rel=1e-12)
    table = sweep(problem, _build, {"client_lr": [0.1]}, seed=1, **SMALL, **QUIET)
    assert table["final_train_loss"].iloc[0] == pytest.approx(one.frame["train_loss"].iloc[-1], rel=1e-12)


# ---------------------------------------------------------------- 5. a record (or callback) cannot change the run


def _zeroing_record(x):
    x.zero_()  # what a careless record might do: change its argument in place
    return {"n": 1.0}


def _scaling_record(x):
    x.mul_(2)
    return {"n": float(x.norm())}


@pytest.mark.parametrize("record", [_zeroing_record, _scaling_record], ids=["zero_", "mul_"])
@pytest.mark.parametrize("call", ["simulate", "simulate_runs", "sweep"])
def test_a_record_that_changes_its_argument_cannot_change_the_run(problem, record, call) -> None:
    plain = [simulate(problem, _build(lr), **SMALL, **QUIET) for lr in (0.1, 0.2)]
    if call == "simulate":
        recorded = [simulate(problem, _build(lr), record=record, **SMALL, **QUIET) for lr in (0.1, 0.2)]
    elif call == "simulate_runs":  # one pass of two runs
        recorded = simulate_runs(problem, [_build(0.1), _build(0.2)], record=record, **SMALL, **QUIET)
    else:
        table = sweep(problem, _build, {"client_lr": [0.1, 0.2]}, record=record, **SMALL, **QUIET)
        assert table["final_train_loss"].tolist() == [h.frame["train_loss"].iloc[-1] for h in plain]
        return
    for alone, run in zip(plain, recorded):
        assert torch.equal(_final(alone), _final(run))
        assert run.frame["train_loss"].equals(alone.frame["train_loss"])


def test_a_callback_that_changes_the_state_cannot_change_the_run(problem) -> None:
    plain = simulate(problem, _build(0.1), **SMALL, **QUIET)
    seen = []

    def careless(t, state):
        seen.append(state["x"].clone())
        for value in state.values():
            if isinstance(value, torch.Tensor) and value.is_floating_point():
                value.mul_(0.5)

    called = simulate(problem, _build(0.1), callback=careless, **SMALL, **QUIET)
    assert torch.equal(_final(plain), _final(called)) and torch.equal(seen[-1], _final(plain))


# ---------------------------------------------------------------- 10. a sweep keeps its table; the store's warnings


def test_a_summary_that_raises_keeps_the_table_with_an_error_row(problem) -> None:
    def picky(history):
        if history.frame["train_loss"].iloc[-1] > 0.0 and picky.calls == 1:
            picky.calls += 1
            raise ZeroDivisionError("no noise measured")
        picky.calls += 1
        return {"last": float(history.frame["train_loss"].iloc[-1])}

    picky.calls = 0
    with pytest.warns(UserWarning, match=r"summary=.* raised for 1 of 3 runs .*ZeroDivisionError: no noise measured"):
        table = sweep(problem, _build, {"client_lr": [0.01, 0.1, 0.2]}, summary=picky, **SMALL, **QUIET)
    assert len(table) == 3 and table["final_train_loss"].notna().all()  # the run itself is kept
    assert table["error"].isna().tolist() == [True, False, True]
    assert table["error"].iloc[1] == "summary raised ZeroDivisionError: no noise measured"
    assert math.isnan(table["last"].iloc[1]) and table["last"].iloc[[0, 2]].notna().all()


def test_a_read_only_stores_warning_reaches_the_user_of_a_sweep(problem, tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    Store(path)
    with pytest.warns(RuntimeWarning, match="is read-only: the runs computed now are not kept"):
        sweep(problem, _build, {"client_lr": [0.1]}, store=Store(path, read_only=True), **SMALL, **QUIET)


def test_a_corrupt_entrys_warning_reaches_the_user_of_a_sweep(problem, tmp_path) -> None:
    path = tmp_path / "runs.sqlite"
    sweep(problem, _build, {"client_lr": [0.1]}, store=path, **SMALL, **QUIET)
    damage_store_entry(path)
    with pytest.warns(RuntimeWarning, match="is corrupt"):
        sweep(problem, _build, {"client_lr": [0.1]}, store=path, **SMALL, **QUIET)


def test_a_sweep_still_records_a_divergence_without_a_warning(problem) -> None:
    """Why the sweep filtered warnings (git log -S simplefilter: "a divergence is a recorded result"): a diverged run
    is its ``diverged_round``, not a warning per run; that one warning alone stays silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = sweep(problem, _build, {"client_lr": [0.1, 1e6]}, diverge_above=1e3, **SMALL, **QUIET)
    assert math.isnan(table["diverged_round"].iloc[0]) and table["diverged_round"].iloc[1] >= 1


# ---------------------------------------------------------------- 15. the smaller inputs, named


@pytest.mark.parametrize("bad, error, message", [
    (lambda: Streams(-1), ValueError, r"seed=-1 must be >= 0"),
    (lambda: Streams("0"), TypeError, r"seed='0' must be an int, got str"),
    (lambda: Streams(2**63), ValueError, r"seed=9223372036854775808 must be <= 2\*\*62"),
    (lambda: Streams(0, device="gpu"), ValueError, r"device='gpu' is not a device; this machine has \['cpu'"),
    (lambda: Streams(0, device=3), ValueError, r"device=3 is not"),
])
def test_streams_name_a_bad_seed_or_device(bad, error, message) -> None:
    with pytest.raises(error, match=message):
        bad()


@pytest.mark.parametrize("given, message", [
    (dict(errors="raise"), r"sweep\(\) takes no errors='raise': a run that raises is a row with its error"),
    (dict(errors="keep"), r"sweep\(\) takes no errors='keep'"),
    (dict(algorithms=[1]), r"sweep\(\) got an unknown option 'algorithms'"),
    (dict(rounds_=3), r"sweep\(\) got an unknown option 'rounds_'"),
])
def test_sweep_names_a_keyword_it_does_not_take(problem, given, message) -> None:
    with pytest.raises(TypeError, match=message):
        sweep(problem, _build, {"client_lr": [0.1]}, **given, **SMALL, **QUIET)


@pytest.mark.parametrize("value", [torch.tensor(1 + 2j), torch.tensor([1 + 2j]), np.complex128(1 + 2j),
                                   np.array([1 + 2j]), 1 + 2j], ids=["tensor", "1-tensor", "numpy", "array", "python"])
@pytest.mark.parametrize("call", ["record", "summary"])
def test_a_complex_number_from_a_record_or_summary_is_named(problem, value, call) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning is not the answer
        with pytest.raises(TypeError, match=rf"{call}=.* returned 'c': a complex .*it must be one real number"):
            if call == "record":
                simulate(problem, _build(0.1), record=lambda x: {"c": value}, **SMALL, **QUIET)
            else:
                sweep(problem, _build, {"client_lr": [0.1]}, summary=lambda h: {"c": value}, **SMALL, **QUIET)


@pytest.mark.parametrize("bound", [math.inf, -math.inf, math.nan, 0, -1.0])
def test_a_bad_diverge_above_says_that_none_means_never(bound) -> None:
    with pytest.raises(ValueError, match=rf"diverge_above={bound!r} .*None \(the default\): a run never stops for "
                                         r"its loss"):
        RunOptions(**SMALL, diverge_above=bound)


def test_a_diverge_above_of_the_wrong_type_is_named() -> None:
    with pytest.raises(TypeError, match=r"diverge_above='1e3' must be a number, got str"):
        RunOptions(**SMALL, diverge_above="1e3")

