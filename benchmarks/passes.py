"""Many runs in one pass against the same runs one at a time (``round_speed.py --workloads runs``).

R runs of one algorithm (FedAvg, FedAdam; each run its own client learning rate and seed) on Fashion-MNIST dealt
iid to 100 clients, S = 10 clients per round, K = 10 local steps of B = 32, the test set (10,000 images) evaluated
every 5 rounds and after the last:

- ``separate``: ``simulate`` for one run (what a loop of R ``simulate`` calls costs per run);
- ``batched``: ``simulate_runs(..., batch=R)``: the R runs in one pass, the oracle seeing ``[R*S, d]``.

Both go through the whole simulator (sampling, the oracle, the server step, evaluation, the per-run divergence
check), so the ratio is what a sweep gains.  Seconds per run-round: the separate run's round time, and the pass's
round time divided by R; the speedup is their ratio.  The two are timed alternately, ``repeats`` times each, and the
medians compared, so that load from other processes spreads over both.  Models: logistic regression (7,850
parameters) and the MLP 784-64-10 of notebooks 02 and 03 (50,890) at R = 1, 4, 16, 64; Reddi et al.'s CNN
(1.2M, loop backend on a CPU) at R = 1 and 4.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.run import Problem, runs_per_pass, simulate, simulate_runs

S, K, B, EVAL_EVERY, CLIENTS = 10, 10, 32, 5, 100
MODELS: dict[str, tuple[str, Callable[[], nn.Module], tuple[int, ...], int]] = {
    # name: (title, model, the R to measure, rounds per timed run)
    "logreg": ("logistic regression (7.9k)", models.logistic_regression, (1, 4, 16, 64), 10),
    "mlp64": ("MLP 784-64-10 of 02/03 (51k)", lambda: models.mlp(hidden=(64,)), (1, 4, 16, 64), 10),
    "cnn": ("CNN of Reddi et al. (1.2M)", models.cnn, (1, 4), 2),
}
BUILDERS = {"FedAvg": lambda lr: algorithms.fedavg(lr), "FedAdam": lambda lr: algorithms.fedadam(lr, server_lr=0.01)}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _timed(function: Callable[[], object], device: torch.device) -> float:
    started = time.perf_counter()
    function()
    _sync(device)
    return time.perf_counter() - started


def measure(device: torch.device, quick: bool = False, runs: tuple[int, ...] | None = None) -> dict:
    data = load_fashion_mnist(CLIENTS, partition="iid", seed=0, device=device)
    repeats = 2 if quick else 3
    results: dict = {"S": S, "K": K, "B": B, "eval_every": EVAL_EVERY, "repeats": repeats, "rows": []}
    for key, (title, factory, sizes, rounds) in MODELS.items():
        if device.type == "cuda" and key != "cnn":
            sizes = (1, 4, 16, 64)
        problem = Problem(data, factory().to(device))
        options = dict(rounds=rounds, clients_per_round=S, local_steps=K, batch_size=B, eval_every=EVAL_EVERY,
                       progress=False)
        for name, build in BUILDERS.items():
            for R in runs or sizes:
                built = [build(0.05 * (1 + r / R)) for r in range(R)]  # R client rates in [0.05, 0.1)
                seeds = list(range(R))
                simulate_runs(problem, built[:1], seeds=seeds[:1], **{**options, "rounds": 1})  # warm-up
                simulate_runs(problem, built, seeds=seeds, batch=R, **{**options, "rounds": 1})
                separate, batched = [], []
                alone = partial(simulate, problem, built[0], **options)
                together = partial(simulate_runs, problem, built, seeds=seeds, batch=R, **options)
                for _ in range(repeats):
                    separate.append(_timed(alone, device) / rounds)
                    batched.append(_timed(together, device) / (rounds * R))
                row = {"model": key, "title": title, "algorithm": name, "R": R, "rounds": rounds,
                       "separate_s": statistics.median(separate), "batched_s": statistics.median(batched),
                       "auto": runs_per_pass(problem, "loop" if key == "cnn" and device.type == "cpu" else "vmap", S)}
                row["speedup"] = row["separate_s"] / row["batched_s"]
                results["rows"].append(row)
                print(f"  {title:<30} {name:<8} R={R:<3} separate {row['separate_s']:.4f} s  batched "
                      f"{row['batched_s']:.4f} s per run-round  speedup {row['speedup']:.2f}x")
                sys.stdout.flush()
    return results
