"""What a round is handed: :class:`RoundBatch` (the sampled clients, their weights, their minibatch rows), and the
gradients over a round's or a client's samples that some algorithms take besides the local steps.

Every algorithm runs R independent runs at once (R = 1 for one run; :mod:`fedcore.engine.passes` for more): the
server model is ``x [R, 1, d]``, the clients' models ``X [R, S, d]``, per-client state ``[R, N, d]``, and a
hyperparameter is a number or a tensor ``[R, 1, 1]`` of one value per run.  All of them broadcast against
each other, so an algorithm's lines read as the paper's, for one run or for many.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from fedcore.checks import check_int
from fedcore.params import GradientOracle


@dataclass(frozen=True)
class RoundBatch:
    """What one round of an algorithm is handed by the simulator, for a pass of R runs (R = 1 for one run):
    ``t`` the 0-based round, ``clients [R, S]`` each run's sampled client ids, ``weights [R, 1, S]`` the aggregation
    weights (each run's sum to 1: ``n_i / sum n_j`` or uniform; ``weights @ M`` is each run's weighted sum over its
    clients of ``M [R, S, ...]``), ``num_clients`` N.  The K local steps' minibatches are the rows
    ``rows [R, S, K, B]`` of the resident ``pool_inputs``/``pool_targets``: :meth:`step` gathers step k's
    ``[R*S, B, ...]`` (the oracle's layout) just before it is used, ``inputs``/``targets`` all K (:meth:`of` builds
    a batch from minibatches already gathered).  A list ``trace`` receives the clients' models ``[R, S, d]`` after
    each local step (:meth:`record`); ``sizes [N]`` (when given) are the clients' numbers of samples, client i's
    rows of the pool ``offsets[i] : offsets[i] + sizes[i]`` in client order (:func:`every_client_gradient`).

    Per-client state (SCAFFOLD's ``c_i``, one ``[R, N, d]`` matrix) is read with :meth:`rows_of` and written in
    place, the S sampled rows only, with :meth:`write_rows`, which keeps the rows it overwrote so that the simulator
    can take a diverged run back to the round before (:meth:`undo`).
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
    ``[R, C, d]`` for ``clients`` (the ids, the same in every run; None: all N): PAdaMFed's line 1.  Clients of one
    size (``batch.sizes``) go through the oracle together, at most ``group`` at a time."""
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
