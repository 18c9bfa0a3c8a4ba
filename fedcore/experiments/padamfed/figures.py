"""Notebook 02's figures (Yan et al., *Problem-Parameter-Free Federated Learning*, ICLR 2025), in the
compute-then-draw style of scikit-learn's Displays: ``Display.from_...(...)`` computes what the figure shows and
keeps it on the object (to read or test), then ``.plot(...)`` draws it and keeps the ``figure_`` and ``ax_`` (or
``axes_``).

- :class:`SmoothnessDisplay`: the scaled quadratics (section 1; Theorems 1-2, Remark 1): each method's final over
  initial gradient norm against the smoothness L of the scaled objective, clipped so that a blown-up run stays on
  the axis;
- :class:`RobustnessDisplay`: accuracy against the learning-rate multiplier (the slides' Figure 2), one panel per
  reading, the multipliers within :data:`~fedcore.experiments.padamfed.experiment.NEAR_BEST` of each method's
  best filled (:func:`fedcore.experiments.common.near_best_by_column`).
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
from fedcore.experiments.common import near_best_by_column
from fedcore.experiments.padamfed.experiment import NEAR_BEST
from fedcore.plots import LINE_STYLES, MARKERS, robustness

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

    def plot(self, ax: Axes | None = None) -> SmoothnessDisplay:
        """Log-log lines, one per method (its own marker and line style), and a grey line at 1: above it a run
        ends farther from stationarity than it started."""
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 3.6), layout="constrained")
        for index, method in enumerate(self.ratios):
            ax.loglog(self.ratios.index, self.ratios[method], marker=MARKERS[index % len(MARKERS)],
                      linestyle=LINE_STYLES[index % len(LINE_STYLES)], label=method)
        ax.axhline(1, color="grey", linewidth=0.8)
        ax.set(xlabel="smoothness L of the scaled objective",
               ylabel=f"final / initial gradient norm (clipped at {self.clip:.0e})".replace("e+0", "e"))
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
        self.figure_, self.ax_ = ax.figure, ax
        return self


@dataclass
class RobustnessDisplay:
    """``tables``: per reading, the score at each multiplier (rows) of each method (columns)
    (:func:`fedcore.experiments.padamfed.experiment.robustness`); ``good``: per reading, the mask of the
    multipliers within ``within`` of each method's best."""

    tables: dict[str, pd.DataFrame]
    within: float
    good: dict[str, np.ndarray]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> RobustnessDisplay:
        """Mark, per reading and method, the multipliers whose score lies within ``within`` of the method's best
        (:func:`fedcore.experiments.common.near_best_by_column`; a diverged run never does)."""
        if not isinstance(tables, Mapping) or not tables:
            raise TypeError(f"tables={tables!r} must be a non-empty {{reading: DataFrame}}")
        within = check_range("within", within, 0)
        return cls(dict(tables), within, {reading: near_best_by_column(table, within)
                                          for reading, table in tables.items()})

    def plot(self, axes: Sequence[Axes] | None = None) -> RobustnessDisplay:
        """One panel per reading, titled "multiplying <reading>", sharing the y axis
        (:func:`fedcore.plots.robustness`: filled markers within ``within`` of the best, hollow elsewhere, a line
        stops where a run diverged), one legend below them."""
        if axes is None:
            figure, axes = plt.subplots(1, len(self.tables), figsize=(6 * len(self.tables), 4), layout="constrained",
                                        sharey=True, squeeze=False)
            axes = list(axes[0])
        for ax, (reading, table) in zip(axes, self.tables.items()):
            robustness(table, self.good[reading], ax, title=f"multiplying {reading}", legend=False)
        self.figure_, self.axes_ = axes[0].figure, axes
        self.figure_.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
                            ncols=len(self.tables[next(iter(self.tables))].columns), fontsize="small")
        return self
