"""The client side of a round: the oracle's probes, the K-step loop and each client rule, against
values computed by hand or by an independent loop."""

from __future__ import annotations

import pytest
import torch
from conftest import blobs
from torch import Tensor

from fedcore import models
from fedcore.algorithms import RoundBatch, client
from fedcore.algorithms.client import Update, chain, train_clients
from fedcore.params import FlatModel, GradientOracle
from fedcore.run import Problem

BACKENDS = ["loop", "vmap"]


def dropout_oracle(backend: str, dropout: float = 0.5) -> tuple[GradientOracle, Tensor, Tensor, Tensor]:
    """An MLP with dropout in train mode, 4 clients at different points, one minibatch each."""
    model = FlatModel(models.make("mlp", (8,), 3, hidden=(16,), dropout=dropout, seed=0))
    model.module.train()
    generator = torch.Generator().manual_seed(0)
    X = model.x0() + 0.1 * torch.randn(4, model.dim, generator=generator)
    inputs = torch.randn(4, 6, 8, generator=generator)
    targets = torch.randint(3, (4, 6), generator=generator)
    return GradientOracle(model, backend), X, inputs, targets


@pytest.mark.parametrize("backend", BACKENDS)
def test_replaying_repeats_the_dropout_masks_and_consumes_nothing(backend: str) -> None:
    """Same point, same state: identical loss and gradient; without the replay the masks differ.
    After a replay the stream continues as if it had not happened."""
    oracle, X, inputs, targets = dropout_oracle(backend)
    torch.manual_seed(5)
    state = oracle.random_state()
    loss, G = oracle(X, inputs, targets)
    after = torch.get_rng_state()
    with oracle.replaying(state):
        replayed_loss, replayed_G = oracle(X, inputs, targets)
    assert torch.equal(torch.get_rng_state(), after)
    assert torch.equal(loss, replayed_loss) and torch.equal(G, replayed_G)
    fresh_loss, fresh_G = oracle(X, inputs, targets)  # new masks
    assert not torch.equal(G, fresh_G)


@pytest.mark.parametrize("backend", BACKENDS)
def test_loss_probe_equals_the_gradient_calls_loss_with_the_same_masks(backend: str) -> None:
    oracle, X, inputs, targets = dropout_oracle(backend)
    state = oracle.random_state()
    loss, _ = oracle(X, inputs, targets)
    with oracle.replaying(state):
        probed = oracle.losses(X, inputs, targets)
    torch.testing.assert_close(probed, loss, rtol=1e-6, atol=1e-7)
    assert not torch.allclose(oracle.losses(X, inputs, targets), loss)  # other masks, other losses


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_points_with_the_same_masks_match_an_independent_evaluation(backend: str) -> None:
    """The gradient at a second point Y under the replayed state equals the gradient of a plain
    nn.Module with the same dropout masks (reproduced by reseeding the same way)."""
    oracle, X, inputs, targets = dropout_oracle(backend)
    Y = X + 0.05
    torch.manual_seed(11)
    state = oracle.random_state()
    oracle(X, inputs, targets)
    with oracle.replaying(state):
        _, G_Y = oracle(Y, inputs, targets)
    torch.manual_seed(11)
    _, expected = oracle(Y, inputs, targets)  # the same stream from the same seed
    torch.testing.assert_close(G_Y, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("backend", BACKENDS)
def test_oracle_writes_into_the_callers_buffer(backend: str) -> None:
    oracle, X, inputs, targets = dropout_oracle(backend, dropout=0.0)
    buffer = torch.full_like(X, float("nan"))
    _, G = oracle(X, inputs, targets, out=buffer)
    assert G.data_ptr() == buffer.data_ptr()
    torch.testing.assert_close(G, oracle(X, inputs, targets)[1])
    with pytest.raises(ValueError, match=r"out has shape \(3, "):
        oracle(X, inputs, targets, out=buffer[:3])


# ---- the K-step loop and the rules --------------------------------------------------------------


def quadratic_batch(steps: int = 3, S: int = 2):
    """S clients of the federated quadratic, client i's design scaled by (1 + i) so that their curvatures
    differ; full batch at every step: G(X_i) = A_i^T (A_i X_i - y_i) / n."""
    from fedcore.data import federated_quadratic

    data = federated_quadratic(num_clients=4, dim=3, samples_per_client=6, heterogeneity=1.0, seed=1)
    problem = Problem(data, models.linear_regression((3,)).double())
    oracle = GradientOracle(problem.model, "loop")
    clients = torch.arange(S)
    designs = [(A * (1 + i), y) for i, (A, y) in enumerate(data.client(i) for i in range(S))]
    inputs = torch.stack([A for A, _ in designs])[:, None].expand(S, steps, -1, -1)
    targets = torch.stack([y for _, y in designs])[:, None].expand(S, steps, -1)
    batch = RoundBatch.of(0, clients, torch.full((S,), 1 / S, dtype=torch.float64), inputs, targets, 4, trace=[])

    def gradient(X: torch.Tensor) -> torch.Tensor:
        return torch.stack([A.T @ (A @ X[i] - y) / len(y) for i, (A, y) in enumerate(designs)])

    def loss(X: torch.Tensor) -> torch.Tensor:
        return torch.stack([0.5 * (A @ X[i] - y).pow(2).mean() for i, (A, y) in enumerate(designs)])

    x = torch.tensor([0.3, -0.2, 0.1], dtype=torch.float64)
    return x, batch, oracle, gradient, loss


def test_sgd_with_a_correction_a_fixed_momentum_and_normalization_by_hand() -> None:
    """named(direction=chain(add(c), scale(beta), add((1 - beta) g)), normalized=normalize(), step=learning_rate(eta))
    against the recursion written out: D_k = beta (G_k + c) + (1 - beta) g, X <- X - eta D_k / ||D_k||
    (PAdaMFed's line 7 and line 8, the server's momentum g fixed for the round)."""
    x, batch, oracle, gradient, _ = quadratic_batch()
    c = torch.tensor([[0.1, 0.0, -0.1], [0.0, 0.2, 0.0]], dtype=torch.float64)
    g, beta, eta = torch.ones(2, 3, dtype=torch.float64), 0.7, 0.05
    rule = client.named(direction=chain(client.add(c), client.scale(beta), client.add((1 - beta) * g)),
                        normalized=client.normalize(), step=client.learning_rate(eta))
    run = train_clients(x, batch, oracle, rule)
    X = x.expand(2, -1).clone()
    for _ in range(3):
        D = beta * (gradient(X) + c) + (1 - beta) * g
        X = X - eta * D / D.norm(dim=1, keepdim=True)
    torch.testing.assert_close(run.X[0], X)  # the one run of the batch: [1, S, d]
    assert list(run.state) == ["direction", "normalized", "step"]
    assert len(batch.trace) == 3 and torch.equal(batch.trace[-1], run.X)


def test_storm_uses_the_previous_point_on_the_same_minibatch() -> None:
    """m_k = G(x_k) + (1 - alpha)(m_{k-1} - G(x_{k-1})) with x_{-1} = the given previous points."""
    x, batch, oracle, gradient, _ = quadratic_batch()
    previous = x.expand(1, 2, -1) + 0.5  # [R, S, d] of the one run
    m0, alpha, eta = torch.zeros(3, dtype=torch.float64), 0.3, 0.1
    run = train_clients(x, batch, oracle, chain(client.storm(alpha, m0, previous), client.learning_rate(eta)))
    X, X_prev, m = x.expand(2, -1).clone(), previous[0].clone(), m0
    for _ in range(3):
        m = gradient(X) + (1 - alpha) * (m - gradient(X_prev))
        X_prev, X = X, X - eta * m
    torch.testing.assert_close(run.X[0], X)
    (m_final, x_prev_final), _ = run.state
    torch.testing.assert_close(m_final[0], m)
    torch.testing.assert_close(x_prev_final[0], X_prev)  # the last point evaluated


def test_move_last_false_computes_the_last_update_without_moving() -> None:
    x, batch, oracle, gradient, _ = quadratic_batch()
    moved = train_clients(x, batch, oracle, chain(client.accumulate_gradients(), client.learning_rate(0.1)))
    batch.trace.clear()
    held = train_clients(x, batch, oracle, chain(client.accumulate_gradients(), client.learning_rate(0.1)),
                       move_last=False)
    X = x.expand(2, -1).clone()
    total = torch.zeros_like(X)
    for _ in range(2):
        total += gradient(X)
        X = X - 0.1 * gradient(X)
    torch.testing.assert_close(held.X[0], X)
    torch.testing.assert_close(held.state[0][0], total + gradient(X))  # the third gradient is still taken
    assert len(batch.trace) == 2 and not torch.equal(moved.X, held.X)


def test_second_moment_rules_by_hand() -> None:
    """track_second_moment keeps v and leaves D; scale_by_rms divides by sqrt(v) (Wu et al., Alg. 1)."""
    x, batch, oracle, gradient, _ = quadratic_batch(steps=2)
    v0 = torch.zeros(2, 3, dtype=torch.float64)
    tracked = train_clients(x, batch, oracle, chain(client.track_second_moment(0.5, v0), client.learning_rate(0.1)))
    scaled = train_clients(x, batch, oracle, chain(client.scale_by_rms(0.5, v0), client.scale(0.1)))
    X, V = x.expand(2, -1).clone(), v0
    Y, W = x.expand(2, -1).clone(), v0
    for _ in range(2):
        V = 0.5 * V + 0.5 * gradient(X).square()
        X = X - 0.1 * gradient(X)
        W = 0.5 * W + 0.5 * gradient(Y).square()
        Y = Y - 0.1 * gradient(Y) / W.sqrt()
    torch.testing.assert_close(tracked.X[0], X)
    torch.testing.assert_close(tracked.state[0][0], V)
    torch.testing.assert_close(scaled.X[0], Y)
    torch.testing.assert_close(scaled.state[0][0], W)


def test_per_client_step_sizes_are_applied_row_by_row() -> None:
    x, batch, oracle, gradient, _ = quadratic_batch(steps=1)
    sizes = torch.tensor([0.1, 0.4], dtype=torch.float64)
    per_client = client.ClientRule(lambda X: (), lambda u, s, step: (Update(u.direction, sizes.view(1, 2, 1)), s))
    run = train_clients(x, batch, oracle, per_client)  # per-client step sizes are [R, S, 1]
    X = x.expand(2, -1)
    torch.testing.assert_close(run.X[0], X - sizes[:, None] * gradient(X))


def test_armijo_finds_each_clients_largest_backtracked_step() -> None:
    """Each client's step is the first start * 0.5^j with F(X - eta G) <= F(X) - c eta ||G||^2, from
    start = min(eta_max, growth * its previous step), searched by hand; the clients' steps differ."""
    x, batch, oracle, gradient, loss = quadratic_batch(steps=3)
    c, backtrack, eta_max, growth = 0.5, 0.5, 8.0, 1.5
    rule = client.armijo(c=c, backtrack=backtrack, eta_max=eta_max, growth=growth)
    run = train_clients(x, batch, oracle, rule)
    X = x.expand(2, -1).clone()
    etas = [torch.full((2,), eta_max, dtype=torch.float64)]
    for _ in range(3):
        G, F = gradient(X), loss(X)
        eta = torch.empty(2, dtype=torch.float64)
        for i in range(2):
            step = min(eta_max, growth * float(etas[-1][i]))
            while loss(X - step * G)[i] > F[i] - c * step * G[i].square().sum():
                step *= backtrack
            eta[i] = step
        X = X - eta[:, None] * G
        etas.append(eta)
    torch.testing.assert_close(run.X[0], X)
    torch.testing.assert_close(run.state[0].reshape(-1), etas[-1])  # the state: (eta [R, S, 1], tries [R, S, K])
    assert etas[1][0] != etas[1][1] and bool((etas[1] < eta_max).all())


def test_armijo_per_client_growth_and_a_start_below_the_cap() -> None:
    """SLS's start (1) under a cap (8) and a growth per client [R, S, 1]: each step starts at
    min(eta_max, growth_i * eta_prev), by hand as above."""
    x, batch, oracle, gradient, loss = quadratic_batch(steps=3)
    c, backtrack, eta_max, growth = 0.5, 0.5, 8.0, torch.tensor([1.5, 3.0], dtype=torch.float64)
    rule = client.armijo(c=c, backtrack=backtrack, eta_max=eta_max, growth=growth.view(1, 2, 1), initial=1.0)
    run = train_clients(x, batch, oracle, rule)
    X, eta_prev = x.expand(2, -1).clone(), [1.0, 1.0]
    for _ in range(3):
        G, F = gradient(X), loss(X)
        eta = torch.empty(2, dtype=torch.float64)
        for i in range(2):
            step = min(eta_max, float(growth[i]) * eta_prev[i])
            while loss(X - step * G)[i] > F[i] - c * step * G[i].square().sum():
                step *= backtrack
            eta[i] = step
        X = X - eta[:, None] * G
        eta_prev = eta.tolist()
    torch.testing.assert_close(run.X[0], X)
    with pytest.raises(ValueError, match="growth=.* must be > 0 for every client"):
        client.armijo(growth=torch.tensor([1.0, 0.0]))


@pytest.mark.parametrize("fallback", [1e-6, None])
def test_armijo_after_max_backtracks_moves_by_the_fallback_and_keeps_its_last_step(fallback) -> None:
    """From a start of 100 two halvings (100, 50) both fail on this quadratic: the client moves by ``fallback``
    (SLS's 1e-6) or, without one, by the last shrunken step 25; the state keeps 25 either way, and the search
    counted its two evaluations."""
    x, batch, oracle, gradient, _ = quadratic_batch(steps=1)
    rule = client.armijo(c=0.1, backtrack=0.5, eta_max=100.0, initial=100.0, max_backtracks=2, fallback=fallback)
    run = train_clients(x, batch, oracle, rule)
    X = x.expand(2, -1)
    moved = 25.0 if fallback is None else fallback
    torch.testing.assert_close(run.X[0], X - moved * gradient(X))
    eta, tries = run.state  # tries: each client's evaluations at each step [R, S, K]
    assert eta.reshape(-1).tolist() == [25.0, 25.0] and tries.tolist() == [[[2.0], [2.0]]]


def test_armijo_probes_a_dropout_model_with_the_masks_of_its_gradient() -> None:
    """On a model with dropout the search's probes reuse the masks the gradient was computed with: each
    client's step equals a hand search in which every probe replays the step's random state, and the
    accepted step satisfies the Armijo condition under those masks."""
    data = blobs()
    problem = Problem(data, models.make("mlp", (8,), 3, hidden=(16,), dropout=0.5, seed=0))
    oracle = GradientOracle(problem.model, "vmap")
    clients = torch.tensor([0, 3, 5])
    inputs, targets = data.sample_batches(clients, 1, 6, torch.Generator().manual_seed(0))
    batch = RoundBatch.of(0, clients, torch.full((3,), 1 / 3), inputs, targets, data.num_clients)
    x, c, backtrack, eta_max = problem.x0(), 0.1, 0.5, 10.0
    problem.model.module.train()
    torch.manual_seed(3)
    state = oracle.random_state()
    run = train_clients(x, batch, oracle, client.armijo(c=c, backtrack=backtrack, eta_max=eta_max))
    X = x.expand(3, -1)
    with oracle.replaying(state):
        loss, G = oracle(X, inputs[:, 0], targets[:, 0])
    expected = []
    for i in range(3):
        eta = eta_max
        while True:
            with oracle.replaying(state):
                probe = oracle.losses(X - eta * G, inputs[:, 0], targets[:, 0])[i]
            if probe <= loss[i] - c * eta * G[i].square().sum():
                break
            eta *= backtrack
        expected.append(eta)
    torch.testing.assert_close(run.state[0].reshape(-1), torch.tensor(expected), rtol=0, atol=0)
    assert min(expected) < eta_max  # the search backtracked
