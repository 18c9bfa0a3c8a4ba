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

from dataclasses import dataclass

import torch
from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.base import Metrics, RoundBatch, Schedule, State, local_sgd, pseudo_gradient, with_rows
from fedcore.algorithms.fedopt import FedOpt
from fedcore.checks import check_choice
from fedcore.params import GradientOracle


@dataclass(frozen=True)
class Scaffold(FedOpt):
    """SCAFFOLD with control variates ``c`` (server) and ``c_i`` (one row per client)."""

    option: str = "II"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("option", self.option, ("I", "II"))

    def init(self, x0: Tensor, num_clients: int) -> State:
        state = super().init(x0, num_clients)
        state["c"] = torch.zeros_like(state["x"])
        state["c_i"] = torch.zeros(num_clients, x0.numel(), dtype=x0.dtype, device=x0.device)
        return state

    def round(self, state: State, batch: RoundBatch, oracle: GradientOracle) -> tuple[State, Metrics]:
        x, c, c_i = state["x"], state["c"], state["c_i"][batch.clients]
        eta_l, K = self.eta_l(batch.t), batch.local_steps
        drift = c - c_i
        Y, losses = local_sgd(x, batch, oracle, eta_l, lambda Y: drift)
        if self.option == "II":
            c_i_new = c_i - c + (x - Y) / (K * eta_l)
        else:
            c_i_new = self._full_gradient(x, batch, oracle)
        step, server = self.server.update(pseudo_gradient(x, Y, batch.weights), state["server"])
        c_new = c + (c_i_new - c_i).sum(0) / batch.num_clients  # (S/N) mean_i (c_i+ - c_i)
        c_all = with_rows(state["c_i"], batch.clients, c_i_new)
        new_state = {**state, "x": x + step, "server": server, "c": c_new, "c_i": c_all}
        return new_state, {"train_loss": float(batch.weights @ losses)}

    @staticmethod
    def _full_gradient(x: Tensor, batch: RoundBatch, oracle: GradientOracle) -> Tensor:
        """Option I: each client's gradient at ``x`` on all K*B samples of its round."""
        inputs, targets = batch.inputs.flatten(1, 2), batch.targets.flatten(1, 2)
        return oracle(x.expand(batch.clients.numel(), -1), inputs, targets)[1]


def scaffold(client_lr: float | Schedule, server_lr: float = 1.0, option: str = "II") -> Scaffold:
    """SCAFFOLD with server SGD at ``server_lr`` (``eta_g``) and control-variate ``option``."""
    return Scaffold(client_lr, server_opt.sgd(server_lr), "SCAFFOLD", option)
