"""Notebook 02's own figures (Yan et al., ICLR 2025) as Displays, like :mod:`papers.figures`: ``from_...``
computes what the figure shows and keeps it, ``.plot(...)`` draws it and keeps ``figure_`` and ``ax_``/``axes_``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from fedcore.checks import check_positive, check_range
from fedcore.plots import LINE_STYLES, MARKERS, legend_handles, robustness
from papers.common import good_span, mean_over_seeds
from papers.figures import panels
from papers.padamfed.experiment import METHODS, NEAR_BEST

CLIP = 1e6
"""The smoothness figure's ceiling: a ratio above it (blown up, or inf: diverged) is drawn at it."""


@dataclass
class SmoothnessDisplay:
    """The quadratics (section 1): ``ratios``, each method's final over initial gradient norm (rows the smoothness
    L, the reparametrization's a or the heterogeneity; columns the methods), clipped at ``clip``."""

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
        """Log-log lines, one per method (``order`` fixes its colour, marker and line style), a grey line at 1 (above
        it a run ends farther from stationarity than it started) and a dashed one at ``target`` (a pass rule)."""
        if ax is None:
            ax = panels(1, 7, 3.6)[0][0]
        for column, method in enumerate(self.ratios):
            index = list(order).index(method) if method in order else column
            ax.loglog(self.ratios.index, self.ratios[method], marker=MARKERS[index % len(MARKERS)],
                      linestyle=LINE_STYLES[index % len(LINE_STYLES)], color=f"C{index % 10}", label=method)
        positive = self.ratios.index[self.ratios.index > 0]
        if len(positive) < len(self.ratios.index) and len(positive):  # a row at 0 (the untilted level): linear there
            ax.set_xscale("symlog", linthresh=float(positive.min()))
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
    """Accuracy against the multiplier (the slides' Figure 2): ``tables``, per reading, the mean score over the seeds
    in % (rows multipliers, columns methods); ``good``, the mask of each method's good range around 1."""

    tables: dict[str, pd.DataFrame]
    within: float
    good: dict[str, np.ndarray]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> RobustnessDisplay:
        """Average each reading's table (:func:`~papers.padamfed.experiment.robustness`) over its seeds
        and mark each method's good range around 1 (:func:`~papers.common.good_span`)."""
        if not isinstance(tables, Mapping) or not tables:
            raise TypeError(f"tables={tables!r} must be a non-empty {{reading: DataFrame}}")
        within = check_range("within", within, 0)
        means = {reading: mean_over_seeds(table) for reading, table in tables.items()}
        spans = {reading: [good_span(table[method], within) or (np.inf, -np.inf) for method in table]
                 for reading, table in means.items()}  # no span: an empty range
        good = {reading: np.column_stack([(table.index >= low) & (table.index <= high) for low, high in spans[reading]])
                for reading, table in means.items()}
        return cls({reading: 100 * table for reading, table in means.items()}, within, good)

    def plot(self, axes: Sequence[Axes] | None = None, title: str = "",
             order: Sequence[str] = METHODS) -> RobustnessDisplay:
        """One panel per reading, titled "``title``multiplying <reading>", sharing the y axis
        (:func:`fedcore.plots.robustness`: filled in the good range, hollow elsewhere), one legend below them."""
        if axes is None:
            axes = list(panels(len(self.tables), 6, 4, sharey=True)[0])
        for ax, (reading, table) in zip(axes, self.tables.items()):
            robustness(table, self.good[reading], ax, title=f"{title}multiplying {reading}", legend=False,
                       ylabel="test accuracy (%, last 4 evaluations, mean over seeds)", order=order)
        self.figure_, self.axes_ = axes[0].figure, axes
        handles, labels = legend_handles(axes[0])
        self.figure_.legend(handles, labels, loc="outside lower center", ncols=len(labels), fontsize="small",
                            title=f"filled: the good range around 1 (within {100 * self.within:g} points of the "
                                  "method's best); hollow: outside it", title_fontsize="small")
        return self


@dataclass
class RatesDisplay:
    """The rates (section 1): ``means``, the geometric mean over the seeds of each run's mean gradient norm (rows
    (a, the varied value), columns the methods), drawn against the varied T or S, one line per a, one panel per
    method, beside the theorems' ``exponents``."""

    means: pd.DataFrame
    exponents: Mapping[str, float]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: list[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_table(cls, table: pd.DataFrame, exponents: Mapping[str, float]) -> RatesDisplay:
        """The per-seed mean gradient norms of a ``rate_table`` (rows (a, value), columns (method, seed)),
        their geometric mean over the seeds."""
        if not isinstance(table, pd.DataFrame) or table.index.nlevels not in (2, 3):
            raise TypeError("table must be a rate_table (rows (a, T) or (a, T, S), columns (method, seed)), got "
                            f"{type(table).__name__}")
        means = 10 ** mean_over_seeds(np.log10(table.astype(float)))
        means.index = pd.MultiIndex.from_arrays([means.index.get_level_values(0), means.index.get_level_values(-1)])
        return cls(means, dict(exponents))

    def plot(self, xlabel: str = "rounds T") -> RatesDisplay:
        """Log-log lines of the mean gradient norm against the varied value, one per a, and a dashed line of the
        theorem's slope through each panel's first point of a = 1 (or of the first a)."""
        methods = list(self.means.columns)
        axes = panels(len(methods), 4.2, 3.4, sharey=True)[0]
        for ax, method in zip(axes, methods):
            scales = self.means.index.get_level_values(0).unique()
            for index, a in enumerate(scales):
                line = self.means.xs(a, level=0)[method]
                ax.loglog(line.index, line, marker=MARKERS[index % len(MARKERS)], color=f"C{index % 10}",
                          label=f"a = {a:.3g}")
            reference = self.means.xs(1.0 if 1.0 in scales else scales[0], level=0)[method]
            x = np.asarray(reference.index, dtype=float)
            slope = self.exponents.get(method)
            if slope is not None:
                ax.loglog(x, reference.iloc[0] * (x / x[0]) ** slope, color="grey", linestyle="--",
                          label=f"slope {slope:.2f} (theorem)")
            ax.set(title=method, xlabel=xlabel, xticks=x, xticklabels=[f"{value:g}" for value in x])
            ax.minorticks_off()
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize="small")
        axes[0].set(ylabel="mean gradient norm over the T rounds")
        self.figure_, self.axes_ = axes[0].figure, list(axes)
        return self
