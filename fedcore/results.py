"""What a run produced, in a module below everything that computes (figures import it without climbing above the
experiments): :class:`History` (one row per round, the final state, how the run ended), :class:`FailedRun` (a run that
raised), :class:`DivergedWarning` and :class:`Trajectory` (every client's model after every local step of a run on
FAFED's counterexample, :func:`fedcore.counterexample.run`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from torch import Tensor

from fedcore.algorithms.contract import State


class DivergedWarning(RuntimeWarning):
    """The warning of a run that diverged (its history ends the round before, :attr:`History.diverged_round`): a
    sweep, which records the divergence as its ``diverged_round`` column, silences this warning and no other."""


@dataclass
class History:
    """What a run produced: one row per round (``frame``), the final state, how it ended, and with
    ``simulate(..., trace=True)`` one ``(clients [S], models [steps, S, d])`` per round: the sampled
    clients' models after each local step (the last one before averaging).  ``stored`` says the run
    came from a results store (:mod:`fedcore.store`); its ``final_state`` then holds ``x`` only.
    A run that diverged (``diverged_round``) says why in ``diverged_because``."""

    frame: pd.DataFrame
    algorithm: str
    backend: str
    final_state: State = field(repr=False)
    diverged_round: int | None = None
    trace: list[tuple[Tensor, Tensor]] | None = field(default=None, repr=False)
    stored: bool = False
    diverged_because: str | None = None
    """Why the run stopped early: ``"train_loss=nan is not finite"``, ``"the model is not finite"`` or
    ``"train_loss=812.4 > diverge_above=100"`` (None when it ran all its rounds)."""

    @property
    def diverged(self) -> bool:
        return self.diverged_round is not None

    def final(self, metric: str = "test_accuracy") -> float:
        """The last recorded value of ``metric`` (NaN rows skipped)."""
        if metric not in self.frame:
            raise ValueError(f"metric={metric!r} not one of {list(self.frame.columns)}")
        column = self.frame[metric].dropna()
        return float(column.iloc[-1]) if len(column) else math.nan

    def plot(self, metric: str = "train_loss", ax: Any = None, label: str | None = None, smooth: int = 1,
             **style: Any) -> Any:
        """``metric`` against communication rounds on ``ax`` (a new figure if None); with ``smooth`` > 1, its
        running mean over the last ``smooth`` recorded values (a per-round quantity: the last ``smooth``
        rounds), which the y label says."""
        import matplotlib.pyplot as plt

        if metric not in self.frame:
            raise ValueError(f"metric={metric!r} not one of {list(self.frame.columns)}")
        if ax is None:
            _, ax = plt.subplots(figsize=(5, 3.5))
        elif not callable(getattr(ax, "plot", None)):
            raise TypeError(f"ax={ax!r} must be a matplotlib Axes, or None for a new figure")
        if isinstance(smooth, bool) or not isinstance(smooth, int) or smooth < 1:
            raise ValueError(f"smooth={smooth!r} must be an int >= 1 (1: no smoothing)")
        column = self.frame[metric].dropna()
        if smooth > 1:
            column = column.rolling(smooth, min_periods=1).mean()
        ax.plot(column.index, column.values, label=label or self.algorithm, **style)
        ax.set_xlabel("communication round")
        ax.set_ylabel(metric.replace("_", " ") + (f", mean of the last {smooth}" if smooth > 1 else ""))
        if self.diverged:
            ax.axvline(self.diverged_round, color="grey", linestyle=":", linewidth=1)
        return ax


@dataclass(frozen=True)
class FailedRun:
    """A run that raised an error instead of finishing (``simulate_runs(..., errors="keep")``, which a sweep uses so
    that one failed point does not lose the others): the algorithm, the round it was in (0: before the first) and
    the error, ``"ValueError: ..."``."""

    algorithm: str
    round: int
    error: str

    def __str__(self) -> str:
        return f"failed in round {self.round}: {self.error}" if self.round else f"failed before round 1: {self.error}"


@dataclass
class Trajectory:
    """Every client's model after every local step of a run on the counterexample.

    ``frame`` has index ``step`` (0 is ``x_0``) and columns ``client 1``..``client 3``
    (the local models ``x_t,i``; after an averaging step the models before averaging),
    ``mean`` (their mean, which after an averaging step is the server model),
    ``averaged`` (whether the step ended a period of ``local_steps``) and ``f`` (the
    global objective at the mean).
    """

    frame: pd.DataFrame
    algorithm: str
    local_steps: int

    @property
    def server(self) -> pd.Series:
        """The server model at the start and after each averaging."""
        frame = self.frame
        return frame.loc[(frame.index == 0) | frame["averaged"], "mean"]

    def final(self) -> float:
        return float(self.frame["mean"].iloc[-1])
