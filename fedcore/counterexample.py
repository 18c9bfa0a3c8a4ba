"""The divergence counterexample of Wu et al., *Faster Adaptive Federated Learning* (AAAI 2023),
Theorem 1 (after Chen, Li & Li 2020): three clients, one dimension,

    f_1(x) = 3 x^2        (|x| <= 1),   6 |x| - 2    (|x| > 1)
    f_2(x) = f_3(x) = -x^2 (|x| <= 1),  -2 |x| + 1   (|x| > 1)
    f(x) = (f_1 + f_2 + f_3) / 3 = x^2 / 3  (|x| <= 1),  2 |x| / 3  (|x| > 1),

whose only stationary point is 0 (the objective: :func:`fedcore.objectives.counterexample_problem`).
From ``x_0 = 10`` the gradients are 6 and -2 (twice).
Naive local-adaptive FedAvg (:class:`fedcore.algorithms.LocalAdaptive`, the paper's
Algorithm 1, ``v_0 = 0``) steps each client by ``eta g / sqrt(v) = eta sign(g) /
sqrt(1 - beta^t)``, whatever the size of ``g``: client 1 moves towards 0 by that much,
clients 2 and 3 away from it by as much, and the mean moves *away* by
``eta / (3 sqrt(1 - beta^t))`` every step, for every ``eta`` and ``beta``.  FAFED's
shared preconditioner keeps the sizes of the gradients, so the mean follows ``f``.

:func:`run` drives the real algorithms on it (a one-parameter model, one sample per
client whose input selects ``f_1`` or ``f_2``, full participation, uniform weights) and
returns every client's model after every local step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd
import torch
from torch import Tensor

from fedcore.algorithms.contract import Algorithm
from fedcore.checks import check_int, check_positive
from fedcore.objectives import COUNTEREXAMPLE_CLIENTS as CLIENTS
from fedcore.objectives import counterexample_f, counterexample_problem
from fedcore.results import Trajectory
from fedcore.run import simulate, simulate_runs
from fedcore.store import Store


def run(algorithm: Algorithm, rounds: int, local_steps: int = 1, x0: float = 10.0,
        store: Store | None = None) -> Trajectory:
    """Run ``algorithm`` (any fedcore algorithm) for ``rounds`` rounds of ``local_steps``
    steps on the counterexample from ``x0`` with :func:`fedcore.simulate` (``trace=True``: every
    client's model after every local step; with ``store``, a run traced before is read back); see
    :class:`Trajectory`."""
    check_int("rounds", rounds)
    check_int("local_steps", local_steps)
    history = simulate(counterexample_problem(x0), algorithm, rounds, CLIENTS, local_steps, batch_size=1,
                       weighting="uniform", backend="loop", progress=False, eval_every=rounds, trace=True, store=store)
    rows = [{"step": 0, **{f"client {i + 1}": x0 for i in range(CLIENTS)}, "averaged": False}]
    for clients, models in history.trace or []:
        order = clients.tolist()
        for k, X in enumerate(models):
            row = {f"client {order[s] + 1}": float(X[s, 0]) for s in range(CLIENTS)}
            rows.append({"step": len(rows), **row, "averaged": k == len(models) - 1})
    frame = pd.DataFrame(rows).set_index("step")
    frame.insert(CLIENTS, "mean", frame.iloc[:, :CLIENTS].mean(axis=1))
    frame["f"] = counterexample_f(torch.tensor(frame["mean"].to_numpy())).numpy()
    return Trajectory(frame, history.algorithm, local_steps)


@dataclass(frozen=True)
class ServerModel:
    """``record=`` for :func:`fedcore.simulate`: the server model itself (``d = 1`` here) after every round."""

    def __call__(self, x: Tensor) -> dict[str, Tensor]:
        return {"x": x[:, 0]}


def final_distance_map(
    algorithm: Callable[[float], Algorithm], etas: Sequence[float], periods: Sequence[int], steps: int = 300,
    store: Store | None = None,
) -> pd.DataFrame:
    """``|x|`` of the server model after the last averaging, for ``algorithm(eta)`` run with every step size
    ``eta`` in ``etas`` and averaging period ``q`` in ``periods`` for ``steps // q`` rounds from ``x_0 = 10``:
    a table with one row per ``eta`` and one column per ``q`` (where a method converges, and where not).  The
    runs record their server model (:class:`ServerModel`), so ``store`` keeps and reuses them; a run that
    diverged ends at its last finite round."""
    if not callable(algorithm):
        raise TypeError(f"algorithm={algorithm!r} must be a function eta -> algorithm (e.g. lambda eta: fafed(eta))")
    etas = [check_positive("etas[]", eta) for eta in etas]
    periods = [check_int("periods[]", q) for q in periods]
    check_int("steps", steps, max(periods, default=1))
    table = {}
    for q in periods:
        histories = simulate_runs(counterexample_problem(), [algorithm(eta) for eta in etas], steps // q, CLIENTS, q, 1,
                                  weighting="uniform", backend="loop", progress=False, eval_every=steps // q,
                                  record=ServerModel(), store=store)
        table[q] = [abs(float(history.frame["x"].dropna().iloc[-1])) for history in histories]
    return pd.DataFrame(table, index=pd.Index(etas, name="eta")).rename_axis(columns="q")

