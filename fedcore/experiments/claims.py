"""A paper's claims as data, each judged by shared rules that know the noise over seeds.

A :class:`Claim` pairs a sentence of the paper with ``assess(evidence)``, a function of the notebook's own
evidence (result tables over seeds) that returns a :class:`Judgement`: what our results show in numbers, the
verdict and its :class:`Scope` (tasks, scale, rounds, seeds).  :func:`claims_table` lays them out.  The rules:

- **A comparison over seeds** (:func:`paired`): the same seeds give both methods the same initial model, client
  sampling and minibatches, so the per-seed differences are paired (by seed label when the scores carry them).  A
  difference counts only when the mean paired difference exceeds :data:`NOISE_FACTOR` = 2 times its standard error
  (``scipy.stats.sem``); otherwise it is within the noise, a tie.  One seed has no standard error and never
  decides.  Beside it, ``scipy.stats.ttest_rel``'s p-value and the probability of improvement (Agarwal et al.,
  NeurIPS 2021, rliable: the chance that a run of one method beats a run of the other, ties half) are reported.
- **A margin** (:meth:`Paired.outcome`): "A is within 2 points of B" is the comparison of A - B with -2: it is
  confirmed when A - B exceeds -2 by more than the noise, contradicted when it falls below -2 by more.
- **A verdict** (:func:`judge`) from the outcomes of a claim's checks (each confirmed, contradicted or within the
  noise): holds if every check is confirmed; does not hold if none is and at least one is contradicted;
  inconclusive if every check lies within the noise; partly otherwise; not testable here if there is no check.
- **A task that learned something** (:func:`learned_something`): a task enters a comparison only if most
  methods beat its trivial baseline (:func:`trivial_baseline`) by a stated margin; otherwise the claim says
  "not testable at this scale" for it, with the numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats

from fedcore.checks import check_bool, check_int, check_number

HOLDS, PARTLY, DOES_NOT_HOLD = "holds", "partly", "does not hold"
INCONCLUSIVE, NOT_TESTABLE = "inconclusive", "not testable here"
VERDICTS = (HOLDS, PARTLY, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE)
CONFIRMED, CONTRADICTED, WITHIN_NOISE = "confirmed", "contradicted", "within the noise"
OUTCOMES = (CONFIRMED, CONTRADICTED, WITHIN_NOISE)
NOISE_FACTOR = 2.0
"""A mean paired difference counts when it is larger than this many standard errors."""
Scores = Sequence[float] | Mapping[int, float]
"""One score per seed: a list or 1-d array (seeds by position), a ``pd.Series`` indexed by seed or ``{seed: score}``."""


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
    def standard_error(self) -> float:
        """``sd / sqrt(n)`` of the differences (``scipy.stats.sem``, ``ddof = 1``); NaN for one seed."""
        return float(stats.sem(self.differences)) if self.seeds > 1 else math.nan

    @property
    def p_value(self) -> float:
        """Two-sided paired t-test (``scipy.stats.ttest_rel``); NaN for one seed or identical differences."""
        if self.seeds < 2 or np.ptp(self.differences) == 0:
            return math.nan
        return float(stats.ttest_rel(self.a, self.b).pvalue)

    @property
    def probability_of_improvement(self) -> float:
        """P(a run of ``a`` beats a run of ``b``) over all pairs of seeds, ties counted half: the Mann-Whitney U
        statistic over ``n_a n_b`` (``scipy.stats.mannwhitneyu``), rliable's measure for few runs."""
        return float(stats.mannwhitneyu(self.a, self.b).statistic) / (len(self.a) * len(self.b))

    def outcome(self, margin: float = 0.0) -> str:
        """Is the mean difference above ``margin``?  :data:`CONFIRMED` when it exceeds ``margin`` by more than
        :data:`NOISE_FACTOR` standard errors, :data:`CONTRADICTED` when it falls below by more, else
        :data:`WITHIN_NOISE` (always, with one seed)."""
        if self.seeds < 2:
            return WITHIN_NOISE
        noise = NOISE_FACTOR * self.standard_error
        if self.mean - noise > margin:
            return CONFIRMED
        if self.mean + noise < margin:
            return CONTRADICTED
        return WITHIN_NOISE

    def describe(self, scale: float = 1.0, digits: int = 2) -> str:
        """``"+1.23 ± 0.45"``: the mean difference ± 2 standard errors, times ``scale`` (e.g. 100 for points)."""
        noise = NOISE_FACTOR * self.standard_error * scale
        spread = "" if math.isnan(noise) else f" ± {noise:.{digits}f}"
        mean = round(self.mean * scale, digits)
        return f"{abs(mean):.{digits}f}{spread}" if mean == 0 else f"{mean:+.{digits}f}{spread}"  # no "-0.0"


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
    when both carry labels (``pd.Series`` or ``{seed: score}``; refused when their seeds differ), by position
    otherwise."""
    (a, labels_a), (b, labels_b) = _scores("a", a), _scores("b", b)
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
    seeds (``pd.Series`` indexed by seed, or ``{seed: score}``), by position otherwise."""
    a, b = _per_seed(a, b)
    higher_is_better = check_bool("higher_is_better", higher_is_better)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("a and b must be finite: a diverged run has no score; judge it before comparing")
    sign = 1.0 if higher_is_better else -1.0
    return Paired(tuple(sign * (a - b)), tuple(sign * a), tuple(sign * b))


def compare(a: Scores, b: Scores, higher_is_better: bool = True, margin: float = 0.0,
            scale: float = 1.0, digits: int = 2) -> tuple[str, str]:
    """``(outcome, evidence)`` of "``a`` beats ``b`` by more than ``margin``" (:meth:`Paired.outcome`), one score
    per seed each (paired by seed as :func:`paired` pairs them), NaN for a run that diverged.  A method that
    diverged on more seeds than the other loses the comparison (:data:`CONTRADICTED` for ``a``, :data:`CONFIRMED`
    against ``b``); on as many, the seeds where both finished are compared.  The evidence is the mean difference
    ± 2 standard errors (times ``scale``)."""
    a, b = _per_seed(a, b)
    margin, scale, digits = check_number("margin", margin), check_number("scale", scale), check_int("digits", digits, 0)
    failed_a, failed_b = int(np.isnan(a).sum()), int(np.isnan(b).sum())
    if failed_a != failed_b:
        text = f"diverged on {failed_a} vs {failed_b} of {a.size} seeds"
        return (CONTRADICTED if failed_a > failed_b else CONFIRMED), text
    both = ~(np.isnan(a) | np.isnan(b))
    if not both.any():
        return WITHIN_NOISE, f"both diverged on all {a.size} seeds"
    comparison = paired(a[both], b[both], higher_is_better)
    return comparison.outcome(margin), comparison.describe(scale, digits)


def judge(outcomes: Sequence[str], most: bool = False) -> str:
    """The verdict of a claim from its checks' outcomes (each one of :data:`OUTCOMES`): see the module's rules.
    With ``most`` the claim asks more than half of its checks to pass: it holds when more than half are
    confirmed, does not hold when the confirmed and the undecided together are at most half, is inconclusive when
    none is confirmed otherwise, partly when some are."""
    if isinstance(outcomes, (str, bytes)) or not isinstance(outcomes, Iterable):
        raise TypeError(f"outcomes={outcomes!r} must be a list of outcomes, each one of {list(OUTCOMES)}, e.g. "
                        f"[{CONFIRMED!r}]")
    outcomes, most = list(outcomes), check_bool("most", most)
    unknown = [o for o in outcomes if o not in OUTCOMES]
    if unknown:
        raise ValueError(f"outcomes {unknown} are not among {list(OUTCOMES)}")
    if not outcomes:
        return NOT_TESTABLE
    confirmed, contradicted = outcomes.count(CONFIRMED), outcomes.count(CONTRADICTED)
    if most:
        if 2 * confirmed > len(outcomes):
            return HOLDS
        if 2 * (len(outcomes) - contradicted) <= len(outcomes):
            return DOES_NOT_HOLD
        return PARTLY if confirmed else INCONCLUSIVE
    if confirmed == len(outcomes):
        return HOLDS
    if confirmed == 0:
        return DOES_NOT_HOLD if contradicted else INCONCLUSIVE
    return PARTLY


def verdict(hits: int, total: int, most: bool = False) -> str:
    """The count rule of checks without noise (exact computations, one deterministic run): holds if all ``total``
    checks pass (``most``: more than half), partly if some, does not hold if none; no checks: not testable."""
    total = check_int("total", total, 0)
    hits, most = check_int("hits", hits, 0, total), check_bool("most", most)
    if total == 0:
        return NOT_TESTABLE
    return HOLDS if (2 * hits > total if most else hits == total) else PARTLY if hits else DOES_NOT_HOLD


def learned_something(scores: Mapping[str, float], baseline: float, margin: float,
                      higher_is_better: bool = True) -> bool:
    """Whether a task says anything about the methods' order: more than half of the methods' mean ``scores``
    beat the trivial ``baseline`` by more than ``margin`` (in the scores' units; a NaN score, a method that
    diverged, beats nothing)."""
    if not isinstance(scores, Mapping):
        raise TypeError(f"scores={scores!r:.80} must map each method to its mean score, e.g. {{'FedAvg': 71.2}}")
    baseline, margin = check_number("baseline", baseline), check_number("margin", margin)
    higher_is_better = check_bool("higher_is_better", higher_is_better)
    if not scores:
        return False
    sign = 1.0 if higher_is_better else -1.0
    beating = sum(sign * (float(score) - baseline) > margin for score in scores.values())
    return 2 * beating > len(scores)


def seed_list(seeds: Sequence[int]) -> str:
    """``"0-2"`` for consecutive seeds, ``"0, 3, 7"`` otherwise."""
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


@dataclass(frozen=True)
class Scope:
    """What a verdict rests on: the tasks (settings) it judged, the scale, the rounds per run (one number, or
    ``{task: rounds}`` where the tasks run different horizons; None for an exact computation), the seeds and, where
    the scale trains another model than the paper's, which (one label, or ``{task: label}``, narrowed with the
    tasks)."""

    tasks: tuple[str, ...]
    scale: str
    rounds: int | Mapping[str, int] | None
    seeds: tuple[int, ...]
    model: str | Mapping[str, str] = ""

    def __post_init__(self) -> None:
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
            return "; ".join(f"{task}: {label}" for task, label in self.model.items())
        return self.model

    def __str__(self) -> str:
        tasks = ", ".join(self.tasks) if self.tasks else "no task"
        seeds = f"{len(self.seeds)} seed{'s' * (len(self.seeds) != 1)} ({seed_list(self.seeds)})" if self.seeds \
            else "deterministic"
        model = f" ({self._model()})" if self._model() and self.rounds is not None else ""
        return f"{tasks}; {self.scale}{model}; {self._rounds()}; {seeds}"

    def narrowed(self, tasks: Sequence[str]) -> Scope:
        """The same scope on ``tasks`` only (those a claim could judge)."""
        rounds = {task: self.rounds[task] for task in tasks if task in self.rounds} \
            if isinstance(self.rounds, Mapping) else self.rounds
        model = {task: self.model[task] for task in tasks if task in self.model} \
            if isinstance(self.model, Mapping) else self.model
        return Scope(tuple(tasks), self.scale, rounds, self.seeds, model)


@dataclass(frozen=True)
class Judgement:
    """A claim judged: what our results show (numbers), the verdict and what it rests on."""

    ours: str
    verdict: str
    scope: Scope


@dataclass(frozen=True)
class Claim:
    """A claim of the paper's main text and ``assess(evidence) -> Judgement``."""

    text: str
    assess: Callable[[Any], Judgement]


def claims_table(evidence: Any, claims: Sequence[Claim], source: str = "main text") -> pd.DataFrame:
    """One row per claim: the claim (the column names its ``source``: the paper's main text, or its slides where
    that is all we have), what our results show, the verdict, its scope and its number of seeds."""
    rows = []
    for claim in claims:
        judged = claim.assess(evidence)
        if not isinstance(judged, Judgement) or judged.verdict not in VERDICTS:
            raise ValueError(f"claim {claim.text!r} gave {judged!r}: a Judgement with a verdict among "
                             f"{list(VERDICTS)}")
        rows.append({f"claim ({source})": claim.text, "ours": judged.ours, "verdict": judged.verdict,
                     "scope": str(judged.scope), "seeds": len(judged.scope.seeds)})
    return pd.DataFrame(rows)


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
