"""One knob swept over a range: the sweep run outward from a default (:func:`outward_sweep`), the good span around
a value and its width in decades (:func:`span_decades`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedcore.checks import (
    check_number,
    check_range,
    check_seeds,
)
from fedcore.store import Store
from papers.common.results import by_method_seed
from papers.common.tasks import Builder, Selection, Task
from papers.common.tuning import grid_scores


def sweep_table(task: Task, builds: Mapping[str, Builder], name: str, values: Sequence[Any], seeds: Sequence[int],
                *, store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """Each method's ``build(**{name: value})`` (``builds``: ``{method: build}``) on ``task`` at every value of
    ``values`` from every seed (:func:`grid_scores`), scored by :meth:`Task.score`: rows the values (named ``name``),
    columns ``(method, seed)``; NaN where a run diverged or was refused."""
    seeds = check_seeds("seeds", seeds)
    starts = task.initial(seeds)
    return by_method_seed({(method, seed): column.reindex(list(values)) for method, build in builds.items() for seed,
                           column in grid_scores(task, build, {name: list(values)}, seeds, Selection(), starts=starts,
                                                 store=store, progress=progress).items()}, name)


def outward_sweep(score_at: Callable[[list[float]], pd.DataFrame], values: Sequence[float], within: float,
                  around: float = 1.0) -> pd.DataFrame:
    """A sweep run outward from ``around`` (the default a user gets), one value of ``values`` at a time on each side,
    and stopped on a side at the first value where every seed, and the mean over the seeds, lies more than
    ``within`` below its best so far (or diverged).  On a curve that falls away from its best on both sides, the
    values beyond can neither join the good range around ``around`` (:func:`good_span`, its own best or a higher
    reference) nor carry its ends (:func:`span_decades`): the widths equal the whole grid's, at a fraction of its
    runs.  ``score_at(values)`` runs those values: rows the values, one column per seed (NaN: diverged).  Returns a
    row for every value of ``values`` (sorted), NaN where not run."""
    check_range("within", within, 0)
    values = sorted(float(check_number("values", value)) for value in values)
    if around not in values:
        raise ValueError(f"around={around!r} is not one of values={values}: the sweep starts from it")
    last = dict.fromkeys((-1, 1), values.index(around))  # the last index run on each side
    table = score_at([around])
    open_sides = [side for side in last if 0 <= last[side] + side < len(values)]
    while open_sides:
        for side in open_sides:
            last[side] += side
        table = pd.concat([table, score_at([values[last[side]] for side in open_sides])])
        open_sides = [side for side in open_sides if not _fallen(table, values[last[side]], within)
                      and 0 <= last[side] + side < len(values)]
    return table.reindex(values)


def _fallen(table: pd.DataFrame, value: float, within: float) -> bool:
    """Whether every seed at ``value`` (a row of ``table``), and their mean, lies more than ``within`` below its
    best over the table's rows, or diverged."""
    row = table.loc[value]
    seeds_fallen = bool(((row < table.max() - within) | row.isna()).all())
    return seeds_fallen and not row.mean(skipna=False) >= table.mean(axis=1, skipna=False).max() - within


def good_span(column: pd.Series, within: float, around: float = 1.0,
              best: float | None = None) -> tuple[float, float] | None:
    """The contiguous multipliers around ``around`` (the default a user gets) whose score lies within ``within``
    of the column's best (or of ``best``, another reference: the best method's score): ``(lowest, highest)``, or
    None when ``around`` itself is not within (or every run diverged).  A NaN (diverged) multiplier ends the
    span."""
    check_range("within", within, 0)
    column = column.sort_index().astype(float)
    if around not in column.index:
        raise ValueError(f"around={around!r} is not one of the multipliers {list(column.index)}")
    if column.isna().all():
        return None
    good = (column >= (column.max() if best is None else best) - within).to_numpy()
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


def span_decades(column: pd.Series, within: float, around: float = 1.0, best: float | None = None) -> float:
    """The width in decades of :func:`good_span`, each end carried on towards the next multiplier out to where the
    score crosses the threshold (the column's best, or ``best``, minus ``within``), linearly in log10 of the
    multiplier: a width that moves with the scores rather than in grid steps, so that two seeds rarely tie.  0 when
    ``around`` itself is not within; a grid end or a diverged (NaN) neighbour ends the span at its multiplier."""
    span = good_span(column, within, around, best)
    if span is None:
        return 0.0
    column = column.sort_index().astype(float)
    threshold = (column.max() if best is None else best) - within
    logs, scores = np.log10(column.index.to_numpy(dtype=float)), column.to_numpy()
    low, high = list(column.index).index(span[0]), list(column.index).index(span[1])
    width = logs[high] - logs[low]
    for inner, outer in ((low, low - 1), (high, high + 1)):
        if 0 <= outer < len(scores) and np.isfinite(scores[outer]):  # scores[outer] < threshold <= scores[inner]
            width += abs(logs[outer] - logs[inner]) * (scores[inner] - threshold) / (scores[inner] - scores[outer])
    return float(width)


def span_decades_by_seed(table: pd.DataFrame, within: float, around: float = 1.0,
                         best: Mapping[Any, float] | None = None) -> list[float]:
    """:func:`span_decades` of each column of ``table`` (one per seed, rows the swept values; NaN: diverged or not
    run) around ``around``, against the column's own best or ``best[seed]`` (a reference shared by the methods:
    the best score any method reached on that seed)."""
    return [span_decades(table[seed], within, around, None if best is None else best[seed]) for seed in table]
