"""What identifies a run: everything that determines its result, as a comparable description.

:func:`run_identity` describes a run by its data (a content hash of the resident tensors and the
test set, computed afresh for every run, so that an in-place change of the data, through torch, numpy or
``.data``, is a different run: 0.02 s for Fashion-MNIST's 220 MB on 2 CPU cores (xxHash's XXH3, 128 bits), once per
:func:`~fedcore.simulate` call and once for all the runs of a :func:`~fedcore.simulate_runs` or
:func:`~fedcore.sweep` call), its model (architecture and
initial parameters), the algorithm with every hyperparameter (a server optimizer with all its
options; schedules are frozen dataclasses whose fields are compared), the simulation options and
fedcore's version.  :func:`differences` names what differs between two descriptions, field by
field, and :func:`uncomparable` the parts that cannot be compared, which a checkpoint then resumes only on the
caller's word (``resume="trust"``).

The code that decides a run's numbers is part of what identifies it, in two parts:

- fedcore's own numerics, the modules :data:`NUMERICS` lists (the algorithm families and the round skeleton, the
  client rules, the server optimizers, the gradient oracle and the models, the data containers and partitioners, the
  engine): their source is hashed as one (:func:`numerics_hash`), and the results store keys every run by it.  What
  only presents or orchestrates (figures, explorers, the experiments' tables and claim rules, Flower, the store, the
  notebooks) is not in it, so an edit there recomputes nothing.  ``tests/test_store_keys.py`` traces every module a
  run executes and fails when one is neither listed here nor in :data:`BOOKKEEPING`;
- anything handed to a run that computes and is defined outside those modules and the libraries (a ``record=``
  class, a schedule given as a function, a user's own algorithm class, a model's layer class or a loss of the user's)
  is described by its code: its functions' bytecode and constants, and
  the values of the names they read (closure cells and globals, recursively through the functions they call), so an
  edit of that code, or of a number it reads, is another run.  What such code reads that cannot be described (an
  object of no known kind) makes the run uncomparable.
"""

from __future__ import annotations

import builtins
import hashlib
import importlib.metadata
import inspect
import sys
import sysconfig
import types
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import xxhash
from torch import Tensor, nn

UNCOMPARABLE = "<uncomparable>"
PACKAGE = Path(__file__).resolve().parent
NUMERICS = (
    "algorithms/",  # the families, the contract and its round, the round batch, the client rules
    "server_opt.py",  # the server optimizers
    "schedules.py",  # the step-size and momentum schedules
    "params.py",  # the flat model and the gradient oracle (loop and vmap backends), evaluation
    "models.py",  # the papers' models and their initial parameters
    "problem.py",  # a data set and its model
    "data/federated.py",  # the resident clients and their minibatch rows
    "data/partition.py",  # the partitioners
    "engine/",  # options, random streams, the round loop, passes of many runs
    "run.py",  # simulate, simulate_runs: the entry points into the engine
)
"""The files of fedcore (paths in the package; a folder is every ``.py`` file under it) whose source decides a
run's numbers: their hash is part of every run's store key (:func:`numerics_hash`)."""
BOOKKEEPING = (
    "identity.py", "store.py", "checkpoint.py", "checks.py", "files.py", "results.py", "memory.py", "sweeps.py",
)
"""The files a run executes that decide none of its numbers: they describe, check, keep and read back runs (an edit
of a check that refused a run, or of how a history is read back, cannot change a number a run computed)."""
try:  # from the package's metadata: this module sits below the package's top and does not import it
    VERSION = importlib.metadata.version("fedcore")
except importlib.metadata.PackageNotFoundError:  # a source tree not installed (pip install -e . installs it)
    VERSION = "unknown"


def tensor_hash(*tensors: Tensor) -> str:
    """A 128-bit hash (XXH3, 32 hex digits) of the tensors' dtypes, shapes and bytes.

    A fingerprint of content, not a seal against tampering: any change of a byte gives another hash but for a
    chance of 2^-128, and it reads memory at about 12 GB/s, ten times SHA-256's speed (the data of every run is
    hashed afresh, so this cost is paid per run)."""
    digest = xxhash.xxh3_128()
    for tensor in tensors:
        tensor = tensor.detach().contiguous().cpu()
        digest.update(f"{tensor.dtype}{tuple(tensor.shape)}".encode())
        if tensor.numel():
            digest.update(tensor.reshape(-1).view(torch.uint8).numpy().data)  # the bytes in place, no copy
    return digest.hexdigest()


def data_hash(data: Any) -> str:
    """The content hash of a FederatedData's clients and test set, computed from the bytes every time (nothing is
    cached on the object: an in-place change must change the hash)."""
    return tensor_hash(data.inputs, data.targets, data.sizes, data.test_inputs, data.test_targets)


def numerics_files(root: Path = PACKAGE) -> list[Path]:
    """The files :data:`NUMERICS` names under the package folder ``root``, sorted."""
    found = set()
    for entry in NUMERICS:
        found |= set((root / entry).rglob("*.py")) if entry.endswith("/") else {root / entry}
    missing = [str(path) for path in found if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"NUMERICS names files that do not exist: {missing}")
    return sorted(found)


@cache
def numerics_hash(root: Path = PACKAGE) -> str:
    """SHA-256 (16 hex digits) of the source of fedcore's numerics (:data:`NUMERICS`: paths and contents)."""
    digest = hashlib.sha256()
    for path in numerics_files(root):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


@cache
def _library_paths() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple(Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib"))


@cache
def _numerics_set() -> frozenset[Path]:
    return frozenset(numerics_files())


@cache
def _known_file(filename: str) -> bool:
    """Whether code from ``filename`` is described by name alone: a file of fedcore's numerics (keyed by
    :func:`numerics_hash`) or of a library (the standard library, installed packages: torch, numpy, ...).  The code
    of anything else (a notebook's cell, a user's module, code run by ``exec``, fedcore's experiments) is described by
    its content."""
    path = Path(filename).resolve()
    if path in _numerics_set():
        return True
    return not path.is_relative_to(PACKAGE) and any(path.is_relative_to(root) for root in _library_paths())


def _known_class(cls: type) -> bool:
    """Whether a class is described by name alone: a class of fedcore's numerics or of a library (by its module's
    file, as :func:`_known_file`), or a builtin."""
    if getattr(builtins, cls.__qualname__, None) is cls:
        return True
    file = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return cls.__module__ != "__main__" and file is not None and _known_file(file)


def _code(code: types.CodeType) -> dict:
    """A code object by content: its bytecode, its constants (nested code objects by their own content) and the names
    it reads.  Line numbers are not part of it (moving a function in its file changes nothing)."""
    constants = [_code(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    digest = hashlib.sha256(code.co_code + repr((constants, code.co_names, code.co_varnames)).encode())
    return {"bytecode": digest.hexdigest()[:16], "names": sorted(_names(code))}


def _names(code: types.CodeType) -> set[str]:
    """The global (and attribute) names ``code`` and the code nested in it read."""
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _names(constant)
    return names


def _function(function: types.FunctionType, seen: frozenset[int]) -> dict:
    """A function outside fedcore's numerics by its code and the values it reads (closure cells, the globals it
    names), described recursively; a function of the numerics by its name."""
    name = f"{function.__module__}.{function.__qualname__}"
    if _known_file(function.__code__.co_filename) or id(function) in seen:
        return {"function": name}
    seen = seen | {id(function)}
    code = function.__code__
    cells = dict(zip(code.co_freevars, [cell.cell_contents for cell in function.__closure__ or ()]))
    reads = {key: function.__globals__[key] for key in sorted(_names(code)) if key in function.__globals__}
    return {"function": name, "code": _code(code),
            "defaults": _value(function.__defaults__ or (), seen),
            "closure": {key: _value(value, seen) for key, value in cells.items()},
            "globals": {key: _value(value, seen) for key, value in reads.items()}}


DATACLASS_METHODS = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
                     "__gt__", "__ge__", "__getstate__", "__setstate__"}
"""The methods ``@dataclass`` may generate (from the fields, which are described as values)."""


def _class(cls: type, seen: frozenset[int]) -> dict:
    """A class outside fedcore's numerics and the libraries by the code of the functions it defines (a dataclass's
    generated methods left out), and of its bases; a class of the numerics, a library or a builtin by its name."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if _known_class(cls) or id(cls) in seen:
        return {"class": name}
    seen = seen | {id(cls)}
    methods = {}
    for key, member in sorted(vars(cls).items()):
        member = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        member = inspect.unwrap(member) if callable(member) else member
        generated = is_dataclass(cls) and key in DATACLASS_METHODS and member.__code__.co_filename == "<string>"
        if isinstance(member, types.FunctionType) and not generated:
            methods[key] = _function(member, seen)
    bases = [_class(base, seen) for base in cls.__bases__ if base is not object]
    return {"class": name, "methods": methods, "bases": bases}


def _value(value: Any, seen: frozenset[int]) -> Any:
    """What a function or a class outside the numerics reads, described: modules by name, functions and classes by
    their code, everything else by :func:`describe`, where an object of no known kind is uncomparable (its
    ``repr`` would not say its content)."""
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if value is NotImplemented or value is Ellipsis:
        return repr(value)
    if isinstance(value, type):
        return _class(value, seen)
    if isinstance(value, nn.Module):  # its weights too, not only its architecture
        return {"module": repr(value), "parameters": tensor_hash(*value.state_dict().values())}
    described = describe(value, seen)
    if isinstance(described, str) and not isinstance(value, str):  # describe's last resort: a repr
        return {UNCOMPARABLE: f"{type(value).__qualname__} object"}
    return described


def describe(obj: Any, seen: frozenset[int] = frozenset()) -> Any:
    """A comparable description: dataclasses by type and fields, server optimizers by all their options, tensors
    and arrays by content hash, modules by architecture.  What is defined outside fedcore's numerics also by its
    code (a dataclass's class, a plain function: see the module docstring); a callable of no known kind is marked
    uncomparable."""
    if is_dataclass(obj) and not isinstance(obj, type):
        described = {"type": type(obj).__qualname__,
                     **{f.name: describe(getattr(obj, f.name), seen) for f in fields(obj)}}
        if not _known_class(type(obj)):
            described["code"] = _class(type(obj), seen)
        return described
    options = getattr(obj, "options", None)
    if isinstance(options, tuple) and callable(getattr(obj, "update", None)):
        return {"type": "ServerOptimizer", **{key: describe(value, seen) for key, value in options}}
    if isinstance(obj, Tensor):
        return {"tensor": tensor_hash(obj), "shape": list(obj.shape)}
    if isinstance(obj, nn.Module):
        return {"module": repr(obj)}
    if isinstance(obj, Mapping):
        return {str(key): describe(value, seen) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [describe(value, seen) for value in obj]
    if isinstance(obj, np.ndarray):
        return {"array": tensor_hash(torch.from_numpy(np.ascontiguousarray(obj))), "shape": list(obj.shape)}
    if isinstance(obj, (np.generic,)):
        return obj.item()
    if isinstance(obj, (bool, int, float, str, type(None))):
        return obj
    if isinstance(obj, types.FunctionType):
        return _function(obj, seen)
    if isinstance(obj, (types.BuiltinFunctionType, np.ufunc)):
        return {"function": f"{getattr(obj, '__module__', None) or type(obj).__module__}.{obj.__name__}"}
    if isinstance(obj, partial):
        return {"partial": describe(obj.func, seen), "args": describe(obj.args, seen),
                "keywords": describe(obj.keywords, seen)}
    if callable(obj):
        return {UNCOMPARABLE: getattr(obj, "__qualname__", repr(obj))}
    return repr(obj)


def differences(saved: Any, current: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """``[(field, saved value, current value)]`` for every field that differs (uncomparable parts skipped)."""
    if isinstance(saved, dict) and isinstance(current, dict):
        if UNCOMPARABLE in saved or UNCOMPARABLE in current:
            return [] if UNCOMPARABLE in saved and UNCOMPARABLE in current else [(path, saved, current)]
        found = []
        for key in list(saved) + [k for k in current if k not in saved]:
            found += differences(saved.get(key, "<absent>"), current.get(key, "<absent>"), f"{path}.{key}".strip("."))
        return found
    if isinstance(saved, list) and isinstance(current, list) and len(saved) == len(current):
        return [d for i, (a, b) in enumerate(zip(saved, current)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if saved == current else [(path, saved, current)]


def uncomparable(description: Any, path: str = "") -> list[str]:
    """The fields of ``description`` that are plain callables (their code cannot be compared)."""
    if isinstance(description, dict):
        if UNCOMPARABLE in description:
            return [f"{path} ({description[UNCOMPARABLE]})"]
        return [p for key, value in description.items() for p in uncomparable(value, f"{path}.{key}".strip("."))]
    if isinstance(description, list):
        return [p for i, value in enumerate(description) for p in uncomparable(value, f"{path}[{i}]")]
    return []


def run_identity(data: Any, module: nn.Module, x0: Tensor, algorithm: Any, options: Mapping[str, Any],
                 content: str | None = None, loss: Any = None) -> dict:
    """Everything that determines a run's result (see the module docstring); ``content`` is
    :func:`data_hash` of ``data`` when the caller has just computed it (many runs on the same data).  The model is
    described by its architecture and initial parameters, and, where a layer's class or the ``loss`` is code of the
    user's (defined outside fedcore's numerics and the libraries), by that code too (only then: the identities of
    runs on fedcore's and torch's layers stay as they were)."""
    model: dict[str, Any] = {"architecture": repr(module), "initial_parameters": tensor_hash(x0), "dim": x0.numel()}
    layers = {type(layer): None for layer in module.modules() if not _known_class(type(layer))}
    if layers:
        model["code"] = [_class(cls, frozenset()) for cls in layers]
    if loss is not None and not (isinstance(loss, types.FunctionType) and _known_file(loss.__code__.co_filename)):
        model["loss"] = describe(loss)
    return {
        "fedcore": VERSION,
        "data": {"content": data_hash(data) if content is None else content, "num_clients": data.num_clients,
                 "name": data.name},
        "model": model,
        "algorithm": describe(algorithm),
        "options": describe(dict(options)),
    }
