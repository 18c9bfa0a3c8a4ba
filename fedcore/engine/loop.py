"""The round loop: what :func:`fedcore.simulate` does, round by round.  Start reading fedcore here.

A *pass* is R runs of one algorithm family simulated together (R = 1 for ``simulate``; :mod:`fedcore.engine.passes`
stacks the runs' hyperparameters into one algorithm).  :func:`run_pass` is the loop; the parts beside it each do one
job: :func:`sample` (each run's clients and minibatch rows, from its own streams), :func:`measure` (test metrics and
``record=`` of the server models), :func:`diverged` and :func:`leave` (a run whose loss or model goes bad leaves the
pass, its round undone), :func:`history`, the progress bar and the dropout stream.  Checkpoints are
:class:`fedcore.engine.checkpoints.Checkpoint`.

One FedAdam round, from :func:`run_pass` to the server's step, passes through 16 functions in 6 files (the checks
they call, ``contract_checks.returned`` and ``.held``, aside; ``tests/test_numerics_layout.py`` traces a round and
fails when a function on the way to the batch, the clients' loop or the server's step is not in this table):

==  =========================  ==========================  ===========================================================
 #  file                       function                    what it does
==  =========================  ==========================  ===========================================================
 1  engine/loop.py             run_pass                    the loop over rounds
 2  engine/loop.py             sample                      every live run's batch, as one
 3  engine/streams.py          Streams.sample              one run's clients and minibatch rows, from its streams
 4  algorithms/contract.py     Federated.round             a family's round is the framework's
 5  algorithms/contract.py     federated_round             prologue, clients' part, their rows kept, server's part
 6  algorithms/contract.py     run_prologue                none is due for FedAdam: the state as it is
 7  algorithms/contract.py     sent                        what the server sends (``client_reads``: ``x``)
 8  algorithms/contract.py     own_rows                    the clients' own rows (FedAdam's keep none)
 9  algorithms/contract.py     client_part                 the family's ``client_run``
10  algorithms/fedopt.py       FedOpt.client_run           K steps of SGD at ``eta_l``
11  algorithms/client.py       train_clients               the K-step loop on all S clients at once
12  algorithms/contract.py     kept                        what the clients keep, written back (none)
13  algorithms/contract.py     server_part                 the family's ``server_round``, and ``train_loss``
14  algorithms/fedopt.py       FedOpt.server_round         the server rule on the pseudo-gradient
15  server_opt.py              server_step                 ``Delta_t``, and ``x + step``
16  server_opt.py              Adaptive.update             FedAdam's ``m_t``, ``v_t`` and step
==  =========================  ==========================  ===========================================================
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
import torch
from torch import Tensor
from tqdm.auto import tqdm

from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.contract import State, declared
from fedcore.checks import named_numbers
from fedcore.contract_checks import RETURNS, name_of, returned
from fedcore.engine.options import RunOptions
from fedcore.engine.passes import run_state, select, stack
from fedcore.engine.streams import Streams
from fedcore.params import GradientOracle, evaluate_runs
from fedcore.problem import Problem
from fedcore.results import DivergedWarning, History


@dataclass
class Pass:
    """What R runs simulated together hold between rounds."""

    problem: Problem
    algorithms: list[Any]  # one per run, as given
    oracle: GradientOracle
    options: RunOptions
    streams: list[Streams]  # each run's random streams; the pass draws dropout masks from the first's
    start: Tensor  # the initial parameters: [d] for every run, or [R, d]
    algorithm: Any = None  # the live runs' algorithms stacked into one
    state: State = field(default_factory=dict)  # the live runs' state, the run axis first
    live: list[int] = field(default_factory=list)  # the runs still in the pass (indices into algorithms)
    rows: list[list[dict[str, float]]] = field(default_factory=list)  # each run's history, one dict per round
    ended: dict[int, tuple[State, int, str]] = field(default_factory=dict)  # run -> (state, diverged round, why)
    round: int = 0  # rounds done
    computing: int = 0  # the round being computed and measured (0: the start)
    trace: list[tuple[Tensor, Tensor]] | None = None  # with trace=True: (clients, models after each step) per round
    identity: dict = field(default_factory=dict)  # what a checkpoint of this pass must match


def start_pass(problem: Problem, algorithms: list[Any], oracle: GradientOracle, options: RunOptions,
               seeds: list[int], start: Tensor, trace: bool = False) -> Pass:
    """A pass of ``algorithms`` (one run each, with ``seeds``) before its first round: the algorithms stacked, their
    state from ``init`` at ``start`` (``[d]``, or ``[R, d]``: one start per run)."""
    data = problem.data
    p = Pass(problem, algorithms, oracle, options, [Streams(seed, data.device) for seed in seeds], start,
             live=list(range(len(algorithms))), rows=[[] for _ in algorithms], trace=[] if trace else None)
    p.algorithm = stack(algorithms, start.dtype, data.device)
    starts = start.unsqueeze(1) if start.dim() == 2 else start.expand(len(algorithms), 1, -1)  # [R, 1, d]
    p.state = checked_state(p.algorithm.init(starts.clone(), data.num_clients), p.algorithm, "init(x0, num_clients)")
    return p


def run_pass(p: Pass, progress: bool = False, checkpoint: Any = None,
             callback: Callable[[int, State], None] | None = None) -> list[History]:
    """Run the pass to ``p.options.rounds``: one :class:`~fedcore.results.History` per run."""
    rounds, eval_every = p.options.rounds, p.options.eval_every
    with progress_bar(p, progress) as bar, dropout_stream(p), reported_round(p):
        if p.round == 0:
            measure(p, evaluate=eval_every > 0)  # round 0: the start
        while p.round < rounds and p.live:
            started, p.computing = time.perf_counter(), p.round + 1
            batch = sample(p)  # each live run's clients and their minibatch rows
            with p.problem.model.mode(training=True):  # one round of every live run (algorithms/contract.py)
                state, metrics = checked_round(p.algorithm.round(p.state, batch, p.oracle), p.algorithm)
            values = per_run(metrics, len(p.live))
            seconds = (time.perf_counter() - started) / len(p.live)
            for position, run in enumerate(p.live):
                p.rows[run].append({"round": p.round + 1, **{k: v[position] for k, v in values.items()},
                                    "seconds": seconds})
            why = diverged(len(p.live), p.options.diverge_above, state, values)
            if why:
                state = leave(p, state, batch, why)  # they keep the round before; their rows are undone
                if not p.live:
                    break
            p.round, p.state = p.round + 1, state
            if p.trace is not None and batch.trace:
                p.trace.append((batch.clients, torch.stack(batch.trace)))
            measure(p, evaluate=eval_every > 0 and (p.round % eval_every == 0 or p.round == rounds))
            p.streams[0].dropout = torch.get_rng_state()
            if callback is not None:
                callback(p.round, copied(run_state(p.state, 0)))  # a copy: the callback cannot change the run
            show(bar, p.rows[p.live[0]][-1])
            if checkpoint is not None and checkpoint.due(p.round, rounds):
                checkpoint.save(p)
    return [history(p, run) for run in range(len(p.algorithms))]


# ---- the parts -----------------------------------------------------------------------------------------------------


def sample(p: Pass) -> RoundBatch:
    """This round's batch of every live run, each from its own streams, as one batch of R runs."""
    data = p.problem.data
    parts = [p.streams[run].sample(data, p.round, p.options, p.start.dtype) for run in p.live]
    if len(parts) == 1:
        return parts[0] if p.trace is None else replace(parts[0], trace=[])
    return RoundBatch(p.round, torch.cat([b.clients for b in parts]), torch.cat([b.weights for b in parts]),
                      torch.cat([b.rows for b in parts]), data.inputs, data.targets, data.num_clients,
                      sizes=data.sizes)


def measure(p: Pass, evaluate: bool) -> None:
    """Each live run's test metrics (when ``evaluate``: one forward over the runs' models on the ``vmap`` backend)
    and ``record=`` of its server model, into its row of this round (round 0: a new row)."""
    runs, data = len(p.live), p.problem.data
    tested: list[dict[str, float]] = [{} for _ in p.live]
    if evaluate:
        point = returned(p.algorithm, "eval_point(state)", declared(p.algorithm).eval_point(p.state), point="point")
        tested = evaluate_runs(p.problem.model, point.reshape(runs, -1), data.test_inputs, data.test_targets,
                               ignore_classes=data.info.get("ignore_classes", ()), backend=p.oracle.backend)
    models = p.state["x"].reshape(runs, -1)
    for position, (run, metrics) in enumerate(zip(p.live, tested)):
        if p.round == 0:
            p.rows[run].append({"round": 0})
        values = record(p.options.record, models[position:position + 1], p.rows[run][-1]) if p.options.record else {}
        p.rows[run][-1].update({**metrics, **values})


OWN_COLUMNS = frozenset({"round", "seconds", "train_loss", "test_loss", "test_accuracy"})
"""Columns of a history that fedcore writes (beside an algorithm's own metrics): no ``record=`` column may take one."""


def record(function: Callable[[Tensor], dict[str, Any]], x: Tensor, row: dict[str, float]) -> dict[str, float]:
    """``function(x)`` of one run's server model ``x [1, d]`` (the same shape for a run alone and for a run in a
    pass of several, so how runs were batched cannot change the column) as ``{name: number}``, none of the names one
    of fedcore's columns (:data:`OWN_COLUMNS`, or a metric already in this round's ``row``).  ``function`` gets a
    copy of ``x``: a record that changes its argument in place cannot change the run."""
    return named_numbers("record", function, function(x.detach().clone()), reserved=sorted(OWN_COLUMNS | set(row)),
                         context=" for the model x [1, d] of one run (it is called once per run)",
                         hint=": reduce it over the coordinates, x.norm(dim=1), not x")


def copied(state: Any) -> Any:
    """``state`` with each tensor copied (dicts, lists and tuples of them rebuilt): what a user's function is handed,
    so that changing it in place cannot change the run."""
    if isinstance(state, Tensor):
        return state.detach().clone()
    if isinstance(state, dict):
        return {key: copied(value) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(copied(value) for value in state)
    return state


def diverged(runs: int, bound: float | None, state: State, values: dict[str, list[float]]) -> dict[int, str]:
    """The ``runs`` live runs (positions in the pass) whose round went bad, and why: a training loss that is not
    finite or above ``bound`` (``diverge_above``), or a model that is not finite.  Flower's strategy uses it too."""
    finite = torch.isfinite(state["x"].reshape(runs, -1)).all(dim=1).tolist()
    losses = values.get("train_loss", [0.0] * runs)
    why = {}
    for position, (loss, ok) in enumerate(zip(losses, finite)):
        if not math.isfinite(loss):
            why[position] = f"train_loss={loss} is not finite"
        elif not ok:
            why[position] = "the model is not finite"
        elif bound is not None and loss > bound:
            why[position] = f"train_loss={loss:.6g} > diverge_above={bound:g}"
    return why


def leave(p: Pass, state: State, batch: RoundBatch, why: dict[int, str]) -> State:
    """The runs that diverged leave the pass with their state of the round before (their per-client rows written
    this round undone: :meth:`RoundBatch.undo`); the new state of the others, and their algorithms restacked."""
    batch.undo(torch.tensor(sorted(why), device=batch.clients.device))
    for position, because in sorted(why.items()):
        run = p.live[position]
        p.ended[run] = (run_state(p.state, position), p.round + 1, because)
        warnings.warn(f"{name_of(p.algorithms[run])} diverged at round {p.round + 1} ({because}); history and state "
                      f"kept up to round {p.round}", DivergedWarning, stacklevel=4)
    kept = [position for position in range(len(p.live)) if position not in why]
    p.live = [p.live[position] for position in kept]
    if not p.live:
        return state
    p.algorithm = stack([p.algorithms[run] for run in p.live], p.start.dtype, p.problem.data.device)
    return select(state, torch.tensor(kept))


def history(p: Pass, run: int) -> History:
    """Run ``run``'s history: its rows, its final state (or the state before it diverged) and how it ended."""
    if run in p.ended:
        state, diverged_round, because = p.ended[run]
    else:
        state, diverged_round, because = run_state(p.state, p.live.index(run)), None, None
    trace = None if p.trace is None else [(clients[0], models[:, 0]) for clients, models in p.trace]
    return History(pd.DataFrame(p.rows[run]).set_index("round"), name_of(p.algorithms[run]), p.oracle.backend,
                   state, diverged_round, trace, diverged_because=because)


@contextmanager
def progress_bar(p: Pass, progress: bool) -> Iterator[tqdm]:
    """A progress bar over the pass's rounds (hidden when ``progress`` is False)."""
    name, rounds = name_of(p.algorithms[0]), p.options.rounds
    with tqdm(total=rounds, initial=min(p.round, rounds), disable=not progress, leave=False,
              desc=name if len(p.algorithms) == 1 else f"{name} x {len(p.algorithms)} runs") as bar:
        yield bar


def show(bar: tqdm, row: dict[str, float]) -> None:
    """One more round on the bar, with the first live run's metrics."""
    bar.update(1)
    bar.set_postfix({k: f"{v:.4g}" for k, v in row.items() if k != "round"}, refresh=False)


@contextmanager
def dropout_stream(p: Pass) -> Iterator[None]:
    """torch's global generator (which dropout layers draw from) on the pass's dropout stream while it computes, and
    as it was outside."""
    with torch.random.fork_rng(devices=[]):
        torch.set_rng_state(p.streams[0].dropout)
        yield


@contextmanager
def reported_round(p: Pass) -> Iterator[None]:
    """An error raised while the pass computes says in which round (``error.round``, and a note), so that a sweep can
    keep it as a result and a reader knows how far the run got."""
    try:
        yield
    except Exception as error:
        error.round = p.computing  # type: ignore[attr-defined]
        error.add_note(f"(raised in round {p.computing} of {name_of(p.algorithms[0])}"
                       f"{f' x {len(p.algorithms)} runs' if len(p.algorithms) > 1 else ''})")
        raise


def per_run(metrics: dict[str, Any], runs: int) -> dict[str, list[float]]:
    """A round's metrics as one float per run (a number is every run's; a tensor holds one per run)."""
    out = {}
    for name, value in metrics.items():
        if isinstance(value, Tensor):
            out[name] = value.detach().reshape(-1).tolist() if value.numel() == runs else [float(value)] * runs
        else:
            out[name] = [float(value)] * runs
    return out


def checked_state(state: Any, algorithm: Any, method: str) -> State:
    """What ``init`` and ``round`` hand back must be a state: a dict with the model ``"x"`` as a tensor."""
    if not RETURNS["state"][0](state, algorithm):  # the contract's own test of a state
        got = f"a dict with keys {sorted(state)}" if isinstance(state, dict) else repr(state)[:80]
        raise TypeError(f"{name_of(algorithm)}.{method} returned {got}; it must return the state: a dict of tensors "
                        "with the server model under 'x' ([R, 1, d], as x0)")
    return state


def checked_round(result: Any, algorithm: Any) -> tuple[State, dict]:
    """``round`` must return ``(new_state, metrics)``."""
    if not isinstance(result, tuple) or len(result) != 2 or not isinstance(result[1], dict):
        raise TypeError(f"{name_of(algorithm)}.round(state, batch, oracle) returned {repr(result)[:80]}; it must "
                        "return (new_state, metrics): the new state dict and a dict of the round's metrics, as in: "
                        "return new_state, {'train_loss': loss}")
    return checked_state(result[0], algorithm, "round(state, batch, oracle)"), result[1]
