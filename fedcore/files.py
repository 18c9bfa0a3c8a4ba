"""Writing files so that a crash never leaves a half-written one: :func:`atomic_path`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path"]


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary sibling ``<name>.<pid>.<random>.partial``; on normal exit
    :func:`os.replace` it onto ``path``; on an exception remove it and re-raise.

    ``path`` then holds either its old content or the complete new file, never a part of
    it, even if the process dies while writing (the rename is atomic: same folder, same
    file system).  The partial name is unique per writer, so concurrent writers of one
    ``path`` never write into each other's file (the last to finish wins).  The parent
    folder is created.  Write the yielded path yourself; a writer that appends its own
    suffix (``np.save``) needs a file handle: ``open(partial, "wb")``.  No ``fsync``:
    durability across a power cut is not promised.

        with atomic_path(folder / "state.pt") as partial:
            torch.save(state, partial)
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.partial")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
