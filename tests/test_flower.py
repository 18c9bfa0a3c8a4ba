"""fedcore's algorithms on Flower's Message API (fedcore.flower): the same client and server rules as simulate,
the same sampled clients and minibatches, so the same runs."""

from __future__ import annotations

import pytest
import torch
from flwr.app import Error, Message

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.flower import FedcoreStrategy, LocalGrid, check_distributable, client_app, run_local
from fedcore.flower.app import EngineStandIn
from fedcore.problem import Problem
from fedcore.run import simulate

HYPERPARAMETERS = algorithms.EXAMPLES
"""Every algorithm of ALGORITHMS, at its registered example (``algorithms.register``): a new family is picked up."""
THEOREM = dict(clients_per_round=5, local_steps=3, rounds=3)  # PAdaMFed's Theorem 1 step sizes for this run
VARIANTS = {
    "scaffold option I": ("scaffold", dict(client_lr=0.1, option="I")),
    "padamfed from Theorem 1's step sizes": ("padamfed", THEOREM),
    "padamfed_vr from zeros, mean direction": ("padamfed_vr", dict(eta=0.02, gamma=0.1, beta=0.5,
                                                                   initialization="zeros",
                                                                   server_momentum="mean_direction")),
    "fedli_ls at the largest client step": ("fedli_ls", dict(server_step_size="max_client_step")),
}
"""Options that change what travels (option I's c_i+, the clients' directions, the step sizes the server reads), and
the theorem's step sizes (which check the run's S, K, T)."""
UNIFORM = {"padamfed", "padamfed_vr", "scaffold_m", "scaffold_m_vr"}  # Algorithm 1's 1/S (other weights warn)
SETTINGS = dict(clients_per_round=5, local_steps=3, batch_size=16)


@pytest.fixture(scope="module")
def problem() -> Problem:
    data = load_fashion_mnist(20, "dirichlet", 0, alpha=0.5).test_subset(100, 0)
    return Problem(data, models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(16,)))  # no dropout


def _simulated(problem: Problem, algorithm, seed: int, rounds: int = 3,
               weighting: str = "samples") -> tuple[list[torch.Tensor], list[float], dict]:
    models_after: list[torch.Tensor] = []
    history = simulate(problem, algorithm, rounds=rounds, seed=seed, eval_every=0, progress=False, weighting=weighting,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()), **SETTINGS)
    return models_after, list(history.frame["train_loss"].dropna()), history.final_state


CASES = {name: (name, hyperparameters) for name, hyperparameters in HYPERPARAMETERS.items()} | VARIANTS


@pytest.mark.parametrize("case", sorted(CASES))
def test_three_rounds_on_flower_equal_simulate(problem, case) -> None:
    """Every algorithm (and the options that change what travels): the model and the train losses after three
    rounds through Flower's Message API equal simulate's, and another seed gives another run."""
    name, hyperparameters = CASES[case]
    algorithm = algorithms.make(name, **hyperparameters)
    weighting = "uniform" if name in UNIFORM else "samples"
    expected, losses, _ = _simulated(problem, algorithm, seed=3, weighting=weighting)
    strategy = run_local(problem, algorithm, 3, seed=3, weighting=weighting, **SETTINGS)
    moved = float((expected[-1] - problem.x0()).abs().max())
    assert moved > 1e-3  # the runs went somewhere
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    assert [row["train_loss"] for row in strategy.history] == pytest.approx(losses, abs=1e-5)
    other = run_local(problem, algorithm, 3, seed=4, weighting=weighting, **SETTINGS)  # other clients and minibatches
    assert not torch.allclose(other.state["x"], strategy.state["x"], atol=1e-5)


def test_three_rounds_sample_a_client_twice() -> None:
    """The seed above draws some client in two rounds, so its kept state (c_i, x_prev, v_i) is read back: the
    equality of the stateful algorithms is a test of the state the nodes keep."""
    data = load_fashion_mnist(20, "dirichlet", 0, alpha=0.5)
    sampler = torch.Generator().manual_seed(3)
    drawn = [torch.randperm(data.num_clients, generator=sampler)[:SETTINGS["clients_per_round"]].tolist()
             for _ in range(3)]
    assert len(set(sum(drawn, []))) < len(sum(drawn, [])), drawn


@pytest.mark.parametrize("name", ["scaffold", "padamfed_vr", "fafed", "local_adaptive"])
def test_the_clients_state_lives_on_their_nodes(problem, name) -> None:
    """The server's state has no per-client rows; each node's Context.state holds its client's rows, equal to the
    rows simulate keeps for the clients sampled (PAdaMFed's line 1 visits every client: every node holds one)."""
    algorithm = algorithms.make(name, **HYPERPARAMETERS[name])
    weighting = "uniform" if name in UNIFORM else "samples"
    _, _, final = _simulated(problem, algorithm, seed=3, weighting=weighting)
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), seed=3, weighting=weighting, **SETTINGS)
    grid = LocalGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    strategy.start(grid, strategy_arrays(problem), num_rounds=3)
    (key,) = algorithm.client_state
    assert key not in strategy.state
    held = {node: context.state for node, context in grid.contexts.items() if len(context.state)}
    assert held, "some node keeps its client's state"
    if name == "padamfed_vr":
        assert sorted(held) == list(range(problem.data.num_clients))
    for client, kept in held.items():
        row = kept[f"fedcore-client-{client}"].to_torch_state_dict()[key].reshape(-1)
        torch.testing.assert_close(row, final[key].reshape(problem.data.num_clients, -1)[client], atol=1e-5, rtol=0)


def test_nodes_holding_several_clients_give_the_same_run(problem) -> None:
    """A node may hold several clients (nodes= maps each client to its node); the run is the same."""
    algorithm = algorithms.fedadam(0.1, server_lr=0.05)
    nodes = {client: 100 + client % 3 for client in range(problem.data.num_clients)}
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), seed=3, nodes=nodes, **SETTINGS)
    grid = LocalGrid(client_app(problem, algorithm), sorted(set(nodes.values())))
    strategy.start(grid, strategy_arrays(problem), num_rounds=2)
    expected, _, _ = _simulated(problem, algorithm, seed=3, rounds=2)
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="client 7 has no node"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), nodes={0: 1}, **SETTINGS).node_of(7)


def strategy_arrays(problem: Problem):
    from flwr.app import ArrayRecord

    return ArrayRecord(torch_state_dict={"value": problem.x0()})


def test_every_algorithm_is_carried() -> None:
    for name, hyperparameters in HYPERPARAMETERS.items():
        check_distributable(algorithms.make(name, **hyperparameters))


class _RoundOnly:
    """A user's algorithm written as one ``round``: simulate runs it, Flower cannot split it."""

    name = "MyRule"

    def init(self, x0, num_clients):
        return {"x": x0.clone()}

    def round(self, state, batch, oracle):
        return state, {}


@pytest.mark.parametrize("algorithm, reason", [
    (_RoundOnly(), r"algorithm='MyRule' cannot run on Flower: it has no client_run or server_round"),
    (algorithms.padamfed(eta=0.02, gamma=0.1, beta=0.5, initialization="first_round"),
     r"algorithm='PAdaMFed' cannot run on Flower with initialization='first_round'.*'every_client'"),
    (algorithms.scaffold_m(eta=0.05, gamma=0.1, beta=0.5, initialization="first_round"),
     r"algorithm='SCAFFOLD-M' cannot run on Flower with initialization='first_round'"),
])
def test_what_the_app_cannot_carry_is_refused_by_name_before_anything_runs(problem, algorithm, reason) -> None:
    for build in (lambda: check_distributable(algorithm), lambda: client_app(problem, algorithm),
                  lambda: FedcoreStrategy(algorithm, problem.data, problem.x0(), **SETTINGS)):
        with pytest.raises(ValueError, match=reason):
            build()


def test_theorem_step_sizes_for_another_run_are_refused_before_a_message(problem) -> None:
    """PAdaMFed's step sizes computed for T = 3 refuse a 5-round run, as simulate does, before any message."""
    algorithm = algorithms.make("padamfed", **THEOREM)
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), weighting="uniform", **SETTINGS)
    grid = LocalGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    grid.send_and_receive = None  # any message would fail with a TypeError
    with pytest.raises(ValueError, match="computed for clients_per_round=5, local_steps=3, rounds=3.*rounds=5"):
        strategy.start(grid, strategy_arrays(problem), num_rounds=5)


def test_bad_settings_are_refused_by_name(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    with pytest.raises(ValueError, match="weighting='equal' not one of"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), weighting="equal", **SETTINGS)
    with pytest.raises(ValueError, match="clients_per_round=50 > num_clients=20"):
        FedcoreStrategy(algorithm, problem.data, problem.x0(), **{**SETTINGS, "clients_per_round": 50})


class _FailingGrid(LocalGrid):
    """A grid whose node 2 answers round ``failing`` (0-based) with an error, as a SuperNode that died would be
    reported."""

    failing = 1

    def send_and_receive(self, messages, *, timeout=None):
        replies = []
        for message in messages:
            if message.metadata.dst_node_id == 2 and message.content["config"]["t"] == self.failing:
                EngineStandIn.name(message)
                replies.append(Message(Error(code=0, reason="node stopped"), reply_to=message))
            else:
                replies.extend(super().send_and_receive([message]))
        return replies


def test_a_node_that_fails_is_reported_with_its_round_and_the_state_before_it_is_kept(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    seed = next(s for s in range(50) if 2 in _clients_of_round(problem, s, 2))  # a seed whose round 2 samples client 2
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), seed=seed, **SETTINGS)
    grid = _FailingGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    with pytest.raises(RuntimeError, match=r"round 2: node 2 \(client 2\) failed .*node stopped.*state after round 1 "
                                           "is kept"):
        strategy.start(grid, strategy_arrays(problem), num_rounds=3)
    expected, _, _ = _simulated(problem, algorithm, seed=seed, rounds=1)
    assert torch.allclose(strategy.state["x"].reshape(-1), expected[-1], atol=1e-5, rtol=0)
    assert len(strategy.history) == 1


def test_a_node_that_fails_in_a_prologue_is_reported_and_the_state_before_the_round_is_kept(problem) -> None:
    """PAdaMFed's line 1 visits every client before round 1: node 2 failing there stops the run in round 1 with
    the server's state as it was before it (no c, no g moved), nothing half-applied."""
    algorithm = algorithms.make("padamfed_vr", **HYPERPARAMETERS["padamfed_vr"])
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), weighting="uniform", **SETTINGS)
    before = {key: value.clone() for key, value in strategy.state.items()}
    grid = _FailingGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    grid.failing = 0
    with pytest.raises(RuntimeError, match=r"round 1: node 2 \(client 2\) failed .*state after round 0 is kept"):
        strategy.start(grid, strategy_arrays(problem), num_rounds=2)
    assert strategy.history == [] and all(torch.equal(strategy.state[key], before[key]) for key in before)


def _clients_of_round(problem: Problem, seed: int, round_: int) -> list[int]:
    """The clients the strategy sends to in round ``round_`` (its messages built as under an engine)."""
    EngineStandIn.give_identity()
    strategy = FedcoreStrategy(algorithms.fedavg(0.1), problem.data, problem.x0(), seed=seed, **SETTINGS)
    for server_round in range(1, round_ + 1):
        messages = strategy.configure_train(server_round, None, None, None)
    return [message.metadata.dst_node_id for message in messages]


# ---------------------------------------------------------------- the run config, evaluate and x0: nothing silent

RUN_CONFIG = {"algorithm": "fedavg", "hyperparameters": '{"client_lr": 0.1}', "rounds": 3, "clients": 12,
              "clients-per-round": 4, "local-steps": 3, "batch-size": 16, "seed": 0, "partition-seed": 0, "hidden": 16,
              "test-samples": 200}
"""A run config as the example app's, with the keys that have defaults left out."""
PADAMFED = {"algorithm": "padamfed", "hyperparameters": '{"clients_per_round": 4, "local_steps": 3, "rounds": 3}'}


@pytest.mark.parametrize("changed, error, refusal", [
    ({"local-steps": 3.9}, TypeError, r"run config local-steps=3.9 must be an int, got float"),
    ({"rounds": 2.7}, TypeError, r"run config rounds=2.7 must be an int"),
    ({**PADAMFED, "local-steps": 3.9}, TypeError, r"run config local-steps=3.9 must be an int"),
    ({"batch-size": "sixteen"}, TypeError, r"run config batch-size='sixteen' must be an int, got str"),
    ({"clients": 0}, ValueError, r"run config clients=0 must be >= 1"),
    ({"local_steps": 3}, ValueError, r"run config local_steps=3 is not a key of fedcore's Flower app; its keys: "
                                     r"rounds, clients, clients-per-round, local-steps"),
    ({"round-timeout": -1}, ValueError, r"run config round-timeout=-1 must be > 0"),
    ({"algorithm": 7}, TypeError, r"run config algorithm=7 must be a text"),
    ({"algorithm": "fedsgd"}, ValueError, r"run config algorithm='fedsgd' not one of"),
    ({"clients-per-round": 13}, ValueError, r"clients-per-round=13 must be <= clients=12"),
])
def test_a_bad_run_config_is_refused_by_key_by_the_checker_both_sides_use(changed, error, refusal) -> None:
    """``check_run_config`` (which ``start_app`` calls before ``flwr run``, and the ServerApp before any message) and
    the ServerApp itself, called with a grid that would fail at any use."""
    from flwr.app import Context, RecordDict

    from fedcore.flower import deploy

    config = {**RUN_CONFIG, **changed}
    with pytest.raises(error, match=refusal):
        deploy.check_run_config(config)
    context = Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config=config)
    with pytest.raises(error, match=refusal):
        deploy.main(None, context)


def test_a_run_config_without_a_key_or_that_is_no_mapping_is_named() -> None:
    from fedcore.flower.deploy import check_run_config, run_settings

    with pytest.raises(ValueError, match=r"the run config has no local-steps: fedcore's Flower app needs"):
        check_run_config({key: value for key, value in RUN_CONFIG.items() if key != "local-steps"})
    with pytest.raises(TypeError, match=r"the run config must be a mapping .* got list"):
        check_run_config([("rounds", 3)])
    settings = run_settings(RUN_CONFIG)  # the defaults filled in, the numbers typed
    assert settings["weighting"] == "samples" and settings["output"] == "" and settings["round-timeout"] == 600.0


def test_a_node_config_without_its_partition_is_named() -> None:
    from fedcore.flower.deploy import node_partition

    assert node_partition({"partition-id": 2, "num-partitions": 3}) == (2, 3)
    with pytest.raises(ValueError, match=r"must hold partition-id and num-partitions"):
        node_partition({"partition-id": 0})
    with pytest.raises(ValueError, match=r"node config partition-id=3 must be in \[0, 2\]"):
        node_partition({"partition-id": 3, "num-partitions": 3})


def test_evaluate_returning_no_mapping_is_named(problem) -> None:
    with pytest.raises(TypeError, match=r"evaluate=.* returned 0.5; it must return \{name: one number\}"):
        run_local(problem, algorithms.fedavg(0.1), 1, evaluate=lambda t, x: 0.5, **SETTINGS)
    strategy = run_local(problem, algorithms.fedavg(0.1), 1, evaluate=lambda t, x: {"norm": x.norm()}, **SETTINGS)
    assert len(strategy.history) == 1


def test_an_x0_of_another_model_is_refused_before_any_message(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    d = problem.model.dim
    with pytest.raises(ValueError, match=rf"x0 has shape \(5,\); expected a tensor of shape \({d},\)"):
        FedcoreStrategy(algorithm, problem, torch.zeros(5), **SETTINGS)
    strategy = FedcoreStrategy(algorithm, problem.data, torch.zeros(5), **SETTINGS)  # no model to check it against
    grid = LocalGrid(client_app(problem, algorithm), range(problem.data.num_clients))
    grid.send_and_receive = None  # any message would fail with a TypeError
    with pytest.raises(ValueError, match=rf"initial_arrays holds {d} numbers; the strategy's x0 has 5"):
        strategy.start(grid, strategy_arrays(problem), num_rounds=1)
    with pytest.raises(TypeError, match=r"problem=.* must be a fedcore.Problem"):
        FedcoreStrategy(algorithm, problem.x0(), **SETTINGS)


def test_the_one_adapter_to_flowers_internals_is_pinned_to_the_installed_release() -> None:
    """LocalGrid's stand-in for an engine touches flwr's internals (a task identity, a message's id); it was written
    against one release, the one pyproject.toml pins: another installed flwr fails here, not in a user's run."""
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    pinned = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert f"flwr[simulation]=={EngineStandIn.FLWR_VERSION}" in pinned["project"]["optional-dependencies"]["flower"]
    assert version("flwr") == EngineStandIn.FLWR_VERSION
    source = (Path(__file__).resolve().parents[1] / "fedcore" / "flower" / "app.py").read_text()
    outside = source.split("class EngineStandIn:")[0] + source.split("class LocalGrid(Grid):")[1]
    assert "__dict__" not in outside and "TaskIdentity" not in outside  # nowhere else


def test_an_unknown_isolation_mode_is_refused_before_a_process_starts(tmp_path) -> None:
    from fedcore.flower.local import local_federation

    with pytest.raises(ValueError, match=r"isolation='processes' not one of \['process', 'subprocess'\]"):
        with local_federation(tmp_path, isolation="processes"):
            pass
    assert not (tmp_path / "superlink.log").exists()
