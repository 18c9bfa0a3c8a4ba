"""Notebook 02's experiment definitions (fedcore.experiments.padamfed, padamfed_theory)."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from conftest import cifar_like_loader  # noqa: E402

from fedcore import algorithms, explore, objectives, plots  # noqa: E402
from fedcore.experiments.claims import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, PARTLY  # noqa: E402
from fedcore.experiments.common import good_range, near_best_by_column  # noqa: E402
from fedcore.experiments.padamfed import experiment, theory  # noqa: E402
from fedcore.run import simulate  # noqa: E402

# ------------------------------------------------------------------ settings and builders


def test_theory_step_sizes_for_the_task_by_hand() -> None:
    """S = 10, K = 5, T = 60: eta = 1/(5 sqrt 60), gamma = 50^(1/4) / 60^(3/4), beta = sqrt(50/60);
    VR: eta = 1/300, gamma = beta = 50^(1/3) / 60^(2/3)."""
    one = experiment.theory("PAdaMFed", 60)
    assert one == pytest.approx({"eta": 1 / (5 * math.sqrt(60)), "gamma": 50**0.25 / 60**0.75,
                                 "beta": math.sqrt(50 / 60)})
    two = experiment.theory("PAdaMFed-VR", 60)
    assert two == pytest.approx({"eta": 1 / 300, "gamma": 50 ** (1 / 3) / 60 ** (2 / 3),
                                 "beta": 50 ** (1 / 3) / 60 ** (2 / 3)})
    with pytest.raises(ValueError, match="method='FedAvg' not one of"):
        experiment.theory("FedAvg", 60)


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
    gamma = {r: experiment.BUILDERS["SCAFFOLD-M"](**experiment.scaled("SCAFFOLD-M", base, 10.0, r)).gamma
             for r in experiment.READINGS}
    assert gamma["local rate"] == pytest.approx(0.1 * 5) and gamma["every rate"] == pytest.approx(10 * 0.1 * 5)


def test_builders_make_the_named_algorithms() -> None:
    built = {m: experiment.BUILDERS[m](**base) for m, base in experiment.defaults(
        {"FedAvg": {"client_lr": 0.1}, "SCAFFOLD": {"client_lr": 0.1},
         "SCAFFOLD-M": {"eta": 0.1, "beta": 0.3, "factor": 1.0},
         "SCAFFOLD-M-VR": {"eta": 0.1, "beta": 0.3, "factor": 1.0}}, 60).items()}
    assert {m: a.name for m, a in built.items()} == {m: m for m in experiment.METHODS}
    assert built["PAdaMFed"].eta == pytest.approx(1 / (5 * math.sqrt(60)))
    assert built["SCAFFOLD-M-VR"].gamma == pytest.approx(0.5) and built["SCAFFOLD-M-VR"].variance_reduction


def test_stand_in_task_at_smoke_scale_and_cifar_only_at_paper() -> None:
    data = experiment.load_task("smoke")
    assert data.num_clients == 20 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 1.0}
    problem = experiment.problem(data)
    assert problem.x0().numel() == 784 * 64 + 64 + 64 * 10 + 10
    with pytest.raises(ValueError, match="only at scale 'paper'"):
        experiment.load_task("small", task="cifar10")


def test_cifar_code_path_on_generated_tensors_of_the_same_shape(monkeypatch) -> None:
    """At paper scale CIFAR-10 runs on ResNet-18 with Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(10))
    data = experiment.load_task("paper", task="cifar10")
    assert data.inputs.shape[1:] == (3, 32, 32) and data.num_clients == 100
    assert data.info["partition_kwargs"] == {"alpha": 0.5}
    problem = experiment.problem(data)
    run = {**experiment.options("paper"), "rounds": 1, "clients_per_round": 2, "local_steps": 1, "batch_size": 2,
           "eval_every": 1}
    history = simulate(problem, algorithms.fedavg(0.1), **run)  # PAdaMFed's c_i: 100 x 11.2M floats, 20 s on a CPU
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


# ------------------------------------------------------------------ tuning and robustness on a tiny task


@pytest.fixture(scope="module")
def tiny():
    data = experiment.load_task("smoke")
    return experiment.problem(data), {**experiment.options("smoke"), "clients_per_round": 4, "local_steps": 2,
                                      "batch_size": 8, "rounds": 4}


def test_tune_picks_each_grids_best_score(tiny, monkeypatch) -> None:
    problem, run = tiny
    monkeypatch.setattr(experiment, "GRIDS", {"FedAvg": {"client_lr": [0.001, 0.1]},
                                              "SCAFFOLD-M": {"eta": [0.05], "beta": [0.3, 1.0], "factor": [1.0]}})
    chosen, tables = experiment.tune(problem, **run)
    for method, table in tables.items():
        best = table.loc[table["score"].idxmax()]
        assert chosen[method] == {k: float(best[k]) for k in experiment.GRIDS[method]}
    again = experiment.score(simulate(problem, algorithms.fedavg(chosen["FedAvg"]["client_lr"]), **run))
    assert again == pytest.approx(tables["FedAvg"]["score"].max())


def test_robustness_scores_each_method_at_each_multiplier(tiny) -> None:
    problem, run = tiny
    base = experiment.defaults({"FedAvg": {"client_lr": 0.1}, "SCAFFOLD": {"client_lr": 0.1},
                                "SCAFFOLD-M": {"eta": 0.1, "beta": 0.3, "factor": 1.0},
                                "SCAFFOLD-M-VR": {"eta": 0.1, "beta": 0.3, "factor": 1.0}}, run["rounds"])
    table = experiment.robustness(problem, base, [0.1, 1.0], "local rate", **run)
    assert list(table.columns) == list(experiment.METHODS) and list(table.index) == [0.1, 1.0]
    direct = simulate(problem, algorithms.fedavg(0.01), **run)
    assert table.loc[0.1, "FedAvg"] == pytest.approx(experiment.score(direct))
    padam = simulate(problem, algorithms.padamfed(eta=base["PAdaMFed"]["eta"] * 0.1, gamma=base["PAdaMFed"]["gamma"],
                                                  beta=base["PAdaMFed"]["beta"]), **run)
    assert table.loc[0.1, "PAdaMFed"] == pytest.approx(experiment.score(padam))


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


def test_step_size_table_has_the_slides_rows() -> None:
    table = theory.STEP_SIZE_TABLE
    assert len(table) == 8 and (table.loc[[i for i in table.index if "PAdaMFed" in i],
                                           "problem constants the step sizes need"] == "-").all()


# ------------------------------------------------------------------ claims


def _robustness(widths: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(widths, index=[0.01, 0.1, 1.0, 10.0, 100.0])


def test_claims_on_hand_made_tables() -> None:
    flat, peaked = [0.80, 0.81, 0.82, 0.81, 0.80], [0.10, 0.50, 0.82, 0.40, np.nan]
    methods = experiment.METHODS
    robust = _robustness({m: flat if m in experiment.PARAMETER_FREE else peaked for m in methods})
    scores = {m: 0.80 for m in methods} | {"FedAvg": 0.82}
    smooth = pd.DataFrame({"PAdaMFed": [0.02, 0.02], "PAdaMFed-VR": [0.004, 0.004], "FedAvg": [0.1, math.inf]},
                          index=[1.0, 100.0])
    claims = experiment.claims_table(experiment.Evidence(scores, {"every rate": robust}, smooth))
    assert list(claims["verdict"]) == [HOLDS, HOLDS, HOLDS]
    assert "FedAvg at one client rate: above 1 for L >= 100" in claims.loc[0, "ours"]
    behind = experiment.claims_table(experiment.Evidence(scores | {"PAdaMFed": 0.70}, {"every rate": robust}))
    assert list(behind["verdict"]) == [NOT_TESTABLE, PARTLY, HOLDS]
    swapped = _robustness({m: peaked if m in experiment.PARAMETER_FREE else flat for m in methods})
    assert experiment.claims_table(experiment.Evidence(scores, {"every rate": swapped}))["verdict"][2] == DOES_NOT_HOLD
    # a flat curve under "local rate" alone is not evidence: only "every rate" is judged
    both = experiment.claims_table(experiment.Evidence(scores, {"every rate": swapped, "local rate": robust}))
    assert both["verdict"][2] == DOES_NOT_HOLD and "0 of 8 pairs wider" in both["ours"][2]
    only_local = experiment.claims_table(experiment.Evidence(scores, {"local rate": robust}))
    assert only_local["verdict"][2] == NOT_TESTABLE


# ------------------------------------------------------------------ explorer and figure


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


def test_robustness_figure_fills_the_good_multipliers() -> None:
    table = _robustness({"A": [0.80, 0.81, 0.82, 0.5, np.nan], "B": [0.1, 0.2, 0.3, 0.3, 0.3]})
    ax = plots.robustness(table, near_best_by_column(table, experiment.NEAR_BEST))
    lines = ax.get_lines()
    assert len(lines) == 6  # a line, its filled and its hollow markers per method
    filled_a = lines[1].get_xdata()
    assert list(filled_a) == [0.01, 0.1, 1.0] and ax.get_xscale() == "log"
    import matplotlib.pyplot as plt

    plt.close("all")
