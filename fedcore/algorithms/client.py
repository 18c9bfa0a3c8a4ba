"""The client side of a round, written once: K local steps on all S clients (:func:`train_clients`), and the client
rules that say what differs between families.  On the models ``X [R, S, d]`` of the S sampled clients of each of R
runs (R = 1 for one run: :mod:`fedcore.algorithms.batch`; the oracle sees one ``[R*S, d]`` matrix):

    for k = 1..K:
        loss_k, G_k = oracle(X, minibatch_k)          # [R, S, 1], [R, S, d]
        (D, eta), state = rule.update((G_k, 1), state, step_k)
        X <- X - eta D                                # eta: a number, or per run [R, 1, 1] or per client [R, S, 1]

A *client rule* is two small functions in optax's shape, ``state = rule.init(X_0)`` (per client, ``[R, S, ...]``)
and ``(D, eta), state = rule.update((D, eta), state, step)``.  Rules compose with :func:`chain` (or :func:`named`,
whose state a family reads by name), each transforming the direction the previous one produced:

=============================  ==========================================================  =======================
rule                           update                                                      used by
=============================  ==========================================================  =======================
:func:`learning_rate` (eta)    ``eta <- eta * eta_l``                                      every SGD client
:func:`add` (term)             ``D <- D + term``                                           FedProx, SCAFFOLD(-M)
:func:`normalize`              ``D <- D / ||D||`` per client                               PAdaMFed
:func:`storm` (alpha)          ``m <- D + (1 - alpha)(m - G(x_prev; same minibatch))``     STEM, FAFED
:func:`track_second_moment`    ``v <- beta v + (1 - beta) G^2`` (D unchanged)              FAFED
:func:`scale_by_rms` (beta)    the same ``v``, ``D <- D / sqrt(v)``                        Wu et al.'s Alg. 1
:func:`scale`, :func:`divide`  ``D <- s D``, ``D <- D / A``                                FAFED
:func:`accumulate_gradients`   ``sum <- sum + G`` (D unchanged)                            PAdaMFed's ``c_i``
:func:`armijo` (c, backtrack)  per client, the largest ``eta`` with sufficient decrease     FedLi-LS
=============================  ==========================================================  =======================

A hyperparameter may be a tensor ``[R, 1, 1]`` (one value per run); every rule is elementwise or reduces over the
last dimension, so it serves one run and R alike.  What a rule sees of the step is :class:`Step`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch
from fedcore.checks import check_int, check_number, check_positive, check_range
from fedcore.params import GradientOracle, RandomState

RuleState = Any  # a tensor, a NamedTuple of tensors (named: a family reads it by name), or () for a rule without state
PerStep = float | Callable[[int], float]  # a constant, or a function of the local step k


class Update(NamedTuple):
    """The move of one local step: ``X <- X - step_size * direction``."""

    direction: Tensor  # [R, S, d]
    step_size: float | Tensor  # one for all clients, or per run [R, 1, 1] or per client [R, S, 1]


class ClientRule(NamedTuple):
    """``init(X_0 [R, S, d]) -> state``; ``update(update, state, step) -> (update, state)``."""

    init: Callable[[Tensor], RuleState]
    update: Callable[[Update, RuleState, Step], tuple[Update, RuleState]]


@dataclass
class Step:
    """What a client rule sees at local step ``k``: the models ``X [R, S, d]`` before the step, their
    minibatch losses ``loss [R, S, 1]`` and gradients ``G [R, S, d]``, and the minibatch itself (``[R*S, B, ...]``,
    the oracle's layout).  ``X``, ``G`` are the loop's buffers, overwritten next step: a rule copies what it keeps."""

    k: int
    X: Tensor
    G: Tensor
    loss: Tensor
    inputs: Tensor
    targets: Tensor
    oracle: GradientOracle = field(repr=False)
    random_state: RandomState = field(repr=False)
    _buffer: list[Tensor] = field(default_factory=list, repr=False)

    def gradient_at(self, Y: Tensor) -> Tensor:
        """``grad F(Y_i; same minibatch)`` per client, with the dropout masks ``G`` was computed with.
        The result lives in a buffer that the next call overwrites."""
        if not self._buffer:
            self._buffer.append(torch.empty_like(self.G))
        flat = self.G.shape[-1]
        with self.oracle.replaying(self.random_state):
            self.oracle(Y.reshape(-1, flat), self.inputs, self.targets, out=self._buffer[0].view(-1, flat))
        return self._buffer[0]

    def losses_at(self, Y: Tensor) -> Tensor:
        """``F(Y_i; same minibatch)`` per client ``[R, S, 1]``, with the same dropout masks, no gradient."""
        with self.oracle.replaying(self.random_state):
            return self.oracle.losses(Y.reshape(-1, Y.shape[-1]), self.inputs, self.targets).view(self.loss.shape)


@dataclass(frozen=True)
class ClientRun:
    """The result of :func:`train_clients`: final models ``X [R, S, d]``, each client's minibatch loss summed over the
    K steps ``loss_sum [R, S, 1]``, and the rule's final state.  A family's ``client_run`` returns it with
    ``run.sending(uploads, keeps)``: what its clients upload beyond model and loss (SCAFFOLD's ``c_i+ - c_i``; each
    ``[R, S, ...]``) and the new rows of their own state, which stay on the clients (``c_i+``).  The server's part
    reads ``X``, ``loss_sum`` and ``uploads``, never ``state``."""

    X: Tensor
    loss_sum: Tensor
    state: RuleState
    steps: int
    uploads: dict[str, Tensor] = field(default_factory=dict)
    keeps: dict[str, Tensor] = field(default_factory=dict)

    def sending(self, uploads: dict[str, Tensor] | None = None, keeps: dict[str, Tensor] | None = None) -> ClientRun:
        """This run with what the clients upload and what they keep."""
        return replace(self, uploads=dict(uploads or {}), keeps=dict(keeps or {}))

    @property
    def mean_loss(self) -> Tensor:
        """Each client's mean minibatch loss over its local steps ``[R, S, 1]``."""
        return self.loss_sum / self.steps


def train_clients(
    x: Tensor, batch: RoundBatch, oracle: GradientOracle, rule: ClientRule, *, move_last: bool = True
) -> ClientRun:
    """K local steps of ``rule`` on all S sampled clients of each of the R runs, from their run's server model
    ``x [R, 1, d]``: ``X <- X - eta D`` with ``(D, eta)`` from ``rule``, in place in one fused pass.  The oracle
    writes every step's gradients of the ``[R*S, d]`` clients into one buffer the loop owns; each move is recorded
    (``batch.record``) for drift plots.  ``move_last=False`` computes the last step's update (and so the rule's
    state) without moving: FAFED's averaging step takes its place."""
    R, S, K = batch.runs, batch.clients_per_round, batch.local_steps
    X = x.expand(R, S, -1).clone()
    G = torch.empty_like(X)
    flat_X, flat_G = X.view(R * S, -1), G.view(R * S, -1)
    state = rule.init(X)
    loss_sum = X.new_zeros(R, S, 1)
    for k in range(K):
        inputs, targets = batch.step(k)
        random_state = oracle.random_state()
        loss = oracle(flat_X, inputs, targets, out=flat_G)[0].view(R, S, 1)
        step = Step(k, X, G, loss, inputs, targets, oracle, random_state)
        update, state = rule.update(Update(G, 1.0), state, step)
        loss_sum += loss
        if k < K - 1 or move_last:
            direction, eta = update  # X <- X - eta D in place, in one fused pass (no [R, S, d] temporary)
            if isinstance(eta, Tensor):
                X.addcmul_(eta, direction, value=-1)
            else:
                X.add_(direction, alpha=-eta)
            batch.record(X)
    return ClientRun(X, loss_sum, state, K)


def _at(value: PerStep, k: int) -> float:
    return value(k) if callable(value) else value


def _per_step(name: str, value: PerStep, positive: bool = True) -> PerStep:
    """A per-step value: a function of k (taken as it is) or a finite number (> 0 for a step size)."""
    if callable(value):
        return value
    return check_positive(name, value) if positive else check_number(name, value)


def _stateless(transform: Callable[[Update, Step], Update]) -> ClientRule:
    return ClientRule(lambda X: (), lambda update, state, step: (transform(update, step), state))


def chain(*rules: ClientRule) -> ClientRule:
    """Apply ``rules`` in order; the state is the tuple of their states."""

    def init(X: Tensor) -> tuple:
        return tuple(rule.init(X) for rule in rules)

    def update(u: Update, states: tuple, step: Step) -> tuple[Update, tuple]:
        new_states = []
        for rule, state in zip(rules, states):
            u, state = rule.update(u, state, step)
            new_states.append(state)
        return u, tuple(new_states)

    return ClientRule(init, update)


def named(**rules: ClientRule) -> ClientRule:
    """Apply ``rules`` in the order given, as :func:`chain` does; the state is ``{name: state}``, so a family reads
    what a rule kept by name (``run.state["summed_gradients"]``)."""
    chained = chain(*rules.values())

    def init(X: Tensor) -> dict[str, RuleState]:
        return dict(zip(rules, chained.init(X)))

    def update(u: Update, states: dict[str, RuleState], step: Step) -> tuple[Update, dict[str, RuleState]]:
        u, new_states = chained.update(u, tuple(states.values()), step)
        return u, dict(zip(rules, new_states))

    return ClientRule(init, update)


def learning_rate(eta: PerStep) -> ClientRule:
    """Multiply the step size by ``eta`` (a float, or a function of the local step k)."""
    eta = _per_step("eta", eta)
    return _stateless(lambda u, step: Update(u.direction, u.step_size * _at(eta, step.k)))


def scale(factor: PerStep) -> ClientRule:
    """``D <- factor D`` (a float, or a function of the local step k)."""
    factor = _per_step("factor", factor, positive=False)
    return _stateless(lambda u, step: Update(_at(factor, step.k) * u.direction, u.step_size))


def divide(A: Tensor) -> ClientRule:
    """``D <- D / A``: a diagonal preconditioner, per run ``A [R, 1, d]`` (FAFED's) or per client ``[R, S, d]``."""
    return _stateless(lambda u, step: Update(u.direction / A, u.step_size))


def add(term: Tensor | Callable[[Step], Tensor]) -> ClientRule:
    """``D <- D + term``: a fixed correction (SCAFFOLD's ``c - c_i``) or one computed from the step
    (FedProx's ``mu (X - x)``)."""
    return _stateless(lambda u, step: Update(u.direction + (term(step) if callable(term) else term), u.step_size))


def normalize() -> ClientRule:
    """``D_i <- D_i / ||D_i||`` per client (a zero direction stays zero): PAdaMFed's normalized step."""

    def transform(u: Update, step: Step) -> Update:
        norms = u.direction.norm(dim=-1, keepdim=True)
        return Update(torch.where(norms > 0, u.direction / norms, 0.0), u.step_size)

    return _stateless(transform)


def storm(alpha: PerStep, initial: Tensor, previous_points: Tensor) -> ClientRule:
    """STORM (Cutkosky & Orabona 2019), as STEM and FAFED use it (Wu et al., eq. 3):

        m_k = D_k + (1 - alpha_k) (m_{k-1} - grad F(x_{k-1}; xi_k))

    ``D_k`` the incoming direction (the gradient at ``x_k`` on minibatch ``xi_k``, plus any correction added
    before), the second gradient on the **same** minibatch and dropout masks at each client's previous point.
    ``initial`` is ``m_0``, ``previous_points [R, S, d]`` the clients' previous points at the first step."""

    def init(X: Tensor) -> Storm:
        return Storm(initial, previous_points.clone())

    def update(u: Update, state: Storm, step: Step) -> tuple[Update, Storm]:
        m = u.direction + (1 - _at(alpha, step.k)) * (state.momentum - step.gradient_at(state.previous))
        state.previous.copy_(step.X)
        return Update(m, u.step_size), Storm(m, state.previous)

    return ClientRule(init, update)


class Storm(NamedTuple):
    """:func:`storm`'s state: each client's momentum ``m`` and previous point ``[R, S, d]`` (after the last step, the
    last point evaluated: FAFED's clients keep it)."""

    momentum: Tensor
    previous: Tensor


class LineSearch(NamedTuple):
    """:func:`armijo`'s state: each client's last step size ``[R, S, 1]`` (which FedLi reports) and its loss
    evaluations at each step so far ``[R, S, k]`` (one evaluation probes all of a run's clients at once, so a step
    costs the most that any of them needed: ``tries.amax(dim=1)``)."""

    step_size: Tensor
    tries: Tensor


def _second_moment(beta: float, v: Tensor, G: Tensor) -> Tensor:
    return beta * v + (1 - beta) * G.square()


def track_second_moment(beta: float, initial: Tensor) -> ClientRule:
    """``v_k = beta v_{k-1} + (1 - beta) G_k^2`` in the state, the direction unchanged (FAFED eq. 2)."""
    check_range("beta", beta, 0, 1)
    return ClientRule(lambda X: initial, lambda u, v, step: (u, _second_moment(beta, v, step.G)))


def scale_by_rms(beta: float, initial: Tensor) -> ClientRule:
    """``v_k = beta v_{k-1} + (1 - beta) G_k^2``, ``D <- D / sqrt(v_k)`` (0 where ``v = 0``): each client
    its own Adam-style scaling without momentum (Wu et al., Algorithm 1)."""
    check_range("beta", beta, 0, 1)

    def update(u: Update, v: Tensor, step: Step) -> tuple[Update, Tensor]:
        v = _second_moment(beta, v, step.G)
        return Update(torch.where(v > 0, u.direction / v.sqrt(), 0.0), u.step_size), v

    return ClientRule(lambda X: initial, update)


def accumulate_gradients() -> ClientRule:
    """``sum <- sum + G_k`` in the state, the direction unchanged (PAdaMFed's ``c_i`` is ``sum / K``)."""
    return ClientRule(torch.zeros_like, lambda u, total, step: (u, total + step.G))


def accumulate_directions() -> ClientRule:
    """``sum <- sum + D_k`` in the state, the direction unchanged (PAdaMFed's server momentum as the clients' mean
    direction: ``sum / K``)."""
    return ClientRule(torch.zeros_like, lambda u, total, step: (u, total + u.direction))


def armijo(
    c: float = 0.1, backtrack: float = 0.9, eta_max: float = 1.0, growth: float | Tensor = 1.0,
    initial: float | Tensor | None = None, max_backtracks: int = 100, fallback: float | None = None,
) -> ClientRule:
    """The stochastic Armijo line search (Vaswani et al., NeurIPS 2019), each client its own step: from
    ``eta = min(eta_max, growth * eta_prev)`` shrink ``eta <- backtrack * eta`` until

        F(X_i - eta_i D_i; xi) <= F(X_i; xi) - c eta_i <G_i, D_i>

    on the same minibatch and dropout masks; a client that satisfies it stops.  The step size ``eta [R, S, 1]``
    replaces the incoming one.  State :class:`LineSearch`.  ``initial`` is ``eta_prev`` at the first step (a number
    or per client ``[R, S, 1]``; None: ``eta_max``); ``growth = gamma^(b/n)`` is Vaswani's "reset" heuristic (a
    number or per client; 1 keeps it).  A client whose search fails ``max_backtracks`` times moves by ``fallback``
    (SLS: 1e-6) or, when None, by its last shrunken step ``start * backtrack^max_backtracks``; either way its state
    keeps that last step, from which the next step grows.
    """
    check_range("c", c, 0, 1, low_closed=False, high_closed=False)
    check_range("backtrack", backtrack, 0, 1, low_closed=False, high_closed=False)
    check_positive("eta_max", eta_max)
    if isinstance(growth, Tensor):
        if not bool((growth > 0).all()):
            raise ValueError(f"growth={growth.flatten()[:5].tolist()}... must be > 0 for every client")
    else:
        check_positive("growth", growth)
    if initial is not None and not isinstance(initial, Tensor):
        check_positive("initial", initial)
    if fallback is not None:
        check_positive("fallback", fallback)
    check_int("max_backtracks", max_backtracks)

    def init(X: Tensor) -> LineSearch:
        start = eta_max if initial is None else initial
        eta = start if isinstance(start, Tensor) else X.new_zeros(*X.shape[:-1], 1) + start
        return LineSearch(eta, X.new_zeros(*X.shape[:-1], 0))

    def update(u: Update, state: LineSearch, step: Step) -> tuple[Update, LineSearch]:
        D, eta_prev = u.direction, state.step_size
        eta = torch.minimum(growth * eta_prev, eta_max + torch.zeros_like(eta_prev))
        decrease = c * (step.G * D).sum(dim=-1, keepdim=True)  # c <G, D>; c ||G||^2 for D = G
        done = torch.zeros_like(eta, dtype=torch.bool)
        tries = torch.zeros_like(eta)
        for _ in range(max_backtracks):
            tries += ~done
            done |= step.losses_at(step.X - eta * D) <= step.loss - eta * decrease
            if bool(done.all()):
                break
            eta = torch.where(done, eta, backtrack * eta)
        moved = eta if fallback is None else torch.where(done, eta, torch.full_like(eta, fallback))
        return Update(D, moved), LineSearch(eta, torch.cat([state.tries, tries], dim=-1))

    return ClientRule(init, update)
