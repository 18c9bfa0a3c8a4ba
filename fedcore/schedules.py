"""Schedules of a step size or a momentum over the rounds (or FAFED's global steps), which an algorithm takes as a
hyperparameter as it takes a server optimizer (:mod:`fedcore.server_opt`): small frozen dataclasses, so a run's
identity compares their fields and a pass of runs stacks their numbers; :func:`schedule_at` reads any of them,
or a number, or a user's function of ``t``, and checks the value."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torch import Tensor

from fedcore.checks import check_int, check_positive, check_range

Schedule = Callable[[int], float]


@dataclass(frozen=True)
class constant:  # noqa: N801 (a schedule reads as a function: constant(0.1)(t))
    """``eta_l(t) = lr`` (a checkpoint resumes only into the same schedule: a run's identity compares fields)."""

    lr: float

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)

    def __call__(self, t: int) -> float:
        return self.lr


@dataclass(frozen=True)
class exp_decay:  # noqa: N801
    """Reddi et al.'s ExpDecay of the client learning rate: ``eta_l(t) = lr * factor^(t // every)``."""

    lr: float
    factor: float = 0.1
    every: int = 500

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_range("factor", self.factor, 0, 1, low_closed=False, high_closed=True)
        check_int("every", self.every)

    def __call__(self, t: int) -> float:
        return self.lr * self.factor ** (t // self.every)


def schedule_at(
    name: str, schedule: float | Schedule, t: int, unit: str = "round",
    check: Callable[[str, Any], float] = check_positive,
) -> float:
    """The value of ``schedule`` (a number, or a function of ``t``) at ``t``, checked by ``check``
    (default: a finite number > 0).  Algorithms call it at ``t = 0`` when they are built, so a
    negative, zero or non-finite step is refused before a run starts, and at every ``t`` they use,
    so a schedule that goes bad later names the ``unit`` (round or step) where it did."""
    if not callable(schedule):
        return check(name, schedule)
    try:
        value = schedule(t)
    except Exception as error:  # noqa: BLE001 -- a user's function failing is reported as theirs
        raise TypeError(f"{name}={schedule!r} must be a number or a function of the {unit} t; calling it at "
                        f"t={t} raised {type(error).__name__}: {error}") from None
    try:
        return check(name, value)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name}={schedule!r} gives {value!r} at {unit} {t}: {error}") from None


@dataclass(frozen=True)
class storm_step_size:  # noqa: N801 (a schedule reads as a function)
    """``eta_t = scale / (w + t)^(1/3)`` (FAFED eq. 5 with ``scale = rho h``; STEM's ``kappa``)."""

    scale: float = 1.0
    w: float = 1.0

    def __post_init__(self) -> None:
        check_positive("scale", self.scale)
        check_positive("w", self.w)

    def __call__(self, t: int) -> float:
        return self.scale / (self.w + t) ** (1 / 3)


@dataclass(frozen=True)
class storm_momentum:  # noqa: N801
    """``alpha_t+1 = min(1, c eta_t^2)`` (FAFED Theorem 2; STEM)."""

    c: float
    step_size: Schedule

    def __post_init__(self) -> None:
        check_positive("c", self.c)
        if not callable(self.step_size):
            raise TypeError(f"step_size={self.step_size!r} must be a schedule t -> eta_t "
                            f"(e.g. storm_step_size(scale=0.1)), got {type(self.step_size).__name__}")

    def __call__(self, t: int) -> float:
        value = self.c * self.step_size(max(t - 1, 0)) ** 2
        return value.clamp(max=1.0) if isinstance(value, Tensor) else min(1.0, value)  # per-run values: a tensor
