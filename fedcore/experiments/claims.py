"""A paper's claims as data, each judged by shared rules that know the noise over seeds.

A :class:`Claim` pairs a sentence of the paper with ``assess(evidence)``, a function of the notebook's own
evidence (result tables over seeds) that returns a :class:`Judgement`: what our results show in numbers, the
verdict and its :class:`Scope` (tasks, scale, rounds, judging seeds and, where a grid chose hyperparameters, the
tuning seeds).  :func:`claims_table` lays them out, one short row per claim, and :func:`show` displays them with
the numbers behind each row (``Judgement.details``: every comparison in full) in a table below.  The rules:

- **A comparison over seeds** (:func:`paired`): the same seeds give both methods the same initial model, client
  sampling and minibatches, so the per-seed differences are paired (by seed label when the scores carry them).  A
  difference counts when its **95% paired t interval** (:data:`CONFIDENCE`), ``mean ± t(n - 1) sd / sqrt(n)``
  with the two-sided t quantile for n - 1 degrees of freedom (4.30 at 3 seeds, 2.78 at 5), excludes the margin:
  the paired t-test (``scipy.stats.ttest_rel``) against the margin at 5%.  Why t and not a bootstrap: with 3 to 5
  seeds a bootstrap interval has too few distinct resamples (10 at n = 3) and is too narrow (it ignores that
  the sd itself is estimated); the t interval is exact for normal differences and the usual choice at small n.
  Every test is two-sided, also for a directional claim.  Beside it the probability of improvement (Agarwal et
  al., NeurIPS 2021, rliable: the chance that a run of one method beats a run of the other, ties half).
- **A margin** (:meth:`Paired.outcome`): "A is within 2 points of B" is the comparison of A - B with -2: it is
  confirmed only when the whole interval lies above -2, contradicted when it lies below.
- **What a comparison could detect**: an interval that straddles the margin is undecided.  For a margin claim
  whose interval is wider than the room the margin leaves (its half-width beyond ``|margin|``: even no difference
  at all could not be confirmed) it is :data:`NOT_DECIDABLE` at these seeds, else :data:`WITHIN_NOISE`; either
  way the text gives the seeds it would take at the measured spread (:meth:`Paired.seeds_needed`).
- **A family** (:class:`Family`): the comparisons behind one verdict are corrected together by Holm's step-down
  (:func:`holm`): the k p-values sorted, the i-th smallest counts when it is at most ``0.05 / (k - i + 1)`` and all
  smaller ones counted.  One comparison alone is its plain 95% test.
- **A verdict** (:func:`judge`) from the outcomes of a claim's checks: holds if every check is confirmed; does not
  hold if any is contradicted (with the checks it held on: "does not hold (holds on ...)"); partly if some are
  confirmed and the rest undecided; not decidable at n seeds if none is decided and a margin left no room;
  inconclusive if none is decided otherwise; not testable here if there is no check.
- **A task that learned something** (:func:`learned_something`): a task enters a comparison only if most
  methods beat its trivial baseline (:func:`trivial_baseline`) by a stated margin; otherwise the claim says
  "not testable at this scale" for it, with the numbers.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats

from fedcore.checks import check_bool, check_int, check_number, check_range, check_seeds, plain_number

HOLDS, PARTLY, DOES_NOT_HOLD = "holds", "partly", "does not hold"
INCONCLUSIVE, NOT_TESTABLE, NOT_DECIDABLE_AT = "inconclusive", "not testable here", "not decidable at"
VERDICTS = (HOLDS, PARTLY, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE, NOT_DECIDABLE_AT)
"""The kinds of verdict; a verdict may say more after its kind: "does not hold (holds on cr)", "not decidable at 3
seeds" (:func:`verdict_kind`)."""
CONFIRMED, CONTRADICTED, WITHIN_NOISE = "confirmed", "contradicted", "within the noise"
NOT_DECIDABLE = "not decidable"
OUTCOMES = (CONFIRMED, CONTRADICTED, WITHIN_NOISE, NOT_DECIDABLE)
UNDECIDED = (WITHIN_NOISE, NOT_DECIDABLE)
CONFIDENCE = 0.95
"""A difference counts when its paired t interval at this confidence excludes the margin (a test at 5%)."""
MOST_SEEDS = 1000
""":meth:`Paired.seeds_needed` looks this far."""
Scores = Sequence[float] | Mapping[int, float]
"""One score per seed: a list or 1-d array (seeds by position), a ``pd.Series`` indexed by seed or ``{seed: score}``."""


def t_quantile(seeds: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided t quantile of a paired interval over ``seeds`` seeds (``seeds - 1`` degrees of freedom):
    4.303 at 3 seeds, 2.776 at 5 (``scipy.stats.t.ppf``); ``confidence`` in (0, 1)."""
    confidence = check_range("confidence", confidence, 0, 1, low_closed=False)
    return float(stats.t.ppf(0.5 + confidence / 2, check_int("seeds", seeds, 2) - 1))


def verdict_kind(verdict: str) -> str:
    """The kind (:data:`VERDICTS`) a verdict text starts with: ``"does not hold (holds on cr)"`` is
    :data:`DOES_NOT_HOLD`; a text of no kind is a ``ValueError``."""
    for kind in sorted(VERDICTS, key=len, reverse=True):  # "does not hold" before "holds"
        if isinstance(verdict, str) and verdict.startswith(kind):
            return kind
    raise ValueError(f"verdict={verdict!r} is none of {list(VERDICTS)}")


@dataclass(frozen=True)
class Paired:
    """The per-seed differences ``a - b`` of two methods' scores, oriented so that positive means ``a`` is better
    (for a loss: ``b - a``).  ``a`` and ``b`` are kept (oriented the same way) for the probability of
    improvement."""

    differences: tuple[float, ...]
    a: tuple[float, ...]
    b: tuple[float, ...]

    @property
    def seeds(self) -> int:
        return len(self.differences)

    @property
    def mean(self) -> float:
        return float(np.mean(self.differences))

    @property
    def sd(self) -> float:
        """The differences' standard deviation (``ddof = 1``); NaN for one seed."""
        return float(np.std(self.differences, ddof=1)) if self.seeds > 1 else math.nan

    @property
    def standard_error(self) -> float:
        """``sd / sqrt(n)`` of the differences (``scipy.stats.sem``, ``ddof = 1``); NaN for one seed."""
        return float(stats.sem(self.differences)) if self.seeds > 1 else math.nan

    def half_width(self, confidence: float = CONFIDENCE) -> float:
        """``t(n - 1) sd / sqrt(n)``: the paired t interval's half-width (:func:`t_quantile`); NaN for one seed."""
        return t_quantile(self.seeds, confidence) * self.standard_error if self.seeds > 1 else math.nan

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float]:
        """The paired t interval ``mean ± t(n - 1) sd / sqrt(n)`` of the mean difference (``scipy.stats.t``)."""
        return self.mean - self.half_width(confidence), self.mean + self.half_width(confidence)

    def test(self, margin: float = 0.0) -> float:
        """The two-sided p-value of the paired t-test of "the mean difference is ``margin``" (for ``margin = 0``,
        ``scipy.stats.ttest_rel``'s); with no spread 0 (or 1 when every difference is the margin); NaN for one
        seed."""
        if self.seeds < 2:
            return math.nan
        if np.ptp(self.differences) == 0:
            return 1.0 if self.mean == margin else 0.0
        return float(stats.ttest_1samp(np.asarray(self.differences) - margin, 0.0).pvalue)

    @property
    def p_value(self) -> float:
        """:meth:`test` against no difference: ``scipy.stats.ttest_rel(a, b)``'s p."""
        return self.test(0.0)

    @property
    def probability_of_improvement(self) -> float:
        """P(a run of ``a`` beats a run of ``b``) over all pairs of seeds, ties counted half: the Mann-Whitney U
        statistic over ``n_a n_b`` (``scipy.stats.mannwhitneyu``), rliable's measure for few runs."""
        return float(stats.mannwhitneyu(self.a, self.b).statistic) / (len(self.a) * len(self.b))

    def no_room(self, margin: float = 0.0) -> bool:
        """Whether these seeds cannot decide a margin claim: one seed, or the interval wider than the room the
        margin leaves (half-width beyond ``|margin|``, ``margin != 0``)."""
        return self.seeds < 2 or (margin != 0 and self.half_width() > abs(margin))

    def outcome(self, margin: float = 0.0, p: float | None = None) -> str:
        """Is the mean difference above ``margin``?  :data:`CONFIRMED` when the 95% interval lies above it,
        :data:`CONTRADICTED` when below (``p``: a corrected p-value to use instead, :func:`holm`); undecided
        otherwise: :data:`NOT_DECIDABLE` where :meth:`no_room`, else :data:`WITHIN_NOISE`."""
        p = self.test(margin) if p is None else p
        if not p <= 1 - CONFIDENCE:  # NaN too
            return NOT_DECIDABLE if self.no_room(margin) else WITHIN_NOISE
        return CONFIRMED if self.mean > margin else CONTRADICTED

    def seeds_needed(self, margin: float = 0.0) -> int | None:
        """The fewest seeds whose 95% interval, at the measured sd, would be narrower than the gap it must clear:
        ``|margin|`` where :meth:`no_room` (so that no difference could be confirmed), else ``|mean - margin|``;
        None beyond :data:`MOST_SEEDS` (or with one seed, or no gap)."""
        gap = abs(margin) if self.no_room(margin) else abs(self.mean - margin)
        if self.seeds < 2 or gap == 0:
            return None
        if self.sd == 0:
            return 2
        n = np.arange(2, MOST_SEEDS + 1)
        fits = stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * self.sd / np.sqrt(n) < gap
        return int(n[fits.argmax()]) if fits.any() else None

    def describe(self, scale: float = 1.0, digits: int = 2, margin: float = 0.0, p: float | None = None) -> str:
        """``"+1.23 [+0.45, +2.01], p 0.012"``: the mean difference, its 95% interval (times ``scale``, e.g. 100
        for points) and the p-value against ``margin`` (``p``: a corrected one, :func:`holm`); where undecided, the
        seeds it would take at this spread."""
        p = self.test(margin) if p is None else p
        low, high = (scale * value for value in self.interval())
        text = _signed(self.mean * scale, digits)
        if self.seeds > 1:
            text += f" [{_signed(low, digits)}, {_signed(high, digits)}], p {_p(p)}"
        if self.outcome(margin, p) in UNDECIDED and (self.no_room(margin) or self.mean != margin):  # a gap to clear
            needed = self.seeds_needed(margin)
            text += f"; ~{needed} seeds would decide" if needed and needed > self.seeds else \
                f"; over {MOST_SEEDS} seeds would decide" if needed is None and self.seeds > 1 else ""
        return text


def _signed(value: float, digits: int) -> str:
    """``+1.23`` (no "-0.00")."""
    value = round(float(value), digits)
    return f"{abs(value):.{digits}f}" if value == 0 else f"{value:+.{digits}f}"


def _p(p: float) -> str:
    """p to three decimals (four where three would print 0.050 and hide which side of 0.05 decided it)."""
    return "n/a" if math.isnan(p) else "< 0.001" if p < 0.001 else f"{p:.4f}" if 0.0495 <= p < 0.0505 else f"{p:.3f}"


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm, 1979): sorted ascending, the i-th of k becomes
    ``max over j <= i of min(1, (k - j + 1) p_(j))``; a comparison counts at 5% when its adjusted p is at most 0.05,
    which is Holm's rule.  NaN (one seed) stays NaN and counts in k.  Each p must lie in [0, 1] (or be NaN)."""
    if isinstance(p_values, (str, bytes)) or not isinstance(p_values, Iterable):
        raise TypeError(f"p_values={p_values!r} must be a list of p-values, each in [0, 1] or NaN (one seed)")
    values = [_p_value(f"p_values[{i}]", p) for i, p in enumerate(p_values)]
    order = sorted(range(len(values)), key=lambda i: (math.isnan(values[i]), values[i]))
    adjusted, running = [math.nan] * len(values), 0.0
    for rank, index in enumerate(order):
        if math.isnan(values[index]):
            continue
        running = max(running, min(1.0, (len(values) - rank) * values[index]))
        adjusted[index] = running
    return adjusted


def _p_value(name: str, p: Any) -> float:
    """``p`` as a float: NaN (no test: one seed), or a number in [0, 1]."""
    p = plain_number(p)
    if isinstance(p, float) and math.isnan(p):
        return p
    return check_range(name, p, 0, 1, high_closed=True)


def _scores(name: str, values: Any) -> tuple[np.ndarray, list | None]:
    """``values`` as a float array of one score per seed, and the seeds' labels when the scores carry them (a
    ``pd.Series``'s index, a ``{seed: score}`` mapping's keys); a table (two dimensions) is refused."""
    labels = list(values.index) if isinstance(values, pd.Series) else list(values) if isinstance(values, Mapping) \
        else None
    if isinstance(values, Mapping):
        values = list(values.values())
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name}={values!r} must hold one score per seed (a list, 1-d array, Series or "
                        "{seed: score}), not a string")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}={values!r:.80} must hold one number per seed") from None
    if array.ndim != 1:
        raise ValueError(f"{name} has shape {array.shape}: give one score per seed (a list, 1-d array, Series or "
                         "{seed: score}); a table (methods x seeds, tasks x seeds) is compared a row at a time")
    if labels is not None and len(set(labels)) != len(labels):
        raise ValueError(f"{name} is labelled by seeds {labels}, one of them twice: each seed is one run")
    return array, labels


def _per_seed(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    """``a`` and ``b`` as float arrays of one score per seed each, the same seeds in the same order: paired by label
    when both carry labels (``pd.Series`` or ``{seed: score}``; refused when their seeds differ), by position when
    neither does; labels on one side only are refused (the other's order would pair them blindly)."""
    (a, labels_a), (b, labels_b) = _scores("a", a), _scores("b", b)
    if (labels_a is None) != (labels_b is None):
        labelled, other = ("a", "b") if labels_b is None else ("b", "a")
        raise ValueError(f"{labelled} is labelled by seeds {labels_a or labels_b} and {other} is not (a list or "
                         "array, paired by position only): give both their seeds (a pd.Series indexed by seed or "
                         "{seed: score}) or neither")
    if labels_a is not None and labels_b is not None:
        if set(labels_a) != set(labels_b):
            raise ValueError(f"a is labelled by seeds {labels_a} and b by {labels_b}: a paired comparison needs the "
                             "same seeds in both")
        b = b[[labels_b.index(label) for label in labels_a]]
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"a and b must hold one score per seed, the same seeds: got {a.size} and {b.size} scores")
    return a, b


def paired(a: Scores, b: Scores, higher_is_better: bool = True) -> Paired:
    """The paired comparison of ``a`` and ``b``, one score per seed each: paired by seed when both carry their
    seeds (``pd.Series`` indexed by seed, or ``{seed: score}``), by position when neither does (one labelled, the
    other not: a ``ValueError``)."""
    a, b = _per_seed(a, b)
    higher_is_better = check_bool("higher_is_better", higher_is_better)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a and b must be finite: a diverged run has no score; judge it before comparing")
    sign = 1.0 if higher_is_better else -1.0
    return Paired(tuple(sign * (a - b)), tuple(sign * a), tuple(sign * b))


@dataclass(frozen=True)
class Check:
    """One comparison of a claim (:func:`compare`): "``a`` beats ``b`` by more than ``margin``" as its paired
    differences, or an outcome ``decided`` without a test (a method that diverged on more seeds than the other),
    with the ``text`` that says why.  ``outcome, text = check`` reads it alone (uncorrected); a :class:`Family`
    reads it with the others behind the same verdict."""

    paired: Paired | None
    margin: float = 0.0
    scale: float = 1.0
    digits: int = 2
    decided: str = ""
    text_if_decided: str = ""

    @property
    def p(self) -> float:
        """The uncorrected two-sided p-value against the margin (NaN for a check decided without a test)."""
        return math.nan if self.paired is None else self.paired.test(self.margin)

    def outcome(self, p: float | None = None) -> str:
        return self.decided or self.paired.outcome(self.margin, p)

    def text(self, p: float | None = None) -> str:
        return self.text_if_decided or self.paired.describe(self.scale, self.digits, self.margin, p)

    def __iter__(self) -> Iterator[str]:
        return iter((self.outcome(), self.text()))

    def __getitem__(self, index: int) -> str:
        return tuple(self)[index]


def compare(a: Scores, b: Scores, higher_is_better: bool = True, margin: float = 0.0,
            scale: float = 1.0, digits: int = 2) -> Check:
    """The :class:`Check` of "``a`` beats ``b`` by more than ``margin``" (:meth:`Paired.outcome`), one score per
    seed each (paired by seed as :func:`paired` pairs them), NaN for a run that diverged; ``outcome, text =
    compare(...)`` reads it alone.  A method that diverged on more seeds than the other loses the comparison
    (:data:`CONTRADICTED` for ``a``, :data:`CONFIRMED` against ``b``); on as many, the seeds where both finished
    are compared.  The text is the mean difference, its 95% interval (times ``scale``) and p."""
    a, b = _per_seed(a, b)
    margin, scale, digits = check_number("margin", margin), check_number("scale", scale), check_int("digits", digits, 0)
    failed_a, failed_b = int(np.isnan(a).sum()), int(np.isnan(b).sum())
    if failed_a != failed_b:
        return Check(None, margin, scale, digits, CONTRADICTED if failed_a > failed_b else CONFIRMED,
                     f"diverged on {failed_a} vs {failed_b} of {a.size} seeds")
    both = ~(np.isnan(a) | np.isnan(b))
    if not both.any():
        return Check(None, margin, scale, digits, WITHIN_NOISE, f"both diverged on all {a.size} seeds")
    return Check(paired(a[both], b[both], higher_is_better), margin, scale, digits)


@dataclass(frozen=True)
class Family:
    """The comparisons behind one verdict, ``{label: Check}``, corrected together by Holm's step-down
    (:func:`holm`; the checks decided without a test stay as they are and do not count in k)."""

    checks: Mapping[str, Check]

    def __post_init__(self) -> None:
        if not isinstance(self.checks, Mapping) or not all(isinstance(c, Check) for c in self.checks.values()):
            raise TypeError(f"checks={self.checks!r:.80} must be a {{label: Check}} (claims.compare gives a Check)")
        object.__setattr__(self, "checks", dict(self.checks))

    def __len__(self) -> int:
        return len(self.tested)

    @property
    def tested(self) -> list[str]:
        """The labels of the checks that take a test (and count in Holm's k)."""
        return [label for label, check in self.checks.items() if check.paired is not None]

    @property
    def p_values(self) -> dict[str, float]:
        """Holm-adjusted p-values of the tested checks."""
        return dict(zip(self.tested, holm([self.checks[label].p for label in self.tested])))

    @property
    def outcomes(self) -> dict[str, str]:
        p = self.p_values
        return {label: check.outcome(p.get(label)) for label, check in self.checks.items()}

    def text(self, label: str) -> str:
        """The check's text with its corrected p (``"p_Holm"`` where the family has more than one test)."""
        text = self.checks[label].text(self.p_values.get(label))
        return text.replace(", p ", ", p_Holm ") if len(self) > 1 else text

    def short(self, label: str) -> str:
        """``"+1.23 [+0.45, +2.01], p_Holm 0.012"``: the check's :meth:`text` without the seeds it would take (a
        claims row's summary; :meth:`said` adds the outcome)."""
        return self.text(label).split("; ")[0]

    def said(self, label: str) -> str:
        """``"+1.23 [+0.45, +2.01], p_Holm 0.012 (confirmed)"``: the check's corrected :meth:`text` and outcome."""
        return f"{self.text(label)} ({self.outcomes[label]})"

    def details(self, name: Callable[[Any], str] | None = None) -> dict[str, str]:
        """Every check :meth:`said` in full, ``{name(label): text}`` (``name``: how a label reads, by default the
        label, a tuple's parts joined by spaces): what a claims row's short summary rests on."""
        name = name or (lambda label: " ".join(map(str, label)) if isinstance(label, tuple) else str(label))
        return {name(label): self.said(label) for label in self.checks}

    @property
    def seeds(self) -> int:
        return max((check.paired.seeds for check in self.checks.values() if check.paired is not None), default=0)

    def verdict(self, most: bool = False, outcomes: Sequence[str] | Mapping[str, str] | None = None) -> str:
        """:func:`judge` of the corrected :attr:`outcomes`, or of ``outcomes`` derived from them (one per task of
        several checks, :func:`all_of`; a list where a contradicted claim should count, not name, where it held)."""
        return judge(self.outcomes if outcomes is None else outcomes, most, self.seeds or None)

    def judged(self, ours: str, scope: Scope, most: bool = False,
               outcomes: Sequence[str] | Mapping[str, str] | None = None,
               details: Mapping[str, str] | None = None) -> Judgement:
        """The :class:`Judgement` with :meth:`verdict`, its scope saying how many comparisons Holm corrected, and
        ``details`` (by default every check in full, :meth:`details`)."""
        return Judgement(ours, self.verdict(most, outcomes), dataclasses.replace(scope, corrected=len(self)),
                         self.details() if details is None else details)


def _outcomes(outcomes: Any) -> list[str]:
    """``outcomes`` as a list, each one of :data:`OUTCOMES` (a string, or anything not iterable, is a
    ``TypeError``; another word a ``ValueError``)."""
    if isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, Iterable):
        raise TypeError(f"outcomes={outcomes!r} must be a list of outcomes, each one of {list(OUTCOMES)}, e.g. "
                        f"[{CONFIRMED!r}]")
    outcomes = list(outcomes)
    unknown = [o for o in outcomes if o not in OUTCOMES]
    if unknown:
        raise ValueError(f"outcomes {unknown} are not among {list(OUTCOMES)}")
    return outcomes


def all_of(outcomes: Sequence[str]) -> str:
    """One outcome from checks that must all pass (a task's several comparisons): contradicted if one is,
    confirmed if all are (no check: confirmed, nothing to fail), else undecided (not decidable where one is).
    Each outcome one of :data:`OUTCOMES`, as :func:`judge` takes them."""
    outcomes = _outcomes(outcomes)
    return CONTRADICTED if CONTRADICTED in outcomes else CONFIRMED if set(outcomes) <= {CONFIRMED} \
        else NOT_DECIDABLE if NOT_DECIDABLE in outcomes else WITHIN_NOISE


def any_of(outcomes: Sequence[str]) -> str:
    """One outcome from alternatives of which one must pass (some adaptive method beats the baselines): confirmed
    if one is, contradicted if all are, else undecided (not decidable where every undecided one is).  Each outcome
    one of :data:`OUTCOMES`, as :func:`judge` takes them; no alternative at all is a ``ValueError`` (nothing to
    choose from is no outcome)."""
    outcomes = _outcomes(outcomes)
    if not outcomes:
        raise ValueError("outcomes=[] is empty: any_of needs at least one alternative (a claim with none is not "
                         "testable: judge([]))")
    if CONFIRMED in outcomes:
        return CONFIRMED
    undecided = [o for o in outcomes if o != CONTRADICTED]
    return CONTRADICTED if not undecided else NOT_DECIDABLE if set(undecided) == {NOT_DECIDABLE} else WITHIN_NOISE


def not_decidable(seeds: int | None) -> str:
    """``"not decidable at 3 seeds"`` (``seeds`` an int >= 1; None: "at these seeds")."""
    seeds = None if seeds is None else check_int("seeds", seeds, 1)
    return f"{NOT_DECIDABLE_AT} {seeds} seed{'s' * (seeds != 1)}" if seeds else f"{NOT_DECIDABLE_AT} these seeds"


def judge(outcomes: Sequence[str] | Mapping[str, str], most: bool = False, seeds: int | None = None) -> str:
    """The verdict of a claim from its checks' outcomes (each one of :data:`OUTCOMES`; ``{label: outcome}`` names
    where a contradicted claim still held): see the module's rules.  With ``most`` the claim asks more than half
    of its checks to pass: it holds when more than half are confirmed, does not hold when the confirmed and the
    undecided together are at most half, partly when some are confirmed otherwise.  ``seeds``: the seeds behind
    the checks (an int >= 1; None: unknown), for "not decidable at ``seeds`` seeds"."""
    labels = dict(outcomes) if isinstance(outcomes, Mapping) else {}
    outcomes, most = _outcomes(labels.values() if labels else outcomes), check_bool("most", most)
    seeds = None if seeds is None else check_int("seeds", seeds, 1)
    undecided = not_decidable(seeds) if NOT_DECIDABLE in outcomes else INCONCLUSIVE
    if not outcomes:
        return NOT_TESTABLE
    confirmed, contradicted = outcomes.count(CONFIRMED), outcomes.count(CONTRADICTED)
    if most:
        if 2 * confirmed > len(outcomes):
            return HOLDS
        if 2 * (len(outcomes) - contradicted) <= len(outcomes):
            return DOES_NOT_HOLD
        return PARTLY if confirmed else undecided
    if confirmed == len(outcomes):
        return HOLDS
    if contradicted:
        held = [label for label, outcome in labels.items() if outcome == CONFIRMED]
        return DOES_NOT_HOLD + (f" (holds on {', '.join(held)})" if held else
                                f" (holds on {confirmed} of {len(outcomes)})" if confirmed else "")
    return PARTLY if confirmed else undecided


def verdict(hits: int, total: int, most: bool = False) -> str:
    """The count rule of checks without noise (exact computations, one deterministic run): holds if all ``total``
    checks pass (``most``: more than half); otherwise does not hold (a claim over every check that failed one
    says on how many it held), or, with ``most``, partly if some pass; no checks: not testable."""
    total = check_int("total", total, 0)
    hits, most = check_int("hits", hits, 0, total), check_bool("most", most)
    if total == 0:
        return NOT_TESTABLE
    if hits == total or (most and 2 * hits > total):
        return HOLDS
    if most:
        return PARTLY if hits else DOES_NOT_HOLD
    return DOES_NOT_HOLD + (f" (holds on {hits} of {total})" if hits else "")


def learned_something(scores: Mapping[str, float], baseline: float, margin: float,
                      higher_is_better: bool = True) -> bool:
    """Whether a task says anything about the methods' order: more than half of the methods' mean ``scores``
    beat the trivial ``baseline`` by more than ``margin`` (in the scores' units; a NaN score, a method that
    diverged, beats nothing)."""
    if not isinstance(scores, Mapping):
        raise TypeError(f"scores={scores!r:.80} must map each method to its mean score, e.g. {{'FedAvg': 71.2}}")
    baseline, margin = check_number("baseline", baseline), check_number("margin", margin)
    higher_is_better = check_bool("higher_is_better", higher_is_better)
    for method, score in scores.items():
        score = plain_number(score)
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise TypeError(f"scores[{method!r}]={score!r} must be a number, the method's mean score (NaN: it "
                            "diverged)")
    if not scores:
        return False
    sign = 1.0 if higher_is_better else -1.0
    beating = sum(sign * (float(score) - baseline) > margin for score in scores.values())
    return 2 * beating > len(scores)


def check_apart(tuning_seeds: Sequence[int], seeds: Sequence[int]) -> None:
    """Refuse ``tuning_seeds`` that share a seed with the judging ``seeds``, by name."""
    shared = sorted(set(tuning_seeds) & set(seeds))
    if shared:
        raise ValueError(f"tuning_seeds={list(tuning_seeds)} share seeds {shared} with the judging seeds="
                         f"{list(seeds)}: hyperparameters are chosen on seeds apart from those that judge them")


def seed_list(seeds: Sequence[int]) -> str:
    """``"0-2"`` for consecutive seeds, ``"0, 3, 7"`` otherwise."""
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _task_names(tasks: Any) -> tuple[str, ...]:
    """A :class:`Scope`'s ``tasks`` as a tuple of names (one string is not a sequence of names)."""
    if isinstance(tasks, (str, bytes)) or not isinstance(tasks, Iterable):
        raise TypeError(f"tasks={tasks!r} must be a sequence of task names")
    tasks = tuple(tasks)
    if not all(isinstance(task, str) for task in tasks):
        raise TypeError(f"tasks={tasks!r} must be a sequence of task names (strings)")
    return tasks


def _scope_seeds(name: str, seeds: Any) -> tuple[int, ...]:
    """A :class:`Scope`'s ``seeds``: distinct seeds (:func:`~fedcore.checks.check_seeds`), or none."""
    if isinstance(seeds, Sequence) and not isinstance(seeds, (str, bytes)) and len(seeds) == 0:
        return ()
    return tuple(check_seeds(name, seeds, " (or () for an exact computation)"))


@dataclass(frozen=True)
class Scope:
    """What a verdict rests on: the tasks (settings) it judged, the scale, the rounds per run (one number, or
    ``{task: rounds}`` where the tasks run different horizons; None for an exact computation), the seeds and, where
    the scale trains another model than the paper's, which (one label, or ``{task: label}``, narrowed with the
    tasks); the ``tuning_seeds`` a grid search chose hyperparameters on (disjoint from the judging ``seeds``; empty
    where nothing was tuned), and how many comparisons Holm's step-down ``corrected`` together (0: none).  Checked
    when it is built: the tasks are names (one string is not), the seeds and tuning seeds distinct seeds
    (:func:`~fedcore.checks.check_seeds`), no seeds only for an exact computation (``rounds`` None)."""

    tasks: tuple[str, ...]
    scale: str
    rounds: int | Mapping[str, int] | None
    seeds: tuple[int, ...]
    model: str | Mapping[str, str] = ""
    tuning_seeds: tuple[int, ...] = ()
    corrected: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", _task_names(self.tasks))
        object.__setattr__(self, "seeds", _scope_seeds("seeds", self.seeds))
        object.__setattr__(self, "tuning_seeds", _scope_seeds("tuning_seeds", self.tuning_seeds))
        if not self.seeds and self.rounds is not None:
            raise ValueError(f"seeds=() is empty, but rounds={self.rounds!r}: runs come from seeds (only an exact "
                             "computation, rounds=None, has none)")
        check_int("corrected", self.corrected, 0)
        check_apart(self.tuning_seeds, self.seeds)
        if isinstance(self.rounds, Mapping):  # one horizon for every task is one number
            counts = {task: int(rounds) for task, rounds in self.rounds.items()}
            object.__setattr__(self, "rounds", next(iter(counts.values())) if len(set(counts.values())) == 1
                               else counts)
        if isinstance(self.model, Mapping):
            object.__setattr__(self, "model", dict(self.model))

    def _rounds(self) -> str:
        if self.rounds is None:
            return "no training"
        if not isinstance(self.rounds, Mapping):
            return f"{self.rounds} rounds"
        return "rounds: " + ", ".join(f"{task} {count}" for task, count in self.rounds.items())

    def _model(self) -> str:
        if isinstance(self.model, Mapping):
            if len(set(self.model.values())) == 1:  # one model for every task: named once
                return next(iter(self.model.values()))
            return "; ".join(f"{task}: {label}" for task, label in self.model.items())
        return self.model

    @property
    def trained(self) -> str:
        """The model the scale trains instead of the paper's (per task where they differ), "" where it trains the
        paper's or nothing."""
        return self._model() if self.rounds is not None else ""

    def brief(self) -> str:
        """The scope without the model (the claims table gives that a column of its own)."""
        return self._text(with_model=False)

    def __str__(self) -> str:
        return self._text(with_model=True)

    def _text(self, with_model: bool) -> str:
        tasks = ", ".join(self.tasks) if self.tasks else "no task"
        seeds = f"{len(self.seeds)} seed{'s' * (len(self.seeds) != 1)} ({seed_list(self.seeds)})" if self.seeds \
            else "deterministic"
        model = f" ({self.trained})" if with_model and self.trained else ""
        tuned = f"; tuned on seeds {seed_list(self.tuning_seeds)}" if self.tuning_seeds else ""
        holm = f"; Holm over {self.corrected} comparisons" if self.corrected > 1 else ""
        return f"{tasks}; {self.scale}{model}; {self._rounds()}; {seeds}{tuned}{holm}"

    def narrowed(self, tasks: Sequence[str]) -> Scope:
        """The same scope on ``tasks`` only (those a claim could judge)."""
        tasks = _task_names(tasks)
        rounds = {task: self.rounds[task] for task in tasks if task in self.rounds} \
            if isinstance(self.rounds, Mapping) else self.rounds
        model = {task: self.model[task] for task in tasks if task in self.model} \
            if isinstance(self.model, Mapping) else self.model
        return dataclasses.replace(self, tasks=tasks, rounds=rounds, model=model)


@dataclass(frozen=True)
class Judgement:
    """A claim judged: what our results show (numbers, in short), the verdict, what it rests on and ``details``, the
    numbers in full (``{part: text}``, e.g. every comparison of its :class:`Family` with its p_Holm and outcome)."""

    ours: str
    verdict: str
    scope: Scope
    details: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """A claim of the paper's main text and ``assess(evidence) -> Judgement``."""

    text: str
    assess: Callable[[Any], Judgement]


DETAILS = "details"
"""The claims table's column of each row's numbers in full (``{part: text}``), which :func:`show` lays out below."""
MODEL = "model"
"""The claims table's column of the model each verdict trained, where the scale trains another than the paper's."""


def claims_table(evidence: Any, claims: Sequence[Claim], source: str = "main text") -> pd.DataFrame:
    """One row per claim: the claim (the column names its ``source``: the paper's main text, or its slides where
    that is all we have), what our results show in short, the verdict, its scope (:meth:`Scope.brief`), the model
    trained where it is not the paper's, its number of seeds, and the :data:`DETAILS` (:func:`show` displays them
    below the rows)."""
    rows = []
    for claim in claims:
        judged = claim.assess(evidence)
        if not isinstance(judged, Judgement) or not any(judged.verdict.startswith(kind) for kind in VERDICTS):
            raise ValueError(f"claim {claim.text!r} gave {judged!r}: a Judgement with a verdict among "
                             f"{list(VERDICTS)}")
        rows.append({f"claim ({source})": claim.text, "ours": judged.ours, "verdict": judged.verdict,
                     "scope": judged.scope.brief(), MODEL: judged.scope.trained, "seeds": len(judged.scope.seeds),
                     DETAILS: dict(judged.details)})
    return pd.DataFrame(rows)


def split(table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A :func:`claims_table` (or several, concatenated) as the rows without their details and the details as a
    table of their own: one row per (claims row, part), the part's text in full.  Where no row trained another
    model than the paper's, the model column goes too."""
    if not isinstance(table, pd.DataFrame) or DETAILS not in table.columns:
        raise ValueError(f"table must be a claims_table (a DataFrame with a {DETAILS!r} column), got "
                         f"{type(table).__name__} with columns {list(getattr(table, 'columns', []))}")
    summary = table.drop(columns=[DETAILS] + ([MODEL] if MODEL in table and not table[MODEL].any() else []))
    parts = [(row, part, text) for row, details in table[DETAILS].items() for part, text in details.items()]
    return summary, pd.DataFrame(parts, columns=["claims row", "part", "in full"])


def as_tables(table: pd.DataFrame, name: str = "claims") -> dict[str, pd.DataFrame]:
    """``{name: rows, name + "_details": details}`` (:func:`split`): a claims table as ``records.record`` writes it."""
    summary, details = split(table)
    return {name: summary, f"{name}_details": details}


def to_html(table: pd.DataFrame) -> str:
    """A :func:`claims_table` as HTML: its rows, then the numbers behind them (:func:`split`) where there are any."""
    summary, details = split(table)
    with pd.option_context("display.max_colwidth", None):
        html = summary.to_html()
        if not details.empty:
            html += "\n<p>The numbers behind each row, in full:</p>\n" + details.to_html(index=False)
    return html


def show(table: pd.DataFrame) -> None:
    """Display a :func:`claims_table` in a notebook (:func:`to_html`: the rows and their details, one output)."""
    from IPython.display import HTML, display
    display(HTML(to_html(table)))


def trivial_baseline(data: Any) -> float:
    """What a model that learned nothing scores on ``data``'s test set (a ``FederatedData``): for classification
    the share of the most frequent class in % (Shakespeare: the most frequent next character, the ignored classes
    left out), for regression the MSE x1000 of predicting the mean training target (the mean image).  A result
    that does not beat it says nothing about which method is better."""
    if data.num_classes is None:
        return 1000.0 * float((data.test_targets - data.targets.mean(0)).square().mean())
    targets = data.test_targets
    ignored = data.info.get("ignore_classes") or []
    scored = targets[~torch.isin(targets, torch.as_tensor(ignored, dtype=targets.dtype, device=targets.device))]
    return 100.0 * float(scored.bincount().max()) / scored.numel()
