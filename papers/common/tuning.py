"""Grid search over seeds: :func:`tune` -> :class:`Tuning` (the chosen points and every point's scores), the grids
at a scale, the chosen values on a grid's edge, a tuning bound to the builders for judging seeds apart
(:func:`bind`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pandas as pd
from torch import Tensor

from fedcore.checks import (
    check_choice,
    check_int,
    check_seeds,
)
from fedcore.store import Store
from fedcore.sweeps import sweep
from papers.claims import check_apart
from papers.common.tasks import Builder, Selection, Task


def bind(builders: Mapping[str, Builder], points: Mapping[str, Mapping[str, Any]] | Tuning,
         seeds: Sequence[int] | None = None) -> dict[str, Builder]:
    """``{method: build()}``: each builder of ``builders`` with its point of ``points`` (a :class:`Tuning`, its
    ``chosen``, a theorem's step sizes) bound; a method without a point keeps its defaults.  A ``Tuning`` bound for
    runs on the judging ``seeds`` must have tuned on other seeds (a ``ValueError`` names the shared ones)."""
    points = chosen_apart(points, seeds, "bind(builders, tuning, seeds)")
    return {method: partial(build, **points.get(method, {})) for method, build in builders.items()}


def chosen_apart(points: Mapping[str, Mapping[str, Any]] | Tuning, seeds: Sequence[int] | None,
                 call: str = "bind(builders, tuning, seeds)") -> Mapping[str, Mapping[str, Any]]:
    """``points`` as ``{method: point}``: a :class:`Tuning`'s ``chosen``, once its seeds are checked apart from the
    judging ``seeds`` (which ``call``, named in the error, must then give); any other mapping as it is."""
    if not isinstance(points, Tuning):
        return points
    if seeds is None:
        raise TypeError(f"{call}: give the judging seeds, to check that the tuning ran on others")
    check_apart(points.seeds, check_seeds("seeds", seeds))
    return points.chosen


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
    may lie beyond it: widen the grid or say so); an axis of one value has no edge.  A value written to 7
    significant digits (``0.0316228`` for ``10**-1.5``) is its end."""
    edges = {}
    for method, point in chosen.items():
        grid = grids.get(method, {})
        names = [name for name, value in point.items() if len(grid.get(name, ())) > 1 and any(
            math.isclose(value, end, rel_tol=1e-6) for end in (min(grid[name]), max(grid[name])))]
        if names:
            edges[method] = names
    return edges


def grid_scores(task: Task, build: Builder, grid: Mapping[str, Sequence[Any]], seeds: Sequence[int],
                selection: Selection | None = None, *, starts: Mapping[int, Tensor] | None = None,
                store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """Every point of ``grid`` (keywords of ``build``) on ``task`` from every seed's initial model (``starts``, else
    drawn here) through :func:`fedcore.sweep`, each run scored by :meth:`Task.tuning_score` with ``selection``: one
    row per point, one column per seed (NaN where a run diverged or was refused)."""
    return _grid_runs(task, build, grid, seeds, selection, starts=starts, store=store, progress=progress)[0]


def _grid_runs(task: Task, build: Builder, grid: Mapping[str, Sequence[Any]], seeds: Sequence[int],
               selection: Selection | None = None, *, starts: Mapping[int, Tensor] | None = None,
               store: Store | None = None, progress: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """:func:`grid_scores`'s table, and why runs gave no score: the distinct errors of the points ``build``
    refused and of the runs that failed (the sweep's ``error`` column)."""
    seeds = check_seeds("seeds", seeds)
    runs = sweep(task.problem(seeds[0]), build, {key: list(values) for key, values in grid.items()}, seeds=seeds,
                 x0=task.initial(seeds) if starts is None else starts, store=store, progress=progress,
                 summary=lambda history: {"score": task.tuning_score(history, selection)},
                 **task.tuning_settings(selection))
    runs["seed"] = runs["seed"] if "seed" in runs else seeds[0]  # sweep drops the column for one seed
    runs["score"] = runs["score"] if "score" in runs else math.nan
    table = runs.pivot_table(index=list(grid), columns="seed", values="score", dropna=False)
    errors = list(dict.fromkeys(runs["error"].dropna())) if "error" in runs else []
    return table.reindex(columns=seeds).rename_axis(columns="seed"), errors


@dataclass(frozen=True)
class Tuning:
    """What :func:`tune` found: the ``grids`` searched, per method the ``chosen`` point, and ``tables``: every
    point's score per seed with their mean (``"score"``, NaN where a seed diverged); ``higher_is_better`` says
    which end won; ``seeds``: the seeds it tuned on (:func:`bind` refuses to judge on them)."""

    chosen: dict[str, dict[str, Any]]
    tables: dict[str, pd.DataFrame]
    grids: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    higher_is_better: bool = True
    seeds: tuple[int, ...] = ()

    def on_edge(self) -> dict[str, list[str]]:
        """``{method: [hyperparameters]}`` chosen at an end of their axis (:func:`on_edge`)."""
        return on_edge(self.chosen, self.grids)

    def merged(self, other: Tuning) -> Tuning:
        """This search followed by ``other`` on the same seeds and rule (a second stage over more axes, around this
        one's choice): per method of ``other``, its best point where its mean score beats this one's chosen point's,
        else this one's; the grids hold both stages' axes, the tables both stages' points (``"<method>, stage 2"``)."""
        if other.seeds != self.seeds or other.higher_is_better != self.higher_is_better:
            raise ValueError(f"a second stage must tune on the same seeds and rule: seeds {other.seeds} vs "
                             f"{self.seeds}, higher_is_better {other.higher_is_better} vs {self.higher_is_better}")
        chosen, tables, grids = dict(self.chosen), dict(self.tables), dict(self.grids)
        sign = 1.0 if self.higher_is_better else -1.0
        for method, point in other.chosen.items():
            if (sign * other.tables[method]["score"]).max() > (sign * self.tables[method]["score"]).max():
                chosen[method] = point
            tables[f"{method}, stage 2"] = other.tables[method]
            first = dict(self.grids.get(method, {}))
            grids[method] = {**first, **{axis: values for axis, values in other.grids[method].items()
                                         if axis not in first}}
        return Tuning(chosen, tables, grids, self.higher_is_better, self.seeds)

    def chosen_table(self) -> pd.DataFrame:
        """Methods by hyperparameters: the chosen values, ``"0.1*"`` where a value sits at an end of an axis of
        more than two values (a wider grid might have chosen otherwise)."""
        edges = on_edge(self.chosen, {method: {key: values for key, values in grid.items() if len(values) > 2}
                                      for method, grid in self.grids.items()})
        return pd.DataFrame({method: {key: f"{value:g}{'*' if key in edges.get(method, []) else ''}"
                                      for key, value in point.items()}
                             for method, point in self.chosen.items()}).T.fillna("")

    def heatmap(self, method: str, rows: str, columns: str) -> pd.DataFrame:
        """``method``'s mean score over the seeds as a grid: ``rows`` by ``columns`` (two axes of its grid), the
        largest row value on top."""
        table = self.tables[check_choice("method", method, tuple(self.tables))]
        if sorted(table.index.names) != sorted([rows, columns]):
            raise ValueError(f"rows={rows!r}, columns={columns!r} must be the axes {list(table.index.names)}")
        grid = table["score"].unstack(columns)
        grid.columns.name = columns
        return grid.sort_index(ascending=False)


def beyond_edges(grid: Mapping[str, Sequence[Any]], point: Mapping[str, Any]) -> dict[str, float]:
    """``{axis: value}``: for each axis of ``grid`` of at least 3 positive numbers whose ``point`` value sits at
    an end, the next value beyond that end on the axis's own spacing there (the end times the ratio of the end to
    its neighbour: ``[0.01, 0.05, 0.1]`` continues with 0.2 above, 0.002 below)."""
    beyond = {}
    for axis, values in grid.items():
        ordered = sorted(values)
        if len(ordered) < 3 or not all(isinstance(v, (int, float)) and v > 0 for v in ordered):
            continue
        if math.isclose(point[axis], ordered[-1]):
            beyond[axis] = float(f"{ordered[-1] * ordered[-1] / ordered[-2]:.12g}")
        elif math.isclose(point[axis], ordered[0]):
            beyond[axis] = float(f"{ordered[0] * ordered[0] / ordered[1]:.12g}")
    return beyond


def tune(task: Task, builders: Mapping[str, Builder], grids: Mapping[str, Mapping[str, Sequence[Any]]],
         seeds: Sequence[int], *, selection: Selection | None = None, store: Store | None = None,
         progress: bool = False, widen: int = 0) -> Tuning:
    """Grid search over seeds: every point of ``grids[method]`` (keywords of ``builders[method]``) on ``task`` from
    every seed (:func:`grid_scores`), scored by the task's :class:`Selection` (or ``selection``), the point with the
    best mean over the seeds chosen (a point that diverged on a seed never wins).  With ``widen`` > 0, an axis whose
    chosen value sits at an end is continued one value beyond it (:func:`beyond_edges`, the other axes as they
    are then) and the search goes on, at most ``widen`` times: a choice on an edge of the paper's grid is not
    taken as the best where the best lies beyond it.  The :class:`Tuning` keeps the grids as widened.  A grid with
    no point scored on every seed is a ``ValueError`` that gives why: the builder's refusals and the runs' errors
    (the first three distinct ones), else that every point diverged."""
    seeds = check_seeds("seeds", seeds)
    widen = check_int("widen", widen, 0)
    unknown = [method for method in grids if method not in builders]
    if unknown:
        raise ValueError(f"grids has {unknown}, which have no builder; builders has {list(builders)}")
    higher, starts = task.rule(selection).higher_is_better, task.initial(seeds)
    chosen, tables, searched = {}, {}, {}
    for method, grid in grids.items():
        grid = {key: list(values) for key, values in grid.items()}
        table, errors = _grid_runs(task, builders[method], grid, seeds, selection, starts=starts, store=store,
                                   progress=progress)
        for extension in range(widen + 1):
            table["score"] = table[seeds].mean(axis=1, skipna=False)
            if table["score"].isna().all():
                why = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "") \
                    if errors else "every run finished, and each point diverged on at least one seed"
                raise ValueError(f"every point of the grid of {method!r} diverged on some seed or was refused: {why}")
            best = table["score"].idxmax() if higher else table["score"].idxmin()
            point = dict(zip(grid, best if isinstance(best, tuple) else (best,)))
            beyond = beyond_edges(grid, point) if extension < widen else {}
            for axis, value in beyond.items():  # one axis at a time: the corners of two widened axes are searched
                grid[axis] = sorted([*grid[axis], value])
                new = grid_scores(task, builders[method], {**grid, axis: [value]}, seeds, selection, starts=starts,
                                  store=store, progress=progress)
                table = pd.concat([table.drop(columns="score", errors="ignore"), new]).sort_index()
            if not beyond:
                break
        chosen[method] = {key: value.item() if hasattr(value, "item") else value for key, value in point.items()}
        tables[method], searched[method] = table, grid
    return Tuning(chosen, tables, searched, higher, tuple(seeds))
