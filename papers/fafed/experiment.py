"""FAFED's image experiment (Wu, Huang, Hu & Huang, AAAI 2023, "Experimental Results"; notebook ``04_fafed``,
section 4) on the common contract: Fashion-MNIST at three levels of heterogeneity, FAFED against FedAvg, SCAFFOLD,
STEM, FedAdam and FedAMS on the paper's grids."""

from __future__ import annotations

import functools
import inspect
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import pandas as pd
import torch

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_seed
from fedcore.data import load_fashion_mnist
from fedcore.params import evaluate_runs
from fedcore.results import History
from papers import common
from papers.claims import trivial_baseline
from papers.common import Builder, Kinds, Scale, Selection, Task, scale_at


@dataclass(frozen=True)
class FafedScale(Scale):
    """A :class:`~papers.common.Scale` with the model (:data:`MODELS`), whether the grids are searched,
    the number of clients and FAFED's ``rho`` (``A = sqrt(v_bar) + rho``; the paper's 0.01)."""

    model: str = "mlp"
    tune: bool = True
    clients: int = 20
    rho: float = 0.01
    ablation: bool = True
    widen: int = 2

    KINDS = {"rounds": Kinds.count(), "eval_every": Kinds.count(), "tasks": Kinds.names(("low", "moderate", "high")),
             "model": Kinds.choice("tanh_cnn", "mlp"), "tune": Kinds.flag(), "clients": Kinds.count(),
             "rho": Kinds.positive(), "ablation": Kinds.flag(), "widen": Kinds.count(0)}


SCALES: dict[str, FafedScale] = {
    "smoke": FafedScale("smoke", seeds=(0, 1), rounds=2, eval_every=1, max_local_steps=2, tune_rounds=1,
                        tuning_seeds=(100,), ablation=False, widen=1),
    "small": FafedScale("small", seeds=(0, 1, 2, 3, 4), rounds=40, eval_every=5, tune_rounds=10,
                        tuning_seeds=(100, 101)),
    "medium": FafedScale("medium", seeds=(1, 2, 3, 4, 5), rounds=40, eval_every=5, tune_rounds=10,
                         model="tanh_cnn", tune=False, ablation=False, tuning_seeds=(100, 101, 102)),
    "paper": FafedScale("paper", seeds=(1, 2, 3, 4, 5), rounds=300, eval_every=10, tune_rounds=30, model="tanh_cnn",
                        tune=False, tuning_seeds=(100, 101, 102)),
}
"""``tune``: the grids are searched, on ``tuning_seeds`` (apart from the judging ``seeds``), where it is cheap (the
MLP: minutes; the CNN: hours), each axis continued beyond an end it is chosen at, at most ``widen`` times
(:func:`~papers.common.tune`); medium and paper search them only when the notebook sets ``TUNE=True``.
``ablation``: also run every method with one batch size and period on all three partitions (:data:`ABLATION`)."""

SETTINGS: dict[str, dict[str, Any]] = {
    "low": {"partition": {"partition": "similarity", "s": 0.95}, "batch_size": 5, "local_steps": 20},
    "moderate": {"partition": {"partition": "similarity", "s": 0.5}, "batch_size": 50, "local_steps": 10},
    "high": {"partition": {"partition": "shards", "classes_per_client": 5}, "batch_size": 100, "local_steps": 5},
}
"""The three heterogeneity levels: the partition (``load_fashion_mnist`` arguments), ``b`` and ``q``.  Our reading
where the paper is silent: "moderate" as ``similarity(s=0.5)``, and which ``b`` and ``q`` go with which level."""

STEP_SIZES, SERVER_LRS, MOMENTA = [0.001, 0.01, 0.02, 0.05, 0.1], [10**-2.5, 10**-2, 10**-1.5], [0.1, 0.9]
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"lr": STEP_SIZES}, "SCAFFOLD": {"lr": STEP_SIZES},
    "FedAdam": {"lr": STEP_SIZES, "server_lr": SERVER_LRS}, "FedAMS": {"lr": STEP_SIZES, "server_lr": SERVER_LRS},
    "STEM": {"lr": STEP_SIZES, "alpha": MOMENTA}, "FAFED": {"lr": STEP_SIZES, "alpha": MOMENTA, "beta": MOMENTA},
}
"""The paper's grids: client step size, server learning rate (FedAdam, FedAMS), STEM's and FAFED's momentum
alpha and FAFED's beta in {0.1, 0.9}.  FedAdam's and FedAMS's beta1 and beta2 (:data:`SERVER_MOMENTA`) are searched
at their best point of these, a second stage (:func:`tune_settings`)."""
SERVER_MOMENTA = {"beta1": MOMENTA, "beta2": MOMENTA}
"""The paper's beta1 and beta2 for FedAdam and FedAMS, {0.1, 0.9} each: the second stage of their search, from
their best (lr, server_lr) at Reddi et al.'s beta1 = 0.9, beta2 = 0.99; so each searches 15 + 4 points against
FAFED's 20 (before widening), where the full product would give them 60."""
ABLATION = {"batch_size": 50, "local_steps": 10}
"""The ablation's round settings on every partition: the moderate setting's b and q, with each method at its point
tuned there, so that only the partition differs."""
MODELS: dict[str, tuple[Callable[[int], Any], str, str]] = {
    "tanh_cnn": (lambda seed: models.make("tanh_cnn", (1, 28, 28), 10, seed=seed),
                 "the tanh CNN of Nouiehed et al. 2019 (conv 5 and 10 channels, dense 100; 26,620 parameters), our "
                 "reading of the paper's model", "the tanh CNN"),
    "mlp": (lambda seed: models.make("mlp", (1, 28, 28), 10, hidden=(32,), seed=seed),
            "ours: a 784-32-10 ReLU MLP (25,450 parameters), a stand-in for the tanh CNN at a quarter of its "
            "multiply-adds",
            "a 784-32-10 MLP standing in for the CNN"),
}
"""``{name: (model drawn from a seed, label, short label)}``: the paper's model as we read it, and small's stand-in."""


def tasks(scale: str | FafedScale, *, partition_seed: int = 0, device: str = "cpu") -> dict[str, Task]:
    """The scale's settings (``scale.tasks``, else all): Fashion-MNIST dealt to ``scale.clients`` clients, every
    client in every round with uniform weights, test accuracy against the most frequent class; a tuning run of
    ``scale.tune_rounds`` rounds scores its training loss over its last 3 rounds (it evaluates no test set)."""
    scale = scale_at(SCALES, scale)
    model, label, _ = MODELS[check_choice("model", scale.model, MODELS)]
    check_seed("partition_seed", partition_seed)
    selection = Selection("train_loss", 3, higher_is_better=False, rounds=scale.tune_rounds,
                          eval_every=scale.tune_rounds)
    built = {}
    for name in scale.tasks or SETTINGS:
        spec = SETTINGS[check_choice("tasks", name, SETTINGS)]
        data = load_fashion_mnist(scale.clients, seed=partition_seed, device=device, **spec["partition"])
        settings = dict(rounds=scale.rounds, clients_per_round=scale.clients, local_steps=min(
            spec["local_steps"], scale.max_local_steps or spec["local_steps"]), batch_size=spec["batch_size"],
            eval_every=scale.eval_every, weighting="uniform")
        built[name] = Task(name, data, model, settings, trivial_baseline(data) / 100, model_label=label,
                           selection=selection)
    return built


def make_builders(task: Task, scale: str | FafedScale) -> dict[str, Builder]:
    """``{method: build(**hyperparameters)}``, the same on every setting: SCAFFOLD (option II) with global learning
    rate 1, FedAdam and FedAMS with ``beta1 = 0.9``, ``beta2 = 0.99`` unless given, FedAMS with ``eps = tau^2``, STEM
    and FAFED with a constant step."""
    rho = scale_at(SCALES, scale).rho
    return {
        "FedAvg": lambda lr: algorithms.fedavg(lr),
        "SCAFFOLD": lambda lr: algorithms.scaffold(lr),
        "FedAdam": lambda lr, server_lr, beta1=0.9, beta2=0.99: algorithms.fedadam(lr, server_lr=server_lr,
                                                                                   beta1=beta1, beta2=beta2, tau=0.01),
        "FedAMS": lambda lr, server_lr, beta1=0.9, beta2=0.99: algorithms.fedams(lr, server_lr=server_lr, beta1=beta1,
                                                                                 beta2=beta2, eps=1e-4),
        "STEM": lambda lr, alpha: algorithms.stem(lr, alpha=alpha),
        "FAFED": lambda lr, alpha, beta: algorithms.fafed(lr, alpha=alpha, beta=beta, rho=rho),
    }


run, tune = common.run, common.tune


def settings_table() -> pd.DataFrame:
    """:data:`SETTINGS` as a table: the partition as a call, the batch size ``b`` and the period ``q``."""
    def call(partition: Mapping[str, Any]) -> str:
        scheme, *options = partition.items()
        return f"{scheme[1]}({', '.join(f'{key}={value}' for key, value in options)})"
    return pd.DataFrame({name: {"partition": call(spec["partition"]), "batch size b": spec["batch_size"],
                                "period q": spec["local_steps"]} for name, spec in SETTINGS.items()}).T


def grid_table() -> pd.DataFrame:
    """:data:`GRIDS` as methods by hyperparameters, each cell the values searched (empty: not taken), the
    ``points`` each method's search tries before widening (the paper's grids differ in size), and ``then``: FedAdam's
    and FedAMS's second stage (:data:`SERVER_MOMENTA`)."""
    table = pd.DataFrame({name: {key: ", ".join(f"{v:g}" for v in values) for key, values in grid.items()}
                          for name, grid in GRIDS.items()}).T.fillna("")
    second = f"{', '.join(SERVER_MOMENTA)} in {{{', '.join(f'{v:g}' for v in MOMENTA)}}} at the best: " \
             f"{math.prod(map(len, SERVER_MOMENTA.values()))} points"
    return table.assign(points=[math.prod(map(len, grid.values())) for grid in GRIDS.values()],
                        then=[second if name in ("FedAdam", "FedAMS") else "" for name in GRIDS])


def heterogeneity_table(tasks: Mapping[str, Task]) -> pd.DataFrame:
    """Per setting: samples per client, classes per client (those holding at least 1% of its rows) and the mean
    total-variation distance between a client's label distribution and the global one (``label_skew``)."""
    def span(values: Any) -> str:
        return f"{int(values.min())}..{int(values.max())}"
    return pd.DataFrame.from_dict({name: {
        "samples per client": span(task.data.sizes),
        "classes per client (>= 1%)": span((task.data.label_counts() >= 0.01 * task.data.sizes[:, None]).sum(1)),
        "mean TV distance": round(task.data.label_skew(), 3)}
        for name, task in tasks.items()}, orient="index").rename_axis("setting")


def epochs(tasks: Mapping[str, Task]) -> dict[str, float]:
    """Per setting, how many times a run passes a client's data: rounds x q x b over the mean client's samples."""
    return {name: task.settings["rounds"] * task.settings["local_steps"] * task.settings["batch_size"]
            / float(task.data.sizes.float().mean()) for name, task in tasks.items()}


def ablation_tasks(tasks: Mapping[str, Task], scale: str | FafedScale) -> dict[str, Task]:
    """Each of ``tasks`` (its partition) with the round settings of :data:`ABLATION` (q capped by the scale's
    ``max_local_steps``), named ``"<setting> (b 50, q 10)"``: the same batch size, period and epochs everywhere."""
    cap = scale_at(SCALES, scale).max_local_steps
    settings = {**ABLATION, "local_steps": min(ABLATION["local_steps"], cap or ABLATION["local_steps"])}
    label = f"b {settings['batch_size']}, q {settings['local_steps']}"
    return {f"{name} ({label})": replace(task, name=f"{name} ({label})", settings={**task.settings, **settings})
            for name, task in tasks.items()}


def training_losses(task: Task, X: torch.Tensor) -> list[float]:
    """The loss of each model of ``X [R, d]`` on ``task``'s whole training set (60,000 images: the objective ``f``
    itself, the clients being of equal size), the R models through one batched forward per 10,000 rows."""
    model, data = task.problem().model, task.data
    losses = evaluate_runs(model, X.to(data.device), data.inputs, data.targets, batch_size=10_000, backend="vmap")
    return [loss["test_loss"] for loss in losses]


def _by_run(rows: Mapping[tuple[str, str], Sequence[float]], seeds: Sequence[int]) -> pd.DataFrame:
    """``{(setting, method): one value per seed}`` as a table, rows (task, method), one column per seed."""
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(seeds))
    table.index = pd.MultiIndex.from_tuples(table.index, names=["task", "method"])
    return table.rename_axis(columns="seed")


def server_train_loss(results: common.Results) -> pd.DataFrame:
    """The loss of each run's final server model on its task's whole training set (:func:`training_losses`), rows
    (setting, method), one column per seed; NaN where a run diverged.  The runs' own ``train_loss`` is the clients'
    minibatch loss during their local steps."""
    rows = {}
    for name, by_method in results.items():
        dim = results.tasks[name].problem().model.dim
        for method, histories in by_method.items():
            losses = training_losses(results.tasks[name], torch.stack([h.final_state["x"].reshape(-1)[-dim:]
                                                                      for h in histories]))
            rows[(name, method)] = [math.nan if h.diverged else loss for h, loss in zip(histories, losses)]
    return _by_run(rows, results.seeds)


START_ROUNDS = 10
""""At the start": the initial model and the first ten rounds, over which :func:`start_scores` sums the upward moves
of the loss."""


def start_scores(results: common.Results, rounds: int = START_ROUNDS) -> dict[str, pd.DataFrame]:
    """How each run starts, each a table with rows (setting, method) and one column per seed: ``"first-round loss"``
    (the clients' mean minibatch loss in round 1) and ``"upward moves"``: the sum of the loss's rises from the start
    through round ``rounds``, the first from the initial model's loss on the whole training set (the same for every
    method of a seed) to round 1's, then from each round's ``train_loss`` to the next's."""
    check_int("rounds", rounds, 2)
    initial = {name: training_losses(task, torch.stack(list(task.initial(results.seeds).values())))
               for name, task in results.tasks.items()}
    rows = {(name, method): [float(pd.concat([pd.Series([start]), history.frame["train_loss"].loc[1:rounds]])
                                   .diff().clip(lower=0).sum()) for start, history in zip(initial[name], histories)]
            for name, by_method in results.items() for method, histories in by_method.items()}
    return {"first-round loss": common.score_table(results.runs, first_round_loss, results.seeds),
            "upward moves": _by_run(rows, results.seeds)}


def start_table(start: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`start_scores` as methods by (reading, setting), each the mean over the seeds, in the runs' order."""
    return pd.concat({measure: table.mean(axis=1).unstack(0).reindex(
        index=list(dict.fromkeys(table.index.get_level_values(1))),
        columns=list(dict.fromkeys(table.index.get_level_values(0)))) for measure, table in start.items()}, axis=1)


def first_round_loss(history: History) -> float:
    """The clients' mean minibatch loss during the first round."""
    return float(history.frame.loc[1, "train_loss"])


@dataclass(frozen=True)
class FirstStepPreconditioned(algorithms.FAFED):
    """FAFED with Algorithm 2's line 3 read as ``x_1 = x_0 - eta_0 A_0^-1 m_0`` (the printed line has no
    ``A_0^-1``; fedcore follows the print)."""

    name: str = "FAFED, line 3 with A_0^-1"

    def server_prologue(self, state: dict, uploads: dict, batch: Any) -> dict:
        """``m_0``, ``v_0``, ``A_0`` as in :class:`~fedcore.algorithms.FAFED`, then ``x_1 = x_0 - eta_0 m_0 / A_0``."""
        G0 = uploads["gradient"]
        m, v = batch.weights @ G0, batch.weights @ G0.square()
        A = self.preconditioner(v)
        x_1 = state["x"] - self.eta(0) * m / A
        batch.record(x_1.expand_as(G0))
        return {**state, "x": x_1, "m": m, "v": v, "A": A, "t": torch.tensor(1)}


@dataclass(frozen=True)
class FirstBatchOfB(algorithms.FAFED):
    """FAFED with the initial batch ``B = b`` (line 2's ``m_0``, ``v_0`` from the round's first minibatch) where
    fedcore takes Remark 1's ``B = b q`` (all the first round's samples)."""

    name: str = "FAFED, B = b"

    def client_prologue(self, sent: dict, batch: Any, oracle: Any, own: dict) -> tuple[dict, dict]:
        X = sent["x"].expand(-1, batch.clients_per_round, -1)
        G0 = oracle(X.reshape(-1, X.shape[-1]), batch.inputs[:, 0], batch.targets[:, 0])[1].view(X.shape)
        return {"gradient": G0}, {"x_prev": X}


READINGS: dict[str, tuple[type[algorithms.FAFED], dict[str, float]]] = {
    "as coded: line 3 as printed, B = q b, rho 0.01": (algorithms.FAFED, {}),
    "line 3 with A_0^-1": (FirstStepPreconditioned, {}), "B = b": (FirstBatchOfB, {}),
    "rho 0.1": (algorithms.FAFED, {"rho": 0.1}), "rho 1 (Remark 3: O(1))": (algorithms.FAFED, {"rho": 1.0})}
"""The readings of Algorithm 2's start (lines 2-3) and floors ``rho`` of ``A_t`` that :func:`first_round_readings`
compares: ``{label: (FAFED's class, what differs from the tuned point)}``."""


def first_round_readings(task: Task, point: Mapping[str, float], seeds: Sequence[int], scale: str | FafedScale,
                         store: Any = None) -> pd.DataFrame:
    """FAFED at ``point`` (its tuned ``lr``, ``alpha``, ``beta``) on ``task`` for one round under each of
    :data:`READINGS`: the first-round training loss, one row per reading, one column per seed."""
    rho = scale_at(SCALES, scale).rho
    one_round = replace(task, settings={**task.settings, "rounds": 1, "eval_every": 1})
    builders = {reading: partial(kind, **{"rho": rho, **point, **changed})
                for reading, (kind, changed) in READINGS.items()}
    results = run(one_round, builders, seeds, store=store)
    return common.score_table(results.runs, first_round_loss, results.seeds).loc[task.name]


def tune_settings(tasks: Mapping[str, Task], scale: str | FafedScale, fixed: Mapping[str, Mapping[str, float]], *,
                  store: Any = None, progress: bool = False) -> dict[str, common.Tuning]:
    """Per setting, the grids of :data:`GRIDS` searched on the scale's tuning seeds, each widened at its edges up to
    ``scale.widen`` times (:func:`~papers.common.tune`), then FedAdam's and FedAMS's
    :data:`SERVER_MOMENTA` at their best point (kept where one beats it); where the scale does not tune, the
    ``fixed`` points (the notebook's ``HYPERPARAMETERS``, chosen on seed 0)."""
    scale = scale_at(SCALES, scale)
    grids = common.grids_at(scale.name, GRIDS)
    if not scale.tune:
        return {name: common.Tuning({m: dict(p) for m, p in fixed.items()}, {}, grids, seeds=(0,)) for name in tasks}
    tunings = {}
    for name, task in tasks.items():
        builders = make_builders(task, scale)
        defaults = {m: {key: parameter.default for key, parameter in inspect.signature(build).parameters.items()
                        if key in SERVER_MOMENTA} for m, build in builders.items()}  # Reddi et al.'s beta1, beta2
        first = tune(task, builders, grids, scale.tuning_seeds, store=store, progress=progress, widen=scale.widen)
        staged = {m: {**{key: [value] for key, value in first.chosen[m].items()}, **SERVER_MOMENTA}
                  for m in first.chosen if defaults[m]}
        merged = first.merged(tune(task, builders, staged, scale.tuning_seeds, store=store, progress=progress))
        for method in staged:  # where the first stage's point stands, its momenta are the defaults
            merged.chosen[method] = {**defaults[method], **merged.chosen[method]}
        tunings[name] = merged
    return tunings


def run_settings(tasks: Mapping[str, Task], scale: str | FafedScale, points: Mapping[str, Any], seeds: Sequence[int],
                 *, store: Any = None, progress: bool = False) -> common.Results:
    """Every method on every task of ``tasks`` from each seed, at ``points[task]`` (a :class:`common.Tuning` or
    ``{method: point}``; the ablation's tasks take the moderate setting's)."""
    runs = [run(task, common.bind(make_builders(task, scale), points[name], seeds), seeds, store=store,
                progress=progress) for name, task in tasks.items()]
    return functools.reduce(operator.or_, runs)
