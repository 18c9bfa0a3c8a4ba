"""Notebook 01's figures (Reddi et al., ICLR 2021), in the compute-then-draw style of scikit-learn's Displays:
``Display.from_...(...)`` computes what the figure shows and keeps it on the object (to read or test), then
``.plot(...)`` draws it through :mod:`fedcore.plots` and keeps the ``figure_`` or ``ax_``.

- :class:`ScalingDisplay`: the corollaries' rate, one log-log panel per varied quantity (T, m, K) with the fitted
  slope beside the predicted one;
- :class:`TuningDisplay`: a learning-rate grid as a heat map with the cells near the best outlined (Figures 2
  and 6); :func:`tuning_heatmaps` draws every method's grid on one colour scale, :func:`tuning_panels` is the
  tuning explorer's figure (the grid beside one cell's curve).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import NullFormatter

from fedcore.checks import check_number
from fedcore.experiments.fedopt.theory import PREDICTED_EXPONENT, fitted_exponent
from fedcore.experiments.fedopt.tuning import is_good
from fedcore.plots import grid_heatmap, run_style
from fedcore.results import History


@dataclass
class ScalingDisplay:
    """Per method, ``tables`` (``{method: {"T": table, "m": ..., "K": ...}}``, each indexed by the varied
    quantity) with the measured ``column``; the fitted log-log ``slopes`` (methods by varied quantity) and the
    ``predicted`` one."""

    tables: dict[str, dict[str, pd.DataFrame]]
    column: str
    slopes: pd.DataFrame
    predicted: float
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Any], column: str = "mean squared gradient norm",
                    predicted: float = PREDICTED_EXPONENT) -> ScalingDisplay:
        """Fit each table's slope (:func:`~fedcore.experiments.fedopt.theory.fitted_exponent`): ``tables`` is
        ``{name: table}`` for one method or ``{method: {name: table}}`` for several."""
        if not isinstance(tables, Mapping) or not tables:
            raise TypeError(f"tables={tables!r} must be a non-empty {{name: DataFrame}} or {{method: {{name: "
                            "DataFrame}}}")
        check_number("predicted", predicted)
        by_method = {"measured": dict(tables)} if all(isinstance(t, pd.DataFrame) for t in tables.values()) else \
            {method: dict(named) for method, named in tables.items()}
        slopes = pd.DataFrame({method: {name: fitted_exponent(table, column) for name, table in named.items()}
                               for method, named in by_method.items()}).T
        return cls(by_method, column, slopes, float(predicted))

    def plot(self) -> ScalingDisplay:
        """One log-log panel per varied quantity: each method's measured points (dots, its fitted slope in the
        legend, or in the title for one method) and a line of the predicted slope through the first method's first
        point (dashed)."""
        names = list(next(iter(self.tables.values())))
        figure, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.4), layout="constrained", squeeze=False)
        several = len(self.tables) > 1
        for ax, name in zip(axes[0], names):
            for index, (method, named) in enumerate(self.tables.items()):
                table = named[name]
                x, y = table.index.to_numpy(dtype=float), table[self.column].to_numpy(dtype=float)
                label = f"{method} (slope {self.slopes.loc[method, name]:.2f})" if several else method
                style = run_style(index, len(self.tables), len(x)) if several else {"marker": "o"}
                ax.loglog(x, y, label=label, **style)
                if index == 0:
                    ax.loglog(x, y[0] * (x / x[0]) ** self.predicted, "--", color="grey",
                              label=f"slope {self.predicted:g}")
            x = next(iter(self.tables.values()))[name].index.to_numpy(dtype=float)
            ax.set_xticks(x, [f"{value:g}" for value in x])  # the measured points, no crowded minor labels
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel(name)
            ax.set_ylabel(self.column)
            if not several:
                ax.set_title(f"fitted slope {self.slopes.iloc[0][name]:.2f}", fontsize="medium")
            ax.grid(alpha=0.3, which="both")
        axes[0][0].legend(fontsize="small")
        self.figure_ = figure
        return self


ACCURACY_LABEL = "test accuracy (%), mean of the last 4 evaluations and the seeds"


@dataclass
class TuningDisplay:
    """A learning-rate ``grid`` (rows: server learning rates, largest on top; columns: client learning rates, as
    :func:`fedcore.experiments.fedopt.tuning.tuning_grid` pivots out of a tuning table) and the mask of its
    good cells: at least ``threshold`` (:func:`fedcore.experiments.fedopt.tuning.good_threshold`, one for every
    method)."""

    grid: pd.DataFrame
    threshold: float
    good: np.ndarray
    ax_: Axes | None = field(default=None, repr=False)

    @classmethod
    def from_grid(cls, grid: pd.DataFrame, threshold: float) -> TuningDisplay:
        if not isinstance(grid, pd.DataFrame):
            raise TypeError(f"grid={type(grid).__name__} must be a DataFrame (tuning_grid's table)")
        threshold = check_number("threshold", threshold)
        return cls(grid, threshold, is_good(grid, threshold).to_numpy())

    def plot(self, ax: Axes | None = None, title: str = "", limits: tuple[float, float] | None = None,
             chosen: tuple[float, float] | None = None, colorbar: bool = True,
             fontsize: str | float = "small") -> TuningDisplay:
        """The heat map in accuracy points (:func:`fedcore.plots.grid_heatmap`; colour range ``limits``, as
        fractions: one for several grids, whose colour bar the caller draws with ``colorbar=False``; the cells'
        numbers at ``fontsize``) with the good cells outlined in red and the cell ``chosen = (client_lr,
        server_lr)`` in black."""
        low_high = None if limits is None else (100 * limits[0], 100 * limits[1])
        ax = grid_heatmap(100 * self.grid, ax, ACCURACY_LABEL, outline=self.good, fmt="{:.1f}",
                          origin="upper", limits=low_high, colorbar=colorbar, fontsize=fontsize)
        if chosen is not None:
            row, column = list(self.grid.index).index(chosen[1]), list(self.grid.columns).index(chosen[0])
            ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
        ax.set_xlabel("client learning rate")
        ax.set_ylabel("server learning rate")
        ax.set_title(title, fontsize="medium")
        self.ax_ = ax
        return self


def grid_limits(grids: Mapping[str, pd.DataFrame]) -> tuple[float, float]:
    """``(lowest, highest)`` cell over every grid of ``grids``: one colour scale for all (diverged cells left out)."""
    if not isinstance(grids, Mapping) or not grids or \
            not all(isinstance(grid, pd.DataFrame) for grid in grids.values()):
        raise TypeError(f"grids={grids!r} must be a non-empty {{method: grid}} of tuning_grid's tables")
    return (min(float(grid.min().min()) for grid in grids.values()),
            max(float(grid.max().max()) for grid in grids.values()))


def tuning_heatmaps(grids: Mapping[str, pd.DataFrame], threshold: float) -> Figure:
    """One heat map per method of ``grids`` (:class:`TuningDisplay`, the cells at or above ``threshold``
    outlined), side by side on one colour scale (:func:`grid_limits`) with one colour bar: Figures 2 and 6 as we
    ran them."""
    limits = grid_limits(grids)
    figure, axes = plt.subplots(1, len(grids), figsize=(4.4 * len(grids), 4.2), layout="constrained", squeeze=False)
    for ax, (method, grid) in zip(axes[0], grids.items()):
        TuningDisplay.from_grid(grid, threshold).plot(ax, title=method, limits=limits, colorbar=False)
    figure.colorbar(axes[0][0].images[0], ax=list(axes[0]), label=ACCURACY_LABEL, shrink=0.9)
    return figure


def tuning_panels(grid: pd.DataFrame, history: History, client_lr: float, server_lr: float, method: str,
                  threshold: float, limits: tuple[float, float] | None = None) -> Figure:
    """The tuning explorer's figure: the grid (:class:`TuningDisplay`, the cells at or above ``threshold``
    outlined in red, colour range ``limits``) with the cell ``(client_lr, server_lr)`` outlined in black, and that
    run's test accuracy against rounds."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    # the explorer's figure is shown at the notebook's width: the heat map gets the larger panel and its numbers
    # the body text's size, so that they stay readable there (they were about 6 px at (11, 4) and "small")
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5), layout="constrained", width_ratios=(1.4, 1))
    TuningDisplay.from_grid(grid, threshold).plot(left, f"{method}: mean accuracy of the last evaluations", limits,
                                                  chosen=(client_lr, server_lr), fontsize="large")
    history.plot("test_accuracy", ax=right, label=f"client lr {client_lr:.3g}, server lr {server_lr:.3g}")
    right.set_ylim(0, 1)
    right.grid(alpha=0.3)
    right.legend(fontsize="small")
    return figure
