"""Every cross-reference in fedcore's docstrings names something that exists.

A docstring here is every string that stands as a statement in a file under ``fedcore/`` (what
``fedcore.identity.normalized`` leaves out of a store key): the docstrings of modules, classes, functions and methods,
and the strings that document an attribute.  A reference is a role of Sphinx's Python domain (``:func:``, ``:mod:``,
``:class:``, ``:meth:``, ``:data:``, ``:attr:``, ``:exc:``, ``:obj:``) around a target: ``name``, ``a.b.c``, or either
with a leading ``~`` (which only shortens what Sphinx shows) and a trailing ``()``; any other form (an explicit
title, ``text <target>``; a leading dot) is reported.

The rule a target must pass, checked against the imported modules (every module under ``fedcore/`` is imported,
``fedcore.flower`` with it, which needs the optional ``flwr``):

1. **Scopes**, innermost first: the classes whose bodies enclose the docstring (a class's own docstring, its methods'
   and its attributes'), innermost first, then the module the docstring is written in, then Python's builtins
   (``len``).  A function's local names are no scope, and a class defined inside a function is none either (its
   docstrings see the module's scope only).
2. A target ``a.b.c`` **resolves in a scope** when ``a`` is a member of the scope and ``b``, then ``c``, members of
   what it names.  A module's members are its globals (what it defines or imports); a class's are its attributes
   (through its bases: methods, properties, class attributes, fields with a default), the fields it declares
   without a value (an annotation in the body of it or of a base, as a dataclass's or a NamedTuple's fields, or a
   name in ``__slots__``) and the instance attributes its methods or its bases' assign (``self.name = ...`` in
   their source); a field or an instance attribute ends a target (it has no members to check here).  Any other
   object's members are its attributes.
3. Resolving in no scope, a target is read as an **absolute name** when its first part is ``fedcore``, a module of
   Python's standard library or a top-level module of an installed distribution (``torch``, ``flwr``; never a file
   that happens to lie on the path): its longest prefix that imports as a module, the rest that module's members
   (``fedcore.identity.normalized``, ``os.replace``, ``tarfile``).
4. **The role fits** what the target names: ``:mod:`` a module, ``:class:`` and ``:exc:`` a class, ``:func:`` and
   ``:meth:`` something callable (a function, a method, a class); ``:data:``, ``:attr:`` and ``:obj:`` anything.

So ``:meth:`step``` resolves inside ``RoundBatch``'s docstrings and not in its module's docstring, which writes
``:meth:`RoundBatch.step```.  The test fails naming every reference that does not resolve, by file and line.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.metadata
import inspect
import re
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import fedcore
import papers

PACKAGE = Path(fedcore.__file__).resolve().parent
PAPERS = Path(papers.__file__).resolve().parent
ROLES = ("func", "mod", "class", "meth", "data", "attr", "exc", "obj")
REFERENCE = re.compile(r":(?:py:)?(" + "|".join(ROLES) + r"):`([^`]*)`")
FIELD = object()  # a field a class declares without a value: a member with nothing further to check
MISSING = object()  # no member of that name


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def member(obj: Any, name: str) -> Any:
    """What ``name`` names in ``obj`` (rule 2), or :data:`MISSING`."""
    if isinstance(obj, types.ModuleType):
        return vars(obj).get(name, MISSING)
    try:
        return getattr(obj, name)
    except Exception:  # a descriptor that fails on the class: no member
        pass
    if isinstance(obj, type) and any(name in declared(cls) for cls in obj.__mro__):
        return FIELD
    return MISSING


@functools.cache
def declared(cls: type) -> frozenset[str]:
    """The fields ``cls`` declares without a value (annotations, ``__slots__``) and the instance attributes its
    methods assign (``self.name = ...``, ``self.name: T = ...``, ``self.a, self.b = ...``)."""
    slots = vars(cls).get("__slots__", ())
    names = {*vars(cls).get("__annotations__", {}), *([slots] if isinstance(slots, str) else slots)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):  # built into Python or a library without source
        return frozenset(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                and isinstance(node.value, ast.Name) and node.value.id == "self":
            names.add(node.attr)
    return frozenset(names)


def follow(obj: Any, parts: list[str]) -> Any:
    for name in parts:
        obj = MISSING if obj is FIELD else member(obj, name)
        if obj is MISSING:
            break
    return obj


@functools.cache
def installed() -> frozenset[str]:
    """The standard library's modules and the installed distributions' top-level modules (rule 3)."""
    return frozenset({*sys.stdlib_module_names, *importlib.metadata.packages_distributions()})


def absolute(parts: list[str], package: str) -> Any:
    """Rule 3: the longest prefix of ``parts`` that imports as a module, then members of it; ``parts[0]`` must be
    ``package`` (the one checked: ``fedcore``) or :func:`installed`."""
    if parts[0] != package and parts[0] not in installed():
        return MISSING
    for cut in range(len(parts), 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        return follow(module, parts[cut:])
    return MISSING


def fits(role: str, obj: Any) -> bool:
    """Rule 4."""
    if role == "mod":
        return isinstance(obj, types.ModuleType)
    if role in ("class", "exc"):
        return isinstance(obj, type)
    if role in ("func", "meth"):
        return callable(obj)
    return True


def resolve(role: str, target: str, scopes: list[Any], package: str = "fedcore") -> bool:
    """Whether ``target`` (as written, ``~`` and ``()`` allowed), named by ``role`` in a docstring of ``package``
    whose scopes are ``scopes`` (innermost first; builtins last), names something the role fits."""
    name = target.removeprefix("~").removesuffix("()")
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        return False
    parts = name.split(".")
    candidates = [follow(scope, parts) for scope in scopes] + [absolute(parts, package)]
    return any(obj is not MISSING and fits(role, obj) for obj in candidates)


def docstrings(tree: ast.Module) -> Iterator[tuple[ast.Constant, list[ast.ClassDef]]]:
    """Every string that stands as a statement, with the classes whose bodies enclose it, outermost first (rule 1:
    none from a class defined inside a function)."""

    def walk(node: ast.AST, classes: list[ast.ClassDef], in_function: bool) -> Iterator[Any]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant) \
                    and isinstance(child.value.value, str):
                yield child.value, classes
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, [] if in_function else [*classes, child], in_function)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from walk(child, classes, True)
            else:
                yield from walk(child, classes, in_function)

    yield from walk(tree, [], False)


def scopes_of(module: types.ModuleType, classes: list[ast.ClassDef]) -> list[Any]:
    """Rule 1: the enclosing classes' objects, innermost first, then the module, then Python's builtins."""
    found: list[Any] = []
    obj: Any = module
    for cls in classes:
        obj = member(obj, cls.name)
        assert isinstance(obj, type), f"{module.__name__}: class {cls.name} (line {cls.lineno}) is not where written"
        found.insert(0, obj)
    return [*found, module, builtins]


def unresolved(root: Path = PACKAGE) -> tuple[list[str], int]:
    """Every reference in the docstrings of the modules under ``root`` that does not resolve, as
    ``file:line: :role:`target```, and how many references there are."""
    failures: list[str] = []
    count = 0
    for path in sorted(root.rglob("*.py")):
        module = importlib.import_module(module_name(path, root))
        source = path.read_text()
        tree = ast.parse(source, str(path))
        for node, classes in docstrings(tree):
            segment = ast.get_source_segment(source, node) or ""
            for match in REFERENCE.finditer(segment):
                count += 1
                role, target = match.groups()
                if not resolve(role, target, scopes_of(module, classes), root.name):
                    line = node.lineno + segment[:match.start()].count("\n")
                    failures.append(f"{path.relative_to(root.parent)}:{line}: {' '.join(match.group().split())}")
    return failures, count


@pytest.mark.parametrize(("root", "least"), [(PACKAGE, 500), (PAPERS, 100)], ids=["fedcore", "papers"])
def test_every_docstring_reference_resolves(root: Path, least: int) -> None:
    failures, count = unresolved(root)
    assert count > least, f"only {count} references found: the pattern no longer reads {root.name}'s docstrings"
    assert not failures, f"{len(failures)} of {count} docstring references do not resolve:\n" + "\n".join(failures)


PROBE_NAME = "fedcore_docstring_probe"
PROBE = '''"""A module whose docstrings hold references that resolve, :func:`helper`, :class:`Box`, :meth:`Box.put`,
:attr:`Box.size`, :attr:`Box.count`, :data:`LIMIT`, :mod:`os`, :func:`os.replace`, :func:`~PROBE.helper`,
:func:`len`, :meth:`helper()`, and some that do not: :func:`gone`, :meth:`put`, :mod:`helper`, :class:`helper`,
:func:`LIMIT`, :func:`os.gone`, :func:`~PROBE.
helper`."""

import os

LIMIT = 3
"""An attribute's docstring: :func:`helper`; not :attr:`size`."""


def helper() -> None:
    """A function's: :class:`Box`; not :meth:`put`."""


class Box:
    """A class's: :meth:`put`, :attr:`size`, :attr:`count`, :meth:`Box.put`, :attr:`kind`; not :attr:`weight`."""

    size: int
    kind = "box"

    def __init__(self) -> None:
        self.count = 0

    def put(self) -> None:
        """A method's: :attr:`count`, :func:`helper`; not :attr:`count.real`."""


def factory() -> type:
    class Inner:
        """A class inside a function sees its module: :func:`helper`; not :meth:`go`."""

        def go(self) -> None:
            pass

    return Inner
'''.replace("PROBE", PROBE_NAME)


def test_the_docstring_rule_resolves_what_exists_and_names_the_rest(tmp_path, monkeypatch) -> None:
    """The rule above on a module written for it: what resolves passes, what does not is named by file and line."""
    (tmp_path / PROBE_NAME).mkdir()
    (tmp_path / PROBE_NAME / "__init__.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        failures, count = unresolved(tmp_path / PROBE_NAME)
    finally:
        sys.modules.pop(PROBE_NAME, None)
    assert failures == [f"{PROBE_NAME}/__init__.py:{line}: {reference}" for line, reference in [
        (3, ":func:`gone`"), (3, ":meth:`put`"), (3, ":mod:`helper`"), (3, ":class:`helper`"), (4, ":func:`LIMIT`"),
        (4, ":func:`os.gone`"), (4, f":func:`~{PROBE_NAME}. helper`"), (10, ":attr:`size`"), (14, ":meth:`put`"),
        (18, ":attr:`weight`"), (27, ":attr:`count.real`"), (32, ":meth:`go`")]]
    assert count == 33
