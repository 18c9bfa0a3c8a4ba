"""The names every paper's ``experiment`` module answers to (:data:`CONTRACT`), and :func:`run`: every method on a
task from each seed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fedcore.checks import check_seeds
from fedcore.results import History
from fedcore.run import simulate, simulate_runs
from fedcore.store import Store
from papers.common.results import Results
from papers.common.tasks import Builder, Task

CONTRACT = {"SCALES": None, "tasks": ("scale", "partition_seed", "device"), "make_builders": ("task", "scale"),
            "run": ("task", "builders", "seeds"), "tune": ("task", "builders", "grids", "seeds")}
"""The names every paper's ``experiment`` module answers to, with the parameters of each function."""


def run(task: Task, builders: Mapping[str, Builder], seeds: Sequence[int], *, store: Store | None = None,
        progress: bool = False, alone: bool = False) -> Results:
    """Every method of ``builders`` (``{method: build()}``: a builder with its hyperparameters bound,
    :func:`~papers.common.tuning.bind`) on ``task`` from each seed's initial model, client sampling and minibatches,
    the same for every method.  The runs go through :func:`fedcore.simulate_runs` (runs that share a pass go together,
    the store keeps each); ``alone`` runs each by itself (:func:`fedcore.simulate`: the same numbers, and each run's
    ``seconds`` its own, not a share of a pass's)."""
    if not isinstance(task, Task):
        raise TypeError(f"task={type(task).__name__} must be a papers.common.Task")
    seeds = check_seeds("seeds", seeds)
    algorithms = {method: build() if callable(build) else build for method, build in builders.items()}
    starts, problem = task.initial(seeds), task.problem(seeds[0])
    if alone:
        runs = {method: [simulate(problem, algorithm, seed=seed, x0=starts[seed], store=store, progress=progress,
                                  **task.settings) for seed in seeds] for method, algorithm in algorithms.items()}
        return Results({task.name: runs}, tuple(seeds), {task.name: task})
    pairs = [(method, seed) for method in algorithms for seed in seeds]
    histories = simulate_runs(problem, [algorithms[method] for method, _ in pairs], seeds=[seed for _, seed in pairs],
                              x0=[starts[seed] for _, seed in pairs], store=store, progress=progress,
                              **task.settings)
    by_method: dict[str, list[History]] = {method: [] for method in algorithms}
    for (method, _), history in zip(pairs, histories):
        by_method[method].append(history)
    return Results({task.name: by_method}, tuple(seeds), {task.name: task})
