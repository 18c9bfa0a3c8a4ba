"""Notebook 03's figures (FedLi, *Towards Hyper-parameter-free Federated Learning*): drawing what
:mod:`fedcore.experiments.fedli.theory` computed.

- :func:`remark2`: Remark 2 in one picture, each client's step on its own curve and the server's move on the
  global one;
- :func:`descent_panels`: Lemma 3 put to the test (clients that share their data; two different convex clients);
- :class:`SweepsDisplay`: the sweeps of the client rate and of FedLi's constants (``experiment.client_rate_sweep``,
  ``experiment.constant_sweep``), means over seeds, the values within
  :data:`~fedcore.experiments.fedli.paper.NEAR_BEST` points of each method's best filled;
- :class:`StepSizesDisplay`: the step sizes FedLi-LS's clients accept, round by round.

The two Displays follow scikit-learn's: ``Display.from_...(...)`` computes what the figure shows (and keeps it on
the object, to read or test), ``.plot(...)`` draws it and keeps the ``figure_`` and ``axes_``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedcore.experiments.common import mean_over_seeds, near_best_by_column
from fedcore.experiments.fedli.paper import NEAR_BEST
from fedcore.plots import LINE_STYLES, check_type, legend_handles, robustness
from fedcore.results import History


def remark2(curves: Mapping[str, Any], moves: Mapping[str, tuple[tuple[float, float], tuple[float, float]]],
            ax: Axes | None = None) -> Axes:
    """FedLi's Remark 2 in one picture: ``curves`` (``{label: (x, y)}``: the clients' objectives and the global
    one, drawn thick, last) and one move per curve (``{label: ((x, y), (x', y'))}``, in the curve's colour: each
    client's step on its own curve, then the server's move to the average on the global one), as
    :func:`fedcore.experiments.fedli.theory.remark2_picture` computes them.  The y range fits the moves."""
    check_type("ax", ax, Axes, optional=True)
    if ax is None:
        _, ax = plt.subplots(figsize=(8.5, 4), layout="constrained")
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
    ax.set_xlabel("x")
    ax.set_ylabel("objective")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    return ax


def descent_panels(gaps: Sequence[float], bound: float, run: Any, x_star: float) -> Figure:
    """FedLi's Lemma 3 put to the test, three panels: the gap ``f(x_t) - f*`` of clients that share their data
    against the bound's geometric rate ``bound`` per round; the two different convex clients' global objective
    with each client's own objective before (squares) and after (triangles) its local steps, one colour per
    client; and their server iterate ``x_t`` against ``x*`` (``run``: ``fedcore.experiments.fedli.theory``'s
    ``TwoClientRun``, with ``x``, ``global_objective``, ``own_before``, ``own_after``)."""
    figure, (left, middle, right) = plt.subplots(1, 3, figsize=(14, 3.9), layout="constrained")
    rounds = range(len(gaps))
    left.semilogy(rounds, gaps, "o-", label="measured f(x_t) - f*")
    left.semilogy(rounds, [gaps[0] * bound**t for t in rounds], "--", color="grey",
                  label=f"bound: factor {bound:.3f} per round")
    left.set(xlabel="round", ylabel="f(x_t) - f*", title="clients sharing their data (every f_i = f)")
    left.legend(fontsize="small")
    rounds = range(len(run.global_objective))
    middle.plot(rounds, run.global_objective, "o-", color="black", linewidth=2.5, label="global f(x_t)")
    for i in range(len(run.own_before[0])):
        middle.plot(rounds[:-1], [row[i] for row in run.own_before], "s--", color=f"C{i}",
                    label=f"client {i + 1}: f_{i + 1}(x_t), before its steps")
        middle.plot(rounds[:-1], [row[i] for row in run.own_after], "^:", color=f"C{i}", markerfacecolor="none",
                    label=f"client {i + 1}: f_{i + 1} after its K steps")
    middle.set(xlabel="round", ylabel="objective", title="two different convex clients")
    middle.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
    right.plot(range(len(run.x)), run.x, "o-", label="server iterate x_t")
    right.axhline(x_star, color="grey", linestyle="--", label=f"x* = {x_star:.3f}")
    right.set(xlabel="round", ylabel="x", title="where the server goes")
    right.legend(fontsize="small")
    for ax in (left, middle, right):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    return figure


def _axes_row(axes: Sequence[Axes] | None, panels: int, width: float, height: float) -> list[Axes]:
    """``axes`` as a list, or a new row of ``panels`` panels."""
    if axes is None:
        _, grid = plt.subplots(1, panels, figsize=(width * panels, height), layout="constrained", squeeze=False)
        return list(grid[0])
    return list(axes)


@dataclass
class SweepsDisplay:
    """Per panel, a sweep's mean scores over the seeds (``tables``: values by methods, test accuracy in %), the mask
    ``good`` of the values within ``within`` points of each method's best, and the values to ``mark`` (``{label:
    value}``: a default, a tuned rate), with the panel's ``xlabels``."""

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
        """From ``{panel: table}`` (rows the swept values, columns ``(method, seed)``: ``experiment.client_rate_sweep``
        or a constant's sweep under its method's name): each method's mean over the seeds and its near-best values
        (:func:`fedcore.experiments.common.near_best_by_column`)."""
        for panel, table in tables.items():
            check_type(f"tables[{panel!r}]", table, pd.DataFrame)
            if table.columns.nlevels != 2:
                raise ValueError(f"tables[{panel!r}] must have (method, seed) columns; got {list(table.columns)}")
        means = {panel: mean_over_seeds(table) for panel, table in tables.items()}
        seeds = max(table.columns.get_level_values(1).nunique() for table in tables.values())
        return cls(means, {panel: near_best_by_column(table, within) for panel, table in means.items()},
                   {panel: dict(marks.get(panel, {})) for panel in tables}, {p: xlabels.get(p, "") for p in tables},
                   within, seeds)

    def plot(self, axes: Sequence[Axes] | None = None, columns: int = 3,
             order: Sequence[str] | None = None) -> SweepsDisplay:
        """One panel per sweep, ``columns`` to a row: each method's mean accuracy against the swept value (log
        axis), the near-best points filled, the marked values as dotted lines; ``order`` fixes each method's style
        by its place in it (the same method looks the same in every panel)."""
        if axes is None:
            rows = -(-len(self.tables) // columns)
            _, grid = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.6 * rows), layout="constrained",
                                   squeeze=False)
            axes = list(grid.ravel())
            for ax in axes[len(self.tables):]:
                ax.set_visible(False)
        for ax, (panel, table) in zip(axes, self.tables.items()):
            robustness(table, self.good[panel], ax=ax, title=panel, xlabel=self.xlabels[panel],
                       ylabel=f"test accuracy (%), mean of {self.seeds} seeds", legend=False, order=order)
            for style, (name, value) in zip((":", "--", "-."), self.marks[panel].items()):
                ax.axvline(value, color="grey", linestyle=style, label=name)
            ax.legend(*legend_handles(ax), fontsize="x-small")
        self.figure_, self.axes_ = axes[0].figure, axes
        return self


STEP_COLUMNS = {"client_step_mean": "mean", "client_step_min": "min", "client_step_max": "max"}
"""FedLi-LS's per-round metrics of its clients' last Armijo step sizes, and their names in :class:`StepSizesDisplay`."""


@dataclass
class StepSizesDisplay:
    """Per task, the last Armijo step sizes of FedLi-LS's clients per round: a frame with the ``mean``, ``min`` and
    ``max`` over the round's clients (``max`` is the server's step ``eta_g`` under section 3's rule)."""

    steps: dict[str, pd.DataFrame]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_histories(cls, histories: Mapping[str, Mapping[str, History]],
                       method: str = "FedLi-LS") -> StepSizesDisplay:
        """From ``{task: {method: History}}``: ``method``'s step-size columns (:data:`STEP_COLUMNS`) per task."""
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
