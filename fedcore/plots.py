"""The figures the notebooks share: drawing only (matplotlib), they compute nothing.

Each function takes what was computed elsewhere (a History, a path, a trajectory) and returns
its Axes or Figure, showing nothing; :mod:`fedcore.explore` computes and then calls these.

- :func:`label_distribution`: how a partition deals the labels out (stacked bars per client);
- :func:`compare`: one metric of several runs against communication rounds;
- :func:`plot_server_path`: a server optimizer's path over the loss contours of the 2-D
  federated quadratic (:func:`fedcore.toy.server_optimizer_path`);
- :func:`server_optimizer_panels`: that path beside its loss gap against rounds;
- :func:`fedopt_panels`: the explorers' accuracy and loss panels of several runs;
- :func:`grid_heatmap`: a table of a grid of runs, every cell printed, given cells outlined;
- :func:`robustness`: a score against a learning rate per method, given points filled;
- :func:`savefig`: write a figure into a folder when one is given.

Each paper's own figures live in its package beside the notebooks (``papers/<paper>/figures.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import FigureCanvasBase
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter

from fedcore.checks import check_bool, check_int, check_number

if TYPE_CHECKING:  # annotations only: this module draws and imports nothing that computes
    from fedcore.data.federated import FederatedData
    from fedcore.results import History
    from fedcore.toy import ServerPath


def check_type(name: str, value: Any, kind: type | str, optional: bool = False) -> None:
    """``value`` must be a ``kind`` (or None when ``optional``): ``path=None must be a ServerPath``.  A fedcore
    class is given by its name and matched against the names of ``value``'s classes: plots imports no module
    that computes."""
    if optional and value is None:
        return
    if isinstance(kind, str):
        if kind in {cls.__name__ for cls in type(value).__mro__}:
            return
    elif isinstance(value, kind):
        return
    shown = repr(value) if len(repr(value)) <= 60 else f"<{type(value).__name__}>"
    expected = kind if isinstance(kind, str) else kind.__name__
    article = "an" if expected[0] in "AEIOU" else "a"
    raise TypeError(f"{name}={shown} must be {article} {expected}{' or None' if optional else ''}, "
                    f"got {type(value).__name__}")


def label_distribution(data: FederatedData, ax: Axes | None = None, max_clients: int = 50) -> Axes:
    """Stacked bars of ``data.label_counts()``: one bar per client, one colour per label.

    Only the first ``max_clients`` clients are drawn (the title says so when that cuts).
    """
    check_type("data", data, "FederatedData")
    check_type("ax", ax, Axes, optional=True)
    check_int("max_clients", max_clients)
    counts = data.label_counts().cpu().numpy()
    shown = counts[:max_clients]
    names = data.info.get("class_names") or [str(c) for c in range(counts.shape[1])]
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.3 * len(shown) + 3), 3.5))
    colours = plt.get_cmap("tab10" if counts.shape[1] <= 10 else "tab20")
    bottom = np.zeros(len(shown))
    for c, name in enumerate(names):
        ax.bar(np.arange(len(shown)), shown[:, c], bottom=bottom, width=0.85, label=name,
               color=colours(c % colours.N))
        bottom += shown[:, c]
    ax.set_xlabel("client")
    ax.set_ylabel("training samples")
    ax.set_xlim(-0.6, len(shown) - 0.4)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    title = f"{data.name}: labels per client"
    if data.info.get("partition"):
        options = ", ".join(f"{k}={v}" for k, v in (data.info.get("partition_kwargs") or {}).items())
        title += f" ({data.info['partition']}{f'({options})' if options else ''})"
    if len(shown) < len(counts):
        title += f", first {len(shown)} of {len(counts)} clients"
    ax.set_title(title)
    if len(names) <= 20:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1, 1, 1)), (0, (1, 1)))
MARKERS = ("o", "s", "^", "v", "D", "x")


def run_style(index: int, runs: int, points: int) -> dict[str, Any]:
    """The line style of the ``index``-th of ``runs`` runs with ``points`` points: its own colour, line style and
    marker, a few markers per line, each run's shifted so that coinciding runs stay visible."""
    every = max(1, points // 8)
    return dict(color=f"C{index % 10}", linestyle=LINE_STYLES[index % 6], marker=MARKERS[index % 6],
                markevery=(index * every // max(1, runs), every), markersize=4)


def plain_log_scale(ax: Axes) -> None:
    """A log y axis labelled 0.6, 2, 3 rather than 6x10^-1, 2x10^0, 3x10^0."""
    ax.set_yscale("log")
    plain = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)


def labelled_ticks(axis: Any) -> int:
    """How many distinct tick labels ``axis`` (an ``ax.xaxis`` or ``ax.yaxis``) shows within its view, major and
    minor, as its locators and formatters give them now."""
    low, high = sorted(axis.get_view_interval())
    slack = 1e-9 * max(abs(low), abs(high), 1e-300)
    labels = set()
    for locator, formatter in ((axis.get_major_locator(), axis.get_major_formatter()),
                               (axis.get_minor_locator(), axis.get_minor_formatter())):
        locations = [value for value in locator() if low - slack <= value <= high + slack]
        labels |= {label for label in formatter.format_ticks(locations) if label.strip()}
    return len(labels)


def ensure_labelled_ticks(figure: Figure, minimum: int = 2) -> Figure:
    """At least ``minimum`` labelled ticks on every axis of ``figure`` that shows tick labels: an axis whose locator
    labels fewer within its view (a log or symlog axis spanning less than a decade, a narrow range) gets
    ``minimum + 1`` ticks spread over its view (evenly, geometrically on a log axis), labelled with three significant
    digits.  Call it when the figure is drawn (the explorers do), after the limits are set.  Returns ``figure``."""
    check_int("minimum", minimum, low=1)
    for ax in figure.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        for axis in (ax.xaxis, ax.yaxis):
            params = axis.get_tick_params()
            sides = ("labelbottom", "labeltop") if axis is ax.xaxis else ("labelleft", "labelright")
            if not (params.get(sides[0], True) or params.get(sides[1], False)) or \
                    len(axis.get_major_locator()()) == 0:
                continue  # no tick labels on purpose (a shared axis; set_ticks([]), a colour bar's short side)
            if labelled_ticks(axis) >= minimum:
                continue
            low, high = sorted(axis.get_view_interval())
            spread = np.geomspace(low, high, minimum + 1) if axis.get_scale() == "log" and low > 0 else \
                np.linspace(low, high, minimum + 1)
            axis.set_major_locator(FixedLocator(spread))
            axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.3g}"))
            axis.set_minor_formatter(NullFormatter())
    return figure


def compare(
    histories: Mapping[str, History] | Sequence[History], metric: str = "test_accuracy",
    ax: Axes | None = None, logy: bool = False, legend: bool = True, smooth: int = 1,
) -> Axes:
    """``metric`` of several runs against communication rounds on one Axes.

    ``histories`` is ``{label: History}`` or a list (labelled by each run's algorithm).  Each run has its
    own colour, line style and marker (a few per line, at shifted rounds), so runs that coincide stay
    visible; ``legend=False`` leaves the legend to the caller (one per figure:
    ``figure.legend(*ax.get_legend_handles_labels())``); ``smooth`` > 1 draws each run's running mean over that
    many recorded values (``History.plot``).
    """
    if isinstance(histories, (str, bytes)) or not isinstance(histories, (Mapping, Sequence)):
        raise TypeError(f"histories={histories!r} must be {{label: History}} or a list of History, "
                        f"got {type(histories).__name__}")
    for key, history in histories.items() if isinstance(histories, Mapping) else enumerate(histories):
        check_type(f"histories[{key!r}]", history, "History")
    check_type("ax", ax, Axes, optional=True)
    check_bool("logy", logy)
    check_bool("legend", legend)
    items = list(histories.items()) if isinstance(histories, Mapping) else [(h.algorithm, h) for h in histories]
    if not items:
        raise ValueError("histories is empty: nothing to compare")
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    for index, (label, history) in enumerate(items):
        points = history.frame[metric].notna().sum() if metric in history.frame else 1
        history.plot(metric, ax=ax, label=label, smooth=smooth, **run_style(index, len(items), points))
    if logy:
        plain_log_scale(ax)
    if legend:
        ax.legend(fontsize="small")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    ax.grid(alpha=0.3)
    return ax


def plot_server_path(
    path: ServerPath, ax: Axes | None = None, contours: bool = True, label: str | None = None,
    color: str | None = None,
) -> Axes:
    """The server models ``x_0, x_1, ...`` of ``path`` over the contours of ``f(x) - f*``.

    The window is a square around ``x*`` reaching 1.5 times as far as the start, so it
    stays put while a widget changes the optimizer.  Log-spaced contour levels; the
    optimum is a black star (drawn on top), the start a large dot.  ``contours=False`` overlays a
    second path on an existing plot.
    """
    check_type("path", path, "ServerPath")
    check_type("ax", ax, Axes, optional=True)
    check_bool("contours", contours)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    x_star = path.x_star.numpy()
    reach = 1.5 * float(np.abs(np.asarray(path.start) - x_star).max())
    low, high = x_star - reach, x_star + reach
    if contours:
        grid1, grid2 = np.meshgrid(np.linspace(low[0], high[0], 201), np.linspace(low[1], high[1], 201))
        gap = path.loss_gap(grid1, grid2)
        levels = np.geomspace(max(gap.max() * 1e-3, 1e-12), gap.max(), 10)
        ax.contour(grid1, grid2, gap, levels=levels, colors="0.7", linewidths=0.7)
        ax.plot(*x_star, marker="*", color="black", markeredgecolor="white", markersize=14, linestyle="none",
                label="$x^*$", zorder=5)
    frame = path.frame
    line, = ax.plot(frame["x1"], frame["x2"], marker="o", markersize=2.5, linewidth=1.2,
                    color=color, label=label or path.optimizer)
    ax.plot(frame["x1"].iloc[0], frame["x2"].iloc[0], marker="o", markersize=7, color=line.get_color())
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_aspect("equal")
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    return ax


def server_optimizer_panels(path: ServerPath, reference: ServerPath | None = None,
                            label: str | None = None) -> Figure:
    """Two panels for a server optimizer's ``path`` on the 2-D quadratic (the explorer's figure).

    Left: the path over the loss contours (:func:`plot_server_path`, labelled ``label`` or the
    optimizer's name).  Right: ``f(x_t) - f*`` against rounds, with ``reference`` (FedAvg's path)
    dashed grey when given.  The title gives the final gap, or the round the path diverged at.
    """
    check_type("path", path, "ServerPath")
    check_type("reference", reference, "ServerPath", optional=True)
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    plot_server_path(path, left, label=label, color="C1")
    left.legend(fontsize="small", loc="lower right")
    if reference is not None:
        right.plot(reference.frame.index, reference.frame["loss_gap"], color="grey", linestyle="--",
                   label=f"FedAvg: {reference.optimizer}")
    right.plot(path.frame.index, path.frame["loss_gap"], color="C1", label=path.optimizer)
    right.set_yscale("log")
    right.set_xlabel("communication round $t$")
    right.set_ylabel("$f(x_t) - f^*$")
    right.grid(alpha=0.3)
    right.legend(fontsize="small")
    rounds = int(path.frame.index[-1])  # round 0 is the start
    ending = f"diverged at round {path.diverged_round}" if path.diverged_round else f"after {rounds} rounds"
    figure.suptitle(f"{path.optimizer}: f(x) - f* = {path.final_gap():.3g} {ending}", fontsize="medium")
    return figure


def fedopt_panels(runs: Mapping[str, History], title: str = "", smooth: int = 1, percent: bool = False) -> Figure:
    """The explorers' figure: test accuracy (in % with ``percent``, as a notebook's tables give it) and training loss
    (log scale; with ``smooth`` > 1 its running mean over that many rounds, since one round's loss is that round's
    few clients') of ``runs`` against rounds, ``title`` above, one legend to the right of both panels with each
    run's final test accuracy."""
    if not isinstance(runs, Mapping) or not runs:
        raise TypeError(f"runs={runs!r} must be a non-empty {{label: History}}")
    figure, (left, right) = plt.subplots(1, 2, figsize=(11.5, 3.8), layout="constrained")
    check_bool("percent", percent)
    final = "{:.1%}" if percent else "{:.3f}"
    labelled = {f"{label}: {final.format(history.final('test_accuracy'))}" if "test_accuracy" in history.frame else
                label: history for label, history in runs.items()}
    compare(labelled, "test_accuracy", ax=left, legend=False)
    if percent:
        left.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:g}"))
        left.set_ylabel("test accuracy (%)")
    compare(labelled, "train_loss", ax=right, logy=True, legend=False, smooth=smooth)
    figure.legend(*left.get_legend_handles_labels(), loc="outside right center", fontsize="small",
                  title="final test accuracy", title_fontsize="small")
    figure.suptitle(title, fontsize="medium")
    return figure


def grid_heatmap(table: Any, ax: Axes | None = None, label: str = "", log: bool = False,
                 outline: Any = None, fmt: str = "{:.2g}", origin: str = "lower",
                 limits: tuple[float, float] | None = None, colorbar: bool = True,
                 fontsize: str | float = "x-small") -> Axes:
    """A table (rows x columns of a grid of runs) as a heat map with every cell printed (``fmt``, at
    ``fontsize``), a colour bar named ``label`` (log scale with ``log``; the colour range ``limits``, default the
    table's own; ``colorbar=False`` leaves it to the caller, e.g. one for several maps on one range), and the
    cells where the boolean table ``outline`` is True outlined in red.  NaN cells (diverged runs) are blank and
    print ``nan``; numeric axis labels have two significant digits."""
    import pandas as pd
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle

    check_type("table", table, pd.DataFrame)
    check_type("ax", ax, Axes, optional=True)
    check_bool("log", log)
    ax = ax if ax is not None else plt.subplots(figsize=(6, 3.8), layout="constrained")[1]
    values = table.to_numpy(dtype=float)
    finite = values[np.isfinite(values)]
    low, high = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    if limits is not None:
        low, high = (check_number("limits[0]", limits[0]), check_number("limits[1]", limits[1]))
    norm = None
    if log:
        low = max(finite[finite > 0].min() if (finite > 0).any() else 1e-3, 1e-3)
        norm, values = LogNorm(low, max(high, low * 10)), np.where(np.isfinite(values), np.clip(values, low, None),
                                                                  values)
    image = ax.imshow(values, cmap="viridis", norm=norm, aspect="auto", origin=origin,
                      **({} if log else {"vmin": low, "vmax": high}))
    middle = np.sqrt(low * max(high, low)) if log else (low + high) / 2
    marked = np.zeros(values.shape, bool) if outline is None else np.asarray(outline, bool)
    for (row, column), value in np.ndenumerate(table.to_numpy(dtype=float)):
        ax.text(column, row, fmt.format(value), ha="center", va="center", fontsize=fontsize,
                color="white" if not value >= middle else "black")
        if marked[row, column]:
            ax.add_patch(Rectangle((column - 0.5, row - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
    ax.set_xticks(range(len(table.columns)), [f"{c:.2g}" if isinstance(c, float) else str(c) for c in table.columns])
    ax.set_yticks(range(len(table.index)), [f"{r:.2g}" if isinstance(r, float) else str(r) for r in table.index])
    ax.set_xlabel(str(table.columns.name or ""))
    ax.set_ylabel(str(table.index.name or ""))
    if check_bool("colorbar", colorbar):
        ax.figure.colorbar(image, ax=ax, label=label)
    return ax


def robustness(table: Any, good: Any = None, ax: Axes | None = None, title: str = "", legend: bool = True,
               xlabel: str = "learning-rate multiplier",
               ylabel: str = "test accuracy (last fifth of the rounds)", order: Sequence[str] | None = None) -> Axes:
    """Score against a learning rate or its multiplier (log axis), one line per method (``table``: rows the
    rates, columns the methods); where the boolean table ``good`` (same shape, e.g. the rates within a tolerance
    of each method's best) is True the point is drawn
    filled, elsewhere hollow (all filled without ``good``); where a run diverged the line stops.  ``legend=False``
    leaves the legend to the caller (one per figure).  ``order`` fixes each method's colour, line style and marker
    by its place in it (the same method looks the same in every figure), else by its column."""
    import pandas as pd

    check_type("table", table, pd.DataFrame)
    check_type("ax", ax, Axes, optional=True)
    good = np.ones(table.shape, bool) if good is None else np.asarray(good, bool)
    if good.shape != table.shape:
        raise ValueError(f"good has shape {good.shape}, table {table.shape}: one flag per point")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.8))
    x = table.index.to_numpy(dtype=float)
    for column, method in enumerate(table):
        y, filled = table[method].to_numpy(dtype=float), good[:, column]
        index = list(order).index(method) if order is not None and method in order else column
        color, style, marker = f"C{index % 10}", LINE_STYLES[index % 6], MARKERS[index % 6]
        ax.plot(x, y, color=color, linestyle=style, marker=marker, markersize=0, label=method)
        ax.plot(x[filled], y[filled], marker, color=color)
        ax.plot(x[~filled], y[~filled], marker, color=color, markerfacecolor="none")
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    ax.grid(alpha=0.3, which="both")
    if legend:
        ax.legend(*legend_handles(ax), fontsize="small")
    return ax


def legend_handles(ax: Axes) -> tuple[list[Any], list[str]]:
    """``(handles, labels)`` of ``ax``'s labelled lines, each drawn with its colour, line style and marker (a line
    drawn without visible markers, as :func:`robustness`'s, still shows its marker in the legend)."""
    from matplotlib.lines import Line2D

    lines = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    handles = [Line2D([], [], color=line.get_color(), linestyle=line.get_linestyle(), marker=line.get_marker())
               for line in lines]
    return handles, [line.get_label() for line in lines]


def savefig(figure: Figure, name: str, directory: str | os.PathLike | None) -> None:
    """Save ``figure`` as ``directory/name`` (the folder is made, the path resolved
    absolutely); do nothing when ``directory`` is None or empty.  Returns None, so a
    notebook cell ending with it prints nothing.  The format follows the extension of ``name`` (one
    of :func:`image_formats`; none: PNG)."""
    check_type("figure", figure, Figure)
    if not isinstance(name, str) or not name:
        raise TypeError(f"name={name!r} must be a file name such as 'loss.png'")
    if Path(name).suffix and Path(name).suffix[1:].lower() not in image_formats():
        raise ValueError(f"name={name!r}: unknown image format {Path(name).suffix!r}; use one of {image_formats()}")
    if directory is not None and not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory={directory!r} must be a folder path (str or pathlib.Path) or None, "
                        f"got {type(directory).__name__}")
    if not directory:
        return
    target = Path(directory).expanduser().resolve() / name
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, bbox_inches="tight", dpi=150)


def image_formats() -> list[str]:
    """The file extensions :func:`savefig` writes (matplotlib's: png, pdf, svg, jpg, eps, ...)."""
    return sorted(FigureCanvasBase.get_supported_filetypes())
