"""What Yan, Zhang, Wang & Cao (*Problem-Parameter-Free Federated Learning*, ICLR 2025) report, and our verdicts on
their claims (:data:`CLAIMS`) by the shared rules of :mod:`papers.claims`.  We have the slides, not the
main text: what each method's step sizes need (:data:`STEP_SIZE_TABLE`), two figures described in words
(:data:`FIGURES`) and no table of results, so no number of the paper can be printed beside ours."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, OUTCOMES, WITHIN_NOISE, Check, compare
from papers.claims import NOT_TESTABLE, Claim, Family, Judgement, Scope
from papers.claims import claims_table as shared_claims_table
from papers.padamfed.experiment import (
    MEASURES,
    PARAMETER_FREE,
    READINGS,
    SECOND_PARTITION,
    TWO_RATES,
    good_widths,
)
from papers.padamfed.theory import (
    ABLATION,
    EXPONENTS,
    HETEROGENEITY_NAME,
    RATES_NAME,
    REPARAMETRIZED_NAME,
    SEED,
    TARGET,
    TASK_NAME,
    mean_ratios,
    slopes,
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
        "robustness": "section 4: the same stand-in, multipliers in half-decades, two readings, five seeds; at "
                      "small the long horizon from 10^-1.5 to 10^1.5, at medium both horizons from 10^-2 to 10^2"},
})
"""The slides' two experiment figures as they describe them (no numbers), beside where and how we run each."""


# ------------------------------------------------------------------ the claims

KEEPS_UP = 0.03
"""'State-of-the-art performance': a score within three points of the best tuned baseline."""


SLOPE_MARGIN = 0.05
"""A rate is met when the fitted log-log slope is at most the theorem's exponent plus 0.05 (a fifth of Theorem 1's
1/4; ours): the theorems bound the mean gradient norm from above, so a steeper fall meets them too."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: per task, the ``scores`` at multiplier 1 (``Results.scores().loc[task]``), the
    ``best`` tuned baseline of each task as chosen on the tuning seeds
    (:func:`~papers.padamfed.experiment.best_tuned`; a task not in it: the best mean over the judging
    seeds) and the ``robustness`` tables (``{reading: table}``); on the quadratics, the ``rates`` in T at each ``a``
    and the ``speedup`` in S (:func:`~papers.padamfed.theory.rate_table`), the tilted ``heterogeneity``
    table and the scaled-f ``smoothness`` table; what the runs rest on (``robustness_scope``: the sweep's, where it
    ran on fewer seeds than ``scope``)."""

    scores: Mapping[str, pd.DataFrame]
    robustness: Mapping[str, Mapping[str, pd.DataFrame]]
    rates: pd.DataFrame | None = None
    heterogeneity: pd.DataFrame | None = None
    smoothness: pd.DataFrame | None = None
    scope: Scope | None = None
    quadratics_scope: Scope | None = None
    best: Mapping[str, str] = field(default_factory=dict)
    robustness_scope: Scope | None = None
    speedup: pd.DataFrame | None = None


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


SAME_RUNS = 1e-9
"""PAdaMFed's ratios equal to this relative tolerance at every tilt: the tilts cancelled by construction."""


def _heterogeneity(e: Evidence) -> Judgement:
    """PAdaMFed at every tilt by the :data:`TARGET` rule (:func:`_halves`), or not testable when its runs are the
    same at every tilt (:data:`SAME_RUNS`: the control variates cancel a linear tilt exactly, so the levels test
    nothing); the other methods' mean ratios shown in the details, not judged."""
    table, scope = e.heterogeneity, _scope(e.quadratics_scope)
    if table is None:
        return Judgement("no quadratic runs", NOT_TESTABLE, _scope(scope, []))
    scope = scope.narrowed([HETEROGENEITY_NAME]) if HETEROGENEITY_NAME in scope.tasks else scope
    family = Family({f"PAdaMFed at tilt {row:.3g}": _halves(table.loc[row, "PAdaMFed"]) for row in table.index})
    ratios = mean_ratios(table)
    details = {**family.details(), **{f"{m}, not judged: final / initial ratio by tilt": _ratio_text(table, m)
                                      for m in ratios.columns if m != "PAdaMFed"}}
    ablation = (f"; without them the ratio grows {ratios[ABLATION].iloc[0]:.2g} to {ratios[ABLATION].iloc[-1]:.2g}"
                if ABLATION in ratios else "")
    runs = table["PAdaMFed"].astype(float)
    if len(table) > 1 and np.allclose(runs, runs.iloc[0], rtol=SAME_RUNS, atol=0):
        return Judgement(f"by construction (shown, not evidence): the control variates cancel the tilts, PAdaMFed's "
                         f"runs equal at every tilt{ablation} (details: decades fallen)", NOT_TESTABLE,
                         dataclasses.replace(scope, tuning_seeds=()), details)
    fallen = {label: check.paired.mean for label, check in family.checks.items() if check.paired is not None}
    lowest = min(fallen, key=fallen.get) if fallen else next(iter(family.checks))
    where = "every tilt" if fallen and max(fallen.values()) - min(fallen.values()) < 0.005 else \
        f"the least at {lowest.split(' at ')[1]}"
    ours = (f"PAdaMFed's decades fallen (rule: above {math.log10(1 / TARGET):.2f}), {where}: {family.short(lowest)}"
            + ablation.replace("them", "control variates"))
    return family.judged(ours, scope, outcomes=list(family.outcomes.values()), details=details)


def _rate_family(slope_table: pd.DataFrame, methods: Sequence[str] = PARAMETER_FREE) -> Family:
    """One check per (method, a) of a :func:`~papers.padamfed.theory.slopes` table: the seeds' slopes
    at most the theorem's exponent plus :data:`SLOPE_MARGIN`."""
    checks = {}
    for method in (m for m in methods if m in slope_table.columns.get_level_values(0)):
        for a in slope_table.index:
            slope = slope_table.loc[a, method].astype(float)
            exponent = pd.Series(EXPONENTS[method], index=slope.index)
            checks[(method, f"a = {a:.3g}: exponent minus slope")] = compare(slope, exponent, higher_is_better=False,
                                                                             margin=-SLOPE_MARGIN)
    return Family(checks)


def _slopes_text(slope_table: pd.DataFrame, by_a: bool) -> str:
    means = slope_table.T.groupby(level="method").mean().T
    return "; ".join(f"{method} " + ", ".join((f"a={a:.3g}: " if by_a else "") + f"{means.loc[a, method]:+.2f}"
                                              for a in means.index)
                     for method in PARAMETER_FREE if method in means.columns)


def _rate_scope(table: pd.DataFrame, scope: Scope | None, name: str) -> Scope:
    """The quadratics' scope for a :func:`~papers.padamfed.theory.rate_table`: the task named with
    the values it varied, its longest T, nothing tuned."""
    varied, values = table.index.names[-1], table.index.get_level_values(-1)
    rounds = int(table.index.get_level_values("rounds").max())
    what = "T" if varied == "rounds" else f"T = {rounds}, S"
    return dataclasses.replace(_scope(scope), tasks=(f"{name} ({what} from {values.min()} to {values.max()})",),
                               rounds=rounds, tuning_seeds=())


def _rate_claim(table: pd.DataFrame | None, what: str, scope: Scope | None, name: str) -> Judgement:
    if table is None:
        return Judgement(f"no runs of the rate in {what}", NOT_TESTABLE, _scope(scope, []))
    slope_table = slopes(table)
    ours = (f"slope in {what}, mean over seeds: {_slopes_text(slope_table, len(slope_table) > 1)} (rule: at most "
            f"the exponent +{SLOPE_MARGIN:g}; details: exponent minus slope)")
    return _judged(_rate_family(slope_table), ours, _rate_scope(table, scope, name), labels=False)


def _free(e: Evidence) -> Judgement:
    return _rate_claim(e.rates, "T", e.quadratics_scope, REPARAMETRIZED_NAME)


def _speedup(e: Evidence) -> Judgement:
    return _rate_claim(e.speedup, "S K", e.quadratics_scope, RATES_NAME)


def _vr_better(e: Evidence) -> Judgement:
    if e.rates is None or 1.0 not in e.rates.index.get_level_values("a"):
        return Judgement("no rate runs at a = 1", NOT_TESTABLE, _scope(e.quadratics_scope, []))
    at_one = np.log10(e.rates.xs(1.0, level="a").astype(float))
    family = Family({f"T = {T}": compare(at_one.loc[T, "PAdaMFed-VR"], at_one.loc[T, "PAdaMFed"],
                                         higher_is_better=False) for T in at_one.index})
    fitted = slopes(e.rates).loc[1.0].groupby(level="method").mean()
    weakest = _weakest(family)
    ours = (f"log10 mean gradient norm, PAdaMFed minus -VR at a = 1, the weakest of {len(family.checks)} T, "
            f"{weakest}: {family.short(weakest)} (slopes, not judged: {fitted['PAdaMFed']:+.2f}, "
            f"-VR {fitted['PAdaMFed-VR']:+.2f})")
    return _judged(family, ours, _rate_scope(e.rates.xs(1.0, level="a", drop_level=False), e.quadratics_scope,
                                             RATES_NAME), labels=False)


def _invariant(e: Evidence) -> Judgement:
    if e.smoothness is None:
        return Judgement("no scaled-f runs", NOT_TESTABLE, _scope(e.quadratics_scope, []))
    spread = {m: e.smoothness[m].max() / e.smoothness[m].min() for m in PARAMETER_FREE if m in e.smoothness}
    text = ", ".join(f"{m} max/min ratio over L {value:.6f}" for m, value in spread.items())
    scope = _scope(e.quadratics_scope)
    scope = dataclasses.replace(scope, tasks=(TASK_NAME,), seeds=(SEED,), tuning_seeds=())  # the same path at every L
    return Judgement(f"invariant by construction (shown, not evidence): {text}", NOT_TESTABLE, scope)


def _weakest(family: Family) -> str:
    """The check nearest to failing the claim: a contradicted one, else an undecided one, else a confirmed one; among
    those the largest p_Holm as the table prints it (every p below 0.001 alike), then the smallest mean difference
    (the one a row of several checks shows, the others in its details)."""
    rank = {CONTRADICTED: 0, NOT_DECIDABLE: 1, WITHIN_NOISE: 1, CONFIRMED: 2}
    p = family.p_values

    def key(label: str) -> tuple[int, float, float]:
        check = family.checks[label]
        printed = round(max(p.get(label, 0.0), 0.001), 3)
        return rank[family.outcomes[label]], -printed, check.paired.mean if check.paired else -math.inf
    return min(family.checks, key=key)


def _keeps_up(tasks: Sequence[str]) -> Callable[[Evidence], Judgement]:
    """The untuned methods against the best tuned baseline on each of ``tasks`` (one horizon), paired by seed, the
    margin :data:`KEEPS_UP`."""
    def assess(e: Evidence) -> Judgement:
        scores = {task: e.scores[task] for task in tasks if task in e.scores}
        if not scores:
            return Judgement(f"no runs of {', '.join(tasks)}", NOT_TESTABLE, _scope(e.scope, []))
        checks = {}
        for task, table in scores.items():
            baselines = table.drop(index=[m for m in PARAMETER_FREE if m in table.index])
            best = e.best.get(task) or baselines.mean(axis=1, skipna=False).fillna(-math.inf).idxmax()
            for method in (m for m in PARAMETER_FREE if m in table.index):
                checks[f"{task} {method} - {best}"] = compare(table.loc[method], table.loc[best], margin=-KEEPS_UP,
                                                              scale=100)
        family = Family(checks)
        if len(checks) <= 2:
            shown = "; ".join(f"{label.split(' ', 1)[1]} {family.short(label)}" for label in checks)
        else:
            weakest = _weakest(family)
            shown = f"the weakest of {len(checks)}, {weakest} {family.short(weakest)}"
        return _judged(family, f"points, untuned minus the best tuned (margin -{100 * KEEPS_UP:g}): {shown}",
                       _scope(e.scope, list(scores)))
    return assess


def _wider(reading: str) -> Callable[[Evidence], Judgement]:
    """Each parameter-free method's good range (each seed's width in decades, its ends interpolated between the
    multipliers: :func:`~papers.padamfed.experiment.good_widths`) against each baseline's, measured
    against each method's own best and against the best method's score
    (:data:`~papers.padamfed.experiment.MEASURES`); under ``"local rate"`` against the baselines whose
    local rate moves with their server step held (SCAFFOLD-M and -M-VR) only: like against like."""
    def assess(e: Evidence) -> Judgement:
        checks = {}
        for task, tables in e.robustness.items():
            if reading not in tables:
                continue
            for measure in MEASURES:
                widths = good_widths(tables[reading], against=measure)
                baselines = [m for m in widths if m not in PARAMETER_FREE and (reading == READINGS[0] or
                                                                                 m in TWO_RATES)]
                for ours in (m for m in PARAMETER_FREE if m in widths):
                    for other in baselines:
                        checks[f"{task} {ours} - {other} ({measure})"] = compare(widths[ours], widths[other])
        scope = _scope(e.robustness_scope or e.scope)
        if not checks:
            return Judgement(f"no runs under the reading {reading!r}", NOT_TESTABLE, _scope(scope, []))
        family = Family(checks)
        outcomes = list(family.outcomes.values())
        counts = ", ".join(f"{outcomes.count(o)} {o}" for o in OUTCOMES if outcomes.count(o))
        weakest = _weakest(family)
        return _judged(family, f"good range (decades, margin 0), ours minus baseline: {counts} of {len(outcomes)}; "
                               f"weakest, {weakest}: {family.short(weakest)}", scope, labels=False)
    return assess


CLAIMS: tuple[Claim, ...] = (
    Claim("Step sizes from S, K, T alone give the theorems' rate whatever the constants (slides: Theorems 1-2, "
          "Remark 1; on f(a theta): the rate T^-1/4, -VR T^-1/3, shows at every a over our T)", _free),
    Claim("The same, tested by scaling f (slides' argument)", _invariant),
    Claim("No bound on the data heterogeneity is needed (slides' headline; on tilted quadratics, Delta, L and sigma "
          f"fixed: the gradient at most {TARGET:g} of its start at every tilt)", _heterogeneity),
    Claim("The speed-up in S K: the bounds' leading terms fall as (S K)^-1/4, -VR (S K)^-1/3 (slides: Theorems "
          "1-2); tested where S K is well below T: the rate shows", _speedup),
    Claim("Variance reduction improves on PAdaMFed (slides: Theorem 2's O(1/(S K eps^3)) rounds against Theorem 1's "
          "O(1/(S K eps^4)); tested at a = 1: a lower mean gradient norm at every T)", _vr_better),
    Claim("Untuned, PAdaMFed performs like baselines tuned by grid search (slides, Figure 1, CIFAR-10); the short "
          "horizon (S K = 50, T near S K), on two partitions", _keeps_up(("fashion_mnist", SECOND_PARTITION))),
    Claim("The same (slides, Figure 1) on the long horizon (S K = 10, T = 30 S K at small: the theorems' regime)",
          _keeps_up(("fashion_mnist_long",))),
    Claim("Stable over a 'significantly wider range of learning rates' (slides, Figure 2, EMNIST); the multiplier "
          "on every rate", _wider("every rate")),
    Claim("The same (slides, Figure 2), the multiplier on the local rate alone", _wider("local rate")),
)
"""The slides' claims, in the notebook's order."""


def claims_table(evidence: Evidence, claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim (:func:`papers.claims.claims_table`, the claims the slides')."""
    return shared_claims_table(evidence, claims, source="slides")
