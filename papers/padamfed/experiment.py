"""PAdaMFed's experiments (Yan et al., ICLR 2025; notebook ``02_padamfed``) on :mod:`papers.common`.

The slides' N, S, K, T, B, grids and multipliers were not found.  Ours: Fashion-MNIST standing in for EMNIST (100
clients by Dirichlet(1), a 784-64-10 MLP, B = 32, uniform weights) at two horizons (:data:`HORIZONS`), CIFAR-10 at
``paper`` only; the baselines tuned on :data:`GRIDS` by the task's score, each point run for the full T from every
tuning seed (``scale.tuning_seeds``, apart from the judging ``scale.seeds``; :func:`points` refuses a tuning that
met them); the robustness multiplier in decades from each method's own default under two readings
(:data:`READINGS`), a grid that chooses nothing, on every judging seed and the horizons of
:attr:`PadamfedScale.swept` (:func:`robustness`); the readings of the algorithm the text leaves open
(:data:`VARIANTS`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_choice, check_positive, check_seed
from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, WITHIN_NOISE
from fedcore.data import load_fashion_mnist
from fedcore.data.sources import load_torchvision
from fedcore.store import Store
from papers import common
from papers.claims import trivial_baseline
from papers.common import Builder, Kinds, Results, Scale, Task, Tuning

run, tune = common.run, common.tune


STAND_IN = ("fashion_mnist", "fashion_mnist_long")


@dataclass(frozen=True)
class PadamfedScale(Scale):
    """A :class:`~papers.common.Scale` with the clients N, the log10 range of the robustness
    multipliers (in half-decades) and the horizons the robustness sweep runs on (on every judging seed)."""

    clients: int = 100
    multipliers: tuple[float, float] = (-2.0, 2.0)
    swept: tuple[str, ...] = STAND_IN

    KINDS = {**dict.fromkeys(("rounds", "eval_every"), Kinds.per_task((*STAND_IN, "cifar10"), one=False)),
             "tasks": Kinds.names((*STAND_IN, "cifar10")), "clients": Kinds.count(),
             "multipliers": Kinds.log_range(around=0.0), "swept": Kinds.names(STAND_IN)}

    def factors(self) -> list[float]:
        """The robustness figure's multipliers: every half-decade from ``10**multipliers[0]`` to
        ``10**multipliers[1]`` (1 among them)."""
        low, high = (round(2 * end) for end in self.multipliers)
        return [float(10.0 ** (k / 2)) for k in range(low, high + 1)]


SECOND_PARTITION = "fashion_mnist (partition 2)"
"""The short horizon on a second draw of the partition (:func:`second_partition`)."""
MLP = "a 784-64-10 MLP standing in for the paper's models"
"""What the stand-in trains, beside the paper's model (a claim's scope names it)."""
SCALES: dict[str, PadamfedScale] = {
    "smoke": PadamfedScale("smoke", seeds=(0, 1), rounds={"fashion_mnist": 4, "fashion_mnist_long": 8},
                           eval_every={"fashion_mnist": 2, "fashion_mnist_long": 4}, tasks=STAND_IN,
                           test_samples=200, clients=20, multipliers=(-0.5, 0.0), tuning_seeds=(100,),
                           swept=("fashion_mnist_long",)),
    "small": PadamfedScale("small", seeds=(0, 1, 2, 3, 4), rounds={"fashion_mnist": 60, "fashion_mnist_long": 300},
                           eval_every={"fashion_mnist": 5, "fashion_mnist_long": 25}, tasks=STAND_IN,
                           test_samples=2000, tuning_seeds=(100, 101), multipliers=(-1.5, 1.5),
                           swept=("fashion_mnist_long",)),
    "medium": PadamfedScale("medium", seeds=(0, 1, 2, 3, 4), rounds={"fashion_mnist": 200, "fashion_mnist_long": 1000},
                            eval_every={"fashion_mnist": 10, "fashion_mnist_long": 50}, tasks=STAND_IN,
                            tuning_seeds=(100, 101, 102)),
    "paper": PadamfedScale("paper", seeds=(0, 1, 2),
                           rounds={"fashion_mnist": 500, "fashion_mnist_long": 3000, "cifar10": 500},
                           eval_every={"fashion_mnist": 10, "fashion_mnist_long": 100, "cifar10": 10},
                           tasks=STAND_IN, tuning_seeds=(100, 101, 102)),
}
"""Per scale: T and the evaluation period of each task, N, the test samples kept, the multipliers' range, the
judging seeds, the tuning seeds (apart from them) and the horizons the robustness sweep runs on (``smoke``: the code
path only; ``small``: 5 judging seeds, the sweep on the long horizon only and from 10^-1.5 to 10^1.5 (both horizons
would add about 1,000 s on 2 CPU cores); ``medium``: 5 seeds, T x 3.3, the whole test set, both horizons swept from
10^-2 to 10^2); CIFAR-10 runs at ``paper`` with ``tasks(dataclasses.replace(scale, tasks=("cifar10",)))``."""
HORIZONS = {"fashion_mnist": {"clients_per_round": 10, "local_steps": 5},
            "fashion_mnist_long": {"clients_per_round": 5, "local_steps": 2},
            "cifar10": {"clients_per_round": 10, "local_steps": 5}}
"""S and K of each task (ours): S K = 50 (Theorem 1's beta = 0.91 at T = 60), and S K = 10 with T much larger."""
BATCH_SIZE, ALPHA, CIFAR_ALPHA, HIDDEN = 32, 1.0, 0.5, (64,)
TASKS = (*STAND_IN, SECOND_PARTITION, "cifar10")
METHODS = ("PAdaMFed", "PAdaMFed-VR", "FedAvg", "SCAFFOLD", "SCAFFOLD-M", "SCAFFOLD-M-VR")
PARAMETER_FREE = ("PAdaMFed", "PAdaMFed-VR")
TWO_RATES = ("PAdaMFed", "PAdaMFed-VR", "SCAFFOLD-M", "SCAFFOLD-M-VR")
"""The methods with a local and a server rate: the two readings of the multiplier differ for these only."""
METHODS_AT = {"fashion_mnist": METHODS,
              "fashion_mnist_long": ("PAdaMFed", "PAdaMFed-VR", "FedAvg", "SCAFFOLD", "SCAFFOLD-M"),
              SECOND_PARTITION: METHODS, "cifar10": ("PAdaMFed", "FedAvg")}
"""The methods each task may run (SCAFFOLD-M-VR, whose step costs two gradients, on the short horizon only; the
second partition runs the parameter-free methods and the short horizon's best tuned baseline, retuned there)."""
SWEPT_AT = {"fashion_mnist": METHODS, "fashion_mnist_long": ("PAdaMFed", "FedAvg", "SCAFFOLD", "SCAFFOLD-M")}
"""The methods each horizon's robustness sweep runs (the long horizon's sweep leaves out PAdaMFed-VR, the notebook's
most expensive runs, to stay within its budget at ``small``)."""
LEARNING_RATES = common.half_decades(-2.0, 0.0)
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": LEARNING_RATES}, "SCAFFOLD": {"client_lr": LEARNING_RATES},
    **{method: {"eta": LEARNING_RATES, "beta": [0.1, 0.3, 1.0]} for method in ("SCAFFOLD-M", "SCAFFOLD-M-VR")}}
"""The baselines' grids (ours): learning rates in half-decades from 0.01 to 1, the same five for every baseline, and
the momentum methods' beta besides; SCAFFOLD-M's server step ``gamma = eta K`` (SCAFFOLD's).  :func:`tune_horizons`
searches beta once, SCAFFOLD-M's on the short horizon: 5 + 5 + 15 points there, then 5 for SCAFFOLD-M-VR at that
beta; 5 + 5 + 5 on the long horizon; each point from every tuning seed.  The claim's reference is the best tuned
baseline, and a larger grid favours it: harder for the untuned methods, not easier."""
READINGS = ("every rate", "local rate")
NEAR_BEST = 0.03
"""'Stable performance': a mean score within three points of the method's best multiplier."""
VARIANTS = {"line 1 for the first round's clients": ({"initialization": "first_round"}, PARAMETER_FREE),
            "VR server momentum: the clients' mean direction": ({"server_momentum": "mean_direction"},
                                                                ("PAdaMFed-VR", "SCAFFOLD-M-VR"))}
"""The readings of the algorithm set beside fedcore's defaults (line 1 for every client, line 16's server
momentum): each one's factory options and the methods it changes."""
CHANGE = {CONFIRMED: "higher", CONTRADICTED: "lower", WITHIN_NOISE: "within the noise",
          NOT_DECIDABLE: "undecided (one seed)"}
"""How a variant's outcome against the default reads (``Results.paired(words=CHANGE)``: its 95% paired t interval
excludes 0, above or below, or does not; with no margin, a comparison is not decidable only on one seed)."""


def tasks(scale: str | Scale, *, partition_seed: int = 0, device: str = "cpu") -> dict[str, Task]:
    """``{name: Task}`` of ``scale.tasks``: the stand-in (one partition for both horizons) or, at ``paper``,
    ``"cifar10"`` (torchvision's files); the partition and test subset drawn from ``partition_seed``; test accuracy
    in [0, 1], its trivial baseline the share of the most frequent test class."""
    scale, partition_seed = common.scale_at(SCALES, scale), check_seed("partition_seed", partition_seed)
    built, stand_in = {}, None
    for name in scale.tasks:
        check_choice("tasks", name, (*STAND_IN, "cifar10"))  # the second partition: second_partition()
        if name not in scale.rounds:
            raise ValueError(f"tasks={list(scale.tasks)!r}: {name!r} runs only at scale 'paper' (ResNet-18, "
                             f"torchvision files); got scale {scale.name!r}")
        if name == "cifar10":
            data = load_torchvision("cifar10", scale.clients, "dirichlet", partition_seed, device=device,
                                    alpha=CIFAR_ALPHA).test_subset(scale.test_samples, partition_seed)
        else:
            if stand_in is None:
                stand_in = load_fashion_mnist(scale.clients, "dirichlet", partition_seed, device=device,
                                              alpha=ALPHA).test_subset(scale.test_samples, partition_seed)
            data = stand_in
        shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
        model = (functools.partial(models.make, "resnet18_gn", shape, classes) if name == "cifar10" else
                 functools.partial(models.make, "mlp", shape, classes, hidden=HIDDEN))
        settings = {"rounds": scale.rounds[name], **HORIZONS[name], "batch_size": BATCH_SIZE,
                    "eval_every": scale.eval_every[name], "weighting": "uniform"}
        built[name] = Task(name, data, model, settings, baseline=trivial_baseline(data) / 100,
                           model_label="ResNet-18 with GroupNorm" if name == "cifar10" else MLP)
    return built


def second_partition(scale: str | Scale, *, partition_seed: int = 1, device: str = "cpu") -> Task:
    """The short horizon's task (``"fashion_mnist"``) on another partition and test subset, drawn from
    ``partition_seed``, named :data:`SECOND_PARTITION`: the untuned-against-tuned claim on a second draw of the
    data (the judging seeds never redraw the partition)."""
    scale = common.scale_at(SCALES, scale)
    task = tasks(dataclasses.replace(scale, tasks=("fashion_mnist",)), partition_seed=partition_seed,
                 device=device)["fashion_mnist"]
    return dataclasses.replace(task, name=SECOND_PARTITION)


RATE_KEYS = ("eta", "client_lr")
"""The hyperparameters of :data:`GRIDS` that are a method's learning rate."""


def rate_grid(grid: Mapping[str, Sequence[float]], chosen: Mapping[str, float]) -> dict[str, list[float]]:
    """``grid`` over the learning rate only (:data:`RATE_KEYS`), every other hyperparameter at its ``chosen``
    value: a retuning (the second partition's) that keeps the first tuning's momentum."""
    return {key: list(values) if key in RATE_KEYS else [chosen[key]] for key, values in grid.items()}


SHORT = "fashion_mnist"
"""The short horizon: where SCAFFOLD-M's momentum ``beta`` is searched (:func:`tune_horizons`)."""


def tune_horizons(tasks: Mapping[str, Task], builders: Mapping[str, Mapping[str, Builder]],
                  grids: Mapping[str, Mapping[str, Sequence[float]]], seeds: Sequence[int], *,
                  store: Store | None = None, progress: bool = False) -> dict[str, Tuning]:
    """Each task's baselines tuned on ``seeds`` (:func:`~papers.common.tune`, every point run for the
    task's full T): on the short horizon (:data:`SHORT`) FedAvg's and SCAFFOLD's rate and SCAFFOLD-M's rate and
    ``beta`` over ``grids``; SCAFFOLD-M-VR there, and every method on the other tasks, over its rate at that
    ``beta`` (:func:`rate_grid`, as the second partition retunes).  ``{task: Tuning}``, each over the methods of
    its ``builders``."""
    if SHORT not in tasks:
        raise ValueError(f"tasks={list(tasks)} must hold {SHORT!r}, the horizon where beta is searched")
    if "SCAFFOLD-M" not in grids or "SCAFFOLD-M" not in builders[SHORT]:
        raise ValueError(f"grids={list(grids)} and builders[{SHORT!r}] must hold 'SCAFFOLD-M', whose beta the other "
                         "momentum methods take")
    first = common.tune(tasks[SHORT], builders[SHORT], {m: g for m, g in grids.items() if m in builders[SHORT]
                                                        and m != "SCAFFOLD-M-VR"}, seeds, store=store,
                        progress=progress)
    beta = {"beta": first.chosen["SCAFFOLD-M"]["beta"]}

    def at_beta(name: str, methods: Sequence[str]) -> Tuning:
        return common.tune(tasks[name], builders[name], {m: rate_grid(grids[m], beta) if "beta" in grids[m] else
                                                         grids[m] for m in methods}, seeds, store=store,
                           progress=progress)
    tunings = {SHORT: first}
    if "SCAFFOLD-M-VR" in builders[SHORT]:
        vr = at_beta(SHORT, ["SCAFFOLD-M-VR"])
        tunings[SHORT] = dataclasses.replace(first, chosen={**first.chosen, **vr.chosen},
                                             tables={**first.tables, **vr.tables}, grids={**first.grids, **vr.grids})
    for name in tasks:
        if name != SHORT:
            tunings[name] = at_beta(name, [m for m in grids if m in builders[name]])
    return tunings


def gradient_steps(method: str, settings: Mapping[str, Any]) -> int:
    """A run's budget of stochastic gradients: S K T, twice that for a variance-reduced step (its second gradient at
    the previous model)."""
    steps = settings["clients_per_round"] * settings["local_steps"] * settings["rounds"]
    return 2 * steps if method.endswith("-VR") else steps


def theorem_step_sizes(method: str, settings: Mapping[str, Any]) -> dict[str, float]:
    """Theorem 1's (PAdaMFed) or Theorem 2's (PAdaMFed-VR) ``eta``, ``gamma``, ``beta`` for the S, K and T of the
    round ``settings`` (a :class:`~papers.common.Task`'s)."""
    variant = {"PAdaMFed": "padamfed", "PAdaMFed-VR": "padamfed_vr"}[check_choice("method", method, PARAMETER_FREE)]
    missing = [key for key in ("clients_per_round", "local_steps", "rounds") if key not in settings]
    if missing:
        raise ValueError(f"settings={dict(settings)!r} lacks {missing}: give a task's round settings")
    return theory_hyperparameters(variant, settings["clients_per_round"], settings["local_steps"], settings["rounds"])


def builders_for(local_steps: int) -> dict[str, Builder]:
    """``{method: build(**hyperparameters, **options)}`` of every method of :data:`METHODS` at K = ``local_steps``:
    PAdaMFed(-VR) from ``eta``, ``gamma``, ``beta``, the baselines from their :data:`GRIDS` keywords (SCAFFOLD-M's
    ``gamma = factor * eta * K``, ``factor`` 1 unless given); ``options`` (``initialization``, ``server_momentum``)
    go to the factory."""
    K = local_steps
    return {"PAdaMFed": algorithms.padamfed, "PAdaMFed-VR": algorithms.padamfed_vr, "FedAvg": algorithms.fedavg,
            "SCAFFOLD": algorithms.scaffold,
            "SCAFFOLD-M": lambda eta, beta, factor=1.0, **options: algorithms.scaffold_m(
                eta=eta, gamma=factor * eta * K, beta=beta, **options),
            "SCAFFOLD-M-VR": lambda eta, beta, factor=1.0, **options: algorithms.scaffold_m_vr(
                eta=eta, gamma=factor * eta * K, beta=beta, **options)}


def make_builders(task: Task, scale: str | Scale) -> dict[str, Builder]:
    """The builders (:func:`builders_for`) of the methods ``task`` may run (:data:`METHODS_AT`) at its K; every
    scale runs the same methods (the second partition: those its tuning and :func:`points` give a point)."""
    common.scale_at(SCALES, scale)
    every = builders_for(task.settings["local_steps"])
    return {method: every[method] for method in METHODS_AT[check_choice("task", task.name, TASKS)]}


def points(task: Task, chosen: Mapping[str, Mapping[str, float]] | Tuning,
           seeds: Sequence[int] | None = None) -> dict[str, dict[str, float]]:
    """Every method's point at multiplier 1 on ``task``: the theorems' step sizes for PAdaMFed(-VR)
    (:func:`theorem_step_sizes`), the ``chosen`` (tuned) ones for the baselines.  ``chosen`` a
    :class:`~papers.common.Tuning` for runs on the judging ``seeds``: it must have tuned on other seeds
    (a ``ValueError`` names the shared ones, as :func:`~papers.common.bind` does)."""
    chosen = common.chosen_apart(chosen, seeds, "points(task, tuning, seeds)")
    methods = [m for m in METHODS_AT[task.name] if m in PARAMETER_FREE or task.name != SECOND_PARTITION or m in chosen]
    missing = [m for m in methods if m not in PARAMETER_FREE and m not in chosen]
    if missing:
        raise ValueError(f"chosen has no hyperparameters for {missing}: give the tuned point of every baseline")
    return {method: dict(theorem_step_sizes(method, task.settings)) if method in PARAMETER_FREE else
            dict(chosen[method]) for method in methods}


def best_tuned(tuning: Tuning) -> str:
    """The baseline of ``tuning`` whose chosen point scored best on the tuning seeds (the reference the untuned
    methods are judged against, chosen apart from the judging seeds)."""
    best = {method: table["score"].max() if tuning.higher_is_better else -table["score"].min()
            for method, table in tuning.tables.items()}
    return max(best, key=lambda method: -math.inf if math.isnan(best[method]) else best[method])


def variants(task: Task, builders: Mapping[str, Builder], points: Mapping[str, Mapping[str, float]],
             default: Results, *, store: Store | None = None, progress: bool = False) -> Results:
    """Each reading of :data:`VARIANTS` run (its options bound) for the methods of ``builders`` it changes: one task
    ``"<method>: <variant>"`` per pair with the runs ``"default"`` (``default``'s) and ``"variant"``, over
    ``default``'s seeds, for ``Results.paired("default")``."""
    joined = None
    for variant, (options, changed) in VARIANTS.items():
        methods = [method for method in changed if method in builders]
        bound = {method: functools.partial(builders[method], **points[method], **options) for method in methods}
        ran = run(task, bound, default.seeds, store=store, progress=progress)[task.name]
        for method in methods:
            label = f"{method}: {variant}"
            pair = Results({label: {"default": default[task.name][method], "variant": ran[method]}}, default.seeds,
                           {label: task})
            joined = pair if joined is None else joined | pair
    return joined


def scaled(method: str, hyperparameters: Mapping[str, float], multiplier: float,
           reading: str = "every rate") -> dict[str, float]:
    """``hyperparameters`` with ``method``'s learning rates times ``multiplier``: ``"every rate"`` scales
    ``eta`` and ``gamma`` (the client rate of FedAvg and SCAFFOLD; SCAFFOLD-M's ``gamma`` through ``eta``),
    ``"local rate"`` scales ``eta`` alone (SCAFFOLD-M's ``factor`` divided to keep its ``gamma``)."""
    check_choice("method", method, METHODS)
    check_choice("reading", reading, READINGS)
    m, values = check_positive("multiplier", multiplier), dict(hyperparameters)
    if "client_lr" in values:
        values["client_lr"] *= m
        return values
    values["eta"] *= m
    if "gamma" in values and reading == "every rate":
        values["gamma"] *= m
    if method.startswith("SCAFFOLD-M") and reading == "local rate":
        values["factor"] = values.get("factor", 1.0) / m
    return values


def robustness(task: Task, builders: Mapping[str, Builder], points: Mapping[str, Mapping[str, float]],
               factors: Sequence[float], seeds: Sequence[int], *, within: float = NEAR_BEST,
               store: Store | None = None, progress: bool = False) -> dict[str, pd.DataFrame]:
    """``{reading: table}``: the task's score of every method of ``builders`` at the multipliers of ``factors``
    (rows; 1 among them) from its point (:func:`points`) under each reading (:func:`scaled`), from every seed
    (columns: method, seed; NaN: diverged or not run).  Each method's curve is run outward from 1 and stops on a side
    once every seed has fallen more than ``within`` below its best
    (:func:`~papers.common.outward_sweep`): the good ranges are the whole grid's.  FedAvg and SCAFFOLD
    run once: both readings move their one rate."""
    factors, tables = [check_positive("factors", factor) for factor in factors], {}
    if 1.0 not in factors:
        raise ValueError(f"factors={factors} must hold 1, the point every curve starts from")

    def curve(method: str, reading: str) -> pd.DataFrame:
        build = {method: lambda multiplier: builders[method](**scaled(method, points[method], multiplier, reading))}
        return common.outward_sweep(lambda values: common.sweep_table(
            task, build, "multiplier", values, seeds, store=store, progress=progress)[method], factors, within)
    for reading in READINGS:  # FedAvg and SCAFFOLD run once: both readings move their one rate
        tables[reading] = pd.concat({method: curve(method, reading) if reading == READINGS[0] or method in TWO_RATES
                                     else tables[READINGS[0]][method] for method in builders},
                                    axis=1, names=["method"]).rename_axis("multiplier")
    return tables


MEASURES = ("own best", "best method")
"""Against what a good range is measured: within :data:`NEAR_BEST` of the method's own best score, or of the best
score any method reached on that seed (a method stable at a low score has no good range by the second)."""


def good_widths(table: pd.DataFrame, within: float = NEAR_BEST, against: str = MEASURES[0]) -> dict[str, list[float]]:
    """``{method: [each seed's good range around 1 in decades, its ends interpolated]}`` of a :func:`robustness`
    table (the claim's measure, :func:`~papers.common.span_decades`), measured ``against``
    (:data:`MEASURES`) each method's own best or the seed's best over every method."""
    check_choice("against", against, MEASURES)
    seeds = table.columns.get_level_values("seed").unique()
    best = {seed: table.xs(seed, axis=1, level="seed").max().max() for seed in seeds}
    return {method: common.span_decades_by_seed(table[method], within, best=None if against == MEASURES[0] else best)
            for method in table.columns.get_level_values(0).unique()}


def robustness_summary(tables: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> pd.DataFrame:
    """Per reading and method: the best multiplier (at an end of the grid, the best may lie beyond) and its mean
    score in %, the score at 1, the good range around 1 of the mean scores
    (:func:`~papers.common.good_span`) with its width in decades, and each seed's own width in decades,
    ends interpolated (the claim's measure, :func:`good_widths`); the same measured against the best method's score
    (:data:`MEASURES`)."""
    rows = {}
    for reading, table in tables.items():
        means = common.mean_over_seeds(table)
        top = means.max().max()
        own, against_best = good_widths(table, within), good_widths(table, within, MEASURES[1])
        for method in means:
            span, best = common.good_span(means[method], within), means[method].idxmax()
            span_top = common.good_span(means[method], within, best=top)
            rows[(reading, method)] = {
                "best multiplier": best, "best at a grid end": best in (means.index.min(), means.index.max()),
                "best score (%)": round(100 * means[method].max(), 2),
                "score at 1 (%)": round(100 * means[method].loc[1.0], 2),
                "good range": "none (1 is not within)" if span is None else f"{span[0]:.3g} to {span[1]:.3g}",
                "width (decades)": math.nan if span is None else math.log10(span[1] / span[0]),
                "per seed (decades)": ", ".join(f"{width:.2f}" for width in own[method]),
                "good range, the best method's": "none" if span_top is None else
                f"{span_top[0]:.3g} to {span_top[1]:.3g}",
                "per seed, the best method's": ", ".join(f"{width:.2f}" for width in against_best[method])}
    return pd.DataFrame(rows).T.rename_axis(["reading", "method"])
