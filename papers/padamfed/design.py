"""PAdaMFed taken apart (Yan et al., ICLR 2025; notebook ``02_padamfed``): Algorithm 1 with its control variates
removed, for the ablation that shows what they buy, and the slides' design steps (normalized local steps, then a
momentum, then the control variates), each a configuration of the same recursion.

An algorithm of fedcore's built outside the library, as a user would build one: :class:`WithoutControlVariates`
subclasses :class:`~fedcore.algorithms.padamfed.PAdaMFed` and changes what its clients correct by and what line 16
averages.  The results store keys its runs by this file's code (:mod:`fedcore.identity`), so an edit here recomputes
them and nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd
import torch

from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRun, train_clients
from fedcore.algorithms.contract import Metrics, State
from fedcore.algorithms.padamfed import PAdaMFed
from fedcore.algorithms.theorems import step_sizes
from fedcore.comparisons import compare
from fedcore.params import GradientOracle


@dataclass(frozen=True)
class WithoutControlVariates(PAdaMFed):
    """Algorithm 1 with ``c_i = c = 0`` throughout: line 7 becomes ``g_i^{t,k} = beta grad F(theta_i^{t,k}; xi) +
    (1 - beta) g^{t-1}`` (the STORM form likewise loses ``beta (c - c_i)``), and line 16 becomes
    ``g^t = beta (1/S) sum_i c_i^t + (1 - beta) g^{t-1}``, the momentum of the sampled clients' mean gradients
    (``c_i^t``, line 10's, uploaded and not kept).  Line 1 still sets ``g^{-1}``, the clients' mean gradient at
    ``theta^0``.  Nothing corrects a client's gradient towards the federation's: each walks towards its own
    optimum."""

    name: str = "PAdaMFed without control variates"

    def client_run(self, sent: State, batch: RoundBatch, oracle: GradientOracle, own: State) -> ClientRun:
        """Lines 4-11 with ``c = c_i = 0``: K normalized steps on ``beta grad + (1 - beta) g^{t-1}``; uploads the
        round's mean gradient ``c_i^t`` (line 16's input) and keeps nothing new."""
        rule = self.client_rule(torch.zeros_like(sent["c"]), torch.zeros_like(own["c_i"]), sent["g"],
                                sent.get("x_prev"))
        run = train_clients(sent["x"], batch, oracle, rule)
        return run.sending({"c_delta": run.state["summed_gradients"] / batch.local_steps}, keeps={"c_i": own["c_i"]})

    def server_round(self, state: State, run: ClientRun, batch: RoundBatch) -> tuple[State, Metrics]:
        """Lines 13-14 as Algorithm 1's; line 16 on ``c^{t-1} = 0`` (so ``g^t`` averages the uploaded mean
        gradients); ``c`` stays as line 1 left it, unread."""
        new_state, metrics = super().server_round({**state, "c": torch.zeros_like(state["c"])}, run, batch)
        return {**new_state, "c": state["c"]}, metrics


def without_control_variates(*, clients_per_round: int, local_steps: int, rounds: int,
                             variance_reduction: bool = False) -> WithoutControlVariates:
    """:class:`WithoutControlVariates` at Theorem 1's step sizes (Theorem 2's with ``variance_reduction``) for S, K,
    T: the ablation of PAdaMFed (or PAdaMFed-VR) that keeps everything but the control variates."""
    sizes = {"clients_per_round": clients_per_round, "local_steps": local_steps, "rounds": rounds}
    theorem = "padamfed_vr" if variance_reduction else "padamfed"
    values = step_sizes(theorem, sizes, 1.0, {"eta": None, "gamma": None, "beta": None})
    suffix = "-VR" if variance_reduction else ""
    return WithoutControlVariates(**values, variance_reduction=variance_reduction, **sizes,
                                  name=f"PAdaMFed{suffix} without control variates")


def design_steps(sizes: Mapping[str, int]) -> dict[str, PAdaMFed]:
    """The slides' design, one ingredient at a time, at Theorem 1's step sizes for ``sizes`` (S, K, T):
    normalized local steps alone (``beta = 1``, no control variates: the server averages normalized client
    walks), then Theorem 1's momentum ``beta`` (still no control variates), then the control variates
    (PAdaMFed itself)."""
    full = without_control_variates(**sizes)
    return {"normalized local steps": WithoutControlVariates(**_fields(full, beta=1.0),
                                                             name="normalized local steps"),
            "+ momentum": WithoutControlVariates(**_fields(full), name="+ momentum"),
            "+ control variates (PAdaMFed)": PAdaMFed(**_fields(full), name="PAdaMFed")}


def _fields(algorithm: PAdaMFed, **changes: float) -> dict[str, float | int | None]:
    """The step sizes and S, K, T of ``algorithm``, with ``changes``."""
    keys = ("eta", "gamma", "beta", "clients_per_round", "local_steps", "rounds")
    return {**{key: getattr(algorithm, key) for key in keys}, **changes}


def effects(scores: pd.DataFrame, scale: float = 100.0) -> pd.DataFrame:
    """Each design step's score beside the step before it: ``scores`` has one row per step (in the design's order)
    and one column per seed (``Results.scores().loc[task]``); per step the mean and sd over the seeds (times
    ``scale``) and its difference from the step before, the 95% paired t interval and p
    (:func:`~fedcore.comparisons.compare`, uncorrected, with its outcome)."""
    rows, previous = {}, None
    for step, values in scores.iterrows():
        values = values.astype(float)
        row = {"score, mean ± sd": f"{scale * values.mean():.2f} ± {scale * values.std():.2f}",
               "minus the step before": ""}
        if previous is not None:
            outcome, text = compare(values, previous, scale=scale)
            row["minus the step before"] = f"{text} ({outcome})"
        rows[step], previous = row, values
    return pd.DataFrame(rows).T.rename_axis("design step")
