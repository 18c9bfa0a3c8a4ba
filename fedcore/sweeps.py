"""A grid of hyperparameters over seeds: :func:`sweep`, one row per point and seed, through
:func:`fedcore.run.simulate_runs` (so a sweep's runs share passes and a results store)."""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from torch import Tensor

from fedcore.checks import check_function, check_keywords, check_seeds, named_numbers, plain_number
from fedcore.engine.options import RunOptions
from fedcore.problem import Problem
from fedcore.results import DivergedWarning, FailedRun, History
from fedcore.run import simulate_runs

__all__ = ["sweep"]


def sweep(problem: Problem, build: Callable[..., Any], grid: dict[str, Sequence[Any]], *,
          seeds: Sequence[int] | None = None, batch: str | int = "auto",
          summary: Callable[[History], dict[str, float]] | None = None,
          x0: Mapping[int, Tensor] | None = None, **settings: Any) -> pd.DataFrame:
    """Run ``build(**point)`` for every point of ``grid`` and every seed of ``seeds``: one row per (point, seed).

    ``sweep(problem, lambda client_lr: fedavg(client_lr), {"client_lr": [0.01, 0.1, 1]}, seeds=(0, 1, 2),
    rounds=50, ...)`` returns the point's values, ``seed``, the final train loss, final and best test accuracy,
    and ``diverged_round`` (NaN when the run did not diverge): a divergence is a result, not a crash.  A point
    whose hyperparameters ``build`` refuses (a negative learning rate), and a run that raises an error (a schedule
    that turns negative in round 3: ``"failed in round 3: ValueError: ..."``), is a row with its ``error``; the
    other rows are computed.  ``seeds`` are distinct (a seed twice would count one run twice); one seed may be given
    instead by ``seed=`` or ``options=RunOptions(seed=...)`` (the table then has no ``seed`` column), not both ways
    (refused, naming both); none: seed 0.  The runs go through :func:`~fedcore.run.simulate_runs` (``batch`` runs per
    pass; ``"off"`` runs them one at a time), so with ``store=`` each run is kept when its pass finishes and an
    interrupted sweep, run again, computes only the runs it had not finished.  ``summary(history)`` adds columns of
    its own to each row (a paper's metric, e.g. the mean accuracy of the last rounds); a run whose ``summary`` raises
    keeps its row, with the sweep's own columns and the ``error`` (``"summary raised KeyError: ..."``), said once in
    a warning (what ``summary`` returns is checked as before: a column of the sweep's, or not a number, raises).  The
    runs' warnings (a read-only or damaged store's) reach the caller, but for the one of each diverged run
    (:class:`~fedcore.results.DivergedWarning`): its ``diverged_round`` says it.  ``x0`` maps each seed to the
    initial parameters its runs start from (a seed that also draws the initial model); None: the model's own for
    every seed.
    """
    if summary is not None:
        check_function("summary", summary, "history")
    if not callable(build):
        raise TypeError(f"build={build!r} must be a function (**hyperparameters) -> algorithm")
    grid = _checked_grid(grid)
    if set(grid) & set(COLUMNS):
        raise ValueError(f"grid has the key {sorted(set(grid) & set(COLUMNS))[0]!r}, a column the sweep writes itself "
                         f"({', '.join(COLUMNS)}): name the hyperparameter otherwise")
    check_keywords(build, grid, "build (with the grid's keys)")
    if "errors" in settings:
        raise TypeError(f"sweep() takes no errors={settings['errors']!r}: a run that raises is a row with its error "
                        "(the other rows are computed); simulate_runs(..., errors='raise') raises it instead")
    passed = {name: settings.pop(name) for name in ("progress", "store") if name in settings}
    options = RunOptions.of((), settings.pop("options", None), "sweep", **settings)
    seeds, options = options.seeds(seeds, "seed" in settings, "sweep")
    seeds = check_seeds("seeds", seeds)
    if x0 is not None and (not isinstance(x0, Mapping) or set(seeds) - set(x0)):
        missing = sorted(set(seeds) - set(x0)) if isinstance(x0, Mapping) else seeds
        raise ValueError(f"x0 must map every seed to its initial parameters ({{seed: tensor}}); seeds {missing} "
                         f"have none")
    rows, runs = _grid_runs(build, grid, seeds)
    if runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DivergedWarning)  # a divergence is a result: its diverged_round
            histories = simulate_runs(problem, [a for _, a, _ in runs], seeds=[s for _, _, s in runs], batch=batch,
                                      x0=None if x0 is None else [x0[s] for _, _, s in runs], errors="keep",
                                      options=options, **passed)
        for (row, _, _), history in zip(runs, histories):
            rows[row].update({"error": str(history)} if isinstance(history, FailedRun) else
                             _summary_row(history, summary, grid))
        _say_summary_errors(summary, [rows[row] for row, _, _ in runs])
    table = pd.DataFrame(rows)
    return table if len(seeds) > 1 else table.drop(columns="seed")


def _grid_runs(build: Callable[..., Any], grid: dict[str, list[Any]],
               seeds: list[int]) -> tuple[list[dict], list[tuple[int, Any, int]]]:
    """A sweep's rows (one per point and seed; a point ``build`` refuses has its ``error``) and its runs
    ``(row, algorithm, seed)``."""
    rows, runs = [], []
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        try:
            algorithm = build(**point)
        except (ValueError, TypeError) as error:
            rows += [{**point, "seed": seed, "error": str(error)} for seed in seeds]
            continue
        for seed in seeds:
            rows.append({**point, "seed": seed})
            runs.append((len(rows) - 1, algorithm, seed))
    return rows, runs


COLUMNS = ("seed", "error", "final_train_loss", "final_test_accuracy", "best_test_accuracy", "diverged_round")
"""The columns a sweep writes beside the grid's: neither a grid key nor a ``summary`` column may take one."""


def _summary_row(history: History, summary: Callable[[History], dict[str, float]] | None,
                 grid: Mapping[str, Any]) -> dict[str, float]:
    frame = history.frame
    own = {
        "final_train_loss": float(frame["train_loss"].iloc[-1]),
        "final_test_accuracy": history.final("test_accuracy") if "test_accuracy" in frame else math.nan,
        "best_test_accuracy": float(frame["test_accuracy"].max()) if "test_accuracy" in frame else math.nan,
        "diverged_round": history.diverged_round if history.diverged else math.nan,
    }
    if summary is None:
        return own
    try:
        values = summary(history)
    except Exception as error:  # noqa: BLE001 -- the run is kept, the error is its row's (and said once)
        return {**own, "error": f"{SUMMARY_RAISED}{type(error).__name__}: {error}"}
    return {**own, **named_numbers("summary", summary, values, reserved=[*grid, *COLUMNS], owner="the sweep's own",
                                   context=" for the run's history")}


SUMMARY_RAISED = "summary raised "
"""How a row's ``error`` begins when the run finished and its ``summary`` raised."""


def _say_summary_errors(summary: Any, rows: list[dict[str, Any]]) -> None:
    """One warning for the runs whose ``summary`` raised (their rows keep the run's own columns and the error)."""
    raised = [row["error"] for row in rows if str(row.get("error", "")).startswith(SUMMARY_RAISED)]
    if raised:
        warnings.warn(f"summary={summary!r} raised for {len(raised)} of {len(rows)} runs (first: "
                      f"{raised[0][len(SUMMARY_RAISED):]}); their rows keep the sweep's own columns and the error",
                      UserWarning, stacklevel=3)


def _checked_grid(grid: Any) -> dict[str, list[Any]]:
    """``grid`` as ``{name: [values]}``: any sequence of values (a list, tuple, range, 1-d array or tensor), its
    numpy and torch scalars as Python numbers."""
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(f"grid={grid!r} is empty or not a dict: give {{hyperparameter: [values, ...]}}, "
                         "e.g. {'client_lr': [0.01, 0.1]}")
    checked = {}
    for name, values in grid.items():
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable) or \
                not hasattr(values, "__len__") or getattr(values, "ndim", 1) != 1:
            example = f"{{{name!r}: [{values!r}]}}" if isinstance(values, (int, float, str)) else \
                "{'client_lr': [0.01, 0.1]}"
            raise ValueError(f"grid[{name!r}]={values!r} must be a sequence of values (a list, tuple, range or "
                             f"1-d array), e.g. {example}")
        checked[name] = [plain_number(value) for value in values]
        if not checked[name]:
            raise ValueError(f"grid[{name!r}]={values!r} is empty: give at least one value")
    return checked
