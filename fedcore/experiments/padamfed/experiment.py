"""PAdaMFed's experiments: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025
(notebook ``02_padamfed``), on the common layer (:mod:`fedcore.experiments.common`).

What the paper reports (:mod:`~fedcore.experiments.padamfed.paper`): accuracy against rounds on CIFAR-10
(ResNet-18, Dirichlet(0.5)) with PAdaMFed at Theorem 1's step sizes against baselines "perfectly tuned by grid
search", and test accuracy against the learning rate on EMNIST (a 3-layer RNN, Dirichlet(1)).  N, S, K, T, the
batch size, the baselines' grids and the multipliers were not found.  What we choose:

- **The stand-in** for EMNIST (:func:`tasks`, ``"fashion_mnist"``): Fashion-MNIST dealt to 100 clients by
  Dirichlet(1), a one-hidden-layer MLP (64 units, 50,890 parameters, non-convex), S = 10 clients per round, K = 5
  local steps of B = 32, uniform weights (the algorithm's ``1/S``); T per scale (:data:`SCALES`).
- **Tuning** (:data:`GRIDS`, :func:`tune`): FedAvg and SCAFFOLD over the client learning rate; SCAFFOLD-M and
  SCAFFOLD-M-VR over ``eta``, ``beta`` and ``gamma = factor * eta * K`` (factor 1 is SCAFFOLD's server step),
  each run for the full T and scored by the mean test accuracy over the last fifth of the rounds (:func:`score`):
  the most favourable tuning for the baselines, so the claim that the untuned method keeps up with them is tested
  at its hardest.
- **The robustness multiplier** (:func:`scaled`, :func:`robustness`): from each method's own default (Theorem 1
  or 2 for PAdaMFed, the tuned values for the baselines), half-decades from 1/100 to 100.  Two readings, since the
  paper does not say which rates it moved: ``"every rate"`` multiplies every learning rate of a method (``eta``
  and ``gamma``; FedAvg's and SCAFFOLD's one client rate), ``"local rate"`` multiplies ``eta`` alone (PAdaMFed's
  own ``multiplier``).  PAdaMFed and SCAFFOLD-M divide by ``eta`` on the server (``g_bar``), so under the second
  reading their server step does not grow with the multiplier.
- **CIFAR-10** (``paper`` scale, torchvision files; :func:`tasks` with ``"cifar10"``): ResNet-18 with GroupNorm on
  32x32 images, 100 clients by Dirichlet(0.5), the same S, K, B.

The partition is drawn once (``partition_seed``) and stays fixed; a seed draws the initial model, the client
sampling and the minibatches (:class:`~fedcore.experiments.common.Task`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.algorithms.padamfed import theory_hyperparameters
from fedcore.checks import check_choice, check_positive, check_scale, check_seed
from fedcore.data import load_fashion_mnist
from fedcore.data.sources import load_torchvision
from fedcore.experiments import common
from fedcore.experiments.claims import trivial_baseline
from fedcore.experiments.common import Task, Tuning, good_range, half_decades, last_rounds_average
from fedcore.results import History
from fedcore.run import simulate, sweep
from fedcore.store import Store

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 4, "eval_every": 2, "clients": 20, "test_samples": 200, "multipliers": (-0.5, 0.0)},
    "small": {"rounds": 60, "eval_every": 5, "clients": 100, "test_samples": 2000, "multipliers": (-2.0, 2.0)},
    "paper": {"rounds": 500, "eval_every": 10, "clients": 100, "test_samples": None, "multipliers": (-2.0, 2.0)},
}
"""Per scale: rounds T, evaluation period, clients N, test samples (None: all 10,000) and the log10 range of the
robustness multipliers (half-decades)."""
ROUND_SIZES = {"clients_per_round": 10, "local_steps": 5, "batch_size": 32}
"""S, K and B of every run (ours: the paper's were not found)."""
ALPHA, CIFAR_ALPHA, HIDDEN = 1.0, 0.5, (64,)
TASKS = ("fashion_mnist", "cifar10")
"""The tasks :func:`tasks` builds: the stand-in for EMNIST at every scale, CIFAR-10 at ``paper`` only."""
MODEL_LABELS = {"fashion_mnist": "a 784-64-10 MLP standing in for the paper's models",
                "cifar10": "ResNet-18 with GroupNorm"}
"""What each task trains, beside the paper's model (a claim's scope names it)."""
METHODS = ("PAdaMFed", "PAdaMFed-VR", "FedAvg", "SCAFFOLD", "SCAFFOLD-M", "SCAFFOLD-M-VR")
PARAMETER_FREE = ("PAdaMFed", "PAdaMFed-VR")
LEARNING_RATES = half_decades(-2.0, 0.0)
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": LEARNING_RATES},
    "SCAFFOLD": {"client_lr": LEARNING_RATES},
    "SCAFFOLD-M": {"eta": LEARNING_RATES, "beta": [0.1, 0.3, 1.0], "factor": [1.0, 10**0.5]},
    "SCAFFOLD-M-VR": {"eta": LEARNING_RATES, "beta": [0.1, 0.3, 1.0], "factor": [1.0, 10**0.5]},
}
"""The baselines' grids (ours): learning rates in half-decades from 0.01 to 1; SCAFFOLD-M's server step
``gamma = factor * eta * K``.  5 + 5 + 30 + 30 = 70 runs."""
READINGS = ("every rate", "local rate")
METRIC_FRACTION = 0.2
"""The score of a run: its mean test accuracy over the last fifth of the rounds."""
NEAR_BEST = 0.03
"""'Stable performance': within three points of the method's best multiplier."""


def _scale(scale: str) -> dict[str, Any]:
    return check_scale(scale, SCALES)


def multipliers(scale: str) -> list[float]:
    """The robustness figure's multipliers at ``scale``: half-decades (1/100 ... 100 at small and paper)."""
    return half_decades(*_scale(scale)["multipliers"])


def round_settings(scale: str) -> dict[str, Any]:
    """The round settings of every run at ``scale`` (:data:`fedcore.experiments.common.ROUND_SETTINGS`): T rounds
    of S clients, K steps of B (:data:`ROUND_SIZES`), uniform weights, an evaluation every ``eval_every`` rounds."""
    settings = _scale(scale)
    return {"rounds": settings["rounds"], **ROUND_SIZES, "eval_every": settings["eval_every"],
            "weighting": "uniform"}


def _model(name: str, shape: tuple[int, ...], classes: int) -> Callable[[int], Any]:
    """The task's model drawn from a seed: the MLP (784-64-10) on 28x28 images, ResNet-18 with GroupNorm on
    CIFAR's 3x32x32."""
    if name == "cifar10":
        return lambda seed: models.make("resnet18_gn", shape, classes, seed=seed)
    return lambda seed: models.make("mlp", shape, classes, seed=seed, hidden=HIDDEN)


def tasks(scale: str, partition_seed: int = 0, device: str = "cpu",
          names: Sequence[str] = ("fashion_mnist",)) -> dict[str, Task]:
    """``{name: Task}`` for each of ``names`` (:data:`TASKS`): the stand-in (Fashion-MNIST dealt to the scale's
    clients by Dirichlet(1)) or, at ``paper`` scale only, ``"cifar10"`` (torchvision's files, Dirichlet(0.5)); the
    partition and the scale's test subset drawn from ``partition_seed``; the model of :func:`_model`; the round
    settings of :func:`round_settings`; test accuracy (in [0, 1]) with its trivial baseline, the most frequent
    test class (:func:`fedcore.experiments.claims.trivial_baseline` over 100)."""
    settings, partition_seed = _scale(scale), check_seed("partition_seed", partition_seed)
    if isinstance(names, str) or not isinstance(names, Sequence) or not names:
        raise ValueError(f"names={names!r} must be a non-empty list of task names among {list(TASKS)}")
    built = {}
    for name in names:
        check_choice("names", name, TASKS)
        if name == "cifar10":
            if scale != "paper":
                raise ValueError(f"names={list(names)!r}: 'cifar10' runs only at scale 'paper' (ResNet-18, "
                                 f"torchvision files); got scale={scale!r}")
            data = load_torchvision("cifar10", settings["clients"], "dirichlet", partition_seed, device=device,
                                    alpha=CIFAR_ALPHA)
        else:
            data = load_fashion_mnist(settings["clients"], "dirichlet", partition_seed, device=device, alpha=ALPHA)
        data = data.test_subset(settings["test_samples"], partition_seed)
        built[name] = Task(name, data, _model(name, tuple(data.inputs.shape[1:]), data.num_classes),
                           round_settings(scale), baseline=trivial_baseline(data) / 100,
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
def make_builders() -> dict[str, Builder]:
    """``{method: build(**hyperparameters)}``: PAdaMFed's from :func:`theorem_step_sizes`, the baselines' from
    :data:`GRIDS` (every paper's experiment names its builders so)."""
    return dict(_BUILDERS)


_BUILDERS: dict[str, Builder] = {
    "PAdaMFed": lambda eta, gamma, beta: algorithms.padamfed(eta=eta, gamma=gamma, beta=beta),
    "PAdaMFed-VR": lambda eta, gamma, beta: algorithms.padamfed_vr(eta=eta, gamma=gamma, beta=beta),
    "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
    "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
    "SCAFFOLD-M": lambda eta, beta, factor: algorithms.scaffold_m(
        eta=eta, gamma=factor * eta * ROUND_SIZES["local_steps"], beta=beta),
    "SCAFFOLD-M-VR": lambda eta, beta, factor: algorithms.scaffold_m_vr(
        eta=eta, gamma=factor * eta * ROUND_SIZES["local_steps"], beta=beta),
}


def score(history: History) -> float:
    """A run's score: mean test accuracy over the last fifth of its rounds (NaN if it diverged)."""
    return last_rounds_average(history, "test_accuracy", METRIC_FRACTION)


def grids(scale: str) -> dict[str, dict[str, list[float]]]:
    """:data:`GRIDS`, or at ``smoke`` (CI) one point of each: the middle of every list (not
    :func:`~fedcore.experiments.common.grids_at`'s ends: the notebook's smoke numbers stay those of its first
    pass)."""
    _scale(scale)
    return GRIDS if scale != "smoke" else {method: {name: [values[len(values) // 2]] for name, values in grid.items()}
                                           for method, grid in GRIDS.items()}


def tune(task: Task, scale: str, seeds: Sequence[int], *, store: Store | None = None,
         progress: bool = False) -> Tuning:
    """Grid-search every baseline on ``task`` (:func:`grids` at ``scale``) over ``seeds`` with
    :func:`fedcore.experiments.common.tune`: each point run for the task's T rounds, the point with the highest
    mean :func:`score` over the seeds chosen (``Tuning.chosen``; ``Tuning.tables``: every point's scores)."""
    found = common.tune(task, make_builders(), grids(scale), seeds, score, higher_is_better=True, store=store,
                        progress=progress)
    chosen = {method: {key: float(value) for key, value in point.items()} for method, point in found.chosen.items()}
    return Tuning(chosen, found.tables)


def defaults(chosen: Mapping[str, Mapping[str, float]], settings: Mapping[str, Any]) -> dict[str, dict[str, float]]:
    """Every method's hyperparameters at multiplier 1: the theorems' for PAdaMFed(-VR) at the round ``settings``'
    S, K, T (:func:`theorem_step_sizes`), the ``chosen`` (tuned) ones for the baselines."""
    missing = [method for method in METHODS if method not in PARAMETER_FREE and method not in chosen]
    if missing:
        raise ValueError(f"chosen has no hyperparameters for {missing}: give the tuned point of every baseline")
    return {method: dict(theorem_step_sizes(method, settings)) if method in PARAMETER_FREE else dict(chosen[method])
            for method in METHODS}


def run(task: Task, base: Mapping[str, Mapping[str, float]], seed: int, *, methods: Sequence[str] = METHODS,
        store: Store | None = None, progress: bool = False) -> dict[str, History]:
    """``{method: History}``: each of ``methods`` at its ``base`` hyperparameters (:func:`defaults`) on ``task``
    from ``seed``'s initial model, client sampling and minibatches (:func:`fedcore.simulate`, one run each)."""
    seed = check_seed("seed", seed)
    missing = [check_choice("methods", method, METHODS) for method in methods if method not in base]
    if missing:
        raise ValueError(f"base has no hyperparameters for {missing}: give base[method] (defaults(...)) for each")
    problem = task.problem(seed)
    return {method: simulate(problem, _BUILDERS[method](**base[method]), **task.settings, seed=seed, store=store,
                             progress=progress) for method in methods}


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
    if "factor" in values and reading == "local rate":
        values["factor"] /= m
    return values


def robustness(task: Task, base: Mapping[str, Mapping[str, float]], factors: Sequence[float], seed: int,
               reading: str = "every rate", *, store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """:func:`score` of every method at every multiplier in ``factors`` (rows) from its ``base`` hyperparameters
    (:func:`defaults`), under ``reading`` (:func:`scaled`), on ``task`` from ``seed``; a diverged run scores NaN.
    Each method's multipliers go through :func:`fedcore.sweep` (several runs in one pass where the backend gains
    by it)."""
    problem, factors = task.problem(check_seed("seed", seed)), [check_positive("factors", f) for f in factors]
    table = {}
    for method in METHODS:
        def build(multiplier: float, method: str = method) -> Any:
            return _BUILDERS[method](**scaled(method, base[method], multiplier, reading))
        swept = sweep(problem, build, {"multiplier": factors}, summary=lambda h: {"score": score(h)}, seed=seed,
                      store=store, progress=progress, **task.settings)
        table[method] = dict(zip(factors, swept["score"] if "score" in swept else [math.nan] * len(factors)))
    return pd.DataFrame(table).rename_axis("multiplier")


def robustness_summary(table: pd.DataFrame, within: float = NEAR_BEST) -> pd.DataFrame:
    """Per method: its best score, at which multiplier, and the good range in decades (:func:`good_range`)."""
    return pd.DataFrame({method: {"best score": table[method].max(), "best multiplier": table[method].idxmax(),
                                  f"decades within {within:g} of best": good_range(table[method], within)}
                         for method in table}).T
