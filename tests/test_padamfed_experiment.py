"""Notebook 02's experiment (papers.padamfed.experiment and theory): tasks on the common layer, the
theorems' step sizes, builders, tuning through common.tune, runs, robustness, the scaled quadratics."""

from __future__ import annotations

import dataclasses
import functools
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import cifar_like_loader  # noqa: E402
from scipy import stats  # noqa: E402

from fedcore import algorithms, explore, models, objectives  # noqa: E402
from fedcore.comparisons import OUTCOMES  # noqa: E402
from fedcore.data import load_fashion_mnist  # noqa: E402
from fedcore.problem import Problem  # noqa: E402
from fedcore.run import simulate  # noqa: E402
from papers import common  # noqa: E402
from papers.common import ROUND_SETTINGS, Task, Tuning  # noqa: E402
from papers.padamfed import design, experiment, theory  # noqa: E402
from papers.padamfed import explore as padamfed_explore  # noqa: E402

BASELINES_CHOSEN = {"FedAvg": {"client_lr": 0.1}, "SCAFFOLD": {"client_lr": 0.1},
                    "SCAFFOLD-M": {"eta": 0.1, "beta": 0.3}, "SCAFFOLD-M-VR": {"eta": 0.1, "beta": 0.3}}
SMALL = {"rounds": 60, "clients_per_round": 10, "local_steps": 5}

# ------------------------------------------------------------------ settings and builders


def test_theorem_step_sizes_for_the_task_by_hand() -> None:
    """S = 10, K = 5, T = 60 (small): eta = 1/(5 sqrt 60), gamma = 50^(1/4) / 60^(3/4), beta = sqrt(50/60);
    VR: eta = 1/300, gamma = beta = 50^(1/3) / 60^(2/3)."""
    one = experiment.theorem_step_sizes("PAdaMFed", SMALL)
    assert one == pytest.approx({"eta": 1 / (5 * math.sqrt(60)), "gamma": 50**0.25 / 60**0.75,
                                 "beta": math.sqrt(50 / 60)})
    two = experiment.theorem_step_sizes("PAdaMFed-VR", SMALL)
    assert two == pytest.approx({"eta": 1 / 300, "gamma": 50 ** (1 / 3) / 60 ** (2 / 3),
                                 "beta": 50 ** (1 / 3) / 60 ** (2 / 3)})
    # S, K, T come from the settings: S = 5, K = 2, T = 60 gives eta = 1 / (2 sqrt 60), beta = sqrt(10 / 60)
    other = experiment.theorem_step_sizes("PAdaMFed", {**SMALL, "clients_per_round": 5, "local_steps": 2})
    assert other["eta"] == pytest.approx(1 / (2 * math.sqrt(60))) and other["beta"] == pytest.approx(math.sqrt(1 / 6))
    with pytest.raises(ValueError, match="method='FedAvg' not one of"):
        experiment.theorem_step_sizes("FedAvg", SMALL)
    with pytest.raises(ValueError, match=r"lacks \['rounds'\]"):
        experiment.theorem_step_sizes("PAdaMFed", {"clients_per_round": 10, "local_steps": 5})


def test_scales_run_two_horizons_and_smoke_grids_keep_their_ends() -> None:
    """small: T = 60 with S K = 50, and T = 300 with S K = 10 (T much larger than S K); paper adds CIFAR-10's T."""
    small, paper = experiment.SCALES["small"], experiment.SCALES["paper"]
    assert small.tasks == paper.tasks == ("fashion_mnist", "fashion_mnist_long")
    assert small.rounds == {"fashion_mnist": 60, "fashion_mnist_long": 300} and paper.rounds["cifar10"] == 500
    long = experiment.HORIZONS["fashion_mnist_long"]
    assert small.rounds["fashion_mnist_long"] >= 30 * long["clients_per_round"] * long["local_steps"]
    assert common.grids_at("smoke", experiment.GRIDS)["SCAFFOLD-M"] == {"eta": [0.01, 1.0], "beta": [0.1, 1.0]}
    # judged on five seeds, tuned on two others; the robustness sweep on the long horizon at small, both at medium
    assert small.seeds == (0, 1, 2, 3, 4) and small.tuning_seeds == (100, 101)
    assert small.swept == ("fashion_mnist_long",) and experiment.SCALES["medium"].swept == small.tasks
    assert experiment.SCALES["smoke"].seeds == (0, 1) and experiment.SCALES["smoke"].tuning_seeds == (100,)
    assert all(set(scale.swept) <= set(scale.tasks) for scale in experiment.SCALES.values())
    assert all(scale.tuning_seeds for scale in experiment.SCALES.values())


def test_multipliers_are_half_decades_with_one_among_them() -> None:
    root = 10 ** 0.5
    assert experiment.SCALES["small"].factors() == pytest.approx([1 / root**3, 0.1, 1 / root, 1.0, root, 10.0,
                                                                  root**3])
    assert 1.0 in experiment.SCALES["small"].factors() and experiment.SCALES["small"].factors()[1] == 0.1
    assert experiment.SCALES["smoke"].factors() == pytest.approx([1 / root, 1.0])
    assert experiment.SCALES["medium"].factors() == pytest.approx([10.0 ** (k / 2) for k in range(-4, 5)])


@pytest.mark.parametrize("method, base, factor, reading, expected", [
    ("FedAvg", {"client_lr": 0.1}, 10.0, "local rate", {"client_lr": 1.0}),
    ("PAdaMFed", {"eta": 0.01, "gamma": 0.2, "beta": 0.5}, 10.0, "every rate", {"eta": 0.1, "gamma": 2.0, "beta": 0.5}),
    ("PAdaMFed", {"eta": 0.01, "gamma": 0.2, "beta": 0.5}, 10.0, "local rate", {"eta": 0.1, "gamma": 0.2, "beta": 0.5}),
    ("SCAFFOLD-M", {"eta": 0.1, "beta": 0.3}, 0.1, "every rate", {"eta": 0.01, "beta": 0.3}),
    ("SCAFFOLD-M", {"eta": 0.1, "beta": 0.3}, 0.1, "local rate", {"eta": 0.01, "beta": 0.3, "factor": 10.0}),
])
def test_scaled_multiplies_the_rates_of_each_reading(method, base, factor, reading, expected) -> None:
    assert experiment.scaled(method, base, factor, reading) == pytest.approx(expected)
    assert base == dict(base)  # the defaults are not changed in place


def test_scaffold_m_local_reading_keeps_its_server_step() -> None:
    """gamma = factor * eta * K: under "local rate" eta moves and gamma stays; under "every rate" both move."""
    base = {"eta": 0.1, "beta": 0.3}
    gamma = {r: experiment.builders_for(5)["SCAFFOLD-M"](**experiment.scaled("SCAFFOLD-M", base, 10.0, r)).gamma
             for r in experiment.READINGS}
    assert gamma["local rate"] == pytest.approx(0.1 * 5) and gamma["every rate"] == pytest.approx(10 * 0.1 * 5)
    assert experiment.builders_for(2)["SCAFFOLD-M"](**base).gamma == pytest.approx(0.1 * 2)


def test_builders_make_the_named_algorithms_at_their_points(stand_in) -> None:
    """Each task's methods (METHODS_AT) at K of its settings; PAdaMFed at Theorem 1's steps for its S, K, T
    (smoke: 10, 5, 4), the baselines at their tuned points; the factory's options stay keywords."""
    builders = experiment.make_builders(stand_in, "smoke")
    points = experiment.points(stand_in, BASELINES_CHOSEN)
    built = {m: build() for m, build in common.bind(builders, points).items()}
    assert {m: a.name for m, a in built.items()} == {m: m for m in experiment.METHODS}
    assert built["PAdaMFed"].eta == pytest.approx(1 / (5 * math.sqrt(4))) and built["PAdaMFed"].beta == 1.0
    assert built["SCAFFOLD-M-VR"].gamma == pytest.approx(0.5) and built["SCAFFOLD-M-VR"].variance_reduction
    assert built["PAdaMFed"].initialization == "every_client"  # the text's line 1
    options = {"initialization": "first_round", "server_momentum": "mean_direction"}
    variant = builders["PAdaMFed-VR"](eta=0.1, gamma=0.2, beta=0.5, **options)
    assert (variant.initialization, variant.server_momentum) == ("first_round", "mean_direction")
    long = experiment.tasks("smoke")["fashion_mnist_long"]
    assert list(experiment.make_builders(long, "smoke")) == list(experiment.METHODS_AT["fashion_mnist_long"])
    assert experiment.make_builders(long, "smoke")["SCAFFOLD-M"](**BASELINES_CHOSEN["SCAFFOLD-M"]).gamma == \
        pytest.approx(0.1 * 2)
    with pytest.raises(ValueError, match=r"no hyperparameters for \['SCAFFOLD'\]"):
        experiment.points(stand_in, {m: p for m, p in BASELINES_CHOSEN.items() if m != "SCAFFOLD"})


# ------------------------------------------------------------------ tasks


@pytest.fixture(scope="module")
def stand_in() -> Task:
    return experiment.tasks("smoke")["fashion_mnist"]


def test_stand_in_task_at_smoke_scale(stand_in) -> None:
    data = stand_in.data
    assert stand_in.name == "fashion_mnist" and data.num_clients == 20 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 1.0}
    assert dict(stand_in.settings) == {"rounds": 4, "clients_per_round": 10, "local_steps": 5, "batch_size": 32,
                                       "eval_every": 2, "weighting": "uniform"}
    assert tuple(stand_in.settings) == ROUND_SETTINGS
    assert stand_in.problem(0).x0().numel() == 784 * 64 + 64 + 64 * 10 + 10
    assert stand_in.metric == "test_accuracy" and stand_in.higher_is_better and stand_in.unit == 1.0
    assert stand_in.model_label == experiment.MLP
    most_frequent = float(data.test_targets.bincount().max()) / data.test_targets.numel()
    assert stand_in.baseline == pytest.approx(most_frequent) and 0.05 < stand_in.baseline < 0.3
    # the seed draws the model, not the partition
    assert not torch.equal(stand_in.problem(0).x0(), stand_in.problem(1).x0())
    both = experiment.tasks("smoke")  # one partition for both horizons
    assert both["fashion_mnist_long"].data is both["fashion_mnist"].data
    assert dict(both["fashion_mnist_long"].settings) == {**stand_in.settings, "rounds": 8, "eval_every": 4,
                                                         "clients_per_round": 5, "local_steps": 2}


def test_tasks_draw_the_partition_from_its_seed_and_refuse_bad_names() -> None:
    smoke = experiment.SCALES["smoke"]
    other = experiment.tasks(dataclasses.replace(smoke, tasks=("fashion_mnist",)), partition_seed=1)
    assert list(other) == ["fashion_mnist"]
    assert not torch.equal(other["fashion_mnist"].data.sizes, experiment.tasks("smoke")["fashion_mnist"].data.sizes)
    with pytest.raises(ValueError, match="'cifar10' runs only at scale 'paper'"):
        experiment.tasks(dataclasses.replace(experiment.SCALES["small"], tasks=("cifar10",)))
    with pytest.raises(ValueError, match=r"tasks='emnist' not one of \['cifar10', 'fashion_mnist', 'fashion_mnist_lo"):
        experiment.tasks(dataclasses.replace(smoke, tasks=("emnist",)))
    with pytest.raises(ValueError, match="partition_seed=-1"):
        experiment.tasks("smoke", partition_seed=-1)
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.tasks("huge")


def test_second_partition_is_the_short_horizon_on_another_draw(stand_in) -> None:
    """Another partition and test subset (from the seed given), the short horizon's settings and model; its methods:
    the parameter-free ones and whichever baselines were tuned there; the budget is S K T gradients a run, twice
    for a variance-reduced step."""
    second = experiment.second_partition("smoke", partition_seed=1)
    assert second.name == experiment.SECOND_PARTITION and dict(second.settings) == dict(stand_in.settings)
    assert not torch.equal(second.data.sizes, stand_in.data.sizes)
    assert not torch.equal(second.data.test_targets, stand_in.data.test_targets)
    assert list(experiment.make_builders(second, "smoke")) == list(experiment.METHODS)
    points = experiment.points(second, {"SCAFFOLD-M": BASELINES_CHOSEN["SCAFFOLD-M"]})  # the methods given a point
    assert list(points) == ["PAdaMFed", "PAdaMFed-VR", "SCAFFOLD-M"]
    assert experiment.gradient_steps("PAdaMFed", stand_in.settings) == 10 * 5 * 4
    assert experiment.gradient_steps("PAdaMFed-VR", stand_in.settings) == 2 * 10 * 5 * 4
    long = experiment.SCALES["small"]
    assert long.rounds["fashion_mnist"] * 10 * 5 == long.rounds["fashion_mnist_long"] * 5 * 2  # the same budget


def test_rate_grid_keeps_the_momentum_and_sweeps_the_rate() -> None:
    grid = experiment.GRIDS["SCAFFOLD-M"]
    assert experiment.rate_grid(grid, {"eta": 0.1, "beta": 0.3}) == {"eta": grid["eta"], "beta": [0.3]}
    fedavg = experiment.GRIDS["FedAvg"]
    assert experiment.rate_grid(fedavg, {"client_lr": 0.1}) == {"client_lr": fedavg["client_lr"]}
    assert set(experiment.SWEPT_AT["fashion_mnist_long"]) <= set(experiment.METHODS_AT["fashion_mnist_long"])


def test_design_effects_pair_each_step_with_the_one_before() -> None:
    """Scores of three steps on three seeds: the mean and sd, and each step minus the one before with its 95%
    paired t interval computed here (t(2) = 4.303)."""
    scores = pd.DataFrame({0: [0.50, 0.60, 0.70], 1: [0.52, 0.61, 0.69], 2: [0.51, 0.63, 0.72]},
                          index=["normalized local steps", "+ momentum", "+ control variates (PAdaMFed)"])
    table = design.effects(scores)
    assert table.loc["normalized local steps", "score, mean ± sd"] == "51.00 ± 1.00"
    assert table.loc["normalized local steps", "minus the step before"] == ""
    differences = 100 * (scores.iloc[1] - scores.iloc[0])  # 10, 9, 12
    half = stats.t.ppf(0.975, 2) * differences.std() / math.sqrt(3)
    assert table.loc["+ momentum", "minus the step before"].startswith(
        f"{differences.mean():+.2f} [{differences.mean() - half:+.2f}, {differences.mean() + half:+.2f}], p ")
    assert table.loc["+ momentum", "minus the step before"].endswith("(confirmed)")


def test_a_tasks_runs_are_the_first_passes_runs(stand_in) -> None:
    """The task's data, model and settings give the runs notebook 02 made before the common layer: Fashion-MNIST by
    Dirichlet(1) on 20 clients with 200 test images drawn from the seed, the MLP drawn from the seed, and
    simulate's options written out by hand."""
    data = load_fashion_mnist(20, "dirichlet", 0, alpha=1.0).test_subset(200, 0)
    by_hand = dict(rounds=4, clients_per_round=10, local_steps=5, batch_size=32, eval_every=2, weighting="uniform",
                   progress=False)
    point = {"PAdaMFed": {"eta": 0.1, "gamma": 0.5, "beta": 0.7}}
    bound = common.bind(experiment.make_builders(stand_in, "smoke"), point)
    ours = common.run(stand_in, {"PAdaMFed": bound["PAdaMFed"]}, [0, 1])
    for seed in (0, 1):
        problem = Problem(data, models.make("mlp", (1, 28, 28), 10, seed=seed, hidden=(64,)))
        expected = simulate(problem, algorithms.padamfed(eta=0.1, gamma=0.5, beta=0.7), **by_hand, seed=seed)
        pd.testing.assert_frame_equal(ours["fashion_mnist"]["PAdaMFed"][seed].frame.drop(columns="seconds"),
                                      expected.frame.drop(columns="seconds"))


def test_cifar_code_path_on_generated_tensors_of_the_same_shape(monkeypatch) -> None:
    """At paper scale CIFAR-10 runs on ResNet-18 with Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(10))
    scale = dataclasses.replace(experiment.SCALES["paper"], tasks=("cifar10",))
    task = experiment.tasks(scale)["cifar10"]
    assert task.data.inputs.shape[1:] == (3, 32, 32) and task.data.num_clients == 100
    assert task.data.info["partition_kwargs"] == {"alpha": 0.5}
    assert task.model_label == "ResNet-18 with GroupNorm" and task.settings["rounds"] == 500
    assert list(experiment.make_builders(task, scale)) == ["PAdaMFed", "FedAvg"]
    tiny = dataclasses.replace(task, settings={**task.settings, "rounds": 1, "clients_per_round": 2, "local_steps": 1,
                                               "batch_size": 2, "eval_every": 1})
    # PAdaMFed's c_i: 100 x 11.2M floats, 20 s on a CPU; FedAvg runs the same code path
    fedavg = common.bind(experiment.make_builders(tiny, scale), BASELINES_CHOSEN)["FedAvg"]
    history = common.run(tiny, {"FedAvg": fedavg}, [0])["cifar10"]["FedAvg"][0]
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


# ------------------------------------------------------------------ tuning and robustness on a tiny task


@pytest.fixture(scope="module")
def tiny(stand_in) -> Task:
    return dataclasses.replace(stand_in, settings={**stand_in.settings, "clients_per_round": 4, "local_steps": 2,
                                                   "batch_size": 8})


def test_tune_scores_every_point_and_picks_the_best(tiny) -> None:
    """common.tune on the paper's builders: each point's score is the mean test accuracy of the last four
    evaluations of the run simulate gives that point from the same seed, and the chosen point is the best of them,
    as plain floats."""
    grids = {"FedAvg": {"client_lr": [0.001, 0.1]}, "SCAFFOLD-M": {"eta": [0.05], "beta": [0.3, 1.0]}}
    tuning = experiment.tune(tiny, experiment.make_builders(tiny, "smoke"), grids, [0])
    assert isinstance(tuning, Tuning) and set(tuning.chosen) == {"FedAvg", "SCAFFOLD-M"}
    for lr in (0.001, 0.1):
        direct = simulate(tiny.problem(0), algorithms.fedavg(lr), **tiny.settings, seed=0, progress=False)
        accuracy = direct.frame["test_accuracy"].dropna()
        assert tuning.tables["FedAvg"].loc[lr, "score"] == pytest.approx(accuracy.loc[1:].tail(4).mean(), abs=1e-12)
    for method, table in tuning.tables.items():
        best = table["score"].idxmax()
        point = best if isinstance(best, tuple) else (best,)
        assert tuning.chosen[method] == dict(zip(grids[method], point))
        assert all(type(value) is float for value in tuning.chosen[method].values())
    assert tuning.chosen["FedAvg"] == {"client_lr": 0.1}  # 0.001 barely moves in 4 rounds
    # 0.1 is the top of FedAvg's grid; SCAFFOLD-M's beta is 0.3 or 1.0, both ends; one eta has no edge
    assert tuning.on_edge() == {"FedAvg": ["client_lr"], "SCAFFOLD-M": ["beta"]}


def test_points_refuse_a_tuning_on_the_judging_seeds_and_the_reference_is_the_best_tuned() -> None:
    """points() binds a Tuning only for judging seeds apart from its own (as common.bind); best_tuned is the
    baseline whose chosen point scored best on the tuning seeds."""
    table = lambda scores: pd.DataFrame({"score": scores})  # noqa: E731
    tuning = Tuning({m: p for m, p in BASELINES_CHOSEN.items()},
                    {"FedAvg": table([0.70, 0.81]), "SCAFFOLD": table([0.80, np.nan]),
                     "SCAFFOLD-M": table([0.83, 0.20]), "SCAFFOLD-M-VR": table([np.nan, np.nan])}, seeds=(100, 101))
    assert experiment.best_tuned(tuning) == "SCAFFOLD-M"
    task = Task("fashion_mnist", None, None, {**dict.fromkeys(ROUND_SETTINGS, 1), **SMALL}, 0.1)
    assert experiment.points(task, tuning, [0, 1])["FedAvg"] == {"client_lr": 0.1}
    assert experiment.points(task, tuning, [0, 1]) == experiment.points(task, BASELINES_CHOSEN)
    with pytest.raises(ValueError, match=r"tuning_seeds=\[100, 101\] share seeds \[101\] with the judging seeds"):
        experiment.points(task, tuning, [101, 102])
    with pytest.raises(TypeError, match="give the judging seeds"):
        experiment.points(task, tuning)
    lower = dataclasses.replace(tuning, higher_is_better=False)
    assert experiment.best_tuned(lower) == "SCAFFOLD-M"  # its lowest score, 0.20


def test_robustness_scores_each_method_at_each_multiplier_and_seed(tiny) -> None:
    builders, points = experiment.make_builders(tiny, "smoke"), experiment.points(tiny, BASELINES_CHOSEN)
    tables = experiment.robustness(tiny, builders, points, [0.1, 1.0], [0, 1])
    assert list(tables) == list(experiment.READINGS)
    local = tables["local rate"]
    assert list(local.columns.get_level_values(0).unique()) == list(experiment.METHODS)
    assert list(local.index) == [0.1, 1.0] and list(local["FedAvg"].columns) == [0, 1]
    run = dict(**tiny.settings, progress=False)
    for seed in (0, 1):
        direct = simulate(tiny.problem(seed), algorithms.fedavg(0.01), **run, seed=seed)
        assert local.loc[0.1, ("FedAvg", seed)] == pytest.approx(common.window_score(direct, "test_accuracy"))
    padam = simulate(tiny.problem(1), algorithms.padamfed(eta=points["PAdaMFed"]["eta"] * 0.1,
                                                          gamma=points["PAdaMFed"]["gamma"],
                                                          beta=points["PAdaMFed"]["beta"]), **run, seed=1)
    assert local.loc[0.1, ("PAdaMFed", 1)] == pytest.approx(common.window_score(padam, "test_accuracy"))
    every = tables["every rate"]  # the one-rate methods are the same runs; PAdaMFed's gamma moves too
    pd.testing.assert_frame_equal(every["FedAvg"], local["FedAvg"])
    assert every.loc[1.0, ("PAdaMFed", 0)] == local.loc[1.0, ("PAdaMFed", 0)]
    assert every.loc[0.1, ("PAdaMFed", 0)] != local.loc[0.1, ("PAdaMFed", 0)]
    with pytest.raises(ValueError, match="factors=0"):
        experiment.robustness(tiny, builders, points, [0, 1.0], [0])


def test_good_span_is_the_contiguous_range_around_one() -> None:
    column = pd.Series([0.50, 0.80, 0.82, 0.81, 0.82, np.nan], index=[0.01, 0.1, 1.0, 10.0, 100.0, 1000.0])
    assert common.good_span(column, within=0.03) == (0.1, 100.0)  # 0.1 .. 100 within 0.03 of 0.82
    assert common.good_span(column, within=0.001) == (1.0, 1.0)
    # 0.1 .. 100 (3 decades), carried towards 0.01 (0.50) to where 0.80 falls to the threshold 0.79: 0.01 / 0.30 of
    # a decade; the diverged 1000 ends the span at 100
    assert common.span_decades(column, within=0.03) == pytest.approx(3 + 0.01 / 0.30)
    gap = pd.Series([0.82, 0.50, 0.81, 0.82], index=[0.1, 1.0, 10.0, 100.0])
    assert common.good_span(gap, 0.03) is None and common.span_decades(gap, 0.03) == 0.0  # 1 is not good
    hole = pd.Series([0.82, 0.81, 0.30, 0.82], index=[0.1, 1.0, 10.0, 100.0])
    assert common.good_span(hole, 0.03) == (0.1, 1.0)  # 100 is good but not contiguous with 1
    assert common.good_span(pd.Series([np.nan, np.nan], index=[1.0, 10.0]), 0.03) is None
    assert common.span_width(column, 0.03) == pytest.approx(3.0)  # 0.1 .. 100: three decades
    assert common.span_width(hole, 0.03, around=0.1) == pytest.approx(1.0) and common.span_width(gap, 0.03) == 0.0
    assert common.span_width(column, 0.001) == 0.0  # 1 alone
    with pytest.raises(ValueError, match="around=1.0 is not one of the multipliers"):
        common.good_span(pd.Series([0.5], index=[10.0]), 0.03)
    table = pd.DataFrame({("A", 0): column, ("A", 1): column - 0.01})
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    summary = experiment.robustness_summary({"every rate": table})
    row = summary.loc[("every rate", "A")]
    assert row["best multiplier"] in (1.0, 100.0) and row["width (decades)"] == pytest.approx(3.0)
    assert row["best score (%)"] == pytest.approx(81.5) and row["score at 1 (%)"] == pytest.approx(81.5)
    assert row["best at a grid end"] == (row["best multiplier"] == 100.0)
    assert row["per seed (decades)"] == "3.03, 3.03" and row["good range"] == "0.1 to 100"
    # against another reference: the best method's 0.90, so none of A's scores (at most 0.82) is within 0.03
    assert common.good_span(column, 0.03, best=0.90) is None
    # threshold 0.81: 1 to 100 (0.80 at 0.1 is out), carried halfway to 0.1 (0.82 -> 0.80 crosses 0.81 at half)
    assert common.span_decades(column, 0.03, best=0.84) == pytest.approx(2.5)
    table[("B", 0)], table[("B", 1)] = column + 0.08, column + 0.08  # B: 0.90 at 1 and 100, 0.88 at 0.1
    both = experiment.robustness_summary({"every rate": table})
    assert both.loc[("every rate", "A"), "per seed, the best method's"] == "0.00, 0.00"
    assert both.loc[("every rate", "A"), "good range, the best method's"] == "none"
    assert both.loc[("every rate", "B"), "per seed, the best method's"] == "3.03, 3.03"
    widths = experiment.good_widths(table, against="best method")
    assert widths["A"] == [0.0, 0.0] and widths["B"] == pytest.approx([3 + 0.01 / 0.30] * 2)
    with pytest.raises(ValueError, match="against='mine' not one of"):
        experiment.good_widths(table, against="mine")


def test_variants_pair_each_reading_with_the_default(tiny) -> None:
    """The variants run with the factory options they name (first-round line 1 moves PAdaMFed's scores), each
    beside the default's runs of the same method, so that Results.paired compares them by seed."""
    builders = {m: b for m, b in experiment.make_builders(tiny, "smoke").items() if m in experiment.PARAMETER_FREE}
    points = experiment.points(tiny, BASELINES_CHOSEN)
    default = common.run(tiny, common.bind(builders, points), [0, 1])
    pairs = experiment.variants(tiny, builders, points, default)
    first = "PAdaMFed: line 1 for the first round's clients"
    assert list(pairs) == [first, "PAdaMFed-VR: line 1 for the first round's clients",
                           "PAdaMFed-VR: VR server momentum: the clients' mean direction"]
    assert all(list(pairs[label]) == ["default", "variant"] for label in pairs) and pairs.seeds == (0, 1)
    assert pairs[first]["default"] is default["fashion_mnist"]["PAdaMFed"]
    ours, before = pairs[first]["variant"], default["fashion_mnist"]["PAdaMFed"]
    assert ours[0].frame["test_accuracy"].dropna().iloc[-1] != before[0].frame["test_accuracy"].dropna().iloc[-1]
    differences = 100 * np.array([common.window_score(a, "test_accuracy") - common.window_score(b, "test_accuracy")
                                  for a, b in zip(ours, before)])
    text = pairs.paired("default", scale=100, words=experiment.CHANGE).loc[first, "variant"]
    # "+1.23 [-4.56, +7.02], p 0.345; ~9 seeds would decide (within the noise)": the 95% paired t interval, t(1)
    mean, rest = text.split(" [")
    low, high = (float(number) for number in rest.split("]")[0].split(", "))
    half = stats.t.ppf(0.975, 1) * differences.std(ddof=1) / math.sqrt(2)  # 12.706 sd / sqrt 2
    assert float(mean) == pytest.approx(differences.mean(), abs=0.006)
    assert (low, high) == pytest.approx((differences.mean() - half, differences.mean() + half), abs=0.006)
    p = stats.ttest_rel(100 * np.array([common.window_score(a, "test_accuracy") for a in ours]),
                        100 * np.array([common.window_score(b, "test_accuracy") for b in before])).pvalue
    assert f"], p {p:.3f}" in text or p < 0.001
    assert text.endswith(("(higher)", "(lower)", "(within the noise)"))
    assert set(experiment.CHANGE) == set(OUTCOMES)  # every outcome reads as a word, one seed's too
    one = common.run(tiny, common.bind(builders, points), [0])
    alone = experiment.variants(tiny, builders, points, one).paired("default", words=experiment.CHANGE)
    assert alone.loc[first, "variant"].endswith("(undecided (one seed))")


# ------------------------------------------------------------------ the quadratic with scaled constants


def test_scaled_task_multiplies_the_objective_and_keeps_the_minimizer() -> None:
    base, scaled = objectives.scaled_quadratic_task(1.0), objectives.scaled_quadratic_task(9.0)
    assert scaled.smoothness == pytest.approx(9 * base.smoothness)
    x = torch.randn(base.problem.x0().numel(), dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(scaled.gradient(x), 9 * base.gradient(x))
    data = base.problem.data
    minimizer = torch.linalg.lstsq(data.inputs, data.targets.unsqueeze(1)).solution.squeeze(1)
    assert scaled.gradient(minimizer).norm() < 1e-8


def test_padamfed_moves_the_same_whatever_the_scale_and_fedavg_does_not() -> None:
    """Normalized steps and g_bar = (theta - theta_i) / (eta S K) are invariant to scaling f: the gradient ratio
    is the same at every L.  FedAvg at one client rate diverges once eta L is too large."""
    point = {"rounds": 40, "clients_per_round": 5, "local_steps": 3, "batch_size": 4}
    table = theory.smoothness_table([0.1, 1.0, 100.0], fedavg_lr=0.05, point=point)
    assert np.allclose(table["PAdaMFed"], table["PAdaMFed"].iloc[0], rtol=1e-6)
    assert np.allclose(table["PAdaMFed-VR"], table["PAdaMFed-VR"].iloc[0], rtol=1e-6)
    assert (table[["PAdaMFed", "PAdaMFed-VR"]] < 1).all().all()
    assert table["FedAvg"].iloc[-1] > 1e6 and table["FedAvg"].iloc[1] < 1  # blown up (or inf: diverged)
    assert table.index[1] == pytest.approx(objectives.scaled_quadratic_task(1.0).smoothness)


def test_reparametrized_task_is_f_of_a_theta_from_the_same_point() -> None:
    """g(theta) = f(a theta): grad g(theta) = a grad f(a theta) (closed form on the base task), L times a^2, the
    start theta_0 = x_0 / a (the same point of f, the same initial loss) and the optimum x* / a."""
    base, a = objectives.quadratic_task(), 3.0
    moved = objectives.reparametrized_quadratic_task(a)
    assert moved.smoothness == pytest.approx(a**2 * base.smoothness)
    theta = torch.randn(10, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(moved.gradient(theta), a * base.gradient(a * theta))
    torch.testing.assert_close(moved.problem.x0(), base.problem.x0() / a)
    torch.testing.assert_close(moved.problem.data.info["x_star"], base.problem.data.info["x_star"] / a)
    assert moved.gradient(moved.problem.data.info["x_star"]).norm() < 1e-8
    assert torch.equal(moved.problem.data.targets, base.problem.data.targets)
    assert torch.equal(base.problem.x0(), objectives.quadratic_task().problem.x0())  # the base is untouched
    with pytest.raises(ValueError, match="scale=0"):
        objectives.reparametrized_quadratic_task(0)


def _alone(task, algorithm, point, seed=0) -> float:
    """The gradient ratio of one run by itself, its last tenth's mean gradient norm computed here."""
    history = simulate(task.problem, algorithm, **point, seed=seed, progress=False, eval_every=point["rounds"],
                       weighting="uniform", record=task.record)
    norms = np.sqrt(history.frame["squared_gradient_norm"].loc[1:].to_numpy())
    return float(np.mean(norms[-max(1, point["rounds"] // 10):]) / task.gradient(task.problem.x0()).norm())


def test_quadratic_ratios_over_seeds_are_each_seeds_run() -> None:
    """ratios_of runs the methods over the seeds in passes: each entry is the gradient ratio of that run alone."""
    point = {"rounds": 20, "clients_per_round": 5, "local_steps": 3, "batch_size": 4}
    task = objectives.reparametrized_quadratic_task(0.5)
    methods = {"FedAvg": algorithms.fedavg(0.05), "PAdaMFed": algorithms.padamfed(clients_per_round=5, local_steps=3,
                                                                                 rounds=20)}
    ratios = theory.ratios_of(task, methods, [0, 1], point)
    for (name, seed), ratio in ratios.items():
        assert ratio == pytest.approx(_alone(task, methods[name], point, seed=seed), rel=1e-9)
    assert ratios[("PAdaMFed", 0)] != ratios[("PAdaMFed", 1)]  # the seeds sample other clients


def test_tilted_task_keeps_f_delta_l_and_the_noise_and_moves_only_the_clients() -> None:
    """f_i = f_i^0 + h <b_i, x> with sum b_i = 0: f's gradient, Delta, L and sigma (at x_0 and x*) are the same at
    every tilt; each client's gradient at x* moves by h b_i, so zeta grows; the loss's own gradient (autograd) is the
    closed form a (<a, x> - y) + b_i of every sample."""
    base, tilted = objectives.tilted_quadratic_task(0.0), objectives.tilted_quadratic_task(3.0)
    tilts = tilted.problem.data.info["tilts"]
    torch.testing.assert_close(tilts.sum(0), torch.zeros(10, dtype=torch.float64), atol=1e-12, rtol=0)
    x0 = base.problem.x0()
    assert float(tilts.square().sum(1).mean().sqrt()) == pytest.approx(3 * float(base.gradient(x0).norm()))
    theta = torch.randn(10, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(tilted.gradient(theta), base.gradient(theta))
    data = tilted.problem.data
    for j in (0, 7, 999):  # the closed form against the model's loss on one sample, by autograd
        x = theta.clone().requires_grad_(True)
        loss = tilted.problem.model.loss(x, data.inputs[j:j + 1], data.targets[j:j + 1])
        torch.testing.assert_close(torch.autograd.grad(loss, x)[0], theory.sample_gradients(tilted, theta)[j])
    # the whole objective's gradient (autograd over every sample) is f's: the tilts cancel
    x = theta.clone().requires_grad_(True)
    whole = torch.autograd.grad(tilted.problem.model.loss(x, data.inputs, data.targets), x)[0]
    torch.testing.assert_close(whole, base.gradient(theta))
    table = theory.constants([0.0, 1.0, 10.0])
    for column in ("Delta = f(x_0) - f*", "L", "||grad f(x_0)||", "sigma at x_0", "sigma at x*"):
        assert np.allclose(table[column], table[column].iloc[0], rtol=1e-12), column
    zeta = table["zeta at x*"]
    assert zeta.iloc[0] < zeta.iloc[1] < zeta.iloc[2] and zeta.iloc[2] == pytest.approx(
        10 * table["||grad f(x_0)||"].iloc[0], rel=0.05)  # the tilts dominate: zeta ~ h ||grad f(x_0)||
    with pytest.raises(ValueError, match="tilt=-1"):
        objectives.tilted_quadratic_task(-1.0)


def test_control_variates_cancel_the_tilt_and_the_ablation_does_not() -> None:
    """PAdaMFed's c_i carries its client's tilt and c their mean, 0: its runs are the same at every tilt (to
    rounding), and SCAFFOLD-M's (the same line 1); SCAFFOLD's are not (c_i = 0 until a client's first round); the
    ablation without control variates and FedAvg end farther from stationarity."""
    point = {"rounds": 30, "clients_per_round": 5, "local_steps": 3, "batch_size": 4}
    chosen = {"FedAvg": {"client_lr": 0.05}, "SCAFFOLD": {"client_lr": 0.05}, "SCAFFOLD-M": {"eta": 0.05, "beta": 0.3}}
    table = theory.heterogeneity_table(chosen, [0.0, 10.0], [0, 1], point)
    assert list(table.index) == [0.0, 10.0] and table.columns.names == ["method", "seed"]
    assert set(table.columns.get_level_values(0)) == {"PAdaMFed", theory.ABLATION, "FedAvg", "SCAFFOLD", "SCAFFOLD-M"}
    for method in ("PAdaMFed", "SCAFFOLD-M"):
        assert np.allclose(table.loc[10.0, method], table.loc[0.0, method], rtol=1e-8), method
    assert not np.allclose(table.loc[10.0, "SCAFFOLD"], table.loc[0.0, "SCAFFOLD"], rtol=1e-3)
    for method in (theory.ABLATION, "FedAvg"):
        assert (table.loc[10.0, method] > 2 * table.loc[0.0, method]).all(), method
    means = theory.mean_ratios(table)
    assert means.loc[10.0, "PAdaMFed"] == pytest.approx(math.sqrt(table.loc[10.0, ("PAdaMFed", 0)]
                                                                  * table.loc[10.0, ("PAdaMFed", 1)]))


def test_baselines_are_tuned_at_the_lowest_tilt_by_the_grids_lowest_mean_log_ratio() -> None:
    point = {"rounds": 10, "clients_per_round": 5, "local_steps": 2, "batch_size": 4}
    chosen = theory.tune_baselines(0.0, [0], point)
    grid = theory.BASELINE_GRIDS["FedAvg"]["client_lr"]
    ratios = [_alone(objectives.tilted_quadratic_task(0.0), algorithms.fedavg(lr), point) for lr in grid]
    assert chosen["FedAvg"]["client_lr"] == pytest.approx(grid[int(np.argmin(ratios))])
    assert set(chosen["SCAFFOLD-M"]) == {"eta", "beta"}


def test_rate_table_is_each_runs_mean_gradient_norm_at_the_theorems_step_sizes() -> None:
    """rate_table over T: each entry is (1/T) sum_{t<T} ||grad||, computed here from the run alone at Theorem 1's
    (or 2's) step sizes for that T; over S, T is RATE_HORIZON; rate_summary's T gamma is T (SK)^(1/4) / T^(3/4)."""
    point = {"rounds": 20, "clients_per_round": 5, "local_steps": 2, "batch_size": 4}
    table = theory.rate_table("rounds", [10, 20], [1.0, 3.0], [0, 1], point)
    assert table.index.names == ["a", "rounds"] and list(table.index) == [(1.0, 10), (1.0, 20), (3.0, 10), (3.0, 20)]
    task = objectives.reparametrized_quadratic_task(3.0)
    for method, factory in (("PAdaMFed", algorithms.padamfed), ("PAdaMFed-VR", algorithms.padamfed_vr)):
        history = simulate(task.problem, factory(clients_per_round=5, local_steps=2, rounds=20), **{**point},
                           seed=1, progress=False, eval_every=20, weighting="uniform", record=task.record)
        norms = np.sqrt(history.frame["squared_gradient_norm"].to_numpy())[:20]
        assert table.loc[(3.0, 20), (method, 1)] == pytest.approx(norms.mean(), rel=1e-9)
    summary = theory.rate_summary(table, point)
    assert summary.loc[3.0, "PAdaMFed T gamma at T = 20"] == pytest.approx(20 * 10**0.25 / 20**0.75)
    assert summary.loc[3.0, "distance to the optimum"] == pytest.approx(
        float((task.problem.x0() - task.problem.data.info["x_star"]).norm()))
    assert summary.loc[1.0, "PAdaMFed slope"].endswith("(theorem -0.25)")
    by_clients = theory.rate_table("clients_per_round", [1, 2], seeds=[0], point=point, horizon=12)
    assert by_clients.index.names == ["a", "rounds", "clients_per_round"]
    assert list(by_clients.index) == [(1.0, 12, 1), (1.0, 12, 2)]
    base = objectives.quadratic_task()  # a = 1
    alone = simulate(base.problem, algorithms.padamfed(clients_per_round=2, local_steps=2, rounds=12),
                     **{**point, "rounds": 12, "clients_per_round": 2}, seed=0, progress=False, eval_every=12,
                     weighting="uniform", record=base.record)
    norms = np.sqrt(alone.frame["squared_gradient_norm"].to_numpy())[:12]
    assert by_clients.loc[(1.0, 12, 2), ("PAdaMFed", 0)] == pytest.approx(norms.mean(), rel=1e-9)
    with pytest.raises(ValueError, match="vary='local_steps' not one of"):
        theory.rate_table("local_steps")


def test_a_diverged_quadratic_run_is_inf_and_warns_nothing(recwarn) -> None:
    task = objectives.scaled_quadratic_task(1000.0)
    point = {"rounds": 20, "clients_per_round": 5, "local_steps": 3, "batch_size": 4}
    assert theory.ratios_of(task, {"FedAvg": algorithms.fedavg(1.0)}, [0], point)[("FedAvg", 0)] == math.inf
    assert not [w for w in recwarn if "diverged" in str(w.message)]


# ------------------------------------------------------------------ explorer


def test_padamfed_explorer_shows_the_theorems_step_sizes_and_runs_three_methods() -> None:
    import matplotlib.pyplot as plt

    steps = padamfed_explore.explore_padamfed(clients_per_round=4, local_steps=2, rounds=6, multiplier=10.0)
    assert steps["PAdaMFed"] == pytest.approx({"eta": 10 / (2 * math.sqrt(6)), "gamma": 8**0.25 / 6**0.75,
                                               "beta": 1.0})  # sqrt(8/6) > 1: capped; the local rate only
    figure = plt.gcf()
    assert "PAdaMFed: eta 2.04" in figure._suptitle.get_text() and explore.LIVE_TASK in figure._suptitle.get_text()
    plt.close("all")
    every = padamfed_explore.explore_padamfed(clients_per_round=4, local_steps=2, rounds=6, multiplier=10.0,
                                     reading="every rate")
    assert every["PAdaMFed"]["gamma"] == pytest.approx(10 * 8**0.25 / 6**0.75)
    assert every["PAdaMFed-VR"]["gamma"] == pytest.approx(10 * 8 ** (1 / 3) / 6 ** (2 / 3))
    with pytest.raises(ValueError, match="reading='server' not one of"):
        padamfed_explore.explore_padamfed(reading="server")
    assert len(figure.axes[0].get_lines()) == 3
    with pytest.raises(ValueError, match="clients_per_round=50"):
        padamfed_explore.explore_padamfed(clients_per_round=50)
    plt.close("all")


def test_tune_horizons_searches_beta_once_on_the_short_horizon(tiny) -> None:
    """SCAFFOLD-M's rate and beta on the short horizon (beta: the best mean score of its table); SCAFFOLD-M-VR there
    and SCAFFOLD-M on the long horizon over their rate at that beta, and nothing else."""
    short = dataclasses.replace(tiny, settings={**tiny.settings, "rounds": 2, "eval_every": 1})
    long = dataclasses.replace(short, name="fashion_mnist_long")
    tasks = {"fashion_mnist": short, "fashion_mnist_long": long}
    builders = {name: {m: functools.partial(b, initialization="first_round")  # line 1 on every client: 6 s
                       for m, b in experiment.make_builders(task, "smoke").items() if m.startswith("SCAFFOLD-M")}
                for name, task in tasks.items()}
    grids = {"SCAFFOLD-M": {"eta": [0.1], "beta": [0.1, 1.0]},
             "SCAFFOLD-M-VR": {"eta": [0.01, 0.1], "beta": [0.1, 1.0]}}
    tunings = experiment.tune_horizons(tasks, builders, grids, [100])
    short, other = tunings["fashion_mnist"], tunings["fashion_mnist_long"]
    beta = short.chosen["SCAFFOLD-M"]["beta"]
    assert (0.1, beta) == short.tables["SCAFFOLD-M"]["score"].idxmax()
    assert set(short.chosen) == {"SCAFFOLD-M", "SCAFFOLD-M-VR"} and set(other.chosen) == {"SCAFFOLD-M"}
    assert short.grids["SCAFFOLD-M"] == grids["SCAFFOLD-M"]  # searched
    assert short.grids["SCAFFOLD-M-VR"] == {"eta": [0.01, 0.1], "beta": [beta]}  # its rate at SCAFFOLD-M's beta
    assert other.grids["SCAFFOLD-M"] == {"eta": [0.1], "beta": [beta]}
    assert len(short.tables["SCAFFOLD-M-VR"]) == 2 and short.chosen["SCAFFOLD-M-VR"]["beta"] == beta
    assert short.seeds == other.seeds == (100,)
    with pytest.raises(ValueError, match="must hold 'fashion_mnist'"):
        experiment.tune_horizons({"fashion_mnist_long": long}, builders, grids, [100])
    with pytest.raises(ValueError, match=r"grids=\['SCAFFOLD-M-VR'\] and builders\['fashion_mnist'\] must hold"):
        experiment.tune_horizons(tasks, builders, {"SCAFFOLD-M-VR": grids["SCAFFOLD-M-VR"]}, [100])
