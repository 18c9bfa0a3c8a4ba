"""A run's store key names the code that decides its numbers, and nothing else (issues 36 and 59).

fedcore's numerics are a declared list (``fedcore.identity.NUMERICS``); a run's key hashes the normalized code
(docstrings and comments left out) of the shared modules and of its own family's (``fedcore.identity.modules_of``);
what a run is handed that computes (a ``record=`` class, a schedule given as a function, a user's algorithm) is keyed
by its own code.  These tests trace what a run executes (a module that joins the round path unlisted, or a numerics
module a run executes that its key does not hash, fails), edit a copy of the package (figures, claim rules,
notebooks, docstrings and comments leave every key as it was; a code edit in the client rules changes every key, one
in FAFED's module FAFED's alone), and edit the code handed to a run."""

from __future__ import annotations

import ast
import importlib
import json
import shutil
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore.identity import (
    BOOKKEEPING,
    NUMERICS,
    PACKAGE,
    describe,
    modules_of,
    numerics_files,
    numerics_hash,
    run_identity,
    source_of,
)
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.store import Store, run_key
from fedcore.sweeps import sweep

OPTIONS = dict(rounds=2, clients_per_round=3, local_steps=2, batch_size=4, progress=False)
ROOT = PACKAGE.parent


def problem() -> Problem:
    return Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=0))


@dataclass(frozen=True)
class Norm:
    """A ``record=`` class of the tests' own (outside fedcore: keyed by its code)."""

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"norm": x.norm(dim=1)}


# ---- every module a run executes is declared ---------------------------------------------------------------------


def _declared(path: Path) -> bool:
    relative = path.relative_to(PACKAGE).as_posix()
    return any(relative == entry or (entry.endswith("/") and relative.startswith(entry))
               for entry in NUMERICS + BOOKKEEPING)


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> tuple[dict[str, Any], dict[str, set[Path]]]:
    """The algorithms of ``algorithms.EXAMPLES`` (fedcore's 18 and the guide's), and, for each, the fedcore files
    whose code runs while runs of it compute (both backends with a store and a record, a pass of two runs; SCAFFOLD
    also a checkpoint resumed, FedAvg a trace and a sweep, FedAdam a run that diverges)."""
    built = {name: algorithms.make(name, **algorithms.EXAMPLES[name]) for name in algorithms.EXAMPLES}
    seen: dict[str, set[Path]] = {name: set() for name in built}
    into: set[str] = set()

    def tracer(frame, event, arg):
        into.add(frame.f_code.co_filename)

    tmp_path = tmp_path_factory.mktemp("traced")
    store = Store(tmp_path / "runs.sqlite")
    path = tmp_path / "run.pt"
    extra = {
        "scaffold": [lambda: simulate(problem(), built["scaffold"], checkpoint=path, **OPTIONS),
                     lambda: simulate(problem(), built["scaffold"], checkpoint=path, resume=True,
                                      **{**OPTIONS, "rounds": 3})],
        "fedavg": [lambda: simulate(problem(), built["fedavg"], trace=True, store=store, **OPTIONS),
                   lambda: sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.2]}, store=store, **OPTIONS)],
        "fedadam": [lambda: simulate(problem(), built["fedadam"], diverge_above=1e-9, **OPTIONS)],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, algorithm in built.items():
            into.clear()
            sys.settrace(tracer)
            try:
                for backend in ("loop", "vmap"):
                    simulate(problem(), algorithm, backend=backend, store=store, record=Norm(), **OPTIONS)
                simulate_runs(problem(), [algorithm, algorithm], seeds=(0, 1), batch=2, **OPTIONS)
                for run in extra.get(name, []):
                    run()
            finally:
                sys.settrace(None)
            seen[name] = {Path(file).resolve() for file in into if Path(file).resolve().is_relative_to(PACKAGE)}
    return built, seen


def test_every_module_a_run_executes_is_numerics_or_bookkeeping(executed) -> None:
    """Every fedcore file whose code runs while runs of all 18 algorithms compute (both backends, a pass of several
    runs, a sweep, a store, a checkpoint resumed, a trace, a record, a run that diverges) is listed in ``NUMERICS``
    or ``BOOKKEEPING``: code that joins the round path unlisted fails here."""
    ours = set().union(*executed[1].values())
    assert ours, "the trace saw none of fedcore's code"
    undeclared = sorted(str(path.relative_to(PACKAGE)) for path in ours if not _declared(path))
    assert not undeclared, (f"{undeclared} ran during a run but are in neither fedcore.identity.NUMERICS (their code "
                            "decides numbers: add them) nor BOOKKEEPING (they decide none)")
    assert {"engine/loop.py", "run.py", "algorithms/client.py", "server_opt.py", "params.py"} <= \
        {str(path.relative_to(PACKAGE)) for path in ours}


def test_a_runs_key_holds_every_numerics_module_its_runs_execute(executed) -> None:
    """The guard of keys by family: for each registered algorithm, every numerics file its runs executed (above) is
    one its store key hashes (``modules_of``); a family module that joins another family's round path, or a shared
    module that starts to call a family's code, fails here until the key follows it."""
    built, seen = executed
    numerics = set(numerics_files())
    for name, algorithm in built.items():
        missed = sorted(path.relative_to(PACKAGE).as_posix() for path in seen[name] & numerics
                        if path not in modules_of(algorithm))
        assert not missed, f"runs of {name} executed {missed}, which its store key does not hash"
    assert {"algorithms/fafed.py", "algorithms/client.py"} <= \
        {path.relative_to(PACKAGE).as_posix() for path in seen["fafed"]}


def test_a_key_holds_the_shared_modules_and_its_own_familys_and_no_other() -> None:
    """Shared modules are in every key; a family module only in the keys of runs that depend on it: by the class, by
    a server rule's functions (FedExP is FedOpt with a rule of ``fedexp.py``), by what its module imports (FedExP's
    imports FedOpt's), through a user's object too; a user's family depends on the shared modules alone; the
    registry (``algorithms/__init__.py``) is in no key."""
    families = {name: source_of(algorithms.make(name, **algorithms.EXAMPLES[name])).family
                for name in ("fedadam", "fafed", "stem", "fedexp", "padamfed", "server_momentum")}
    assert families == {"fedadam": "algorithms/fedopt.py", "fafed": "algorithms/fafed.py",
                        "stem": "algorithms/fafed.py", "fedexp": "algorithms/fedexp.py algorithms/fedopt.py",
                        "padamfed": "algorithms/padamfed.py algorithms/theorems.py", "server_momentum": ""}

    class Holder:  # a user's plain object holding FedExP's server rule
        def __init__(self) -> None:
            self.server = algorithms.extrapolation(eps=0.1)

    assert source_of(Holder()).family == "algorithms/fedexp.py algorithms/fedopt.py"
    shared = set(modules_of(algorithms.make("server_momentum", **algorithms.EXAMPLES["server_momentum"])))
    assert {PACKAGE / "algorithms/client.py", PACKAGE / "server_opt.py", PACKAGE / "engine/loop.py"} <= shared
    assert all(shared <= set(modules_of(algorithms.make(name, **example)))
               and PACKAGE / "algorithms/__init__.py" not in modules_of(algorithms.make(name, **example))
               for name, example in algorithms.EXAMPLES.items())


def test_numerics_names_files_that_exist_and_leaves_out_presentation() -> None:
    files = {path.relative_to(PACKAGE).as_posix() for path in numerics_files()}
    assert {"algorithms/client.py", "server_opt.py", "params.py", "engine/loop.py", "data/federated.py"} <= files
    for presentation in ("plots.py", "explore.py", "store.py", "flower/app.py"):
        assert presentation not in files


# ---- edits in a copy of the package ------------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    """A copy of the package, the papers and the notebooks, as a tree with the package at ``<copy>/fedcore``."""
    copy = tmp_path / "tree"
    shutil.copytree(PACKAGE, copy / "fedcore", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "papers", copy / "papers", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", copy / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return copy


def _edit(path: Path) -> None:
    """A code edit: one more statement (a comment or a docstring would change no key)."""
    path.write_text(path.read_text() + "\nEDITED_BY_A_TEST = 1\n")


@pytest.mark.parametrize(("edited", "decides"), [
    ("plots.py", False), ("explore.py", False), ("flower/app.py", False),
    ("store.py", False), ("algorithms/client.py", True), ("algorithms/fedopt.py", True), ("server_opt.py", True),
    ("params.py", True), ("models.py", True), ("data/federated.py", True), ("engine/loop.py", True),
    ("engine/streams.py", True), ("run.py", True),
])
def test_an_edit_changes_the_numerics_hash_only_where_it_decides_numbers(tmp_path, edited, decides) -> None:
    package = _copy(tmp_path) / "fedcore"
    before = numerics_hash(package)
    _edit(package / edited)
    assert (numerics_hash(package) != before) == decides


KEYS = """
import json, sys, warnings
sys.path.insert(0, {tests!r})
from conftest import blobs
import fedcore
from fedcore import algorithms, models
from fedcore.counterexample import ServerModel
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.store import Store
assert fedcore.__file__.startswith({tree!r}), fedcore.__file__
problem = Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), seed=0))
options = dict(rounds=1, clients_per_round=3, local_steps=2, batch_size=4, progress=False)
keys = {{}}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for name, run in {{
        "fedavg": lambda store: simulate(problem, algorithms.fedavg(0.1), store=store, **options),
        "scaffold": lambda store: simulate(problem, algorithms.scaffold(0.1), store=store, record=ServerModel(),
                                           **options),
        "fedadam": lambda store: simulate_runs(problem, [algorithms.fedadam(0.1), algorithms.fedadam(0.2)],
                                               store=store, **options),
        "fafed": lambda store: simulate(problem, algorithms.fafed(0.05, alpha=0.9), store=store, **options),
    }}.items():
        path = {store!r} + "." + name
        run(Store(path))
        import sqlite3
        keys[name] = sorted(row[0] for row in sqlite3.connect(path).execute("SELECT key FROM fedcore_runs"))
print(json.dumps(keys))
"""


def _keys(tree: Path, store: Path) -> dict[str, list[str]]:
    """The keys the store writes, run by run, for runs of FedAvg, SCAFFOLD (with a record), FedAdam (a pass of two)
    and FAFED, in a separate process on the package copy at ``tree``."""
    script = KEYS.format(tests=str(Path(__file__).parent), tree=str(tree), store=str(store))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "FEDCORE_STORE": "off"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _edit_docstrings_and_comments(path: Path) -> None:
    """Edit the docstrings of the module and of its first class and function, add a comment line, an inline comment
    and a string that stands as a statement (an attribute's docstring): the code is the same."""
    text = path.read_text()
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    defined = [node for node in ast.walk(tree) if isinstance(node, (ast.ClassDef, ast.FunctionDef))]
    documented = [tree, next(n for n in defined if isinstance(n, ast.ClassDef) and ast.get_docstring(n)),
                  next(n for n in defined if isinstance(n, ast.FunctionDef) and ast.get_docstring(n))]
    for node in documented:
        string = node.body[0].value
        line = lines[string.lineno - 1]
        assert line[string.col_offset:string.col_offset + 3] == '"""', line
        lines[string.lineno - 1] = line[:string.col_offset + 3] + "Edited words. " + line[string.col_offset + 3:]
    returned = next(node for node in ast.walk(tree) if isinstance(node, ast.Return))
    lines[returned.end_lineno - 1] = lines[returned.end_lineno - 1].rstrip("\n") + "  # an inline comment\n"
    function = documented[2]
    lines.insert(function.lineno - 1, "# a comment line\n")
    lines.append('\n"""A string that stands as a statement, as an attribute\'s docstring does."""\n')
    path.write_text("".join(lines))
    assert path.read_text() != text


def test_edits_to_figures_claims_and_notebooks_keep_every_key_and_an_edit_to_the_rules_changes_every_one(
        tmp_path) -> None:
    """End to end, in separate processes on copies of the package: the keys the store writes for five runs (one with
    a record, two in a pass) are the same after edits to plots, a paper's figures, the claim rules and a notebook,
    and after docstring and comment edits in the client rules and the server optimizers; all differ after a code
    edit to the client rules; a code edit to FAFED's module changes FAFED's key and no other."""
    original = _copy(tmp_path / "a")
    keys = _keys(original, tmp_path / "a.sqlite")
    assert [len(keys[name]) for name in ("fedavg", "scaffold", "fedadam", "fafed")] == [1, 1, 2, 1]
    presented = _copy(tmp_path / "b")
    for edited in ("fedcore/plots.py", "papers/fedopt/figures.py", "papers/claims.py",
                   "notebooks/01_fedopt.py"):
        _edit(presented / edited)
    assert _keys(presented, tmp_path / "b.sqlite") == keys
    documented = _copy(tmp_path / "c")
    for edited in ("fedcore/algorithms/client.py", "fedcore/server_opt.py"):
        _edit_docstrings_and_comments(documented / edited)
    assert _keys(documented, tmp_path / "c.sqlite") == keys
    family = _copy(tmp_path / "d")
    _edit(family / "fedcore/algorithms/fafed.py")
    refamily = _keys(family, tmp_path / "d.sqlite")
    assert not set(refamily["fafed"]) & set(keys["fafed"])
    assert {name: refamily[name] for name in ("fedavg", "scaffold", "fedadam")} == \
        {name: keys[name] for name in ("fedavg", "scaffold", "fedadam")}
    ruled = _copy(tmp_path / "e")
    _edit(ruled / "fedcore/algorithms/client.py")
    reruled = _keys(ruled, tmp_path / "e.sqlite")
    assert not {key for name in reruled for key in reruled[name]} & {key for name in keys for key in keys[name]}


# ---- the code handed to a run is keyed by its own content ---------------------------------------------------------


RECORD_MODULE = '''
from dataclasses import dataclass

SCALE = {scale}


def helper(x):
    return x.norm(dim=1) * SCALE


def unrelated():
    return {unrelated}


@dataclass(frozen=True)
class Measured:
    def __call__(self, x):
        return {{"measured": helper(x)}}
'''


def _record_key(tmp_path: Path, scale: str, unrelated: str) -> str:
    """The key of one run whose ``record`` is a class of a user's module, as the module's source now reads."""
    (tmp_path / "user_record.py").write_text(textwrap.dedent(RECORD_MODULE.format(scale=scale, unrelated=unrelated)))
    sys.path.insert(0, str(tmp_path))
    try:
        sys.modules.pop("user_record", None)
        module = importlib.import_module("user_record")
    finally:
        sys.path.remove(str(tmp_path))
    prob, algorithm = problem(), algorithms.fedavg(0.1)
    identity = run_identity(prob.data, prob.model.module, prob.x0(), algorithm,
                            {"seed": 0, "record": module.Measured()})
    return run_key(identity, 2, algorithm)


def test_an_edited_record_class_changes_its_runs_keys_and_an_unrelated_edit_does_not(tmp_path) -> None:
    """The record's own code and what it calls (a helper, a global number) are keyed; a function of the same module
    that the record never calls is not."""
    key = _record_key(tmp_path, "2.0", "1")
    assert _record_key(tmp_path, "2.0", "1") == key
    assert _record_key(tmp_path, "2.0", "2") == key  # unrelated() is not the record's code
    assert _record_key(tmp_path, "3.0", "1") != key  # a number its helper reads


def test_an_edited_record_class_is_another_run_in_the_store(tmp_path) -> None:
    """Through simulate: a record class edited (another body under the same name) misses the store."""
    store = Store(tmp_path / "runs.sqlite")

    def measured(body: str):
        namespace: dict = {}
        exec(textwrap.dedent(f"""
            from dataclasses import dataclass
            @dataclass(frozen=True)
            class Measured:
                def __call__(self, x):
                    return {{"measured": {body}}}
            """), namespace)
        return namespace["Measured"]()

    first = simulate(problem(), algorithms.fedavg(0.1), store=store, record=measured("x.norm(dim=1)"), **OPTIONS)
    again = simulate(problem(), algorithms.fedavg(0.1), store=store, record=measured("x.norm(dim=1)"), **OPTIONS)
    edited = simulate(problem(), algorithms.fedavg(0.1), store=store, record=measured("x.abs().sum(1)"), **OPTIONS)
    assert not first.stored and again.stored and not edited.stored and len(store) == 2
    assert not edited.frame["measured"].equals(first.frame["measured"])


def test_a_schedule_given_as_a_function_is_keyed_by_its_code_and_the_values_it_reads(tmp_path) -> None:
    store = Store(tmp_path / "runs.sqlite")

    def schedule(lr: float):
        return lambda t: lr * 0.5 ** (t // 2)

    first = simulate(problem(), algorithms.fedavg(schedule(0.1)), store=store, **OPTIONS)
    again = simulate(problem(), algorithms.fedavg(schedule(0.1)), store=store, **OPTIONS)
    other = simulate(problem(), algorithms.fedavg(schedule(0.2)), store=store, **OPTIONS)  # the closure's number
    changed = simulate(problem(), algorithms.fedavg(lambda t: 0.1 * 0.5 ** (t // 3)), store=store, **OPTIONS)
    assert not first.stored and again.stored and not other.stored and not changed.stored and len(store) == 3
    torch.testing.assert_close(again.final_state["x"], first.final_state["x"], rtol=0, atol=0)


def test_fedcore_code_is_keyed_by_the_numerics_hash_and_other_code_by_content() -> None:
    """A fedcore algorithm is described by its fields (its code is the numerics hash's); a user's dataclass carries
    its class's code; what such code reads that cannot be described makes the run uncomparable."""
    assert "code" not in describe(algorithms.fedadam(0.1))
    assert describe(Norm())["code"]["methods"]["__call__"]["code"]["names"] == ["norm"]
    opaque = object()
    described = describe(lambda t: 0.1 if opaque else 0.2)
    assert described["closure"]["opaque"] == {"<uncomparable>": "object object"}


def test_a_users_layer_and_loss_are_keyed_by_their_code_and_fedcores_are_not(tmp_path) -> None:
    """A model whose layer class is the user's (its ``forward`` decides the numbers) or a loss of the user's: an
    edit of that code is another run; fedcore's and torch's layers and losses add nothing to the identity."""
    store = Store(tmp_path / "runs.sqlite")

    def scaled(factor: str):
        namespace: dict = {"nn": torch.nn}
        exec(textwrap.dedent(f"""
            class Scaled(nn.Module):
                def forward(self, x):
                    return x * {factor}
            """), namespace)
        return namespace["Scaled"]()

    def model(factor: str) -> Problem:
        torch.manual_seed(0)  # the same initial parameters
        return Problem(blobs(), torch.nn.Sequential(torch.nn.Linear(8, 3), scaled(factor)))

    first = simulate(model("2.0"), algorithms.fedavg(0.1), store=store, **OPTIONS)
    again = simulate(model("2.0"), algorithms.fedavg(0.1), store=store, **OPTIONS)
    edited = simulate(model("3.0"), algorithms.fedavg(0.1), store=store, **OPTIONS)
    assert not first.stored and again.stored and not edited.stored

    def loss(outputs, targets):
        return torch.nn.functional.cross_entropy(outputs, targets) * 2

    own = Problem(blobs(), torch.nn.Sequential(torch.nn.Linear(8, 3)), loss=loss)
    plain = Problem(blobs(), torch.nn.Sequential(torch.nn.Linear(8, 3)))
    a, b = [run_identity(p.data, p.model.module, p.x0(), algorithms.fedavg(0.1), {}, loss=p.model.loss_fn)["model"]
            for p in (own, plain)]
    assert "loss" in a and "loss" not in b and "code" not in b
    assert "code" not in run_identity(problem().data, problem().model.module, problem().x0(), algorithms.fedavg(0.1),
                                      {}, loss=problem().model.loss_fn)["model"]
