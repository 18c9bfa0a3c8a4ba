"""Writing files so that a crash never leaves a half-written one: :func:`atomic_path`."""

from __future__ import annotations

import glob
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fedcore.checks import check_path

__all__ = ["atomic_path", "writable_file"]


def writable_file(name: str, path: object) -> Path:
    """``path`` as a ``Path`` after checking, before any work is done, that a file can be written there:
    a path (not a folder) whose folder exists or can be created, and lets us create a file."""
    path = check_path(name, path).expanduser()
    if path.is_dir():
        raise ValueError(f"{name}={str(path)!r} is a folder; give a file path in it, e.g. {str(path / 'run.pt')!r}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        probe = path.with_name(f".{path.name}.{os.getpid()}.probe")
        probe.touch()
        probe.unlink()
    except OSError as error:
        raise ValueError(f"{name}={str(path)!r} cannot be written ({error.strerror or error}): give a path in a "
                         "folder you can write to") from None
    return path


@contextmanager
def atomic_path(path: str | os.PathLike, durable: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling ``<name>.<pid>.<random>.partial``; on normal exit
    :func:`os.replace` it onto ``path``; on an exception remove it and re-raise.

    ``path`` then holds either its old content or the complete new file, never a part of
    it, even if the process dies while writing (the rename is atomic: same folder, same
    file system).  The partial name is unique per writer, so concurrent writers of one
    ``path`` never write into each other's file (the last to finish wins).  The parent
    folder is created.  Write the yielded path yourself; a writer that appends its own
    suffix (``np.save``) needs a file handle: ``open(partial, "wb")``.  With ``durable`` the
    file and then its folder are flushed to disk (``fsync``) around the rename, so a power cut
    leaves the old or the new file, not an empty one.  A ``.partial`` left by a writer that
    was killed (its process is gone) is removed.

        with atomic_path(folder / "state.pt") as partial:
            torch.save(state, partial)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_partials(path)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield partial
        if durable:
            _fsync(partial)
        os.replace(partial, path)
        if durable:
            _fsync(path.parent)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_stale_partials(path: Path) -> None:
    """Remove ``<name>.<pid>.<random>.partial`` files whose writing process no longer exists."""
    for partial in path.parent.glob(f"{glob.escape(path.name)}.*.partial"):
        pid = partial.name[len(path.name) + 1:].split(".")[0]
        if pid.isdigit() and not _alive(int(pid)):
            partial.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
