"""Server rules on flat vectors, each a frozen dataclass of its hyperparameters with ``init`` and ``update`` (the
optax shape; its numbers are values, as ``optax.inject_hyperparams`` makes them, so a pass stacks them like any other
field and a user's rule written the same way batches with no registration).

``state = rule.init(x)``; ``step, state = rule.update(delta, state, **extras)``; ``x = x + step``
(:func:`server_step`).  ``delta`` is the round's pseudo-gradient ``Delta_t = sum_i w_i (x_i,K - x_t)``, the
direction the clients moved, so every rule *adds* its step.  ``x``, ``delta``, the step and a rule's state are
``[R, 1, d]`` for the R runs of a pass (a number per run ``[R, 1, 1]``, a counter 0-d); a hyperparameter a number or
``[R, 1, 1]``.  ``extras`` is what else the round knows: ``x``, ``client_moves`` (``[R, S, d]``), ``client_losses``
(``[R, S, 1]``, each client's mean minibatch loss) and ``weights`` (``[R, 1, S]``), which FedExP's
:class:`~fedcore.algorithms.fedexp.Extrapolation` and FedLi-LU's :class:`~fedcore.algorithms.fedli.DeepFrankWolfe`
read; the rules here need none (Reddi et al., *Adaptive Federated Optimization*, ICLR 2021, Algorithms 1-2):

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

import re
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch import Tensor

from fedcore.checks import check_bool, check_choice, check_keywords, check_positive, check_range

if TYPE_CHECKING:
    from fedcore.algorithms.batch import RoundBatch
    from fedcore.algorithms.client import ClientRun

State = dict[str, Tensor]


def dot(a: Tensor, b: Tensor) -> Tensor:
    """``<a, b>`` over the last dimension, kept: ``[R, 1, 1]`` for two models ``[R, 1, d]``, ``[R, S, 1]``
    for two client matrices (a rule that needs a norm reads it the same way for one run or a pass)."""
    return (a * b).sum(dim=-1, keepdim=True)


def shown(value: Any) -> str:
    """A hyperparameter as a name shows it: ``0.01``, ``per-run`` for the values of a pass of runs, a text as it is."""
    if isinstance(value, Tensor) and value.dim() > 0:
        return "per-run"
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)


@dataclass(frozen=True)
class ServerRule:
    """A server rule: subclass it with a frozen dataclass whose fields are the hyperparameters and define
    ``update(delta, state, **extras) -> (step, state)`` (and ``init(x) -> state`` when it keeps one).  A rule whose
    state holds a number a reader wants each round names it in ``reports`` (FedExP's ``eta_g``: a metric of the
    round), and one evaluated elsewhere than at its iterate overrides ``eval_point`` (FedExP: the mean of its last
    two iterates)."""

    reports = ()  # the keys of its state that are metrics of every round

    def init(self, x: Tensor) -> State:
        return {}

    def update(self, delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        raise NotImplementedError(f"{type(self).__name__} must define update(delta, state, **extras)")

    def eval_point(self, x: Tensor, state: State) -> Tensor:
        return x

    @property
    def name(self) -> str:
        """``adam(lr=0.01, ...)``: the rule and its hyperparameters (``per-run`` for a pass's values)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)
                  if isinstance(getattr(self, f.name), (float, Tensor)) or getattr(self, f.name) != f.default}
        snake = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", type(self).__name__).lower()  # DeepFrankWolfe: deep_frank_wolfe
        return f"{snake}({', '.join(f'{key}={shown(value)}' for key, value in values.items())})"


@dataclass(frozen=True)
class SGD(ServerRule):
    """``x_{t+1} = x_t + eta Delta_t``; ``lr = 1`` is McMahan et al.'s FedAvg."""

    lr: float | Tensor = 1.0

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)

    def update(self, delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        return self.lr * delta, state


@dataclass(frozen=True)
class SGDM(ServerRule):
    """FedAvgM (Hsu et al. 2019): ``m_t = beta m_{t-1} + Delta_t`` from ``m_{-1} = 0``, ``x_{t+1} = x_t + eta m_t``."""

    lr: float | Tensor = 1.0
    beta: float | Tensor = 0.9

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("beta", self.beta, 0, 1)

    def init(self, x: Tensor) -> State:
        return {"m": torch.zeros_like(x)}

    def update(self, delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        m = self.beta * state["m"] + delta
        return self.lr * m, {"m": m}


@dataclass(frozen=True)
class Adaptive(ServerRule):
    """The shared FedAdagrad/FedAdam/FedYogi step ``x + eta m_t / (sqrt(v_t) + tau)``, each subclass's ``rule``
    choosing ``v_t`` (:class:`Adagrad`, :class:`Adam`, :class:`Yogi`).  With ``report``, each round also reports how
    adaptive the step was, in O(d): ``sqrt_v_over_tau``, the geometric mean over the coordinates of ``sqrt(v_t) / tau``
    (far below 1, ``tau`` sets the denominator), and ``denominator_spread``, the denominator's geometric standard
    deviation over the coordinates (near 1, every coordinate takes the same rate: server momentum SGD)."""

    rule: ClassVar[str]
    lr: float | Tensor = 0.01
    _: KW_ONLY
    beta1: float | Tensor = 0.9
    beta2: float | Tensor = 0.99
    tau: float | Tensor = 1e-3
    bias_correction: str = "none"
    tau_inside_sqrt: bool = False
    initial_v: str = "tau^2"
    report: bool = False

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("beta1", self.beta1, 0, 1)
        check_range("beta2", self.beta2, 0, 1)
        check_positive("tau", self.tau)
        check_choice("bias_correction", self.bias_correction, ("none", "keras", "flower"))
        check_choice("initial_v", self.initial_v, ("tau^2", "zero"))
        check_bool("tau_inside_sqrt", self.tau_inside_sqrt)
        check_bool("report", self.report)

    @property
    def reports(self) -> tuple[str, ...]:
        return ("sqrt_v_over_tau", "denominator_spread") if self.report else ()

    def next_v(self, v: Tensor, delta_sq: Tensor) -> Tensor:
        """``v_t`` from ``v_{t-1}`` and ``Delta_t^2``: Adagrad's sum, Adam's average or Yogi's signed step."""
        if self.rule == "adagrad":
            return v + delta_sq
        if self.rule == "adam":
            return self.beta2 * v + (1 - self.beta2) * delta_sq
        return v - (1 - self.beta2) * delta_sq * torch.sign(v - delta_sq)

    def denominator(self, v: Tensor) -> Tensor:
        return (v + self.tau).sqrt() if self.tau_inside_sqrt else v.sqrt() + self.tau

    def bias_factor(self, t: int) -> float | Tensor:
        """Keras/TFF ``sqrt(1 - beta2^t) / (1 - beta1^t)``; Flower counts t from 2 in round 1."""
        if self.bias_correction == "none":
            return 1.0
        t = t + 1 if self.bias_correction == "flower" else t
        return (1 - self.beta2**t) ** 0.5 / (1 - self.beta1**t)

    def reported(self, v: Tensor, below: Tensor) -> State:  # numbers per run, [R, 1, 1] beside v [R, 1, d]
        if not self.report:
            return {}
        return {"sqrt_v_over_tau": (v.log().mean(dim=-1, keepdim=True) / 2).exp() / self.tau,
                "denominator_spread": below.log().std(dim=-1, keepdim=True).exp()}

    def init(self, x: Tensor) -> State:
        v = torch.zeros_like(x) + (self.tau**2 if self.initial_v == "tau^2" else 0.0)
        return {"m": torch.zeros_like(x), "v": v, "t": torch.zeros((), dtype=torch.long),
                **self.reported(v, self.denominator(v))}

    def update(self, delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        t = state["t"] + 1
        m = self.beta1 * state["m"] + (1 - self.beta1) * delta
        v = self.next_v(state["v"], delta * delta)
        below = self.denominator(v)  # once a round: the step's, and the reported spread's
        eta_t = self.lr * self.bias_factor(int(t))
        return eta_t * m / below, {"m": m, "v": v, "t": t, **self.reported(v, below)}


@dataclass(frozen=True)
class Adagrad(Adaptive):
    """FedAdagrad (Reddi et al. 2021, Alg. 2): ``v_t = v_{t-1} + Delta_t^2``; ``beta1=0`` drops momentum."""

    rule = "adagrad"
    lr: float | Tensor = 0.1
    beta2: float | Tensor = field(default=0.0, init=False)  # Adagrad has none (its bias correction reads 0)


@dataclass(frozen=True)
class Adam(Adaptive):
    """FedAdam (Reddi et al. 2021, Alg. 2): ``v_t = beta2 v_{t-1} + (1 - beta2) Delta_t^2``."""

    rule = "adam"


@dataclass(frozen=True)
class Yogi(Adaptive):
    """FedYogi (Reddi et al. 2021, Alg. 2): ``v_t = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2)``."""

    rule = "yogi"


@dataclass(frozen=True)
class AMSGrad(ServerRule):
    """FedAMS (Wang, Lin & Chen, ICML 2022): m, v as FedAdam (``v_{-1} = 0``),
    ``v_hat_t = max(v_hat_{t-1}, v_t)`` with ``v_hat_{-1} = eps``, ``x_{t+1} = x_t + eta m_t / sqrt(v_hat_t)``.
    The default ``eps = 1e-6`` makes the smallest denominator ``1e-3``, FedAdam's tau."""

    lr: float | Tensor = 0.01
    beta1: float | Tensor = 0.9
    beta2: float | Tensor = 0.99
    eps: float | Tensor = 1e-6

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("beta1", self.beta1, 0, 1)
        check_range("beta2", self.beta2, 0, 1)
        check_positive("eps", self.eps)

    def init(self, x: Tensor) -> State:
        return {"m": torch.zeros_like(x), "v": torch.zeros_like(x), "v_hat": torch.zeros_like(x) + self.eps}

    def update(self, delta: Tensor, state: State, **extras: Tensor) -> tuple[Tensor, State]:
        m = self.beta1 * state["m"] + (1 - self.beta1) * delta
        v = self.beta2 * state["v"] + (1 - self.beta2) * delta * delta
        v_hat = torch.maximum(state["v_hat"], v)
        return self.lr * m / v_hat.sqrt(), {"m": m, "v": v, "v_hat": v_hat}


sgd, sgdm, adagrad, adam, yogi, amsgrad = SGD, SGDM, Adagrad, Adam, Yogi, AMSGrad  # make()'s names

SERVER_OPTIMIZERS: dict[str, Callable[..., ServerRule]] = {
    "sgd": sgd, "sgdm": sgdm, "adagrad": adagrad, "adam": adam, "yogi": yogi, "amsgrad": amsgrad,
}


def make(name: str, **hyperparameters: float) -> ServerRule:
    """A server rule by name: ``make("adam", lr=0.03, tau=1e-3)``."""
    factory = SERVER_OPTIMIZERS[check_choice("server optimizer", name, SERVER_OPTIMIZERS)]
    check_keywords(factory, hyperparameters, f"make({name!r})")
    return factory(**hyperparameters)


def server_step(rule: ServerRule, state: State, x: Tensor, run: ClientRun, batch: RoundBatch) -> tuple[Tensor, State]:
    """``x_{t+1} = x_t + step``, the step from the server ``rule`` on the pseudo-gradient
    ``Delta_t = sum_i w_i (x_i,K - x_t)`` (the weighted direction the clients moved; ``[R, 1, d]``, one per
    run).  The rule also sees ``x``, each client's move ``[R, S, d]``, their mean losses ``[R, S, 1]``
    and their weights ``[R, 1, S]`` (FedExP and FedLi-LU read them; the FedOpt rules ignore them).  Returns
    ``(x_{t+1}, state)``."""
    moves = run.X - x
    delta = batch.weights @ moves
    step, state = rule.update(delta, state, x=x, client_moves=moves, client_losses=run.mean_loss,
                              weights=batch.weights)
    return x + step, state
