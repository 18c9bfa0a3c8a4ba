"""What FedLi (arXiv 2408.17145) reports, as data, its summary sentences judged against its own tables, and its
claims judged on ours (notebook ``03_fedli``).  Setup (Section 6, Appendix C): 100 clients, 10 per round, batch 32,
one local epoch, 500 rounds, 5 seeds; CIFAR-10/100 with ResNet-18 (GroupNorm), FEMNIST with a CNN, Shakespeare with
an RNN; baselines tuned by a grid search of 100 rounds on training accuracy (its values lost in our copy); weight
decay and gradient clipping.  The claims are judged on :class:`Evidence` by the rules of ``experiments.claims``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedcore.comparisons import CONFIRMED, CONTRADICTED, Check, compare
from papers.claims import NOT_TESTABLE, Claim, Family, Judgement, Scope, judge, learned_something, verdict
from papers.claims import claims_table as shared_claims_table
from papers.common import best_value, span_decades_by_seed
from papers.fedli.theory import convex_optimum, linear_fit

METHODS = ("FedLi-LU", "FedLi-LS", "FedAdam", "FedAvg", "FedProx", "SCAFFOLD", "FedExP")
FEDLI = ("FedLi-LU", "FedLi-LS")
TASKS = ("cifar10", "cifar100", "femnist", "shakespeare")

TABLE1 = pd.DataFrame(
    [[86.02, 75.50, 81.42, 78.47, 82.15, 71.11, 84.28],
     [51.97, 50.72, 45.10, 46.93, 29.72, 35.57, 50.03],
     [84.79, 80.66, 80.35, 84.67, 80.24, 75.05, 82.51],
     [38.93, 39.71, 48.37, 40.10, 45.06, 34.86, 41.22]],
    index=list(TASKS), columns=list(METHODS))
"""Table 1: top-1 test accuracy (%) after 500 rounds."""
TABLE2 = pd.DataFrame(
    [[0.1053, 0.6103, 0.60832, 0.9425, 0.6252, 0.2914, 0.6147],
     [0.6312, 0.6582, 1.9463, 2.5270, 2.2937, 1.0642, 0.6203],
     [0.8649, 0.6095, 0.7092, 0.8168, 0.7193, 1.1449, 0.1995],
     [3.0860, 2.2590, 1.7736, 2.5127, 1.9048, 2.3290, 2.0226]],
    index=list(TASKS), columns=list(METHODS))
"""Table 2: training loss after 500 rounds."""


def rank_text(row: pd.Series, method: str, lower_is_better: bool = False) -> str:
    """``method``'s rank in ``row`` as text, ties said: ``"2 of 7 (tied with 5)"``."""
    rank = int(row.rank(ascending=lower_is_better, method="min")[method])
    tied = int((row == row[method]).sum()) - 1
    return f"{rank} of {len(row)}" + (f" (tied with {tied})" if tied else "")


Tables = tuple[pd.DataFrame, pd.DataFrame]  # (accuracy, training loss): tasks by methods, as TABLE1 and TABLE2
Reading = Callable[[Tables], tuple[str, str]]  # a summary sentence read on them: (what they show, the verdict)


def _fedli_first(tables: Tables) -> tuple[str, str]:
    firsts = tables[0].idxmax(axis=1).to_dict()  # the first of tied bests
    hits = sum(firsts[task] in FEDLI for task in firsts)
    return "best: " + ", ".join(f"{task} {method}" for task, method in firsts.items()), \
        verdict(hits, len(firsts))


def _lu_best_mostly(tables: Tables) -> tuple[str, str]:
    accuracy, loss = tables
    parts = [f"{task} {rank_text(accuracy.loc[task], 'FedLi-LU')}, loss "
             f"{rank_text(loss.loc[task], 'FedLi-LU', lower_is_better=True)}" for task in accuracy.index]
    hits = int((accuracy["FedLi-LU"] == accuracy.max(axis=1)).sum())  # first, or tied first
    return "FedLi-LU's accuracy rank: " + "; ".join(parts), verdict(hits, len(accuracy), most=True)


def _beat_fedavg(tables: Tables) -> tuple[str, str]:
    accuracy = tables[0]
    checks = {(task, method): bool(accuracy.loc[task, method] > accuracy.loc[task, "FedAvg"])
              for task in accuracy.index for method in FEDLI}
    misses = [f"{method} on {task}" + (" (tied)" if accuracy.loc[task, method] == accuracy.loc[task, "FedAvg"] else "")
              for (task, method), ok in checks.items() if not ok]
    return f"{sum(checks.values())} of {len(checks)} (task, FedLi method) pairs above FedAvg" + \
        (f"; not {', '.join(misses)}" if misses else ""), verdict(sum(checks.values()), len(checks))


SUMMARY_SENTENCES: tuple[tuple[str, Reading], ...] = (
    ("FedLi-LU and FedLi-LS 'significantly outperform FedAvg and other baseline approaches across the board' "
     "(Appendix C; read: a FedLi method has the best accuracy on every task)", _fedli_first),
    ("'In most of the cases, FedLi-LU worked the best' (Appendix C; read: best accuracy on most tasks)",
     _lu_best_mostly),
    ("Our check of 'outperform FedAvg', read against FedAvg alone: both FedLi methods above FedAvg on every "
     "task (Table 1)", _beat_fedavg),
)
"""The paper's summary sentences, each with how it is read on a pair of tables (the paper's, or ours alike)."""


def summary_against_tables(tables: Tables = (TABLE1, TABLE2)) -> pd.DataFrame:
    """One row per summary sentence: what ``tables`` (the paper's, or ours alike) show and the verdict."""
    return pd.DataFrame([{"claim (paper)": sentence, **dict(zip(("ours", "verdict"), read(tables)))}
                         for sentence, read in SUMMARY_SENTENCES])


def beside(ours: pd.DataFrame, paper: pd.DataFrame = TABLE1, label: Callable[[str], str] = str,
           missing: str = "not run") -> pd.DataFrame:
    """The paper's whole table and ours side by side: one row per method in the paper's order, columns ``(task
    label, "paper" | "fedcore")`` for every task of the paper; ``ours`` is methods by tasks (``Results.mean_sd``),
    and a task it lacks shows ``missing`` (e.g. "paper scale only")."""
    methods, columns = list(METHODS), {}
    for task in paper.index:
        columns[(label(task), "paper")] = paper.loc[task, methods].map(lambda v: f"{v:.4g}")
        columns[(label(task), "fedcore")] = (ours.loc[methods, task].astype(str) if task in ours.columns
                                             else pd.Series(missing, index=methods))
    return pd.DataFrame(columns)


def _spearman(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (ties get their mean rank): 1 the same order, -1 the reverse."""
    return float(a.rank().corr(b.rank()))


def reading(accuracy: pd.DataFrame, loss: pd.DataFrame, label: Callable[[str], str] = str) -> pd.DataFrame:
    """Tables 1 and 2 read side by side, ours over seeds (``accuracy``, ``loss``: ``Results.scores``): per task and
    source (columns: ``(task, "paper" | "fedcore")``), the best method by accuracy, FedLi-LU's and FedLi-LS's
    accuracy rank among the seven (ours on the means; ties share the better rank), their margin over FedAvg in
    points (ours: paired, the mean, its 95% interval and p, each alone), FedLi-LU's training-loss rank, and how far
    our order of the seven methods agrees with the paper's (Spearman's rank correlation on the means, and its range
    over the seeds)."""
    columns = {}
    tasks = dict.fromkeys(accuracy.index.get_level_values("task"))
    for task in [task for task in tasks if paper_task(task) in TABLE1.index]:
        ours_acc, ours_loss = accuracy.loc[task].loc[list(METHODS)], loss.loc[task].loc[list(METHODS)]
        for source in ("paper", "fedcore"):
            paper = source == "paper"
            row = TABLE1.loc[paper_task(task)] if paper else ours_acc.mean(axis=1)
            losses = TABLE2.loc[paper_task(task)] if paper else ours_loss.mean(axis=1)
            margins = {method: f"{row[method] - row['FedAvg']:+.2f}" if paper else
                       "{1} ({0})".format(*compare(ours_acc.loc[method], ours_acc.loc["FedAvg"])) for method in FEDLI}
            theirs = TABLE1.loc[paper_task(task)]
            per_seed = [_spearman(theirs, ours_acc[seed]) for seed in ours_acc]
            columns[(label(task), source)] = {
                "best accuracy": f"{row.idxmax()} ({row.max():.2f})",
                **{f"{method} accuracy rank": rank_text(row, method) for method in FEDLI},
                **{f"{method} - FedAvg (points)": margins[method] for method in FEDLI},
                "FedLi-LU training-loss rank": rank_text(losses, "FedLi-LU", lower_is_better=True),
                "order agrees with the paper's (Spearman: means; seeds)": "" if paper else
                    f"{_spearman(theirs, row):+.2f}; {min(per_seed):+.2f} to {max(per_seed):+.2f}",
            }
    return pd.DataFrame(columns)


# ------------------------------------------------------------------ the paper's claims, judged on our evidence

NEAR_BEST = 3.0
"""A value of a rate or a constant is 'good' if its score lies within 3 points of the method's best."""
RESOLUTION = 0.5
"""The grids' step in decades: "at least as forgiving" asks that a span be not narrower by this much (a margin:
confirmed when the whole 95% interval of the paired width differences lies above ``-RESOLUTION``)."""
SWEEPS, LONG = "sweeps", "long"
"""The keys in :class:`Evidence`'s scopes of the sweeps on Table 1's horizon and on the long one (``experiment.
long_task``; also the key of its sweeps): the sweeps may judge on other seeds than Table 1 (the budget)."""
BASELINE_RATES = ("FedAvg", "FedExP")
RATE_METHODS = ("FedLi-LU", *BASELINE_RATES)
"""The methods whose clients run SGD at a rate (``experiment.client_rate_sweep``)."""
LEARNED_MARGIN = 5.0
"""A task enters the summary claims if most methods beat its trivial baseline by more than this (points)."""
X_STAR = convex_optimum()
"""The optimum of the two convex clients (``theory.CONVEX_CLIENTS``): 10 / 111."""


@dataclass(frozen=True)
class Evidence:
    """What the claims read: the exact computations of :mod:`~papers.fedli.theory`; our Tables 1 and 2
    on the paper's horizon (``accuracy``, ``loss``: ``Results.scores`` of the seven methods on the long tasks) with
    each task's trivial ``baselines``; ``early``, the test accuracy of Table 1's short runs at early rounds
    (``experiment.accuracy_at``); the client-rate sweeps ``rates`` (``{"tables": ..., "long": ...}``) with the
    baselines' ``tuned_rates``; FedLi's ``constants`` (``{setting: sweep}``, described by ``constant_settings``);
    the ``scale``, and per task (and :data:`SWEEPS`, :data:`LONG`) the ``Scope`` of its runs; FedLi-LS under each
    server rule (``server_rules``: scores, rows ``(task, rule)``, one column per seed; ``server_step_means``: each
    run's mean ``eta_g``, alike) and FedLi-LU's ``gamma_rounds`` (``{runs: (rounds with gamma_t = 1, rounds)}``)."""

    shared_gaps: Sequence[float]
    shared_bound: float
    convex_run: Any
    remark2: Mapping[str, Any]
    accuracy: pd.DataFrame | None = None
    loss: pd.DataFrame | None = None
    baselines: Mapping[str, float] | None = None
    rates: Mapping[str, pd.DataFrame] | None = None
    tuned_rates: Mapping[str, float] | None = None
    constants: Mapping[str, pd.DataFrame] | None = None
    constant_settings: Mapping[str, Mapping[str, Any]] | None = None
    scale: str = "?"
    scopes: Mapping[str, Scope] | None = None
    server_rules: pd.DataFrame | None = None
    server_step_means: pd.DataFrame | None = None
    gamma_rounds: Mapping[str, tuple[int, int]] | None = None
    early: pd.DataFrame | None = None

    def __post_init__(self) -> None:
        trained = [] if self.accuracy is None else list(self.accuracy.index.get_level_values("task"))
        trained += [] if self.early is None else list(self.early.index.get_level_values("task"))
        trained += [] if self.rates is None else [SWEEPS] + [LONG] * (LONG in self.rates)
        missing = [task for task in dict.fromkeys(trained) if task not in (self.scopes or {})]
        if missing:
            raise ValueError(f"scopes={self.scopes!r} has no Scope for the trained runs {missing}: give "
                             "scopes={task: common.scope(...), 'sweeps': ..., 'long': ...}")
        if self.accuracy is not None and (self.loss is None or self.baselines is None):
            raise ValueError("accuracy needs its loss table and each task's trivial baseline (baselines=)")

    def runs_scope(self, tasks: Sequence[str]) -> Scope:
        """The scope of a verdict on the runs of ``tasks``: their scopes in one (each task's rounds; the model one
        label where they agree, else per task; their judging and tuning seeds, which must agree)."""
        scopes = {self.scopes[task].tasks[0]: self.scopes[task] for task in tasks}
        if len({(scope.seeds, scope.tuning_seeds) for scope in scopes.values()}) > 1:
            raise ValueError(f"the tasks {list(tasks)} ran (or tuned) on different seeds: judge them apart")
        models, first = {scope.model for scope in scopes.values()}, next(iter(scopes.values()), None)
        return Scope(tuple(scopes), self.scale, {name: scope.rounds for name, scope in scopes.items()} or None,
                     first.seeds if first else (), models.pop() if len(models) == 1 else
                     {name: scope.model for name, scope in scopes.items() if scope.model},
                     first.tuning_seeds if first else ())

    def exact_scope(self, *computations: str) -> Scope:
        """The scope of a verdict on exact computations (deterministic, no trained model)."""
        return Scope(computations, self.scale, None, ())

    def learned(self) -> list[str]:
        """The tasks of our tables where most methods beat the trivial baseline by :data:`LEARNED_MARGIN` points."""
        tasks = list(dict.fromkeys(self.accuracy.index.get_level_values("task")))
        return [task for task in tasks if learned_something(self.accuracy.loc[task].mean(axis=1).to_dict(),
                                                            self.baselines[task], LEARNED_MARGIN)]


def _universal(holds_when_alike: bool, holds_when_different: bool) -> str:
    """Stated for every convex federation: a counterexample refutes it, whatever the homogeneous case shows (the
    verdict names the federation where it held)."""
    return judge({"shared data": CONFIRMED if holds_when_alike else CONTRADICTED,
                  "two convex clients": CONFIRMED if holds_when_different else CONTRADICTED})


def _quadratics(e: Evidence) -> Scope:
    return e.exact_scope(f"clients sharing their data ({len(e.shared_gaps) - 1} rounds)",
                         f"two convex clients ({len(e.convex_run.x) - 1} rounds)")


def _descent(e: Evidence) -> Judgement:
    shared = all(b < a for a, b in zip(e.shared_gaps, e.shared_gaps[1:]) if a > 1e-12)
    values = e.convex_run.global_objective
    rises = sum(b > a for a, b in zip(values, values[1:]))
    before, after = getattr(e.convex_run, "own_before", []), getattr(e.convex_run, "own_after", [])
    descend = sum(all(y <= x for x, y in zip(start, end)) for start, end in zip(before, after))
    own = f"; every client's own falls or stays in {descend} of {len(before)}" if before else ""
    return Judgement(f"shared data: the gap falls every round: {'yes' if shared else 'no'}; two convex clients, "
                     f"K = 10: the global objective rises in {rises} of {len(values) - 1} rounds{own}",
                     _universal(shared, rises == 0), _quadratics(e))


def _linear(e: Evidence) -> Judgement:
    gaps = [g for g in e.shared_gaps if g > 1e-12]
    worst = max(b / a for a, b in zip(gaps, gaps[1:])) if len(gaps) > 1 else math.nan
    within = bool(worst <= e.shared_bound + 1e-12)
    factor, limit = linear_fit(e.convex_run.x)
    converged = abs(limit - X_STAR) < 1e-3
    return Judgement(f"shared data: worst factor {worst:.3g}, our bound {e.shared_bound:.3g}; two convex clients: "
                     f"linear (factor {factor:.3f}) to {limit:.3f}, not x* = {X_STAR:.3f}",
                     _universal(within, converged), _quadratics(e))


def _remark2(e: Evidence) -> Judgement:
    r = e.remark2
    holds = bool(r["client 1 descends"] and r["client 2 descends"] and not r["global descends"])
    searched = f" (steps {r['eta1']:.3g} and {r['eta2']:.3g} from each client's line search)" if "eta1" in r else ""
    return Judgement(f"our instance{searched}: f_1 {r['f1(x0)']:.3f} -> {r['f1(x1)']:.3f}, f_2 {r['f2(x0)']:.3f} -> "
                     f"{r['f2(x2)']:.3f}, global f {r['f(x0)']:.3f} -> {r['f(x_bar)']:.3f}", verdict(int(holds), 1),
                     e.exact_scope("our instance: two tilted quartics, one step each"))


def widths(table: pd.DataFrame, around: float, within: float = NEAR_BEST,
           best: Mapping[Any, float] | None = None) -> list[float]:
    """Per seed (the columns of ``table``, rows the values; NaN: not run): the width in decades of the good span
    around ``around``, its ends interpolated (:func:`papers.common.span_decades`), within ``within`` of
    the seed's own best, or of ``best[seed]`` (a common target: the best score any method reached on that seed)."""
    return span_decades_by_seed(table, within, around, best)


def _widths_against(ours: Sequence[float], others: Mapping[str, Sequence[float]]) -> dict[str, Check]:
    """``ours`` (one width per seed) paired against each of ``others``: "at least as forgiving" is a margin claim,
    confirmed when the 95% interval of the paired differences lies above ``-RESOLUTION``."""
    return {name: compare(ours, widths, margin=-RESOLUTION) for name, widths in others.items()}


def _mean(values: Sequence[float]) -> str:
    return f"{sum(values) / len(values):.2f}"


def _rate_widths(e: Evidence, horizon: str) -> dict[str, list[float]]:
    """The baselines' client-rate widths per seed on ``horizon`` (``"tables"`` or :data:`LONG`), within
    :data:`NEAR_BEST` of their own best: around the tuned rate on Table 1's horizon, around the best on the long
    one (where none was tuned)."""
    rates = e.rates[horizon]
    return {m: widths(rates[m], e.tuned_rates[m] if horizon == "tables" else best_value(rates[m]))
            for m in _swept(rates)}


def _swept(rates: pd.DataFrame) -> list[str]:
    """The baselines of :data:`BASELINE_RATES` whose client rate ``rates`` swept (``(method, seed)`` columns)."""
    return [m for m in BASELINE_RATES if m in rates.columns.get_level_values(0)]


def _free_of(method: str) -> Callable[[Evidence], Judgement]:
    """'Hyper-parameter-free' for ``method``: each of its constants' good span around the default (within
    :data:`NEAR_BEST` of the constant's own best) against the baselines' client rate (:func:`_rate_widths`) on the
    same horizon, paired over seeds."""
    def assess(e: Evidence) -> Judgement:
        settings = {s: entry for s, entry in (e.constant_settings or {}).items() if entry["method"] == method}
        if not e.constants or e.rates is None or e.tuned_rates is None or not settings:
            return Judgement(f"no sweeps of {method}'s constants", NOT_TESTABLE, e.runs_scope([]))
        horizons = list(dict.fromkeys(entry["horizon"] for entry in settings.values()))
        theirs = {horizon: _rate_widths(e, horizon) for horizon in horizons}
        checks, parts = {}, []
        for setting, entry in settings.items():
            ours, name = widths(e.constants[setting], entry["default"]), setting.removeprefix(f"{method} ")
            checks |= _widths_against(ours, {f"{name} - {m}'s rate": w for m, w in theirs[entry["horizon"]].items()})
            parts.append(f"{name} {_mean(ours)}")
        baselines = ", ".join(f"{m} {'/'.join(_mean(theirs[h][m]) for h in horizons if m in theirs[h])}"
                              for m in BASELINE_RATES if any(m in theirs[h] for h in horizons))
        scope = e.runs_scope([SWEEPS if horizon == "tables" else LONG for horizon in horizons])
        return Family(checks).judged(f"decades around the default: {', '.join(parts)}; the baselines' rate: "
                                     f"{baselines}", scope)
    return assess


def _least_tuning(e: Evidence) -> Judgement:
    """'Hyperparameter tuning is almost the least effort-taking' for FedLi-LU, on the paper's horizon: the decades
    of each knob (its clients' rate at the default DFW step, and the DFW step at FedAvg's tuned client rate) that
    reach the common target, within :data:`NEAR_BEST` of the best score any method reached on that seed, around
    the knob's best value, against the baselines' client rate alike."""
    if e.rates is None or LONG not in e.rates or e.accuracy is None or not e.constants:
        return Judgement("no client-rate sweep on the long horizon", NOT_TESTABLE, e.runs_scope([]))
    rates, task = e.rates[LONG], e.accuracy.index.get_level_values("task")[0]
    best = e.accuracy.loc[task].max()  # per seed: the best of the seven methods
    knobs = {"FedLi-LU rate": rates["FedLi-LU"], "FedLi-LU DFW eta": e.constants["FedLi-LU eta (DFW)"]}
    ours = {knob: widths(table, best_value(table), best=best) for knob, table in knobs.items()}
    theirs = {m: widths(rates[m], best_value(rates[m]), best=best) for m in _swept(rates)}
    family = Family({f"{knob} - {m}": check for knob in ours
                     for m, check in _widths_against(ours[knob], theirs).items()})
    own = {name: _mean(widths(table, best_value(table))) for name, table in
           {**knobs, **{m: rates[m] for m in theirs}}.items()}
    return family.judged("decades within 3 of the best method: " + ", ".join(
        f"{name} {_mean(w)}" for name, w in {**ours, **theirs}.items()), e.runs_scope([LONG]),
        details=family.details() | {"decades within 3 of each one's own best (mean)": ", ".join(
            f"{name} {w}" for name, w in own.items())})


EARLY_ROUNDS = (5, 10, 20)
"""The rounds at which 'epoch-to-accuracy' is read on Table 1's short runs (those that were evaluated)."""


def _epoch_to_accuracy(e: Evidence) -> Judgement:
    """Section 7: 'the epoch-to-accuracy performance of the proposed algorithms are clearly superior to their
    counterparts': read as the better FedLi method (by the means) above the best baseline at every early round."""
    if e.early is None:
        return Judgement("no early evaluations", NOT_TESTABLE, e.runs_scope([]))
    checks = {}
    for (task, at), table in e.early.groupby(level=["task", "round"]):
        scores = table.droplevel(["task", "round"])
        means = scores.mean(axis=1)
        fedli, other = means[list(FEDLI)].idxmax(), means.drop(list(FEDLI)).idxmax()
        checks[f"{task} round {at}: {fedli} - {other}"] = compare(scores.loc[fedli], scores.loc[other])
    family = Family(checks)
    return family.judged("; ".join(f"{label.split(': ')[0]} {family.short(label)}" for label in checks),
                         e.runs_scope(list(dict.fromkeys(e.early.index.get_level_values("task")))))


def _lost(e: Evidence) -> Judgement:
    return Judgement("their statements are lost in our copy of the text (only the headings of Sections 5.1 and 5.3 "
                     "survive): nothing to test", NOT_TESTABLE, e.exact_scope("the text"))


ONE_RULE = "FedLi-LS (server step 1)"
"""The convex rule ``eta_g = 1`` (``experiment.SERVER_STEP_RULES``), against which the largest-client-step rule is
read."""


def _larger_server_step(e: Evidence) -> Judgement:
    """Section 3: "a larger server-side step-size offsets the small client-side step-size", so FedLi-LS's server
    takes the largest client step: read as ``eta_g`` above 1 (larger than the convex rule's) and an accuracy above
    the convex rule's, paired over seeds on each task."""
    if e.server_rules is None or e.server_step_means is None:
        return Judgement("no runs of the server rules", NOT_TESTABLE, e.runs_scope([]))
    tasks, checks = list(dict.fromkeys(e.server_rules.index.get_level_values(0))), {}
    for task in tasks:
        steps = e.server_step_means.loc[(task, "FedLi-LS")]
        checks[f"{task}: eta_g - 1"] = compare(list(steps), [1.0] * len(steps), digits=3)
        checks[f"{task}: accuracy, largest step - step 1"] = compare(e.server_rules.loc[(task, "FedLi-LS")],
                                                                     e.server_rules.loc[(task, ONE_RULE)])
    family = Family(checks)
    return family.judged("; ".join(f"{label} {family.short(label)}" for label in checks), e.runs_scope(tasks))


def _substitute(e: Evidence) -> Judgement:
    """The abstract: the clients' loss average is "a practical and effective substitute" for f(x_t) in FedLi-LU's
    step.  Where gamma_t = 1 (the cap) the loss never enters the step, and any other number would do as well."""
    if not e.gamma_rounds:
        return Judgement("no FedLi-LU runs", NOT_TESTABLE, e.runs_scope([]))
    capped = sum(at for at, _ in e.gamma_rounds.values())
    total = sum(rounds for _, rounds in e.gamma_rounds.values())
    found = "; ".join(f"{runs}: gamma_t = 1 in {at} of {rounds} rounds" for runs, (at, rounds) in
                      e.gamma_rounds.items())
    why = ("the step is capped in every round, so the loss never enters it" if capped == total else
           f"the loss entered the step in {total - capped} rounds, but no run had f(x_t) to set beside it")
    tasks = [frame.index.get_level_values("task") for frame in (e.early, e.accuracy) if frame is not None]
    return Judgement(f"{found}: {why}", NOT_TESTABLE, e.runs_scope(list(dict.fromkeys(t for ts in tasks for t in ts))))


CLAIMS: tuple[Claim, ...] = (
    Claim("Descent-ensuring client steps give descent of the convex global objective (Lemma 3, Remark 1)", _descent),
    Claim("Linear convergence to the optimum for strongly convex objectives (Section 5; read: a linear rate and the "
          "optimum reached, so a rate to another point does not satisfy it)", _linear),
    Claim("For non-convex clients, local descent need not give global descent (Remark 2)", _remark2),
    Claim("Theorems 1 and 3: FedLi-LS's rates for convex and non-convex objectives (Section 5)", _lost),
    Claim("The largest client step as the server's step: 'a larger server-side step-size offsets the small "
          "client-side step-size' (Section 3; read: eta_g above 1, accuracy above eta_g = 1)", _larger_server_step),
    Claim("The clients' loss average is 'a practical and effective substitute' for f(x_t) in FedLi-LU's step "
          "(abstract)", _substitute),
    Claim("Hyper-parameter-free (title): FedLi-LS's constants (c, beta_b, gamma), set once, need no tuning: their "
          "span around the default against the baselines' tuned client rate", _free_of("FedLi-LS")),
    Claim("Hyper-parameter-free (title): FedLi-LU's constants (DFW eta, 1 - mu), set once, need no tuning: their "
          "span around the default against the baselines' client rate", _free_of("FedLi-LU")),
    Claim("For FedLi-LU 'hyperparameter tuning is almost the least effort-taking' (Appendix C): read on 500 rounds, "
          "each of its two knobs reaches the best method's score - 3 as widely as the baselines' rate",
          _least_tuning),
    Claim("'The epoch-to-accuracy performance of the proposed algorithms are clearly superior' (Section 7; read: "
          "a FedLi method ahead of the best baseline at rounds 5, 10, 20)", _epoch_to_accuracy),
)
"""The paper's theory claims, judged exactly (sections 1 and 2), and its tuning claims, on the sweeps (section 4)."""


Found = list[tuple[str, str, Check]]
"""A summary sentence's comparisons on one task: ``(label, what is compared, Check)``."""


def _minus(accuracy: pd.DataFrame, task: str, method: str, other: str, says: tuple = ("", ""),
           label: str = "") -> tuple[str, str, Check]:
    """``method`` minus ``other`` on ``task``, paired over seeds, names followed by ``says``; labelled ``label``
    (else the task) where the verdict says what it held on."""
    return label or task, f"{task}: {method}{says[0]} - {other}{says[1]}", \
        compare(accuracy.loc[(task, method)], accuracy.loc[(task, other)])


def _first_on_seeds(accuracy: pd.DataFrame, task: str) -> Found:
    """The best FedLi method against the best baseline (by the means) on ``task``."""
    means = accuracy.loc[task].mean(axis=1)
    return [_minus(accuracy, task, means[list(FEDLI)].idxmax(), means.drop(list(FEDLI)).idxmax(),
                   (" (better FedLi)", " (best baseline)"))]


def _lu_first_on_seeds(accuracy: pd.DataFrame, task: str) -> Found:
    return [_minus(accuracy, task, "FedLi-LU", accuracy.loc[task].mean(axis=1).drop("FedLi-LU").idxmax(),
                   ("", " (best of the others)"))]


def _above_fedavg_on_seeds(accuracy: pd.DataFrame, task: str) -> Found:
    return [_minus(accuracy, task, method, "FedAvg", label=f"{task} {method}") for method in FEDLI]


MOST_OF = 3
"""'Most of the cases' is a claim over the paper's four tasks: at least this many must have been run to judge it."""


def paper_task(task: str) -> str:
    """The paper's task a task of ours runs (``"femnist (long)"`` is ``"femnist"`` on the long horizon)."""
    return task.split(" (")[0]


def _on_our_tables(check: Callable[[pd.DataFrame, str], Found], most: bool = False) -> Callable[[Evidence], Judgement]:
    """A summary sentence judged by ``check(accuracy, task)`` on our tasks where the methods learned, its
    comparisons Holm-corrected together; a 'most' sentence needs :data:`MOST_OF` tasks (else not testable, the
    comparisons said as a stand-in finding)."""
    def assess(e: Evidence) -> Judgement:
        if e.accuracy is None:
            return Judgement("no tables", NOT_TESTABLE, e.runs_scope([]))
        tasks = list(dict.fromkeys(e.accuracy.index.get_level_values("task")))
        learned = e.learned()
        unlearned = [task for task in tasks if task not in learned]
        notes = {"not testable on": f"{', '.join(unlearned)} (most methods within {LEARNED_MARGIN:g} points of the "
                                    "trivial baseline)"} if unlearned else {}
        unrun = [task for task in TASKS if task not in map(paper_task, tasks)]
        notes |= {f"not run at scale {e.scale!r}": ", ".join(unrun)} if unrun else {}
        if not learned:
            return Judgement("no task where most methods learned", NOT_TESTABLE, e.runs_scope(tasks), notes)
        found = [entry for task in learned for entry in check(e.accuracy, task)]
        family = Family({label: comparison for label, _, comparison in found})
        ours = "; ".join(f"{compared} {family.short(label)}" for label, compared, _ in found)
        if most and len(learned) < MOST_OF:
            return Judgement(f"{len(learned)} of the paper's {len(TASKS)} tasks; on the stand-in: {ours}",
                             NOT_TESTABLE, e.runs_scope(learned), family.details() | notes)
        return family.judged(ours, e.runs_scope(learned), most, details=family.details() | notes)
    return assess


SUMMARY_CLAIMS: tuple[Claim, ...] = (
    Claim(SUMMARY_SENTENCES[0][0], _on_our_tables(_first_on_seeds)),
    Claim(SUMMARY_SENTENCES[1][0], _on_our_tables(_lu_first_on_seeds, most=True)),
    Claim(SUMMARY_SENTENCES[2][0], _on_our_tables(_above_fedavg_on_seeds)),
)
"""The summary sentences judged on our Tables 1 and 2, paired over seeds, on the tasks where the methods learned."""


def claims_table(evidence: Evidence) -> pd.DataFrame:
    """:data:`CLAIMS`, then, where there are tables, :data:`SUMMARY_CLAIMS`, each beside what the paper's own tables
    say of it; every row with its scope (:func:`papers.claims.claims_table`)."""
    theory = shared_claims_table(evidence, CLAIMS, source="paper")
    theory["the paper's own tables"] = "-"
    if evidence.accuracy is None:
        return theory
    ours = shared_claims_table(evidence, SUMMARY_CLAIMS, source="paper")
    papers = summary_against_tables()
    ours["the paper's own tables"] = papers["ours"] + " (" + papers["verdict"] + ")"
    return pd.concat([theory, ours], ignore_index=True)
