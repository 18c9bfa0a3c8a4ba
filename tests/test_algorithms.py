"""Every algorithm, driven by one table: convergence, invariants, hand-checked rounds."""

from __future__ import annotations

import copy

import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore.algorithms import RoundBatch
from fedcore.engine.passes import run_state
from fedcore.params import GradientOracle
from fedcore.run import Problem, simulate

# every algorithm runs here on clients of different sizes with weighting="samples": the invariants hold under any
# weighting, and PAdaMFed's warning about mixing them with its 1/S and 1/N is tested in test_padamfed.py
pytestmark = pytest.mark.filterwarnings("ignore:.*non-uniform client weights:UserWarning")

# Each algorithm at its registered example (algorithms.register): for the federated quadratic (10 clients, d = 5,
# full batch, full participation).
ALGORITHMS = algorithms.EXAMPLES
# Wu et al.'s Algorithm 1, there to show divergence: its sign-like local steps stall away from x*.  PAdaMFed's
# normalized steps move the server by up to gamma every round: it cycles within O(gamma) of x*, never 1e-4 in 300
# rounds (tests/test_padamfed.py checks the accuracy its step allows).
DOES_NOT_CONVERGE = {"local_adaptive", "padamfed", "padamfed_vr"}


def quadratic_problem(data) -> Problem:
    return Problem(data, models.linear_regression((5,)).double())


@pytest.mark.parametrize("name", sorted(set(ALGORITHMS) - DOES_NOT_CONVERGE))
def test_converges_to_known_optimum(name: str, quadratic) -> None:
    """Full participation and full-batch gradients: the run is deterministic GD-like, and with a
    shared design every algorithm's fixed point is the normal-equation solution x*."""
    history = simulate(quadratic_problem(quadratic), algorithms.make(name, **ALGORITHMS[name]), rounds=300,
                       clients_per_round=10, local_steps=5, batch_size=20, progress=False, eval_every=300)
    error = (history.final_state["x"] - quadratic.info["x_star"]).norm().item()
    assert error < 1e-4, f"{name}: ||x - x*|| = {error:.3g}"
    assert history.final("test_loss") - quadratic.info["f_star"] < 1e-8


def test_naive_local_adaptive_stalls_away_from_the_optimum(quadratic) -> None:
    history = simulate(quadratic_problem(quadratic), algorithms.make("local_adaptive", **ALGORITHMS["local_adaptive"]),
                       rounds=300, clients_per_round=10, local_steps=5, batch_size=20, progress=False, eval_every=300)
    assert (history.final_state["x"] - quadratic.info["x_star"]).norm().item() > 0.1


def run_round(algorithm, data, x0, clients, steps=3, batch_size=5, seed=0):
    """One round through the algorithm's own API, on the given clients."""
    model = models.make("logistic_regression", (8,), 3, seed=seed)
    oracle = GradientOracle(Problem(data, model).model, "loop")
    inputs, targets = data.sample_batches(clients, steps, batch_size, torch.Generator().manual_seed(seed))
    sizes = data.sizes[clients].float()
    batch = RoundBatch.of(0, clients, sizes / sizes.sum(), inputs, targets, data.num_clients)
    state, metrics = algorithm.round(algorithm.init(x0, data.num_clients), batch, oracle)
    return run_state(state, 0), metrics, batch, model  # one run's state: x [d], c_i [N, d]


def test_round_batch_gathers_each_step_from_the_resident_data(tiny_classification) -> None:
    """The simulator's lazy batch (rows of the resident data) equals the minibatches gathered at once."""
    data, clients = tiny_classification, torch.tensor([4, 0, 2])
    rows = data.sample_indices(clients, 3, 5, torch.Generator().manual_seed(2))
    inputs, targets = data.sample_batches(clients, 3, 5, torch.Generator().manual_seed(2))
    lazy = RoundBatch(0, clients, torch.full((3,), 1 / 3), rows, data.inputs, data.targets, data.num_clients)
    eager = RoundBatch.of(0, clients, torch.full((3,), 1 / 3), inputs, targets, data.num_clients)
    assert lazy.local_steps == eager.local_steps == 3
    for k in range(3):
        for a, b, c in zip(lazy.step(k), eager.step(k), (inputs[:, k], targets[:, k])):
            assert torch.equal(a, c) and torch.equal(b, c)
    assert torch.equal(lazy.inputs, inputs) and torch.equal(lazy.targets, targets)
    assert torch.equal(data.inputs[rows[1, 2]], inputs[1, 2])


def test_fedavg_returns_weighted_mean_of_client_models(tiny_classification) -> None:
    """Client models computed independently with torch.optim.SGD on an nn.Module copy."""
    data, clients = tiny_classification, torch.tensor([4, 0, 2])
    x0 = Problem(data, models.make("logistic_regression", (8,), 3)).x0()
    state, _, batch, model = run_round(algorithms.fedavg(client_lr=0.3), data, x0, clients)
    finals = []
    for s in range(len(clients)):
        client = copy.deepcopy(model)
        optimizer = torch.optim.SGD(client.parameters(), lr=0.3)
        for k in range(batch.local_steps):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(client(batch.inputs[s, k]), batch.targets[s, k]).backward()
            optimizer.step()
        finals.append(torch.cat([p.detach().flatten() for p in client.parameters()]))
    weights = batch.weights.reshape(-1)  # [S] of the one run
    expected = weights @ torch.stack(finals)
    assert not torch.allclose(weights, weights.mean().expand(3))  # sizes differ
    torch.testing.assert_close(state["x"], expected, rtol=1e-5, atol=1e-6)


def test_one_client_one_step_is_sgd() -> None:
    data = blobs(num_clients=1)
    model = models.make("mlp", (8,), 3, hidden=(6,))
    reference = copy.deepcopy(model)
    history = simulate(Problem(data, model), algorithms.fedavg(client_lr=0.2), rounds=1, clients_per_round=1,
                       local_steps=1, batch_size=int(data.sizes[0]), progress=False)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.2)
    torch.nn.functional.cross_entropy(reference(data.inputs), data.targets).backward()
    optimizer.step()
    expected = torch.cat([p.detach().flatten() for p in reference.parameters()])
    torch.testing.assert_close(history.final_state["x"], expected, rtol=1e-5, atol=1e-6)


def same_run(first, second, data, model="mlp", rounds=4, **kwargs) -> None:
    runs = []
    for algorithm in (first, second):
        problem = Problem(data, models.make(model, (8,), 3, hidden=(6,)) if model == "mlp" else model)
        runs.append(simulate(problem, algorithm, rounds=rounds, clients_per_round=3, local_steps=3,
                             batch_size=4, progress=False, **kwargs))
    torch.testing.assert_close(runs[0].final_state["x"], runs[1].final_state["x"], rtol=0, atol=0)
    columns = ["train_loss", "test_loss", "test_accuracy"]
    assert runs[0].frame[columns].equals(runs[1].frame[columns])


def test_fedprox_with_mu_zero_is_fedavg(tiny_classification) -> None:
    same_run(algorithms.fedprox(client_lr=0.1, mu=0.0), algorithms.fedavg(client_lr=0.1), tiny_classification)


def test_fedprox_proximal_step_by_hand(quadratic) -> None:
    """Two local steps on one client with a known gradient: w1 = x - eta g(x) (the prox term is zero
    at w = x), w2 = w1 - eta (g(w1) + mu (w1 - x)); with A the client design, g(w) = A^T (A w - y) / n."""
    mu, eta = 0.5, 0.05
    algorithm = algorithms.fedprox(client_lr=eta, mu=mu)
    x = torch.zeros(5, dtype=torch.float64)
    oracle = GradientOracle(quadratic_problem(quadratic).model, "loop")
    A, y = quadratic.client(3)
    inputs, targets = A.expand(1, 2, -1, -1), y.expand(1, 2, -1)
    batch = RoundBatch.of(0, torch.tensor([3]), torch.ones(1, dtype=torch.float64), inputs, targets, 10)
    state = run_state(algorithm.round(algorithm.init(x, 10), batch, oracle)[0], 0)
    g = lambda w: A.T @ (A @ w - y) / len(y)  # noqa: E731
    w1 = x - eta * g(x)
    w2 = w1 - eta * (g(w1) + mu * (w1 - x))
    torch.testing.assert_close(state["x"], w2)


def test_scaffold_first_round_is_fedavg(tiny_classification) -> None:
    same_run(algorithms.scaffold(client_lr=0.1), algorithms.fedavg(client_lr=0.1), tiny_classification, rounds=1)


def test_scaffold_control_variates_by_hand(tiny_classification) -> None:
    """Option II after a first round from c = c_i = 0: c_i+ = (x - y_i) / (K eta_l) is the mean of the
    client's K minibatch gradients along its path, and c = (1/N) sum_i c_i+."""
    data, clients = tiny_classification, torch.tensor([1, 5])
    x0 = Problem(data, models.make("logistic_regression", (8,), 3)).x0()
    state, _, batch, model = run_round(algorithms.scaffold(client_lr=0.2), data, x0, clients)
    oracle = GradientOracle(Problem(data, model).model, "loop")
    X, gradient_sum = x0.expand(2, -1).clone(), torch.zeros(2, x0.numel())
    for k in range(batch.local_steps):
        _, G = oracle(X, *batch.step(k))
        gradient_sum += G
        X = X - 0.2 * G
    expected_c_i = gradient_sum / batch.local_steps
    torch.testing.assert_close(state["c_i"][clients], expected_c_i, rtol=1e-5, atol=1e-6)
    assert state["c_i"][[0, 2, 3, 4]].abs().max() == 0  # clients not sampled keep c_i = 0
    torch.testing.assert_close(state["c"], expected_c_i.sum(0) / data.num_clients, rtol=1e-5, atol=1e-6)


def test_scaffold_option_one_uses_gradient_at_server_model(tiny_classification) -> None:
    data, clients = tiny_classification, torch.tensor([2, 3])
    x0 = Problem(data, models.make("logistic_regression", (8,), 3)).x0()
    state, _, batch, model = run_round(algorithms.scaffold(client_lr=0.2, option="I"), data, x0, clients)
    oracle = GradientOracle(Problem(data, model).model, "loop")
    _, expected = oracle(x0.expand(2, -1), batch.inputs.flatten(1, 2), batch.targets.flatten(1, 2))
    torch.testing.assert_close(state["c_i"][clients], expected)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_loop_and_vmap_backends_agree(name: str, tiny_classification) -> None:
    hyperparameters = {k: v for k, v in ALGORITHMS[name].items()}
    histories = []
    for backend in ("loop", "vmap"):
        problem = Problem(tiny_classification, models.make("mlp", (8,), 3, hidden=(6,)))
        histories.append(simulate(problem, algorithms.make(name, **hyperparameters), rounds=3,
                                  clients_per_round=3, local_steps=3, batch_size=4, backend=backend,
                                  progress=False))
    assert [h.backend for h in histories] == ["loop", "vmap"]
    torch.testing.assert_close(histories[0].final_state["x"], histories[1].final_state["x"],
                               rtol=1e-5, atol=1e-5)


def test_exp_decay_schedule_reaches_clients(tiny_classification) -> None:
    schedule = algorithms.exp_decay(0.1, factor=0.5, every=2)
    assert [schedule(t) for t in range(6)] == [0.1, 0.1, 0.05, 0.05, 0.025, 0.025]
    same_run(algorithms.fedavg(client_lr=algorithms.constant(0.1)), algorithms.fedavg(client_lr=0.1),
             tiny_classification)
    with pytest.raises(AssertionError):
        same_run(algorithms.fedavg(client_lr=schedule), algorithms.fedavg(client_lr=0.1), tiny_classification)


def leaves(state: dict) -> list[torch.Tensor]:
    """Every tensor of a (nested) state dict, in key order."""
    return [t for key in sorted(state) for t in (leaves(state[key]) if isinstance(state[key], dict) else [state[key]])]


def dropout_run(name: str, data, rounds: int, backend: str = "loop", **kwargs):
    """A run of the table's algorithm on an MLP with dropout (so the masks' stream is part of the run)."""
    problem = Problem(data, models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=0))
    return simulate(problem, algorithms.make(name, **ALGORITHMS[name]), rounds=rounds, clients_per_round=3,
                    local_steps=3, batch_size=4, backend=backend, progress=False, **kwargs)


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_same_seed_gives_the_identical_history(name: str, tiny_classification) -> None:
    first, second = dropout_run(name, tiny_classification, 3), dropout_run(name, tiny_classification, 3)
    columns = ["train_loss", "test_loss", "test_accuracy"]
    assert first.frame[columns].equals(second.frame[columns])
    assert all(torch.equal(a, b) for a, b in zip(leaves(first.final_state), leaves(second.final_state), strict=True))
    other = dropout_run(name, tiny_classification, 3, seed=1)
    assert not torch.equal(first.final_state["x"], other.final_state["x"])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_checkpoint_round_trip_ends_identical(name: str, tiny_classification, tmp_path) -> None:
    """Stopped after 2 rounds and resumed to 4, the run ends bit-identical to an uninterrupted one,
    every piece of the algorithm's state included."""
    path = tmp_path / f"{name}.pt"
    full = dropout_run(name, tiny_classification, 4)
    dropout_run(name, tiny_classification, 2, checkpoint=path, checkpoint_every=1)
    resumed = dropout_run(name, tiny_classification, 4, checkpoint=path, resume=True)
    for a, b in zip(leaves(full.final_state), leaves(resumed.final_state), strict=True):
        assert torch.equal(a, b)
    columns = ["train_loss", "test_loss", "test_accuracy"]
    assert full.frame[columns].equals(resumed.frame[columns])


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_every_algorithm_fits_the_protocol(name: str) -> None:
    algorithm = algorithms.make(name, **ALGORITHMS[name])
    assert isinstance(algorithm.name, str) and callable(algorithm.init) and callable(algorithm.round)
    with pytest.raises(AttributeError):
        algorithm.name = "other"  # frozen: hyperparameters cannot change under a run


def test_server_rule_sees_each_clients_move_loss_and_weight(tiny_classification) -> None:
    """A server rule reading the extras: it gets x, the moves X_K - x (whose weighted mean is Delta),
    the clients' mean losses (the round's train_loss is their weighted mean) and the weights."""
    seen = {}

    def update(delta, state, **extras):
        seen.update(extras, delta=delta)
        return delta, state

    server = fedcore_server(update)
    data, clients = tiny_classification, torch.tensor([4, 0, 2])
    x0 = Problem(data, models.make("logistic_regression", (8,), 3)).x0()
    state, metrics, batch, _ = run_round(algorithms.FedOpt(0.3, server), data, x0, clients)
    torch.testing.assert_close(seen["x"].reshape(-1), x0)  # one run: x [1, 1, d], moves [1, S, d]
    torch.testing.assert_close(batch.weights @ seen["client_moves"], seen["delta"])
    torch.testing.assert_close(state["x"], x0 + seen["delta"].reshape(-1))
    assert seen["client_moves"].shape == (1, 3, x0.numel()) and torch.equal(seen["weights"], batch.weights)
    assert float(metrics["train_loss"]) == pytest.approx(float(batch.weights @ seen["client_losses"]))
    fedavg, _, _, _ = run_round(algorithms.fedavg(0.3), data, x0, clients)
    torch.testing.assert_close(state["x"], fedavg["x"])  # server SGD at 1 adds Delta too


def fedcore_server(update):
    from dataclasses import dataclass

    from fedcore.server_opt import ServerRule

    @dataclass(frozen=True)
    class Recording(ServerRule):
        def update(self, delta, state, **extras):
            return update(delta, state, **extras)

    return Recording()
