"""What a paper's experiment runs on: :class:`Task` (data, model, round settings, metric, baseline) and how
tuning selects (:class:`Selection`); a run's score over its last evaluations (:func:`window_score`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from torch import Tensor, nn

from fedcore.checks import (
    check_int,
    check_positive,
    check_seed,
    check_seeds,
)
from fedcore.data.federated import FederatedData
from fedcore.problem import Problem
from fedcore.results import History
from papers.claims import Scope

SCORE_EVALUATIONS = 4  # a run's score averages its metric over this many last evaluations (of the full test set)


ROUND_SETTINGS = ("rounds", "clients_per_round", "local_steps", "batch_size", "eval_every", "weighting")


Builder = Callable[..., Any]


@dataclass(frozen=True)
class Selection:
    """How a grid search scores a run and which end wins: ``metric`` (a ``History`` column; ``""``: the task's own
    score, :meth:`Task.score`) averaged over the rounds of its last ``evaluations`` measurements
    (:func:`window_score`), ``higher_is_better``, and the round settings of a tuning run that differ from the
    task's (``rounds``, ``eval_every``; None: the task's)."""

    metric: str = ""
    evaluations: int = SCORE_EVALUATIONS
    higher_is_better: bool = True
    rounds: int | None = None
    eval_every: int | None = None

    def __post_init__(self) -> None:
        check_int("evaluations", self.evaluations)
        for name in ("rounds", "eval_every"):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), 0)


@dataclass(frozen=True)
class Task:
    """What a paper's experiment runs on: ``data`` (its partition fixed), ``model(seed)`` (an ``nn.Module`` with
    its initial weights drawn from ``seed``), the round ``settings`` (:data:`ROUND_SETTINGS`), the ``metric``
    (a column of ``History.frame``) and whether higher is better, the score's ``unit`` (100: percent), the
    trivial ``baseline`` in that unit, and how tuning selects (:class:`Selection`).  ``model_label`` names the
    model beside the paper's."""

    name: str
    data: FederatedData
    model: Callable[[int], nn.Module]
    settings: Mapping[str, Any]
    baseline: float
    metric: str = "test_accuracy"
    higher_is_better: bool = True
    model_label: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)
    unit: float = 1.0
    selection: Selection = Selection()

    def __post_init__(self) -> None:
        missing = [key for key in ROUND_SETTINGS if key not in self.settings]
        unknown = [key for key in self.settings if key not in ROUND_SETTINGS]
        if missing or unknown:
            raise ValueError(f"settings of task {self.name!r} must have exactly {list(ROUND_SETTINGS)}: "
                             f"missing {missing}, unknown {unknown}")
        check_positive("unit", self.unit)

    def problem(self, seed: int = 0) -> Problem:
        """The data with the model drawn from ``seed``."""
        return Problem(self.data, self.model(check_seed("seed", seed)))

    def initial(self, seeds: Sequence[int]) -> dict[int, Tensor]:
        """``{seed: initial parameters}``: the model drawn from each seed."""
        return {seed: self.problem(seed).x0() for seed in seeds}

    def score(self, history: History, metric: str | None = None) -> float:
        """A run's score: :func:`window_score` of the task's ``metric`` times its ``unit`` (or of another
        ``metric``, e.g. ``"train_loss"``, as it is, over the same rounds); NaN for a run that diverged."""
        if metric is None or metric == self.metric:
            return self.unit * window_score(history, self.metric, evaluated=self.metric)
        return window_score(history, metric, evaluated=self.metric)

    def rule(self, selection: Selection | None = None) -> Selection:
        """``selection``, or the task's own; a rule on the task's own score wins at the task's end."""
        rule = self.selection if selection is None else selection
        return rule if rule.metric else replace(rule, higher_is_better=self.higher_is_better)

    def tuning_score(self, history: History, selection: Selection | None = None) -> float:
        """A tuning run's score by ``selection`` (the task's :class:`Selection` by default)."""
        rule = self.rule(selection)
        if not rule.metric:
            return self.score(history)
        return window_score(history, rule.metric, rule.evaluations, evaluated=rule.metric)

    def tuning_settings(self, selection: Selection | None = None) -> dict[str, Any]:
        """The round settings of a tuning run: the task's, with ``selection``'s rounds and evaluation period."""
        rule = self.rule(selection)
        overrides = {"rounds": rule.rounds, "eval_every": rule.eval_every}
        return {**self.settings, **{key: value for key, value in overrides.items() if value is not None}}


def scope(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int],
          model: str | Mapping[str, str] = "") -> Scope:
    """What a verdict on runs of ``tasks`` (``{name: Task}``) at ``scale`` from ``seeds`` rests on: the tasks, each
    one's rounds (one number where they agree), the seeds and ``model`` where it is not the paper's (one label,
    or one per task)."""
    if not isinstance(tasks, Mapping) or not tasks or not all(isinstance(t, Task) for t in tasks.values()):
        raise ValueError(f"tasks={tasks!r} must be a non-empty {{name: Task}}")
    rounds = {name: int(task.settings["rounds"]) for name, task in tasks.items()}
    return Scope(tuple(tasks), scale, rounds, tuple(check_seeds("seeds", seeds)), model)


def window_score(history: History, metric: str, evaluations: int = SCORE_EVALUATIONS,
                 evaluated: str = "test_accuracy") -> float:
    """The score of a run: ``metric`` averaged over the rounds of its last ``evaluations`` evaluations (the rounds
    where ``evaluated`` was measured, round 0 left out; all of them when there are fewer), so a test metric is the
    mean of the last ``evaluations`` evaluations and a per-round quantity (``train_loss``) the mean over the same
    rounds.  NaN for a run that diverged."""
    frame = columns_of(history, metric, evaluated)
    check_int("evaluations", evaluations)
    if history.diverged:
        return math.nan
    rounds = frame[evaluated].dropna().index
    rounds = rounds[rounds > 0]
    if rounds.empty:
        raise ValueError(f"the run has no evaluation of {evaluated!r} after round 0: give it an eval_every")
    after = rounds[-evaluations - 1] if len(rounds) > evaluations else 0
    values = frame.loc[frame.index > after, metric].dropna()
    return float(values.mean())


def columns_of(history: History, *names: str) -> pd.DataFrame:
    """``history``'s frame, once ``history`` is a History with the columns ``names``."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    for name in names:
        if name not in history.frame:
            raise ValueError(f"{name!r} is not a column of the history: {list(history.frame.columns)}")
    return history.frame


def window_rounds(settings: Mapping[str, Any], evaluations: int = SCORE_EVALUATIONS) -> str:
    """The rounds :func:`window_score` averages over, for round settings ``settings``: e.g. ``"rounds 25-40"``."""
    rounds, every = int(settings["rounds"]), int(settings["eval_every"]) or int(settings["rounds"])
    evaluated = sorted({*range(every, rounds + 1, every), rounds})
    first = evaluated[-evaluations - 1] + 1 if len(evaluated) > evaluations else 1
    return f"rounds {first}-{rounds}, the last {min(evaluations, len(evaluated))} evaluations"
