"""Notebook 03's figures: Displays (``from_...`` computes, ``.plot`` draws and keeps ``figure_`` and ``axes_``), and
:func:`remark2`, which draws ``theory.remark2_picture`` for ``papers.fedli.explore.explore_remark2``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedcore.plots import LINE_STYLES, check_type, legend_handles, robustness
from fedcore.results import History
from papers.common import mean_over_seeds, near_best_by_column
from papers.fedli.paper import NEAR_BEST
from papers.figures import panels as figure_panels


def remark2(curves: Mapping[str, Any], moves: Mapping[str, tuple[tuple[float, float], tuple[float, float]]],
            ax: Axes | None = None) -> Axes:
    """Remark 2 in one picture: ``curves`` (``{label: (x, y)}``, the global one last and thick) and one move per
    curve in its colour (``{label: ((x, y), (x', y'))}``), as ``theory.remark2_picture`` computes them."""
    check_type("ax", ax, Axes, optional=True)
    ax = ax if ax is not None else _axes_row(None, 1, 8.5, 4)[0]
    for index, (label, (x, y)) in enumerate(curves.items()):
        ax.plot(x, y, color=f"C{index}", linestyle=LINE_STYLES[index % 6],
                linewidth=2.5 if index == len(curves) - 1 else 1.2, label=label)
    ends = []
    for index, (label, (start, end)) in enumerate(moves.items()):
        ax.annotate("", end, start, arrowprops={"arrowstyle": "->", "color": f"C{index}", "linewidth": 2})
        ax.plot(*zip(start, end), "o", color=f"C{index}", markersize=6, markeredgecolor="black", label=label)
        ends += [start[1], end[1]]
    low, high = min(ends), max(ends)
    margin = 0.25 * (high - low) + 0.5
    ax.set_ylim(low - margin, high + margin)
    ax.set(xlabel="x", ylabel="objective")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return ax


@dataclass
class DescentDisplay:
    """Lemma 3 put to the test: the ``gaps`` ``f(x_t) - f*`` of clients that share their data beside the bound's
    rate (``bound`` per round), and the two different convex clients' ``run`` (``theory.TwoClientRun``: the global
    objective, each client's own before and after its steps, the server iterate ``x``) against ``x_star``."""

    gaps: list[float]
    bound: float
    run: Any
    x_star: float
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_runs(cls, gaps: Sequence[float], bound: float, run: Any, x_star: float) -> DescentDisplay:
        """From ``theory.suboptimality``'s gaps, ``theory.linear_rate_bound`` and ``theory.two_client_run``."""
        return cls(list(gaps), bound, run, x_star)

    def plot(self, axes: Sequence[Axes] | None = None) -> DescentDisplay:
        """Three panels: the gap against the bound (log axis); the global objective with each client's own before
        (squares) and after (triangles) its steps, one colour per client; the server iterate against ``x*``."""
        left, middle, right = _axes_row(axes, 3, 14 / 3, 3.9)
        rounds = range(len(self.gaps))
        left.semilogy(rounds, self.gaps, "o-", label="measured f(x_t) - f*")
        left.semilogy(rounds, [self.gaps[0] * self.bound**t for t in rounds], "--", color="grey",
                      label=f"bound: factor {self.bound:.3f} per round")
        left.set(xlabel="round", ylabel="f(x_t) - f*", title="clients sharing their data (every f_i = f)")
        run, rounds = self.run, range(len(self.run.global_objective))
        middle.plot(rounds, run.global_objective, "o-", color="black", linewidth=2.5, label="global f(x_t)")
        for i in range(len(run.own_before[0])):
            middle.plot(rounds[:-1], [row[i] for row in run.own_before], "s--", color=f"C{i}",
                        label=f"client {i + 1}: f_{i + 1}(x_t), before its steps")
            middle.plot(rounds[:-1], [row[i] for row in run.own_after], "^:", color=f"C{i}", markerfacecolor="none",
                        label=f"client {i + 1}: f_{i + 1} after its K steps")
        middle.set(xlabel="round", ylabel="objective", title="two different convex clients")
        middle.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        right.plot(range(len(run.x)), run.x, "o-", label="server iterate x_t")
        right.axhline(self.x_star, color="grey", linestyle="--", label=f"x* = {self.x_star:.3f}")
        right.set(xlabel="round", ylabel="x", title="where the server goes")
        for ax in (left, middle, right):
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        left.legend(fontsize="small")
        right.legend(fontsize="small")
        self.figure_, self.axes_ = left.figure, [left, middle, right]
        return self


def _axes_row(axes: Sequence[Axes] | None, panels: int, width: float, height: float, columns: int = 0) -> list[Axes]:
    """``axes`` as a list, or ``panels`` new panels, ``columns`` to a row (0: one row); the spare ones hidden."""
    if axes is not None:
        return list(axes)
    columns = columns or panels
    grid = figure_panels(columns, width, height, rows=-(-panels // columns))
    for ax in grid.ravel()[panels:]:
        ax.set_visible(False)
    return list(grid.ravel())


@dataclass
class SweepsDisplay:
    """Per panel, a sweep's mean scores over the seeds (``tables``: values by methods, in %), the mask ``good`` of
    those within ``within`` points of each method's best, and the values to mark (``{label: value}``)."""

    tables: dict[str, pd.DataFrame]
    good: dict[str, np.ndarray]
    marks: dict[str, dict[str, float]]
    xlabels: dict[str, str]
    within: float
    seeds: int
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], marks: Mapping[str, Mapping[str, float]],
                    xlabels: Mapping[str, str], within: float = NEAR_BEST) -> SweepsDisplay:
        """From ``{panel: table}`` (rows the swept values, columns ``(method, seed)``): each method's mean over the
        seeds and its near-best values."""
        for panel, table in tables.items():
            check_type(f"tables[{panel!r}]", table, pd.DataFrame)
            if table.columns.nlevels != 2:
                raise ValueError(f"tables[{panel!r}] must have (method, seed) columns; got {list(table.columns)}")
        means = {panel: mean_over_seeds(table) for panel, table in tables.items()}
        seeds = max(table.columns.get_level_values(1).nunique() for table in tables.values())
        return cls(means, {panel: near_best_by_column(table, within) for panel, table in means.items()},
                   {panel: dict(marks.get(panel, {})) for panel in tables}, {p: xlabels.get(p, "") for p in tables},
                   within, seeds)

    def plot(self, axes: Sequence[Axes] | None = None, columns: int = 3, order: Sequence[str] | None = None,
             ylim: tuple[float, float] | None = None) -> SweepsDisplay:
        """One panel per sweep, ``columns`` to a row: each method's mean against the swept value (log axis), the
        near-best points filled, the marks as dotted lines; ``order`` fixes each method's style; ``ylim`` one scale."""
        axes = _axes_row(axes, len(self.tables), 5.2, 3.6, columns)
        for ax, (panel, table) in zip(axes, self.tables.items()):
            robustness(table, self.good[panel], ax=ax, title=panel, xlabel=self.xlabels[panel],
                       ylabel=f"test accuracy (%), mean of {self.seeds} seeds", legend=False, order=order)
            for style, (name, value) in zip((":", "--", "-."), self.marks[panel].items()):
                ax.axvline(value, color="grey", linestyle=style, label=name)
            ax.legend(*legend_handles(ax), fontsize="x-small")
            if ylim is not None:
                ax.set_ylim(*ylim)
        self.figure_, self.axes_ = axes[0].figure, axes
        return self


STEP_COLUMNS = {"client_step_mean": "mean", "client_step_min": "min", "client_step_max": "max"}


@dataclass
class StepSizesDisplay:
    """Per task, the last Armijo step sizes of FedLi-LS's clients per round: the ``mean``, ``min`` and ``max`` over
    the round's clients (:data:`STEP_COLUMNS`; ``max`` is the server's step under Table 1's rule)."""

    steps: dict[str, pd.DataFrame]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_histories(cls, histories: Mapping[str, Mapping[str, History]],
                       method: str = "FedLi-LS") -> StepSizesDisplay:
        """From ``{task: {method: History}}``: ``method``'s step-size columns per task."""
        steps = {}
        for task, runs in histories.items():
            if method not in runs or not set(STEP_COLUMNS) <= set(runs[method].frame):
                raise ValueError(f"histories[{task!r}] has no {method} run with the columns {list(STEP_COLUMNS)}")
            steps[task] = runs[method].frame[list(STEP_COLUMNS)].rename(columns=STEP_COLUMNS)
        return cls(steps)

    def plot(self, axes: Sequence[Axes] | None = None, label: Callable[[str], str] = str) -> StepSizesDisplay:
        """One panel per task (titled ``label(task)``): the mean step against the round, the band from min to max."""
        axes = _axes_row(axes, len(self.steps), 5.5, 3.4)
        for ax, (task, frame) in zip(axes, self.steps.items()):
            ax.plot(frame.index, frame["mean"], "o-", label="mean over the round's clients")
            ax.fill_between(frame.index, frame["min"], frame["max"], alpha=0.25,
                            label="min to max (max: the server's step eta_g)")
            ax.set(xlabel="round", ylabel="last Armijo step size", title=label(task))
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize="small")
        self.figure_, self.axes_ = axes[0].figure, axes
        return self
