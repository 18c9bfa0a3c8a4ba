"""Reddi et al.'s Corollaries 1 and 2 put to the test on a federated quadratic (notebook ``01_fedopt``, section 1):
at the corollaries' rates ``eta_l = 1 / (K L sqrt(T))``, ``eta = sqrt(K m)``, ``tau = G / L``, the bound's headline
term falls as ``1 / sqrt(m K T)``: slope -1/2 in each of ``m``, ``K``, ``T`` on log-log axes (:func:`scaling`,
:func:`fitted_exponent`)."""

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

PREDICTED_EXPONENT = -0.5  # the corollaries' 1 / sqrt(m K T) on log-log axes
BASE = {"rounds": 200, "clients_per_round": 10, "local_steps": 5}  # the point :func:`scaling` varies one of
VARIED = {"rounds": "T", "clients_per_round": "m", "local_steps": "K"}
METHODS = ("FedAdam", "FedAdagrad", "FedAvgM")
"""FedAdam (Corollary 2), FedAdagrad (Corollary 1) and FedAvgM at FedAdam's first step (:func:`corollary_algorithm`)."""
BETA1, BETA2 = 0.9, 0.99


def corollary_algorithm(method: str, task: QuadraticTask, point: dict[str, int], client_constant: float = 1.0,
                        server_constant: float = 1.0) -> algorithms.FedOpt:
    """``method`` at the corollaries' rates for ``point`` on ``task``, ``tau = G / L``, ``beta1 = 0.9`` (``beta2 =
    0.99``).  FedAvgM's ``M_t = m_t / (1 - beta1)`` at ``lr = eta (1 - beta1) / (2 tau)`` takes FedAdam's first
    step (``v_{-1} = tau^2``), and FedAdam's later ones are at most twice it while ``sqrt(v_t) <= tau``."""
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
    """``(eta_l, eta) = (c_l / (K L sqrt(T)), c_s sqrt(K m))``: the corollaries' rates (the Theta hides c_l, c_s)."""
    check_int("local_steps", local_steps)
    check_int("clients_per_round", clients_per_round)
    check_int("rounds", rounds)
    check_positive("smoothness", smoothness)
    client = check_positive("client_constant", client_constant) / (local_steps * smoothness * math.sqrt(rounds))
    return client, check_positive("server_constant", server_constant) * math.sqrt(local_steps * clients_per_round)


def squared_gradient_norms(task: QuadraticTask, point: dict[str, int], seeds: Sequence[int] = (0,),
                           client_constant: float = 1.0, server_constant: float = 1.0, store: Store | None = None,
                           method: str = "FedAdam") -> list[np.ndarray]:
    """Per seed, ``||grad f(x_t)||^2`` at each round's server model (rounds 1 to T) of ``method`` at the corollaries'
    rates for ``point`` (:func:`corollary_algorithm`), minibatches of 4, the seeds' runs in one pass."""
    rounds = point["rounds"]
    algorithm = corollary_algorithm(method, task, point, client_constant, server_constant)
    histories = simulate_runs(task.problem, [algorithm] * len(seeds), rounds, point["clients_per_round"],
                              point["local_steps"], 4, seeds=list(seeds), progress=False, eval_every=rounds,
                              record=task.record, store=store)
    return [history.frame["squared_gradient_norm"].loc[1:].to_numpy() for history in histories]


def scaling(task: QuadraticTask, vary: str, values: Sequence[int], seeds: Sequence[int] = (0, 1, 2),
            base: dict[str, int] | None = None, store: Store | None = None, method: str = "FedAdam") -> pd.DataFrame:
    """Vary one of ``rounds`` (T), ``clients_per_round`` (m), ``local_steps`` (K) from ``base``: per value the mean
    over the rounds and ``seeds`` of ``||grad f||^2`` of ``method`` beside the rate ``1 / sqrt(m K T)``."""
    check_choice("vary", vary, VARIED)
    check_choice("method", method, METHODS)
    point = dict(BASE if base is None else base)
    rows = []
    for value in values:
        point[vary] = check_int(vary, value)
        norms = squared_gradient_norms(task, point, seeds, store=store, method=method)
        measured = np.mean([per_seed.mean() for per_seed in norms])
        rate = 1 / math.sqrt(point["rounds"] * point["clients_per_round"] * point["local_steps"])
        rows.append({VARIED[vary]: value, "mean squared gradient norm": measured, "1 / sqrt(m K T)": rate})
    return pd.DataFrame(rows).set_index(VARIED[vary])


def denominator_ratio(task: QuadraticTask, point: dict[str, int] | None = None) -> tuple[float, float]:
    """``(smallest, largest)`` of ``sqrt(v_t) / tau`` over FedAdam's run at the corollaries' rates from ``point``:
    below 1, its denominator ``sqrt(v_t) + tau`` stays within ``[tau, 2 tau]``."""
    point = dict(BASE if point is None else point)
    tau = task.gradient_bound / task.smoothness
    ratios: list[tuple[float, float]] = []

    def keep(round_: int, state: dict) -> None:
        ratio = state["server"]["v"].sqrt() / tau
        ratios.append((float(ratio.min()), float(ratio.max())))

    simulate(task.problem, corollary_algorithm("FedAdam", task, point), point["rounds"], point["clients_per_round"],
             point["local_steps"], 4, seed=0, progress=False, eval_every=point["rounds"], callback=keep)
    return min(low for low, _ in ratios), max(high for _, high in ratios)


def fitted_exponent(table: pd.DataFrame, column: str = "mean squared gradient norm") -> float:
    """The least-squares slope of ``log(column)`` against ``log(index)``: -1/2 where the rate holds."""
    if len(table) < 2:
        raise ValueError(f"a slope needs at least two rows, got {len(table)}")
    slope, _ = np.polyfit(np.log(table.index.to_numpy(dtype=float)), np.log(table[column].to_numpy()), 1)
    return float(slope)


def exponents_by_heterogeneity(levels: Sequence[float], values: dict[str, Sequence[int]],
                               seeds: Sequence[int] = (0, 1), store: Store | None = None) -> pd.DataFrame:
    """The fitted exponent of each varied quantity (``{"local_steps": [...], ...}``) per ``heterogeneity`` level
    (the spread of the clients' optima): what client drift leaves of the rate's -1/2."""
    rows = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("heterogeneity", level) if level else 0.0)
        rows[level] = {VARIED[vary]: fitted_exponent(scaling(task, vary, grid, seeds, store=store))
                       for vary, grid in values.items()}
    return pd.DataFrame(rows).T.rename_axis("heterogeneity")


TRADEOFF = {"rounds": 200, "clients_per_round": 50, "local_steps": 10}
"""Every one of the 50 clients in every round: no sampling noise, heterogeneity acts through client drift alone."""


def rate_tradeoff(levels: Sequence[float], client_constants: Sequence[float], seeds: Sequence[int] = (0, 1),
                  point: dict[str, int] | None = None, store: Store | None = None) -> pd.DataFrame:
    """The second takeaway: FedAdam at the corollary's rates with client constant ``c`` and server constant ``1 / c``
    (their product held fixed) per heterogeneity level; per cell the final ``||grad f||^2`` (the mean over the last
    tenth of the rounds and the seeds).  Rows: the client constants; columns: the levels."""
    point = dict(TRADEOFF if point is None else point)
    table = {}
    for level in levels:
        task = quadratic_task(heterogeneity=check_positive("heterogeneity", level) if level else 0.0)
        last = max(1, point["rounds"] // 10)
        table[level] = {
            check_positive("client_constant", constant): np.mean(
                [np.mean(norms[-last:]) for norms in squared_gradient_norms(task, point, seeds, constant,
                                                                            1 / constant, store=store)])
            for constant in client_constants}
    return pd.DataFrame(table).rename_axis(index="client constant c (server constant 1/c)",
                                           columns="heterogeneity")


def largest_constant_below(table: pd.DataFrame, target: float) -> pd.Series:
    """Per level of :func:`rate_tradeoff`'s table, the largest ``c`` whose final ``||grad f||^2 <= target`` (or NaN)."""
    check_positive("target", target)
    return pd.Series({level: max(table.index[table[level] <= target], default=math.nan) for level in table},
                     name=f"largest client constant with final squared gradient <= {target:g}")
