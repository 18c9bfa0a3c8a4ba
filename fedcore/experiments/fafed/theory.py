"""The counterexample and the theory of FAFED (Wu, Huang, Hu & Huang, AAAI 2023) beside notebook ``04_fafed``'s
runs (its sections 2 and 3): Theorem 1's law, the grid of FAFED's map, Theorem 2's step, the paper's open choices."""

from __future__ import annotations

import inspect
import re

import pandas as pd

from fedcore import algorithms
from fedcore.checks import check_int, check_positive, check_range

LAW = "eta / (3 sqrt(1 - beta^t))"
MAP_GRIDS: dict[str, tuple[list[float], list[int]]] = {
    "smoke": ([0.01, 1.0], [1, 20]),
    "small": ([0.01, 0.0316, 0.1, 0.316, 1.0], [1, 2, 5, 10, 20]),
    "medium": ([0.01, 0.0316, 0.1, 0.316, 1.0], [1, 2, 5, 10, 20]),
    "paper": ([0.01, 0.0178, 0.0316, 0.0562, 0.1, 0.178, 0.316, 0.562, 1.0], [1, 2, 3, 5, 8, 10, 15, 20]),
}
"""Per scale, the step sizes (the explorer's eta slider, 0.01 to 1) and periods (its q slider, 1 to 20) of FAFED's
map (:class:`~fedcore.experiments.fafed.figures.DistanceMapDisplay`)."""


def law_table(naive_mean: pd.Series, eta: float, beta: float) -> pd.DataFrame:
    """The mean model of Algorithm 1 on the counterexample (averaging every step) step by step, its
    move and the law ``eta / (3 sqrt(1 - beta^t))`` that the move should equal."""
    if not isinstance(naive_mean, pd.Series):
        raise TypeError(f"naive_mean must be a Series (Trajectory.frame['mean']), got {type(naive_mean).__name__}")
    check_positive("eta", eta)
    check_range("beta", beta, 0, 1)
    return pd.DataFrame({"mean x_t": naive_mean.iloc[1:], "move": naive_mean.diff().iloc[1:],
                         LAW: [eta / (3 * (1 - beta**t) ** 0.5) for t in range(1, len(naive_mean))]})


def theorem2_step_note(num_clients: int, smoothness: float, rho: float) -> str:
    """Theorem 2's largest step, ``rho h / w^(1/3)`` with ``h = N^(2/3) / L`` and the least ``w`` (3/2), in words."""
    check_int("num_clients", num_clients)
    check_positive("smoothness", smoothness)
    check_positive("rho", rho)
    h = num_clients ** (2 / 3) / smoothness
    step = rho * h / 1.5 ** (1 / 3)
    return (f"h = N^(2/3) / L = {num_clients}^(2/3) / {smoothness:g} = {h:.3g};  "
            f"eta_0 <= rho h / (3/2)^(1/3) = {rho:g} x {h:.3g} / 1.145 = {step:.2g}")


def open_choices() -> str:
    """The choices the paper leaves open, and fedcore's, from :mod:`fedcore.algorithms.fafed`'s docstring (from
    "Choices the paper leaves open" on), as Markdown: double backticks become code spans, Sphinx roles go."""
    text = inspect.getmodule(algorithms.fafed).__doc__ or ""
    start = text.index("Choices the paper leaves open")
    return re.sub(r":(?:func|meth|mod|class|data):", "", text[start:].replace("``", "`")).strip()

