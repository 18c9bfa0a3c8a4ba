"""Notebook 02's explorer (Yan et al., ICLR 2025): the step sizes PAdaMFed's theorems give for S, K, T, and a
live run at them."""

from __future__ import annotations

from fedcore import algorithms, plots
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_choice, check_int, check_positive
from fedcore.explore import LIVE_TASK, check_steps, drawn, live_run
from fedcore.problem import Problem
from fedcore.run import simulate
from fedcore.store import Store

PADAMFED_READINGS = ("local rate", "every rate")


@drawn
def explore_padamfed(clients_per_round: int = 5, local_steps: int = 5, rounds: int = 30, multiplier: float = 1.0,
                     fedavg_lr: float = 0.1, reading: str = "local rate", problem: Problem | None = None,
                     store: Store | None = None) -> dict[str, dict[str, float]]:
    """The PAdaMFed explorer: the step sizes Theorems 1 and 2 give for S = ``clients_per_round``,
    K = ``local_steps``, T = ``rounds``, times ``multiplier`` on ``eta`` alone (``reading="local rate"``) or on
    ``eta`` and ``gamma`` (``"every rate"``, notebook 02's two readings), and a live run of PAdaMFed and
    PAdaMFed-VR at those values beside FedAvg at ``fedavg_lr``, from the same start and minibatches, on
    :data:`~fedcore.explore.LIVE_TASK` (the title says it).  Returns the step sizes ``{"PAdaMFed": {eta, gamma, beta},
    "PAdaMFed-VR": ...}``."""
    problem, _ = live_run(problem)
    check_int("clients_per_round", clients_per_round, high=problem.data.num_clients)
    check_choice("reading", reading, PADAMFED_READINGS)
    sizes = dict(zip(("clients_per_round", "local_steps", "rounds"),
                     (clients_per_round, check_steps("local_steps", local_steps), check_steps("rounds", rounds))))
    steps = {}
    for name, variant in (("PAdaMFed", "padamfed"), ("PAdaMFed-VR", "padamfed_vr")):
        values = theory_hyperparameters(variant, **sizes, multiplier=multiplier)
        if reading == "every rate":
            values["gamma"] *= multiplier
        steps[name] = values
    _, options = live_run(problem, **sizes, weighting="uniform", eval_every=max(1, rounds // 10), store=store)
    runs = {name: simulate(problem, factory(**sizes, **steps[name]), **options)
            for name, factory in (("PAdaMFed", algorithms.padamfed), ("PAdaMFed-VR", algorithms.padamfed_vr))}
    runs[f"FedAvg (lr {fedavg_lr:g})"] = simulate(problem, algorithms.fedavg(check_positive("fedavg_lr", fedavg_lr)),
                                                  **options)
    plots.fedopt_panels(runs, title=f"{LIVE_TASK}\nS={clients_per_round}, K={local_steps}, T={rounds}, x{multiplier:g} "
                        f"on the {reading}: " + "; ".join(f"{name}: eta {s['eta']:.3g}, gamma {s['gamma']:.3g}, "
                                                          f"beta {s['beta']:.3g}" for name, s in steps.items()))
    return steps
