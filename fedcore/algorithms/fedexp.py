"""FedExP (Jhunjhunwala, Wang & Joshi, *FedExP: Speeding Up Federated Averaging via Extrapolation*, ICLR 2023,
Algorithm 1).

Clients run K steps of SGD as in FedAvg.  The server extrapolates along the mean move with a step it sets from the
clients' moves alone (the relaxation of projections onto convex sets, POCS):

    Delta_i = x_i,K - x_t,   Delta_bar = sum_i w_i Delta_i
    eta_g = max(1, sum_i ||Delta_i||^2 / (2 S (||Delta_bar||^2 + eps)))
    x_{t+1} = x_t + eta_g Delta_bar

and is evaluated at the average of its last two iterates, ``(x_{t+1} + x_t) / 2`` (the rule's ``eval_point``):
the extrapolated iterates oscillate, their mean does not.  The server rule is :class:`Extrapolation`, a
:class:`~fedcore.server_opt.ServerRule` that reads each client's move; FedExP is FedAvg with it.

Choices where the paper and the authors' code (Divyansh03/FedExP) differ:

- Weights.  Both the mean move and the numerator use the round's aggregation weights ``w_i``:
  ``eta_g = max(1, sum_i w_i ||Delta_i||^2 / (2 (||Delta_bar||^2 + eps)))``.  With uniform weights
  (``simulate(weighting="uniform")``, ``w_i = 1/S``) this is the paper's formula exactly; with the simulator's
  default ``weighting="samples"`` it is the authors' code, which weights both by ``n_i``.
- ``eps_convention="paper"`` uses ``eps`` as written; ``"code"`` uses ``S * eps``, as the authors' code does.
- ``eps`` may be a schedule of the round: the authors decay it by ``0.998^2`` per round
  (``exp_decay(1e-3, 0.998**2, 1)``) and the client learning rate by 0.998 (``exp_decay(0.01, 0.998, 1)``);
  the paper's eps is 1e-3 (CIFAR) or 0.1 (EMNIST).
- Evaluation point: before the first round ``x_0``; after round t ``(x_{t+1} + x_t) / 2`` from the first round on
  (the authors' code evaluates ``x_1`` alone after the first round).  ``state["x"]`` is always the last iterate.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedcore.algorithms.batch import per_run_scalar
from fedcore.algorithms.contract import State
from fedcore.algorithms.fedopt import FedOpt
from fedcore.checks import check_choice
from fedcore.schedules import Schedule, schedule_at
from fedcore.server_opt import ServerRule, dot

EPS_CONVENTIONS = ("paper", "code")


@dataclass(frozen=True, kw_only=True)
class Extrapolation(ServerRule):
    """FedExP's server step ``x + eta_g Delta_bar`` (the module's ``eta_g``, ``eps`` a number or a schedule of the
    round).  The state keeps ``eta_g``, the iterate before the step (for the evaluation point) and the round count."""

    eps: float | Schedule = 1e-3
    eps_convention: str = "paper"
    reports = ("eta_g",)

    def __post_init__(self) -> None:
        schedule_at("eps", self.eps, 0)
        check_choice("eps_convention", self.eps_convention, EPS_CONVENTIONS)

    def init(self, x: Tensor) -> State:
        return {"x_prev": x.detach().clone(), "eta_g": per_run_scalar(x, 1.0), "t": torch.zeros((), dtype=torch.long)}

    def update(self, delta: Tensor, state: State, *, x: Tensor, client_moves: Tensor, weights: Tensor,
               **extras: Tensor) -> tuple[Tensor, State]:
        eps_t = schedule_at("eps", self.eps, int(state["t"]))
        if self.eps_convention == "code":
            eps_t = eps_t * client_moves.shape[-2]  # S eps
        spread = weights @ dot(client_moves, client_moves)  # sum_i w_i ||Delta_i||^2
        eta_g = (spread / (2 * (dot(delta, delta) + eps_t))).clamp(min=1.0)
        return eta_g * delta, {"x_prev": x, "eta_g": eta_g, "t": state["t"] + 1}

    def eval_point(self, x: Tensor, state: State) -> Tensor:  # (x_{t+1} + x_t) / 2; x_0 before the first round
        return (x + state["x_prev"]) / 2


extrapolation = Extrapolation  # by keyword: extrapolation(eps=1e-3)


def fedexp(client_lr: float | Schedule, *, eps: float | Schedule = 1e-3, eps_convention: str = "paper") -> FedOpt:
    """FedExP (Jhunjhunwala et al., ICLR 2023): FedAvg clients at ``client_lr`` (a number or a schedule), the server
    extrapolates by ``eta_g = max(1, sum_i w_i ||Delta_i||^2 / (2 (||Delta_bar||^2 + eps)))`` (a metric of every
    round), and a run is evaluated at the mean of its last two iterates."""
    return FedOpt(client_lr, Extrapolation(eps=eps, eps_convention=eps_convention), "FedExP")
