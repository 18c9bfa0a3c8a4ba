"""Notebook 04's explorer: the counterexample (Wu et al., AAAI 2023, Section 3) run by the naive local-adaptive
FedAvg and by FAFED, drawn step by step."""

from __future__ import annotations

from fedcore import counterexample
from fedcore.algorithms import fafed, local_adaptive
from fedcore.checks import check_int, check_positive, check_range
from fedcore.explore import check_steps, drawn
from fedcore.store import Store
from papers.fafed.figures import counterexample_panels


@drawn
def explore_counterexample(eta: float = 0.3, beta: float = 0.5, q: int = 1, rho: float = 0.01,
                           alpha: float = 0.5, steps: int = 300, store: Store | None = None) -> None:
    """The counterexample explorer: naive local-adaptive FedAvg (Wu et al., AAAI 2023, Alg. 1) and
    FAFED (Alg. 2) with the same ``eta``, ``beta`` and period ``q`` from ``x_0 = 10``, for ``steps``
    local steps (``steps // q`` rounds; FAFED also takes ``rho`` and its momentum ``alpha``).  With ``store`` (in a
    widget: ``store=ipywidgets.fixed(store)``) a setting drawn before is read back, not rerun.

    Draws :func:`papers.fafed.figures.counterexample_panels`: the mean model (thick) and the three
    clients' models (thin; client 1 dotted), and the global objective ``f`` at the mean.
    """
    check_positive("eta", eta)
    check_range("beta", beta, 0, 1)
    check_positive("rho", rho)
    check_range("alpha", alpha, 0, 1, low_closed=False, high_closed=True)
    check_steps("steps", steps)
    if check_int("q", q) > steps:
        raise ValueError(f"q={q} > steps={steps}: a round is q local steps, so steps must be at least q")
    rounds = steps // q
    naive = counterexample.run(local_adaptive(eta, beta=beta), rounds, q, store=store)
    fixed = counterexample.run(fafed(eta, alpha=alpha, beta=beta, rho=rho), rounds, q, store=store)
    naive.algorithm, fixed.algorithm = "naive local-adaptive (Alg. 1)", "FAFED (Alg. 2)"
    counterexample_panels(naive, fixed, eta, beta)
