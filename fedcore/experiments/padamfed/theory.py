"""Problem-parameter-free, put to the test on federated least-squares problems whose constants we set at will
(notebook ``02_padamfed``, section 1; Yan et al., ICLR 2025, Theorems 1-2, Remark 1, "no heterogeneity bound"):
scaling f (:func:`smoothness_table`: every constant times ``s``, the minimizer kept; PAdaMFed's normalized steps
and ``g_bar`` are invariant by construction, so this shows the mechanism and is no evidence), reparametrizing it,
``f(a theta)`` from the same point (:func:`reparametrization_table`: L grows as ``a^2``, the distance to the optimum
shrinks as ``1/a``; nothing in the recursion cancels ``a``), and spreading the clients' optima by ``h``
(:func:`heterogeneity_table`, the baselines tuned once at the lowest ``h`` on the seeds :data:`TUNING_SEEDS`).  Every
judged run: :data:`POINT` from the seeds :data:`SEEDS` (the notebook gives its scale's); its number is
:func:`gradient_ratio`.
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
from fedcore.experiments.common import by_method_seed, half_decades, mean_over_seeds
from fedcore.experiments.padamfed.experiment import builders_for
from fedcore.objectives import QuadraticTask, quadratic_task, reparametrized_quadratic_task, scaled_quadratic_task
from fedcore.results import History
from fedcore.run import simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep

POINT = {"rounds": 200, "clients_per_round": 10, "local_steps": 5, "batch_size": 4}
"""S, K, T and B of every quadratic run (10 of the quadratic's 50 clients per round)."""
SEED, SEEDS, TUNING_SEEDS = 0, (0, 1, 2, 3, 4), (100, 101)
"""The seed of the scaled-f runs (invariant by construction), the seeds of the others (sampling, minibatches) and
those the baselines are tuned on (apart from the judging ones)."""
TASK_NAME = "the scaled quadratics"
REPARAMETRIZED_NAME = "the reparametrized quadratics"
HETEROGENEITY_NAME = "the quadratics of growing heterogeneity"
"""What a claim's scope calls these runs."""
TARGET = 0.5
"""The quadratics' pass rule: a :func:`gradient_ratio` of at most 0.5, judged on the mean log ratio over seeds (its
95% paired t interval above ``log10(1 / TARGET)``)."""
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
    """No warning when a run diverges: the quadratics expect some to, and show them as inf."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* diverged at round", category=RuntimeWarning)
        yield


def _point(point: Mapping[str, int] | None) -> dict[str, int]:
    point = dict(POINT if point is None else point)
    check_int("rounds", point["rounds"])
    return point


def gradient_ratio(task: QuadraticTask, history: History, rounds: int) -> float:
    """A run's number: its mean ``||grad f||`` over its last tenth of ``rounds`` over ``||grad f(x_0)||`` (below 1
    the run made progress; inf: it diverged)."""
    if history.diverged:
        return math.inf
    norms = np.sqrt(history.frame["squared_gradient_norm"].loc[1:].to_numpy())
    return float(np.mean(norms[-max(1, rounds // 10):])) / float(task.gradient(task.problem.x0()).norm())


def gradient_ratios(task: QuadraticTask, build: Callable[..., Any], grid: Mapping[str, Sequence[Any]],
                    seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                    store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of ``build(**values)`` at every point of ``grid`` from every seed (:func:`fedcore.sweep`,
    the gradient norms recorded with the runs): rows the points, columns the seeds."""
    point, seeds = _point(point), check_seeds("seeds", seeds)
    with divergence_quiet():
        runs = sweep(task.problem, build, dict(grid), seeds=seeds, eval_every=point["rounds"], weighting="uniform",
                     record=task.record, store=store, progress=False, summary=lambda history: {
                         "ratio": gradient_ratio(task, history, point["rounds"])}, **point)
    runs["seed"] = runs["seed"] if "seed" in runs else seeds[0]
    return runs.pivot_table(index=list(grid), columns="seed", values="ratio", dropna=False)[list(seeds)]


def ratios_of(task: QuadraticTask, methods: Mapping[str, Any], seeds: Sequence[int] = SEEDS,
              point: Mapping[str, int] | None = None, store: Store | None = None) -> dict[tuple[str, int], float]:
    """``{(name, seed): ratio}``: :func:`gradient_ratio` of each algorithm of ``methods`` (``{name: algorithm}``)
    from each seed, in passes of :func:`fedcore.simulate_runs`."""
    point, seeds = _point(point), check_seeds("seeds", seeds)
    runs = [(name, seed) for name in methods for seed in seeds]
    with divergence_quiet():
        histories = simulate_runs(task.problem, [methods[name] for name, _ in runs], seeds=[seed for _, seed in runs],
                                  eval_every=point["rounds"], weighting="uniform", record=task.record, store=store,
                                  progress=False, **point)
    return {run: gradient_ratio(task, history, point["rounds"]) for run, history in zip(runs, histories)}


def smoothness_methods(fedavg_lr: float, point: Mapping[str, int] | None = None) -> dict[str, Any]:
    """PAdaMFed and PAdaMFed-VR at their theorems' step sizes for ``point``'s S, K, T; FedAvg and SCAFFOLD at
    one fixed client rate ``fedavg_lr``."""
    point, fedavg_lr = _point(point), check_positive("fedavg_lr", fedavg_lr)
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    return {"PAdaMFed": algorithms.padamfed(**sizes), "PAdaMFed-VR": algorithms.padamfed_vr(**sizes),
            "FedAvg": algorithms.fedavg(fedavg_lr), "SCAFFOLD": algorithms.scaffold(fedavg_lr)}


def smoothness_table(factors: Sequence[float], fedavg_lr: float, point: Mapping[str, int] | None = None,
                     store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` (seed :data:`SEED`) of every method of :func:`smoothness_methods` on the quadratic
    scaled by each of ``factors``: rows the resulting smoothness L, columns the methods."""
    methods, tasks = smoothness_methods(fedavg_lr, point), [scaled_quadratic_task(factor) for factor in factors]
    rows = {task.smoothness: {name: r for (name, _), r in ratios_of(task, methods, [SEED], point, store).items()}
            for task in tasks}
    return pd.DataFrame(rows).T.rename_axis("smoothness L")


def reparametrization_table(scales: Sequence[float] = SCALES_A, fedavg_lr: float = 0.1,
                            seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                            store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of the methods of :func:`smoothness_methods` on ``f(a theta)`` for each ``a`` of
    ``scales``, from each seed: rows ``a``, columns (method, seed)."""
    methods = smoothness_methods(fedavg_lr, point)
    rows = {float(a): ratios_of(reparametrized_quadratic_task(a), methods, seeds, point, store) for a in scales}
    return by_method_seed(pd.DataFrame(rows).T, "a")


def tune_baselines(level: float, seeds: Sequence[int] = TUNING_SEEDS, point: Mapping[str, int] | None = None,
                   store: Store | None = None) -> dict[str, dict[str, float]]:
    """Each baseline of :data:`BASELINE_GRIDS` tuned on the quadratic of heterogeneity ``level``: the grid point
    with the lowest mean log gradient ratio over ``seeds``, the tuning seeds (a point that diverged on any seed never
    wins)."""
    point, task, chosen = _point(point), quadratic_task(heterogeneity=check_positive("level", level)), {}
    builders = builders_for(point["local_steps"])
    for method, grid in BASELINE_GRIDS.items():
        best = np.log10(gradient_ratios(task, builders[method], grid, seeds, point, store).astype(float)).mean(
            axis=1).idxmin()
        chosen[method] = dict(zip(grid, best if isinstance(best, tuple) else (best,)))
    return chosen


def heterogeneity_table(chosen: Mapping[str, Mapping[str, float]], levels: Sequence[float] = HETEROGENEITY,
                        seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                        store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of PAdaMFed (Theorem 1's step sizes) and of the baselines at their ``chosen``
    values (:func:`tune_baselines`) on the quadratic of each heterogeneity level, from each seed: rows the level,
    columns (method, seed)."""
    point = _point(point)
    builders = builders_for(point["local_steps"])
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    methods = {"PAdaMFed": algorithms.padamfed(**sizes),
               **{method: builders[method](**chosen[method]) for method in BASELINE_GRIDS}}
    rows = {float(level): ratios_of(quadratic_task(heterogeneity=check_positive("levels", level)), methods, seeds,
                                    point, store) for level in levels}
    return by_method_seed(pd.DataFrame(rows).T, "heterogeneity")


def constants(levels: Sequence[float] = HETEROGENEITY) -> pd.DataFrame:
    """What the heterogeneity moves besides the spread of the optima: per level, ``|x_0 - x*|``,
    ``||grad f(x_0)||`` and the clients' mean ``||grad f_i(x*)||`` (0 for identical clients)."""
    rows = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("levels", level))
        data, x0, x_star = task.problem.data, task.problem.x0(), task.problem.data.info["x_star"]
        at_optimum = [float((inputs.T @ (inputs @ x_star - targets)).norm()) / len(targets)
                      for inputs, targets in (data.client(i)[:2] for i in range(data.num_clients))]
        rows[float(level)] = {"|x_0 - x*|": float((x0 - x_star).norm()),
                              "||grad f(x_0)||": float(task.gradient(x0).norm()),
                              "mean ||grad f_i(x*)||": float(np.mean(at_optimum))}
    return pd.DataFrame(rows).T.rename_axis("heterogeneity")


def mean_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table of ratios as rows by methods: the geometric mean over the seeds (inf if any
    diverged)."""
    return 10 ** mean_over_seeds(np.log10(table.astype(float)))
