"""Reddi et al.'s convergence results put to the test on a federated quadratic (notebook ``01_fedopt``,
section 1).

Corollaries 1 and 2 (FedAdagrad, FedAdam): with client step ``eta_l = Theta(1 / (K L sqrt(T)))`` and server
step ``eta = Theta(sqrt(K m))`` (and ``tau = G / L``),

    min_t E ||grad f(x_t)||^2  <=  (1/T) sum_t E ||grad f(x_t)||^2  =  O(1 / sqrt(m K T))

(plus terms in the local and global gradient variances), for ``m`` clients per round, ``K`` local steps and
``T`` rounds.  :func:`scaling` runs FedAdam at exactly those learning rates on a heterogeneous least-squares
federation (:func:`quadratic_task`), varies one of ``T``, ``m``, ``K``, measures the average squared norm of
the *full* gradient at the server models, and :func:`fitted_exponent` fits its slope on log-log axes: the
rate predicts -1/2 in each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_choice, check_int, check_positive
from fedcore.objectives import QuadraticTask, quadratic_task
from fedcore.run import simulate_runs
from fedcore.store import Store

PREDICTED_EXPONENT = -0.5
"""The corollaries' ``1 / sqrt(m K T)``: slope -1/2 in each of ``m``, ``K`` and ``T`` on log-log axes."""
BASE = {"rounds": 200, "clients_per_round": 10, "local_steps": 5}
"""The point of :func:`scaling` from which one of the three is varied."""
VARIED = {"rounds": "T", "clients_per_round": "m", "local_steps": "K"}


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
                           server_constant: float = 1.0, store: Store | None = None) -> list[float]:
    """``||grad f(x_t)||^2`` at each round's server model (rounds 1 to T) of FedAdam run at the corollary's rates
    (constants ``client_constant``, ``server_constant``), with ``tau = G / L`` and the paper's ``beta1 = 0.9``,
    ``beta2 = 0.99``; ``store``: the results store (the norms are a column of the stored history)."""
    return _norms_over_seeds(task, dict(rounds=rounds, clients_per_round=clients_per_round, local_steps=local_steps),
                             [seed], client_constant, server_constant, batch_size, store)[0].tolist()


def _norms_over_seeds(task: QuadraticTask, point: dict[str, int], seeds: Sequence[int], client_constant: float,
                      server_constant: float, batch_size: int, store: Store | None) -> list[np.ndarray]:
    """:func:`squared_gradient_norms` for every seed of ``seeds``, the seeds' runs in one pass."""
    rounds = point["rounds"]
    client_lr, server_lr = corollary_learning_rates(point["local_steps"], point["clients_per_round"], rounds,
                                                    task.smoothness, client_constant, server_constant)
    algorithm = algorithms.fedadam(client_lr, server_lr=server_lr, tau=task.gradient_bound / task.smoothness)
    histories = simulate_runs(task.problem, [algorithm] * len(seeds), rounds, point["clients_per_round"],
                              point["local_steps"], batch_size, seeds=list(seeds), progress=False, eval_every=rounds,
                              record=task.record, store=store)
    return [history.frame["squared_gradient_norm"].loc[1:].to_numpy() for history in histories]


def scaling(task: QuadraticTask, vary: str, values: Sequence[int], seeds: Sequence[int] = (0, 1, 2),
            base: dict[str, int] | None = None, store: Store | None = None) -> pd.DataFrame:
    """Vary one of ``rounds`` (T), ``clients_per_round`` (m) or ``local_steps`` (K) from ``base``: per value,
    the measured ``(1/T) sum ||grad f||^2`` (mean over ``seeds``) beside the rate ``1 / sqrt(m K T)``."""
    check_choice("vary", vary, VARIED)
    point = dict(BASE if base is None else base)
    rows = []
    for value in values:
        point[vary] = check_int(vary, value)
        measured = np.mean([norms.mean() for norms in _norms_over_seeds(task, point, seeds, 1.0, 1.0, 4, store)])
        rate = 1 / math.sqrt(point["rounds"] * point["clients_per_round"] * point["local_steps"])
        rows.append({VARIED[vary]: value, "mean squared gradient norm": measured, "1 / sqrt(m K T)": rate})
    return pd.DataFrame(rows).set_index(VARIED[vary])


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
