"""SCAFFOLD (Karimireddy et al., *Stochastic Controlled Averaging for FL*, ICML 2020, Alg. 1).

Clients correct their drift with control variates: for K steps ``y_i <- y_i - eta_l (g_i(y_i) - c_i + c)``; then

    option II (default)  c_i+ = c_i - c + (x - y_i) / (K eta_l)
    option I             c_i+ = grad f_i(x)   (here: on all K*B samples of the round)

and the server takes ``x <- x + eta_g Delta_t`` (any server optimizer) and ``c <- c + (S/N) mean_i (c_i+ - c_i)``.
``Delta_t`` uses the simulator's aggregation weights (uniform in the paper, the default ``weighting`` of ``simulate`` is
by samples).  With ``c = c_i = 0`` the first round is exactly FedAvg's.

SCAFFOLD-M and SCAFFOLD-M-VR (Cheng, Huang, Wu & Yuan, *Momentum Benefits Non-IID Federated Learning Simply and
Provably*, ICLR 2024) add server momentum ``g`` to the corrected direction: PAdaMFed's Algorithm 1
(:mod:`fedcore.algorithms.padamfed`) without its normalization, with the plain step ``theta_i <- theta_i - eta g_i`` and
``eta, gamma, beta`` tuned by the user.  The slides give only their step-size conditions and Cheng et al.'s pseudo-code
was not reachable, so these are reconstructions.  In SCAFFOLD-M line 16 equals ``g_bar`` (the mean client direction,
with uniform weights).  With ``beta = 1``, ``gamma = eta K`` and ``initialization="zeros"`` SCAFFOLD-M is SCAFFOLD
option II at server learning rate 1 (both set ``c_i`` to the mean of the client's K gradients).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.batch import RoundBatch, round_gradient
from fedcore.algorithms.client import ClientRun, add, chain, learning_rate, train_clients
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.algorithms.fedopt import server_learning_rate
from fedcore.algorithms.padamfed import PAdaMFed
from fedcore.checks import check_choice
from fedcore.params import GradientOracle
from fedcore.schedules import Schedule, schedule_at
from fedcore.server_opt import ServerRule, server_step


def refresh_control_variates(c: Tensor, c_delta: Tensor, num_clients: int) -> Tensor:
    """``c + (1/N) sum_{i in S} (c_i+ - c_i)`` from the sampled clients' changes ``c_delta [R, S, d]``, which they
    upload (SCAFFOLD; PAdaMFed's line 15 and SCAFFOLD-M keep the same bookkeeping).  The clients keep ``c_i+``."""
    return c + c_delta.sum(1, keepdim=True) / num_clients  # (S/N) mean_i (c_i+ - c_i)


class ScaffoldServer(NamedTuple):
    """The server's state: the model, its rule's state and the control variate ``c`` (``0`` at first)."""

    x: Tensor
    server: State
    c: Tensor


class ScaffoldClient(NamedTuple):
    """A client's own state: its control variate ``c_i`` (``0`` at first)."""

    c_i: Tensor


@dataclass(frozen=True)
class Scaffold(Federated):
    """SCAFFOLD with control variates ``c`` (server) and ``c_i`` (one row per client);
    ``client_lr`` is ``eta_l`` (a float or a schedule), ``server`` steps on ``Delta_t`` (``eta_g``)."""

    client_lr: float | Schedule
    server: ServerRule = field(default_factory=server_opt.sgd)
    name: str = "SCAFFOLD"
    option: str = "II"

    def __post_init__(self) -> None:
        schedule_at("client_lr", self.client_lr, 0)
        check_choice("option", self.option, ("I", "II"))

    def server_init(self, x: Tensor) -> ScaffoldServer:
        return ScaffoldServer(x, self.server.init(x), torch.zeros_like(x))

    def client_init(self, x: Tensor) -> ScaffoldClient:
        return ScaffoldClient(torch.zeros_like(x))

    client_reads = ("x", "c")

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Each client: ``y <- y - eta_l (g(y) - c_i + c)`` K times, then ``c_i+`` (option II or I); it keeps
        ``c_i+`` and uploads ``y_K`` and ``c_i+ - c_i``."""
        x, c, c_i = sent["x"], sent["c"], own["c_i"]
        eta_l, K = schedule_at("client_lr", self.client_lr, batch.t), batch.local_steps
        run = train_clients(x, batch, oracle, chain(add(c - c_i), learning_rate(eta_l)))  # y -= eta_l (g - c_i + c)
        if self.option == "II":
            c_i_new = c_i - c + (x - run.X) / (K * eta_l)
        else:
            c_i_new = round_gradient(x, batch, oracle)
        return run.sending(uploads={"c_delta": c_i_new - c_i}, keeps={"c_i": c_i_new})

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """``x <- x + server(Delta_t)``, ``c <- c + (1/N) sum_i (c_i+ - c_i)``."""
        x_next, server = server_step(self.server, state["server"], state["x"], run, batch)
        c = refresh_control_variates(state["c"], run.uploads["c_delta"], batch.num_clients)
        return {**state, "x": x_next, "server": server, "c": c}, {}


def scaffold(client_lr: float | Schedule, *, server_lr: float = 1.0, option: str = "II") -> Scaffold:
    """SCAFFOLD with server SGD at ``server_lr`` (``eta_g``) and control-variate ``option``."""
    return Scaffold(client_lr, server_opt.sgd(server_learning_rate(server_lr)), "SCAFFOLD", option)


def scaffold_m(*, eta: float, gamma: float, beta: float, initialization: str = "every_client") -> PAdaMFed:
    """SCAFFOLD-M (Cheng et al., ICLR 2024; reconstructed): ``theta_i <- theta_i - eta (beta (grad - c_i + c) + (1 -
    beta) g)``, ``theta <- theta - gamma g_bar``; ``initialization="zeros"`` starts as SCAFFOLD.  Run it with
    ``weighting="uniform"`` (others warn)."""
    return PAdaMFed(eta, gamma, beta, normalized=False, initialization=initialization, name="SCAFFOLD-M")


def scaffold_m_vr(*, eta: float, gamma: float, beta: float, initialization: str = "every_client",
                  server_momentum: str = "line16") -> PAdaMFed:
    """SCAFFOLD-M-VR (Cheng et al., ICLR 2024; reconstructed): SCAFFOLD-M's plain step on the STORM direction;
    ``server_momentum`` as :func:`~fedcore.algorithms.padamfed.padamfed_vr`'s; uniform weights (others warn)."""
    return PAdaMFed(eta, gamma, beta, normalized=False, variance_reduction=True, initialization=initialization,
                    server_momentum=server_momentum, name="SCAFFOLD-M-VR")
