"""SCAFFOLD (Karimireddy et al., *Stochastic Controlled Averaging for FL*, ICML 2020, Alg. 1).

Clients correct their drift with control variates: for K steps
``y_i <- y_i - eta_l (g_i(y_i) - c_i + c)``; then

    option II (default)  c_i+ = c_i - c + (x - y_i) / (K eta_l)
    option I             c_i+ = grad f_i(x)   (here: on all K*B samples of the round)

and the server takes ``x <- x + eta_g Delta_t`` (any server optimizer) and
``c <- c + (S/N) mean_i (c_i+ - c_i)``.  ``Delta_t`` uses the simulator's aggregation
weights (uniform in the paper, the default ``weighting`` of ``simulate`` is by samples).
With ``c = c_i = 0`` the first round is exactly FedAvg's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.base import (
    Metrics,
    RoundBatch,
    Schedule,
    State,
    as_runs,
    round_gradient,
    schedule_at,
    server_step,
)
from fedcore.algorithms.client import add, chain, learning_rate, local_steps
from fedcore.algorithms.fedopt import server_learning_rate
from fedcore.checks import check_choice
from fedcore.params import GradientOracle
from fedcore.server_opt import ServerOptimizer


def control_variates(x0: Tensor, num_clients: int) -> State:
    """``c = 0`` (server, ``[R, 1, d]``) and ``c_i = 0`` (one row per client, ``[R, N, d]``)."""
    x0 = as_runs(x0)
    return {"c": torch.zeros_like(x0), "c_i": x0.new_zeros(x0.shape[0], num_clients, x0.shape[-1])}


def refresh_control_variates(state: State, batch: RoundBatch, c_i_new: Tensor) -> State:
    """``c <- c + (1/N) sum_{i in S} (c_i+ - c_i)`` and the sampled rows ``c_i <- c_i+``, written in place
    (SCAFFOLD; PAdaMFed and SCAFFOLD-M keep the same bookkeeping)."""
    c_i_old = batch.rows_of(state["c_i"])
    num_clients = state["c_i"].shape[1]
    c = state["c"] + (c_i_new - c_i_old).sum(1, keepdim=True) / num_clients  # (S/N) mean_i (c_i+ - c_i)
    return {"c": c, "c_i": batch.write_rows(state["c_i"], c_i_new)}


@dataclass(frozen=True)
class Scaffold:
    """SCAFFOLD with control variates ``c`` (server) and ``c_i`` (one row per client);
    ``client_lr`` is ``eta_l`` (a float or a schedule), ``server`` steps on ``Delta_t`` (``eta_g``)."""

    client_lr: float | Schedule
    server: ServerOptimizer = field(default_factory=server_opt.sgd)
    name: str = "SCAFFOLD"
    option: str = "II"

    def __post_init__(self) -> None:
        schedule_at("client_lr", self.client_lr, 0)
        check_choice("option", self.option, ("I", "II"))

    def init(self, x0: Tensor, num_clients: int) -> State:
        x = as_runs(x0).detach().clone()
        return {"x": x, "server": self.server.init(x), **control_variates(x, num_clients)}

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        x, c, c_i = state["x"], state["c"], batch.rows_of(state["c_i"])
        eta_l, K = schedule_at("client_lr", self.client_lr, batch.t), batch.local_steps
        run = local_steps(x, batch, oracle, chain(add(c - c_i), learning_rate(eta_l)))  # y -= eta_l (g - c_i + c)
        if self.option == "II":
            c_i_new = c_i - c + (x - run.X) / (K * eta_l)
        else:
            c_i_new = round_gradient(x, batch, oracle)
        x_next, server = server_step(self.server, state["server"], x, run, batch)
        new_state = {**state, "x": x_next, "server": server, **refresh_control_variates(state, batch, c_i_new)}
        return new_state, {"train_loss": batch.weights @ run.mean_loss}


def scaffold(client_lr: float | Schedule, *, server_lr: float = 1.0, option: str = "II") -> Scaffold:
    """SCAFFOLD with server SGD at ``server_lr`` (``eta_g``) and control-variate ``option``."""
    return Scaffold(client_lr, server_opt.sgd(server_learning_rate(server_lr)), "SCAFFOLD", option)
