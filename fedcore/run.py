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
from collections.abc import Callable, Sequence
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
)
from fedcore.data.federated import FederatedData
from fedcore.files import writable_file
from fedcore.identity import differences, run_identity, uncomparable
from fedcore.memory import check_fits
from fedcore.params import GradientOracle, evaluate
from fedcore.problem import History, Problem
from fedcore.store import Store, run_key

CHECKPOINT_VERSION = 2


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
    identity and rounds without computing it, and keeps this one when it finishes; a run with a
    ``callback``, a ``trace`` or a plain-function hyperparameter (which cannot be compared) is
    neither looked up nor kept.
    """
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
    checkpoint_every = check_int("checkpoint_every", checkpoint_every)
    check_choice("weighting", weighting, ("samples", "uniform"))
    seed = check_seed("seed", seed)
    progress, trace = check_bool("progress", progress), check_bool("trace", trace)
    if diverge_above is not None:
        diverge_above = check_positive("diverge_above", diverge_above)
    if callback is not None:
        check_function("callback", callback, "round", "state")
    if checkpoint is not None:
        checkpoint = writable_file("checkpoint", checkpoint)
    if x0 is not None:
        dim = problem.model.dim
        if not isinstance(x0, Tensor) or x0.shape != (dim,):
            shape = tuple(x0.shape) if isinstance(x0, Tensor) else type(x0).__name__
            raise ValueError(f"x0 has shape {shape}; expected a tensor of shape ({dim},), the model's parameters")
        if not bool(torch.isfinite(x0).all()):
            raise ValueError(f"x0 has {int((~torch.isfinite(x0)).sum())} non-finite entries; a start must be finite")
    if not callable(getattr(algorithm, "round", None)) or not callable(getattr(algorithm, "init", None)):
        raise TypeError(f"algorithm={algorithm!r} needs init(x0, num_clients) and round(state, batch, oracle)")
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
    config = {
        "clients_per_round": clients_per_round, "local_steps": local_steps, "batch_size": batch_size,
        "seed": seed, "weighting": weighting, "eval_every": eval_every, "backend": oracle.backend,
        "diverge_above": diverge_above,
    }
    run = _Run(problem, algorithm, oracle, config, seed, start, callback, trace)
    if store is not None and not isinstance(store, Store):
        store = Store(store)
    if checkpoint is not None or store is not None:
        run.identity = run_identity(data, problem.model.module, run.start, algorithm, config)
    key = None
    if store is not None and callback is None and not trace and not uncomparable(run.identity):
        key = run_key(run.identity, rounds)
        entry = store.get(key)
        if entry is not None:
            return History(entry["frame"], entry["algorithm"], entry["backend"], {"x": entry["x"]},
                           entry["diverged_round"], stored=True, diverged_because=entry.get("diverged_because"))
    if checkpoint is not None and resume and Path(checkpoint).exists():
        run.load(Path(checkpoint), rounds, trust=resume == "trust")
    history = run.loop(rounds, eval_every, weighting, progress, checkpoint, checkpoint_every)
    if store is not None and key is not None:
        store.put(key, run.identity, rounds, {"frame": history.frame, "algorithm": history.algorithm,
                                              "backend": history.backend, "x": history.final_state["x"],
                                              "diverged_round": history.diverged_round,
                                              "diverged_because": history.diverged_because})
    return history


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


def sweep(problem: Problem, build: Callable[..., Any], grid: dict[str, Sequence[Any]], *,
          summary: Callable[[History], dict[str, float]] | None = None, **options: Any) -> pd.DataFrame:
    """Run ``simulate(problem, build(**point), **options)`` for every point of ``grid``.

    ``sweep(problem, lambda client_lr: fedavg(client_lr), {"client_lr": [0.01, 0.1, 1]}, rounds=50, ...)``
    returns one row per point with the final train loss, final and best test accuracy, and
    ``diverged_round`` (NaN when the run did not diverge): a divergence is a result, not a crash.
    A point whose hyperparameters ``build`` refuses (a negative learning rate) is a row with its
    ``error``.  With ``store=`` (see :func:`simulate`) each point is kept as it finishes, so an
    interrupted sweep, run again, computes only the points it had not finished.  ``summary(history)``
    adds columns of its own to each row (a paper's metric, e.g. the mean accuracy of the last rounds).
    """
    if summary is not None:
        check_function("summary", summary, "history")
    if not callable(build):
        raise TypeError(f"build={build!r} must be a function (**hyperparameters) -> algorithm")
    _check_grid(grid)
    check_keywords(build, grid, "build (with the grid's keys)")
    rows = []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        try:
            algorithm = build(**point)
        except (ValueError, TypeError) as error:
            rows.append({**point, "error": str(error)})
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            history = simulate(problem, algorithm, **options)
        frame = history.frame
        rows.append({
            **point,
            "final_train_loss": float(frame["train_loss"].iloc[-1]),
            "final_test_accuracy": history.final("test_accuracy") if "test_accuracy" in frame else math.nan,
            "best_test_accuracy": float(frame["test_accuracy"].max()) if "test_accuracy" in frame else math.nan,
            "diverged_round": history.diverged_round if history.diverged else math.nan,
            **(summary(history) if summary is not None else {}),
        })
    return pd.DataFrame(rows)


def _check_grid(grid: Any) -> None:
    if not isinstance(grid, dict) or not grid:
        raise ValueError(f"grid={grid!r} is empty or not a dict: give {{hyperparameter: [values, ...]}}")
    for name, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise ValueError(f"grid[{name!r}]={values!r} must be a non-empty list of values, "
                             f"e.g. {{{name!r}: [{values!r}]}}")


def sample_round(
    data: FederatedData, t: int, clients_per_round: int, local_steps: int, batch_size: int,
    weighting: str, dtype: torch.dtype, sampler: torch.Generator, batch_generator: torch.Generator,
) -> RoundBatch:
    """Round ``t``'s batch: ``clients_per_round`` clients drawn without replacement (``sampler``,
    a CPU generator), their weights (``n_i / sum n_j`` or uniform) and the rows of their
    ``local_steps`` minibatches of ``batch_size`` (``batch_generator``, on the data's device),
    gathered step by step from the resident data by :meth:`RoundBatch.step`."""
    clients = torch.randperm(data.num_clients, generator=sampler)[:clients_per_round].to(data.device)
    sizes = data.sizes[clients].to(dtype)
    weights = sizes / sizes.sum() if weighting == "samples" else torch.full_like(sizes, 1 / clients_per_round)
    rows = data.sample_indices(clients, local_steps, batch_size, batch_generator)
    return RoundBatch(t, clients, weights, rows, data.inputs, data.targets, data.num_clients)


class _Run:
    """The mutable state of one simulation: model state, random streams, rows so far."""

    def __init__(self, problem: Problem, algorithm: Algorithm, oracle: GradientOracle, config: dict,
                 seed: int, start: Tensor, callback: Callable[[int, State], None] | None,
                 trace: bool = False) -> None:
        self.problem, self.algorithm, self.oracle, self.config = problem, algorithm, oracle, config
        self.callback = callback
        self.trace: list[tuple[Tensor, Tensor]] | None = [] if trace else None
        data = problem.data
        self.sampler = torch.Generator().manual_seed(seed)
        self.batch_generator = torch.Generator(device=data.device).manual_seed(seed + 1)
        self.dropout_rng = torch.Generator().manual_seed(seed + 2).get_state()
        self.start = start  # the model's initial parameters, or the caller's x0
        self.identity: dict = {}
        self.state = algorithm.init(start, data.num_clients)
        self.rows: list[dict[str, float]] = []
        self.round = 0
        self.diverged_round: int | None = None
        self.diverged_because: str | None = None

    def load(self, path: Path, rounds: int, trust: bool) -> None:
        """Continue from ``path`` after checking that it is this run's (see :func:`simulate`)."""
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
        self.state, self.rows, self.round = saved["state"], saved["rows"], saved["round"]
        self.sampler.set_state(saved["sampler"])
        self.batch_generator.set_state(saved["batch_generator"].to(self.batch_generator.get_state().device))
        self.dropout_rng = saved["dropout_rng"]

    def save(self, path: Path) -> None:
        checkpoint_file.write(path, {
            "version": CHECKPOINT_VERSION, "identity": self.identity, "state": self.state, "rows": self.rows,
            "round": self.round, "sampler": self.sampler.get_state(),
            "batch_generator": self.batch_generator.get_state(), "dropout_rng": self.dropout_rng,
        })

    def batch(self, weighting: str) -> RoundBatch:
        config = self.config
        batch = sample_round(
            self.problem.data, self.round, config["clients_per_round"], config["local_steps"],
            config["batch_size"], weighting, self.state["x"].dtype, self.sampler, self.batch_generator,
        )
        return batch if self.trace is None else replace(batch, trace=[])

    def evaluate(self) -> dict[str, float]:
        data = self.problem.data
        point = getattr(self.algorithm, "eval_point", lambda state: state["x"])(self.state)
        return evaluate(self.problem.model, point, data.test_inputs, data.test_targets,
                        ignore_classes=data.info.get("ignore_classes", ()))

    def loop(self, rounds: int, eval_every: int, weighting: str, progress: bool,
             checkpoint: str | os.PathLike | None, checkpoint_every: int) -> History:
        path = Path(checkpoint) if checkpoint is not None else None
        if self.round == 0:
            self.rows.append({"round": 0, **(self.evaluate() if eval_every else {})})
        bar = tqdm(total=rounds, initial=min(self.round, rounds), disable=not progress,
                   desc=getattr(self.algorithm, "name", "run"), leave=False)
        with torch.random.fork_rng(devices=[]), bar:
            torch.set_rng_state(self.dropout_rng)
            while self.round < rounds and self.diverged_round is None:
                row = self.step(weighting, eval_every, rounds)
                bar.update(1)
                bar.set_postfix({k: f"{v:.4g}" for k, v in row.items() if k != "round"}, refresh=False)
                saving = self.round % checkpoint_every == 0 or self.round == rounds
                if path is not None and saving and self.diverged_round is None:
                    self.save(path)
        frame = pd.DataFrame(self.rows).set_index("round")
        return History(frame, getattr(self.algorithm, "name", type(self.algorithm).__name__),
                       self.oracle.backend, self.state, self.diverged_round, self.trace,
                       diverged_because=self.diverged_because)

    def divergence(self, train_loss: float, x: Tensor) -> str | None:
        """Why this round counts as diverged, or None."""
        bound = self.config["diverge_above"]
        if not math.isfinite(train_loss):
            return f"train_loss={train_loss} is not finite"
        if not bool(torch.isfinite(x).all()):
            return "the model is not finite"
        if bound is not None and train_loss > bound:
            return f"train_loss={train_loss:.6g} > diverge_above={bound:g}"
        return None

    def step(self, weighting: str, eval_every: int, rounds: int) -> dict[str, float]:
        started = time.perf_counter()
        batch = self.batch(weighting)
        with self.problem.model.mode(training=True):
            state, metrics = self.algorithm.round(self.state, batch, self.oracle)
        row = {"round": self.round + 1, **metrics, "seconds": time.perf_counter() - started}
        because = self.divergence(metrics.get("train_loss", 0.0), state["x"])
        if because is not None:
            self.diverged_round, self.diverged_because = self.round + 1, because  # the rest stays at the round before
            self.rows.append(row)
            warnings.warn(
                f"{getattr(self.algorithm, 'name', 'run')} diverged at round {self.diverged_round} "
                f"({because}); history and state kept up to round {self.round}",
                RuntimeWarning, stacklevel=4,
            )
            return row
        self.round += 1
        self.state = state
        if self.trace is not None and batch.trace:
            self.trace.append((batch.clients, torch.stack(batch.trace)))
        if eval_every and (self.round % eval_every == 0 or self.round == rounds):
            row.update(self.evaluate())
        self.rows.append(row)
        self.dropout_rng = torch.get_rng_state()
        if self.callback is not None:
            self.callback(self.round, self.state)
        return row
