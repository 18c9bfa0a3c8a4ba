"""The figures of FAFED's experiment over seeds, in the compute-then-draw style of scikit-learn's Displays:
``Display.from_...(results)`` computes what the figure shows (and keeps it on the object, to read or test), then
``.plot(...)`` draws it and keeps the ``figure_`` and ``axes_``.

- :class:`CurvesDisplay`, :class:`ScoresDisplay`: curves and scores over seeds, shared by every paper
  (:mod:`fedcore.experiments.figures`, imported here for notebook 04);
- :func:`plot_counterexample`, :func:`counterexample_panels`: runs on the divergence counterexample
  (:func:`fedcore.counterexample.run`); :func:`distance_map`: where runs end over step sizes and periods.
"""

from __future__ import annotations

__all__ = ["CurvesDisplay", "ScoresDisplay", "counterexample_panels", "distance_map", "plot_counterexample"]


import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from fedcore.checks import check_bool, check_number
from fedcore.experiments.figures import CurvesDisplay, ScoresDisplay
from fedcore.plots import check_type, grid_heatmap
from fedcore.results import Trajectory


def plot_counterexample(trajectory: Trajectory, ax: Axes | None = None, color: str = "C0",
                        clients: bool = True) -> Axes:
    """The mean model (solid) and, when ``clients``, each client's model (thin; client 1 dotted) of a
    :class:`fedcore.results.Trajectory` against local steps; averaging steps marked."""
    check_type("trajectory", trajectory, "Trajectory")
    check_type("ax", ax, Axes, optional=True)
    check_bool("clients", clients)
    ax = ax if ax is not None else plt.subplots(figsize=(6, 4))[1]
    frame = trajectory.frame
    if clients:
        columns = [column for column in frame.columns if column.startswith("client ")]
        for column, style in zip(columns, (":", "--", "--")):
            ax.plot(frame.index, frame[column], color=color, linestyle=style, linewidth=0.8, alpha=0.6)
    ax.plot(frame.index, frame["mean"], color=color, linewidth=2, label=trajectory.algorithm)
    server = trajectory.server
    if trajectory.local_steps > 1 and len(server) <= 60:
        ax.plot(server.index, server, "o", color=color, markersize=3)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("local step $t$")
    ax.set_ylabel("$x$")
    ax.grid(alpha=0.3)
    return ax


def counterexample_panels(naive: Trajectory, fixed: Trajectory, eta: float, beta: float) -> Figure:
    """Two panels comparing two runs on the counterexample (the explorer's figure).

    Left: the mean and the clients' models of ``naive`` (red) and ``fixed`` (blue)
    (:func:`plot_counterexample`).  Right: the global objective ``f`` at the mean.  The title
    gives ``eta``, ``beta``, the period ``q`` (``naive.local_steps``) and where each run ends.
    """
    check_type("naive", naive, "Trajectory")
    check_type("fixed", fixed, "Trajectory")
    check_number("eta", eta)
    check_number("beta", beta)
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    plot_counterexample(naive, left, "C3")
    plot_counterexample(fixed, left, "C0")
    left.legend(fontsize="small")
    for trajectory, color in ((naive, "C3"), (fixed, "C0")):
        right.plot(trajectory.frame.index, trajectory.frame["f"], color=color, label=trajectory.algorithm)
    right.set_yscale("symlog", linthresh=1e-2)
    right.set_xlabel("local step $t$")
    right.set_ylabel("$f(\\bar x_t)$")
    right.grid(alpha=0.3)
    right.legend(fontsize="small")
    figure.suptitle(f"eta={eta:g}, beta={beta:g}, q={naive.local_steps}: naive ends at x = {naive.final():.3g}, "
                    f"FAFED at x = {fixed.final():.3g} (optimum 0)", fontsize="medium")
    return figure




def distance_map(table: pd.DataFrame, ax: Axes | None = None, start: float = 10.0) -> Axes:
    """A table of final distances (rows: step sizes ``eta``, columns: periods ``q``, as
    :func:`fedcore.counterexample.final_distance_map` returns) as a heat map on a log colour scale, each
    cell printed; cells that end above ``start`` (farther from 0 than the run began) are outlined."""
    check_number("start", start)
    ax = grid_heatmap(table, ax, "final |x|", log=True, outline=table.to_numpy(dtype=float) > start)
    ax.set_xlabel(f"averaging period {table.columns.name or 'q'}")
    ax.set_ylabel(f"step size {table.index.name or 'eta'}")
    return ax
