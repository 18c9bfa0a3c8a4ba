"""PAdaMFed's experiments: Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*, ICLR 2025
(notebook ``02_padamfed``).

What the paper reports (its slides and reviews; no numbers, no code): accuracy against rounds on CIFAR-10
(ResNet-18, Dirichlet(0.5)) with PAdaMFed at Theorem 1's step sizes against baselines "perfectly tuned by grid
search", and test accuracy against the learning rate on EMNIST (a 3-layer RNN, Dirichlet(1)): PAdaMFed "maintains
stable performance across a significantly wider range of learning rates".  N, S, K, T, the batch size, the
baselines' grids and the multipliers were not found.  What we choose:

- **The stand-in** for EMNIST: Fashion-MNIST dealt to 100 clients by Dirichlet(1), a one-hidden-layer MLP (64
  units, 50,890 parameters, non-convex), S = 10 clients per round, K = 5 local steps of B = 32, uniform weights
  (the algorithm's ``1/S``); T per scale (:data:`SCALES`).
- **Tuning** (:data:`GRIDS`): FedAvg and SCAFFOLD over the client learning rate; SCAFFOLD-M and SCAFFOLD-M-VR over
  ``eta``, ``beta`` and ``gamma = factor * eta * K`` (factor 1 is SCAFFOLD's server step), each run for the full
  T and scored by the mean test accuracy over the last fifth of the rounds: the most favourable tuning for the
  baselines, so the claim that the untuned method keeps up with them is tested at its hardest.
- **The robustness multiplier** (:func:`scaled`): from each method's own default (Theorem 1 or 2 for PAdaMFed,
  the tuned values for the baselines), half-decades from 1/100 to 100.  Two readings, since the paper does not
  say which rates it moved: ``"every rate"`` multiplies every learning rate of a method (``eta`` and ``gamma``;
  FedAvg's and SCAFFOLD's one client rate), ``"local rate"`` multiplies ``eta`` alone (PAdaMFed's own
  ``multiplier``).  PAdaMFed and SCAFFOLD-M divide by ``eta`` on the server (``g_bar``), so under the second
  reading their server step does not grow with the multiplier.
- **CIFAR-10** (``paper`` scale, torchvision files): ResNet-18 with GroupNorm on 32x32 images, 100 clients by
  Dirichlet(0.5), the same S, K, B.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.algorithms.padamfed import theory_hyperparameters
from fedcore.checks import check_choice, check_positive, check_scale, check_seed
from fedcore.data import FederatedData, load_fashion_mnist
from fedcore.data.sources import load_torchvision
from fedcore.experiments.claims import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, PARTLY, Claim, verdict  # noqa: F401
from fedcore.experiments.claims import claims_table as shared_claims_table
from fedcore.experiments.common import good_range, half_decades, last_rounds_average
from fedcore.experiments.search import grid_search
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate, sweep

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 4, "eval_every": 2, "clients": 20, "test_samples": 200, "multipliers": (-0.5, 0.0)},
    "small": {"rounds": 60, "eval_every": 5, "clients": 100, "test_samples": 2000, "multipliers": (-2.0, 2.0)},
    "paper": {"rounds": 500, "eval_every": 10, "clients": 100, "test_samples": None, "multipliers": (-2.0, 2.0)},
}
"""Per scale: rounds T, evaluation period, clients N, test samples (None: all 10,000) and the log10 range of the
robustness multipliers (half-decades)."""
TASK = {"clients_per_round": 10, "local_steps": 5, "batch_size": 32}
"""S, K and B of every run (ours: the paper's were not found)."""
ALPHA, CIFAR_ALPHA, HIDDEN = 1.0, 0.5, (64,)
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
``gamma = factor * eta * K``.  40 + 30 + 30 = 70 runs."""
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


def load_task(scale: str, seed: int = 0, device: str = "cpu", task: str = "fashion_mnist") -> FederatedData:
    """The stand-in (Fashion-MNIST, Dirichlet(1)) or, at ``paper`` scale, ``task="cifar10"`` (Dirichlet(0.5))."""
    check_choice("task", task, ("fashion_mnist", "cifar10"))
    settings, seed = _scale(scale), check_seed("seed", seed)
    if task == "cifar10":
        if scale != "paper":
            raise ValueError(f"task='cifar10' runs only at scale 'paper' (ResNet-18, torchvision files); got {scale!r}")
        data = load_torchvision("cifar10", settings["clients"], "dirichlet", seed, device=device, alpha=CIFAR_ALPHA)
    else:
        data = load_fashion_mnist(settings["clients"], "dirichlet", seed, device=device, alpha=ALPHA)
    return data.test_subset(settings["test_samples"], seed)


def problem(data: FederatedData, seed: int = 0) -> Problem:
    """The MLP (784-64-10) on 28x28 images, ResNet-18 with GroupNorm on CIFAR's, initialized from ``seed``."""
    shape = tuple(data.inputs.shape[1:])
    if len(shape) == 3 and shape[0] == 3:
        return Problem(data, models.make("resnet18_gn", shape, data.num_classes, seed=seed))
    return Problem(data, models.make("mlp", shape, data.num_classes, seed=seed, hidden=HIDDEN))


def options(scale: str, seed: int = 0, **extra: Any) -> dict[str, Any]:
    """``simulate``'s options at ``scale``: T rounds of S clients, K steps of B, uniform weights."""
    settings = _scale(scale)
    return {**TASK, "rounds": settings["rounds"], "eval_every": settings["eval_every"], "weighting": "uniform",
            "seed": check_seed("seed", seed), "progress": False, **extra}


def theory(method: str, rounds: int) -> dict[str, float]:
    """Theorem 1's (PAdaMFed) or Theorem 2's (PAdaMFed-VR) ``eta``, ``gamma``, ``beta`` for :data:`TASK`'s S, K."""
    variant = {"PAdaMFed": "padamfed", "PAdaMFed-VR": "padamfed_vr"}[check_choice("method", method, PARAMETER_FREE)]
    return theory_hyperparameters(variant, TASK["clients_per_round"], TASK["local_steps"], rounds)


Builder = Callable[..., Any]
BUILDERS: dict[str, Builder] = {
    "PAdaMFed": lambda eta, gamma, beta: algorithms.padamfed(eta=eta, gamma=gamma, beta=beta),
    "PAdaMFed-VR": lambda eta, gamma, beta: algorithms.padamfed_vr(eta=eta, gamma=gamma, beta=beta),
    "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
    "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
    "SCAFFOLD-M": lambda eta, beta, factor: algorithms.scaffold_m(eta=eta, gamma=factor * eta * TASK["local_steps"],
                                                                  beta=beta),
    "SCAFFOLD-M-VR": lambda eta, beta, factor: algorithms.scaffold_m_vr(
        eta=eta, gamma=factor * eta * TASK["local_steps"], beta=beta),
}
"""``{method: build(**hyperparameters)}``: PAdaMFed's from :func:`theory`, the baselines' from :data:`GRIDS`."""


def score(history: History) -> float:
    """A run's score: mean test accuracy over the last fifth of its rounds (NaN if it diverged)."""
    return last_rounds_average(history, "test_accuracy", METRIC_FRACTION)


def grids(scale: str) -> dict[str, dict[str, list[float]]]:
    """:data:`GRIDS`, or at ``smoke`` (CI) one point of each: the middle of every list."""
    _scale(scale)
    return GRIDS if scale != "smoke" else {method: {name: [values[len(values) // 2]] for name, values in grid.items()}
                                           for method, grid in GRIDS.items()}


def tune(problem: Problem, scale: str = "small",
         **run: Any) -> tuple[dict[str, dict[str, float]], dict[str, pd.DataFrame]]:
    """Grid-search every baseline (:func:`grids` at ``scale``; :func:`~fedcore.experiments.search.grid_search`,
    ``run``: simulate's options, the results store among them).  Returns the best point of each grid (highest
    :func:`score`) and the full tables."""
    return grid_search(problem, grids(scale), BUILDERS, score, **run)


def defaults(chosen: Mapping[str, Mapping[str, float]], rounds: int) -> dict[str, dict[str, float]]:
    """Every method's hyperparameters at multiplier 1: the theorems' for PAdaMFed(-VR), the tuned ones for the
    baselines."""
    return {method: dict(theory(method, rounds)) if method in PARAMETER_FREE else dict(chosen[method])
            for method in METHODS}


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


def run_quietly(problem: Problem, algorithm: Any, **run: Any) -> History:
    """:func:`fedcore.simulate` without its warning when a run diverges: the sweeps of this notebook expect some
    runs to diverge, and show them as NaN (a gap in the figure) or inf instead (``History.diverged`` says so)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* diverged at round", category=RuntimeWarning)
        return simulate(problem, algorithm, **run)


def robustness(problem: Problem, base: Mapping[str, Mapping[str, float]], factors: list[float],
               reading: str = "every rate", **run: Any) -> pd.DataFrame:
    """:func:`score` of every method at every multiplier in ``factors`` (rows) from its ``base`` hyperparameters
    (:func:`defaults`), under ``reading`` (:func:`scaled`); a diverged run scores NaN.  Each method's multipliers
    go through :func:`fedcore.sweep` (several runs in one pass where the backend gains by it)."""
    table = {}
    for method in METHODS:
        def build(multiplier: float, method: str = method) -> Any:
            return BUILDERS[method](**scaled(method, base[method], multiplier, reading))
        swept = sweep(problem, build, {"multiplier": list(factors)}, summary=lambda h: {"score": score(h)}, **run)
        table[method] = dict(zip(factors, swept["score"] if "score" in swept else [math.nan] * len(factors)))
    return pd.DataFrame(table).rename_axis("multiplier")


def robustness_summary(table: pd.DataFrame, within: float = NEAR_BEST) -> pd.DataFrame:
    """Per method: its best score, at which multiplier, and the good range in decades (:func:`good_range`)."""
    return pd.DataFrame({method: {"best score": table[method].max(), "best multiplier": table[method].idxmax(),
                                  f"decades within {within:g} of best": good_range(table[method], within)}
                         for method in table}).T


# ------------------------------------------------------------------ the paper's claims as data

KEEPS_UP = 0.03
"""'State-of-the-art performance': a score within three points of the best tuned baseline."""


@dataclass(frozen=True)
class Evidence:
    """The scores at multiplier 1 (``{method: score}``), the robustness tables per reading, and the quadratic's
    gradient ratios (``padamfed_theory.smoothness_table``: rows L, columns methods)."""

    scores: Mapping[str, float]
    robustness: Mapping[str, pd.DataFrame]
    smoothness: pd.DataFrame | None = None


def _keeps_up(e: Evidence) -> tuple[str, str]:
    baselines = {m: s for m, s in e.scores.items() if m not in PARAMETER_FREE}
    best = max(baselines, key=lambda m: -math.inf if math.isnan(baselines[m]) else baselines[m])
    checks = {m: e.scores[m] >= baselines[best] - KEEPS_UP for m in PARAMETER_FREE}
    ours = ", ".join(f"{m} {e.scores[m]:.3f}" for m in PARAMETER_FREE) + f" (untuned); best tuned {best} " \
        f"{baselines[best]:.3f}"
    return ours, verdict(sum(checks.values()), len(checks))


JUDGED_READING = "every rate"
"""The reading the robustness claim is judged on: the one that moves every method's whole step (under "local
rate" PAdaMFed's server step is untouched by construction, so a flat curve there is not evidence)."""


def _wider(e: Evidence) -> tuple[str, str]:
    if JUDGED_READING not in e.robustness:
        return f"no runs under the reading {JUDGED_READING!r}", NOT_TESTABLE
    parts, passed, total = [], [], 0
    for reading, table in e.robustness.items():
        widths = {m: good_range(table[m], NEAR_BEST) for m in table}
        parts.append(f"{reading}: " + ", ".join(f"{m} {w:.1f}" for m, w in widths.items()))
        if reading == JUDGED_READING:
            pairs = [(ours, other) for ours in PARAMETER_FREE for other in table if other not in PARAMETER_FREE]
            total = len(pairs)
            passed = [f"{ours} > {other}" for ours, other in pairs if widths[ours] > widths[other]]
    checks = f"judged on {JUDGED_READING!r}: {len(passed)} of {total} pairs wider ({', '.join(passed) or 'none'})"
    return f"decades within 3 points of the best: {'; '.join(parts)}; {checks}", verdict(len(passed), total)


def _free(e: Evidence) -> tuple[str, str]:
    if e.smoothness is None:
        return "no quadratic runs", NOT_TESTABLE
    table = e.smoothness
    parts = [f"{m}: final/initial gradient {table[m].min():.3g}-{table[m].max():.3g} for L from "
             f"{table.index.min():.3g} to {table.index.max():.3g}" for m in PARAMETER_FREE if m in table]
    fixed = [m for m in table if m not in PARAMETER_FREE]
    parts += [f"{m} at one client rate: above 1 for L >= {min(table.index[table[m] >= 1]):.3g}" for m in fixed
              if (table[m] >= 1).any()]
    checks = [bool((table[m] < 1).all()) for m in PARAMETER_FREE if m in table]
    return "; ".join(parts), verdict(sum(checks), len(checks))


CLAIMS: tuple[Claim, ...] = (
    Claim("Step sizes from S, K, T alone work whatever the scale of the problem's constants (Theorems 1-2, "
          "Remark 1; tested by scaling f)", _free),
    Claim("Untuned, PAdaMFed performs like baselines tuned by grid search (Figure 1, CIFAR-10)", _keeps_up),
    Claim("PAdaMFed stays stable over a 'significantly wider range of learning rates' (Figure 2, EMNIST)", _wider),
)
"""The slides' claims, in the notebook's order."""


def claims_table(evidence: Evidence, claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim: the claim, what our results show and the verdict."""
    return shared_claims_table(evidence, claims)
