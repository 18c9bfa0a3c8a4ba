"""Notebook 01's explorers (Reddi et al., ICLR 2021): a live FedOpt run beside FedAvg, and the tuning grids' heat
maps with a chosen cell's learning curve."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedcore import algorithms, plots
from fedcore.checks import check_choice
from fedcore.explore import check_steps, drawn, live_run
from fedcore.problem import Problem
from fedcore.run import simulate
from fedcore.store import Store
from papers.fedopt.figures import tuning_panels
from papers.fedopt.tuning import good_threshold

FEDOPT_METHODS: dict[str, tuple[str, ...]] = {
    "fedavg": ("client_lr", "server_lr"),
    "fedavgm": ("client_lr", "server_lr", "beta1"),
    "fedadagrad": ("client_lr", "server_lr", "tau", "beta1"),
    "fedadam": ("client_lr", "server_lr", "tau", "beta1", "beta2"),
    "fedyogi": ("client_lr", "server_lr", "tau", "beta1", "beta2"),
}
"""The methods of the FedOpt explorer and the sliders each uses (FedAvgM takes ``beta1`` as its momentum);
:func:`~fedcore.explore.disable_unused` greys out the others."""


def fedopt_algorithm(method: str, client_lr: float, server_lr: float, tau: float = 1e-3, beta1: float = 0.9,
                     beta2: float = 0.99) -> Any:
    """The fedcore algorithm the FedOpt explorer runs for ``method`` (:data:`FEDOPT_METHODS`), given every
    slider's value (those ``method`` does not use are ignored)."""
    check_choice("method", method, FEDOPT_METHODS)
    if method == "fedavg":
        return algorithms.fedavg(client_lr, server_lr=server_lr)
    if method == "fedavgm":
        return algorithms.fedavgm(client_lr, server_lr=server_lr, beta=beta1)
    if method == "fedadagrad":
        return algorithms.fedadagrad(client_lr, server_lr=server_lr, beta1=beta1, tau=tau)
    return algorithms.make(method, client_lr=client_lr, server_lr=server_lr, beta1=beta1, beta2=beta2, tau=tau)


@drawn
def explore_fedopt(method: str = "fedadam", client_lr: float = 0.1, server_lr: float = 0.01, tau: float = 1e-3,
                   beta1: float = 0.9, beta2: float = 0.99, rounds: int = 30, problem: Problem | None = None,
                   store: Store | None = None, settings: Mapping[str, Any] | None = None,
                   smooth: int = 1) -> None:
    """The FedOpt explorer: a federated run of ``method`` with the sliders' values beside FedAvg with the
    same client learning rate (server step 1), both from the same start and minibatches; draws their test
    accuracy and training loss (:func:`fedcore.plots.fedopt_panels`, the loss's running mean over ``smooth``
    rounds).  ``problem`` defaults to :func:`~fedcore.explore.live_problem` and its round options to
    :data:`~fedcore.explore.LIVE_RUN`, which ``settings`` (``clients_per_round``, ``local_steps``, ``batch_size``,
    ``eval_every``, ``weighting``, e.g. a task's) replace; with ``store`` a setting run before is read back."""
    algorithm = fedopt_algorithm(method, client_lr, server_lr, tau, beta1, beta2)
    extra = {} if settings is None else dict(settings)
    unknown = sorted(set(extra) - {"clients_per_round", "local_steps", "batch_size", "eval_every", "weighting"})
    if unknown:
        raise ValueError(f"settings has {unknown}: it takes clients_per_round, local_steps, batch_size, eval_every "
                         "and weighting (the rounds come from rounds=)")
    problem, options = live_run(problem, **extra, rounds=check_steps("rounds", rounds), store=store)
    runs = {method: simulate(problem, algorithm, **options),
            "fedavg (server lr 1)": simulate(problem, algorithms.fedavg(client_lr), **options)}
    plots.fedopt_panels(runs, title=f"{method}: client lr {client_lr:g}, server lr {server_lr:g}" +
                        (f", tau {tau:g}" if "tau" in FEDOPT_METHODS[method] else ""), smooth=smooth)


@drawn
def explore_tuning(method: str, tau: float, client_lr: float, server_lr: float, grids: Mapping[float, Any],
                   curve: Any) -> None:
    """The tuning-grid explorer: ``grids[tau][method]`` as a heat map (Reddi et al., Figures 2 and 6) with the
    chosen cell outlined in black, and that cell's learning curve, ``curve(method, tau, client_lr, server_lr)``
    (a :class:`fedcore.History`; with the results store the grid's runs are read back, not rerun).  One colour
    scale for every grid of ``grids``; the good cells (outlined in red) are those at or above the threshold of
    ``grids[tau]`` (:func:`papers.fedopt.tuning.good_threshold`)."""
    if not isinstance(grids, Mapping) or not all(isinstance(by_method, Mapping) for by_method in grids.values()):
        raise TypeError(f"grids must be {{tau: {{method: grid}}}} (tuning.heatmaps' maps), got {type(grids).__name__}")
    if tau not in grids:
        raise ValueError(f"tau={tau!r} has no grids; grids has tau in {list(grids)}")
    if method not in grids[tau]:
        raise ValueError(f"method={method!r} has no grid at tau={tau:g}; there are {list(grids[tau])}")
    grid = grids[tau][method]
    if client_lr not in list(grid.columns) or server_lr not in list(grid.index):
        raise ValueError(f"client_lr={client_lr!r}, server_lr={server_lr!r} is not a cell of the grid "
                         f"(client: {list(grid.columns)}, server: {list(grid.index)})")
    if not callable(curve):
        raise TypeError(f"curve={curve!r} must be a function (method, tau, client_lr, server_lr) -> History")
    every = [g for by_method in grids.values() for g in by_method.values()]
    limits = (min(float(g.min().min()) for g in every), max(float(g.max().max()) for g in every))
    title = f"{method}, tau {tau:g}" if "tau" in FEDOPT_METHODS.get(method.lower(), ()) else method

    tuning_panels(grid, curve(method, tau, client_lr, server_lr), client_lr, server_lr, title,
                  good_threshold(grids[tau]), limits)
