"""The round skeleton every algorithm shares.

An algorithm (:class:`Algorithm`) is a small frozen dataclass of hyperparameters with

- ``init(x0, num_clients) -> state``: a dict of tensors (checkpoints with ``torch.save``);
- ``round(state, batch, oracle) -> (state, metrics)``: one communication round;
- optionally ``eval_point(state) -> x``: the point the simulator evaluates (default ``state["x"]``).

The simulator hands it a :class:`RoundBatch` (the sampled clients, their aggregation
weights and their minibatches ``[S, K, B, ...]``) and the gradient oracle; algorithms
never see data sets, models or the simulator.  The client side of a round is
:func:`fedcore.algorithms.client.local_steps` with a client rule; the server side is a
server optimizer fed by :func:`server_step`.

Every algorithm runs R independent runs at once (R = 1 for one run; :mod:`fedcore.engine.passes` for more): the
server model is ``x [R, 1, d]``, the clients' models ``X [R, S, d]``, per-client state ``[R, N, d]``, and a
hyperparameter is a number or a tensor ``[R, 1, 1]`` of one value per run.  All of them broadcast against
each other, so an algorithm's lines read as the paper's, for one run or for many.  Here: the protocol, the
batch, the client learning-rate schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import Tensor

from fedcore.checks import check_int, check_positive, check_range
from fedcore.params import GradientOracle

if TYPE_CHECKING:
    from fedcore.algorithms.client import ClientRun
    from fedcore.server_opt import ServerOptimizer

State = dict[str, Tensor]
Metrics = dict[str, float]
Schedule = Callable[[int], float]


@dataclass(frozen=True)
class RoundBatch:
    """What one round of an algorithm is handed by the simulator, for a pass of R runs (R = 1 for one run).

    ``t`` is the 0-based round; ``clients [R, S]`` each run's sampled client ids; ``weights [R, 1, S]``
    the aggregation weights (each run's sum to 1: ``n_i / sum n_j`` or uniform), shaped so that
    ``weights @ M`` is each run's weighted sum over its clients of ``M [R, S, ...]``; ``num_clients`` is N.
    The minibatches of the K local steps are the rows ``rows [R, S, K, B]`` of the resident
    ``pool_inputs``/``pool_targets``; :meth:`step` gathers step k's ``[R*S, B, ...]`` (the oracle's
    layout, run by run) just before it is used, and ``inputs [R*S, K, B, ...]``/``targets`` gather all K.
    Build one from minibatches already gathered with :meth:`of`.  When ``trace`` is a list, the algorithm
    appends the clients' models ``[R, S, d]`` after each local step (:meth:`record`).

    ``sizes [N]`` (when the simulator gives it) is every client's number of samples, its rows of the pool
    ``offsets[i] : offsets[i] + sizes[i]`` in client order: what an algorithm that visits every client reads
    (:func:`every_client_gradient`).

    Per-client state (SCAFFOLD's ``c_i``, one ``[R, N, d]`` matrix) is read with :meth:`rows_of` and written
    in place, the S sampled rows only, with :meth:`write_rows`, which keeps the rows it overwrote so that the
    simulator can take a diverged run back to the round before (:meth:`undo`).
    """

    t: int
    clients: Tensor
    weights: Tensor
    rows: Tensor
    pool_inputs: Tensor
    pool_targets: Tensor
    num_clients: int
    trace: list[Tensor] | None = None
    sizes: Tensor | None = None
    written: list[tuple[Tensor, Tensor, Tensor]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.clients.dim() == 1:  # one run: [S] -> [1, S]
            object.__setattr__(self, "clients", self.clients.unsqueeze(0))
            object.__setattr__(self, "rows", self.rows.unsqueeze(0))
        R, S = self.clients.shape
        object.__setattr__(self, "weights", self.weights.reshape(R, 1, S))

    @classmethod
    def of(
        cls, t: int, clients: Tensor, weights: Tensor, inputs: Tensor, targets: Tensor, num_clients: int,
        trace: list[Tensor] | None = None,
    ) -> RoundBatch:
        """A batch from minibatches ``inputs [S, K, B, ...]``, ``targets [S, K, B, ...]`` of one run (clients
        ``[S]``), or ``[R, S, K, B, ...]`` of R runs (clients ``[R, S]``)."""
        lead = clients.dim() + 2  # the [(R,) S, K, B] dimensions
        shape = targets.shape[:lead]
        rows = torch.arange(shape.numel(), device=targets.device).view(shape)
        return cls(t, clients, weights, rows, inputs.flatten(0, lead - 1), targets.flatten(0, lead - 1),
                   num_clients, trace)

    @property
    def runs(self) -> int:
        """R, the runs of the pass."""
        return self.clients.shape[0]

    @property
    def clients_per_round(self) -> int:
        """S, the clients each run samples."""
        return self.clients.shape[1]

    @property
    def local_steps(self) -> int:
        return self.rows.shape[2]

    @property
    def inputs(self) -> Tensor:
        return self._gather(self.pool_inputs, self.rows.flatten(0, 1))

    @property
    def targets(self) -> Tensor:
        return self._gather(self.pool_targets, self.rows.flatten(0, 1))

    def step(self, k: int) -> tuple[Tensor, Tensor]:
        """The minibatches ``([R*S, B, ...], [R*S, B, ...])`` of local step ``k``."""
        rows = self.rows[:, :, k].flatten(0, 1)
        return self._gather(self.pool_inputs, rows), self._gather(self.pool_targets, rows)

    def record(self, X: Tensor) -> None:
        """Append the clients' models after a local step to ``trace`` (when it is a list)."""
        if self.trace is not None:
            self.trace.append(X.detach().clone())

    def rows_of(self, matrix: Tensor) -> Tensor:
        """The sampled clients' rows ``[R, S, d]`` of a per-client matrix ``[R, N, d]`` (a copy)."""
        return matrix[self._run_index, self.clients]

    def write_rows(self, matrix: Tensor, rows: Tensor) -> Tensor:
        """``matrix[r, clients[r]] <- rows[r]`` in place (O(S d), not a copy of the ``[R, N, d]`` matrix);
        the rows it overwrites are kept for :meth:`undo`.  Returns ``matrix``."""
        self.written.append((matrix, self.clients, self.rows_of(matrix)))
        matrix[self._run_index, self.clients] = rows.to(matrix.dtype)
        return matrix

    def every_client(self) -> RoundBatch:
        """The batch of a step that visits all N clients (PAdaMFed's line 1): ``clients [R, N]`` in order, uniform
        weights, no minibatch rows (``local_steps`` 0), the same pool and sizes; its :meth:`write_rows` writes
        every row of a per-client matrix (and keeps them for :meth:`undo` in this batch's own list)."""
        R, N = self.runs, self.num_clients
        clients = torch.arange(N, device=self.clients.device).expand(R, N)
        weights = self.weights.new_full((R, 1, N), 1 / N)
        rows = self.rows.new_zeros(R, N, 0, 0)
        return RoundBatch(self.t, clients, weights, rows, self.pool_inputs, self.pool_targets, N, sizes=self.sizes)

    def undo(self, runs: Tensor) -> None:
        """Put back the rows :meth:`write_rows` overwrote, for the runs ``runs`` (indices into the pass)."""
        for matrix, clients, old in reversed(self.written):
            matrix[runs.unsqueeze(1), clients[runs]] = old[runs]

    @property
    def _run_index(self) -> Tensor:
        return torch.arange(self.runs, device=self.clients.device).unsqueeze(1)

    @staticmethod
    def _gather(pool: Tensor, rows: Tensor) -> Tensor:
        return pool.index_select(0, rows.reshape(-1)).view(*rows.shape, *pool.shape[1:])


def as_runs(x: Tensor) -> Tensor:
    """A model as an algorithm's state holds it: ``[R, 1, d]`` (one row per run); a vector ``[d]`` is one run."""
    return x.reshape(1, 1, -1) if x.dim() == 1 else x


def per_run_scalar(x: Tensor, value: float) -> Tensor:
    """A number per run, ``[R, 1, 1]`` beside ``x [R, 1, d]`` (broadcasts against ``x`` and ``X [R, S, d]``)."""
    return x.new_full((*x.shape[:-1], 1), value)


@dataclass(frozen=True)
class constant:  # noqa: N801 (a schedule reads as a function: constant(0.1)(t))
    """``eta_l(t) = lr``.  Schedules are small frozen dataclasses, so a run's identity compares
    their fields (a checkpoint resumes only into the same schedule)."""

    lr: float

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)

    def __call__(self, t: int) -> float:
        return self.lr


@dataclass(frozen=True)
class exp_decay:  # noqa: N801
    """Reddi et al.'s ExpDecay of the client learning rate: ``eta_l(t) = lr * factor^(t // every)``."""

    lr: float
    factor: float = 0.1
    every: int = 500

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("factor", self.factor, 0, 1, low_closed=False, high_closed=True)
        check_int("every", self.every)

    def __call__(self, t: int) -> float:
        return self.lr * self.factor ** (t // self.every)


def schedule_at(
    name: str, schedule: float | Schedule, t: int, unit: str = "round",
    check: Callable[[str, Any], float] = check_positive,
) -> float:
    """The value of ``schedule`` (a number, or a function of ``t``) at ``t``, checked by ``check``
    (default: a finite number > 0).  Algorithms call it at ``t = 0`` when they are built, so a
    negative, zero or non-finite step is refused before a run starts, and at every ``t`` they use,
    so a schedule that goes bad later names the ``unit`` (round or step) where it did."""
    if not callable(schedule):
        return check(name, schedule)
    try:
        value = schedule(t)
    except Exception as error:  # noqa: BLE001 -- a user's function failing is reported as theirs
        raise TypeError(f"{name}={schedule!r} must be a number or a function of the {unit} t; calling it at "
                        f"t={t} raised {type(error).__name__}: {error}") from None
    try:
        return check(name, value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}={schedule!r} gives {value!r} at {unit} {t}: {error}") from None


def round_gradient(x: Tensor, batch: RoundBatch, oracle: GradientOracle) -> Tensor:
    """Each sampled client's gradient at the server model ``x [R, 1, d]`` on all K*B samples of its round
    ``[R, S, d]`` (the mean loss over them): SCAFFOLD's option I, FAFED's ``m_0`` and ``v_0``, PAdaMFed's
    ``c_i^{-1}``."""
    inputs, targets = batch.inputs.flatten(1, 2), batch.targets.flatten(1, 2)
    X = x.expand(-1, batch.clients_per_round, -1)
    return oracle(X.reshape(-1, X.shape[-1]), inputs, targets)[1].view(X.shape)


def every_client_gradient(x: Tensor, batch: RoundBatch, oracle: GradientOracle, group: int = 64,
                          clients: Tensor | None = None) -> Tensor:
    """Each client's gradient at the server model ``x [R, 1, d]`` on all its samples (the mean loss over them),
    ``[R, C, d]`` for ``clients`` (the ids, the same in every run; None: all N, ``[R, N, d]``): PAdaMFed's line 1.
    Client i's samples are the rows ``offsets[i] : offsets[i] + sizes[i]`` of the pool (``batch.sizes``, which the
    simulator gives); clients of one size go through the oracle together, at most ``group`` at a time."""
    if batch.sizes is None:
        raise ValueError("batch.sizes is None: this round's batch does not say where each client's samples are; "
                         "fedcore.simulate gives it, a batch built by hand needs sizes=data.sizes")
    sizes = batch.sizes.to(batch.rows.device)
    if sizes.numel() != batch.num_clients:
        raise ValueError(f"batch.sizes has {sizes.numel()} clients, the batch num_clients={batch.num_clients}")
    offsets = torch.cumsum(sizes, 0) - sizes
    ids = torch.arange(batch.num_clients, device=sizes.device) if clients is None else clients.to(sizes.device)
    R, d = x.shape[0], x.shape[-1]
    gradients = x.new_zeros(R, len(ids), d)
    for size in sizes[ids].unique().tolist():
        positions = (sizes[ids] == size).nonzero().flatten()
        for chunk in positions.split(check_int("group", group)):
            rows = (offsets[ids[chunk]].view(-1, 1) + torch.arange(size, device=sizes.device)).repeat(R, 1)
            inputs, targets = batch._gather(batch.pool_inputs, rows), batch._gather(batch.pool_targets, rows)
            X = x.expand(R, len(chunk), d).reshape(-1, d)
            gradients[:, chunk] = oracle(X, inputs, targets)[1].view(R, len(chunk), d)
    return gradients


def server_step(
    server: ServerOptimizer, server_state: State, x: Tensor, run: ClientRun, batch: RoundBatch,
) -> tuple[Tensor, State]:
    """``x_{t+1} = x_t + step``, the step from the server optimizer on the pseudo-gradient
    ``Delta_t = sum_i w_i (x_i,K - x_t)`` (the weighted direction the clients moved; ``[R, 1, d]``, one per
    run).  The server rule also sees ``x``, each client's move ``[R, S, d]``, their mean losses ``[R, S, 1]``
    and their weights ``[R, 1, S]`` (FedExP and FedLi-LU read them; the FedOpt rules ignore them).  Returns
    ``(x_{t+1}, state)``."""
    moves = run.X - x
    delta = batch.weights @ moves
    step, server_state = server.update(
        delta, server_state, x=x, client_moves=moves, client_losses=run.mean_loss, weights=batch.weights,
    )
    return x + step, server_state


def federated_round(algorithm: Any, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
    """One round of an algorithm written as its clients' part and its server's part, the way :func:`fedcore.simulate`
    runs it and the way :mod:`fedcore.flower` runs it on an engine, where the two parts live in different processes:

        state = run_prologue(algorithm, state, batch, oracle)      # when the algorithm has one due (FAFED, PAdaMFed)
        run = algorithm.client_run(state, batch, oracle, own)      # the clients: what the server sent, their own rows
        state = algorithm.server_round(state, run, batch)           # the server: run.X, run.loss_sum, run.records

    ``own`` are the sampled clients' rows ``[R, S, ...]`` of the per-client state (``algorithm.client_state``, the
    keys of ``[R, N, ...]`` matrices in ``state``: SCAFFOLD's ``c_i``); what a client part returns in ``keeps``
    replaces its rows (:meth:`RoundBatch.write_rows`, so a diverged run can be undone), and the server parts read
    only ``records``: what a client uploads.  On an engine the rows stay on the clients' nodes."""
    state = run_prologue(algorithm, state, batch, oracle)
    run = algorithm.client_run(state, batch, oracle, _own(algorithm, state, batch))
    state = _kept(algorithm, state, batch, run.keeps)
    return algorithm.server_round(state, run, batch)


def run_prologue(algorithm: Any, state: State, batch: RoundBatch, oracle: GradientOracle) -> State:
    """The exchange an algorithm may need before a round's local steps (``algorithm.prologue(state)`` names whom it
    visits, :data:`PROLOGUE_CLIENTS`, or None): its clients' part on the round's sampled clients or on every client
    (:meth:`RoundBatch.every_client`), then its server's part on what they upload:

        records, keeps = algorithm.client_prologue(state, batch, oracle, own)
        state = algorithm.server_prologue(state, records, batch)

    The state after it (unchanged when no prologue is due)."""
    first = prologue_batch(algorithm, state, batch)
    if first is None:
        return state
    records, keeps = algorithm.client_prologue(state, first, oracle, _own(algorithm, state, first))
    state = algorithm.server_prologue(_kept(algorithm, state, first, keeps), records, first)
    if first is not batch:  # its writes are undone with the round's
        batch.written.extend(first.written)
    return state


def prologue_batch(algorithm: Any, state: State, batch: RoundBatch) -> RoundBatch | None:
    """The batch an algorithm's prologue visits before this round (``algorithm.prologue(state)``: the round's sampled
    clients, or every client through :meth:`RoundBatch.every_client`), or None when none is due."""
    which = algorithm.prologue(state) if callable(getattr(algorithm, "prologue", None)) else None
    if which is None:
        return None
    return batch if which == "sampled" else batch.every_client()


def _own(algorithm: Any, state: State, batch: RoundBatch) -> State:
    """The batch's clients' rows of the algorithm's per-client state."""
    return {key: batch.rows_of(state[key]) for key in getattr(algorithm, "client_state", ())}


def _kept(algorithm: Any, state: State, batch: RoundBatch, keeps: State) -> State:
    """``state`` with the batch's clients' rows replaced by what they keep."""
    return {**state, **{key: batch.write_rows(state[key], keeps[key])
                        for key in getattr(algorithm, "client_state", ()) if key in keeps}}


PROLOGUE_CLIENTS = ("sampled", "every")
"""Whom an algorithm's prologue (a first exchange before a round's local steps) visits: the round's sampled clients
(FAFED's ``m_0``, ``v_0``) or every client (PAdaMFed's line 1)."""


class Algorithm(Protocol):
    """What :func:`fedcore.simulate` drives.  An algorithm may also define ``eval_point(state) -> x``,
    the point to evaluate (FedExP evaluates the mean of its last two iterates); without it the
    simulator evaluates ``state["x"]``.  An algorithm whose round is a clients' part and a server's part
    (``client_run``, ``server_round``, ``client_state``; :func:`federated_round`) also runs on Flower's engine
    (:mod:`fedcore.flower`).  One whose hyperparameters were computed for a run's settings (PAdaMFed's
    theorem step sizes for S, K, T) defines ``check_run(clients_per_round=, local_steps=, rounds=)``, which
    raises ``ValueError`` for another run; the simulator calls it before any work."""

    name: str

    def init(self, x0: Tensor, num_clients: int) -> State:
        """The state before the first round (tensors only: it checkpoints with ``torch.save``).  ``x0`` is
        ``[R, 1, d]`` (or ``[d]``, one run); every per-run tensor of the state leads with R (the model
        ``[R, 1, d]``, per-client matrices ``[R, N, d]``, numbers ``[R, 1, 1]``), a 0-d tensor is shared by
        the runs of a pass (a round counter)."""
        ...

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        """One communication round: the new state and the round's metrics (``train_loss``), each a number or
        a tensor of R numbers (one per run)."""
        ...
