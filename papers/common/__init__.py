"""The papers' common layer and contract, written once, one concept per module.

Every paper's ``experiment`` module answers to the same names (:data:`~papers.common.contract.CONTRACT`, checked by
``tests/test_common.py``):

- ``SCALES``: ``{name: Scale}`` (``smoke``, ``small``, ``medium``, ``paper``), a :class:`~papers.common.scale.Scale`
  or a subclass of it;
- ``tasks(scale, *, partition_seed=0, device="cpu") -> {name: Task}``: the scale's tasks, each a
  :class:`~papers.common.tasks.Task` (data with its partition fixed, the model drawn from a seed, the round settings,
  the metric, its unit and trivial baseline, how tuning selects);
- ``make_builders(task, scale) -> {method: build(**hyperparameters)}``: the methods ``task`` runs;
- ``run(task, builders, seeds) -> Results`` and ``tune(task, builders, grids, seeds) -> Tuning``: the common
  :func:`~papers.common.contract.run` and :func:`~papers.common.tuning.tune` (a builder's point bound by
  :func:`~papers.common.tuning.bind`).

The modules: :mod:`~papers.common.scale` (what runs at each scale), :mod:`~papers.common.tasks` (a task and a run's
score), :mod:`~papers.common.results` (runs over seeds and their views), :mod:`~papers.common.tuning` (grid search),
:mod:`~papers.common.contract` (the contract's names and ``run``), :mod:`~papers.common.sweeps` (one knob swept, the
good span around a value).  Their names are gathered here, so that a notebook reads ``common.Task``,
``common.tune``.
"""

from papers.common.contract import CONTRACT, run
from papers.common.results import (
    Results,
    best_value,
    by_method_seed,
    mean_over_seeds,
    mean_sd,
    mean_sd_cell,
    near_best,
    near_best_by_column,
    score_table,
)
from papers.common.scale import Kind, Kinds, Scale, half_decades, scale_at
from papers.common.sweeps import good_span, outward_sweep, span_decades, span_decades_by_seed, span_width, sweep_table
from papers.common.tasks import (
    ROUND_SETTINGS,
    SCORE_EVALUATIONS,
    Builder,
    Selection,
    Task,
    scope,
    window_rounds,
    window_score,
)
from papers.common.tuning import Tuning, beyond_edges, bind, chosen_apart, grid_scores, grids_at, on_edge, tune

__all__ = [
    "Kind", "Kinds", "Scale", "scale_at", "half_decades", "SCORE_EVALUATIONS", "ROUND_SETTINGS", "Builder",
    "Selection", "Task", "scope", "window_score", "window_rounds", "Results", "score_table", "mean_sd",
    "mean_sd_cell", "near_best", "near_best_by_column", "mean_over_seeds", "best_value", "by_method_seed", "bind",
    "chosen_apart", "grids_at", "on_edge", "grid_scores", "Tuning", "beyond_edges", "tune", "CONTRACT", "run",
    "sweep_table", "outward_sweep", "good_span", "span_width", "span_decades", "span_decades_by_seed",
]
