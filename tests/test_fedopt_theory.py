"""Reddi et al.'s corollaries on a federated quadratic (papers.fedopt.theory)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

import fedcore
from fedcore import objectives
from papers.fedopt import figures, theory


@pytest.fixture(scope="module")
def task() -> objectives.QuadraticTask:
    return objectives.quadratic_task(num_clients=20, dim=5, samples_per_client=10)


def test_gradient_is_the_global_objectives(task) -> None:
    """A^T (A x - y) / n against autograd of f(x) = 1/(2n) ||A x - y||^2; L the top eigenvalue of A^T A / n."""
    data = task.problem.data
    x = torch.randn(5, dtype=torch.float64, generator=torch.Generator().manual_seed(1)).requires_grad_()
    (0.5 * (data.inputs @ x - data.targets).square().mean()).backward()
    assert torch.allclose(task.gradient(x.detach()), x.grad)
    hessian = data.inputs.T @ data.inputs / data.inputs.shape[0]
    assert math.isclose(task.smoothness, float(torch.linalg.eigvalsh(hessian)[-1]))
    assert task.gradient_bound == float(task.gradient(task.problem.x0()).abs().max()) > 0
    again = objectives.quadratic_task(num_clients=20, dim=5, samples_per_client=10)  # data and start from the seed
    assert torch.equal(again.problem.x0(), task.problem.x0()) and torch.equal(again.problem.data.inputs, data.inputs)


def test_corollary_learning_rates_by_hand() -> None:
    """K = 5, m = 10, T = 100, L = 2: eta_l = 1 / (5 * 2 * 10) = 0.01, eta = sqrt(50)."""
    client, server = theory.corollary_learning_rates(5, 10, 100, 2.0)
    assert math.isclose(client, 0.01) and math.isclose(server, math.sqrt(50))
    client, server = theory.corollary_learning_rates(5, 10, 100, 2.0, client_constant=3, server_constant=0.5)
    assert math.isclose(client, 0.03) and math.isclose(server, 0.5 * math.sqrt(50))
    with pytest.raises(ValueError, match="smoothness=0 must be > 0"):
        theory.corollary_learning_rates(5, 10, 100, 0)


def test_fitted_exponent_recovers_a_power_law() -> None:
    index = pd.Index([10, 40, 160, 640], name="T")
    table = pd.DataFrame({"mean squared gradient norm": 3.0 * index.to_numpy() ** -0.5}, index=index)
    assert math.isclose(theory.fitted_exponent(table), -0.5)
    with pytest.raises(ValueError, match="at least two rows"):
        theory.fitted_exponent(table.iloc[:1])


def test_more_rounds_at_the_corollary_rates_shrink_the_gradient_at_least_as_fast_as_the_rate(task) -> None:
    """Over T = 20 .. 320 the average squared gradient norm falls with a slope at or below -1/2."""
    table = theory.scaling(task, "rounds", [20, 80, 320], seeds=(0,), base={"rounds": 20, "clients_per_round": 5,
                                                                          "local_steps": 3})
    assert list(table.index) == [20, 80, 320] and np.all(np.diff(table["mean squared gradient norm"]) < 0)
    assert theory.fitted_exponent(table) <= theory.PREDICTED_EXPONENT + 0.05
    assert np.allclose(table["1 / sqrt(m K T)"], 1 / np.sqrt(np.array([20, 80, 320]) * 15))
    with pytest.raises(ValueError, match="vary='epochs' not one of"):
        theory.scaling(task, "epochs", [1, 2])


def test_exponents_by_heterogeneity_are_the_fitted_slopes() -> None:
    values = {"clients_per_round": [2, 8]}
    table = theory.exponents_by_heterogeneity([0.0, 2.0], values, seeds=(0,))
    assert list(table.index) == [0.0, 2.0] and list(table.columns) == ["m"]
    task = objectives.quadratic_task(heterogeneity=2.0)
    assert table.loc[2.0, "m"] == theory.fitted_exponent(theory.scaling(task, "clients_per_round", [2, 8], (0,)))


def test_scaling_panels_draw_the_measured_points_and_the_predicted_slope() -> None:
    import matplotlib

    matplotlib.use("Agg")

    index = pd.Index([10, 40, 160], name="T")
    table = pd.DataFrame({"mean squared gradient norm": 2.0 * index.to_numpy() ** -0.7}, index=index)
    figure = figures.ScalingDisplay.from_tables({"FedAdam": {"T": table, "m": table.rename_axis("m")}}).plot().figure_
    assert len(figure.axes) == 2 and figure.axes[1].get_legend_handles_labels()[1][0] == "FedAdam (slope -0.70)"
    measured, reference = figure.axes[0].get_lines()
    assert np.allclose(reference.get_ydata(), 2.0 * 10**-0.7 * (np.array([10, 40, 160]) / 10) ** -0.5)
    flatter = pd.DataFrame({"mean squared gradient norm": 3.0 * index.to_numpy() ** -0.2}, index=index)
    both = figures.ScalingDisplay.from_tables({"FedAdam": {"T": table}, "FedAvgM": {"T": flatter}})
    assert both.slopes.loc["FedAdam", "T"] == pytest.approx(-0.7)
    assert both.slopes.loc["FedAvgM", "T"] == pytest.approx(-0.2)
    labels = both.plot().figure_.axes[0].get_legend_handles_labels()[1]
    assert labels == ["FedAdam (slope -0.70)", "slope -0.5", "FedAvgM (slope -0.20)"]


def test_rate_tradeoff_cells_are_fedadam_runs_at_client_constant_c_and_server_constant_1_over_c() -> None:
    """One cell recomputed by hand: FedAdam at eta_l = c / (K L sqrt T), eta = sqrt(K m) / c, tau = G / L, the
    mean of ||A^T (A x - y) / n||^2 over the last tenth of the rounds."""
    from fedcore import algorithms
    from fedcore.run import simulate

    point = {"rounds": 20, "clients_per_round": 50, "local_steps": 3}
    table = theory.rate_tradeoff([2.0], [0.5, 4.0], seeds=(0,), point=point)
    assert list(table.columns) == [2.0] and list(table.index) == [0.5, 4.0]
    task = objectives.quadratic_task(heterogeneity=2.0)
    client_lr = 4.0 / (3 * task.smoothness * math.sqrt(20))
    algorithm = algorithms.fedadam(client_lr, server_lr=math.sqrt(3 * 50) / 4.0,
                                   tau=task.gradient_bound / task.smoothness)
    norms = []
    simulate(task.problem, algorithm, 20, 50, 3, 4, seed=0, progress=False, eval_every=20,
             callback=lambda t, state: norms.append(float(task.gradient(state["x"]).square().sum())))
    assert math.isclose(table.loc[4.0, 2.0], np.mean(norms[-2:]), rel_tol=1e-12)


def test_with_every_client_the_drift_floor_rises_with_the_client_rate_and_with_heterogeneity() -> None:
    """The corollaries' second takeaway, measured: at a fixed product of the two rates, a smaller client rate
    leaves a lower final gradient, and more heterogeneity a higher one (full participation: no sampling noise)."""
    point = {"rounds": 120, "clients_per_round": 50, "local_steps": 10}
    table = theory.rate_tradeoff([0.0, 3.0], [0.3, 3.0, 30.0], seeds=(0,), point=point)
    for level in table:
        assert np.all(np.diff(table[level].to_numpy()) > 0), table
    assert np.all(table[3.0] > table[0.0]), table


def test_largest_constant_below_by_hand() -> None:
    table = pd.DataFrame({0.0: [1e-6, 1e-4, 1e-2], 3.0: [1e-3, 1e-1, 10.0]}, index=[0.1, 1.0, 10.0])
    found = theory.largest_constant_below(table, 1e-3)
    assert found[0.0] == 1.0 and found[3.0] == 0.1
    assert math.isnan(theory.largest_constant_below(table, 1e-7)[3.0])
    with pytest.raises(ValueError, match="target=0 must be > 0"):
        theory.largest_constant_below(table, 0)
    import matplotlib

    matplotlib.use("Agg")
    shown = figures.TradeoffDisplay.from_tables({"all": table, "some": table * 10}, target=1e-3)
    assert shown.slopes.loc["all", 0.0] == pytest.approx(2.0) and shown.slopes.loc["some", 3.0] == pytest.approx(2.0)
    assert shown.reach.loc["all"].tolist() == [1.0, 0.1] and math.isnan(shown.reach.loc["some", 3.0])
    figure = shown.plot().figure_
    assert [ax.get_title() for ax in figure.axes] == ["all", "some"] and len(figure.axes[0].get_lines()) == 2


def test_fedavgm_takes_fedadams_first_step_up_to_its_denominator(task) -> None:
    """FedAvgM at ``eta (1 - beta1) / (2 tau)`` moves by FedAdam's first step with ``sqrt(v_0)`` taken as ``tau``:
    per coordinate the two steps differ by the factor ``(sqrt(beta2 tau^2 + (1 - beta2) Delta^2) + tau) / (2 tau)``
    (Algorithm 2 with ``v_{-1} = tau^2``), computed here from FedAvgM's own step."""
    point = {"rounds": 1, "clients_per_round": 10, "local_steps": 5}
    x0 = task.problem.x0()
    _, server_lr = theory.corollary_learning_rates(5, 10, 1, task.smoothness)
    tau = task.gradient_bound / task.smoothness

    def first_move(method: str) -> torch.Tensor:
        seen = []
        fedcore.simulate(task.problem, theory.corollary_algorithm(method, task, point), 1, 10, 5, 4, seed=3,
                         progress=False, callback=lambda t, state: seen.append(state["x"].clone()))
        return seen[-1] - x0

    finals = {method: first_move(method) for method in ("FedAdam", "FedAvgM")}
    step_m = finals["FedAvgM"]  # lr M_0 = eta (1 - beta1) Delta_0 / (2 tau): recover Delta_0 from it
    delta = step_m * 2 * tau / (server_lr * (1 - theory.BETA1))  # FedAvgM's M_0 = Delta_0
    adam = server_lr * (1 - theory.BETA1) * delta / (torch.sqrt(theory.BETA2 * tau**2 + (1 - theory.BETA2) * delta**2)
                                                     + tau)
    assert torch.allclose(finals["FedAdam"], adam, rtol=1e-10, atol=1e-14)
    assert not torch.allclose(finals["FedAdam"], step_m, rtol=1e-6, atol=0)  # the denominators do differ


def test_fedadams_denominator_stays_within_tau_and_two_tau_at_the_corollary_rates(task) -> None:
    low, high = theory.denominator_ratio(task, {"rounds": 60, "clients_per_round": 5, "local_steps": 5})
    assert 0 < low < high < 1  # sqrt(v_t) + tau in [tau, 2 tau]: momentum SGD up to a factor 2
    assert high == pytest.approx(math.sqrt(theory.BETA2), rel=1e-2)  # round 0: v_0 ~ beta2 tau^2 (Delta tiny)


@pytest.mark.parametrize("method", ["FedAdagrad", "FedAvgM"])
def test_scaling_runs_each_corollary_method(task, method) -> None:
    table = theory.scaling(task, "rounds", [20, 80], seeds=(0,), method=method)
    assert list(table.index) == [20, 80] and (table["mean squared gradient norm"] > 0).all()
    [again] = theory.squared_gradient_norms(task, {"rounds": 20, "clients_per_round": 10, "local_steps": 5},
                                            method=method)
    assert len(again) == 20 and table.loc[20, "mean squared gradient norm"] == pytest.approx(float(np.mean(again)))
    assert table.loc[20, "mean squared gradient norm"] != pytest.approx(
        theory.scaling(task, "rounds", [20], seeds=(0,))["mean squared gradient norm"].iloc[0])  # not FedAdam's
    with pytest.raises(ValueError, match="method='FedYogi' not one of"):
        theory.scaling(task, "rounds", [20], seeds=(0,), method="FedYogi")
