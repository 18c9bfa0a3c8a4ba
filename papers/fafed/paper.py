"""What Wu et al. (AAAI 2023) claim (:data:`CLAIMS`, judged on :class:`Evidence` by the shared rules of
:mod:`papers.claims`) and print: its supplementary tables could not be obtained, so of its numbers only
the counterexample's first step (:data:`PAPER_FIRST_STEP`) stands beside ours."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fedcore import comparisons
from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, WITHIN_NOISE
from papers import claims
from papers.claims import NOT_TESTABLE, Claim, Judgement, Scope
from papers.common import Results
from papers.fafed import experiment
from papers.fafed.theory import LAW, MAP_METHODS

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
    """What the claims are judged on, rows (setting, method) by seeds: ``train_loss`` (the final server model's loss on
    the whole training set), ``loss`` (the clients' minibatch loss, ``Results.scores("train_loss")``), ``accuracy``,
    ``start`` (:func:`~papers.fafed.experiment.start_scores`); each setting's trivial accuracy, the
    :class:`Scope`, ``data`` (the data set and partition, for the scope), the epochs, ``ablation`` (the same
    evidence for the runs with one batch size and period on every partition); the counterexample's first step, its
    law table and ``maps`` (:func:`~papers.fafed.theory.divergence_maps`)."""

    train_loss: pd.DataFrame | None = None
    loss: pd.DataFrame | None = None
    accuracy: pd.DataFrame | None = None
    baselines: Mapping[str, float] | None = None
    scope: Scope | None = None
    first_step: Mapping[str, float] | None = None
    law: pd.DataFrame | None = None
    epochs: Mapping[str, float] | None = None
    start: Mapping[str, pd.DataFrame] | None = None
    data: str = ""
    ablation: Evidence | None = None
    maps: Mapping[str, pd.DataFrame] | None = None

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
        """The scope on ``settings``, named after the data set and partition (``data``)."""
        scope = (self.scope or Scope((), "?", None, ())).narrowed(settings)
        if not (self.data and settings):
            return scope
        return dataclasses.replace(scope, tasks=(f"{self.data}: {settings[0]}", *settings[1:]))

    @staticmethod
    def joined(e: Evidence) -> Evidence:
        """``e`` with the ablation's rows after the main runs' (``train_loss``, ``loss``, ``accuracy``), for a
        figure of both."""
        if e.ablation is None:
            return e
        return dataclasses.replace(e, **{name: pd.concat([getattr(e, name), getattr(e.ablation, name)])
                                         for name in ("train_loss", "loss", "accuracy")})

    def exact(self, *computations: str) -> Scope:
        """The scope of an exact computation (no seed, no trained model)."""
        return Scope(computations, self.scope.scale if self.scope else "?", None, ())


def _family(table: pd.DataFrame, method: str, settings: list[str], higher_is_better: bool, margin: float,
            scale: float, digits: int) -> claims.Family:
    """``method`` against every other method on each of ``settings``: one family, Holm-corrected together, labelled
    ``(setting, other)``."""
    compare = comparisons.compare
    return claims.Family({(s, other): compare(table.loc[(s, method)], table.loc[(s, other)], higher_is_better,
                                              margin, scale, digits)
                          for s in settings for other in table.loc[s].index if other != method})


def per_setting(family: claims.Family, setting: str) -> str:
    """One setting's outcome from its corrected comparisons: contradicted if one is, confirmed if all are, else
    undecided (not decidable where one is)."""
    return comparisons.all_of(outcome for (s, _), outcome in family.outcomes.items() if s == setting)


def _versus_all(e: Evidence, table: pd.DataFrame | None, higher_is_better: bool, margin: float, scale: float,
                said: Mapping[str, str], digits: int = 3) -> Judgement:
    """FAFED against every other method on every learned setting, one Holm family (:func:`per_setting` per setting,
    ``said`` words each), with FAFED's rank and its paired difference from the best other; the claim holds where every
    setting is confirmed."""
    if table is None or "FAFED" not in table.index.get_level_values(1):
        return Judgement("no FAFED run", NOT_TESTABLE, e.narrowed([]))
    (settings, untested), short, full = e.learned(), [], {}
    family = _family(table, "FAFED", settings, higher_is_better, margin, scale, digits)
    outcomes = {setting: per_setting(family, setting) for setting in settings}
    others = {m: _family(table, m, settings, higher_is_better, margin, scale, digits)
              for m in dict.fromkeys(table.index.get_level_values(1)) if m != "FAFED"}
    for setting, outcome in outcomes.items():
        means = table.loc[setting].mean(axis=1) * (1 if higher_is_better else -1)
        best, rank = means.drop("FAFED").idxmax(), int((means > means["FAFED"]).sum()) + 1
        beaten = [m for (s, m), o in family.outcomes.items() if s == setting and o == CONTRADICTED]
        also = [m for m, other in others.items() if outcome == CONFIRMED and per_setting(other, setting) == CONFIRMED]
        by = f" ({', '.join(beaten)})" * bool(beaten)
        short.append(f"{setting.split(' (')[0]}: rank {rank}, {said[outcome]}{by}")
        difference = f"FAFED - {best}" if higher_is_better else f"{best} - FAFED"  # positive favours FAFED
        full[setting] = (f"FAFED ranks {rank} of {len(means)}; {difference} (the best other) "
                         f"{family.text((setting, best))}: {said[outcome]}{by}"
                         + f"; so do {', '.join(also)}" * bool(also))
    details = {**full, **family.details(), **({"not testable": untested} if untested else {})}
    return family.judged("; ".join(short) + "; other settings not testable" * bool(untested), e.narrowed(settings),
                         outcomes=outcomes, details=details)


LOWEST = {CONFIRMED: "lowest", CONTRADICTED: "not lowest", WITHIN_NOISE: "undecided", NOT_DECIDABLE: "undecided"}


def _lowest(table: str, ablation: bool = False) -> Callable[[Evidence], Judgement]:
    """Claim 1 on the scores ``table`` (a field of :class:`Evidence`), of the main runs or of the ablation's."""
    def assess(e: Evidence) -> Judgement:
        on = e.ablation if ablation else e
        if on is None:
            return Judgement("no ablation run", NOT_TESTABLE, e.narrowed([]))
        return _versus_all(on, getattr(on, table), higher_is_better=False, margin=0.0, scale=1.0, said=LOWEST)
    return assess


def _accurate(e: Evidence) -> Judgement:
    points = f"{100 * ACCURACY_TOLERANCE:g} points"
    said = {CONFIRMED: f"within {points}", CONTRADICTED: f"more than {points} behind", WITHIN_NOISE: "undecided",
            NOT_DECIDABLE: "undecided (interval wider than the margin)"}
    return _versus_all(e, e.accuracy, higher_is_better=True, margin=-ACCURACY_TOLERANCE, scale=100, said=said, digits=1)


def _most_accurate(e: Evidence) -> Judgement:
    said = {CONFIRMED: "most accurate", CONTRADICTED: "another more accurate", WITHIN_NOISE: "undecided",
            NOT_DECIDABLE: "undecided"}
    return _versus_all(e, e.accuracy, higher_is_better=True, margin=0.0, scale=100, said=said, digits=1)


def _harder(ablation: bool = False) -> Callable[[Evidence], Judgement]:
    """Claim 3: the mean test accuracy over the methods drops from each setting to the next more heterogeneous one,
    paired by seed, on the pairs trained for the same epochs (within :data:`EPOCHS_APART`)."""
    def assess(e: Evidence) -> Judgement:
        on = e.ablation if ablation else e
        if on is None:
            return Judgement("no ablation run", NOT_TESTABLE, e.narrowed([]))
        settings, untested = on.learned()
        epochs = on.epochs or {}
        pairs = list(zip(settings, settings[1:]))
        same = [(a, b) for a, b in pairs if a not in epochs or b not in epochs  # unknown epochs: taken as equal
                or max(epochs[a], epochs[b]) <= (1 + EPOCHS_APART) * min(epochs[a], epochs[b])]
        if not same:
            return Judgement("no two learned settings ran the same epochs", NOT_TESTABLE, on.narrowed(settings),
                             {f"{s}, epochs": f"{epochs.get(s, np.nan):.1f}" for s in settings})
        difficulty = {s: on.accuracy.loc[s].mean(axis=0) for s in settings}  # per seed: the mean over methods
        family = claims.Family({f"{a} to {b}": comparisons.compare(difficulty[a], difficulty[b], scale=100.0, digits=1)
                                for a, b in same})
        said = {CONFIRMED: "drops", CONTRADICTED: "rises", WITHIN_NOISE: "undecided", NOT_DECIDABLE: "undecided"}
        apart = "; ".join(f"{a.split(' (')[0]} to {b.split(' (')[0]} not compared ({epochs[a]:.1f} vs {epochs[b]:.1f} "
                          "epochs)" for a, b in pairs if (a, b) not in same and a in epochs and b in epochs)
        ours = "; ".join([f"{' to '.join(s.split(' (')[0] for s in pair.split(' to '))}: {family.short(pair)} "
                          f"({said[outcome]})" for pair, outcome in family.outcomes.items()] + [apart] * bool(apart))
        means = {f"{s}, mean accuracy over the methods": f"{100 * difficulty[s].mean():.1f}%" for s in settings}
        compared = list(dict.fromkeys(s for pair in same for s in pair))
        return family.judged(ours + "; other settings not testable" * bool(untested), on.narrowed(compared),
                             details={**means, **family.details(), **({"not testable": untested} if untested else {})})
    return assess


STARTS = ("first-round loss", "upward moves")
"""The two readings of "fluctuation at the start" (:func:`~papers.fafed.experiment.start_scores`)."""
SERVER_ADAPTIVE = ("FedAdam", "FedAMS")


def _steadier(e: Evidence) -> Judgement:
    """FAFED's upward loss moves from the start through round 10 against FedAdam's and FedAMS's, lower for the claim,
    on every learned setting: one Holm family.  The first-round loss is shown beside, not judged: FedAdam's and
    FedAMS's first round is FedAvg's (their server step acts at its end), so it cannot see their fluctuation."""
    if e.start is None:
        return Judgement("no start scores", NOT_TESTABLE, e.narrowed([]))
    settings, untested = e.learned()
    moves, first = e.start[STARTS[1]], e.start[STARTS[0]]
    family = claims.Family({(s, other): comparisons.compare(moves.loc[(s, "FAFED")], moves.loc[(s, other)],
                                                       higher_is_better=False, digits=3)
                            for s in settings for other in SERVER_ADAPTIVE})
    outcomes = {s: comparisons.all_of(o for (setting, _), o in family.outcomes.items() if setting == s)
                for s in settings}

    def means(table: pd.DataFrame, s: str) -> str:
        row = table.loc[s].mean(axis=1)
        return f"FAFED {row['FAFED']:.3f}, " + ", ".join(f"{m} {row[m]:.3f}" for m in SERVER_ADAPTIVE)
    details = {f"{s}, {name} (mean)": means(table, s) for s in settings
               for name, table in ((STARTS[1], moves), (f"{STARTS[0]}, not judged", first))}
    found = list(family.outcomes.values())
    higher = sum(first.loc[(s, "FAFED")].mean() > first.loc[(s, m)].mean() for s in settings for m in SERVER_ADAPTIVE)
    ours = (f"upward moves: FAFED lower in {found.count(CONFIRMED)}, higher in {found.count(CONTRADICTED)}, "
            f"undecided in {len(found) - found.count(CONFIRMED) - found.count(CONTRADICTED)} of {len(found)}; "
            f"first-round loss (not judged): FAFED's mean higher in {higher} of {len(found)}")
    return family.judged(ours + "; other settings not testable" * bool(untested), e.narrowed(settings),
                         outcomes=outcomes, details={**details, **family.details()})


def _diverges(e: Evidence) -> Judgement:
    parts, checks = [], []
    if e.first_step is not None:  # agrees when within one unit of the paper's last printed digit
        ours = {key: float(e.first_step[key]) for key in PAPER_FIRST_STEP}
        same = all(abs(ours[key] - float(printed)) < 10.0 ** -len(printed.split(".")[1])
                   for key, printed in PAPER_FIRST_STEP.items())
        c1, c2, c3, mean = (f"{value:.4f}" for value in ours.values())
        clients = f"{c1}, {c2} (twice)" if c2 == c3 else f"{c1}, {c2}, {c3}"
        said = "the printed digits agree" if same else "differs from the paper"
        parts.append(f"{said} ({clients}, mean {mean})")
        checks.append(same)
    if e.law is not None:
        follows = bool(np.allclose(e.law["move"], e.law[LAW], rtol=1e-9, atol=0))
        parts.append(f"the mean {'moves' if follows else 'does not move'} by eta/(3 sqrt(1-beta^t))")
        checks.append(follows)
    if e.maps is not None:
        naive = e.maps[MAP_METHODS[0]].stack()
        away = int((naive > MAP_START).sum())
        parts.append(f"ends farther than x0 = {MAP_START:g} on {away} of {naive.size} map cells (one beta)")
        checks.append(away == naive.size)
    computed = ("the counterexample",) if checks else ()
    return Judgement("; ".join(parts) or "no counterexample run", claims.verdict(sum(checks), len(checks)),
                     e.exact(*computed))


MAP_START = 10.0
"""The counterexample's start ``x_0``: a run that ends farther from 0 has diverged."""


def _shared_avoids(e: Evidence) -> Judgement:
    """Theorem 1's proof: "we use the sharing adaptive learning rate in the Algorithm 2 to avoid divergence", read
    on the map: FAFED (constant step) ends nearer 0 than it started for every (eta, q); FedAvg is the control."""
    if e.maps is None:
        return Judgement("no map of the counterexample", NOT_TESTABLE, e.exact())
    cells = {label: table.stack() for label, table in e.maps.items()}

    def counts(label: str) -> str:
        final = cells[label]
        return f"{label} nearer 0 than x0 on {int((final < MAP_START).sum())} of {final.size}, within 1 on " \
               f"{int((final <= 1).sum())}"
    fafed = cells[MAP_METHODS[1]]
    far = {f"{MAP_METHODS[1]} away, eta {eta:g}, q {q}": f"|x| = {value:.3g}" for (eta, q), value in fafed.items()
           if value >= MAP_START}
    shared = [cell for cell, value in fafed.items() if value >= MAP_START]
    drift = all(cells[MAP_METHODS[2]][cell] >= MAP_START for cell in shared) if shared else False
    return Judgement("; ".join(counts(label) for label in MAP_METHODS[1:])
                     + "; FAFED's cells away from 0 are all FedAvg's too" * drift,
                     claims.verdict(int((fafed < MAP_START).sum()), fafed.size),
                     e.exact(f"the counterexample, {fafed.size} (eta, q) cells"), far)


def _untested(reason: str, what: str) -> Callable[[Evidence], Judgement]:
    return lambda e: Judgement(reason, NOT_TESTABLE, e.exact(what))


CLAIMS: tuple[Claim, ...] = (
    Claim("FAFED reaches the lowest training loss in every setting ('our algorithms consistently outperform the other "
          "baseline algorithms'): the server model's loss on the whole training set", _lowest("train_loss")),
    Claim("The same, as the clients' minibatch loss during the round", _lowest("loss")),
    Claim("The same with one batch size and period on every partition (ablation: b 50, q 10, each method at its "
          "moderate point)", _lowest("train_loss", ablation=True)),
    Claim("FAFED 'performs well under all conditions' in test accuracy (read: within 2 points of every method)",
          _accurate),
    Claim("The same, strictly: no method is more accurate than FAFED", _most_accurate),
    Claim("'With the increasing data heterogeneity, model training becomes more difficult': settings compared "
          "after the same epochs, as the paper pairs them (b and q change too)", _harder()),
    Claim("The same, the heterogeneity alone (ablation: one b, q and point per method on all three partitions)",
          _harder(ablation=True)),
    Claim("'Compared with FedAdam and FedAMS, our adaptive method has lower fluctuation (e.g., the beginning phase "
          "of FedAdam)': the loss's upward moves from the start through round 10", _steadier),
    Claim("Naive local adaptivity (Alg. 1) can diverge for any eta, beta (Theorem 1)", _diverges),
    Claim("'We use the sharing adaptive learning rate in the Algorithm 2 to avoid divergence' (Theorem 1's proof)",
          _shared_avoids),
    Claim("Table 1: FAFED needs O~(eps^-3) samples and O~(eps^-2) rounds; FedAvg, FedAdam, FedAMS O(eps^-4)",
          _untested("theory, not tested: rates are orders in eps with unknown constants; no run here measures "
                    "samples to an eps-stationary point", "the paper's Table 1")),
    Claim("Theorem 2: FAFED's bound with eta_t = rho h / (w + t)^(1/3), alpha_t+1 = c eta_t^2",
          _untested("theory, not tested: the bound's constants (L, sigma, zeta, G) are unknown for a network; our "
                    "image runs take a constant step, as the paper's do", "Theorem 2")),
    Claim("WikiText-2 (Figure 1): 'FAFED outperforms all other baseline optimizers'; FedAdam fluctuates at the start; "
          "FedAMS is worse", _untested("not reproduced: WikiText-2 cannot be fetched here, and a 2-layer 650-unit "
                                       "LSTM is beyond a 2-core budget", "the paper's language task")),
)
"""The paper's claims (its "Experimental Results", Table 1, Theorems 1 and 2), in the notebook's order."""


def evidence(results: Results, ablation: Results | None, scope: Scope, data: str, **exact: Any) -> Evidence:
    """The :class:`Evidence` of the runs (``results``: every setting; ``ablation``: the same batch size and period
    on every partition, or None), each setting's scores, baselines and epochs; ``exact``: the counterexample's
    ``first_step``, ``law`` and ``maps``."""
    def of(runs: Results) -> Evidence:
        return Evidence(train_loss=experiment.server_train_loss(runs), loss=runs.scores("train_loss"),
                        accuracy=runs.scores(), baselines={name: task.baseline for name, task in runs.tasks.items()},
                        scope=scope, epochs=experiment.epochs(runs.tasks), data=data)
    return dataclasses.replace(of(results), start=experiment.start_scores(results),
                               ablation=of(ablation) if ablation is not None else None, **exact)
