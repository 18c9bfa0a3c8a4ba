"""Problem-parameter-free, put to the test (notebook ``02_padamfed``, section 1; Yan et al., ICLR 2025, Theorems
1-2 and Remark 1): a federated quadratic whose constants are scaled at will.  (The slides' comparison of what each
method's step sizes need is :data:`fedcore.experiments.padamfed.paper.STEP_SIZE_TABLE`.)

Scaling an objective ``f`` by ``s`` (inputs and targets of a least-squares federation times ``sqrt(s)``) keeps its
minimizer and multiplies its smoothness L, its gradient variance and heterogeneity bounds and its initial gap
Delta by ``s`` alike.  A step size tuned for one ``s`` is then wrong for another (FedAvg's ``eta <= 1/L`` fails
as L grows), while PAdaMFed's normalized steps and ``g_bar``, which divides out ``eta``, move the same way for
every ``s``: :func:`smoothness_table` measures both.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_int, check_positive
from fedcore.objectives import QuadraticTask, scaled_quadratic_task
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate
from fedcore.store import Store

POINT = {"rounds": 200, "clients_per_round": 10, "local_steps": 5, "batch_size": 4}
"""S, K, T and B of :func:`smoothness_table` (10 of the quadratic's 50 clients per round)."""
SEED = 0
"""The seed of every run on the quadratics (client sampling and minibatches; the start is the problem's own)."""
TASK_NAME = "the scaled quadratics"
"""What a claim's scope calls these runs."""


def run_quietly(problem: Problem, algorithm: Any, **run: Any) -> History:
    """:func:`fedcore.simulate` without its warning when a run diverges: the scaled quadratics expect some runs to
    diverge, and show them as inf (``History.diverged`` says so)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* diverged at round", category=RuntimeWarning)
        return simulate(problem, algorithm, **run)


def gradient_ratio(task: QuadraticTask, algorithm: Any, point: dict[str, int] | None = None, seed: int = SEED,
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
