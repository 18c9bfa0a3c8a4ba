"""The notebooks' widget explorers: plain functions that compute, then draw.

Each is the callback of an ``ipywidgets`` explorer and also runs headless (the notebooks call it
once with fixed values, the tests call it as a function).  It runs the library
(:func:`fedcore.toy.server_optimizer_path`, :func:`fedcore.counterexample.run`) and hands the
results to a drawing function of :mod:`fedcore.plots`.  Each returns None, so
``ipywidgets.interact`` shows the figure once and nothing else.
"""

from __future__ import annotations

from fedcore import counterexample, plots
from fedcore.algorithms import fafed, local_adaptive
from fedcore.checks import check_int
from fedcore.toy import server_optimizer_path


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
    path = server_optimizer_path(optimizer, server_lr, beta1, tau, rounds)
    fedavg = server_optimizer_path("sgd", 1.0, rounds=rounds) if reference else None
    plots.server_optimizer_panels(path, fedavg, label=optimizer)


def explore_counterexample(eta: float = 0.3, beta: float = 0.5, q: int = 1, rho: float = 0.01,
                           alpha: float = 0.5, steps: int = 300) -> None:
    """The counterexample explorer: naive local-adaptive FedAvg (Wu et al., AAAI 2023, Alg. 1) and
    FAFED (Alg. 2) with the same ``eta``, ``beta`` and period ``q`` from ``x_0 = 10``, for ``steps``
    local steps (``steps // q`` rounds; FAFED also takes ``rho`` and its momentum ``alpha``).

    Draws :func:`fedcore.plots.counterexample_panels`: the mean model (thick) and the three
    clients' models (thin; client 1 dotted), and the global objective ``f`` at the mean.
    """
    check_int("steps", steps)
    rounds = max(1, steps // check_int("q", q))
    naive = counterexample.run(local_adaptive(eta, beta), rounds, q)
    fixed = counterexample.run(fafed(eta, alpha=alpha, beta=beta, rho=rho), rounds, q)
    naive.algorithm, fixed.algorithm = "naive local-adaptive (Alg. 1)", "FAFED (Alg. 2)"
    plots.counterexample_panels(naive, fixed, eta, beta)
