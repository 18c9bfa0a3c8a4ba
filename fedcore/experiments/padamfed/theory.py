"""Problem-parameter-free, put to the test (notebook ``02_padamfed``, section 1): the slides' comparison of what
each method's step sizes need, and a federated quadratic whose constants are scaled at will.

Scaling an objective ``f`` by ``s`` (inputs and targets of a least-squares federation times ``sqrt(s)``) keeps its
minimizer and multiplies its smoothness L, its gradient variance and heterogeneity bounds and its initial gap
Delta by ``s`` alike.  A step size tuned for one ``s`` is then wrong for another (FedAvg's ``eta <= 1/L`` fails
as L grows), while PAdaMFed's normalized steps and ``g_bar``, which divides out ``eta``, move the same way for
every ``s``: :func:`smoothness_table` measures both.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_int, check_positive
from fedcore.experiments.padamfed.experiment import run_quietly
from fedcore.objectives import QuadraticTask, scaled_quadratic_task
from fedcore.store import Store

STEP_SIZE_TABLE = pd.DataFrame(
    [
        ("SCAFFOLD (Karimireddy et al., 2020)", "-", "gamma = sqrt(S), eta <= (S/N)^(2/3) / (24 gamma K L)", "L",
         "O((N/S)^(1/3) L / (K eps^4))"),
        ("Mime (Karimireddy et al., 2020)", "BDH, BHD", "eta = sqrt(Delta S / (L G T K^2)), G = sigma_h^2 + sigma^2/K",
         "L, Delta, sigma^2, sigma_h^2", "O(1 / (S K eps^4))"),
        ("FedSPS (Mukherjee et al., 2024)", "BDH", "Polyak step capped by eta_b <= min(1/(2cL), 1/(25LK))",
         "L, l_i^*", "O(1 / (N K eps^4))"),
        ("SCAFFOLD-M (Cheng et al., 2024)", "-", "beta = min(1, S/N^(2/3), sqrt(L Delta S K / (sigma^2 T)), ...), "
         "gamma = beta / L, eta K L <~ ...", "L, Delta, sigma^2, G_0", "O(1 / (S K eps^4))"),
        ("PAdaMFed (Yan et al.)", "-", "beta = sqrt(SK/T), gamma = (SK)^(1/4) / T^(3/4), eta = 1 / (K sqrt T)", "-",
         "O(1 / (S K eps^4))"),
        ("FAFED (Wu et al., 2023)", "BDH, BG", "eta_t ~ N^(2/3) / (L t^(1/3)), beta_t ~ eta_t^2", "L",
         "O(1 / (S K eps^3))"),
        ("SCAFFOLD-M-VR (Cheng et al., 2024)", "-", "beta = min(S/N, (K L Delta / (sigma^2 T))^(2/3), S^(1/3)), "
         "gamma L = min(1, sqrt(beta S)), eta K L <~ ...", "L, Delta, sigma^2", "O(1 / (S sqrt(K) eps^4))"),
        ("PAdaMFed-VR (Yan et al.)", "-", "beta = gamma = (SK)^(1/3) / T^(2/3), eta = 1 / (K T)", "-",
         "O(1 / (S K eps^3))"),
    ],
    columns=["method", "extra assumptions", "step sizes", "problem constants the step sizes need",
             "communication complexity (as the slides print it)"],
).set_index("method")
"""The slides' "Comparisons with Prior Work" (BDH: bounded data heterogeneity, BHD: bounded Hessian
dissimilarity, BG: bounded gradients).  The first five rows are without variance reduction, the last three with."""

POINT = {"rounds": 200, "clients_per_round": 10, "local_steps": 5, "batch_size": 4}
"""S, K, T and B of :func:`smoothness_table` (10 of the quadratic's 50 clients per round)."""


def gradient_ratio(task: QuadraticTask, algorithm: Any, point: dict[str, int] | None = None, seed: int = 0,
                   store: Store | None = None) -> float:
    """``||grad f||`` over the last tenth of the rounds (its mean) divided by ``||grad f(x_0)||``: below 1 the run
    made progress, above 1 it moved away (``inf`` if it diverged).  The norms are recorded with the run
    (``record=task.record``), so ``store`` keeps and reuses it."""
    point = dict(POINT if point is None else point)
    history = run_quietly(task.problem, algorithm, **point, seed=seed, progress=False, eval_every=point["rounds"],
                          weighting="uniform", record=task.record, store=store)
    if history.diverged:
        return math.inf
    norms = np.sqrt(history.frame["squared_gradient_norm"].loc[1:].to_numpy())
    last = max(1, check_int("rounds", point["rounds"]) // 10)
    return float(np.mean(norms[-last:])) / float(task.gradient(task.problem.x0()).norm())


def smoothness_builders(fedavg_lr: float, point: dict[str, int] | None = None) -> dict[str, Callable[[], Any]]:
    """PAdaMFed and PAdaMFed-VR at their theorems' step sizes for ``point``'s S, K, T; FedAvg and SCAFFOLD at
    one fixed client rate ``fedavg_lr`` (a value that suits the unscaled problem)."""
    point = dict(POINT if point is None else point)
    sizes = {key: point[key] for key in ("clients_per_round", "local_steps", "rounds")}
    check_positive("fedavg_lr", fedavg_lr)
    return {"PAdaMFed": lambda: algorithms.padamfed(**sizes), "PAdaMFed-VR": lambda: algorithms.padamfed_vr(**sizes),
            "FedAvg": lambda: algorithms.fedavg(fedavg_lr), "SCAFFOLD": lambda: algorithms.scaffold(fedavg_lr)}


def smoothness_table(factors: Sequence[float], fedavg_lr: float, point: dict[str, int] | None = None,
                     store: Store | None = None) -> pd.DataFrame:
    """:func:`gradient_ratio` of every method of :func:`smoothness_builders` on the quadratic scaled by each of
    ``factors``: rows the resulting smoothness L, columns the methods."""
    rows = {}
    for factor in factors:
        task = scaled_quadratic_task(factor)
        rows[task.smoothness] = {name: gradient_ratio(task, build(), point, store=store)
                                 for name, build in smoothness_builders(fedavg_lr, point).items()}
    return pd.DataFrame(rows).T.rename_axis("smoothness L")
