"""Reddi et al.'s convergence results put to the test on a federated quadratic (notebook ``01_fedopt``,
section 1).

Corollaries 1 and 2 (FedAdagrad, FedAdam): with client step ``eta_l = Theta(1 / (K L sqrt(T)))`` and server
step ``eta = Theta(sqrt(K m))`` (and ``tau = G / L``), for ``m`` clients per round, ``K`` local steps and ``T``
rounds (as the slides print it; ``sigma^2 = sigma_l^2 + 6 K sigma_g^2``, Theorem 1),

    min_t E ||grad f(x_t)||^2  =  O( (f(x_0) - f*) / sqrt(m K T)  +  2 sigma_l^2 L / (G^2 sqrt(m K T))
                                     +  sigma^2 / (G K T)  +  sigma^2 L sqrt(m) / (G^2 sqrt(K T)^(3/2)) ),

whose first two terms give the headline rate ``1 / sqrt(m K T)``; the third does not fall with ``K`` in its
``sigma_g^2`` part, the fourth grows with ``sqrt(m)`` and, in its ``sigma_g^2`` part, with ``K``.
:func:`scaling` runs a method (:data:`METHODS`: FedAdam, FedAdagrad, and FedAvgM at FedAdam's first step) at
exactly those learning rates on a heterogeneous least-squares federation
(:func:`fedcore.objectives.quadratic_task`), varies one of ``T``, ``m``, ``K``, measures the average squared norm
of the *full* gradient at the server models, and :func:`fitted_exponent` fits its slope on log-log axes: the
headline rate predicts -1/2 in each.  :func:`denominator_ratio` measures ``sqrt(v_t) / tau`` along FedAdam's
run: at ``tau = G / L`` it stays below 1, so FedAdam's denominator ``sqrt(v_t) + tau`` lies within
``[tau, 2 tau]`` and its step is server momentum SGD's up to that factor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_choice, check_int, check_positive
from fedcore.objectives import QuadraticTask, quadratic_task
from fedcore.run import simulate, simulate_runs
from fedcore.store import Store

PREDICTED_EXPONENT = -0.5
"""The corollaries' ``1 / sqrt(m K T)``: slope -1/2 in each of ``m``, ``K`` and ``T`` on log-log axes."""
BASE = {"rounds": 200, "clients_per_round": 10, "local_steps": 5}
"""The point of :func:`scaling` from which one of the three is varied."""
VARIED = {"rounds": "T", "clients_per_round": "m", "local_steps": "K"}
METHODS = ("FedAdam", "FedAdagrad", "FedAvgM")
"""What :func:`scaling` runs at the corollaries' rates: FedAdam (Corollary 2), FedAdagrad (Corollary 1, with the
paper's ``beta1 = 0.9``), and FedAvgM with FedAdam's first step (:func:`corollary_algorithm`)."""
BETA1, BETA2 = 0.9, 0.99


def corollary_algorithm(method: str, task: QuadraticTask, point: dict[str, int], client_constant: float = 1.0,
                        server_constant: float = 1.0) -> algorithms.FedOpt:
    """``method`` of :data:`METHODS` at the corollaries' rates for ``point`` (rounds, clients_per_round,
    local_steps) on ``task``, with ``tau = G / L`` and ``beta1 = 0.9`` (``beta2 = 0.99`` for FedAdam).

    FedAvgM's step is FedAdam's with the denominator frozen at its start: FedAdam moves by
    ``eta m_t / (sqrt(v_t) + tau)`` with ``m_t = beta1 m_{t-1} + (1 - beta1) Delta_t`` and ``v_{-1} = tau^2``;
    FedAvgM (fedcore's ``sgdm``) by ``lr M_t`` with ``M_t = beta1 M_{t-1} + Delta_t = m_t / (1 - beta1)``, so
    ``lr = eta (1 - beta1) / (2 tau)`` is FedAdam's first step, and FedAdam's later steps are at most twice
    it while ``sqrt(v_t) <= tau`` (:func:`denominator_ratio`)."""
    check_choice("method", method, METHODS)
    client_lr, server_lr = corollary_learning_rates(point["local_steps"], point["clients_per_round"],
                                                    point["rounds"], task.smoothness, client_constant,
                                                    server_constant)
    tau = task.gradient_bound / task.smoothness
    if method == "FedAdam":
        return algorithms.fedadam(client_lr, server_lr=server_lr, tau=tau, beta1=BETA1, beta2=BETA2)
    if method == "FedAdagrad":
        return algorithms.fedadagrad(client_lr, server_lr=server_lr, tau=tau, beta1=BETA1)
    return algorithms.fedavgm(client_lr, server_lr=server_lr * (1 - BETA1) / (2 * tau), beta=BETA1)


def corollary_learning_rates(local_steps: int, clients_per_round: int, rounds: int, smoothness: float,
                             client_constant: float = 1.0, server_constant: float = 1.0) -> tuple[float, float]:
    """``(eta_l, eta) = (c_l / (K L sqrt(T)), c_s sqrt(K m))``: the corollaries' rates, their constants
    ``c_l`` and ``c_s`` left to the user (the Theta hides them)."""
    check_int("local_steps", local_steps)
    check_int("clients_per_round", clients_per_round)
    check_int("rounds", rounds)
    check_positive("smoothness", smoothness)
    client = check_positive("client_constant", client_constant) / (local_steps * smoothness * math.sqrt(rounds))
    return client, check_positive("server_constant", server_constant) * math.sqrt(local_steps * clients_per_round)


def squared_gradient_norms(task: QuadraticTask, rounds: int, clients_per_round: int, local_steps: int,
                           batch_size: int = 4, seed: int = 0, client_constant: float = 1.0,
                           server_constant: float = 1.0, store: Store | None = None,
                           method: str = "FedAdam") -> list[float]:
    """``||grad f(x_t)||^2`` at each round's server model (rounds 1 to T) of ``method`` run at the corollary's
    rates (constants ``client_constant``, ``server_constant``; :func:`corollary_algorithm`); ``store``: the results
    store (the norms are a column of the stored history)."""
    return _norms_over_seeds(task, dict(rounds=rounds, clients_per_round=clients_per_round, local_steps=local_steps),
                             [seed], client_constant, server_constant, batch_size, store, method)[0].tolist()


def _norms_over_seeds(task: QuadraticTask, point: dict[str, int], seeds: Sequence[int], client_constant: float,
                      server_constant: float, batch_size: int, store: Store | None,
                      method: str = "FedAdam") -> list[np.ndarray]:
    """:func:`squared_gradient_norms` for every seed of ``seeds``, the seeds' runs in one pass."""
    rounds = point["rounds"]
    algorithm = corollary_algorithm(method, task, point, client_constant, server_constant)
    histories = simulate_runs(task.problem, [algorithm] * len(seeds), rounds, point["clients_per_round"],
                              point["local_steps"], batch_size, seeds=list(seeds), progress=False, eval_every=rounds,
                              record=task.record, store=store)
    return [history.frame["squared_gradient_norm"].loc[1:].to_numpy() for history in histories]


def scaling(task: QuadraticTask, vary: str, values: Sequence[int], seeds: Sequence[int] = (0, 1, 2),
            base: dict[str, int] | None = None, store: Store | None = None, method: str = "FedAdam") -> pd.DataFrame:
    """Vary one of ``rounds`` (T), ``clients_per_round`` (m) or ``local_steps`` (K) from ``base``: per value,
    the measured ``(1/T) sum ||grad f||^2`` of ``method`` (:data:`METHODS`; mean over ``seeds``) beside the rate
    ``1 / sqrt(m K T)``."""
    check_choice("vary", vary, VARIED)
    check_choice("method", method, METHODS)
    point = dict(BASE if base is None else base)
    rows = []
    for value in values:
        point[vary] = check_int(vary, value)
        measured = np.mean([norms.mean() for norms in _norms_over_seeds(task, point, seeds, 1.0, 1.0, 4, store,
                                                                          method)])
        rate = 1 / math.sqrt(point["rounds"] * point["clients_per_round"] * point["local_steps"])
        rows.append({VARIED[vary]: value, "mean squared gradient norm": measured, "1 / sqrt(m K T)": rate})
    return pd.DataFrame(rows).set_index(VARIED[vary])


def denominator_ratio(task: QuadraticTask, point: dict[str, int] | None = None, seed: int = 0,
                      batch_size: int = 4) -> tuple[float, float]:
    """``(smallest, largest)`` of ``sqrt(v_t) / tau`` over the rounds and coordinates of FedAdam's run at the
    corollaries' rates (:func:`corollary_algorithm`) from ``point`` (default :data:`BASE`): below 1, FedAdam's
    denominator ``sqrt(v_t) + tau`` stays within ``[tau, 2 tau]``."""
    point = dict(BASE if point is None else point)
    tau = task.gradient_bound / task.smoothness
    ratios: list[tuple[float, float]] = []

    def keep(round_: int, state: dict) -> None:
        ratio = state["server"]["v"].sqrt() / tau
        ratios.append((float(ratio.min()), float(ratio.max())))

    simulate(task.problem, corollary_algorithm("FedAdam", task, point), point["rounds"], point["clients_per_round"],
             point["local_steps"], batch_size, seed=seed, progress=False, eval_every=point["rounds"], callback=keep)
    return min(low for low, _ in ratios), max(high for _, high in ratios)


def fitted_exponent(table: pd.DataFrame, column: str = "mean squared gradient norm") -> float:
    """The least-squares slope of ``log(column)`` against ``log(index)``: -1/2 where the rate holds."""
    if len(table) < 2:
        raise ValueError(f"a slope needs at least two rows, got {len(table)}")
    slope, _ = np.polyfit(np.log(table.index.to_numpy(dtype=float)), np.log(table[column].to_numpy()), 1)
    return float(slope)


def exponents_by_heterogeneity(levels: Sequence[float], values: dict[str, Sequence[int]],
                               seeds: Sequence[int] = (0, 1), store: Store | None = None) -> pd.DataFrame:
    """The fitted exponent of each varied quantity (``{"local_steps": [...], ...}``) on federations of
    growing ``heterogeneity`` (the spread of the clients' optima): the rate's -1/2 against what client drift
    leaves of it.  One row per level, one column per varied quantity (named T, m, K)."""
    rows = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("heterogeneity", level) if level else 0.0)
        rows[level] = {VARIED[vary]: fitted_exponent(scaling(task, vary, grid, seeds, store=store))
                       for vary, grid in values.items()}
    return pd.DataFrame(rows).T.rename_axis("heterogeneity")


TRADEOFF = {"rounds": 200, "clients_per_round": 50, "local_steps": 10}
"""The point of :func:`rate_tradeoff`: every one of the 50 clients in every round, so that client sampling
adds no noise and what heterogeneity leaves behind is client drift alone."""


def rate_tradeoff(levels: Sequence[float], client_constants: Sequence[float], seeds: Sequence[int] = (0, 1),
                  point: dict[str, int] | None = None, store: Store | None = None) -> pd.DataFrame:
    """The corollaries' second takeaway: heterogeneity's effect shrinks with a small client rate and a large
    server rate.  FedAdam at the corollary's rates with client constant ``c`` and server constant ``1 / c``
    (their product, and so the size of a server step of plain averaging, held fixed) on federations of each
    heterogeneity in ``levels``; per cell the final ``||grad f||^2`` (the mean over the last tenth of the
    rounds and over ``seeds``).  Rows: the client constants; columns: the heterogeneity levels."""
    point = dict(TRADEOFF if point is None else point)
    table = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("heterogeneity", level) if level else 0.0)
        last = max(1, point["rounds"] // 10)
        table[level] = {
            check_positive("client_constant", constant): np.mean(
                [np.mean(norms[-last:]) for norms in _norms_over_seeds(task, point, seeds, constant, 1 / constant, 4,
                                                                      store)])
            for constant in client_constants}
    return pd.DataFrame(table).rename_axis(index="client constant c (server constant 1/c)",
                                           columns="heterogeneity")


def largest_constant_below(table: pd.DataFrame, target: float) -> pd.Series:
    """Per column of :func:`rate_tradeoff`'s table: the largest client constant whose final ``||grad f||^2``
    is at most ``target`` (NaN where none is)."""
    check_positive("target", target)
    return pd.Series({level: max(table.index[table[level] <= target], default=math.nan) for level in table},
                     name=f"largest client constant with final squared gradient <= {target:g}")
