"""Results of the scales a reader cannot wait for: a notebook run at ``medium`` or ``paper`` writes its claims table
and main tables to ``results/<scale>/<notebook>/<table>.csv`` (:func:`record`), with the commit and date; at
``small`` it shows them beside its own numbers (:func:`beside`), so the rows ``small`` cannot run are there to read.
A file is one comment line (``# fedcore <notebook> <table> | scale .. | commit .. | date .. | index n | header n``)
and the table as ``DataFrame.to_csv`` writes it."""

from __future__ import annotations

import datetime
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fedcore.checks import check_choice

ROOT = Path(__file__).resolve().parents[2] / "results"  # the repository's (``root=`` writes or reads elsewhere)
RECORDED_SCALES = ("medium", "paper")  # the scales a run records: those ``small`` shows beside its own


@dataclass(frozen=True)
class Recorded:
    """One recorded table with where it came from: the scale, the commit and the date of the run."""

    table: pd.DataFrame
    scale: str
    commit: str
    date: str

    @property
    def label(self) -> str:  # "ours, medium, commit 1a2b3c4 (2026-11-27)"
        return f"ours, {self.scale}, commit {self.commit} ({self.date})"


def commit() -> str:
    """The checked-out commit's short hash (``"+"`` appended when a tracked file outside ``results/`` differs from
    it), or ``"unknown"`` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT.parent, capture_output=True, text=True, check=True).stdout
    try:
        head = git("rev-parse", "--short=7", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results").strip())
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def _path(root: Path | str, scale: str, notebook: str, name: str) -> Path:
    for argument, value in (("notebook", notebook), ("name", name)):
        if not isinstance(value, str) or not value or "/" in value or value.startswith("."):
            raise ValueError(f"{argument}={value!r} must be a plain file name, e.g. '04_fafed' or 'claims'")
    return Path(root) / scale / notebook / f"{name}.csv"


def record(tables: Mapping[str, pd.DataFrame], notebook: str, scale: str, *,
           root: Path | str = ROOT) -> list[Path]:
    """Write each table of ``tables`` (``{name: DataFrame}``) to ``root/<scale>/<notebook>/<name>.csv`` with the
    commit and today's date (UTC), when ``scale`` is one of :data:`RECORDED_SCALES`; at another scale nothing is
    written (``[]``).  Returns the files written."""
    check_choice("scale", scale, ("smoke", "small", "medium", "paper"))
    if scale not in RECORDED_SCALES:
        return []
    if not isinstance(tables, Mapping) or not all(isinstance(t, pd.DataFrame) for t in tables.values()):
        raise TypeError(f"tables={type(tables).__name__} must be a {{name: DataFrame}}")
    stamp, today = commit(), datetime.datetime.now(datetime.UTC).date().isoformat()
    written = []
    for name, table in tables.items():
        path = _path(root, scale, notebook, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as file:
            file.write(f"# fedcore {notebook} {name} | scale {scale} | commit {stamp} | date {today} | "
                       f"index {table.index.nlevels} | header {table.columns.nlevels}\n")
            table.to_csv(file)
        written.append(path)
    return written


def recorded(notebook: str, name: str, scale: str = "medium", *, root: Path | str = ROOT) -> Recorded | None:
    """The table ``name`` that ``notebook`` recorded at ``scale`` (:func:`record`), or None when it has none yet."""
    path = _path(root, check_choice("scale", scale, RECORDED_SCALES), notebook, name)
    if not path.exists():
        return None
    with path.open() as file:
        fields = dict(part.strip().split(" ", 1) for part in file.readline().lstrip("#").split("|")[1:])
        index, header = int(fields["index"]), int(fields["header"])
        table = pd.read_csv(file, index_col=list(range(index)), header=list(range(header)))
    return Recorded(table, fields["scale"], fields["commit"], fields["date"])


def beside(ours: pd.DataFrame, notebook: str, name: str, scale: str = "medium", *,
           label: str = "ours", root: Path | str = ROOT) -> pd.DataFrame:
    """``ours`` and the table ``notebook`` recorded at ``scale`` side by side, as column groups named ``label`` (say
    the scale: ``"ours, small"``) and :attr:`Recorded.label`; ``ours`` as it is when nothing is recorded yet."""
    found = recorded(notebook, name, scale, root=root)
    return ours if found is None else pd.concat({label: ours, found.label: found.table}, axis=1)


def verdicts_beside(claims_table: pd.DataFrame, notebook: str, scale: str = "medium", *, label: str = "ours",
                    name: str = "claims", root: Path | str = ROOT) -> pd.DataFrame | None:
    """Each row's verdict in ``claims_table`` (:func:`fedcore.experiments.claims.claims_table`) beside the verdict of
    the same row in the claims table ``notebook`` recorded at ``scale`` (a column each, named ``label`` and
    :attr:`Recorded.label`; ``"not recorded"`` where that run had no such row), or None when nothing is recorded."""
    if not isinstance(claims_table, pd.DataFrame) or "verdict" not in claims_table.columns:
        raise ValueError(f"claims_table must be a claims table with a 'verdict' column, got "
                         f"{type(claims_table).__name__} with columns {list(getattr(claims_table, 'columns', []))}")
    if (found := recorded(notebook, name, scale, root=root)) is None:
        return None
    theirs = found.table["verdict"].reindex(claims_table.index).fillna("not recorded")
    return pd.DataFrame({label: claims_table["verdict"], found.label: theirs}).rename_axis("claims row")


def status(notebook: str, name: str, scale: str = "medium", *, root: Path | str = ROOT) -> str:
    """One line for the reader: where ``notebook``'s table ``name`` was recorded at ``scale``, or how to record it."""
    if (found := recorded(notebook, name, scale, root=root)) is not None:
        return f"{scale}: recorded at commit {found.commit} on {found.date}, shown beside ours"
    return f"{scale}: not recorded yet (`make run SCALE={scale}` writes results/{scale}/{notebook}/; its {name} then " \
        "shows beside this one)"
