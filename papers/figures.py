"""Figures of experiments over seeds, shared by every paper, in the compute-then-draw style of scikit-learn's
Displays: ``Display.from_...(results)`` computes what the figure shows (and keeps it on the object, to read or
test), then ``.plot(...)`` draws it and keeps the ``figure_`` and ``axes_``.

- :class:`CurvesDisplay`: a metric against rounds per method, the mean over seeds with a band of one standard
  deviation, one panel per setting;
- :class:`MetricsDisplay`: several metrics' curves, one row each (a :class:`CurvesDisplay` per metric);
- :class:`ScoresDisplay`: every seed's score as a dot and the mean as a tick, methods by setting: how far apart
  the methods are next to how far one method moves with the seed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from fedcore.plots import plain_log_scale, run_style
from fedcore.results import History


def panels(count: int, width: float, height: float, rows: int = 1, **options: Any) -> np.ndarray:
    """A new figure's grid of ``rows`` x ``count`` panels, each ``width`` x ``height`` inches, laid out constrained
    (``options`` go to ``plt.subplots``: ``sharey``, ``dpi`` ...): the one way a Display makes its figure."""
    return plt.subplots(rows, count, figsize=(width * count, height * rows), layout="constrained", squeeze=False,
                        **options)[1]


@dataclass
class CurvesDisplay:
    """``curves[setting][method]``: a frame indexed by round with the ``mean`` and ``sd`` of ``metric`` over the
    seeds (rounds where the metric was measured)."""

    curves: dict[str, dict[str, pd.DataFrame]]
    metric: str
    seeds: int
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_results(cls, results: Mapping[str, Mapping[str, Sequence[History]]], metric: str,
                     scale: float = 1.0, start: int = 0) -> CurvesDisplay:
        """Mean and standard deviation over seeds of ``metric`` (times ``scale``: 100 for percent) per round from
        round ``start`` on, from ``{setting: {method: [History of each seed]}}``; a run that diverged counts until
        its last round (the band then covers the others)."""
        curves, seeds = {}, 0
        for setting, runs in results.items():
            curves[setting] = {}
            for method, histories in runs.items():
                frame = pd.concat([h.frame[metric].dropna() * scale for h in histories], axis=1)
                frame = frame[frame.index >= start]
                curves[setting][method] = pd.DataFrame({"mean": frame.mean(axis=1), "sd": frame.std(axis=1, ddof=1)})
                seeds = max(seeds, len(histories))
        return cls(curves, metric, seeds)

    def plot(self, axes: Sequence[Axes] | None = None, logy: bool = False, legend: bool = True,
             label: str | None = None, xlabel: bool = True, order: Sequence[str] | None = None,
             evaluation_ticks: bool = False, mark_identical: bool = False,
             ylabel: str | None = None) -> CurvesDisplay:
        """One panel per setting; each method its own colour, line style and markers, its band one sd wide;
        ``label`` names the metric in the titles (default: its column name); ``order`` fixes each method's style by
        its place in it (the same method looks the same in every panel and figure), else by its place in the
        panel.  ``evaluation_ticks`` puts the round ticks at the rounds where the metric was measured (every
        second one or more when there are many); ``mark_identical`` draws methods whose curves coincide once,
        labelled ``"FedAvg = FedProx"``, so that no curve hides another unsaid; ``ylabel`` labels every panel's y
        axis (its unit)."""
        if axes is None:
            axes = list(panels(len(self.curves), 5, 3.6)[0])
        for ax, (setting, by_method) in zip(axes, self.curves.items()):
            drawn = identical_groups(by_method) if mark_identical else [[method] for method in by_method]
            for group in drawn:
                method, curve = group[0], by_method[group[0]]
                place = list(by_method).index(method)
                index = list(order).index(method) if order is not None and method in order else place
                ax.plot(curve.index, curve["mean"], label=" = ".join(group),
                        **run_style(index, len(by_method), len(curve)))
                ax.fill_between(curve.index, curve["mean"] - curve["sd"], curve["mean"] + curve["sd"],
                                color=f"C{index % 10}", alpha=0.15, linewidth=0)
            if evaluation_ticks and by_method:
                rounds = list(next(iter(by_method.values())).index)
                ax.set_xticks(rounds[::max(1, math.ceil(len(rounds) / 11))])
            ax.set_title(f"{setting}: {label or self.metric.replace('_', ' ')}", fontsize="medium")
            if xlabel:
                ax.set_xlabel("round")
            if ylabel:
                ax.set_ylabel(ylabel)
            if not evaluation_ticks:
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if logy:
                plain_log_scale(ax)
            ax.grid(alpha=0.3)
        self.figure_, self.axes_ = axes[0].figure, axes
        if legend:
            self.figure_.legend(*axes[0].get_legend_handles_labels(), loc="outside right center",
                                title=f"mean ± sd, {self.seeds} seeds" if self.seeds > 1 else None, fontsize="small")
        return self


@dataclass
class MetricsDisplay:
    """Several metrics' curves over the same runs, one row of panels each: ``rows[label]`` a
    :class:`CurvesDisplay`, drawn with ``logy[label]``."""

    rows: dict[str, CurvesDisplay]
    logy: dict[str, bool]
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Any = field(default=None, repr=False)

    @classmethod
    def from_results(cls, results: Mapping[str, Mapping[str, Sequence[History]]],
                     metrics: Mapping[str, Mapping[str, Any]]) -> MetricsDisplay:
        """``metrics``: ``{label: {"metric": column, "scale": 100, "start": 5, "logy": True}}`` (all but
        ``metric`` optional), each row :meth:`CurvesDisplay.from_results` of ``results``."""
        rows = {label: CurvesDisplay.from_results(results, spec["metric"], spec.get("scale", 1.0),
                                                  spec.get("start", 0)) for label, spec in metrics.items()}
        return cls(rows, {label: bool(spec.get("logy", False)) for label, spec in metrics.items()})

    def plot(self, width: float = 5.0, height: float = 3.6) -> MetricsDisplay:
        """A grid of panels (rows the metrics, columns the settings), sharing the round axis; one legend."""
        columns = len(next(iter(self.rows.values())).curves)
        self.axes_ = panels(columns, width, height, rows=len(self.rows), sharex=True, dpi=72)
        self.figure_ = self.axes_[0][0].figure
        for position, (label, curves) in enumerate(self.rows.items()):
            curves.plot(self.axes_[position], logy=self.logy[label], legend=position == 0, label=label,
                        xlabel=position == len(self.rows) - 1)
        return self


def identical_groups(curves: Mapping[str, pd.DataFrame]) -> list[list[str]]:
    """The methods of ``curves`` (``{method: frame with a "mean" column}``) grouped by identical mean curves, in
    their order: ``[["FedAvg", "FedProx"], ["SCAFFOLD"]]``."""
    groups: dict[tuple, list[str]] = {}
    for method, curve in curves.items():
        groups.setdefault(tuple(curve["mean"].round(10).items()), []).append(method)
    return list(groups.values())


@dataclass
class ScoresDisplay:
    """``scores``: one row per (setting, method), one column per seed (``papers.common.score_table``),
    times ``scale``; ``label`` names the score."""

    scores: pd.DataFrame
    label: str
    figure_: Figure | None = field(default=None, repr=False)
    axes_: Sequence[Axes] | None = field(default=None, repr=False)

    @classmethod
    def from_scores(cls, table: pd.DataFrame, label: str, scale: float = 1.0) -> ScoresDisplay:
        return cls(table * scale, label)

    def plot(self, axes: Sequence[Axes] | None = None, baselines: Mapping[str, float] | None = None,
             unit: str = "", baseline_label: str = "most frequent class") -> ScoresDisplay:
        """One panel per setting, the methods as rows: each seed a dot, the mean a vertical tick, the axis fitted to
        the dots; a setting's ``baselines`` value (same units, what a model that learned nothing scores, named
        ``baseline_label``) is given in its title."""
        settings = list(dict.fromkeys(self.scores.index.get_level_values(0)))
        if axes is None:
            axes = list(panels(len(settings), 4.6, 2.8)[0])
        for ax, setting in zip(axes, settings):
            rows = self.scores.loc[setting]
            for position, values in enumerate(rows.to_numpy(dtype=float)):
                finite = values[np.isfinite(values)]
                color = f"C{position % 10}"
                ax.scatter(finite, np.full(finite.shape, position), color=color, s=18, alpha=0.8, zorder=3)
                if finite.size:
                    ax.plot([finite.mean()] * 2, [position - 0.3, position + 0.3], color=color, linewidth=2)
            ax.set_yticks(range(len(rows)), list(rows.index))
            ax.invert_yaxis()
            trivial = f" ({baseline_label}: {baselines[setting]:.3g}{unit})" if baselines and setting in baselines \
                else ""
            ax.set_title(setting + trivial, fontsize="medium")
            ax.set_xlabel(self.label)
            ax.grid(axis="x", alpha=0.3)
        self.figure_, self.axes_ = axes[0].figure, axes
        return self
