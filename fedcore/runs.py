"""Many runs in one pass: R runs of one algorithm family as one problem.

Every fedcore algorithm is written for R runs at once (:mod:`fedcore.algorithms.base`: the server model
``[R, 1, d]``, the clients ``[R, S, d]``, per-client state ``[R, N, d]``).  R separate algorithms of the same
family, which differ only in the values of their hyperparameters, become one algorithm whose differing
numbers are tensors ``[R, 1, 1]``: :func:`stack`.  :func:`signature` says which algorithms can share a pass
(equal signatures), or why one cannot.  :func:`run_state` and :func:`select` take one run, or some runs,
out of a pass's state.

What cannot be stacked, and so runs alone: algorithms of different classes or options (a string, a bool or
an int that differs: another family, another loop length), and a hyperparameter given as a plain Python
function (a lambda schedule: its value per run cannot be made a tensor, and its code cannot be compared).
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from fedcore import server_opt
from fedcore.algorithms.base import State
from fedcore.algorithms.fedexp import extrapolation
from fedcore.algorithms.fedli import deep_frank_wolfe
from fedcore.identity import describe, uncomparable
from fedcore.server_opt import ServerOptimizer

SERVER_RULES: dict[str, Callable[..., ServerOptimizer]] = {
    "sgd": server_opt.sgd, "sgdm": server_opt.sgdm, "adam": server_opt.adam, "yogi": server_opt.yogi,
    "adagrad": lambda beta2, **options: server_opt.adagrad(**options),  # its options record beta2 = 0
    "amsgrad": server_opt.amsgrad, "deep_frank_wolfe": deep_frank_wolfe, "extrapolation": extrapolation,
}
"""Every server rule by the name its options record: a pass rebuilds a rule with per-run values."""

NUMBER = "<number>"


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _shape(description: Any) -> Any:
    """The description with every float leaf replaced by a mark: what must be equal to share a pass."""
    if isinstance(description, dict):
        return {key: _shape(value) for key, value in description.items()}
    if isinstance(description, list):
        return [_shape(value) for value in description]
    return NUMBER if isinstance(description, float) else description


def signature(algorithm: Any) -> tuple[str | None, str | None]:
    """``(key, None)``: algorithms with equal keys can run in one pass; ``(None, reason)`` for one that
    runs alone (a plain-function hyperparameter, a server rule fedcore does not know)."""
    description = describe(algorithm)
    if uncomparable(description):
        return None, "a hyperparameter is a plain Python function (use fedcore's schedules to batch it)"
    server = getattr(algorithm, "server", None)
    if isinstance(server, ServerOptimizer) and dict(server.options).get("rule") not in SERVER_RULES:
        return None, f"its server rule {server.name!r} is not one of fedcore's {sorted(SERVER_RULES)}"
    if not dataclasses.is_dataclass(algorithm):
        return None, f"{type(algorithm).__name__} is not a dataclass of hyperparameters"
    return repr(_shape(description)), None


def stack(algorithms: Sequence[Any], dtype: torch.dtype = torch.float32, device: Any = "cpu") -> Any:
    """One algorithm for R runs: the fields all ``algorithms`` share stay as they are, numbers that differ
    become a tensor ``[R, 1, 1]`` (``dtype``, the model's), recursively through schedules, corrections and
    server rules.  The algorithms must have equal :func:`signature`; one algorithm is returned as it is."""
    if len(algorithms) == 1:
        return algorithms[0]
    keys = {signature(algorithm)[0] for algorithm in algorithms}
    if None in keys or len(keys) > 1:
        raise ValueError(f"cannot stack {[getattr(a, 'name', a) for a in algorithms]}: they differ in more than "
                         "the values of their hyperparameters (fedcore.runs.signature)")
    return _stack_values(list(algorithms), dtype, device)


def _stack_values(values: list[Any], dtype: torch.dtype, device: Any) -> Any:
    first = values[0]
    if all(value is first or (type(value) is type(first) and _equal(value, first)) for value in values):
        return first
    if all(_is_number(value) for value in values):
        return torch.tensor([float(value) for value in values], dtype=dtype, device=device).view(-1, 1, 1)
    if isinstance(first, ServerOptimizer):
        options = [dict(value.options) for value in values]
        stacked = {key: _stack_values([o[key] for o in options], dtype, device) for key in options[0] if key != "rule"}
        return SERVER_RULES[options[0]["rule"]](**stacked)
    if dataclasses.is_dataclass(first):
        changes = {f.name: _stack_values([getattr(value, f.name) for value in values], dtype, device)
                   for f in dataclasses.fields(first) if f.init}
        return dataclasses.replace(first, **changes)
    raise ValueError(f"cannot stack the values {values!r}")


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (RuntimeError, TypeError, ValueError):
        return False


def _map(state: Any, per_run: Callable[[Tensor], Tensor]) -> Any:
    if isinstance(state, Tensor):
        return per_run(state) if state.dim() > 0 else state  # a 0-d tensor is shared by the runs (a counter)
    if isinstance(state, dict):
        return {key: _map(value, per_run) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(_map(value, per_run) for value in state)
    return state


def select(state: State, runs: Tensor) -> State:
    """The state of the runs ``runs`` (indices into the pass) of a pass's state."""
    return _map(state, lambda tensor: tensor.index_select(0, runs.to(tensor.device)))


def run_state(state: State, run: int) -> State:
    """Run ``run``'s state as one run sees it: the run axis removed, and one row ``[1, ...]`` (the model
    ``[1, d]``, a number ``[1, 1]``) squeezed to ``[d]`` (``[1]``)."""

    def one(tensor: Tensor) -> Tensor:
        part = tensor[run]
        return part.squeeze(0) if part.dim() >= 2 and part.shape[0] == 1 else part

    return _map(state, one)
