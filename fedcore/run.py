"""``simulate(problem, algorithm, ...) -> History``: the federated round loop.

Per round ``t``: sample ``clients_per_round`` of the ``N`` clients without replacement
(seeded), gather their minibatches ``[S, K, B, ...]`` in one index operation, weight
them by sample count (or uniformly), let the algorithm run its round through the
gradient oracle, and every ``eval_every`` rounds evaluate the global model on the test
set.  A non-finite loss or model stops the run cleanly, names the round and keeps the
history; a checkpoint every ``checkpoint_every`` rounds lets a resumed run end identical
to an uninterrupted one.
"""

from __future__ import annotations

import itertools
import math
import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from torch import Tensor
from tqdm.auto import tqdm

from fedcore import checkpoint as checkpoint_file
from fedcore.algorithms.base import Algorithm, RoundBatch, State
from fedcore.checks import (
    check_bool,
    check_choice,
    check_function,
    check_int,
    check_keywords,
    check_positive,
    check_seed,
    check_seeds,
    plain_number,
)
from fedcore.data.federated import FederatedData
from fedcore.files import writable_file
from fedcore.identity import data_hash, differences, run_identity, uncomparable
from fedcore.memory import check_fits
from fedcore.params import GradientOracle, evaluate, evaluate_runs
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.runs import run_state, select, signature, stack
from fedcore.store import NotKept, Store, run_key

CHECKPOINT_VERSION = 2
MAX_TRACE_BYTES = 1 << 20
"""A traced run is kept in a results store when its trace (rounds x K x S models of d numbers) holds at most
this many bytes, 1 MiB: the counterexample's 900 steps of 3 clients take 11 kB, one model of 03's CNN 4.8 MB."""


def simulate(
    problem: Problem,
    algorithm: Algorithm,
    rounds: int,
    clients_per_round: int,
    local_steps: int,
    batch_size: int,
    *,
    seed: int = 0,
    eval_every: int = 1,
    weighting: str = "samples",
    backend: str = "auto",
    progress: bool = True,
    checkpoint: str | os.PathLike | None = None,
    checkpoint_every: int = 10,
    resume: bool | str = False,
    x0: Tensor | None = None,
    callback: Callable[[int, State], None] | None = None,
    trace: bool = False,
    store: Store | str | os.PathLike | None = None,
    diverge_above: float | None = None,
    record: Callable[[Tensor], dict[str, Any]] | None = None,
) -> History:
    """Run ``algorithm`` for ``rounds`` communication rounds on ``problem``.

    ``weighting`` is ``"samples"`` (``w_i = n_i / sum_S n_j``) or ``"uniform"``.
    The global model is evaluated on the test set before the first round, every ``eval_every``
    rounds and after the last; ``eval_every=0`` never evaluates it (runs scored by their training
    loss, such as a tuning search, skip the test set's cost).
    With ``checkpoint`` set, the run is saved every ``checkpoint_every`` rounds and at
    the end (with a checksum, flushed to disk); ``resume=True`` continues from that file when
    it exists, after checking that it was written by the same run (:mod:`fedcore.identity`:
    data, model and initial parameters, every hyperparameter, the options, fedcore's version)
    and holds at most ``rounds`` rounds.  A user's plain function (a lambda schedule) cannot be
    compared: ``resume="trust"`` resumes anyway, on the caller's word for those parts.
    ``callback(round, state)`` is called after every completed round (to record a
    trajectory or drive a live plot); ``x0`` overrides the model's initial parameters.
    ``trace=True`` keeps every sampled client's model after every local step in
    ``History.trace`` (d numbers per client and step: for small models and client drift plots).
    A run diverges at the first round whose training loss or model is not finite, or (with
    ``diverge_above``) whose training loss exceeds that bound: it stops there, warns, and keeps its
    history, state and checkpoint up to the round before (``History.diverged_round`` and
    ``History.diverged_because`` say where and why).
    ``store`` (a :class:`fedcore.store.Store` or a file path) returns a finished run of the same
    identity and rounds without computing it, and keeps this one when it finishes (a traced run with its
    trace, when that holds at most :data:`MAX_TRACE_BYTES`); a run with a ``callback``, a longer trace or a
    plain-function hyperparameter (which cannot be compared) is neither looked up nor kept.
    ``record(x)`` measures the server models ``x [R, d]`` before the first round and after every round and
    returns ``{name: one number per run}``: each name becomes a column of ``History.frame`` (a quantity the
    test set does not give, e.g. ``||grad f(x_t)||^2`` on a quadratic).  A ``record`` that is a dataclass
    (its fields compared, tensors by content) is part of the run's identity, so such runs are stored and
    reused; a plain function makes the run uncomparable, as a lambda schedule does.
    """
    settings, progress = _checked_options(problem, rounds, clients_per_round, local_steps, batch_size, eval_every,
                                          weighting, progress, diverge_above, record)
    data, eval_every = problem.data, settings["eval_every"]
    checkpoint_every = check_int("checkpoint_every", checkpoint_every)
    seed = check_seed("seed", seed)
    trace = check_bool("trace", trace)
    if callback is not None:
        check_function("callback", callback, "round", "state")
    if checkpoint is not None:
        checkpoint = writable_file("checkpoint", checkpoint)
    if x0 is not None:
        _check_x0("x0", x0, problem.model.dim)
    _check_algorithm(algorithm, settings, rounds)
    if resume not in (False, True, "trust") or not isinstance(resume, (bool, str)):
        raise ValueError(f"resume={resume!r} not one of False, True, 'trust'")
    if resume and checkpoint is None:
        raise ValueError(f"resume={resume!r} needs checkpoint=<path>")
    if trace and resume:
        raise ValueError("trace=True with resume=True: a resumed run has no trace of the rounds before; "
                         "run from the start to trace it")

    if data.test_targets.shape[0] == 0:
        warnings.warn(f"{data.name} has no test samples (test_fraction=0?): test metrics are NaN, not measured",
                      UserWarning, stacklevel=2)
    start = problem.x0()
    start = start if x0 is None else x0.to(data.device, start.dtype)
    check_fits(algorithm, start, data.num_clients, clients_per_round, local_steps, batch_size,
               data.inputs[:1].nbytes + data.targets[:1].nbytes, data.device)
    oracle = GradientOracle(problem.model, backend, data.device)
    config = {**settings, "seed": seed, "backend": oracle.backend}
    run = _Pass(problem, [algorithm], oracle, config, [seed], start, callback, trace)
    if store is not None and not isinstance(store, Store):
        store = Store(store)
    needed = checkpoint is not None or store is not None
    identity = run_identity(data, problem.model.module, start, algorithm, config) if needed else {}
    run.identity = identity
    traced = rounds * local_steps * clients_per_round * start.numel() * start.element_size()
    key = None if callback is not None or (trace and traced > MAX_TRACE_BYTES) else \
        _key(store, {**identity, "trace": True} if trace else identity, rounds)
    if key is not None and (stored := _stored(store, key)) is not None:
        return stored
    if checkpoint is not None and resume and Path(checkpoint).exists():
        run.load(Path(checkpoint), rounds, trust=resume == "trust")
    history = run.loop(rounds, eval_every, weighting, progress, checkpoint, checkpoint_every)[0]
    if key is not None:
        _keep(store, key, identity, rounds, history)
    return history


def _checked_options(problem: Problem, rounds: Any, clients_per_round: Any, local_steps: Any, batch_size: Any,
                     eval_every: Any, weighting: Any, progress: Any, diverge_above: Any,
                     record: Any = None) -> tuple[dict[str, Any], bool]:
    """The round settings :func:`simulate` and :func:`simulate_runs` share, checked: ``(settings, progress)``, the
    settings as a run's identity records them (the caller adds the seed and the backend)."""
    if not isinstance(problem, Problem):
        hint = ": wrap it as Problem(data, model)" if isinstance(problem, FederatedData) else ""
        raise TypeError(f"problem={type(problem).__name__} must be a fedcore.Problem{hint}")
    data = problem.data
    rounds = check_int("rounds", rounds)
    clients_per_round = check_int("clients_per_round", clients_per_round)
    if clients_per_round > data.num_clients:
        raise ValueError(f"clients_per_round={clients_per_round} > num_clients={data.num_clients}")
    local_steps = check_int("local_steps", local_steps)
    batch_size = check_int("batch_size", batch_size)
    if batch_size > data.inputs.shape[0]:
        raise ValueError(f"batch_size={batch_size} > {data.inputs.shape[0]}, the training samples of the whole "
                         f"federation; a minibatch is drawn from one client (largest: {int(data.sizes.max())} samples)")
    eval_every = check_int("eval_every", eval_every, low=0)
    check_choice("weighting", weighting, ("samples", "uniform"))
    if diverge_above is not None:
        diverge_above = check_positive("diverge_above", diverge_above)
    settings = {"clients_per_round": clients_per_round, "local_steps": local_steps, "batch_size": batch_size,
                "weighting": weighting, "eval_every": eval_every, "diverge_above": diverge_above}
    if record is not None:  # only then: the identities of runs without one stay as they were
        settings["record"] = check_function("record", record, "x")
    return settings, check_bool("progress", progress)


def _check_algorithm(algorithm: Any, settings: dict[str, Any], rounds: int) -> None:
    """An algorithm has ``init`` and ``round``; one whose hyperparameters were computed for a run's S, K and T
    (``check_run``, e.g. PAdaMFed's theorem step sizes) is asked about this run before any work."""
    if not callable(getattr(algorithm, "round", None)) or not callable(getattr(algorithm, "init", None)):
        raise TypeError(f"algorithm={algorithm!r} needs init(x0, num_clients) and round(state, batch, oracle)")
    if callable(check_run := getattr(algorithm, "check_run", None)):
        check_run(clients_per_round=settings["clients_per_round"], local_steps=settings["local_steps"],
                  rounds=rounds)


def _key(store: Store | None, identity: dict, rounds: int) -> str | None:
    """The store's key of a run, or None when there is no store or the run cannot be compared."""
    return None if store is None or uncomparable(identity) else run_key(identity, rounds)


def _stored(store: Store, key: str) -> History | None:
    entry = store.get(key)
    if entry is None:
        return None
    final_state = {"x": entry["x"]} if "x" in entry else NotKept()
    return History(entry["frame"], entry["algorithm"], entry["backend"], final_state, entry["diverged_round"],
                   entry.get("trace"), stored=True, diverged_because=entry.get("diverged_because"))


def _keep(store: Store, key: str, identity: dict, rounds: int, history: History) -> None:
    store.put(key, identity, rounds, {"frame": history.frame, "algorithm": history.algorithm,
                                      "backend": history.backend, "x": history.final_state["x"],
                                      "diverged_round": history.diverged_round,
                                      "diverged_because": history.diverged_because,
                                      **({"trace": history.trace} if history.trace is not None else {})})


def warm_up(problem: Problem, backend: str = "auto") -> float:
    """Pay the one-time start-up cost of a process (torch's lazy initialization, the first ``vmap`` of a
    model: about 2 s on a CPU) on two samples, so that the ``seconds`` of the runs after it measure the
    runs alone.  Returns the seconds it took.  Notebooks call it before the runs whose times they show."""
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


def simulate_runs(
    problem: Problem,
    algorithms: Sequence[Algorithm],
    rounds: int,
    clients_per_round: int,
    local_steps: int,
    batch_size: int,
    *,
    seeds: Sequence[int] = (0,),
    batch: str | int = "auto",
    eval_every: int = 1,
    weighting: str = "samples",
    backend: str = "auto",
    progress: bool = True,
    store: Store | str | os.PathLike | None = None,
    diverge_above: float | None = None,
    record: Callable[[Tensor], dict[str, Any]] | None = None,
    x0: Tensor | Sequence[Tensor] | None = None,
) -> list[History]:
    """``[simulate(problem, algorithms[i], ..., seed=seeds[i], x0=x0[i]) for i]``, computed in passes of several
    runs.

    ``seeds`` has one seed per algorithm (or one for all); so has ``x0``, the initial parameters (a tensor of the
    model's ``d`` for all runs, a list of them one per run, or None: the model's own, as in :func:`simulate`), so
    that runs from different initial models (one per seed) share a pass.  Runs whose algorithms differ only in
    the values of their hyperparameters (:func:`fedcore.runs.signature`) go through the client loop together, up to
    ``batch`` runs per pass (``"auto"``: :func:`runs_per_pass`; ``"off"`` or 1: one run at a time): the
    clients of all runs are one ``[R*S, d]`` matrix for the gradient oracle, the server state is per run, and
    each run keeps its own initial model, client sampling and minibatch stream, so run i equals
    ``simulate(..., seed=seeds[i])`` (up to float rounding; with dropout each run draws its own masks from
    the pass's stream, so it equals it in distribution).  A run that diverges leaves its pass at that round
    (its history says where and why, as ``simulate``'s does); the others go on.  The test set is evaluated
    for all runs of a pass in one forward where the backend is ``vmap``.  A run that cannot share a pass
    (a plain-function schedule, another family) runs alone, said once.  With ``store``, each run is looked
    up under its own identity, only the missing ones are computed, and each pass keeps its runs as it
    finishes (an interrupted call loses no finished pass).  The ``seconds`` of a round of a pass are the
    pass's time divided by its runs.  ``record`` as in :func:`simulate` (called with the pass's models).
    """
    algorithms = list(algorithms)
    if not algorithms:
        raise ValueError("algorithms=[] is empty: give at least one algorithm")
    seeds = [check_seed("seeds", seed) for seed in (seeds if isinstance(seeds, Sequence) else [seeds])]
    if len(seeds) == 1:
        seeds = seeds * len(algorithms)
    if len(seeds) != len(algorithms):
        raise ValueError(f"seeds has {len(seeds)} seeds for {len(algorithms)} algorithms: give one seed per "
                         "algorithm, or one for all")
    settings, progress = _checked_options(problem, rounds, clients_per_round, local_steps, batch_size, eval_every,
                                          weighting, progress, diverge_above, record)
    for algorithm in algorithms:
        _check_algorithm(algorithm, settings, rounds)
    data = problem.data
    oracle = GradientOracle(problem.model, backend, data.device)
    starts = _starts(problem, x0, len(algorithms))
    most = runs_per_pass(problem, oracle.backend, clients_per_round) if batch == "auto" else _check_batch(batch)
    if store is not None and not isinstance(store, Store):
        store = Store(store)
    histories: list[History | None] = [None] * len(algorithms)
    identities, keys = {}, {}
    content = data_hash(data) if store is not None else None  # once for all the runs of this call
    for i, (algorithm, seed) in enumerate(zip(algorithms, seeds)):
        config = {**settings, "seed": seed, "backend": oracle.backend}
        identities[i] = run_identity(data, problem.model.module, starts[i], algorithm, config, content) \
            if store is not None else {}
        keys[i] = _key(store, identities[i], rounds)
        if keys[i] is not None:
            histories[i] = _stored(store, keys[i])
    missing = [i for i, history in enumerate(histories) if history is None]
    for group in _passes([algorithms[i] for i in missing], most):
        runs = [missing[j] for j in group]
        config = {**settings, "backend": oracle.backend}
        start = torch.stack([starts[i] for i in runs])  # [R, d]: each run's initial parameters
        check_fits(stack([algorithms[i] for i in runs], start.dtype, data.device),
                   start.unsqueeze(1), data.num_clients, len(runs) * clients_per_round, local_steps,
                   batch_size, data.inputs[:1].nbytes + data.targets[:1].nbytes, data.device)
        engine = _Pass(problem, [algorithms[i] for i in runs], oracle, config, [seeds[i] for i in runs], start)
        finished = engine.loop(rounds, settings["eval_every"], weighting, progress, None, 1)
        for i, history in zip(runs, finished):
            histories[i] = history
            if keys[i] is not None:
                _keep(store, keys[i], identities[i], rounds, history)
    return histories  # type: ignore[return-value]


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
        _check_x0(f"x0[{i}]", start, own.numel())
    return [start.to(own.device, own.dtype) for start in given]


def _check_x0(name: str, x0: Any, dim: int) -> None:
    """``x0`` must be a finite tensor of the model's ``dim`` parameters."""
    if not isinstance(x0, Tensor) or x0.shape != (dim,):
        shape = tuple(x0.shape) if isinstance(x0, Tensor) else type(x0).__name__
        raise ValueError(f"{name} has shape {shape}; expected a tensor of shape ({dim},), the model's parameters")
    if not bool(torch.isfinite(x0).all()):
        raise ValueError(f"{name} has {int((~torch.isfinite(x0)).sum())} non-finite entries; a start must be finite")


def runs_per_pass(problem: Problem, backend: str, clients_per_round: int) -> int:
    """The ``batch="auto"`` rule: how many runs share a pass.  Measured on 2 CPU cores
    (``benchmarks/round_speed.py --workloads runs``, ``benchmarks/README.md``; K = 10, B = 32, seconds per
    run-round against one run at a time): on the ``vmap`` backend the gain peaks where the pass holds at most
    ``ROWS_PER_PASS`` = 160 client rows and its client matrix ``[R*S, d]`` at most ``ENTRIES_PER_PASS`` = 4.2M
    entries: logistic regression (d = 7,850) gains most at R*S = 160 (3.2x at S = 10, R = 16; 2.2x at S = 20,
    R = 8), less beyond (2.6x at R*S = 320); the 784-64-10 MLP (d = 50,890) at R*S = 80 (2.2x at S = 10,
    R = 8; 3.0x at S = 5, R = 16), less at 160 rows (1.7x).  On the ``loop`` backend (convolutions, LSTMs,
    models above 0.7M parameters) the oracle computes client by client either way: Reddi et al.'s CNN gained
    nothing at R = 4 (0.94-1.02x), so those runs go one at a time.  No accelerator has been measured yet: there
    the CPU's rule applies."""
    if backend == "loop":
        return 1
    rows = min(ROWS_PER_PASS, ENTRIES_PER_PASS // problem.model.dim)
    return max(1, rows // clients_per_round)


ROWS_PER_PASS, ENTRIES_PER_PASS = 160, 4_200_000


def _check_batch(batch: Any) -> int:
    if batch == "off":
        return 1
    if isinstance(batch, str):
        raise ValueError(f"batch={batch!r} not one of 'auto', 'off' or an int >= 1 (the most runs in one pass)")
    return check_int("batch", batch)


_said: set[str] = set()


def _passes(algorithms: list[Algorithm], most: int) -> list[list[int]]:
    """The passes: indices of ``algorithms`` grouped by :func:`fedcore.runs.signature`, at most ``most`` per
    pass, in order of first appearance; an algorithm that cannot share a pass is alone (said once)."""
    groups: dict[str, list[int]] = {}
    alone = []
    for i, algorithm in enumerate(algorithms):
        key, reason = signature(algorithm)
        if key is None:
            alone.append([i])
            name = _name(algorithm)
            if most > 1 and len(algorithms) > 1 and f"{name}: {reason}" not in _said:
                _said.add(f"{name}: {reason}")
                warnings.warn(f"{name} runs alone, not in a pass with others: {reason}", UserWarning, stacklevel=3)
        else:
            groups.setdefault(key, []).append(i)
    passes = [group[j:j + most] for group in groups.values() for j in range(0, len(group), most)] + alone
    return sorted(passes, key=lambda indices: indices[0])


def sweep(problem: Problem, build: Callable[..., Any], grid: dict[str, Sequence[Any]], *,
          seeds: Sequence[int] = (0,), batch: str | int = "auto",
          summary: Callable[[History], dict[str, float]] | None = None,
          x0: Mapping[int, Tensor] | None = None, **options: Any) -> pd.DataFrame:
    """Run ``build(**point)`` for every point of ``grid`` and every seed of ``seeds``: one row per (point, seed).

    ``sweep(problem, lambda client_lr: fedavg(client_lr), {"client_lr": [0.01, 0.1, 1]}, seeds=(0, 1, 2),
    rounds=50, ...)`` returns the point's values, ``seed``, the final train loss, final and best test accuracy,
    and ``diverged_round`` (NaN when the run did not diverge): a divergence is a result, not a crash.  A point
    whose hyperparameters ``build`` refuses (a negative learning rate) is a row with its ``error``.  The runs
    go through :func:`simulate_runs` (``batch`` runs per pass; ``"off"`` runs them one at a time), so with
    ``store=`` each run is kept when its pass finishes and an interrupted sweep, run again, computes only the
    runs it had not finished.  ``summary(history)`` adds columns of its own to each row (a paper's metric,
    e.g. the mean accuracy of the last rounds).  ``x0`` maps each seed to the initial parameters its runs start
    from (a seed that also draws the initial model); None: the model's own for every seed.
    """
    if summary is not None:
        check_function("summary", summary, "history")
    if not callable(build):
        raise TypeError(f"build={build!r} must be a function (**hyperparameters) -> algorithm")
    grid = _checked_grid(grid)
    check_keywords(build, grid, "build (with the grid's keys)")
    if "seed" in options:  # one seed, as simulate takes it: the table has no seed column
        if tuple(seeds) != (0,):
            raise ValueError(f"seed={options['seed']!r} and seeds={seeds!r}: give one of them")
        seeds = [options.pop("seed")]
    seeds = check_seeds("seeds", seeds)
    if x0 is not None and (not isinstance(x0, Mapping) or set(seeds) - set(x0)):
        missing = sorted(set(seeds) - set(x0)) if isinstance(x0, Mapping) else seeds
        raise ValueError(f"x0 must map every seed to its initial parameters ({{seed: tensor}}); seeds {missing} "
                         f"have none")
    rows, runs = [], []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        try:
            algorithm = build(**point)
        except (ValueError, TypeError) as error:
            rows += [{**point, "seed": seed, "error": str(error)} for seed in seeds]
            continue
        for seed in seeds:
            rows.append({**point, "seed": seed})
            runs.append((len(rows) - 1, algorithm, seed))
    if runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            histories = simulate_runs(problem, [a for _, a, _ in runs], seeds=[s for _, _, s in runs], batch=batch,
                                      x0=None if x0 is None else [x0[s] for _, _, s in runs], **options)
        for (row, _, _), history in zip(runs, histories):
            rows[row].update(_summary_row(history, summary))
    table = pd.DataFrame(rows)
    return table if len(seeds) > 1 else table.drop(columns="seed")


def _summary_row(history: History, summary: Callable[[History], dict[str, float]] | None) -> dict[str, float]:
    frame = history.frame
    return {
        "final_train_loss": float(frame["train_loss"].iloc[-1]),
        "final_test_accuracy": history.final("test_accuracy") if "test_accuracy" in frame else math.nan,
        "best_test_accuracy": float(frame["test_accuracy"].max()) if "test_accuracy" in frame else math.nan,
        "diverged_round": history.diverged_round if history.diverged else math.nan,
        **(summary(history) if summary is not None else {}),
    }


def _checked_grid(grid: Any) -> dict[str, list[Any]]:
    """``grid`` as ``{name: [values]}``: any sequence of values (a list, tuple, range, 1-d array or tensor), its
    numpy and torch scalars as Python numbers."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid={grid!r} is empty or not a dict: give {{hyperparameter: [values, ...]}}, "
                         "e.g. {'client_lr': [0.01, 0.1]}")
    checked = {}
    for name, values in grid.items():
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable) or \
                not hasattr(values, "__len__") or getattr(values, "ndim", 1) != 1:
            example = f"{{{name!r}: [{values!r}]}}" if isinstance(values, (int, float, str)) else \
                "{'client_lr': [0.01, 0.1]}"
            raise ValueError(f"grid[{name!r}]={values!r} must be a sequence of values (a list, tuple, range or "
                             f"1-d array), e.g. {example}")
        checked[name] = [plain_number(value) for value in values]
        if not checked[name]:
            raise ValueError(f"grid[{name!r}]={values!r} is empty: give at least one value")
    return checked


def sample_round(
    data: FederatedData, t: int, clients_per_round: int, local_steps: int, batch_size: int,
    weighting: str, dtype: torch.dtype, sampler: torch.Generator, batch_generator: torch.Generator,
) -> RoundBatch:
    """Round ``t``'s batch of one run: ``clients_per_round`` clients drawn without replacement (``sampler``,
    a CPU generator), their weights (``n_i / sum n_j`` or uniform) and the rows of their
    ``local_steps`` minibatches of ``batch_size`` (``batch_generator``, on the data's device),
    gathered step by step from the resident data by :meth:`RoundBatch.step`."""
    clients = torch.randperm(data.num_clients, generator=sampler)[:clients_per_round].to(data.device)
    sizes = data.sizes[clients].to(dtype)
    weights = sizes / sizes.sum() if weighting == "samples" else torch.full_like(sizes, 1 / clients_per_round)
    rows = data.sample_indices(clients, local_steps, batch_size, batch_generator)
    return RoundBatch(t, clients, weights, rows, data.inputs, data.targets, data.num_clients, sizes=data.sizes)


def _per_run(metrics: dict[str, Any], runs: int) -> dict[str, list[float]]:
    """A round's metrics as one float per run (a number is every run's; a tensor holds one per run)."""
    out = {}
    for name, value in metrics.items():
        if isinstance(value, Tensor):
            out[name] = value.detach().reshape(-1).tolist() if value.numel() == runs else [float(value)] * runs
        else:
            out[name] = [float(value)] * runs
    return out


def _name(algorithm: Any) -> str:
    """An algorithm's name (its ``name``, else its class's) for histories, progress bars and messages."""
    return getattr(algorithm, "name", type(algorithm).__name__)


def _checked_state(state: Any, algorithm: Any, method: str) -> State:
    """What ``init`` and ``round`` hand back must be a state: a dict with the model ``"x"`` as a tensor."""
    if not isinstance(state, dict) or not isinstance(state.get("x"), Tensor):
        got = f"a dict with keys {sorted(state)}" if isinstance(state, dict) else repr(state)[:80]
        raise TypeError(f"{_name(algorithm)}.{method} returned {got}; it must "
                        "return the state: a dict of tensors with the server model under 'x' ([R, 1, d], as x0)")
    return state


def _checked_round(result: Any, algorithm: Any) -> tuple[State, dict]:
    """``round`` must return ``(new_state, metrics)``."""
    if not isinstance(result, tuple) or len(result) != 2 or not isinstance(result[1], dict):
        raise TypeError(f"{_name(algorithm)}.round(state, batch, oracle) "
                        f"returned {repr(result)[:80]}; it must return (new_state, metrics): the new state dict and "
                        "a dict of the round's metrics, as in: return new_state, {'train_loss': loss}")
    return _checked_state(result[0], algorithm, "round(state, batch, oracle)"), result[1]


class _Pass:
    """The mutable state of R runs simulated together (R = 1 for :func:`simulate`): the stacked algorithm
    and its state, each run's random streams and rows so far, and the runs that left the pass."""

    def __init__(self, problem: Problem, algorithms: list[Algorithm], oracle: GradientOracle, config: dict,
                 seeds: list[int], start: Tensor, callback: Callable[[int, State], None] | None = None,
                 trace: bool = False) -> None:
        self.problem, self.algorithms, self.oracle, self.config = problem, algorithms, oracle, config
        self.callback = callback
        self.trace: list[tuple[Tensor, Tensor]] | None = [] if trace else None
        data = problem.data
        self.samplers = [torch.Generator().manual_seed(seed) for seed in seeds]
        self.batch_generators = [torch.Generator(device=data.device).manual_seed(seed + 1) for seed in seeds]
        self.dropout_rng = torch.Generator().manual_seed(seeds[0] + 2).get_state()
        self.start = start  # the model's initial parameters, or the caller's x0
        self.identity: dict = {}
        self.live = list(range(len(algorithms)))  # the runs still in the pass, in the pass's order
        self.algorithm = stack(algorithms, start.dtype, data.device)
        starts = start.unsqueeze(1) if start.dim() == 2 else start.expand(len(algorithms), 1, -1)  # [R, 1, d]
        self.state = _checked_state(self.algorithm.init(starts.clone(),
                                                        data.num_clients), self.algorithm, "init(x0, num_clients)")
        self.rows: list[list[dict[str, float]]] = [[] for _ in algorithms]
        self.ended: dict[int, tuple[State, int, str]] = {}  # run -> (state, diverged round, why)
        self.round = 0

    def load(self, path: Path, rounds: int, trust: bool) -> None:
        """Continue from ``path`` after checking that it is this run's (see :func:`simulate`; one run only)."""
        unknown = uncomparable(self.identity)
        if unknown and not trust:
            raise ValueError(
                f"resume=True cannot check {', '.join(unknown)} against checkpoint={str(path)!r}: a plain "
                "function's code cannot be compared; use fedcore's schedules (constant, exp_decay, storm_step_size, "
                "storm_momentum) or pass resume='trust' to resume on your word"
            )
        saved = checkpoint_file.read(path, self.problem.data.device)
        found = differences(saved.get("identity"), self.identity)
        if saved.get("version") != CHECKPOINT_VERSION or found:
            field, there, here = found[0] if found else ("version", saved.get("version"), CHECKPOINT_VERSION)
            more = f" (and {len(found) - 1} more: {', '.join(f for f, _, _ in found[1:4])})" if len(found) > 1 else ""
            raise ValueError(
                f"checkpoint={str(path)!r} was written by a different run: {field} is {there!r} there and "
                f"{here!r} here{more}; delete it, pass another checkpoint path, or pass resume=False to start over"
            )
        if saved["round"] > rounds:
            raise ValueError(
                f"checkpoint={str(path)!r} holds {saved['round']} rounds, more than rounds={rounds}: pass "
                f"rounds>={saved['round']} to continue it, or another checkpoint path"
            )
        self.state, self.rows[0], self.round = saved["state"], saved["rows"], saved["round"]
        self.samplers[0].set_state(saved["sampler"])
        self.batch_generators[0].set_state(saved["batch_generator"].to(self.batch_generators[0].get_state().device))
        self.dropout_rng = saved["dropout_rng"]

    def save(self, path: Path) -> None:
        checkpoint_file.write(path, {
            "version": CHECKPOINT_VERSION, "identity": self.identity, "state": self.state, "rows": self.rows[0],
            "round": self.round, "sampler": self.samplers[0].get_state(),
            "batch_generator": self.batch_generators[0].get_state(), "dropout_rng": self.dropout_rng,
        })

    def batch(self, weighting: str) -> RoundBatch:
        """Round t's batch of every live run (each from its own streams), as one batch of R runs."""
        config, data = self.config, self.problem.data
        parts = [sample_round(data, self.round, config["clients_per_round"], config["local_steps"],
                              config["batch_size"], weighting, self.start.dtype, self.samplers[run],
                              self.batch_generators[run]) for run in self.live]
        if len(parts) == 1:
            one = parts[0]
            return one if self.trace is None else replace(one, trace=[])
        return RoundBatch(self.round, torch.cat([p.clients for p in parts]), torch.cat([p.weights for p in parts]),
                          torch.cat([p.rows for p in parts]), data.inputs, data.targets, data.num_clients,
                          sizes=data.sizes)

    def recorded(self) -> list[dict[str, float]]:
        """Each live run's ``record`` of its server model (see :func:`simulate`), or nothing."""
        record = self.config.get("record")
        if record is None:
            return [{} for _ in self.live]
        values = record(self.state["x"].reshape(len(self.live), -1))
        if not isinstance(values, dict) or not all(isinstance(name, str) for name in values):
            raise TypeError(f"record={record!r} returned {repr(values)[:80]}; it must return {{name: one number per "
                            "run}} for the models x [R, d] it is given")
        per_run = _per_run(values, len(self.live))
        return [{name: column[p] for name, column in per_run.items()} for p in range(len(self.live))]

    def evaluate(self) -> list[dict[str, float]]:
        """Each live run's test metrics, in one forward over the runs' models where the backend is vmap."""
        data = self.problem.data
        point = getattr(self.algorithm, "eval_point", lambda state: state["x"])(self.state)
        return evaluate_runs(self.problem.model, point.reshape(len(self.live), -1), data.test_inputs,
                             data.test_targets, ignore_classes=data.info.get("ignore_classes", ()),
                             backend=self.oracle.backend)

    def loop(self, rounds: int, eval_every: int, weighting: str, progress: bool,
             checkpoint: str | os.PathLike | None, checkpoint_every: int) -> list[History]:
        path = Path(checkpoint) if checkpoint is not None else None
        if self.round == 0:
            tested = self.evaluate() if eval_every else [{} for _ in self.live]
            for run, metrics, recorded in zip(self.live, tested, self.recorded()):
                self.rows[run].append({"round": 0, **metrics, **recorded})
        name = _name(self.algorithms[0])
        bar = tqdm(total=rounds, initial=min(self.round, rounds), disable=not progress, leave=False,
                   desc=name if len(self.algorithms) == 1 else f"{name} x {len(self.algorithms)} runs")
        with torch.random.fork_rng(devices=[]), bar:
            torch.set_rng_state(self.dropout_rng)
            while self.round < rounds and self.live:
                row = self.step(weighting, eval_every, rounds)
                bar.update(1)
                bar.set_postfix({k: f"{v:.4g}" for k, v in row.items() if k != "round"}, refresh=False)
                if path is not None and self.live and (self.round % checkpoint_every == 0 or self.round == rounds):
                    self.save(path)
        return [self.history(run) for run in range(len(self.algorithms))]

    def history(self, run: int) -> History:
        if run in self.ended:
            state, diverged_round, because = self.ended[run]
        else:
            state, diverged_round, because = run_state(self.state, self.live.index(run)), None, None
        frame = pd.DataFrame(self.rows[run]).set_index("round")
        algorithm = self.algorithms[run]
        trace = None
        if self.trace is not None:
            trace = [(clients[0], models[:, 0]) for clients, models in self.trace]
        return History(frame, _name(algorithm), self.oracle.backend, state,
                       diverged_round, trace, diverged_because=because)

    def divergence(self, train_loss: float, finite: bool) -> str | None:
        """Why this round counts as diverged for one run, or None."""
        bound = self.config["diverge_above"]
        if not math.isfinite(train_loss):
            return f"train_loss={train_loss} is not finite"
        if not finite:
            return "the model is not finite"
        if bound is not None and train_loss > bound:
            return f"train_loss={train_loss:.6g} > diverge_above={bound:g}"
        return None

    def step(self, weighting: str, eval_every: int, rounds: int) -> dict[str, float]:
        """One round of every live run; a run that diverges leaves the pass with its state of the round before.
        Returns the first live run's row (for the progress bar)."""
        started = time.perf_counter()
        batch = self.batch(weighting)
        runs = len(self.live)
        with self.problem.model.mode(training=True):
            state, metrics = _checked_round(self.algorithm.round(self.state, batch, self.oracle), self.algorithm)
        seconds = (time.perf_counter() - started) / runs
        values = _per_run(metrics, runs)
        finite = torch.isfinite(state["x"].reshape(runs, -1)).all(dim=1).tolist()
        losses = values.get("train_loss", [0.0] * runs)
        because = [self.divergence(losses[p], finite[p]) for p in range(runs)]
        rows = []
        for p, run in enumerate(self.live):
            rows.append({"round": self.round + 1, **{k: v[p] for k, v in values.items()}, "seconds": seconds})
            self.rows[run].append(rows[-1])
        diverged = [p for p in range(runs) if because[p] is not None]
        if diverged:
            batch.undo(torch.tensor(diverged, device=batch.clients.device))  # their per-client rows, as before
            for p in diverged:
                run = self.live[p]
                self.ended[run] = (run_state(self.state, p), self.round + 1, because[p])  # the rest: the round before
                warnings.warn(
                    f"{_name(self.algorithms[run])} diverged at round {self.round + 1} "
                    f"({because[p]}); history and state kept up to round {self.round}", RuntimeWarning, stacklevel=5)
            kept = [p for p in range(runs) if because[p] is None]
            self.live = [self.live[p] for p in kept]
            if not self.live:
                return rows[0]
            state = select(state, torch.tensor(kept))
            self.algorithm = stack([self.algorithms[run] for run in self.live], self.start.dtype,
                                   self.problem.data.device)
        self.round += 1
        self.state = state
        if self.trace is not None and batch.trace:
            self.trace.append((batch.clients, torch.stack(batch.trace)))
        if eval_every and (self.round % eval_every == 0 or self.round == rounds):
            for run, tested in zip(self.live, self.evaluate()):
                self.rows[run][-1].update(tested)
        for run, recorded in zip(self.live, self.recorded()):
            self.rows[run][-1].update(recorded)
        self.dropout_rng = torch.get_rng_state()
        if self.callback is not None:
            self.callback(self.round, run_state(self.state, 0))
        return self.rows[self.live[0]][-1]
