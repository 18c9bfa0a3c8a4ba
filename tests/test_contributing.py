"""CONTRIBUTING's "Adding an algorithm": the block there is a complete family written against the contract, and it
runs as one: equal to fedcore's FedAvgM bit for bit, in a pass of several runs as alone, and through Flower; its one
``register`` line puts it in every generic test (``conftest.py`` runs the block)."""

from __future__ import annotations

import warnings

import pytest
import torch
from conftest import guide_family

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.flower import run_local
from fedcore.run import Problem, simulate, simulate_runs

SETTINGS = dict(rounds=3, clients_per_round=4, local_steps=3, batch_size=16, eval_every=0, progress=False)


@pytest.fixture(scope="module")
def family() -> type:
    """The guide's ``ServerMomentum`` (``conftest.py`` runs the guide's block and registers it)."""
    return guide_family()


@pytest.fixture(scope="module")
def problem() -> Problem:
    data = load_fashion_mnist(12, "dirichlet", 0, alpha=0.5).test_subset(100, 0)
    return Problem(data, models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(16,)))


def test_the_guides_family_is_fedavgm_bit_for_bit(family, problem) -> None:
    ours = simulate(problem, family(0.1, server_lr=0.5, beta=0.8), seed=1, **SETTINGS)
    theirs = simulate(problem, algorithms.fedavgm(0.1, server_lr=0.5, beta=0.8), seed=1, **SETTINGS)
    assert torch.equal(ours.final_state["x"], theirs.final_state["x"])
    assert ours.frame["train_loss"].iloc[1:].tolist() == theirs.frame["train_loss"].iloc[1:].tolist()  # round 0: NaN
    assert list(ours.frame.columns[:2]) == ["train_loss", "momentum_norm"]  # the loss added by the framework


def test_the_guides_family_runs_in_a_pass_as_alone(family, problem) -> None:
    built = [family(0.05), family(0.1), family(0.2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "runs alone, not in a pass" would fail: a user's family batches
        together = simulate_runs(problem, built, seeds=[0, 1, 2], batch=3, **SETTINGS)
    for algorithm, seed, history in zip(built, [0, 1, 2], together):
        alone = simulate(problem, algorithm, seed=seed, **SETTINGS)
        torch.testing.assert_close(history.final_state["x"], alone.final_state["x"], atol=1e-6, rtol=0)


def test_the_guides_family_runs_on_flower_as_in_simulate(family, problem) -> None:
    algorithm = family(0.1, server_lr=0.5, beta=0.8)
    expected = simulate(problem, algorithm, seed=3, **SETTINGS)
    strategy = run_local(problem, algorithm, 3, seed=3, clients_per_round=4, local_steps=3, batch_size=16)
    assert float((expected.final_state["x"].reshape(-1) - problem.x0()).abs().max()) > 1e-3  # it moved
    torch.testing.assert_close(strategy.state["x"].reshape(-1), expected.final_state["x"].reshape(-1), atol=1e-5,
                               rtol=0)
    assert [row["momentum_norm"] for row in strategy.history] == pytest.approx(
        expected.frame["momentum_norm"].iloc[1:].tolist(), abs=1e-5)


def test_the_guides_one_registration_puts_it_in_every_generic_test(family) -> None:
    import test_algorithms
    import test_contract
    import test_flower

    assert algorithms.make("server_momentum", client_lr=0.2).client_lr == 0.2
    assert "server_momentum" in test_algorithms.ALGORITHMS and "server_momentum" in test_flower.CASES
    assert isinstance(test_contract.BUILT["server_momentum"], family)
    with pytest.raises(ValueError, match="name='server_momentum' is already an algorithm"):
        algorithms.register("server_momentum", family, client_lr=0.1)
    with pytest.raises(TypeError, match="server_rate"):
        algorithms.register("another", family, client_lr=0.1, server_rate=0.5)
