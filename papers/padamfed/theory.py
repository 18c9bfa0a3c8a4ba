"""Problem-parameter-free, put to the test on federated least-squares problems whose constants we set at will
(notebook ``02_padamfed``, section 1; Yan et al., ICLR 2025, Theorems 1-2, Remark 1, "no heterogeneity bound"):

- scaling f (:func:`smoothness_table`: every constant times ``s``, the minimizer kept; PAdaMFed's normalized steps
  and ``g_bar`` are invariant by construction, so this shows the mechanism and is no evidence);
- reparametrizing it, ``f(a theta)`` from the same point (L grows as ``a^2``, the distance to the optimum shrinks
  as ``1/a``; nothing in the recursion cancels ``a``), judged as a rate in T at each ``a`` (:func:`rate_table` with
  ``vary="rounds"``);
- tilting the clients apart (:func:`heterogeneity_table` on :func:`~fedcore.objectives.tilted_quadratic_task`:
  f, Delta, L and the gradient noise fixed, :func:`constants` measures them, only the clients' dissimilarity zeta
  grows), PAdaMFed beside its ablation without control variates (:mod:`~papers.padamfed.design`) and
  the baselines tuned once at the lowest level on the seeds :data:`TUNING_SEEDS`;
- the rates themselves (:func:`rate_table`, :func:`slopes`): the mean gradient norm over the T rounds, Theorem 1's
  and 2's left-hand side, against T and against S K, its fitted log-log slope beside the theorems' exponents.

Every judged run: :data:`POINT` (or S, K, T as varied) from the seeds :data:`SEEDS` (the notebook gives its
scale's); its number is :func:`gradient_ratio` or :func:`average_gradient_norm`.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from fedcore import algorithms
from fedcore.checks import check_choice, check_int, check_positive, check_range, check_seeds
from fedcore.objectives import (
    QuadraticTask,
    reparametrized_quadratic_task,
    scaled_quadratic_task,
    tilted_quadratic_task,
)
from fedcore.results import DivergedWarning, History
from fedcore.run import simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep
from papers.common import by_method_seed, half_decades, mean_over_seeds
from papers.padamfed.design import without_control_variates
from papers.padamfed.experiment import builders_for

POINT = {"rounds": 200, "clients_per_round": 10, "local_steps": 5, "batch_size": 4}
"""S, K, T and B of every quadratic run (10 of the quadratic's 50 clients per round)."""
SEED, SEEDS, TUNING_SEEDS = 0, (0, 1, 2, 3, 4), (100, 101)
"""The seed of the scaled-f runs (invariant by construction), the seeds of the others (sampling, minibatches) and
those the baselines are tuned on (apart from the judging ones)."""
TASK_NAME = "the scaled quadratics"
REPARAMETRIZED_NAME = "the reparametrized quadratics"
HETEROGENEITY_NAME = "the tilted quadratics"
RATES_NAME = "the quadratic's rates"
"""What a claim's scope calls these runs."""
TARGET = 0.5
"""The quadratics' pass rule: a :func:`gradient_ratio` of at most 0.5, judged on the mean log ratio over seeds (its
95% paired t interval above ``log10(1 / TARGET)``)."""
HETEROGENEITY = (0.0, 0.3, 1.0, 3.0, 10.0)
"""The heterogeneity levels: the clients' tilts (:func:`~fedcore.objectives.tilted_quadratic_task`) in units of
``||grad f(x_0)||``, from none (the clients' optima differ by the targets' noise only) to ten times it."""
ABLATION = "PAdaMFed without control variates"
"""The ablation's name in the heterogeneity table
(:func:`~papers.padamfed.design.without_control_variates`)."""
RATE_ROUNDS = (50, 100, 200, 400)
"""The horizons T of the rate in T (S K = 50: T >= S K keeps Theorem 1's beta <= 1)."""
RATE_SCALES = (0.1, 1.0, 10.0)
"""The ``a`` of the reparametrized ``f(a theta)`` whose rate in T is measured: L over four decades, the distance to
the optimum over two."""
RATE_CLIENTS = (1, 2, 3, 5)
"""The clients per round S of the rate in S K (K = 5, T = :data:`RATE_HORIZON`: S K from 5 to 25, at most T / 8,
where the bound's first term, the one that falls with S K, leads)."""
RATE_HORIZON = 200
EXPONENTS = {"PAdaMFed": -1 / 4, "PAdaMFed-VR": -1 / 3}
"""The theorems' exponents: the mean gradient norm falls as (S K T)^(-1/4) (Theorem 1) and (S K T)^(-1/3)
(Theorem 2), in T and in S K alike (their first, leading terms)."""
BASELINE_GRIDS = {"FedAvg": {"client_lr": half_decades(-3.0, 0.0)}, "SCAFFOLD": {"client_lr": half_decades(-3.0, 0.0)},
                  "SCAFFOLD-M": {"eta": half_decades(-3.0, 0.0), "beta": [0.01, 0.1, 1.0]}}
"""The baselines' grids on the heterogeneity quadratics (tuned once, at the lowest level; SCAFFOLD-M's server
step ``gamma = eta K``, SCAFFOLD's)."""


@contextlib.contextmanager
def divergence_quiet() -> Iterator[None]:
    """No warning when a run diverges: the quadratics expect some to, and show them as inf."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DivergedWarning)
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
    point = _point(point)
    return {run: gradient_ratio(task, history, point["rounds"])
            for run, history in _histories(task, methods, seeds, point, store).items()}


def _histories(task: QuadraticTask, methods: Mapping[str, Any], seeds: Sequence[int], point: Mapping[str, int],
               store: Store | None) -> dict[tuple[str, int], History]:
    """``{(name, seed): History}`` of each algorithm of ``methods`` from each seed at ``point``, recording the
    gradient norm every round, in passes of :func:`fedcore.simulate_runs`."""
    seeds = check_seeds("seeds", seeds)
    runs = [(name, seed) for name in methods for seed in seeds]
    with divergence_quiet():
        histories = simulate_runs(task.problem, [methods[name] for name, _ in runs], seeds=[seed for _, seed in runs],
                                  eval_every=point["rounds"], weighting="uniform", record=task.record, store=store,
                                  progress=False, **point)
    return dict(zip(runs, histories))


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


def _level(name: str, level: float) -> float:
    return check_range(name, level, 0)


def tune_baselines(level: float, seeds: Sequence[int] = TUNING_SEEDS, point: Mapping[str, int] | None = None,
                   store: Store | None = None) -> dict[str, dict[str, float]]:
    """Each baseline of :data:`BASELINE_GRIDS` tuned on the tilted quadratic of heterogeneity ``level``: the grid
    point with the lowest mean log gradient ratio over ``seeds``, the tuning seeds (a point that diverged on any seed
    never wins)."""
    point, task, chosen = _point(point), tilted_quadratic_task(_level("level", level)), {}
    builders = builders_for(point["local_steps"])
    for method, grid in BASELINE_GRIDS.items():
        best = np.log10(gradient_ratios(task, builders[method], grid, seeds, point, store).astype(float)).mean(
            axis=1).idxmin()
        chosen[method] = dict(zip(grid, best if isinstance(best, tuple) else (best,)))
    return chosen


def heterogeneity_table(chosen: Mapping[str, Mapping[str, float]], levels: Sequence[float] = HETEROGENEITY,
                        seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
                        store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of PAdaMFed (Theorem 1's step sizes), of its ablation without control variates
    (:data:`ABLATION`, the same step sizes) and of the baselines at their ``chosen`` values (:func:`tune_baselines`)
    on the tilted quadratic of each level, from each seed: rows the level, columns (method, seed)."""
    point = _point(point)
    builders = builders_for(point["local_steps"])
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    methods = {"PAdaMFed": algorithms.padamfed(**sizes), ABLATION: without_control_variates(**sizes),
               **{method: builders[method](**chosen[method]) for method in BASELINE_GRIDS}}
    rows = {float(level): ratios_of(tilted_quadratic_task(_level("levels", level)), methods, seeds, point, store)
            for level in levels}
    return by_method_seed(pd.DataFrame(rows).T, "heterogeneity")


def sample_gradients(task: QuadraticTask, x: torch.Tensor) -> torch.Tensor:
    """Every sample's gradient at ``x`` ``[n, d]``: ``a_j (<a_j, x> - y_j)``, plus its client's tilt on a tilted
    federation (the loss's own gradient, computed in closed form)."""
    data, design = task.problem.data, task.design
    gradients = design * (design @ x - data.targets).unsqueeze(1)
    if "tilts" in data.info:
        gradients = gradients + data.info["tilts"][torch.repeat_interleave(torch.arange(data.num_clients), data.sizes)]
    return gradients


def _per_client(values: torch.Tensor, sizes: torch.Tensor) -> list[torch.Tensor]:
    return list(torch.split(values, sizes.tolist()))


def constants(levels: Sequence[float] = HETEROGENEITY) -> pd.DataFrame:
    """The constants of Theorem 1 on the tilted quadratic of each level, measured: the initial gap Delta, the
    smoothness L, ``||grad f(x_0)||``, the gradient noise sigma (the root mean square of a sample's gradient minus
    its client's, at ``x_0`` and at ``x*``) and the dissimilarity zeta (the root mean square of the clients'
    ``||grad f_i(x*)||``)."""
    rows = {}
    for level in levels:
        task = tilted_quadratic_task(_level("levels", level))
        data, x0, x_star = task.problem.data, task.problem.x0(), task.problem.data.info["x_star"]
        noise, client_means = {}, {}
        for where, x in (("x_0", x0), ("x*", x_star)):
            clients = _per_client(sample_gradients(task, x), data.sizes)
            client_means[where] = torch.stack([g.mean(0) for g in clients])
            noise[where] = math.sqrt(float(torch.cat([g - g.mean(0) for g in clients]).square().sum(1).mean()))
        rows[float(level)] = {"Delta = f(x_0) - f*": task.value(x0) - task.value(x_star), "L": task.smoothness,
                              "||grad f(x_0)||": float(task.gradient(x0).norm()),
                              "sigma at x_0": noise["x_0"], "sigma at x*": noise["x*"],
                              "zeta at x*": math.sqrt(float(client_means["x*"].square().sum(1).mean()))}
    return pd.DataFrame(rows).T.rename_axis("heterogeneity")


# ------------------------------------------------------------------ the rates


def average_gradient_norm(history: History, rounds: int) -> float:
    """The theorems' left-hand side on one run: ``(1/T) sum_{t<T} ||grad f(theta^t)||`` (inf: it diverged)."""
    if history.diverged:
        return math.inf
    return float(np.sqrt(history.frame["squared_gradient_norm"].loc[:rounds - 1].to_numpy()).mean())


def rate_methods(sizes: Mapping[str, int]) -> dict[str, Any]:
    """PAdaMFed and PAdaMFed-VR at their theorems' step sizes for ``sizes`` (S, K, T)."""
    return {"PAdaMFed": algorithms.padamfed(**sizes), "PAdaMFed-VR": algorithms.padamfed_vr(**sizes)}


def rate_table(vary: str = "rounds", values: Sequence[int] | None = None, scales: Sequence[float] = (1.0,),
               seeds: Sequence[int] = SEEDS, point: Mapping[str, int] | None = None,
               store: Store | None = None, horizon: int = RATE_HORIZON) -> pd.DataFrame:
    """:func:`average_gradient_norm` of :func:`rate_methods` at their theorems' step sizes for each value of
    ``vary`` (``"rounds"``: T over :data:`RATE_ROUNDS`, S and K of ``point``; ``"clients_per_round"``: S over
    :data:`RATE_CLIENTS` at T = ``horizon``), on ``f(a theta)`` for each ``a`` of ``scales`` (1: the quadratic
    itself), from each seed: rows (a, T) or (a, T, S), columns (method, seed)."""
    check_choice("vary", vary, ("rounds", "clients_per_round"))
    base = _point(point) if vary == "rounds" else {**_point(point), "rounds": check_int("horizon", horizon)}
    values = list(values or (RATE_ROUNDS if vary == "rounds" else RATE_CLIENTS))
    rows = {}
    for a in scales:
        task = reparametrized_quadratic_task(check_positive("scales", a))
        for value in values:
            run_point = {**base, vary: check_int(vary, value)}
            sizes = {key: run_point[key] for key in ("clients_per_round", "local_steps", "rounds")}
            histories = _histories(task, rate_methods(sizes), seeds, run_point, store)
            row = (float(a), value) if vary == "rounds" else (float(a), run_point["rounds"], value)
            rows[row] = {run: average_gradient_norm(history, run_point["rounds"]) for run, history in histories.items()}
    table = pd.DataFrame(rows).T
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    return table.rename_axis(["a", vary] if vary == "rounds" else ["a", "rounds", vary])


def slopes(table: pd.DataFrame) -> pd.DataFrame:
    """Each seed's least-squares slope of ``log10`` (mean gradient norm) against ``log10`` of the varied value, per
    ``a`` (a row) of a :func:`rate_table`: columns (method, seed); nan where a run diverged."""
    rows = {}
    for a, block in table.groupby(level="a"):
        x = np.log10(block.index.get_level_values(-1).to_numpy(dtype=float))
        rows[a] = {column: (np.polyfit(x, np.log10(block[column].to_numpy(dtype=float)), 1)[0]
                            if np.isfinite(block[column].to_numpy(dtype=float)).all() else math.nan)
                   for column in block.columns}
    frame = pd.DataFrame(rows).T
    frame.columns = pd.MultiIndex.from_tuples(frame.columns, names=["method", "seed"])
    return frame.rename_axis("a")


def mean_ratios(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table of ratios as rows by methods: the geometric mean over the seeds (inf if any
    diverged)."""
    return 10 ** mean_over_seeds(np.log10(table.astype(float)))


def rate_summary(table: pd.DataFrame, point: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Per ``a`` of a :func:`rate_table` run at ``point`` (its S and K): each method's slope (mean and sd over the
    seeds) beside its theorem's exponent; for a rate in T, also the distance from the start to the optimum and each
    method's longest server path ``T gamma`` (at the longest T), which must cover it before the rate can show."""
    fitted, varied, rows, point = slopes(table), table.index.names[-1], {}, _point(point)
    longest = int(table.index.get_level_values(-1).max())
    for a in fitted.index:
        row = {}
        if varied == "rounds":
            task = reparametrized_quadratic_task(a)
            problem = task.problem
            row["distance to the optimum"] = float((problem.x0() - problem.data.info["x_star"]).norm())
        for method in fitted.columns.get_level_values(0).unique():
            values = fitted.loc[a, method].astype(float)
            row[f"{method} slope"] = f"{values.mean():+.2f} ± {values.std():.2f} (theorem {EXPONENTS[method]:+.2f})"
            if varied == "rounds":
                sizes = {**{key: point[key] for key in ("clients_per_round", "local_steps")}, "rounds": longest}
                row[f"{method} T gamma at T = {longest}"] = longest * rate_methods(sizes)[method].gamma
        rows[a] = row
    return pd.DataFrame(rows).T.rename_axis("a")
