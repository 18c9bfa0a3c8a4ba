"""PAdaMFed's experiments: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025
(notebook ``02_padamfed``), on the common layer (:mod:`fedcore.experiments.common`).

What the paper reports (:mod:`~fedcore.experiments.padamfed.paper`): accuracy against rounds on CIFAR-10
(ResNet-18, Dirichlet(0.5)) with PAdaMFed at Theorem 1's step sizes against baselines "perfectly tuned by grid
search", and test accuracy against the learning rate on EMNIST (a 3-layer RNN, Dirichlet(1)).  N, S, K, T, the
batch size, the baselines' grids and the multipliers were not found.  What we choose:

- **The stand-in** for EMNIST (:func:`tasks`): Fashion-MNIST dealt to 100 clients by Dirichlet(1), a
  one-hidden-layer MLP (64 units, 50,890 parameters, non-convex), B = 32, uniform weights (the algorithm's
  ``1/S``), at two horizons (:data:`HORIZONS`): ``"fashion_mnist"``, S = 10 clients per round and K = 5 local
  steps, T = 60 at ``small`` (SK = 50 against T: Theorem 1's momentum ``beta = sqrt(SK/T)`` = 0.91, almost off);
  ``"fashion_mnist_long"``, S = 5, K = 2, T = 300 at ``small`` (SK = 10, ``beta`` = 0.18), run with the methods
  without variance reduction (:data:`METHODS_AT`).
- **Seeds** (:data:`SCALES`): every run is repeated over three seeds; a verdict compares paired seeds
  (:mod:`fedcore.experiments.claims`).
- **Tuning** (:data:`GRIDS`, :func:`tune`): FedAvg and SCAFFOLD over the client learning rate; SCAFFOLD-M and
  SCAFFOLD-M-VR over ``eta`` and ``beta`` with ``gamma = eta K`` (SCAFFOLD's server step), each point run for the
  full T from every seed and scored by :func:`score` (the mean test accuracy of the last four evaluations,
  :func:`fedcore.experiments.common.window_score`), the best mean over the seeds chosen: the most favourable
  tuning for the baselines, so the claim that the untuned method keeps up with them is tested at its hardest.
- **The robustness multiplier** (:func:`scaled`, :func:`robustness`): from each method's own default (Theorem 1
  or 2 for PAdaMFed, the tuned values for the baselines), decades from 1/100 to 100.  Two readings, since the
  paper does not say which rates it moved: ``"every rate"`` multiplies every learning rate of a method (``eta``
  and ``gamma``; FedAvg's and SCAFFOLD's one client rate), ``"local rate"`` multiplies ``eta`` alone (PAdaMFed's
  own ``multiplier``).  PAdaMFed and SCAFFOLD-M divide by ``eta`` on the server (``g_bar``), so under the second
  reading their server step does not grow with the multiplier.  The good range
  (:func:`fedcore.experiments.common.good_span`): the
  multipliers around 1 whose mean score over the seeds lies within :data:`NEAR_BEST` of the best mean.
- **Readings of the algorithm** (:data:`VARIANTS`, :func:`run_variants`): line 1 for the first round's clients
  instead of every client, and PAdaMFed-VR's server momentum as the clients' mean direction.
- **CIFAR-10** (``paper`` scale, torchvision files; :func:`tasks` with ``"cifar10"``): ResNet-18 with GroupNorm on
  32x32 images, 100 clients by Dirichlet(0.5), the same S, K, B.

The partition is drawn once (``partition_seed``) and stays fixed; a seed draws the initial model, the client
sampling and the minibatches (:class:`~fedcore.experiments.common.Task`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_choice, check_positive, check_seed, check_seeds
from fedcore.data import load_fashion_mnist
from fedcore.data.sources import load_torchvision
from fedcore.experiments import common
from fedcore.experiments.claims import CONFIRMED, CONTRADICTED, WITHIN_NOISE, compare, trivial_baseline
from fedcore.experiments.common import (
    Scale,
    Task,
    Tuning,
    good_span,
    half_decades,
    mean_over_seeds,
    run_seeds,
    scale_at,
    span_points,
    window_score,
)
from fedcore.results import History
from fedcore.store import Store


@dataclass(frozen=True)
class PadamfedScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` with the clients N and the log10 range of the robustness
    multipliers (decades)."""

    clients: int = 100
    multipliers: tuple[int, int] = (-2, 2)


SCALES: dict[str, PadamfedScale] = {
    "smoke": PadamfedScale("smoke", seeds=(0, 1), rounds={"fashion_mnist": 4, "fashion_mnist_long": 8},
                           eval_every={"fashion_mnist": 2, "fashion_mnist_long": 4}, test_samples=200, clients=20,
                           multipliers=(-1, 0)),
    "small": PadamfedScale("small", seeds=(0, 1, 2), rounds={"fashion_mnist": 60, "fashion_mnist_long": 300},
                           eval_every={"fashion_mnist": 5, "fashion_mnist_long": 25}, test_samples=2000),
    "paper": PadamfedScale("paper", seeds=(0, 1, 2),
                           rounds={"fashion_mnist": 500, "fashion_mnist_long": 3000, "cifar10": 500},
                           eval_every={"fashion_mnist": 10, "fashion_mnist_long": 100, "cifar10": 10}),
}
"""Per scale: rounds T and evaluation period of each task, clients N, test samples (None: all 10,000), the
log10 range of the robustness multipliers (decades) and the seeds."""
HORIZONS = {"fashion_mnist": {"clients_per_round": 10, "local_steps": 5},
            "fashion_mnist_long": {"clients_per_round": 5, "local_steps": 2},
            "cifar10": {"clients_per_round": 10, "local_steps": 5}}
"""S and K of each task (ours: the paper's were not found): the first pass's S K = 50, and a horizon with T much
larger than S K = 10."""
BATCH_SIZE = 32
ROUND_SIZES = {**HORIZONS["fashion_mnist"], "batch_size": BATCH_SIZE}
"""S, K and B of the first task (the explorer's and the first pass's)."""
ALPHA, CIFAR_ALPHA, HIDDEN = 1.0, 0.5, (64,)
TASKS = ("fashion_mnist", "fashion_mnist_long", "cifar10")
"""The tasks :func:`tasks` builds: the stand-in at two horizons at every scale, CIFAR-10 at ``paper`` only."""
STAND_IN = ("fashion_mnist", "fashion_mnist_long")
MODEL_LABELS = {"fashion_mnist": "a 784-64-10 MLP standing in for the paper's models",
                "fashion_mnist_long": "a 784-64-10 MLP standing in for the paper's models",
                "cifar10": "ResNet-18 with GroupNorm"}
"""What each task trains, beside the paper's model (a claim's scope names it)."""
METHODS = ("PAdaMFed", "PAdaMFed-VR", "FedAvg", "SCAFFOLD", "SCAFFOLD-M", "SCAFFOLD-M-VR")
PARAMETER_FREE = ("PAdaMFed", "PAdaMFed-VR")
TWO_RATES = ("PAdaMFed", "PAdaMFed-VR", "SCAFFOLD-M", "SCAFFOLD-M-VR")
"""The methods with a local and a server rate: the two readings of the multiplier differ for these only."""
METHODS_AT = {"fashion_mnist": METHODS, "fashion_mnist_long": ("PAdaMFed", "FedAvg", "SCAFFOLD", "SCAFFOLD-M"),
              "cifar10": ("PAdaMFed", "FedAvg")}
"""The methods each task runs (the long horizon leaves out the variance-reduced pair: its cost per step is
twice, and the claims are PAdaMFed's)."""
LEARNING_RATES = half_decades(-2.0, 0.0)
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": LEARNING_RATES},
    "SCAFFOLD": {"client_lr": LEARNING_RATES},
    "SCAFFOLD-M": {"eta": LEARNING_RATES, "beta": [0.1, 0.3, 1.0]},
    "SCAFFOLD-M-VR": {"eta": LEARNING_RATES, "beta": [0.1, 0.3, 1.0]},
}
"""The baselines' grids (ours): learning rates in half-decades from 0.01 to 1; SCAFFOLD-M's server step
``gamma = eta K``.  5 + 5 + 15 + 15 = 40 points, each from every seed."""
READINGS = ("every rate", "local rate")
NEAR_BEST = 0.03
"""'Stable performance': a mean score within three points of the method's best multiplier."""
VARIANTS = {"line 1 for the first round's clients": {"initialization": "first_round"},
            "VR server momentum: the clients' mean direction": {"server_momentum": "mean_direction"}}
"""The readings of the algorithm set beside fedcore's defaults (``initialization="every_client"``, line 16's
server momentum), each for the methods it changes (:data:`VARIANT_METHODS`)."""
VARIANT_METHODS = {"line 1 for the first round's clients": TWO_RATES,
                   "VR server momentum: the clients' mean direction": ("PAdaMFed-VR", "SCAFFOLD-M-VR")}


def multipliers(scale: str) -> list[float]:
    """The robustness figure's multipliers at ``scale``: decades (1/100 ... 100 at small and paper)."""
    low, high = scale_at(SCALES, scale).multipliers
    return [float(10.0**k) for k in range(low, high + 1)]


def round_settings(scale: str, task: str = "fashion_mnist") -> dict[str, Any]:
    """The round settings of ``task``'s runs at ``scale`` (:data:`fedcore.experiments.common.ROUND_SETTINGS`): T
    rounds of S clients, K steps of B (:data:`HORIZONS`), uniform weights, an evaluation every ``eval_every``
    rounds."""
    settings = scale_at(SCALES, scale)
    check_choice("task", task, TASKS)
    if task not in settings.rounds:
        raise ValueError(f"task={task!r} does not run at scale {scale!r}: tasks {list(settings.rounds)}")
    return {"rounds": settings.rounds[task], **HORIZONS[task], "batch_size": BATCH_SIZE,
            "eval_every": settings.eval_every[task], "weighting": "uniform"}


def _model(name: str, shape: tuple[int, ...], classes: int) -> Callable[[int], Any]:
    """The task's model drawn from a seed: the MLP (784-64-10) on 28x28 images, ResNet-18 with GroupNorm on
    CIFAR's 3x32x32."""
    if name == "cifar10":
        return lambda seed: models.make("resnet18_gn", shape, classes, seed=seed)
    return lambda seed: models.make("mlp", shape, classes, seed=seed, hidden=HIDDEN)


def tasks(scale: str, partition_seed: int = 0, device: str = "cpu",
          names: Sequence[str] = STAND_IN) -> dict[str, Task]:
    """``{name: Task}`` for each of ``names`` (:data:`TASKS`): the stand-in at either horizon (Fashion-MNIST dealt
    to the scale's clients by Dirichlet(1), one partition for both) or, at ``paper`` scale only, ``"cifar10"``
    (torchvision's files, Dirichlet(0.5)); the partition and the scale's test subset drawn from
    ``partition_seed``; the model of :func:`_model`; the round settings of :func:`round_settings`; test accuracy
    (in [0, 1]) with its trivial baseline, the most frequent test class (:func:`trivial_baseline` over 100)."""
    settings, partition_seed = scale_at(SCALES, scale), check_seed("partition_seed", partition_seed)
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError(f"names={names!r} must be a non-empty list of task names among {list(TASKS)}")
    built, stand_in = {}, None
    for name in names:
        check_choice("names", name, TASKS)
        if name == "cifar10":
            if scale != "paper":
                raise ValueError(f"names={list(names)!r}: 'cifar10' runs only at scale 'paper' (ResNet-18, "
                                 f"torchvision files); got scale={scale!r}")
            data = load_torchvision("cifar10", settings.clients, "dirichlet", partition_seed, device=device,
                                    alpha=CIFAR_ALPHA).test_subset(settings.test_samples, partition_seed)
        else:
            if stand_in is None:
                stand_in = load_fashion_mnist(settings.clients, "dirichlet", partition_seed, device=device,
                                              alpha=ALPHA).test_subset(settings.test_samples, partition_seed)
            data = stand_in
        built[name] = Task(name, data, _model(name, tuple(data.inputs.shape[1:]), data.num_classes),
                           round_settings(scale, name), baseline=trivial_baseline(data) / 100,
                           model_label=MODEL_LABELS[name])
    return built


def theorem_step_sizes(method: str, settings: Mapping[str, Any]) -> dict[str, float]:
    """Theorem 1's (PAdaMFed) or Theorem 2's (PAdaMFed-VR) ``eta``, ``gamma``, ``beta`` for the S, K and T of the
    round ``settings`` (a :class:`~fedcore.experiments.common.Task`'s)."""
    variant = {"PAdaMFed": "padamfed", "PAdaMFed-VR": "padamfed_vr"}[check_choice("method", method, PARAMETER_FREE)]
    missing = [key for key in ("clients_per_round", "local_steps", "rounds") if key not in settings]
    if missing:
        raise ValueError(f"settings={dict(settings)!r} lacks {missing}: give a task's round settings")
    return theory_hyperparameters(variant, settings["clients_per_round"], settings["local_steps"], settings["rounds"])


Builder = Callable[..., Any]


def make_builders(local_steps: int = ROUND_SIZES["local_steps"]) -> dict[str, Builder]:
    """``{method: build(**hyperparameters, **options)}``: PAdaMFed's from :func:`theorem_step_sizes`, the
    baselines' from :data:`GRIDS` (SCAFFOLD-M's ``gamma = factor * eta * local_steps``, factor 1 unless given);
    ``options`` go to the factory (``initialization``, ``server_momentum``)."""
    K = local_steps
    return {
        "PAdaMFed": lambda eta, gamma, beta, **options: algorithms.padamfed(eta=eta, gamma=gamma, beta=beta,
                                                                            **options),
        "PAdaMFed-VR": lambda eta, gamma, beta, **options: algorithms.padamfed_vr(eta=eta, gamma=gamma, beta=beta,
                                                                                 **options),
        "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
        "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
        "SCAFFOLD-M": lambda eta, beta, factor=1.0, **options: algorithms.scaffold_m(
            eta=eta, gamma=factor * eta * K, beta=beta, **options),
        "SCAFFOLD-M-VR": lambda eta, beta, factor=1.0, **options: algorithms.scaffold_m_vr(
            eta=eta, gamma=factor * eta * K, beta=beta, **options),
    }


def score(history: History) -> float:
    """A run's score: its mean test accuracy over the last four evaluations
    (:func:`fedcore.experiments.common.window_score`; NaN if it diverged)."""
    return window_score(history, "test_accuracy")


def grids(scale: str) -> dict[str, dict[str, list[float]]]:
    """:data:`GRIDS`, or at ``smoke`` (CI) one point of each: the middle of every list."""
    scale_at(SCALES, scale)
    return GRIDS if scale != "smoke" else {method: {name: [values[len(values) // 2]] for name, values in grid.items()}
                                           for method, grid in GRIDS.items()}


def _methods(task: Task, methods: Sequence[str] | None) -> tuple[str, ...]:
    allowed = METHODS_AT.get(task.name, METHODS)
    methods = allowed if methods is None else tuple(methods)
    for method in methods:
        check_choice("methods", method, allowed)
    return methods


def tune(task: Task, scale: str, seeds: Sequence[int], *, methods: Sequence[str] | None = None,
         store: Store | None = None, progress: bool = False) -> Tuning:
    """Grid-search every baseline among ``methods`` (the task's, :data:`METHODS_AT`) on ``task`` (:func:`grids`
    at ``scale``) over ``seeds`` with :func:`fedcore.experiments.common.tune`: each point run for the task's T
    rounds from every seed, the point with the highest mean :func:`score` chosen (``Tuning.chosen``;
    ``Tuning.tables``: every point's scores per seed and their mean)."""
    baselines = {method: grid for method, grid in grids(scale).items() if method in _methods(task, methods)}
    found = common.tune(task, make_builders(task.settings["local_steps"]), baselines, seeds, score,
                        higher_is_better=True, store=store, progress=progress)
    chosen = {method: {key: float(value) for key, value in point.items()} for method, point in found.chosen.items()}
    return Tuning(chosen, found.tables)


def on_edge(tuning: Tuning, scale: str) -> dict[str, list[str]]:
    """``{method: [hyperparameters]}``: the tuned values on an end of their grid at ``scale``
    (:func:`fedcore.experiments.common.on_edge`)."""
    return common.on_edge(tuning.chosen, grids(scale))


def defaults(chosen: Mapping[str, Mapping[str, float]], settings: Mapping[str, Any],
             methods: Sequence[str] = METHODS) -> dict[str, dict[str, float]]:
    """Every method's hyperparameters at multiplier 1: the theorems' for PAdaMFed(-VR) at the round ``settings``'
    S, K, T (:func:`theorem_step_sizes`), the ``chosen`` (tuned) ones for the baselines."""
    missing = [method for method in methods if method not in PARAMETER_FREE and method not in chosen]
    if missing:
        raise ValueError(f"chosen has no hyperparameters for {missing}: give the tuned point of every baseline")
    return {method: dict(theorem_step_sizes(method, settings)) if method in PARAMETER_FREE else dict(chosen[method])
            for method in methods}


def run(task: Task, base: Mapping[str, Mapping[str, float]], seeds: Sequence[int], *,
        methods: Sequence[str] | None = None, options: Mapping[str, Any] | None = None, store: Store | None = None,
        progress: bool = False) -> dict[str, list[History]]:
    """``{method: [History of each seed]}``: each of ``methods`` (the task's) at its ``base`` hyperparameters
    (:func:`defaults`) with the factory ``options`` (:data:`VARIANTS`), on ``task`` from each seed's initial
    model, client sampling and minibatches (:func:`fedcore.experiments.common.run_seeds`: in passes)."""
    methods = _methods(task, methods)
    missing = [method for method in methods if method not in base]
    if missing:
        raise ValueError(f"base has no hyperparameters for {missing}: give base[method] (defaults(...)) for each")
    builders = make_builders(task.settings["local_steps"])
    return run_seeds(task, {method: builders[method](**base[method], **dict(options or {})) for method in methods},
                     seeds, store=store, progress=progress)


def run_variants(task: Task, base: Mapping[str, Mapping[str, float]], seeds: Sequence[int], *,
                 store: Store | None = None, progress: bool = False) -> dict[str, dict[str, list[History]]]:
    """``{variant: {method: [History of each seed]}}``: each reading of :data:`VARIANTS` for the task's methods it
    changes (:data:`VARIANT_METHODS`)."""
    return {variant: run(task, base, seeds, methods=[m for m in VARIANT_METHODS[variant] if m in _methods(task, None)],
                         options=options, store=store, progress=progress)
            for variant, options in VARIANTS.items()}


CHANGE = {CONFIRMED: "higher", CONTRADICTED: "lower", WITHIN_NOISE: "within the noise"}
"""How :func:`variants_table` names the outcome of "the variant scores higher than the default"."""


def variants_table(defaults_runs: Mapping[str, Sequence[History]],
                   variants: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Per (variant, method): the score (mean ± sd over the seeds, in %) with fedcore's default reading and
    with the variant, and the paired difference (variant minus default, ± 2 standard errors) with its outcome
    (:func:`fedcore.experiments.claims.compare`: a change counts only beyond the noise: :data:`CHANGE`)."""
    rows = {}
    for variant, by_method in variants.items():
        for method, histories in by_method.items():
            ours = [score(h) for h in histories]
            default = [score(h) for h in defaults_runs[method]]
            outcome, text = compare(ours, default, scale=100)
            rows[(variant, method)] = {"default (mean ± sd)": mean_and_sd(default),
                                       "variant (mean ± sd)": mean_and_sd(ours),
                                       "variant - default (mean ± 2 SE)": text, "beyond the noise": CHANGE[outcome]}
    return pd.DataFrame(rows).T.rename_axis(["variant", "method"])


def mean_and_sd(scores: Sequence[float], scale: float = 100.0) -> str:
    """``"81.23 ± 0.45"``: the mean ± standard deviation of ``scores`` times ``scale`` (or how many diverged)."""
    return common.mean_sd_cell(scores, scale)


def scores_of(runs: Mapping[str, Sequence[History]]) -> pd.DataFrame:
    """Rows the methods, columns the seeds: :func:`score` of each run of ``runs`` (:func:`run`'s)."""
    return pd.DataFrame({method: [score(h) for h in histories] for method, histories in runs.items()}).T


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


def robustness(task: Task, base: Mapping[str, Mapping[str, float]], factors: Sequence[float],
               seeds: Sequence[int], *, methods: Sequence[str] | None = None, store: Store | None = None,
               progress: bool = False) -> dict[str, pd.DataFrame]:
    """``{reading: table}``: :func:`score` of every method at every multiplier in ``factors`` (rows) from its
    ``base`` hyperparameters (:func:`defaults`) under each reading (:func:`scaled`), from every seed (columns:
    method, seed); a diverged run scores NaN.  The one-rate methods (FedAvg, SCAFFOLD) run once: both readings
    move the same rate.  The multipliers of a method go through :func:`fedcore.sweep` (in passes)."""
    seeds = check_seeds("seeds", seeds)
    factors = [check_positive("factors", f) for f in factors]
    builders, tables = make_builders(task.settings["local_steps"]), {}
    for reading in READINGS:
        columns = {}
        for method in _methods(task, methods):
            if reading != READINGS[0] and method not in TWO_RATES:
                columns.update({key: value for key, value in tables[READINGS[0]].items() if key[0] == method})
                continue

            def build(multiplier: float, method: str = method, reading: str = reading) -> Any:
                return builders[method](**scaled(method, base[method], multiplier, reading))
            swept = common.scores_by_seed(task, build, "multiplier", factors, seeds, score, store=store,
                                          progress=progress)
            columns.update({(method, seed): column for seed, column in swept.items()})
        tables[reading] = columns
    return {reading: common.by_method_seed(columns, "multiplier") for reading, columns in tables.items()}


def robustness_summary(tables: Mapping[str, pd.DataFrame], within: float = NEAR_BEST) -> pd.DataFrame:
    """Per reading and method (rows): the best multiplier (and whether it is an end of the grid: the best may lie
    beyond) and its mean score over the seeds in %, the score at 1, the good range around 1 of the mean scores
    (:func:`fedcore.experiments.common.good_span`: its ends and its width in decades; the grid's resolution is one
    decade) and each seed's own good range in grid points."""
    rows = {}
    for reading, table in tables.items():
        means = mean_over_seeds(table)
        for method in means:
            span = good_span(means[method], within)
            seeds = table[method] if table.columns.nlevels > 1 else means[[method]]
            best = means[method].idxmax()
            rows[(reading, method)] = {
                "best multiplier": best, "best at a grid end": best in (means.index.min(), means.index.max()),
                "best score (%)": round(100 * means[method].max(), 2),
                "score at 1 (%)": round(100 * means[method].loc[1.0], 2),
                "good range": "none (1 is not within)" if span is None else f"{span[0]:g} to {span[1]:g}",
                "width (decades)": math.nan if span is None else math.log10(span[1] / span[0]),
                "per seed (grid points)": ", ".join(str(span_points(seeds[seed], within)) for seed in seeds)}
    return pd.DataFrame(rows).T.rename_axis(["reading", "method"])
