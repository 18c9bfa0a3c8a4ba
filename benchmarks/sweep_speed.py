"""A sweep in passes against the same sweep one run at a time, on this checkout and (``--against``) another.

The workload (issue 36's check): R = 16 FedAvg runs (client rates 0.05 to 0.1, one seed) on Fashion-MNIST dealt iid to
50 clients, S = 10 clients per round, K = 5 local steps of B = 32, 12 rounds, the test set (10,000 images) evaluated
every 4 rounds and after the last, through ``sweep(..., batch=16)`` against ``sweep(..., batch="off")``; for
logistic regression (7,850 parameters) and the MLP 784-64-10 (50,890).  No results store: every run computes.

Each measurement runs in its own process (``--child``): it loads the data, warms up, then times ``batch="off"`` and
``batch=16`` alternately, ``--repeats`` times each, and prints the medians.  With ``--against PATH`` (a checkout of
another commit, e.g. ``git worktree add /tmp/base <commit>``) the processes alternate between the two checkouts,
``--rounds`` times each, so that whatever else loads the machine spreads over both; the report gives each checkout's
median speedup (separate / batched) and seconds.

    python benchmarks/sweep_speed.py [--against /tmp/base] [--rounds 3] [--repeats 3] [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS, CLIENTS, S, K, B, ROUNDS, EVAL_EVERY = 16, 50, 10, 5, 32, 12, 4
MODELS = ("logistic_regression", "mlp64")


def child(repeats: int, device: str = "cpu") -> dict:
    """In this process: both models, ``batch="off"`` and ``batch=16`` alternately, on ``device``; medians in
    seconds."""
    import torch

    from fedcore import Problem, algorithms, models, sweep
    from fedcore.data import load_fashion_mnist

    torch.manual_seed(0)
    data = load_fashion_mnist(CLIENTS, partition="iid", seed=0, device=device)
    grid = {"client_lr": [0.05 + 0.05 * r / RUNS for r in range(RUNS)]}
    options = dict(rounds=ROUNDS, clients_per_round=S, local_steps=K, batch_size=B, eval_every=EVAL_EVERY,
                   progress=False, seeds=(0,))
    out = {}
    for name in MODELS:
        model = models.logistic_regression() if name == "logistic_regression" else models.mlp(hidden=(64,))
        problem = Problem(data, model)
        sweep(problem, algorithms.fedavg, {"client_lr": [0.05, 0.06]}, batch=2, **{**options, "rounds": 1})  # warm-up
        times: dict[str, list[float]] = {"off": [], "batched": []}
        for _ in range(repeats):
            for mode, batch in (("off", "off"), ("batched", RUNS)):
                started = time.perf_counter()
                table = sweep(problem, algorithms.fedavg, grid, batch=batch, **options)
                if device != "cpu":
                    torch.cuda.synchronize()
                times[mode].append(time.perf_counter() - started)
                assert table["final_train_loss"].notna().all()
        out[name] = {mode: statistics.median(values) for mode, values in times.items()}
    return out


def run_child(tree: Path, repeats: int, device: str = "cpu") -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "FEDCORE_STORE": "off"}
    done = subprocess.run([sys.executable, __file__, "--child", "--repeats", str(repeats), "--device", device],
                          env=env, cwd=tree, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the measurement in {tree} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", type=Path, help="another checkout of fedcore, timed alternately with this one")
    parser.add_argument("--rounds", type=int, default=3, help="processes per checkout (default 3)")
    parser.add_argument("--repeats", type=int, default=3, help="timings of each mode per process (default 3)")
    parser.add_argument("--device", default="cpu", help="where the data and models live: cpu (default) or cuda")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.repeats, args.device)))
        return
    trees = {"this checkout": ROOT} | ({"against": args.against.resolve()} if args.against else {})
    results: dict[str, list[dict]] = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            results[label].append(run_child(tree, args.repeats, args.device))
    print(f"R = {RUNS} FedAvg runs, {CLIENTS} iid clients, S = {S}, K = {K}, B = {B}, {ROUNDS} rounds, evaluated every "
          f"{EVAL_EVERY}; sweep batch={RUNS} against batch='off' on {args.device}; medians over {args.rounds} "
          f"processes x {args.repeats} timings")
    for name in MODELS:
        for label, measured in results.items():
            off = statistics.median(m[name]["off"] for m in measured)
            batched = statistics.median(m[name]["batched"] for m in measured)
            speedups = [m[name]["off"] / m[name]["batched"] for m in measured]
            print(f"{name:20s} {label:14s} off {off:6.2f} s  batched {batched:6.2f} s  speedup {off / batched:4.2f}x "
                  f"(per process: {', '.join(f'{s:.2f}' for s in speedups)})")


if __name__ == "__main__":
    main()
