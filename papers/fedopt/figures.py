"""Notebook 01's figures (Reddi et al., ICLR 2021) as Displays: ``from_...`` computes, ``plot`` draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import NullFormatter

from fedcore import plots
from fedcore.checks import check_number
from fedcore.results import History
from papers.common import Results, window_score
from papers.fedopt.paper import PAPER_TASKS, TABLE1_METRIC
from papers.fedopt.theory import PREDICTED_EXPONENT, fitted_exponent, largest_constant_below
from papers.fedopt.tuning import good_threshold, is_good
from papers.figures import CurvesDisplay, panels


@dataclass
class ScalingDisplay:
    """The corollaries' rate: ``tables[method][varied]`` of the measured ``column``, the fitted log-log ``slopes``
    (methods by varied quantity) and the ``predicted`` one."""

    tables: dict[str, dict[str, pd.DataFrame]]
    column: str
    slopes: pd.DataFrame
    predicted: float
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, Mapping[str, pd.DataFrame]], column: str = "mean squared gradient norm",
                    predicted: float = PREDICTED_EXPONENT) -> ScalingDisplay:
        if not isinstance(tables, Mapping) or not tables:
            raise TypeError(f"tables={tables!r} must be a non-empty {{method: {{name: DataFrame}}}}")
        slopes = pd.DataFrame({method: {name: fitted_exponent(table, column) for name, table in named.items()}
                               for method, named in tables.items()}).T
        return cls({method: dict(named) for method, named in tables.items()}, column, slopes,
                   float(check_number("predicted", predicted)))

    def plot(self) -> ScalingDisplay:
        names = list(next(iter(self.tables.values())))
        axes = panels(len(names), 4, 3.4)[0]
        for ax, name in zip(axes, names):
            for index, (method, named) in enumerate(self.tables.items()):
                x, y = named[name].index.to_numpy(dtype=float), named[name][self.column].to_numpy(dtype=float)
                ax.loglog(x, y, label=f"{method} (slope {self.slopes.loc[method, name]:.2f})",
                          **plots.run_style(index, len(self.tables), len(x)))
                if index == 0:
                    ax.loglog(x, y[0] * (x / x[0]) ** self.predicted, "--", color="grey",
                              label=f"slope {self.predicted:g}")
            x = next(iter(self.tables.values()))[name].index.to_numpy(dtype=float)
            ax.set_xticks(x, [f"{value:g}" for value in x])  # the measured points, no crowded minor labels
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set(xlabel=name, ylabel=self.column)
            ax.grid(alpha=0.3, which="both")
        axes[0].legend(fontsize="small")
        self.figure_ = axes[0].figure
        return self


@dataclass
class TradeoffDisplay:
    """The rates' trade-off: per panel a table of ``theory.rate_tradeoff``, each level's fitted ``slopes`` in the
    client constant and the largest constant that ``reach`` es ``target``."""

    tables: dict[str, pd.DataFrame]
    slopes: pd.DataFrame
    reach: pd.DataFrame
    target: float
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_tables(cls, tables: Mapping[str, pd.DataFrame], target: float = 1e-3) -> TradeoffDisplay:
        slopes = pd.DataFrame({name: {level: fitted_exponent(table, level) for level in table}
                               for name, table in tables.items()}).T
        reach = pd.DataFrame({name: largest_constant_below(table, target) for name, table in tables.items()}).T
        return cls(dict(tables), slopes, reach, target)

    def plot(self) -> TradeoffDisplay:
        axes = panels(len(self.tables), 5.5, 3.6, sharey=True)[0]
        for ax, (name, table) in zip(axes, self.tables.items()):
            table.plot(ax=ax, logx=True, logy=True, marker="o", title=name, ylabel="final squared gradient norm")
            ax.grid(alpha=0.3, which="both")
        self.figure_ = axes[0].figure
        return self


@dataclass
class VariantsDisplay:
    """The readings of "FedAdam": ``runs[variant][method]`` and their ``scores`` (methods by variants, the test
    accuracy in % of the last 4 evaluations)."""

    runs: dict[str, dict[str, History]]
    scores: pd.DataFrame
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_runs(cls, runs: Mapping[str, Mapping[str, History]]) -> VariantsDisplay:
        return cls({variant: dict(by_method) for variant, by_method in runs.items()},
                   pd.DataFrame({variant: {method: 100 * window_score(history, "test_accuracy")
                                           for method, history in by_method.items()}
                                 for variant, by_method in runs.items()}))

    def plot(self) -> VariantsDisplay:
        axes = panels(len(self.scores), 14 / 3, 3.8, sharey=True, dpi=64)[0]
        for ax, method in zip(axes, self.scores.index):
            plots.compare({variant: runs[method] for variant, runs in self.runs.items() if method in runs},
                          "test_accuracy", ax=ax)
            ax.set_title(method)
        self.figure_ = axes[0].figure
        return self


@dataclass
class Table1CurvesDisplay:
    """Table 1's runs in its units: per task a ``CurvesDisplay`` from the first evaluation on, and its baseline."""

    curves: dict[str, CurvesDisplay]
    baselines: dict[str, float]
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_results(cls, results: Results) -> Table1CurvesDisplay:
        tasks = results.tasks
        return cls({name: CurvesDisplay.from_results({PAPER_TASKS[name]["name"]: runs}, tasks[name].metric,
                                                     scale=tasks[name].unit, start=tasks[name].settings["eval_every"])
                    for name, runs in results.items()}, {name: tasks[name].baseline for name in results})

    def plot(self) -> Table1CurvesDisplay:
        axes = panels(len(self.curves), 5, 3.6, dpi=64)[0]
        for ax, (name, curves) in zip(axes, self.curves.items()):
            curves.plot([ax], logy=curves.metric == "test_loss", legend=ax is axes[-1], label=TABLE1_METRIC[name])
            ax.axhline(self.baselines[name], color="grey", linestyle="--", label="trivial baseline")
        self.figure_ = axes[0].figure
        return self


ACCURACY_LABEL = "test accuracy (%), mean of the last 4 evaluations and the seeds"


@dataclass
class TuningDisplay:
    """A heat map of ``tuning.heatmaps`` and the mask of its ``good`` cells (at least ``threshold``)."""

    grid: pd.DataFrame
    threshold: float
    good: np.ndarray
    ax_: Axes | None = field(default=None, repr=False)

    @classmethod
    def from_grid(cls, grid: pd.DataFrame, threshold: float) -> TuningDisplay:
        if not isinstance(grid, pd.DataFrame):
            raise TypeError(f"grid={type(grid).__name__} must be a DataFrame (a heat map of tuning.heatmaps)")
        threshold = check_number("threshold", threshold)
        return cls(grid, threshold, is_good(grid, threshold).to_numpy())

    def plot(self, ax: Axes | None = None, title: str = "", limits: tuple[float, float] | None = None,
             chosen: tuple[float, float] | None = None, colorbar: bool = True,
             fontsize: str | float = "small") -> TuningDisplay:
        """In accuracy points (``limits``: fractions), good cells in red, ``chosen`` (client, server lr) in black."""
        low_high = None if limits is None else (100 * limits[0], 100 * limits[1])
        ax = plots.grid_heatmap(100 * self.grid, ax, ACCURACY_LABEL, outline=self.good, fmt="{:.1f}",
                                origin="upper", limits=low_high, colorbar=colorbar, fontsize=fontsize)
        if chosen is not None:
            row, column = list(self.grid.index).index(chosen[1]), list(self.grid.columns).index(chosen[0])
            ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.5))
        ax.set(xlabel="client learning rate", ylabel="server learning rate")
        ax.set_title(title, fontsize="medium")
        self.ax_ = ax
        return self


@dataclass
class HeatmapsDisplay:
    """Figures 2 and 6 as we ran them: each method's heat map (``grids``: ``tuning.heatmaps``), the one ``threshold``
    of a good cell and the colour range of all (``limits``: diverged cells left out)."""

    grids: dict[str, pd.DataFrame]
    threshold: float
    limits: tuple[float, float]
    figure_: Figure | None = field(default=None, repr=False)

    @classmethod
    def from_grids(cls, grids: Mapping[str, pd.DataFrame]) -> HeatmapsDisplay:
        if not isinstance(grids, Mapping) or not grids or not all(isinstance(g, pd.DataFrame) for g in grids.values()):
            raise TypeError(f"grids={grids!r} must be a non-empty {{method: heat map}}")
        limits = min(float(g.min().min()) for g in grids.values()), max(float(g.max().max()) for g in grids.values())
        return cls(dict(grids), good_threshold(grids), limits)

    def plot(self) -> HeatmapsDisplay:
        axes = panels(len(self.grids), 4.4, 4.2)[0]
        for ax, (method, grid) in zip(axes, self.grids.items()):
            TuningDisplay.from_grid(grid, self.threshold).plot(ax, title=method, limits=self.limits, colorbar=False)
        axes[0].figure.colorbar(axes[0].images[0], ax=axes, label=ACCURACY_LABEL, shrink=0.9)
        self.figure_ = axes[0].figure
        return self


def tuning_panels(grid: pd.DataFrame, history: History, client_lr: float, server_lr: float, method: str,
                  threshold: float, limits: tuple[float, float] | None = None) -> Figure:
    """The tuning explorer's figure: the grid (:class:`TuningDisplay`) with the cell ``(client_lr, server_lr)`` in
    black, beside that run's test accuracy against rounds."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    left, right = panels(2, 6, 5, width_ratios=(1.4, 1))[0]  # the heat map the larger panel, at the notebook's width
    TuningDisplay.from_grid(grid, threshold).plot(left, f"{method}: mean accuracy of the last evaluations", limits,
                                                  chosen=(client_lr, server_lr), fontsize="large")
    history.plot("test_accuracy", ax=right, label=f"client lr {client_lr:.3g}, server lr {server_lr:.3g}")
    right.set_ylim(0, 1)
    right.grid(alpha=0.3)
    right.legend(fontsize="small")
    return left.figure
