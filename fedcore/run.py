"""The entry points into the engine: ``simulate(problem, algorithm, ...) -> History`` for one run,
``simulate_runs`` for many (in passes of several runs); :func:`fedcore.sweeps.sweep` runs a grid of them.

They check what they are given, look each run up in a results store (:mod:`fedcore.store`), and hand what is missing
to the round loop, :func:`fedcore.engine.loop.run_pass` (read it first: one screen).  A run's options are one typed
value, :class:`fedcore.engine.options.RunOptions`, given as ``options=`` or by keyword (``rounds=50, ...``; the first
four also by position); its random streams come from :class:`fedcore.engine.streams.Streams`.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from fedcore.algorithms.contract import Algorithm, State, declared, name_of
from fedcore.checks import check_bool, check_choice, check_function, check_int, check_seed, check_x0, plain_sequence
from fedcore.data.federated import FederatedData
from fedcore.engine.checkpoints import Checkpoint
from fedcore.engine.loop import run_pass, start_pass
from fedcore.engine.options import RunOptions
from fedcore.engine.passes import check_batch, plan, runs_per_pass, stack
from fedcore.engine.streams import sample_round
from fedcore.files import writable_file
from fedcore.identity import data_hash, run_identity, uncomparable
from fedcore.memory import check_fits
from fedcore.params import GradientOracle, evaluate
from fedcore.problem import Problem
from fedcore.results import FailedRun, History
from fedcore.store import Store, run_key

__all__ = ["FailedRun", "Problem", "RunOptions", "runs_per_pass", "sample_round", "simulate", "simulate_runs",
           "warm_up"]

MAX_TRACE_BYTES = 1 << 20
"""A traced run is kept in a results store when its trace (rounds x K x S models of d numbers) holds at most
this many bytes, 1 MiB: the counterexample's 900 steps of 3 clients take 11 kB, one model of 03's CNN 4.8 MB."""


def simulate(problem: Problem, algorithm: Algorithm, *args: int, options: RunOptions | None = None,
             progress: bool = True, checkpoint: str | os.PathLike | None = None, checkpoint_every: int = 10,
             resume: bool | str = False, x0: Tensor | None = None,
             callback: Callable[[int, State], None] | None = None, trace: bool = False,
             store: Store | str | os.PathLike | None = None, **settings: Any) -> History:
    """Run ``algorithm`` on ``problem`` for ``rounds`` communication rounds: ``simulate(problem, algorithm,
    rounds=50, clients_per_round=10, local_steps=5, batch_size=32, seed=0)``; the options
    (:class:`~fedcore.engine.options.RunOptions`) come by keyword or as ``options=``.

    A run diverges at the first round whose training loss or model is not finite, or whose loss exceeds
    ``diverge_above``: it stops there, warns, and keeps its history, state and checkpoint up to the round before.
    With ``checkpoint``, the run is saved every ``checkpoint_every`` rounds and at the end (checksummed, flushed);
    ``resume=True`` continues from that file after checking that the same run wrote it (:mod:`fedcore.identity`)
    with at most ``rounds`` rounds; ``resume="trust"`` also where a part of the run cannot be compared.
    ``callback(round, state)`` is called after every round (on a copy of the state); ``x0`` overrides the model's
    initial parameters; ``trace=True`` keeps every sampled client's model after every local step in ``History.trace``.
    ``store`` (a :class:`fedcore.store.Store` or a path) returns a finished run of the same identity and rounds
    without computing it, and keeps this one (a trace only up to :data:`MAX_TRACE_BYTES`); a run with a ``callback``
    or a longer trace is neither looked up nor kept, nor one with a part that cannot be compared (said: a warning).
    """
    problem = _checked_problem(problem)
    options = RunOptions.of(args, options, "simulate", **settings).check(problem.data)
    progress, trace = check_bool("progress", progress), check_bool("trace", trace)
    checkpoint = _checked_resume(checkpoint, checkpoint_every, resume, trace)
    if callback is not None:
        check_function("callback", callback, "round", "state")
    if x0 is not None:
        check_x0("x0", x0, problem.model.dim)
    _check_algorithm(algorithm, options)
    data, start = problem.data, _starts(problem, x0, 1)[0]
    if data.test_targets.shape[0] == 0:
        warnings.warn(f"{data.name} has no test samples (test_fraction=0?): test metrics are NaN, not measured",
                      UserWarning, stacklevel=2)
    _check_fits([algorithm], start, problem, options)
    oracle = GradientOracle(problem.model, options.backend, data.device)
    p = start_pass(problem, [algorithm], oracle, options, [options.seed], start, trace)
    store = Store(store) if store is not None and not isinstance(store, Store) else store
    if checkpoint is not None or store is not None:
        p.identity = _identity(problem, start, algorithm, options.identity(oracle.backend))
    traced = options.rounds * options.local_steps * options.clients_per_round * start.numel() * start.element_size()
    key = None if callback is not None or (trace and traced > MAX_TRACE_BYTES) else \
        _key(store, {**p.identity, "trace": True} if trace else p.identity, options.rounds, algorithm)
    if key is not None and (stored := store.history(key)) is not None:
        return stored
    if checkpoint is not None and resume and Path(checkpoint.path).exists():
        checkpoint.load(p, trust=resume == "trust")
    history = run_pass(p, progress, checkpoint, callback)[0]
    if key is not None:
        store.keep(key, p.identity, options.rounds, history, algorithm)
    return history


def _checked_resume(checkpoint: Any, checkpoint_every: Any, resume: Any, trace: bool) -> Checkpoint | None:
    """``simulate``'s checkpoint, checked with how it is resumed."""
    checkpoint_every = check_int("checkpoint_every", checkpoint_every)
    if resume not in (False, True, "trust") or not isinstance(resume, (bool, str)):
        raise ValueError(f"resume={resume!r} not one of False, True, 'trust'")
    if resume and checkpoint is None:
        raise ValueError(f"resume={resume!r} needs checkpoint=<path>")
    if trace and resume:
        raise ValueError("trace=True with resume=True: a resumed run has no trace of the rounds before; "
                         "run from the start to trace it")
    return None if checkpoint is None else Checkpoint(writable_file("checkpoint", checkpoint), checkpoint_every)


def _checked_problem(problem: Any) -> Problem:
    if not isinstance(problem, Problem):
        hint = ": wrap it as Problem(data, model)" if isinstance(problem, FederatedData) else ""
        raise TypeError(f"problem={type(problem).__name__} must be a fedcore.Problem{hint}")
    return problem


def _check_algorithm(algorithm: Any, options: RunOptions) -> None:
    """An algorithm has ``init`` and ``round``; one whose hyperparameters were computed for a run's S, K and T
    (``check_run``, e.g. PAdaMFed's theorem step sizes) is asked about this run before any work."""
    declared(algorithm).check_run(options.clients_per_round, options.local_steps, options.rounds)


def warm_up(problem: Problem, backend: str = "auto") -> float:
    """Pay a process's one-time start-up cost (torch's lazy initialization, a model's first ``vmap``: about 2 s on a
    CPU) on two samples, so that the runs' ``seconds`` measure the runs alone; returns the seconds it took."""
    if not isinstance(problem, Problem):
        raise TypeError(f"problem={type(problem).__name__} must be a fedcore.Problem")
    started = time.perf_counter()
    data, x = problem.data, problem.x0()
    oracle = GradientOracle(problem.model, backend, data.device)
    rows = torch.arange(min(2, data.inputs.shape[0]), device=data.device)
    with problem.model.mode(training=True):
        oracle(x.expand(2, -1).clone(), data.inputs[rows].unsqueeze(0).expand(2, *[-1] * data.inputs.dim()),
               data.targets[rows].unsqueeze(0).expand(2, *[-1] * data.targets.dim()))
    evaluate(problem.model, x, data.test_inputs[:2], data.test_targets[:2])
    return time.perf_counter() - started


def simulate_runs(problem: Problem, algorithms: Sequence[Algorithm], *args: int, seeds: Sequence[int] | None = None,
                  batch: str | int = "auto", options: RunOptions | None = None, progress: bool = True,
                  store: Store | str | os.PathLike | None = None, x0: Tensor | Sequence[Tensor] | None = None,
                  errors: str = "raise", **settings: Any) -> list[History | FailedRun]:
    """``[simulate(problem, algorithms[i], ..., seed=seeds[i], x0=x0[i]) for i]``, computed in passes of several
    runs (the options as :func:`simulate` takes them, but for ``seed``).

    ``seeds`` has one seed per algorithm (or one for all; not given: the options' ``seed``, 0 by default, for all;
    refused with an options' seed other than 0); so has ``x0`` (a tensor of the model's ``d`` for all runs, a list of
    one per run, or None: the model's own).  Runs whose algorithms differ only in the values of their
    hyperparameters (:func:`fedcore.engine.passes.signature`) go through the client loop together, up to ``batch``
    runs per pass (``"auto"``: :func:`fedcore.engine.passes.runs_per_pass`; ``"off"`` or 1: one at a time): the
    clients of all runs are one ``[R*S, d]`` matrix for the gradient oracle, the server state is per run, and each
    run keeps its own start and random streams, so run i equals ``simulate(..., seed=seeds[i])`` (up to float
    rounding; with dropout, in distribution: a pass draws its masks from one stream).  A run that diverges leaves
    its pass at that round; the others go on.  A run that cannot share a pass (a plain-function schedule, another
    family) runs alone, said once.  With ``store``, each run is looked up under its own identity, only the missing
    ones are computed, and each pass keeps its runs as it finishes.  A round's ``seconds`` are the pass's time
    divided by its runs.  A run that raises (a schedule that turns negative in round 3) raises out of the call
    (``errors="raise"``), or, with ``errors="keep"``, is a :class:`~fedcore.results.FailedRun` in its place (its round
    and message; its pass rerun one run at a time to find it) and the other runs are returned.
    """
    algorithms = list(algorithms)
    if not algorithms:
        raise ValueError("algorithms=[] is empty: give at least one algorithm")
    problem = _checked_problem(problem)
    seeds, options = _seeds_and_options(problem, args, options, seeds, len(algorithms), settings)
    progress, errors = check_bool("progress", progress), check_choice("errors", errors, ("raise", "keep"))
    for algorithm in algorithms:
        _check_algorithm(algorithm, options)
    data = problem.data
    oracle = GradientOracle(problem.model, options.backend, data.device)
    starts = _starts(problem, x0, len(algorithms))
    most = runs_per_pass(problem, oracle.backend, options.clients_per_round) if batch == "auto" else \
        check_batch(batch)
    store = Store(store) if store is not None and not isinstance(store, Store) else store
    identities, keys, histories = _lookup(store, problem, algorithms, seeds, starts, options, oracle.backend)
    missing = [i for i, history in enumerate(histories) if history is None]
    for group in plan([algorithms[i] for i in missing], most):
        runs = [missing[j] for j in group]
        done = _pass(problem, [algorithms[i] for i in runs], oracle, options, [seeds[i] for i in runs],
                     [starts[i] for i in runs], progress, errors)
        for i, history in zip(runs, done):
            histories[i] = history
            if keys[i] is not None and isinstance(history, History):
                store.keep(keys[i], identities[i], options.rounds, history, algorithms[i])
    return histories  # type: ignore[return-value]


def _pass(problem: Problem, algorithms: list[Any], oracle: GradientOracle, options: RunOptions, seeds: list[int],
          starts: list[Tensor], progress: bool, errors: str) -> list[History | FailedRun]:
    """One pass of ``algorithms`` run together; with ``errors="keep"`` a pass that raises is run again one run at a
    time, and a run that raises alone is its :class:`FailedRun`."""
    try:
        start = torch.stack(starts)  # [R, d]: each run's initial parameters
        _check_fits(algorithms, start, problem, options)
        return run_pass(start_pass(problem, algorithms, oracle, options, seeds, start), progress)
    except Exception as error:
        if errors == "raise":
            raise
        if len(algorithms) == 1:
            return [FailedRun(name_of(algorithms[0]), getattr(error, "round", 0), f"{type(error).__name__}: {error}")]
        return [one for i in range(len(algorithms)) for one in
                _pass(problem, algorithms[i:i + 1], oracle, options, seeds[i:i + 1], starts[i:i + 1], progress, errors)]


def _key(store: Store | None, identity: dict, rounds: int, algorithm: Any) -> str | None:
    """The store's key of a run of ``algorithm`` (:func:`fedcore.store.run_key`), or None when there is no store or
    the run cannot be compared (said: such a run is computed every time, never served from the store nor kept in
    it)."""
    if store is None:
        return None
    parts = uncomparable(identity)
    if parts:
        warnings.warn(f"store {str(store.path)!r}: this run is computed and not kept, since part of what decides it "
                      f"cannot be compared: {'; '.join(parts)} (fedcore.identity says what can)", RuntimeWarning,
                      stacklevel=3)
        return None
    return run_key(identity, rounds, algorithm)


def _seeds_and_options(problem: Problem, args: tuple, options: RunOptions | None, seeds: Any, runs: int,
                       settings: dict[str, Any]) -> tuple[list[int], RunOptions]:
    """``simulate_runs``'s seeds, one per run (one for all is repeated; none given: the options' seed), and its
    options, checked (:meth:`RunOptions.seeds`: a seed given with ``seeds`` is refused; so is ``seed=``)."""
    if "seed" in settings:
        raise TypeError(f"simulate_runs() takes seeds= (one per algorithm, or one for all), not "
                        f"seed={settings['seed']!r}")
    options = RunOptions.of(args, options, "simulate_runs", **settings).check(problem.data)
    seeds, options = options.seeds(seeds, False, "simulate_runs")
    seeds = plain_sequence(seeds)
    seeds = [check_seed("seeds", seed) for seed in (seeds if isinstance(seeds, Sequence) else [seeds])]
    seeds = seeds * runs if len(seeds) == 1 else seeds
    if len(seeds) != runs:
        raise ValueError(f"seeds has {len(seeds)} seeds for {runs} algorithms: give one seed per algorithm, or one "
                         "for all")
    return seeds, options


def _check_fits(algorithms: list[Any], start: Tensor, problem: Problem, options: RunOptions) -> None:
    """The memory a pass of ``algorithms`` from ``start`` (``[d]`` or ``[R, d]``) needs fits the device."""
    data = problem.data
    stacked = stack(algorithms, start.dtype, data.device)
    check_fits(stacked, start if start.dim() == 1 else start.unsqueeze(1), data.num_clients,
               len(algorithms) * options.clients_per_round, options.local_steps, options.batch_size,
               data.inputs[:1].nbytes + data.targets[:1].nbytes, data.device)


def _identity(problem: Problem, start: Tensor, algorithm: Any, options: dict, content: str | None = None) -> dict:
    """A run's identity (:func:`fedcore.identity.run_identity`), its loss included."""
    return run_identity(problem.data, problem.model.module, start, algorithm, options, content, problem.model.loss_fn)


def _lookup(store: Store | None, problem: Problem, algorithms: list[Any], seeds: list[int], starts: list[Tensor],
            options: RunOptions, backend: str) -> tuple[list[dict], list[str | None], list[History | None]]:
    """Each run's identity, store key and stored history (None: to compute), the data hashed once for all."""
    content = data_hash(problem.data) if store is not None else None
    described = options.identity(backend)
    identities = [{} if store is None else _identity(problem, start, algorithm, described | {"seed": seed}, content)
                  for algorithm, seed, start in zip(algorithms, seeds, starts)]
    keys = [_key(store, identity, options.rounds, algorithm) for identity, algorithm in zip(identities, algorithms)]
    return identities, keys, [store.history(key) if key is not None else None for key in keys]


def _starts(problem: Problem, x0: Any, runs: int) -> list[Tensor]:
    """The initial parameters of each of ``runs`` runs: ``x0`` (one tensor of the model's ``d`` for all, a sequence
    of one per run, or None for the model's own), checked and on the data's device."""
    own = problem.x0()
    if x0 is None:
        return [own] * runs
    given = [x0] * runs if isinstance(x0, Tensor) else list(x0) if isinstance(x0, Sequence) else None
    if given is None or len(given) != runs:
        raise ValueError(f"x0 must be a tensor of shape ({own.numel()},) or a list of {runs} of them (one per "
                         f"algorithm), got {type(x0).__name__}" + (f" of length {len(given)}" if given else ""))
    for i, start in enumerate(given):
        check_x0(f"x0[{i}]", start, own.numel())
    return [start.to(own.device, own.dtype) for start in given]
