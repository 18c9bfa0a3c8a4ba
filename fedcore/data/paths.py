"""Where the data files live: the repository's ``data/`` folder, or the folder a user names."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
"""``<repo>/data``, resolved from the package location (never from the cwd)."""


def named_folder(root: str | os.PathLike | None) -> tuple[Path, str] | None:
    """The folder the user named, ``(path, how it was named)``: ``root=`` if given, else
    ``$FEDCORE_DATA`` if set, else None (the loader's defaults apply).

    A named folder must exist: a typo is an error naming it, never a silent fall back to another
    copy of the data.
    """
    if root is not None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"root={root!r} must be a folder path (str or pathlib.Path), got {type(root).__name__}")
        path, named = Path(root), f"root={str(root)!r}"
    elif os.environ.get("FEDCORE_DATA"):
        path, named = Path(os.environ["FEDCORE_DATA"]), f"FEDCORE_DATA={os.environ['FEDCORE_DATA']!r}"
    else:
        return None
    if not path.is_dir():
        raise FileNotFoundError(f"{named} is not an existing folder: correct it, create it, or "
                                f"{'leave root=None' if root is not None else 'unset FEDCORE_DATA'} "
                                "to use the default data folders")
    return path, named
