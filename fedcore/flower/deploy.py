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
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import torch
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid, ServerApp

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_positive
from fedcore.data import load_fashion_mnist
from fedcore.engine.options import WEIGHTINGS
from fedcore.flower.app import FedcoreStrategy, array_record, check_distributable, client_reply
from fedcore.params import GradientOracle
from fedcore.problem import Problem

INTEGERS = {"rounds": 1, "clients": 1, "clients-per-round": 1, "local-steps": 1, "batch-size": 1, "seed": 0,
            "partition-seed": 0, "hidden": 0, "test-samples": 0}
"""The run config's integer keys, each with its lowest allowed value (``hidden = 0``: logistic regression;
``test-samples = 0``: the whole test set)."""
TEXTS = ("algorithm", "hyperparameters", "weighting", "output")
"""The run config's text keys."""
DEFAULTS = {"weighting": "samples", "output": "", "round-timeout": 600.0}
"""The keys a run config may leave out, and their values; every other key of :data:`KEYS` is required."""
KEYS = (*INTEGERS, *TEXTS, "round-timeout")
"""Every key of fedcore's run config."""


def run_settings(config: Any) -> dict[str, Any]:
    """The run config (Flower's ``Context.run_config``, or what ``start_app`` will send) checked and typed: a mapping
    with every key of :data:`KEYS` but those of :data:`DEFAULTS`, and no other; integers where :data:`INTEGERS`
    says, texts, a positive ``round-timeout`` and a ``weighting`` of :data:`fedcore.engine.options.WEIGHTINGS`.
    Each refusal names the key, its value and what is allowed."""
    if not isinstance(config, Mapping):
        raise TypeError(f"the run config must be a mapping of keys to values (Flower's Context.run_config), got "
                        f"{type(config).__name__} {config!r:.80}")
    unknown = sorted(set(config) - set(KEYS))
    if unknown:
        raise ValueError(f"run config {unknown[0]}={config[unknown[0]]!r} is not a key of fedcore's Flower app; its "
                         f"keys: {', '.join(KEYS)}")
    missing = [key for key in KEYS if key not in config and key not in DEFAULTS]
    if missing:
        raise ValueError(f"the run config has no {', '.join(missing)}: fedcore's Flower app needs {', '.join(KEYS)} "
                         f"({', '.join(DEFAULTS)} may be left out)")
    settings = {**DEFAULTS, **config}
    for key, lowest in INTEGERS.items():
        settings[key] = check_int(f"run config {key}", settings[key], lowest)
    for key in TEXTS:
        if not isinstance(settings[key], str):
            raise TypeError(f"run config {key}={settings[key]!r} must be a text (a TOML string), got "
                            f"{type(settings[key]).__name__}")
    settings["round-timeout"] = check_positive("run config round-timeout", settings["round-timeout"])
    check_choice("run config weighting", settings["weighting"], WEIGHTINGS)
    check_choice("run config algorithm", settings["algorithm"], algorithms.ALGORITHMS)
    return settings


@cache
def _problem(clients: int, partition_seed: int, hidden: int, test_samples: int) -> Problem:
    """The federation every process of the run builds alike: Fashion-MNIST by Dirichlet(0.5) over ``clients``
    clients from ``partition_seed``, an MLP with ``hidden`` units (0: logistic regression) drawn from seed 0."""
    data = load_fashion_mnist(clients, "dirichlet", partition_seed, alpha=0.5).test_subset(test_samples or None,
                                                                                            partition_seed)
    model = models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(hidden,)) if hidden else \
        models.make("logistic_regression", (1, 28, 28), 10, seed=0)
    return Problem(data, model)


def problem_of(settings: Mapping[str, Any]) -> Problem:
    """The run's :class:`fedcore.problem.Problem` from its checked run config (:func:`run_settings`)."""
    return _problem(settings["clients"], settings["partition-seed"], settings["hidden"], settings["test-samples"])


def algorithm_of(settings: Mapping[str, Any]) -> Any:
    """The run's algorithm: ``algorithms.make(settings["algorithm"], **json.loads(settings["hyperparameters"]))``, a
    key given twice in the JSON refused by name (JSON alone would keep the last)."""
    text = settings["hyperparameters"]

    def once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        twice = next((key for key in keys if keys.count(key) > 1), None)
        if twice is not None:
            raise ValueError(f"run config hyperparameters={text!r} gives {twice!r} twice: give each key once")
        return dict(pairs)

    try:
        hyperparameters = json.loads(text, object_pairs_hook=once)
    except json.JSONDecodeError as error:
        raise ValueError(f"run config hyperparameters={text!r} is not JSON ({error}): write an object such as "
                         '\'{"client_lr": 0.1}\'') from None
    if not isinstance(hyperparameters, dict):
        raise ValueError(f"run config hyperparameters={text!r} must be a JSON object of keyword arguments, such as "
                         '\'{"client_lr": 0.1}\'')
    return algorithms.make(settings["algorithm"], **hyperparameters)


def check_run_config(config: Any) -> tuple[dict[str, Any], Any]:
    """The checked run config (:func:`run_settings`) and its algorithm, refused by name if it is not distributable
    (:func:`fedcore.flower.check_distributable`) or if its step sizes were computed for another S, K, T (PAdaMFed's
    ``check_run``): what ``start_app`` asks before ``flwr run``, and the ServerApp before any message."""
    settings = run_settings(config)
    algorithm = check_distributable(algorithm_of(settings))
    if settings["clients-per-round"] > settings["clients"]:
        raise ValueError(f"run config clients-per-round={settings['clients-per-round']} must be <= "
                         f"clients={settings['clients']}")
    algorithm.check_run(settings["clients-per-round"], settings["local-steps"], settings["rounds"])
    return settings, algorithm


def node_partition(node_config: Any) -> tuple[int, int]:
    """``(partition-id, num-partitions)`` of a node's config, checked: ``0 <= partition-id < num-partitions``."""
    if not isinstance(node_config, Mapping) or not {"partition-id", "num-partitions"} <= set(node_config):
        raise ValueError(f"the node config {node_config!r:.80} must hold partition-id and num-partitions "
                         '(flower-supernode --node-config "partition-id=0 num-partitions=3")')
    parts = check_int("node config num-partitions", node_config["num-partitions"])
    return check_int("node config partition-id", node_config["partition-id"], 0, parts - 1), parts


clientapp = ClientApp()


@clientapp.query()
def partition(message: Message, context: Context) -> Message:
    """Which clients this node holds: its node config's ``partition-id`` and ``num-partitions``."""
    part, parts = node_partition(context.node_config)
    record = ConfigRecord({"partition-id": part, "num-partitions": parts})
    return Message(content=RecordDict({"partition": record}), reply_to=message)


@clientapp.train()
def train(message: Message, context: Context) -> Message:
    """One client's round (:func:`fedcore.flower.app.client_reply`), refused for a client this node does not hold."""
    client = int(message.content["config"]["client"])
    part, parts = node_partition(context.node_config)
    if client % parts != part:
        raise ValueError(f"client {client} is not held by this node (partition-id={part} of {parts})")
    settings = run_settings(context.run_config)
    problem = problem_of(settings)
    oracle = GradientOracle(problem.model, "auto", problem.data.device)
    return client_reply(problem, algorithm_of(settings), oracle, message, context.state)


serverapp = ServerApp()


@serverapp.main()
def main(grid: Grid, context: Context) -> None:
    """The run: ask the nodes for their partitions, then ``rounds`` rounds of :class:`FedcoreStrategy`; the model and
    each round's metrics written to ``output``."""
    settings, algorithm = check_run_config(context.run_config)
    problem = problem_of(settings)
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
    strategy = FedcoreStrategy(algorithm, problem, nodes=nodes, clients_per_round=settings["clients-per-round"],
                               local_steps=settings["local-steps"], batch_size=settings["batch-size"],
                               weighting=settings["weighting"], seed=settings["seed"])
    output = settings["output"]

    def write(*_: Any) -> None:  # after every round (as Flower's evaluate_fn), so a failed round loses nothing
        if output:
            Path(output).mkdir(parents=True, exist_ok=True)
            torch.save(strategy.state["x"].reshape(-1).cpu(), Path(output) / "model.pt")
            (Path(output) / "history.json").write_text(json.dumps(strategy.history))

    try:
        strategy.start(grid, array_record(problem.x0()), num_rounds=settings["rounds"],
                       timeout=settings["round-timeout"], evaluate_fn=write)
    finally:  # what was computed is written, also when a node failed mid-run
        write()
