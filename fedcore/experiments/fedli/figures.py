"""Notebook 03's figures (FedLi, *Towards Hyper-parameter-free Federated Learning*): drawing what
:mod:`fedcore.experiments.fedli.theory` computed.

- :func:`remark2`: Remark 2 in one picture, each client's step on its own curve and the server's move on the
  global one;
- :func:`descent_panels`: Lemma 3 put to the test (clients that share their data; two different convex clients).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedcore.plots import LINE_STYLES, check_type


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
