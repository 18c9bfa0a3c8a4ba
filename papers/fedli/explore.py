"""Notebook 03's explorers (FedLi, arXiv 2408.17145): Remark 2's one step on two clients, and a live run of
FedLi-LS and FedLi-LU beside FedAvg and FedExP."""

from __future__ import annotations

from typing import Any

from fedcore import algorithms, plots
from fedcore.checks import check_positive
from fedcore.explore import check_steps, drawn, live_run
from fedcore.problem import Problem
from fedcore.run import simulate
from fedcore.store import Store
from papers.fedli.figures import remark2
from papers.fedli.theory import remark2_picture, remark2_step


@drawn
def explore_remark2(eta1: float = 0.5, eta2: float = 0.05, x0: float = 0.5, tilt: float = 3.0) -> dict[str, Any]:
    """FedLi's Remark 2 (our instance, ``papers.fedli.theory.REMARK2``): one gradient step of size
    ``eta1`` on client 1's ``(x^2 - 1)^2 + tilt x`` and ``eta2`` on client 2's ``(x^2 - 1)^2 - tilt x`` from ``x0``,
    and their average, drawn on the three curves; the title says who descends.  Returns the step's numbers."""
    step = remark2_step(eta1, eta2, x0, tilt)
    ax = remark2(*remark2_picture(step, tilt))
    verdicts = [f"client {i} {'descends' if step[f'client {i} descends'] else 'ascends'}" for i in (1, 2)]
    ax.set_title(", ".join(verdicts) + f"; the average {'descends' if step['global descends'] else 'ASCENDS'}: "
                 f"f {step['f(x0)']:.3f} -> {step['f(x_bar)']:.3f}", fontsize="medium")
    return step


FEDLI_LU_CLIENT_LR = 0.1
"""The client rate of FedLi-LU's SGD clients in the FedLi explorer (fixed: the slider moves the baselines' rate)."""


@drawn
def explore_fedli(client_lr: float = 0.1, rounds: int = 20, problem: Problem | None = None,
                  store: Store | None = None) -> None:
    """The FedLi explorer: FedAvg and FedExP at the slider's client rate beside FedLi-LS (Armijo clients: no rate)
    and FedLi-LU (its clients at :data:`FEDLI_LU_CLIENT_LR`, its server step computed), on
    :func:`~fedcore.explore.live_problem`; only FedAvg and FedExP depend on the slider."""
    check_positive("client_lr", client_lr)
    problem, options = live_run(problem, rounds=check_steps("rounds", rounds), store=store)
    runs = {"FedLi-LS (server step 1)": algorithms.fedli_ls(),
            f"FedLi-LU (clients' lr {FEDLI_LU_CLIENT_LR:g})": algorithms.fedli_lu(FEDLI_LU_CLIENT_LR),
            f"FedAvg (lr {client_lr:g})": algorithms.fedavg(client_lr),
            f"FedExP (lr {client_lr:g})": algorithms.fedexp(client_lr)}
    plots.fedopt_panels({name: simulate(problem, algorithm, **options) for name, algorithm in runs.items()},
                        title=f"the baselines' client learning rate: {client_lr:g}", percent=True)
