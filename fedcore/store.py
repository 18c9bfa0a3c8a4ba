"""The results store: every finished run, kept by what determines it, so a rerun costs only what changed.

A :class:`Store` is one SQLite file (the standard library's ``sqlite3``; no server).  A run is keyed by
its identity (:func:`fedcore.identity.run_identity`: data content, model and initial parameters, the
algorithm with every hyperparameter, the options, fedcore's version), its number of rounds and a hash
of fedcore's own source (:func:`source_hash`), so a changed hyperparameter, seed, data set or line of
fedcore misses.  An entry holds the history frame, how the run ended and the final model ``x``, packed with
its checksum as a checkpoint is (:func:`fedcore.checkpoint.pack`): an entry that fails the check is
dropped and the run recomputed.

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
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from fedcore.checkpoint import pack, unpack
from fedcore.files import writable_file

PACKAGE = Path(__file__).resolve().parent
DEFAULT_PATH = PACKAGE.parent / "build" / "store.sqlite"
COLUMNS = ("key", "identity", "rounds", "created", "payload")


@cache
def source_hash() -> str:
    """SHA-256 of every ``.py`` file of the fedcore package (paths and contents), computed once."""
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(str(path.relative_to(PACKAGE)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def run_key(identity: dict, rounds: int) -> str:
    """The store's key: the identity, the rounds and fedcore's source, hashed."""
    text = json.dumps({"identity": identity, "rounds": rounds, "source": source_hash()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class Store:
    """Finished runs in one SQLite file: :meth:`get` a run by key, :meth:`put` one."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = writable_file("store", path)
        try:
            self._create()
        except sqlite3.DatabaseError as error:
            raise ValueError(f"store={str(self.path)!r} is not a fedcore results store (sqlite: {error}): delete it, "
                             "pass another path, or store=None (FEDCORE_STORE=off) to run without one") from None

    def _create(self) -> None:
        with self._connect() as db:
            columns = [row[1] for row in db.execute("PRAGMA table_info(runs)")]
            if columns and columns != list(COLUMNS):  # written by another fedcore: its entries would miss anyway
                warnings.warn(f"store {str(self.path)!r} has another layout ({columns}); its runs are dropped",
                              RuntimeWarning, stacklevel=2)
                db.execute("DROP TABLE runs")
            db.execute("CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, identity TEXT, rounds INTEGER, "
                       "created REAL, payload BLOB)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r}, {len(self)} runs)"

    def __len__(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry under ``key`` (``frame``, ``algorithm``, ``backend``, ``diverged_round``, ``x``), or None.
        An entry whose bytes do not match its checksum, or cannot be read, is deleted (with a warning)."""
        with self._connect() as db:
            row = db.execute("SELECT payload FROM runs WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            entry = unpack(row[0], f"entry {key[:12]}", "it is recomputed")
            columns, index, values = entry["frame"]
            entry["frame"] = pd.DataFrame(values.numpy(), index=pd.Index(index.numpy(), name="round"), columns=columns)
        except Exception as error:  # noqa: BLE001 -- any damage means: recompute
            warnings.warn(f"store {str(self.path)!r}: entry {key[:12]} is corrupt ({error})", RuntimeWarning,
                          stacklevel=3)
            self.delete(key)
            return None
        return entry

    def put(self, key: str, identity: dict, rounds: int, entry: dict[str, Any]) -> None:
        """Keep ``entry`` (``frame`` a DataFrame; tensors and plain values otherwise) under ``key``."""
        frame = entry["frame"]  # numbers only: kept as float64 tensors, exactly
        index = torch.from_numpy(frame.index.to_numpy().copy())
        values = torch.from_numpy(frame.to_numpy("float64", copy=True))
        payload = pack({**entry, "frame": (list(frame.columns), index, values)})  # with its checksum
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?)",
                       (key, json.dumps(identity, sort_keys=True), rounds, time.time(), payload))

    def delete(self, key: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM runs WHERE key = ?", (key,))


def default_store(setting: str | None = None) -> Store | None:
    """The notebooks' store: ``setting`` (a notebook's ``STORE`` parameter) or else ``FEDCORE_STORE``: a
    file path, or ``off`` for none; empty or unset: ``build/store.sqlite`` beside the package."""
    setting = (os.environ.get("FEDCORE_STORE", "") if setting is None else str(setting)).strip()
    if setting.lower() in ("off", "0", "false", "no", "none"):
        return None
    return Store(setting or DEFAULT_PATH)
