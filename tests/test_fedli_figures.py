"""Notebook 03's Displays (papers.fedli.figures): what they compute, then what they draw."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedcore.results import History  # noqa: E402
from papers.fedli import figures  # noqa: E402

SWEEP = pd.DataFrame({"FedLi-LU": [10.0, 76.0, 78.0, 11.0], "FedAvg": [40.0, 76.0, 79.0, 77.0],
                      "FedExP": [60.0, 77.0, 78.0, math.nan]}, index=[0.001, 0.01, 0.1, 1.0])


def _over_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` as three seeds that differ by -1, 0, +1 (so the mean over the seeds is ``table``)."""
    return pd.concat({m: pd.DataFrame({s: table[m] + d for s, d in zip((0, 1, 2), (-1.0, 0.0, 1.0))})
                      for m in table}, axis=1)


def test_sweeps_display_fills_the_values_within_three_points_of_each_best() -> None:
    constant = pd.concat({"FedLi-LS": pd.DataFrame({0: [70.0, 75.0], 1: [72.0, 75.0]}, index=[1.0, 10.0])}, axis=1)
    display = figures.SweepsDisplay.from_tables(
        {"client rate": _over_seeds(SWEEP), "eta_max": constant},
        {"client rate": {"FedAvg's tuned rate": 0.1}, "eta_max": {"default": 10.0}},
        {"client rate": "clients' SGD rate", "eta_max": "eta_max"})
    assert display.within == 3.0 and display.seeds == 3
    pd.testing.assert_frame_equal(display.tables["client rate"], SWEEP, check_names=False)
    expected = np.array([[False, False, False], [True, True, True], [True, True, True],
                         [False, True, False]])  # FedExP's diverged run (NaN) is never near the best
    assert (display.good["client rate"] == expected).all()
    assert display.tables["eta_max"]["FedLi-LS"].tolist() == [71.0, 75.0]
    assert display.good["eta_max"].ravel().tolist() == [False, True]  # 71 is 4 below 75
    display.plot(columns=2, order=["FedLi-LU", "FedLi-LS", "FedAvg", "FedExP"])
    ax = display.axes_[0]
    assert ax.get_title() == "client rate" and ax.get_xscale() == "log" and ax.get_xlabel() == "clients' SGD rate"
    assert ax.get_ylabel() == "test accuracy (%), mean of 3 seeds"
    tuned = [line for line in ax.get_lines() if line.get_label() == "FedAvg's tuned rate"]
    assert len(tuned) == 1 and list(tuned[0].get_xdata()) == [0.1, 0.1]
    lu_filled, lu_hollow = ax.get_lines()[1:3]  # FedLi-LU's filled and hollow markers
    assert list(lu_filled.get_xdata()) == [0.01, 0.1] and list(lu_hollow.get_xdata()) == [0.001, 1.0]
    assert display.axes_[1].get_lines()[0].get_color() == "C1"  # FedLi-LS keeps its place in the order
    plt.close(display.figure_)
    with pytest.raises(ValueError, match=r"must have \(method, seed\) columns"):
        figures.SweepsDisplay.from_tables({"client rate": SWEEP}, {}, {})


def _history(rows: list[dict]) -> History:
    return History(pd.DataFrame(rows).set_index("round"), "FedLi-LS", "loop", {})


def test_step_sizes_display_reads_each_rounds_mean_min_and_max() -> None:
    run = _history([{"round": 1, "client_step_mean": 0.5, "client_step_min": 0.2, "client_step_max": 0.9},
                    {"round": 2, "client_step_mean": 0.7, "client_step_min": 0.4, "client_step_max": 1.0}])
    display = figures.StepSizesDisplay.from_histories({"femnist": {"FedLi-LS": run}, "shakespeare": {"FedLi-LS": run}})
    assert list(display.steps) == ["femnist", "shakespeare"]
    assert display.steps["femnist"].to_dict("list") == {"mean": [0.5, 0.7], "min": [0.2, 0.4], "max": [0.9, 1.0]}
    display.plot()
    assert len(display.axes_) == 2 and list(display.axes_[0].get_lines()[0].get_ydata()) == [0.5, 0.7]
    assert display.axes_[1].get_title() == "shakespeare"
    plt.close(display.figure_)
    with pytest.raises(ValueError, match="no FedLi-LS run"):
        figures.StepSizesDisplay.from_histories({"femnist": {"FedAvg": run}})
