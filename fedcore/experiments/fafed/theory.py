"""The counterexample and the theory of FAFED (Wu, Huang, Hu & Huang, AAAI 2023): what notebook
``04_fafed`` shows in its sections 2 and 3 beside the computed runs.

- :func:`law_table`: the naive method's per-step move against Theorem 1's law;
- :func:`map_grid` and :func:`map_summary`: the grid of step sizes and periods of FAFED's map of
  final distances (:func:`fedcore.counterexample.final_distance_map`), and what the map shows;
- :func:`theorem2_step_note`: the largest step Theorem 2 allows on a problem;
- :func:`open_choices`: the choices the paper leaves open, from the algorithm's docstring, as Markdown.
"""

from __future__ import annotations

import inspect
import re

import pandas as pd

from fedcore.checks import check_choice, check_int, check_positive, check_range

LAW = "eta / (3 sqrt(1 - beta^t))"
MAP_GRIDS: dict[str, tuple[list[float], list[int]]] = {
    "smoke": ([0.01, 1.0], [1, 20]),
    "small": ([0.01, 0.0316, 0.1, 0.316, 1.0], [1, 2, 5, 10, 20]),
    "paper": ([0.01, 0.0178, 0.0316, 0.0562, 0.1, 0.178, 0.316, 0.562, 1.0], [1, 2, 3, 5, 8, 10, 15, 20]),
}
"""Step sizes (the explorer's eta slider, 0.01 to 1) and periods (its q slider, 1 to 20) of FAFED's map."""
THEOREM2_W = 1.5
"""Theorem 2's smallest ``w`` (``w >= 3/2``): the theorem's step ``rho h / (w + t)^(1/3)`` is largest there."""


def law_table(naive_mean: pd.Series, eta: float, beta: float) -> pd.DataFrame:
    """The mean model of Algorithm 1 on the counterexample (averaging every step) step by step, its
    move and the law ``eta / (3 sqrt(1 - beta^t))`` that the move should equal."""
    if not isinstance(naive_mean, pd.Series):
        raise TypeError(f"naive_mean must be a pandas Series (Trajectory.frame['mean']), "
                        f"got {type(naive_mean).__name__}")
    check_positive("eta", eta)
    check_range("beta", beta, 0, 1)
    steps = range(1, len(naive_mean))
    return pd.DataFrame({"mean x_t": naive_mean.iloc[1:], "move": naive_mean.diff().iloc[1:],
                         LAW: [eta / (3 * (1 - beta**t) ** 0.5) for t in steps]})


def map_grid(scale: str) -> tuple[list[float], list[int]]:
    """The ``(etas, periods)`` of FAFED's map at ``scale`` (:data:`MAP_GRIDS`)."""
    return MAP_GRIDS[check_choice("SCALE", scale, MAP_GRIDS)]


def map_summary(distance: pd.DataFrame, start: float = 10.0) -> str:
    """What a map of final distances shows: where the runs came down, and which ended above ``start``."""
    if not isinstance(distance, pd.DataFrame):
        raise TypeError(f"distance must be a DataFrame (final_distance_map(...)), got {type(distance).__name__}")
    cells = distance.stack()
    above = [f"eta={eta:g}, q={q}" for (eta, q), value in cells.items() if value > start]
    near = [f"eta={eta:g}, q={q}" for (eta, q), value in cells.items() if value <= 1]
    lines = [f"{len(near)} of {len(cells)} runs end within 1 of the optimum 0 (inside the quadratic piece)"]
    lines.append(f"{len(above)} end farther from 0 than the start x0={start:g}: " + ("; ".join(above) or "none"))
    return "\n".join(lines)


def theorem2_step_note(num_clients: int, smoothness: float, rho: float) -> str:
    """Theorem 2's largest step ``rho h / w^(1/3)`` with ``h = N^(2/3) / L`` and ``w = 3/2``, as a sentence."""
    check_int("num_clients", num_clients)
    check_positive("smoothness", smoothness)
    check_positive("rho", rho)
    h = num_clients ** (2 / 3) / smoothness
    step = rho * h / THEOREM2_W ** (1 / 3)
    return (f"h = N^(2/3) / L = {num_clients}^(2/3) / {smoothness:g} = {h:.3g};  "
            f"eta_0 <= rho h / (3/2)^(1/3) = {rho:g} x {h:.3g} / 1.145 = {step:.2g}")


def open_choices() -> str:
    """The choices the paper leaves open, and fedcore's, from the docstring of
    :mod:`fedcore.algorithms.fafed` (from "Choices the paper leaves open" on), as Markdown: double
    backticks become code spans, Sphinx roles are dropped."""
    from fedcore.algorithms import fafed

    text = inspect.getmodule(fafed).__doc__ or ""
    start = text.index("Choices the paper leaves open")
    return re.sub(r":(?:func|meth|mod|class|data):", "", text[start:].replace("``", "`")).strip()

