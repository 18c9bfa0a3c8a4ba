"""The notebooks' widget explorers: plain functions that compute, then draw.

Each is the callback of an ``ipywidgets`` explorer and also runs headless (the notebooks call it once with fixed
values, the tests call it as a function).  It runs the library (:func:`fedcore.toy.server_optimizer_path`) and hands
the results to a drawing function of :mod:`fedcore.plots`; each returns None, so ``ipywidgets.interact`` shows the
figure once and nothing else.  The papers' own explorers (``papers.<paper>.explore``) are built from the same parts:
:func:`drawn`, :func:`check_steps`, :func:`live_problem` and :func:`live_run`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt

from fedcore import models, plots
from fedcore.checks import check_bool, check_int, check_number
from fedcore.problem import Problem
from fedcore.toy import server_optimizer_path

MAX_STEPS = 10_000
"""The most rounds (server-optimizer explorer) or local steps (counterexample explorer) one call runs: a
widget reruns on every change, and 10,000 steps already take about 30 s (two runs, every step traced) and
draw more points than a figure can show apart; the notebooks' sliders stop at 1,000."""


def drawn(explorer: Callable[..., Any]) -> Callable[..., Any]:
    """An explorer whose figure has at least two labelled ticks on every axis that shows tick labels, at every
    slider position (:func:`fedcore.plots.ensure_labelled_ticks`: a log axis spanning less than a decade would
    show one or none); the signature stays the explorer's, which ``ipywidgets.interactive`` reads."""

    @functools.wraps(explorer)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        result = explorer(*args, **kwargs)
        plots.ensure_labelled_ticks(plt.gcf())
        return result

    return drawn


def check_steps(name: str, value: int) -> int:
    if check_int(name, value) > MAX_STEPS:
        raise ValueError(f"{name}={value} > {MAX_STEPS}: an explorer reruns on every widget change and draws every "
                         f"step; run fedcore.counterexample.run or fedcore.toy.server_optimizer_path for longer runs")
    return value


@drawn
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
    check_steps("rounds", rounds)
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


LIVE_RUN = {"clients_per_round": 5, "local_steps": 5, "batch_size": 32, "eval_every": 5}
"""One live run of an explorer (:func:`live_run`): 5 of 20 clients per round, 5 local steps of 32 samples."""


@functools.lru_cache(maxsize=1)
def live_problem() -> Problem:
    """Fashion-MNIST dealt to 20 clients by Dirichlet(0.5), with a logistic regression (7,850 parameters):
    a run of 30 rounds takes well under a second on 2 CPU cores.  Loaded once per process."""
    from fedcore.data import load_fashion_mnist

    return Problem(load_fashion_mnist(20, "dirichlet", 0, alpha=0.5),
                   models.make("logistic_regression", (1, 28, 28), 10, seed=0))


def live_run(problem: Problem | None, **overrides: Any) -> tuple[Problem, dict[str, Any]]:
    """``problem`` (:func:`live_problem` when None) and :data:`LIVE_RUN`'s options fitted to it (no more clients
    per round than it has, no larger batch than its smallest client), with ``overrides`` (``store`` among them:
    a results store, so that a slider setting run before is read back): the explorers' runs."""
    problem = live_problem() if problem is None else problem
    if not isinstance(problem, Problem):
        raise TypeError(f"problem={type(problem).__name__} must be a fedcore.Problem or None")
    options = dict(LIVE_RUN, clients_per_round=min(LIVE_RUN["clients_per_round"], problem.data.num_clients),
                   batch_size=min(LIVE_RUN["batch_size"], int(problem.data.sizes.min())), progress=False)
    return problem, {**options, **overrides}


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


LIVE_TASK = ("Fashion-MNIST on 20 clients by Dirichlet(0.5), a logistic regression (7,850 parameters); "
             "test accuracy on the 10,000 test images")
"""What the explorers' live runs train (:func:`live_problem`), as their figures say it."""
