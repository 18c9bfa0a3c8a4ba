"""The algorithm contract: what a family defines (:class:`Federated`: its hyperparameters, ``client_run``,
``server_round`` and its state once, as NamedTuples; every other part has its default there), and the round the
framework runs with it (:func:`federated_round`: the prologue when one is due, the clients' part, their kept rows
written back, the server's part, the training loss), the same parts Flower's engines run (:mod:`fedcore.flower`).  A
plain algorithm (``name``, ``init``, ``round``: :class:`Algorithm`) runs in :func:`fedcore.simulate` too
(:func:`declared`).  What a family declares and returns is checked where the framework receives it, by
:mod:`fedcore.contract_checks`, outside the numerics (the checks decide no number).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from torch import Tensor

from fedcore.algorithms.batch import RoundBatch, as_runs
from fedcore.algorithms.client import ClientRun
from fedcore.contract_checks import Handed, checked_family, declared_state, held, name_of, returned
from fedcore.params import GradientOracle

State = dict[str, Tensor]
Metrics = dict[str, Any]


class Algorithm(Protocol):
    """The least :func:`fedcore.simulate` drives: ``init`` and ``round``.  A family (:class:`Federated`) defines its
    round as a clients' part and a server's part instead, and the framework runs them."""

    name: str

    def init(self, x0: Tensor, num_clients: int) -> State:
        """The state before the first round (tensors only: it checkpoints with ``torch.save``) from ``x0 [R, 1, d]``
        (or ``[d]``, one run): every per-run tensor leads with R (the model ``[R, 1, d]``, per-client matrices
        ``[R, N, d]``, numbers ``[R, 1, 1]``); a 0-d tensor is shared by the runs of a pass (a round counter)."""
        ...

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        """One round: the new state and the round's metrics (``train_loss``), each a number or R numbers."""
        ...


class Model(NamedTuple):
    """The least server state: the model ``x [R, 1, d]`` (FedLi-LS's)."""

    x: Tensor


class Nothing(NamedTuple):
    """The state of clients that keep nothing between rounds."""


class Federated:
    """The contract of a family, every part with its default.  Subclass it with a frozen dataclass, define
    :meth:`client_run` and :meth:`server_round`, and, where it keeps more than the model, :meth:`server_init` and
    :meth:`client_init`, each a NamedTuple whose fields are the state's keys (declared once: the framework builds
    ``init`` from them and reads ``client_state`` off them).  Never ``round`` or ``init``."""

    name: str
    client_reads: tuple[str, ...] = ("x",)
    """The keys of the server's state it sends its clients each round (the model ``x``; SCAFFOLD's ``c``, ...)."""

    def server_init(self, x: Tensor) -> Model:
        """The server's state before the first round from the model ``x [R, 1, d]``: a NamedTuple of tensors (a
        field None is left out), the model under ``x``.  Default: the model alone."""
        return Model(x)

    def client_init(self, x: Tensor) -> Nothing:
        """A client's own state before it first takes part, from the model ``x [R, 1, d]``: a NamedTuple of its rows
        ``[R, 1, ...]`` (SCAFFOLD's ``c_i = 0``), which every client starts from.  Default: clients keep nothing."""
        return Nothing()

    @property
    def client_state(self) -> tuple[str, ...]:
        """The keys of the per-client rows ``[R, N, ...]`` (SCAFFOLD's ``c_i``), the fields of :meth:`client_init`'s
        NamedTuple: a client part is handed its rows as ``own`` and returns the new ones in ``ClientRun.keeps``."""
        return declared_state(type(self))[1]._fields

    def init(self, x0: Tensor, num_clients: int) -> State:
        """The state before the first round (see :meth:`Algorithm.init`): :meth:`server_init`'s fields and every
        client's rows of :meth:`client_init`'s, ``[R, N, ...]``; ``x0`` is copied once, here."""
        x = as_runs(x0).detach().clone()
        rows = {key: row.expand(-1, num_clients, *row.shape[2:]).clone() for key, row in client_start(self, x).items()}
        return {**server_start(self, x), **rows}

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """The clients' part of a round from what the server ``sent`` (:attr:`client_reads`) and their ``own`` rows
        (:attr:`client_state`): a ``ClientRun`` with what they upload and keep (``run.sending(uploads, keeps)``)."""
        raise NotImplementedError(f"{type(self).__name__} must define client_run(sent, batch, oracle, own)")

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """The server's part: the new state from ``run.X`` and ``run.uploads``, and the round's other metrics."""
        raise NotImplementedError(f"{type(self).__name__} must define server_round(state, run, batch)")

    def prologue(self, state: State) -> str | None:
        """Whom a first exchange before this round visits (one of :data:`fedcore.contract_checks.PROLOGUE_CLIENTS`),
        or None (the default: no prologue)."""
        return None

    def client_prologue(self, sent: State, batch: RoundBatch, oracle: GradientOracle,
                        own: State) -> tuple[State, State]:
        """A prologue's clients' part: ``(uploads, keeps)``."""
        raise NotImplementedError(f"{type(self).__name__} has a prologue but no client_prologue")

    def server_prologue(self, state: State, uploads: State, batch: RoundBatch) -> State:
        """A prologue's server part: the state the round starts from."""
        raise NotImplementedError(f"{type(self).__name__} has a prologue but no server_prologue")

    def eval_point(self, state: State) -> Tensor:
        """The point a run is evaluated at (default: the server model ``state["x"]``)."""
        return state["x"]

    def check_run(self, clients_per_round: int, local_steps: int, rounds: int | None) -> None:
        """Raise ``ValueError`` for a run whose S, K or T this configuration was not built for (PAdaMFed's theorem
        step sizes); ``rounds`` None: a round driven by hand, whose horizon is not known.  Default: any run."""

    def not_distributable(self) -> str | None:
        """Why this configuration cannot run with its clients' state on the clients (Flower), or None."""
        return None

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        """One round, the framework's (:func:`federated_round`); a family does not define it."""
        self.check_run(batch.clients_per_round, batch.local_steps, None)
        return federated_round(self, state, batch, oracle)


class RoundOnly(Federated):
    """The contract's view of a plain algorithm (``init`` and ``round``): its own ``round``, and its ``eval_point`` or
    ``check_run`` where it defines them, the defaults otherwise.  It cannot run on Flower: nothing splits its round."""

    def __init__(self, algorithm: Any) -> None:
        self.algorithm = algorithm
        self.name = name_of(algorithm)

    def init(self, x0: Tensor, num_clients: int) -> State:
        return self.algorithm.init(x0, num_clients)

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        return self.algorithm.round(state, batch, oracle)

    def eval_point(self, state: State) -> Tensor:
        own = getattr(self.algorithm, "eval_point", None)
        return own(state) if callable(own) else state["x"]  # checked where it is used (engine.loop.measure)

    def check_run(self, clients_per_round: int, local_steps: int, rounds: int | None) -> None:
        own = getattr(self.algorithm, "check_run", None)
        if callable(own):
            own(clients_per_round=clients_per_round, local_steps=local_steps, rounds=rounds)

    def not_distributable(self) -> str | None:
        return "it has no client_run or server_round (its round is one function: subclass Federated)"


def server_start(family: Federated, x: Tensor) -> State:
    """The server's state before the first round from the model ``x [R, 1, d]``: ``server_init``'s fields (those None
    left out), checked; a simulation adds the clients' rows (:meth:`Federated.init`), Flower's server holds it alone."""
    server = returned(family, "server_init(x)", family.server_init(x), server="server")
    return {key: value for key, value in server._asdict().items() if value is not None}


def client_start(family: Federated, x: Tensor) -> State:
    """A client's own state before it first takes part from the model ``x [R, 1, d]``: ``client_init``'s rows
    ``[R, 1, ...]``, checked; a simulation repeats them for every client, a Flower node starts from them."""
    return returned(family, "client_init(x)", family.client_init(x), client="client")._asdict()


def declared(algorithm: Any) -> Federated:
    """``algorithm`` as the contract sees it: a :class:`Federated` family as it is, a plain algorithm through
    :class:`RoundOnly`; anything else is refused, naming what it lacks.  A family is refused (:func:`checked_family`)
    where the framework could not run it alike in :func:`fedcore.simulate` and on Flower."""
    if isinstance(algorithm, RoundOnly):
        return algorithm
    if isinstance(algorithm, Federated):
        return checked_family(algorithm, Federated)
    if not callable(getattr(algorithm, "round", None)) or not callable(getattr(algorithm, "init", None)):
        raise TypeError(f"algorithm={algorithm!r:.80} needs init(x0, num_clients) and round(state, batch, oracle) "
                        "(fedcore.algorithms.Algorithm), or to subclass fedcore.algorithms.Federated; build one with "
                        "fedcore.algorithms.make")
    return RoundOnly(algorithm)


# ---- the framework's round ---------------------------------------------------------------------------------------


def federated_round(algorithm: Federated, state: State, batch: RoundBatch,
                    oracle: GradientOracle) -> tuple[State, Metrics]:
    """One round of a family (:mod:`fedcore.flower` runs the same parts on an engine): the prologue when one is due,
    the clients' part on what the server sent (``client_reads``) and their own rows ``[R, S, ...]`` (``client_state``),
    what they keep written back (:meth:`RoundBatch.write_rows`: undone if the run diverges), the server's part."""
    state = run_prologue(algorithm, state, batch, oracle)
    run = client_part(algorithm, sent(algorithm, state), batch, oracle, own_rows(algorithm, state, batch))
    return server_part(algorithm, kept(algorithm, state, batch, run.keeps), run, batch)


def client_part(algorithm: Federated, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
    """The family's ``client_run``, its result checked (:func:`returned`): ``keeps`` rows of its ``client_state``."""
    return returned(algorithm, "client_run(sent, batch, oracle, own)", algorithm.client_run(sent, batch, oracle, own),
                    run="run")


def client_prologue_part(algorithm: Federated, sent: State, batch: RoundBatch, oracle: GradientOracle,
                         own: State) -> tuple[State, State]:
    """The family's ``client_prologue``, its result checked: ``(uploads, keeps)``, ``keeps`` rows of its state."""
    return returned(algorithm, "client_prologue(sent, batch, oracle, own)",
                    algorithm.client_prologue(sent, batch, oracle, own), uploads="uploads", keeps="keeps")


def server_part(algorithm: Federated, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
    """The family's server part and the round's training loss ``sum_i w_i mean_k loss_i,k`` (each client's mean
    minibatch loss over its local steps, weighted), the first metric of every round."""
    new_state, metrics = returned(algorithm, "server_round(state, run, batch)",
                                  algorithm.server_round(server_view(algorithm, state), run, batch),
                                  new_state="family state", metrics="metrics")
    if "train_loss" in metrics:
        raise ValueError(f"{name_of(algorithm)}'s server_round returned a metric 'train_loss', which the framework "
                         "computes (the clients' mean losses, weighted): return the round's other metrics only")
    return with_rows(algorithm, state, new_state), {"train_loss": batch.weights @ run.mean_loss, **metrics}


def run_prologue(algorithm: Federated, state: State, batch: RoundBatch, oracle: GradientOracle | None = None,
                 clients: Callable[[RoundBatch, State], State] | None = None) -> State:
    """The exchange a family may need before a round's local steps (``algorithm.prologue(state)`` names whom it
    visits, or None): its clients' part on the round's sampled clients or on every client
    (:meth:`RoundBatch.every_client`), then its server's part on what they upload; the state after it.  ``clients``
    (None: in this process, with ``oracle``) runs the clients' part elsewhere: called with the batch and what the
    server sends, it returns the clients' uploads ``[R, S, ...]`` and keeps their rows where they live
    (:class:`fedcore.flower.FedcoreStrategy` sends them to the nodes)."""
    which = returned(algorithm, "prologue(state)", algorithm.prologue(state), whom="whom")
    if which is None:
        return state
    first = batch if which == "sampled" else batch.every_client()
    if clients is None:
        uploads, keeps = client_prologue_part(algorithm, sent(algorithm, state), first, oracle,
                                              own_rows(algorithm, state, first))
        state = kept(algorithm, state, first, keeps)
    else:
        uploads = clients(first, sent(algorithm, state))
    started = returned(algorithm, "server_prologue(state, uploads, batch)",
                       algorithm.server_prologue(server_view(algorithm, state), uploads, first), state="family state")
    state = with_rows(algorithm, state, started)
    if first is not batch:  # its writes are undone with the round's
        batch.written.extend(first.written)
    return state


def sent(algorithm: Federated, state: State) -> State:
    """What the server sends the clients: the state's keys the family declares it reads (``client_reads``)."""
    return Handed({key: state[key] for key in held(algorithm, state, "client_reads")}, algorithm, "client")


def with_rows(algorithm: Federated, state: State, new_state: State) -> State:
    """The server's ``new_state`` with the clients' rows of ``state``, unless it wrote them (PAdaMFed's first_round)."""
    return {**{key: state[key] for key in algorithm.client_state if key in state}, **new_state}


def server_view(algorithm: Federated, state: State) -> State:
    """The state without the clients' own rows (``client_state``), which live on the clients."""
    own = algorithm.client_state
    return Handed({key: value for key, value in state.items() if key not in own}, algorithm, "server")


def own_rows(algorithm: Federated, state: State, batch: RoundBatch) -> State:
    """The batch's clients' rows of the family's per-client state."""
    return {key: batch.rows_of(state[key]) for key in algorithm.client_state}  # init built them; with_rows keeps them


def kept(algorithm: Federated, state: State, batch: RoundBatch, keeps: State) -> State:
    """``state`` with the batch's clients' rows replaced by what they keep."""
    return {**state, **{key: batch.write_rows(state[key], keeps[key])
                        for key in algorithm.client_state if key in keeps}}
