"""PAdaMFed and PAdaMFed-VR (Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, Algorithm 1).
Without the normalization the same recursions are SCAFFOLD-M and -M-VR (:mod:`fedcore.algorithms.scaffold`); the step
sizes from S, K, T alone are Theorems 1 and 2 (:mod:`fedcore.algorithms.theorems`).

Algorithm 1, round t (S sampled clients, K local steps, N clients):

    client i, theta_i^{t,0} = theta^t, for k = 0..K-1:
        g_i^{t,k} = beta (grad F(theta_i^{t,k}; xi) - c_i^{t-1} + c^{t-1}) + (1 - beta) g^{t-1}            (line 7)
        theta_i^{t,k+1} = theta_i^{t,k} - eta g_i^{t,k} / ||g_i^{t,k}||                                     (line 8)
    c_i^t = (1/K) sum_k grad F(theta_i^{t,k}; xi_i^{t,k})                                                  (line 10)
    g_bar^t = (1 / (eta S K)) sum_i (theta^t - theta_i^{t,K}),   theta^{t+1} = theta^t - gamma g_bar^t    (13-14)
    c^t = c^{t-1} + (1/N) sum_i (c_i^t - c_i^{t-1})                                                        (line 15)
    g^t = beta ((1/S) sum_i (c_i^t - c_i^{t-1}) + c^{t-1}) + (1 - beta) g^{t-1}                             (line 16)

PAdaMFed-VR (the slides' STORM direction, Cutkosky & Orabona 2019) replaces line 7 by

    g_i^{t,k} = grad F(theta_i^{t,k}; xi) + beta (c^{t-1} - c_i^{t-1}) + (1 - beta) (g^{t-1} - grad F(theta^{t-1}; xi))

with the second gradient on the **same** minibatch (and dropout masks) at the previous round's global model.

Choices where the text is open (no official code exists: this is a reconstruction from the slides' Algorithm 1):

- ``g^{t-1}`` in line 7 is the server's momentum, fixed during the K local steps (the slides write ``g^{t-1}``, not a
  per-step ``g_i^{t,k-1}``, and line 17 sends the clients ``beta c + (1 - beta) g``): no recursion over k.
- The extraction's "nSK" in line 13 is read as ``eta S K``: ``g_bar`` is the mean normalized direction, ``||g_bar|| <=
  1``, and the server moves at most ``gamma`` per round.  ``c^{t-1}`` in line 16 is c before line 15.
- Line 1 needs ``c_i^{-1} = (1/K) sum_k grad F(theta^0; xi_i^{-1,k})`` for all N clients ("for any i").
  ``initialization="every_client"`` (the default) computes it for every client, on all its samples (the expectation of
  the K minibatches' mean, drawing no minibatches: one extra pass of all N clients before round 0, outside the round's
  S, N uploads of d numbers), ``c^{-1}`` their mean.  ``"first_round"`` uses the first round's sampled clients only, at
  ``theta^0`` on that round's K minibatches, ``c^{-1}`` their mean and ``c_i^{-1} = c^{-1}`` for every other client (so
  c stays the mean of the c_i): the text's line 1 under full participation, with ``xi^{-1} = xi^0``.  Both set ``g^{-1}
  = c^{-1}``.  ``"zeros"`` is SCAFFOLD's ``c = c_i = 0`` (and ``g = 0``).
- ``g_bar`` weights clients by the simulator's aggregation weights (``1/S`` in the paper: ``weighting="uniform"``);
  lines 15-16 keep the paper's uniform ``1/N`` and ``1/S``.  Non-uniform weights (``weighting="samples"`` on clients of
  different sizes) mix the two, which the text never does: the first round warns.
- A zero direction takes no step (``||g|| = 0``: :func:`~fedcore.algorithms.client.normalize` leaves it at 0).
- PAdaMFed-VR: the slides give no server side of their own, so it is Algorithm 1's lines 13-17 (line 16's momentum,
  ``server_momentum="line16"``); in round 0 the previous model is ``theta^{-1} = theta^0`` (where ``g^{-1}`` was
  computed).  ``server_momentum="mean_direction"`` sets instead ``g^t = (1/S) sum_i (1/K) sum_k g_i^{t,k}``, the
  clients' mean direction before the normalization (the STORM estimator carried over to the server).  Without variance
  reduction the two are one: line 7 averaged over k and over the S clients is line 16.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch, every_client_gradient, round_gradient
from fedcore.algorithms.client import (
    ClientRule,
    ClientRun,
    accumulate_directions,
    accumulate_gradients,
    add,
    chain,
    learning_rate,
    named,
    normalize,
    scale,
    train_clients,
)
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.algorithms.theorems import check_horizon, step_sizes
from fedcore.checks import check_bool, check_choice, check_int, check_positive, check_range
from fedcore.params import GradientOracle

INITIALIZATIONS = ("every_client", "first_round", "zeros")
SERVER_MOMENTA = ("line16", "mean_direction")


class PAdaMFedServer(NamedTuple):
    """The server's state: theta^t, c^{t-1}, g^{t-1}, the round t, and theta^{t-1} for the STORM direction (or None)."""

    x: Tensor
    c: Tensor
    g: Tensor
    t: Tensor
    x_prev: Tensor | None = None


class PAdaMFedClient(NamedTuple):
    """A client's own state: its ``c_i`` (the mean of its last round's K gradients)."""

    c_i: Tensor


@dataclass(frozen=True)
class PAdaMFed(Federated):
    """Algorithm 1 of Yan et al. (``normalized=True``) or SCAFFOLD-M (``False``), with the STORM direction
    (``variance_reduction=True``) or line 7's.  ``eta``, ``gamma``, ``beta``: local and global learning rates and
    the momentum.  ``clients_per_round``, ``local_steps``, ``rounds``: the S, K, T the step sizes were computed
    for (None when given by hand), checked against every round."""

    eta: float
    gamma: float
    beta: float
    normalized: bool = True
    variance_reduction: bool = False
    initialization: str = "every_client"
    server_momentum: str = "line16"
    clients_per_round: int | None = None
    local_steps: int | None = None
    rounds: int | None = None
    name: str = "PAdaMFed"

    def __post_init__(self) -> None:
        check_positive("eta", self.eta)
        check_positive("gamma", self.gamma)
        check_range("beta", self.beta, 0, 1, low_closed=False, high_closed=True)
        check_choice("initialization", self.initialization, INITIALIZATIONS)
        check_choice("server_momentum", self.server_momentum, SERVER_MOMENTA)
        check_bool("normalized", self.normalized)
        check_bool("variance_reduction", self.variance_reduction)
        sizes = {"clients_per_round": self.clients_per_round, "local_steps": self.local_steps, "rounds": self.rounds}
        if any(value is not None for value in sizes.values()):  # the theory's S, K, T: all three or none
            for name, value in sizes.items():
                check_int(name, value)

    def server_init(self, x: Tensor) -> PAdaMFedServer:  # c = g = 0 until line 1 sets them; theta^{-1} = theta^0
        return PAdaMFedServer(x, torch.zeros_like(x), torch.zeros_like(x), torch.tensor(0),
                              x.clone() if self.variance_reduction else None)

    def client_init(self, x: Tensor) -> PAdaMFedClient:
        return PAdaMFedClient(torch.zeros_like(x))  # c_i = 0 until line 1 sets it

    def client_rule(self, c: Tensor, c_i: Tensor, g: Tensor, x_prev: Tensor | None) -> ClientRule:
        """Line 7 (or its STORM form), line 8's step, and the sum of the K gradients for line 10 (and of the K
        directions, for ``server_momentum="mean_direction"``)."""
        beta = self.beta
        if self.variance_reduction:  # grad + beta (c - c_i) + (1 - beta) (g - grad F(theta^{t-1}; same xi))
            previous = x_prev.expand_as(c_i)
            direction = [add(beta * (c - c_i)), add(lambda step: (1 - beta) * (g - step.gradient_at(previous)))]
        else:  # beta (grad - c_i + c) + (1 - beta) g
            direction = [add(c - c_i), scale(beta), add((1 - beta) * g)]
        normalized = {"normalized": normalize()} if self.normalized else {}  # g / ||g||
        summed = {"summed_directions": accumulate_directions()} if self.server_momentum == "mean_direction" else {}
        return named(summed_gradients=accumulate_gradients(), direction=chain(*direction), **summed, **normalized,
                     step=learning_rate(self.eta))

    @property
    def client_reads(self) -> tuple[str, ...]:
        """What the server sends its clients: theta^t, c^{t-1}, g^{t-1} (and theta^{t-1} for the STORM direction)."""
        return ("x", "c", "g", "x_prev") if self.variance_reduction else ("x", "c", "g")

    def prologue(self, state: State) -> str | None:
        """Line 1 before round 0: on every client (``"every_client"``), the round's sampled clients
        (``"first_round"``), or not at all (``"zeros"``)."""
        if int(state["t"]) != 0 or self.initialization == "zeros":
            return None
        return "every" if self.initialization == "every_client" else "sampled"

    def client_prologue(self, sent: State, batch: RoundBatch, oracle: GradientOracle,
                        own: State) -> tuple[State, State]:
        """Line 1 on a client: ``c_i^{-1}``, its gradient at theta^0 on all its samples (``"every_client"``: the
        expectation of the text's mean over K minibatches) or on the round's K minibatches (``"first_round"``);
        uploaded and kept."""
        if self.initialization == "every_client":
            c_i = every_client_gradient(sent["x"], batch, oracle, clients=batch.clients[0])
        else:
            c_i = round_gradient(sent["x"], batch, oracle)  # (1/K) sum_k grad F(theta^0; xi_i^k) (mean loss)
        return {"c_i": c_i}, {"c_i": c_i}

    def server_prologue(self, state: State, uploads: State, batch: RoundBatch) -> State:
        """Line 1 on the server: ``c^{-1}`` the clients' mean, ``g^{-1} = c^{-1}``; ``"first_round"`` also sets
        ``c_i^{-1} = c^{-1}`` for the clients not sampled (so c stays the mean of the c_i), a write into the
        clients' state that only a simulation can make (:meth:`not_distributable`)."""
        c = uploads["c_i"].mean(1, keepdim=True)
        state = {**state, "c": c, "g": c.clone()}
        if self.initialization == "first_round":
            state["c_i"] = batch.write_rows(c.expand(-1, batch.num_clients, -1).clone(), uploads["c_i"])
        return state

    def not_distributable(self) -> str | None:
        """Why this configuration cannot keep its clients' state on the clients (:mod:`fedcore.flower`), or None."""
        if self.initialization == "first_round":
            return ("initialization='first_round': its server sets every unsampled client's c_i^{-1} to the first "
                    "round's mean, state that lives on the clients; use 'every_client' (the text's line 1) or 'zeros'")
        return None

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Lines 4-11 on each client: K steps of line 7 (or its STORM form) and line 8, then ``c_i^t`` (line 10);
        it keeps ``c_i^t`` and uploads ``theta_i^{t,K}`` and ``c_i^t - c_i^{t-1}`` (and its mean direction)."""
        x, c, g, K, c_i = sent["x"], sent["c"], sent["g"], batch.local_steps, own["c_i"]
        x_prev = sent["x_prev"] if self.variance_reduction else None
        run = train_clients(x, batch, oracle, self.client_rule(c, c_i, g, x_prev))
        c_i_new = run.state["summed_gradients"] / K                                  # line 10
        uploads = {"c_delta": c_i_new - c_i}
        if self.server_momentum == "mean_direction":
            uploads["direction"] = run.state["summed_directions"] / K  # (1/K) sum_k g_i^{t,k}
        return run.sending(uploads, keeps={"c_i": c_i_new})

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """Lines 13-16: ``g_bar``, ``theta^{t+1} = theta^t - gamma g_bar``, ``c^t``, ``g^t``.  Written here, not as a
        server rule: ``g_bar`` is ``Delta_t / (eta K)`` and lines 15-16 update ``c`` and ``g`` beside the step."""
        if int(state["t"]) == 0:
            self._check_weights(batch)
        x, c, g, K = state["x"], state["c"], state["g"], batch.local_steps
        g_bar = batch.weights @ (x - run.X) / (self.eta * K)                         # line 13 (w_i = 1/S)
        if self.server_momentum == "mean_direction":  # (1/S) sum_i (1/K) sum_k g_i^{t,k}
            g_next = run.uploads["direction"].mean(1, keepdim=True)
        else:  # line 16, with c^{t-1}
            g_next = self.beta * (run.uploads["c_delta"].mean(1, keepdim=True) + c) + (1 - self.beta) * g
        new_state = {**state, "x": x - self.gamma * g_bar, "g": g_next, "t": state["t"] + 1,   # line 14
                     "c": c + run.uploads["c_delta"].sum(1, keepdim=True) / batch.num_clients}  # line 15
        if self.variance_reduction:
            new_state["x_prev"] = x
        return new_state, {}

    def _check_weights(self, batch: RoundBatch) -> None:
        """Warn when the round's client weights are not uniform, a mix Algorithm 1 never makes (it writes ``1/S``)."""
        weights = batch.weights
        if float((weights.amax(-1) - weights.amin(-1)).max()) > 1e-12 * float(weights.abs().max()):
            warnings.warn(f"{self.name} got non-uniform client weights (weighting='samples' on clients of different "
                          "sizes): line 13 weights the clients by them, lines 15-16 use 1/N and 1/S; run with "
                          "weighting='uniform' (the paper's 1/S)", UserWarning, stacklevel=4)

    def check_run(self, clients_per_round: int, local_steps: int, rounds: int | None) -> None:
        """Refuse a run whose S, K or T is not the one the theorem's step sizes were computed for
        (:func:`~fedcore.algorithms.theorems.check_horizon`)."""
        check_horizon(self.name, {"clients_per_round": self.clients_per_round, "local_steps": self.local_steps,
                                  "rounds": self.rounds},
                      {"clients_per_round": clients_per_round, "local_steps": local_steps, "rounds": rounds})


def padamfed(
    *, clients_per_round: int | None = None, local_steps: int | None = None, rounds: int | None = None,
    multiplier: float = 1.0, eta: float | None = None, gamma: float | None = None, beta: float | None = None,
    initialization: str = "every_client",
) -> PAdaMFed:
    """PAdaMFed (Yan et al., Alg. 1): ``theta_i <- theta_i - eta g / ||g||``, ``g = beta (grad - c_i + c) + (1 - beta)
    g_prev``.  Step sizes from Theorem 1 for S = ``clients_per_round``, K = ``local_steps``, T = ``rounds`` (each
    overridable by ``eta``, ``gamma``, ``beta``); ``multiplier`` scales ``eta``; ``initialization`` is line 1's reading
    (:data:`INITIALIZATIONS`).  Run it with ``weighting="uniform"``, Algorithm 1's ``1/S`` (others warn)."""
    sizes = {"clients_per_round": clients_per_round, "local_steps": local_steps, "rounds": rounds}
    values = step_sizes("padamfed", sizes, multiplier, {"eta": eta, "gamma": gamma, "beta": beta})
    return PAdaMFed(**values, initialization=initialization, **sizes, name="PAdaMFed")


def padamfed_vr(
    *, clients_per_round: int | None = None, local_steps: int | None = None, rounds: int | None = None,
    multiplier: float = 1.0, eta: float | None = None, gamma: float | None = None, beta: float | None = None,
    initialization: str = "every_client", server_momentum: str = "line16",
) -> PAdaMFed:
    """PAdaMFed-VR (Yan et al., Theorem 2): the normalized step on the STORM direction ``grad + beta (c - c_i) +
    (1 - beta) (g_prev - grad F(theta_prev; same xi))``, step sizes from Theorem 2; ``server_momentum``
    (:data:`SERVER_MOMENTA`): line 16's ``g^t`` (the slides give no other) or the clients' mean direction.  Run it
    with ``weighting="uniform"`` (others warn)."""
    sizes = {"clients_per_round": clients_per_round, "local_steps": local_steps, "rounds": rounds}
    values = step_sizes("padamfed_vr", sizes, multiplier, {"eta": eta, "gamma": gamma, "beta": beta})
    return PAdaMFed(**values, variance_reduction=True, initialization=initialization, server_momentum=server_momentum,
                    **sizes, name="PAdaMFed-VR")
