"""A fedcore algorithm as a Flower app: :class:`FedcoreStrategy` (the server) and :func:`client_app` (a node).

One round on Flower is :func:`fedcore.algorithms.contract.federated_round` with its two parts in different processes:

    server:  clients, weights, rows <- Streams(seed).sample(data, t, options)       (fedcore's random streams)
             [prologue, when the algorithm has one due (FAFED's m_0, PAdaMFed's line 1): the same exchange first]
             send what the clients read (algorithm.client_reads: x_t, SCAFFOLD's c, ...) and client i's rows [K, B]
             to client i's node                                                      (configure_train)
    node:    own <- client i's state in the node's Context.state (SCAFFOLD's c_i; the algorithm's init the first time)
             run <- algorithm.client_run(sent, one-client batch, oracle, own)        (the algorithm's client rule)
             keep run.keeps in Context.state; reply X_i - x_t, the loss and run.uploads (c_i+ - c_i, step sizes, ...)
    server:  state, metrics <- server_part(algorithm, state, stacked replies, batch) (the algorithm's server rule)

so the client rule and the server rule are the ones :func:`fedcore.simulate` runs, and the same seed draws the same
clients and minibatches: three rounds equal ``simulate`` for every algorithm of ``ALGORITHMS``
(``tests/test_flower.py``).  Per-client state lives on the nodes, not on the server.  The rows a node receives index
the federation's pool of samples (client i's are ``offsets[i] : offsets[i] + sizes[i]``); a node holds the pool
(:func:`client_app`'s ``problem``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

import torch
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Result, Strategy
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRun
from fedcore.algorithms.contract import (
    Federated,
    State,
    client_part,
    client_prologue_part,
    client_start,
    declared,
    run_prologue,
    sent,
    server_part,
    server_start,
)
from fedcore.checks import check_choice, check_function, check_int, check_x0, named_numbers
from fedcore.contract_checks import name_of
from fedcore.data.federated import FederatedData
from fedcore.engine.loop import diverged, record
from fedcore.engine.options import RunOptions
from fedcore.engine.streams import Streams
from fedcore.params import GradientOracle
from fedcore.problem import Problem
from fedcore.results import DivergedWarning

PHASES = ("prologue", "train")
"""The two kinds of train message: an algorithm's prologue (:func:`fedcore.algorithms.contract.run_prologue`) and its
round's local steps."""


def check_distributable(algorithm: Any) -> Federated:
    """``algorithm`` if it is distributable (a Flower app can run it), else a ``ValueError`` naming it, before any
    message or process.  It is when it is a family of :class:`fedcore.algorithms.Federated` (its round a clients'
    part and a server's part; every algorithm of ``ALGORITHMS``) whose configuration keeps the clients' state on the
    clients (``not_distributable()`` says why not: PAdaMFed's ``first_round``)."""
    refusal = declared(algorithm).not_distributable()
    if refusal:
        joined = ": " if not isinstance(algorithm, Federated) else " with "
        raise ValueError(f"algorithm={name_of(algorithm)!r} cannot run on Flower{joined}{refusal}")
    return algorithm


def array_record(tensor: Tensor) -> ArrayRecord:
    """``tensor`` as the one array of a Flower ``ArrayRecord`` (on the CPU, for the wire)."""
    return ArrayRecord(torch_state_dict={"value": tensor.detach().cpu().contiguous()})


def tensor_of(record: ArrayRecord, like: Tensor) -> Tensor:
    """The array of :func:`array_record`'s ``record`` as a tensor on ``like``'s device and dtype."""
    return record.to_torch_state_dict()["value"].to(like.device, like.dtype)


def tensors_record(tensors: Mapping[str, Tensor]) -> ArrayRecord:
    """Named tensors as one ``ArrayRecord`` (on the CPU, their shapes and dtypes kept)."""
    return ArrayRecord(torch_state_dict={key: value.detach().cpu().contiguous() for key, value in tensors.items()})


def tensors_of(record: ArrayRecord, device: torch.device | str) -> dict[str, Tensor]:
    """The named tensors of :func:`tensors_record`'s ``record``, on ``device``."""
    return {key: value.to(device) for key, value in record.to_torch_state_dict().items()}


class FedcoreStrategy(Strategy):
    """The server of a fedcore algorithm on Flower's Message API, for ``problem`` (its data and model; ``x0`` the
    initial parameters, by default the model's own).  Its options are ``simulate``'s
    (:class:`~fedcore.engine.options.RunOptions`, as ``options=`` or by keyword), each honoured as ``simulate``
    honours it: ``clients_per_round``, ``local_steps``, ``batch_size``, ``weighting`` and ``seed`` draw the rounds;
    ``rounds`` is what :meth:`start` runs when given no ``num_rounds`` (a different ``num_rounds`` is refused; without
    ``rounds``, Flower's ``num_rounds``); ``eval_every`` says in which rounds ``start``'s ``evaluate_fn`` is called;
    ``record(x)`` of the server model goes into :attr:`initial` (before the first round) and each round's row;
    ``diverge_above`` (and a loss or model that is not finite) ends the run with a ``DivergedWarning``, the server
    state of the round before kept and the round's metrics the last row of :attr:`history`, as in simulate's
    ``History`` (:attr:`diverged_round`, :attr:`diverged_because`), no message sent after it.  ``backend`` is the
    nodes' (:func:`client_app`'s): anything but ``"auto"`` is refused here.

    Each round draws the clients and their minibatch rows from the seed with the engine's random streams
    (:class:`~fedcore.engine.streams.Streams`, as :func:`fedcore.simulate` does), sends each client's node what the
    algorithm's clients read and its rows (``nodes``: client id -> node id; None: node id = client id), runs the
    algorithm's prologue first when one is due, and aggregates the replies with the algorithm's ``server_round``.
    The server state (the model and, e.g., FedAdam's moments, SCAFFOLD's ``c``) stays here, the clients' own state
    (``algorithm.client_state``) on their nodes; :attr:`history` keeps each round's metrics and its wall time
    (``seconds``: sampling, the messages, the nodes' work and the server rule)."""

    def __init__(self, algorithm: Any, problem: Problem | FederatedData, x0: Tensor | None = None, *,
                 options: RunOptions | None = None, nodes: Mapping[int, int] | None = None, **settings: Any) -> None:
        self.algorithm = check_distributable(algorithm)
        if isinstance(problem, Problem):  # x0 is checked against the model's d (by default its own parameters)
            data, x0 = problem.data, check_x0("x0", problem.x0() if x0 is None else x0, problem.model.dim)
        elif isinstance(problem, FederatedData):  # no model here: x0 is checked against initial_arrays in start
            data, x0 = problem, check_x0("x0", x0, None)
        else:
            raise TypeError(f"problem={problem!r:.80} must be a fedcore.Problem (or its FederatedData, with x0)")
        self.data = data
        given = options is not None or "rounds" in settings  # else the rounds are Flower's num_rounds (start)
        self.options = RunOptions.of((), options, "FedcoreStrategy", **({} if given else {"rounds": 1}),
                                     **settings).check(data)
        self.rounds = self.options.rounds if given else None
        if self.options.backend != "auto":
            raise ValueError(f"backend={self.options.backend!r}: the strategy computes no gradient; the nodes do, "
                             f"with client_app(problem, algorithm, backend={self.options.backend!r})")
        self.streams = Streams(self.options.seed, data.device)  # fedcore.simulate's streams for this seed
        self.nodes = dict(nodes) if nodes is not None else None
        self.state: State = server_start(self.algorithm, x0.reshape(1, 1, -1).to(data.device).clone())
        self.round_state: State = self.state  # the state after this round's prologue (the round's start)
        self.batch: RoundBatch | None = None
        self.sent: list[Message] = []
        self.started = 0.0
        self.timeout = 3600.0
        self.history: list[dict[str, float]] = []
        self.diverged_round: int | None = None
        self.diverged_because: str | None = None
        self.initial = self._recorded({})  # record(x0): simulate's round 0

    def start(self, grid: Grid, initial_arrays: ArrayRecord, num_rounds: int | None = None, timeout: float = 3600,
              evaluate_fn: Callable[[int, ArrayRecord], MetricRecord | None] | None = None, **options: Any) -> Result:
        """Flower's round loop for ``num_rounds`` (by default the strategy's ``rounds``, else Flower's 3), after the
        algorithm's own check of the run (PAdaMFed's step sizes were computed for one S, K, T: ``check_run``), as
        :func:`fedcore.simulate` makes it before any work; ``evaluate_fn`` is called in the rounds ``eval_every``
        says, and not once the run diverged."""
        if num_rounds is None:
            num_rounds = 3 if self.rounds is None else self.rounds
        num_rounds = check_int("num_rounds", num_rounds)
        if self.rounds is not None and num_rounds != self.rounds:
            raise ValueError(f"num_rounds={num_rounds} (start) differs from rounds={self.rounds} (the strategy's "
                             "options): give the number of rounds once")
        self.options = replace(self.options, rounds=num_rounds)
        given = sum(array.numel() for array in initial_arrays.to_torch_state_dict().values()) \
            if isinstance(initial_arrays, ArrayRecord) else None
        if given != self.state["x"].numel():
            raise ValueError(f"initial_arrays holds {given if given is not None else repr(initial_arrays)[:60]} "
                             f"numbers; the strategy's x0 has {self.state['x'].numel()}: give "
                             "array_record(problem.x0()) of the same model")
        self.algorithm.check_run(self.options.clients_per_round, self.options.local_steps, num_rounds)
        self.timeout = timeout
        every = self.options.eval_every

        def evaluate(server_round: int, arrays: ArrayRecord) -> MetricRecord | None:  # simulate's rounds
            due = every > 0 and (server_round % every == 0 or server_round == num_rounds)
            return evaluate_fn(server_round, arrays) if due and self.diverged_round is None else None

        return super().start(grid, initial_arrays, num_rounds=num_rounds, timeout=timeout,
                             evaluate_fn=None if evaluate_fn is None else evaluate, **options)

    def _recorded(self, row: dict[str, float]) -> dict[str, float]:
        """``record(x)`` of the server model, on a copy (:func:`fedcore.engine.loop.record` makes it; ``{}`` without a
        ``record``), as simulate records it."""
        if self.options.record is None:
            return {}
        return record(self.options.record, self.state["x"].reshape(1, -1), row)  # record() copies

    def node_of(self, client: int) -> int:
        """The node that holds ``client``'s data."""
        if self.nodes is None:
            return client
        if client not in self.nodes:
            raise ValueError(f"client {client} has no node in nodes= (it maps {len(self.nodes)} clients)")
        return self.nodes[client]

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """Round ``server_round`` (1-based; fedcore's ``t = server_round - 1``): the prologue's exchange when one is
        due (through ``grid``, at once), then one message per sampled client with what the clients read, the
        client's id, the round and the client's minibatch rows ``[K, B]``; none once the run diverged."""
        if self.diverged_round is not None:
            self.sent = []
            return []
        self.started = time.perf_counter()
        batch = self.streams.sample(self.data, server_round - 1, self.options, self.state["x"].dtype)

        def prologue_on_nodes(first: RoundBatch, to_clients: State) -> State:  # through grid, at once
            asked = self._messages(first, to_clients, "prologue")
            return self._uploads(server_round, first, asked, grid.send_and_receive(asked, timeout=self.timeout))

        self.batch = batch
        self.round_state = run_prologue(self.algorithm, self.state, batch, clients=prologue_on_nodes)
        self.sent = self._messages(batch, sent(self.algorithm, self.round_state), "train")  # ids given as sent
        return self.sent

    def _messages(self, batch: RoundBatch, to_clients: State, phase: str) -> list[Message]:
        """One message per client of ``batch``: what the server sends the clients, the client's id, the round, the
        phase and the client's minibatch rows ``[K, B]``."""
        record = tensors_record(to_clients)
        messages = []
        for position, client in enumerate(batch.clients[0].tolist()):
            content = RecordDict({"state": record, "rows": array_record(batch.rows[0, position]),
                                  "config": ConfigRecord({"client": client, "t": batch.t, "phase": phase})})
            messages.append(Message(content=content, dst_node_id=self.node_of(client), message_type="train"))
        return messages

    def _uploads(self, server_round: int, batch: RoundBatch, asked: list[Message],
                 replies: Iterable[Message]) -> State:
        """The replies' uploads stacked in the batch's client order ``[1, S, ...]``; a reply with an error (a node
        that failed, or one the SuperLink reports unavailable) or a client without a reply stops the run with its
        node and round, the state of the last completed round kept."""
        by_client: dict[int, Message] = {}
        by_id = {message.metadata.message_id: message for message in asked if message.metadata.message_id}
        for reply in replies:
            if reply.has_error():  # the SuperLink answers for a node it lost: name the node the message was for
                request = by_id.get(reply.metadata.reply_to_message_id)
                node = request.metadata.dst_node_id if request is not None else reply.metadata.src_node_id
                client = f" (client {int(request.content['config']['client'])})" if request is not None else ""
                raise RuntimeError(f"round {server_round}: node {node}{client} failed ({reply.error.reason}); the "
                                   f"state after round {server_round - 1} is kept")
            by_client[int(reply.content["config"]["client"])] = reply
        clients = batch.clients[0].tolist()
        missing = [client for client in clients if client not in by_client]
        if missing:
            raise RuntimeError(f"round {server_round}: no reply for clients {missing} (nodes "
                               f"{[self.node_of(c) for c in missing]}); the state after round {server_round - 1} "
                               "is kept")
        uploads = [tensors_of(by_client[client].content["uploads"], self.data.device) for client in clients]
        return {key: torch.cat([upload[key] for upload in uploads], dim=1) for key in uploads[0]}

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """The algorithm's ``server_round`` on the clients' replies, in the order they were sampled; a round that
        diverged (:func:`fedcore.engine.loop.diverged`) is undone and ends the run, as in simulate."""
        if self.diverged_round is not None:
            return None, None
        batch, state = self.batch, self.round_state
        uploads = self._uploads(server_round, batch, self.sent, replies)
        x = state["x"]
        move, loss_sum = uploads.pop("move"), uploads.pop("loss_sum")
        run = ClientRun(x + move, loss_sum, None, batch.local_steps, uploads=uploads)
        after, metrics = server_part(self.algorithm, state, run, batch)
        row = {key: float(value.reshape(-1)[0]) if isinstance(value, Tensor) else float(value)
               for key, value in metrics.items()}
        row["seconds"] = time.perf_counter() - self.started  # the round's wall time: messages, nodes, server rule
        why = diverged(1, self.options.diverge_above, after, {key: [value] for key, value in row.items()})
        if why:  # its row kept, its state not (the nodes keep what they computed in it); simulate's History alike
            self.diverged_round, self.diverged_because = server_round, why[0]
            warnings.warn(f"{name_of(self.algorithm)} diverged at round {server_round} ({why[0]}); history and state "
                          f"kept up to round {server_round - 1}, no message sent after it", DivergedWarning,
                          stacklevel=2)
            self.history.append(row)
            return None, MetricRecord(row)
        self.state = after
        row.update(self._recorded(row))
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
    """A node's ``ClientApp`` for ``algorithm``: its train handler runs the algorithm's client part
    (:func:`client_reply`) for the message's one client, its own state kept in the node's ``Context.state``."""
    check_distributable(algorithm)
    oracle = GradientOracle(problem.model, backend, problem.data.device)
    app = ClientApp()

    @app.train()
    def train(message: Message, context: Context) -> Message:
        return client_reply(problem, algorithm, oracle, message, context.state)

    return app


def client_reply(problem: Problem, algorithm: Any, oracle: GradientOracle, message: Message,
                 kept: RecordDict) -> Message:
    """The node's part of a round for the message's one client: its own state from ``kept`` (the node's
    ``Context.state``; the algorithm's ``init`` rows the first time), then the algorithm's ``client_prologue`` or
    ``client_run`` (the message's ``phase``) from what the server sent, on the message's rows of ``problem``'s pool.
    What the client keeps goes back into ``kept``; the reply holds what it uploads (``uploads``; after local steps
    also its move ``X_K - x_t`` and its loss sum)."""
    check_distributable(algorithm)
    data, config = problem.data, message.content["config"]
    client, phase = int(config["client"]), check_choice("phase", str(config["phase"]), PHASES)
    sent = tensors_of(message.content["state"], data.device)
    rows = message.content["rows"].to_torch_state_dict()["value"].to(data.device)
    own = _own_state(problem, algorithm, kept, client)
    x = sent["x"]
    batch = RoundBatch(int(config["t"]), torch.tensor([client], device=data.device),
                       torch.ones(1, dtype=x.dtype, device=data.device), rows.unsqueeze(0),
                       data.inputs, data.targets, data.num_clients, sizes=data.sizes)
    if phase == "prologue":
        uploads, keeps = client_prologue_part(algorithm, sent, batch, oracle, own)
    else:
        run = client_part(algorithm, sent, batch, oracle, own)
        uploads, keeps = {**run.uploads, "move": run.X - x, "loss_sum": run.loss_sum}, run.keeps
    if keeps:
        kept[_own_key(client)] = tensors_record({**own, **keeps})
    content = RecordDict({"uploads": tensors_record(uploads), "config": ConfigRecord({"client": client})})
    return Message(content=content, reply_to=message)


def _own_key(client: int) -> str:
    return f"fedcore-client-{client}"


def _own_state(problem: Problem, algorithm: Any, kept: RecordDict, client: int) -> State:
    """Client ``client``'s own state ``[1, 1, ...]`` (``algorithm.client_state``): what it kept, or the algorithm's
    ``client_init`` from the problem's x0 the first time (SCAFFOLD's ``c_i = 0``, FAFED's ``x_prev = x_0``)."""
    keys = algorithm.client_state
    if not keys:
        return {}
    if _own_key(client) in kept:
        return tensors_of(kept[_own_key(client)], problem.data.device)
    x0 = problem.x0().reshape(1, 1, -1).to(problem.data.device).clone()
    return client_start(algorithm, x0)


class EngineStandIn:
    """What an engine does for a ServerApp process that Flower's public API offers no call for, done the way flwr
    :data:`FLWR_VERSION` does it inside: the one place fedcore touches Flower's internals (``LocalGrid`` uses it;
    ``tests/test_flower.py`` fails when the installed flwr is another release, so that an upgrade re-reads this)."""

    FLWR_VERSION = "1.42.0"

    @staticmethod
    def give_identity() -> None:
        """The process's task identity (run, node, task: 0 each), which an engine sets before a ServerApp runs and a
        ``Message`` built outside one reads."""
        from flwr.supercore.task_identity import TaskIdentity

        for field in ("run_id", "node_id", "task_id"):
            if getattr(TaskIdentity, f"_{field}") is None:
                setattr(TaskIdentity, field, 0)

    @staticmethod
    def name(message: Message) -> None:
        """The message's id, as an engine's grid names what it sends (a reply then says which message it answers)."""
        message.metadata.__dict__["_message_id"] = message.object_id


class LocalGrid(Grid):
    """Flower's ``Grid`` in one process: each message goes straight to ``app`` (a ``ClientApp``) with its node's
    own ``Context`` (its state kept across rounds).  What the Message API sees is Flower's; what it leaves out is
    the transport (no SuperLink, no serialization): for teaching and for checking an app before a deployment.  What
    an engine would do beside that goes through :class:`EngineStandIn`."""

    def __init__(self, app: ClientApp, node_ids: Iterable[int]) -> None:
        self.app = app
        self.contexts = {node: Context(run_id=0, node_id=node, node_config={}, state=RecordDict(), run_config={})
                         for node in node_ids}
        self._run: Any = None
        EngineStandIn.give_identity()

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
            EngineStandIn.name(message)
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
    strategy = FedcoreStrategy(algorithm, problem, clients_per_round=clients_per_round,
                               local_steps=local_steps, batch_size=batch_size, seed=seed, weighting=weighting)
    if evaluate is not None:
        check_function("evaluate", evaluate, "round", "x")
    grid = LocalGrid(client_app(problem, algorithm), range(data.num_clients))
    strategy.start(grid, array_record(problem.x0()), num_rounds=check_int("rounds", rounds), timeout=3600,
                   evaluate_fn=None if evaluate is None else (lambda t, arrays: metric_record(
                       evaluate, evaluate(t, tensor_of(arrays, problem.x0())))))
    return strategy


def metric_record(evaluate: Any, metrics: Any) -> MetricRecord:
    """What ``evaluate(round, x)`` returned as Flower's ``MetricRecord``: it must be ``{name: one number}``."""
    return MetricRecord(named_numbers("evaluate", evaluate, metrics, context=", e.g. {'test_accuracy': 0.81}"))
