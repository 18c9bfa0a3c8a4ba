"""Issue 58, points 8 and 9: ``records`` never leaves a half-written file where a record was, and never reads a
file it cannot vouch for (cut, copied from another notebook, without its header, ...) without a clear error."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from papers import records

RERUN = r"re-run .*scripts/run_notebooks\.py --scale medium notebooks/"


def _table() -> pd.DataFrame:
    return pd.DataFrame({"method": ["FedAvg", "FAFED"], "accuracy": [80.25, 3.5]}).set_index("method")


def _claims() -> pd.DataFrame:
    return pd.DataFrame({"claim (the paper)": ["a", "b"], "verdict": ["holds", "does not hold"]})


def _recorded(tmp_path: Path, notebook: str = "04_fafed", name: str = "accuracy", table=None) -> Path:
    [path] = records.record({name: _table() if table is None else table}, notebook, "medium", root=tmp_path)
    return path


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot be written")

    __repr__ = __str__
    __format__ = lambda self, spec: str(self)  # noqa: E731


# ---- point 8: a failing write keeps the earlier record ------------------------------------------------------------


@pytest.mark.parametrize("failing", ["the only table", "the second table"])
def test_a_write_that_fails_keeps_the_earlier_record_whole(tmp_path, failing) -> None:
    first = _recorded(tmp_path, name="accuracy")
    second = _recorded(tmp_path, name="train_loss")
    before = {path: path.read_bytes() for path in (first, second)}
    bad = pd.DataFrame({"accuracy": [1.0, _Unprintable()]}, index=pd.Index(["FedAvg", "FAFED"], name="method"))
    tables = {"train_loss": bad} if failing == "the only table" else {"accuracy": _table() * 2, "train_loss": bad}
    with pytest.raises(RuntimeError, match="cannot be written"):
        records.record(tables, "04_fafed", "medium", root=tmp_path)
    assert {path: path.read_bytes() for path in (first, second)} == before  # neither file changed, both whole
    assert sorted(p.name for p in first.parent.iterdir()) == ["accuracy.csv", "train_loss.csv"]  # no leftovers
    pd.testing.assert_frame_equal(records.recorded("04_fafed", "train_loss", root=tmp_path).table, _table())


# ---- point 9: what is read is checked against its header -----------------------------------------------------------


def test_a_recorded_table_still_reads_back_exactly(tmp_path) -> None:
    _recorded(tmp_path)
    found = records.recorded("04_fafed", "accuracy", root=tmp_path)
    pd.testing.assert_frame_equal(found.table, _table())
    assert found.scale == "medium" and found.commit == records.commit()


@pytest.mark.parametrize("cut", [3, 1, "a row"])
def test_a_file_cut_short_is_refused(tmp_path, cut) -> None:
    path = _recorded(tmp_path)
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rindex("\n") + 1] if cut == "a row" else text[:-cut])  # 3.5 -> 3.
    with pytest.raises(ValueError, match=rf"{path.name}.*(cut|changed).*{RERUN}04_fafed\.ipynb"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)


def test_a_value_edited_after_writing_is_refused(tmp_path) -> None:
    path = _recorded(tmp_path)
    path.write_text(path.read_text().replace("80.25", "90.25"))
    with pytest.raises(ValueError, match="changed since it was written"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)


def test_a_file_copied_from_another_notebook_or_table_is_refused(tmp_path) -> None:
    claims = _recorded(tmp_path, "04_fafed", "claims", _claims())
    (tmp_path / "medium" / "01_fedopt").mkdir()
    shutil.copy(claims, tmp_path / "medium" / "01_fedopt" / "claims.csv")
    with pytest.raises(ValueError, match=r"01_fedopt/claims\.csv holds 04_fafed's table claims, not 01_fedopt's "
                                         rf"table claims.*{RERUN}01_fedopt\.ipynb"):
        records.verdicts_beside(_claims(), "01_fedopt", root=tmp_path)
    shutil.copy(claims, claims.with_name("accuracy.csv"))
    with pytest.raises(ValueError, match="holds 04_fafed's table claims, not 04_fafed's table accuracy"):
        records.beside(_table(), "04_fafed", "accuracy", root=tmp_path)


def test_a_file_recorded_at_another_scale_is_refused(tmp_path) -> None:
    [path] = records.record({"accuracy": _table()}, "04_fafed", "paper", root=tmp_path)
    (tmp_path / "medium" / "04_fafed").mkdir(parents=True)
    shutil.copy(path, tmp_path / "medium" / "04_fafed" / "accuracy.csv")
    with pytest.raises(ValueError, match="was recorded at scale paper, not medium"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)


def _header_edits() -> dict[str, object]:
    return {
        "empty file": lambda text: "",
        "no header line": lambda text: text.split("\n", 1)[1],
        "header of another program": lambda text: "# written by hand\n" + text.split("\n", 1)[1],
        "index not a number": lambda text: text.replace("| index 1 |", "| index one |"),
        "index 0": lambda text: text.replace("| index 1 |", "| index 0 |"),
        "no date": lambda text: text.replace(" | date ", " | day "),
        "no checksum (an older header)": lambda text: text[: text.index(" | rows")] + "\n" + text.split("\n", 1)[1],
        "header only": lambda text: text.split("\n", 1)[0],
        "a part without a value": lambda text: text.replace("| index 1 |", "| index |"),
    }


@pytest.mark.parametrize("edit", list(_header_edits()))
def test_a_missing_or_damaged_header_is_refused_naming_the_file(tmp_path, edit) -> None:
    path = _recorded(tmp_path)
    path.write_text(_header_edits()[edit](path.read_text()))
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}.*{RERUN}04_fafed\.ipynb"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)
    with pytest.raises(ValueError, match=re.escape(str(path))):  # every reader says the same, status included
        records.status("04_fafed", "accuracy", root=tmp_path)


def test_a_record_that_cannot_be_read_is_refused_naming_the_file(tmp_path) -> None:
    path = _recorded(tmp_path)
    path.unlink()
    path.mkdir()  # a folder where the file should be
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))} cannot be read .*{RERUN}04_fafed"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)
    path.rmdir()
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))} is not UTF-8 text"):
        records.recorded("04_fafed", "accuracy", root=tmp_path)


def test_a_claims_record_without_verdicts_is_refused_naming_the_file(tmp_path) -> None:
    path = _recorded(tmp_path, "04_fafed", "claims", _claims().rename(columns={"verdict": "outcome"}))
    expected = rf"{re.escape(str(path))} has no 'verdict' column.*'outcome'.*{RERUN}04_fafed"
    with pytest.raises(ValueError, match=expected):
        records.verdicts_beside(_claims(), "04_fafed", root=tmp_path)


@pytest.mark.parametrize("call", ["record", "recorded", "beside", "verdicts_beside", "status"])
@pytest.mark.parametrize("root", ["a file", "missing"])
def test_a_root_that_is_not_a_folder_is_refused(tmp_path, call, root) -> None:
    given = tmp_path / "results.csv"
    if root == "a file":
        given.write_text("not a folder")
    elif call == "record":  # writing creates a missing root
        assert records.record({"accuracy": _table()}, "04_fafed", "medium", root=given) \
            == [given / "medium" / "04_fafed" / "accuracy.csv"]
        return
    calls = {"record": lambda: records.record({"accuracy": _table()}, "04_fafed", "medium", root=given),
             "recorded": lambda: records.recorded("04_fafed", "accuracy", root=given),
             "beside": lambda: records.beside(_table(), "04_fafed", "accuracy", root=given),
             "verdicts_beside": lambda: records.verdicts_beside(_claims(), "04_fafed", root=given),
             "status": lambda: records.status("04_fafed", "accuracy", root=given)}
    with pytest.raises(ValueError, match=rf"root='{re.escape(str(given))}' (is a file|does not exist)"):
        calls[call]()


def test_tables_are_checked_at_every_scale_before_anything_is_written(tmp_path) -> None:
    with pytest.raises(TypeError, match="tables"):
        records.record({"accuracy": [1, 2]}, "04_fafed", "small", root=tmp_path)
    with pytest.raises(ValueError, match="name='../x'"):
        records.record({"accuracy": _table(), "../x": _table()}, "04_fafed", "medium", root=tmp_path)
    assert not (tmp_path / "medium").exists()  # the good table before the bad name was not written either


def test_every_committed_record_reads_back_through_its_checks() -> None:
    paths = sorted(records.ROOT.glob("*/*/*.csv"))
    assert paths, "the repository records results/medium/"
    for path in paths:
        scale, notebook, name = path.parent.parent.name, path.parent.name, path.stem
        found = records.recorded(notebook, name, scale)
        assert found is not None and len(found.table) > 0 and found.scale == scale, path
