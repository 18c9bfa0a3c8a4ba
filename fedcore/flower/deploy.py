"""The Flower apps that ``flwr run`` starts on a deployment (``examples/flower``): one ServerApp, one ClientApp, both
reading what to run from the run config and what a node holds from its node config.

Run config (``[tool.flwr.app.config]`` of the app's ``pyproject.toml``, overridable with ``flwr run -c``):
``algorithm`` (a name of :data:`fedcore.algorithms.ALGORITHMS`), ``hyperparameters`` (JSON), ``rounds``,
``clients`` (N), ``clients-per-round``, ``local-steps``, ``batch-size``, ``weighting`` (``samples`` or ``uniform``),
``seed``, ``partition-seed``, ``hidden`` (the MLP's hidden units; 0: logistic regression), ``test-samples``,
``round-timeout`` (seconds the server waits for a round's replies), ``output`` (a folder the ServerApp writes
``model.pt`` and ``history.json`` into after every round; empty: nothing written).

Node config (``flower-supernode --node-config "partition-id=0 num-partitions=3"``): the node holds the clients
``i`` with ``i % num-partitions == partition-id``.  The ServerApp asks every node for its partition (a ``query``
message) before round 1, and sends each client's message to the node that holds it.  What a client keeps between
rounds (SCAFFOLD's ``c_i`` ...) stays in its node's ``Context.state``.

A node that stops mid-run (its SuperNode killed, its machine gone) is reported by the SuperLink once its heartbeats
stop (Flower's patience: two missed 30 s heartbeats) or when ``round-timeout`` passes: the run stops with the round
and the node, and ``output`` holds the model and the history of every round completed before it.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import torch
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fedcore import algorithms, models
from fedcore.checks import check_choice
from fedcore.data import load_fashion_mnist
from fedcore.engine.options import WEIGHTINGS
from fedcore.flower.app import FedcoreStrategy, array_record, check_carried, client_reply
from fedcore.params import GradientOracle
from fedcore.problem import Problem


@cache
def _problem(clients: int, partition_seed: int, hidden: int, test_samples: int) -> Problem:
    """The federation every process of the run builds alike: Fashion-MNIST by Dirichlet(0.5) over ``clients``
    clients from ``partition_seed``, an MLP with ``hidden`` units (0: logistic regression) drawn from seed 0."""
    data = load_fashion_mnist(clients, "dirichlet", partition_seed, alpha=0.5).test_subset(test_samples or None,
                                                                                            partition_seed)
    model = models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(hidden,)) if hidden else \
        models.make("logistic_regression", (1, 28, 28), 10, seed=0)
    return Problem(data, model)


def problem_of(config: Any) -> Problem:
    """The run's :class:`fedcore.problem.Problem` from its run config."""
    return _problem(int(config["clients"]), int(config["partition-seed"]), int(config["hidden"]),
                    int(config["test-samples"]))


def algorithm_of(config: Any) -> Any:
    """The run's algorithm: ``algorithms.make(config["algorithm"], **json.loads(config["hyperparameters"]))``."""
    text = str(config["hyperparameters"])
    try:
        hyperparameters = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"hyperparameters={text!r} is not JSON ({error}): write an object such as "
                         '\'{"client_lr": 0.1}\'') from None
    if not isinstance(hyperparameters, dict):
        raise ValueError(f"hyperparameters={text!r} must be a JSON object of keyword arguments, such as "
                         '\'{"client_lr": 0.1}\'')
    return algorithms.make(str(config["algorithm"]), **hyperparameters)


def check_run_config(config: Any) -> Any:
    """The run's algorithm, refused by name if the Flower app cannot carry it (:func:`fedcore.flower.check_carried`)
    or if its step sizes were computed for another S, K, T (PAdaMFed's ``check_run``), or if the weighting is not
    one of :data:`fedcore.engine.options.WEIGHTINGS`: what ``start_app`` asks before ``flwr run`` and the ServerApp
    before any message."""
    check_choice("weighting", str(config.get("weighting", "samples")), WEIGHTINGS)
    algorithm = check_carried(algorithm_of(config))
    if callable(getattr(algorithm, "check_run", None)):
        algorithm.check_run(clients_per_round=int(config["clients-per-round"]), local_steps=int(config["local-steps"]),
                            rounds=int(config["rounds"]))
    return algorithm


clientapp = ClientApp()


@clientapp.query()
def partition(message: Message, context: Context) -> Message:
    """Which clients this node holds: its node config's ``partition-id`` and ``num-partitions``."""
    record = ConfigRecord({"partition-id": int(context.node_config["partition-id"]),
                           "num-partitions": int(context.node_config["num-partitions"])})
    return Message(content=RecordDict({"partition": record}), reply_to=message)


@clientapp.train()
def train(message: Message, context: Context) -> Message:
    """One client's round (:func:`fedcore.flower.app.client_reply`), refused for a client this node does not hold."""
    client = int(message.content["config"]["client"])
    part, parts = int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])
    if client % parts != part:
        raise ValueError(f"client {client} is not held by this node (partition-id={part} of {parts})")
    problem = problem_of(context.run_config)
    oracle = GradientOracle(problem.model, "auto", problem.data.device)
    return client_reply(problem, algorithm_of(context.run_config), oracle, message, context.state)


serverapp = ServerApp()


@serverapp.main()
def main(grid: Grid, context: Context) -> None:
    """The run: ask the nodes for their partitions, then ``rounds`` rounds of :class:`FedcoreStrategy`; the model and
    each round's metrics written to ``output``."""
    config = context.run_config
    algorithm = check_run_config(config)
    problem = problem_of(config)
    node_ids = list(grid.get_node_ids())
    if not node_ids:
        raise RuntimeError("no SuperNode is connected to the SuperLink: start one per partition first")
    asked = [Message(content=RecordDict(), dst_node_id=node, message_type="query") for node in node_ids]
    held: dict[int, int] = {}
    for reply in grid.send_and_receive(asked, timeout=600):
        if reply.has_error():
            raise RuntimeError(f"node {reply.metadata.src_node_id} did not say its partition: {reply.error.reason}")
        record = reply.content["partition"]
        held[int(record["partition-id"])] = reply.metadata.src_node_id
        parts = int(record["num-partitions"])
    missing = [p for p in range(parts) if p not in held]
    if missing:
        raise RuntimeError(f"no node holds the partitions {missing} of {parts}: start a SuperNode for each")
    nodes = {client: held[client % parts] for client in range(problem.data.num_clients)}
    strategy = FedcoreStrategy(algorithm, problem.data, problem.x0(), nodes=nodes,
                               clients_per_round=int(config["clients-per-round"]),
                               local_steps=int(config["local-steps"]), batch_size=int(config["batch-size"]),
                               weighting=str(config.get("weighting", "samples")), seed=int(config["seed"]))
    output = str(config.get("output", ""))

    def write(*_: Any) -> None:  # after every round (as Flower's evaluate_fn), so a failed round loses nothing
        if output:
            Path(output).mkdir(parents=True, exist_ok=True)
            torch.save(strategy.state["x"].reshape(-1).cpu(), Path(output) / "model.pt")
            (Path(output) / "history.json").write_text(json.dumps(strategy.history))

    try:
        strategy.start(grid, array_record(problem.x0()), num_rounds=int(config["rounds"]),
                       timeout=float(config.get("round-timeout", 600)), evaluate_fn=write)
    finally:  # what was computed is written, also when a node failed mid-run
        write()
