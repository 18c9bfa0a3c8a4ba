"""FedLi's Tables 1 and 2 and its hyper-parameter claims on the tasks reachable here (notebook ``03_fedli``,
sections 3 to 5), on the common layer (:mod:`fedcore.experiments.common`).

The paper (:mod:`~fedcore.experiments.fedli.paper`: its setup and numbers) trains on CIFAR-10/100, FEMNIST and
Shakespeare.  Here (:func:`tasks` builds them as :class:`~fedcore.experiments.common.Task`; :data:`SCALES` says
which run at which scale):

- **FEMNIST -> Fashion-MNIST** (EMNIST cannot be fetched): 100 clients by Dirichlet(0.5) (the paper's split of
  FEMNIST is by writer; its Dirichlet value for CIFAR was lost), 10 per round, batch 32, one local epoch (K =
  ceil(mean client size / 32), capped per scale).  Model: the paper's "a CNN" is not specified; at ``paper`` scale
  fedcore's ``cnn`` (Reddi et al.'s EMNIST CNN), below it a one-hidden-layer MLP (64 units), so the notebook fits
  2 CPU cores.  Every scale runs it.
- **Shakespeare** on its own data (one client per play and role), the char-LSTM, 10 clients per round, batch 32:
  ``paper`` scale only.  At ``small``, 20 rounds of the LSTM left six of seven methods at the trivial baseline and
  took half the notebook's time, so it says nothing there.
- **CIFAR-10/100** with ResNet-18 (GroupNorm), 100 clients by Dirichlet(0.5): ``paper`` scale only, where
  torchvision has the files (:data:`CIFAR`).

The partition is drawn once (``partition_seed``) and stays fixed; a seed of :data:`SCALES` draws the initial
model, the client sampling and the minibatches, and every result is reported over those seeds.

Methods (:func:`algorithms_at`): FedLi-LS (Armijo clients with SLS's constants, the non-convex server rule: the
largest client step), FedLi-LU (SGD clients and the DFW server), and the tuned baselines FedAdam, FedAvg, FedProx,
SCAFFOLD and FedExP.  The paper does not say which client rate FedLi-LU's SGD clients use; here FedAvg's tuned rate
(the one a user of FedAvg would have).  **Tuning** (:data:`GRIDS`, :func:`tune`, through
:func:`fedcore.experiments.common.tune` over the seeds): the paper searches 100 rounds on training accuracy;
fedcore's runs record the clients' training loss, not accuracy, so the search keeps the lowest final training loss
(mean over the seeds) after :data:`SCALES`' ``tune_rounds``.  The grids' values were lost in our copy of the text:
ours are half-decades of the client rate, FedProx's mu, FedAdam's server rate and FedExP's eps.

**Scores** (:func:`score`): a run's test accuracy in %, averaged over its last four evaluations on the whole test set
(:func:`fedcore.experiments.common.window_score`); Table 2's training loss over the same rounds.

**FedLi's own constants** (:data:`CONSTANTS`, :func:`constant_sweep`): FedLi-LS's cap ``eta_max`` and Armijo
constant ``c`` on the tables' horizon, FedLi-LU's Deep-Frank-Wolfe ``eta`` on the long horizon
(:func:`long_task`: the paper's 500 rounds, where FedLi-LU is not merely slow), each a decade grid around its
default; beside them the clients' SGD rate of FedLi-LU, FedAvg and FedExP (:func:`client_rate_sweep`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from torch import nn

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_seed, check_seeds
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.experiments import common
from fedcore.experiments.claims import Scope, compare, trivial_baseline
from fedcore.experiments.common import Scale, Task, Tuning, half_decades, scale_at, span_width, window_score
from fedcore.experiments.fedli.paper import METHODS, NEAR_BEST
from fedcore.results import History
from fedcore.run import simulate
from fedcore.store import Store


@dataclass(frozen=True)
class FedliScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` with the Shakespeare roles (None: every eligible one), the grid
    points per list (None: all; 1: the middle one) and the long horizon of FedLi-LU's sweeps (:func:`long_task`)."""

    shakespeare_roles: int | None = None
    grid_points: int | None = None
    long: Mapping[str, int] = field(default_factory=lambda: {"rounds": 500, "eval_every": 10})


SCALES: dict[str, FedliScale] = {
    "smoke": FedliScale("smoke", seeds=(0, 1), rounds=3, eval_every=3, tasks=("femnist",), tune_rounds=2,
                        max_local_steps=2, test_samples=200, shakespeare_roles=10, grid_points=1,
                        long={"rounds": 4, "eval_every": 2}),
    "small": FedliScale("small", seeds=(0, 1, 2), rounds=40, eval_every=5, tasks=("femnist",), tune_rounds=10,
                        max_local_steps=5, shakespeare_roles=100, long={"rounds": 500, "eval_every": 50}),
    "paper": FedliScale("paper", seeds=(0, 1, 2, 3, 4), rounds=500, eval_every=10,
                        tasks=("femnist", "shakespeare", "cifar10", "cifar100"), tune_rounds=100,
                        long={"rounds": 500, "eval_every": 10}),
}
"""Per scale: the seeds (the paper: 5), rounds (the paper: 500), evaluation period, the tasks that run, rounds per
tuning run (the paper: 100), a cap on K, test samples (None: all), Shakespeare roles (None: every eligible one),
grid points per list (None: all; smoke: the middle one), and the long horizon of FedLi-LU's sweeps
(:func:`long_task`)."""
TASKS = ("femnist", "shakespeare")
CIFAR = ("cifar10", "cifar100")
"""CIFAR-10/100 with ResNet-18 (GroupNorm), 100 clients by Dirichlet(0.5): ``paper`` scale only, where torchvision
has the files (the paper's Dirichlet value was lost; 0.5 as for its CIFAR-10 elsewhere)."""
CLIENTS, CLIENTS_PER_ROUND, BATCH_SIZE, ALPHA = 100, 10, 32, 0.5
WEIGHTING = "samples"
"""The aggregation weights of the tables' runs: ``w_i = n_i / sum_S n_j`` over the round's clients (the authors'
code)."""
CLIENT_LRS = half_decades(-2.0, 0.0)
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": CLIENT_LRS},
    "FedProx": {"client_lr": CLIENT_LRS, "mu": [0.001, 0.01, 0.1]},
    "SCAFFOLD": {"client_lr": CLIENT_LRS},
    "FedAdam": {"client_lr": CLIENT_LRS, "server_lr": half_decades(-2.0, -1.0)},
    "FedExP": {"client_lr": CLIENT_LRS, "eps": [0.001, 0.01, 0.1]},
}
"""The baselines' grids (ours; the paper's were lost): 5 + 15 + 5 + 15 + 15 = 55 points per task."""
FEDADAM_TAU = 1e-3
SWEEP_LRS = half_decades(-2.5, 0.5)
"""The clients' SGD rates of :func:`client_rate_sweep`: half-decades from 0.00316 to 3.16."""
SERVER_RULES: dict[str, dict[str, Any]] = {
    "largest client step, cap 10": {"server_step_size": "max_client_step"},
    "largest client step, cap 1": {"server_step_size": "max_client_step", "eta_max": 1.0},
    "server step 1, cap 10": {"server_step_size": "one"},
}
"""FedLi-LS's server rules beside Table 1 (the first is Table 1's FedLi-LS): the non-convex rule ``eta_g =
max_i eta_i`` under SLS's cap of 10 and under a cap of 1 (where it can only shrink the update), and the convex rule
``eta_g = 1``."""
CONSTANTS: dict[str, dict[str, Any]] = {
    "FedLi-LS eta_max": {"method": "FedLi-LS", "name": "eta_max", "default": 10.0,
                         "values": [0.1, 1.0, 10.0, 100.0, 1000.0], "horizon": "tables"},
    "FedLi-LS c": {"method": "FedLi-LS", "name": "c", "default": 0.1,
                   "values": [0.001, 0.01, 0.1, 0.3, 0.9], "horizon": "tables"},
    "FedLi-LU eta (DFW)": {"method": "FedLi-LU", "name": "eta", "default": 0.01,
                           "values": [1e-4, 1e-3, 1e-2, 1e-1, 1.0], "horizon": "long"},
}
"""FedLi's constants swept around their defaults (SLS's cap and Armijo constant; the authors' DFW step, which with
``gamma_t`` clipped at 1 is FedLi-LU's server rate), each on the horizon where it is judged: the tables' for
FedLi-LS, the long one (:func:`long_task`) for FedLi-LU.  ``c`` must stay below 1, so its grid is not a decade
grid above the default."""
RATE_METHODS = ("FedLi-LU", "FedAvg", "FedExP")
"""The methods whose clients run SGD at a rate: the client-rate sweeps (:func:`client_rate_sweep`)."""


def task_names(scale: str) -> tuple[str, ...]:
    """The tasks that run at ``scale`` (:data:`SCALES`): the FEMNIST stand-in everywhere, Shakespeare and
    :data:`CIFAR` at ``paper``."""
    return scale_at(SCALES, scale).tasks


def scale_settings(scale: str, task: str) -> FedliScale:
    """:data:`SCALES`' entry of ``scale``, checked that ``task`` runs at it."""
    chosen = scale_at(SCALES, scale)
    check_choice("task", task, TASKS + CIFAR)
    if task not in chosen.tasks:
        raise ValueError(f"task={task!r} does not run at scale {scale!r}: tasks {list(chosen.tasks)} (Shakespeare "
                         "and CIFAR run only at 'paper')")
    return chosen


def epoch_steps(data: FederatedData) -> int:
    """One local epoch as a fixed K: ``ceil(mean client size / 32)`` (the paper's K, before a scale's cap)."""
    return math.ceil(float(data.sizes.double().mean()) / BATCH_SIZE)


def _data(task: str, scale: str, seed: int, device: str) -> FederatedData:
    """The stand-in of ``task`` at ``scale``, its partition drawn from ``seed``: Fashion-MNIST by Dirichlet(0.5) over
    100 clients for FEMNIST, the Shakespeare roles (all, or :data:`SCALES`' count) for Shakespeare; CIFAR-10/100.
    The test set is cut to the scale's ``test_samples``."""
    chosen = scale_settings(scale, task)
    if task in CIFAR:
        data = load_torchvision(task, CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
    elif task == "femnist":
        data = load_fashion_mnist(CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
        data.info.update(stands_for="FEMNIST", stand_in="Fashion-MNIST, 100 clients, Dirichlet(0.5)")
    else:
        data = load_shakespeare(chosen.shakespeare_roles, seed=seed, device=device)
    return data.test_subset(chosen.test_samples, seed)


def _model(task: str, scale: str, data: FederatedData) -> tuple[Callable[[int], nn.Module], str]:
    """``(model drawn from a seed, label)`` of ``task``: the char-LSTM for Shakespeare (the paper: an RNN),
    ResNet-18 with GroupNorm for CIFAR; for the FEMNIST stand-in fedcore's CNN at ``paper`` scale (the paper's is
    not specified) and an MLP with 64 hidden units below it."""
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    if task == "shakespeare":
        return (lambda seed: models.make("char_lstm", shape, classes, seed=seed)), "the char-LSTM for the paper's RNN"
    if task in CIFAR:
        return (lambda seed: models.make("resnet18_gn", shape, classes, seed=seed)), ""
    if scale_at(SCALES, scale) is SCALES["paper"]:
        return (lambda seed: models.make("cnn", shape, classes, seed=seed)), "Reddi et al.'s CNN for the paper's CNN"
    return (lambda seed: models.make("mlp", shape, classes, seed=seed, hidden=(64,))), \
        "a 784-64-10 MLP standing in for the CNN"


def tasks(scale: str, partition_seed: int = 0, device: str = "cpu",
          names: Sequence[str] | None = None) -> dict[str, Task]:
    """``{name: Task}`` for the tasks of ``scale`` (:func:`task_names`, or ``names``): the data, its partition drawn
    from ``partition_seed`` (and fixed), the model drawn from a seed, test accuracy with its trivial baseline (%,
    the most frequent class or next character), and the round settings: the scale's rounds and evaluation period,
    10 clients per round, one local epoch of batch 32 capped at the scale's ``max_local_steps``, the clients
    weighted by their samples (:data:`WEIGHTING`)."""
    partition_seed = check_seed("partition_seed", partition_seed)
    names = task_names(scale) if names is None else tuple(check_choice("names", name, TASKS + CIFAR)
                                                          for name in names)
    built = {}
    for name in names:
        chosen, data = scale_settings(scale, name), _data(name, scale, partition_seed, device)
        model, label = _model(name, scale, data)
        steps, cap = epoch_steps(data), chosen.max_local_steps
        settings = {"rounds": chosen.rounds, "clients_per_round": CLIENTS_PER_ROUND,
                    "local_steps": min(steps, cap) if cap else steps, "batch_size": BATCH_SIZE,
                    "eval_every": chosen.eval_every, "weighting": WEIGHTING}
        built[name] = Task(name, data, model, settings, baseline=trivial_baseline(data), model_label=label)
    return built


def long_task(task: Task, scale: str) -> Task:
    """``task`` on the long horizon of ``scale`` (:data:`SCALES`' ``long``: the paper's 500 rounds at ``small``),
    where FedLi-LU's fixed small server step has had time to act: its sweeps run there."""
    horizon = dict(scale_at(SCALES, scale).long)
    return dataclasses.replace(task, name=f"{task.name} (long)",
                               settings={**task.settings, **horizon})


def scopes(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int]) -> dict[str, Scope]:
    """Per task, what a verdict on its runs rests on: the task, the scale, its rounds, the ``seeds`` and its model
    where it is not the paper's (:class:`fedcore.experiments.claims.Scope`)."""
    scale_at(SCALES, scale)
    return {name: common.scope({name: task}, scale, seeds, task.model_label) for name, task in tasks.items()}


_BASELINES: dict[str, Callable[..., Any]] = {
    "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
    "FedProx": lambda client_lr, mu: algorithms.fedprox(client_lr, mu=mu),
    "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
    "FedAdam": lambda client_lr, server_lr: algorithms.fedadam(client_lr, server_lr=server_lr, tau=FEDADAM_TAU),
    "FedExP": lambda client_lr, eps: algorithms.fedexp(client_lr, eps=eps),
}
"""The baselines, by the keywords of :data:`GRIDS` (FedAdam with the paper's betas and tau = 1e-3)."""


def grids(scale: str, task: str | None = None) -> dict[str, dict[str, list[float]]]:
    """:data:`GRIDS` at ``scale``: at ``smoke`` the middle value of every list."""
    chosen = scale_at(SCALES, scale) if task is None else scale_settings(scale, task)
    if chosen.grid_points is None:
        return {method: {name: list(values) for name, values in grid.items()} for method, grid in GRIDS.items()}
    return {method: {name: [values[len(values) // 2]] for name, values in grid.items()}
            for method, grid in GRIDS.items()}


def score(history: History) -> float:
    """Table 1's number for a run: its test accuracy in %, averaged over its last four evaluations
    (:func:`fedcore.experiments.common.window_score`); NaN if it diverged."""
    return 100.0 * window_score(history, "test_accuracy")


def loss_score(history: History) -> float:
    """Table 2's number for a run: the clients' mean training loss averaged over the rounds of :func:`score`'s
    window; NaN if it diverged."""
    return window_score(history, "train_loss")


def final_train_loss(history: History) -> float:
    """The tuning score: the clients' mean training loss in the last round (NaN if the run diverged)."""
    return math.nan if history.diverged else history.final("train_loss")


def tune(task: Task, scale: str, seeds: Sequence[int], *, store: Store | None = None,
         progress: bool = False) -> Tuning:
    """Each baseline's grid point (:func:`grids`) with the lowest mean :func:`final_train_loss` over ``seeds``
    after the scale's ``tune_rounds`` rounds, without test evaluations
    (:func:`fedcore.experiments.common.tune`)."""
    tuning = common.tune(task, make_builders(), grids(scale, task.name), seeds, final_train_loss,
                         higher_is_better=False, store=store, progress=progress,
                         rounds=scale_settings(scale, task.name).tune_rounds, eval_every=0)
    chosen = {method: {key: float(value) for key, value in point.items()} for method, point in tuning.chosen.items()}
    return Tuning(chosen, tuning.tables)


def make_builders() -> dict[str, Callable[..., Any]]:
    """``{method: build(**hyperparameters)}`` of the tuned baselines (:data:`GRIDS`' keywords; every paper's
    experiment names its builders so); :func:`algorithms_at` binds them to the chosen points."""
    return dict(_BASELINES)


def fedli_ls(**options: Any) -> algorithms.FedLiLS:
    """Table 1's FedLi-LS: SLS's constants (first step 1, cap 10, growth over each client's own epoch) and the
    non-convex server rule, the largest client step; ``options`` replace any of them (:data:`SERVER_RULES`)."""
    return algorithms.fedli_ls(**{"server_step_size": "max_client_step", **options})


def algorithms_at(chosen: Mapping[str, Mapping[str, float]]) -> dict[str, Callable[[], Any]]:
    """``{method: build()}`` for the seven methods in Table 1's order: FedLi-LS (:func:`fedli_ls`), FedLi-LU with
    FedAvg's tuned client rate and the authors' DFW constants, the baselines at their ``chosen`` points
    (:func:`tune`)."""
    missing = [method for method in _BASELINES if method not in chosen]
    if missing:
        raise ValueError(f"chosen has no hyperparameters for {missing}: give every baseline of {list(_BASELINES)}")
    made: dict[str, Callable[[], Any]] = {
        "FedLi-LU": lambda: algorithms.fedli_lu(chosen["FedAvg"]["client_lr"]),
        "FedLi-LS": fedli_ls,
    }
    made |= {method: (lambda m=method: _BASELINES[m](**chosen[m])) for method in _BASELINES}
    return {method: made[method] for method in METHODS}


def run(task: Task, chosen: Mapping[str, Mapping[str, float]], seeds: Sequence[int], *,
        server_rules: bool = True, store: Store | None = None, progress: bool = False) -> dict[str, list[History]]:
    """``{method: [History of each seed]}``: Tables 1 and 2's runs, every method of :func:`algorithms_at` on
    ``task`` from each seed's initial model, client sampling and minibatches, and with ``server_rules`` FedLi-LS
    under the other rules of :data:`SERVER_RULES` (``"FedLi-LS (server step 1, cap 10)"`` ...).  Each run goes
    alone (:func:`fedcore.simulate`, not the batched passes of
    :func:`fedcore.experiments.common.run_seeds`, which give the same numbers but split a pass's time among its
    runs), so its ``seconds`` are its own: section 5 compares them."""
    seeds = check_seeds("seeds", seeds)
    builds = dict(algorithms_at(chosen))
    if server_rules:
        builds |= {f"FedLi-LS ({rule})": (lambda options=options: fedli_ls(**options))
                   for rule, options in list(SERVER_RULES.items())[1:]}
    starts = task.initial(seeds)
    problem = task.problem(seeds[0])
    return {method: [simulate(problem, build(), seed=seed, x0=starts[seed], store=store, progress=progress,
                              **task.settings) for seed in seeds]
            for method, build in builds.items()}


def scores(results: Mapping[str, Mapping[str, Sequence[History]]], seeds: Sequence[int],
           metric: str = "test_accuracy") -> pd.DataFrame:
    """One row per (task, method), one column per seed: :func:`score` (``"test_accuracy"``, Table 1) or
    :func:`loss_score` (``"train_loss"``, Table 2) of each run of ``results`` (``{task: run(...)}``)."""
    check_choice("metric", metric, ("test_accuracy", "train_loss"))
    return common.score_table(results, score if metric == "test_accuracy" else loss_score, seeds)


def table_cells(table: pd.DataFrame, digits: int = 2) -> pd.DataFrame:
    """Tasks by methods, each cell ``"mean ± sd"`` over the seeds of :func:`scores`' ``table`` (the layout of the
    paper's Tables 1 and 2)."""
    return common.mean_sd(table, digits=digits).T


def means(table: pd.DataFrame) -> pd.DataFrame:
    """Tasks by methods: the mean over the seeds of :func:`scores`' ``table`` (NaN where a seed diverged)."""
    return table.mean(axis=1, skipna=False).unstack("method")[list(dict.fromkeys(
        table.index.get_level_values("method")))]


def line_search_cost(runs: Mapping[str, Sequence[History]]) -> pd.DataFrame:
    """Per method of ``runs`` (``{method: [History of each seed]}``, :func:`run`'s): the seconds per round (the median
    over the seeds of each run's mean), its ratio to FedAvg's (the median over the seeds of the per-seed ratios: the
    machine's noise cancels within a seed's pair), and for FedLi-LS the line search's loss evaluations per local
    step and the clients' step sizes (each round's mean, min, max over the clients, averaged over rounds and
    seeds)."""
    if "FedAvg" not in runs:
        raise ValueError(f"runs needs FedAvg's runs to compare with; it has {list(runs)}")
    base = [float(h.frame["seconds"].mean()) for h in runs["FedAvg"]]
    rows = {}
    for method, histories in runs.items():
        if len(histories) != len(base):
            raise ValueError(f"{method} has {len(histories)} runs, FedAvg {len(base)}: one per seed each")
        seconds = [float(h.frame["seconds"].mean()) for h in histories]
        row = {"seconds per round": float(np.median(seconds)),
               "relative to FedAvg": float(np.median([s / b for s, b in zip(seconds, base)]))}
        for column, name in (("loss_evaluations_per_step", "loss evaluations per step"),
                             ("client_step_mean", "client step: mean"), ("client_step_min", "min"),
                             ("client_step_max", "max")):
            if column in histories[0].frame:
                row[name] = float(np.mean([h.frame[column].mean() for h in histories]))
        rows[method] = row
    return pd.DataFrame(rows).T


def server_steps(results: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Per task: the server steps the two FedLi methods computed, over all rounds of all seeds.  FedLi-LS's
    ``eta_g`` (the largest client step: the share of the clients' mean move the server takes) and FedLi-LU's
    Deep-Frank-Wolfe ``gamma_t``: at 1 it is clipped, and the server's step is then ``eta`` times the
    pseudo-gradient plus momentum, a fixed step, not a computed one."""
    rows = {}
    for task, runs in results.items():
        eta_g = pd.concat([h.frame["eta_g"].dropna() for h in runs["FedLi-LS"]])
        gamma = pd.concat([h.frame["gamma"].dropna() for h in runs["FedLi-LU"]])
        rows[task] = {"FedLi-LS eta_g: mean": eta_g.mean(), "min": eta_g.min(), "max": eta_g.max(),
                      "rounds above 1": int((eta_g > 1.0).sum()), "FedLi-LU: rounds (all seeds)": len(gamma),
                      "rounds with gamma_t = 1": int((gamma >= 1.0).sum()), "smallest gamma_t": gamma.min()}
    counts = ["rounds above 1", "FedLi-LU: rounds (all seeds)", "rounds with gamma_t = 1"]
    return pd.DataFrame(rows).T.astype({column: int for column in counts})


def server_rules_table(runs: Mapping[str, Sequence[History]]) -> pd.DataFrame:
    """FedLi-LS under each rule of :data:`SERVER_RULES` (rows): its :func:`score` (mean ± sd over the seeds), the
    mean server step, and its paired difference from Table 1's rule (± 2 standard errors, and whether it lies
    beyond the noise: :func:`fedcore.experiments.claims.compare`)."""
    first = list(SERVER_RULES)[0]
    reference = [score(h) for h in runs["FedLi-LS"]]
    rows = {}
    for rule in SERVER_RULES:
        histories = runs["FedLi-LS" if rule == first else f"FedLi-LS ({rule})"]
        values = [score(h) for h in histories]
        outcome, text = compare(values, reference)
        rows[rule] = {"accuracy (%, mean ± sd)": common.mean_sd_cell(values),
                      "mean server step eta_g": round(float(np.mean([h.frame["eta_g"].mean() for h in histories])), 3),
                      f"minus '{first}' (points, mean ± 2 SE)": "-" if rule == first else f"{text} ({outcome})"}
    return pd.DataFrame(rows).T.rename_axis("FedLi-LS server rule")


def on_grid_edge(chosen: Mapping[str, Mapping[str, float]],
                 grids: Mapping[str, Mapping[str, list[float]]]) -> list[str]:
    """The tuned values that sit on an edge of their grid (the best might lie beyond it): ``"FedAvg client_lr =
    1 (largest)"``; grids of one value are left out."""
    edges = []
    for method, names in common.on_edge(chosen, grids).items():
        for name in names:
            value = chosen[method][name]
            word = "largest" if math.isclose(value, max(grids[method][name])) else "smallest"
            edges.append(f"{method} {name} = {value:.3g} ({word})")
    return edges


def client_rate_sweep(task: Task, chosen: Mapping[str, Mapping[str, float]], seeds: Sequence[int],
                      rates: Sequence[float] = SWEEP_LRS, *, store: Store | None = None,
                      progress: bool = False) -> pd.DataFrame:
    """How much FedLi-LU still depends on a learning rate: :func:`score` at every clients' SGD rate of ``rates``
    (rows) for the methods whose clients run SGD (:data:`RATE_METHODS`: FedLi-LU, whose server step is computed;
    FedAvg; FedExP at its ``chosen`` eps), from every seed (columns: method, seed), on ``task``'s round settings
    (:func:`long_task` for the long horizon); a diverged run scores NaN."""
    seeds = check_seeds("seeds", seeds)
    builds = {"FedLi-LU": algorithms.fedli_lu, "FedAvg": _BASELINES["FedAvg"],
              "FedExP": lambda client_lr: _BASELINES["FedExP"](client_lr, chosen["FedExP"]["eps"])}
    columns = {}
    for method in RATE_METHODS:
        for seed, column in common.scores_by_seed(task, builds[method], "client_lr", rates, seeds, score,
                                                  store=store, progress=progress).items():
            columns[(method, seed)] = column
    return common.by_method_seed(columns, "client SGD rate")


def constant_sweep(task: Task, constant: str, seeds: Sequence[int], client_lr: float | None = None, *,
                   store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """:func:`score` of FedLi at every value of one of its ``constant`` (a key of :data:`CONSTANTS`; rows), the
    others at their defaults, from every seed (columns: seed), on ``task``'s round settings.  FedLi-LS runs as in
    Table 1 (:func:`fedli_ls`); FedLi-LU's clients at ``client_lr`` (required for FedLi-LU's constants)."""
    check_choice("constant", constant, tuple(CONSTANTS))
    entry = CONSTANTS[constant]
    if entry["method"] == "FedLi-LU":
        if client_lr is None:
            raise ValueError(f"constant={constant!r} needs client_lr, the rate of FedLi-LU's SGD clients")

        def build(**value: float) -> Any:
            return algorithms.fedli_lu(client_lr, **value)
    else:
        build = fedli_ls
    swept = common.scores_by_seed(task, build, entry["name"], entry["values"],
                                  check_seeds("seeds", seeds), score, store=store, progress=progress)
    return pd.DataFrame(swept).rename_axis(entry["name"]).rename_axis("seed", axis=1)


best_value = common.best_value
"""The value with the best mean over the seeds (:func:`fedcore.experiments.common.best_value`)."""


def at_best(tables: Mapping[str, pd.DataFrame], reference: str) -> pd.DataFrame:
    """Each setting of ``tables`` (``{label: table}``, rows the swept values, one column per seed) at its best value:
    the value, the score (mean ± sd over the seeds) and its paired difference from ``reference``'s (± 2 standard
    errors, beyond the noise or not: :func:`fedcore.experiments.claims.compare`)."""
    if reference not in tables:
        raise ValueError(f"reference={reference!r} is not one of the tables {list(tables)}")
    best = {label: table.loc[best_value(table)] for label, table in tables.items()}
    rows = {}
    for label, scores in best.items():
        outcome, text = compare(list(scores), list(best[reference]))
        rows[label] = {"at its best value": best_value(tables[label]), "accuracy (%, mean ± sd)":
                       common.mean_sd_cell(scores), f"minus {reference} (points, mean ± 2 SE)":
                       "-" if label == reference else f"{text} ({outcome})"}
    return pd.DataFrame(rows).T


def span_table(tables: Mapping[str, pd.DataFrame], around: Mapping[str, float],
               within: float = NEAR_BEST) -> pd.DataFrame:
    """Per setting (``{setting: table}``, a table with one column per seed; rows the values): the value ``around``
    which its span is measured (a default, a tuned value, or the best), the best value (mean over seeds) and its
    score, the score at ``around``, and :func:`fedcore.experiments.common.span_width` (the decades of the contiguous
    values around it within ``within`` points of the best): per seed, their mean (what the claims compare, paired
    over seeds) and on the mean scores."""
    rows = {}
    for setting, table in tables.items():
        mean = table.mean(axis=1, skipna=False)
        at = around[setting]
        widths = [span_width(table[seed], within, at) for seed in table]
        rows[setting] = {"around": at, "best value": mean.idxmax(),
                         "best (%)": round(mean.max(), 2), "at 'around' (%)": round(mean[at], 2),
                         "width per seed (decades)": ", ".join(f"{w:.2g}" for w in widths),
                         "mean width (decades)": round(float(np.mean(widths)), 2),
                         "width on the mean scores (decades)": round(span_width(mean, within, at), 2)}
    return pd.DataFrame(rows).T
