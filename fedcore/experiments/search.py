"""Grid search over a method's hyperparameters, shared by the notebooks' tuning steps.

:func:`grid_search` runs every point of each method's grid through :func:`fedcore.sweep` (so the results store
keeps the runs), scores each run and keeps the best point; a diverged run scores NaN and never wins.
"How forgiving a hyperparameter is" is :func:`fedcore.experiments.common.good_range`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import sweep


def grid_search(
    problem: Problem, grids: Mapping[str, Mapping[str, list[Any]]], builders: Mapping[str, Callable[..., Any]],
    score: Callable[[History], float], higher_is_better: bool = True, **run: Any,
) -> tuple[dict[str, dict[str, float]], dict[str, pd.DataFrame]]:
    """``({method: best point}, {method: table of every point and its "score"})``.  ``grids[method]`` maps each
    keyword of ``builders[method]`` to its values; ``run`` goes to :func:`fedcore.simulate` (rounds,
    clients_per_round, ..., ``store``)."""
    chosen, tables = {}, {}
    for method, grid in grids.items():
        if method not in builders:
            raise ValueError(f"grids has {method!r}, which has no builder; builders has {list(builders)}")
        table = sweep(problem, builders[method], dict(grid), summary=lambda h: {"score": score(h)}, **run)
        if "score" not in table or table["score"].isna().all():
            reason = table["error"].dropna().iloc[0] if "error" in table and table["error"].notna().any() else \
                "every run diverged"
            raise ValueError(f"no point of the grid of {method!r} gave a score: {reason}")
        best = table.loc[table["score"].idxmax() if higher_is_better else table["score"].idxmin()]
        chosen[method], tables[method] = {key: float(best[key]) for key in grid}, table
    return chosen, tables
