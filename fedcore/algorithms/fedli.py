"""FedLi-LS and FedLi-LU (*Towards Hyper-parameter-free Federated Learning*, arXiv 2408.17145, Algorithms 1-3).

Algorithm 1: the sampled clients run ``ClientUpdate`` from the server model and return their model, their last step size
and their loss; the server forms the pseudo-gradient ``Delta_t = sum_i w_i (x_i,K - x_t)`` and steps.

FedLi-LS (client-algo Armijo-SGD, Appendix A.1's Algorithm 3 = Vaswani et al.'s SLS, NeurIPS 2019; server-algo GD):

    client i, local step k on minibatch xi (b samples of its n), eta_prev = eta_0 at its first step:
        eta <- min(eta_max, gamma^(b/n) eta_prev)                                   (the "reset" heuristic)
        eta <- beta_b eta  until  F_i(x - eta g; xi) <= F_i(x; xi) - c eta ||g||^2   (same minibatch and masks)
        x <- x - eta g
    server:  x_{t+1} = x_t + eta_g Delta_t,   eta_g = 1 (convex)  or  max_i eta_i (non-convex; the clients' last steps)

FedLi-LU (client-algo SGD; server-algo DFW, Algorithm 2 = Berrada et al.'s Deep Frank-Wolfe step, ICLR 2019):

    L = sum_i w_i F_i (the clients' reported losses),  d = -Delta_t,  r = wd x_t      (pseudo-objective and -gradient)
    gamma = clip((L - eta <d, r>) / (eta ||d||^2 + eps), 0, 1)                        (eq. 21)
    x <- x_t - eta (r + gamma d);   z <- mu z - eta gamma (d + r);   x_{t+1} = x + mu z

These are reconstructions: the text lost most equations, and in the authors' code (zk23du/FedLi) the FedLi-LS clients
call a plain trainer (no line search is wired in) and the server sets the model to the clients' weighted average (no
max-step rule); only FedLi-LU's DFW server step is there.  Choices where the text is open:

- The line search's constants are SLS's (Vaswani et al.'s code): the first step starts at ``eta_0 = init_step_size = 1``
  and the reset growth is capped at ``eta_max = 10``.  ``server_step_size="max_client_step"`` multiplies the same
  pseudo-gradient: ``x_t + (max_i eta_i) Delta_t`` (Section 3: "one step of gradient descent with step-size eta_g and
  the pseudo-gradient").  ``Delta_t`` already holds the clients' steps, so this rule extrapolates only where a client's
  step grew above 1; with a cap ``eta_max = 1`` it can only damp the update.
- The reset growth ``gamma^(b/n)`` uses each client's epoch: ``n_i / b`` minibatches (its size over the batch size, from
  the round's ``batch.sizes``), so clients of different sizes grow at different rates; ``batches_per_epoch`` sets one
  number for every client instead (and K is used when the sizes are unknown).  Every round a client starts again from
  ``eta_0``: clients keep no state between rounds.
- The line search is :func:`fedcore.algorithms.client.armijo`: all S clients at once, each with its own step (a client
  that satisfies the condition stops).  After ``max_backtracks`` failed tries a client moves by ``fallback_step_size``
  (SLS's 1e-6) and keeps its last tried step, from which the next step grows (as SLS); ``fallback_step_size=None`` moves
  it by that last step instead (``eta_0 backtrack^max_backtracks``, about 2.7e-5 of the start for 100 tries at 0.9).
- ``loss_evaluations_per_step`` (a round metric): the line search's loss evaluations per local step, mean over the K
  steps.  One evaluation probes all S clients' minibatches at once, so it counts the most that any client needed.
- FedLi-LU: a client reports the mean of its K minibatch losses (the loss over its local epoch, as a trainer reports it;
  not ``F_i(x_t)``); ``L`` and ``Delta_t`` use the round's aggregation weights (the authors' code: n_i).  The gamma
  formula is read from the authors' DFW optimizer (Berrada et al.'s code): ``eps`` is added to ``eta ||d||^2``, and the
  momentum buffer carries ``gamma (d + r)`` while the plain step scales only ``d``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch, per_run_scalar
from fedcore.algorithms.client import ClientRule, ClientRun, armijo, train_clients
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.algorithms.fedopt import FedOpt
from fedcore.checks import check_choice, check_int, check_positive, check_range
from fedcore.params import GradientOracle
from fedcore.schedules import Schedule
from fedcore.server_opt import ServerRule, dot

SERVER_STEP_SIZES = ("one", "max_client_step")


@dataclass(frozen=True, kw_only=True)
class FedLiLS(Federated):
    """FedLi-LS: Armijo-SGD clients (``backtrack`` = beta_b, growth ``gamma^(b/n_i)`` capped at ``eta_max``), the server
    steps ``eta_g Delta`` with ``eta_g = 1`` (``server_step_size="one"``, convex) or the largest client step
    (``"max_client_step"``).  The defaults are SLS's constants."""

    c: float = 0.1
    backtrack: float = 0.9
    eta_max: float = 10.0
    gamma: float = 2.0
    batches_per_epoch: int | None = None
    max_backtracks: int = 100
    server_step_size: str = "one"
    init_step_size: float = 1.0
    fallback_step_size: float | None = 1e-6
    name: str = "FedLi-LS"

    def __post_init__(self) -> None:
        check_range("gamma", self.gamma, 1)
        if self.batches_per_epoch is not None:
            check_int("batches_per_epoch", self.batches_per_epoch)
        check_choice("server_step_size", self.server_step_size, SERVER_STEP_SIZES)
        check_positive("eta_max", self.eta_max)
        check_positive("init_step_size", self.init_step_size)  # above eta_max the first step is capped, as in SLS
        self.line_search()  # armijo checks c, backtrack, eta_max, max_backtracks and the fallback, each by name

    def growth(self, batch: RoundBatch) -> float | Tensor:
        """The reset growth ``gamma^(b/n)`` of the round's clients: ``gamma^(1 / batches_per_epoch)`` when it is
        given, else per client ``gamma^(b / n_i)`` ``[R, S, 1]`` from the clients' sizes (``batch.sizes``), else
        ``gamma^(1/K)``."""
        if self.batches_per_epoch is not None:
            return self.gamma ** (1 / self.batches_per_epoch)
        if batch.sizes is None:
            return self.gamma ** (1 / batch.local_steps)
        sizes = batch.sizes.to(batch.clients.device)[batch.clients].unsqueeze(-1)  # n_i [R, S, 1]
        return self.gamma ** (batch.rows.shape[-1] / sizes.to(batch.weights.dtype))

    def line_search(self, growth: float | Tensor = 1.0) -> ClientRule:
        """The clients' Armijo rule at the reset growth ``growth`` (a round's: :meth:`growth`)."""
        return armijo(self.c, self.backtrack, self.eta_max, growth, initial=self.init_step_size,
                      max_backtracks=self.max_backtracks, fallback=self.fallback_step_size)

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Each client: K Armijo-SGD steps from ``x_t`` (every round again from ``eta_0``: it keeps nothing); it
        uploads its model, its last step size ``eta_i`` and its line search's loss evaluations at each step."""
        run = train_clients(sent["x"], batch, oracle, self.line_search(self.growth(batch)))
        search = run.state  # LineSearch: step_size [R, S, 1], tries [R, S, K]
        return run.sending({"step_size": search.step_size, "tries": search.tries})

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """``x_{t+1} = x_t + eta_g Delta_t`` with ``eta_g = 1`` or ``max_i eta_i``."""
        eta_i, tries = run.uploads["step_size"], run.uploads["tries"]
        eta_max_i = eta_i.amax(dim=1, keepdim=True)
        eta_g = 1.0 if self.server_step_size == "one" else eta_max_i
        x = state["x"]
        x_next = x + eta_g * (batch.weights @ (run.X - x))  # x + eta_g Delta_t
        evaluations = tries.amax(dim=1, keepdim=True).sum(-1, keepdim=True)  # a step costs its slowest client's
        metrics = {"eta_g": eta_g,
                   "client_step_mean": eta_i.mean(dim=1), "client_step_min": eta_i.amin(dim=1),
                   "client_step_max": eta_max_i, "loss_evaluations_per_step": evaluations / batch.local_steps}
        return {**state, "x": x_next}, metrics


fedli_ls = FedLiLS  # its hyperparameters by keyword, with SLS's defaults


@dataclass(frozen=True, kw_only=True)
class DeepFrankWolfe(ServerRule):
    """FedLi-LU's server (Algorithm 2): the DFW step on ``d = -Delta / scale`` with the weighted mean client loss
    ``L``, ``gamma = clip((L - eta <d, r>) / (eta ||d||^2 + eps), 0, 1)``, ``r = weight_decay x``, then momentum
    ``z <- mu z - eta gamma (d + r)``, ``x <- x - eta (r + gamma d) + mu z``.  The state keeps ``z`` and ``gamma``.

    **A Polyak step.**  Without weight decay and ``eps``, ``eta gamma = min(eta, L / ||d||^2)``: the plain step
    ``eta gamma d`` is Polyak's ``(f(x) - f*) / ||g||^2`` along ``d`` with ``f* = 0`` and ``L`` for ``f(x)``, capped
    at ``eta``.  ``d`` is the clients' move (``scale = 1``), about ``client_lr K`` times a gradient, so ``||d||^2`` is
    small, the cap binds (``gamma = 1``) and ``eta`` acts as a server learning rate; ``scale = client_lr K`` puts
    ``d`` on the gradient's scale (an ablation, not the paper's)."""

    eta: float | Tensor = 0.01
    mu: float | Tensor = 0.9
    weight_decay: float | Tensor = 1e-5
    eps: float | Tensor = 1e-5
    scale: float | Tensor = 1.0
    reports = ("gamma",)

    def __post_init__(self) -> None:
        check_positive("eta", self.eta)
        check_range("mu", self.mu, 0, 1)
        check_range("weight_decay", self.weight_decay, 0)
        check_positive("eps", self.eps)
        check_positive("scale", self.scale)

    def init(self, x: Tensor) -> State:
        return {"z": torch.zeros_like(x), "gamma": per_run_scalar(x, 0.0)}

    def update(self, delta: Tensor, state: State, *, x: Tensor, client_losses: Tensor, weights: Tensor,
               **extras: Tensor) -> tuple[Tensor, State]:
        eta, mu = self.eta, self.mu
        d, r = -delta / self.scale, self.weight_decay * x
        L = weights @ client_losses  # the pseudo-objective
        gamma = ((L - eta * dot(d, r)) / (eta * dot(d, d) + self.eps)).clamp(0, 1)
        z = mu * state["z"] - eta * gamma * (d + r)
        return -eta * (r + gamma * d) + mu * z, {"z": z, "gamma": gamma}


deep_frank_wolfe = DeepFrankWolfe  # by keyword, with the authors' constants


def fedli_lu(
    client_lr: float | Schedule, *, eta: float = 0.01, mu: float = 0.9, weight_decay: float = 1e-5, eps: float = 1e-5,
    pseudo_gradient_scale: float = 1.0,
) -> FedOpt:
    """FedLi-LU: SGD clients at ``client_lr``, the server's Deep-Frank-Wolfe step with momentum at the authors'
    constants, a Polyak step capped at ``eta`` (:class:`DeepFrankWolfe`); each round reports ``gamma``.
    ``pseudo_gradient_scale`` divides the clients' move first (``client_lr K``: the gradient's scale, an ablation)."""
    return FedOpt(client_lr, DeepFrankWolfe(eta=eta, mu=mu, weight_decay=weight_decay, eps=eps,
                                            scale=pseudo_gradient_scale), "FedLi-LU")
