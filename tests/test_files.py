"""Tests of fedcore.files.atomic_path: the file appears only complete, a failure leaves the old one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fedcore.files import atomic_path


def test_the_file_appears_only_when_complete(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    with atomic_path(target) as partial:
        assert partial.parent == tmp_path and partial.name.startswith("state.bin.") and partial.suffix == ".partial"
        partial.write_bytes(b"first half ")
        assert not target.exists()  # nothing at the target while writing
        with open(partial, "ab") as handle:
            handle.write(b"second half")
        assert not target.exists()
    assert target.read_bytes() == b"first half second half"
    assert [p.name for p in tmp_path.iterdir()] == ["state.bin"]  # the partial was moved, not copied


def test_an_existing_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")
    with atomic_path(str(target)) as partial:  # a str path works too
        partial.write_bytes(b"new content")
        assert target.read_bytes() == b"old"
    assert target.read_bytes() == b"new content"


def test_an_exception_leaves_the_old_file_and_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_path(target) as partial:
            partial.write_bytes(b"half")
            raise RuntimeError("disk full")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["state.bin"]
    with pytest.raises(KeyboardInterrupt):  # also an interrupt, before the partial exists
        with atomic_path(tmp_path / "other.bin"):
            raise KeyboardInterrupt
    assert [p.name for p in tmp_path.iterdir()] == ["state.bin"]


def test_a_process_killed_while_writing_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")
    child = (
        "import os, sys\n"
        "from fedcore.files import atomic_path\n"
        "with atomic_path(sys.argv[1]) as partial:\n"
        "    partial.write_bytes(b'half')\n"
        "    os._exit(3)  # dies without cleaning up, as on SIGKILL\n"
    )
    assert subprocess.run([sys.executable, "-c", child, str(target)], timeout=120).returncode == 3
    assert target.read_bytes() == b"old"  # only the (ignored) partial holds the half-written bytes
    assert [p.read_bytes() for p in tmp_path.glob("state.bin.*.partial")] == [b"half"]


def test_the_parent_folder_is_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.bin"
    with atomic_path(target) as partial:
        assert partial.parent.is_dir()
        partial.write_text("x")
    assert target.read_text() == "x"


def test_concurrent_writers_get_their_own_partial(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second
        first.write_bytes(b"first")
        second.write_bytes(b"second")
    assert target.read_bytes() == b"first"  # the last to finish wins (the outer one)
    assert not list(tmp_path.glob("*.partial"))


def test_a_body_that_writes_nothing_fails_and_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "state.bin"
    target.write_bytes(b"old")
    with pytest.raises(FileNotFoundError):
        with atomic_path(target):
            pass
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["state.bin"]
