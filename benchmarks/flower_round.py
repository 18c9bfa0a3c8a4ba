"""Seconds per round of FedAvg on Flower's engines against ``fedcore.simulate``: the price of real processes and
serialization (fedcore.flower), and where it goes.

W2's model (logistic regression, 7,850 parameters) on Fashion-MNIST, 100 clients by Dirichlet(0.5) held by three
SuperNodes, 10 clients per round, K = 10 steps of B = 32, client lr 0.05.  The engine (a SuperLink and three
SuperNodes on localhost, insecure) runs ``examples/flower`` through ``flwr run``; its rounds are timed by the
ServerApp (``FedcoreStrategy.history``: from sampling the round to the server rule, the nodes' work and the
messages included), simulate's by its ``seconds`` column.  The Simulation Engine (a SuperLink with
``--simulation``, three virtual SuperNodes in Ray actors) runs the same app.  All runs are the same run (same seed:
same clients, minibatches and model; checked).

The breakdown times, each in a fresh Python process as a ClientApp process would be: importing torch and fedcore's
app (``import fedcore.flower.deploy``), then building the node's federation (``problem_of``: Fashion-MNIST, the
partition, the model), and one client's round on it (``client_run``).  Usage::

    python benchmarks/flower_round.py              # 10 rounds on each engine, about 9 minutes on 2 cores
    python benchmarks/flower_round.py --rounds 5 --json flower.json
    python benchmarks/flower_round.py --rounds 3 --isolation   # the SuperNodes' two isolation modes
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from fedcore.flower.deploy import algorithm_of, problem_of
from fedcore.flower.local import local_federation, run_app
from fedcore.run import simulate

APP = Path(__file__).resolve().parents[1] / "examples" / "flower"
CONFIG = {"algorithm": "fedavg", "hyperparameters": '{"client_lr": 0.05}', "clients": 100, "clients-per-round": 10,
          "local-steps": 10, "batch-size": 32, "seed": 0, "partition-seed": 0, "hidden": 0, "test-samples": 200}


PROBE = """
import json, time
started = time.perf_counter()
import torch
from fedcore.flower.deploy import algorithm_of, problem_of
imported = time.perf_counter()
config = json.loads({config!r})
problem = problem_of(config)
built = time.perf_counter()
from fedcore.algorithms.batch import RoundBatch
from fedcore.params import GradientOracle
from fedcore.run import sample_round
data = problem.data
batch = sample_round(data, 0, 1, config["local-steps"], config["batch-size"], "samples", torch.float32,
                     torch.Generator().manual_seed(0), torch.Generator().manual_seed(1))
algorithm_of(config).client_run({{"x": problem.x0().reshape(1, 1, -1)}}, batch, GradientOracle(problem.model), {{}})
print(json.dumps({{"import": imported - started, "build": built - imported, "round": time.perf_counter() - built}}))
"""


def on_engine(config: dict, simulation: bool, isolation: str = "subprocess") -> tuple[list[float], torch.Tensor]:
    """Each round's seconds and the final model of ``config`` run by ``flwr run`` on a local engine."""
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "out"
        with local_federation(folder, nodes=3, simulation=simulation, isolation=isolation) as federation:
            done = run_app(federation, APP, {**config, "output": str(output)}, timeout=1800)
            if done.returncode != 0:
                raise SystemExit(f"flwr run failed:\n{done.stdout[-3000:]}\n{done.stderr}")
        return [row["seconds"] for row in json.loads((output / "history.json").read_text())], torch.load(
            output / "model.pt")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", help="write the measurements to this file")
    parser.add_argument("--isolation", action="store_true",
                        help="compare the Deployment Engine's two isolation modes (instead of the two engines)")
    args = parser.parse_args()
    config = {**CONFIG, "rounds": args.rounds}
    problem = problem_of(config)
    models_after: list[torch.Tensor] = []
    history = simulate(problem, algorithm_of(config), rounds=args.rounds, clients_per_round=10, local_steps=10,
                       batch_size=32, seed=0, eval_every=0, progress=False,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()))
    simulate_round = statistics.median(list(history.frame["seconds"].dropna()))
    result: dict[str, float | int] = {"rounds": args.rounds, "simulate: median round (s)": simulate_round}
    engines = {"deployment": (False, "subprocess"), "simulation": (True, "subprocess")}
    if args.isolation:  # the Deployment Engine with each node's SuperExec started apart (--isolation process)
        engines = {"deployment": (False, "subprocess"), "deployment, process isolation": (False, "process")}
    for engine, (simulation, isolation) in engines.items():
        seconds, model = on_engine(config, simulation=simulation, isolation=isolation)
        later = statistics.median(seconds[1:]) if len(seconds) > 1 else seconds[0]
        result |= {f"{engine}: same run (max |x_flower - x_simulate|)": float((model - models_after[-1]).abs().max()),
                   f"{engine}: first round (s)": seconds[0], f"{engine}: median of the later rounds (s)": later,
                   f"{engine}: ratio to simulate": later / simulate_round}
    probes = [json.loads(subprocess.run([sys.executable, "-c", PROBE.format(config=json.dumps(config))],
                                        capture_output=True, text=True, check=True).stdout) for _ in range(3)]
    for part in ("import", "build", "round"):
        result[f"one ClientApp process: {part} (s, median of 3)"] = statistics.median(probe[part] for probe in probes)
    for key, value in result.items():
        print(f"{key:55s} {value:.4g}" if isinstance(value, float) else f"{key:55s} {value}")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
