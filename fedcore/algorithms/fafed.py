"""FAFED (Wu, Huang, Hu & Huang, *Faster Adaptive Federated Learning*, AAAI 2023, Algorithm 2)
and STEM (Khanduri et al., NeurIPS 2021), which is FAFED without the adaptive matrix.

Every client keeps a STORM momentum, evaluated on the *same* minibatch at its current and
its previous point (eq. 3), and an Adam-style second moment (eq. 2):

    m_t,i = g_i(x_t,i; B_t,i) + (1 - alpha_t) (m_t-1 - g_i(x_t-1,i; B_t,i))
    v_t,i = beta v_t-1,i + (1 - beta) g_i(x_t,i; B_t,i)^2
    every q steps:  v_bar = mean_i v_t,i,  A_t = diag(sqrt(v_bar) + rho),  m_bar = mean_i m_t,i,
                    x_bar_t+1 = mean_i (x_t,i - eta_t A_t^-1 m_bar)           (sent to every client)
    otherwise:      A_t = A_t-1,  x_t+1,i = x_t,i - eta_t A_t^-1 m_t,i

All clients precondition with the same ``A_t``, built from the averaged ``v``: the paper's fix for the divergence
of naive local adaptivity (:mod:`fedcore.algorithms.local_adaptive`, its Theorem 1).  STEM is the same recursion
with ``A_t = I``.  One fedcore round is one communication period: ``q = local_steps`` client steps, the last of
which is the averaging step.  Choices the paper leaves open, and fedcore's:

- Initialisation (Alg. 2, lines 2-3) happens in the first round: ``m_0`` and ``v_0`` are each client's gradient
  (and its square) at ``x_0`` on all ``q * b`` samples of that round (Remark 1 takes ``B = b q``), averaged; then
  ``x_1 = x_0 - eta_0 m_0`` exactly as line 3 prints it (no ``A_0^-1``).  So the first round takes ``q + 1`` steps.
- ``x_t-1,i`` at the first step after an averaging is the client's own last local iterate (line 12 averages
  ``x_t,i`` into ``x_bar_t+1``; ``x_t,i`` is not overwritten), so the state keeps one row per client (``x_prev``:
  ``[N, d]``, ``[R, N, d]`` for R runs).  With partial participation a client's row is from the last round it took
  part in.
- Schedules: the theory's ``eta_t = rho h / (w + t)^(1/3)`` and ``alpha_t+1 = c eta_t^2`` (:func:`storm_step_size`,
  :func:`storm_momentum`) or constants, as the paper's image experiments use ("we choose the fixed step size for
  STEM and FAFED").
- Means over clients use the simulator's weights (uniform in the paper; the FAFED splits give clients equal
  sizes, where the two agree).
- The two gradients of a step (at ``x_t,i`` and ``x_t-1,i``) use the same dropout masks, as they use the same
  minibatch (the paper's language model, a 2-layer LSTM on WikiText-2, has dropout 0.5; its image CNNs' structures
  are in a supplement we do not have).

No official code exists for FAFED: this is a reconstruction from the paper's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch, round_gradient
from fedcore.algorithms.client import ClientRun, divide, named, scale, storm, track_second_moment, train_clients
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.checks import check_positive, check_range
from fedcore.params import GradientOracle
from fedcore.schedules import Schedule, schedule_at, storm_momentum, storm_step_size

__all__ = ["FAFED", "fafed", "stem", "storm_momentum", "storm_step_size"]
ALPHA_RANGE = partial(check_range, low=0, high=1, low_closed=False, high_closed=True)  # alpha_t in (0, 1]


class FAFEDServer(NamedTuple):
    """The server's state: the model, the averaged ``m``, ``v`` (0 until the prologue), ``A`` (1), the step ``t``."""

    x: Tensor
    m: Tensor
    v: Tensor
    A: Tensor
    t: Tensor


class FAFEDClient(NamedTuple):
    """A client's own state: its last local iterate ``x_prev`` (``x_0`` at first)."""

    x_prev: Tensor


@dataclass(frozen=True)
class FAFED(Federated):
    """FAFED (``adaptive=True``) or STEM (``adaptive=False``) with step ``lr`` (eta_t) and
    momentum ``alpha`` (alpha_t), each a float or a schedule of the global step ``t``."""

    lr: float | Schedule
    alpha: float | Schedule = 0.1
    beta: float = 0.9
    rho: float = 0.01
    adaptive: bool = True
    name: str = "FAFED"

    def __post_init__(self) -> None:
        self.eta(0), self.alpha_t(0)
        check_range("beta", self.beta, 0, 1)
        check_positive("rho", self.rho)

    def eta(self, t: int) -> float:
        return schedule_at("lr", self.lr, t, "step")

    def alpha_t(self, t: int) -> float:
        return schedule_at("alpha", self.alpha, t, "step", ALPHA_RANGE)

    def server_init(self, x: Tensor) -> FAFEDServer:
        return FAFEDServer(x, torch.zeros_like(x), torch.zeros_like(x), torch.ones_like(x), torch.tensor(0))

    def client_init(self, x: Tensor) -> FAFEDClient:
        return FAFEDClient(x)

    def preconditioner(self, v_bar: Tensor) -> Tensor:
        """``A = sqrt(v_bar) + rho`` (a diagonal, as a vector); STEM: ``A = 1``."""
        return v_bar.sqrt() + self.rho if self.adaptive else torch.ones_like(v_bar)

    client_reads = ("x", "m", "v", "A", "t")

    def prologue(self, state: State) -> str | None:
        """Alg. 2 lines 2-3 run before the first round's steps, on its sampled clients."""
        return "sampled" if int(state["t"]) == 0 else None

    def client_prologue(self, sent: State, batch: RoundBatch, oracle: GradientOracle,
                        own: State) -> tuple[State, State]:
        """Each client's gradient at ``x_0`` on its ``q b`` samples (uploaded); it keeps ``x_0`` as previous point."""
        x = sent["x"]
        G0 = round_gradient(x, batch, oracle)
        return {"gradient": G0}, {"x_prev": x.expand_as(G0)}

    def server_prologue(self, state: State, uploads: State, batch: RoundBatch) -> State:
        """``m_0 = sum_i w_i G_i``, ``v_0 = sum_i w_i G_i^2``, ``x_1 = x_0 - eta_0 m_0`` (line 3 as printed)."""
        x, weights, G0 = state["x"], batch.weights, uploads["gradient"]
        m, v = weights @ G0, weights @ G0.square()
        x_1 = x - self.eta(0) * m
        batch.record(x_1.expand_as(G0))
        return {**state, "x": x_1, "m": m, "v": v, "A": self.preconditioner(v), "t": torch.tensor(1)}

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Each client: q - 1 moving steps of ``storm -> second moment -> eta_t -> A_t^-1`` and the q-th step's
        ``m``, ``v`` without moving (line 15); it uploads ``x_t,i``, ``m_t,i``, ``v_t,i`` and keeps ``x_t,i``."""
        t0, S = int(sent["t"]), batch.clients_per_round
        m_0, v_0 = sent["m"].expand(-1, S, -1), sent["v"].expand(-1, S, -1)
        moment = {"second_moment": track_second_moment(self.beta, v_0)} if self.adaptive else {}
        rule = named(
            momentum=storm(lambda k: self.alpha_t(t0 + k), m_0, own["x_prev"]),           # eq. (3), same B_t,i
            **moment,                                                                      # eq. (2)
            step=scale(lambda k: self.eta(t0 + k)), preconditioner=divide(sent["A"]),      # line 15, A_t = A_t-1
        )
        run = train_clients(sent["x"], batch, oracle, rule, move_last=False)
        momentum = run.state["momentum"]  # Storm(momentum, previous)
        uploads = {"momentum": momentum.momentum,
                   **({"second_moment": run.state["second_moment"]} if self.adaptive else {})}
        return run.sending(uploads, keeps={"x_prev": momentum.previous})  # x_t,i before averaging: next x_t-1,i

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """Lines 10-12: ``v_bar``, ``m_bar``, ``A_t``, ``x_bar_t+1 = mean_i x_t,i - eta_t A_t^-1 m_bar``.  Written
        here, not as a server rule: the step is the q-th client step taken once on the averages, not a step on the
        pseudo-gradient ``Delta_t``."""
        weights, S = batch.weights, batch.clients_per_round
        t = int(state["t"]) + batch.local_steps - 1
        V = run.uploads.get("second_moment", state["v"].expand(-1, S, -1))  # STEM: v stays as it is
        v_bar, m_bar = weights @ V, weights @ run.uploads["momentum"]       # lines 10-11
        A = self.preconditioner(v_bar)
        step = self.eta(t) * m_bar / A
        batch.record(run.X - step)                                         # the clients' models, not yet averaged
        x_bar = weights @ run.X - step                                     # line 12
        new_state = {**state, "x": x_bar, "m": m_bar, "v": v_bar, "A": A, "t": torch.tensor(t + 1)}
        return new_state, {}


def fafed(lr: float | Schedule, *, alpha: float | Schedule = 0.1, beta: float = 0.9, rho: float = 0.01) -> FAFED:
    """FAFED (Wu et al., AAAI 2023, Alg. 2): STORM momentum, shared ``A = diag(sqrt(v_bar) + rho)``."""
    return FAFED(lr, alpha, beta, rho, adaptive=True, name="FAFED")


def stem(lr: float | Schedule, *, alpha: float | Schedule = 0.1) -> FAFED:
    """STEM (Khanduri et al., NeurIPS 2021): client STORM momentum, the server averages ``x`` and ``m``."""
    return FAFED(lr, alpha, adaptive=False, name="STEM")
