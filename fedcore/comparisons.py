"""Paired comparisons over seeds, corrected together by Holm's step-down: the statistics every claim rests on.

- **A comparison over seeds** (:func:`paired`, :func:`compare`): the same seeds give both methods the same initial
  model, client sampling and minibatches, so the per-seed differences are paired (by seed label when the scores carry
  them).  A difference counts when its **95% paired t interval** (:data:`CONFIDENCE`), ``mean ± t(n - 1) sd /
  sqrt(n)`` with the two-sided t quantile for n - 1 degrees of freedom (4.30 at 3 seeds, 2.78 at 5), excludes the
  margin: the paired t-test (``scipy.stats.ttest_rel``) against the margin at 5%.  Why t and not a bootstrap: with 3
  to 5 seeds a bootstrap interval has too few distinct resamples (10 at n = 3) and is too narrow (it ignores that the
  sd itself is estimated); the t interval is exact for normal differences and the usual choice at small n.  Every
  test is two-sided, also for a directional claim.  Beside it the probability of improvement (Agarwal et al.,
  NeurIPS 2021, rliable: the chance that a run of one method beats a run of the other, ties half).
- **A margin** (:meth:`Paired.outcome`): "A is within 2 points of B" is the comparison of A - B with -2: it is
  confirmed only when the whole interval lies above -2, contradicted when it lies below.
- **What a comparison could detect**: an interval that straddles the margin is undecided.  For a margin claim whose
  interval is wider than the room the margin leaves (its half-width beyond ``|margin|``: even no difference at all
  could not be confirmed) it is :data:`NOT_DECIDABLE` at these seeds, else :data:`WITHIN_NOISE`; either way the text
  gives the seeds it would take at the measured spread (:meth:`Paired.seeds_needed`).
- **A family** (:class:`Family`): the comparisons behind one conclusion are corrected together by Holm's step-down
  (:func:`holm`): the k p-values sorted, the i-th smallest counts when it is at most ``0.05 / (k - i + 1)`` and all
  smaller ones counted.  One comparison alone is its plain 95% test.  :func:`all_of` and :func:`any_of` combine the
  outcomes of several checks into one.

The papers' claims tables (``papers.claims``) turn these outcomes into verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from fedcore.checks import check_bool, check_int, check_number, check_range, plain_number

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


def check_outcomes(outcomes: Any) -> list[str]:
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
    Each outcome one of :data:`OUTCOMES`."""
    outcomes = check_outcomes(outcomes)
    return CONTRADICTED if CONTRADICTED in outcomes else CONFIRMED if set(outcomes) <= {CONFIRMED} \
        else NOT_DECIDABLE if NOT_DECIDABLE in outcomes else WITHIN_NOISE


def any_of(outcomes: Sequence[str]) -> str:
    """One outcome from alternatives of which one must pass (some adaptive method beats the baselines): confirmed
    if one is, contradicted if all are, else undecided (not decidable where every undecided one is).  Each outcome
    one of :data:`OUTCOMES`; no alternative at all is a ``ValueError`` (nothing to
    choose from is no outcome)."""
    outcomes = check_outcomes(outcomes)
    if not outcomes:
        raise ValueError("outcomes=[] is empty: any_of needs at least one alternative (a claim with none is not "
                         "testable: judge([]))")
    if CONFIRMED in outcomes:
        return CONFIRMED
    undecided = [o for o in outcomes if o != CONTRADICTED]
    return CONTRADICTED if not undecided else NOT_DECIDABLE if set(undecided) == {NOT_DECIDABLE} else WITHIN_NOISE
