"""Checkpoint files that are verified before they are used.

A checkpoint is ``MAGIC``, the SHA-256 of the payload, a newline, then the payload as
``torch.save`` writes it.  :func:`write` flushes it to disk (file and folder) before the atomic
rename; :func:`read` refuses a file that is empty, truncated, altered or not a fedcore checkpoint
with one :class:`CheckpointError` that names the file, what is wrong and what to do.  The payload
is loaded with ``weights_only=True`` (tensors, numbers, strings, containers), never more.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from typing import Any

import torch

from fedcore.checks import check_path
from fedcore.files import atomic_path, writable_file

MAGIC = b"fedcore checkpoint 2\n"


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used as it is."""


def pack(payload: dict[str, Any]) -> bytes:
    """``payload`` as ``torch.save`` bytes behind ``MAGIC`` and their SHA-256 (checkpoints and the store)."""
    buffer = io.BytesIO()
    try:
        torch.save(payload, buffer)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise TypeError(f"the payload cannot be written ({type(error).__name__}: {error}): a checkpoint holds "
                        "tensors and plain values (numbers, strings, lists, dicts), not functions or objects") from None
    data = buffer.getvalue()
    return MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data


def unpack(raw: bytes, what: str, remedy: str, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The payload of :func:`pack`'s bytes after checking them; a :class:`CheckpointError` that starts
    with ``what`` (e.g. ``checkpoint='run.pt'``) and ends with ``remedy`` otherwise."""
    if not raw:
        raise CheckpointError(f"{what} is empty (0 bytes): it was never written completely; {remedy}")
    if not raw.startswith(MAGIC):
        if MAGIC.startswith(raw):
            raise CheckpointError(f"{what} is truncated: its {len(raw)} bytes end inside the header; it was never "
                                  f"written completely; {remedy}")
        kind = "a checkpoint of an older fedcore (no checksum)" if raw.startswith(b"PK") else \
            "a fedcore results store (an SQLite file: pass it as store=, not as a checkpoint)" \
            if raw.startswith(b"SQLite format 3\x00") else "not a fedcore checkpoint"
        raise CheckpointError(f"{what} is {kind} (it starts with {raw[:16]!r}); {remedy}")
    if b"\n" not in raw[len(MAGIC):]:
        raise CheckpointError(f"{what} is truncated: its {len(raw)} bytes end inside the checksum line; it was never "
                              f"written completely; {remedy}")
    header, _, data = raw[len(MAGIC):].partition(b"\n")
    if hashlib.sha256(data).hexdigest().encode() != header:
        raise CheckpointError(
            f"{what} does not match its checksum ({len(raw)} bytes): it was truncated or altered "
            f"after it was written, so its state cannot be trusted; {remedy}"
        )
    try:
        return torch.load(io.BytesIO(data), map_location=map_location, weights_only=True)
    except Exception as error:  # noqa: BLE001 -- torch's own advice (weights_only=False) must not reach the user
        raise CheckpointError(
            f"{what} passed its checksum but its payload cannot be loaded as tensors and plain "
            f"values ({type(error).__name__}); {remedy}"
        ) from None


def write(path: str | os.PathLike, payload: dict[str, Any]) -> None:
    """Write ``payload`` with its checksum, durably and atomically."""
    path = writable_file("path", path)
    raw = pack(payload)
    with atomic_path(path, durable=True) as partial, open(partial, "wb") as file:
        file.write(raw)


def read(path: str | os.PathLike, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The payload of a checkpoint written by :func:`write`, after checking it."""
    path = check_path("path", path)
    remedy = "delete it (or pass another checkpoint path) and run again, or pass resume=False"
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise CheckpointError(f"checkpoint={str(path)!r} cannot be read ({error.strerror}); {remedy}") from None
    payload = unpack(raw, f"checkpoint={str(path)!r}", remedy, map_location)
    if "state" not in payload:
        kind = "an entry of a fedcore results store (a finished run's history, no state to resume)" \
            if "frame" in payload else f"a fedcore file without a run's state (it holds {sorted(payload)[:6]})"
        raise CheckpointError(f"checkpoint={str(path)!r} is {kind}, not a checkpoint; {remedy}")
    return payload
