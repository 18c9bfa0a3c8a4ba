"""PAdaMFed's step sizes from S, K and T alone (Yan, Zhang, Wang & Cao, *Problem-Parameter-Free Federated Learning*,
Theorems 1 and 2): what makes it "parameter-free", kept apart from its update rule (:mod:`fedcore.algorithms.padamfed`).

    Theorem 1 (PAdaMFed)     eta = 1 / (K sqrt T),   gamma = (SK)^(1/4) / T^(3/4),   beta = sqrt(SK / T)
    Theorem 2 (PAdaMFed-VR)  eta = 1 / (K T),        gamma = beta = (SK)^(1/3) / T^(2/3)

``beta`` is capped at 1 where the formula exceeds it (``T < SK`` in Theorem 1, ``T^2 < SK`` in Theorem 2); ``gamma`` is
a step size and is not capped.  ``multiplier`` scales ``eta`` only (the local learning rate): ``g_bar`` divides by
``eta``, so ``gamma`` (the server's largest step) stays the theorem's.  A configuration built from S, K, T keeps them
and refuses a run of other sizes (:func:`check_horizon`).
"""

from __future__ import annotations

import math

from fedcore.checks import check_choice, check_int, check_positive

VARIANTS = ("padamfed", "padamfed_vr")


def theory_hyperparameters(
    variant: str, clients_per_round: int, local_steps: int, rounds: int, multiplier: float = 1.0,
) -> dict[str, float]:
    """``eta``, ``gamma``, ``beta`` from S, K, T by Theorem 1 (``"padamfed"``) or 2 (``"padamfed_vr"``), as the
    module's table writes them, ``beta`` capped at 1; ``eta`` times ``multiplier``."""
    check_choice("variant", variant, VARIANTS)
    S, K = check_int("clients_per_round", clients_per_round), check_int("local_steps", local_steps)
    T, multiplier = check_int("rounds", rounds), check_positive("multiplier", multiplier)
    if variant == "padamfed":
        eta, gamma, beta = 1 / (K * math.sqrt(T)), (S * K) ** (1 / 4) / T ** (3 / 4), math.sqrt(S * K / T)
    else:
        eta, gamma = 1 / (K * T), (S * K) ** (1 / 3) / T ** (2 / 3)
        beta = gamma
    return {"eta": multiplier * eta, "gamma": gamma, "beta": min(1.0, beta)}


def step_sizes(variant: str, sizes: dict[str, int | None], multiplier: float,
               given: dict[str, float | None]) -> dict[str, float]:
    """``eta``, ``gamma``, ``beta``: the theorem's from ``sizes`` (S, K, T: all three or none), each overridden by a
    value in ``given``, or ``given`` alone; ``eta`` times ``multiplier``."""
    known = [key for key, value in sizes.items() if value is not None]
    if known and len(known) < 3:
        raise TypeError(f"{variant}() got {known} but not {[key for key in sizes if key not in known]}: the step "
                        "sizes of the theorem need all of clients_per_round, local_steps and rounds")
    missing = [key for key, value in given.items() if value is None]
    if not known and missing:
        raise TypeError(f"{variant}() needs clients_per_round, local_steps and rounds (the theorem's step sizes) "
                        f"or all of eta, gamma and beta; missing {missing}")
    theory = theory_hyperparameters(variant, **sizes) if known else {}
    values = {key: theory[key] if value is None else value for key, value in given.items()}
    values["eta"] = check_positive("multiplier", multiplier) * check_positive("eta", values["eta"])
    return values


def check_horizon(name: str, built: dict[str, int | None], run: dict[str, int | None]) -> None:
    """Refuse a run whose S, K or T (``run``; ``rounds`` None: a round driven by hand) is not the one the step sizes
    were ``built`` for, either way (step sizes for T = 100 are wrong for a 5-round run too)."""
    run = {**run, "rounds": built["rounds"] if run["rounds"] is None else run["rounds"]}
    if built["clients_per_round"] is not None and built != run:
        built_text, run_text = (", ".join(f"{key}={value}" for key, value in sizes.items()) for sizes in (built, run))
        raise ValueError(f"{name}'s step sizes were computed for {built_text}, but the run has {run_text}: build it "
                         f"with the run's values ({name.lower().replace('-', '_')}({run_text})) or give eta, gamma "
                         "and beta")
