"""What Yan, Zhang, Wang & Cao (*Problem-Parameter-Free Federated Learning*, ICLR 2025) report, and our verdicts on
their claims, judged by the shared rules of :mod:`fedcore.experiments.claims`.

We have the paper's slides and reviews, not its full text: a comparison of what each method's step sizes need
(:data:`STEP_SIZE_TABLE`), two figures described in words (:data:`FIGURES`) and no table of results, so no number
of the paper can be printed beside ours.  The claims (:data:`CLAIMS`) are judged on the notebook's
:class:`Evidence`: the scaled quadratics (:mod:`~fedcore.experiments.padamfed.theory`), the untuned-against-tuned
scores and the robustness tables (:mod:`~fedcore.experiments.padamfed.experiment`).  Each verdict counts checks
(:func:`fedcore.experiments.claims.verdict`) on one seed, the notebook's first pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from fedcore.experiments.claims import NOT_TESTABLE, Claim, Judgement, Scope, verdict
from fedcore.experiments.claims import claims_table as shared_claims_table
from fedcore.experiments.common import good_range
from fedcore.experiments.padamfed.experiment import NEAR_BEST, PARAMETER_FREE

STEP_SIZE_TABLE = pd.DataFrame(
    [
        ("SCAFFOLD (Karimireddy et al., 2020)", "-", "gamma = sqrt(S), eta <= (S/N)^(2/3) / (24 gamma K L)", "L",
         "O((N/S)^(1/3) L / (K eps^4))"),
        ("Mime (Karimireddy et al., 2020)", "BDH, BHD", "eta = sqrt(Delta S / (L G T K^2)), G = sigma_h^2 + sigma^2/K",
         "L, Delta, sigma^2, sigma_h^2", "O(1 / (S K eps^4))"),
        ("FedSPS (Mukherjee et al., 2024)", "BDH", "Polyak step capped by eta_b <= min(1/(2cL), 1/(25LK))",
         "L, l_i^*", "O(1 / (N K eps^4))"),
        ("SCAFFOLD-M (Cheng et al., 2024)", "-", "beta = min(1, S/N^(2/3), sqrt(L Delta S K / (sigma^2 T)), ...), "
         "gamma = beta / L, eta K L <~ ...", "L, Delta, sigma^2, G_0", "O(1 / (S K eps^4))"),
        ("PAdaMFed (Yan et al.)", "-", "beta = sqrt(SK/T), gamma = (SK)^(1/4) / T^(3/4), eta = 1 / (K sqrt T)", "-",
         "O(1 / (S K eps^4))"),
        ("FAFED (Wu et al., 2023)", "BDH, BG", "eta_t ~ N^(2/3) / (L t^(1/3)), beta_t ~ eta_t^2", "L",
         "O(1 / (S K eps^3))"),
        ("SCAFFOLD-M-VR (Cheng et al., 2024)", "-", "beta = min(S/N, (K L Delta / (sigma^2 T))^(2/3), S^(1/3)), "
         "gamma L = min(1, sqrt(beta S)), eta K L <~ ...", "L, Delta, sigma^2", "O(1 / (S sqrt(K) eps^4))"),
        ("PAdaMFed-VR (Yan et al.)", "-", "beta = gamma = (SK)^(1/3) / T^(2/3), eta = 1 / (K T)", "-",
         "O(1 / (S K eps^3))"),
    ],
    columns=["method", "extra assumptions", "step sizes", "problem constants the step sizes need",
             "communication complexity (as the slides print it)"],
).set_index("method")
"""The slides' "Comparisons with Prior Work" (BDH: bounded data heterogeneity, BHD: bounded Hessian
dissimilarity, BG: bounded gradients).  The first five rows are without variance reduction, the last three with."""

FIGURES = {
    "untuned vs tuned": "Figure 1: test accuracy against rounds on CIFAR-10 (ResNet-18, Dir(0.5)); 'our approach "
                        "achieves state-of-the-art performance while eliminating the tedious stepsize tuning'; "
                        "baselines 'perfectly tuned by grid search'",
    "robustness": "Figure 2: test accuracy against the learning rate on EMNIST (3-layer RNN, Dir(1)); 'superior "
                  "robustness to stepsize selection, maintaining stable performance across a significantly wider "
                  "range of learning rates'",
}
"""The slides' two experiment figures, as the slides describe them (no numbers are given)."""
HERE = {
    "untuned vs tuned": "section 3: Fashion-MNIST stand-in, MLP, Dir(1), baselines tuned on a stated grid; CIFAR-10 "
                        "only at SCALE=paper",
    "robustness": "section 4: the same stand-in, multipliers 1/100 to 100, two readings",
}
"""Where the notebook sets each figure's experiment, and how ours differs."""


def figures_table() -> pd.DataFrame:
    """The slides' figures (:data:`FIGURES`) beside where the notebook reproduces each (:data:`HERE`)."""
    return pd.DataFrame({"the paper (slides)": list(FIGURES.values()), "here": [HERE[name] for name in FIGURES]},
                        index=list(FIGURES))


# ------------------------------------------------------------------ the claims

KEEPS_UP = 0.03
"""'State-of-the-art performance': a score within three points of the best tuned baseline."""
JUDGED_READING = "every rate"
"""The reading the robustness claim is judged on: the one that moves every method's whole step (under "local
rate" PAdaMFed's server step is untouched by construction, so a flat curve there is not evidence)."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: the scores at multiplier 1 (``{method: score}``), the robustness tables per
    reading (``{reading: table}``, rows the multipliers, columns the methods), the quadratic's gradient ratios
    (:func:`fedcore.experiments.padamfed.theory.smoothness_table`: rows L, columns methods), and the
    :class:`~fedcore.experiments.claims.Scope` of each: ``scope`` of the stand-in experiment's runs (task, scale,
    rounds, seeds, model), ``smoothness_scope`` of the quadratics' runs."""

    scores: Mapping[str, float]
    robustness: Mapping[str, pd.DataFrame]
    smoothness: pd.DataFrame | None = None
    scope: Scope | None = None
    smoothness_scope: Scope | None = None


def _scope(scope: Scope | None, judged: bool = True) -> Scope:
    """``scope`` (an unknown one when the notebook gave none), narrowed to no task when nothing was judged."""
    scope = scope or Scope((), "?", None, ())
    return scope if judged else scope.narrowed([])


def _keeps_up(e: Evidence) -> Judgement:
    baselines = {m: s for m, s in e.scores.items() if m not in PARAMETER_FREE}
    best = max(baselines, key=lambda m: -math.inf if math.isnan(baselines[m]) else baselines[m])
    checks = {m: e.scores[m] >= baselines[best] - KEEPS_UP for m in PARAMETER_FREE}
    ours = ", ".join(f"{m} {e.scores[m]:.3f}" for m in PARAMETER_FREE) + f" (untuned); best tuned {best} " \
        f"{baselines[best]:.3f}"
    return Judgement(ours, verdict(sum(checks.values()), len(checks)), _scope(e.scope))


def _wider(e: Evidence) -> Judgement:
    if JUDGED_READING not in e.robustness:
        return Judgement(f"no runs under the reading {JUDGED_READING!r}", NOT_TESTABLE, _scope(e.scope, False))
    parts, passed, total = [], [], 0
    for reading, table in e.robustness.items():
        widths = {m: good_range(table[m], NEAR_BEST) for m in table}
        parts.append(f"{reading}: " + ", ".join(f"{m} {w:.1f}" for m, w in widths.items()))
        if reading == JUDGED_READING:
            pairs = [(ours, other) for ours in PARAMETER_FREE for other in table if other not in PARAMETER_FREE]
            total = len(pairs)
            passed = [f"{ours} > {other}" for ours, other in pairs if widths[ours] > widths[other]]
    checks = f"judged on {JUDGED_READING!r}: {len(passed)} of {total} pairs wider ({', '.join(passed) or 'none'})"
    return Judgement(f"decades within 3 points of the best: {'; '.join(parts)}; {checks}",
                     verdict(len(passed), total), _scope(e.scope))


def _free(e: Evidence) -> Judgement:
    if e.smoothness is None:
        return Judgement("no quadratic runs", NOT_TESTABLE, _scope(e.smoothness_scope, False))
    table = e.smoothness
    parts = [f"{m}: final/initial gradient {table[m].min():.3g}-{table[m].max():.3g} for L from "
             f"{table.index.min():.3g} to {table.index.max():.3g}" for m in PARAMETER_FREE if m in table]
    fixed = [m for m in table if m not in PARAMETER_FREE]
    parts += [f"{m} at one client rate: above 1 for L >= {min(table.index[table[m] >= 1]):.3g}" for m in fixed
              if (table[m] >= 1).any()]
    checks = [bool((table[m] < 1).all()) for m in PARAMETER_FREE if m in table]
    return Judgement("; ".join(parts), verdict(sum(checks), len(checks)), _scope(e.smoothness_scope))


CLAIMS: tuple[Claim, ...] = (
    Claim("Step sizes from S, K, T alone work whatever the scale of the problem's constants (Theorems 1-2, "
          "Remark 1; tested by scaling f)", _free),
    Claim("Untuned, PAdaMFed performs like baselines tuned by grid search (Figure 1, CIFAR-10)", _keeps_up),
    Claim("PAdaMFed stays stable over a 'significantly wider range of learning rates' (Figure 2, EMNIST)", _wider),
)
"""The slides' claims, in the notebook's order."""


def claims_table(evidence: Evidence, claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim: the claim, what our results show, the verdict, its scope and its number of seeds
    (:func:`fedcore.experiments.claims.claims_table`)."""
    return shared_claims_table(evidence, claims)
