"""The experiments' common layer (papers.common): tasks over seeds, the score window, tuning over
seeds and the tolerance rules, against hand computations and separate runs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models, simulate
from fedcore.results import History
from papers import common
from papers.claims import Scope
from papers.common import Task
from papers.fedopt import paper as fedopt_paper

SETTINGS = dict(rounds=6, clients_per_round=3, local_steps=2, batch_size=4, eval_every=2, weighting="samples")


def task(selection: common.Selection | None = None, **settings) -> Task:
    return Task("blobs", blobs(), lambda seed: models.make("mlp", (8,), 3, hidden=(6,), seed=seed),
                {**SETTINGS, **settings}, baseline=1 / 3, selection=selection or common.Selection())


def history(values: dict[int, dict[str, float]], diverged: int | None = None) -> History:
    frame = pd.DataFrame.from_dict(values, orient="index")
    frame.index.name = "round"
    return History(frame, "hand-made", "loop", {}, diverged)


def test_each_seed_draws_its_own_model_and_equals_its_separate_run() -> None:
    builders = common.bind({"FedAvg": algorithms.fedavg, "FedAdam": algorithms.fedadam},
                           {"FedAvg": {"client_lr": 0.1}, "FedAdam": {"client_lr": 0.1}})
    results = common.run(task(), builders, seeds=[0, 3])
    assert list(results) == ["blobs"] and results.seeds == (0, 3)
    assert list(results["blobs"]) == ["FedAvg", "FedAdam"] and all(len(r) == 2 for r in results["blobs"].values())
    alone = common.run(task(), builders, seeds=[0, 3], alone=True)
    for seed, run, single in zip([0, 3], results["blobs"]["FedAdam"], alone["blobs"]["FedAdam"]):
        separate = simulate(task().problem(seed), algorithms.fedadam(0.1), seed=seed, progress=False, **SETTINGS)
        torch.testing.assert_close(run.final_state["x"], separate.final_state["x"], atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(single.final_state["x"], separate.final_state["x"], atol=0, rtol=0)
    assert not torch.equal(task().initial([0])[0], task().initial([3])[3])


def test_results_views_agree_with_hand_computations() -> None:
    def runs(accuracies: list[float], diverged: int | None = None) -> History:
        return history({r: {"train_loss": 1.0 / r if r else 2.0, "test_accuracy": accuracies[r // 2],
                            "seconds": 0.5} for r in range(0, 9, 2)}, diverged)

    t = Task("t", blobs(), lambda seed: None, SETTINGS, baseline=10.0, unit=100.0)
    u = Task("u", blobs(), lambda seed: None, SETTINGS, baseline=0.0, metric="test_loss", higher_is_better=False)
    a = common.Results({"t": {"A": [runs([0, .1, .2, .3, .4]), runs([0, .2, .3, .4, .5])],
                              "B": [runs([0, .1, .1, .1, .1]), runs([0, .1, .2, .2, .2], diverged=8)]}},
                       (0, 1), {"t": t})
    scores = a.scores()
    assert scores.loc[("t", "A")].tolist() == pytest.approx([25.0, 35.0])  # rounds 2-8: 100 * mean(.1 .2 .3 .4)
    assert math.isnan(scores.loc[("t", "B"), 1]) and a.means().loc["t", "A"] == pytest.approx(30.0)
    assert a.mean_sd(digits=1).loc["A", "t"] == "30.0 ± 7.1" and a.mean_sd().loc["B", "t"] == "1 of 2 diverged"
    assert a.scores("train_loss").loc[("t", "A"), 0] == pytest.approx((1 / 2 + 1 / 4 + 1 / 6 + 1 / 8) / 4)
    assert a.paired("B").loc["t", "A"] == "diverged on 0 vs 1 of 2 seeds (confirmed)"
    assert a.diverged().to_dict("records") == [{"task": "t", "method": "B", "seed": 1, "diverged at round": 8}]
    assert a.seconds().loc["A", "t"] == pytest.approx(2.5) and a.at_round("test_accuracy", 4).loc["A", "t"] == 0.25
    assert a.settings().loc["t", "rounds"] == 6 and list(a.methods("B")["t"]) == ["B"]
    b = common.Results({"u": {"A": [history({0: {"test_loss": 1.0}, 2: {"test_loss": 0.5}})] * 2,
                              "B": [history({0: {"test_loss": 1.0}, 2: {"test_loss": 0.7}}),
                                    history({0: {"test_loss": 1.0}, 2: {"test_loss": 0.8}})]}}, (0, 1), {"u": u})
    joined = a | b
    # lower is better: differences 0.2, 0.3; t = 0.25 / 0.05 = 5 on 1 df: p = 1 - 2 atan(5) / pi, t quantile 12.71
    half, p = 12.7062 * 0.05, 1 - 2 * math.atan(5) / math.pi
    assert list(joined) == ["t", "u"] and joined.paired("B").loc["u", "A"].startswith(
        f"+0.25 [{0.25 - half:+.2f}, {0.25 + half:+.2f}], p {p:.3f}")
    with pytest.raises(ValueError, match="same seeds"):
        a | common.Results({}, (0,), {})
    with pytest.raises(ValueError, match="reference='C' has no runs"):
        a.paired("C")


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
    assert fedopt_paper.late_gain(history) == pytest.approx(0.65 - 0.5)  # at or before round 16.7 of 25: round 15
    assert fedopt_paper.late_gain(history, fraction=0.5) == pytest.approx(0.65 - 0.3)  # at or before 12.5
    assert fedopt_paper.late_gain(history, fraction=0.9) == pytest.approx(0.65 - 0.1)
    # windows of 2: the last two (0.6, 0.65) against the two ending at round 15 (0.3, 0.5)
    assert fedopt_paper.late_gain(history, evaluations=2) == pytest.approx((0.6 + 0.65) / 2 - (0.3 + 0.5) / 2)
    # a window longer than the evaluations before the cut takes those there are: round 5 only at fraction 0.8
    assert fedopt_paper.late_gain(history, fraction=0.8, evaluations=3) == \
        pytest.approx((0.5 + 0.6 + 0.65) / 3 - (0.1 + 0.3) / 2)
    with pytest.raises(ValueError, match="evaluations=0"):
        fedopt_paper.late_gain(history, evaluations=0)
    assert math.isnan(fedopt_paper.late_gain(History(frame, "FedAvg", "loop", {}, diverged_round=30)))
    with pytest.raises(ValueError, match="fraction=0"):
        fedopt_paper.late_gain(history, fraction=0)
    with pytest.raises(ValueError, match="'accuracy' is not a column"):
        fedopt_paper.late_gain(history, "accuracy")


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


def test_tune_chooses_the_best_mean_over_seeds_and_never_a_point_that_diverged() -> None:
    grids = {"FedAvg": {"client_lr": [0.01, 0.3, 1e6]}}  # 1e6 diverges
    score = lambda h: common.window_score(h, "train_loss", 4, evaluated="train_loss")  # noqa: E731
    selection = common.Selection("train_loss", higher_is_better=False)
    tuning = common.tune(task(selection=selection), {"FedAvg": algorithms.fedavg}, grids, seeds=[0, 1])
    table = tuning.tables["FedAvg"]
    for lr in (0.01, 0.3):
        separate = [score(simulate(task().problem(seed), algorithms.fedavg(lr), seed=seed, progress=False,
                                   **SETTINGS)) for seed in (0, 1)]
        assert table.loc[lr, [0, 1]].tolist() == pytest.approx(separate, rel=1e-5)
        assert table.loc[lr, "score"] == pytest.approx(np.mean(separate), rel=1e-5)
    assert math.isnan(table.loc[1e6, "score"]) and tuning.chosen == {"FedAvg": {"client_lr": 0.3}}
    assert type(tuning.chosen["FedAvg"]["client_lr"]) is float and not tuning.higher_is_better
    assert tuning.on_edge() == {} and tuning.chosen_table().loc["FedAvg", "client_lr"] == "0.3"
    # a tuning run of its own length and period: 3 rounds scored on their last 2
    short = common.Selection("train_loss", evaluations=2, higher_is_better=False, rounds=3, eval_every=0)
    found = common.tune(task(), {"FedAvg": algorithms.fedavg}, {"FedAvg": {"client_lr": [0.01, 0.3]}}, [0],
                        selection=short)
    three = simulate(task().problem(0), algorithms.fedavg(0.3), seed=0, progress=False,
                     **{**SETTINGS, "rounds": 3, "eval_every": 0})
    assert found.tables["FedAvg"].loc[0.3, 0] == pytest.approx(three.frame["train_loss"].iloc[-2:].mean(), rel=1e-5)
    assert tuning.seeds == (0, 1)  # a tuning keeps its seeds: judging on them is refused by name
    with pytest.raises(ValueError, match=r"tuning_seeds=\[0, 1\] share seeds \[1\] with the judging seeds"):
        common.bind({"FedAvg": algorithms.fedavg}, tuning, seeds=[1, 2, 3])
    bound = common.bind({"FedAvg": algorithms.fedavg}, tuning, seeds=[2, 3])
    assert bound["FedAvg"].keywords == {"client_lr": 0.3}
    with pytest.raises(TypeError, match="give the judging seeds"):
        common.bind({"FedAvg": algorithms.fedavg}, tuning)
    with pytest.raises(ValueError, match="which have no builder"):
        common.tune(task(), {}, grids, seeds=[0])
    with pytest.raises(ValueError, match="repeats a seed"):
        common.tune(task(), {"FedAvg": algorithms.fedavg}, grids, seeds=[0, 0])


def test_beyond_edges_continues_an_axis_on_its_own_spacing() -> None:
    grid = {"lr": [0.001, 0.01, 0.02, 0.05, 0.1], "alpha": [0.1, 0.9], "server_lr": [10**-2.5, 10**-2, 10**-1.5]}
    assert common.beyond_edges(grid, {"lr": 0.1, "alpha": 0.9, "server_lr": 0.01}) == {"lr": 0.2}
    assert common.beyond_edges(grid, {"lr": 0.001, "alpha": 0.1, "server_lr": 10**-1.5}) == pytest.approx(
        {"lr": 0.0001, "server_lr": 0.1})  # below 0.001 by 0.01's ratio; a decade above 10^-1.5 in half-decades
    assert common.beyond_edges(grid, {"lr": 0.02, "alpha": 0.1, "server_lr": 0.01}) == {}  # two values: no edge


def test_tune_widens_an_axis_whose_choice_sits_at_its_end() -> None:
    """FedAvg on the blobs for 4 rounds: a larger step is better up to well beyond 0.04, so a grid ending there is
    continued (0.08, then 0.16) and the search goes on; with widen=0 the end stays the choice."""
    selection = common.Selection("train_loss", higher_is_better=False)
    grids = {"FedAvg": {"client_lr": [0.01, 0.02, 0.04]}}
    narrow = common.tune(task(selection=selection), {"FedAvg": algorithms.fedavg}, grids, seeds=[0])
    wide = common.tune(task(selection=selection), {"FedAvg": algorithms.fedavg}, grids, seeds=[0], widen=2)
    assert narrow.chosen["FedAvg"]["client_lr"] == 0.04 and narrow.on_edge() == {"FedAvg": ["client_lr"]}
    assert wide.grids["FedAvg"]["client_lr"] == [0.01, 0.02, 0.04, 0.08, 0.16]
    assert list(wide.tables["FedAvg"].index) == [0.01, 0.02, 0.04, 0.08, 0.16]
    assert wide.tables["FedAvg"].loc[0.04, "score"] == narrow.tables["FedAvg"].loc[0.04, "score"]
    assert wide.chosen["FedAvg"]["client_lr"] == wide.tables["FedAvg"]["score"].idxmin() > 0.04
    with pytest.raises(ValueError, match=r"widen=-1"):
        common.tune(task(), {"FedAvg": algorithms.fedavg}, grids, seeds=[0], widen=-1)


def test_a_second_stage_replaces_the_choice_only_where_it_scores_better() -> None:
    first = common.Tuning({"A": {"lr": 0.1}, "B": {"lr": 0.2}},
                          {"A": pd.DataFrame({"score": [0.5, 0.3]}, index=[0.01, 0.1]),
                           "B": pd.DataFrame({"score": [0.4, 0.2]}, index=[0.1, 0.2])},
                          {"A": {"lr": [0.01, 0.1]}, "B": {"lr": [0.1, 0.2]}}, higher_is_better=False, seeds=(5,))
    second = common.Tuning({"A": {"lr": 0.1, "beta": 0.9}, "B": {"lr": 0.2, "beta": 0.1}},
                           {"A": pd.DataFrame({"score": [0.25, 0.35]}), "B": pd.DataFrame({"score": [0.3, 0.21]})},
                           {"A": {"lr": [0.1], "beta": [0.1, 0.9]}, "B": {"lr": [0.2], "beta": [0.1, 0.9]}},
                           higher_is_better=False, seeds=(5,))
    merged = first.merged(second)  # A: 0.25 < 0.3, taken; B: 0.21 > 0.2, the first stage's point stands
    assert merged.chosen == {"A": {"lr": 0.1, "beta": 0.9}, "B": {"lr": 0.2}}
    assert merged.grids["A"] == {"lr": [0.01, 0.1], "beta": [0.1, 0.9]} and "A, stage 2" in merged.tables
    with pytest.raises(ValueError, match="same seeds and rule"):
        first.merged(replace(second, seeds=(6,)))


def test_a_tuning_marks_its_edges_and_draws_its_heat_map() -> None:
    table = pd.DataFrame({0: [0.1, 0.5, 0.2, 0.3], 1: [0.1, 0.7, 0.2, 0.1]},
                         index=pd.MultiIndex.from_product([[0.1, 1.0], [0.01, 0.1]], names=["lr", "server_lr"]))
    table["score"] = table[[0, 1]].mean(axis=1)
    grids = {"M": {"lr": [0.01, 0.1, 1.0], "server_lr": [0.01, 0.1]}}
    tuning = common.Tuning({"M": {"lr": 0.1, "server_lr": 0.1}}, {"M": table}, grids)
    assert tuning.on_edge() == {"M": ["server_lr"]}  # lr 0.1 is inside [0.01, 1]
    assert tuning.chosen_table().loc["M"].tolist() == ["0.1", "0.1"]  # two values: an end either way, not marked
    edged = common.Tuning({"M": {"lr": 1.0, "server_lr": 0.1}}, {"M": table}, grids)
    assert edged.chosen_table().loc["M", "lr"] == "1*"
    heat = tuning.heatmap("M", "server_lr", "lr")
    assert heat.index.tolist() == [0.1, 0.01] and heat.columns.tolist() == [0.1, 1.0]
    assert heat.loc[0.1, 0.1] == pytest.approx(0.6) and heat.loc[0.01, 1.0] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="must be the axes"):
        tuning.heatmap("M", "lr", "beta")


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

    from papers.fafed import experiment as fafed
    from papers.fedli import experiment as fedli
    from papers.fedopt import experiment as fedopt
    from papers.fedopt import tuning as fedopt_grids
    from papers.padamfed import experiment as padamfed

    for paper in (fedopt, padamfed, fedli, fafed):
        assert paper.SCALES and all(isinstance(scale, common.Scale) and dataclasses.is_dataclass(scale)
                                    and scale.name == name for name, scale in paper.SCALES.items()), paper.__name__
        assert all(isinstance(scale.seeds, tuple) and len(scale.seeds) >= 2 for scale in paper.SCALES.values())
        assert common.scale_at(paper.SCALES, "small") is paper.SCALES["small"]
        with pytest.raises(ValueError, match=r"SCALE='huge' not one of"):
            common.scale_at(paper.SCALES, "huge")
    assert all(isinstance(scale, common.Scale) for scale in fedopt_grids.GRIDS.values())  # 01's grids, per scale
    assert fedopt.SCALES["small"].seeds_or() == [0, 1, 2, 3, 4] and fafed.SCALES["small"].seeds_or([7, 8]) == [7, 8]
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
    with pytest.raises(ValueError, match=r"tuning_seeds=\[2, 3\] share seeds \[2\] with the judging seeds"):
        common.Scale("small", seeds=(0, 1, 2), rounds=10, eval_every=5, tuning_seeds=(2, 3))
    with pytest.raises(ValueError, match=r"tuning_seeds=\[5\] share seeds \[5\]"):
        Scope(("t",), "small", 10, (4, 5), tuning_seeds=(5,))
    for paper in (fedopt, padamfed, fedli, fafed):  # every scale that tunes, tunes apart
        for scale in paper.SCALES.values():
            assert not set(scale.tuning_seeds) & set(scale.seeds), (paper.__name__, scale.name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fafed.SCALES["small"].rounds = 3  # a scale is changed with dataclasses.replace, checked again


# ---- the experiment contract -----------------------------------------------------------------------------------------


def test_every_paper_answers_to_the_same_names_with_the_same_signatures() -> None:
    import inspect

    from papers.fafed import experiment as fafed
    from papers.fedli import experiment as fedli
    from papers.fedopt import experiment as fedopt
    from papers.padamfed import experiment as padamfed

    for paper in (fedopt, padamfed, fedli, fafed):
        for name, parameters in common.CONTRACT.items():
            assert hasattr(paper, name), f"{paper.__name__} has no {name}"
            if parameters is not None:
                assert tuple(inspect.signature(getattr(paper, name)).parameters)[:len(parameters)] == parameters, \
                    f"{paper.__name__}.{name}{inspect.signature(getattr(paper, name))}"
        assert paper.run is common.run and paper.tune is common.tune  # the machinery is common's, not a copy
        assert all(p.kind is p.KEYWORD_ONLY for p in inspect.signature(paper.tasks).parameters.values()
                   if p.name != "scale")
        assert list(inspect.signature(paper.make_builders).parameters) == ["task", "scale"]


# ---- recorded results ------------------------------------------------------------------------------------------------


def test_a_value_written_to_seven_digits_sits_on_its_grids_end() -> None:
    grids = {"FedAdam": {"lr": [0.01, 0.1], "server_lr": [10**-2.5, 10**-2, 10**-1.5]}}
    assert common.on_edge({"FedAdam": {"lr": 0.05, "server_lr": 0.0316228}}, grids) == {"FedAdam": ["server_lr"]}
    assert common.on_edge({"FedAdam": {"lr": 0.1, "server_lr": 0.01}}, grids) == {"FedAdam": ["lr"]}
    assert common.on_edge({"FedAdam": {"lr": 0.05, "server_lr": 0.0316}}, grids) == {}  # 0.1% off: not the end


def test_a_recorded_table_reads_back_with_its_commit_and_date(tmp_path) -> None:
    from papers import records

    table = pd.DataFrame({("FedAvg", "paper"): [85.0, 1.5], ("FedAvg", "ours"): ["80.1 ± 0.2", "x"]},
                         index=pd.MultiIndex.from_tuples([("cr", "a"), ("ae", "b")], names=["task", "row"]))
    assert records.record({"table1": table}, "01_fedopt", "small", root=tmp_path) == []  # small shows, not records
    assert records.recorded("01_fedopt", "table1", root=tmp_path) is None
    assert records.beside(table, "01_fedopt", "table1", root=tmp_path) is table  # nothing beside it yet
    assert records.status("01_fedopt", "table1", root=tmp_path).startswith("medium: not recorded yet")
    [path] = records.record({"table1": table}, "01_fedopt", "medium", root=tmp_path)
    assert path == tmp_path / "medium" / "01_fedopt" / "table1.csv"
    found = records.recorded("01_fedopt", "table1", root=tmp_path)
    pd.testing.assert_frame_equal(found.table, table, check_dtype=False)
    assert found.commit == records.commit() and found.label.startswith(f"ours, medium, commit {found.commit} (")
    shown = records.beside(table, "01_fedopt", "table1", label="ours, small", root=tmp_path)
    assert list(shown.columns.get_level_values(0).unique()) == ["ours, small", found.label]
    assert records.status("01_fedopt", "table1", root=tmp_path) == \
        f"medium: recorded at commit {found.commit} on {found.date}, shown beside ours"
    with pytest.raises(ValueError, match="notebook='../x' must be a plain file name"):
        records.record({"t": table}, "../x", "medium", root=tmp_path)
    with pytest.raises(ValueError, match="scale='huge'"):
        records.record({"t": table}, "01_fedopt", "huge", root=tmp_path)


def test_a_claims_tables_verdicts_sit_beside_the_recorded_ones_row_by_row(tmp_path) -> None:
    from papers import records

    recorded = pd.DataFrame({"claim (the paper)": ["a", "b"], "verdict": ["holds", "does not hold"]})
    ours = pd.DataFrame({"claim (the paper)": ["a", "b", "c"], "verdict": ["partly", "does not hold", "holds"]})
    assert records.verdicts_beside(ours, "04_fafed", root=tmp_path) is None  # nothing recorded yet
    records.record({"claims": recorded}, "04_fafed", "medium", root=tmp_path)
    shown = records.verdicts_beside(ours, "04_fafed", label="ours, small", root=tmp_path)
    found = records.recorded("04_fafed", "claims", root=tmp_path)
    assert list(shown.columns) == ["ours, small", found.label]
    assert shown.to_dict("list") == {"ours, small": ["partly", "does not hold", "holds"],
                                     found.label: ["holds", "does not hold", "not recorded"]}
    with pytest.raises(ValueError, match="claims_table must be a claims table with a 'verdict' column"):
        records.verdicts_beside(ours.drop(columns="verdict"), "04_fafed", root=tmp_path)


HALF_DECADES = [float(10.0 ** (k / 2)) for k in range(-4, 5)]  # 0.01 .. 100, 1 among them


def _curves(centres: dict[int, float], height: float = 0.9, fall: float = 0.1) -> dict:
    """A unimodal score per seed: ``height - fall (log10 v - centre)^2``."""
    return {seed: (lambda v, c=centre: height - fall * (math.log10(v) - c) ** 2) for seed, centre in centres.items()}


def _full(curves: dict, values: list[float]) -> pd.DataFrame:
    return pd.DataFrame({seed: [f(v) for v in values] for seed, f in curves.items()}, index=values)


def test_outward_sweep_gives_the_whole_grids_widths_from_fewer_runs() -> None:
    """Run outward from 1 and stopped on a side at the first value where every seed (and the mean) lies more than
    ``within`` below its best so far: the good spans and their interpolated widths, against the curve's own best and
    against a higher reference, equal the whole grid's; the values beyond the stop are not run."""
    curves, asked = _curves({0: 0.3, 1: 0.5, 2: 0.4}), []

    def score_at(values: list[float]) -> pd.DataFrame:
        asked.append(list(values))
        return _full(curves, values)
    outward = common.outward_sweep(score_at, HALF_DECADES, within=0.03)
    full = _full(curves, HALF_DECADES)
    # by hand (log10 v = x): the bests so far at x = 0.5 are 0.896, 0.900, 0.899; at x = -0.5 the seeds score
    # 0.836, 0.800, 0.819, all more than 0.03 below: the lower side stops; at x = 1 seed 1 scores 0.875, within
    # 0.03 of its 0.900: the upper side goes on; at x = 1.5 (0.756, 0.800, 0.779) it stops
    assert asked == [[1.0], [10 ** -0.5, 10 ** 0.5], [10.0], [10 ** 1.5]]
    ran = [v for v in HALF_DECADES if not outward.loc[v].isna().all()]
    assert ran == [10 ** -0.5, 1.0, 10 ** 0.5, 10.0, 10 ** 1.5]
    assert sorted(v for step in asked for v in step) == ran  # each value run once
    pd.testing.assert_frame_equal(outward.loc[ran], full.loc[ran])
    for seed in curves:
        assert common.span_decades(outward[seed], 0.03) == pytest.approx(common.span_decades(full[seed], 0.03))
        assert common.good_span(outward[seed], 0.03) == common.good_span(full[seed], 0.03)
        higher = full[seed].max() + 0.01  # another method's better score: a span inside the own one
        assert common.span_decades(outward[seed], 0.03, best=higher) == pytest.approx(
            common.span_decades(full[seed], 0.03, best=higher))
    means_full, means_out = full.mean(axis=1), outward.mean(axis=1, skipna=False)
    assert common.good_span(means_out, 0.03) == common.good_span(means_full, 0.03)
    # each side's last run value has fallen on every seed; the one before it has not on some seed
    for side in (ran[0], ran[-1]):
        assert (full.loc[side] < full.loc[ran].max() - 0.03).all()
    assert not (full.loc[ran[1]] < full.loc[ran].max() - 0.03).all()


def test_outward_sweep_stops_at_a_divergence_and_checks_its_start() -> None:
    """A value where every seed diverged (NaN) ends its side; ``around`` must be one of the values."""
    asked = []

    def score_at(values: list[float]) -> pd.DataFrame:
        asked.extend(values)
        return pd.DataFrame({0: [0.8 if v <= 1 else math.nan for v in values],
                             1: [0.81 if v <= 1 else math.nan for v in values]}, index=values)
    table = common.outward_sweep(score_at, [0.01, 0.1, 1.0, 10.0, 100.0], within=0.03)
    assert sorted(asked) == [0.01, 0.1, 1.0, 10.0]  # 100 never run
    assert table.loc[10.0].isna().all() and table.loc[100.0].isna().all()
    assert table.loc[0.01].tolist() == [0.8, 0.81]
    assert table.loc[0.1].tolist() == [0.8, 0.81]  # flat below 1: runs to the grid's end
    with pytest.raises(ValueError, match="around=1.0 is not one of values"):
        common.outward_sweep(score_at, [0.1, 10.0], within=0.03)
    with pytest.raises(ValueError, match="within"):
        common.outward_sweep(score_at, [0.1, 1.0], within=-1)


def test_span_decades_by_seed_measures_each_column_against_its_own_or_a_shared_best() -> None:
    """Seed 0 [0.70, 0.80, 0.79] at 0.1, 1, 10 within 0.03 of its 0.80: 1..10 and (0.80 - 0.77) / (0.80 - 0.70) = 0.3
    of the decade towards 0.1, 1.3 decades; against a shared 0.85 (threshold 0.82) nothing is within: 0.  Seed 1
    [0.80, 0.80, 0.80]: the whole grid, 2 decades, either way."""
    table = pd.DataFrame({0: [0.70, 0.80, 0.79], 1: [0.80, 0.80, 0.80]}, index=[0.1, 1.0, 10.0])
    assert common.span_decades_by_seed(table, 0.03) == pytest.approx([1.3, 2.0])
    assert common.span_decades_by_seed(table, 0.03, best={0: 0.85, 1: 0.80}) == pytest.approx([0.0, 2.0])
