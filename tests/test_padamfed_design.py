"""PAdaMFed taken apart (papers.padamfed.design): the ablation without control variates against an
independent implementation, its invariants (unnormalized, beta = 1 and gamma = eta K it is FedAvg), and the design
steps at Theorem 1's step sizes."""

from __future__ import annotations

import pytest
import torch
from test_padamfed import HAND_SET, NON_UNIFORM, gradient, least_squares, problem_of, two_rounds

from fedcore import algorithms, objectives
from fedcore.engine.passes import run_state
from fedcore.params import GradientOracle
from fedcore.run import simulate
from papers.padamfed import design, theory


def reference_without(x0, batches, data, eta: float, gamma: float, beta: float, storm: bool):
    """Algorithm 1 with c_i = c = 0, loops over rounds, clients and steps: g^{-1} the mean of every client's full
    gradient at theta^0 (line 1's momentum), line 7 ``beta G + (1 - beta) g`` (STORM: ``G + (1 - beta) (g -
    G(theta^{t-1}))``), the normalized step, line 13-14's server step and ``g^t = beta (1/S) sum_i (1/K) sum_k G +
    (1 - beta) g^{t-1}``.  Returns theta and g."""
    theta, theta_prev = x0.clone(), x0.clone()
    g = sum(gradient(theta, *data.client(i)[:2]) for i in range(data.num_clients)) / data.num_clients
    for batch in batches:
        clients, K, S = batch.clients.reshape(-1).tolist(), batch.local_steps, batch.clients.numel()
        A, y = batch.inputs, batch.targets
        finals, means = [], []
        for s in range(len(clients)):
            w, total = theta.clone(), torch.zeros_like(theta)
            for k in range(K):
                G = gradient(w, A[s, k], y[s, k])
                total = total + G
                if storm:
                    d = G + (1 - beta) * (g - gradient(theta_prev, A[s, k], y[s, k]))
                else:
                    d = beta * G + (1 - beta) * g
                w = w - eta * d / d.norm()
            finals.append(w)
            means.append(total / K)
        g_bar = sum(float(batch.weights.reshape(-1)[s]) * (theta - finals[s]) for s in range(S)) / (eta * K)
        g = beta * sum(means) / S + (1 - beta) * g
        theta_prev, theta = theta, theta - gamma * g_bar
    return theta, g


@pytest.mark.filterwarnings(NON_UNIFORM)
@pytest.mark.parametrize("backend", ["loop", "vmap"])
@pytest.mark.parametrize("storm", [False, True])
def test_two_rounds_without_control_variates_match_an_independent_implementation(storm: bool, backend: str) -> None:
    data = least_squares()
    oracle = GradientOracle(problem_of(data).model, backend)
    x0 = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    batches = two_rounds(data)
    algorithm = design.WithoutControlVariates(**HAND_SET, variance_reduction=storm)
    state = algorithm.init(x0, data.num_clients)
    for batch in batches:
        state, _ = algorithm.round(state, batch, oracle)
    state = run_state(state, 0)
    theta, g = reference_without(x0, batches, data, **HAND_SET, storm=storm)
    torch.testing.assert_close(state["x"], theta, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(state["g"], g, rtol=1e-10, atol=1e-12)
    # with its control variates, the same step sizes take another path on these heterogeneous clients
    full = algorithms.PAdaMFed(**HAND_SET, variance_reduction=storm)
    other = full.init(x0, data.num_clients)
    for batch in batches:
        other, _ = full.round(other, batch, oracle)
    assert not torch.allclose(run_state(other, 0)["x"], theta)


def test_unnormalized_with_beta_one_and_gamma_eta_k_is_fedavg() -> None:
    """No normalization, beta = 1 (no momentum), no control variates: theta_i <- theta_i - eta grad, and the server
    step gamma / (eta K) times the mean walk is the mean of the clients' models when gamma = eta K: FedAvg."""
    task = objectives.quadratic_task(num_clients=8, dim=4, samples_per_client=10)
    eta, K = 0.05, 3
    options = dict(rounds=6, clients_per_round=4, local_steps=K, batch_size=4, seed=3, progress=False,
                   weighting="uniform", eval_every=6, record=task.record)
    ablated = simulate(task.problem, design.WithoutControlVariates(eta=eta, gamma=eta * K, beta=1.0,
                                                                   normalized=False), **options)
    fedavg = simulate(task.problem, algorithms.fedavg(eta), **options)
    torch.testing.assert_close(torch.tensor(ablated.frame["squared_gradient_norm"].to_numpy()),
                               torch.tensor(fedavg.frame["squared_gradient_norm"].to_numpy()), rtol=1e-9, atol=0)


def test_the_factory_and_the_design_steps_use_theorem_1s_step_sizes() -> None:
    sizes = {"clients_per_round": 10, "local_steps": 5, "rounds": 200}
    theorem = algorithms.padamfed(**sizes)
    ablated = design.without_control_variates(**sizes)
    assert (ablated.eta, ablated.gamma, ablated.beta) == (theorem.eta, theorem.gamma, theorem.beta)
    assert ablated.name == theory.ABLATION
    vr = design.without_control_variates(**sizes, variance_reduction=True)
    assert vr.variance_reduction and vr.eta == algorithms.padamfed_vr(**sizes).eta
    steps = design.design_steps(sizes)
    assert list(steps) == ["normalized local steps", "+ momentum", "+ control variates (PAdaMFed)"]
    assert steps["normalized local steps"].beta == 1.0 and steps["+ momentum"].beta == theorem.beta
    assert type(steps["+ control variates (PAdaMFed)"]) is algorithms.PAdaMFed
    assert all(step.eta == theorem.eta and step.gamma == theorem.gamma for step in steps.values())
    with pytest.raises(ValueError, match="beta"):
        design.WithoutControlVariates(eta=0.1, gamma=0.1, beta=1.5)
