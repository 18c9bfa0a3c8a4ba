"""The notebooks' widget explorers: plain functions that compute, then draw.

Each is the callback of an ``ipywidgets`` explorer and also runs headless (the notebooks call it
once with fixed values, the tests call it as a function).  It runs the library
(:func:`fedcore.toy.server_optimizer_path`, :func:`fedcore.counterexample.run`) and hands the
results to a drawing function of :mod:`fedcore.plots`.  Each returns None, so
``ipywidgets.interact`` shows the figure once and nothing else.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt

from fedcore import algorithms, counterexample, models, plots
from fedcore.algorithms import fafed, local_adaptive
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_bool, check_choice, check_int, check_number, check_positive, check_range
from fedcore.problem import Problem
from fedcore.run import simulate
from fedcore.store import Store
from fedcore.toy import server_optimizer_path

MAX_STEPS = 10_000
"""The most rounds (server-optimizer explorer) or local steps (counterexample explorer) one call runs: a
widget reruns on every change, and 10,000 steps already take about 30 s (two runs, every step traced) and
draw more points than a figure can show apart; the notebooks' sliders stop at 1,000."""


def _drawn(explorer: Callable[..., Any]) -> Callable[..., Any]:
    """An explorer whose figure has at least two labelled ticks on every axis that shows tick labels, at every
    slider position (:func:`fedcore.plots.ensure_labelled_ticks`: a log axis spanning less than a decade would
    show one or none); the signature stays the explorer's, which ``ipywidgets.interactive`` reads."""

    @functools.wraps(explorer)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        result = explorer(*args, **kwargs)
        plots.ensure_labelled_ticks(plt.gcf())
        return result

    return drawn


def _check_steps(name: str, value: int) -> int:
    if check_int(name, value) > MAX_STEPS:
        raise ValueError(f"{name}={value} > {MAX_STEPS}: an explorer reruns on every widget change and draws every "
                         f"step; run fedcore.counterexample.run or fedcore.toy.server_optimizer_path for longer runs")
    return value


@_drawn
def explore_server_optimizer(
    optimizer: str = "adam", server_lr: float = 0.1, tau: float = 1e-3, beta1: float = 0.9,
    rounds: int = 50, reference: bool = True,
) -> None:
    """The server-optimizer explorer: path and loss gap of ``optimizer`` on the 2-D quadratic.

    Runs :func:`fedcore.toy.server_optimizer_path` and draws
    :func:`fedcore.plots.server_optimizer_panels`: the path over the loss contours and
    ``f(x_t) - f*`` against rounds (with FedAvg, server SGD at ``eta = 1``, as a grey reference
    when ``reference``), the final gap in the title.
    """
    _check_steps("rounds", rounds)
    check_bool("reference", reference)
    path = server_optimizer_path(optimizer, server_lr, beta1, tau, rounds)
    fedavg = server_optimizer_path("sgd", 1.0, rounds=rounds) if reference else None
    plots.server_optimizer_panels(path, fedavg, label=optimizer)


def disable_unused(explorer: Any, uses: Mapping[str, Sequence[str]], chooser: str = "optimizer") -> Any:
    """Grey out the sliders of ``explorer`` (an ``ipywidgets.interactive``) that the value of its ``chooser``
    widget does not use (``uses[value]``: the names it uses), now and whenever the choice changes.  Returns
    the explorer.  With :data:`fedcore.toy.SLIDERS_USED`, ``sgd`` greys out ``beta1`` and ``tau``."""
    controls = {widget._kwarg: widget for widget in explorer.kwargs_widgets}  # the keyword each widget sets
    if chooser not in controls:
        raise ValueError(f"chooser={chooser!r} is not one of the explorer's widgets {list(controls)}")
    choice = controls[chooser]
    unknown = sorted(set(uses) - set(getattr(choice, "options", uses)))
    if unknown:
        raise ValueError(f"uses names choices {unknown} that the {chooser!r} widget does not offer")

    def refresh(*_: Any) -> None:
        used = set(uses.get(choice.value, controls))
        for name, widget in controls.items():
            if name != chooser and hasattr(widget, "disabled"):
                widget.disabled = name not in used

    choice.observe(refresh, names="value")
    refresh()
    return explorer


@_drawn
def explore_counterexample(eta: float = 0.3, beta: float = 0.5, q: int = 1, rho: float = 0.01,
                           alpha: float = 0.5, steps: int = 300, store: Store | None = None) -> None:
    """The counterexample explorer: naive local-adaptive FedAvg (Wu et al., AAAI 2023, Alg. 1) and
    FAFED (Alg. 2) with the same ``eta``, ``beta`` and period ``q`` from ``x_0 = 10``, for ``steps``
    local steps (``steps // q`` rounds; FAFED also takes ``rho`` and its momentum ``alpha``).  With ``store`` (in a
    widget: ``store=ipywidgets.fixed(store)``) a setting drawn before is read back, not rerun.

    Draws :func:`fedcore.experiments.fafed.figures.counterexample_panels`: the mean model (thick) and the three
    clients' models (thin; client 1 dotted), and the global objective ``f`` at the mean.
    """
    check_positive("eta", eta)
    check_range("beta", beta, 0, 1)
    check_positive("rho", rho)
    check_range("alpha", alpha, 0, 1, low_closed=False, high_closed=True)
    _check_steps("steps", steps)
    if check_int("q", q) > steps:
        raise ValueError(f"q={q} > steps={steps}: a round is q local steps, so steps must be at least q")
    rounds = steps // q
    naive = counterexample.run(local_adaptive(eta, beta=beta), rounds, q, store=store)
    fixed = counterexample.run(fafed(eta, alpha=alpha, beta=beta, rho=rho), rounds, q, store=store)
    naive.algorithm, fixed.algorithm = "naive local-adaptive (Alg. 1)", "FAFED (Alg. 2)"
    from fedcore.experiments.fafed.figures import counterexample_panels

    counterexample_panels(naive, fixed, eta, beta)


FEDOPT_METHODS: dict[str, tuple[str, ...]] = {
    "fedavg": ("client_lr", "server_lr"),
    "fedavgm": ("client_lr", "server_lr", "beta1"),
    "fedadagrad": ("client_lr", "server_lr", "tau", "beta1"),
    "fedadam": ("client_lr", "server_lr", "tau", "beta1", "beta2"),
    "fedyogi": ("client_lr", "server_lr", "tau", "beta1", "beta2"),
}
"""The methods of the FedOpt explorer and the sliders each uses (FedAvgM takes ``beta1`` as its momentum);
:func:`disable_unused` greys out the others."""
LIVE_RUN = {"clients_per_round": 5, "local_steps": 5, "batch_size": 32, "eval_every": 5}
"""One live run of :func:`explore_fedopt`: 5 of 20 clients per round, 5 local steps of 32 samples."""


@functools.lru_cache(maxsize=1)
def live_problem() -> Problem:
    """Fashion-MNIST dealt to 20 clients by Dirichlet(0.5), with a logistic regression (7,850 parameters):
    a run of 30 rounds takes well under a second on 2 CPU cores.  Loaded once per process."""
    from fedcore.data import load_fashion_mnist

    return Problem(load_fashion_mnist(20, "dirichlet", 0, alpha=0.5),
                   models.make("logistic_regression", (1, 28, 28), 10, seed=0))


def _live_run(problem: Problem | None, **overrides: Any) -> tuple[Problem, dict[str, Any]]:
    """``problem`` (:func:`live_problem` when None) and :data:`LIVE_RUN`'s options fitted to it (no more clients
    per round than it has, no larger batch than its smallest client), with ``overrides`` (``store`` among them:
    a results store, so that a slider setting run before is read back): the explorers' runs."""
    problem = live_problem() if problem is None else problem
    if not isinstance(problem, Problem):
        raise TypeError(f"problem={type(problem).__name__} must be a fedcore.Problem or None")
    options = dict(LIVE_RUN, clients_per_round=min(LIVE_RUN["clients_per_round"], problem.data.num_clients),
                   batch_size=min(LIVE_RUN["batch_size"], int(problem.data.sizes.min())), progress=False)
    return problem, {**options, **overrides}


def fedopt_algorithm(method: str, client_lr: float, server_lr: float, tau: float = 1e-3, beta1: float = 0.9,
                     beta2: float = 0.99) -> Any:
    """The fedcore algorithm the FedOpt explorer runs for ``method`` (:data:`FEDOPT_METHODS`), given every
    slider's value (those ``method`` does not use are ignored)."""
    check_choice("method", method, FEDOPT_METHODS)
    if method == "fedavg":
        return algorithms.fedavg(client_lr, server_lr=server_lr)
    if method == "fedavgm":
        return algorithms.fedavgm(client_lr, server_lr=server_lr, beta=beta1)
    if method == "fedadagrad":
        return algorithms.fedadagrad(client_lr, server_lr=server_lr, beta1=beta1, tau=tau)
    return algorithms.make(method, client_lr=client_lr, server_lr=server_lr, beta1=beta1, beta2=beta2, tau=tau)


@_drawn
def explore_fedopt(method: str = "fedadam", client_lr: float = 0.1, server_lr: float = 0.01, tau: float = 1e-3,
                   beta1: float = 0.9, beta2: float = 0.99, rounds: int = 30, problem: Problem | None = None,
                   store: Store | None = None, settings: Mapping[str, Any] | None = None,
                   smooth: int = 1) -> None:
    """The FedOpt explorer: a federated run of ``method`` with the sliders' values beside FedAvg with the
    same client learning rate (server step 1), both from the same start and minibatches; draws their test
    accuracy and training loss (:func:`fedcore.plots.fedopt_panels`, the loss's running mean over ``smooth``
    rounds).  ``problem`` defaults to :func:`live_problem` and its round options to :data:`LIVE_RUN`, which
    ``settings`` (``clients_per_round``, ``local_steps``, ``batch_size``, ``eval_every``, ``weighting``, e.g. a
    task's) replace; with ``store`` a setting run before is read back."""
    algorithm = fedopt_algorithm(method, client_lr, server_lr, tau, beta1, beta2)
    extra = {} if settings is None else dict(settings)
    unknown = sorted(set(extra) - {"clients_per_round", "local_steps", "batch_size", "eval_every", "weighting"})
    if unknown:
        raise ValueError(f"settings has {unknown}: it takes clients_per_round, local_steps, batch_size, eval_every "
                         "and weighting (the rounds come from rounds=)")
    problem, options = _live_run(problem, **extra, rounds=_check_steps("rounds", rounds), store=store)
    runs = {method: simulate(problem, algorithm, **options),
            "fedavg (server lr 1)": simulate(problem, algorithms.fedavg(client_lr), **options)}
    plots.fedopt_panels(runs, title=f"{method}: client lr {client_lr:g}, server lr {server_lr:g}" +
                        (f", tau {tau:g}" if "tau" in FEDOPT_METHODS[method] else ""), smooth=smooth)


def grid_options(values: Sequence[float]) -> list[tuple[str, float]]:
    """A grid's values as a ``SelectionSlider``'s options: each value with a short label (``0.316`` for
    ``10^-0.5``, three significant digits), so that the slider's readout shows the whole value, not a float cut
    off (``0.3162277660…``).  Labels must tell the values apart: a grid finer than three digits is refused."""
    for value in values:
        check_number(f"values={list(values)}: each value", value)
    options = [(f"{float(value):.3g}", value) for value in values]
    labels = [label for label, _ in options]
    if len(set(labels)) != len(labels):
        raise ValueError(f"values={list(values)} give the same label twice at three digits ({labels})")
    return options


@_drawn
def explore_tuning(method: str, tau: float, client_lr: float, server_lr: float, grids: Mapping[float, Any],
                   curve: Any) -> None:
    """The tuning-grid explorer: ``grids[tau][method]`` as a heat map (Reddi et al., Figures 2 and 6) with the
    chosen cell outlined in black, and that cell's learning curve, ``curve(method, tau, client_lr, server_lr)``
    (a :class:`fedcore.History`; with the results store the grid's runs are read back, not rerun).  One colour
    scale for every grid of ``grids``; the good cells (outlined in red) are those at or above the threshold of
    ``grids[tau]`` (:func:`fedcore.experiments.fedopt.tuning.good_threshold`)."""
    if not isinstance(grids, Mapping) or not all(isinstance(by_method, Mapping) for by_method in grids.values()):
        raise TypeError(f"grids must be {{tau: {{method: grid}}}} (tuning.heatmaps' maps), got {type(grids).__name__}")
    if tau not in grids:
        raise ValueError(f"tau={tau!r} has no grids; grids has tau in {list(grids)}")
    if method not in grids[tau]:
        raise ValueError(f"method={method!r} has no grid at tau={tau:g}; there are {list(grids[tau])}")
    grid = grids[tau][method]
    if client_lr not in list(grid.columns) or server_lr not in list(grid.index):
        raise ValueError(f"client_lr={client_lr!r}, server_lr={server_lr!r} is not a cell of the grid "
                         f"(client: {list(grid.columns)}, server: {list(grid.index)})")
    if not callable(curve):
        raise TypeError(f"curve={curve!r} must be a function (method, tau, client_lr, server_lr) -> History")
    every = [g for by_method in grids.values() for g in by_method.values()]
    limits = (min(float(g.min().min()) for g in every), max(float(g.max().max()) for g in every))
    title = f"{method}, tau {tau:g}" if "tau" in FEDOPT_METHODS.get(method.lower(), ()) else method
    from fedcore.experiments.fedopt.figures import tuning_panels
    from fedcore.experiments.fedopt.tuning import good_threshold

    tuning_panels(grid, curve(method, tau, client_lr, server_lr), client_lr, server_lr, title,
                  good_threshold(grids[tau]), limits)


LIVE_TASK = ("Fashion-MNIST on 20 clients by Dirichlet(0.5), a logistic regression (7,850 parameters); "
             "test accuracy on the 10,000 test images")
"""What the explorers' live runs train (:func:`live_problem`), as their figures say it."""
PADAMFED_READINGS = ("local rate", "every rate")


@_drawn
def explore_padamfed(clients_per_round: int = 5, local_steps: int = 5, rounds: int = 30, multiplier: float = 1.0,
                     fedavg_lr: float = 0.1, reading: str = "local rate", problem: Problem | None = None,
                     store: Store | None = None) -> dict[str, dict[str, float]]:
    """The PAdaMFed explorer: the step sizes Theorems 1 and 2 give for S = ``clients_per_round``,
    K = ``local_steps``, T = ``rounds``, times ``multiplier`` on ``eta`` alone (``reading="local rate"``) or on
    ``eta`` and ``gamma`` (``"every rate"``, notebook 02's two readings), and a live run of PAdaMFed and
    PAdaMFed-VR at those values beside FedAvg at ``fedavg_lr``, from the same start and minibatches, on
    :data:`LIVE_TASK` (the title says it).  Returns the step sizes ``{"PAdaMFed": {eta, gamma, beta},
    "PAdaMFed-VR": ...}``."""
    problem, _ = _live_run(problem)
    check_int("clients_per_round", clients_per_round, high=problem.data.num_clients)
    check_choice("reading", reading, PADAMFED_READINGS)
    sizes = dict(zip(("clients_per_round", "local_steps", "rounds"),
                     (clients_per_round, _check_steps("local_steps", local_steps), _check_steps("rounds", rounds))))
    steps = {}
    for name, variant in (("PAdaMFed", "padamfed"), ("PAdaMFed-VR", "padamfed_vr")):
        values = theory_hyperparameters(variant, **sizes, multiplier=multiplier)
        if reading == "every rate":
            values["gamma"] *= multiplier
        steps[name] = values
    _, options = _live_run(problem, **sizes, weighting="uniform", eval_every=max(1, rounds // 10), store=store)
    runs = {name: simulate(problem, factory(**sizes, **steps[name]), **options)
            for name, factory in (("PAdaMFed", algorithms.padamfed), ("PAdaMFed-VR", algorithms.padamfed_vr))}
    runs[f"FedAvg (lr {fedavg_lr:g})"] = simulate(problem, algorithms.fedavg(check_positive("fedavg_lr", fedavg_lr)),
                                                  **options)
    plots.fedopt_panels(runs, title=f"{LIVE_TASK}\nS={clients_per_round}, K={local_steps}, T={rounds}, x{multiplier:g} "
                        f"on the {reading}: " + "; ".join(f"{name}: eta {s['eta']:.3g}, gamma {s['gamma']:.3g}, "
                                                          f"beta {s['beta']:.3g}" for name, s in steps.items()))
    return steps


@_drawn
def explore_remark2(eta1: float = 0.5, eta2: float = 0.05, x0: float = 0.5, tilt: float = 3.0) -> dict[str, Any]:
    """FedLi's Remark 2 (our instance, ``fedcore.experiments.fedli.theory.REMARK2``): one gradient step of size
    ``eta1`` on client 1's ``(x^2 - 1)^2 + tilt x`` and ``eta2`` on client 2's ``(x^2 - 1)^2 - tilt x`` from ``x0``,
    and their average, drawn on the three curves; the title says who descends.  Returns the step's numbers."""
    from fedcore.experiments.fedli.theory import remark2_picture, remark2_step

    step = remark2_step(eta1, eta2, x0, tilt)
    from fedcore.experiments.fedli.figures import remark2

    ax = remark2(*remark2_picture(step, tilt))
    verdicts = [f"client {i} {'descends' if step[f'client {i} descends'] else 'ascends'}" for i in (1, 2)]
    ax.set_title(", ".join(verdicts) + f"; the average {'descends' if step['global descends'] else 'ASCENDS'}: "
                 f"f {step['f(x0)']:.3f} -> {step['f(x_bar)']:.3f}", fontsize="medium")
    return step


FEDLI_LU_CLIENT_LR = 0.1
"""The client rate of FedLi-LU's SGD clients in the FedLi explorer (fixed: the slider moves the baselines' rate)."""


@_drawn
def explore_fedli(client_lr: float = 0.1, rounds: int = 20, problem: Problem | None = None,
                  store: Store | None = None) -> None:
    """The FedLi explorer: FedAvg and FedExP at the slider's client rate beside FedLi-LS (Armijo clients: no rate)
    and FedLi-LU (its clients at :data:`FEDLI_LU_CLIENT_LR`, its server step computed), on :func:`live_problem`;
    only FedAvg and FedExP depend on the slider."""
    check_positive("client_lr", client_lr)
    problem, options = _live_run(problem, rounds=_check_steps("rounds", rounds), store=store)
    runs = {"FedLi-LS (server step 1)": algorithms.fedli_ls(),
            f"FedLi-LU (clients' lr {FEDLI_LU_CLIENT_LR:g})": algorithms.fedli_lu(FEDLI_LU_CLIENT_LR),
            f"FedAvg (lr {client_lr:g})": algorithms.fedavg(client_lr),
            f"FedExP (lr {client_lr:g})": algorithms.fedexp(client_lr)}
    plots.fedopt_panels({name: simulate(problem, algorithm, **options) for name, algorithm in runs.items()},
                        title=f"the baselines' client learning rate: {client_lr:g}", percent=True)
