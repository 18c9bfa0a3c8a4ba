"""Reddi et al., *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``): what we run, on the common
contract (the notebook says why each choice)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, partial
from typing import Any

import pandas as pd
import torch

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_positive, check_seed
from fedcore.comparisons import compare
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.data.sources import cifar100_coarse
from fedcore.results import History
from fedcore.schedules import exp_decay
from papers import common
from papers.claims import Scope, trivial_baseline
from papers.common import Builder, Kinds, Results, Scale, Task, Tuning, scale_at
from papers.fedopt import paper

run = common.run
tune = common.tune


@dataclass(frozen=True)
class FedoptScale(Scale):
    """A ``Scale`` with the clients per round and Shakespeare roles (None: the paper's, all 705), the models
    (``"light"``: :data:`LIGHT_MODELS`, or ``"paper"``), ExpDecay's schedule (:func:`decay_every`) and how many of
    the seeds the centralized runs take (:meth:`centralized_seeds`; None: all) and the ExpDecay runs
    (:meth:`decayed_seeds`)."""

    clients_per_round: int | None = None
    shakespeare_roles: int | None = None
    models: str = "light"
    decay: str = "once_late"
    centralized: int | None = None
    decayed: int | None = None
    paper_schedule: bool = False  # also the paper's ExpDecay cuts beside the scale's (recorded; small shows medium's)

    KINDS = {"rounds": Kinds.optional(Kinds.count(), "the paper's, per task"), "eval_every": Kinds.count(),
             "tasks": Kinds.names([task for task in paper.PAPER_TASKS if task not in paper.UNREACHABLE], each="task"),
             "clients_per_round": Kinds.optional(Kinds.count(), "the paper's"),
             "shakespeare_roles": Kinds.optional(Kinds.count(), "all"), "models": Kinds.choice("light", "paper"),
             "decay": Kinds.choice("paper", "once_late"), "centralized": Kinds.optional(Kinds.count(), "all seeds"),
             "decayed": Kinds.optional(Kinds.count(), "all seeds"), "paper_schedule": Kinds.flag()}

    def centralized_seeds(self, seeds: Sequence[int] | None = None) -> list[int]:
        """The first :attr:`centralized` of ``seeds`` (the scale's by default): Table 11's centralized column feeds
        no verdict."""
        return self._first(self.centralized, seeds)

    def decayed_seeds(self, seeds: Sequence[int] | None = None) -> list[int]:
        """The first :attr:`decayed` of ``seeds``: Table 11's ExpDecay runs (both schedules), paired with Table 1's
        constant-rate runs of the same seeds."""
        return self._first(self.decayed, seeds)

    def _first(self, count: int | None, seeds: Sequence[int] | None) -> list[int]:
        return self.seeds_or(seeds)[:count]


SCALES: dict[str, FedoptScale] = {
    "smoke": FedoptScale("smoke", seeds=(0, 1), rounds=2, eval_every=1,
                         tasks=("shakespeare", "emnist_cr", "emnist_ae"), max_local_steps=2, test_samples=200,
                         clients_per_round=2, shakespeare_roles=20, tuning_seeds=(100,)),
    "small": FedoptScale("small", seeds=(0, 1, 2, 3, 4), rounds=300, eval_every=25, tasks=("emnist_cr", "emnist_ae"),
                         clients_per_round=10, shakespeare_roles=100, centralized=1, decayed=3, tuning_seeds=(100,)),
    "medium": FedoptScale("medium", seeds=(0, 1, 2, 3, 4), rounds=300, eval_every=25,
                          tasks=("shakespeare", "emnist_cr", "emnist_ae"), clients_per_round=10, shakespeare_roles=100,
                          centralized=1, tuning_seeds=(100,), paper_schedule=True),
    "paper": FedoptScale("paper", seeds=(0, 1, 2, 3, 4), rounds=None, eval_every=25,
                         tasks=("shakespeare", "emnist_cr", "emnist_ae", "cifar10", "cifar100"), models="paper",
                         decay="paper", tuning_seeds=(100,)),
}
"""Evaluated every 25 rounds, a run's score (its last 4 evaluations) is the paper's window, the last 100 rounds.  Five
judging seeds; at small and medium the centralized runs (no verdict) take the first only, and at small the ExpDecay
runs (a claim that the plateau gate leaves untestable at 300 rounds) the first three; the paper's ExpDecay schedule
beside the late cut runs at medium, whose record small shows: within small's 15 minutes.  Table 1's runs take the
paper's best values; the client-rate check around them (:func:`rate_grids`) runs on the tuning seed 100, apart from
the judging seeds, and its best points are judged again beside them; the grids choose nothing."""
LIGHT_MODELS: dict[str, tuple[str, dict[str, Any], str]] = {
    "emnist_cr": ("mlp", {"hidden": (200,)}, "an MLP 784-200-10"),
    "emnist_ae": ("autoencoder", {"hidden": (), "bottleneck": 30}, "a one-layer autoencoder 784-30-784"),
    "shakespeare": ("char_lstm", {"hidden_size": 128, "num_layers": 1, "all_steps": True},
                    "a char-LSTM of one layer of 128"),
}
"""``(fedcore model, options, label)`` at the light scales: the paper's CNN costs 55 times the MLP per round on a CPU,
its deep autoencoder does not beat the mean image in 30 rounds, its LSTM costs 7 times ours (measured)."""

FASHION_CLIENTS, FASHION_PARTITION = 500, {"partition": "shards", "classes_per_client": 2}
CIFAR_CROP = 24
STAND_INS: dict[str, dict[str, Any]] = {
    "shakespeare": {"data": "Shakespeare, one client per (play, role), TFF's 80-character chunks (load_shakespeare)",
                    "model": "char_lstm", "options": {"all_steps": True}, "metric": "test_accuracy"},
    "emnist_cr": {"data": "Fashion-MNIST, 500 clients x 2 classes (shards)", "model": "cnn",
                  "metric": "test_accuracy"},
    "emnist_ae": {"data": "Fashion-MNIST, 500 clients x 2 classes, targets = inputs", "model": "autoencoder",
                  "metric": "test_loss", "unit": 2000.0},
    "cifar10": {"data": "CIFAR-10, 500 clients, LDA alpha 0.1", "model": "resnet18_gn", "metric": "test_accuracy",
                "paper_only": True},
    "cifar100": {"data": "CIFAR-100, 500 clients, Pachinko (coarse 0.1, fine 10)", "model": "resnet18_gn",
                 "metric": "test_accuracy", "paper_only": True},
}
"""Per paper task: our data, the paper's model (Shakespeare's predicts every next character) and metric, Table 1's
``unit`` (100: %; MSE x1000 = 2000 ``test_loss``, fedcore's ``mse`` being half the MSE)."""
REACHABLE = ("shakespeare", "emnist_cr", "emnist_ae")  # CIFAR needs torchvision's files: paper scale only
NOT_RUN = {"shakespeare": "runs at SCALE=medium: its char-LSTM over one epoch (16 steps of 4 chunks of 80 characters) "
                          "costs about 0.8 s a round on 2 CPU cores, about 95 minutes for 5 seeds of 5 methods over "
                          "300 rounds (measured per round)",
           **dict.fromkeys(("cifar10", "cifar100"), "needs the CIFAR files (torchvision) and a GPU: SCALE=paper")}


def not_run(scale: str | Scale) -> dict[str, str]:
    """``{paper task name: reason}`` for the paper's tasks ``scale`` leaves out or that never run here."""
    run_here = scale_at(SCALES, scale).tasks
    left = {paper.PAPER_TASKS[task]["name"]: NOT_RUN[task] for task in STAND_INS if task not in run_here}
    return left | {paper.PAPER_TASKS[task]["name"]: reason for task, reason in paper.UNREACHABLE.items()}


def as_autoencoder(data: FederatedData) -> FederatedData:
    """The same clients with ``targets = inputs`` flattened and no classes (loss: mse), normalized inputs mapped back
    to pixels in [0, 1] first, as EMNIST is in TFF (the sigmoid output's range)."""
    inputs, test_inputs = data.inputs, data.test_inputs
    if "mean" in data.info and "std" in data.info:
        mean = torch.tensor(data.info["mean"], device=data.device).view(1, -1, 1, 1)
        std = torch.tensor(data.info["std"], device=data.device).view(1, -1, 1, 1)
        inputs, test_inputs = inputs * std + mean, test_inputs * std + mean
    info = {**data.info, "autoencoder": True, "pixels": "[0, 1]"}
    return FederatedData(inputs, inputs.flatten(1), data.sizes.clone(), test_inputs, test_inputs.flatten(1), None,
                         f"{data.name} (autoencoder)", info)


def _load(task: str, settings: FedoptScale, seed: int, device: str,
          fashion: Callable[[], FederatedData]) -> FederatedData:
    if task == "shakespeare":
        data = load_shakespeare(settings.shakespeare_roles, seed=seed, device=device, targets="sequence")
    elif task == "cifar10":
        data = load_torchvision(task, FASHION_CLIENTS, "lda", seed, device=device, crop=CIFAR_CROP, alpha=0.1)
    elif task == "cifar100":
        data = load_torchvision(task, FASHION_CLIENTS, "pachinko", seed, device=device, crop=CIFAR_CROP,
                                coarse=cifar100_coarse(), alpha=0.1, beta=10.0)
    else:  # one Fashion-MNIST partition serves both EMNIST stand-ins
        data = as_autoencoder(fashion()) if task == "emnist_ae" else fashion()
    data.info.update(stands_for=paper.PAPER_TASKS[task]["name"], stand_in=STAND_INS[task]["data"])
    return data.test_subset(settings.test_samples, seed)


def local_steps(data: FederatedData, batch_size: int, cap: int | None = None) -> int:
    """One local epoch as fedcore's fixed K: ``ceil(mean client size / batch_size)``, at most ``cap``."""
    steps = math.ceil(float(data.sizes.double().mean()) / check_int("batch_size", batch_size))
    return steps if cap is None else min(steps, check_int("cap", cap))


def round_settings(task: str, data: FederatedData, scale: str | Scale) -> dict[str, Any]:
    """``task``'s round settings at ``scale`` (the paper's where it says None), the paper's batch size, one epoch
    as K, clients weighted by their samples (the paper's ``1/|S|`` on the Fashion-MNIST clients of 120 images)."""
    settings = scale_at(SCALES, scale)
    spec = paper.PAPER_TASKS[check_choice("task", task, STAND_INS)]
    return dict(rounds=settings.rounds or spec["rounds"],
                clients_per_round=settings.clients_per_round or spec["clients_per_round"],
                local_steps=local_steps(data, spec["batch_size"], settings.max_local_steps),
                batch_size=spec["batch_size"], eval_every=settings.eval_every, weighting="samples")


def model_of(task: str, scale: str | Scale) -> tuple[str, dict[str, Any], str]:
    """``(fedcore model, options, label)`` that ``task`` trains at ``scale``: the paper's or ours."""
    settings = scale_at(SCALES, scale)
    if STAND_INS[check_choice("task", task, STAND_INS)].get("paper_only") and settings.name != "paper":
        raise ValueError(f"task={task!r} runs only at scale 'paper' (ResNet-18 on CIFAR, torchvision files needed); "
                         f"at {settings.name!r} run one of {list(REACHABLE)}")
    if settings.models == "light":
        name, options, label = LIGHT_MODELS[task]
        return name, dict(options), f"ours: {label}; the paper's at paper scale"
    return STAND_INS[task]["model"], dict(STAND_INS[task].get("options", {})), \
        f"the paper's model ({paper.PAPER_TASKS[task]['model']})"


def tasks(scale: str | Scale, *, partition_seed: int = 0, device: str = "cpu") -> dict[str, Task]:
    """``{name: Task}`` for ``scale.tasks``: the stand-in's data, :func:`model_of`, :func:`round_settings`, the
    paper's metric in Table 1's unit and, as ``baseline``, a model that learned nothing (``trivial_baseline``)."""
    check_seed("partition_seed", partition_seed)
    scale = scale_at(SCALES, scale)
    built, fashion = {}, cache(lambda: load_fashion_mnist(FASHION_CLIENTS, seed=partition_seed, device=device,
                                                           **FASHION_PARTITION))
    for name in scale.tasks:
        model, options, label = model_of(name, scale)
        data = _load(name, scale, partition_seed, device, fashion)
        built[name] = Task(name, data, partial(models.make, model, tuple(data.inputs.shape[1:]), data.num_classes,
                                               **options), round_settings(name, data, scale),
                           baseline=trivial_baseline(data), metric=STAND_INS[name]["metric"],
                           higher_is_better=name not in paper.LOWER_IS_BETTER, model_label=label,
                           unit=STAND_INS[name].get("unit", 100.0))
    return built


def scope(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int], rates: str = "the paper's rates") -> Scope:
    """``common.scope`` of runs on ``tasks``: our models (:data:`LIGHT_MODELS`) at the light scales, and which
    learning ``rates`` the runs took."""
    light = scale_at(SCALES, scale).models == "light"
    return common.scope(tasks, scale, seeds, {name: ", ".join(
        ([f"ours, {LIGHT_MODELS[name][2]}"] if light and name in LIGHT_MODELS else []) + [rates]) for name in tasks})


EXP_DECAY_FACTOR, EXP_DECAY_EVERY = 0.1, 500


def decay_every(task: str, rounds: int, schedule: str = "paper") -> int:
    """ExpDecay's period for a run of ``rounds``: ``"paper"``, every 500 of the paper's rounds (the same fraction of
    a shorter run); ``"once_late"``, one cut at two thirds (a short run still climbs at a third)."""
    paper_rounds = paper.PAPER_TASKS[check_choice("task", task, paper.PAPER_TASKS)]["rounds"]
    rounds = check_int("rounds", rounds)
    if check_choice("schedule", schedule, ("paper", "once_late")) == "once_late":
        return max(1, round(2 * rounds / 3))
    return max(1, round(rounds * EXP_DECAY_EVERY / paper_rounds))


RULES = {"FedAdagrad": algorithms.fedadagrad, "FedAdam": algorithms.fedadam, "FedYogi": algorithms.fedyogi,
         "FedAvgM": algorithms.fedavgm, "FedAvg": algorithms.fedavg}


def paper_builders(task: str, *, every: int | None = None, variant: str | None = None) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr, **options)}`` at ``task``'s best values (``paper.hyperparameters``):
    the paper's rule, or ``variant``'s reading of it (its methods, named ``"FedAdam [variant]"``); with ``every``, the
    client rate's ExpDecay (x0.1 every ``every`` rounds, Table 11), named ``"FedAdam+ExpDecay"``.  The adaptive
    methods report each round's ``sqrt_v_over_tau`` (``server_opt.adam(report=True)``): the regime they ran in."""
    readings = paper.VARIANTS[check_choice("variant", variant or "paper", paper.VARIANTS)]["methods"]
    every = None if every is None else check_int("decay", every)

    def builder(method: str) -> Builder:
        best = paper.hyperparameters(task, method)
        client, server = best.pop("client_lr"), best.pop("server_lr")
        name = method + ("" if every is None else "+ExpDecay") + ("" if variant is None else f" [{variant}]")

        def build(client_lr: float = client, server_lr: float = server, **options: Any) -> Any:
            lr = client_lr if every is None else exp_decay(client_lr, EXP_DECAY_FACTOR, every)
            reported = {"report": True} if method in paper.ADAPTIVE else {}
            return replace(RULES[method](lr, server_lr=server_lr, **reported | readings.get(method, {}) | best
                                         | options), name=name)
        return build

    return {method: builder(method) for method in (paper.METHODS if variant is None else readings)}


def make_builders(task: Task | str, scale: str | Scale) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr, **options)}`` (options: ``tau``, ``beta1`` ...): Table 1's methods at
    ``task``'s best values (the same at every ``scale``), the paper's betas and Algorithm 2's rule."""
    scale_at(SCALES, scale)
    return paper_builders(task.name if isinstance(task, Task) else task)


def decay_builders(task: Task, scale: str | Scale, schedule: str | None = None) -> dict[str, Builder]:
    """:func:`make_builders` with the client rate's ExpDecay (Table 11) by :func:`decay_every` of ``schedule``
    (None: ``scale``'s; ``"paper"``, the paper's proportional cuts; ``"once_late"``)."""
    every = decay_every(task.name, task.settings["rounds"], schedule or scale_at(SCALES, scale).decay)
    return paper_builders(task.name, every=every)


def schedules_table(by_schedule: Mapping[str, pd.DataFrame], reference: str = "constant") -> pd.DataFrame:
    """Methods by schedules (Table 11's ExpDecay): each schedule's scores (methods x seeds) as "mean ± sd" over the
    seeds of the first schedule that is not ``reference``, and its paired difference from ``reference`` on those
    seeds (``comparisons.compare``: mean [95% interval], p; positive: the schedule scores higher)."""
    if reference not in by_schedule:
        raise ValueError(f"reference={reference!r} is not among the schedules {list(by_schedule)}")
    seeds = next((list(t.columns) for name, t in by_schedule.items() if name != reference), None)
    base, columns = by_schedule[reference][seeds], {}
    for name, table in by_schedule.items():
        table = table[seeds]
        columns[(name, "mean ± sd")] = {m: common.mean_sd_cell(table.loc[m]) for m in table.index}
        if name != reference:
            columns[(name, f"minus {reference}")] = {m: compare(table.loc[m], base.loc[m]).text() for m in table.index}
    return pd.DataFrame(columns)


RATE_STEPS = (-0.5, 0.0, 0.5)
"""The client-rate check: the paper's rate times ``10**step`` (a half-decade each way)."""
RATE_COLUMN = "paper's lr x10^"  # the rate check's columns: the paper's client rate times 10^step
RATE_CHECKS: dict[str, tuple[str, ...]] = {"emnist_ae": paper.METHODS, "emnist_cr": ("FedAvgM", "FedAvg")}
"""Which methods' client rates are checked on each stand-in: every method on the AE (whose paper rates were tuned for a
deep sigmoid network, not ours); on CR the non-adaptive ones (FedAvgM ranks last there, unlike the paper)."""


def rate_grids(task: str) -> dict[str, dict[str, list[float]]]:
    """``{method: {"client_lr": [...]}}``: the paper's client rate ``10**x`` for ``task`` times ``10**step`` for each
    of :data:`RATE_STEPS`, for the methods :data:`RATE_CHECKS` names (none for another task); the middle value is the
    paper's own, bit for bit (so its runs are Table 1's)."""
    check_choice("task", task, paper.BEST_HYPERPARAMETERS)
    return {method: {"client_lr": [10.0 ** (paper.BEST_HYPERPARAMETERS[task][method][0] + step) for step in RATE_STEPS]}
            for method in RATE_CHECKS.get(task, ())}


def rate_table(tunings: Mapping[str, Tuning]) -> pd.DataFrame:
    """Per (task, method) of the client-rate checks (``{task: Tuning}``): the score at each rate (the mean over the
    tuning seeds, in Table 1's units, two decimals), the paper's rate and the best one (four digits)."""
    rows = {}
    for task, tuning in tunings.items():
        for method, table in tuning.tables.items():
            rates = list(tuning.grids[method]["client_lr"])
            scores = table["score"].reindex(rates)
            rows[(task, method)] = {**{f"{RATE_COLUMN}{step:+g}": round(float(v), 2)
                                       for step, v in zip(RATE_STEPS, scores)},
                                    "paper's client lr": float(f"{rates[RATE_STEPS.index(0.0)]:.4g}"),
                                    "best client lr": float(f"{tuning.chosen[method]['client_lr']:.4g}")}
    rates = ["paper's client lr", "best client lr"]  # each with its own digits (31.62, 3.162), not a common format
    return pd.DataFrame(rows).T.astype(dict.fromkeys(rates, object)).rename_axis(["task", "method"])


RATIO, SPREAD = "sqrt_v_over_tau", "denominator_spread"
"""The columns an adaptive run reports (``server_opt.adam(report=True)``) each round: the geometric mean over the
coordinates of ``sqrt(v_t) / tau``, and the geometric sd of the denominator ``sqrt(v_t) + tau`` over them."""
ONE_RATE, PER_COORDINATE = 1.5, 3.0
"""The bands of the denominators' geometric sd (our choice; the paper draws none): up to ``ONE_RATE`` every coordinate
takes about the same rate (within a factor 1.5 at +-1 sd: server momentum SGD, however large ``v_t`` is), above
``PER_COORDINATE`` the rates differ per coordinate (a factor 9 between -1 and +1 sd), in between mildly so."""


def regime(spread: float) -> str:
    """What an adaptive step ``eta m_t / (sqrt(v_t) + tau)`` was with a denominator spread (geometric sd over the
    coordinates) of ``spread``: one rate for all coordinates (momentum SGD) up to :data:`ONE_RATE`, per-coordinate
    rates above :data:`PER_COORDINATE`, mildly per-coordinate in between."""
    return "one rate: momentum SGD" if spread <= ONE_RATE else "per-coordinate rates" if spread > PER_COORDINATE \
        else "mildly per-coordinate"


def regime_table(runs: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Per (task, method) of ``runs`` (``Results`` or ``{label: {method: [History per seed]}}``) whose runs report
    :data:`RATIO` and :data:`SPREAD`: their values at the last round (means over the seeds), the spread's largest over
    every round and seed, and the :func:`regime` of the last round's spread."""
    rows = {}
    for task, by_method in runs.items():
        for method, histories in by_method.items():
            frames = [h.frame[[RATIO, SPREAD]].dropna() for h in histories if SPREAD in h.frame]
            if not frames:
                continue
            ratio, spread = (float(pd.Series([f[c].iloc[-1] for f in frames]).mean()) for c in (RATIO, SPREAD))
            rows[(task, method)] = {"sqrt(v)/tau, typical": round(ratio, 3), "spread at the end": round(spread, 2),
                                    "largest spread (any round, seed)":
                                        round(float(max(f[SPREAD].max() for f in frames)), 2),
                                    "the step (by the spread at the end)": regime(spread)}
    return pd.DataFrame(rows).T.rename_axis(["task", "method"])


def grid_builders(tau: float = 1e-3) -> dict[str, Builder]:
    """``{method: build(client_lr, server_lr)}`` for the grids of Figures 2 and 6, ``tau`` fixed (theirs: 1e-3)."""
    check_positive("tau", tau)
    return {method: partial(build, tau=tau) if method in paper.ADAPTIVE else build  # both rates from the grid
            for method, build in paper_builders("emnist_cr").items()}


def variants_table() -> pd.DataFrame:
    """Per (variant, method): beta1, beta2, v_{-1}, where tau sits, bias correction, and the source."""
    rows = []
    for variant, spec in paper.VARIANTS.items():
        for method, o in spec["methods"].items():
            rows.append({"variant": variant, "method": method, "beta1 (momentum)": o.get("beta1", 0.9),
                         "beta2": "-" if method == "FedAdagrad" else o.get("beta2", 0.99),
                         "v_{-1}": "0" if o.get("initial_v") == "zero" else "tau^2",
                         "denominator": "sqrt(v + tau)" if o.get("tau_inside_sqrt") else "sqrt(v) + tau",
                         "bias correction": {"keras": "sqrt(1-b2^t)/(1-b1^t)", "flower": "same, t from 2"}.get(
                             o.get("bias_correction"), "none"),
                         "source": spec["source"]})
    return pd.DataFrame(rows).set_index(["variant", "method"])


# ------------------------------------------------------------------ centralized training (Table 11)

CENTRALIZED_LRS = {"FedAdagrad": 0.01, "FedAdam": 0.001, "FedYogi": 0.001, "FedAvgM": 0.01, "FedAvg": 0.1}
"""Ours (Table 11's are not reported): the usual defaults for a CNN."""
CENTRALIZED_RULES = {
    "FedAdagrad": "Algorithm 2's Adagrad rule on one client (momentum 0.9, v_-1 = tau^2, tau = 1e-3), not "
                  "torch.optim.Adagrad (which has neither momentum nor v_-1 = tau^2)",
    "FedAdam": "Algorithm 2's Adam rule on one client (no bias correction, v_-1 = tau^2, sqrt(v) + 1e-3), not "
               "torch.optim.Adam (bias-corrected, v_-1 = 0, eps 1e-8)",
    "FedYogi": "Algorithm 2's Yogi rule on one client (no bias correction, v_-1 = tau^2, tau = 1e-3)",
    "FedAvgM": "SGD with momentum 0.9, as torch.optim.SGD(momentum=0.9)",
    "FedAvg": "SGD, as torch.optim.SGD",
}
CENTRALIZED_OPTIONS = {"clients_per_round": 1, "local_steps": 1}
"""With one client, one local step and client lr 1, ``Delta_t = -g_t``: the server optimizer is the centralized one."""


def centralized_task(task: Task) -> Task:
    """``task`` trained centrally on one client: as many samples as the federated run (``rounds x K`` steps of
    ``clients_per_round x B``) and twelve evaluations (the score's last four: the last third, as federated)."""
    if not isinstance(task, Task):
        raise TypeError(f"task={type(task).__name__} must be a papers.common.Task")
    steps = task.settings["rounds"] * task.settings["local_steps"]
    settings = {**task.settings, **CENTRALIZED_OPTIONS, "rounds": steps, "eval_every": steps // 12 or 1,
                "batch_size": task.settings["batch_size"] * task.settings["clients_per_round"]}
    data = task.data
    pooled = FederatedData(data.inputs, data.targets, data.sizes.sum().view(1), data.test_inputs, data.test_targets,
                           data.num_classes, f"{data.name} (centralized)", dict(data.info))
    return replace(task, name=f"{task.name} (centralized)", data=pooled, settings=settings)


def centralized_algorithm(method: str, lr: float, **server_options: Any) -> Any:
    """``method`` as centralized training: client lr 1, the server optimizer at ``lr``, named as the optimizer."""
    built = RULES[check_choice("method", method, paper.METHODS)](1.0, server_lr=check_positive("lr", lr),
                                                                 **server_options)
    return replace(built, name=paper.CENTRALIZED_NAMES[method])


def centralized_builders() -> dict[str, Builder]:
    """``{method: build()}``: each method's optimizer at :data:`CENTRALIZED_LRS` (for :func:`centralized_task`)."""
    return {method: partial(centralized_algorithm, method, lr) for method, lr in CENTRALIZED_LRS.items()}


# ------------------------------------------------------------------ Table 1 beside ours, and rounds to a target


def settings_beside(results: Results) -> pd.DataFrame:
    """Per task and setting (the paper's order), the paper's value (K: one local epoch) beside ours
    (``Results.settings``), then our other settings and model."""
    ours, theirs = results.settings(), pd.DataFrame(paper.PAPER_TASKS).T
    theirs = theirs.assign(local_steps=theirs["local_epochs"].map("{} epoch".format))
    labels = {"clients_per_round": "clients per round", "rounds": "rounds", "local_steps": "K", "batch_size": "B"}
    columns = {(label, source): table.loc[ours.index, name] for name, label in labels.items()
               for source, table in (("paper", theirs), ("ours", ours))}
    columns |= {(name.replace("_", " "), "ours"): ours[name] for name in ours if name not in labels}
    return pd.DataFrame(columns).rename(index=lambda t: paper.PAPER_TASKS[t]["name"])


def hyperparameter_table(tasks: Sequence[str]) -> pd.DataFrame:
    """Per (task, method), the paper's best learning rates and tau (every Table 1 run's), as ``"10^x = value"``."""
    best = {task: paper.BEST_HYPERPARAMETERS[check_choice("task", task, paper.BEST_HYPERPARAMETERS)] for task in tasks}
    rows = {(paper.PAPER_TASKS[task]["name"], method): {
        name: f"10^{x:g} = {10.0 ** x:.3g}" for name, x in zip(("client lr", "server lr", "tau"), exponents)}
        for task in tasks for method, exponents in best[task].items()}
    return pd.DataFrame(rows).T.reindex(columns=["client lr", "server lr", "tau"]).fillna("")


def table1_beside(results: Results) -> pd.DataFrame:
    """Table 1 beside ours: per task and method, the paper's number and ours (``Results.mean_sd``), and the trivial
    baseline."""
    ours, rows = results.mean_sd().T, list(results)
    columns = {}
    for method in paper.METHODS:
        columns[(method, "paper")] = [f"{paper.TABLE1.loc[task, method]:.2f}" for task in rows]
        columns[(method, "fedcore")] = list(ours[method]) if method in ours else [""] * len(rows)
    columns[("trivial baseline", "fedcore")] = [f"{results.tasks[task].baseline:.2f}" for task in rows]
    names = [f"{paper.PAPER_TASKS[task]['name']} ({paper.TABLE1_METRIC[task]})" for task in rows]
    return pd.DataFrame(columns, index=names)  # tuple keys: two-level columns


def rounds_to_target(history: History, metric: str, target: float, higher_is_better: bool = True) -> float:
    """The first evaluated round (after 0) at which ``metric`` reaches ``target``; a run that never does counts one
    evaluation period past its last round (a lower bound on its true rounds, which favours it)."""
    evaluated = history.frame[metric].dropna()
    later = evaluated[evaluated.index > 0]
    reached = later >= target if higher_is_better else later <= target
    every = evaluated.index.to_series().diff().max()
    return float(reached.idxmax()) if reached.any() else float(history.frame.index.max() + every)


def value_at(history: History, metric: str, round_: float) -> float:
    """``metric`` at the first evaluation at or after ``round_`` (the last one if none is)."""
    evaluated = history.frame[metric].dropna()
    later = evaluated[evaluated.index >= round_]
    return float(later.iloc[0] if not later.empty else evaluated.iloc[-1])


HALF_WAY = 0.5
""""Faster convergence": the target is FedAvg's mean score at this share of its runs' rounds."""


def convergence_table(results: Results, reference: str = "FedAvg") -> tuple[pd.DataFrame, dict[str, float]]:
    """"Faster convergence": per (task, method) and seed, the rounds to the task's target (:func:`rounds_to_target`),
    and ``{task: target}`` in Table 1's units: ``reference``'s mean score at the first evaluation at or after
    :data:`HALF_WAY` of its rounds, a level it reaches about half-way (not its own final score, which only its end
    reaches, nor any other method's final window)."""
    targets, rows = {}, {}
    for name, runs in results.items():
        task = results.tasks[name]
        if reference not in runs:
            raise ValueError(f"reference={reference!r} has no runs on task {name!r}; it has {list(runs)}")
        half = [value_at(h, task.metric, HALF_WAY * h.frame.index.max()) for h in runs[reference]]
        targets[name] = task.unit * float(sum(half) / len(half))
        for method, seeded in runs.items():
            rows[(name, method)] = [rounds_to_target(h, task.metric, targets[name] / task.unit, task.higher_is_better)
                                    for h in seeded]
    table = pd.DataFrame(rows, index=list(results.seeds)).T
    return table.rename_axis(index=["task", "method"], columns="seed"), targets
