"""The figures of notebook 04 (Wu et al., AAAI 2023) as Displays, compute-then-draw as in
:mod:`papers.figures`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from fedcore import comparisons, counterexample
from fedcore.checks import check_number
from fedcore.data import FederatedData
from fedcore.plots import check_type, grid_heatmap, label_distribution
from fedcore.results import Trajectory
from fedcore.store import Store
from papers.figures import panels

COLORS = ("C3", "C0", "C2")  # the counterexample's runs in order: naive red, FAFED blue, FAFED's schedule green
DPI = 72  # the figures' resolution in the notebook (a saved figure takes savefig's own)


def _draw(trajectory: Trajectory, ax: Axes, color: str, clients: bool = True) -> None:
    """The mean model (solid) and, when ``clients``, each client's model (thin; client 1 dotted) of a run on the
    counterexample against local steps; averaging steps marked."""
    frame = trajectory.frame
    if clients:
        for column, style in zip([c for c in frame.columns if c.startswith("client ")], (":", "--", "--")):
            ax.plot(frame.index, frame[column], color=color, linestyle=style, linewidth=0.8, alpha=0.6)
    ax.plot(frame.index, frame["mean"], color=color, linewidth=2, label=trajectory.algorithm)
    if trajectory.local_steps > 1 and len(trajectory.server) <= 60:
        ax.plot(trajectory.server.index, trajectory.server, "o", color=color, markersize=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set(xlabel="local step $t$", ylabel="$x$")
    ax.grid(alpha=0.3)


def counterexample_panels(naive: Trajectory, fixed: Trajectory, eta: float, beta: float) -> Figure:
    """The explorer's figure: :class:`CounterexampleDisplay` of ``naive`` (red) and ``fixed`` (blue), the objective
    on the right, titled with ``eta``, ``beta``, ``q`` and where each run ends."""
    check_type("naive", naive, "Trajectory")
    check_type("fixed", fixed, "Trajectory")
    check_number("eta", eta)
    check_number("beta", beta)
    display = CounterexampleDisplay({naive.algorithm: naive, fixed.algorithm: fixed}, {}, naive.local_steps).plot()
    display.figure_.suptitle(f"eta={eta:g}, beta={beta:g}, q={naive.local_steps}: naive ends at x = "
                             f"{naive.final():.3g}, FAFED at x = {fixed.final():.3g} (optimum 0)", fontsize="medium")
    return display.figure_


@dataclass
class CounterexampleDisplay:
    """Runs on the counterexample from ``x_0 = 10`` (:func:`fedcore.counterexample.run`), ``{label: Trajectory}``:
    ``every_step`` drawn with their clients' models, ``periodic`` (averaging every ``q`` steps) as server models."""

    every_step: dict[str, Trajectory]
    periodic: dict[str, Trajectory]
    q: int
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_algorithms(cls, every_step: Mapping[str, Any], periodic: Mapping[str, Any], steps: int, q: int,
                        store: Store | None = None) -> CounterexampleDisplay:
        """``steps`` local steps of each algorithm of ``every_step`` (``{label: algorithm}``) and of ``periodic``
        (``steps // q`` rounds of ``q`` steps), read from ``store`` where it has them."""
        def runs(algorithms: Mapping[str, Any], rounds: int, local_steps: int) -> dict[str, Trajectory]:
            return {label: replace(counterexample.run(algorithm, rounds, local_steps, store=store), algorithm=label)
                    for label, algorithm in algorithms.items()}
        return cls(runs(every_step, steps, 1), runs(periodic, steps // q, q), q)

    def finals(self) -> pd.DataFrame:
        """Where each periodic run ends: ``x`` after its last averaging and ``f`` there."""
        return pd.DataFrame({label: {"x after the last averaging": run.final(), "f there": run.frame["f"].iloc[-1]}
                             for label, run in self.periodic.items()}).T.astype(float)

    def plot(self, title: str = "") -> CounterexampleDisplay:
        """Left (titled ``title``): the ``every_step`` runs; right: the ``periodic`` runs' server model after each
        averaging, or where there are none, the global objective ``f`` at the mean of the left ones."""
        self.axes_ = [left, right] = list(panels(2, 5.5, 4, dpi=DPI)[0])
        self.figure_ = left.figure
        for trajectory, color in zip(self.every_step.values(), COLORS):
            _draw(trajectory, left, color)
            if not self.periodic:
                right.plot(trajectory.frame.index, trajectory.frame["f"], color=color, label=trajectory.algorithm)
        for trajectory, color in zip(self.periodic.values(), COLORS):
            _draw(trajectory, right, color, clients=False)
        if not self.periodic:
            right.set_yscale("symlog", linthresh=1e-2)
            right.set(xlabel="local step $t$", ylabel="$f(\\bar x_t)$")
            right.grid(alpha=0.3)
        left.set_title(title)
        right.set_title(f"q = {self.q}: the server model after each averaging" if self.periodic else "")
        left.legend()
        right.legend(fontsize="small")
        return self


@dataclass
class DistanceMapDisplay:
    """``distance``: FAFED's final ``|x|`` on the counterexample, rows step sizes ``eta``, columns periods ``q``
    (:func:`fedcore.counterexample.final_distance_map`); cells above ``start`` ended farther from 0 than they began."""

    distance: pd.DataFrame
    start: float = 10.0
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_runs(cls, build: Callable[[float], Any], etas: Sequence[float], periods: Sequence[int], steps: int,
                  store: Store | None = None) -> DistanceMapDisplay:
        return cls(counterexample.final_distance_map(build, etas, periods, steps=steps, store=store))

    def plot(self, title: str = "") -> DistanceMapDisplay:
        """A heat map on a log colour scale, each cell printed, those above ``start`` outlined."""
        ax = grid_heatmap(self.distance, panels(1, 6, 3.8, dpi=DPI)[0, 0], "final |x|", log=True,
                          outline=self.distance.to_numpy(dtype=float) > check_number("start", self.start))
        ax.set(xlabel=f"averaging period {self.distance.columns.name or 'q'}",
               ylabel=f"step size {self.distance.index.name or 'eta'}")
        ax.set_title(title, fontsize="medium")
        self.figure_, self.axes_ = ax.figure, [ax]
        return self

    def summary(self) -> str:
        """What the map shows: the runs that came down near 0, and those that ended above ``start``."""
        cells = self.distance.stack()
        far = "; ".join(f"eta={eta:g}, q={q}" for (eta, q), value in cells.items() if value > self.start)
        return (f"{(cells <= 1).sum()} of {len(cells)} runs end within 1 of the optimum 0 (inside the quadratic piece)"
                f"\n{(cells > self.start).sum()} end farther from 0 than the start x0={self.start:g}: {far or 'none'}")


@dataclass
class LabelsDisplay:
    """How each setting deals the labels out to the clients: ``data[setting]``."""

    data: dict[str, FederatedData]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_tasks(cls, tasks: Mapping[str, Any]) -> LabelsDisplay:
        return cls({name: task.data for name, task in tasks.items()})

    def plot(self) -> LabelsDisplay:
        """One panel per setting (:func:`fedcore.plots.label_distribution`), the legend on the last only."""
        self.axes_ = list(panels(len(self.data), 5, 3.6, dpi=DPI)[0])
        self.figure_ = self.axes_[0].figure
        for ax, (name, data) in zip(self.axes_, self.data.items()):
            label_distribution(data, ax)
            ax.set_title(f"{name}: {ax.get_title()}", fontsize="small")
            if ax is not self.axes_[-1]:
                ax.get_legend().remove()
        return self


@dataclass
class TrackingDisplay:
    """``errors``: STORM's relative tracking error per local step, one column per ``alpha``
    (:func:`~papers.fafed.theory.storm_tracking`)."""

    errors: pd.DataFrame
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    def plot(self, title: str = "") -> TrackingDisplay:
        """One line per ``alpha`` (``alpha = 1``, plain minibatch SGD, dashed), a log y axis."""
        ax = panels(1, 6, 3.6, dpi=DPI)[0, 0]
        for alpha in self.errors.columns:
            label = f"alpha = {alpha:g}" + (" (SGD: the minibatch gradient)" if alpha == 1 else "")
            ax.plot(self.errors.index, self.errors[alpha], "--" if alpha == 1 else "-", label=label)
        ax.set(yscale="log", xlabel=self.errors.index.name, ylabel="||m_t - grad f_i(x_t)|| / ||grad f_i(x_t)||")
        ax.set_title(title, fontsize="medium")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        self.figure_, self.axes_ = ax.figure, [ax]
        return self


@dataclass
class DifferenceDisplay:
    """``differences[panel]``: per setting, a paired difference over seeds (``mean``, and its 95% interval ``95% from``
    ``95% to``), oriented so that positive favours the first method; one panel each."""

    differences: dict[str, pd.DataFrame]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_scores(cls, scores: Mapping[str, tuple[pd.DataFrame, bool, float]], method: str,
                    other: str) -> DifferenceDisplay:
        """``scores``: ``{panel: (table, higher_is_better, scale)}``, each table rows (setting, method) by seeds;
        each panel ``method`` against ``other`` (:func:`fedcore.comparisons.paired`)."""
        differences = {}
        for panel, (table, higher, scale) in scores.items():
            rows = {}
            for setting in dict.fromkeys(table.index.get_level_values(0)):
                pair = comparisons.paired(table.loc[(setting, method)], table.loc[(setting, other)], higher)
                low, high = pair.interval()
                rows[setting] = {"mean": scale * pair.mean, "95% from": scale * low, "95% to": scale * high}
            differences[panel] = pd.DataFrame(rows).T
        return cls(differences)

    def plot(self, title: str = "") -> DifferenceDisplay:
        """Each panel: the settings on the y axis, the mean difference and its interval, a line at 0."""
        self.axes_ = list(panels(len(self.differences), 5, 0.5 + 0.4 * max(map(len, self.differences.values())),
                                 dpi=DPI)[0])
        self.figure_ = self.axes_[0].figure
        for ax, (panel, table) in zip(self.axes_, self.differences.items()):
            y = range(len(table))
            ax.errorbar(table["mean"], y, xerr=[table["mean"] - table["95% from"], table["95% to"] - table["mean"]],
                        fmt="o", capsize=3)
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set(yticks=list(y), yticklabels=list(table.index), xlabel=panel)
            ax.invert_yaxis()
            ax.grid(alpha=0.3, axis="x")
        self.figure_.suptitle(title, fontsize="medium")
        return self


@dataclass
class MapsDisplay:
    """``maps[method]``: a method's final ``|x|`` on the counterexample over ``eta`` (rows) and ``q`` (columns)
    (:func:`~papers.fafed.theory.divergence_maps`), one :class:`DistanceMapDisplay` panel each."""

    maps: dict[str, pd.DataFrame]
    start: float = 10.0
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    def plot(self, title: str = "") -> MapsDisplay:
        """One heat map per method on a shared log colour scale, cells beyond ``start`` outlined."""
        self.axes_ = list(panels(len(self.maps), 4.6, 3.8, dpi=DPI)[0])
        self.figure_ = self.axes_[0].figure
        values = pd.concat(list(self.maps.values())).to_numpy(dtype=float)
        limits = (max(float(values.min()), 1e-6), float(values.max()))
        for ax, (method, table) in zip(self.axes_, self.maps.items()):
            grid_heatmap(table, ax, "final |x|", log=True, outline=table.to_numpy(dtype=float) > self.start,
                         limits=limits, colorbar=ax is self.axes_[-1])
            ax.set(xlabel="averaging period q", ylabel="step size eta")
            ax.set_title(method, fontsize="medium")
        self.figure_.suptitle(title, fontsize="medium")
        return self

    def summary(self) -> str:
        """Per method: the cells that end within 1 of 0, and those farther from 0 than the start."""
        return "\n".join(f"{method}: {DistanceMapDisplay(table, self.start).summary().replace(chr(10), '; ')}"
                         for method, table in self.maps.items())
