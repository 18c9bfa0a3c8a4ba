"""The experiments' common layer and contract, written once.

Every paper's ``experiment`` module answers to the same names (:data:`CONTRACT`, checked by
``tests/test_common.py``):

- ``SCALES``: ``{name: Scale}`` (``smoke``, ``small``, ``medium``, ``paper``), a :class:`Scale` or a subclass of it;
- ``tasks(scale, *, partition_seed=0, device="cpu") -> {name: Task}``: the scale's tasks, each a :class:`Task`
  (data with its partition fixed, the model drawn from a seed, the round settings, the metric, its unit and
  trivial baseline, how tuning selects);
- ``make_builders(task, scale) -> {method: build(**hyperparameters)}``: the methods ``task`` runs;
- ``run(task, builders, seeds) -> Results`` and ``tune(task, builders, grids, seeds) -> Tuning``: this module's
  :func:`run` and :func:`tune` (a builder's point bound by :func:`bind`).

A **seed** draws the initial model, the client sampling and the minibatches (:meth:`Task.initial`).
:class:`Results` keeps (task, method, seed) -> History with its views, :class:`Tuning` the chosen points and every
point's scores.  A run's score is :func:`window_score`: its metric over the last :data:`SCORE_EVALUATIONS`
evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import partial
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from torch import Tensor, nn

from fedcore.checks import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_positive,
    check_range,
    check_scale,
    check_seed,
    check_seeds,
    plain_sequence,
)
from fedcore.comparisons import compare
from fedcore.data.federated import FederatedData
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate, simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep
from papers.claims import Scope, check_apart

SCORE_EVALUATIONS = 4  # a run's score averages its metric over this many last evaluations (of the full test set)
ROUND_SETTINGS = ("rounds", "clients_per_round", "local_steps", "batch_size", "eval_every", "weighting")

Builder = Callable[..., Any]
CONTRACT = {"SCALES": None, "tasks": ("scale", "partition_seed", "device"), "make_builders": ("task", "scale"),
            "run": ("task", "builders", "seeds"), "tune": ("task", "builders", "grids", "seeds")}
"""The names every paper's ``experiment`` module answers to, with the parameters of each function."""


Kind = Callable[[str, Any], Any]
"""How a :class:`Scale` field is checked: ``kind(name, value)`` returns the value as the scale keeps it, or raises a
``ValueError`` (a bad value) or ``TypeError`` (a bad type) that names ``name``, the value and what is allowed."""


class Kinds:
    """The kinds of :class:`Scale` field (:data:`Kind`), which a scale class declares in its ``KINDS``."""

    @staticmethod
    def text() -> Kind:
        """A non-empty string."""
        def check(name: str, value: Any) -> str:
            if not isinstance(value, str) or not value:
                error = ValueError if isinstance(value, str) else TypeError
                raise error(f"{name}={value!r} must be a non-empty string")
            return value
        return check

    @staticmethod
    def count(low: int = 1) -> Kind:
        """An int ``>= low``."""
        return lambda name, value: check_int(name, value, low)

    @staticmethod
    def optional(kind: Kind, none: str) -> Kind:
        """None (which means ``none``) or ``kind``."""
        def check(name: str, value: Any) -> Any:
            try:
                return None if value is None else kind(name, value)
            except (TypeError, ValueError) as error:
                raise type(error)(f"{error} (or None: {none})") from None
        return check

    @staticmethod
    def flag() -> Kind:
        """True or False."""
        return check_bool

    @staticmethod
    def positive() -> Kind:
        """A finite number > 0."""
        return check_positive

    @staticmethod
    def choice(*choices: str) -> Kind:
        """One of ``choices``."""
        return lambda name, value: check_choice(name, value, choices)

    @staticmethod
    def seeds(empty: str = "") -> Kind:
        """Distinct seeds (:func:`~fedcore.checks.check_seeds`), kept as a tuple; with ``empty`` (what no seed
        means) also none."""
        def check(name: str, value: Any) -> tuple[int, ...]:
            value = plain_sequence(value)
            if empty and isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 0:
                return ()
            return tuple(check_seeds(name, value, f" (or () where {empty})" if empty else ""))
        return check

    @staticmethod
    def names(choices: Sequence[str] = (), each: str = "") -> Kind:
        """A sequence of task names, kept as a tuple, each one of ``choices`` (where given; the error calls one
        ``each``, by default the field's name)."""
        def check(name: str, value: Any) -> tuple[str, ...]:
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) \
                    or not all(isinstance(task, str) for task in value):
                raise TypeError(f"{name}={value!r} must be a sequence of task names")
            for task in value if choices else ():
                check_choice(each or name, task, choices)
            return tuple(value)
        return check

    @staticmethod
    def per_task(tasks: Sequence[str] = (), one: bool = True) -> Kind:
        """A count per task, ``{task: int >= 1}`` (each task one of ``tasks``, where given), or with ``one`` one
        count for every task."""
        def check(name: str, value: Any) -> Any:
            if not isinstance(value, Mapping):
                if one:
                    return check_int(name, value)
                raise TypeError(f"{name}={value!r} must be {{task: int >= 1}}, one entry per task")
            for task in value:
                if not isinstance(task, str):
                    raise TypeError(f"{name} has task={task!r}: a task is named by a string")
                if tasks:
                    check_choice(f"{name} has task", task, tasks)
            return {task: check_int(f"{name}[{task!r}]", count) for task, count in value.items()}
        return check

    @staticmethod
    def counts(keys: Sequence[str], required: Sequence[str]) -> Kind:
        """``{key: int >= 1}`` over some of ``keys``, those of ``required`` among them."""
        allowed = "{" + ", ".join(f"{key!r}: int >= 1" for key in keys) + f"}}, with {', '.join(map(repr, required))}"

        def check(name: str, value: Any) -> dict[str, Any]:
            if not isinstance(value, Mapping):
                raise TypeError(f"{name}={value!r} must be a mapping {allowed}")
            if set(value) - set(keys) or set(required) - set(value):
                raise ValueError(f"{name}={dict(value)!r} must be {allowed}")
            return {key: check_int(f"{name}[{key!r}]", count) for key, count in value.items()}
        return check

    @staticmethod
    def positives() -> Kind:
        """A non-empty sequence of numbers > 0, kept as a tuple."""
        def check(name: str, value: Any) -> tuple[Any, ...]:
            value = plain_sequence(value)
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise TypeError(f"{name}={value!r} must be a non-empty sequence of numbers > 0")
            if not value:
                raise ValueError(f"{name}={value!r} must be a non-empty sequence of numbers > 0")
            return tuple(check_positive(f"{name}[{i}]", entry) for i, entry in enumerate(value))
        return check

    @staticmethod
    def log_range(around: float | None = None) -> Kind:
        """``(low, high)``: log10 exponents in half-decades, multiples of 0.5, ``low <= high`` (as
        :func:`half_decades` takes them; with ``around`` between them, where given), kept as floats."""
        allowed = "(low, high): log10 exponents, multiples of 0.5, with " + \
            ("low <= high" if around is None else f"low <= {around:g} <= high")

        def check(name: str, value: Any) -> tuple[float, float]:
            value = plain_sequence(value)
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise TypeError(f"{name}={value!r} must be {allowed}")
            try:
                low, high = value
                half_decades(low, high)  # the same rule
            except (TypeError, ValueError) as error:
                raise type(error)(f"{name}={tuple(value)!r} must be {allowed}") from None
            if around is not None and not low <= around <= high:
                raise ValueError(f"{name}={tuple(value)!r} must be {allowed}")
            return float(low), float(high)
        return check


@dataclass(frozen=True)
class Scale:
    """What a notebook runs at one scale (``smoke``, ``small``, ``medium``, ``paper``): the fields every paper fills
    in; a paper adds its own fields in a subclass.  A misspelt field is a ``TypeError`` naming it (a dataclass takes
    no other keyword).  Every field is checked when a scale is built (and by ``dataclasses.replace``, which builds
    one) by the kind its class declares in ``KINDS`` (:class:`Kinds`; a subclass declares its own fields' and may
    narrow those above): a bad value is a ``ValueError`` or ``TypeError`` naming the class, the field, the value
    and what is allowed, and a field without a kind is a ``TypeError``.

    ``name``: the scale's name; ``seeds``: the seeds every judged run is repeated over (each draws the initial
    model, the client sampling and the minibatches); ``tuning_seeds``: the seeds grid searches run on, disjoint
    from ``seeds`` (hyperparameters are chosen on seeds apart from those that judge them; empty: the scale tunes
    nothing); ``rounds``: per run, one number or ``{task: rounds}`` (None: the paper's, per task);
    ``eval_every``: the evaluation period, one number or per task (for every task that has its ``rounds``);
    ``tasks``: the tasks that run (empty: the paper's module says); ``tune_rounds``: the rounds of a tuning run
    (None: no tuning run of its own); ``max_local_steps``: a cap on K (None: none); ``test_samples``: the test
    samples kept (None: all)."""

    name: str
    seeds: tuple[int, ...]
    rounds: int | Mapping[str, int] | None
    eval_every: int | Mapping[str, int]
    tasks: tuple[str, ...] = ()
    tune_rounds: int | None = None
    max_local_steps: int | None = None
    test_samples: int | None = None
    tuning_seeds: tuple[int, ...] = ()

    KINDS: ClassVar[Mapping[str, Kind]] = {
        "name": Kinds.text(), "seeds": Kinds.seeds(), "rounds": Kinds.optional(Kinds.per_task(), "the paper's"),
        "eval_every": Kinds.per_task(), "tasks": Kinds.names(),
        "tune_rounds": Kinds.optional(Kinds.count(), "no tuning run of its own"),
        "max_local_steps": Kinds.optional(Kinds.count(), "no cap"),
        "test_samples": Kinds.optional(Kinds.count(), "all"),
        "tuning_seeds": Kinds.seeds(empty="the scale tunes nothing")}
    """``{field: kind}``; a subclass's ``KINDS`` adds its fields' and replaces those it narrows (:meth:`kinds`)."""

    @classmethod
    def kinds(cls) -> dict[str, Kind]:
        """Every field's kind: the ``KINDS`` of this class and of the classes above it, the nearest one winning."""
        return {name: kind for klass in reversed(cls.__mro__) for name, kind in vars(klass).get("KINDS", {}).items()}

    def __post_init__(self) -> None:
        kinds, owner = self.kinds(), type(self).__name__
        unchecked = [f.name for f in fields(self) if f.name not in kinds]
        if unchecked:
            raise TypeError(f"{owner} declares no kind for {unchecked}: add them to its KINDS (common.Kinds)")
        try:
            for f in fields(self):
                object.__setattr__(self, f.name, kinds[f.name](f.name, getattr(self, f.name)))
            check_apart(self.tuning_seeds, self.seeds)
            if isinstance(self.rounds, Mapping) and isinstance(self.eval_every, Mapping):
                missing = [task for task in self.rounds if task not in self.eval_every]
                if missing:
                    raise ValueError(f"eval_every={self.eval_every!r} has no entry for {missing}, a task of rounds")
        except (TypeError, ValueError) as error:
            raise type(error)(f"{owner}: {error}") from None

    def seeds_or(self, seeds: Sequence[int] | None = None) -> list[int]:
        """``seeds`` (checked) when given (a notebook's ``SEEDS``), else this scale's."""
        return list(self.seeds) if seeds is None else check_seeds("seeds", seeds)


def scale_at(scales: Mapping[str, Scale], scale: str | Scale) -> Scale:
    """``scales[scale]`` (a notebook's ``SCALE``, checked), or ``scale`` itself when it is a :class:`Scale`."""
    return scale if isinstance(scale, Scale) else check_scale(scale, scales)


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


def bind(builders: Mapping[str, Builder], points: Mapping[str, Mapping[str, Any]] | Tuning,
         seeds: Sequence[int] | None = None) -> dict[str, Builder]:
    """``{method: build()}``: each builder of ``builders`` with its point of ``points`` (a :class:`Tuning`, its
    ``chosen``, a theorem's step sizes) bound; a method without a point keeps its defaults.  A ``Tuning`` bound for
    runs on the judging ``seeds`` must have tuned on other seeds (a ``ValueError`` names the shared ones)."""
    points = chosen_apart(points, seeds, "bind(builders, tuning, seeds)")
    return {method: partial(build, **points.get(method, {})) for method, build in builders.items()}


def chosen_apart(points: Mapping[str, Mapping[str, Any]] | Tuning, seeds: Sequence[int] | None,
                 call: str = "bind(builders, tuning, seeds)") -> Mapping[str, Mapping[str, Any]]:
    """``points`` as ``{method: point}``: a :class:`Tuning`'s ``chosen``, once its seeds are checked apart from the
    judging ``seeds`` (which ``call``, named in the error, must then give); any other mapping as it is."""
    if not isinstance(points, Tuning):
        return points
    if seeds is None:
        raise TypeError(f"{call}: give the judging seeds, to check that the tuning ran on others")
    check_apart(points.seeds, check_seeds("seeds", seeds))
    return points.chosen


def run(task: Task, builders: Mapping[str, Builder], seeds: Sequence[int], *, store: Store | None = None,
        progress: bool = False, alone: bool = False) -> Results:
    """Every method of ``builders`` (``{method: build()}``: a builder with its hyperparameters bound, :func:`bind`)
    on ``task`` from each seed's initial model, client sampling and minibatches, the same for every method.  The
    runs go through :func:`fedcore.simulate_runs` (runs that share a pass go together, the store keeps each);
    ``alone`` runs each by itself (:func:`fedcore.simulate`: the same numbers, and each run's ``seconds`` its own,
    not a share of a pass's)."""
    if not isinstance(task, Task):
        raise TypeError(f"task={type(task).__name__} must be a papers.common.Task")
    seeds = check_seeds("seeds", seeds)
    algorithms = {method: build() if callable(build) else build for method, build in builders.items()}
    starts, problem = task.initial(seeds), task.problem(seeds[0])
    if alone:
        runs = {method: [simulate(problem, algorithm, seed=seed, x0=starts[seed], store=store, progress=progress,
                                  **task.settings) for seed in seeds] for method, algorithm in algorithms.items()}
        return Results({task.name: runs}, tuple(seeds), {task.name: task})
    pairs = [(method, seed) for method in algorithms for seed in seeds]
    histories = simulate_runs(problem, [algorithms[method] for method, _ in pairs], seeds=[seed for _, seed in pairs],
                              x0=[starts[seed] for _, seed in pairs], store=store, progress=progress,
                              **task.settings)
    by_method: dict[str, list[History]] = {method: [] for method in algorithms}
    for (method, _), history in zip(pairs, histories):
        by_method[method].append(history)
    return Results({task.name: by_method}, tuple(seeds), {task.name: task})


@dataclass(frozen=True)
class Results(Mapping):
    """Runs over seeds, ``results[task][method]`` the ``History`` of each seed (in the order of ``seeds``), with the
    :class:`Task` of each, and the views a notebook shows (scikit-learn's ``cv_results_`` as the model): the
    scores per seed (:meth:`scores`), their mean and sd (:meth:`mean_sd`, :meth:`means`), paired differences
    from a reference (:meth:`paired`), the round settings (:meth:`settings`), the runs that diverged, the seconds a
    run took, a metric at a round.  ``a | b`` joins the tasks of two results over the same seeds."""

    runs: Mapping[str, Mapping[str, Sequence[History]]]
    seeds: tuple[int, ...]
    tasks: Mapping[str, Task]

    def __getitem__(self, task: str) -> Mapping[str, Sequence[History]]: return self.runs[task]
    def __iter__(self) -> Iterator[str]: return iter(self.runs)
    def __len__(self) -> int: return len(self.runs)

    def __or__(self, other: Results) -> Results:
        if not isinstance(other, Results) or other.seeds != self.seeds:
            raise ValueError(f"only results over the same seeds join: {self.seeds} and "
                             f"{getattr(other, 'seeds', type(other).__name__)}")
        return Results({**self.runs, **other.runs}, self.seeds, {**self.tasks, **other.tasks})

    def methods(self, *methods: str) -> Results:
        """The runs of ``methods`` only (in that order), on the tasks that ran them."""
        runs = {task: {method: by_method[method] for method in methods if method in by_method}
                for task, by_method in self.runs.items()}
        return Results(runs, self.seeds, self.tasks)

    def scores(self, metric: str | None = None) -> pd.DataFrame:
        """One row per (task, method), one column per seed: each run's :meth:`Task.score` (of the task's metric in
        its unit, or of ``metric``)."""
        return score_table(self.runs, {task: partial(self.tasks[task].score, metric=metric) for task in self.runs},
                           self.seeds)

    def means(self, metric: str | None = None) -> pd.DataFrame:
        """Tasks by methods: the mean over the seeds of :meth:`scores` (NaN where a seed diverged)."""
        table = self.scores(metric)
        return table.mean(axis=1, skipna=False).unstack("method").reindex(
            index=list(self.runs), columns=list(dict.fromkeys(table.index.get_level_values("method"))))

    def mean_sd(self, metric: str | None = None, scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
        """Methods by tasks, each cell ``"mean ± sd"`` of :meth:`scores` (times ``scale``) over the seeds."""
        return mean_sd(self.scores(metric), scale, digits)

    def paired(self, reference: str, metric: str | None = None, scale: float = 1.0, digits: int = 2,
               words: Mapping[str, str] | None = None) -> pd.DataFrame:
        """Tasks by methods: each method minus ``reference`` on the same seeds
        (:func:`~papers.claims.compare`, oriented so that positive is better),
        ``"+1.23 ± 0.45 (outcome)"``, the outcome in ``words`` (:data:`~papers.claims.OUTCOMES` by
        default)."""
        table, rows = self.scores(metric), {}
        for task in self.runs:
            by_method = table.loc[task]
            if reference not in by_method.index:
                raise ValueError(f"reference={reference!r} has no runs on {task!r}: methods {list(by_method.index)}")
            higher = self.tasks[task].higher_is_better if metric in (None, self.tasks[task].metric) \
                else not str(metric).endswith("loss")
            for method in by_method.index.drop(reference):
                outcome, text = compare(by_method.loc[method], by_method.loc[reference], higher, scale=scale,
                                        digits=digits)
                rows.setdefault(task, {})[method] = f"{text} ({(words or {}).get(outcome, outcome)})"
        return pd.DataFrame(rows).T

    def settings(self) -> pd.DataFrame:
        """Tasks by round settings (:data:`ROUND_SETTINGS`), with the model each trains."""
        return pd.DataFrame({name: {**task.settings, "model": task.model_label or "the paper's"}
                             for name, task in self.tasks.items() if name in self.runs}).T

    def diverged(self) -> pd.DataFrame:
        """One row per run that diverged: task, method, seed and the round."""
        return pd.DataFrame([{"task": task, "method": method, "seed": seed, "diverged at round": h.diverged_round}
                             for task, by_method in self.runs.items() for method, histories in by_method.items()
                             for seed, h in zip(self.seeds, histories) if h.diverged],
                            columns=["task", "method", "seed", "diverged at round"])

    def seconds(self) -> pd.DataFrame:
        """Methods by tasks: the mean wall time of a run in seconds (a run read from the store shows the time it
        took when it was computed; runs computed in one pass share its time)."""
        return self._mean(lambda h: float(h.frame["seconds"].sum()))

    def at_round(self, metric: str, round: int = 1) -> pd.DataFrame:
        """Methods by tasks: ``metric`` at ``round``, the mean over the seeds."""
        return self._mean(lambda h: float(h.frame.loc[round, metric]))

    def _mean(self, value: Callable[[History], float]) -> pd.DataFrame:
        return pd.DataFrame({task: {method: sum(map(value, runs)) / len(runs) for method, runs in by_method.items()}
                             for task, by_method in self.runs.items()})


def window_score(history: History, metric: str, evaluations: int = SCORE_EVALUATIONS,
                 evaluated: str = "test_accuracy") -> float:
    """The score of a run: ``metric`` averaged over the rounds of its last ``evaluations`` evaluations (the rounds
    where ``evaluated`` was measured, round 0 left out; all of them when there are fewer), so a test metric is the
    mean of the last ``evaluations`` evaluations and a per-round quantity (``train_loss``) the mean over the same
    rounds.  NaN for a run that diverged."""
    frame = _columns(history, metric, evaluated)
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


def _columns(history: History, *names: str) -> pd.DataFrame:
    """``history``'s frame, once ``history`` is a History with the columns ``names``."""
    if not isinstance(history, History):
        raise TypeError(f"history={type(history).__name__} must be a fedcore History")
    for name in names:
        if name not in history.frame:
            raise ValueError(f"{name!r} is not a column of the history: {list(history.frame.columns)}")
    return history.frame


def half_decades(low: float, high: float) -> list[float]:
    """``10^(k/2)`` for every half-decade from ``10^low`` to ``10^high`` (log10 exponents, multiples of 0.5):
    ``half_decades(-1, 0.5)`` -> ``[0.1, 0.316, 1.0, 3.16]``."""
    low, high = check_number("low", low), check_number("high", high)
    if low > high or (2 * low) % 1 or (2 * high) % 1:
        raise ValueError(f"low={low:g}, high={high:g} must be multiples of 0.5 with low <= high")
    return [float(10 ** (k / 2)) for k in range(int(2 * low), int(2 * high) + 1)]


def late_gain(history: History, metric: str = "test_accuracy", fraction: float = 1 / 3, evaluations: int = 1) -> float:
    """How much a run still gained at its end: the mean of ``metric``'s last ``evaluations`` evaluations minus the
    mean of the ``evaluations`` ending at the last one at or before round ``(1 - fraction) T`` (with
    ``SCORE_EVALUATIONS``: the score's window at the end against the same window at the cut, less noisy than one
    evaluation each).  A run that has plateaued gains about 0; NaN if it diverged; for a loss, a negative gain is
    progress."""
    _columns(history, metric)
    check_range("fraction", fraction, 0, 1, low_closed=False)
    evaluations = check_int("evaluations", evaluations, 1)
    if history.diverged:
        return math.nan
    column = history.frame[metric].dropna()
    last = int(column.index.max())
    before = column[column.index <= last - fraction * last]
    if before.empty:
        raise ValueError(f"fraction={fraction!r}: no evaluation of {metric!r} at or before round "
                         f"{last - fraction * last:g} of {last}; give a larger run or a smaller fraction in (0, 1)")
    return float(column.iloc[-evaluations:].mean() - before.iloc[-evaluations:].mean())


def window_rounds(settings: Mapping[str, Any], evaluations: int = SCORE_EVALUATIONS) -> str:
    """The rounds :func:`window_score` averages over, for round settings ``settings``: e.g. ``"rounds 25-40"``."""
    rounds, every = int(settings["rounds"]), int(settings["eval_every"]) or int(settings["rounds"])
    evaluated = sorted({*range(every, rounds + 1, every), rounds})
    first = evaluated[-evaluations - 1] + 1 if len(evaluated) > evaluations else 1
    return f"rounds {first}-{rounds}, the last {min(evaluations, len(evaluated))} evaluations"


def score_table(results: Mapping[str, Mapping[str, Sequence[History]]],
                score: Callable[[History], float] | Mapping[str, Callable[[History], float]],
                seeds: Sequence[int]) -> pd.DataFrame:
    """One row per (task, method) and one column per seed: ``score`` (one for every task, or ``{task: score}``)
    of each run of ``results`` (``{task: {method: [History of each seed]}}``)."""
    rows = {}
    for task, by_method in results.items():
        scorer = score[task] if isinstance(score, Mapping) else score
        for method, histories in by_method.items():
            if len(histories) != len(seeds):
                raise ValueError(f"{task}/{method} has {len(histories)} runs for {len(seeds)} seeds")
            rows[(task, method)] = [scorer(history) for history in histories]
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(seeds))
    table.index = pd.MultiIndex.from_tuples(table.index, names=["task", "method"])
    table.columns.name = "seed"
    return table


def mean_sd(table: pd.DataFrame, scale: float = 1.0, digits: int = 2) -> pd.DataFrame:
    """Methods by tasks, each cell ``"mean ± sd"`` over the seeds of :func:`score_table`'s ``table`` (times
    ``scale``: 100 for percent); a (task, method) with a diverged seed shows how many diverged."""
    cells = table.apply(lambda values: mean_sd_cell(values, scale, digits), axis=1).unstack("task")
    return cells.reindex(index=list(dict.fromkeys(table.index.get_level_values("method"))),
                         columns=list(dict.fromkeys(table.index.get_level_values("task"))))


def mean_sd_cell(values: Sequence[float] | pd.Series, scale: float = 1.0, digits: int = 2) -> str:
    """``"81.23 ± 0.45"``: the mean ± standard deviation (``ddof = 1``) of one score per seed, times ``scale``; only
    the mean for one seed; ``"1 of 3 diverged"`` where a seed diverged (NaN)."""
    values = pd.Series(values, dtype=float)
    finite = values.dropna() * scale
    if len(finite) < len(values):
        return f"{len(values) - len(finite)} of {len(values)} diverged"
    sd = f" ± {finite.std(ddof=1):.{digits}f}" if len(finite) > 1 else ""
    return f"{finite.mean():.{digits}f}{sd}"


def near_best(values: Sequence[float] | pd.Series, within: float, higher_is_better: bool = True) -> np.ndarray:
    """A mask of the ``values`` within ``within`` of the best of them (NaN, a diverged run, never is)."""
    check_range("within", within, 0)
    array = np.asarray(values, dtype=float)
    if not np.isfinite(array).any():
        return np.zeros(array.shape, dtype=bool)
    if higher_is_better:
        return np.nan_to_num(array, nan=-np.inf) >= np.nanmax(array) - within
    return np.nan_to_num(array, nan=np.inf) <= np.nanmin(array) + within


def near_best_by_column(table: pd.DataFrame, within: float, higher_is_better: bool = True) -> np.ndarray:
    """:func:`near_best` of each column of ``table`` (e.g. each method's scores over learning rates): a boolean
    array of ``table``'s shape."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table={type(table).__name__} must be a DataFrame (rows: values, columns: methods)")
    masks = [near_best(table[column].to_numpy(dtype=float), within, higher_is_better) for column in table]
    return np.stack(masks, axis=1) if masks else np.zeros(table.shape, bool)


def mean_over_seeds(table: pd.DataFrame) -> pd.DataFrame:
    """A (method, seed) table as rows by methods: the mean over the seeds (NaN where a seed diverged)."""
    return table.T.groupby(level=0, sort=False).mean().T if table.columns.nlevels > 1 else table


def sweep_table(task: Task, builds: Mapping[str, Builder], name: str, values: Sequence[Any], seeds: Sequence[int],
                *, store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """Each method's ``build(**{name: value})`` (``builds``: ``{method: build}``) on ``task`` at every value of
    ``values`` from every seed (:func:`grid_scores`), scored by :meth:`Task.score`: rows the values (named ``name``),
    columns ``(method, seed)``; NaN where a run diverged or was refused."""
    seeds = check_seeds("seeds", seeds)
    starts = task.initial(seeds)
    return by_method_seed({(method, seed): column.reindex(list(values)) for method, build in builds.items() for seed,
                           column in grid_scores(task, build, {name: list(values)}, seeds, Selection(), starts=starts,
                                                 store=store, progress=progress).items()}, name)


def outward_sweep(score_at: Callable[[list[float]], pd.DataFrame], values: Sequence[float], within: float,
                  around: float = 1.0) -> pd.DataFrame:
    """A sweep run outward from ``around`` (the default a user gets), one value of ``values`` at a time on each side,
    and stopped on a side at the first value where every seed, and the mean over the seeds, lies more than
    ``within`` below its best so far (or diverged).  On a curve that falls away from its best on both sides, the
    values beyond can neither join the good range around ``around`` (:func:`good_span`, its own best or a higher
    reference) nor carry its ends (:func:`span_decades`): the widths equal the whole grid's, at a fraction of its
    runs.  ``score_at(values)`` runs those values: rows the values, one column per seed (NaN: diverged).  Returns a
    row for every value of ``values`` (sorted), NaN where not run."""
    check_range("within", within, 0)
    values = sorted(float(check_number("values", value)) for value in values)
    if around not in values:
        raise ValueError(f"around={around!r} is not one of values={values}: the sweep starts from it")
    last = dict.fromkeys((-1, 1), values.index(around))  # the last index run on each side
    table = score_at([around])
    open_sides = [side for side in last if 0 <= last[side] + side < len(values)]
    while open_sides:
        for side in open_sides:
            last[side] += side
        table = pd.concat([table, score_at([values[last[side]] for side in open_sides])])
        open_sides = [side for side in open_sides if not _fallen(table, values[last[side]], within)
                      and 0 <= last[side] + side < len(values)]
    return table.reindex(values)


def _fallen(table: pd.DataFrame, value: float, within: float) -> bool:
    """Whether every seed at ``value`` (a row of ``table``), and their mean, lies more than ``within`` below its
    best over the table's rows, or diverged."""
    row = table.loc[value]
    seeds_fallen = bool(((row < table.max() - within) | row.isna()).all())
    return seeds_fallen and not row.mean(skipna=False) >= table.mean(axis=1, skipna=False).max() - within


def best_value(table: pd.DataFrame, method: str | None = None) -> float:
    """The value (a rate, a constant, a multiplier; a row of ``table``) with the best mean over the seeds: of
    ``method``'s columns of a ``(method, seed)`` table, or of a table with one column per seed."""
    columns = table if method is None else table[method]
    return float(columns.mean(axis=1, skipna=False).idxmax())


def by_method_seed(columns: Mapping[tuple[str, int], pd.Series], index: str) -> pd.DataFrame:
    """``{(method, seed): scores over the swept values}`` as one table: rows the values (named ``index``), columns
    ``(method, seed)``, as :func:`mean_over_seeds` and the robustness figures read it."""
    table = pd.DataFrame(dict(columns))
    table.columns = pd.MultiIndex.from_tuples(table.columns, names=["method", "seed"])
    return table.rename_axis(index)


def good_span(column: pd.Series, within: float, around: float = 1.0,
              best: float | None = None) -> tuple[float, float] | None:
    """The contiguous multipliers around ``around`` (the default a user gets) whose score lies within ``within``
    of the column's best (or of ``best``, another reference: the best method's score): ``(lowest, highest)``, or
    None when ``around`` itself is not within (or every run diverged).  A NaN (diverged) multiplier ends the
    span."""
    check_range("within", within, 0)
    column = column.sort_index().astype(float)
    if around not in column.index:
        raise ValueError(f"around={around!r} is not one of the multipliers {list(column.index)}")
    if column.isna().all():
        return None
    good = (column >= (column.max() if best is None else best) - within).to_numpy()
    position = list(column.index).index(around)
    if not good[position]:
        return None
    low = high = position
    while low > 0 and good[low - 1]:
        low -= 1
    while high < len(good) - 1 and good[high + 1]:
        high += 1
    return float(column.index[low]), float(column.index[high])


def span_width(column: pd.Series, within: float, around: float = 1.0) -> float:
    """The width in decades of :func:`good_span` around ``around`` (a default, or a tuned value): 0 for the value
    alone, and 0 when ``around`` itself is not within ``within`` of the best (the setting must be tuned) or every
    run diverged."""
    span = good_span(column, within, around)
    return 0.0 if span is None else float(np.log10(span[1] / span[0]))


def span_decades(column: pd.Series, within: float, around: float = 1.0, best: float | None = None) -> float:
    """The width in decades of :func:`good_span`, each end carried on towards the next multiplier out to where the
    score crosses the threshold (the column's best, or ``best``, minus ``within``), linearly in log10 of the
    multiplier: a width that moves with the scores rather than in grid steps, so that two seeds rarely tie.  0 when
    ``around`` itself is not within; a grid end or a diverged (NaN) neighbour ends the span at its multiplier."""
    span = good_span(column, within, around, best)
    if span is None:
        return 0.0
    column = column.sort_index().astype(float)
    threshold = (column.max() if best is None else best) - within
    logs, scores = np.log10(column.index.to_numpy(dtype=float)), column.to_numpy()
    low, high = list(column.index).index(span[0]), list(column.index).index(span[1])
    width = logs[high] - logs[low]
    for inner, outer in ((low, low - 1), (high, high + 1)):
        if 0 <= outer < len(scores) and np.isfinite(scores[outer]):  # scores[outer] < threshold <= scores[inner]
            width += abs(logs[outer] - logs[inner]) * (scores[inner] - threshold) / (scores[inner] - scores[outer])
    return float(width)


def span_decades_by_seed(table: pd.DataFrame, within: float, around: float = 1.0,
                         best: Mapping[Any, float] | None = None) -> list[float]:
    """:func:`span_decades` of each column of ``table`` (one per seed, rows the swept values; NaN: diverged or not
    run) around ``around``, against the column's own best or ``best[seed]`` (a reference shared by the methods:
    the best score any method reached on that seed)."""
    return [span_decades(table[seed], within, around, None if best is None else best[seed]) for seed in table]


def grids_at(scale: str, grids: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict[str, dict[str, list[Any]]]:
    """``grids`` at ``scale``: as they are, except at ``smoke`` (the tests' scale), where each axis keeps its
    first and last values only."""
    check_choice("scale", scale, ("smoke", "small", "medium", "paper"))
    if scale != "smoke":
        return {method: {key: list(values) for key, values in grid.items()} for method, grid in grids.items()}
    return {method: {key: list(dict.fromkeys([values[0], values[-1]])) for key, values in grid.items()}
            for method, grid in grids.items()}


def on_edge(chosen: Mapping[str, Mapping[str, Any]],
            grids: Mapping[str, Mapping[str, Sequence[Any]]]) -> dict[str, list[str]]:
    """``{method: [hyperparameters]}``: the ``chosen`` values that sit on an end of their axis of ``grids`` (the best
    may lie beyond it: widen the grid or say so); an axis of one value has no edge.  A value written to 7
    significant digits (``0.0316228`` for ``10**-1.5``) is its end."""
    edges = {}
    for method, point in chosen.items():
        grid = grids.get(method, {})
        names = [name for name, value in point.items() if len(grid.get(name, ())) > 1 and any(
            math.isclose(value, end, rel_tol=1e-6) for end in (min(grid[name]), max(grid[name])))]
        if names:
            edges[method] = names
    return edges


def grid_scores(task: Task, build: Builder, grid: Mapping[str, Sequence[Any]], seeds: Sequence[int],
                selection: Selection | None = None, *, starts: Mapping[int, Tensor] | None = None,
                store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """Every point of ``grid`` (keywords of ``build``) on ``task`` from every seed's initial model (``starts``, else
    drawn here) through :func:`fedcore.sweep`, each run scored by :meth:`Task.tuning_score` with ``selection``: one
    row per point, one column per seed (NaN where a run diverged or was refused)."""
    return _grid_runs(task, build, grid, seeds, selection, starts=starts, store=store, progress=progress)[0]


def _grid_runs(task: Task, build: Builder, grid: Mapping[str, Sequence[Any]], seeds: Sequence[int],
               selection: Selection | None = None, *, starts: Mapping[int, Tensor] | None = None,
               store: Store | None = None, progress: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """:func:`grid_scores`'s table, and why runs gave no score: the distinct errors of the points ``build``
    refused and of the runs that failed (the sweep's ``error`` column)."""
    seeds = check_seeds("seeds", seeds)
    runs = sweep(task.problem(seeds[0]), build, {key: list(values) for key, values in grid.items()}, seeds=seeds,
                 x0=task.initial(seeds) if starts is None else starts, store=store, progress=progress,
                 summary=lambda history: {"score": task.tuning_score(history, selection)},
                 **task.tuning_settings(selection))
    runs["seed"] = runs["seed"] if "seed" in runs else seeds[0]  # sweep drops the column for one seed
    runs["score"] = runs["score"] if "score" in runs else math.nan
    table = runs.pivot_table(index=list(grid), columns="seed", values="score", dropna=False)
    errors = list(dict.fromkeys(runs["error"].dropna())) if "error" in runs else []
    return table.reindex(columns=seeds).rename_axis(columns="seed"), errors


@dataclass(frozen=True)
class Tuning:
    """What :func:`tune` found: the ``grids`` searched, per method the ``chosen`` point, and ``tables``: every
    point's score per seed with their mean (``"score"``, NaN where a seed diverged); ``higher_is_better`` says
    which end won; ``seeds``: the seeds it tuned on (:func:`bind` refuses to judge on them)."""

    chosen: dict[str, dict[str, Any]]
    tables: dict[str, pd.DataFrame]
    grids: Mapping[str, Mapping[str, Sequence[Any]]] = field(default_factory=dict)
    higher_is_better: bool = True
    seeds: tuple[int, ...] = ()

    def on_edge(self) -> dict[str, list[str]]:
        """``{method: [hyperparameters]}`` chosen at an end of their axis (:func:`on_edge`)."""
        return on_edge(self.chosen, self.grids)

    def merged(self, other: Tuning) -> Tuning:
        """This search followed by ``other`` on the same seeds and rule (a second stage over more axes, around this
        one's choice): per method of ``other``, its best point where its mean score beats this one's chosen point's,
        else this one's; the grids hold both stages' axes, the tables both stages' points (``"<method>, stage 2"``)."""
        if other.seeds != self.seeds or other.higher_is_better != self.higher_is_better:
            raise ValueError(f"a second stage must tune on the same seeds and rule: seeds {other.seeds} vs "
                             f"{self.seeds}, higher_is_better {other.higher_is_better} vs {self.higher_is_better}")
        chosen, tables, grids = dict(self.chosen), dict(self.tables), dict(self.grids)
        sign = 1.0 if self.higher_is_better else -1.0
        for method, point in other.chosen.items():
            if (sign * other.tables[method]["score"]).max() > (sign * self.tables[method]["score"]).max():
                chosen[method] = point
            tables[f"{method}, stage 2"] = other.tables[method]
            first = dict(self.grids.get(method, {}))
            grids[method] = {**first, **{axis: values for axis, values in other.grids[method].items()
                                         if axis not in first}}
        return Tuning(chosen, tables, grids, self.higher_is_better, self.seeds)

    def chosen_table(self) -> pd.DataFrame:
        """Methods by hyperparameters: the chosen values, ``"0.1*"`` where a value sits at an end of an axis of
        more than two values (a wider grid might have chosen otherwise)."""
        edges = on_edge(self.chosen, {method: {key: values for key, values in grid.items() if len(values) > 2}
                                      for method, grid in self.grids.items()})
        return pd.DataFrame({method: {key: f"{value:g}{'*' if key in edges.get(method, []) else ''}"
                                      for key, value in point.items()}
                             for method, point in self.chosen.items()}).T.fillna("")

    def heatmap(self, method: str, rows: str, columns: str) -> pd.DataFrame:
        """``method``'s mean score over the seeds as a grid: ``rows`` by ``columns`` (two axes of its grid), the
        largest row value on top."""
        table = self.tables[check_choice("method", method, tuple(self.tables))]
        if sorted(table.index.names) != sorted([rows, columns]):
            raise ValueError(f"rows={rows!r}, columns={columns!r} must be the axes {list(table.index.names)}")
        grid = table["score"].unstack(columns)
        grid.columns.name = columns
        return grid.sort_index(ascending=False)


def beyond_edges(grid: Mapping[str, Sequence[Any]], point: Mapping[str, Any]) -> dict[str, float]:
    """``{axis: value}``: for each axis of ``grid`` of at least 3 positive numbers whose ``point`` value sits at
    an end, the next value beyond that end on the axis's own spacing there (the end times the ratio of the end to
    its neighbour: ``[0.01, 0.05, 0.1]`` continues with 0.2 above, 0.002 below)."""
    beyond = {}
    for axis, values in grid.items():
        ordered = sorted(values)
        if len(ordered) < 3 or not all(isinstance(v, (int, float)) and v > 0 for v in ordered):
            continue
        if math.isclose(point[axis], ordered[-1]):
            beyond[axis] = float(f"{ordered[-1] * ordered[-1] / ordered[-2]:.12g}")
        elif math.isclose(point[axis], ordered[0]):
            beyond[axis] = float(f"{ordered[0] * ordered[0] / ordered[1]:.12g}")
    return beyond


def tune(task: Task, builders: Mapping[str, Builder], grids: Mapping[str, Mapping[str, Sequence[Any]]],
         seeds: Sequence[int], *, selection: Selection | None = None, store: Store | None = None,
         progress: bool = False, widen: int = 0) -> Tuning:
    """Grid search over seeds: every point of ``grids[method]`` (keywords of ``builders[method]``) on ``task`` from
    every seed (:func:`grid_scores`), scored by the task's :class:`Selection` (or ``selection``), the point with the
    best mean over the seeds chosen (a point that diverged on a seed never wins).  With ``widen`` > 0, an axis whose
    chosen value sits at an end is continued one value beyond it (:func:`beyond_edges`, the other axes as they
    are then) and the search goes on, at most ``widen`` times: a choice on an edge of the paper's grid is not
    taken as the best where the best lies beyond it.  The :class:`Tuning` keeps the grids as widened.  A grid with
    no point scored on every seed is a ``ValueError`` that gives why: the builder's refusals and the runs' errors
    (the first three distinct ones), else that every point diverged."""
    seeds = check_seeds("seeds", seeds)
    widen = check_int("widen", widen, 0)
    unknown = [method for method in grids if method not in builders]
    if unknown:
        raise ValueError(f"grids has {unknown}, which have no builder; builders has {list(builders)}")
    higher, starts = task.rule(selection).higher_is_better, task.initial(seeds)
    chosen, tables, searched = {}, {}, {}
    for method, grid in grids.items():
        grid = {key: list(values) for key, values in grid.items()}
        table, errors = _grid_runs(task, builders[method], grid, seeds, selection, starts=starts, store=store,
                                   progress=progress)
        for extension in range(widen + 1):
            table["score"] = table[seeds].mean(axis=1, skipna=False)
            if table["score"].isna().all():
                why = "; ".join(errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "") \
                    if errors else "every run finished, and each point diverged on at least one seed"
                raise ValueError(f"every point of the grid of {method!r} diverged on some seed or was refused: {why}")
            best = table["score"].idxmax() if higher else table["score"].idxmin()
            point = dict(zip(grid, best if isinstance(best, tuple) else (best,)))
            beyond = beyond_edges(grid, point) if extension < widen else {}
            for axis, value in beyond.items():  # one axis at a time: the corners of two widened axes are searched
                grid[axis] = sorted([*grid[axis], value])
                new = grid_scores(task, builders[method], {**grid, axis: [value]}, seeds, selection, starts=starts,
                                  store=store, progress=progress)
                table = pd.concat([table.drop(columns="score", errors="ignore"), new]).sort_index()
            if not beyond:
                break
        chosen[method] = {key: value.item() if hasattr(value, "item") else value for key, value in point.items()}
        tables[method], searched[method] = table, grid
    return Tuning(chosen, tables, searched, higher, tuple(seeds))
