"""The numerics' layout (issue 59): the engine knows no algorithm family, server rules are values that batch with no
registration, and no algorithm state is a positional tuple.  Source tests, and the runs that make them matter."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from conftest import blobs
from torch import Tensor

from fedcore import algorithms, models, server_opt
from fedcore.algorithms import FedOpt
from fedcore.engine import passes
from fedcore.run import Problem, simulate, simulate_runs

PACKAGE = Path(algorithms.__file__).resolve().parents[1]
FAMILIES = {f"fedcore.algorithms.{path.stem}" for path in (PACKAGE / "algorithms").glob("*.py")} - {
    "fedcore.algorithms.__init__", "fedcore.algorithms.batch", "fedcore.algorithms.client",
    "fedcore.algorithms.contract"} | {"fedcore.algorithms"}
"""Every family module (and the package, whose ``__init__`` imports them all); the shared machinery is not one."""


def imports(module: str) -> set[str]:
    """The fedcore modules ``module``'s source imports by name, outside ``if TYPE_CHECKING:`` blocks (``from
    fedcore.algorithms import fedopt`` names the family; the packages' own ``__init__`` runs on any import, so it
    counts only where a name is imported from it)."""
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = path.with_suffix("") / "__init__.py"
    tree = ast.parse(path.read_text())
    typing_only = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(block.test) for node in ast.walk(block)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fedcore"):
            named = {f"{node.module}.{alias.name}" for alias in node.names}
            submodules = {name for name in named
                          if (PACKAGE.parent / name.replace(".", "/")).with_suffix(".py").exists()}
            found |= submodules if submodules == named else {node.module}  # from fedcore import checkpoint: the module
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("fedcore")}
    return found


def reached(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(imports(module))
    return seen


@pytest.mark.parametrize("module", sorted(f"fedcore.engine.{p.stem}" for p in (PACKAGE / "engine").glob("*.py")))
def test_the_engine_imports_no_family(module: str) -> None:
    """Nothing ``fedcore/engine/`` imports, directly or through what it imports, is a family module."""
    assert not reached(module) & FAMILIES, f"{module} reaches {sorted(reached(module) & FAMILIES)}"


def test_the_import_graph_sees_a_family_import() -> None:
    """The walk above finds a family where one is imported (so the test above could fail)."""
    assert "fedcore.algorithms.fedopt" in reached("fedcore.algorithms.scaffold")
    assert "fedcore.algorithms.fedexp" in reached("fedcore.algorithms")


def test_no_server_rule_table_and_no_positional_algorithm_state() -> None:
    """No ``SERVER_RULES`` anywhere in the numerics; no family unpacks a rule's state by position
    (``M, X = run.state[...]``, ``a, b = run.state``): client rule states are named."""
    for path in [*(PACKAGE / "algorithms").glob("*.py"), *(PACKAGE / "engine").glob("*.py"), PACKAGE / "server_opt.py",
                 *(PACKAGE.parent / "papers").rglob("*.py")]:
        source = path.read_text()
        assert "SERVER_RULES" not in source, path
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
                assert "run.state" not in ast.unparse(node.value), f"{path.name}: {ast.unparse(node)}"


LINE_BUDGET = 2350
"""The lines of ``fedcore/algorithms/`` plus ``server_opt.py`` and ``schedules.py`` when issue 59 was filed: the
numerics may be reshaped, not grown."""


def test_the_numerics_stay_within_their_line_budget() -> None:
    files = [*sorted((PACKAGE / "algorithms").glob("*.py")), PACKAGE / "server_opt.py", PACKAGE / "schedules.py"]
    lines = {path.name: len(path.read_text().splitlines()) for path in files}
    assert sum(lines.values()) <= LINE_BUDGET, f"{sum(lines.values())} lines > {LINE_BUDGET}: {lines}"


def test_every_family_declares_its_state_once() -> None:
    """Each of fedcore's families declares its server's and its clients' state as NamedTuples (no ``init`` and no
    ``client_state`` of its own), and its ``client_reads`` are fields of its server's state."""
    from fedcore.algorithms.contract import Federated
    from fedcore.contract_checks import declared_state

    families = {type(algorithms.make(name, **example)) for name, example in algorithms.EXAMPLES.items()}
    assert len(families) >= 7
    for family in families:
        assert issubclass(family, Federated) and "init" not in vars(family) and "client_state" not in vars(family)
        server, client = declared_state(family)
        assert server._fields[0] == "x" and not set(server._fields) & set(client._fields), family


@dataclass(frozen=True)
class Nesterov(server_opt.ServerRule):
    """A user's server rule, written as fedcore's are: ``m <- beta m + Delta``, ``x <- x + lr (Delta + beta m)``."""

    lr: float = 1.0
    beta: float = 0.5

    def init(self, x: Tensor) -> dict[str, Tensor]:
        return {"m": torch.zeros_like(x)}

    def update(self, delta: Tensor, state: dict, **extras: Tensor) -> tuple[Tensor, dict]:
        m = self.beta * state["m"] + delta
        return self.lr * (delta + self.beta * m), {"m": m}


@dataclass(frozen=True)
class Opaque:
    """A server rule that is not a dataclass of numbers: its step size a plain function."""

    lr: object = staticmethod(lambda t: 1.0)

    def init(self, x: Tensor) -> dict:
        return {}

    def update(self, delta: Tensor, state: dict, **extras: Tensor) -> tuple[Tensor, dict]:
        return self.lr(0) * delta, state

    eval_point = server_opt.ServerRule.eval_point
    reports = ()


def _problem() -> Problem:
    return Problem(blobs(), models.make("logistic_regression", (8,), 3))


OPTIONS = dict(rounds=3, clients_per_round=3, local_steps=2, batch_size=4, progress=False)


def test_a_users_server_rule_batches_with_no_registration() -> None:
    """Three runs of a user's rule that differ in its numbers share one pass (no warning), each bit-identical to
    the run alone."""
    runs = [FedOpt(0.1, Nesterov(lr, beta), "Nesterov") for lr, beta in ((1.0, 0.5), (0.5, 0.9), (2.0, 0.0))]
    assert len({passes.signature(run)[0] for run in runs}) == 1 and passes.plan(runs, 8) == [[0, 1, 2]]
    stacked = passes.stack(runs)
    assert isinstance(stacked.server, Nesterov) and stacked.server.lr.shape == (3, 1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        together = simulate_runs(_problem(), runs, seeds=[0], batch=3, **OPTIONS)
    for run, history in zip(runs, together):
        alone = simulate(_problem(), run, seed=0, **OPTIONS)
        assert history.frame.drop(columns="seconds").equals(alone.frame.drop(columns="seconds"))
        assert torch.equal(history.final_state["x"], alone.final_state["x"])


def test_a_server_rule_that_cannot_be_stacked_is_said_once() -> None:
    """A server rule that is not a dataclass of numbers runs alone, and the warning names the field and why."""
    runs = [FedOpt(0.1, Opaque(), "Opaque"), FedOpt(0.2, Opaque(), "Opaque")]
    key, reason = passes.signature(runs[0])
    assert key is None and "its server is a plain Python function or object" in reason
    passes._said.clear()
    with pytest.warns(UserWarning, match="Opaque runs alone.*its server is a plain Python function") as said:
        simulate_runs(_problem(), runs, seeds=[0], batch=2, **OPTIONS)
    assert sum("runs alone" in str(w.message) for w in said) == 1


def _path_table() -> list[tuple[str, str]]:
    """The (file, function) rows of ``engine/loop.py``'s table of one FedAdam round."""
    from fedcore.engine import loop

    rows = [line.split() for line in loop.__doc__.splitlines() if line[:3].strip().isdigit()]
    return [(row[1], row[2]) for row in rows]


def test_the_round_path_in_the_loops_docstring_is_the_path_a_round_takes() -> None:
    """Every row of the table names a function of its file; and tracing one FedAdam round, every fedcore function on
    the stack when the batch is drawn, the clients' loop starts and the server's rule steps is a row (a hop added on
    the way fails here, and the count in the docstring is kept honest)."""
    import importlib
    import sys

    table = _path_table()
    assert len(table) <= 16 and table[0][1] == "run_pass" and table[-1][1] == "Adaptive.update"
    for file, function in table:
        owner = importlib.import_module("fedcore." + file.removesuffix(".py").replace("/", "."))
        for part in function.split("."):
            owner = getattr(owner, part)
        assert callable(owner), (file, function)
    leaves, stacks = {"sample", "train_clients", "update"}, []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name in leaves and "fedcore" in frame.f_code.co_filename:
            stack, at = [], frame
            while at is not None and "fedcore" in at.f_code.co_filename:
                path = Path(at.f_code.co_filename).resolve().relative_to(PACKAGE).as_posix()
                if not at.f_code.co_name.startswith("<"):  # a comprehension is its function's
                    stack.append((path, at.f_code.co_qualname))
                at = at.f_back
            stacks.append(stack)

    problem = _problem()
    sys.setprofile(tracer)
    try:
        simulate(problem, algorithms.fedadam(0.1, server_lr=0.01), seed=0, **{**OPTIONS, "rounds": 1})
    finally:
        sys.setprofile(None)
    on_path = [stack for stack in stacks if ("engine/loop.py", "run_pass") in stack]
    reached = {stack[0] for stack in on_path}
    assert {("server_opt.py", "Adaptive.update"), ("algorithms/client.py", "train_clients"),
            ("engine/streams.py", "Streams.sample")} <= reached
    hops = {frame for stack in on_path if stack[0] in set(table) for frame in stack[:stack.index(("engine/loop.py",
                                                                                                     "run_pass")) + 1]}
    assert hops <= set(table), sorted(hops - set(table))
