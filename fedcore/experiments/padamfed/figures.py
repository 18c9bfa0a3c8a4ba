"""Notebook 02's figures (Yan et al., *Problem-Parameter-Free Federated Learning*, ICLR 2025), in the
compute-then-draw style of scikit-learn's Displays: ``Display.from_...(...)`` computes what the figure shows and
keeps it on the object (to read or test), then ``.plot(...)`` draws it and keeps the ``figure_`` and ``ax_`` (or
``axes_``).

- :class:`SmoothnessDisplay`: the scaled quadratics (section 1; Theorems 1-2, Remark 1): each method's final over
  initial gradient norm against the smoothness L of the scaled objective, clipped so that a blown-up run stays on
  the axis;
- :class:`RobustnessDisplay`: accuracy against the learning-rate multiplier (the slides' Figure 2), one panel per
  reading, the mean over seeds, each method's good range around 1 filled
  (:func:`~fedcore.experiments.common.good_span`, within
  :data:`~fedcore.experiments.padamfed.experiment.NEAR_BEST` of its best).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from fedcore.checks import check_positive, check_range
from fedcore.experiments.common import good_span, mean_over_seeds
from fedcore.experiments.padamfed.experiment import METHODS, NEAR_BEST
from fedcore.plots import LINE_STYLES, MARKERS, legend_handles, robustness

CLIP = 1e6
"""The smoothness figure's ceiling: a ratio above it (a run that blew up, or inf: diverged) is drawn at it."""


@dataclass
class SmoothnessDisplay:
    """``ratios``: final over initial gradient norm (:func:`fedcore.experiments.padamfed.theory.smoothness_table`:
    rows the smoothness L, columns the methods), clipped at ``clip``."""

    ratios: pd.DataFrame
    clip: float
    figure_: Figure | None = field(default=None, repr=False)
    ax_: Axes | None = field(default=None, repr=False)

    @classmethod
    def from_table(cls, table: pd.DataFrame, clip: float = CLIP) -> SmoothnessDisplay:
        """The ratios of ``table`` with every value above ``clip`` (inf included) set to ``clip``."""
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"table={type(table).__name__} must be a DataFrame (smoothness_table's: rows L, "
                            "columns methods)")
        clip = check_positive("clip", clip)
        return cls(table.clip(upper=clip), clip)

    def plot(self, ax: Axes | None = None, xlabel: str = "smoothness L of the scaled objective",
             target: float | None = None, order: Sequence[str] = METHODS) -> SmoothnessDisplay:
        """Log-log lines, one per method (its own marker and line style), and a grey line at 1: above it a run
        ends farther from stationarity than it started; a dashed line at ``target`` (a claim's pass rule) when
        given.  ``xlabel`` names the rows (the smoothness L, the reparametrization's a, the heterogeneity);
        ``order`` fixes each method's colour, marker and line style by its place in it (notebook 02's methods),
        so that a method looks the same in every figure; the legend sits beside the axes."""
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 3.6), layout="constrained")
        for column, method in enumerate(self.ratios):
            index = list(order).index(method) if method in order else column
            ax.loglog(self.ratios.index, self.ratios[method], marker=MARKERS[index % len(MARKERS)],
                      linestyle=LINE_STYLES[index % len(LINE_STYLES)], color=f"C{index % 10}", label=method)
        ax.axhline(1, color="grey", linewidth=0.8, label="no progress: 1")
        if target is not None:
            ax.axhline(check_positive("target", target), color="grey", linewidth=0.8, linestyle="--",
                       label=f"pass rule: {target:g}")
        ax.set(xlabel=xlabel,
               ylabel=f"final / initial gradient norm (clipped at {self.clip:.0e})".replace("e+0", "e"))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
        self.figure_, self.ax_ = ax.figure, ax
        return self


@dataclass
class RobustnessDisplay:
    """``tables``: per reading, the mean score over the seeds at each multiplier (rows) of each method (columns), in
    percent (:func:`fedcore.experiments.padamfed.experiment.robustness`, averaged, times 100); ``good``: per
    reading, the mask of each method's good range around 1
    (:func:`~fedcore.experiments.common.good_span`)."""

    tables: dict[str, pd.DataFrame]
    within: float
    good: dict[str, np.ndarray]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> RobustnessDisplay:
        """Average each reading's table over its seeds (columns (method, seed); a table of methods is taken as
        it is) and mark, per method, the contiguous multipliers around 1 whose mean lies within ``within`` of the
        method's best mean (a diverged run never does)."""
        if not isinstance(tables, Mapping) or not tables:
            raise TypeError(f"tables={tables!r} must be a non-empty {{reading: DataFrame}}")
        within = check_range("within", within, 0)
        means = {reading: mean_over_seeds(table) for reading, table in tables.items()}
        good = {}
        for reading, table in means.items():
            mask = np.zeros(table.shape, bool)
            for index, method in enumerate(table):
                span = good_span(table[method], within)
                if span is not None:
                    mask[:, index] = (table.index >= span[0]) & (table.index <= span[1])
            good[reading] = mask
        return cls({reading: 100 * table for reading, table in means.items()}, within, good)

    def plot(self, axes: Sequence[Axes] | None = None, title: str = "",
             order: Sequence[str] = METHODS) -> RobustnessDisplay:
        """One panel per reading, titled "``title``multiplying <reading>", sharing the y axis
        (:func:`fedcore.plots.robustness`: filled markers in the good range around 1, hollow elsewhere, a line
        stops where a run diverged; ``order`` fixes each method's style), one legend below them that says so."""
        if axes is None:
            figure, axes = plt.subplots(1, len(self.tables), figsize=(6 * len(self.tables), 4), layout="constrained",
                                        sharey=True, squeeze=False)
            axes = list(axes[0])
        for ax, (reading, table) in zip(axes, self.tables.items()):
            robustness(table, self.good[reading], ax, title=f"{title}multiplying {reading}", legend=False,
                       ylabel="test accuracy (%, last 4 evaluations, mean over seeds)", order=order)
        self.figure_, self.axes_ = axes[0].figure, axes
        handles, labels = legend_handles(axes[0])
        self.figure_.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small",
                            title=f"filled: the good range around 1 (within {100 * self.within:g} points of the "
                                  "method's best); hollow: outside it", title_fontsize="small")
        return self
