"""The shared rules of the claims tables (fedcore.experiments.claims) on hand-made numbers: each rule must be able
to say holds, does not hold, inconclusive and not testable, so that no verdict passes by construction."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from fedcore.experiments import claims
from fedcore.experiments.claims import (
    CONFIRMED,
    CONTRADICTED,
    DOES_NOT_HOLD,
    HOLDS,
    INCONCLUSIVE,
    NOT_TESTABLE,
    PARTLY,
    WITHIN_NOISE,
    Claim,
    Judgement,
    Scope,
    judge,
    learned_something,
    paired,
)


def test_paired_differences_and_their_noise_by_hand() -> None:
    comparison = paired([0.80, 0.82, 0.78], [0.75, 0.80, 0.77])
    differences = [0.05, 0.02, 0.01]
    mean = sum(differences) / 3
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    assert comparison.differences == pytest.approx(differences)
    assert comparison.mean == pytest.approx(mean) and comparison.standard_error == pytest.approx(sd / math.sqrt(3))
    t = mean / (sd / math.sqrt(3))  # the paired t statistic, 2 degrees of freedom: p = 1 - |t| / sqrt(t^2 + 2)
    assert comparison.p_value == pytest.approx(1 - abs(t) / math.sqrt(t * t + 2))
    # a: 0.80 0.82 0.78, b: 0.75 0.80 0.77; of the 9 pairs, a wins: 0.80 twice and ties 0.80 (half), 0.82 three
    # times, 0.78 twice: 7.5 of 9
    assert comparison.probability_of_improvement == pytest.approx(7.5 / 9)
    assert comparison.describe(100) == f"{100 * mean:+.2f} ± {200 * sd / math.sqrt(3):.2f}"


def test_a_loss_is_oriented_so_that_lower_is_better() -> None:
    comparison = paired([0.3, 0.4], [0.5, 0.6], higher_is_better=False)
    assert comparison.mean == pytest.approx(0.2) and comparison.probability_of_improvement == 1.0


@pytest.mark.parametrize("a, b, margin, expected", [
    ([0.80, 0.82, 0.81], [0.70, 0.71, 0.72], 0.0, CONFIRMED),        # +0.10, tight
    ([0.70, 0.71, 0.72], [0.80, 0.82, 0.81], 0.0, CONTRADICTED),
    ([0.80, 0.70, 0.75], [0.74, 0.77, 0.73], 0.0, WITHIN_NOISE),     # mean +0.0033, sd 0.06
    ([0.80], [0.10], 0.0, WITHIN_NOISE),                               # one seed never decides
    ([0.79, 0.80, 0.78], [0.80, 0.81, 0.79], -0.02, CONFIRMED),       # within 2 points of b, clearly
    ([0.74, 0.75, 0.73], [0.80, 0.81, 0.79], -0.02, CONTRADICTED),    # 6 points behind
    ([0.80, 0.81, 0.80], [0.80, 0.81, 0.80], 0.0, WITHIN_NOISE),      # identical: no difference to count
    ([0.81, 0.82, 0.81], [0.80, 0.81, 0.80], 0.0, CONFIRMED),         # the same +0.01 on every seed
])
def test_a_difference_counts_only_beyond_twice_its_standard_error(a, b, margin, expected) -> None:
    assert paired(a, b).outcome(margin) == expected


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
    ([CONFIRMED, CONTRADICTED], PARTLY),
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
    ([], NOT_TESTABLE),
])
def test_judge_on_most_checks(outcomes, expected) -> None:
    assert judge(outcomes, most=True) == expected


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
                                                                        "scope", "seeds"]


def test_a_scope_with_rounds_per_task_names_them_and_narrows_with_its_tasks() -> None:
    scope = Scope(("cr", "ae", "text"), "paper", {"cr": 1500, "ae": 3000, "text": 1200}, (0, 1, 2))
    assert str(scope) == "cr, ae, text; paper; rounds: cr 1500, ae 3000, text 1200; 3 seeds (0-2)"
    assert str(scope.narrowed(["cr"])) == "cr; paper; 1500 rounds; 3 seeds (0-2)"
    assert scope.narrowed(["cr", "text"]).rounds == {"cr": 1500, "text": 1200}
    assert str(Scope(("a", "b"), "small", {"a": 30, "b": 30}, (0,))) == "a, b; small; 30 rounds; 1 seed (0)"


def test_a_method_that_diverged_on_more_seeds_loses_the_comparison() -> None:
    nan = float("nan")
    assert claims.compare([0.5, nan, 0.6], [0.7, 0.7, 0.7]) == (CONTRADICTED, "diverged on 1 vs 0 of 3 seeds")
    assert claims.compare([0.5, 0.6, 0.6], [0.7, nan, nan])[0] == CONFIRMED
    outcome, text = claims.compare([0.80, nan, 0.82], [0.70, nan, 0.71], scale=100)  # seeds 0 and 2 compared
    assert outcome == CONFIRMED and text == paired([0.80, 0.82], [0.70, 0.71]).describe(100)
    assert claims.compare([nan], [nan]) == (WITHIN_NOISE, "both diverged on all 1 seeds")


def test_a_mean_that_rounds_to_zero_shows_no_sign_of_its_own() -> None:
    assert paired([0.5001, 0.5002], [0.5003, 0.5003]).describe(100, 1).startswith("0.0 ± ")
