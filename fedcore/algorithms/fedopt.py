"""FedOpt: FedAvg, FedAvgM, FedAdagrad, FedAdam, FedYogi and FedAMS.

Reddi et al., *Adaptive Federated Optimization*, ICLR 2021, Algorithm 1: each sampled client runs K steps of SGD from
the server model, ``x_i <- x_i - eta_l g_i``; the server treats the weighted mean move ``Delta_t = sum_i w_i (x_i,K -
x_t)`` as a pseudo-gradient and hands it to a server optimizer (:mod:`fedcore.server_opt`):

    FedAvg      x_{t+1} = x_t + eta Delta_t                         (eta = 1: McMahan et al.)
    FedAvgM     m_t = beta m_{t-1} + Delta_t,  x_{t+1} = x_t + eta m_t
    FedAdagrad / FedAdam / FedYogi   x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)   (Alg. 2)
    FedAMS      x_{t+1} = x_t + eta m_t / sqrt(max(v_hat_{t-1}, v_t))  (Wang et al., ICML 2022)

The variants are one class with a different server optimizer, not subclasses; FedProx
(:mod:`fedcore.algorithms.fedprox`) is this class with a client ``correction``.  One round (``x_t [R, 1, d]``, one row
per run; :func:`~fedcore.algorithms.client.train_clients`, :func:`~fedcore.server_opt.server_step`):

    X <- x_t (S rows);  K times: X <- X - eta_l (G(X) + correction)     (client.train_clients)
    x_{t+1} = x_t + server.update(Delta_t)                              (server_opt.server_step)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRule, ClientRun, chain, learning_rate, train_clients
from fedcore.algorithms.contract import Federated, Metrics, State
from fedcore.checks import check_keywords, check_positive
from fedcore.params import GradientOracle
from fedcore.schedules import Schedule, schedule_at
from fedcore.server_opt import ServerRule, server_step


class Correction(Protocol):
    """A term added to each client's gradient, given the round's server model ``x``
    (:class:`fedcore.algorithms.fedprox.Proximal`)."""

    def rule(self, x: Tensor) -> ClientRule: ...


class FedOptServer(NamedTuple):
    """The server's state: the model and its rule's state (FedAdam's ``m``, ``v``, ``t``)."""

    x: Tensor
    server: State


@dataclass(frozen=True)
class FedOpt(Federated):
    """Local SGD on the clients, a server optimizer on the pseudo-gradient (Reddi et al., Alg. 1).

    ``client_lr`` is ``eta_l``: a float or a schedule ``t -> eta_l`` (e.g.
    :func:`fedcore.schedules.exp_decay`).  ``server`` defaults to ``sgd(1.0)``: FedAvg.
    ``correction`` (None: plain SGD) adds a term to the clients' gradients (FedProx).
    """

    client_lr: float | Schedule
    server: ServerRule = field(default_factory=server_opt.sgd)
    name: str = "FedOpt"
    correction: Correction | None = None

    def __post_init__(self) -> None:
        schedule_at("client_lr", self.client_lr, 0)

    def eta_l(self, t: int) -> float:
        return schedule_at("client_lr", self.client_lr, t)

    def server_init(self, x: Tensor) -> FedOptServer:
        return FedOptServer(x, self.server.init(x))

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """The clients' part of a round (Alg. 1, ClientUpdate): K steps of SGD (plus the ``correction``) from
        ``x_t = sent["x"]`` on each of ``batch``'s clients; the clients keep nothing between rounds."""
        x = sent["x"]
        correction = [self.correction.rule(x)] if self.correction is not None else []
        return train_clients(x, batch, oracle, chain(*correction, learning_rate(self.eta_l(batch.t))))

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """The server's part (Alg. 1, lines 9-13): ``x_{t+1} = x_t + server.update(Delta_t)`` from the clients'
        models ``run.X``, weighted by ``batch.weights``; the numbers its rule reports (FedExP's ``eta_g``)."""
        x_next, server = server_step(self.server, state["server"], state["x"], run, batch)
        return {**state, "x": x_next, "server": server}, {key: server[key] for key in self.server.reports}

    def eval_point(self, state: State) -> Tensor:
        """The iterate, or where the server rule says a run is evaluated (FedExP: the mean of its last two)."""
        return self.server.eval_point(state["x"], state["server"])


def server_learning_rate(server_lr: float) -> float:
    """``server_lr`` checked under its own name (the server optimizer calls it ``lr``)."""
    return check_positive("server_lr", server_lr)


def _with_options(client_lr: float | Schedule, optimizer, server_lr: float, options: dict, name: str) -> FedOpt:
    """FedOpt with ``optimizer(server_lr, **options)``, the options checked by name first (``fedadam(beta3=1)``)."""
    check_keywords(optimizer, options, f"{name.lower()}(client_lr, server_lr, **options)", exclude=("lr",))
    return FedOpt(client_lr, optimizer(server_learning_rate(server_lr), **options), name)


def fedavg(client_lr: float | Schedule, *, server_lr: float = 1.0) -> FedOpt:
    """FedAvg: ``x_{t+1} = x_t + eta Delta_t`` (``server_lr = 1``: McMahan et al. 2017)."""
    return FedOpt(client_lr, server_opt.sgd(server_learning_rate(server_lr)), "FedAvg")


def fedavgm(client_lr: float | Schedule, *, server_lr: float = 1.0, beta: float = 0.9) -> FedOpt:
    """FedAvgM (Hsu et al. 2019): ``m_t = beta m_{t-1} + Delta_t``, ``x_{t+1} = x_t + eta m_t``."""
    return FedOpt(client_lr, server_opt.sgdm(server_learning_rate(server_lr), beta), "FedAvgM")


def fedadagrad(client_lr: float | Schedule, *, server_lr: float = 0.1, **options) -> FedOpt:
    """FedAdagrad (Reddi et al., Alg. 2); ``options`` go to :func:`fedcore.server_opt.adagrad`."""
    return _with_options(client_lr, server_opt.adagrad, server_lr, options, "FedAdagrad")


def fedadam(client_lr: float | Schedule, *, server_lr: float = 0.01, **options) -> FedOpt:
    """FedAdam (Reddi et al., Alg. 2); ``options`` go to :func:`fedcore.server_opt.adam`."""
    return _with_options(client_lr, server_opt.adam, server_lr, options, "FedAdam")


def fedyogi(client_lr: float | Schedule, *, server_lr: float = 0.01, **options) -> FedOpt:
    """FedYogi (Reddi et al., Alg. 2); ``options`` go to :func:`fedcore.server_opt.yogi`."""
    return _with_options(client_lr, server_opt.yogi, server_lr, options, "FedYogi")


def fedams(client_lr: float | Schedule, *, server_lr: float = 0.01, **options) -> FedOpt:
    """FedAMS (Wang, Lin & Chen, ICML 2022); ``options`` go to :func:`fedcore.server_opt.amsgrad`."""
    return _with_options(client_lr, server_opt.amsgrad, server_lr, options, "FedAMS")
