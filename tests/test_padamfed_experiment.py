"""Notebook 02's experiment (fedcore.experiments.padamfed.experiment and theory): tasks on the common layer, the
theorems' step sizes, builders, tuning through common.tune, runs, robustness, the scaled quadratics."""

from __future__ import annotations

import dataclasses
import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import cifar_like_loader  # noqa: E402

from fedcore import algorithms, explore, models, objectives  # noqa: E402
from fedcore.data import load_fashion_mnist  # noqa: E402
from fedcore.experiments.common import ROUND_SETTINGS, Task, Tuning, good_range  # noqa: E402
from fedcore.experiments.padamfed import experiment, theory  # noqa: E402
from fedcore.problem import Problem  # noqa: E402
from fedcore.run import simulate  # noqa: E402

BASELINES_CHOSEN = {"FedAvg": {"client_lr": 0.1}, "SCAFFOLD": {"client_lr": 0.1},
                    "SCAFFOLD-M": {"eta": 0.1, "beta": 0.3, "factor": 1.0},
                    "SCAFFOLD-M-VR": {"eta": 0.1, "beta": 0.3, "factor": 1.0}}

# ------------------------------------------------------------------ settings and builders


def test_theorem_step_sizes_for_the_task_by_hand() -> None:
    """S = 10, K = 5, T = 60 (small): eta = 1/(5 sqrt 60), gamma = 50^(1/4) / 60^(3/4), beta = sqrt(50/60);
    VR: eta = 1/300, gamma = beta = 50^(1/3) / 60^(2/3)."""
    settings = experiment.round_settings("small")
    one = experiment.theorem_step_sizes("PAdaMFed", settings)
    assert one == pytest.approx({"eta": 1 / (5 * math.sqrt(60)), "gamma": 50**0.25 / 60**0.75,
                                 "beta": math.sqrt(50 / 60)})
    two = experiment.theorem_step_sizes("PAdaMFed-VR", settings)
    assert two == pytest.approx({"eta": 1 / 300, "gamma": 50 ** (1 / 3) / 60 ** (2 / 3),
                                 "beta": 50 ** (1 / 3) / 60 ** (2 / 3)})
    # S, K, T come from the settings: S = 5, K = 2, T = 60 gives eta = 1 / (2 sqrt 60), beta = sqrt(10 / 60)
    other = experiment.theorem_step_sizes("PAdaMFed", {**settings, "clients_per_round": 5, "local_steps": 2})
    assert other["eta"] == pytest.approx(1 / (2 * math.sqrt(60))) and other["beta"] == pytest.approx(math.sqrt(1 / 6))
    with pytest.raises(ValueError, match="method='FedAvg' not one of"):
        experiment.theorem_step_sizes("FedAvg", settings)
    with pytest.raises(ValueError, match=r"lacks \['rounds'\]"):
        experiment.theorem_step_sizes("PAdaMFed", {"clients_per_round": 10, "local_steps": 5})


def test_round_settings_are_the_common_layers_and_the_first_passes() -> None:
    """Exactly common.ROUND_SETTINGS, with the values notebook 02 always ran: S, K, B = 10, 5, 32, uniform
    weights, T and the evaluation period of the scale."""
    assert tuple(experiment.round_settings("smoke")) == ROUND_SETTINGS
    assert experiment.round_settings("smoke") == {"rounds": 4, "clients_per_round": 10, "local_steps": 5,
                                                  "batch_size": 32, "eval_every": 2, "weighting": "uniform"}
    assert experiment.round_settings("small")["rounds"] == 60 and experiment.round_settings("paper")["rounds"] == 500
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.round_settings("huge")


def test_smoke_grids_keep_one_point_of_each_list() -> None:
    smoke = experiment.grids("smoke")
    assert smoke["FedAvg"] == {"client_lr": [experiment.LEARNING_RATES[2]]}
    assert smoke["SCAFFOLD-M"] == {"eta": [experiment.LEARNING_RATES[2]], "beta": [0.3], "factor": [10**0.5]}
    assert experiment.grids("small") is experiment.GRIDS


def test_multipliers_are_half_decades_over_four_decades() -> None:
    factors = experiment.multipliers("small")
    assert len(factors) == 9 and factors[0] == pytest.approx(0.01) and factors[-1] == pytest.approx(100)
    assert np.allclose(np.diff(np.log10(factors)), 0.5)
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.multipliers("huge")


@pytest.mark.parametrize("method, base, factor, reading, expected", [
    ("FedAvg", {"client_lr": 0.1}, 10.0, "local rate", {"client_lr": 1.0}),
    ("PAdaMFed", {"eta": 0.01, "gamma": 0.2, "beta": 0.5}, 10.0, "every rate", {"eta": 0.1, "gamma": 2.0, "beta": 0.5}),
    ("PAdaMFed", {"eta": 0.01, "gamma": 0.2, "beta": 0.5}, 10.0, "local rate", {"eta": 0.1, "gamma": 0.2, "beta": 0.5}),
    ("SCAFFOLD-M", {"eta": 0.1, "beta": 0.3, "factor": 1.0}, 0.1, "every rate",
     {"eta": 0.01, "beta": 0.3, "factor": 1.0}),
    ("SCAFFOLD-M", {"eta": 0.1, "beta": 0.3, "factor": 1.0}, 0.1, "local rate",
     {"eta": 0.01, "beta": 0.3, "factor": 10.0}),
])
def test_scaled_multiplies_the_rates_of_each_reading(method, base, factor, reading, expected) -> None:
    assert experiment.scaled(method, base, factor, reading) == pytest.approx(expected)
    assert base == dict(base)  # the defaults are not changed in place


def test_scaffold_m_local_reading_keeps_its_server_step() -> None:
    """gamma = factor * eta * K: under "local rate" eta moves and gamma stays; under "every rate" both move."""
    base = {"eta": 0.1, "beta": 0.3, "factor": 1.0}
    gamma = {r: experiment.make_builders()["SCAFFOLD-M"](**experiment.scaled("SCAFFOLD-M", base, 10.0, r)).gamma
             for r in experiment.READINGS}
    assert gamma["local rate"] == pytest.approx(0.1 * 5) and gamma["every rate"] == pytest.approx(10 * 0.1 * 5)


def test_builders_make_the_named_algorithms() -> None:
    built = {m: experiment.make_builders()[m](**base) for m, base in experiment.defaults(
        BASELINES_CHOSEN, experiment.round_settings("small")).items()}
    assert {m: a.name for m, a in built.items()} == {m: m for m in experiment.METHODS}
    assert built["PAdaMFed"].eta == pytest.approx(1 / (5 * math.sqrt(60)))
    assert built["SCAFFOLD-M-VR"].gamma == pytest.approx(0.5) and built["SCAFFOLD-M-VR"].variance_reduction
    with pytest.raises(ValueError, match=r"no hyperparameters for \['SCAFFOLD'\]"):
        experiment.defaults({m: p for m, p in BASELINES_CHOSEN.items() if m != "SCAFFOLD"},
                            experiment.round_settings("small"))


# ------------------------------------------------------------------ tasks


@pytest.fixture(scope="module")
def stand_in() -> Task:
    return experiment.tasks("smoke")["fashion_mnist"]


def test_stand_in_task_at_smoke_scale(stand_in) -> None:
    data = stand_in.data
    assert stand_in.name == "fashion_mnist" and data.num_clients == 20 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 1.0}
    assert dict(stand_in.settings) == experiment.round_settings("smoke")
    assert stand_in.problem(0).x0().numel() == 784 * 64 + 64 + 64 * 10 + 10
    assert stand_in.metric == "test_accuracy" and stand_in.higher_is_better
    assert stand_in.model_label == experiment.MODEL_LABELS["fashion_mnist"]
    most_frequent = float(data.test_targets.bincount().max()) / data.test_targets.numel()
    assert stand_in.baseline == pytest.approx(most_frequent) and 0.05 < stand_in.baseline < 0.3
    # the seed draws the model, not the partition
    assert not torch.equal(stand_in.problem(0).x0(), stand_in.problem(1).x0())


def test_tasks_draw_the_partition_from_its_seed_and_refuse_bad_names() -> None:
    other = experiment.tasks("smoke", partition_seed=1)["fashion_mnist"].data
    same = experiment.tasks("smoke", partition_seed=0)["fashion_mnist"].data
    assert not torch.equal(other.sizes, same.sizes)
    with pytest.raises(ValueError, match="only at scale 'paper'"):
        experiment.tasks("small", names=["cifar10"])
    with pytest.raises(ValueError, match=r"names='emnist' not one of \['cifar10', 'fashion_mnist'\]"):
        experiment.tasks("smoke", names=["emnist"])
    with pytest.raises(ValueError, match="names='fashion_mnist' must be a non-empty list"):
        experiment.tasks("smoke", names="fashion_mnist")
    with pytest.raises(ValueError, match="partition_seed=-1"):
        experiment.tasks("smoke", partition_seed=-1)


def test_a_tasks_runs_are_the_first_passes_runs(stand_in) -> None:
    """The task's data, model and settings give the runs notebook 02 made before the common layer: Fashion-MNIST by
    Dirichlet(1) on 20 clients with 200 test images drawn from the seed, the MLP drawn from the seed, and
    simulate's options written out by hand."""
    data = load_fashion_mnist(20, "dirichlet", 0, alpha=1.0).test_subset(200, 0)
    problem = Problem(data, models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(64,)))
    by_hand = dict(rounds=4, clients_per_round=10, local_steps=5, batch_size=32, eval_every=2, weighting="uniform",
                   seed=0, progress=False)
    expected = simulate(problem, algorithms.padamfed(eta=0.1, gamma=0.5, beta=0.7), **by_hand)
    ours = experiment.run(stand_in, {"PAdaMFed": {"eta": 0.1, "gamma": 0.5, "beta": 0.7}}, 0, methods=["PAdaMFed"])
    pd.testing.assert_frame_equal(ours["PAdaMFed"].frame.drop(columns="seconds"),
                                  expected.frame.drop(columns="seconds"))
    with pytest.raises(ValueError, match=r"methods='Adam' not one of"):
        experiment.run(stand_in, {}, 0, methods=["Adam"])
    with pytest.raises(ValueError, match=r"base has no hyperparameters for \['FedAvg'\]"):
        experiment.run(stand_in, {"PAdaMFed": {}}, 0, methods=["PAdaMFed", "FedAvg"])


def test_cifar_code_path_on_generated_tensors_of_the_same_shape(monkeypatch) -> None:
    """At paper scale CIFAR-10 runs on ResNet-18 with Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(10))
    task = experiment.tasks("paper", names=["cifar10"])["cifar10"]
    assert task.data.inputs.shape[1:] == (3, 32, 32) and task.data.num_clients == 100
    assert task.data.info["partition_kwargs"] == {"alpha": 0.5}
    assert task.model_label == "ResNet-18 with GroupNorm" and task.settings["rounds"] == 500
    tiny = dataclasses.replace(task, settings={**task.settings, "rounds": 1, "clients_per_round": 2, "local_steps": 1,
                                               "batch_size": 2, "eval_every": 1})
    # PAdaMFed's c_i: 100 x 11.2M floats, 20 s on a CPU; FedAvg runs the same code path
    history = experiment.run(tiny, {"FedAvg": {"client_lr": 0.1}}, 0, methods=["FedAvg"])["FedAvg"]
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


# ------------------------------------------------------------------ tuning and robustness on a tiny task


@pytest.fixture(scope="module")
def tiny(stand_in) -> Task:
    return dataclasses.replace(stand_in, settings={**stand_in.settings, "clients_per_round": 4, "local_steps": 2,
                                                   "batch_size": 8})


def test_tune_scores_every_point_and_picks_the_best(tiny, monkeypatch) -> None:
    """common.tune's table holds each point's score, the one simulate gives that point from the same seed, and the
    chosen point is the best of them, as plain floats."""
    monkeypatch.setattr(experiment, "GRIDS", {"FedAvg": {"client_lr": [0.001, 0.1]},
                                              "SCAFFOLD-M": {"eta": [0.05], "beta": [0.3, 1.0], "factor": [1.0]}})
    tuning = experiment.tune(tiny, "small", [0])
    assert isinstance(tuning, Tuning) and set(tuning.chosen) == {"FedAvg", "SCAFFOLD-M"}
    problem = tiny.problem(0)
    for lr in (0.001, 0.1):
        direct = experiment.score(simulate(problem, algorithms.fedavg(lr), **tiny.settings, seed=0, progress=False))
        assert tuning.tables["FedAvg"].loc[lr, "score"] == pytest.approx(direct, abs=0)
    for method, table in tuning.tables.items():
        best = table["score"].idxmax()
        point = best if isinstance(best, tuple) else (best,)
        assert tuning.chosen[method] == dict(zip(experiment.GRIDS[method], point))
        assert all(type(value) is float for value in tuning.chosen[method].values())
    assert tuning.chosen["FedAvg"] == {"client_lr": 0.1}  # 0.001 barely moves in 4 rounds


def test_robustness_scores_each_method_at_each_multiplier(tiny) -> None:
    base = experiment.defaults(BASELINES_CHOSEN, tiny.settings)
    table = experiment.robustness(tiny, base, [0.1, 1.0], 0, "local rate")
    assert list(table.columns) == list(experiment.METHODS) and list(table.index) == [0.1, 1.0]
    run = dict(**tiny.settings, seed=0, progress=False)
    direct = simulate(tiny.problem(0), algorithms.fedavg(0.01), **run)
    assert table.loc[0.1, "FedAvg"] == pytest.approx(experiment.score(direct))
    padam = simulate(tiny.problem(0), algorithms.padamfed(eta=base["PAdaMFed"]["eta"] * 0.1,
                                                          gamma=base["PAdaMFed"]["gamma"],
                                                          beta=base["PAdaMFed"]["beta"]), **run)
    assert table.loc[0.1, "PAdaMFed"] == pytest.approx(experiment.score(padam))
    with pytest.raises(ValueError, match="factors=0"):
        experiment.robustness(tiny, base, [0, 1.0], 0)


def test_good_range_in_decades() -> None:
    column = pd.Series([0.50, 0.80, 0.82, 0.81, np.nan], index=[0.01, 0.1, 1.0, 10.0, 100.0])
    assert good_range(column, within=0.03) == pytest.approx(2.0)  # 0.1 .. 10 lie within 0.03 of 0.82
    assert good_range(column, within=0.001) == 0.0
    assert math.isnan(good_range(pd.Series([np.nan, np.nan], index=[1.0, 10.0]), within=0.03))
    summary = experiment.robustness_summary(pd.DataFrame({"A": column}))
    assert summary.loc["A", "best multiplier"] == 1.0 and summary.loc["A", "decades within 0.03 of best"] == 2.0


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


def test_a_diverged_quadratic_run_is_inf_and_warns_nothing(recwarn) -> None:
    task = objectives.scaled_quadratic_task(1000.0)
    point = {"rounds": 20, "clients_per_round": 5, "local_steps": 3, "batch_size": 4}
    assert theory.gradient_ratio(task, algorithms.fedavg(1.0), point) == math.inf
    assert not [w for w in recwarn if "diverged" in str(w.message)]


# ------------------------------------------------------------------ explorer


def test_padamfed_explorer_shows_the_theorems_step_sizes_and_runs_three_methods() -> None:
    import matplotlib.pyplot as plt

    steps = explore.explore_padamfed(clients_per_round=4, local_steps=2, rounds=6, multiplier=10.0)
    assert steps["PAdaMFed"] == pytest.approx({"eta": 10 / (2 * math.sqrt(6)), "gamma": 8**0.25 / 6**0.75,
                                               "beta": 1.0})  # sqrt(8/6) > 1: capped
    figure = plt.gcf()
    assert "PAdaMFed: eta 2.04" in figure._suptitle.get_text()
    assert len(figure.axes[0].get_lines()) == 3
    with pytest.raises(ValueError, match="clients_per_round=50"):
        explore.explore_padamfed(clients_per_round=50)
    plt.close("all")
