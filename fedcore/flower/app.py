"""A fedcore algorithm as a Flower app: :class:`FedcoreStrategy` (the server) and :func:`client_app` (a node).

One round on Flower, for an algorithm of :data:`CARRIED` (Reddi et al.'s Algorithm 1 and its kin):

    server:  clients, weights, rows <- sample_round(data, t, S, K, B, seed)     (fedcore's sampler)
             send x_t and client i's rows [K, B] to client i's node              (configure_train)
    node i:  X_i <- client_run({"x": x_t}, one-client batch, oracle)            (the algorithm's client rule)
             reply X_i - x_t and its mean minibatch loss
    server:  x_{t+1}, state <- server_round(state, stacked replies, batch)      (the algorithm's server rule)

so the client rule and the server rule are the ones :func:`fedcore.simulate` runs, and the same seed draws the same
clients and minibatches: three rounds equal ``simulate`` (``tests/test_flower.py``).  The rows a node receives index
the federation's pool of samples (client i's are ``offsets[i] : offsets[i] + sizes[i]``); a node holds the pool
(:func:`client_app`'s ``problem``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy
from torch import Tensor

from fedcore.algorithms.base import RoundBatch
from fedcore.algorithms.client import ClientRun
from fedcore.algorithms.fedopt import FedOpt
from fedcore.checks import check_choice, check_int, check_seed
from fedcore.data.federated import FederatedData
from fedcore.params import GradientOracle
from fedcore.problem import Problem
from fedcore.run import sample_round

CARRIED: tuple[type, ...] = (FedOpt,)
"""The algorithm classes a Flower app can carry so far: local steps on the server's model, then a server rule on the
clients' models (:class:`fedcore.algorithms.FedOpt` and its subclasses: FedAvg, FedAvgM, FedAdagrad, FedAdam,
FedYogi, FedAMS, FedProx, FedExP, FedLi-LU)."""
WEIGHTINGS = ("samples", "uniform")


def check_carried(algorithm: Any) -> Any:
    """``algorithm`` if a Flower app can carry it (:data:`CARRIED`), else a ``ValueError`` naming it, before any
    message or process."""
    if not isinstance(algorithm, CARRIED):
        name = getattr(algorithm, "name", type(algorithm).__name__)
        raise ValueError(f"algorithm={name!r} cannot run on Flower yet: fedcore.flower carries the FedOpt family "
                         "(FedAvg, FedAvgM, FedAdagrad, FedAdam, FedYogi, FedAMS, FedProx, FedExP, FedLi-LU); "
                         "per-client state (SCAFFOLD's c_i, PAdaMFed's, FAFED's momentum) and FedLi-LS's step "
                         "sizes are not carried")
    return algorithm


def array_record(tensor: Tensor) -> ArrayRecord:
    """``tensor`` as the one array of a Flower ``ArrayRecord`` (on the CPU, for the wire)."""
    return ArrayRecord(torch_state_dict={"value": tensor.detach().cpu().contiguous()})


def tensor_of(record: ArrayRecord, like: Tensor) -> Tensor:
    """The array of :func:`array_record`'s ``record`` as a tensor on ``like``'s device and dtype."""
    return record.to_torch_state_dict()["value"].to(like.device, like.dtype)


class FedcoreStrategy(Strategy):
    """The server of a fedcore algorithm on Flower's Message API.  Each round draws the clients and their
    minibatch rows with fedcore's sampler from ``seed`` (as :func:`fedcore.simulate` does), sends each client's
    node the model and its rows (``nodes``: client id -> node id; None: node id = client id), and aggregates the
    replies with the algorithm's ``server_round``.  The server state (the model and, e.g., FedAdam's moments) stays
    here; :attr:`history` keeps each round's metrics and its wall time (``seconds``: sampling, the messages, the
    nodes' work and the server rule)."""

    def __init__(self, algorithm: Any, data: FederatedData, x0: Tensor, *, clients_per_round: int, local_steps: int,
                 batch_size: int, seed: int = 0, weighting: str = "samples",
                 nodes: Mapping[int, int] | None = None) -> None:
        self.algorithm = check_carried(algorithm)
        self.data = data
        self.settings = {"clients_per_round": check_int("clients_per_round", clients_per_round),
                         "local_steps": check_int("local_steps", local_steps),
                         "batch_size": check_int("batch_size", batch_size),
                         "weighting": check_choice("weighting", weighting, WEIGHTINGS)}
        if clients_per_round > data.num_clients:
            raise ValueError(f"clients_per_round={clients_per_round} exceeds the {data.num_clients} clients")
        seed = check_seed("seed", seed)
        self.sampler = torch.Generator().manual_seed(seed)  # fedcore.simulate's streams for this seed
        self.batch_generator = torch.Generator(device=data.device).manual_seed(seed + 1)
        self.nodes = dict(nodes) if nodes is not None else None
        self.state = algorithm.init(x0.reshape(1, 1, -1).to(data.device).clone(), data.num_clients)
        self.batch: RoundBatch | None = None
        self.started = 0.0
        self.history: list[dict[str, float]] = []

    def node_of(self, client: int) -> int:
        """The node that holds ``client``'s data."""
        if self.nodes is None:
            return client
        if client not in self.nodes:
            raise ValueError(f"client {client} has no node in nodes= (it maps {len(self.nodes)} clients)")
        return self.nodes[client]

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """Round ``server_round`` (1-based; fedcore's ``t = server_round - 1``): one message per sampled client,
        with the server's model, the client's id, the round and the client's minibatch rows ``[K, B]``."""
        self.started = time.perf_counter()
        batch = sample_round(self.data, server_round - 1, dtype=self.state["x"].dtype, sampler=self.sampler,
                             batch_generator=self.batch_generator, **self.settings)
        self.batch = batch
        x = array_record(self.state["x"].reshape(-1))
        messages = []
        for position, client in enumerate(batch.clients[0].tolist()):
            content = RecordDict({"x": x, "rows": array_record(batch.rows[0, position]),
                                  "config": ConfigRecord({"client": client, "t": server_round - 1})})
            messages.append(Message(content=content, dst_node_id=self.node_of(client), message_type="train"))
        return messages

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The algorithm's ``server_round`` on the clients' replies, in the order they were sampled; a reply with an
        error (a node that failed) stops the run with its node and round, the state of the last completed round
        kept."""
        batch, x = self.batch, self.state["x"]
        by_client: dict[int, Message] = {}
        for reply in replies:
            if reply.has_error():
                raise RuntimeError(f"round {server_round}: node {reply.metadata.src_node_id} failed "
                                   f"({reply.error.reason}); the state after round {server_round - 1} is kept")
            by_client[int(reply.content["config"]["client"])] = reply
        clients = batch.clients[0].tolist()
        missing = [client for client in clients if client not in by_client]
        if missing:
            raise RuntimeError(f"round {server_round}: no reply for clients {missing} (nodes "
                               f"{[self.node_of(c) for c in missing]}); the state after round {server_round - 1} "
                               "is kept")
        moves = torch.stack([tensor_of(by_client[c].content["move"], x) for c in clients]).unsqueeze(0)
        losses = torch.stack([tensor_of(by_client[c].content["loss"], x) for c in clients]).reshape(1, -1, 1)
        run = ClientRun(x + moves, losses * batch.local_steps, None, batch.local_steps)
        self.state, metrics = self.algorithm.server_round(self.state, run, batch)
        row = {key: float(value.reshape(-1)[0]) if isinstance(value, Tensor) else float(value)
               for key, value in metrics.items()}
        row["seconds"] = time.perf_counter() - self.started  # the round's wall time: messages, nodes, server rule
        self.history.append(row)
        return array_record(self.state["x"].reshape(-1)), MetricRecord(row)

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[Message]:
        """No evaluation on the nodes: the model is evaluated where the test set is (``evaluate_fn``)."""
        return []

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        return None

    def summary(self) -> None:
        """Nothing to log beyond Flower's own lines."""


def client_app(problem: Problem, algorithm: Any, backend: str = "auto") -> ClientApp:
    """A node's ``ClientApp`` for ``algorithm`` (:data:`CARRIED`): its train handler runs the algorithm's
    ``client_run`` on the message's one client, from the message's model, on the message's rows of ``problem``'s
    pool, and replies with the client's move ``X_K - x_t`` and its mean minibatch loss."""
    check_carried(algorithm)
    oracle = GradientOracle(problem.model, backend, problem.data.device)
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        return client_reply(problem, algorithm, oracle, message)

    return app


def client_reply(problem: Problem, algorithm: Any, oracle: GradientOracle, message: Message) -> Message:
    """The node's part of a round: ``algorithm.client_run`` on the message's one client, from the message's model,
    on the message's rows of ``problem``'s pool; the reply holds the client's move ``X_K - x_t`` and its mean
    minibatch loss."""
    check_carried(algorithm)
    data, config = problem.data, message.content["config"]
    x = tensor_of(message.content["x"], problem.x0()).reshape(1, 1, -1)
    rows = message.content["rows"].to_torch_state_dict()["value"].to(data.device)
    client = int(config["client"])
    batch = RoundBatch(int(config["t"]), torch.tensor([client], device=data.device),
                       torch.ones(1, dtype=x.dtype, device=data.device), rows.unsqueeze(0),
                       data.inputs, data.targets, data.num_clients, sizes=data.sizes)
    run = algorithm.client_run({"x": x}, batch, oracle)
    content = RecordDict({"move": array_record((run.X - x).reshape(-1)),
                          "loss": array_record(run.mean_loss.reshape(-1)),
                          "config": ConfigRecord({"client": client})})
    return Message(content=content, reply_to=message)


class LocalGrid(Grid):
    """Flower's ``Grid`` in one process: each message goes straight to ``app`` (a ``ClientApp``) with its node's
    own ``Context`` (its state kept across rounds).  What the Message API sees is Flower's; what it leaves out is
    the transport (no SuperLink, no serialization): for teaching and for checking an app before a deployment."""

    def __init__(self, app: ClientApp, node_ids: Iterable[int]) -> None:
        self.app = app
        self.contexts = {node: Context(run_id=0, node_id=node, node_config={}, state=RecordDict(), run_config={})
                         for node in node_ids}
        self._run: Any = None
        from flwr.supercore.task_identity import TaskIdentity  # what a ServerApp process is given by its engine

        for field in ("run_id", "node_id", "task_id"):
            if getattr(TaskIdentity, f"_{field}") is None:
                setattr(TaskIdentity, field, 0)

    def set_run(self, run: Any) -> None:
        self._run = run

    @property
    def run(self) -> Any:
        return self._run

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int, group_id: str,
                       ttl: float | None = None) -> Message:
        return Message(content=content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id,
                       ttl=ttl)

    def get_node_ids(self) -> Iterable[int]:
        return list(self.contexts)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        raise NotImplementedError("LocalGrid answers send_and_receive only")

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        raise NotImplementedError("LocalGrid answers send_and_receive only")

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None) -> Iterable[Message]:
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            if node not in self.contexts:
                raise ValueError(f"a message for node {node}, which this grid does not have ({list(self.contexts)})")
            replies.append(self.app(message, self.contexts[node]))
        return replies


def run_local(problem: Problem, algorithm: Any, rounds: int, *, clients_per_round: int, local_steps: int,
              batch_size: int, seed: int = 0, weighting: str = "samples",
              evaluate: Callable[[int, Tensor], dict[str, float]] | None = None) -> FedcoreStrategy:
    """``rounds`` rounds of ``algorithm`` through Flower's Message API in this process (:class:`LocalGrid`, one node
    per client): the strategy after them, its ``state["x"]`` the model and ``history`` each round's metrics."""
    data = problem.data
    strategy = FedcoreStrategy(algorithm, data, problem.x0(), clients_per_round=clients_per_round,
                               local_steps=local_steps, batch_size=batch_size, seed=seed, weighting=weighting)
    grid = LocalGrid(client_app(problem, algorithm), range(data.num_clients))
    strategy.start(grid, array_record(problem.x0()), num_rounds=check_int("rounds", rounds), timeout=3600,
                   evaluate_fn=None if evaluate is None else (lambda t, arrays: MetricRecord(
                       evaluate(t, tensor_of(arrays, problem.x0())))))
    return strategy
