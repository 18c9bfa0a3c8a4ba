"""FedProx (Li et al., *Federated Optimization in Heterogeneous Networks*, MLSys 2020).

Each client approximately minimizes ``F_i(w) + mu/2 ||w - x_t||^2`` with K SGD steps,
whose gradient is ``g_i(w) + mu (w - x_t)``; everything else is FedAvg.  So FedProx
is FedOpt with one proximal term added to the client gradient, and ``mu = 0`` is FedAvg.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedcore import server_opt
from fedcore.algorithms.base import Correction, RoundBatch, Schedule, State
from fedcore.algorithms.fedopt import FedOpt
from fedcore.checks import check_range


@dataclass(frozen=True)
class FedProx(FedOpt):
    """FedOpt whose clients add the proximal gradient ``mu (w - x_t)``."""

    mu: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        check_range("mu", self.mu, 0)

    def client_correction(self, state: State, batch: RoundBatch) -> Correction:
        x, mu = state["x"], self.mu
        return lambda X: mu * (X - x)  # grad of mu/2 ||w - x_t||^2


def fedprox(client_lr: float | Schedule, mu: float = 0.01, server_lr: float = 1.0) -> FedProx:
    """FedProx with server SGD at ``server_lr`` (1 in the paper)."""
    return FedProx(client_lr, server_opt.sgd(server_lr), "FedProx", mu)
