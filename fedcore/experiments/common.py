"""The experiments' common layer, written once: a :class:`Task`, runs over seeds, the score, tuning over seeds
and the rules "within a tolerance of the best" and "range of good values".

- A :class:`Task` is a federated data set, a model drawn from a seed, the round settings, the metric and its
  trivial baseline (what a model that learned nothing scores).  The data's partition is the task's and stays
  fixed; a **seed** draws the initial model, the client sampling and the minibatches (:meth:`Task.initial`).
- :func:`run_seeds` runs methods over seeds (through :func:`fedcore.simulate_runs`, so runs that share a pass
  go together and the store keeps each); :func:`window_score` is the score of a run: the metric averaged over
  the last :data:`SCORE_EVALUATIONS` evaluations (and a per-round quantity, the training loss, over the same
  rounds); :func:`score_table` and :func:`mean_sd` lay the scores out over seeds.
- :func:`tune` is the grid search of every paper: each point of each method's grid over the seeds, through the
  batched :func:`fedcore.sweep`, scored by the mean over seeds (a point that diverged on any seed never wins);
  :func:`grids_at` shrinks a grid for ``smoke`` the one way.
- :func:`near_best` marks the values within a tolerance of the best; :func:`good_range` says how many decades
  of a hyperparameter score near the best; :func:`half_decades` spans a log10 grid of learning rates.
- :func:`last_rounds_average` is the mean of a metric over the last rounds (a fraction of the run or a number of
  rounds), Reddi et al.'s Table 1 metric.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from torch import Tensor, nn

from fedcore.checks import (
    check_choice,
    check_int,
    check_number,
    check_positive,
    check_range,
    check_scale,
    check_seed,
    check_seeds,
)
from fedcore.data.federated import FederatedData
from fedcore.experiments.claims import Scope
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep

SCORE_EVALUATIONS = 4
"""A run's score averages its metric over this many last evaluations (of the full test set)."""
ROUND_SETTINGS = ("rounds", "clients_per_round", "local_steps", "batch_size", "eval_every", "weighting")

Builder = Callable[..., Any]


@dataclass(frozen=True)
class Scale:
    """What a notebook runs at one scale (``smoke``, ``small``, ``medium``, ``paper``): the fields every paper fills
    in, checked when the paper's ``SCALES`` is built; a paper adds its own fields in a subclass.  A misspelt field
    is a ``TypeError`` naming it (a dataclass takes no other keyword).

    ``seeds``: the seeds every run is repeated over (each draws the initial model, the client sampling and the
    minibatches); ``rounds``: per run, one number or ``{task: rounds}`` (None: the paper's, per task);
    ``eval_every``: the evaluation period, one number or per task; ``tasks``: the tasks that run (empty: the paper's
    module says); ``tune_rounds``: the rounds of a tuning run (None: no tuning run of its own);
    ``max_local_steps``: a cap on K (None: none); ``test_samples``: the test samples kept (None: all)."""

    name: str
    seeds: tuple[int, ...]
    rounds: int | Mapping[str, int] | None
    eval_every: int | Mapping[str, int]
    tasks: tuple[str, ...] = ()
    tune_rounds: int | None = None
    max_local_steps: int | None = None
    test_samples: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "seeds", tuple(check_seeds("seeds", self.seeds)))
        for name in ("rounds", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, {task: check_int(f"{name}[{task!r}]", count)
                                                for task, count in value.items()})
            elif value is not None or name == "eval_every":
                check_int(name, value)
        if isinstance(self.tasks, str) or not all(isinstance(task, str) for task in self.tasks):
            raise TypeError(f"tasks={self.tasks!r} must be a sequence of task names")
        object.__setattr__(self, "tasks", tuple(self.tasks))
        for name in ("tune_rounds", "max_local_steps", "test_samples"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name))

    def seeds_or(self, seeds: Sequence[int] | None = None) -> list[int]:
        """``seeds`` (checked) when given (a notebook's ``SEEDS``), else this scale's."""
        return list(self.seeds) if seeds is None else check_seeds("seeds", seeds)


def scale_at(scales: Mapping[str, Scale], scale: str | Scale) -> Scale:
    """A paper's :class:`Scale` named ``scale`` (a notebook's ``SCALE``, checked against ``scales``), or ``scale``
    itself when it is one."""
    return scale if isinstance(scale, Scale) else check_scale(scale, scales)


@dataclass(frozen=True)
class Task:
    """What a paper's experiment runs on: ``data`` (its partition fixed), ``model(seed)`` (an ``nn.Module`` with
    its initial weights drawn from ``seed``), the round ``settings`` (:data:`ROUND_SETTINGS`), the ``metric``
    (a column of ``History.frame``) and whether higher is better, and the metric's trivial ``baseline``.
    ``model_label`` names the model beside the paper's."""

    name: str
    data: FederatedData
    model: Callable[[int], nn.Module]
    settings: Mapping[str, Any]
    baseline: float
    metric: str = "test_accuracy"
    higher_is_better: bool = True
    model_label: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [key for key in ROUND_SETTINGS if key not in self.settings]
        unknown = [key for key in self.settings if key not in ROUND_SETTINGS]
        if missing or unknown:
            raise ValueError(f"settings of task {self.name!r} must have exactly {list(ROUND_SETTINGS)}: "
                             f"missing {missing}, unknown {unknown}")

    def problem(self, seed: int = 0) -> Problem:
        """The data with the model drawn from ``seed``."""
        return Problem(self.data, self.model(check_seed("seed", seed)))

    def initial(self, seeds: Sequence[int]) -> dict[int, Tensor]:
        """``{seed: initial parameters}``: the model drawn from each seed."""
        return {seed: self.problem(seed).x0() for seed in seeds}


def scope(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int],
          model: str | Mapping[str, str] = "") -> Scope:
    """What a verdict on runs of ``tasks`` (``{name: Task}``) at ``scale`` from ``seeds`` rests on: the tasks, each
    one's rounds (one number where they agree), the seeds and ``model`` where it is not the paper's (one label,
    or one per task)."""
    if not isinstance(tasks, Mapping) or not tasks or not all(isinstance(t, Task) for t in tasks.values()):
        raise ValueError(f"tasks={tasks!r} must be a non-empty {{name: Task}}")
    rounds = {name: int(task.settings["rounds"]) for name, task in tasks.items()}
    return Scope(tuple(tasks), scale, rounds, tuple(check_seeds("seeds", seeds)), model)


def run_seeds(task: Task, algorithms: Mapping[str, Any], seeds: Sequence[int], *, store: Store | None = None,
              progress: bool = False, **overrides: Any) -> dict[str, list[History]]:
    """``{method: [History of each seed]}``: every algorithm of ``algorithms`` (``{method: algorithm}``) on ``task``
    from each seed's initial model, client sampling and minibatches, through :func:`fedcore.simulate_runs`
    (``overrides`` replace round settings, e.g. ``rounds``)."""
    seeds = check_seeds("seeds", seeds)
    settings = {**task.settings, **overrides}
    starts = task.initial(seeds)
    runs = [(method, seed) for method in algorithms for seed in seeds]
    histories = simulate_runs(task.problem(seeds[0]), [algorithms[method] for method, _ in runs],
                              seeds=[seed for _, seed in runs], x0=[starts[seed] for _, seed in runs],
                              store=store, progress=progress, **settings)
    results: dict[str, list[History]] = {method: [] for method in algorithms}
    for (method, _), history in zip(runs, histories):
        results[method].append(history)
    return results


def window_score(history: History, metric: str, evaluations: int = SCORE_EVALUATIONS,
                 evaluated: str = "test_accuracy") -> float:
    """The score of a run: ``metric`` averaged over the rounds of its last ``evaluations`` evaluations (the rounds
    where ``evaluated`` was measured, round 0 left out; all of them when there are fewer), so a test metric is the
    mean of the last ``evaluations`` evaluations and a per-round quantity (``train_loss``) the mean over the same
    rounds.  NaN for a run that diverged."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    frame = history.frame
    for name in (metric, evaluated):
        if name not in frame:
            raise ValueError(f"{name!r} is not a column of the history: {list(frame.columns)}")
    check_int("evaluations", evaluations)
    if history.diverged:
        return math.nan
    rounds = frame[evaluated].dropna().index
    rounds = rounds[rounds > 0]
    if rounds.empty:
        raise ValueError(f"the run has no evaluation of {evaluated!r} after round 0: give it an eval_every")
    after = rounds[-evaluations - 1] if len(rounds) > evaluations else 0
    values = frame.loc[frame.index > after, metric].dropna()
    return float(values.mean())


def half_decades(low: float, high: float) -> list[float]:
    """``10^(k/2)`` for every half-decade from ``10^low`` to ``10^high`` (log10 exponents, multiples of 0.5):
    ``half_decades(-1, 0.5)`` -> ``[0.1, 0.316, 1.0, 3.16]``."""
    low, high = check_number("low", low), check_number("high", high)
    if low > high or (2 * low) % 1 or (2 * high) % 1:
        raise ValueError(f"low={low:g}, high={high:g} must be multiples of 0.5 with low <= high")
    return [float(10 ** (k / 2)) for k in range(int(2 * low), int(2 * high) + 1)]


def last_rounds_average(history: History, metric: str = "test_accuracy", fraction_or_rounds: float = 0.1) -> float:
    """Mean of ``metric`` over the evaluations in the last rounds (Reddi et al., Table 1: the last 100;
    notebooks 01-03's score until their second passes move onto :func:`window_score`).

    ``fraction_or_rounds`` below 1 is a fraction of the run, an int >= 1 a number of rounds; the
    evaluations at rounds ``> last - window`` count.  NaN if the run diverged or none falls in the window."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    if metric not in history.frame:
        raise ValueError(f"metric={metric!r} not one of {list(history.frame.columns)}")
    value = check_positive("fraction_or_rounds", fraction_or_rounds)
    last = int(history.frame.index.max())
    span = value * last if value < 1 else check_int("fraction_or_rounds", fraction_or_rounds)
    column = history.frame[metric].dropna()
    tail = column[column.index > last - span]
    return math.nan if history.diverged or tail.empty else float(tail.mean())


def late_gain(history: History, metric: str = "test_accuracy", fraction: float = 1 / 3) -> float:
    """How much a run still gained at its end: ``metric`` at its last evaluation minus its value at the last
    evaluation at or before round ``(1 - fraction) T`` (a run that has plateaued gains about 0; NaN if it
    diverged).  For a loss, a negative gain is progress."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    if metric not in history.frame:
        raise ValueError(f"metric={metric!r} is not a column of the history: {list(history.frame.columns)}")
    check_range("fraction", fraction, 0, 1, low_closed=False)
    if history.diverged:
        return math.nan
    column = history.frame[metric].dropna()
    last = int(column.index.max())
    before = column[column.index <= last - fraction * last]
    if before.empty:
        raise ValueError(f"fraction={fraction!r}: no evaluation of {metric!r} at or before round "
                         f"{last - fraction * last:g} of {last}; give a larger run or a smaller fraction in (0, 1)")
    return float(column.iloc[-1] - before.iloc[-1])


def window_rounds(settings: Mapping[str, Any], evaluations: int = SCORE_EVALUATIONS) -> str:
    """The rounds :func:`window_score` averages over, for round settings ``settings``: e.g. ``"rounds 25-40"``."""
    rounds, every = int(settings["rounds"]), int(settings["eval_every"]) or int(settings["rounds"])
    evaluated = sorted({*range(every, rounds + 1, every), rounds})
    first = evaluated[-evaluations - 1] + 1 if len(evaluated) > evaluations else 1
    return f"rounds {first}-{rounds}, the last {min(evaluations, len(evaluated))} evaluations"


def score_table(results: Mapping[str, Mapping[str, Sequence[History]]], score: Callable[[History], float],
                seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (task, method) and one column per seed: ``score`` of each run of ``results``
    (``{task: {method: [History of each seed]}}``, as :func:`run_seeds` returns per task)."""
    rows = {}
    for task, by_method in results.items():
        for method, histories in by_method.items():
            if len(histories) != len(seeds):
                raise ValueError(f"{task}/{method} has {len(histories)} runs for {len(seeds)} seeds")
            rows[(task, method)] = [score(history) for history in histories]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(seeds))
    table.index = pd.MultiIndex.from_tuples(table.index, names=["task", "method"])
    table.columns.name = "seed"
    return table


def mean_sd(table: pd.DataFrame, scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
    """Methods by tasks, each cell ``"mean ± sd"`` over the seeds of :func:`score_table`'s ``table`` (times
    ``scale``: 100 for percent); a (task, method) with a diverged seed shows how many diverged."""
    cells = table.apply(lambda values: mean_sd_cell(values, scale, digits), axis=1)
    return cells.unstack("task")[list(dict.fromkeys(table.index.get_level_values("task")))]


def mean_sd_cell(values: Sequence[float] | pd.Series, scale: float = 1.0, digits: int = 2) -> str:
    """``"81.23 ± 0.45"``: the mean ± standard deviation (``ddof = 1``) of one score per seed, times ``scale``; only
    the mean for one seed; ``"1 of 3 diverged"`` where a seed diverged (NaN)."""
    values = pd.Series(values, dtype=float)
    finite = values.dropna() * scale
    if len(finite) < len(values):
        return f"{len(values) - len(finite)} of {len(values)} diverged"
    sd = f" ± {finite.std(ddof=1):.{digits}f}" if len(finite) > 1 else ""
    return f"{finite.mean():.{digits}f}{sd}"


def near_best(values: Sequence[float] | pd.Series, within: float, higher_is_better: bool = True) -> np.ndarray:
    """A mask of the ``values`` within ``within`` of the best of them (NaN, a diverged run, never is)."""
    check_range("within", within, 0)
    array = np.asarray(values, dtype=float)
    if not np.isfinite(array).any():
        return np.zeros(array.shape, dtype=bool)
    if higher_is_better:
        return np.nan_to_num(array, nan=-np.inf) >= np.nanmax(array) - within
    return np.nan_to_num(array, nan=np.inf) <= np.nanmin(array) + within


def near_best_by_column(table: pd.DataFrame, within: float, higher_is_better: bool = True) -> np.ndarray:
    """:func:`near_best` of each column of ``table`` (e.g. each method's scores over learning rates): a boolean
    array of ``table``'s shape."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table={type(table).__name__} must be a DataFrame (rows: values, columns: methods)")
    masks = [near_best(table[column].to_numpy(dtype=float), within, higher_is_better) for column in table]
    return np.stack(masks, axis=1) if masks else np.zeros(table.shape, bool)


def good_range(column: pd.Series, within: float, higher_is_better: bool = True) -> float:
    """How forgiving a hyperparameter is: the width in decades of the index values (learning rates, multipliers)
    whose score lies within ``within`` of the column's best (all the values between the smallest and the largest
    such one; 0 if only one; NaN if every run diverged)."""
    mask = near_best(column.to_numpy(dtype=float), within, higher_is_better)
    if not mask.any():
        return math.nan
    good = column.index[mask].to_numpy(dtype=float)
    return float(np.log10(good.max() / good.min()))


def mean_over_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table as rows by methods: the mean over the seeds (NaN where a seed diverged)."""
    return table.T.groupby(level=0, sort=False).mean().T if table.columns.nlevels > 1 else table


def scores_by_seed(task: Task, build: Builder, name: str, values: Sequence[Any], seeds: Sequence[int],
                   score: Callable[[History], float], *, store: Store | None = None,
                   progress: bool = False) -> dict[int, pd.Series]:
    """``{seed: score per value}``: ``build(**{name: value})`` on ``task`` at every value of ``values`` from every
    seed (each seed's initial model; :func:`fedcore.sweep`, in passes), each run scored by ``score``; NaN where a
    run diverged or was refused."""
    swept = sweep(task.problem(seeds[0]), build, {name: list(values)}, seeds=seeds, x0=task.initial(seeds),
                  summary=lambda history: {"score": score(history)}, store=store, progress=progress,
                  **task.settings)
    swept["seed"] = swept["seed"] if "seed" in swept else seeds[0]  # sweep drops the column for one seed
    swept["score"] = swept["score"] if "score" in swept else math.nan
    return {seed: swept[swept["seed"] == seed].set_index(name)["score"].reindex(list(values)) for seed in seeds}


def best_value(table: pd.DataFrame, method: str | None = None) -> float:
    """The value (a rate, a constant, a multiplier; a row of ``table``) with the best mean over the seeds: of
    ``method``'s columns of a ``(method, seed)`` table, or of a table with one column per seed."""
    columns = table if method is None else table[method]
    return float(columns.mean(axis=1, skipna=False).idxmax())


def by_method_seed(columns: Mapping[tuple[str, int], pd.Series], index: str) -> pd.DataFrame:
    """``{(method, seed): scores over the swept values}`` as one table: rows the values (named ``index``), columns
    ``(method, seed)``, as :func:`mean_over_seeds` and the robustness figures read it."""
    table = pd.DataFrame(dict(columns))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    return table.rename_axis(index)


def good_span(column: pd.Series, within: float, around: float = 1.0) -> tuple[float, float] | None:
    """The contiguous multipliers around ``around`` (the default a user gets) whose score lies within ``within``
    of the column's best: ``(lowest, highest)``, or None when ``around`` itself is not within (or every run
    diverged).  A NaN (diverged) multiplier ends the span."""
    check_range("within", within, 0)
    column = column.sort_index().astype(float)
    if around not in column.index:
        raise ValueError(f"around={around!r} is not one of the multipliers {list(column.index)}")
    if column.isna().all():
        return None
    good = (column >= column.max() - within).to_numpy()
    position = list(column.index).index(around)
    if not good[position]:
        return None
    low = high = position
    while low > 0 and good[low - 1]:
        low -= 1
    while high < len(good) - 1 and good[high + 1]:
        high += 1
    return float(column.index[low]), float(column.index[high])


def span_width(column: pd.Series, within: float, around: float = 1.0) -> float:
    """The width in decades of :func:`good_span` around ``around`` (a default, or a tuned value): 0 for the value
    alone, and 0 when ``around`` itself is not within ``within`` of the best (the setting must be tuned) or every
    run diverged."""
    span = good_span(column, within, around)
    return 0.0 if span is None else float(np.log10(span[1] / span[0]))


def span_points(column: pd.Series, within: float) -> int:
    """How many multipliers :func:`good_span` holds (0 when 1 is not within ``within`` of the best)."""
    span = good_span(column, within)
    return 0 if span is None else int(((column.index >= span[0]) & (column.index <= span[1])).sum())


def grids_at(scale: str, grids: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict[str, dict[str, list[Any]]]:
    """``grids`` at ``scale``: as they are, except at ``smoke`` (the tests' scale), where each axis keeps its
    first and last values only."""
    check_choice("scale", scale, ("smoke", "small", "medium", "paper"))
    if scale != "smoke":
        return {method: {key: list(values) for key, values in grid.items()} for method, grid in grids.items()}
    return {method: {key: list(dict.fromkeys([values[0], values[-1]])) for key, values in grid.items()}
            for method, grid in grids.items()}


def on_edge(chosen: Mapping[str, Mapping[str, Any]],
            grids: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict[str, list[str]]:
    """``{method: [hyperparameters]}``: the ``chosen`` values that sit on an end of their axis of ``grids`` (the best
    may lie beyond it: widen the grid or say so); an axis of one value has no edge."""
    edges = {}
    for method, point in chosen.items():
        grid = grids[method]
        names = [name for name, value in point.items() if len(grid[name]) > 1 and any(
            math.isclose(value, end) for end in (min(grid[name]), max(grid[name])))]
        if names:
            edges[method] = names
    return edges


@dataclass(frozen=True)
class Tuning:
    """What :func:`tune` found: per method the chosen point, and the table of every point's score per seed with
    their mean (``"score"``, NaN where a seed diverged)."""

    chosen: dict[str, dict[str, Any]]
    tables: dict[str, pd.DataFrame]


def tune(task: Task, builders: Mapping[str, Builder], grids: Mapping[str, Mapping[str, Sequence[Any]]],
         seeds: Sequence[int], score: Callable[[History], float], *, higher_is_better: bool = True,
         store: Store | None = None, progress: bool = False, **overrides: Any) -> Tuning:
    """Grid search over seeds: every point of ``grids[method]`` (keywords of ``builders[method]``) on ``task``
    from every seed (through :func:`fedcore.sweep`: batched passes, the store), each run scored by ``score``;
    the point with the best mean over the seeds is chosen.  ``overrides`` replace round settings (a shorter
    ``rounds`` for tuning)."""
    seeds = check_seeds("seeds", seeds)
    unknown = [method for method in grids if method not in builders]
    if unknown:
        raise ValueError(f"grids has {unknown}, which have no builder; builders has {list(builders)}")
    settings = {**task.settings, **overrides}
    starts = task.initial(seeds)
    chosen, tables = {}, {}
    for method, grid in grids.items():
        runs = sweep(task.problem(seeds[0]), builders[method], dict(grid), seeds=seeds, x0=starts,
                     summary=lambda history: {"score": score(history)}, store=store, progress=progress, **settings)
        if "score" not in runs:
            raise ValueError(f"no point of the grid of {method!r} gave a score: {runs['error'].dropna().iloc[0]}")
        runs["seed"] = runs["seed"] if "seed" in runs else seeds[0]  # sweep drops the column for one seed
        table = runs.pivot_table(index=list(grid), columns="seed", values="score", dropna=False)
        table["score"] = table[seeds].mean(axis=1, skipna=False)
        if table["score"].isna().all():
            raise ValueError(f"every point of the grid of {method!r} diverged on some seed or was refused")
        best = table["score"].idxmax() if higher_is_better else table["score"].idxmin()
        point = best if isinstance(best, tuple) else (best,)
        chosen[method] = {key: value for key, value in zip(grid, point)}
        tables[method] = table
    return Tuning(chosen, tables)
