"""Problem-parameter-free, put to the test on federated quadratics (notebook ``02_padamfed``, section 1; Yan et al.,
ICLR 2025, Theorems 1-2, Remark 1 and the slides' "no heterogeneity bound"): least-squares federations whose
constants we set at will.  (The slides' comparison of what each method's step sizes need is
:data:`fedcore.experiments.padamfed.paper.STEP_SIZE_TABLE`.)

- **Scaling f** (:func:`smoothness_table`): ``s f`` (inputs and targets times ``sqrt(s)``) has the same minimizer
  and every constant times ``s``.  PAdaMFed's normalized steps and ``g_bar``, which divides out ``eta``, move the
  same way for every ``s``: invariant **by construction**, so the table shows the mechanism and is no evidence.
- **Reparametrizing f** (:func:`reparametrization_table`): ``g(theta) = f(a theta)`` from the same point of f
  (:func:`fedcore.objectives.reparametrized_quadratic_task`): the initial gap stays, L grows as ``a^2`` and the
  distance to the optimum shrinks as ``1/a``.  Nothing in the recursion cancels ``a``; a method whose step sizes
  need no constant should still make progress at every ``a`` (the pass rule: :data:`TARGET`).
- **Heterogeneity** (:func:`heterogeneity_table`): the clients' optima spread by ``h``
  (:func:`fedcore.objectives.quadratic_task`'s ``heterogeneity``); the baselines tuned once at the lowest ``h``.

Every run: 50 clients, S = 10 per round, K = 5 local steps of 4 samples, T = 200 rounds (:data:`POINT`), from the
seeds :data:`SEEDS` (client sampling and minibatches; the start is the task's own).  A run's number is
:func:`gradient_ratio`: ``||grad f||`` over its last tenth of rounds over ``||grad f(x_0)||``.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_int, check_positive, check_seeds
from fedcore.experiments.common import half_decades
from fedcore.objectives import QuadraticTask, quadratic_task, reparametrized_quadratic_task, scaled_quadratic_task
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate, simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep

POINT = {"rounds": 200, "clients_per_round": 10, "local_steps": 5, "batch_size": 4}
"""S, K, T and B of every quadratic run (10 of the quadratic's 50 clients per round)."""
SEED = 0
"""The seed of the scaled-f runs (one seed: they are invariant by construction)."""
SEEDS = (0, 1, 2)
"""The seeds of the reparametrization and heterogeneity runs (client sampling and minibatches)."""
TASK_NAME = "the scaled quadratics"
REPARAMETRIZED_NAME = "the reparametrized quadratics"
HETEROGENEITY_NAME = "the quadratics of growing heterogeneity"
"""What a claim's scope calls these runs."""
TARGET = 0.5
"""The pass rule of the quadratics' claims: a run passes when it ends with at most half its initial gradient norm
(:func:`gradient_ratio` <= 0.5), judged on the mean over seeds of log ratios against 2 standard errors."""
SCALES_A = half_decades(-1.0, 1.0)
"""The reparametrization's ``a``: 0.1 ... 10 in half-decades (L over four decades, the distance over two)."""
HETEROGENEITY = (0.3, 1.0, 3.0, 10.0)
"""The heterogeneity levels: the spread of the clients' optima (1 is :func:`quadratic_task`'s default)."""
BASELINE_GRIDS = {"FedAvg": {"client_lr": half_decades(-3.0, 0.0)}, "SCAFFOLD": {"client_lr": half_decades(-3.0, 0.0)},
                  "SCAFFOLD-M": {"eta": half_decades(-3.0, 0.0), "beta": [0.01, 0.03, 0.1, 0.3, 1.0]}}
"""The baselines' grids on the heterogeneity quadratics (tuned once, at the lowest level; SCAFFOLD-M's server
step ``gamma = eta K``, SCAFFOLD's)."""


@contextlib.contextmanager
def divergence_quiet() -> Iterator[None]:
    """No warning when a run diverges: the quadratics expect some runs to diverge, and show them as inf
    (``History.diverged`` says so)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* diverged at round", category=RuntimeWarning)
        yield


def run_quietly(problem: Problem, algorithm: Any, **run: Any) -> History:
    """:func:`fedcore.simulate` without its warning when a run diverges (:func:`divergence_quiet`)."""
    with divergence_quiet():
        return simulate(problem, algorithm, **run)


def _point(point: Mapping[str, int] | None) -> dict[str, int]:
    point = dict(POINT if point is None else point)
    check_int("rounds", point["rounds"])
    return point


def _ratio(task: QuadraticTask, history: History, rounds: int) -> float:
    """``history``'s mean ``||grad f||`` over its last tenth of rounds over ``||grad f(x_0)||`` (inf: diverged)."""
    if history.diverged:
        return math.inf
    norms = np.sqrt(history.frame["squared_gradient_norm"].loc[1:].to_numpy())
    last = max(1, rounds // 10)
    return float(np.mean(norms[-last:])) / float(task.gradient(task.problem.x0()).norm())


def gradient_ratio(task: QuadraticTask, algorithm: Any, point: Mapping[str, int] | None = None, seed: int = SEED,
                   store: Store | None = None) -> float:
    """``||grad f||`` over the last tenth of the rounds (its mean) divided by ``||grad f(x_0)||``: below 1 the run
    made progress, above 1 it moved away (``inf`` if it diverged).  The norms are recorded with the run
    (``record=task.record``), so ``store`` keeps and reuses it."""
    point = _point(point)
    history = run_quietly(task.problem, algorithm, **point, seed=seed, progress=False, eval_every=point["rounds"],
                          weighting="uniform", record=task.record, store=store)
    return _ratio(task, history, point["rounds"])


def gradient_ratios(task: QuadraticTask, build: Callable[..., Any], grid: Mapping[str, Sequence[Any]],
                    seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                    store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of ``build(**values)`` at every point of ``grid`` from every seed, the runs batched by
    :func:`fedcore.sweep`: rows the points, columns the seeds (inf where a run diverged)."""
    point, seeds = _point(point), check_seeds("seeds", seeds)
    with divergence_quiet():
        runs = sweep(task.problem, build, dict(grid), seeds=seeds, eval_every=point["rounds"], weighting="uniform",
                     record=task.record, store=store, progress=False, summary=lambda history: {
                         "ratio": _ratio(task, history, point["rounds"])}, **point)
    runs["seed"] = runs["seed"] if "seed" in runs else seeds[0]
    return runs.pivot_table(index=list(grid), columns="seed", values="ratio", dropna=False)[list(seeds)]


def ratios_of(task: QuadraticTask, methods: Mapping[str, Any], seeds: Sequence[int] = SEEDS,
              point: Mapping[str, int] | None = None, store: Store | None = None) -> dict[tuple[str, int], float]:
    """:func:`gradient_ratio` of each algorithm of ``methods`` (``{name: algorithm}``) from each seed, the runs in
    passes of :func:`fedcore.simulate_runs`: ``{(name, seed): ratio}``."""
    point, seeds = _point(point), check_seeds("seeds", seeds)
    runs = [(name, seed) for name in methods for seed in seeds]
    with divergence_quiet():
        histories = simulate_runs(task.problem, [methods[name] for name, _ in runs], seeds=[seed for _, seed in runs],
                                  eval_every=point["rounds"], weighting="uniform", record=task.record, store=store,
                                  progress=False, **point)
    return {run: _ratio(task, history, point["rounds"]) for run, history in zip(runs, histories)}


def smoothness_builders(fedavg_lr: float, point: Mapping[str, int] | None = None) -> dict[str, Callable[[], Any]]:
    """PAdaMFed and PAdaMFed-VR at their theorems' step sizes for ``point``'s S, K, T; FedAvg and SCAFFOLD at
    one fixed client rate ``fedavg_lr`` (a value that suits the unscaled problem)."""
    point = _point(point)
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    check_positive("fedavg_lr", fedavg_lr)
    return {"PAdaMFed": lambda: algorithms.padamfed(**sizes), "PAdaMFed-VR": lambda: algorithms.padamfed_vr(**sizes),
            "FedAvg": lambda: algorithms.fedavg(fedavg_lr), "SCAFFOLD": lambda: algorithms.scaffold(fedavg_lr)}


def smoothness_table(factors: Sequence[float], fedavg_lr: float, point: Mapping[str, int] | None = None,
                     store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` (seed :data:`SEED`) of every method of :func:`smoothness_builders` on the quadratic
    scaled by each of ``factors``: rows the resulting smoothness L, columns the methods."""
    methods = {name: build() for name, build in smoothness_builders(fedavg_lr, point).items()}
    rows = {}
    for factor in factors:
        task = scaled_quadratic_task(factor)
        ratios = ratios_of(task, methods, [SEED], point, store)
        rows[task.smoothness] = {name: ratios[(name, SEED)] for name in methods}
    return pd.DataFrame(rows).T.rename_axis("smoothness L")


def reparametrization_table(scales: Sequence[float] = SCALES_A, fedavg_lr: float = 0.1,
                            seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                            store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of the methods of :func:`smoothness_builders` (FedAvg and SCAFFOLD at one client
    rate ``fedavg_lr``) on ``f(a theta)`` for each ``a`` of ``scales``, from each seed: rows ``a``, columns
    (method, seed)."""
    methods = {name: build() for name, build in smoothness_builders(fedavg_lr, point).items()}
    rows = {float(a): ratios_of(reparametrized_quadratic_task(a), methods, seeds, point, store) for a in scales}
    return _table(rows, "a")


def _baseline(method: str, point: Mapping[str, int], **values: float) -> Any:
    if method == "SCAFFOLD-M":
        return algorithms.scaffold_m(eta=values["eta"], gamma=values["eta"] * point["local_steps"],
                                     beta=values["beta"])
    return (algorithms.fedavg if method == "FedAvg" else algorithms.scaffold)(values["client_lr"])


def tune_baselines(level: float, seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                   store: Store | None = None) -> dict[str, dict[str, float]]:
    """Each baseline of :data:`BASELINE_GRIDS` tuned on the quadratic of heterogeneity ``level``: the grid point
    with the lowest mean log gradient ratio over ``seeds`` (a point that diverged on any seed never wins)."""
    point, task, chosen = _point(point), quadratic_task(heterogeneity=check_positive("level", level)), {}
    for method, grid in BASELINE_GRIDS.items():
        table = gradient_ratios(task, lambda method=method, **values: _baseline(method, point, **values), grid,
                                seeds, point, store)
        mean_log = np.log10(table.astype(float)).mean(axis=1)
        best = mean_log.idxmin()
        chosen[method] = dict(zip(grid, best if isinstance(best, tuple) else (best,)))
    return chosen


def heterogeneity_table(chosen: Mapping[str, Mapping[str, float]], levels: Sequence[float] = HETEROGENEITY,
                        seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                        store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of PAdaMFed (Theorem 1's step sizes) and of the baselines at their ``chosen``
    values (:func:`tune_baselines`) on the quadratic of each heterogeneity level, from each seed: rows the level,
    columns (method, seed)."""
    point = _point(point)
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    methods = {"PAdaMFed": algorithms.padamfed(**sizes),
               **{method: _baseline(method, point, **chosen[method]) for method in BASELINE_GRIDS}}
    rows = {float(level): ratios_of(quadratic_task(heterogeneity=check_positive("levels", level)), methods, seeds,
                                    point, store) for level in levels}
    return _table(rows, "heterogeneity")


def _table(rows: Mapping[float, Mapping[tuple[str, int], float]], name: str) -> pd.DataFrame:
    """``{row: {(method, seed): ratio}}`` as a table: rows ``name``, columns (method, seed)."""
    table = pd.DataFrame(rows).T.rename_axis(name)
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    return table


def constants(levels: Sequence[float] = HETEROGENEITY) -> pd.DataFrame:
    """What the heterogeneity moves besides the spread of the optima: per level, the distance from the start to the
    optimum ``|x_0 - x*|``, ``||grad f(x_0)||`` and the clients' mean ``||grad f_i(x*)||`` (the heterogeneity at
    the optimum, 0 for identical clients)."""
    rows = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("levels", level))
        data, x0 = task.problem.data, task.problem.x0()
        x_star = data.info["x_star"]
        at_optimum = []
        for i in range(data.num_clients):
            inputs, targets = data.client(i)[:2]
            at_optimum.append(float((inputs.T @ (inputs @ x_star - targets)).norm()) / len(targets))
        rows[float(level)] = {"|x_0 - x*|": float((x0 - x_star).norm()),
                              "||grad f(x_0)||": float(task.gradient(x0).norm()),
                              "mean ||grad f_i(x*)||": float(np.mean(at_optimum))}
    return pd.DataFrame(rows).T.rename_axis("heterogeneity")


def mean_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table of ratios as rows by methods: the geometric mean over the seeds (inf if any
    diverged)."""
    logs = np.log10(table.astype(float))
    return (10 ** logs.T.groupby(level=0, sort=False).mean().T)
