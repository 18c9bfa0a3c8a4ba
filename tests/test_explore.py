"""fedcore.plots draws only; fedcore.explore computes, then draws (the split of DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import fedcore

PACKAGE = Path(fedcore.__file__).resolve().parent
COMPUTING = ("fedcore.algorithms", "fedcore.counterexample", "fedcore.toy", "fedcore.run", "fedcore.params",
             "fedcore.explore", "fedcore.experiments")


def _runtime_imports(path: Path) -> list[str]:
    """Modules imported by ``path`` outside ``if TYPE_CHECKING:`` blocks."""
    tree = ast.parse(path.read_text())
    skipped = {id(node) for block in ast.walk(tree)
               if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
               for statement in block.body for node in ast.walk(statement)}
    names = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_plots_imports_nothing_that_computes():
    imported = _runtime_imports(PACKAGE / "plots.py")
    assert "matplotlib.pyplot" in imported  # the check sees the imports
    offending = [name for name in imported if name.startswith(COMPUTING)]
    assert not offending, f"fedcore/plots.py imports {offending} at runtime: it must only draw"


def test_explore_computes_with_the_library_and_draws_with_plots():
    imported = _runtime_imports(PACKAGE / "explore.py")
    assert {"fedcore.plots", "fedcore.counterexample", "fedcore.toy.server_optimizer_path"} <= set(imported)


# The sentences beside the counterexample explorer in 04_fafed, checked at the corners of its sliders
# (eta 0.01..1, beta 0..0.99, q 1..20, rho 1e-4..1, alpha 0.05..1).
SLIDER_CORNERS = [(eta, beta, q) for eta in (0.01, 1.0) for beta in (0.0, 0.99) for q in (1, 20)]


def test_naive_average_ends_farther_from_0_whatever_the_sliders() -> None:
    """'Whatever you choose, the naive average ends farther from 0 than it started', after 50 and after 300
    steps at every corner; and 'a single step can move it back' (eta = 1, beta = 0.99, q = 20) is true too."""
    from fedcore import counterexample
    from fedcore.algorithms import local_adaptive

    for eta, beta, q in SLIDER_CORNERS:
        for steps in (50, 300):
            trajectory = counterexample.run(local_adaptive(eta, beta), max(1, steps // q), q)
            assert trajectory.final() > 10, (eta, beta, q, steps)
    dipping = counterexample.run(local_adaptive(1.0, 0.99), 3, 20).frame["mean"].diff()
    assert bool((dipping < 0).any())


def test_fafed_comes_down_for_small_steps_and_can_fail_to_for_large_ones() -> None:
    """'With eta <= 0.1 FAFED comes down from 10 for every beta, q, rho and alpha on the sliders; with
    eta = 1 and a long period it can end above its start': both halves, at the corners."""
    from fedcore import counterexample
    from fedcore.algorithms import fafed

    for eta, beta, q in SLIDER_CORNERS:
        if eta > 0.1:
            continue
        for rho in (1e-4, 1.0):
            for alpha in (0.05, 1.0):
                trajectory = counterexample.run(fafed(eta, alpha=alpha, beta=beta, rho=rho), max(1, 300 // q), q)
                assert trajectory.final() < 10, (eta, beta, q, rho, alpha)
    climbing = counterexample.run(fafed(1.0, alpha=1.0, beta=0.5, rho=1e-4), 300 // 20, 20)
    assert climbing.final() > 10
