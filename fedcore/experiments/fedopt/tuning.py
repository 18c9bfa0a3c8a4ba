"""Ease of tuning (Reddi et al., ICLR 2021, Figures 2 and 6): accuracy over a grid of client x server
learning rates, and how much of the grid is good (notebook ``01_fedopt``).

The paper draws, for ``tau = 1e-3``, the validation accuracy of FedAdam, FedYogi, FedAvgM (and, in Fig. 6,
FedAdagrad and FedAvg) over client and server learning rates on a log10 grid, and claims that the adaptive
methods have a larger region of good learning rates.  The grids' exact values were not found; the best
points the paper reports lie on half-decades, so :func:`half_decades` spans such a grid.
:func:`tuning_grid` runs it with :func:`fedcore.sweep` (through the results store, so a rerun reuses the
runs), with the paper's metric (the mean accuracy over the last rounds, :func:`last_rounds_average`);
:func:`cells_near_best` counts the cells within a few points of each method's best: the claim, measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from fedcore.checks import check_int, check_scale
from fedcore.experiments.common import half_decades, last_rounds_average, near_best
from fedcore.problem import Problem
from fedcore.run import sweep

METRIC = "last rounds accuracy"
GRIDS: dict[str, dict[str, Any]] = {
    "smoke": {"client": (-1.0, -0.5), "server": (-1.0, -0.5), "rounds": 3},
    "small": {"client": (-2.5, 0.0), "server": (-2.5, 0.0), "rounds": 30},
    "paper": {"client": (-3.0, 0.5), "server": (-3.0, 0.5), "rounds": 100},
}
"""Per scale: the log10 ranges of the client and server learning rates (half-decades: 6 x 6 at small) and
the rounds per run; tau = 1e-3 as in the paper's figures."""
TAU = 1e-3
NEAR_BEST = 0.02
"""'Good' learning rates: final accuracy within this of the method's best cell (two points)."""


def grid_axes(scale: str) -> tuple[list[float], list[float], int]:
    """``(client_lrs, server_lrs, rounds)`` of the tuning grid at ``scale`` (:data:`GRIDS`)."""
    spec = check_scale(scale, GRIDS)
    return half_decades(*spec["client"]), half_decades(*spec["server"]), spec["rounds"]


def tuning_grid(
    problem: Problem, build: Callable[[float, float], Any], client_lrs: Sequence[float], server_lrs: Sequence[float],
    fraction: float = 1 / 3, **options: Any,
) -> pd.DataFrame:
    """:data:`METRIC` of ``build(client_lr, server_lr)`` at every grid point: a table with the server learning
    rates as rows (largest on top, as the paper draws them) and the client learning rates as columns.
    ``options`` go to :func:`fedcore.simulate` (rounds, clients_per_round, ..., ``store``)."""
    table = sweep(problem, lambda client_lr, server_lr: build(client_lr, server_lr),
                  {"client_lr": list(client_lrs), "server_lr": list(server_lrs)},
                  summary=lambda history: {METRIC: last_rounds_average(history, "test_accuracy", fraction)}, **options)
    if METRIC not in table:
        table[METRIC] = math.nan
    grid = table.pivot(index="server_lr", columns="client_lr", values=METRIC)
    return grid.sort_index(ascending=False)


def cells_near_best(grid: pd.DataFrame, within: float = NEAR_BEST) -> int:
    """How many cells of ``grid`` lie within ``within`` of its best cell (diverged cells never do)."""
    return int(near_best(grid.to_numpy(dtype=float).ravel(), within).sum())


def good_share(grid: pd.DataFrame, within: float = NEAR_BEST) -> float:
    """The share of ``grid``'s cells within ``within`` of its best cell (:func:`cells_near_best` / cells)."""
    return cells_near_best(grid, within) / grid.size


def best_cell(grid: pd.DataFrame) -> tuple[float, float, float]:
    """``(client_lr, server_lr, value)`` of the best cell of ``grid``."""
    stacked = grid.stack().dropna()
    if stacked.empty:
        raise ValueError("every cell of the grid is NaN (every run diverged)")
    server_lr, client_lr = stacked.idxmax()
    return float(client_lr), float(server_lr), float(stacked.max())


def tuning_summary(grids: dict[str, pd.DataFrame], within: float = NEAR_BEST) -> pd.DataFrame:
    """Per method: its best cell, and how many cells (of how many) lie within ``within`` of it."""
    check_int("methods", len(grids))
    rows = {}
    for method, grid in grids.items():
        client_lr, server_lr, value = best_cell(grid)
        edge = client_lr in (grid.columns[0], grid.columns[-1]) or server_lr in (grid.index[0], grid.index[-1])
        rows[method] = {"best accuracy": value, "best client lr": client_lr, "best server lr": server_lr,
                        "best on the grid's edge": edge,
                        f"cells within {within:g} of best": cells_near_best(grid, within), "cells": grid.size}
    return pd.DataFrame(rows).T
