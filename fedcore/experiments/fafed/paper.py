"""What Wu et al. (AAAI 2023) claim (:data:`CLAIMS`, judged on :class:`Evidence` by the shared rules of
:mod:`fedcore.experiments.claims`) and print: its supplementary tables could not be obtained, so of its numbers only
the counterexample's first step (:data:`PAPER_FIRST_STEP`) stands beside ours."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fedcore.experiments import claims
from fedcore.experiments.claims import (
    CONFIRMED,
    CONTRADICTED,
    NOT_DECIDABLE,
    NOT_TESTABLE,
    WITHIN_NOISE,
    Claim,
    Judgement,
    Scope,
)
from fedcore.experiments.fafed.theory import LAW

ACCURACY_TOLERANCE = 0.02
"""'Performs well': FAFED's test accuracy within 2 points of every other method's (the whole 95% interval)."""
LEARNED_MARGIN = 0.05
"""A setting enters the comparisons only if most methods beat its most frequent class by 5 accuracy points."""
EPOCHS_APART = 0.1
"""Claim 3 compares settings trained for the same epochs (within 10%), as the paper does."""
PAPER_FIRST_STEP = {"client 1": "9.858", "client 2": "10.14", "client 3": "10.14", "mean": "10.05"}
"""The counterexample's first step as the paper prints it (eta = 0.1, beta = 0.5; Theorem 1's proof)."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: the runs' training-loss and test-accuracy scores (``Results.scores``), each
    setting's trivial accuracy, the :class:`Scope`, the counterexample's first step and law table, the epochs."""

    loss: pd.DataFrame | None = None
    accuracy: pd.DataFrame | None = None
    baselines: Mapping[str, float] | None = None
    scope: Scope | None = None
    first_step: Mapping[str, float] | None = None
    law: pd.DataFrame | None = None
    epochs: Mapping[str, float] | None = None

    def learned(self) -> tuple[list[str], str]:
        """The settings where most methods beat the trivial baseline by :data:`LEARNED_MARGIN` (mean over seeds),
        and the others, with their numbers, as a sentence."""
        settings = [] if self.accuracy is None else list(dict.fromkeys(self.accuracy.index.get_level_values(0)))
        means, baselines = {s: self.accuracy.loc[s].mean(axis=1) for s in settings}, self.baselines or {}
        learned = [s for s in settings if s in baselines and claims.learned_something(
            means[s].to_dict(), baselines[s], LEARNED_MARGIN)]
        return learned, "; ".join(f"{s} not testable at this scale (best mean accuracy {means[s].max():.3f}, "
                                  f"baseline {baselines.get(s, np.nan):.3f})" for s in settings if s not in learned)

    def narrowed(self, settings: list[str]) -> Scope:
        return (self.scope or Scope((), "?", None, ())).narrowed(settings)


def _family(table: pd.DataFrame, method: str, settings: list[str], higher_is_better: bool, margin: float,
            scale: float, digits: int) -> claims.Family:
    """``method`` against every other method on each of ``settings``: one family, Holm-corrected together, labelled
    ``(setting, other)``."""
    return claims.Family({(s, other): claims.compare(table.loc[(s, method)], table.loc[(s, other)], higher_is_better,
                                                     margin, scale, digits)
                          for s in settings for other in table.loc[s].index if other != method})


def per_setting(family: claims.Family, setting: str) -> str:
    """One setting's outcome from its corrected comparisons: contradicted if one is, confirmed if all are, else
    undecided (not decidable where one is)."""
    return claims.all_of(outcome for (s, _), outcome in family.outcomes.items() if s == setting)


def _versus_all(e: Evidence, table: pd.DataFrame | None, higher_is_better: bool, margin: float, scale: float,
                said: Mapping[str, str], digits: int = 3) -> Judgement:
    """FAFED against every other method on every learned setting, one Holm family (:func:`per_setting` per setting,
    ``said`` words each), with FAFED's rank and its paired difference from the best other; the claim holds where every
    setting is confirmed."""
    if table is None or "FAFED" not in table.index.get_level_values(1):
        return Judgement("no FAFED run", NOT_TESTABLE, e.narrowed([]))
    (settings, untested), texts = e.learned(), []
    family = _family(table, "FAFED", settings, higher_is_better, margin, scale, digits)
    outcomes = {setting: per_setting(family, setting) for setting in settings}
    others = {m: _family(table, m, settings, higher_is_better, margin, scale, digits)
              for m in dict.fromkeys(table.index.get_level_values(1)) if m != "FAFED"}
    for setting, outcome in outcomes.items():
        means = table.loc[setting].mean(axis=1) * (1 if higher_is_better else -1)
        best, rank = means.drop("FAFED").idxmax(), int((means > means["FAFED"]).sum()) + 1
        beaten = [m for (s, m), o in family.outcomes.items() if s == setting and o == CONTRADICTED]
        also = [m for m, other in others.items() if outcome == CONFIRMED and per_setting(other, setting) == CONFIRMED]
        texts.append(f"{setting}: FAFED ranks {rank} of {len(means)}; FAFED - {best} (the best other) "
                     f"{family.text((setting, best))}: {said[outcome]}" + f" ({', '.join(beaten)})" * bool(beaten)
                     + f" (so do {', '.join(also)})" * bool(also))
    return family.judged("; ".join(texts + [untested] * bool(untested)), e.narrowed(settings), outcomes=outcomes)


def _ranked_first(e: Evidence) -> Judgement:
    said = {CONFIRMED: "lowest", CONTRADICTED: "another method lower", WITHIN_NOISE: "undecided",
            NOT_DECIDABLE: "undecided"}
    return _versus_all(e, e.loss, higher_is_better=False, margin=0.0, scale=1.0, said=said)


def _accurate(e: Evidence) -> Judgement:
    points = f"{100 * ACCURACY_TOLERANCE:g} points"
    said = {CONFIRMED: f"within {points} of every other method", CONTRADICTED: f"more than {points} behind",
            WITHIN_NOISE: f"whether within {points}: undecided",
            NOT_DECIDABLE: f"whether within {points}: interval wider than the margin"}
    return _versus_all(e, e.accuracy, higher_is_better=True, margin=-ACCURACY_TOLERANCE, scale=100, said=said, digits=1)


def _harder(e: Evidence) -> Judgement:
    settings, untested = e.learned()
    if len(settings) < 2:
        return Judgement(f"needs two settings where the methods learned; {untested}", NOT_TESTABLE,
                         e.narrowed(settings))
    epochs = [(e.epochs or {}).get(s) for s in settings]
    if None not in epochs and max(epochs) > (1 + EPOCHS_APART) * min(epochs):
        return Judgement("not testable at this scale: the paper compares the settings after the same epochs, ours "
                         "ran the same rounds, which pass a client's data through " + ", ".join(
                             f"{s} {value:.1f}" for s, value in zip(settings, epochs)) + " epochs", NOT_TESTABLE,
                         e.narrowed(settings))
    difficulty = {s: e.accuracy.loc[s].mean(axis=0) for s in settings}  # per seed: the mean over methods
    family = claims.Family({f"{easier} to {harder}": claims.compare(difficulty[easier], difficulty[harder],
                                                                    scale=100.0, digits=1)
                            for easier, harder in zip(settings, settings[1:])})
    said = {CONFIRMED: "drops", CONTRADICTED: "rises", WITHIN_NOISE: "undecided", NOT_DECIDABLE: "undecided"}
    ours = "mean test accuracy over the methods, in points: " + ", ".join(
        f"{s} {100 * difficulty[s].mean():.1f}" for s in settings) + "; from one setting to the next (drop): " + \
        ", ".join(f"{pair} {family.text(pair)} ({said[outcome]})" for pair, outcome in family.outcomes.items())
    return family.judged(ours, e.narrowed(settings))


def _diverges(e: Evidence) -> Judgement:
    parts, checks = [], []
    if e.first_step is not None:  # agrees when within one unit of the paper's last printed digit
        ours = {key: float(e.first_step[key]) for key in PAPER_FIRST_STEP}
        same = all(abs(ours[key] - float(printed)) < 10.0 ** -len(printed.split(".")[1])
                   for key, printed in PAPER_FIRST_STEP.items())
        c1, c2, c3, mean = (f"{value:.4f}" for value in ours.values())
        clients = f"{c1}, {c2} (twice)" if c2 == c3 else f"{c1}, {c2}, {c3}"
        said = "agrees with the printed digits" if same else "differs from the paper"
        parts.append(f"{said}: {clients}, mean {mean}")
        checks.append(same)
    if e.law is not None:
        follows = bool(np.allclose(e.law["move"], e.law[LAW], rtol=1e-9, atol=0))
        parts.append(f"the mean {'moves' if follows else 'does not move'} by eta/(3 sqrt(1-beta^t))")
        checks.append(follows)
    scope = Scope(("the counterexample",) if checks else (), (e.scope.scale if e.scope else "?"), None, ())
    return Judgement("; ".join(parts) or "no counterexample run", claims.verdict(sum(checks), len(checks)), scope)


CLAIMS: tuple[Claim, ...] = (
    Claim("FAFED reaches the lowest training loss in every setting "
          "('our algorithms consistently outperform the other baseline algorithms')", _ranked_first),
    Claim("FAFED 'performs well under all conditions' in test accuracy", _accurate),
    Claim("Training becomes harder as heterogeneity grows", _harder),
    Claim("Naive local adaptivity (Alg. 1) can diverge for any eta, beta (Theorem 1)", _diverges),
)
"""The main text's claims (section "Experimental Results" and Theorem 1), in the notebook's order."""
