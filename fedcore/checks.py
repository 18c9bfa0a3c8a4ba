"""Argument checks shared by every public entry point.

Each check raises ``ValueError`` (or ``TypeError``) with a message that names the
argument, the value it got and what is allowed, e.g. ``beta1=1.2 not in [0, 1)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def _interval(low: float, high: float, low_closed: bool, high_closed: bool) -> str:
    return f"{'[' if low_closed else '('}{low:g}, {high:g}{']' if high_closed else ')'}"


def check_number(name: str, value: Any) -> float:
    """``value`` must be a finite real number (bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name}={value!r} must be a number, got {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be finite")
    return float(value)


def check_range(
    name: str,
    value: Any,
    low: float,
    high: float = math.inf,
    *,
    low_closed: bool = True,
    high_closed: bool = False,
) -> float:
    """``value`` must lie in the interval; ``check_range('beta1', 1.2, 0, 1)`` -> ``beta1=1.2 not in [0, 1)``."""
    number = check_number(name, value)
    above = number >= low if low_closed else number > low
    below = number <= high if high_closed else number < high
    if not (above and below):
        raise ValueError(f"{name}={value!r} not in {_interval(low, high, low_closed, high_closed)}")
    return number


def check_positive(name: str, value: Any) -> float:
    """``value`` must be a finite number > 0 (``tau=0 must be > 0``)."""
    number = check_number(name, value)
    if number <= 0:
        raise ValueError(f"{name}={value!r} must be > 0")
    return number


def check_int(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """``value`` must be an int in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}={value!r} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value!r} must be {allowed}")
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` must be one of ``choices`` (``partition='zipf' not one of ['dirichlet', ...]``)."""
    allowed = sorted(choices)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} not one of {allowed}")
    return value
