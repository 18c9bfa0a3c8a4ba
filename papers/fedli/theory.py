"""FedLi's descent claims computed exactly (notebook ``03_fedli``, sections 1 and 2).  Lemma 3 / Remark 1: for convex
clients their Armijo descent carries over to the server objective; Remark 2: for non-convex ones it need not.  Our
copy lost the equations and Remark 2's numbers, so both are rebuilt: two convex clients on which FedLi-LS raises the
global objective while each lowers its own (:func:`two_client_run`), and **our** Remark 2 (:data:`REMARK2`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from fedcore import algorithms, models
from fedcore.checks import check_number, check_positive
from fedcore.data import FederatedData
from fedcore.objectives import double_well, double_well_slope, quadratic_clients
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate

SHARED_LINE_SEARCH = {"init_step_size": 10.0}
"""The line search of Lemma 3's homogeneous case: SLS's constants, each round's first step started at the cap of
10, so that every accepted step is at least ``eta_lo = min(10, 2 beta_b (1 - c) / L)`` (:func:`linear_rate_bound`)."""

CONVEX_CLIENTS = {"a": (0.01, 1.1), "b": (10.0, 0.0), "x0": 0.0}
"""Two convex clients, ``f_1(x) = 0.01 (x - 10)^2`` and ``f_2(x) = 1.1 x^2`` (off the Armijo tie of ``x^2``), from
``x_0 = 0``; the optimum of their mean is ``x* = 10 / 111``."""
ONE_STEP_CLIENTS = {"a": (10.0, 0.8), "b": (0.0, -10.0), "x0": -1.0}
"""``f_1(x) = 10 x^2`` and ``f_2(x) = 0.8 (x + 10)^2`` from ``x_0 = -1``: with one Armijo step each (K = 1, exact
gradients) client 1 backtracks to ``0.9^23`` and client 2 keeps 1 and overshoots; both descend, their mean raises
the global objective about sevenfold (Lemma 3 fails at K = 1 too)."""
TWO_CLIENT_LINE_SEARCH = {"eta_max": 1.0, "init_step_size": 1.0, "fallback_step_size": None}
"""Its line search: c = 0.1, backtrack 0.9, every step from 1 (its numbers are checked by hand in the tests)."""


def convex_optimum(a: Sequence[float] = CONVEX_CLIENTS["a"], b: Sequence[float] = CONVEX_CLIENTS["b"]) -> float:
    """The minimizer ``sum_i a_i b_i / sum_i a_i`` of ``sum_i a_i (x - b_i)^2``."""
    return sum(a_i * b_i for a_i, b_i in zip(a, b)) / sum(a)


@dataclass(frozen=True)
class TwoClientRun:
    """The server iterates ``x_t``, the global objective ``f(x_t)`` (the clients' mean), and per round each client's
    own objective at the round's start and after its local steps."""

    x: list[float]
    global_objective: list[float]
    own_before: list[list[float]]
    own_after: list[list[float]]
    history: History


def two_client_run(a: Sequence[float] = CONVEX_CLIENTS["a"], b: Sequence[float] = CONVEX_CLIENTS["b"],
                   x0: float = CONVEX_CLIENTS["x0"], local_steps: int = 10, rounds: int = 10) -> TwoClientRun:
    """FedLi-LS (:data:`TWO_CLIENT_LINE_SEARCH`, server step 1) on :func:`quadratic_clients`, every client in every
    round, uniform weights, full-batch steps."""
    data = quadratic_clients(a, b)
    xs = [float(check_number("x0", x0))]
    history = simulate(Problem(data, models.make("linear_regression", (1,), None).double()),
                       algorithms.fedli_ls(batches_per_epoch=1, **TWO_CLIENT_LINE_SEARCH), rounds, len(a),
                       local_steps, 1, weighting="uniform", progress=False, trace=True,
                       x0=torch.tensor([x0], dtype=torch.float64), callback=lambda t, st: xs.append(float(st["x"])))
    own = [lambda x, a_i=a_i, b_i=b_i: a_i * (x - b_i) ** 2 for a_i, b_i in zip(a, b)]
    before, after = [], []
    for t, (clients, trace) in enumerate(history.trace):
        finals = trace[-1, clients.argsort(), 0].tolist()  # each client's model after its K steps, in client order
        before.append([f(xs[t]) for f in own])
        after.append([f(x) for f, x in zip(own, finals)])
    return TwoClientRun(xs, [sum(f(x) for f in own) / len(own) for x in xs], before, after, history)


REMARK2 = {"tilt": 3.0, "x0": 0.5, "eta1": 0.5, "eta2": 0.05}
"""Our instance of Remark 2: the tilt ``a`` of ``f_{1,2}(x) = (x^2 - 1)^2 +- a x``, the start and the steps."""


def remark2_step(eta1: float = REMARK2["eta1"], eta2: float = REMARK2["eta2"], x0: float = REMARK2["x0"],
                 tilt: float = REMARK2["tilt"], c: float = 0.1) -> dict[str, float | bool]:
    """One gradient step on each client, ``x_i = x_0 - eta_i f_i'(x_0)``, and their average ``x_bar``: the points,
    the objectives, whether each client descends (and meets Armijo's condition) and whether the average does."""
    check_positive("eta1", eta1)
    check_positive("eta2", eta2)
    check_number("x0", x0)
    check_number("tilt", tilt)
    tilts = (tilt, -tilt)
    slopes = [double_well_slope(x0, t) for t in tilts]
    points = [x0 - eta * g for eta, g in zip((eta1, eta2), slopes)]
    x_bar = sum(points) / 2
    out: dict[str, float | bool] = {"x0": x0, "x1": points[0], "x2": points[1], "x_bar": x_bar,
                                    "f(x0)": double_well(x0), "f(x_bar)": double_well(x_bar)}
    for i, (t, eta, g, x) in enumerate(zip(tilts, (eta1, eta2), slopes, points), start=1):
        out[f"f{i}(x0)"], out[f"f{i}(x{i})"] = double_well(x0, t), double_well(x, t)
        out[f"client {i} descends"] = double_well(x, t) < double_well(x0, t)
        out[f"client {i} Armijo"] = double_well(x, t) <= double_well(x0, t) - c * eta * g * g
    out["global descends"] = double_well(x_bar) < double_well(x0)
    return out


def armijo_step_size(f: Callable[[float], float], slope: float, x0: float, start: float = 1.0, c: float = 0.1,
                     backtrack: float = 0.9, max_backtracks: int = 100) -> float:
    """The Armijo search of FedLi-LS's clients on a one-dimensional ``f`` with its exact slope at ``x0``: the
    largest ``start * backtrack^j`` (``j <= max_backtracks``) with ``f(x0 - eta g) <= f(x0) - c eta g^2``."""
    check_positive("start", start)
    eta = start
    for _ in range(max_backtracks):
        if f(x0 - eta * slope) <= f(x0) - c * eta * slope * slope:
            break
        eta *= backtrack
    return eta


def remark2_line_search(x0: float = REMARK2["x0"], tilt: float = REMARK2["tilt"], start: float = 1.0,
                        c: float = 0.1, backtrack: float = 0.9) -> dict[str, float | bool]:
    """:func:`remark2_step` with each client's own Armijo search from ``start`` on its own objective (SLS starts at
    1), and the steps it found, ``eta1`` and ``eta2``."""
    steps = [armijo_step_size(lambda x, t=t: double_well(x, t), double_well_slope(x0, t), x0, start, c, backtrack)
             for t in (tilt, -tilt)]
    return {**remark2_step(steps[0], steps[1], x0, tilt, c), "eta1": steps[0], "eta2": steps[1]}


def linear_fit(xs: Sequence[float], tail: int = 5) -> tuple[float, float]:
    """``(rho, x_inf)`` of iterates that converge linearly, ``x_{t+1} - x_inf = rho (x_t - x_inf)``: the median
    ratio of the last ``tail`` successive differences, and ``x_inf = x_T + d_T rho / (1 - rho)`` (the steps still to
    come).  A rate can hold while the limit misses the optimum."""
    values = [check_number("xs", x) for x in xs]
    if len(values) < 3:
        raise ValueError(f"xs has {len(values)} iterates: a rate needs at least 3")
    differences = [after - before for before, after in zip(values, values[1:])]
    ratios = [b / a for a, b in zip(differences, differences[1:]) if a != 0][-tail:]
    if not ratios:
        return 0.0, values[-1]  # the iterates stopped moving
    rho = float(statistics.median(ratios))
    if not -1 < rho < 1:
        raise ValueError(f"the iterates do not contract: successive steps grow by {rho:.3g} (|rho| >= 1)")
    return rho, values[-1] + differences[-1] * rho / (1 - rho)


def remark2_picture(step: dict[str, float | bool], tilt: float = REMARK2["tilt"]) -> tuple[dict, dict]:
    """What ``figures.remark2`` draws for :func:`remark2_step`'s ``step``: the three curves ``{label: (x, y)}`` and
    one move per curve ``{label: ((x, y), (x', y'))}`` (each client's step, the server's move to the average)."""
    xs = [float(step[key]) for key in ("x0", "x1", "x2", "x_bar")]
    grid = torch.linspace(min(-1.6, *xs) - 0.1, max(1.6, *xs) + 0.1, 400).tolist()
    curves = {label: (grid, [double_well(x, t) for x in grid])
              for label, t in (("client 1: f_1", tilt), ("client 2: f_2", -tilt), ("global: f", 0.0))}
    moves = {label: ((xs[0], double_well(xs[0], t)), (x, double_well(x, t))) for label, x, t in
             (("client 1: x_0 -> x_1", xs[1], tilt), ("client 2: x_0 -> x_2", xs[2], -tilt),
              ("server: x_0 -> x_bar = (x_1 + x_2) / 2", xs[3], 0.0))}
    return curves, moves


def _least_squares(data: FederatedData, x: torch.Tensor) -> float:
    """``f(x) = 1/(2n) ||A x - y||^2`` over every client's rows (the sample-weighted mean of the clients' losses)."""
    return float(0.5 * (data.inputs @ x - data.targets).square().mean())


def suboptimality(data: FederatedData, algorithm: object, local_steps: int, rounds: int) -> list[float]:
    """``f(x_t) - f*`` from ``x_0 = 0`` after every round of ``algorithm`` with every client in every round and
    full-batch local steps (``f*`` by least squares)."""
    x_star = torch.linalg.lstsq(data.inputs, data.targets.unsqueeze(1)).solution.squeeze(1)
    best, dim = _least_squares(data, x_star), data.inputs.shape[1]
    gaps = [_least_squares(data, torch.zeros(dim, dtype=data.inputs.dtype)) - best]
    simulate(Problem(data, models.make("linear_regression", (dim,), None).double()), algorithm, rounds,
             data.num_clients, local_steps, int(data.sizes.min()), progress=False,
             x0=torch.zeros(dim, dtype=data.inputs.dtype),
             callback=lambda t, state: gaps.append(_least_squares(data, state["x"]) - best))
    return gaps


def linear_rate_bound(data: FederatedData, local_steps: int, c: float = 0.1, backtrack: float = 0.9,
                      eta_max: float = 1.0) -> float:
    """The per-round factor ``(1 - 2 c mu eta_lo)^K`` for homogeneous least-squares clients with full-batch Armijo
    steps, each at least ``eta_lo = min(eta_max, 2 backtrack (1 - c) / L)`` (Polyak-Lojasiewicz; ``mu``, ``L`` the
    extreme eigenvalues of ``A^T A / n``)."""
    A = data.inputs
    mu, L = torch.linalg.eigvalsh(A.T @ A / A.shape[0])[[0, -1]].tolist()
    return (1 - 2 * c * mu * min(eta_max, 2 * backtrack * (1 - c) / L)) ** local_steps
