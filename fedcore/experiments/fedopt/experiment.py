"""Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``): the experiments, on the
common layer (:mod:`fedcore.experiments.common`).

The paper's own numbers, settings and claims are in :mod:`fedcore.experiments.fedopt.paper`.  This module holds
what we run: the reachable tasks and their stand-ins (:data:`STAND_INS`), built by :func:`tasks` at a
:data:`SCALES` entry as :class:`~fedcore.experiments.common.Task` (data with its partition fixed, the model drawn
from a seed, the round settings); the five methods with the paper's ``beta1 = 0.9, beta2 = 0.99``
(:func:`make_builders`, with the ExpDecay client schedule of Table 11) and :func:`run`, their Table 1 runs over
seeds; four readings of "FedAdam" (:func:`variant_builders`); centralized training as a one-client federation
(:func:`centralized_task`, :func:`centralized_algorithm`); the learning-rate grids' builders
(:func:`grid_builders`); and the results in Table 1's units, per seed (:func:`score_table`), beside the paper's
(:func:`table1_beside`), paired against FedAvg (:func:`paired_table`) and as rounds to a target
(:func:`convergence_table`).

Choices the paper leaves to us (each also said where it is used):

- **Fashion-MNIST stands in for EMNIST** (unreachable here): 500 clients of 120 images holding exactly 2
  classes each (``shards``, McMahan et al. 2017).  Fashion-MNIST has no writers, so heterogeneity must be
  made; a 2-class label split is the common reproducible one and makes client drift, what a server
  optimizer is for, large.  It is harsher than EMNIST's writers (who differ in style and hold most classes):
  expect less than the paper's 85%.  Many small clients as in the paper: 120 images = 6 steps at B = 20.
- **Shakespeare as TFF cuts it for the paper**: each role's text in non-overlapping 80-character chunks, every
  next character predicted (``load_shakespeare(targets="sequence")``), so one epoch is about the paper's step
  count (16 steps of 4 chunks for a mean role of the 100 kept at ``small``).
- **One local epoch -> a fixed K** (fedcore runs K steps on every client): ``K = ceil(mean client size / B)``
  (the cap ``max_local_steps`` is the ``smoke`` scale's only).
- **Our models at the light scales** (:data:`LIGHT_MODELS`), labelled as ours: the paper's cost too much on
  2 CPU cores, or do not learn within the rounds.
- **One score**: a run's metric averaged over its last 4 evaluations on the full test set
  (:func:`score`); evaluated every 25 rounds, the paper's last 100 rounds.
- **CIFAR** (paper scale, torchvision files): 500 equal clients, as TFF's: LDA alpha 0.1 for CIFAR-10
  (``lda``), two-level Pachinko for CIFAR-100 (``pachinko``, coarse 0.1, fine 10); 24x24 crops as TFF's
  (``crop=24``: random crops and flips of the training images, drawn once rather than every epoch; central
  crops of the test images).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from torch import nn

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_positive, check_seed, check_seeds
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.data.sources import cifar100_coarse
from fedcore.experiments import common
from fedcore.experiments.claims import CONFIRMED, CONTRADICTED, WITHIN_NOISE, Scope, compare, trivial_baseline
from fedcore.experiments.common import ROUND_SETTINGS, Scale, Task, scale_at
from fedcore.experiments.fedopt.paper import (
    ADAPTIVE,
    BEST_HYPERPARAMETERS,
    CENTRALIZED_NAMES,
    LOWER_IS_BETTER,
    METHODS,
    PAPER_TASKS,
    TABLE1,
    TABLE1_METRIC,
    UNREACHABLE,
    VARIANTS,
    hyperparameters,
)
from fedcore.results import History
from fedcore.schedules import exp_decay

if TYPE_CHECKING:
    from fedcore.store import Store

@dataclass(frozen=True)
class FedoptScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` with the clients per round (None: the paper's), the Shakespeare
    roles (None: all 705), the models (``"light"``: :data:`LIGHT_MODELS`; ``"paper"``: the paper's) and ExpDecay's
    schedule (:func:`decay_every`)."""

    clients_per_round: int | None = None
    shakespeare_roles: int | None = None
    models: str = "light"
    decay: str = "once_late"


SCALES: dict[str, FedoptScale] = {
    "smoke": FedoptScale("smoke", seeds=(0, 1, 2), rounds=2, eval_every=1,
                         tasks=("shakespeare", "emnist_cr", "emnist_ae"), max_local_steps=2, test_samples=200,
                         clients_per_round=2, shakespeare_roles=20),
    "small": FedoptScale("small", seeds=(0, 1, 2), rounds=300, eval_every=25, tasks=("emnist_cr", "emnist_ae"),
                         clients_per_round=10, shakespeare_roles=100),
    "medium": FedoptScale("medium", seeds=(0, 1, 2), rounds=300, eval_every=25,
                          tasks=("shakespeare", "emnist_cr", "emnist_ae"), clients_per_round=10, shakespeare_roles=100),
    "paper": FedoptScale("paper", seeds=(0, 1, 2), rounds=None, eval_every=25,
                         tasks=("shakespeare", "emnist_cr", "emnist_ae", "cifar10", "cifar100"), models="paper",
                         decay="paper"),
}
"""Per scale: the seeds of every run, rounds (None: the paper's per task), evaluation period
(a run's score is the mean of its last :data:`~fedcore.experiments.common.SCORE_EVALUATIONS` = 4 evaluations:
every 25 rounds, the last 100 rounds, the paper's window), clients per round (None: the paper's), cap on K
(None: one full epoch), test samples kept (None: all), Shakespeare roles (None: all 705), the models
(``"light"``: :data:`LIGHT_MODELS`, ours; ``"paper"``: the paper's), ExpDecay's schedule (:func:`decay_every`)
and the Table 1 tasks run (:func:`task_names`).  ``medium`` adds Shakespeare to ``small``: its char-LSTM over
one epoch of 16 steps costs about 0.8 s a round on 2 CPU cores (measured), about 57 minutes for 3 seeds of 5
methods over 300 rounds, more than ``small``'s budget; ``paper`` runs the paper's models and settings."""
LIGHT_MODELS: dict[str, tuple[str, dict[str, Any], str]] = {
    "emnist_cr": ("mlp", {"hidden": (200,)}, "an MLP 784-200-10"),
    "emnist_ae": ("autoencoder", {"hidden": (), "bottleneck": 30}, "a one-layer autoencoder 784-30-784"),
    "shakespeare": ("char_lstm", {"hidden_size": 128, "num_layers": 1, "all_steps": True},
                    "a char-LSTM of one layer of 128"),
}
"""The models of the ``light`` scales (``smoke``, ``small``, ``medium``), ours: ``(fedcore model, options,
label)``.  The paper's EMNIST CNN costs about 55 times the MLP's time per round on a CPU (0.6 s against 0.01 s per
round of 5 clients x 6 steps, measured), its deep sigmoid autoencoder does not beat the mean image within 30
rounds (the one-layer autoencoder, a linear code of 30 and a sigmoid output, learns within the budget), and its
two-layer char-LSTM of 256 costs about 7 times the one-layer LSTM of 128."""
PAPER_MODEL_OPTIONS: dict[str, dict[str, Any]] = {"shakespeare": {"all_steps": True}}
"""Options of the paper's models: the char-LSTM predicts every next character (TFF's targets)."""

FASHION_CLIENTS, FASHION_PARTITION = 500, {"partition": "shards", "classes_per_client": 2}
CIFAR_CROP = 24
"""Reddi et al.'s CIFAR inputs: 24x24 crops of the 32x32 images (``fedcore.data.sources.crop_images``)."""
STAND_INS: dict[str, dict[str, Any]] = {
    "shakespeare": {"data": "Shakespeare, one client per (play, role), TFF's 80-character chunks (load_shakespeare)",
                    "model": "char_lstm", "metric": "test_accuracy"},
    "emnist_cr": {"data": "Fashion-MNIST, 500 clients x 2 classes (shards)", "model": "cnn",
                  "metric": "test_accuracy"},
    "emnist_ae": {"data": "Fashion-MNIST, 500 clients x 2 classes, targets = inputs", "model": "autoencoder",
                  "metric": "test_loss"},
    "cifar10": {"data": "CIFAR-10, 500 clients, LDA alpha 0.1", "model": "resnet18_gn", "metric": "test_accuracy",
                "paper_only": True},
    "cifar100": {"data": "CIFAR-100, 500 clients, Pachinko (coarse 0.1, fine 10)", "model": "resnet18_gn",
                 "metric": "test_accuracy", "paper_only": True},
}
"""What we run for each paper task: the data, fedcore's model (the paper's, :data:`~fedcore.experiments.fedopt.
paper.PAPER_TASKS`) and the History column of the paper's metric (``test_loss`` of the autoencoder is half the
MSE: :func:`to_paper_units`)."""
REACHABLE = ("shakespeare", "emnist_cr", "emnist_ae")
"""The tasks that run at every scale on this machine (CIFAR needs torchvision files: paper scale only)."""
CIFAR = ("cifar10", "cifar100")


NOT_RUN: dict[str, str] = {
    "shakespeare": "runs at SCALE=medium: its char-LSTM over one epoch (16 steps of 4 chunks of 80 characters) "
                   "costs about 0.8 s a round on 2 CPU cores, about 57 minutes for 3 seeds of 5 methods over 300 "
                   "rounds (measured per round)",
    "cifar10": "needs the CIFAR files (torchvision) and a GPU: SCALE=paper",
    "cifar100": "needs the CIFAR files (torchvision) and a GPU: SCALE=paper",
}
"""Why a reachable task of Table 1 is not run at a scale that leaves it out (:func:`not_run`)."""


def not_run(scale: str) -> dict[str, str]:
    """``{paper task name: reason}`` for the tasks of :data:`STAND_INS` that ``scale`` leaves out, and the
    paper's rows that never run here (:data:`~fedcore.experiments.fedopt.paper.UNREACHABLE`)."""
    run_here = task_names(scale)
    left = {PAPER_TASKS[task]["name"]: NOT_RUN[task] for task in STAND_INS if task not in run_here}
    return left | {PAPER_TASKS[task]["name"]: reason for task, reason in UNREACHABLE.items()}


def task_names(scale: str) -> tuple[str, ...]:
    """The Table 1 tasks run at ``scale`` (:data:`SCALES`): at ``small`` the two Fashion-MNIST stand-ins
    (Shakespeare's row needs ``medium``), at ``smoke`` and ``medium`` Shakespeare too, at ``paper`` the two CIFAR
    tasks as well (ResNet-18 with GroupNorm; torchvision's files in ``$FEDCORE_DATA`` or ``data/raw``)."""
    return scale_at(SCALES, scale).tasks
EXP_DECAY_FACTOR, EXP_DECAY_EVERY = 0.1, 500


def as_autoencoder(data: FederatedData) -> FederatedData:
    """The same clients with ``targets = inputs`` flattened (``[n, 784]``) and ``num_classes=None`` (loss: mse).

    Inputs normalized by a loader (``info['mean']``, ``info['std']``) are mapped back to pixels in [0, 1]
    first, as EMNIST is in TFF: the autoencoder's sigmoid output can only reach that range."""
    inputs, test_inputs = data.inputs, data.test_inputs
    if "mean" in data.info and "std" in data.info:
        mean = torch.tensor(data.info["mean"], device=data.device).view(1, -1, 1, 1)
        std = torch.tensor(data.info["std"], device=data.device).view(1, -1, 1, 1)
        inputs, test_inputs = inputs * std + mean, test_inputs * std + mean
    info = {**data.info, "autoencoder": True, "pixels": "[0, 1]"}
    return FederatedData(inputs, inputs.flatten(1), data.sizes.clone(), test_inputs, test_inputs.flatten(1), None,
                         f"{data.name} (autoencoder)", info)


def _reachable(task: str, scale: str) -> dict[str, Any]:
    """``scale``'s settings, once ``task`` is known to run there (CIFAR: paper scale only)."""
    settings = scale_at(SCALES, scale)
    if STAND_INS[check_choice("task", task, STAND_INS)].get("paper_only") and scale != "paper":
        raise ValueError(f"task={task!r} runs only at scale 'paper' (ResNet-18 on CIFAR, torchvision files needed); "
                         f"at {scale!r} run one of {list(REACHABLE)}")
    return settings


def _load(task: str, scale: str, partition_seed: int, device: str) -> FederatedData:
    """The federated data of ``task``'s stand-in (:data:`STAND_INS`) at ``scale``, the partition and the kept
    test samples drawn from ``partition_seed``."""
    settings = _reachable(task, scale)
    if task == "shakespeare":
        data = load_shakespeare(settings.shakespeare_roles, seed=partition_seed, device=device,
                                targets="sequence")
    elif task == "cifar10":
        data = load_torchvision(task, FASHION_CLIENTS, "lda", partition_seed, device=device, crop=CIFAR_CROP,
                                alpha=0.1)
    elif task == "cifar100":
        data = load_torchvision(task, FASHION_CLIENTS, "pachinko", partition_seed, device=device, crop=CIFAR_CROP,
                                coarse=cifar100_coarse(), alpha=0.1, beta=10.0)
    else:
        data = load_fashion_mnist(FASHION_CLIENTS, seed=partition_seed, device=device, **FASHION_PARTITION)
        data = as_autoencoder(data) if task == "emnist_ae" else data
    data.info.update(stands_for=PAPER_TASKS[task]["name"], stand_in=STAND_INS[task]["data"])
    return data.test_subset(settings.test_samples, partition_seed)


def local_steps(data: FederatedData, batch_size: int, cap: int | None = None) -> int:
    """One local epoch as fedcore's fixed K: ``ceil(mean client size / batch_size)``, at most ``cap``."""
    steps = math.ceil(float(data.sizes.double().mean()) / check_int("batch_size", batch_size))
    return steps if cap is None else min(steps, check_int("cap", cap))


def round_settings(task: str, data: FederatedData, scale: str) -> dict[str, Any]:
    """``task``'s round settings (:data:`~fedcore.experiments.common.ROUND_SETTINGS`) at ``scale``: the scale's
    rounds and clients per round (the paper's at paper scale), the paper's batch size, K from :func:`local_steps`
    (one local epoch; capped at ``smoke``), clients weighted by their samples (the paper's Algorithm 1 writes
    ``1/|S|``; the same for the Fashion-MNIST clients, who hold 120 images each)."""
    settings = scale_at(SCALES, scale)
    paper = PAPER_TASKS[check_choice("task", task, STAND_INS)]
    return dict(rounds=settings.rounds or paper["rounds"],
                clients_per_round=settings.clients_per_round or paper["clients_per_round"],
                local_steps=local_steps(data, paper["batch_size"], settings.max_local_steps),
                batch_size=paper["batch_size"], eval_every=settings.eval_every, weighting="samples")


def _model(name: str, data: FederatedData, options: Mapping[str, Any]) -> Callable[[int], nn.Module]:
    """fedcore's model ``name`` (with ``options``) for ``data``'s inputs and classes, its initial weights drawn
    from a seed."""
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    return lambda seed: models.make(name, shape, classes, seed=check_seed("seed", seed), **options)


def model_of(task: str, scale: str) -> tuple[str, dict[str, Any], str]:
    """``(fedcore model, options, label)`` that ``task`` trains at ``scale``: the paper's (:data:`STAND_INS`) or,
    at the ``light`` scales, ours (:data:`LIGHT_MODELS`), labelled as such."""
    if _reachable(task, scale).models == "light":
        name, options, label = LIGHT_MODELS[task]
        return name, dict(options), f"ours: {label}; the paper's at paper scale"
    return STAND_INS[task]["model"], dict(PAPER_MODEL_OPTIONS.get(task, {})), \
        f"the paper's model ({PAPER_TASKS[task]['model']})"


def tasks(scale: str, partition_seed: int = 0, device: str = "cpu",
          names: Sequence[str] | None = None) -> dict[str, Task]:
    """``{name: Task}`` for the paper's tasks ``names`` (:data:`STAND_INS`; CIFAR at paper scale only; default
    :func:`task_names` of ``scale``) at ``scale`` (:data:`SCALES`): the stand-in's data (the partition and the
    kept test samples drawn from ``partition_seed``), the model of :func:`model_of` drawn from a seed (the
    autoencoder with the mse loss), :func:`round_settings`, the paper's metric (``test_loss`` for the autoencoder:
    lower is better) and, as ``baseline``, what a model that learned nothing scores in Table 1's units
    (:func:`fedcore.experiments.claims.trivial_baseline`: the most frequent class or character in %, the mean
    image's MSE x1000), the unit of :func:`score_table`."""
    check_seed("partition_seed", partition_seed)
    names = task_names(scale) if names is None else names
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError(f"names={names!r} must be a non-empty list of tasks among {list(STAND_INS)}")
    built = {}
    for name in names:
        model, options, label = model_of(name, scale)
        data = _load(name, scale, partition_seed, device)
        if model not in models.MODELS:
            raise ValueError(f"model {model!r} of task {name!r} is not in fedcore.models.MODELS {list(models.MODELS)}")
        metric = STAND_INS[name]["metric"]
        built[name] = Task(name, data, _model(model, data, options), round_settings(name, data, scale),
                           baseline=trivial_baseline(data), metric=metric, higher_is_better=name not in LOWER_IS_BETTER,
                           model_label=label, info={"stands_for": PAPER_TASKS[name]["name"],
                                                    "stand_in": STAND_INS[name]["data"],
                                                    "decay": scale_at(SCALES, scale).decay})
    return built


def scope(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int], model: str = "") -> Scope:
    """The :class:`~fedcore.experiments.claims.Scope` of runs on ``tasks`` (``{name: Task}``) at ``scale`` from
    ``seeds``: each task's rounds, and ``model`` where it is not the paper's (by default, at the light scales, the
    model of :data:`LIGHT_MODELS` each task trains, ``{"emnist_cr": "ours, an MLP 784-200-10", ...}``, narrowed
    with the tasks a claim judged)."""
    models: str | dict[str, str] = model
    if not model and scale_at(SCALES, scale).models == "light":
        models = {name: f"ours, {LIGHT_MODELS[name][2]}" for name in tasks if name in LIGHT_MODELS}
    return common.scope(tasks, scale, seeds, models)


def run(tasks: Mapping[str, Task], seeds: Sequence[int], *, decay: bool = False, store: Store | None = None,
        progress: bool = False) -> dict[str, dict[str, list[History]]]:
    """``{task: {method: [History of each seed]}}``: the five methods of :func:`make_builders` at each task's best
    values (with ``decay``, the client rate's ExpDecay: :func:`decay_every`) on every task of ``tasks``, one run
    per seed (the seed draws the initial model, client sampling and minibatches), with the task's round settings,
    through :func:`~fedcore.experiments.common.run_seeds` (the seeds of a method share a pass)."""
    if not isinstance(tasks, Mapping) or not all(isinstance(task, Task) for task in tasks.values()):
        raise TypeError(f"tasks={tasks!r} must be a {{name: Task}}, as tasks() returns")
    seeds = check_seeds("seeds", seeds)
    results = {}
    for name, task in tasks.items():
        every = decay_every(name, task.settings["rounds"], task.info.get("decay", "paper")) if decay else None
        algorithms = {method: build() for method, build in make_builders(name, decay=every).items()}
        results[name] = common.run_seeds(task, algorithms, seeds, store=store, progress=progress)
    return results


def to_paper_units(task: str, value: float) -> float:
    """A :func:`last_rounds_average` in Table 1's unit: % accuracy, or MSE x1000 for the autoencoder
    (fedcore's ``mse`` is half the mean squared error, so MSE = 2 ``test_loss``)."""
    return 2000.0 * value if task == "emnist_ae" else 100.0 * value


def from_paper_units(task: str, value: float) -> float:
    """The inverse of :func:`to_paper_units`: a Table 1 number in the History column's unit (a fraction, or half
    the MSE for the autoencoder), e.g. to draw a trivial baseline on the curves."""
    return value / 2000.0 if task == "emnist_ae" else value / 100.0


def settings_beside(tasks: Mapping[str, Task]) -> pd.DataFrame:
    """Per task, the paper's round settings beside ours: clients per round, rounds, local steps K (the paper: one
    local epoch of each client's data) and the client batch B; and the model we train."""
    if not isinstance(tasks, Mapping) or not all(isinstance(t, Task) for t in tasks.values()):
        raise TypeError(f"tasks={tasks!r} must be a {{name: Task}}, as tasks() returns")
    rows = {}
    for name, task in tasks.items():
        spec = PAPER_TASKS[name]
        rows[PAPER_TASKS[name]["name"]] = {
            ("paper", "clients per round"): spec["clients_per_round"], ("ours", "clients per round"):
                task.settings["clients_per_round"],
            ("paper", "rounds"): spec["rounds"], ("ours", "rounds"): task.settings["rounds"],
            ("paper", "K"): "1 epoch", ("ours", "K"): task.settings["local_steps"],
            ("paper", "B"): spec["batch_size"], ("ours", "B"): task.settings["batch_size"],
            ("ours", "model"): task.model_label}
    return pd.DataFrame(rows).T


def hyperparameter_table(tasks: Sequence[str]) -> pd.DataFrame:
    """Per (task, method), the learning rates and tau every Table 1 run uses (the paper's best values,
    :data:`~fedcore.experiments.fedopt.paper.BEST_HYPERPARAMETERS`), each as ``"10^x = value"``; empty where a
    method has none (FedAvg and FedAvgM: no tau)."""
    rows = {}
    for task in tasks:
        for method in METHODS:
            exponents = BEST_HYPERPARAMETERS[check_choice("task", task, BEST_HYPERPARAMETERS)][method]
            rows[(PAPER_TASKS[task]["name"], method)] = {
                name: f"10^{x:g} = {10.0 ** x:.3g}" for name, x in zip(("client lr", "server lr", "tau"), exponents)}
    return pd.DataFrame(rows).T.reindex(columns=["client lr", "server lr", "tau"]).fillna("")


DECAY_SCHEDULES = ("paper", "once_late")


def decay_every(task: str, rounds: int, schedule: str = "paper") -> int:
    """ExpDecay's period for a run of ``rounds``: ``"paper"``, every 500 of the paper's rounds (a third of EMNIST
    CR's 1500), the same fraction of a shorter run; ``"once_late"``, a single cut at two thirds of the run (the
    paper's second cut: a short run is still climbing at a third, where a cut only slows it)."""
    paper = PAPER_TASKS[check_choice("task", task, PAPER_TASKS)]["rounds"]
    rounds = check_int("rounds", rounds)
    if check_choice("schedule", schedule, DECAY_SCHEDULES) == "once_late":
        return max(1, round(2 * rounds / 3))
    return max(1, round(rounds * EXP_DECAY_EVERY / paper))


Builder = Callable[..., Any]
_RULES = {"FedAdagrad": algorithms.fedadagrad, "FedAdam": algorithms.fedadam, "FedYogi": algorithms.fedyogi}


def make_builders(task: str, decay: int | None = None) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr[, tau])}`` for the five methods, the defaults ``task``'s best
    values (:func:`hyperparameters`), the paper's ``beta1 = 0.9, beta2 = 0.99`` (FedAvgM ``beta = 0.9``)
    and Algorithm 2's rule.  With ``decay`` (rounds: :func:`decay_every`) the client lr is ExpDecay,
    ``x0.1`` every ``decay`` rounds (Table 11), and the names end in ``+ExpDecay``."""
    best = {method: hyperparameters(check_choice("task", task, BEST_HYPERPARAMETERS), method) for method in METHODS}
    every = None if decay is None else check_int("decay", decay)

    def named(algorithm: Any) -> Any:
        return algorithm if every is None else replace(algorithm, name=algorithm.name + "+ExpDecay")

    def lr(client_lr: float) -> float | exp_decay:
        return client_lr if every is None else exp_decay(client_lr, EXP_DECAY_FACTOR, every)

    def adaptive(method: str, h: dict[str, float]) -> Builder:
        return lambda client_lr=h["client_lr"], server_lr=h["server_lr"], tau=h["tau"]: named(
            _RULES[method](lr(client_lr), server_lr=server_lr, tau=tau, **VARIANTS["paper"]["methods"][method]))

    m, a = best["FedAvgM"], best["FedAvg"]
    return {**{method: adaptive(method, best[method]) for method in ADAPTIVE},
            "FedAvgM": lambda client_lr=m["client_lr"], server_lr=m["server_lr"]: named(
                algorithms.fedavgm(lr(client_lr), server_lr=server_lr, beta=0.9)),
            "FedAvg": lambda client_lr=a["client_lr"], server_lr=a["server_lr"]: named(
                algorithms.fedavg(lr(client_lr), server_lr=server_lr))}


# ------------------------------------------------------------------ "FedAdam is not one optimizer"


def grid_builders(tau: float = 1e-3) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr)}`` for the learning-rate grids (Figures 2 and 6): the paper's
    rule and betas, ``tau`` fixed (the figures' 1e-3) for the adaptive methods."""
    check_positive("tau", tau)
    builders = make_builders("emnist_cr")  # the defaults are never used: both rates come from the grid

    def grid_builder(method: str) -> Builder:
        build = builders[method]
        if method in ADAPTIVE:
            return lambda client_lr, server_lr: build(client_lr, server_lr, tau=tau)
        return lambda client_lr, server_lr: build(client_lr, server_lr)

    return {method: grid_builder(method) for method in METHODS}


CENTRALIZED_LRS = {"FedAdagrad": 0.01, "FedAdam": 0.001, "FedYogi": 0.001, "FedAvgM": 0.01, "FedAvg": 0.1}
"""Centralized learning rates (Table 11's are not reported: ours, the usual defaults for a CNN; SGD with
momentum 0.9 at 0.01 moves like SGD at 0.1)."""


def centralized_rounds(options: Mapping[str, Any]) -> int:
    """Centralized steps that see as many samples as the federated run of ``options``: ``rounds x local_steps``
    minibatches of ``clients_per_round x batch_size`` samples (:func:`centralized_task`)."""
    return options["rounds"] * options["local_steps"]


def variant_builders(task: str, variant: str) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr, tau)}`` for ``variant``'s methods, with ``task``'s best
    values as defaults (the same hyperparameters for every variant); names ``FedAdam [keras]``."""
    spec = VARIANTS[check_choice("variant", variant, VARIANTS)]

    def build(method: str, opts: dict[str, Any]) -> Builder:
        h = hyperparameters(task, method)
        return lambda client_lr=h["client_lr"], server_lr=h["server_lr"], tau=h["tau"]: replace(
            _RULES[method](client_lr, server_lr=server_lr, tau=tau, **opts), name=f"{method} [{variant}]")

    return {method: build(method, opts) for method, opts in spec["methods"].items()}


def variants_table() -> pd.DataFrame:
    """One row per (variant, method): beta1, beta2, v_{-1}, where tau sits, bias correction, and the source."""
    rows = []
    for variant, spec in VARIANTS.items():
        for method, o in spec["methods"].items():
            rows.append({"variant": variant, "method": method, "beta1 (momentum)": o.get("beta1", 0.9),
                         "beta2": "-" if method == "FedAdagrad" else o.get("beta2", 0.99),
                         "v_{-1}": "0" if o.get("initial_v") == "zero" else "tau^2",
                         "denominator": "sqrt(v + tau)" if o.get("tau_inside_sqrt") else "sqrt(v) + tau",
                         "bias correction": {"keras": "sqrt(1-b2^t)/(1-b1^t)", "flower": "same, t from 2"}.get(
                             o.get("bias_correction"), "none"),
                         "source": spec["source"]})
    return pd.DataFrame(rows).set_index(["variant", "method"])


# ------------------------------------------------------------------ centralized training

def centralized(data: FederatedData) -> FederatedData:
    """All training samples held by one client (Table 11's centralized rows)."""
    return FederatedData(data.inputs, data.targets, data.sizes.sum().view(1), data.test_inputs, data.test_targets,
                         data.num_classes, f"{data.name} (centralized)", dict(data.info))


CENTRALIZED_RULES = {
    "FedAdagrad": "Algorithm 2's Adagrad rule on one client (momentum 0.9, v_-1 = tau^2, tau = 1e-3), not "
                  "torch.optim.Adagrad (which has neither momentum nor v_-1 = tau^2)",
    "FedAdam": "Algorithm 2's Adam rule on one client (no bias correction, v_-1 = tau^2, sqrt(v) + 1e-3), not "
               "torch.optim.Adam (bias-corrected, v_-1 = 0, eps 1e-8)",
    "FedYogi": "Algorithm 2's Yogi rule on one client (no bias correction, v_-1 = tau^2, tau = 1e-3)",
    "FedAvgM": "SGD with momentum 0.9, as torch.optim.SGD(momentum=0.9)",
    "FedAvg": "SGD, as torch.optim.SGD",
}
"""What each centralized row of Table 11 runs here: the method's own server rule with one client and one step
of client rate 1 (:func:`centralized_algorithm` with its defaults); only SGD and SGD with momentum are also
torch.optim's.  (With :data:`~fedcore.experiments.fedopt.paper.TORCH_ADAM` or
:data:`~fedcore.experiments.fedopt.paper.TORCH_ADAGRAD` as options the rule is torch's, tested; the table keeps
the federated rows' rules so that the two columns differ in the federation only.)"""
CENTRALIZED_OPTIONS = {"clients_per_round": 1, "local_steps": 1}
"""With one client, one local step and client lr 1, ``Delta_t = -g_t``: the server optimizer *is* the
centralized optimizer on the minibatch gradient."""


def centralized_task(task: Task) -> Task:
    """``task`` trained centrally (Table 11's centralized rows): its data held by one client
    (:func:`centralized`), the same model and weighting, :data:`CENTRALIZED_OPTIONS`, as many samples as the
    federated run: :func:`centralized_rounds` steps of minibatches as large as a federated round's local step over
    all its clients (``clients_per_round x batch_size``), and twelve evaluations (the score's last four: the last
    third of the run, as the federated runs' last 100 of 300 rounds)."""
    if not isinstance(task, Task):
        raise TypeError(f"task={type(task).__name__} must be a fedcore.experiments.common.Task")
    steps = centralized_rounds(task.settings)
    settings = {**task.settings, **CENTRALIZED_OPTIONS, "rounds": steps, "eval_every": steps // 12 or 1,
                "batch_size": task.settings["batch_size"] * task.settings["clients_per_round"]}
    return replace(task, name=f"{task.name} (centralized)", data=centralized(task.data),
                   settings={key: settings[key] for key in ROUND_SETTINGS})


def centralized_algorithm(method: str, lr: float, **server_options: Any) -> Any:
    """``method`` (FedAdam, ...) as centralized training: client lr 1, the server optimizer at ``lr``; use it
    on :func:`centralized` data with :data:`CENTRALIZED_OPTIONS` (Adam: ``tau`` and
    :data:`~fedcore.experiments.fedopt.paper.TORCH_ADAM`)."""
    check_choice("method", method, METHODS)
    builders = {**_RULES, "FedAvgM": algorithms.fedavgm, "FedAvg": algorithms.fedavg}
    built = builders[method](1.0, server_lr=check_positive("lr", lr), **server_options)
    return replace(built, name=CENTRALIZED_NAMES[method])


def run_centralized(task: Task, seeds: Sequence[int], *, lrs: Mapping[str, float] | None = None,
                    store: Store | None = None, progress: bool = False) -> dict[str, list[History]]:
    """``{method: [History of each seed]}``: each method's optimizer trained centrally (:func:`centralized_task` of
    the federated ``task``, :func:`centralized_algorithm` at ``lrs[method]``, :data:`CENTRALIZED_LRS` by default)
    from each seed's initial model and minibatches (Table 11's centralized column)."""
    lrs = CENTRALIZED_LRS if lrs is None else lrs
    if not isinstance(lrs, Mapping) or not lrs:
        raise ValueError(f"lrs={lrs!r} must be a non-empty {{method: learning rate}} over {list(METHODS)}")
    algorithms = {method: centralized_algorithm(method, lr) for method, lr in lrs.items()}
    return common.run_seeds(centralized_task(task), algorithms, seeds, store=store, progress=progress)


def score(task: str, history: History) -> float:
    """A run's score in Table 1's units: its metric averaged over its last 4 evaluations
    (:func:`~fedcore.experiments.common.window_score`; at ``small`` and ``paper``, evaluated every 25 rounds, that
    is the paper's window, the last 100 rounds), :func:`to_paper_units`.  NaN for a run that diverged."""
    metric = STAND_INS[check_choice("task", task, STAND_INS)]["metric"]
    return to_paper_units(task, common.window_score(history, metric, evaluated=metric))


def score_table(histories: Mapping[str, Mapping[str, Sequence[History]]], seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (task, method), one column per seed of ``seeds``: :func:`score` of each run of ``histories``
    (``{task: {method: [History of each seed]}}``, as :func:`run` returns), in Table 1's units."""
    return pd.concat([common.score_table({task: runs}, partial(score, task), seeds)
                      for task, runs in histories.items()])


def results_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Tasks by methods: the mean over the seeds of :func:`score_table`'s ``scores`` (NaN where a seed
    diverged), in Table 1's units."""
    return scores.mean(axis=1, skipna=False).unstack("method").reindex(
        index=list(dict.fromkeys(scores.index.get_level_values("task"))),
        columns=list(dict.fromkeys(scores.index.get_level_values("method"))))


def table1_beside(scores: pd.DataFrame, baselines: Mapping[str, float]) -> pd.DataFrame:
    """Table 1 beside ours: per task (rows, named with Table 1's unit) and method (columns in the paper's order),
    the paper's number and ours as ``"mean ± sd"`` over the seeds, and the trivial ``baselines`` (Table 1's
    units)."""
    ours = common.mean_sd(scores).T
    rows = list(ours.index)
    columns = {}
    for method in METHODS:
        columns[(method, "paper")] = [f"{TABLE1.loc[task, method]:.2f}" for task in rows]
        columns[(method, "fedcore")] = list(ours[method]) if method in ours else [""] * len(rows)
    columns[("trivial baseline", "fedcore")] = [f"{baselines[task]:.2f}" for task in rows]
    table = pd.DataFrame(columns, index=[f"{PAPER_TASKS[task]['name']} ({TABLE1_METRIC[task]})" for task in rows])
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    return table


def paired_table(scores: pd.DataFrame, reference: str = "FedAvg") -> pd.DataFrame:
    """Tasks by methods: each method minus ``reference`` on the same seeds (paired, in Table 1's units, oriented
    so that positive is better: lower MSE for the autoencoder), ``"mean ± 2 standard errors"``
    (:func:`fedcore.experiments.claims.compare`), with the outcome: ``better``, ``worse`` or ``tie`` (within the
    noise)."""
    words = {CONFIRMED: "better", CONTRADICTED: "worse", WITHIN_NOISE: "tie"}
    rows: dict[str, dict[str, str]] = {}
    for task in dict.fromkeys(scores.index.get_level_values("task")):
        by_method = scores.loc[task]
        if reference not in by_method.index:
            raise ValueError(f"reference={reference!r} has no runs on {task!r}: methods {list(by_method.index)}")
        row = rows.setdefault(PAPER_TASKS[task]["name"], {})
        for method in by_method.index.drop(reference):
            outcome, text = compare(by_method.loc[method], by_method.loc[reference], task not in LOWER_IS_BETTER)
            row[method] = f"{text} ({words[outcome]})"
    return pd.DataFrame(rows).T


def rounds_to_target(history: History, metric: str, target: float, higher_is_better: bool = True) -> float:
    """The first evaluated round at which ``metric`` reaches ``target`` (at or above it; for a loss, at or
    below); ``inf`` if the run never does (or diverged before)."""
    column = history.frame[metric].dropna()
    column = column[column.index > 0]
    reached = column >= target if higher_is_better else column <= target
    return float(reached.idxmax()) if reached.any() else math.inf


def censored(rounds: float, horizon: int, every: int) -> float:
    """``rounds`` to a target, a run that never reached it (``inf``) counted one evaluation period ``every`` past
    its ``horizon``: a lower bound on its true rounds, which favours it."""
    return float(horizon + every) if math.isinf(rounds) else float(rounds)


def convergence_table(histories: Mapping[str, Mapping[str, Sequence[History]]],
                      scores: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, float]]:
    """("faster convergence", the slides' Summary) per (task, method) and seed, the rounds each run needs to reach
    its task's target, and ``{task: target}`` in Table 1's units: the target is the worst of the methods' mean
    scores (:func:`results_table`: the lowest accuracy, the highest MSE), a level every method holds on average
    over its last evaluations.  A run that
    never reaches it counts one evaluation period past its last round (:func:`censored`)."""
    means = results_table(scores)
    targets, rows = {}, {}
    for task, runs in histories.items():
        lower = task in LOWER_IS_BETTER
        targets[task] = float(means.loc[task].max() if lower else means.loc[task].min())
        goal = from_paper_units(task, targets[task])
        metric = STAND_INS[task]["metric"]
        for method, seeded in runs.items():
            rows[(task, method)] = [censored(rounds_to_target(h, metric, goal, not lower), int(h.frame.index.max()),
                                             int(h.frame[metric].dropna().index.to_series().diff().max()))
                                    for h in seeded]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(scores.columns))
    table.index = pd.MultiIndex.from_tuples(table.index, names=["task", "method"])
    table.columns.name = "seed"
    return table, targets
