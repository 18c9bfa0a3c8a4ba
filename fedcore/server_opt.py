"""Server optimizers on flat vectors, as ``(init, update)`` pairs (the optax shape).

``state = opt.init(x)``; ``step, state = opt.update(delta, state, **extras)``; ``x = x + step``
(:func:`fedcore.algorithms.contract.server_step`).  ``delta`` is the round's pseudo-gradient in the direction the
clients moved, ``Delta_t = sum_i w_i (x_i,K - x_t)``, so every rule *adds* its step.  Every tensor leads with the R
runs of a pass (R = 1 for one run): ``x``, ``delta``, the step and a rule's state are ``[R, 1, d]`` (a number per run
``[R, 1, 1]``, a counter 0-d), a hyperparameter a number or ``[R, 1, 1]`` (:func:`fedcore.engine.passes.stack`).
``extras`` is what else the round knows, the way optax passes extra arguments: ``x``, ``client_moves``
(``[R, S, d]``, each ``x_i,K - x_t``), ``client_losses`` (``[R, S, 1]``, each client's mean minibatch loss) and
``weights`` (``[R, 1, S]``).  A rule reads the ones it needs and ignores the rest (FedExP's
:func:`~fedcore.algorithms.fedexp.extrapolation`, FedLi-LU's :func:`~fedcore.algorithms.fedli.deep_frank_wolfe`);
the rules here need none (Reddi et al., *Adaptive Federated Optimization*, ICLR 2021, Algorithms 1-2):

    m_t = beta1 m_{t-1} + (1 - beta1) Delta_t                       m_{-1} = 0
    v_t = v_{t-1} + Delta_t^2                                        FedAdagrad
    v_t = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)  FedYogi
    v_t = beta2 v_{t-1} + (1 - beta2) Delta_t^2                     FedAdam      v_{-1} = tau^2
    x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)

The defaults are the paper's rule.  Other libraries differ, and each difference is an
option: ``bias_correction`` ("keras": ``eta_t = eta sqrt(1 - beta2^t) / (1 - beta1^t)``;
"flower": the same with t counted from 2 in round 1), ``tau_inside_sqrt``
(``sqrt(v_t + tau)``, TFF's Adagrad), ``initial_v`` ("tau^2" or "zero", Flower/Keras)
and ``beta1=0`` for Adagrad without momentum (Flower, Keras).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor

from fedcore.checks import check_bool, check_choice, check_keywords, check_positive, check_range

State = dict[str, Tensor]
SecondMoment = Callable[[Tensor, Tensor], Tensor]


class ServerOptimizer(NamedTuple):
    """``init(x) -> state``; ``update(delta, state, **extras) -> (step, state)``; the server adds ``step``.  A rule
    whose state holds a number a reader wants each round names it in ``reports`` (FedExP's ``eta_g``: a metric of
    the round), and one evaluated elsewhere than at its iterate gives ``eval_point(x, state)`` (FedExP: the mean of
    its last two iterates)."""

    init: Callable[[Tensor], State]
    update: Callable[..., tuple[Tensor, State]]
    name: str
    options: tuple[tuple[str, Any], ...] = ()  # every hyperparameter: what a run's identity compares
    reports: tuple[str, ...] = ()  # the keys of its state that are metrics of every round
    eval_point: Callable[[Tensor, State], Tensor] | None = None  # None: the iterate x itself


def dot(a: Tensor, b: Tensor) -> Tensor:
    """``<a, b>`` over the last dimension, kept: ``[R, 1, 1]`` for two models ``[R, 1, d]``, ``[R, S, 1]``
    for two client matrices (a rule that needs a norm reads it the same way for one run or a pass)."""
    return (a * b).sum(dim=-1, keepdim=True)


def shown(value: Any) -> str:
    """A hyperparameter as a name shows it: ``0.01``, or ``per-run`` for the values of a pass of runs."""
    return "per-run" if isinstance(value, Tensor) and value.dim() > 0 else f"{value:g}"


def sgd(lr: float = 1.0) -> ServerOptimizer:
    """``x_{t+1} = x_t + eta Delta_t``; ``lr = 1`` is McMahan et al.'s FedAvg."""
    check_positive("lr", lr)

    def init(x: Tensor) -> State:
        return {}

    def update(delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        return lr * delta, state

    return ServerOptimizer(init, update, f"sgd(lr={shown(lr)})", (("rule", "sgd"), ("lr", lr)))


def sgdm(lr: float = 1.0, beta: float = 0.9) -> ServerOptimizer:
    """FedAvgM (Hsu et al. 2019): ``m_t = beta m_{t-1} + Delta_t``, ``x_{t+1} = x_t + eta m_t``."""
    check_positive("lr", lr)
    check_range("beta", beta, 0, 1)

    def init(x: Tensor) -> State:
        return {"m": torch.zeros_like(x)}

    def update(delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        m = beta * state["m"] + delta
        return lr * m, {"m": m}

    every = (("rule", "sgdm"), ("lr", lr), ("beta", beta))
    return ServerOptimizer(init, update, f"sgdm(lr={shown(lr)}, beta={shown(beta)})", every)


def _adagrad_v(beta2: float) -> SecondMoment:
    return lambda v, delta_sq: v + delta_sq


def _adam_v(beta2: float) -> SecondMoment:
    return lambda v, delta_sq: beta2 * v + (1 - beta2) * delta_sq


def _yogi_v(beta2: float) -> SecondMoment:
    return lambda v, delta_sq: v - (1 - beta2) * delta_sq * torch.sign(v - delta_sq)


def _bias_factor(rule: str, t: int, beta1: float, beta2: float) -> float:
    """Keras/TFF ``sqrt(1 - beta2^t) / (1 - beta1^t)``; Flower counts t from 2 in round 1."""
    if rule == "none":
        return 1.0
    t = t + 1 if rule == "flower" else t
    return (1 - beta2**t) ** 0.5 / (1 - beta1**t)


def _adaptive(
    name: str,
    second_moment: Callable[[float], SecondMoment],
    lr: float,
    beta1: float,
    beta2: float,
    tau: float,
    bias_correction: str,
    tau_inside_sqrt: bool,
    initial_v: str,
    report: bool = False,
) -> ServerOptimizer:
    """The shared FedAdagrad/FedAdam/FedYogi step: ``x + eta m_t / (sqrt(v_t) + tau)``.  With ``report``, each round
    also reports how adaptive the step was: ``sqrt_v_over_tau``, the geometric mean over the coordinates of
    ``sqrt(v_t) / tau`` (a typical coordinate; far below 1, ``tau`` sets the denominator), and
    ``denominator_spread``, the geometric standard deviation of the denominator over the coordinates (near 1, every
    coordinate takes the same rate and the step is server momentum SGD, whatever sets the denominator; the larger,
    the more the step adapts per coordinate).  Both are O(d) (a median would sort)."""
    check_positive("lr", lr)
    check_range("beta1", beta1, 0, 1)
    check_range("beta2", beta2, 0, 1)
    check_positive("tau", tau)
    check_choice("bias_correction", bias_correction, ("none", "keras", "flower"))
    check_choice("initial_v", initial_v, ("tau^2", "zero"))
    tau_inside_sqrt = check_bool("tau_inside_sqrt", tau_inside_sqrt)
    report = check_bool("report", report)
    next_v = second_moment(beta2)
    v0 = tau**2 if initial_v == "tau^2" else 0.0

    def denominator(v: Tensor) -> Tensor:
        return (v + tau).sqrt() if tau_inside_sqrt else v.sqrt() + tau

    def reported(v: Tensor, below: Tensor) -> State:  # numbers per run, [R, 1, 1] beside v [R, 1, d]
        if not report:
            return {}
        return {"sqrt_v_over_tau": (v.log().mean(dim=-1, keepdim=True) / 2).exp() / tau,
                "denominator_spread": below.log().std(dim=-1, keepdim=True).exp()}

    def init(x: Tensor) -> State:
        v = torch.zeros_like(x) + v0
        return {"m": torch.zeros_like(x), "v": v, "t": torch.zeros((), dtype=torch.long), **reported(v, denominator(v))}

    def update(delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        t = state["t"] + 1
        m = beta1 * state["m"] + (1 - beta1) * delta
        v = next_v(state["v"], delta * delta)
        below = denominator(v)  # once a round: the step's, and the reported spread's
        eta_t = lr * _bias_factor(bias_correction, int(t), beta1, beta2)
        return eta_t * m / below, {"m": m, "v": v, "t": t, **reported(v, below)}

    options = f"lr={shown(lr)}, beta1={shown(beta1)}, beta2={shown(beta2)}, tau={shown(tau)}"
    every = (("rule", name), ("lr", lr), ("beta1", beta1), ("beta2", beta2), ("tau", tau),
             ("bias_correction", bias_correction), ("tau_inside_sqrt", tau_inside_sqrt), ("initial_v", initial_v))
    every += (("report", True),) if report else ()  # a run that reports is another run; one that does not is unchanged
    reports = ("sqrt_v_over_tau", "denominator_spread") if report else ()
    return ServerOptimizer(init, update, f"{name}({options})", every, reports=reports)


def adagrad(
    lr: float = 0.1, beta1: float = 0.9, tau: float = 1e-3, *, bias_correction: str = "none",
    tau_inside_sqrt: bool = False, initial_v: str = "tau^2", report: bool = False,
) -> ServerOptimizer:
    """FedAdagrad (Reddi et al. 2021, Alg. 2): ``v_t = v_{t-1} + Delta_t^2``; ``beta1=0`` drops momentum.  ``report``:
    each round's ``sqrt_v_over_tau`` and ``denominator_spread`` (:func:`_adaptive`)."""
    return _adaptive("adagrad", _adagrad_v, lr, beta1, 0.0, tau, bias_correction, tau_inside_sqrt, initial_v, report)


def adam(
    lr: float = 0.01, beta1: float = 0.9, beta2: float = 0.99, tau: float = 1e-3, *,
    bias_correction: str = "none", tau_inside_sqrt: bool = False, initial_v: str = "tau^2", report: bool = False,
) -> ServerOptimizer:
    """FedAdam (Reddi et al. 2021, Alg. 2): ``v_t = beta2 v_{t-1} + (1 - beta2) Delta_t^2``.  ``report``: each
    round's ``sqrt_v_over_tau`` and ``denominator_spread`` (:func:`_adaptive`)."""
    return _adaptive("adam", _adam_v, lr, beta1, beta2, tau, bias_correction, tau_inside_sqrt, initial_v, report)


def yogi(
    lr: float = 0.01, beta1: float = 0.9, beta2: float = 0.99, tau: float = 1e-3, *,
    bias_correction: str = "none", tau_inside_sqrt: bool = False, initial_v: str = "tau^2", report: bool = False,
) -> ServerOptimizer:
    """FedYogi (Reddi et al. 2021, Alg. 2): ``v_t = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)``.
    ``report``: each round's ``sqrt_v_over_tau`` and ``denominator_spread`` (:func:`_adaptive`)."""
    return _adaptive("yogi", _yogi_v, lr, beta1, beta2, tau, bias_correction, tau_inside_sqrt, initial_v, report)


def amsgrad(lr: float = 0.01, beta1: float = 0.9, beta2: float = 0.99, eps: float = 1e-6) -> ServerOptimizer:
    """FedAMS (Wang, Lin & Chen, ICML 2022): m, v as FedAdam (``v_{-1} = 0``),
    ``v_hat_t = max(v_hat_{t-1}, v_t)`` with ``v_hat_{-1} = eps``, ``x_{t+1} = x_t + eta m_t / sqrt(v_hat_t)``.
    The default ``eps = 1e-6`` makes the smallest denominator ``1e-3``, FedAdam's tau."""
    check_positive("lr", lr)
    check_range("beta1", beta1, 0, 1)
    check_range("beta2", beta2, 0, 1)
    check_positive("eps", eps)

    def init(x: Tensor) -> State:
        return {"m": torch.zeros_like(x), "v": torch.zeros_like(x), "v_hat": torch.zeros_like(x) + eps}

    def update(delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        m = beta1 * state["m"] + (1 - beta1) * delta
        v = beta2 * state["v"] + (1 - beta2) * delta * delta
        v_hat = torch.maximum(state["v_hat"], v)
        return lr * m / v_hat.sqrt(), {"m": m, "v": v, "v_hat": v_hat}

    every = (("rule", "amsgrad"), ("lr", lr), ("beta1", beta1), ("beta2", beta2), ("eps", eps))
    name = f"amsgrad(lr={shown(lr)}, beta1={shown(beta1)}, beta2={shown(beta2)}, eps={shown(eps)})"
    return ServerOptimizer(init, update, name, every)


SERVER_OPTIMIZERS: dict[str, Callable[..., ServerOptimizer]] = {
    "sgd": sgd, "sgdm": sgdm, "adagrad": adagrad, "adam": adam, "yogi": yogi, "amsgrad": amsgrad,
}


def make(name: str, **hyperparameters: float) -> ServerOptimizer:
    """A server optimizer by name: ``make("adam", lr=0.03, tau=1e-3)``."""
    factory = SERVER_OPTIMIZERS[check_choice("server optimizer", name, SERVER_OPTIMIZERS)]
    check_keywords(factory, hyperparameters, f"make({name!r})")
    return factory(**hyperparameters)
