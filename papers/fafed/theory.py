"""The counterexample and the theory of FAFED (Wu, Huang, Hu & Huang, AAAI 2023) beside notebook ``04_fafed``'s
runs (its sections 2 and 3): Theorem 1's law, the grid of FAFED's map, Theorem 2's step, the paper's open choices."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import torch
from torch import Tensor

from fedcore import algorithms, counterexample
from fedcore.checks import check_choice, check_int, check_positive, check_range
from fedcore.params import GradientOracle
from fedcore.run import simulate

LAW = "eta / (3 sqrt(1 - beta^t))"
MAP_GRIDS: dict[str, tuple[list[float], list[int]]] = {
    "smoke": ([0.01, 1.0], [1, 20]),
    "small": ([0.01, 0.0316, 0.1, 0.316, 1.0], [1, 2, 5, 10, 20]),
    "medium": ([0.01, 0.0316, 0.1, 0.316, 1.0], [1, 2, 5, 10, 20]),
    "paper": ([0.01, 0.0178, 0.0316, 0.0562, 0.1, 0.178, 0.316, 0.562, 1.0], [1, 2, 3, 5, 8, 10, 15, 20]),
}
"""Per scale, the step sizes (the explorer's eta slider, 0.01 to 1) and periods (its q slider, 1 to 20) of FAFED's
map (:class:`~papers.fafed.figures.DistanceMapDisplay`)."""


def law_table(naive_mean: pd.Series, eta: float, beta: float) -> pd.DataFrame:
    """The mean model of Algorithm 1 on the counterexample (averaging every step) step by step, its
    move and the law ``eta / (3 sqrt(1 - beta^t))`` that the move should equal."""
    if not isinstance(naive_mean, pd.Series):
        raise TypeError(f"naive_mean must be a Series (Trajectory.frame['mean']), got {type(naive_mean).__name__}")
    check_positive("eta", eta)
    check_range("beta", beta, 0, 1)
    return pd.DataFrame({"mean x_t": naive_mean.iloc[1:], "move": naive_mean.diff().iloc[1:],
                         LAW: [eta / (3 * (1 - beta**t) ** 0.5) for t in range(1, len(naive_mean))]})


def theorem2_step_note(num_clients: int, smoothness: float, rho: float) -> str:
    """Theorem 2's largest step, ``rho h / w^(1/3)`` with ``h = N^(2/3) / L`` and the least ``w`` (3/2), in words."""
    check_int("num_clients", num_clients)
    check_positive("smoothness", smoothness)
    check_positive("rho", rho)
    h = num_clients ** (2 / 3) / smoothness
    step = rho * h / 1.5 ** (1 / 3)
    return (f"h = N^(2/3) / L = {num_clients}^(2/3) / {smoothness:g} = {h:.3g};  "
            f"eta_0 <= rho h / (3/2)^(1/3) = {rho:g} x {h:.3g} / 1.145 = {step:.2g}")


def open_choices() -> str:
    """The choices the paper leaves open, and fedcore's, from :mod:`fedcore.algorithms.fafed`'s docstring (from
    "Choices the paper leaves open" on), as Markdown: double backticks become code spans, Sphinx roles go."""
    text = inspect.getmodule(algorithms.fafed).__doc__ or ""
    start = text.index("Choices the paper leaves open")
    return re.sub(r":(?:func|meth|mod|class|data):", "", text[start:].replace("``", "`")).strip()



def divergence_maps(beta: float, rho: float, scale: str, steps: int = 300,
                    store: Any = None) -> dict[str, pd.DataFrame]:
    """Final ``|x|`` on the counterexample (:func:`fedcore.counterexample.final_distance_map`, from ``x_0 = 10``)
    over :data:`MAP_GRIDS` ``[scale]``, for the naive Algorithm 1, FAFED (constant step, ``alpha = 0.5``) and FedAvg,
    the control without any adaptivity, each with the same step size ``eta`` and period ``q``."""
    check_range("beta", beta, 0, 1)
    check_positive("rho", rho)
    etas, periods = MAP_GRIDS[check_choice("scale", scale, MAP_GRIDS)]
    builds = {MAP_METHODS[0]: lambda eta: algorithms.local_adaptive(eta, beta=beta),
              MAP_METHODS[1]: lambda eta: algorithms.fafed(eta, alpha=0.5, beta=beta, rho=rho),
              MAP_METHODS[2]: lambda eta: algorithms.fedavg(eta)}
    return {label: counterexample.final_distance_map(build, etas, periods, steps=steps, store=store)
            for label, build in builds.items()}


MAP_METHODS = ("naive (Alg. 1)", "FAFED (Alg. 2)", "FedAvg")
"""The methods of :func:`divergence_maps`, in order."""


def storm_tracking(problem: Any, alphas: Sequence[float], lr: float, steps: int, batch_size: int,
                   seed: int = 0) -> pd.DataFrame:
    """How well STORM's momentum tracks the gradient (eq. 3): STEM (FAFED with ``A = I``) on one client of
    ``problem`` for ``steps`` local steps of ``batch_size`` samples, once per ``alpha`` (``alpha = 1``: plain
    minibatch SGD, ``m_t`` the minibatch gradient).  The momentum is read off the traced models,
    ``m_t = (x_t - x_t+1) / eta``; the table, one row per step ``t >= 1``, one column per ``alpha``, holds the
    relative error ``||m_t - grad f_i(x_t)|| / ||grad f_i(x_t)||`` against the client's full gradient."""
    check_positive("lr", lr)
    check_int("steps", steps, 2)
    check_int("batch_size", batch_size)
    oracle, data, errors = GradientOracle(problem.model), problem.data, {}
    for alpha in alphas:
        history = simulate(problem, algorithms.stem(lr, alpha=alpha), rounds=1, clients_per_round=1,
                           local_steps=steps, batch_size=batch_size, trace=True, seed=seed, eval_every=1,
                           progress=False)
        (client,), models = history.trace[0]
        start = int(data.sizes[:client].sum())
        rows = slice(start, start + int(data.sizes[client]))
        X = models[:, 0]                                              # x_1 ... x_steps+1
        momentum = (X[:-1] - X[1:]) / lr                              # m_1 ... m_steps
        full = torch.stack([oracle(x[None], data.inputs[rows][None], data.targets[rows][None])[1][0]
                            for x in X[:-1]])
        errors[alpha] = ((momentum - full).norm(dim=1) / full.norm(dim=1)).tolist()
    return pd.DataFrame(errors, index=pd.RangeIndex(1, steps + 1, name="local step t")).rename_axis(
        columns="alpha")


def reference_fafed(gradient: Callable[[Tensor, Tensor, Tensor], Tensor], x0: Tensor, batches: Sequence[Any],
                    weights: Sequence[float], eta: float, alpha: float, beta: float, rho: float) -> Tensor:
    """Wu et al., Algorithm 2, client by client as the paper writes it (a constant step and momentum), for
    reading beside :class:`fedcore.algorithms.FAFED` (``tests/test_fafed.py`` checks that the two agree).
    ``gradient(x, inputs, targets)`` is a minibatch gradient; ``batches`` one ``RoundBatch`` per period of q steps
    (``batch.step(k)``: every client's minibatch of step k; the first period's samples also give ``m_0``, ``v_0``)."""
    S, first = len(weights), batches[0]
    G0 = [gradient(x0, first.inputs[i].flatten(0, 1), first.targets[i].flatten(0, 1)) for i in range(S)]
    m = [sum(w * g for w, g in zip(weights, G0))] * S                   # line 2: m_0, v_0, A_0
    v = [sum(w * g**2 for w, g in zip(weights, G0))] * S
    A = v[0].sqrt() + rho
    x_prev, x = [x0] * S, [x0 - eta * m[0]] * S                         # line 3, no A_0^-1 as printed
    for batch in batches:
        for k in range(batch.local_steps):
            inputs, targets = batch.step(k)
            for i in range(S):
                g = gradient(x[i], inputs[i], targets[i])                # line 6: the same minibatch at x_t ...
                g_prev = gradient(x_prev[i], inputs[i], targets[i])      # ... and at x_t-1
                m[i] = g + (1 - alpha) * (m[i] - g_prev)                 # line 7, STORM
                v[i] = beta * v[i] + (1 - beta) * g**2                   # line 8
                if k < batch.local_steps - 1:
                    x_prev[i], x[i] = x[i], x[i] - eta * m[i] / A        # line 15, A_t = A_t-1
        v_bar = sum(w * vi for w, vi in zip(weights, v))                # lines 10-12, every q steps
        m_bar = sum(w * mi for w, mi in zip(weights, m))
        A = v_bar.sqrt() + rho
        x_bar = sum(w * (xi - eta * m_bar / A) for w, xi in zip(weights, x))
        x_prev, x, m, v = list(x), [x_bar] * S, [m_bar] * S, [v_bar] * S
    return x[0]
