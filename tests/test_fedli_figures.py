"""Notebook 03's Displays (fedcore.experiments.fedli.figures): what they compute, then what they draw."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from fedcore.experiments.fedli import figures  # noqa: E402
from fedcore.results import History  # noqa: E402

SWEEP = pd.DataFrame({"FedLi-LU": [10.0, 76.0, 78.0, 11.0], "FedAvg": [40.0, 76.0, 79.0, 77.0],
                      "FedExP": [60.0, 77.0, 78.0, math.nan], "FedLi-LS": 75.0}, index=[0.001, 0.01, 0.1, 1.0])


def test_client_rate_display_fills_the_rates_within_three_points_of_each_best() -> None:
    display = figures.ClientRateDisplay.from_sweeps({"femnist": SWEEP}, {"femnist": {"FedAvg": {"client_lr": 0.1}}})
    assert display.within == 3.0 and display.tuned == {"femnist": 0.1}
    expected = np.array([[False, False, False, True], [True, True, True, True], [True, True, True, True],
                         [False, True, False, True]])  # FedExP's diverged run (NaN) is never near the best
    assert (display.good["femnist"] == expected).all()
    display.plot(label=lambda task: f"{task} (stand-in)")
    ax = display.axes_[0]
    assert ax.get_title() == "femnist (stand-in)" and ax.get_xscale() == "log"
    tuned = [line for line in ax.get_lines() if line.get_label() == "FedAvg's tuned rate"]
    assert len(tuned) == 1 and list(tuned[0].get_xdata()) == [0.1, 0.1]
    lu_filled, lu_hollow = ax.get_lines()[1:3]  # FedLi-LU's filled and hollow markers
    assert list(lu_filled.get_xdata()) == [0.01, 0.1] and list(lu_hollow.get_xdata()) == [0.001, 1.0]
    plt.close(display.figure_)
    with pytest.raises(ValueError, match=r"no FedAvg point for the tasks \['femnist'\]"):
        figures.ClientRateDisplay.from_sweeps({"femnist": SWEEP}, {})


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
