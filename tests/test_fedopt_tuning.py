"""Ease of tuning (papers.fedopt.tuning): grids through the shared common.tune scored by the grid
task's own score, the heat maps (Tuning.heatmap), the count of good cells."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch

matplotlib.use("Agg")

from fedcore import algorithms, models  # noqa: E402
from fedcore.data import FederatedData  # noqa: E402
from fedcore.problem import Problem  # noqa: E402
from fedcore.run import simulate  # noqa: E402
from papers import common  # noqa: E402
from papers.claims import trivial_baseline  # noqa: E402
from papers.fedopt import explore as fedopt_explore  # noqa: E402
from papers.fedopt import figures, tuning  # noqa: E402


def blobs() -> Problem:
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(120) % 3
    inputs = 2 * torch.eye(3)[labels].repeat(1, 2) + torch.randn(120, 6, generator=generator)
    data = FederatedData(inputs, labels, torch.full((6,), 20), inputs[:30], labels[:30], 3)
    return Problem(data, models.make("logistic_regression", (6,), 3, seed=0))


BLOBS_RUN = dict(rounds=6, clients_per_round=3, local_steps=2, batch_size=5, eval_every=1, weighting="samples")


def blobs_task(**settings) -> common.Task:
    """:func:`blobs` as a task: its model drawn from a seed, :data:`BLOBS_RUN` (``settings`` replace some)."""
    data = blobs().data
    return common.Task("blobs", data, lambda seed: models.make("logistic_regression", (6,), 3, seed=seed),
                       {**BLOBS_RUN, **settings}, baseline=trivial_baseline(data))


def fedadam_grid(tau: float = 1e-3) -> dict:
    return {"FedAdam": lambda client_lr, server_lr: algorithms.fedadam(client_lr, server_lr=server_lr, tau=tau)}


def tune(task: common.Task, builders: dict, client_lrs: list, server_lrs: list, seeds=(0,)) -> common.Tuning:
    """Every method of ``builders`` over the grid ``client_lrs`` x ``server_lrs`` (the notebook's call)."""
    grid = {"client_lr": client_lrs, "server_lr": server_lrs}
    return common.tune(task, builders, dict.fromkeys(builders, grid), seeds)


def test_half_decades() -> None:
    assert np.allclose(common.half_decades(-1, 0.5), [0.1, 10**-0.5, 1.0, 10**0.5])
    assert common.half_decades(0, 0) == [1.0]
    with pytest.raises(ValueError, match="multiples of 0.5"):
        common.half_decades(-1.2, 0)


def test_tuning_grid_is_the_runs_metric_server_rates_on_top() -> None:
    """One tune (common.tune) serves the heat map: each cell is the task's score (the mean test accuracy of the
    last 4 evaluations, a fraction) of the run simulate gives for that cell, from the seed's model and minibatches."""
    task, build = blobs_task(), fedadam_grid()["FedAdam"]
    tuned = tune(task, fedadam_grid(), [0.01, 0.1], [0.01, 0.1], seeds=[1])
    assert isinstance(tuned, common.Tuning) and list(tuned.tables) == ["FedAdam"]
    grid = tuning.heatmaps(tuned)["FedAdam"]
    assert list(grid.index) == [0.1, 0.01] and list(grid.columns) == [0.01, 0.1]  # the largest server rate on top
    assert (grid.index.name, grid.columns.name) == ("server_lr", "client_lr")
    run = simulate(task.problem(1), build(0.1, 0.01), seed=1, progress=False, **task.settings)
    assert grid.loc[0.01, 0.1] == common.window_score(run, "test_accuracy") == task.score(run)
    evaluated = run.frame["test_accuracy"].dropna()
    assert task.score(run) == pytest.approx(evaluated[evaluated.index > 0].iloc[-4:].mean())
    assert tuned.chosen["FedAdam"] == dict(zip(("client_lr", "server_lr"), grid.stack().idxmax()[::-1]))
    shown = figures.HeatmapsDisplay.from_grids(tuning.heatmaps(tuned))
    assert shown.grids["FedAdam"].equals(grid) and shown.threshold == pytest.approx(grid.max().max() - 0.02)


def test_a_point_the_builder_refuses_is_nan_in_the_heat_map_and_never_near_the_best() -> None:
    task = blobs_task(rounds=3)
    build = {"FedAvg": lambda client_lr, server_lr: algorithms.fedavg(client_lr, server_lr=server_lr)}
    grid = tuning.heatmaps(tune(task, build, [-0.1, 0.1], [1.0], seeds=[0]))["FedAvg"]
    assert list(grid.columns) == [-0.1, 0.1] and math.isnan(grid.loc[1.0, -0.1]) and math.isfinite(grid.loc[1.0, 0.1])
    assert tuning.tuning_summary({"FedAvg": grid}, 0.0).loc["FedAvg", "good cells"] == 1  # NaN never counts


def test_grid_task_is_the_live_run_of_the_explorer() -> None:
    """The grid runs on fedcore.explore's live task: the same data, the logistic regression from seed 0, the same
    round settings (and simulate's default weighting), the scale's rounds."""
    from fedcore import explore

    live = explore.live_problem()
    task = tuning.grid_task("small")
    assert torch.equal(task.data.inputs, live.data.inputs) and torch.equal(task.data.sizes, live.data.sizes)
    assert torch.equal(task.problem(0).x0(), live.x0()) and not torch.equal(task.problem(1).x0(), live.x0())
    assert dict(task.settings) == {**explore.LIVE_RUN, "weighting": "samples", "rounds": 30, "eval_every": 3}
    assert common.window_rounds(task.settings) == "rounds 19-30, the last 4 evaluations"
    assert tuning.GRIDS["small"].seeds == (0, 1, 2, 3, 4) and task.unit == 1.0  # a fraction: NEAR_BEST = 2 points
    assert tuning.GRIDS["small"].taus == (1e-3,) and tuning.GRIDS["medium"].taus == (1e-3, 1e-2, 1e-1)  # verdict: 1e-3
    assert not any(grid.tuning_seeds for grid in tuning.GRIDS.values())  # the grids choose nothing: judging seeds
    assert task.name == "Fashion-MNIST on 20 clients" and task.model_label == "logistic regression"
    assert tuning.grid_task("smoke", live.data).data is live.data and tuning.grid_task("smoke").settings["rounds"] == 3
    assert task.baseline == pytest.approx(trivial_baseline(live.data))
    with pytest.raises(TypeError, match="must be a classification FederatedData"):
        tuning.grid_task("smoke", blobs())


def test_good_cells_against_one_threshold_and_the_summary_on_a_hand_made_grid() -> None:
    grid = pd.DataFrame([[0.80, 0.79, np.nan], [0.70, 0.785, 0.5]], index=pd.Index([1.0, 0.1], name="server_lr"),
                        columns=pd.Index([0.01, 0.1, 1.0], name="client_lr"))
    inner = pd.DataFrame(np.full((3, 3), 0.5), index=[1.0, 0.1, 0.01], columns=[0.01, 0.1, 1.0])
    inner.iloc[1, 1] = 0.9
    assert tuning.good_threshold({"FedAdam": grid}) == pytest.approx(0.78)
    threshold = tuning.good_threshold({"FedAdam": grid, "FedAvg": inner})  # the best of both: 0.9 - 0.02
    assert threshold == pytest.approx(0.88)
    summary = tuning.tuning_summary({"FedAdam": grid}, 0.78)
    assert summary.loc["FedAdam", "best client lr"] == 0.01 and summary.loc["FedAdam", "best server lr"] == 1.0
    assert summary.loc["FedAdam", "good cells"] == 3 and summary.loc["FedAdam", "cells"] == 6
    assert summary.loc["FedAdam", "best accuracy (%)"] == 80.0
    margins = tuning.good_cells_by_margin({"FedAdam": grid, "FedAvg": inner}, [0.0, 0.02, 0.15, 0.5])
    assert list(margins.columns) == ["within 0 points", "within 2 points", "within 15 points", "within 50 points"]
    assert margins.loc["FedAdam"].tolist() == [0, 0, 3, 5] and margins.loc["FedAvg"].tolist() == [1, 1, 1, 9]
    with pytest.raises(ValueError, match="margins=0.02 must be a non-empty list"):
        tuning.good_cells_by_margin({"FedAdam": grid}, 0.02)
    assert summary.loc["FedAdam", "best on the grid's edge"]  # server 1.0 is the top row
    assert tuning.tuning_summary({"FedAdam": grid}, threshold).loc["FedAdam", "good cells"] == 0
    assert not tuning.tuning_summary({"FedAvg": inner}, threshold).loc["FedAvg", "best on the grid's edge"]
    ax = figures.TuningDisplay.from_grid(grid, 0.78).plot().ax_
    assert len(ax.patches) == 3 and len(ax.texts) == 6
    shown = figures.HeatmapsDisplay.from_grids({"FedAdam": grid, "FedAvg": inner})
    assert shown.threshold == threshold and shown.limits == (0.5, 0.9)
    figure = shown.plot().figure_
    maps = [ax for ax in figure.axes if ax.get_title()]  # the colour bar is an axes too, without a title
    assert [ax.get_title() for ax in maps] == ["FedAdam", "FedAvg"]
    assert [len(ax.patches) for ax in maps] == [0, 1]  # one threshold: only FedAvg's 0.9 is good
    assert all(ax.images[0].get_clim() == pytest.approx((50.0, 90.0)) for ax in maps)  # one scale, in points
    assert len(figure.axes) == len(maps) + 1  # one colour bar for all
    assert "90.0" in [text.get_text() for text in maps[1].texts]  # cells printed in accuracy points
    with pytest.raises(TypeError, match="must be a non-empty"):
        figures.HeatmapsDisplay.from_grids({})
    with pytest.raises(ValueError, match="every cell of every grid diverged"):
        tuning.good_threshold({"FedAdam": grid * np.nan})


def test_grid_axes_and_grid_builders() -> None:
    from papers.fedopt import experiment as fedopt
    from papers.fedopt import paper

    client_lrs, server_lrs = tuning.grid("small").values()
    assert len(client_lrs) == 6 and len(server_lrs) == 7 and tuning.GRIDS["small"].rounds == 30
    assert np.allclose(client_lrs, [10 ** (k / 2) for k in range(-5, 1)])
    assert np.allclose(server_lrs, [10 ** (k / 2) for k in range(-5, 2)])  # past 1: FedAvg's best was on the edge
    with pytest.raises(ValueError, match="SCALE='huge' not one of"):
        tuning.grid("huge")
    builders = fedopt.grid_builders(tau=1e-3)
    assert set(builders) == set(paper.METHODS)
    assert builders["FedYogi"](client_lr=0.1, server_lr=0.01).server.tau == 1e-3  # the grid's keys
    adam = builders["FedAdam"](0.1, 0.01).server
    assert (adam.rule, adam.lr, adam.tau, adam.beta2) == ("adam", 0.01, 1e-3, 0.99)
    assert builders["FedAvg"](0.3, 1.0).client_lr == 0.3
    assert builders["FedAvgM"](0.1, 1.0).server.beta == 0.9


def test_tuning_explorer_outlines_the_chosen_cell_and_draws_its_curve() -> None:
    import matplotlib.pyplot as plt


    task = blobs_task(rounds=4)
    grids = {tau: tuning.heatmaps(tune(task, fedadam_grid(tau), [0.01, 0.1], [0.01, 0.1]))
             for tau in (1e-3, 1e-1)}
    assert not grids[1e-3]["FedAdam"].equals(grids[1e-1]["FedAdam"])  # tau matters, so each tau has its grid
    drawn = []

    def curve(method, tau, c, s):
        drawn.append((method, tau, c, s))
        return simulate(task.problem(0), algorithms.fedadam(c, server_lr=s, tau=tau), progress=False, **task.settings)

    assert fedopt_explore.explore_tuning("FedAdam", 1e-1, 0.1, 0.01, grids, curve) is None
    assert drawn == [("FedAdam", 1e-1, 0.1, 0.01)]
    left = plt.gcf().axes[0]
    assert left.get_title().startswith("FedAdam, tau 0.1")
    black = [p for p in left.patches if p.get_edgecolor()[:3] == (0.0, 0.0, 0.0)]
    assert len(black) == 1 and black[0].get_xy() == (0.5, 0.5)  # column of 0.1, row of 0.01 (second from the top)
    shown = left.images[0].get_array()
    assert np.allclose(shown, 100 * grids[1e-1]["FedAdam"].to_numpy(), equal_nan=True)  # the chosen tau's grid (points)
    with pytest.raises(ValueError, match="is not a cell of the grid"):
        fedopt_explore.explore_tuning("FedAdam", 1e-3, 0.5, 0.01, grids, curve)
    with pytest.raises(ValueError, match="method='FedYogi' has no grid at tau=0.001"):
        fedopt_explore.explore_tuning("FedYogi", 1e-3, 0.1, 0.01, grids, curve)
    with pytest.raises(ValueError, match=r"tau=0.01 has no grids; grids has tau in \[0.001, 0.1\]"):
        fedopt_explore.explore_tuning("FedAdam", 1e-2, 0.1, 0.01, grids, curve)
    with pytest.raises(TypeError, match="grids must be"):
        fedopt_explore.explore_tuning("FedAdam", 1e-3, 0.1, 0.01, grids[1e-3], curve)
    plt.close("all")
