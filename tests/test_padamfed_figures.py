"""Notebook 02's figures (papers.padamfed.figures): computed, then drawn."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedcore import plots  # noqa: E402
from papers.common import near_best_by_column  # noqa: E402
from papers.padamfed import experiment, figures  # noqa: E402

MULTIPLIERS = [0.01, 0.1, 1.0, 10.0, 100.0]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_smoothness_display_clips_blown_up_runs_and_draws_one_line_per_method() -> None:
    table = pd.DataFrame({"PAdaMFed": [0.4, 0.4], "FedAvg": [0.3, math.inf], "SCAFFOLD": [0.2, 3e9]},
                         index=pd.Index([0.1, 100.0], name="smoothness L"))
    display = figures.SmoothnessDisplay.from_table(table)
    assert display.ratios["FedAvg"].tolist() == [0.3, 1e6] and display.ratios["SCAFFOLD"].iloc[1] == 1e6
    assert display.ratios["PAdaMFed"].tolist() == [0.4, 0.4] and table["FedAvg"].iloc[1] == math.inf  # a copy
    display.plot()
    ax = display.ax_
    lines = ax.get_lines()
    assert [line.get_label() for line in lines[:3]] == ["PAdaMFed", "FedAvg", "SCAFFOLD"]
    assert list(lines[1].get_ydata()) == [0.3, 1e6] and ax.get_xscale() == ax.get_yscale() == "log"
    # each method's style is its place among notebook 02's methods (PAdaMFed 0, FedAvg 2, SCAFFOLD 3)
    assert [line.get_marker() for line in lines[:3]] == [plots.MARKERS[i] for i in (0, 2, 3)]
    assert [line.get_color() for line in lines[:3]] == ["C0", "C2", "C3"]
    assert ax.get_ylabel() == "final / initial gradient norm (clipped at 1e6)"
    with pytest.raises(ValueError, match="clip=0"):
        figures.SmoothnessDisplay.from_table(table, clip=0)
    with pytest.raises(TypeError, match="table=dict must be a DataFrame"):
        figures.SmoothnessDisplay.from_table({"a": [1]})


def test_robustness_display_marks_each_methods_good_range_around_one() -> None:
    """The mean over the seeds, and filled the contiguous multipliers around 1 within NEAR_BEST of the best mean:
    B's 0.3 at 0.01 is hollow, cut off from 1 by its 0.2 at 0.1."""
    a_seeds = {("A", 0): [0.79, 0.80, 0.81, 0.5, np.nan], ("A", 1): [0.81, 0.82, 0.83, 0.5, np.nan],
               ("B", 0): [0.3, 0.2, 0.3, 0.3, 0.3], ("B", 1): [0.3, 0.2, 0.3, 0.3, 0.3]}
    table = pd.DataFrame(a_seeds, index=MULTIPLIERS)
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    display = figures.RobustnessDisplay.from_tables({"every rate": table, "local rate": table * 0.5})
    assert display.within == experiment.NEAR_BEST
    assert display.tables["every rate"]["A"].tolist()[:3] == pytest.approx([80, 81, 82])  # in percent
    assert display.good["every rate"].tolist() == [[True, False], [True, False], [True, True], [False, True],
                                                   [False, True]]
    display.plot(title="task: ")
    assert len(display.axes_) == 2 and display.axes_[1].get_title() == "task: multiplying local rate"
    lines = display.axes_[0].get_lines()
    assert len(lines) == 6  # a line, its filled and its hollow markers per method
    assert list(lines[1].get_xdata()) == [0.01, 0.1, 1.0] and display.axes_[0].get_xscale() == "log"
    assert list(lines[5].get_xdata()) == [0.01, 0.1]  # B's hollow markers
    assert len(display.figure_.legends) == 1 and "filled: the good range" in \
        display.figure_.legends[0].get_title().get_text()
    assert [h.get_marker() for h in display.figure_.legends[0].legend_handles] == list(plots.MARKERS[:2])
    with pytest.raises(TypeError, match="must be a non-empty"):
        figures.RobustnessDisplay.from_tables({})


def test_smoothness_display_draws_the_pass_rule_and_names_its_rows() -> None:
    table = pd.DataFrame({"PAdaMFed": [0.8, 0.1]}, index=pd.Index([0.1, 10.0], name="a"))
    display = figures.SmoothnessDisplay.from_table(table).plot(xlabel="a", target=0.5)
    assert display.ax_.get_xlabel() == "a"
    assert [line.get_label() for line in display.ax_.get_lines()][-1] == "pass rule: 0.5"
    with pytest.raises(ValueError, match="target=0"):
        figures.SmoothnessDisplay.from_table(table).plot(target=0)


def test_plots_robustness_draws_a_given_mask() -> None:
    table = pd.DataFrame({"A": [0.80, 0.81, 0.82, 0.5, np.nan], "B": [0.1, 0.2, 0.3, 0.3, 0.3]}, index=MULTIPLIERS)
    ax = plots.robustness(table, near_best_by_column(table, experiment.NEAR_BEST))
    lines = ax.get_lines()
    assert len(lines) == 6 and list(lines[1].get_xdata()) == [0.01, 0.1, 1.0] and ax.get_xscale() == "log"
    ordered = plots.robustness(table[["B", "A"]], order=["A", "B"], legend=True)  # styles follow the order
    assert [line.get_color() for line in ordered.get_lines()[::3]] == ["C1", "C0"]
    assert [h.get_marker() for h in ordered.get_legend().legend_handles] == [plots.MARKERS[1], plots.MARKERS[0]]


def test_rates_display_draws_each_a_against_t_with_the_theorems_slope() -> None:
    """Per method a panel; per a a line of the geometric mean over the seeds; a dashed line of the theorem's slope
    through a = 1's first point."""
    rows = {(a, T): {("PAdaMFed", 0): a * T**-0.5, ("PAdaMFed", 1): 4 * a * T**-0.5,
                     ("PAdaMFed-VR", 0): T**-0.3, ("PAdaMFed-VR", 1): T**-0.3}
            for a in (0.1, 1.0) for T in (50, 100, 200)}
    table = pd.DataFrame(rows).T
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    display = figures.RatesDisplay.from_table(table.rename_axis(["a", "rounds"]), {"PAdaMFed": -0.25,
                                                                                   "PAdaMFed-VR": -1 / 3})
    assert display.means.loc[(1.0, 100), "PAdaMFed"] == pytest.approx(2 * 100**-0.5)  # sqrt(1 * 4)
    display.plot()
    first = display.axes_[0]
    assert first.get_title() == "PAdaMFed" and display.axes_[1].get_title() == "PAdaMFed-VR"
    labels = [line.get_label() for line in first.get_lines()]
    assert labels == ["a = 0.1", "a = 1", "slope -0.25 (theorem)"]
    reference = first.get_lines()[2]
    assert list(reference.get_xdata()) == [50, 100, 200]
    assert reference.get_ydata()[2] == pytest.approx(2 * 50**-0.5 * 4**-0.25)
    with pytest.raises(TypeError, match="must be a rate_table"):
        figures.RatesDisplay.from_table(pd.DataFrame({"x": [1]}), {})


def test_smoothness_display_keeps_a_row_at_zero_on_a_symlog_axis() -> None:
    """The untilted level h = 0 has no place on a log axis: the x axis turns linear below the smallest positive
    row, and the point at 0 is drawn."""
    table = pd.DataFrame({"PAdaMFed": [0.01, 0.01, 0.01]}, index=pd.Index([0.0, 0.3, 10.0], name="heterogeneity"))
    ax = figures.SmoothnessDisplay.from_table(table).plot(xlabel="tilt").ax_
    assert ax.get_xscale() == "symlog" and list(ax.get_lines()[0].get_xdata()) == [0.0, 0.3, 10.0]
    assert figures.SmoothnessDisplay.from_table(table.iloc[1:]).plot().ax_.get_xscale() == "log"
