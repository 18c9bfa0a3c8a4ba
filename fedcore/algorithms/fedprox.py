"""FedProx (Li et al., *Federated Optimization in Heterogeneous Networks*, MLSys 2020).

Each client approximately minimizes ``F_i(w) + mu/2 ||w - x_t||^2`` with K SGD steps,
whose gradient is ``g_i(w) + mu (w - x_t)``; everything else is FedAvg.  So FedProx is
:class:`~fedcore.algorithms.fedopt.FedOpt` with one proximal correction, and ``mu = 0`` is FedAvg.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.client import ClientRule, add
from fedcore.algorithms.fedopt import FedOpt, server_learning_rate
from fedcore.checks import check_range
from fedcore.schedules import Schedule


@dataclass(frozen=True)
class Proximal:
    """The proximal term ``mu (w - x_t)``: the gradient of ``mu/2 ||w - x_t||^2``."""

    mu: float = 0.01

    def __post_init__(self) -> None:
        check_range("mu", self.mu, 0)

    def rule(self, x: Tensor) -> ClientRule:
        mu = self.mu
        return add(lambda step: mu * (step.X - x))


def fedprox(client_lr: float | Schedule, *, mu: float = 0.01, server_lr: float = 1.0) -> FedOpt:
    """FedProx with server SGD at ``server_lr`` (1 in the paper): FedOpt with :class:`Proximal` clients."""
    return FedOpt(client_lr, server_opt.sgd(server_learning_rate(server_lr)), "FedProx", Proximal(mu))
