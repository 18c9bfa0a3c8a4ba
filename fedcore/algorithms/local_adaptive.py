"""Naive local-adaptive FedAvg: the paper's Algorithm 1 in Wu et al., *Faster Adaptive Federated Learning* (AAAI 2023),
shown there (Theorem 1) to diverge.

Each client keeps its own Adam-style second moment and steps with it; the server averages the models every q steps and
nothing else:

    v_t,i = beta v_t-1,i + (1 - beta) g_t,i^2
    x_t+1,i = x_t,i - eta g_t,i / sqrt(v_t,i)        (averaged over i every q steps)

On heterogeneous clients every client's step has magnitude about ``eta / sqrt(1 - beta^t)`` whatever the size of its
gradient, so a client with a large gradient towards the optimum is outvoted by clients with small gradients away from it
(:mod:`fedcore.toy`).  Here for teaching; :mod:`fedcore.algorithms.fafed` is the fix.

Choices: ``v_0 = 0`` per client, kept across rounds (the clients' ``v`` are never averaged; a client's row is from the
last round it took part in); no epsilon, as in the paper, and a coordinate with ``v = 0`` (then also ``g = 0``) does not
move.  One fedcore round is one period of q = ``local_steps`` steps; the average uses the simulator's weights (uniform
in the paper).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRun, named, scale, scale_by_rms, train_clients
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.checks import check_positive, check_range
from fedcore.params import GradientOracle


class LocalAdaptiveClient(NamedTuple):
    """A client's own state: its second moment ``v_i`` (0 at first)."""

    v: Tensor


@dataclass(frozen=True)
class LocalAdaptive(Federated):
    """Algorithm 1 of Wu et al.: local Adam-style steps ``eta g / sqrt(v_i)``, models averaged."""

    lr: float
    beta: float = 0.5
    name: str = "LocalAdaptive"

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("beta", self.beta, 0, 1)

    def client_init(self, x: Tensor) -> LocalAdaptiveClient:
        return LocalAdaptiveClient(torch.zeros_like(x))

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Each client: q steps ``x_i <- x_i - eta g_i / sqrt(v_i)`` from the server model; it keeps ``v_i``."""
        rule = named(second_moment=scale_by_rms(self.beta, own["v"]), step=scale(self.lr))  # lines 6, 8/10
        run = train_clients(sent["x"], batch, oracle, rule)
        return run.sending(keeps={"v": run.state["second_moment"]})

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """The server averages the clients' models, nothing else (no server rule: a mean is not a step)."""
        return {**state, "x": batch.weights @ run.X}, {}


def local_adaptive(lr: float, *, beta: float = 0.5) -> LocalAdaptive:
    """Naive local-adaptive FedAvg (Wu et al., Algorithm 1), which can diverge (their Theorem 1)."""
    return LocalAdaptive(lr, beta)
