"""What Yan, Zhang, Wang & Cao (*Problem-Parameter-Free Federated Learning*, ICLR 2025) report, and our verdicts on
their claims (:data:`CLAIMS`) by the shared rules of :mod:`fedcore.experiments.claims`.  We have the slides, not the
main text: what each method's step sizes need (:data:`STEP_SIZE_TABLE`), two figures described in words
(:data:`FIGURES`) and no table of results, so no number of the paper can be printed beside ours."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from fedcore.experiments.claims import (
    NOT_TESTABLE,
    OUTCOMES,
    Check,
    Claim,
    Family,
    Judgement,
    Scope,
    compare,
)
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
        "untuned vs tuned": "section 3: Fashion-MNIST stand-in, MLP, Dir(1), two horizons, five seeds at small, "
                            "baselines tuned on a stated grid on two other seeds; CIFAR-10 only at SCALE=paper, as a "
                            "demonstration",
        "robustness": "section 4: the same stand-in, multipliers 1/100 to 100 in decades, two readings, three of "
                      "the five seeds at small"},
})
"""The slides' two experiment figures as they describe them (no numbers), beside where and how we run each."""


# ------------------------------------------------------------------ the claims

KEEPS_UP = 0.03
"""'State-of-the-art performance': a score within three points of the best tuned baseline."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: per task, the ``scores`` at multiplier 1 (``Results.scores().loc[task]``), the
    ``best`` tuned baseline of each task as chosen on the tuning seeds (:func:`~fedcore.experiments.padamfed.
    experiment.best_tuned`; a task not in it: the best mean over the judging seeds) and the ``robustness`` tables
    (``{reading: table}``); the quadratics' gradient ratios; what the runs rest on (``robustness_scope``: the
    sweep's, where it ran on fewer seeds than ``scope``)."""

    scores: Mapping[str, pd.DataFrame]
    robustness: Mapping[str, Mapping[str, pd.DataFrame]]
    reparametrization: pd.DataFrame | None = None
    heterogeneity: pd.DataFrame | None = None
    smoothness: pd.DataFrame | None = None
    scope: Scope | None = None
    quadratics_scope: Scope | None = None
    best: Mapping[str, str] = field(default_factory=dict)
    robustness_scope: Scope | None = None


def _scope(scope: Scope | None, tasks: Sequence[str] | None = None) -> Scope:
    """``scope`` (an unknown one when the notebook gave none), narrowed to ``tasks`` when given."""
    scope = scope or Scope((), "?", None, ())
    return scope if tasks is None else scope.narrowed(list(tasks))


def _judged(family: Family, ours: str, scope: Scope, labels: bool = True) -> Judgement:
    """The family's :class:`Judgement` (Holm-corrected); ``labels=False``: a contradicted claim says on how many
    checks it held ("holds on 9 of 10") instead of naming them."""
    return family.judged(ours, scope, outcomes=None if labels else list(family.outcomes.values()))


def _halves(ratios: pd.Series) -> Check:
    """The check of "the run ends with at most TARGET of its initial gradient norm", over the seeds of ``ratios``:
    the paired comparison of log10(1/ratio), the decades the gradient fell, with log10(1/TARGET) (a diverged run,
    inf, fails)."""
    progress = [-math.log10(r) if math.isfinite(r) else math.nan for r in ratios.astype(float)]
    return compare(progress, [0.0] * len(progress), margin=-math.log10(TARGET))


def _ratio_text(table: pd.DataFrame, method: str) -> str:
    return ", ".join(f"{index:.3g}: {value:.2g}" for index, value in mean_ratios(table)[method].items())


def _quadratic_claim(table: pd.DataFrame | None, methods: Sequence[str], what: str, scope: Scope | None,
                     task: str, others: Sequence[str] = (), tuned: bool = True) -> Judgement:
    if table is None:
        return Judgement("no quadratic runs", NOT_TESTABLE, _scope(scope, []))
    family = Family({f"{m} at {what} {row:.3g}": _halves(table.loc[row, m]) for m in methods for row in table.index})
    parts = [f"{label} {family.said(label)}" for label in family.checks]
    shown = [f"{m}: {_ratio_text(table, m)}" for m in others if m in table.columns.get_level_values(0)]
    ours = (f"decades the gradient norm fell, log10(initial / final), 95% interval (the rule: above "
            f"{math.log10(1 / TARGET):.2f}, a ratio of at most {TARGET:g}): " + "; ".join(parts)
            + (f"; shown, not judged, final / initial ratio by {what}: " + "; ".join(shown) if shown else ""))
    scope = _scope(scope)
    scope = scope.narrowed([task]) if task in scope.tasks else scope
    return _judged(family, ours, scope if tuned else dataclasses.replace(scope, tuning_seeds=()), labels=False)


def _free(e: Evidence) -> Judgement:
    return _quadratic_claim(e.reparametrization, PARAMETER_FREE, "a =", e.quadratics_scope, REPARAMETRIZED_NAME,
                            others=("FedAvg", "SCAFFOLD"), tuned=False)  # FedAvg's one rate is set, not tuned


def _heterogeneity(e: Evidence) -> Judgement:
    table = e.heterogeneity
    others = [m for m in table.columns.get_level_values(0).unique() if m != "PAdaMFed"] if table is not None else []
    return _quadratic_claim(table, ("PAdaMFed",), "h =", e.quadratics_scope, HETEROGENEITY_NAME, others=others)


def _invariant(e: Evidence) -> Judgement:
    if e.smoothness is None:
        return Judgement("no scaled-f runs", NOT_TESTABLE, _scope(e.quadratics_scope, []))
    spread = {m: e.smoothness[m].max() / e.smoothness[m].min() for m in PARAMETER_FREE if m in e.smoothness}
    text = ", ".join(f"{m} max/min ratio over L {value:.6f}" for m, value in spread.items())
    scope = _scope(e.quadratics_scope)
    scope = dataclasses.replace(scope, tasks=(TASK_NAME,), seeds=(SEED,), tuning_seeds=())  # the same path at every L
    return Judgement(f"invariant by construction (shown, not evidence): {text}", NOT_TESTABLE, scope)


def _keeps_up(e: Evidence) -> Judgement:
    checks, references = {}, {}
    for task, table in e.scores.items():
        baselines = table.drop(index=[m for m in PARAMETER_FREE if m in table.index])
        best = e.best.get(task) or baselines.mean(axis=1, skipna=False).fillna(-math.inf).idxmax()
        references[task] = best
        for method in (m for m in PARAMETER_FREE if m in table.index):
            checks[f"{task} {method}"] = compare(table.loc[method], table.loc[best], margin=-KEEPS_UP, scale=100)
    family = Family(checks)
    parts = [f"{label} - {references[label.split(' ')[0]]} {family.said(label)}" for label in checks]
    how = "chosen on the tuning seeds" if e.best else "the best mean"
    return _judged(family, f"points, untuned minus the best tuned baseline ({how}), 95% interval, margin "
                           f"-{100 * KEEPS_UP:g}: " + "; ".join(parts), _scope(e.scope))


def _wider(reading: str) -> Callable[[Evidence], Judgement]:
    def assess(e: Evidence) -> Judgement:
        checks, parts = {}, []
        for task, tables in e.robustness.items():
            if reading not in tables:
                continue
            points = good_points(tables[reading])
            methods = list(points)
            for ours in (m for m in PARAMETER_FREE if m in methods):
                labels = []
                for other in (m for m in methods if m not in PARAMETER_FREE):
                    labels.append((other, f"{task} {ours} - {other}"))
                    checks[labels[-1][1]] = compare(points[ours], points[other])
                parts.append((task, ours, labels))
        scope = _scope(e.robustness_scope or e.scope)
        if not checks:
            return Judgement(f"no runs under the reading {reading!r}", NOT_TESTABLE, _scope(scope, []))
        family = Family(checks)
        outcomes = list(family.outcomes.values())
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES if outcomes.count(o))
        text = "; ".join(f"{task} {ours} minus " + ", ".join(f"{other} {family.said(label)}"
                                                             for other, label in labels)
                         for task, ours, labels in parts)
        return _judged(family, f"good range around 1 in grid points (one decade each), paired over seeds, 95% "
                               f"interval: {text} ({counts} of {len(outcomes)} pairs)", scope, labels=False)
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
