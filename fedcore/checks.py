"""Argument checks shared by every public entry point.

Each check raises ``ValueError`` (or ``TypeError``) with a message that names the
argument, the value it got and what is allowed, e.g. ``beta1=1.2 not in [0, 1)``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def plain_number(value: Any) -> Any:
    """A 0-d tensor or a numpy scalar as the Python number it holds (anything else unchanged)."""
    if type(value).__module__ == "torch" and getattr(value, "dim", lambda: 1)() == 0:
        return value.item()
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return value.item()
    return value


def named_numbers(argument: str, function: Any, values: Any, *, reserved: Iterable[str] = (),
                  owner: str = "fedcore's own", context: str = "", hint: str = "") -> dict[str, float]:
    """What a user's function ``argument=function`` returned (``record=``, a sweep's ``summary=``, Flower's
    ``evaluate``), as ``{name: float}``: it must be a mapping of string names to one real number each (a number, or
    a tensor or array of one element; a complex one is refused), no name ``reserved`` (the columns ``owner``
    writes).  ``context`` says what it was called with; ``hint`` how to make a value one number."""
    if not isinstance(values, Mapping) or not all(isinstance(name, str) for name in values):
        raise TypeError(f"{argument}={function!r} returned {values!r:.80}; it must return {{name: one number}}"
                        f"{context}")
    reserved = list(reserved)
    taken = sorted(set(reserved) & set(values))
    if taken:
        raise ValueError(f"{argument}={function!r} returned the column {taken[0]!r}, which is {owner} (its columns: "
                         f"{', '.join(reserved)}); name it otherwise, e.g. 'my_{taken[0]}'")
    numbers_by_name = {}
    for name, value in values.items():
        size = value.numel() if hasattr(value, "numel") else getattr(value, "size", 1)  # a tensor, an array
        if _complex(value):  # float() would drop its imaginary part (numpy) or raise torch's own error
            raise TypeError(f"{argument}={function!r} returned {name!r}: a complex {type(value).__name__} "
                            f"{value!r:.60}; it must be one real number{context} (its .real or abs(), say)")
        if isinstance(value, (str, bytes, bool)) or size != 1 or not hasattr(value, "__float__"):
            shape = f"of shape {list(value.shape)}" if hasattr(value, "shape") else f"{value!r:.60}"
            raise TypeError(f"{argument}={function!r} returned {name!r}: a {type(value).__name__} {shape}; it must be "
                            f"one number{context}{hint}")
        numbers_by_name[name] = float(value)
    return numbers_by_name


def _complex(value: Any) -> bool:
    """``value`` (a number, or a tensor or array) holds complex numbers."""
    if isinstance(value, complex):
        return True
    dtype = getattr(value, "dtype", None)
    return bool(getattr(dtype, "is_complex", False) or getattr(dtype, "kind", "") == "c")


def plain_sequence(value: Any) -> Any:
    """A 1-d numpy array or torch tensor as the list it holds (anything else unchanged)."""
    if type(value).__module__ in ("numpy", "torch") and getattr(value, "ndim", 0) == 1:
        return value.tolist()
    return value


def _interval(low: float, high: float, low_closed: bool, high_closed: bool) -> str:
    return f"{'[' if low_closed else '('}{low:g}, {high:g}{']' if high_closed else ')'}"


def _per_run(value: Any) -> bool:
    """A floating tensor of one value per run (``[R, 1, 1]``: the hyperparameters of a pass of several runs,
    :mod:`fedcore.engine.passes`): the checks below apply to every element."""
    return type(value).__module__ == "torch" and getattr(value, "dim", lambda: 0)() > 0 and value.is_floating_point()


def check_number(name: str, value: Any) -> Any:
    """``value`` must be a finite real number (bools are refused; numpy and 0-d torch scalars are numbers).
    A floating tensor of per-run values is checked element by element and returned as it is."""
    if _per_run(value):
        if not bool(value.isfinite().all()):
            raise ValueError(f"{name}={value.flatten().tolist()!r} must be finite")
        return value
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
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
) -> Any:
    """``value`` must lie in the interval; ``check_range('beta1', 1.2, 0, 1)`` -> ``beta1=1.2 not in [0, 1)``."""
    number = check_number(name, value)
    above = number >= low if low_closed else number > low
    below = number <= high if high_closed else number < high
    if not bool((above & below).all() if _per_run(number) else above and below):
        shown = number.flatten().tolist() if _per_run(number) else value
        raise ValueError(f"{name}={shown!r} not in {_interval(low, high, low_closed, high_closed)}")
    return number


def check_positive(name: str, value: Any) -> Any:
    """``value`` must be a finite number > 0 (``tau=0 must be > 0``)."""
    number = check_number(name, value)
    if not bool((number > 0).all() if _per_run(number) else number > 0):
        shown = number.flatten().tolist() if _per_run(number) else value
        raise ValueError(f"{name}={shown!r} must be > 0")
    return number


def check_int(name: str, value: Any, low: int = 1, high: int | None = None) -> int:
    """``value`` must be an int in ``[low, high]`` (numpy and 0-d torch integers count)."""
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}={value!r} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        allowed = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise ValueError(f"{name}={value!r} must be {allowed}")
    return int(value)


def check_x0(name: str, x0: Any, dim: int | None) -> Any:
    """``x0`` must be a finite floating tensor of the model's ``dim`` parameters (``dim`` None: any length), in
    memory (not on the ``meta`` device)."""
    import torch

    expected = f"a tensor of shape ({dim},), the model's parameters" if dim is not None else \
        "a 1-d tensor of the model's parameters"
    if not isinstance(x0, torch.Tensor) or x0.dim() != 1 or (dim is not None and x0.shape != (dim,)):
        shape = tuple(x0.shape) if isinstance(x0, torch.Tensor) else type(x0).__name__
        raise ValueError(f"{name} has shape {shape}; expected {expected}")
    if x0.is_meta or not (x0.is_floating_point() or x0.dtype in (torch.int32, torch.int64)):
        raise ValueError(f"{name} is a {x0.dtype} tensor on {x0.device}; expected {expected}, real numbers held in "
                         "memory (cpu or cuda)")
    if not bool(torch.isfinite(x0).all()):
        raise ValueError(f"{name} has {int((~torch.isfinite(x0)).sum())} non-finite entries; a start must be finite")
    return x0


def check_device(name: str, device: Any) -> Any:
    """``device`` must name a device this machine has (``device='gpu'``: not a device; ``'cuda'`` without
    a GPU: not available), so that nothing is loaded before the error."""
    import torch

    available = ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"{name}={device!r} is not a device; this machine has {available}") from None
    if parsed.type == "cuda" and (not torch.cuda.is_available() or (parsed.index or 0) >= torch.cuda.device_count()):
        raise ValueError(f"{name}={device!r} is not available here; this machine has {available}")
    if parsed.type not in ("cpu", "cuda") and not getattr(torch, parsed.type).is_available():
        raise ValueError(f"{name}={device!r} is not available here; this machine has {available}")
    return device


def check_bool(name: str, value: Any) -> bool:
    """``value`` must be True or False (numpy bools count)."""
    value = plain_number(value)
    if not isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be True or False, got {type(value).__name__}")
    return value


def check_path(name: str, value: Any) -> Any:
    """``value`` must be a file path (``str`` or ``os.PathLike``); returns it as a ``pathlib.Path``."""
    import os
    from pathlib import Path

    if not isinstance(value, (str, os.PathLike)) or value == "":
        raise TypeError(f"{name}={value!r} must be a file path (str or pathlib.Path), got {type(value).__name__}")
    return Path(value)


SEED_LIMIT = 2**62
"""Seeds are ints in ``[0, 2**62]``: torch's generators take 64-bit seeds and a run uses seed, seed+1, seed+2."""


def check_seed(name: str, value: Any) -> int:
    """``value`` must be an int in ``[0, 2**62]`` (numpy and 0-d torch integers count)."""
    seed = check_int(name, value, 0)
    if seed > SEED_LIMIT:
        raise ValueError(f"{name}={value!r} must be <= 2**62 (torch's generators take 64-bit seeds; a run uses "
                         "seed, seed + 1 and seed + 2)")
    return seed


def check_seeds(name: str, value: Any, hint: str = "") -> list[int]:
    """``value`` must be a non-empty sequence of distinct seeds (a list, tuple, range or 1-d integer array; each
    :func:`check_seed`): a seed given twice would count one run twice.  ``hint`` is added to the message (how to pass
    a list from where the caller is)."""
    value = plain_sequence(value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise ValueError(f"{name}={value!r} must be a non-empty list of seeds{hint}, e.g. [0, 1, 2]")
    seeds = [check_seed(name, seed) for seed in value]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"{name}={list(value)} repeats a seed: each seed is one independent run")
    return seeds


def check_function(name: str, value: Any, *arguments: str) -> Any:
    """``value`` must be callable with the positional ``arguments`` (``callback(round, state)``); a
    function whose signature cannot take them is refused now, not when it is first called."""
    import inspect

    signature = ", ".join(arguments)
    if not callable(value):
        raise TypeError(f"{name}={value!r} must be a function ({signature}), got {type(value).__name__}")
    try:
        inspect.signature(value).bind(*arguments)
    except TypeError:
        raise TypeError(f"{name}={value!r} must take {len(arguments)} positional argument(s) ({signature}); its "
                        f"signature is {inspect.signature(value)}") from None
    except ValueError:  # a builtin without a signature: taken on trust
        pass
    return value


def check_keywords(function: Any, given: Iterable[str], label: str, exclude: Iterable[str] = ()) -> None:
    """The keyword arguments ``given`` to ``function`` are ones it takes, and none it needs is missing:
    ``make('fedadam', beta3=1)`` -> ``make('fedadam') got unknown argument(s) ['beta3']; it takes [...]``."""
    import inspect

    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to read (a builtin): taken on trust
        return
    parameters = {name: p for name, p in signature.parameters.items() if name not in exclude}
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    allowed = [name for name, p in parameters.items() if p.kind in named]
    given = set(given)
    unknown = sorted(given - set(allowed))
    if unknown and not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        raise TypeError(f"{label} got unknown argument(s) {unknown}; it takes {allowed}")
    missing = [name for name, p in parameters.items() if p.kind in named and p.default is p.empty and name not in given]
    if missing:
        raise TypeError(f"{label} needs argument(s) {missing}; it takes {allowed}")


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` must be one of ``choices`` (``partition='zipf' not one of ['dirichlet', ...]``)."""
    allowed = sorted(choices)
    if value not in allowed:
        raise ValueError(f"{name}={value!r} not one of {allowed}")
    return value


def check_scale(scale: Any, scales: Mapping[str, Any]) -> Any:
    """``scales[scale]``: a notebook's settings at ``SCALE`` (``smoke``, ``small``, ``paper``), or an error that
    names the parameter and how to set it."""
    if scale not in scales:
        raise ValueError(f"SCALE={scale!r} not one of {list(scales)} (set it with FEDCORE_SCALE or papermill -p SCALE)")
    return scales[scale]


def check_notebook_parameters(namespace: Mapping[str, Any], declared: Iterable[str]) -> None:
    """Refuse a notebook parameter its parameters cell does not declare.  The parameters cell ends with
    ``DECLARED = sorted(name for name in globals() if name.isupper())``; papermill's injected cell comes after
    it, so a name given with ``-p`` that the notebook does not have (``-p SEEED 1``) is an upper-case global
    outside ``DECLARED``: the next cell calls ``check_notebook_parameters(globals(), DECLARED)``, which names
    it and the parameters the notebook has, instead of running to the end with the default."""
    declared = set(declared)
    unknown = sorted(name for name in namespace if name.isupper() and name not in declared and name != "DECLARED")
    if unknown:
        raise ValueError(f"this notebook has no parameter {', '.join(unknown)} (given with papermill -p?); its "
                         f"parameters: {', '.join(sorted(declared))}")
