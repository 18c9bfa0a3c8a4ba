"""FAFED, STEM and naive local-adaptive FedAvg (Wu et al., AAAI 2023), and the counterexample."""

from __future__ import annotations

import copy
import math
from functools import partial

import pytest
import torch
import torch.nn.functional as F
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from fedcore import algorithms, counterexample, models
from fedcore.algorithms import RoundBatch
from fedcore.engine.passes import run_state
from fedcore.params import GradientOracle
from fedcore.run import Problem, simulate
from papers.fafed import explore as fafed_explore
from papers.fafed import theory

# ---- the counterexample (Theorem 1) ----------------------------------------------------------------


def test_counterexample_first_step_matches_the_paper() -> None:
    """eta = 0.1, beta = 0.5, v_0 = 0, x_0 = 10: 9.8586, 10.1414 (twice), mean 10.0471."""
    first = counterexample.run(algorithms.local_adaptive(0.1, beta=0.5), rounds=1, local_steps=1).frame.loc[1]
    assert round(first["client 1"], 4) == 9.8586
    assert round(first["client 2"], 4) == round(first["client 3"], 4) == 10.1414
    assert round(first["mean"], 4) == 10.0471
    assert first["client 1"] == pytest.approx(10 - 0.1 * 6 / math.sqrt(0.5 * 36), abs=1e-12)


@pytest.mark.parametrize("local_steps", [1, 5])
@pytest.mark.parametrize("eta", [0.01, 0.05, 0.1])
@pytest.mark.parametrize("beta", [0.1, 0.5, 0.9])
def test_naive_average_moves_away_by_the_papers_amount(eta: float, beta: float, local_steps: int) -> None:
    """Every step the mean of the clients' models moves by +eta / (3 sqrt(1 - beta^t)), away from 0."""
    frame = counterexample.run(algorithms.local_adaptive(eta, beta=beta), rounds=10 // local_steps,
                               local_steps=local_steps).frame
    t = torch.arange(1, 11, dtype=torch.float64)
    expected = eta / (3 * torch.sqrt(1 - beta**t))
    moves = torch.tensor(frame["mean"].diff().iloc[1:].to_numpy())
    torch.testing.assert_close(moves, expected, rtol=0, atol=1e-12)
    assert bool((frame["f"].diff().iloc[1:] > 0).all())  # the global objective only grows


@pytest.mark.parametrize("eta", [0.3, 1.0])
@pytest.mark.parametrize("beta", [0.1, 0.5, 0.9])
def test_fafed_approaches_the_optimum(eta: float, beta: float) -> None:
    """Same eta and beta, averaging every step: FAFED goes from 10 to within 0.1 of 0."""
    trajectory = counterexample.run(algorithms.fafed(eta, alpha=0.5, beta=beta), rounds=int(100 / eta))
    frame = trajectory.frame
    outside = frame[frame["mean"].abs() > 1]
    assert bool((outside["mean"].diff().iloc[1:] < 0).all())  # straight towards 0 while |x| > 1
    assert abs(trajectory.final()) < 0.1


def test_fafed_with_local_steps_and_the_papers_schedule_approaches_the_optimum() -> None:
    """q = 5 local steps; eta_t = 1 / (1 + t)^(1/3), alpha_t+1 = eta_t^2: the server model ends near 0."""
    lr = algorithms.storm_step_size(1.0, 1.0)
    trajectory = counterexample.run(algorithms.fafed(lr, alpha=algorithms.storm_momentum(1.0, lr), beta=0.5),
                                    rounds=200, local_steps=5)
    server = trajectory.server
    assert abs(server.iloc[-1]) < 0.5 and server.abs().iloc[-20:].max() < 1.0


@pytest.mark.parametrize("alpha", [0.3, 1.0])
def test_fafed_preconditioner_is_shared_by_all_clients(alpha: float) -> None:
    """Round 1, second local step (|x| > 1: gradients 6, -2, -2 at every point): each client moves by
    -eta m_i / A_0 with the same A_0 = sqrt(mean g^2) + rho, where m_i = alpha g_i + (1 - alpha) m_0 (with
    alpha = 1, the plain gradient). Naive local adaptivity instead moves every client by the same size."""
    eta, rho = 0.1, 0.01
    frame = counterexample.run(algorithms.fafed(eta, alpha=alpha, beta=0.5, rho=rho), rounds=1, local_steps=3).frame
    g = torch.tensor([6.0, -2.0, -2.0], dtype=torch.float64)
    m_0 = g.mean()
    A_0 = math.sqrt(float(g.square().mean())) + rho
    x_1 = torch.tensor(frame.loc[1, ["client 1", "client 2", "client 3"]].to_numpy(dtype=float))
    x_2 = torch.tensor(frame.loc[2, ["client 1", "client 2", "client 3"]].to_numpy(dtype=float))
    torch.testing.assert_close(x_1, torch.full((3,), 10 - eta * float(m_0), dtype=torch.float64))  # Alg. 2 line 3
    m_1 = alpha * g + (1 - alpha) * m_0
    ratio = (x_2 - x_1) / m_1
    torch.testing.assert_close(ratio, torch.full((3,), -eta / A_0, dtype=torch.float64))
    naive = counterexample.run(algorithms.local_adaptive(eta, beta=0.5), rounds=1, local_steps=3).frame
    steps = naive.loc[2, ["client 1", "client 2", "client 3"]] - naive.loc[1, ["client 1", "client 2", "client 3"]]
    assert steps.abs().nunique() == 1 and (steps / g.numpy()).nunique() == 2


# ---- FAFED on a real model, against an independent implementation ---------------------------------


def _gradient(module, x, inputs, targets):
    """The minibatch gradient at x, computed on a copy of the nn.Module (no fedcore code involved)."""
    module = copy.deepcopy(module)
    vector_to_parameters(x, module.parameters())
    loss = F.cross_entropy(module(inputs), targets)
    return parameters_to_vector(torch.autograd.grad(loss, list(module.parameters())))


@pytest.mark.parametrize("alpha", [0.3, 1.0])
@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_fafed_matches_an_independent_implementation(tiny_classification, alpha: float, backend: str) -> None:
    data, clients = tiny_classification, torch.tensor([4, 0, 2])
    module = models.make("logistic_regression", (8,), 3, seed=1)
    oracle = GradientOracle(Problem(data, module).model, backend)
    sizes = data.sizes[clients].float()
    weights = sizes / sizes.sum()
    batches = []
    for r in range(2):
        inputs, targets = data.sample_batches(clients, 3, 5, torch.Generator().manual_seed(r))
        batches.append(RoundBatch.of(r, clients, weights, inputs, targets, data.num_clients))
    x0 = parameters_to_vector(module.parameters()).detach()
    algorithm = algorithms.fafed(0.05, alpha=alpha, beta=0.9, rho=0.01)
    state = algorithm.init(x0, data.num_clients)
    for batch in batches:
        state, _ = algorithm.round(state, batch, oracle)
    expected = theory.reference_fafed(partial(_gradient, module), x0, batches, weights.tolist(), 0.05, alpha, 0.9, 0.01)
    torch.testing.assert_close(state["x"].reshape(-1), expected, rtol=1e-5, atol=1e-6)  # one run: [1, 1, d]
    assert int(state["t"]) == 1 + 2 * 3  # the initial step, then q = 3 steps per round


def test_stem_is_fafed_without_the_adaptive_matrix(tiny_classification) -> None:
    """STEM: x_bar = mean_i x_i - eta m_bar, no preconditioner; checked against FAFED with A = 1."""
    stem = algorithms.stem(0.05, alpha=0.4)
    state = stem.init(torch.zeros(3), 2)
    assert torch.equal(stem.preconditioner(torch.tensor([4.0, 0.0, 9.0])), torch.ones(3))
    assert torch.equal(algorithms.fafed(0.05, rho=0.5).preconditioner(torch.tensor([4.0, 0.0, 9.0])),
                       torch.tensor([2.5, 0.5, 3.5]))
    assert set(state) == {"x", "m", "v", "A", "x_prev", "t"} and stem.name == "STEM"


def test_naive_local_adaptive_round_by_hand(tiny_classification) -> None:
    """Two local steps with per-client v (v_0 = 0): x_i <- x_i - eta g / sqrt(v_i), then the weighted mean."""
    data, clients = tiny_classification, torch.tensor([1, 3])
    module = models.make("logistic_regression", (8,), 3, seed=2)
    inputs, targets = data.sample_batches(clients, 2, 4, torch.Generator().manual_seed(5))
    weights = torch.tensor([0.25, 0.75])
    batch = RoundBatch.of(0, clients, weights, inputs, targets, data.num_clients)
    x0 = parameters_to_vector(module.parameters()).detach()
    algorithm = algorithms.local_adaptive(0.1, beta=0.7)
    state, _ = algorithm.round(algorithm.init(x0, data.num_clients), batch, GradientOracle(Problem(data, module).model))
    state = run_state(state, 0)  # one run's state: x [d], v [N, d]
    finals = []
    for i in range(2):
        x, v = x0, torch.zeros_like(x0)
        for k in range(2):
            g = _gradient(module, x, inputs[i, k], targets[i, k])
            v = 0.7 * v + 0.3 * g**2
            x = x - 0.1 * torch.where(v > 0, g / v.sqrt(), 0.0)
        finals.append((x, v))
    torch.testing.assert_close(state["x"], 0.25 * finals[0][0] + 0.75 * finals[1][0])
    torch.testing.assert_close(state["v"][clients], torch.stack([finals[0][1], finals[1][1]]))
    assert torch.equal(state["v"][0], torch.zeros_like(x0))  # clients not in the round keep their v


def test_trace_records_every_local_step(tiny_classification) -> None:
    """RoundBatch.trace: K entries of [S, d]; for FedAvg at server lr 1 their last, averaged, is the new x."""
    data, clients = tiny_classification, torch.tensor([0, 5, 3])
    inputs, targets = data.sample_batches(clients, 4, 3, torch.Generator().manual_seed(0))
    sizes = data.sizes[clients].float()
    batch = RoundBatch.of(0, clients, sizes / sizes.sum(), inputs, targets, data.num_clients, trace=[])
    module = models.make("logistic_regression", (8,), 3)
    x0 = parameters_to_vector(module.parameters()).detach()
    oracle = GradientOracle(Problem(data, module).model)
    algorithm = algorithms.fedavg(0.2)
    state, _ = algorithm.round(algorithm.init(x0, data.num_clients), batch, oracle)
    assert len(batch.trace) == 4 and batch.trace[0].shape == (1, 3, x0.numel())  # [R, S, d] of the one run
    torch.testing.assert_close(batch.weights @ batch.trace[-1], state["x"])


def test_fafed_state_survives_checkpoint_and_resume(tiny_classification, tmp_path) -> None:
    problem = lambda: Problem(tiny_classification, models.make("mlp", (8,), 3, hidden=(6,)))  # noqa: E731
    options = dict(clients_per_round=6, local_steps=3, batch_size=4, progress=False, seed=3)
    algorithm = algorithms.fafed(0.02, alpha=0.5)
    full = simulate(problem(), algorithm, rounds=5, **options)
    path = tmp_path / "fafed.pt"
    simulate(problem(), algorithm, rounds=2, checkpoint=path, checkpoint_every=1, **options)
    resumed = simulate(problem(), algorithm, rounds=5, checkpoint=path, resume=True, **options)
    for key in ("x", "m", "v", "A", "x_prev", "t"):
        assert torch.equal(full.final_state[key], resumed.final_state[key]), key


def test_fafed_learns_a_small_classification_task(tiny_classification) -> None:
    problem = Problem(tiny_classification, models.make("logistic_regression", (8,), 3))
    history = simulate(problem, algorithms.fafed(0.02, alpha=0.5), rounds=30, clients_per_round=6,
                       local_steps=5, batch_size=4, progress=False, eval_every=30)
    start, end = history.frame["test_loss"].iloc[0], history.frame["test_loss"].iloc[-1]
    assert end < 0.5 * start and history.final("test_accuracy") > 0.8


@pytest.mark.parametrize(("factory", "kwargs", "message"), [
    (algorithms.fafed, dict(lr=0.1, alpha=0.0), r"alpha=0.0 not in \(0, 1\]"),
    (algorithms.fafed, dict(lr=0.1, alpha=1.5), r"alpha=1.5 not in \(0, 1\]"),
    (algorithms.fafed, dict(lr=0.1, rho=0.0), "rho=0.0 must be > 0"),
    (algorithms.fafed, dict(lr=0.1, beta=1.0), r"beta=1.0 not in \[0, 1\)"),
    (algorithms.fafed, dict(lr=-1.0), "lr=-1.0 must be > 0"),
    (algorithms.stem, dict(lr=0.1, alpha=2), r"alpha=2 not in \(0, 1\]"),
    (algorithms.local_adaptive, dict(lr=0.0), "lr=0.0 must be > 0"),
    (algorithms.local_adaptive, dict(lr=0.1, beta=-0.1), r"beta=-0.1 not in \[0, 1\)"),
    (algorithms.storm_step_size, dict(scale=0.0), "scale=0.0 must be > 0"),
    (algorithms.storm_momentum, dict(c=-1.0, step_size=lambda t: 0.1), "c=-1.0 must be > 0"),
])
def test_bad_hyperparameters_name_the_argument(factory, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        factory(**kwargs)


def test_counterexample_run_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="rounds=0 must be >= 1"):
        counterexample.run(algorithms.fafed(0.1), rounds=0)
    with pytest.raises(TypeError, match="local_steps=1.5 must be an int"):
        counterexample.run(algorithms.fafed(0.1), rounds=2, local_steps=1.5)


def test_paper_schedules() -> None:
    """eta_t = scale / (w + t)^(1/3); alpha_t+1 = min(1, c eta_t^2)."""
    lr = algorithms.storm_step_size(2.0, w=7.0)
    assert lr(1) == pytest.approx(1.0)  # 2 / 8^(1/3)
    momentum = algorithms.storm_momentum(0.5, lr)
    assert momentum(2) == pytest.approx(0.5) and momentum(0) == pytest.approx(min(1, 0.5 * lr(0) ** 2))
    assert algorithms.storm_momentum(100.0, lr)(5) == 1.0


@pytest.mark.parametrize("q", [1, 4])
def test_explore_counterexample_draws_both_algorithms_headless(q: int) -> None:
    """The explorer's callback as a plain function: two panels, naive ends above 10, FAFED below (title)."""
    import re

    import matplotlib.pyplot as plt


    plt.close("all")
    assert fafed_explore.explore_counterexample(eta=0.5, beta=0.5, q=q, rho=0.01, steps=40) is None
    figure = plt.gcf()
    trajectories, objective = figure.axes[:2]
    labels = [line.get_label() for line in trajectories.lines]
    assert "naive local-adaptive (Alg. 1)" in labels and "FAFED (Alg. 2)" in labels
    assert len(objective.lines) == 2
    naive_end, fafed_end = map(float, re.findall(r"at x = ([-\d.e+]+)", figure.get_suptitle()))
    assert naive_end > 10 > fafed_end
    plt.close(figure)
    with pytest.raises(ValueError, match="steps=0 must be >= 1"):
        fafed_explore.explore_counterexample(steps=0)
