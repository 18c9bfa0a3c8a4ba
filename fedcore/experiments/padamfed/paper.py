"""What Yan, Zhang, Wang & Cao (*Problem-Parameter-Free Federated Learning*, ICLR 2025) report, and our verdicts on
their claims (:data:`CLAIMS`) by the shared rules of :mod:`fedcore.experiments.claims`.  We have the slides, not the
main text: what each method's step sizes need (:data:`STEP_SIZE_TABLE`), two figures described in words
(:data:`FIGURES`) and no table of results, so no number of the paper can be printed beside ours."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from fedcore.experiments.claims import CONFIRMED, NOT_TESTABLE, OUTCOMES, Claim, Judgement, Scope, compare, judge
from fedcore.experiments.claims import claims_table as shared_claims_table
from fedcore.experiments.padamfed.experiment import PARAMETER_FREE, good_points
from fedcore.experiments.padamfed.theory import (
    HETEROGENEITY_NAME,
    REPARAMETRIZED_NAME,
    SEED,
    TARGET,
    TASK_NAME,
    mean_ratios,
)

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

FIGURES = pd.DataFrame({
    "the paper (slides)": {
        "untuned vs tuned": "Figure 1: test accuracy against rounds on CIFAR-10 (ResNet-18, Dir(0.5)); 'our approach "
                            "achieves state-of-the-art performance while eliminating the tedious stepsize tuning'; "
                            "baselines 'perfectly tuned by grid search'",
        "robustness": "Figure 2: test accuracy against the learning rate on EMNIST (3-layer RNN, Dir(1)); 'superior "
                      "robustness to stepsize selection, maintaining stable performance across a significantly "
                      "wider range of learning rates'"},
    "here": {
        "untuned vs tuned": "section 3: Fashion-MNIST stand-in, MLP, Dir(1), two horizons, three seeds, baselines "
                            "tuned on a stated grid; CIFAR-10 only at SCALE=paper, as a demonstration",
        "robustness": "section 4: the same stand-in, multipliers 1/100 to 100 in decades, two readings, three seeds"},
})
"""The slides' two experiment figures as they describe them (no numbers), beside where and how we run each."""


# ------------------------------------------------------------------ the claims

KEEPS_UP = 0.03
"""'State-of-the-art performance': a score within three points of the best tuned baseline."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: per task, the ``scores`` at multiplier 1 (``Results.scores().loc[task]``) and
    the ``robustness`` tables (``{reading: table}``); the quadratics' gradient ratios; what the runs rest on."""

    scores: Mapping[str, pd.DataFrame]
    robustness: Mapping[str, Mapping[str, pd.DataFrame]]
    reparametrization: pd.DataFrame | None = None
    heterogeneity: pd.DataFrame | None = None
    smoothness: pd.DataFrame | None = None
    scope: Scope | None = None
    quadratics_scope: Scope | None = None


def _scope(scope: Scope | None, tasks: Sequence[str] | None = None) -> Scope:
    """``scope`` (an unknown one when the notebook gave none), narrowed to ``tasks`` when given."""
    scope = scope or Scope((), "?", None, ())
    return scope if tasks is None else scope.narrowed(list(tasks))


def _halves(ratios: pd.Series) -> str:
    """The outcome of "the run ends with at most TARGET of its initial gradient norm", over the seeds of
    ``ratios``: the paired comparison of log10(1/ratio) with log10(1/TARGET) (a diverged run, inf, fails)."""
    progress = [-math.log10(r) if math.isfinite(r) else math.nan for r in ratios.astype(float)]
    return compare(progress, [0.0] * len(progress), margin=-math.log10(TARGET))[0]


def _ratio_text(table: pd.DataFrame, method: str) -> str:
    return ", ".join(f"{index:.3g}: {value:.2g}" for index, value in mean_ratios(table)[method].items())


def _quadratic_claim(table: pd.DataFrame | None, methods: Sequence[str], what: str, scope: Scope | None,
                     task: str, others: Sequence[str] = ()) -> Judgement:
    if table is None:
        return Judgement("no quadratic runs", NOT_TESTABLE, _scope(scope, []))
    outcomes = {(m, row): _halves(table.loc[row, m]) for m in methods for row in table.index}
    passed = {m: sum(outcomes[(m, row)] == CONFIRMED for row in table.index) for m in methods}
    parts = [f"{m} (ratio by {what}: {_ratio_text(table, m)}) at most {TARGET:g} at {passed[m]} of "
             f"{len(table.index)}" for m in methods]
    parts += [f"{m}: {_ratio_text(table, m)}" for m in others if m in table.columns.get_level_values(0)]
    scope = _scope(scope)
    return Judgement("; ".join(parts), judge(list(outcomes.values())),
                     scope.narrowed([task]) if task in scope.tasks else scope)


def _free(e: Evidence) -> Judgement:
    return _quadratic_claim(e.reparametrization, PARAMETER_FREE, "a", e.quadratics_scope, REPARAMETRIZED_NAME,
                            others=("FedAvg", "SCAFFOLD"))


def _heterogeneity(e: Evidence) -> Judgement:
    table = e.heterogeneity
    others = [m for m in table.columns.get_level_values(0).unique() if m != "PAdaMFed"] if table is not None else []
    return _quadratic_claim(table, ("PAdaMFed",), "level", e.quadratics_scope, HETEROGENEITY_NAME, others=others)


def _invariant(e: Evidence) -> Judgement:
    if e.smoothness is None:
        return Judgement("no scaled-f runs", NOT_TESTABLE, _scope(e.quadratics_scope, []))
    spread = {m: e.smoothness[m].max() / e.smoothness[m].min() for m in PARAMETER_FREE if m in e.smoothness}
    text = ", ".join(f"{m} max/min ratio over L {value:.6f}" for m, value in spread.items())
    scope = _scope(e.quadratics_scope)
    scope = dataclasses.replace(scope, tasks=(TASK_NAME,), seeds=(SEED,))  # one seed: the same path at every L
    return Judgement(f"invariant by construction (shown, not evidence): {text}", NOT_TESTABLE, scope)


def _keeps_up(e: Evidence) -> Judgement:
    outcomes, parts = [], []
    for task, table in e.scores.items():
        baselines = table.drop(index=[m for m in PARAMETER_FREE if m in table.index])
        best = baselines.mean(axis=1, skipna=False).fillna(-math.inf).idxmax()  # a diverged seed never wins
        for method in (m for m in PARAMETER_FREE if m in table.index):
            outcome, text = compare(table.loc[method], table.loc[best], margin=-KEEPS_UP, scale=100)
            outcomes.append(outcome)
            parts.append(f"{task}: {method} - {best} (best tuned), points (mean ± 2 SE): {text}, {outcome}")
    return Judgement("; ".join(parts) + f" (margin -{100 * KEEPS_UP:g})", judge(outcomes), _scope(e.scope))


def _wider(reading: str) -> Callable[[Evidence], Judgement]:
    def assess(e: Evidence) -> Judgement:
        outcomes, parts = [], []
        for task, tables in e.robustness.items():
            if reading not in tables:
                continue
            points = good_points(tables[reading])
            methods = list(points)
            for ours in (m for m in PARAMETER_FREE if m in methods):
                pairs = []
                for other in (m for m in methods if m not in PARAMETER_FREE):
                    outcome, text = compare(points[ours], points[other])
                    outcomes.append(outcome)
                    pairs.append(f"{other} {text}")
                parts.append(f"{task} {ours} minus {', '.join(pairs)}")
        if not outcomes:
            return Judgement(f"no runs under the reading {reading!r}", NOT_TESTABLE, _scope(e.scope, []))
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES if outcomes.count(o))
        return Judgement(f"good range around 1 in grid points (one decade each), paired over seeds (mean ± 2 SE): "
                         f"{'; '.join(parts)} ({counts} of {len(outcomes)} pairs)", judge(outcomes), _scope(e.scope))
    return assess


CLAIMS: tuple[Claim, ...] = (
    Claim("Step sizes from S, K, T alone work whatever the problem's constants (slides: Theorems 1-2, Remark 1; "
          f"tested on f(a theta): the gradient at most {TARGET:g} of its start at every a)", _free),
    Claim("The same, tested by scaling f (slides' argument)", _invariant),
    Claim("No bound on the data heterogeneity is needed (slides' headline; tested on quadratics of growing "
          f"heterogeneity: the gradient at most {TARGET:g} of its start at every level)", _heterogeneity),
    Claim("Untuned, PAdaMFed performs like baselines tuned by grid search (slides, Figure 1, CIFAR-10)", _keeps_up),
    Claim("Stable over a 'significantly wider range of learning rates' (slides, Figure 2, EMNIST); the multiplier "
          "on every rate", _wider("every rate")),
    Claim("The same (slides, Figure 2), the multiplier on the local rate alone", _wider("local rate")),
)
"""The slides' claims, in the notebook's order."""


def claims_table(evidence: Evidence, claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim (:func:`fedcore.experiments.claims.claims_table`, the claims the slides')."""
    return shared_claims_table(evidence, claims, source="slides")
