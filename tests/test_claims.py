"""The shared rules of the claims tables (papers.claims) on hand-made numbers: each rule must be able
to say holds, does not hold, inconclusive and not testable, so that no verdict passes by construction."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from fedcore import comparisons
from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, WITHIN_NOISE, compare, paired
from papers import claims
from papers.claims import (
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PARTLY,
    Claim,
    Family,
    Judgement,
    Scope,
    judge,
    learned_something,
)


def test_paired_differences_and_their_interval_by_hand() -> None:
    comparison = paired([0.80, 0.82, 0.78], [0.75, 0.80, 0.77])
    differences = [0.05, 0.02, 0.01]
    mean = sum(differences) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    assert comparison.differences == pytest.approx(differences)
    assert comparison.mean == pytest.approx(mean) and comparison.standard_error == pytest.approx(sd / math.sqrt(3))
    t = mean / (sd / math.sqrt(3))  # the paired t statistic, 2 degrees of freedom: p = 1 - |t| / sqrt(t^2 + 2)
    assert comparison.p_value == pytest.approx(1 - abs(t) / math.sqrt(t * t + 2))
    # the 2-df t quantile at 97.5% in closed form: t = 2q / sqrt(1 - (2q - 1)^2 ... ) = sqrt(2) (2p - 1) / sqrt(
    # 1 - (2p - 1)^2) with p = 0.975: 4.3027
    quantile = math.sqrt(2) * 0.95 / math.sqrt(1 - 0.95**2)
    assert comparisons.t_quantile(3) == pytest.approx(quantile)
    assert comparisons.t_quantile(3) == pytest.approx(4.303, abs=1e-3)
    half = quantile * sd / math.sqrt(3)
    assert comparison.interval() == pytest.approx((mean - half, mean + half))
    # a: 0.80 0.82 0.78, b: 0.75 0.80 0.77; of the 9 pairs, a wins: 0.80 twice and ties 0.80 (half), 0.82 three
    # times, 0.78 twice: 7.5 of 9
    assert comparison.probability_of_improvement == pytest.approx(7.5 / 9)
    p = 1 - abs(t) / math.sqrt(t * t + 2)
    assert comparison.describe(100).startswith(
        f"{100 * mean:+.2f} [{100 * (mean - half):+.2f}, {100 * (mean + half):+.2f}], p {p:.3f}")


SCIPY_TABLES = [  # (a, b, margin): n = 3 and n = 5, each outcome reached
    ([0.80, 0.82, 0.81], [0.70, 0.71, 0.72], 0.0),                          # +0.10, tight: confirmed
    ([0.70, 0.71, 0.72], [0.80, 0.82, 0.81], 0.0),                          # contradicted
    ([0.80, 0.70, 0.75], [0.74, 0.77, 0.73], 0.0),                          # within the noise
    ([0.80, 0.84, 0.79, 0.81, 0.83], [0.78, 0.80, 0.79, 0.78, 0.80], 0.0),  # n = 5: +0.026, confirmed
    ([0.80, 0.72, 0.79, 0.81, 0.76], [0.78, 0.80, 0.79, 0.78, 0.80], 0.0),  # n = 5: within the noise
    ([0.80, 0.81, 0.80, 0.79, 0.80], [0.81, 0.81, 0.81, 0.80, 0.80], -0.02),  # within 2 points: margin inside
    ([0.74, 0.75, 0.73, 0.74, 0.76], [0.80, 0.81, 0.79, 0.80, 0.81], -0.02),  # 6 points behind: outside
    ([0.79, 0.80, 0.78], [0.80, 0.83, 0.79], -0.005),                       # interval wider than 0.5: not decidable
]


@pytest.mark.parametrize("a, b, margin", SCIPY_TABLES)
def test_the_rule_is_scipys_paired_t_test_and_interval(a, b, margin) -> None:
    comparison = paired(a, b)
    n, differences = len(a), [x - y for x, y in zip(a, b)]
    assert comparison.half_width() == pytest.approx(stats.t.ppf(0.975, n - 1) * stats.sem(differences))
    interval = stats.t.interval(0.95, n - 1, loc=comparison.mean, scale=stats.sem(differences))
    assert comparison.interval() == pytest.approx(interval)
    shifted = [x - margin for x in a]  # H0: mean(a - b) = margin is ttest_rel of a - margin against b
    p = stats.ttest_rel(shifted, b).pvalue
    assert comparison.test(margin) == pytest.approx(p)
    expected = (CONFIRMED if interval[0] > margin else CONTRADICTED) if p <= 0.05 else \
        NOT_DECIDABLE if margin and (interval[1] - interval[0]) / 2 > abs(margin) else WITHIN_NOISE
    assert (interval[0] > margin or interval[1] < margin) == (p <= 0.05)  # the interval and the test agree
    assert comparison.outcome(margin) == expected


def test_every_outcome_is_reached_by_the_tables() -> None:
    reached = {paired(a, b).outcome(margin) for a, b, margin in SCIPY_TABLES}
    assert reached == {CONFIRMED, CONTRADICTED, WITHIN_NOISE, NOT_DECIDABLE}


@pytest.mark.parametrize("a, b, margin, expected", [
    ([0.80], [0.10], 0.0, NOT_DECIDABLE),                              # one seed never decides
    ([0.80, 0.81, 0.80], [0.80, 0.81, 0.80], 0.0, WITHIN_NOISE),      # identical: no difference to count
    ([0.81, 0.82, 0.81], [0.80, 0.81, 0.80], 0.0, CONFIRMED),         # the same +0.01 on every seed
    ([0.80, 0.82, 0.81], [0.70, 0.71, 0.72], 0.0, CONFIRMED),
    # +0.0267 with sd 0.0208: beyond 2 SE (t = 2.2, the old rule's "confirmed") but inside the 95% interval
    ([0.80, 0.82, 0.78], [0.75, 0.80, 0.77], 0.0, WITHIN_NOISE),
])
def test_a_difference_counts_only_when_its_95_interval_clears_the_margin(a, b, margin, expected) -> None:
    assert paired(a, b).outcome(margin) == expected


def test_the_seeds_it_would_take_at_the_measured_spread() -> None:
    comparison = paired([0.80, 0.82, 0.78], [0.75, 0.80, 0.77])  # mean 0.0267, sd 0.0208
    mean, sd = comparison.mean, comparison.sd
    needed = comparison.seeds_needed()
    fits = [stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < mean for n in range(2, 20)]
    assert needed == 2 + fits.index(True) == 5
    assert "~5 seeds would decide" in comparison.describe(100)
    narrow = paired([0.79, 0.80, 0.78], [0.80, 0.83, 0.79])  # within 0.5 points: needs the half-width under 0.005
    sd = narrow.sd
    first = next(n for n in range(2, 1000) if stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) < 0.005)
    assert narrow.no_room(-0.005) and narrow.seeds_needed(-0.005) == first
    assert paired([0.5, 0.5], [0.5, 0.5]).seeds_needed() is None  # no gap to clear: no seeds named
    assert paired([0.5, 0.5], [0.5, 0.5]).describe() == "0.00 [0.00, 0.00], p 1.000"


def test_holm_step_down_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3 x 0.01 = 0.03, 2 x 0.02 = 0.04, max(0.04, 1 x 0.04) = 0.04
    assert comparisons.holm([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    # monotone: sorted 0.001, 0.02, 0.03 -> 0.003, 2 x 0.02 = 0.04, 1 x 0.03 = 0.03 raised to the 0.04 before it
    assert comparisons.holm([0.001, 0.03, 0.02]) == pytest.approx([0.003, 0.04, 0.04])
    adjusted = comparisons.holm([0.5, math.nan])
    assert adjusted[1] != adjusted[1] and adjusted[0] == 1.0


def test_a_family_corrects_its_comparisons_together() -> None:
    strong = comparisons.compare([0.80, 0.84, 0.79, 0.81, 0.83], [0.70, 0.73, 0.70, 0.70, 0.72])
    weak = comparisons.compare([0.80, 0.84, 0.79, 0.81, 0.83], [0.79, 0.80, 0.79, 0.78, 0.80])  # p 0.040
    assert weak.p < 0.05 and weak.outcome() == CONFIRMED  # alone it counts ...
    family = claims.Family({"strong": strong, "weak": weak, "none": comparisons.compare([0.5] * 5, [0.5] * 5)})
    adjusted = comparisons.holm([strong.p, weak.p, 1.0])
    assert list(family.p_values.values()) == pytest.approx(adjusted)
    assert adjusted[1] > 0.05 and family.outcomes == {"strong": CONFIRMED, "weak": WITHIN_NOISE,
                                                      "none": WITHIN_NOISE}  # ... corrected with two others, not
    assert "p_Holm" in family.text("weak") and family.verdict() == PARTLY
    assert family.said("weak") == f"{family.text('weak')} (within the noise)"
    scope = Scope(("t",), "small", 10, (0, 1, 2, 3, 4))
    judged = family.judged("text", scope)
    assert judged.scope.corrected == 3 and str(judged.scope).endswith("; Holm over 3 comparisons")


@pytest.mark.parametrize("a, b, message", [
    ([0.1, 0.2], [0.1], "one score per seed"), ([], [], "one score per seed"),
    ([0.1, float("nan")], [0.1, 0.2], "finite"),
])
def test_bad_scores_are_named(a, b, message) -> None:
    with pytest.raises(ValueError, match=message):
        paired(a, b)


@pytest.mark.parametrize("outcomes, expected", [
    ([CONFIRMED, CONFIRMED, CONFIRMED], HOLDS),
    ([CONTRADICTED, CONTRADICTED], DOES_NOT_HOLD),
    ([CONTRADICTED, WITHIN_NOISE, WITHIN_NOISE], DOES_NOT_HOLD),
    ([WITHIN_NOISE, WITHIN_NOISE, WITHIN_NOISE], INCONCLUSIVE),
    ([CONFIRMED, WITHIN_NOISE, WITHIN_NOISE], PARTLY),
    ([CONFIRMED, CONTRADICTED], DOES_NOT_HOLD + " (holds on 1 of 2)"),  # a claim over every task, failed on one
    ({"cr": CONFIRMED, "ae": CONTRADICTED}, DOES_NOT_HOLD + " (holds on cr)"),
    ([NOT_DECIDABLE, WITHIN_NOISE], claims.NOT_DECIDABLE_AT + " these seeds"),
    ([CONFIRMED, NOT_DECIDABLE], PARTLY),
    ([], NOT_TESTABLE),
])
def test_judge_gives_every_verdict(outcomes, expected) -> None:
    assert judge(outcomes) == expected


@pytest.mark.parametrize(("outcomes", "expected"), [
    ([CONFIRMED, CONFIRMED, WITHIN_NOISE], HOLDS),  # 2 of 3 confirmed: most
    ([CONFIRMED, WITHIN_NOISE, CONTRADICTED], PARTLY),  # one more could still make it most
    ([CONFIRMED, CONTRADICTED, CONTRADICTED], DOES_NOT_HOLD),  # at most 1 of 3 can pass
    ([CONFIRMED, CONFIRMED, CONTRADICTED, CONTRADICTED], DOES_NOT_HOLD),  # half is not most
    ([WITHIN_NOISE, WITHIN_NOISE, CONTRADICTED], INCONCLUSIVE),  # 2 of 3 undecided: nothing confirmed yet
    ([WITHIN_NOISE, WITHIN_NOISE], INCONCLUSIVE),
    ([NOT_DECIDABLE, NOT_DECIDABLE, CONFIRMED], claims.NOT_DECIDABLE_AT + " 3 seeds"),
    ([], NOT_TESTABLE),
])
def test_judge_on_most_checks(outcomes, expected) -> None:
    assert judge(outcomes, most=True, seeds=3) in (expected, PARTLY) and claims.verdict_kind(expected)
    assert judge(outcomes, most=True, seeds=3) == (PARTLY if outcomes.count(CONFIRMED) == 1 and
                                                    expected.startswith(claims.NOT_DECIDABLE_AT) else expected)


def test_verdict_kinds_and_the_count_rule() -> None:
    assert claims.verdict_kind("does not hold (holds on cr)") == DOES_NOT_HOLD
    assert claims.verdict_kind("holds") == HOLDS and claims.verdict_kind("not decidable at 5 seeds")
    with pytest.raises(ValueError, match="none of"):
        claims.verdict_kind("probably")
    assert claims.verdict(2, 3) == DOES_NOT_HOLD + " (holds on 2 of 3)" and claims.verdict(2, 3, most=True) == HOLDS
    assert claims.verdict(0, 3) == DOES_NOT_HOLD and claims.verdict(3, 3) == HOLDS


def test_judge_refuses_an_unknown_outcome() -> None:
    with pytest.raises(ValueError, match="not among"):
        judge(["yes"])


def test_a_task_learned_something_when_most_methods_beat_its_baseline() -> None:
    assert learned_something({"A": 0.80, "B": 0.75, "C": 0.12}, baseline=0.10, margin=0.05)
    assert not learned_something({"A": 0.80, "B": 0.13, "C": 0.12}, baseline=0.10, margin=0.05)
    assert not learned_something({}, baseline=0.10, margin=0.05)
    assert learned_something({"A": 30.0, "B": 40.0}, baseline=87.4, margin=1.0, higher_is_better=False)


def test_claims_table_carries_scope_and_seeds_and_refuses_a_bare_verdict() -> None:
    scope = Scope(("low", "high"), "small", 40, (0, 1, 2))
    table = claims.claims_table(None, [Claim("A beats B", lambda e: Judgement("+1.0 ± 0.3", HOLDS, scope))])
    assert table.loc[0, "scope"] == "low, high; small; 40 rounds; 3 seeds (0-2)" and table.loc[0, "seeds"] == 3
    assert str(Scope((), "small", None, ())) == "no task; small; no training; deterministic"
    with pytest.raises(ValueError, match="a Judgement with a verdict among"):
        claims.claims_table(None, [Claim("A beats B", lambda e: Judgement("x", "probably", scope))])
    with pytest.raises(ValueError, match="a Judgement with a verdict among"):  # a bare (ours, verdict) pair
        claims.claims_table(None, [Claim("A beats B", lambda e: ("+1.0", HOLDS))])
    assert isinstance(table, pd.DataFrame) and list(table.columns) == ["claim (main text)", "ours", "verdict",
                                                                        "scope", "model", "seeds", "details"]


def test_a_claims_row_is_short_and_its_comparisons_in_full_go_below_it() -> None:
    family = Family({("cr", "A", "B"): compare([3.0, 4.0, 5.0], [1.0, 1.5, 2.0]),
                     ("cr", "A", "C"): compare([3.0, 4.0, 5.0], [3.0, 4.1, 4.9])})
    scope = Scope(("cr",), "small", 40, (0, 1, 2), model="an MLP")
    judged = family.judged("cr: A beats B and C", scope)
    assert judged.scope.corrected == 2 and judged.scope.brief() == \
        "cr; small; 40 rounds; 3 seeds (0-2); Holm over 2 comparisons"
    assert str(judged.scope) == "cr; small (an MLP); 40 rounds; 3 seeds (0-2); Holm over 2 comparisons"
    # by hand: A - B = 2, 2.5, 3: mean 2.5, sd 0.5, t(2) 4.303 -> half-width 1.24; A - C = 0, -0.1, 0.1
    assert judged.details == {"cr A B": family.said(("cr", "A", "B")), "cr A C": family.said(("cr", "A", "C"))}
    assert judged.details["cr A B"].startswith("+2.50 [+1.26, +3.74], p_Holm") and \
        judged.details["cr A B"].endswith("(confirmed)")
    assert family.short(("cr", "A", "B")) == "+2.50 [+1.26, +3.74], p_Holm 0.026"
    named = family.details(lambda label: f"{label[0]}: {label[1]} - {label[2]}")
    assert list(named) == ["cr: A - B", "cr: A - C"]
    table = claims.claims_table(None, [Claim("A beats the rest", lambda e: judged),
                                       Claim("nothing to see", lambda e: Judgement("no runs", NOT_TESTABLE,
                                                                                   Scope((), "small", None, ())))])
    assert table.loc[0, "model"] == "an MLP" and table.loc[1, "model"] == "" and table.loc[1, "details"] == {}
    summary, details = claims.split(table)
    assert list(summary.columns) == ["claim (main text)", "ours", "verdict", "scope", "model", "seeds"]
    assert details.values.tolist() == [[0, "cr A B", judged.details["cr A B"]], [0, "cr A C", judged.details["cr A C"]]]
    assert "model" not in claims.split(table.iloc[[1]])[0].columns  # no row trained another model: no column
    assert {name: list(t.columns) for name, t in claims.as_tables(table).items()} == \
        {"claims": list(summary.columns), "claims_details": ["claims row", "part", "in full"]}
    html = claims.to_html(table)
    assert html.index("A beats the rest") < html.index("in full") < html.index(judged.details["cr A C"])
    assert "in full" not in claims.to_html(table.iloc[[1]])  # nothing behind the rows: one table
    with pytest.raises(ValueError, match="must be a claims_table"):
        claims.split(table.drop(columns="details"))


def test_a_scope_with_rounds_per_task_names_them_and_narrows_with_its_tasks() -> None:
    scope = Scope(("cr", "ae", "text"), "paper", {"cr": 1500, "ae": 3000, "text": 1200}, (0, 1, 2))
    assert str(scope) == "cr, ae, text; paper; rounds: cr 1500, ae 3000, text 1200; 3 seeds (0-2)"
    assert str(scope.narrowed(["cr"])) == "cr; paper; 1500 rounds; 3 seeds (0-2)"
    assert scope.narrowed(["cr", "text"]).rounds == {"cr": 1500, "text": 1200}
    assert str(Scope(("a", "b"), "small", {"a": 30, "b": 30}, (0,))) == "a, b; small; 30 rounds; 1 seed (0)"
    # a model per task is named per task, one model for every task once
    assert Scope(("a", "b"), "small", 30, (0,), model={"a": "an MLP", "b": "a CNN"}).trained == "a: an MLP; b: a CNN"
    assert Scope(("a", "b"), "small", 30, (0,), model={"a": "an MLP", "b": "an MLP"}).trained == "an MLP"


def test_a_method_that_diverged_on_more_seeds_loses_the_comparison() -> None:
    nan = float("nan")
    assert tuple(comparisons.compare([0.5, nan, 0.6], [0.7, 0.7, 0.7])) == (CONTRADICTED,
                                                                          "diverged on 1 vs 0 of 3 seeds")
    assert comparisons.compare([0.5, 0.6, 0.6], [0.7, nan, nan])[0] == CONFIRMED
    outcome, text = comparisons.compare([0.80, nan, 0.82, 0.81], [0.70, nan, 0.71, 0.72], scale=100)  # 0, 2, 3 compared
    assert outcome == CONFIRMED and text == paired([0.80, 0.82, 0.81], [0.70, 0.71, 0.72]).describe(100)
    assert tuple(comparisons.compare([nan], [nan])) == (WITHIN_NOISE, "both diverged on all 1 seeds")


def test_a_mean_that_rounds_to_zero_shows_no_sign_of_its_own() -> None:
    assert paired([0.5001, 0.5002], [0.5003, 0.5003]).describe(100, 1).startswith("0.0 [")


@pytest.mark.parametrize("outcomes, expected", [
    ([CONFIRMED, CONFIRMED], CONFIRMED), ([CONFIRMED, CONTRADICTED, NOT_DECIDABLE], CONTRADICTED),
    ([CONFIRMED, WITHIN_NOISE], WITHIN_NOISE), ([WITHIN_NOISE, NOT_DECIDABLE], NOT_DECIDABLE), ([], CONFIRMED),
])
def test_all_of_a_tasks_checks(outcomes, expected) -> None:
    assert comparisons.all_of(outcomes) == expected


@pytest.mark.parametrize("outcomes, expected", [
    ([CONTRADICTED, CONFIRMED], CONFIRMED), ([CONTRADICTED, CONTRADICTED], CONTRADICTED),
    ([CONTRADICTED, WITHIN_NOISE, NOT_DECIDABLE], WITHIN_NOISE), ([CONTRADICTED, NOT_DECIDABLE], NOT_DECIDABLE),
])
def test_any_of_alternatives_one_of_which_must_pass(outcomes, expected) -> None:
    assert comparisons.any_of(outcomes) == expected


def test_any_of_no_alternatives_is_refused() -> None:
    """No alternative cannot be "contradicted": it was never tested (tests/test_silent_experiments.py has more)."""
    with pytest.raises(ValueError, match=r"any_of"):
        comparisons.any_of([])


def test_a_p_value_near_the_threshold_prints_the_side_it_falls_on() -> None:
    # three decimals would print 0.050 for both, one confirmed (p <= 0.05) and one not
    p = comparisons._p
    assert p(0.0501) == "0.0501" and p(0.0499) == "0.0499" and p(0.05) == "0.0500"
    assert p(0.046) == "0.046" and p(0.0506) == "0.051" and p(0.0004) == "< 0.001"
    assert p(float("nan")) == "n/a"
