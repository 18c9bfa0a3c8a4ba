"""The results store: every finished run, kept by what determines it, so a rerun costs only what changed.

A :class:`Store` is one SQLite file (the standard library's ``sqlite3``; no server).  A run's key
(:func:`run_key`) hashes its identity (:func:`fedcore.identity.run_identity`), its number of rounds and the code of
the numerics modules it depends on (:func:`fedcore.identity.source_of`).  The identity holds the data's content (a
hash of the clients' and the test set's tensors), the model (architecture, initial parameters), the algorithm with
every hyperparameter, the options (seed, clients per round, local steps, batch size, weighting, evaluation,
divergence bound, backend, ``record=``) and fedcore's version; so a changed hyperparameter, seed, data set or line of
the code that decides a run's numbers misses.

What the key hashes of fedcore's code is taken from a declared list, :data:`fedcore.identity.NUMERICS`, per family:
the shared modules (the round skeleton, the client rules, the server optimizers, the gradient oracle and the models,
the data containers and partitioners, the engine, ``run.py``) are in every key, a family module
(:data:`fedcore.identity.FAMILIES`: ``fafed.py``, ``fedopt.py``, ...) only in the keys of the runs whose algorithm
depends on it (:func:`fedcore.identity.modules_of`).  The code is hashed without its docstrings and comments
(:func:`fedcore.identity.normalized`): editing them recomputes nothing.  Presentation and orchestration are in no
key: figures (``plots.py``, the papers' ``figures.py``), explorers, Displays, the papers' tables and claim
rules, Flower, the store itself and the notebooks; an edit there leaves every key as it was, so a rerun of the
collection reads every run back.  A test (``tests/test_store_keys.py``) traces the modules a run executes and fails
when one joins the round path without being listed (in ``NUMERICS``, or in ``BOOKKEEPING`` when it decides no
number), or when a numerics module a run of a registered algorithm executes is not in its key.

What a run is handed that is defined outside the numerics and the libraries (a ``record=``, a schedule, a user's
own algorithm, a layer class or a loss) is keyed by its content (:func:`fedcore.identity.describe`): functions by
their bytecode, constants and names, and the values they read (closure cells, globals, and the attributes they name
of a user's module: ``cfg.LR``, ``cfg.rate(t)``); classes by their methods' code and class attributes; dataclasses by
their fields; plain objects (not dataclasses) by their class and their instance's ``__dict__``; a user's layer also
by its own attributes and buffers.  An edit of that code, or of a value it reads, is another run.

A run that cannot be compared (:func:`fedcore.identity.uncomparable`: a callable of no known kind, an object of no
known kind that its code reads, such as a ``torch.Generator``, or a plain object whose content a built-in class
holds) is never served nor kept: ``simulate``, ``simulate_runs`` and ``sweep`` compute it every time.  To make it
keyable, hold what decides its numbers in a dataclass's fields or a plain object's attributes (numbers, strings,
tensors, plain functions, fedcore's schedules), and pass a seed, not a generator.  A run with a ``callback``, or a
trace above :data:`fedcore.run.MAX_TRACE_BYTES`, is not kept either.

An entry holds the history frame, how the run ended and the final model ``x`` (unless the
store keeps no models), with its own key and identity, packed with its checksum as a checkpoint is
(:func:`fedcore.checkpoint.pack`): an entry that fails the check, or sits under another key, is dropped and
the run recomputed.  The file's tables are fedcore's own (``fedcore_runs``, ``fedcore_meta`` with the layout);
a file with anything else is refused untouched.  Each entry records its source and its family (the family modules
its run depends on); for each family, the entries of its two most recent sources are kept, older ones deleted
(:data:`KEEP_SOURCES`).

``simulate(..., store=Store(path))`` reads and writes it; :func:`default_store` is the notebooks'
store, ``build/store.sqlite`` beside the package (git-ignored), or the file ``FEDCORE_STORE`` names;
``FEDCORE_STORE=off`` turns it off (``make test`` does: tests compute).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from fedcore.checkpoint import pack, unpack
from fedcore.checks import check_bool, check_path
from fedcore.files import writable_file
from fedcore.identity import Source, source_of
from fedcore.results import History

PACKAGE = Path(__file__).resolve().parent
DEFAULT_PATH = PACKAGE.parent / "build" / "store.sqlite"
LAYOUT = "4"
"""The store's layout: its two tables (``fedcore_runs``, ``fedcore_meta``), their columns and what a payload
holds.  A file of another layout is refused, never changed (layout 3 had no ``family`` column, and its keys hashed
every numerics file as one)."""
KEEP_SOURCES = 2
"""Entries of at most this many versions of a family's source are kept, per family (the runs that depend on the same
family modules, :attr:`fedcore.identity.Source.family`): the current one and the one before it (a branch switched
back and forth keeps its runs); older ones are deleted when a store first writes a run of that family."""
TABLES = {
    "fedcore_runs": "CREATE TABLE IF NOT EXISTS fedcore_runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, "
                    "source TEXT, family TEXT, created REAL, payload BLOB)",
    "fedcore_meta": "CREATE TABLE IF NOT EXISTS fedcore_meta (name TEXT PRIMARY KEY, value TEXT)",
}


def run_key(identity: dict, rounds: int, algorithm: Any) -> str:
    """The store's key of a run of ``algorithm``: its identity, its rounds and the normalized code of the numerics
    modules it depends on (:func:`fedcore.identity.source_of`: the shared ones and its family's), hashed."""
    text = json.dumps({"identity": identity, "rounds": rounds, "source": source_of(algorithm, identity).hash},
                      sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class NotKept(dict):
    """The final state of a run read back from a store that keeps no models: reading ``x`` says so."""

    def __missing__(self, name: str) -> Any:
        raise KeyError(f"{name!r}: this run was read back from a results store that keeps no final models "
                       "(the notebooks' default store); run it with store=None, or with store=Store(path) "
                       "(which keeps them), to get its final state")


class Store:
    """Finished runs in one SQLite file: :meth:`get` a run by key, :meth:`put` one.

    The file holds fedcore's two tables (``fedcore_runs`` and ``fedcore_meta``, the latter with the layout's
    version) and nothing of anyone else's is ever changed: a file with other tables, or with fedcore's tables
    of another layout, is refused with an error.  The one table of an earlier fedcore (``runs``, whose entries
    this one would never use) is left as it is, beside the new tables.  ``keep_models=False`` keeps each run's
    history without its final model (:func:`default_store`: the notebooks read none, and a CNN's is 4.8 MB).
    ``read_only=True`` (or a file this process may not write) reads runs and keeps none (sqlite's read-only mode)."""

    def __init__(self, path: str | os.PathLike, keep_models: bool = True, read_only: bool | None = None) -> None:
        given = check_path("store", path).expanduser()
        if read_only is None:  # a file this process may not write (or in a folder it may not write): read it only
            read_only = given.is_file() and not (os.access(given, os.W_OK) and os.access(given.parent, os.W_OK))
        self.read_only = check_bool("read_only", read_only)
        if self.read_only and not given.is_file():
            raise ValueError(f"store={str(given)!r} is not a file: a read-only store reads an existing one")
        self.path = given if self.read_only else writable_file("store", path)
        self.keep_models = check_bool("keep_models", keep_models)
        self._pruned: set[str] = set()  # the families whose older sources this object has deleted
        self._said_read_only = False
        try:
            self._open()
        except sqlite3.DatabaseError as error:
            raise ValueError(f"store={str(self.path)!r} is not a fedcore results store (sqlite: {error}): delete it, "
                             "pass another path, or store=None (FEDCORE_STORE=off) to run without one") from None

    def _open(self) -> None:
        """Create the tables in a new (or empty) file; otherwise check that the file is a store of this layout,
        and change nothing when it is not."""
        with closing(self._connect()) as db, db:
            if not self.read_only:
                db.execute("BEGIN IMMEDIATE")  # two processes opening one new file: one creates, the other reads
            tables = sorted(row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
            earlier = tables == ["runs"] and [row[1] for row in db.execute("PRAGMA table_info(runs)")] == \
                ["key", "identity", "rounds", "created", "payload"]
            if (not tables or earlier) and self.read_only:
                raise ValueError(f"store={str(self.path)!r} holds no fedcore runs and is read-only: nothing to read")
            if not tables or earlier:  # a new file, or one an earlier fedcore wrote: its table is left as it is
                for statement in TABLES.values():
                    db.execute(statement)
                db.execute("INSERT INTO fedcore_meta VALUES ('layout', ?)", (LAYOUT,))
                return
            layout = db.execute("SELECT value FROM fedcore_meta WHERE name = 'layout'").fetchone() \
                if "fedcore_meta" in tables else None
        remedy = "pass another path, or store=None (FEDCORE_STORE=off) to run without one"
        if layout is None:
            raise ValueError(f"store={str(self.path)!r} is an SQLite file with tables {tables} and no fedcore layout: "
                             f"it is not a fedcore results store and is left as it is; {remedy}")
        if layout[0] != LAYOUT:
            raise ValueError(f"store={str(self.path)!r} is a fedcore results store of layout {layout[0]!r}; this "
                             f"fedcore reads layout {LAYOUT!r}: it is left as it is; delete it to start a new one, "
                             f"or {remedy}")
        missing = sorted(set(TABLES) - set(tables))
        if missing:
            raise ValueError(f"store={str(self.path)!r} is a fedcore results store of layout {LAYOUT!r} without its "
                             f"table(s) {missing} (damaged): it is left as it is; delete it to start a new one, or "
                             f"{remedy}")

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:  # sqlite's read-only mode: no journal, no lock file, no write
            return sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30,
                                   isolation_level=None)
        return sqlite3.connect(self.path, timeout=30, isolation_level=None)  # transactions where asked

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}, {len(self)} runs)"

    def __len__(self) -> int:
        with closing(self._connect()) as db:
            return int(db.execute("SELECT COUNT(*) FROM fedcore_runs").fetchone()[0])

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry under ``key`` (``frame``, ``algorithm``, ``backend``, ``diverged_round``, ``x`` when kept), or
        None.  An entry whose bytes do not match its checksum, cannot be read, or was written under another key
        or identity (a moved or edited entry) is deleted with a warning: the run is recomputed."""
        with closing(self._connect()) as db:
            row = db.execute("SELECT identity, payload FROM fedcore_runs WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            entry = unpack(row[1], f"entry {key[:12]}", "it is recomputed")
            if entry.get("key") != key or entry.get("identity") != row[0]:
                raise ValueError(f"it was written under key {str(entry.get('key'))[:12]} with another identity: "
                                 "moved or edited")
            columns, index, values = entry["frame"]
            entry["frame"] = pd.DataFrame(values.numpy(), index=pd.Index(index.numpy(), name="round"), columns=columns)
        except Exception as error:  # noqa: BLE001 -- any damage means: recompute
            warnings.warn(f"store {str(self.path)!r}: entry {key[:12]} is corrupt ({error})", RuntimeWarning,
                          stacklevel=3)
            self.delete(key)
            return None
        return entry

    def put(self, key: str, identity: dict, rounds: int, entry: dict[str, Any], source: Source) -> None:
        """Keep ``entry`` (``frame`` a DataFrame; tensors and plain values otherwise) under ``key``, with the key and
        the identity inside its checksummed payload (:meth:`get` checks both), and its ``source`` (hash and family:
        what :meth:`_prune` keeps by).  A read-only store keeps nothing and says so once."""
        if self.read_only:
            if not self._said_read_only:
                self._said_read_only = True
                warnings.warn(f"store {str(self.path)!r} is read-only: the runs computed now are not kept",
                              RuntimeWarning, stacklevel=3)
            return
        frame = entry["frame"]  # numbers only: kept as float64 tensors, exactly
        index = torch.from_numpy(frame.index.to_numpy().copy())
        values = torch.from_numpy(frame.to_numpy("float64", copy=True))
        described = json.dumps(identity, sort_keys=True)
        kept = {name: value for name, value in entry.items() if name != "x" or self.keep_models}
        payload = pack({**kept, "frame": (list(frame.columns), index, values), "key": key, "identity": described})
        with closing(self._connect()) as db:
            db.execute("INSERT OR REPLACE INTO fedcore_runs VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (key, described, rounds, source.hash, source.family, time.time(), payload))
            if source.family not in self._pruned:
                self._prune(db, source.family)

    def history(self, key: str) -> History | None:
        """The run under ``key`` as a :class:`~fedcore.results.History` (``stored=True``; its final state holds ``x``
        only, or nothing when the store keeps no models), or None.  A store that keeps models does not serve an
        entry kept without one (written by a store that keeps none): the run is computed again and kept whole."""
        entry = self.get(key)
        if entry is None or (self.keep_models and "x" not in entry):
            return None
        final_state = {"x": entry["x"]} if "x" in entry else NotKept()
        return History(entry["frame"], entry["algorithm"], entry["backend"], final_state, entry["diverged_round"],
                       entry.get("trace"), stored=True, diverged_because=entry.get("diverged_because"))

    def keep(self, key: str, identity: dict, rounds: int, history: History, algorithm: Any) -> None:
        """Keep a finished run of ``algorithm``'s ``history`` under ``key`` (:meth:`put`)."""
        self.put(key, identity, rounds, {"frame": history.frame, "algorithm": history.algorithm,
                                         "backend": history.backend, "x": history.final_state["x"],
                                         "diverged_round": history.diverged_round,
                                         "diverged_because": history.diverged_because,
                                         **({"trace": history.trace} if history.trace is not None else {})},
                 source_of(algorithm, identity))

    def _prune(self, db: sqlite3.Connection, family: str) -> None:
        """Delete the entries of ``family`` but those of its :data:`KEEP_SOURCES` most recently written sources (the
        other families' entries are theirs to prune: an edit of one family leaves the others' runs current)."""
        sources = db.execute("SELECT source FROM fedcore_runs WHERE family = ? GROUP BY source "
                             "ORDER BY MAX(created) DESC", (family,)).fetchall()
        for (source,) in sources[KEEP_SOURCES:]:
            db.execute("DELETE FROM fedcore_runs WHERE family = ? AND source = ?", (family, source))
        self._pruned.add(family)

    def delete(self, key: str) -> None:
        if self.read_only:  # a corrupt entry of a read-only store is skipped, not deleted
            return
        with closing(self._connect()) as db:
            db.execute("DELETE FROM fedcore_runs WHERE key = ?", (key,))


STORE_OFF = ("off", "0", "false", "no", "none")  # the settings of STORE / FEDCORE_STORE that mean no store


def default_store(setting: str | None = None, keep_models: bool = False) -> Store | None:
    """The notebooks' store: ``setting`` (a notebook's ``STORE`` parameter) or else ``FEDCORE_STORE``: a
    file path, or ``off`` for none; empty or unset: ``build/store.sqlite`` beside the package.  It keeps no final
    models unless ``keep_models`` (a notebook that reads them: 04 scores the final server model on the whole
    training set)."""
    setting = (os.environ.get("FEDCORE_STORE", "") if setting is None else str(setting)).strip()
    if setting.lower() in STORE_OFF:
        return None
    return Store(setting or DEFAULT_PATH, keep_models=keep_models)
