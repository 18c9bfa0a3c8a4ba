"""Seconds per round of FedAvg on Flower's Deployment Engine against ``fedcore.simulate``: the price of real
processes and serialization (fedcore.flower).

W2's model (logistic regression, 7,850 parameters) on Fashion-MNIST, 100 clients by Dirichlet(0.5) held by three
SuperNodes, 10 clients per round, K = 10 steps of B = 32, client lr 0.05.  The engine (a SuperLink and three
SuperNodes on localhost, insecure) runs ``examples/flower`` through ``flwr run``; its rounds are timed by the
ServerApp (``FedcoreStrategy.history``: from sampling the round to the server rule, the nodes' work and the
messages included), simulate's by its ``seconds`` column.  Both runs are the same run (same seed: same clients,
minibatches and model; checked).  Usage::

    python benchmarks/flower_round.py              # 10 rounds, about 2 minutes on 2 cores
    python benchmarks/flower_round.py --rounds 20 --json flower.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import torch

from fedcore.flower.deploy import algorithm_of, problem_of
from fedcore.flower.local import local_federation, run_app
from fedcore.run import simulate

APP = Path(__file__).resolve().parents[1] / "examples" / "flower"
CONFIG = {"algorithm": "fedavg", "hyperparameters": '{"client_lr": 0.05}', "clients": 100, "clients-per-round": 10,
          "local-steps": 10, "batch-size": 32, "seed": 0, "partition-seed": 0, "hidden": 0, "test-samples": 200}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args()
    config = {**CONFIG, "rounds": args.rounds}
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "out"
        with local_federation(folder, nodes=3) as federation:
            done = run_app(federation, APP, {**config, "output": str(output)}, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"flwr run failed:\n{done.stdout[-3000:]}\n{done.stderr}")
        engine = json.loads((output / "history.json").read_text())
        on_flower = torch.load(output / "model.pt")
    problem = problem_of(config)
    models_after: list[torch.Tensor] = []
    history = simulate(problem, algorithm_of(config), rounds=args.rounds, clients_per_round=10, local_steps=10,
                       batch_size=32, seed=0, eval_every=0, progress=False,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()))
    gap = float((on_flower - models_after[-1]).abs().max())
    flower_seconds = [row["seconds"] for row in engine]
    simulate_seconds = list(history.frame["seconds"].dropna())
    later = statistics.median(flower_seconds[1:]) if len(flower_seconds) > 1 else flower_seconds[0]
    result = {"rounds": args.rounds, "same run (max |x_flower - x_simulate|)": gap,
              "flower: first round (s)": flower_seconds[0], "flower: median of the later rounds (s)": later,
              "simulate: median round (s)": statistics.median(simulate_seconds),
              "ratio (flower later / simulate)": later / statistics.median(simulate_seconds)}
    for key, value in result.items():
        print(f"{key:45s} {value:.4g}" if isinstance(value, float) else f"{key:45s} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
