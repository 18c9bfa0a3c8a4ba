"""Cheap toy problems with closed-form answers, for explorers and tests.

:func:`server_optimizer_path` runs FedOpt (Reddi et al., *Adaptive Federated
Optimization*, ICLR 2021, Algorithms 1-2) on a 2-D federated least-squares problem and
records where the server model goes, so a figure can draw the path over the loss
contours.  It drives the real library (``fedcore.data.federated_quadratic``,
``fedcore.simulate`` with a per-round callback, :class:`fedcore.algorithms.FedOpt` and
:mod:`fedcore.server_opt`); with full participation and full-batch client steps every
round is deterministic.

The quadratic: client ``i`` holds ``(A, y_i)`` (one design ``A`` shared by all clients,
so every client has the same Hessian and FedAvg has no client-drift bias), and

    f(x) = 1/(2n) sum_i ||A x - y_i||^2,      f(x) - f* = 1/2 (x - x*)^T H (x - x*),
    H = 1/n sum_i A^T A.

With seed 7 (the default) ``H`` has eigenvalues 0.24 and 2.24 along the diagonals: a
tilted valley with condition number 9.5, where plain averaging crawls along the floor.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms import FedOpt
from fedcore.checks import check_choice, check_int, check_number, check_positive, check_range, check_seed
from fedcore.objectives import quadratic_2d
from fedcore.results import DivergedWarning
from fedcore.run import Problem, simulate

SERVER_OPTIMIZERS: tuple[str, ...] = tuple(server_opt.SERVER_OPTIMIZERS)
"""The names :func:`server_optimizer_path` accepts (those of :func:`fedcore.server_opt.make`)."""
SLIDERS_USED: dict[str, tuple[str, ...]] = {
    "sgd": ("server_lr",), "sgdm": ("server_lr", "beta1"),
    **{name: ("server_lr", "beta1", "tau") for name in ("adagrad", "adam", "yogi", "amsgrad")},
}
"""Which of ``server_lr``, ``beta1`` and ``tau`` each optimizer uses (:func:`server_optimizer_options`):
the explorer disables the others."""
DEFAULT_OFFSET: tuple[float, float] = (-2.0, 0.5)
"""Where a path starts, relative to ``x*``, unless ``start`` is given."""


def server_optimizer_options(optimizer: str, server_lr: float, beta1: float, tau: float) -> dict[str, float]:
    """The keyword arguments of ``fedcore.server_opt.make(optimizer, ...)`` that ``optimizer`` takes.

    ``sgd`` takes only ``lr``; ``sgdm`` takes ``beta1`` as its momentum ``beta``;
    ``adagrad``, ``adam`` and ``yogi`` take ``lr``, ``beta1`` and ``tau``; ``amsgrad``
    has no ``tau`` but a floor ``eps`` on ``v_hat``, so it gets ``eps = tau^2`` (its smallest
    denominator ``sqrt(eps)`` plays tau's role).  All three values are checked, used or not.

    >>> server_optimizer_options("sgdm", 1.0, 0.9, 1e-3)
    {'lr': 1.0, 'beta': 0.9}
    """
    check_choice("optimizer", optimizer, SERVER_OPTIMIZERS)
    check_positive("server_lr", server_lr)
    check_range("beta1", beta1, 0, 1)
    check_positive("tau", tau)
    if optimizer == "sgd":
        return {"lr": server_lr}
    if optimizer == "sgdm":
        return {"lr": server_lr, "beta": beta1}
    if optimizer == "amsgrad":
        return {"lr": server_lr, "beta1": beta1, "eps": tau**2}
    return {"lr": server_lr, "beta1": beta1, "tau": tau}


@dataclass
class ServerPath:
    """The server model ``x_t`` of each round and its loss gap ``f(x_t) - f*``.

    ``frame`` has index ``round`` (0 is the start) and columns ``x1``, ``x2`` and
    ``loss_gap``.  ``hessian``, ``x_star`` and ``f_star`` describe the quadratic, so
    :meth:`loss_gap` evaluates ``f - f*`` anywhere (for contour plots).
    """

    frame: pd.DataFrame
    optimizer: str
    x_star: Tensor
    hessian: Tensor
    f_star: float
    diverged_round: int | None = None

    @property
    def start(self) -> tuple[float, float]:
        first = self.frame.iloc[0]
        return float(first["x1"]), float(first["x2"])

    def final_gap(self) -> float:
        return float(self.frame["loss_gap"].iloc[-1])

    def loss_gap(self, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        """``f(x) - f* = 1/2 (x - x*)^T H (x - x*)`` at the points ``(x1, x2)`` (arrays of one shape)."""
        return _loss_gap(self.hessian, self.x_star, x1, x2)


def _loss_gap(hessian: Tensor, x_star: Tensor, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    (h11, h12), (_, h22) = hessian.tolist()
    d1 = np.asarray(x1, dtype=float) - float(x_star[0])
    d2 = np.asarray(x2, dtype=float) - float(x_star[1])
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging path overflows to inf
        return 0.5 * (h11 * d1 * d1 + 2 * h12 * d1 * d2 + h22 * d2 * d2)


def server_optimizer_path(
    optimizer: str = "adam",
    server_lr: float = 0.1,
    beta1: float = 0.9,
    tau: float = 1e-3,
    rounds: int = 50,
    *,
    client_lr: float = 0.1,
    local_steps: int = 5,
    start: tuple[float, float] | None = None,
    seed: int = 7,
) -> ServerPath:
    """FedOpt's server path on the 2-D federated quadratic (:func:`quadratic_2d` with ``seed``).

    Every round all clients take ``local_steps`` full-batch steps ``x_i <- x_i - eta_l grad f_i(x_i)``
    from ``x_t``; the server forms ``Delta_t = sum_i w_i (x_i,K - x_t)`` and applies
    ``optimizer`` (Reddi et al. 2021, Alg. 2; ``m_{-1} = 0``, ``v_{-1} = tau^2``)::

        m_t = beta1 m_{t-1} + (1 - beta1) Delta_t
        v_t = v_{t-1} + Delta_t^2                                       adagrad
        v_t = beta2 v_{t-1} + (1 - beta2) Delta_t^2                    adam
        v_t = v_{t-1} - (1 - beta2) Delta_t^2 sign(v_{t-1} - Delta_t^2) yogi
        x_{t+1} = x_t + eta m_t / (sqrt(v_t) + tau)

    ``sgd`` is ``x_{t+1} = x_t + eta Delta_t`` (``eta = 1``: FedAvg), ``sgdm`` is FedAvgM and
    ``amsgrad`` FedAMS; :func:`server_optimizer_options` says which of ``server_lr`` (eta),
    ``beta1`` and ``tau`` each takes.  ``start`` defaults to ``x* + DEFAULT_OFFSET``.  A run
    ends at the first round whose model or loss gap is not finite (``diverged_round``;
    ``frame`` keeps the rounds before it).
    """
    options = server_optimizer_options(optimizer, server_lr, beta1, tau)
    check_int("rounds", rounds)
    check_int("local_steps", local_steps)
    check_seed("seed", seed)
    point = None if start is None else _point(start)
    algorithm = FedOpt(client_lr, server_opt.make(optimizer, **options), optimizer)
    problem = quadratic_2d(seed)
    data = problem.data
    x_star = data.info["x_star"].cpu()
    if point is None:
        x0 = x_star + torch.tensor(DEFAULT_OFFSET, dtype=x_star.dtype)
    else:
        x0 = torch.tensor(point, dtype=x_star.dtype)
    xs, diverged = _server_models(problem, algorithm, x0, rounds, local_steps, seed)
    hessian = (data.inputs.T @ data.inputs / data.inputs.shape[0]).cpu()
    gap = _loss_gap(hessian, x_star, xs[:, 0].numpy(), xs[:, 1].numpy())
    if not np.isfinite(gap).all():  # x is finite but f(x) - f* overflows: diverged just the same
        diverged = int(np.argmin(np.isfinite(gap)))
        xs, gap = xs[:diverged], gap[:diverged]
    frame = pd.DataFrame(
        {"x1": xs[:, 0].numpy(), "x2": xs[:, 1].numpy(), "loss_gap": gap},
        index=pd.RangeIndex(len(xs), name="round"),
    )
    return ServerPath(frame, algorithm.server.name, x_star, hessian, data.info["f_star"], diverged)


def _point(start: Any) -> tuple[float, float]:
    """``start`` as two finite floats ``(x1, x2)`` (a tuple, list, array or tensor of two numbers)."""
    if isinstance(start, (np.ndarray, Tensor)):
        start = start.tolist()
    if isinstance(start, (str, bytes)) or not isinstance(start, Sequence):
        raise TypeError(f"start={start!r} must be a point (x1, x2), got {type(start).__name__}")
    if len(start) != 2:
        raise ValueError(f"start={start!r} must be a point (x1, x2)")
    try:
        return check_number("x1", start[0]), check_number("x2", start[1])
    except (TypeError, ValueError) as error:
        raise type(error)(f"start={tuple(start)!r} must be two finite numbers (x1, x2): {error}") from None


def _server_models(
    problem: Problem, algorithm: FedOpt, x0: Tensor, rounds: int, local_steps: int, seed: int
) -> tuple[Tensor, int | None]:
    """``x_0 .. x_T`` ``[T + 1, d]`` of full-participation, full-batch rounds run by ``simulate``
    (a batch the size of the client is its whole data set), and the round the model stopped
    being finite (None if it never did)."""
    data, points = problem.data, [x0]
    with warnings.catch_warnings():  # a divergence is part of the picture here, not a warning
        warnings.simplefilter("ignore", DivergedWarning)
        history = simulate(
            problem, algorithm, rounds, data.num_clients, local_steps, int(data.sizes.max()), seed=seed,
            eval_every=rounds, progress=False, x0=x0, callback=lambda t, state: points.append(state["x"]),
        )
    return torch.stack(points).cpu(), history.diverged_round
