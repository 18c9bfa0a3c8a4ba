"""Results of the scales a reader cannot wait for: a notebook run at ``medium`` or ``paper`` writes its claims table
and main tables to ``results/<scale>/<notebook>/<table>.csv`` (:func:`record`), with the commit and date; at
``small`` it shows them beside its own numbers (:func:`beside`), so the rows ``small`` cannot run are there to read.
A file is one comment line (``# fedcore <notebook> <table> | scale .. | commit .. | date .. | index n | header n |
rows n | sha256 ..``: index and header levels, data rows, the checksum of the lines below) and the table as
``DataFrame.to_csv`` writes it; a file whose header does not match what is asked for and what is read is refused."""

from __future__ import annotations

import datetime
import hashlib
import io
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fedcore.checks import check_choice, check_path
from fedcore.files import atomic_path

ROOT = Path(__file__).resolve().parents[1] / "results"  # the repository's (``root=`` writes or reads elsewhere)
RECORDED_SCALES = ("medium", "paper")  # the scales a run records: those ``small`` shows beside its own


@dataclass(frozen=True)
class Recorded:
    """One recorded table with where it came from: the scale, the commit and the date of the run."""

    table: pd.DataFrame
    scale: str
    commit: str
    date: str
    path: Path | None = None  # the file it was read from

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


def _path(root: Path | str, scale: str, notebook: str, name: str, *, reading: bool = False) -> Path:
    """``root/<scale>/<notebook>/<name>.csv`` after checking the names are plain file names and ``root`` a folder
    (when ``reading``, one that exists: the repository's ``results/`` may be missing, it then holds nothing)."""
    for argument, value in (("notebook", notebook), ("name", name)):
        if not isinstance(value, str) or not value or "/" in value or value.startswith("."):
            raise ValueError(f"{argument}={value!r} must be a plain file name, e.g. '04_fafed' or 'claims'")
    folder = check_path("root", root).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"root={str(root)!r} is a file: give the folder that holds <scale>/<notebook>/<table>.csv "
                         "(the repository's results/, the default)")
    if reading and not folder.exists() and folder != ROOT:
        raise ValueError(f"root={str(root)!r} does not exist: give the folder that holds <scale>/<notebook>/"
                         "<table>.csv (the repository's results/, the default)")
    return folder / scale / notebook / f"{name}.csv"


def _checksum(body: str) -> str:
    """The first 16 hex digits of the sha256 of a file's table text (its lines after the header), line ends as
    ``\\n`` (a checkout that turns them into ``\\r\\n`` reads the same)."""
    return hashlib.sha256(body.replace("\r\n", "\n").encode()).hexdigest()[:16]


def record(tables: Mapping[str, pd.DataFrame], notebook: str, scale: str, *,
           root: Path | str = ROOT) -> list[Path]:
    """Write each table of ``tables`` (``{name: DataFrame}``) to ``root/<scale>/<notebook>/<name>.csv`` with the
    commit, today's date (UTC), its row count and its checksum (:func:`recorded` checks them), when ``scale`` is one
    of :data:`RECORDED_SCALES`; at another scale nothing is written (``[]``).  The tables and names are checked at
    every scale, and every table is turned into text before any file is written; each file is then replaced whole
    (:func:`fedcore.files.atomic_path`), so an error leaves the earlier record as it was.  Returns the files written."""
    check_choice("scale", scale, ("smoke", "small", "medium", "paper"))
    if not isinstance(tables, Mapping) or not all(isinstance(t, pd.DataFrame) for t in tables.values()):
        raise TypeError(f"tables={type(tables).__name__} must be a {{name: DataFrame}}")
    paths = {name: _path(root, scale, notebook, name) for name in tables}
    if scale not in RECORDED_SCALES:
        return []
    stamp, today = commit(), datetime.datetime.now(datetime.UTC).date().isoformat()
    texts = {}
    for name, table in tables.items():
        body = table.to_csv(lineterminator="\n")
        texts[name] = (f"# fedcore {notebook} {name} | scale {scale} | commit {stamp} | date {today} | "
                       f"index {table.index.nlevels} | header {table.columns.nlevels} | rows {len(table)} | "
                       f"sha256 {_checksum(body)}\n{body}")
    for name, text in texts.items():
        with atomic_path(paths[name], durable=True) as partial:
            partial.write_bytes(text.encode())
    return list(paths.values())


HEADER = ("scale", "commit", "date", "index", "header", "rows", "sha256")  # the fields of a file's header line


def _refused(path: Path, notebook: str, scale: str, problem: str) -> ValueError:
    return ValueError(f"{path} {problem}: re-run the notebook to record it again (python scripts/run_notebooks.py "
                      f"--scale {scale} notebooks/{notebook}.ipynb), or delete the file")


def recorded(notebook: str, name: str, scale: str = "medium", *, root: Path | str = ROOT) -> Recorded | None:
    """The table ``name`` that ``notebook`` recorded at ``scale`` (:func:`record`), or None when it has none yet.

    The file is read only when its header line names this notebook, this table and this scale, has every field
    of :data:`HEADER`, and its table text has the header's checksum and row count: a file cut short, edited,
    copied from another notebook or table, or written before these checks raises a ``ValueError`` naming it."""
    path = _path(root, check_choice("scale", scale, RECORDED_SCALES), notebook, name, reading=True)
    if not path.exists():
        return None
    try:
        first, newline, body = path.read_bytes().decode("utf-8").partition("\n")
    except UnicodeDecodeError:
        raise _refused(path, notebook, scale, "is not UTF-8 text") from None
    except OSError as error:
        raise _refused(path, notebook, scale, f"cannot be read ({error.strerror or error})") from None
    if not newline:
        raise _refused(path, notebook, scale, "is empty" if not first else "has no table below its first line")
    named, *parts = first.rstrip("\r").split("|")
    if named.split()[:2] != ["#", "fedcore"] or len(named.split()) != 4:
        raise _refused(path, notebook, scale, f"does not start with a fedcore header line ('# fedcore {notebook} "
                                              f"{name} | scale {scale} | ...'): it starts {first[:60]!r}")
    if (found := named.split()[2:]) != [notebook, name]:
        raise _refused(path, notebook, scale, f"holds {found[0]}'s table {found[1]}, not {notebook}'s table {name} "
                                              "(copied here from elsewhere?)")
    fields = dict(part.strip().partition(" ")[::2] for part in parts)
    if missing := [field for field in HEADER if not fields.get(field, "").strip()]:
        older = " (an older fedcore's header)" if set(missing) <= {"rows", "sha256"} else ""
        raise _refused(path, notebook, scale, f"has no {', '.join(missing)} in its header line {first!r}{older}")
    if fields["scale"] != scale:
        raise _refused(path, notebook, scale, f"was recorded at scale {fields['scale']}, not {scale}")
    counts = {field: fields[field] for field in ("index", "header", "rows")}
    if not all(value.isdecimal() for value in counts.values()) or min(int(counts["index"]), int(counts["header"])) < 1:
        raise _refused(path, notebook, scale, f"has {counts} in its header line: whole numbers, index and header at "
                                              "least 1")
    if (checksum := _checksum(body)) != fields["sha256"]:
        raise _refused(path, notebook, scale, f"was cut or changed since it was written: its table's sha256 "
                                              f"{checksum} is not the {fields['sha256']} its header line gives")
    index, header, rows = (int(value) for value in counts.values())
    try:
        table = pd.read_csv(io.StringIO(body), index_col=list(range(index)), header=list(range(header)))
    except (ValueError, IndexError, pd.errors.ParserError) as error:
        raise _refused(path, notebook, scale, f"cannot be read as a table ({error})") from None
    if len(table) != rows:
        raise _refused(path, notebook, scale, f"reads as {len(table)} rows, not the {rows} its header line gives")
    return Recorded(table, fields["scale"], fields["commit"], fields["date"], path)


def beside(ours: pd.DataFrame, notebook: str, name: str, scale: str = "medium", *,
           label: str = "ours", root: Path | str = ROOT) -> pd.DataFrame:
    """``ours`` and the table ``notebook`` recorded at ``scale`` side by side, as column groups named ``label`` (say
    the scale: ``"ours, small"``) and :attr:`Recorded.label`; ``ours`` as it is when nothing is recorded yet."""
    found = recorded(notebook, name, scale, root=root)
    return ours if found is None else pd.concat({label: ours, found.label: found.table}, axis=1)


def verdicts_beside(claims_table: pd.DataFrame, notebook: str, scale: str = "medium", *, label: str = "ours",
                    name: str = "claims", root: Path | str = ROOT) -> pd.DataFrame | None:
    """Each row's verdict in ``claims_table`` (:func:`papers.claims.claims_table`) beside the verdict of
    the same row in the claims table ``notebook`` recorded at ``scale`` (a column each, named ``label`` and
    :attr:`Recorded.label`; ``"not recorded"`` where that run had no such row), or None when nothing is recorded."""
    if not isinstance(claims_table, pd.DataFrame) or "verdict" not in claims_table.columns:
        raise ValueError(f"claims_table must be a claims table with a 'verdict' column, got "
                         f"{type(claims_table).__name__} with columns {list(getattr(claims_table, 'columns', []))}")
    if (found := recorded(notebook, name, scale, root=root)) is None:
        return None
    if "verdict" not in found.table.columns:
        raise _refused(found.path, notebook, scale, f"has no 'verdict' column (it has {list(found.table.columns)}): "
                                                    "not a claims table as claims.as_tables writes it")
    theirs = found.table["verdict"].reindex(claims_table.index).fillna("not recorded")
    return pd.DataFrame({label: claims_table["verdict"], found.label: theirs}).rename_axis("claims row")


def status(notebook: str, name: str, scale: str = "medium", *, root: Path | str = ROOT) -> str:
    """One line for the reader: where ``notebook``'s table ``name`` was recorded at ``scale``, or how to record it."""
    if (found := recorded(notebook, name, scale, root=root)) is not None:
        return f"{scale}: recorded at commit {found.commit} on {found.date}, shown beside ours"
    return f"{scale}: not recorded yet (`make run SCALE={scale}` writes results/{scale}/{notebook}/; its {name} then " \
        "shows beside this one)"
