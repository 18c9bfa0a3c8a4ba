"""fedcore's algorithms on Flower's Message API (fedcore.flower): the same client and server rules as simulate,
the same sampled clients and minibatches, so the same runs."""

from __future__ import annotations

import pytest
import torch
from flwr.app import Error, Message

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.flower import CARRIED, FedcoreStrategy, LocalGrid, check_carried, client_app, run_local
from fedcore.problem import Problem
from fedcore.run import simulate

HYPERPARAMETERS = {
    "fedavg": dict(client_lr=0.1), "fedavgm": dict(client_lr=0.1, server_lr=0.5, beta=0.9),
    "fedadagrad": dict(client_lr=0.1, server_lr=0.1), "fedadam": dict(client_lr=0.1, server_lr=0.05),
    "fedyogi": dict(client_lr=0.1, server_lr=0.05), "fedams": dict(client_lr=0.1, server_lr=0.05),
    "fedprox": dict(client_lr=0.1, mu=0.1), "fedexp": dict(client_lr=0.1, eps=0.1),
    "fedli_lu": dict(client_lr=0.1, eta=0.5),
}
"""The algorithms a Flower app carries so far, each at a point where three rounds move the model."""
SETTINGS = dict(clients_per_round=5, local_steps=3, batch_size=16)


@pytest.fixture(scope="module")
def problem() -> Problem:
    data = load_fashion_mnist(20, "dirichlet", 0, alpha=0.5).test_subset(100, 0)
    return Problem(data, models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(16,)))  # no dropout


def _simulated(problem: Problem, algorithm, seed: int, rounds: int = 3) -> tuple[list[torch.Tensor], list[float]]:
    models_after: list[torch.Tensor] = []
    history = simulate(problem, algorithm, rounds=rounds, seed=seed, eval_every=0, progress=False,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()), **SETTINGS)
    return models_after, list(history.frame["train_loss"].dropna())


@pytest.mark.parametrize("name", sorted(HYPERPARAMETERS))
def test_three_rounds_on_flower_equal_simulate(problem, name) -> None:
    algorithm = algorithms.make(name, **HYPERPARAMETERS[name])
    expected, losses = _simulated(problem, algorithm, seed=3)
    strategy = run_local(problem, algorithm, 3, seed=3, **SETTINGS)
    moved = float((expected[-1] - problem.x0()).abs().max())
    assert moved > 1e-3  # the runs went somewhere
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    assert [row["train_loss"] for row in strategy.history] == pytest.approx(losses, abs=1e-5)
    other = run_local(problem, algorithm, 3, seed=4, **SETTINGS)  # another seed: other clients and minibatches
    assert not torch.allclose(other.state["x"], strategy.state["x"], atol=1e-5)


def test_nodes_holding_several_clients_give_the_same_run(problem) -> None:
    """A node may hold several clients (nodes= maps each client to its node); the run is the same."""
    algorithm = algorithms.fedadam(0.1, server_lr=0.05)
    nodes = {client: 100 + client % 3 for client in range(problem.data.num_clients)}
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), seed=3, nodes=nodes, **SETTINGS)
    grid = LocalGrid(client_app(problem, algorithm), sorted(set(nodes.values())))
    strategy.start(grid, strategy_arrays(problem), num_rounds=2)
    expected, _ = _simulated(problem, algorithm, seed=3, rounds=2)
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="client 7 has no node"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), nodes={0: 1}, **SETTINGS).node_of(7)


def strategy_arrays(problem: Problem):
    from flwr.app import ArrayRecord

    return ArrayRecord(torch_state_dict={"value": problem.x0()})


@pytest.mark.parametrize("name", sorted(set(algorithms.ALGORITHMS) - set(HYPERPARAMETERS)))
def test_an_algorithm_the_app_cannot_carry_is_refused_by_name_before_anything_runs(problem, name) -> None:
    from test_algorithms import ALGORITHMS as POINTS  # every algorithm at a working point

    algorithm = algorithms.make(name, **POINTS[name])
    assert not isinstance(algorithm, CARRIED)
    for build in (lambda: check_carried(algorithm), lambda: client_app(problem, algorithm),
                  lambda: FedcoreStrategy(algorithm, problem.data, problem.x0(), **SETTINGS)):
        with pytest.raises(ValueError, match=rf"algorithm='{algorithm.name}' cannot run on Flower yet"):
            build()


def test_bad_settings_are_refused_by_name(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    with pytest.raises(ValueError, match="weighting='equal' not one of"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), weighting="equal", **SETTINGS)
    with pytest.raises(ValueError, match="clients_per_round=50 exceeds the 20 clients"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), **{**SETTINGS, "clients_per_round": 50})


class _FailingGrid(LocalGrid):
    """A grid whose node 2 answers round 2 with an error, as a SuperNode that died would be reported."""

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            if message.metadata.dst_node_id == 2 and message.content["config"]["t"] == 1:
                replies.append(Message(Error(code=0, reason="node stopped"), reply_to=message))
            else:
                replies.extend(super().send_and_receive([message]))
        return replies


def test_a_node_that_fails_is_reported_with_its_round_and_the_state_before_it_is_kept(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    seed = next(s for s in range(50) if 2 in _clients_of_round(problem, s, 2))  # a seed whose round 2 samples client 2
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), seed=seed, **SETTINGS)
    grid = _FailingGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    with pytest.raises(RuntimeError, match="round 2: node 2 failed .*node stopped.*state after round 1 is kept"):
        strategy.start(grid, strategy_arrays(problem), num_rounds=3)
    expected, _ = _simulated(problem, algorithm, seed=seed, rounds=1)
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    assert len(strategy.history) == 1


def _clients_of_round(problem: Problem, seed: int, round_: int) -> list[int]:
    strategy = FedcoreStrategy(algorithms.fedavg(0.1), problem.data, problem.x0(), seed=seed, **SETTINGS)
    for server_round in range(1, round_ + 1):
        messages = strategy.configure_train(server_round, None, None, None)
    return [message.metadata.dst_node_id for message in messages]
