"""Many runs in one pass: R runs of one algorithm family as one problem, and the plan of a call's passes.

Every fedcore algorithm is written for R runs at once (:mod:`fedcore.algorithms.batch`: the server model
``[R, 1, d]``, the clients ``[R, S, d]``, per-client state ``[R, N, d]``).  R separate algorithms of the same
family, which differ only in the values of their hyperparameters, become one algorithm whose differing
numbers are tensors ``[R, 1, 1]``: :func:`stack` (through schedules, corrections and server rules, each a dataclass
of its hyperparameters).  :func:`signature` says which algorithms can share a pass
(equal signatures), or why one cannot; :func:`plan` groups a call's runs into passes of at most
:func:`runs_per_pass` runs.  :func:`run_state` and :func:`select` take one run, or some runs, out of a pass's state.

What cannot be stacked, and so runs alone: algorithms of different classes or options (a string, a bool or
an int that differs: another family, another loop length), and a hyperparameter given as a plain Python
function (a lambda schedule: its value per run cannot be made a tensor, and its code cannot be compared).
"""

from __future__ import annotations

import dataclasses
import numbers
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from fedcore.algorithms.contract import State, name_of
from fedcore.checks import check_int
from fedcore.identity import describe, uncomparable

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
    runs alone, the reason naming the hyperparameter that cannot be stacked (a plain function, a server rule that is
    not a dataclass of its hyperparameters)."""
    if not dataclasses.is_dataclass(algorithm):
        return None, f"{type(algorithm).__name__} is not a dataclass of hyperparameters"
    description = describe(algorithm)
    if uncomparable(description) or _has_function(description):
        fields = [f.name for f in dataclasses.fields(algorithm)
                  if uncomparable(description[f.name]) or _has_function(description[f.name])]
        return None, (f"its {' and '.join(fields) or 'hyperparameter'} is a plain Python function or object, whose "
                      "value per run cannot be a tensor (a schedule: fedcore.schedules; a server rule: a frozen "
                      "dataclass of its hyperparameters, fedcore.server_opt.ServerRule)")
    return repr(_shape(description)), None


def _has_function(description: Any) -> bool:
    """Whether a description holds a plain function or a plain (non-dataclass) object (its value per run cannot be
    made a tensor).  A user's family is described with its class's ``code``, the same for every instance of it: the
    methods are not hyperparameters."""
    if isinstance(description, dict):
        values = [value for key, value in description.items() if not (key == "code" and "type" in description)]
        return "function" in description or "object" in description or any(_has_function(value) for value in values)
    return isinstance(description, list) and any(_has_function(value) for value in description)


def stack(algorithms: Sequence[Any], dtype: torch.dtype = torch.float32, device: Any = "cpu") -> Any:
    """One algorithm for R runs: the fields all ``algorithms`` share stay as they are, numbers that differ
    become a tensor ``[R, 1, 1]`` (``dtype``, the model's), recursively through schedules, corrections and
    server rules (:class:`fedcore.server_opt.ServerRule`).  The algorithms must have equal :func:`signature`; one
    algorithm is returned as it is."""
    if len(algorithms) == 1:
        return algorithms[0]
    keys = {signature(algorithm)[0] for algorithm in algorithms}
    if None in keys or len(keys) > 1:
        raise ValueError(f"cannot stack {[name_of(a) for a in algorithms]}: they differ in more than "
                         "the values of their hyperparameters (fedcore.engine.passes.signature)")
    return _stack_values(list(algorithms), dtype, device)


def _stack_values(values: list[Any], dtype: torch.dtype, device: Any) -> Any:
    first = values[0]
    if all(value is first or (type(value) is type(first) and _equal(value, first)) for value in values):
        return first
    if all(_is_number(value) for value in values):
        return torch.tensor([float(value) for value in values], dtype=dtype, device=device).view(-1, 1, 1)
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


ROWS_PER_PASS, ENTRIES_PER_PASS = 160, 4_200_000


def runs_per_pass(problem: Any, backend: str, clients_per_round: int) -> int:
    """The ``batch="auto"`` rule: how many runs share a pass.  Measured on 2 CPU cores
    (``benchmarks/round_speed.py --workloads runs``, ``benchmarks/README.md``; K = 10, B = 32, seconds per
    run-round against one run at a time): on the ``vmap`` backend the gain peaks where the pass holds at most
    ``ROWS_PER_PASS`` = 160 client rows and its client matrix ``[R*S, d]`` at most ``ENTRIES_PER_PASS`` = 4.2M
    entries: logistic regression (d = 7,850) gains most at R*S = 160 (3.2x at S = 10, R = 16; 2.2x at S = 20,
    R = 8), less beyond (2.6x at R*S = 320); the 784-64-10 MLP (d = 50,890) at R*S = 80 (2.2x at S = 10,
    R = 8; 3.0x at S = 5, R = 16), less at 160 rows (1.7x).  On the ``loop`` backend (convolutions, LSTMs,
    models above 0.7M parameters) the oracle computes client by client either way: Reddi et al.'s CNN gained
    nothing at R = 4 (0.94-1.02x), so those runs go one at a time.  No accelerator has been measured yet: there
    the CPU's rule applies."""
    if backend == "loop":
        return 1
    rows = min(ROWS_PER_PASS, ENTRIES_PER_PASS // problem.model.dim)
    return max(1, rows // clients_per_round)


def check_batch(batch: Any) -> int:
    """``batch`` (``simulate_runs``'s most runs in one pass) as an int: ``"off"`` is 1."""
    if batch == "off":
        return 1
    if isinstance(batch, str):
        raise ValueError(f"batch={batch!r} not one of 'auto', 'off' or an int >= 1 (the most runs in one pass)")
    return check_int("batch", batch)


_said: set[str] = set()


def plan(algorithms: list[Any], most: int) -> list[list[int]]:
    """The passes: indices of ``algorithms`` grouped by :func:`signature`, at most ``most`` per pass, in order of
    first appearance; an algorithm that cannot share a pass is alone (said once)."""
    groups: dict[str, list[int]] = {}
    alone = []
    for i, algorithm in enumerate(algorithms):
        key, reason = signature(algorithm)
        if key is None:
            alone.append([i])
            name = name_of(algorithm)
            if most > 1 and len(algorithms) > 1 and f"{name}: {reason}" not in _said:
                _said.add(f"{name}: {reason}")
                warnings.warn(f"{name} runs alone, not in a pass with others: {reason}", UserWarning, stacklevel=3)
        else:
            groups.setdefault(key, []).append(i)
    passes = [group[j:j + most] for group in groups.values() for j in range(0, len(group), most)] + alone
    return sorted(passes, key=lambda indices: indices[0])
