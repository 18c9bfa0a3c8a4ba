"""The engine's parts (issue 36): options as one typed value, one seeding convention, a loop a reader can follow."""

from __future__ import annotations

import ast
import inspect
from dataclasses import FrozenInstanceError

import pandas as pd
import pytest
import torch
from conftest import blobs

import fedcore
from fedcore import algorithms, models
from fedcore.engine import checkpoints, loop, options, passes, streams
from fedcore.engine.options import RunOptions
from fedcore.engine.streams import Streams
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.sweeps import sweep

SETTINGS = dict(rounds=3, clients_per_round=3, local_steps=2, batch_size=4)


def problem() -> Problem:
    return Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=0))


def test_options_are_one_frozen_checked_value() -> None:
    given = RunOptions(**SETTINGS, seed=2, weighting="uniform")
    assert (given.rounds, given.seed, given.eval_every, given.backend) == (3, 2, 1, "auto")
    with pytest.raises(FrozenInstanceError):
        given.rounds = 4
    for bad, message in [(dict(rounds=0), r"rounds=0 must be >= 1"), (dict(local_steps=2.5), "local_steps=2.5 must"),
                         (dict(weighting="equal"), "weighting='equal' not one of"),
                         (dict(backend="jit"), "backend='jit' not one of"), (dict(seed=-1), "seed=-1"),
                         (dict(diverge_above=0), "diverge_above=0 must be > 0"),
                         (dict(eval_every=-1), "eval_every=-1")]:
        with pytest.raises((TypeError, ValueError), match=message):
            RunOptions(**{**SETTINGS, **bad})


def test_the_options_given_by_keyword_by_position_or_as_a_value_are_one_run() -> None:
    """``simulate(problem, algorithm, rounds=..., ...)``, the four by position, and ``options=RunOptions(...)`` give the
    identical history; keywords beside ``options`` replace its fields."""
    algorithm = algorithms.fedadam(0.1, server_lr=0.05)
    by_keyword = simulate(problem(), algorithm, **SETTINGS, seed=1, progress=False)
    by_position = simulate(problem(), algorithm, 3, 3, 2, 4, seed=1, progress=False)
    as_value = simulate(problem(), algorithm, options=RunOptions(**SETTINGS, seed=1), progress=False)
    replaced = simulate(problem(), algorithm, options=RunOptions(**SETTINGS), seed=1, progress=False)
    for other in (by_position, as_value, replaced):
        pd.testing.assert_frame_equal(other.frame.drop(columns="seconds"), by_keyword.frame.drop(columns="seconds"),
                                      check_exact=True)


@pytest.mark.parametrize(("call", "message"), [
    (lambda: simulate(problem(), algorithms.fedavg(0.1), rounds=3, clients_per_round=3, local_steps=2),
     r"simulate\(\) needs batch_size"),
    (lambda: simulate(problem(), algorithms.fedavg(0.1), **SETTINGS, roundz=4),
     r"simulate\(\) got an unknown option 'roundz'; the options are .*rounds"),
    (lambda: simulate(problem(), algorithms.fedavg(0.1), 3, 3, 2, 4, 5), r"at most 4 options by position"),
    (lambda: simulate(problem(), algorithms.fedavg(0.1), 3, rounds=3), r"got rounds both by position and by keyword"),
    (lambda: simulate(problem(), algorithms.fedavg(0.1), options={"rounds": 3}), r"must be a fedcore.RunOptions"),
    (lambda: simulate_runs(problem(), [algorithms.fedavg(0.1)], **SETTINGS, seed=1), r"takes seeds=.*not seed=1"),
    (lambda: sweep(problem(), algorithms.fedavg, {"client_lr": [0.1]}, **SETTINGS, roundz=1),
     r"sweep\(\) got an unknown option 'roundz'"),
])
def test_options_that_are_not_options_are_refused_by_name(call, message) -> None:
    with pytest.raises(TypeError, match=message):
        call()


def test_one_seeding_convention_for_the_engine_and_flower() -> None:
    """The three streams come from the seed as documented (s, s + 1, s + 2); simulate's clients are those drawn by
    ``Streams(seed)``, and Flower's strategy holds the same ``Streams`` and draws the same batches."""
    data, seed = blobs(), 5
    made = Streams(seed)
    assert torch.equal(made.clients.get_state(), torch.Generator().manual_seed(seed).get_state())
    assert torch.equal(made.minibatches.get_state(), torch.Generator().manual_seed(seed + 1).get_state())
    assert torch.equal(made.dropout, torch.Generator().manual_seed(seed + 2).get_state())
    drawn = [made.sample(data, t, RunOptions(**SETTINGS), torch.float32) for t in range(3)]
    traced = simulate(problem(), algorithms.fedavg(0.1), **SETTINGS, seed=seed, progress=False, trace=True)
    seen = [clients.tolist() for clients, _ in traced.trace]
    assert seen == [batch.clients[0].tolist() for batch in drawn]
    pytest.importorskip("flwr")
    from fedcore.flower.app import FedcoreStrategy

    strategy = FedcoreStrategy(algorithms.fedavg(0.1), data, problem().x0(), options=RunOptions(**SETTINGS, seed=seed))
    assert isinstance(strategy.streams, Streams)
    again = [strategy.streams.sample(data, t, strategy.options, torch.float32) for t in range(3)]
    for a, b in zip(drawn, again, strict=True):
        assert torch.equal(a.clients, b.clients) and torch.equal(a.rows, b.rows)
    assert "manual_seed" not in inspect.getsource(fedcore.flower.app)  # the convention is written once


def _function_lengths(module) -> dict[str, int]:
    tree = ast.parse(inspect.getsource(module))
    return {node.name: node.end_lineno - node.lineno + 1 for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_the_loop_fits_one_screen_and_no_engine_function_is_over_50_lines() -> None:
    lengths = {f"{module.__name__}.{name}": n for module in (loop, options, passes, streams, checkpoints, fedcore.run)
               for name, n in _function_lengths(module).items()}
    assert lengths["fedcore.engine.loop.run_pass"] <= 50
    too_long = {name: n for name, n in lengths.items() if n > 50}
    assert not too_long, too_long
    assert len(inspect.getsource(fedcore.run).splitlines()) < 350
