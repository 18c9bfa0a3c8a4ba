"""What identifies a run: everything that determines its result, as a comparable description.

:func:`run_identity` describes a run by

- its data: a content hash (xxHash's XXH3, 128 bits) of the clients' inputs, targets and sizes and of the test set,
  computed afresh for every run (an in-place change through torch, numpy or ``.data`` is another run: 0.02 s for
  Fashion-MNIST's 220 MB on 2 CPU cores, once per :func:`~fedcore.simulate` call and once for all the runs of a
  :func:`~fedcore.simulate_runs` or :func:`~fedcore.sweep` call), its number of clients and its name;
- its model: the architecture (``repr``), the initial parameters (content hash) and their number, and, for a layer
  class or a loss of the user's, its code (and such a layer's own attributes and buffers);
- the algorithm, by :func:`describe`: every field of a dataclass family (a server optimizer with all its options,
  schedules by their fields), or a plain algorithm object's attributes (below);
- the options (clients per round, local steps, batch size, weighting, evaluation, divergence bound, seed, backend,
  the ``record=``) and fedcore's version.

The store's key (:func:`fedcore.store.run_key`) adds the number of rounds and :func:`source_of`'s hash.
:func:`differences` names what differs between two descriptions, field by field, and :func:`uncomparable` the parts
that cannot be compared.

The code that decides a run's numbers is part of what identifies it, in two parts:

- fedcore's own numerics, the modules :data:`NUMERICS` lists (the algorithm families and the round skeleton, the
  client rules, the server optimizers, the gradient oracle and the models, the data containers and partitioners, the
  engine), keyed per family: a run's key hashes the code of the shared modules (all but :data:`FAMILIES` and the
  registry, :data:`UNKEYED`) and of the family modules its algorithm depends on, with what those import
  (:func:`modules_of`, :func:`source_of`), so an edit of ``fafed.py`` recomputes FAFED's runs and no FedOpt run, an
  edit of ``algorithms/client.py`` every run.  The code is hashed normalized (:func:`normalized`: the syntax tree
  without docstrings, line and column numbers; comments never reach it), so a docstring or a comment recomputes
  nothing.  What only presents or orchestrates (figures, explorers, the papers' tables and claim rules, Flower,
  the store, the notebooks) is in no key, so an edit there recomputes nothing either.  ``tests/test_store_keys.py``
  traces every module a run executes and fails when one is neither listed here nor in :data:`BOOKKEEPING`, or when a
  numerics module a run of a registered algorithm executes is not in its key.  Their functions and classes, and
  those of the libraries (the standard library, torch, numpy: judged by the file they come from), are described by
  name;
- anything else handed to a run (a ``record=``, a schedule, a user's own algorithm, a layer class or a loss; code of
  a notebook, of a user's module, of ``exec``, of the papers' package) is described by its content:

  - a function by its bytecode, constants and the names it reads, its defaults, and the values of what it reads
    (closure cells and globals), recursively through the functions it calls;
  - a module it reads (``cfg.LR``, ``cfg.rate(t)``, ``pkg.sub.LR``): a library's or the numerics' by name, a
    user's by the value of each of its attributes that the code names (every attribute, where a module is held in a
    field or an attribute), so a changed ``cfg.LR``, or an edited and reloaded ``cfg.rate``, is another run;
  - a class by its methods' code (a dataclass's generated methods left out), its other class attributes' values
    and its bases;
  - a dataclass by its type, its fields' values and its class;
  - a plain object (not a dataclass: a user's algorithm with ``init`` and ``round``, a callable schedule object) by
    its class and its instance's attributes (``__dict__``, ``__slots__``): what its ``repr`` does not show is keyed
    too;
  - tensors and arrays by content hash; numbers, strings, lists and mappings by value; an object of a library's
    class in a field (a ``torch.device``) by its ``repr``.

What cannot be described makes a run *uncomparable* (:func:`uncomparable` names the fields): a callable of no known
kind (a bound method, a C function of no library), an object of no known kind that the code reads (a closure cell or
global, a module attribute, an object's attribute holding a ``torch.Generator``, a lock, a file: its ``repr`` would
not say its content), or a plain object whose content is held by a class built into Python or a library (a subclass
of ``deque``).  An uncomparable run is computed every time: a results store neither serves nor keeps it
(``simulate``, ``simulate_runs`` and ``sweep`` with ``store=``), a checkpoint resumes it only on the caller's word
(``resume="trust"``; ``resume=True`` refuses, naming the field), and an uncomparable algorithm runs alone, not in a
pass with others.  To make it keyable, hold what decides its numbers in a dataclass's fields or a plain object's
attributes (numbers, strings, tensors, plain functions, fedcore's schedules), and pass a seed, not a generator.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import importlib.metadata
import inspect
import sys
import sysconfig
import types
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import fields, is_dataclass
from functools import cache, cached_property, partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch
import xxhash
from torch import Tensor, nn

UNCOMPARABLE = "<uncomparable>"
MODULE_INTERNALS = frozenset(vars(nn.Module()))  # what every torch layer holds: its parameters, hooks, ...
HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement (not one built into Python or a library)
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
"""The files of fedcore (paths in the package; a folder is every ``.py`` file under it) whose code decides a
run's numbers: a run's store key hashes the code of those it depends on (:func:`modules_of`, :func:`source_of`)."""
FAMILIES = (
    "algorithms/fedopt.py", "algorithms/fedprox.py", "algorithms/fedexp.py", "algorithms/fedli.py",
    "algorithms/scaffold.py", "algorithms/padamfed.py", "algorithms/theorems.py", "algorithms/fafed.py",
    "algorithms/local_adaptive.py",
)
"""The family modules among :data:`NUMERICS`: each is in the key of a run only where the run depends on it
(:func:`modules_of`).  A file of ``NUMERICS`` not listed here (a new one included) is shared: in every key."""
UNKEYED = ("algorithms/__init__.py",)
"""The files of :data:`NUMERICS` in no key: the registry (``make``, ``register``), which no run executes (what
``make`` builds is keyed by its fields and its family's code).  Its functions are still described by name."""
BOOKKEEPING = (
    "identity.py", "store.py", "checkpoint.py", "checks.py", "contract_checks.py", "files.py", "results.py",
    "memory.py", "sweeps.py",
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


class _Docstrings(ast.NodeTransformer):
    def visit_Expr(self, node: ast.Expr) -> ast.Expr | None:  # a string standing as a statement does nothing
        return None if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str) else node


def normalized(path: Path) -> str:
    """A file's code as a store key sees it: its syntax tree without the strings that stand as statements (the
    docstrings of the module, its classes, functions and attributes; comments never reach the tree), dumped without
    line and column numbers (``ast.dump(tree, include_attributes=False)``)."""
    tree = _Docstrings().visit(ast.parse(path.read_text(), str(path)))
    return ast.dump(tree, include_attributes=False)


def code_hash(files: Iterable[Path], root: Path = PACKAGE, code: Callable[[Path], str] = normalized) -> str:
    """SHA-256 (16 hex digits) of ``files`` (in the package folder ``root``): their paths and their normalized code
    (``code``: :func:`normalized`, read now)."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(f"{path.relative_to(root).as_posix()}\n{code(path)}\n".encode())
    return digest.hexdigest()[:16]


def numerics_hash(root: Path = PACKAGE) -> str:
    """:func:`code_hash` of every file :data:`NUMERICS` names under ``root``, read now (what the numerics are, as a
    whole; a run's key hashes those it depends on: :func:`source_of`)."""
    return code_hash(numerics_files(root), root)


@cache
def _frozen_code() -> dict[Path, str]:
    """The normalized code of every numerics file, read once, at a process's first key: the code it runs (an edit
    made later is keyed by the next process, which runs it)."""
    return {path: normalized(path) for path in numerics_files()}


@cache
def _source_hash(files: frozenset[Path]) -> str:
    return code_hash(files, code=_frozen_code().__getitem__)


@cache
def _shared() -> frozenset[Path]:
    """The numerics files in every key: :data:`NUMERICS` but :data:`FAMILIES` and :data:`UNKEYED`."""
    apart = {PACKAGE / entry for entry in FAMILIES + UNKEYED}
    missing = sorted(str(path) for path in apart if not path.is_file())
    if missing:
        raise FileNotFoundError(f"FAMILIES or UNKEYED names files that do not exist: {missing}")
    return frozenset(numerics_files()) - apart


@cache
def _resolved(filename: str) -> Path:
    return Path(filename).resolve()


@cache
def _imports(path: Path) -> frozenset[Path]:
    """The files of the package that ``path`` imports (``import fedcore.x``, ``from fedcore.x import y``, ``from
    fedcore import x``, relative imports; at any depth, a function's own imports included), by its syntax tree.  A
    name imported from a package (``from fedcore.algorithms import FedOpt``) is its ``__init__.py``."""
    parts = ["fedcore", *path.relative_to(PACKAGE).with_suffix("").parts]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            package = parts[:len(parts) - node.level] if node.level else []  # the module's own package, or above
            base = ".".join([*package, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]  # a module, or a name from one
        else:
            continue
        for name in names:
            if name.split(".")[0] == "fedcore":
                folder = PACKAGE.joinpath(*name.split(".")[1:])
                found |= {file for file in (folder.with_suffix(".py"), folder / "__init__.py") if file.is_file()}
    return frozenset(found)


def _class_file(cls: type) -> str:
    return getattr(sys.modules.get(cls.__module__), "__file__", None) or ""


def _held(obj: Any, files: set[str], seen: set[int]) -> None:
    """Add to ``files`` the files of the code ``obj`` holds: its class and their bases, a function's own file, and
    through a dataclass's fields, an object's attributes, containers, closure cells and defaults, those of what it
    holds; through code outside fedcore's numerics and the libraries also a class's methods and the globals a
    function names; a module by its file."""
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, complex, Tensor, np.ndarray, np.generic,
                                           torch.dtype, torch.device, type(None))):
        return
    seen.add(id(obj))
    held: list[Any] = []
    if isinstance(obj, types.FunctionType):
        code = obj.__code__
        files.add(code.co_filename)
        held = [cell.cell_contents for cell in obj.__closure__ or ()]
        held += [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
        if not _known_file(code.co_filename):
            held += [obj.__globals__[name] for name in sorted(_names(code)) if name in obj.__globals__]
    elif isinstance(obj, types.ModuleType):
        files.add(getattr(obj, "__file__", None) or "")
    else:
        classes = obj.__mro__ if isinstance(obj, type) else type(obj).__mro__
        files |= {_class_file(cls) for cls in classes}
        if isinstance(obj, type):
            if not _known_class(obj):
                held = [getattr(member, "fget", None) or getattr(member, "__func__", member)
                        for member in vars(obj).values()]
        elif isinstance(obj, partial):
            held = [obj.func, *obj.args, *obj.keywords.values()]
        elif isinstance(obj, Mapping):
            held = list(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            held = list(obj)
        elif is_dataclass(obj):
            held = [getattr(obj, f.name) for f in fields(obj)]
        elif not _known_class(type(obj)) or _resolved(_class_file(type(obj))) in _numerics_set():  # not a library's
            held = list(getattr(obj, "__dict__", {}).values())
    for value in held:
        _held(value, files, seen)


def _named(described: Any, files: set[str]) -> None:
    """Add to ``files`` the files of the modules a description names (``{"function": "fedcore.x.f"}``, a class, a
    module, an object: what code outside the numerics reads, :func:`describe`)."""
    if isinstance(described, dict):
        for key, value in described.items():
            if key in ("function", "class", "module", "object") and isinstance(value, str):
                parts = value.split(".")
                module = next((sys.modules[name] for i in range(len(parts), 0, -1)
                               if (name := ".".join(parts[:i])) in sys.modules), None)
                files.add(getattr(module, "__file__", None) or "")
            else:
                _named(value, files)
    elif isinstance(described, list):
        for value in described:
            _named(value, files)


def modules_of(algorithm: Any, described: Any = None) -> list[Path]:
    """The numerics files a run of ``algorithm`` depends on, sorted: the shared ones (:data:`NUMERICS` but
    :data:`FAMILIES` and :data:`UNKEYED`: the engine, the contract and its round, the round batch, the client rules,
    the server optimizers, the schedules, the oracle and the models, the data containers and partitioners,
    ``run.py``), and the family modules of the code it holds (its class and bases, the classes and functions in its
    fields and attributes, a server rule's functions, and what code outside the numerics reads: :func:`_held`; with
    ``described``, a run's identity, also those its description names: a ``record=``'s or a loss's reads), with the
    family modules those import, transitively (:func:`_imports`; never through ``algorithms/__init__.py``).  A
    shared module's imports are not followed (``engine/passes.py`` names FedExP's and FedLi's server rules; a run
    of another family never runs them): ``tests/test_store_keys.py`` checks that every numerics file a run of each
    registered algorithm executes is here."""
    found: set[str] = set()
    _held(algorithm, found, set())
    _named(describe(algorithm) if described is None else described, found)
    families = {PACKAGE / entry for entry in FAMILIES}
    todo = [path for path in map(_resolved, found - {""}) if path in families]
    depends: set[Path] = set()
    while todo:
        path = todo.pop()
        if path not in depends:
            depends.add(path)
            todo += [imported for imported in _imports(path) if imported in families]
    return sorted(_shared() | depends)


class Source(NamedTuple):
    """What a store key holds of fedcore's code (:func:`source_of`): ``family``, the family modules the run depends
    on (paths in the package, space-separated; empty: the shared ones alone), and ``hash``, :func:`code_hash` of
    every module it depends on."""

    family: str
    hash: str


def source_of(algorithm: Any, described: Any = None) -> Source:
    """The :class:`Source` of a run of ``algorithm`` (:func:`modules_of`; ``described``: the run's identity), its
    code read once per process (at its first key) and hashed once per set of modules."""
    files = frozenset(modules_of(algorithm, described))
    family = " ".join(sorted(path.relative_to(PACKAGE).as_posix() for path in files - _shared()))
    return Source(family, _source_hash(files))


@cache
def _library_paths() -> tuple[Path, ...]:
    paths = sysconfig.get_paths()
    return tuple(Path(paths[key]).resolve() for key in ("stdlib", "platstdlib", "purelib", "platlib"))


@cache
def _numerics_set() -> frozenset[Path]:
    return frozenset(numerics_files())


@cache
def _known_file(filename: str) -> bool:
    """Whether code from ``filename`` is described by name alone: a file of fedcore's numerics (keyed by its
    code, :func:`source_of`) or of a library (the standard library, installed packages: torch, numpy, ...).  The code
    of anything else (a notebook's cell, a user's module, code run by ``exec``, the papers' package) is described by
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
    names; of a user's module, the attributes it names: :func:`_module`), described recursively; a function of the
    numerics by its name."""
    name = f"{function.__module__}.{function.__qualname__}"
    if _known_file(function.__code__.co_filename) or id(function) in seen:
        return {"function": name}
    seen = seen | {id(function)}
    code = function.__code__
    names = _names(code)
    cells = dict(zip(code.co_freevars, [cell.cell_contents for cell in function.__closure__ or ()]))
    reads = {key: function.__globals__[key] for key in sorted(names) if key in function.__globals__}
    return {"function": name, "code": _code(code),
            "defaults": _value(function.__defaults__ or (), seen),
            "closure": {key: _value(value, seen, names) for key, value in cells.items()},
            "globals": {key: _value(value, seen, names) for key, value in reads.items()}}


def _known_module(module: types.ModuleType) -> bool:
    """Whether a module is described by name alone: one of fedcore's numerics or of a library (by its file, as
    :func:`_known_file`; a package without a file by its folders), or one built into Python (``sys``)."""
    file = getattr(module, "__file__", None)
    if file:
        return _known_file(file)
    return all(_known_file(str(folder)) for folder in getattr(module, "__path__", ()))


def _module(module: types.ModuleType, seen: frozenset[int], names: Collection[str] | None) -> dict:
    """A module read by code outside the numerics: by its name, and, for a user's module (not a library's nor
    fedcore's numerics, :func:`_known_module`), by the value of each of its attributes that the reading code names
    (``names``: its global and attribute names, so ``cfg.LR``, ``cfg.rate(t)`` and ``pkg.sub.LR`` are all seen;
    a name the code reads from something else is described too, which may only make a run another one).  ``None``:
    no code is known to read it (a module held in a field): every attribute."""
    described: dict[str, Any] = {"module": module.__name__}
    if _known_module(module) or id(module) in seen:
        return described
    seen = seen | {id(module)}
    attributes = vars(module)
    reads = {key: _value(attributes[key], seen, names) for key in sorted(attributes if names is None else names)
             if key in attributes and not (key.startswith("__") and key.endswith("__"))}
    return {**described, "reads": reads} if reads else described


DATACLASS_METHODS = {"__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
                     "__gt__", "__ge__", "__getstate__", "__setstate__"}
"""The methods ``@dataclass`` may generate (from the fields, which are described as values)."""


def _class(cls: type, seen: frozenset[int]) -> dict:
    """A class outside fedcore's numerics and the libraries by the code of the functions it defines (a dataclass's
    generated methods left out; properties, static and class methods by their functions) and the values of its other
    class attributes (constants a method reads as ``self.BETA``; a dataclass's field defaults left out: they are its
    instances' fields), and of its bases; a class of the numerics, a library or a builtin by its name."""
    name = f"{cls.__module__}.{cls.__qualname__}"
    if _known_class(cls) or id(cls) in seen:
        return {"class": name}
    seen = seen | {id(cls)}
    fields_ = {f.name for f in fields(cls)} if is_dataclass(cls) else set()
    if issubclass(cls, tuple):  # a NamedTuple's fields (a state's keys) are its _fields, their getters not values
        fields_ |= set(getattr(cls, "_fields", ()))
    methods, attributes = {}, {}
    for key, member in sorted(vars(cls).items()):
        if isinstance(member, property):
            member = member.fget
        elif isinstance(member, cached_property):
            member = member.func
        member = getattr(member, "__func__", member)  # a static or class method
        member = inspect.unwrap(member) if callable(member) else member
        if isinstance(member, types.FunctionType):
            generated = is_dataclass(cls) and key in DATACLASS_METHODS and member.__code__.co_filename == "<string>"
            if not generated:
                methods[key] = _function(member, seen)
        elif not (key.startswith("__") and key.endswith("__") or key in fields_ or key == "_abc_impl"
                  or member is None or isinstance(member, (types.MemberDescriptorType, types.GetSetDescriptorType))):
            attributes[key] = _value(member, seen)
    bases = [_class(base, seen) for base in cls.__bases__ if base is not object]
    described = {"class": name, "methods": methods, "bases": bases}
    return {**described, "attributes": attributes} if attributes else described


def _object(obj: Any, seen: frozenset[int]) -> dict | None:
    """A plain object (not a dataclass) of a class outside fedcore's numerics and the libraries: its class by code
    (:func:`_class`) and its instance's attributes (``__dict__`` and ``__slots__``) by value, as a function's reads
    are (:func:`_value`).  An object whose content is held by a base of its class that is built into Python or a
    library (a subclass of ``deque``) cannot be described: uncomparable.  None for an object of a known class
    (described by its ``repr``, as before) or of a type built into Python (a bound method, a lock)."""
    cls = type(obj)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if _known_class(cls) or not cls.__flags__ & HEAP_TYPE:  # a library's, or a type built into Python or a library
        return None
    if id(obj) in seen:
        return {"object": name}
    seen = seen | {id(obj)}
    native = [base for base in cls.__mro__[1:] if base is not object and not base.__flags__ & HEAP_TYPE]
    if native:
        return {UNCOMPARABLE: f"{cls.__qualname__} object: its content is held by {native[0].__qualname__}, which "
                              "cannot be described; keep its values in attributes of a plain class or in the fields "
                              "of a dataclass"}
    return {"object": name, "code": _class(cls, seen), "state": _attributes(obj, seen)}


def _attributes(obj: Any, seen: frozenset[int], leave_out: Collection[str] = ()) -> dict:
    """An object's own attributes (``__dict__`` and ``__slots__``, but ``leave_out``) by value, as a function's reads
    are (:func:`_value`; a module held there by what its class's methods name: ``self.cfg.LR``)."""
    state = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
    names: set[str] = set()
    for base in type(obj).__mro__:
        slots = base.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot not in ("__dict__", "__weakref__") and hasattr(obj, slot):
                state[slot] = getattr(obj, slot)
        for member in vars(base).values():
            member = getattr(member, "fget", None) or getattr(member, "__func__", member)
            member = inspect.unwrap(member) if isinstance(member, types.FunctionType) else member
            names |= _names(member.__code__) if isinstance(member, types.FunctionType) else set()
    return {key: _value(value, seen, names) for key, value in sorted(state.items()) if key not in leave_out}


def _value(value: Any, seen: frozenset[int], names: Collection[str] | None = None) -> Any:
    """What a function or a class outside the numerics reads, described: modules by name (a user's module also by
    the attributes ``names`` the reading code names, or all of them: :func:`_module`), functions and classes by their
    code, everything else by :func:`describe`, where an object of no known kind is uncomparable (its ``repr`` would
    not say its content)."""
    if isinstance(value, types.ModuleType):
        return _module(value, seen, names)
    if value is NotImplemented or value is Ellipsis or isinstance(value, (torch.dtype, torch.device)):
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
    """A comparable description: dataclasses by type and fields (server rules, schedules, algorithms), tensors
    and arrays by content hash, modules by architecture.  What is defined outside fedcore's numerics and the libraries
    also by its code (a dataclass's class, a plain function, a user's module by its attributes, a plain object by its
    class and its attributes: see the module docstring); a callable of no known kind is marked uncomparable, another
    object of a library's or Python's class is described by its ``repr``."""
    if is_dataclass(obj) and not isinstance(obj, type):
        described = {"type": type(obj).__qualname__,
                     **{f.name: describe(getattr(obj, f.name), seen) for f in fields(obj)}}
        if not _known_class(type(obj)):
            described["code"] = _class(type(obj), seen)
        return described
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
    if isinstance(obj, types.ModuleType):
        return _module(obj, seen, None)
    if not isinstance(obj, type) and (described := _object(obj, seen)) is not None:
        return described
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
    """The fields of ``description`` that cannot be compared (marked :data:`UNCOMPARABLE`: a callable of no known
    kind, an object of no known kind read by a user's code, a plain object whose content a built-in class holds), each
    with what it is."""
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
    user's (defined outside fedcore's numerics and the libraries), by that code too, and by such a layer's own
    attributes and buffers (only then: the identities of runs on fedcore's and torch's layers stay as they were)."""
    model: dict[str, Any] = {"architecture": repr(module), "initial_parameters": tensor_hash(x0), "dim": x0.numel()}
    own = [layer for layer in module.modules() if not _known_class(type(layer))]
    if own:
        model["code"] = [_class(cls, frozenset()) for cls in dict.fromkeys(type(layer) for layer in own)]
        state = [{**_attributes(layer, frozenset(), MODULE_INTERNALS),
                  **{f"buffer {key}": tensor_hash(value) for key, value in layer._buffers.items() if value is not None}}
                 for layer in own]
        if any(state):  # a layer's own numbers (``self.factor``) and buffers, which its repr need not show
            model["state"] = state
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
