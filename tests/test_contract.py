"""The algorithm contract (fedcore.algorithms.contract): every family is a Federated, the framework owns the round,
each part is handed only what it declares, client rules keep their state by name, and the package has no import
cycle."""

from __future__ import annotations

import ast
import dataclasses
import pathlib
import re

import pytest
import torch

import fedcore
from fedcore import algorithms, models
from fedcore.algorithms.client import ClientRun, chain, learning_rate, named, normalize, scale, train_clients
from fedcore.algorithms.contract import Federated, declared
from fedcore.algorithms.fedopt import FedOpt
from fedcore.algorithms.scaffold import Scaffold
from fedcore.contract_checks import UndeclaredReadError
from fedcore.data import federated_quadratic
from fedcore.run import Problem, simulate

PACKAGE = pathlib.Path(fedcore.__file__).parent
BUILT = {name: algorithms.make(name, **example) for name, example in algorithms.EXAMPLES.items()}
CONTRACT = ("init", "client_run", "server_round", "client_state", "client_reads", "prologue", "client_prologue",
            "server_prologue", "eval_point", "check_run", "not_distributable", "round")


def test_every_family_is_a_federated_that_leaves_the_round_to_the_framework() -> None:
    for name, algorithm in BUILT.items():
        assert isinstance(algorithm, Federated) and dataclasses.is_dataclass(algorithm), name
        defining = [cls.__name__ for cls in type(algorithm).__mro__ if "round" in vars(cls)]
        assert defining == ["Federated"], (name, defining)  # only the framework's round
        assert declared(algorithm) is algorithm


def test_no_member_of_the_contract_is_discovered_outside_it() -> None:
    """``getattr(algorithm, "eval_point", None)`` and its kind: the contract's defaults live in contract.py."""
    members = "|".join(CONTRACT)
    pattern = re.compile(rf"getattr\([^,]*algorithm[^,]*,\s*[\"']({members})[\"']")
    found = [f"{path.relative_to(PACKAGE)}: {match.group(0)}" for path in PACKAGE.rglob("*.py")
             if path.name != "contract.py" for match in pattern.finditer(path.read_text())]
    assert found == []


def test_no_family_reads_its_client_rules_state_by_position() -> None:
    found = [f"{path.name}: {match.group(0)}" for path in (PACKAGE / "algorithms").glob("*.py")
             for match in re.finditer(r"\.state\[\d", path.read_text())]
    assert found == []


def test_a_named_rule_is_the_chain_of_its_rules_with_its_state_by_name() -> None:
    """The same steps as ``chain`` (bit for bit), the state a dict in the order given."""
    problem = Problem(federated_quadratic(num_clients=4, dim=3, samples_per_client=6, seed=2),
                      models.make("linear_regression", (3,), None, seed=0).double())
    data = problem.data
    batch = fedcore.engine.streams.Streams(0).sample(data, 0, fedcore.RunOptions(1, 3, 4, 2), torch.float64)
    oracle = fedcore.GradientOracle(problem.model, "loop")
    x = problem.x0().reshape(1, 1, -1)
    by_position = train_clients(x, batch, oracle, chain(algorithms.client.accumulate_gradients(), normalize(),
                                                      scale(0.5), learning_rate(0.1)))
    by_name = train_clients(x, batch, oracle, named(summed=algorithms.client.accumulate_gradients(),
                                                  normalized=normalize(), scaled=scale(0.5), step=learning_rate(0.1)))
    assert torch.equal(by_position.X, by_name.X)
    assert list(by_name.state) == ["summed", "normalized", "scaled", "step"]
    assert torch.equal(by_name.state["summed"], by_position.state[0])


# ---------------------------------------------------------------- each part is handed what it declares


@dataclasses.dataclass(frozen=True)
class _PeekingClients(FedOpt):
    """FedAvg whose clients also read the server optimizer's state, which the server never sends."""

    def client_run(self, sent, batch, oracle, own) -> ClientRun:
        sent["server"]
        return super().client_run(sent, batch, oracle, own)


@dataclasses.dataclass(frozen=True)
class _PeekingServer(Scaffold):
    """SCAFFOLD whose server reads the clients' own control variates, which stay on the clients."""

    def server_round(self, state, run, batch):
        state["c_i"]
        return super().server_round(state, run, batch)


def _quadratic() -> Problem:
    return Problem(federated_quadratic(num_clients=4, dim=3, samples_per_client=6, seed=2),
                   models.make("linear_regression", (3,), None, seed=0).double())


@pytest.mark.parametrize("algorithm, refusal", [
    (_PeekingClients(0.1, name="Peeking"), r"Peeking's client part read 'server', which the server does not send: "
                                           r"its client_reads are \('x',\)"),
    (_PeekingServer(0.1, name="Peeking"), r"Peeking's server part read 'c_i', a row of the clients' own state \(c_i\)"),
])
def test_a_part_that_reads_what_it_does_not_declare_fails_in_the_simulator_naming_the_key(algorithm, refusal) -> None:
    with pytest.raises(UndeclaredReadError, match=refusal):
        simulate(_quadratic(), algorithm, rounds=1, clients_per_round=2, local_steps=1, batch_size=2, progress=False)


def test_the_framework_adds_the_training_loss_once() -> None:
    """A server part that returns no metrics: the round still reports ``train_loss``, the clients' mean losses
    weighted, first; FedExP's rule reports its ``eta_g`` after it."""
    history = simulate(_quadratic(), algorithms.fedexp(0.1), rounds=2, clients_per_round=2, local_steps=1,
                       batch_size=2, progress=False, eval_every=0)
    assert list(history.frame.columns)[:2] == ["train_loss", "eta_g"]
    assert "FedExP" not in {cls.__name__ for cls in type(algorithms.fedexp(0.1)).__mro__}  # a FedOpt with its rule
    assert type(algorithms.fedli_lu(0.1)) is FedOpt


def test_a_plain_algorithm_is_declared_with_the_defaults() -> None:
    class Plain:
        name = "Plain"

        def init(self, x0, num_clients):
            return {"x": x0.clone()}

        def round(self, state, batch, oracle):
            return state, {"train_loss": 0.0}

    view = declared(Plain())
    assert view.name == "Plain" and view.prologue({}) is None and "subclass Federated" in view.not_distributable()
    with pytest.raises(TypeError, match=r"algorithm='fedavg:0.1' needs init\(x0, num_clients\) and round"):
        declared("fedavg:0.1")


# ---------------------------------------------------------------- the package's import graph


def _imports() -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports (anywhere in it, TYPE_CHECKING included)."""
    modules = {".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__"): path
               for path in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("fedcore"):
                imported |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules
                             else node.module for alias in node.names}
            elif isinstance(node, ast.Import):
                imported |= {alias.name for alias in node.names if alias.name.startswith("fedcore")}
        graph[name] = {module for module in imported if module in modules and module != name}
    return graph


def test_the_package_has_no_import_cycle() -> None:
    graph, done, path = _imports(), set(), []

    def visit(module: str) -> None:
        if module in path:
            raise AssertionError(f"import cycle: {' -> '.join(path[path.index(module):] + [module])}")
        if module in done:
            return
        path.append(module)
        for imported in sorted(graph[module]):
            visit(imported)
        path.pop()
        done.add(module)

    assert "fedcore.algorithms.client" in graph["fedcore.algorithms.contract"]  # the graph sees imports
    for module in sorted(graph):
        visit(module)


@dataclasses.dataclass(frozen=True)
class _OwnLoss(FedOpt):
    """FedAvg whose server part reports a training loss of its own."""

    def server_round(self, state, run, batch):
        new_state, metrics = super().server_round(state, run, batch)
        return new_state, {**metrics, "train_loss": 0.0}


def test_a_server_part_cannot_report_the_training_loss_the_framework_computes() -> None:
    with pytest.raises(ValueError, match=r"Own's server_round returned a metric 'train_loss', which the framework"):
        simulate(_quadratic(), _OwnLoss(0.1, name="Own"), rounds=1, clients_per_round=2, local_steps=1, batch_size=2,
                 progress=False)
