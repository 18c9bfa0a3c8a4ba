"""What a run is asked to do, as one typed value: :class:`RunOptions`.

``simulate``, ``simulate_runs``, ``sweep`` and Flower's strategy take the same options, checked once here; the options
that decide a run's numbers (everything but ``rounds``, which the store keys apart so that a checkpoint of 2 rounds
resumes into a run of 4) are part of its identity (:meth:`RunOptions.identity`).  Users keep the keyword form
(``simulate(problem, algorithm, rounds=50, clients_per_round=10, local_steps=5, batch_size=32, seed=1)``), which
builds one with :meth:`RunOptions.of`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from fedcore.checks import check_choice, check_function, check_int, check_positive, check_seed

WEIGHTINGS = ("samples", "uniform")
BACKENDS = ("auto", "loop", "vmap")
SEED_DEFAULT = 0
"""``RunOptions.seed`` when not given: ``simulate_runs`` and ``sweep`` read any other with ``seeds=`` as a conflict."""
POSITIONAL = ("rounds", "clients_per_round", "local_steps", "batch_size")
"""The options a call may give by position, in this order: ``simulate(problem, algorithm, 50, 10, 5, 32)``."""


@dataclass(frozen=True)
class RunOptions:
    """The options of a federated run, checked when it is built.

    - ``rounds`` T, ``clients_per_round`` S (sampled without replacement each round), ``local_steps`` K and
      ``batch_size`` B (each client's K minibatches of B of its own samples);
    - ``eval_every``: the test set is evaluated before the first round, every ``eval_every`` rounds and after the
      last; 0 never (runs scored by their training loss);
    - ``weighting``: ``"samples"`` (``w_i = n_i / sum_S n_j``) or ``"uniform"``;
    - ``backend`` of the gradient oracle: ``"auto"``, ``"loop"`` or ``"vmap"`` (:class:`fedcore.params.GradientOracle`);
    - ``seed``: the run's random streams (:class:`fedcore.engine.streams.Streams`); ``simulate_runs`` and ``sweep``
      run every run with it when not given ``seeds=``, and refuse both (:meth:`seeds`);
    - ``diverge_above``: a training loss above it ends the run as diverged (a non-finite one always does); None, the
      default: no bound;
    - ``record``: ``record(x) -> {name: one real number}`` of a run's server model ``x [1, d]`` (a copy: changing it
      cannot change the run) before the first round and after every round, each name a column of the history, none
      of fedcore's own (``train_loss``, ...): called once per run, also in a pass of several, so batching cannot
      change it (a dataclass is keyed by its fields and code).
    """

    rounds: int
    clients_per_round: int
    local_steps: int
    batch_size: int
    eval_every: int = 1
    weighting: str = "samples"
    backend: str = "auto"
    seed: int = SEED_DEFAULT
    diverge_above: float | None = None
    record: Any = None

    def __post_init__(self) -> None:
        for name in POSITIONAL:
            object.__setattr__(self, name, check_int(name, getattr(self, name)))
        object.__setattr__(self, "eval_every", check_int("eval_every", self.eval_every, low=0))
        check_choice("weighting", self.weighting, WEIGHTINGS)
        check_choice("backend", self.backend, BACKENDS)
        object.__setattr__(self, "seed", check_seed("seed", self.seed))
        if self.diverge_above is not None:
            try:
                object.__setattr__(self, "diverge_above", check_positive("diverge_above", self.diverge_above))
            except ValueError as error:  # inf, nan, 0 or below
                raise ValueError(f"{error}: a bound is a finite training loss > 0; None (the default): a run never "
                                 "stops for its loss (only for a loss or model that is not finite)") from None
        if self.record is not None:
            check_function("record", self.record, "x")

    @classmethod
    def of(cls, args: tuple = (), options: RunOptions | None = None, caller: str = "simulate",
           **given: Any) -> RunOptions:
        """The options of a call: ``options`` (a :class:`RunOptions`) or the four :data:`POSITIONAL` ones by position
        and the rest by keyword (``given``; with ``options``, keywords replace its fields)."""
        if len(args) > len(POSITIONAL):
            raise TypeError(f"{caller}() takes at most {len(POSITIONAL)} options by position "
                            f"({', '.join(POSITIONAL)}), got {len(args)}")
        named = dict(zip(POSITIONAL, args))
        twice = sorted(set(named) & set(given))
        if twice:
            raise TypeError(f"{caller}() got {twice[0]} both by position and by keyword")
        given = {**named, **given}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError(f"{caller}() got an unknown option {unknown[0]!r}; the options are "
                            f"{', '.join(sorted(known))} (fedcore.RunOptions)")
        if options is not None:
            if not isinstance(options, RunOptions):
                raise TypeError(f"options={options!r} must be a fedcore.RunOptions")
            return replace(options, **given)
        missing = [name for name in POSITIONAL if name not in given]
        if missing:
            raise TypeError(f"{caller}() needs {', '.join(missing)} (or options=RunOptions(...))")
        return cls(**given)

    def seeds(self, seeds: Any, seed_given: bool, caller: str) -> tuple[Any, RunOptions]:
        """The seeds of a call of several runs (``simulate_runs``, ``sweep``), and these options with the default seed
        (the runs' seeds are the seeds): ``seeds`` when given (None: not given), otherwise ``[self.seed]``, the one
        seed of ``seed=`` or ``options=RunOptions(seed=...)``.  A seed given two ways is refused, naming both:
        ``seeds`` with ``seed=`` (``seed_given``), or with options whose seed is not the default 0."""
        if seeds is None:
            return [self.seed], replace(self, seed=SEED_DEFAULT)
        if seed_given or self.seed != SEED_DEFAULT:
            other = f"seed={self.seed!r}" if seed_given else f"options=RunOptions(seed={self.seed!r})"
            raise ValueError(f"{caller}() got seeds={seeds!r} and {other}: give the seeds one way, seeds=[...] (one "
                             "run per seed) or one seed by seed= or the options")
        return seeds, self

    def check(self, data: Any) -> RunOptions:
        """These options against a federated data set: S at most its N clients, B at most its pool of samples."""
        if self.clients_per_round > data.num_clients:
            raise ValueError(f"clients_per_round={self.clients_per_round} > num_clients={data.num_clients}: a round "
                             "samples at most the data's clients")
        pool, largest = data.inputs.shape[0], int(data.sizes.max())
        if self.batch_size > pool:
            raise ValueError(f"batch_size={self.batch_size} > {pool}, the training samples of the whole federation; a "
                             f"minibatch is drawn from one client (largest: {largest} samples)")
        return self

    def identity(self, backend: str) -> dict[str, Any]:
        """The options as a run's identity records them, with the backend the oracle chose for ``"auto"`` (a
        ``record`` only when there is one, so the identities of runs without one stay as they were)."""
        described = {"clients_per_round": self.clients_per_round, "local_steps": self.local_steps,
                     "batch_size": self.batch_size, "weighting": self.weighting, "eval_every": self.eval_every,
                     "diverge_above": self.diverge_above, "seed": self.seed, "backend": backend}
        return described if self.record is None else {**described, "record": self.record}
