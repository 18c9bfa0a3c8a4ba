"""The cost of per-client state in a round: SCAFFOLD with N = 3,400 clients of Reddi et al.'s CNN (1.2M parameters).

SCAFFOLD keeps one control variate ``c_i`` per client: ``N x d`` numbers, 16 GB here in float32.  A round changes
the S sampled rows only.  This prints the seconds of each round (``History.frame["seconds"]``, evaluation off) and
the process's peak resident memory, so that a round that copies the whole ``[N, d]`` matrix (2 N d numbers moved,
the matrix held twice) can be told from one that writes S rows in place.  Clients hold 2 random 28x28 images each
(the data's content does not change the cost of the bookkeeping).  Needs about 20 GB of free memory for the state
alone (50 GB for a round that copies it): run it where that is.

    python benchmarks/per_client_state.py --clients 3400 --rounds 3 [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedcore import algorithms, models  # noqa: E402
from fedcore.data import FederatedData  # noqa: E402
from fedcore.run import Problem, simulate  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=3400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)
    generator = torch.Generator().manual_seed(0)
    n = 2 * args.clients
    images = torch.rand(n, 1, 28, 28, generator=generator)
    labels = torch.randint(0, 10, (n,), generator=generator)
    data = FederatedData(images, labels, torch.full((args.clients,), 2), images[:20], labels[:20], 10,
                         "random 28x28").to(args.device)
    problem = Problem(data, models.cnn(dropout=False))
    started = time.perf_counter()
    history = simulate(problem, algorithms.scaffold(0.05), rounds=args.rounds, clients_per_round=10, local_steps=2,
                       batch_size=2, eval_every=0, progress=False)
    result = {
        "clients": args.clients, "dim": problem.model.dim, "device": args.device,
        "state_gb": args.clients * problem.model.dim * 4 / 1e9,
        "round_seconds": history.frame["seconds"].dropna().tolist(),
        "total_seconds": time.perf_counter() - started,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
        "peak_cuda_gb": torch.cuda.max_memory_allocated() / 1e9 if args.device.startswith("cuda") else None,
    }
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
