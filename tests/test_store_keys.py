"""A run's store key names the code that decides its numbers, and nothing else (issue 36).

fedcore's numerics are a declared list (``fedcore.identity.NUMERICS``); what a run is handed that computes (a
``record=`` class, a schedule given as a function, a user's algorithm) is keyed by its own code.  These tests trace
what a run executes (a module that joins the round path unlisted fails), edit a copy of the package (figures, claim
rules and notebooks leave every key as it was; the client rules, the server optimizers, the oracle and the engine
change every key), and edit the code handed to a run."""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore.identity import BOOKKEEPING, NUMERICS, PACKAGE, describe, numerics_files, numerics_hash, run_identity
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


def test_every_module_a_run_executes_is_numerics_or_bookkeeping(tmp_path) -> None:
    """Every fedcore file whose code runs while runs of all 18 algorithms compute (both backends, a pass of several
    runs, a sweep, a store, a checkpoint resumed, a trace, a record, a run that diverges) is listed in ``NUMERICS``
    or ``BOOKKEEPING``: code that joins the round path unlisted fails here."""
    built = {name: algorithms.make(name, **algorithms.EXAMPLES[name]) for name in algorithms.EXAMPLES}
    executed: set[str] = set()

    def tracer(frame, event, arg):
        executed.add(frame.f_code.co_filename)

    store = Store(tmp_path / "runs.sqlite")
    sys.settrace(tracer)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for algorithm in built.values():
                for backend in ("loop", "vmap"):
                    simulate(problem(), algorithm, backend=backend, store=store, record=Norm(), **OPTIONS)
                simulate_runs(problem(), [algorithm, algorithm], seeds=(0, 1), batch=2, **OPTIONS)
            path = tmp_path / "run.pt"
            simulate(problem(), built["scaffold"], checkpoint=path, **OPTIONS)
            simulate(problem(), built["scaffold"], checkpoint=path, resume=True, **{**OPTIONS, "rounds": 3})
            simulate(problem(), built["fedavg"], trace=True, store=store, **OPTIONS)
            simulate(problem(), built["fedadam"], diverge_above=1e-9, **OPTIONS)
            sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.2]}, store=store, **OPTIONS)
    finally:
        sys.settrace(None)
    ours = {Path(file).resolve() for file in executed if Path(file).resolve().is_relative_to(PACKAGE)}
    assert ours, "the trace saw none of fedcore's code"
    undeclared = sorted(str(path.relative_to(PACKAGE)) for path in ours if not _declared(path))
    assert not undeclared, (f"{undeclared} ran during a run but are in neither fedcore.identity.NUMERICS (their code "
                            "decides numbers: add them) nor BOOKKEEPING (they decide none)")
    assert {"engine/loop.py", "run.py", "algorithms/client.py", "server_opt.py", "params.py"} <= \
        {str(path.relative_to(PACKAGE)) for path in ours}


def test_numerics_names_files_that_exist_and_leaves_out_presentation() -> None:
    files = {path.relative_to(PACKAGE).as_posix() for path in numerics_files()}
    assert {"algorithms/client.py", "server_opt.py", "params.py", "engine/loop.py", "data/federated.py"} <= files
    for presentation in ("plots.py", "explore.py", "store.py", "experiments/claims.py", "flower/app.py"):
        assert presentation not in files


# ---- edits in a copy of the package ------------------------------------------------------------------------------


def _copy(tmp_path: Path) -> Path:
    """A copy of the package and the notebooks, as a tree with the package at ``<copy>/fedcore``."""
    copy = tmp_path / "tree"
    shutil.copytree(PACKAGE, copy / "fedcore", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "notebooks", copy / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return copy


def _edit(path: Path) -> None:
    path.write_text(path.read_text() + "\n# an edit: one more line\n")


@pytest.mark.parametrize(("edited", "decides"), [
    ("plots.py", False), ("explore.py", False), ("experiments/fedopt/figures.py", False),
    ("experiments/claims.py", False), ("experiments/common.py", False), ("flower/app.py", False),
    ("store.py", False), ("algorithms/client.py", True), ("algorithms/fedopt.py", True), ("server_opt.py", True),
    ("params.py", True), ("models.py", True), ("data/federated.py", True), ("engine/loop.py", True),
    ("engine/streams.py", True), ("run.py", True),
])
def test_an_edit_changes_the_numerics_hash_only_where_it_decides_numbers(tmp_path, edited, decides) -> None:
    package = _copy(tmp_path) / "fedcore"
    before = numerics_hash.__wrapped__(package)
    _edit(package / edited)
    assert (numerics_hash.__wrapped__(package) != before) == decides


KEYS = """
import json, sys, warnings
import torch
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
store = Store({store!r})
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    simulate(problem, algorithms.fedavg(0.1), store=store, **options)
    simulate(problem, algorithms.scaffold(0.1), store=store, record=ServerModel(), **options)
    simulate_runs(problem, [algorithms.fedadam(0.1), algorithms.fedadam(0.2)], store=store, **options)
import sqlite3
print(json.dumps(sorted(row[0] for row in sqlite3.connect({store!r}).execute("SELECT key FROM fedcore_runs"))))
"""


def _keys(tree: Path, store: Path) -> list[str]:
    script = KEYS.format(tests=str(Path(__file__).parent), tree=str(tree), store=str(store))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tree,
                          env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin", "FEDCORE_STORE": "off"}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_edits_to_figures_claims_and_notebooks_keep_every_key_and_an_edit_to_the_rules_changes_every_one(
        tmp_path) -> None:
    """End to end, in separate processes on copies of the package: the keys the store writes for four runs (one with
    a record) are the same after edits to plots, a paper's figures, the claim rules and a notebook, and all differ
    after an edit to the client rules."""
    original = _copy(tmp_path / "a")
    keys = _keys(original, tmp_path / "a.sqlite")
    assert len(keys) == 4
    presented = _copy(tmp_path / "b")
    for edited in ("fedcore/plots.py", "fedcore/experiments/fedopt/figures.py", "fedcore/experiments/claims.py",
                   "notebooks/01_fedopt.py"):
        _edit(presented / edited)
    assert _keys(presented, tmp_path / "b.sqlite") == keys
    ruled = _copy(tmp_path / "c")
    _edit(ruled / "fedcore/algorithms/client.py")
    assert not set(_keys(ruled, tmp_path / "c.sqlite")) & set(keys)


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
    prob = problem()
    identity = run_identity(prob.data, prob.model.module, prob.x0(), algorithms.fedavg(0.1),
                            {"seed": 0, "record": module.Measured()})
    return run_key(identity, 2)


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
