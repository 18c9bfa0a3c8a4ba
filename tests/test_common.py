"""The experiments' common layer (fedcore.experiments.common): tasks over seeds, the score window, tuning over
seeds and the tolerance rules, against hand computations and separate runs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models, simulate
from fedcore.experiments import common
from fedcore.experiments.common import Task
from fedcore.results import History

SETTINGS = dict(rounds=6, clients_per_round=3, local_steps=2, batch_size=4, eval_every=2, weighting="samples")


def task(**settings) -> Task:
    return Task("blobs", blobs(), lambda seed: models.make("mlp", (8,), 3, hidden=(6,), seed=seed),
                {**SETTINGS, **settings}, baseline=1 / 3)


def history(values: dict[int, dict[str, float]], diverged: int | None = None) -> History:
    frame = pd.DataFrame.from_dict(values, orient="index")
    frame.index.name = "round"
    return History(frame, "hand-made", "loop", {}, diverged)


def test_each_seed_draws_its_own_model_and_equals_its_separate_run() -> None:
    results = common.run_seeds(task(), {"FedAvg": algorithms.fedavg(0.1), "FedAdam": algorithms.fedadam(0.1)},
                               seeds=[0, 3])
    assert list(results) == ["FedAvg", "FedAdam"] and all(len(runs) == 2 for runs in results.values())
    for seed, run in zip([0, 3], results["FedAdam"]):
        alone = simulate(task().problem(seed), algorithms.fedadam(0.1), seed=seed, progress=False, **SETTINGS)
        torch.testing.assert_close(run.final_state["x"], alone.final_state["x"], atol=1e-6, rtol=1e-6)
    assert not torch.equal(task().initial([0])[0], task().initial([3])[3])


def test_the_window_is_the_last_evaluations_and_their_rounds() -> None:
    rows = {r: {"train_loss": float(r), "test_accuracy": (r / 10 if r % 2 == 0 else math.nan)} for r in range(11)}
    run = history(rows)  # evaluations at 2, 4, 6, 8, 10
    assert common.window_score(run, "test_accuracy", 4) == pytest.approx((0.4 + 0.6 + 0.8 + 1.0) / 4)
    assert common.window_score(run, "train_loss", 4) == pytest.approx(sum(range(3, 11)) / 8)  # rounds 3..10
    assert common.window_score(run, "test_accuracy", 9) == pytest.approx(0.6)  # fewer evaluations: all of them
    assert math.isnan(common.window_score(history(rows, diverged=11), "test_accuracy"))
    assert common.window_rounds(dict(rounds=10, eval_every=2), 4) == "rounds 3-10, the last 4 evaluations"
    assert common.window_rounds(dict(rounds=40, eval_every=5), 4) == "rounds 21-40, the last 4 evaluations"
    with pytest.raises(ValueError, match="'accuracy' is not a column"):
        common.window_score(run, "accuracy")


def test_late_gain_is_the_last_evaluation_minus_the_one_a_fraction_earlier() -> None:
    frame = pd.DataFrame({"test_accuracy": [0.1, 0.3, math.nan, 0.5, 0.6, 0.65, math.nan]},
                         index=pd.Index([0, 5, 10, 15, 20, 25, 30], name="round"))
    history = History(frame, "FedAvg", "loop", {})
    assert common.late_gain(history) == pytest.approx(0.65 - 0.5)  # at or before round 16.7 of 25: round 15
    assert common.late_gain(history, fraction=0.5) == pytest.approx(0.65 - 0.3)  # last evaluated 25: at or before 12.5
    assert common.late_gain(history, fraction=0.9) == pytest.approx(0.65 - 0.1)
    assert math.isnan(common.late_gain(History(frame, "FedAvg", "loop", {}, diverged_round=30)))
    with pytest.raises(ValueError, match="fraction=0"):
        common.late_gain(history, fraction=0)
    with pytest.raises(ValueError, match="'accuracy' is not a column"):
        common.late_gain(history, "accuracy")


def test_score_table_and_mean_sd_by_hand() -> None:
    def run(value: float) -> History:
        return history({0: {"train_loss": 1.0, "test_accuracy": 0.1}, 2: {"train_loss": 0.5, "test_accuracy": value}})

    results = {"low": {"A": [run(0.8), run(0.9)], "B": [run(0.5), run(0.7)]}, "high": {"A": [run(0.6), run(0.6)],
                                                                                       "B": [run(0.2), run(0.4)]}}
    table = common.score_table(results, lambda h: common.window_score(h, "test_accuracy"), seeds=[0, 1])
    assert table.loc[("low", "A")].tolist() == pytest.approx([0.8, 0.9]) and list(table.columns) == [0, 1]
    shown = common.mean_sd(table, scale=100, digits=1)
    assert list(shown.columns) == ["low", "high"]
    assert shown.loc["A", "low"] == f"85.0 ± {100 * np.std([.8, .9], ddof=1):.1f}"
    assert shown.loc["B", "high"] == f"30.0 ± {100 * np.std([.2, .4], ddof=1):.1f}"
    table.loc[("high", "B"), 1] = math.nan
    assert common.mean_sd(table).loc["B", "high"] == "1 of 2 diverged"


@pytest.mark.parametrize("higher, expected", [(True, [False, True, True, False]), (False, [True, False, False, False])])
def test_near_best_marks_the_values_within_the_tolerance_and_never_a_nan(higher, expected) -> None:
    assert common.near_best([0.5, 0.79, 0.8, math.nan], 0.02, higher).tolist() == expected
    assert not common.near_best([math.nan, math.nan], 0.1).any()


def test_near_best_by_column_judges_each_method_against_its_own_best() -> None:
    table = pd.DataFrame({"A": [0.80, 0.79, 0.5, math.nan], "B": [0.1, 0.2, 0.3, 0.29]}, index=[0.01, 0.1, 1.0, 10.0])
    mask = common.near_best_by_column(table, 0.02)
    assert mask.shape == (4, 2)
    assert mask[:, 0].tolist() == [True, True, False, False] and mask[:, 1].tolist() == [False, False, True, True]
    assert common.near_best_by_column(table, 0.02, higher_is_better=False)[:, 1].tolist() == [True, False, False, False]
    with pytest.raises(TypeError, match="table=Series must be a DataFrame"):
        common.near_best_by_column(table["A"], 0.02)


def test_robustness_figure_fills_exactly_the_given_points() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fedcore import plots

    table = pd.DataFrame({"A": [0.8, 0.7, 0.2]}, index=[0.01, 0.1, 1.0])
    ax = plots.robustness(table, np.array([[False], [True], [True]]))
    line, filled, hollow = ax.get_lines()
    assert filled.get_xdata().tolist() == [0.1, 1.0] and hollow.get_xdata().tolist() == [0.01]
    assert plots.robustness(table).get_lines()[2].get_xdata().tolist() == []  # no mask: every point filled
    with pytest.raises(ValueError, match=r"good has shape \(2, 1\), table \(3, 1\)"):
        plots.robustness(table, np.ones((2, 1), bool))
    plt.close("all")


def test_good_range_is_the_width_in_decades_of_the_values_near_the_best() -> None:
    column = pd.Series([0.1, 0.78, 0.8, 0.79, 0.3], index=[0.001, 0.01, 0.1, 1.0, 10.0])
    assert common.good_range(column, 0.02) == pytest.approx(2.0)  # 0.01 .. 1
    assert common.good_range(column, 0.0) == 0.0
    assert math.isnan(common.good_range(pd.Series([math.nan] * 2, index=[0.1, 1.0]), 0.1))


def test_tune_chooses_the_best_mean_over_seeds_and_never_a_point_that_diverged() -> None:
    grids = {"FedAvg": {"client_lr": [0.01, 0.3, 1e6]}}  # 1e6 diverges
    score = lambda h: common.window_score(h, "train_loss")  # noqa: E731
    tuning = common.tune(task(), {"FedAvg": algorithms.fedavg}, grids, seeds=[0, 1], score=score,
                         higher_is_better=False)
    table = tuning.tables["FedAvg"]
    for lr in (0.01, 0.3):
        separate = [score(simulate(task().problem(seed), algorithms.fedavg(lr), seed=seed, progress=False,
                                   **SETTINGS)) for seed in (0, 1)]
        assert table.loc[lr, [0, 1]].tolist() == pytest.approx(separate, rel=1e-5)
        assert table.loc[lr, "score"] == pytest.approx(np.mean(separate), rel=1e-5)
    assert math.isnan(table.loc[1e6, "score"]) and tuning.chosen == {"FedAvg": {"client_lr": 0.3}}
    with pytest.raises(ValueError, match="which have no builder"):
        common.tune(task(), {}, grids, seeds=[0], score=score)
    with pytest.raises(ValueError, match="repeats a seed"):
        common.tune(task(), {"FedAvg": algorithms.fedavg}, grids, seeds=[0, 0], score=score)


def test_the_smoke_grid_keeps_each_axis_ends() -> None:
    grids = {"FedAdam": {"lr": [0.001, 0.01, 0.1], "server_lr": [0.1]}}
    assert common.grids_at("smoke", grids) == {"FedAdam": {"lr": [0.001, 0.1], "server_lr": [0.1]}}
    assert common.grids_at("small", grids) == grids
    with pytest.raises(ValueError, match="scale='tiny'"):
        common.grids_at("tiny", grids)


def test_a_task_names_wrong_settings() -> None:
    with pytest.raises(ValueError, match=r"missing \['weighting'\], unknown \['seed'\]"):
        Task("t", blobs(), lambda seed: None, {**{k: v for k, v in SETTINGS.items() if k != "weighting"}, "seed": 0},
             baseline=0.0)


# ---- the typed scale ------------------------------------------------------------------------------------------------


def test_every_paper_fills_in_one_typed_scale_checked_once() -> None:
    import dataclasses

    from fedcore.experiments.fafed import experiment as fafed
    from fedcore.experiments.fedli import experiment as fedli
    from fedcore.experiments.fedopt import experiment as fedopt
    from fedcore.experiments.fedopt import tuning as fedopt_grids
    from fedcore.experiments.padamfed import experiment as padamfed

    for paper in (fedopt, padamfed, fedli, fafed):
        assert paper.SCALES and all(isinstance(scale, common.Scale) and dataclasses.is_dataclass(scale)
                                    and scale.name == name for name, scale in paper.SCALES.items()), paper.__name__
        assert all(isinstance(scale.seeds, tuple) and len(scale.seeds) >= 2 for scale in paper.SCALES.values())
        assert common.scale_at(paper.SCALES, "small") is paper.SCALES["small"]
        with pytest.raises(ValueError, match=r"SCALE='huge' not one of"):
            common.scale_at(paper.SCALES, "huge")
    assert all(isinstance(scale, common.Scale) for scale in fedopt_grids.GRIDS.values())  # 01's grids, per scale
    assert fedopt.SCALES["small"].seeds_or() == [0, 1, 2] and fafed.SCALES["small"].seeds_or([7, 8]) == [7, 8]
    with pytest.raises(TypeError, match="roundz"):  # a misspelt field
        common.Scale("small", seeds=(0, 1), rounds=10, eval_every=5, roundz=20)
    with pytest.raises(TypeError, match="roundz"):
        fedli.FedliScale("small", seeds=(0, 1), rounds=10, eval_every=5, roundz=20)
    with pytest.raises(ValueError, match=r"seeds=\[1, 1\]"):
        common.Scale("small", seeds=(1, 1), rounds=10, eval_every=5)
    with pytest.raises(ValueError, match=r"rounds=0"):
        common.Scale("small", seeds=(0, 1), rounds=0, eval_every=5)
    with pytest.raises(ValueError, match=r"eval_every\['a'\]=0"):
        common.Scale("small", seeds=(0, 1), rounds={"a": 10}, eval_every={"a": 0})
    with pytest.raises(TypeError, match=r"tasks='femnist' must be a sequence of task names"):
        common.Scale("small", seeds=(0, 1), rounds=10, eval_every=5, tasks="femnist")
    with pytest.raises(dataclasses.FrozenInstanceError):
        fafed.SCALES["small"].rounds = 3  # a scale is changed with dataclasses.replace, checked again
