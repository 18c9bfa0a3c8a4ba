"""Runs over seeds and their views: :class:`Results` (task, method, seed -> History), the score tables, mean and
sd cells, the values near the best."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from fedcore.checks import check_range
from fedcore.comparisons import compare
from fedcore.results import History
from papers.common.tasks import Task


@dataclass(frozen=True)
class Results(Mapping):
    """Runs over seeds, ``results[task][method]`` the ``History`` of each seed (in the order of ``seeds``), with the
    :class:`Task` of each, and the views a notebook shows (scikit-learn's ``cv_results_`` as the model): the
    scores per seed (:meth:`scores`), their mean and sd (:meth:`mean_sd`, :meth:`means`), paired differences
    from a reference (:meth:`paired`), the round settings (:meth:`settings`), the runs that diverged, the seconds a
    run took, a metric at a round.  ``a | b`` joins the tasks of two results over the same seeds."""

    runs: Mapping[str, Mapping[str, Sequence[History]]]
    seeds: tuple[int, ...]
    tasks: Mapping[str, Task]

    def __getitem__(self, task: str) -> Mapping[str, Sequence[History]]: return self.runs[task]
    def __iter__(self) -> Iterator[str]: return iter(self.runs)
    def __len__(self) -> int: return len(self.runs)

    def __or__(self, other: Results) -> Results:
        if not isinstance(other, Results) or other.seeds != self.seeds:
            raise ValueError(f"only results over the same seeds join: {self.seeds} and "
                             f"{getattr(other, 'seeds', type(other).__name__)}")
        return Results({**self.runs, **other.runs}, self.seeds, {**self.tasks, **other.tasks})

    def methods(self, *methods: str) -> Results:
        """The runs of ``methods`` only (in that order), on the tasks that ran them."""
        runs = {task: {method: by_method[method] for method in methods if method in by_method}
                for task, by_method in self.runs.items()}
        return Results(runs, self.seeds, self.tasks)

    def scores(self, metric: str | None = None) -> pd.DataFrame:
        """One row per (task, method), one column per seed: each run's :meth:`Task.score` (of the task's metric in
        its unit, or of ``metric``)."""
        return score_table(self.runs, {task: partial(self.tasks[task].score, metric=metric) for task in self.runs},
                           self.seeds)

    def means(self, metric: str | None = None) -> pd.DataFrame:
        """Tasks by methods: the mean over the seeds of :meth:`scores` (NaN where a seed diverged)."""
        table = self.scores(metric)
        return table.mean(axis=1, skipna=False).unstack("method").reindex(
            index=list(self.runs), columns=list(dict.fromkeys(table.index.get_level_values("method"))))

    def mean_sd(self, metric: str | None = None, scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
        """Methods by tasks, each cell ``"mean ± sd"`` of :meth:`scores` (times ``scale``) over the seeds."""
        return mean_sd(self.scores(metric), scale, digits)

    def paired(self, reference: str, metric: str | None = None, scale: float = 1.0, digits: int = 2,
               words: Mapping[str, str] | None = None) -> pd.DataFrame:
        """Tasks by methods: each method minus ``reference`` on the same seeds
        (:func:`~fedcore.comparisons.compare`, oriented so that positive is better),
        ``"+1.23 ± 0.45 (outcome)"``, the outcome in ``words`` (:data:`~fedcore.comparisons.OUTCOMES` by
        default)."""
        table, rows = self.scores(metric), {}
        for task in self.runs:
            by_method = table.loc[task]
            if reference not in by_method.index:
                raise ValueError(f"reference={reference!r} has no runs on {task!r}: methods {list(by_method.index)}")
            higher = self.tasks[task].higher_is_better if metric in (None, self.tasks[task].metric) \
                else not str(metric).endswith("loss")
            for method in by_method.index.drop(reference):
                outcome, text = compare(by_method.loc[method], by_method.loc[reference], higher, scale=scale,
                                        digits=digits)
                rows.setdefault(task, {})[method] = f"{text} ({(words or {}).get(outcome, outcome)})"
        return pd.DataFrame(rows).T

    def settings(self) -> pd.DataFrame:
        """Tasks by round settings (:data:`~papers.common.tasks.ROUND_SETTINGS`), with the model each trains."""
        return pd.DataFrame({name: {**task.settings, "model": task.model_label or "the paper's"}
                             for name, task in self.tasks.items() if name in self.runs}).T

    def diverged(self) -> pd.DataFrame:
        """One row per run that diverged: task, method, seed and the round."""
        return pd.DataFrame([{"task": task, "method": method, "seed": seed, "diverged at round": h.diverged_round}
                             for task, by_method in self.runs.items() for method, histories in by_method.items()
                             for seed, h in zip(self.seeds, histories) if h.diverged],
                            columns=["task", "method", "seed", "diverged at round"])

    def seconds(self) -> pd.DataFrame:
        """Methods by tasks: the mean wall time of a run in seconds (a run read from the store shows the time it
        took when it was computed; runs computed in one pass share its time)."""
        return self._mean(lambda h: float(h.frame["seconds"].sum()))

    def at_round(self, metric: str, round: int = 1) -> pd.DataFrame:
        """Methods by tasks: ``metric`` at ``round``, the mean over the seeds."""
        return self._mean(lambda h: float(h.frame.loc[round, metric]))

    def _mean(self, value: Callable[[History], float]) -> pd.DataFrame:
        return pd.DataFrame({task: {method: sum(map(value, runs)) / len(runs) for method, runs in by_method.items()}
                             for task, by_method in self.runs.items()})


def score_table(results: Mapping[str, Mapping[str, Sequence[History]]],
                score: Callable[[History], float] | Mapping[str, Callable[[History], float]],
                seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (task, method) and one column per seed: ``score`` (one for every task, or ``{task: score}``)
    of each run of ``results`` (``{task: {method: [History of each seed]}}``)."""
    rows = {}
    for task, by_method in results.items():
        scorer = score[task] if isinstance(score, Mapping) else score
        for method, histories in by_method.items():
            if len(histories) != len(seeds):
                raise ValueError(f"{task}/{method} has {len(histories)} runs for {len(seeds)} seeds")
            rows[(task, method)] = [scorer(history) for history in histories]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(seeds))
    table.index = pd.MultiIndex.from_tuples(table.index, names=["task", "method"])
    table.columns.name = "seed"
    return table


def mean_sd(table: pd.DataFrame, scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
    """Methods by tasks, each cell ``"mean ± sd"`` over the seeds of :func:`score_table`'s ``table`` (times
    ``scale``: 100 for percent); a (task, method) with a diverged seed shows how many diverged."""
    cells = table.apply(lambda values: mean_sd_cell(values, scale, digits), axis=1).unstack("task")
    return cells.reindex(index=list(dict.fromkeys(table.index.get_level_values("method"))),
                         columns=list(dict.fromkeys(table.index.get_level_values("task"))))


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


def mean_over_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table as rows by methods: the mean over the seeds (NaN where a seed diverged)."""
    return table.T.groupby(level=0, sort=False).mean().T if table.columns.nlevels > 1 else table


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
