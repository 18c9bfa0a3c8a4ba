"""Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``): the experiments, on the
common layer (:mod:`fedcore.experiments.common`).

The paper's own numbers, settings and claims are in :mod:`fedcore.experiments.fedopt.paper`.  This module holds
what we run: the reachable tasks and their stand-ins (:data:`STAND_INS`), built by :func:`tasks` at a
:data:`SCALES` entry as :class:`~fedcore.experiments.common.Task` (data with its partition fixed, the model drawn
from a seed, the round settings); the five methods with the paper's ``beta1 = 0.9, beta2 = 0.99``
(:func:`make_builders`, with the ExpDecay client schedule of Table 11) and :func:`run`, their Table 1 runs;
four readings of "FedAdam" (:func:`variant_builders`); centralized training as a one-client federation
(:func:`centralized_task`, :func:`centralized_algorithm`); the learning-rate grids' builders
(:func:`grid_builders`); and Table 1's metric in its units (:func:`results_table`).

Choices the paper leaves to us (each also said where it is used):

- **Fashion-MNIST stands in for EMNIST** (unreachable here): 500 clients of 120 images holding exactly 2
  classes each (``shards``, McMahan et al. 2017).  Fashion-MNIST has no writers, so heterogeneity must be
  made; a 2-class label split is the common reproducible one and makes client drift, what a server
  optimizer is for, large.  It is harsher than EMNIST's writers (who differ in style and hold most classes):
  expect less than the paper's 85%.  Many small clients as in the paper: 120 images = 6 steps at B = 20.
- **One local epoch -> a fixed K** (fedcore runs K steps on every client): ``K = ceil(mean client size / B)``,
  capped by the scale's ``max_local_steps`` (small: 3; Shakespeare's mean role is 1,130 steps of B = 4).
- **Small scale** (the notebook in 15 minutes on 2 CPU cores): 30 rounds, 5 clients per round, a random
  1,000-sample test set, 100 of Shakespeare's 705 roles; the paper's learning rates.
- **CIFAR** (paper scale, torchvision files): 500 equal clients, as TFF's: LDA alpha 0.1 for CIFAR-10
  (``lda``), two-level Pachinko for CIFAR-100 (``pachinko``, coarse 0.1, fine 10); 24x24 crops as TFF's
  (``crop=24``: random crops and flips of the training images, drawn once rather than every epoch; central
  crops of the test images).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pandas as pd
import torch
from torch import nn

from fedcore import algorithms, models
from fedcore.algorithms.base import exp_decay
from fedcore.checks import check_choice, check_int, check_positive, check_scale, check_seed
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.data.sources import cifar100_coarse
from fedcore.experiments import common
from fedcore.experiments.claims import Scope, trivial_baseline
from fedcore.experiments.common import ROUND_SETTINGS, Task, last_rounds_average
from fedcore.experiments.fedopt.paper import (
    ADAPTIVE,
    BEST_HYPERPARAMETERS,
    CENTRALIZED_NAMES,
    LOWER_IS_BETTER,
    METHODS,
    PAPER_TASKS,
    VARIANTS,
    hyperparameters,
)
from fedcore.results import History
from fedcore.run import simulate

if TYPE_CHECKING:
    from fedcore.store import Store

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 2, "eval_every": 1, "clients_per_round": 2, "max_local_steps": 2, "test_samples": 200,
              "shakespeare_roles": 20},
    "small": {"rounds": 30, "eval_every": 3, "clients_per_round": 5, "max_local_steps": 3, "test_samples": 1000,
              "shakespeare_roles": 100},
    "paper": {"rounds": None, "eval_every": 10, "clients_per_round": None, "max_local_steps": None,
              "test_samples": None, "shakespeare_roles": None},
}
"""Per scale: rounds (None: the paper's per task), evaluation period, clients per round (None: the paper's),
cap on K (None: one full epoch), test samples kept (None: all) and Shakespeare roles (None: all 705)."""

FASHION_CLIENTS, FASHION_PARTITION = 500, {"partition": "shards", "classes_per_client": 2}
CIFAR_CROP = 24
"""Reddi et al.'s CIFAR inputs: 24x24 crops of the 32x32 images (``fedcore.data.sources.crop_images``)."""
STAND_INS: dict[str, dict[str, Any]] = {
    "shakespeare": {"data": "Shakespeare, one client per (play, role) (load_shakespeare)", "model": "char_lstm",
                    "metric": "test_accuracy"},
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


def task_names(scale: str) -> tuple[str, ...]:
    """The Table 1 tasks run at ``scale``: :data:`REACHABLE`, and at ``paper`` the two CIFAR tasks as well
    (ResNet-18 with GroupNorm; torchvision's files in ``$FEDCORE_DATA`` or ``data/raw``)."""
    _scale(scale)
    return REACHABLE + CIFAR if scale == "paper" else REACHABLE
EXP_DECAY_FACTOR, EXP_DECAY_EVERY = 0.1, 500


def _scale(scale: str) -> dict[str, Any]:
    return check_scale(scale, SCALES)


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


def _load(task: str, scale: str, partition_seed: int, device: str) -> FederatedData:
    """The federated data of ``task``'s stand-in (:data:`STAND_INS`) at ``scale``, the partition and the kept
    test samples drawn from ``partition_seed``."""
    settings = _scale(scale)
    if STAND_INS[task].get("paper_only") and scale != "paper":
        raise ValueError(f"task={task!r} runs only at scale 'paper' (ResNet-18 on CIFAR, torchvision files needed); "
                         f"at {scale!r} run one of {list(REACHABLE)}")
    if task == "shakespeare":
        data = load_shakespeare(settings["shakespeare_roles"], seed=partition_seed, device=device)
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
    return data.test_subset(settings["test_samples"], partition_seed)


def local_steps(data: FederatedData, batch_size: int, cap: int | None = None) -> int:
    """One local epoch as fedcore's fixed K: ``ceil(mean client size / batch_size)``, at most ``cap``."""
    steps = math.ceil(float(data.sizes.double().mean()) / check_int("batch_size", batch_size))
    return steps if cap is None else min(steps, check_int("cap", cap))


def round_settings(task: str, data: FederatedData, scale: str) -> dict[str, Any]:
    """``task``'s round settings (:data:`~fedcore.experiments.common.ROUND_SETTINGS`) at ``scale``: the scale's
    rounds and clients per round (the paper's at paper scale), the paper's batch size, K from :func:`local_steps`
    (one local epoch, capped by the scale), clients weighted by their samples (Algorithm 1's ``p_i``)."""
    settings = _scale(scale)
    paper = PAPER_TASKS[check_choice("task", task, STAND_INS)]
    return dict(rounds=settings["rounds"] or paper["rounds"],
                clients_per_round=settings["clients_per_round"] or paper["clients_per_round"],
                local_steps=local_steps(data, paper["batch_size"], settings["max_local_steps"]),
                batch_size=paper["batch_size"], eval_every=settings["eval_every"], weighting="samples")


def _model(name: str, data: FederatedData) -> Callable[[int], nn.Module]:
    """fedcore's model ``name`` for ``data``'s inputs and classes, its initial weights drawn from a seed."""
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    return lambda seed: models.make(name, shape, classes, seed=check_seed("seed", seed))


def tasks(scale: str, partition_seed: int = 0, device: str = "cpu",
          names: Sequence[str] | None = None) -> dict[str, Task]:
    """``{name: Task}`` for the paper's tasks ``names`` (:data:`STAND_INS`; CIFAR at paper scale only; default
    :func:`task_names` of ``scale``) at ``scale``
    (:data:`SCALES`): the stand-in's data (the partition and the kept test samples drawn from ``partition_seed``),
    the paper's model drawn from a seed (the autoencoder with the mse loss), :func:`round_settings`, the paper's
    metric (``test_loss`` for the autoencoder: lower is better) and, as ``baseline``, what a model that learned
    nothing scores in Table 1's units (:func:`fedcore.experiments.claims.trivial_baseline`: the most frequent
    class or character in %, the mean image's MSE x1000), the unit of :func:`results_table`."""
    check_seed("partition_seed", partition_seed)
    names = task_names(scale) if names is None else names
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError(f"names={names!r} must be a non-empty list of tasks among {list(STAND_INS)}")
    built = {}
    for name in names:
        check_choice("task", name, STAND_INS)
        data = _load(name, scale, partition_seed, device)
        model = STAND_INS[name]["model"]
        if model not in models.MODELS:
            raise ValueError(f"model {model!r} of task {name!r} is not in fedcore.models.MODELS {list(models.MODELS)}")
        metric = STAND_INS[name]["metric"]
        built[name] = Task(name, data, _model(model, data), round_settings(name, data, scale),
                           baseline=trivial_baseline(data), metric=metric, higher_is_better=name not in LOWER_IS_BETTER,
                           model_label=f"the paper's model ({PAPER_TASKS[name]['model']})",
                           info={"stands_for": PAPER_TASKS[name]["name"], "stand_in": STAND_INS[name]["data"]})
    return built


def scope(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int], model: str = "") -> Scope:
    """The :class:`~fedcore.experiments.claims.Scope` of runs on ``tasks`` (``{name: Task}``) at ``scale`` from
    ``seeds``: each task's rounds, and ``model`` where it is not the paper's."""
    _scale(scale)
    return common.scope(tasks, scale, seeds, model)


def run(tasks: Mapping[str, Task], seed: int = 0, *, decay: bool = False, store: Store | None = None,
        progress: bool = False) -> dict[str, dict[str, History]]:
    """``{task: {method: History}}``: the five methods of :func:`make_builders` at each task's best values
    (with ``decay``, the client rate's ExpDecay: :func:`decay_every`) on every task of ``tasks``, one run each
    from ``seed`` (the initial model, client sampling and minibatches), with the task's round settings."""
    if not isinstance(tasks, Mapping):
        raise TypeError(f"tasks={tasks!r} must be a {{name: Task}}, as tasks() returns")
    check_seed("seed", seed)
    results = {}
    for name, task in tasks.items():
        every = decay_every(name, task.settings["rounds"]) if decay else None
        problem = task.problem(seed)
        results[name] = {method: simulate(problem, build(), seed=seed, store=store, progress=progress,
                                          **task.settings)
                         for method, build in make_builders(name, decay=every).items()}
    return results


SHORT_WINDOW = 1 / 3
"""The averaging window of short runs: the last third (at `small`, rounds 21-30: four evaluations), since the
paper's last tenth of a 30-round run would hold a single evaluation."""


def window(scale: str) -> float | int:
    """The averaging window: the paper's last 100 rounds at paper scale, :data:`SHORT_WINDOW` of a short run."""
    return 100 if _scale(scale)["rounds"] is None else SHORT_WINDOW


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
    local epoch of each client's data) and the client batch B."""
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
            ("paper", "B"): spec["batch_size"], ("ours", "B"): task.settings["batch_size"]}
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


def decay_every(task: str, rounds: int) -> int:
    """ExpDecay's period: 500 rounds of the paper's run, the same fraction of a shorter one."""
    paper = PAPER_TASKS[check_choice("task", task, PAPER_TASKS)]["rounds"]
    return max(1, round(check_int("rounds", rounds) * EXP_DECAY_EVERY / paper))


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
    """Centralized steps that see as many samples as the federated run of ``options``:
    ``rounds x clients_per_round x local_steps`` minibatches of the same size."""
    return options["rounds"] * options["clients_per_round"] * options["local_steps"]


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
    (:func:`centralized`), the same model, batch size and weighting, :data:`CENTRALIZED_OPTIONS`, as many steps
    as the federated run has minibatches (:func:`centralized_rounds`) and ten evaluations."""
    if not isinstance(task, Task):
        raise TypeError(f"task={type(task).__name__} must be a fedcore.experiments.common.Task")
    steps = centralized_rounds(task.settings)
    settings = {**task.settings, **CENTRALIZED_OPTIONS, "rounds": steps, "eval_every": steps // 10 or 1}
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


def run_centralized(task: Task, seed: int = 0, *, lrs: Mapping[str, float] | None = None,
                    store: Store | None = None, progress: bool = False) -> dict[str, History]:
    """``{method: History}``: each method's optimizer trained centrally (:func:`centralized_task` of the
    federated ``task``, :func:`centralized_algorithm` at ``lrs[method]``, :data:`CENTRALIZED_LRS` by default)
    from ``seed``'s initial model and minibatches (Table 11's centralized column)."""
    lrs = CENTRALIZED_LRS if lrs is None else lrs
    if not isinstance(lrs, Mapping) or not lrs:
        raise ValueError(f"lrs={lrs!r} must be a non-empty {{method: learning rate}} over {list(METHODS)}")
    central = centralized_task(task)
    problem = central.problem(check_seed("seed", seed))
    return {method: simulate(problem, centralized_algorithm(method, lr), seed=seed, store=store, progress=progress,
                             **central.settings) for method, lr in lrs.items()}


def results_table(histories: Mapping[str, Mapping[str, History]], scale: str) -> pd.DataFrame:
    """Tasks by methods: :func:`last_rounds_average` of each run in Table 1's units (the paper's window at
    ``scale``), the table :class:`~fedcore.experiments.fedopt.paper.Evidence` reads and the notebook shows beside
    :data:`~fedcore.experiments.fedopt.paper.TABLE1`."""
    metric = {task: STAND_INS[check_choice("task", task, STAND_INS)]["metric"] for task in histories}
    return pd.DataFrame({task: {m: to_paper_units(task, last_rounds_average(h, metric[task], window(scale)))
                                for m, h in runs.items()} for task, runs in histories.items()}).T
