"""A paper's claims as data, each judged by shared rules that know the noise over seeds.

A :class:`Claim` pairs a sentence of the paper with ``assess(evidence)``, a function of the notebook's own
evidence (result tables over seeds) that returns a :class:`Judgement`: what our results show in numbers, the
verdict and its :class:`Scope` (tasks, scale, rounds, judging seeds and, where a grid chose hyperparameters, the
tuning seeds).  :func:`claims_table` lays them out, one short row per claim, and :func:`show` displays them with
the numbers behind each row (``Judgement.details``: every comparison in full) in a table below.  The rules:

- **The comparisons** (:mod:`fedcore.comparisons`): paired 95% t intervals over seeds against a margin, Holm's
  step-down over the comparisons behind one verdict (:class:`Family`), each with an outcome (confirmed,
  contradicted, within the noise, not decidable at these seeds).
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
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch

from fedcore import comparisons
from fedcore.checks import check_bool, check_int, check_number, check_seeds, plain_number
from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, check_outcomes

HOLDS, PARTLY, DOES_NOT_HOLD = "holds", "partly", "does not hold"
INCONCLUSIVE, NOT_TESTABLE, NOT_DECIDABLE_AT = "inconclusive", "not testable here", "not decidable at"
VERDICTS = (HOLDS, PARTLY, DOES_NOT_HOLD, INCONCLUSIVE, NOT_TESTABLE, NOT_DECIDABLE_AT)
"""The kinds of verdict; a verdict may say more after its kind: "does not hold (holds on cr)", "not decidable at 3
seeds" (:func:`verdict_kind`)."""


def verdict_kind(verdict: str) -> str:
    """The kind (:data:`VERDICTS`) a verdict text starts with: ``"does not hold (holds on cr)"`` is
    :data:`DOES_NOT_HOLD`; a text of no kind is a ``ValueError``."""
    for kind in sorted(VERDICTS, key=len, reverse=True):  # "does not hold" before "holds"
        if isinstance(verdict, str) and verdict.startswith(kind):
            return kind
    raise ValueError(f"verdict={verdict!r} is none of {list(VERDICTS)}")


class Family(comparisons.Family):
    """A :class:`fedcore.comparisons.Family` judged into a claim's verdict (:func:`judge`) and its
    :class:`Judgement`."""

    def verdict(self, most: bool = False, outcomes: Sequence[str] | Mapping[str, str] | None = None) -> str:
        """:func:`judge` of the corrected :attr:`outcomes`, or of ``outcomes`` derived from them (one per task of
        several checks, :func:`~fedcore.comparisons.all_of`; a list where a contradicted claim should count, not
        name, where it held)."""
        return judge(self.outcomes if outcomes is None else outcomes, most, self.seeds or None)

    def judged(self, ours: str, scope: Scope, most: bool = False,
               outcomes: Sequence[str] | Mapping[str, str] | None = None,
               details: Mapping[str, str] | None = None) -> Judgement:
        """The :class:`Judgement` with :meth:`verdict`, its scope saying how many comparisons Holm corrected, and
        ``details`` (by default every check in full, :meth:`details`)."""
        return Judgement(ours, self.verdict(most, outcomes), dataclasses.replace(scope, corrected=len(self)),
                         self.details() if details is None else details)


def not_decidable(seeds: int | None) -> str:
    """``"not decidable at 3 seeds"`` (``seeds`` an int >= 1; None: "at these seeds")."""
    seeds = None if seeds is None else check_int("seeds", seeds, 1)
    return f"{NOT_DECIDABLE_AT} {seeds} seed{'s' * (seeds != 1)}" if seeds else f"{NOT_DECIDABLE_AT} these seeds"


def judge(outcomes: Sequence[str] | Mapping[str, str], most: bool = False, seeds: int | None = None) -> str:
    """The verdict of a claim from its checks' outcomes (each one of :data:`~fedcore.comparisons.OUTCOMES`;
    ``{label: outcome}`` names where a contradicted claim still held): see the module's rules.  With ``most`` the claim
    asks more than half of its checks to pass: it holds when more than half are confirmed, does not hold when the
    confirmed and the undecided together are at most half, partly when some are confirmed otherwise.  ``seeds``: the
    seeds behind the checks (an int >= 1; None: unknown), for "not decidable at ``seeds`` seeds"."""
    labels = dict(outcomes) if isinstance(outcomes, Mapping) else {}
    outcomes, most = check_outcomes(labels.values() if labels else outcomes), check_bool("most", most)
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
