"""Ease of tuning (Reddi et al., ICLR 2021, Figures 2 and 6): accuracy over a grid of client x server
learning rates, and how much of the grid is good (notebook ``01_fedopt``).

The paper draws, for ``tau = 1e-3``, the validation accuracy of FedAdam, FedYogi, FedAvgM (and, in Fig. 6,
FedAdagrad and FedAvg) over client and server learning rates on a log10 grid, and claims that the adaptive
methods have a larger region of good learning rates.  The grids' exact values were not found; the best
points the paper reports lie on half-decades, so :func:`~fedcore.experiments.common.half_decades` spans such a
grid (:func:`grid_axes`).  The grid runs on a small task (:func:`grid_task`: Fashion-MNIST on 20 clients, a
logistic regression, the notebook's live task) through the one grid search of every paper,
:func:`fedcore.experiments.common.tune` (:func:`tune`: batched passes, the results store, so a rerun reuses the
runs), scored by the notebook's one window rule (the mean accuracy of the last 4 evaluations, :func:`grid_score`), each
cell over several seeds (:func:`grid_seeds`); :func:`tuning_grid` pivots a method's table into the heat map (the
mean over the seeds), and :func:`good_shares` counts per seed the cells at or above one threshold shared by every
method (:func:`good_threshold`): the claim, measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from fedcore import models
from fedcore.checks import check_int
from fedcore.data import FederatedData, load_fashion_mnist
from fedcore.experiments import common
from fedcore.experiments.claims import trivial_baseline
from fedcore.experiments.common import Builder, Scale, Task, Tuning, half_decades, scale_at, window_score
from fedcore.results import History

if TYPE_CHECKING:
    from fedcore.store import Store

METRIC = "mean test accuracy of the last 4 evaluations"
@dataclass(frozen=True)
class GridScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` of the learning-rate grids, with the log10 ranges of the client
    and the server rates (half-decades)."""

    client: tuple[float, float] = (-2.5, 0.0)
    server: tuple[float, float] = (-2.5, 0.5)


GRIDS: dict[str, GridScale] = {
    "smoke": GridScale("smoke", seeds=(0, 1), rounds=3, eval_every=1, client=(-1.0, -0.5), server=(-1.0, -0.5)),
    "small": GridScale("small", seeds=(0, 1, 2), rounds=30, eval_every=3),
    "medium": GridScale("medium", seeds=(0, 1, 2), rounds=100, eval_every=10),
    "paper": GridScale("paper", seeds=(0, 1, 2), rounds=100, eval_every=10, client=(-3.0, 0.5), server=(-3.0, 0.5)),
}
"""Per scale: the log10 ranges of the client and server learning rates (half-decades: 6 client x 7 server rates
at small; the server axis reaches 10^0.5, where FedAvg's best lies in the paper's CIFAR-100 grid and past our
FedAvg's best at 1), the rounds per run, the evaluation period (a run's score is the mean of its last 4
evaluations: rounds 19-30 at small) and the seeds each cell runs; tau = 1e-3 as in the paper's figures."""
TAU = 1e-3
NEAR_BEST = 0.02
"""'Good' learning rates: a cell whose score on a seed is at least the best mean cell of all the grids minus
this (two points): one threshold for every method and seed (:func:`good_threshold`)."""
GRID_CLIENTS, GRID_PARTITION = 20, {"partition": "dirichlet", "alpha": 0.5}
GRID_RUN = {"clients_per_round": 5, "local_steps": 5, "batch_size": 32, "weighting": "samples"}
"""The grid's task: Fashion-MNIST dealt to 20 clients by Dirichlet(0.5) label skew, 5 clients per round, 5 local
steps of 32 samples, clients weighted by their samples (``fedcore.explore``'s live run)."""


def grid_axes(scale: str) -> tuple[list[float], list[float], int]:
    """``(client_lrs, server_lrs, rounds)`` of the tuning grid at ``scale`` (:data:`GRIDS`)."""
    spec = scale_at(GRIDS, scale)
    return half_decades(*spec.client), half_decades(*spec.server), spec.rounds


def grid_seeds(scale: str) -> list[int]:
    """The seeds every cell of the grid runs at ``scale`` (:data:`GRIDS`)."""
    return scale_at(GRIDS, scale).seeds_or()


def grid_task(scale: str, data: FederatedData | None = None) -> Task:
    """The task the grids run on at ``scale``: ``data`` (by default Fashion-MNIST on :data:`GRID_CLIENTS` clients,
    :data:`GRID_PARTITION`, the partition drawn from seed 0: ``fedcore.explore.live_problem``'s data), a logistic
    regression drawn from a seed, :data:`GRID_RUN` for the scale's rounds (:data:`GRIDS`), test accuracy with the
    most frequent class's share in % as its trivial baseline."""
    rounds, every = grid_axes(scale)[2], scale_at(GRIDS, scale).eval_every
    data = load_fashion_mnist(GRID_CLIENTS, seed=0, **GRID_PARTITION) if data is None else data
    if not isinstance(data, FederatedData) or data.num_classes is None:
        raise TypeError(f"data={type(data).__name__} must be a classification FederatedData (or None)")
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    return Task(f"Fashion-MNIST on {data.num_clients} clients", data,
                lambda seed: models.make("logistic_regression", shape, classes, seed=seed),
                {"rounds": rounds, "eval_every": every, **GRID_RUN}, baseline=trivial_baseline(data),
                model_label="logistic regression")


def grid_score(history: History) -> float:
    """:data:`METRIC` of a grid run: its test accuracy averaged over its last 4 evaluations
    (:func:`~fedcore.experiments.common.window_score`, the notebook's one window rule)."""
    return window_score(history, "test_accuracy")


def tune(task: Task, builders: Mapping[str, Builder], client_lrs: Sequence[float], server_lrs: Sequence[float],
         seeds: Sequence[int] = (0,), *, store: Store | None = None, progress: bool = False) -> Tuning:
    """Every method of ``builders`` (``{method: build(client_lr, server_lr)}``) at every point of the grid
    ``client_lrs`` x ``server_lrs`` on ``task`` from ``seeds``, scored by :func:`grid_score`, through
    :func:`fedcore.experiments.common.tune` (its tables: one row per point, the score per seed and their mean;
    :func:`tuning_grid` draws one as a heat map)."""
    grid = {"client_lr": list(client_lrs), "server_lr": list(server_lrs)}
    return common.tune(task, builders, {method: grid for method in builders}, seeds, grid_score,
                       higher_is_better=True, store=store, progress=progress)


def tuning_grid(table: pd.DataFrame) -> pd.DataFrame:
    """The heat map of one method's table of :func:`tune` (``Tuning.tables[method]``): its ``score`` (the mean
    over the seeds of :data:`METRIC`) with the server learning rates as rows (largest on top, as the paper draws
    them) and the client learning rates as columns."""
    if not isinstance(table, pd.DataFrame) or "score" not in table or \
            list(table.index.names) != ["client_lr", "server_lr"]:
        raise ValueError("table must be a table of tune(): indexed by (client_lr, server_lr), with a 'score' column")
    grid = table["score"].unstack("client_lr")
    grid.columns.name = "client_lr"
    return grid.sort_index(ascending=False)


def tuning_grids(tuning: Tuning) -> dict[str, pd.DataFrame]:
    """``{method: heat map}``: :func:`tuning_grid` of each method's table of ``tuning``."""
    if not isinstance(tuning, Tuning):
        raise TypeError(f"tuning={type(tuning).__name__} must be what tune() returns (a common.Tuning)")
    return {method: tuning_grid(table) for method, table in tuning.tables.items()}


def good_threshold(grids: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> float:
    """The one threshold of a good cell for every method and seed: the best cell of all the heat maps ``grids``
    (``{method: grid}`` of :func:`tuning_grid`, means over the seeds) minus ``within``."""
    best = [float(grid.max().max()) for grid in grids.values() if grid.notna().any().any()]
    if not best:
        raise ValueError("every cell of every grid diverged: no best cell to measure good cells from")
    return max(best) - within


def is_good(scores: pd.DataFrame | pd.Series, threshold: float) -> pd.DataFrame | pd.Series:
    """Which of ``scores`` (cells of a grid, or one seed's column of a table) reach ``threshold``: a boolean of the
    same shape, False where a run diverged (NaN)."""
    return scores.fillna(-float("inf")) >= threshold


def good_shares(table: pd.DataFrame, threshold: float) -> pd.Series:
    """Per seed (a column of :func:`tune`'s ``table``), the share of the grid's cells that score at least
    ``threshold`` on that seed (a diverged cell never does)."""
    seeds = [column for column in table.columns if column != "score"]
    return pd.Series({seed: float(is_good(table[seed], threshold).mean()) for seed in seeds},
                     name="good share")


def best_cell(grid: pd.DataFrame) -> tuple[float, float, float]:
    """``(client_lr, server_lr, value)`` of the best cell of ``grid``."""
    stacked = grid.stack().dropna()
    if stacked.empty:
        raise ValueError("every cell of the grid is NaN (every run diverged)")
    server_lr, client_lr = stacked.idxmax()
    return float(client_lr), float(server_lr), float(stacked.max())


def tuning_summary(grids: dict[str, pd.DataFrame], threshold: float) -> pd.DataFrame:
    """Per method: its best cell (mean over the seeds; accuracy in points), and how many of its cells (of how many)
    score at least ``threshold`` on average (:func:`good_threshold`)."""
    check_int("methods", len(grids))
    rows = {}
    for method, grid in grids.items():
        client_lr, server_lr, value = best_cell(grid)
        edge = client_lr in (grid.columns[0], grid.columns[-1]) or server_lr in (grid.index[0], grid.index[-1])
        rows[method] = {"best accuracy (%)": round(100 * value, 2), "best client lr": client_lr,
                        "best server lr": server_lr, "best on the grid's edge": edge,
                        "good cells": int(is_good(grid, threshold).to_numpy().sum()),
                        "cells": grid.size}
    return pd.DataFrame(rows).T


def good_cells_by_margin(grids: Mapping[str, pd.DataFrame], margins: Sequence[float]) -> pd.DataFrame:
    """Methods by ``margins`` (accuracy, as fractions): how many cells of each method's mean grid reach the best
    cell of all the grids minus the margin (:func:`good_threshold` at each margin): how the count of good cells,
    and the order of the methods, depend on where "good" starts."""
    if isinstance(margins, (str, bytes)) or not isinstance(margins, Sequence) or not margins:
        raise ValueError(f"margins={margins!r} must be a non-empty list of accuracy margins, e.g. [0.01, 0.02, 0.05]")
    columns = {}
    for margin in margins:
        threshold = good_threshold(grids, margin)
        columns[f"within {100 * margin:g} points"] = {
            method: int(is_good(grid, threshold).to_numpy().sum()) for method, grid in grids.items()}
    return pd.DataFrame(columns)
