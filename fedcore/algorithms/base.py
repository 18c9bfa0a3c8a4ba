"""The round skeleton every algorithm shares.

An algorithm is a small frozen dataclass of hyperparameters with

- ``init(x0, num_clients) -> state``: a dict of tensors (checkpoints with ``torch.save``);
- ``round(state, batch, oracle) -> (state, metrics)``: one communication round.

The simulator hands it a :class:`RoundBatch` (the sampled clients, their aggregation
weights and their minibatches ``[S, K, B, ...]``) and the gradient oracle; algorithms
never see data sets, models or the simulator.  The shared pieces live here:
:func:`local_sgd` (K client steps on all S clients at once, as a matrix ``X [S, d]``),
:func:`pseudo_gradient` and the client learning-rate schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from fedcore.checks import check_positive, check_range
from fedcore.params import GradientOracle

State = dict[str, Tensor]
Metrics = dict[str, float]
Schedule = Callable[[int], float]
Correction = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class RoundBatch:
    """What one round of an algorithm is handed by the simulator.

    ``t`` is the 0-based round; ``clients [S]`` the sampled client ids; ``weights [S]``
    the aggregation weights (they sum to 1: ``n_i / sum n_j`` or uniform);
    ``num_clients`` is N.  The minibatches of the K local steps are the rows
    ``rows [S, K, B]`` of the resident ``pool_inputs``/``pool_targets``; :meth:`step`
    gathers step k's ``[S, B, ...]`` just before it is used (while it is in the cache),
    and ``inputs [S, K, B, ...]``/``targets [S, K, B, ...]`` gather all K at once.
    Build one from minibatches already gathered with :meth:`of`.  When ``trace`` is a
    list, the algorithm appends the clients' models ``[S, d]`` after each local step
    (:meth:`record`; the last one before averaging), for plots of client drift.
    """

    t: int
    clients: Tensor
    weights: Tensor
    rows: Tensor
    pool_inputs: Tensor
    pool_targets: Tensor
    num_clients: int
    trace: list[Tensor] | None = None

    @classmethod
    def of(
        cls, t: int, clients: Tensor, weights: Tensor, inputs: Tensor, targets: Tensor, num_clients: int,
        trace: list[Tensor] | None = None,
    ) -> RoundBatch:
        """A batch from minibatches ``inputs [S, K, B, ...]``, ``targets [S, K, B, ...]``."""
        S, K, B = targets.shape[:3]
        rows = torch.arange(S * K * B, device=targets.device).view(S, K, B)
        return cls(t, clients, weights, rows, inputs.flatten(0, 2), targets.flatten(0, 2), num_clients, trace)

    @property
    def local_steps(self) -> int:
        return self.rows.shape[1]

    @property
    def inputs(self) -> Tensor:
        return self._gather(self.pool_inputs, self.rows)

    @property
    def targets(self) -> Tensor:
        return self._gather(self.pool_targets, self.rows)

    def step(self, k: int) -> tuple[Tensor, Tensor]:
        """The minibatches ``([S, B, ...], [S, B, ...])`` of local step ``k``."""
        rows = self.rows[:, k]
        return self._gather(self.pool_inputs, rows), self._gather(self.pool_targets, rows)

    def record(self, X: Tensor) -> None:
        """Append the clients' models after a local step to ``trace`` (when it is a list)."""
        if self.trace is not None:
            self.trace.append(X.detach().clone())

    @staticmethod
    def _gather(pool: Tensor, rows: Tensor) -> Tensor:
        return pool.index_select(0, rows.reshape(-1)).view(*rows.shape, *pool.shape[1:])


def constant(lr: float) -> Schedule:
    """``eta_l(t) = lr``."""
    check_positive("lr", lr)
    return lambda t: lr


def exp_decay(lr: float, factor: float = 0.1, every: int = 500) -> Schedule:
    """Reddi et al.'s ExpDecay of the client learning rate: ``eta_l(t) = lr * factor^(t // every)``."""
    check_positive("lr", lr)
    check_range("factor", factor, 0, 1, low_closed=False, high_closed=True)
    check_positive("every", every)
    return lambda t: lr * factor ** (t // every)


def as_schedule(name: str, lr: float | Schedule) -> Schedule:
    """A float becomes a constant schedule; a callable is taken as it is."""
    if callable(lr):
        return lr
    check_positive(name, lr)
    return constant(lr)


def with_rows(matrix: Tensor, clients: Tensor, rows: Tensor) -> Tensor:
    """A copy of the per-client matrix ``[N, d]`` whose rows ``clients`` are replaced by ``rows [S, d]``
    (SCAFFOLD's ``c_i``, the clients' ``v_i`` or previous models): state is never changed in place."""
    updated = matrix.clone()
    updated[clients] = rows
    return updated


def local_sgd(
    x: Tensor,
    batch: RoundBatch,
    oracle: GradientOracle,
    lr: float,
    correction: Correction | None = None,
) -> tuple[Tensor, Tensor]:
    """K steps of client SGD on all S clients from the server model ``x``.

    ``X <- X - eta_l (G(X) + correction(X))`` for k = 1..K, where ``G`` are the
    per-client minibatch gradients (FedProx's ``mu (X - x)`` and SCAFFOLD's
    ``c - c_i`` enter as ``correction``).  Returns ``(X_K [S, d], mean loss [S])``.
    """
    X = x.expand(batch.clients.numel(), -1).clone()
    losses = torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
    for k in range(batch.local_steps):
        loss, G = oracle(X, *batch.step(k))
        if correction is not None:
            G += correction(X)
        X.add_(G, alpha=-lr)
        losses += loss
        batch.record(X)
    return X, losses / batch.local_steps


def pseudo_gradient(x: Tensor, X: Tensor, weights: Tensor) -> Tensor:
    """``Delta_t = sum_i w_i (x_i,K - x_t)``: the weighted direction the clients moved."""
    return weights @ (X - x)
