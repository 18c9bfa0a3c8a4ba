"""The contract's checks: what the framework verifies of a family (:mod:`fedcore.algorithms.contract`) before any
work and of each part's result where it receives it, so that a mistake is an error naming the family, the part and
what it must be, never a bare ``KeyError`` from inside the round.

They decide no number: a run's store key leaves this module out (:data:`fedcore.identity.BOOKKEEPING`), so a check
or a message changes without recomputing a run.

- :func:`checked_family`: a family defines its :data:`REQUIRED` parts and neither ``round`` nor ``init``
  (:data:`FRAMEWORKS`), declares its state as NamedTuples (:func:`declared_state`), and sends only its server's keys;
- :func:`returned`: a part's result is what the framework expects (:data:`RETURNS`);
- :class:`Handed` and :func:`held`: a part reads only the keys it was handed, and a declared key is in the state.
"""

from __future__ import annotations

import functools
import numbers
import typing
from collections.abc import Callable
from typing import Any

from torch import Tensor

from fedcore.algorithms.client import ClientRun
from fedcore.checks import check_keywords

State = dict[str, Tensor]
Family = Any  # a fedcore.algorithms.Federated (this module does not import the contract, which imports it)


PROLOGUE_CLIENTS = ("sampled", "every")
"""Whom a prologue (a first exchange before a round's local steps) visits: the round's sampled clients (FAFED's
``m_0``, ``v_0``) or every client (PAdaMFed's line 1)."""


REQUIRED = ("client_run(sent, batch, oracle, own)", "server_round(state, run, batch)")
"""The parts a family must define (the others have their defaults in :class:`fedcore.algorithms.Federated`)."""
FRAMEWORKS = {"round": "its client_run and server_round (and its prologue): fedcore.simulate and Flower both run "
                       "those, so a round of its own would run in one and not the other",
              "init": "its server_init and client_init, each returning a NamedTuple of the state's keys: the "
                      "framework builds the state from them (every client's rows, or a Flower node's)"}
"""The parts a family leaves to the framework, and what it defines instead."""


@functools.cache
def declared_state(cls: type) -> tuple[type, type]:
    """The NamedTuple types a family's ``server_init`` and ``client_init`` are annotated to return (read once per
    class), else a ``TypeError`` naming the family and the method."""
    types = []
    for method in ("server_init", "client_init"):
        kind = typing.get_type_hints(getattr(cls, method)).get("return")
        if not (isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields")):
            raise TypeError(f"{cls.__name__}.{method} is annotated to return {kind!r}; it must name the NamedTuple it "
                            f"returns (its fields are the state's keys), as in def {method}(self, x) -> State: ...")
        types.append(kind)
    return types[0], types[1]


def checked_family(family: Family, base: type) -> Family:
    """``family`` if the framework can run it alike everywhere: it defines the :data:`REQUIRED` parts and neither
    ``round`` nor ``init`` (:data:`FRAMEWORKS`), declares its state as NamedTuples (:func:`declared_state`), and its
    ``client_reads`` are keys of its server's state (the server sends only those; a client's own rows stay on the
    client).  Class-level checks only: cheap enough for every round."""
    name, cls = name_of(family), type(family)
    for part, instead in FRAMEWORKS.items():
        if getattr(cls, part) is not getattr(base, part):
            owner = next(base.__name__ for base in cls.__mro__ if part in vars(base))
            raise TypeError(f"{name} ({owner}) defines {part}, which a family (a subclass of fedcore.algorithms."
                            f"Federated) leaves to the framework: it defines {instead}; or, for an algorithm whose "
                            "round is one function, do not subclass Federated (give it name, init and round: "
                            "fedcore.algorithms.Algorithm)")
    for part in REQUIRED:
        method = part.split("(")[0]
        if getattr(cls, method) is getattr(base, method):
            raise TypeError(f"{name} ({cls.__name__}) does not define {part}, which a family must (the other parts "
                            "have defaults: fedcore.algorithms.Federated)")
    if cls.client_state is not base.client_state:
        raise TypeError(f"{name} ({cls.__name__}) sets client_state, which the framework reads off client_init's "
                        "NamedTuple: declare the clients' rows there, once")
    server, client = declared_state(cls)
    keys = family.client_reads
    if not isinstance(keys, (tuple, list)) or not all(isinstance(key, str) for key in keys):
        raise TypeError(f"{name}'s client_reads={keys!r:.80} must be a tuple of the state's keys (strings), as "
                        "in client_reads = ('x', 'c')")
    if not set(keys) <= set(server._fields):
        own = [key for key in keys if key in client._fields]
        raise ValueError(f"{name}'s client_reads name {[key for key in keys if key not in server._fields]}, which its "
                         f"server's state {server.__name__}{server._fields} does not hold"
                         + (": a client's own rows (client_init) stay on the clients and are handed to its client "
                            "part as own; the server sends only client_reads" if own else ""))
    return family


def name_of(algorithm: Any) -> str:
    """An algorithm's name (its ``name``, else its class's) for histories, progress bars and messages."""
    return getattr(algorithm, "name", type(algorithm).__name__)


# ---- what a part returns, checked where the framework receives it ------------------------------------------------


def _tensors(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in value.items())


def _own_rows(keys: Any, algorithm: Any) -> bool:
    return all(key in algorithm.client_state for key in keys)


def _state(value: Any, _: Any = None) -> bool:
    return isinstance(value, dict) and isinstance(value.get("x"), Tensor)


def _declared_keys(value: Any, family: Any) -> bool:
    """A family's state holds only the keys its NamedTuples declare."""
    server, client = declared_state(type(family))
    return _state(value) and set(value) <= {*server._fields, *client._fields}


def _named_tensors(kind: int) -> Callable[[Any, Any], bool]:
    return lambda value, algorithm: (isinstance(value, declared_state(type(algorithm))[kind])
                                     and all(v is None or isinstance(v, (Tensor, dict)) for v in value))


RETURNS: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "state": (_state, "the state: a dict with the server model under 'x' (a tensor)"),
    "family state": (_declared_keys, "the state: a dict with the server model under 'x' (a tensor), and only the "
                                     "keys its server_init and client_init declare"),
    "server": (_named_tensors(0), "the NamedTuple it is annotated to return, of tensors (or None: left out)"),
    "client": (_named_tensors(1), "the NamedTuple it is annotated to return, of rows [R, 1, ...] (tensors)"),
    "metrics": (lambda value, _: isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (Tensor, numbers.Real)) for k, v in value.items()),
        "a dict of the round's metrics (each a number or a tensor of R numbers)"),
    "run": (lambda value, algorithm: isinstance(value, ClientRun) and _own_rows(value.keeps, algorithm),
            "a ClientRun (train_clients' result; run.sending(uploads, keeps) adds what the clients upload and keep: "
            "new rows of its client_state {client_state})"),
    "uploads": (lambda value, _: _tensors(value), "a dict of tensors"),
    "keeps": (lambda value, algorithm: _tensors(value) and _own_rows(value, algorithm),
              "a dict of tensors: new rows of its client_state {client_state}"),
    "whom": (lambda value, _: value is None or isinstance(value, str) and value in PROLOGUE_CLIENTS,
             f"None (no prologue) or one of {list(PROLOGUE_CLIENTS)}"),
    "point": (lambda value, _: isinstance(value, Tensor), "a tensor: the model to evaluate ([R, 1, d], as 'x')"),
}
"""What the framework expects of a part's result, by kind: a test (of the value, the algorithm) and its words."""


def returned(algorithm: Any, part: str, value: Any, **expected: str) -> Any:
    """``value``, what ``algorithm``'s ``part`` returned, if it is what the framework expects: ``expected`` names each
    result and its kind (:data:`RETURNS`), one (``run="run"``) or a tuple of them (``new_state="state",
    metrics="metrics"``).  Else a ``TypeError`` naming the algorithm, the part, what it returned and what it must
    (a ``ValueError`` for a prologue that names no known clients).  Type and key checks only: no tensor work."""
    values = (value,) if len(expected) == 1 else value
    if not (isinstance(values, tuple) and len(values) == len(expected)
            and all(RETURNS[kind][0](one, algorithm) for one, kind in zip(values, expected.values()))):
        words = {label: RETURNS[kind][1].replace("{client_state}", str(tuple(algorithm.client_state)))
                 if "{client_state}" in RETURNS[kind][1] else RETURNS[kind][1] for label, kind in expected.items()}
        must = next(iter(words.values())) if len(words) == 1 else \
            f"({', '.join(words)}): " + "; ".join(f"{label}, {text}" for label, text in words.items())
        error = ValueError if "whom" in expected.values() and isinstance(value, str) else TypeError
        raise error(f"{name_of(algorithm)}'s {part} returned {_described(value)}; it must return {must}")
    return value


def _described(value: Any) -> str:
    """What a part returned, in a few words (never a tensor's numbers)."""
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    if isinstance(value, tuple):
        return f"a tuple ({', '.join(type(one).__name__ for one in value)})"
    if isinstance(value, ClientRun):
        return f"a ClientRun keeping {sorted(value.keeps)}"
    if value is None or isinstance(value, (str, numbers.Number)):
        return repr(value)[:60]
    return f"a {type(value).__name__}"


class UndeclaredReadError(KeyError):
    """A part of a family read a key of the state it was not handed (its message is the explanation, unquoted)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Handed(dict):
    """What the ``side`` (``"client"`` or ``"server"``) part of ``family`` is handed: reading any other key of the state
    raises :class:`UndeclaredReadError`, in the simulator as on an engine (where the key is not there at all)."""

    def __init__(self, values: State, family: Family, side: str) -> None:
        super().__init__(values)
        self.family, self.side = family, side

    def __missing__(self, key: str) -> Tensor:
        name = name_of(self.family)
        if self.side == "client":
            raise UndeclaredReadError(f"{name}'s client part read {key!r}, which the server does not send: its "
                                      f"client_reads are {tuple(self)}; declare the key there (or, for a client's "
                                      "own rows, in client_init)")
        raise UndeclaredReadError(f"{name}'s server part read {key!r}, a row of the clients' own state "
                                  f"({', '.join(self.family.client_state)}), which stays on the clients: upload what "
                                  "the server needs (ClientRun.uploads)")


def held(algorithm: Family, state: State, declaration: str) -> tuple[str, ...]:
    """The keys a family declares (its ``client_reads`` or ``client_state``), each one its state holds, else a
    ``ValueError`` naming the family, the declaration and the keys missing."""
    keys = getattr(algorithm, declaration)
    missing = [key for key in keys if key not in state]
    if missing:
        raise ValueError(f"{name_of(algorithm)}'s {declaration} name {missing}, which its state does not hold (its "
                         f"keys: {sorted(state)}): declare keys of the state that its server_init returns (and "
                         "its server_round keeps)")
    return keys


def checked_registration(name: Any, factory: Any, example: dict[str, Any], taken: dict[str, Any],
                         declared: Callable[[Any], Any]) -> None:
    """:func:`fedcore.algorithms.register`'s arguments checked before the registry changes: ``name`` a non-empty
    string not ``taken``, ``factory`` callable with ``example``'s keywords, and ``factory(**example)`` an algorithm
    ``declared`` accepts; else a ``TypeError`` or ``ValueError`` naming the registration."""
    if not isinstance(name, str):
        raise TypeError(f"name={name!r:.60} must be a non-empty string (make(name) builds the algorithm), got "
                        f"{type(name).__name__}")
    if not name:
        raise ValueError("name='' must be a non-empty string (make(name) builds the algorithm)")
    if name in taken:
        raise ValueError(f"name={name!r} is already an algorithm ({taken[name]!r:.60}); choose another name")
    if not callable(factory):
        raise TypeError(f"factory={factory!r:.60} must be a function (hyperparameters -> algorithm), got "
                        f"{type(factory).__name__}")
    check_keywords(factory, example, f"register({name!r}, factory, **example)")
    label = ", ".join([repr(name), getattr(factory, "__name__", type(factory).__name__)]
                      + [f"{key}={value!r}" for key, value in example.items()])
    try:
        declared(factory(**example))
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"register({label}): its example builds no algorithm: {error}") from error
