"""What a notebook runs at each scale: :class:`Scale` (the fields every paper fills in, each checked by the
kind its class declares, :class:`Kinds`) and :func:`scale_at`."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from fedcore.checks import (
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_positive,
    check_scale,
    check_seeds,
    plain_sequence,
)
from papers.claims import check_apart

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

def half_decades(low: float, high: float) -> list[float]:
    """``10^(k/2)`` for every half-decade from ``10^low`` to ``10^high`` (log10 exponents, multiples of 0.5):
    ``half_decades(-1, 0.5)`` -> ``[0.1, 0.316, 1.0, 3.16]``."""
    low, high = check_number("low", low), check_number("high", high)
    if low > high or (2 * low) % 1 or (2 * high) % 1:
        raise ValueError(f"low={low:g}, high={high:g} must be multiples of 0.5 with low <= high")
    return [float(10 ** (k / 2)) for k in range(int(2 * low), int(2 * high) + 1)]

