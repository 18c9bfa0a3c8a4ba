"""The notebooks as files: paired, parameterized and committed executed.

Executing them is nbval's job (``make test`` runs ``pytest --nbval-lax notebooks/*.ipynb``
at ``FEDCORE_SCALE=smoke``); these tests read the files only, so they take a second:

- every ``notebooks/NN_*.py`` (jupytext py:percent, the source of truth) has an
  ``.ipynb`` with the same cells (types, sources, tags), and vice versa;
- every notebook's first code cell is tagged ``parameters``, assigns ALL_CAPS names only,
  and reads ``SCALE`` from ``FEDCORE_SCALE``;
- every committed ``.ipynb`` was executed top to bottom (execution counts increasing,
  not stripped), has outputs, no error outputs and an output in each checked cell.
"""

from __future__ import annotations

import ast
from pathlib import Path

import jupytext
import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
SCRIPTS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
IPYNBS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def _cells(notebook: nbformat.NotebookNode) -> list[tuple[str, str, list[str]]]:
    """(type, source, tags) of each cell; outputs and other metadata ignored."""
    return [(cell.cell_type, cell.source, sorted(cell.metadata.get("tags", []))) for cell in notebook.cells]


def _code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _ids(paths: list[Path]) -> list[str]:
    return [path.name for path in paths]


def test_there_are_notebooks():
    assert SCRIPTS, f"no notebooks/NN_*.py in {NOTEBOOKS}"


@pytest.mark.parametrize("ipynb", IPYNBS, ids=_ids(IPYNBS))
def test_every_ipynb_has_its_script(ipynb: Path):
    assert ipynb.with_suffix(".py").is_file(), (
        f"{ipynb.name} has no {ipynb.stem}.py: the py:percent script is the source of truth "
        f"(jupytext --set-formats ipynb,py:percent {ipynb.name})"
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=_ids(SCRIPTS))
def test_pair_is_in_sync(script: Path):
    ipynb = script.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{script.name} has no {ipynb.name}: run `jupytext --sync {script}`"
    from_script = jupytext.read(script)
    formats = from_script.metadata.get("jupytext", {}).get("formats", "")
    assert set(formats.split(",")) == {"ipynb", "py:percent"}, f"{script.name}: jupytext formats={formats!r}"
    script_cells, ipynb_cells = _cells(from_script), _cells(nbformat.read(ipynb, as_version=4))
    injected = [source for _, source, tags in ipynb_cells if "injected-parameters" in tags]
    assert not injected, (
        f"{ipynb.name} holds papermill's injected-parameters cell: execute it without -p "
        "(FEDCORE_SCALE=small is the default; `make notebooks`)"
    )
    for index, (ours, theirs) in enumerate(zip(script_cells, ipynb_cells, strict=False)):
        assert ours == theirs, (
            f"cell {index} differs between {script.name} and {ipynb.name}:\n{ours}\n!=\n{theirs}\n"
            f"edit the .py, then `jupytext --sync {script}` and re-execute (`make notebooks`)"
        )
    assert len(script_cells) == len(ipynb_cells), (
        f"{script.name} has {len(script_cells)} cells, {ipynb.name} {len(ipynb_cells)}: `jupytext --sync {script}`"
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=_ids(SCRIPTS))
def test_first_code_cell_holds_the_parameters(script: Path):
    first = _code_cells(jupytext.read(script))[0]
    assert "parameters" in first.metadata.get("tags", []), (
        f"{script.name}: the first code cell must be tagged parameters (# %% tags=[\"parameters\"])"
    )
    assigned: dict[str, str] = {}
    for node in ast.parse(first.source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assert isinstance(target, ast.Name), f"{script.name}: {ast.unparse(target)} in the parameters cell"
                assigned[target.id] = ast.unparse(node.value)
    lower = [name for name in assigned if not name.isupper()]
    assert not lower, f"{script.name}: parameters must be ALL_CAPS, found {lower}"
    assert "SCALE" in assigned, f"{script.name}: the parameters cell does not set SCALE"
    assert assigned["SCALE"].startswith("os.environ.get('FEDCORE_SCALE'"), (
        f"{script.name}: SCALE = {assigned['SCALE']}, expected os.environ.get('FEDCORE_SCALE', ...)"
    )
    assert "DEVICE" in assigned, f"{script.name}: the parameters cell does not set DEVICE"
    assert "SEED" in assigned or "SEEDS" in assigned, f"{script.name}: the parameters cell sets neither SEED nor SEEDS"


@pytest.mark.parametrize("ipynb", IPYNBS, ids=_ids(IPYNBS))
def test_committed_notebook_was_executed_without_errors(ipynb: Path):
    cells = _code_cells(nbformat.read(ipynb, as_version=4))
    counts = [cell.execution_count for cell in cells]
    assert None not in counts, (
        f"{ipynb.name}: code cells {[i for i, c in enumerate(counts) if c is None]} have no execution count "
        "(not executed, or stripped: do not strip committed notebooks)"
    )
    assert counts == sorted(counts) and len(set(counts)) == len(counts), (
        f"{ipynb.name}: execution counts {counts} are not increasing: execute it top to bottom (`make notebooks`)"
    )
    assert any(cell.outputs for cell in cells), f"{ipynb.name} has no outputs: execute it (`make notebooks`)"
    for index, cell in enumerate(cells):
        errors = [output for output in cell.outputs if output.output_type == "error"]
        assert not errors, f"{ipynb.name}, code cell {index}: {errors[0].ename}: {errors[0].evalue}"
        if "NBVAL_CHECK_OUTPUT" in cell.source:
            assert cell.outputs, f"{ipynb.name}, code cell {index} is checked by nbval but has no output"


@pytest.mark.parametrize("ipynb", IPYNBS, ids=_ids(IPYNBS))
def test_papermill_lists_every_parameter(ipynb: Path):
    """``papermill --help-notebook`` (papermill.inspect_notebook) infers each name the parameters cell
    assigns: a comment it cannot parse (an ``=`` in it, say) would hide a parameter from the reader."""
    import papermill

    first = _code_cells(nbformat.read(ipynb, as_version=4))[0]
    assigned = {target.id for node in ast.parse(first.source).body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    inferred = set(papermill.inspect_notebook(str(ipynb)))
    assert assigned <= inferred, f"{ipynb.name}: papermill does not list {sorted(assigned - inferred)}"
