"""How long one round of FedAvg takes: fedcore against hand-written loops and the floor.

One round = every one of the S clients runs K = 10 local SGD steps of B = 32 samples
from the global model, then the server averages (weights n_i / sum n_j).  Workloads,
on Fashion-MNIST split iid over S clients (all of them take part in every round):

- ``w1`` (compute-bound): Reddi et al.'s CNN (``fedcore.models.cnn()``, 1.2M params), S = 20;
- ``w2`` (overhead-bound): logistic regression, S = 100;
- ``rule``: MLPs from 784-200-10 (0.16M params) to 784-1000-1000-10 (1.8M) at S = 20 and
  100 (and logistic regression at S = 20), fedcore's two backends and the floor only: the
  measurements behind ``fedcore.params.choose_backend``.  Not run by default (~3-4 min).
- ``w3`` (Shakespeare): Reddi et al.'s char-LSTM (``fedcore.models.char_lstm``, 0.82M params)
  on 10 Shakespeare clients (speaking roles) per round, B = 4 windows of 80 characters,
  K = 10.  Its ``BatchableLSTM`` runs the fused LSTM kernel outside vmap (the loop
  variants) and an unrolled recurrence under it (``fedcore-vmap``).  Not run by default.

Variants, all doing the same arithmetic (same model and initial weights, K, B, S,
client lr 0.05, cross-entropy, dropout ON in all of them: train mode, as in training):

- ``fedcore-loop`` / ``fedcore-vmap``: a real fedcore round, ``fedavg(0.05).round(state,
  batch, oracle)``, with the ``RoundBatch`` formed by ``fedcore.run.sample_round`` as in
  ``simulate`` (client permutation, weights, the rows of the minibatches; each step's
  minibatch is gathered inside the round): the time includes forming the batch (its
  share is printed as ``batch``);
- ``minimal``: a hand-written sequential loop: one nn.Module reused, its parameters loaded
  from the flat global vector for each client, minibatches indexed directly from the
  resident tensors, SGD by hand (``torch._foreach_add_``), weighted average of flat vectors;
- ``conventional``: how typical research code does it: per client ``copy.deepcopy`` of the
  global model, a ``DataLoader`` (shuffle, batch B) over the client's ``Subset`` of a
  ``TensorDataset``, a ``torch.optim.SGD``, then ``state_dict`` averaging;
- ``floor``: one model stepping the concatenated batch of all clients (S*B samples) K
  times, with the same per-step gather of S*B rows: what the round would cost if the
  clients' models did not differ.

Each variant is warmed up once (one round with K = 1: same shapes), then the variants
are timed round-robin, the order rotated every repeat, so that load from other
processes spreads over all of them; the table gives the median (and min..max) per round
and its ratio to the floor's median.  A workload starts no new repeat after its time
budget, so a busy machine gives fewer rounds, not a much longer run.  Results and what
they mean: ``benchmarks/README.md``.

    python benchmarks/round_speed.py                       # w1 and w2, ~2.5 min on 2 idle CPU cores
    python benchmarks/round_speed.py --quick --json out.json   # ~1 min
    python benchmarks/round_speed.py --workloads rule      # the auto rule's measurements
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.data import DataLoader, Subset, TensorDataset

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fedcore import models  # noqa: E402
from fedcore.algorithms.fedopt import fedavg  # noqa: E402
from fedcore.data import load_fashion_mnist, load_shakespeare  # noqa: E402
from fedcore.data.federated import FederatedData  # noqa: E402
from fedcore.params import GradientOracle, choose_backend  # noqa: E402
from fedcore.run import Problem, sample_round  # noqa: E402

K, B, LR = 10, 32, 0.05  # B: the Fashion-MNIST workloads' batch (w3 uses 4)
VARIANTS = ("fedcore-loop", "fedcore-vmap", "minimal", "conventional", "floor")
RULE_VARIANTS = ("fedcore-loop", "fedcore-vmap", "floor")


def _fashion_mnist(clients: int, device: torch.device) -> FederatedData:
    return load_fashion_mnist(clients, partition="iid", seed=0, device=device)


def _shakespeare(clients: int, device: torch.device) -> FederatedData:
    return load_shakespeare(num_clients=clients, seed=0, device=device)


@dataclass(frozen=True)
class Workload:
    title: str
    model: Callable[[], nn.Module]
    clients: int
    variants: tuple[str, ...] = VARIANTS
    repeats: int = 5  # timed rounds per variant (after the warm-up)
    quick_repeats: int = 2
    budget_s: float = 60.0  # no new repeat starts after this long (at least one is made)
    batch_size: int = B
    data: Callable[[int, torch.device], FederatedData] = _fashion_mnist


def _mlp(*hidden: int) -> Callable[[], nn.Module]:
    return lambda: models.mlp(hidden=hidden)


WORKLOADS: dict[str, Workload] = {
    "w1": Workload("W1 CNN (1.2M params), S=20", models.cnn, 20, repeats=5, quick_repeats=2, budget_s=180),
    "w2": Workload("W2 logistic regression, S=100", models.logistic_regression, 100, repeats=15, quick_repeats=5,
                   budget_s=30),
    "w3": Workload("W3 Shakespeare char-LSTM, S=10", models.char_lstm, 10, repeats=5, quick_repeats=2,
                   budget_s=120, batch_size=4, data=_shakespeare),
}
RULE: dict[str, Workload] = {
    f"{name}-s{S}": Workload(f"{title}, S={S}", factory, S, RULE_VARIANTS, repeats, 2, budget_s=20)
    for name, title, factory, repeats in [
        ("logreg", "logistic regression", models.logistic_regression, 7),
        ("mlp200", "MLP 784-200-10", _mlp(200), 5),
        ("mlp400", "MLP 784-400-10", _mlp(400), 5),
        ("mlp500x2", "MLP 784-500-500-10", _mlp(500, 500), 3),
        ("mlp1000", "MLP 784-1000-10", _mlp(1000), 3),
        ("mlp1000x2", "MLP 784-1000-1000-10", _mlp(1000, 1000), 3),
    ]
    for S in (20, 100)
    if (name, S) != ("logreg", 100)  # that is w2
}


@dataclass
class Context:
    data: FederatedData
    workload: Workload
    device: torch.device
    seed: int = 0
    extra: dict[str, list[float]] = field(default_factory=dict)

    @property
    def batch(self) -> int:
        return self.workload.batch_size

    def model(self) -> nn.Module:
        """The workload's model, same initial weights every time, in train mode."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return self.workload.model().to(self.device).train()

    def clients(self, generator: torch.Generator) -> tuple[list[int], Tensor]:
        """The round's S clients (all of them, in a random order) and weights n_i / sum n_j."""
        clients = torch.randperm(self.data.num_clients, generator=generator)[: self.workload.clients]
        sizes = self.data.sizes[clients.to(self.device)].float()
        return clients.tolist(), sizes / sizes.sum()

    def permutation(self, client: int, count: int, generator: torch.Generator) -> Tensor:
        """``count`` row indices of ``client`` drawn without replacement (cycling when it has fewer)."""
        start, size = int(self.data.offsets[client]), int(self.data.sizes[client])
        perm = torch.randperm(size, generator=generator).repeat(-(-count // size))[:count]
        return start + perm.to(self.device)


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def fedcore_variant(ctx: Context, backend: str) -> Callable[[int], None]:
    data, S = ctx.data, ctx.workload.clients
    problem = Problem(data, ctx.model())
    algorithm = fedavg(client_lr=LR)
    oracle = GradientOracle(problem.model, backend, ctx.device)
    state = algorithm.init(problem.x0(), data.num_clients)
    sampler = torch.Generator().manual_seed(ctx.seed)
    batch_generator = torch.Generator(device=ctx.device).manual_seed(ctx.seed + 1)
    batch_times = ctx.extra.setdefault(f"fedcore-{backend}", [])

    def one_round(steps: int) -> None:
        nonlocal state
        started = time.perf_counter()
        batch = sample_round(data, 0, S, steps, ctx.batch, "samples", state["x"].dtype, sampler, batch_generator)
        _sync(ctx.device)
        batch_times.append(time.perf_counter() - started)
        with problem.model.mode(training=True):
            state, _ = algorithm.round(state, batch, oracle)

    return one_round


def minimal_variant(ctx: Context) -> Callable[[int], None]:
    """One module reused; parameters loaded from the flat global vector per client."""
    module = ctx.model()
    params = list(module.parameters())
    x = torch.nn.utils.parameters_to_vector(params).detach().clone()
    numels = [p.numel() for p in params]
    inputs, targets = ctx.data.inputs, ctx.data.targets
    generator = torch.Generator().manual_seed(ctx.seed)

    def one_round(steps: int) -> None:
        nonlocal x
        clients, weights = ctx.clients(generator)
        new_x = torch.zeros_like(x)
        for client, weight in zip(clients, weights):
            with torch.no_grad():
                torch._foreach_copy_(params, [v.view_as(p) for v, p in zip(x.split(numels), params)])
            rows = ctx.permutation(client, steps * ctx.batch, generator).view(steps, ctx.batch)
            for k in range(steps):
                loss = F.cross_entropy(module(inputs.index_select(0, rows[k])), targets.index_select(0, rows[k]))
                grads = torch.autograd.grad(loss, params)
                with torch.no_grad():
                    torch._foreach_add_(params, grads, alpha=-LR)
            with torch.no_grad():
                new_x += weight * torch.cat([p.reshape(-1) for p in params])
        x = new_x

    return one_round


def conventional_variant(ctx: Context) -> Callable[[int], None]:
    """deepcopy + DataLoader(Subset) + torch.optim.SGD per client, state_dict averaging."""
    global_model = ctx.model()
    dataset = TensorDataset(ctx.data.inputs, ctx.data.targets)
    subsets = [
        Subset(dataset, range(int(start), int(start + size)))
        for start, size in zip(ctx.data.offsets, ctx.data.sizes)
    ]
    generator = torch.Generator().manual_seed(ctx.seed)

    def one_round(steps: int) -> None:
        clients, _ = ctx.clients(generator)
        states, sizes = [], []
        for client in clients:
            local = copy.deepcopy(global_model)
            local.train()
            optimizer = torch.optim.SGD(local.parameters(), lr=LR)
            loader = DataLoader(subsets[client], batch_size=ctx.batch, shuffle=True, generator=generator)
            batches = itertools.chain.from_iterable(itertools.repeat(loader))  # cycle epochs
            for _, (xb, yb) in zip(range(steps), batches):
                optimizer.zero_grad()
                F.cross_entropy(local(xb), yb).backward()
                optimizer.step()
            states.append(local.state_dict())
            sizes.append(len(subsets[client]))
        total = sum(sizes)
        average = {key: sum(s[key] * (n / total) for s, n in zip(states, sizes)) for key in states[0]}
        global_model.load_state_dict(average)

    return one_round


def floor_variant(ctx: Context) -> Callable[[int], None]:
    """One model, K steps on the concatenated S*B samples (same per-step gather)."""
    module = ctx.model()
    params = list(module.parameters())
    inputs, targets = ctx.data.inputs, ctx.data.targets
    generator = torch.Generator().manual_seed(ctx.seed)

    def one_round(steps: int) -> None:
        clients, _ = ctx.clients(generator)
        rows = torch.stack([ctx.permutation(c, steps * ctx.batch, generator).view(steps, ctx.batch)
                            for c in clients], 1)
        for k in range(steps):
            batch = rows[k].reshape(-1)  # [S*B]
            loss = F.cross_entropy(module(inputs.index_select(0, batch)), targets.index_select(0, batch))
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                torch._foreach_add_(params, grads, alpha=-LR)

    return one_round


def make_variant(name: str, ctx: Context) -> Callable[[int], None]:
    if name.startswith("fedcore-"):
        return fedcore_variant(ctx, name.removeprefix("fedcore-"))
    return {"minimal": minimal_variant, "conventional": conventional_variant, "floor": floor_variant}[name](ctx)


def run_workload(key: str, workload: Workload, device: torch.device, repeats: int, budget_s: float) -> dict:
    data = workload.data(workload.clients, device)
    ctx = Context(data, workload, device)
    rounds = {name: make_variant(name, ctx) for name in workload.variants}
    for one_round in rounds.values():  # warm-up: same shapes, one local step
        one_round(1)
        _sync(device)
    for times in ctx.extra.values():
        times.clear()
    times: dict[str, list[float]] = {name: [] for name in rounds}
    names = list(rounds)
    started = time.perf_counter()
    for r in range(repeats):
        if r > 0 and time.perf_counter() - started > budget_s:
            break  # a loaded machine: fewer rounds rather than a run of many minutes
        for name in names[r % len(names):] + names[: r % len(names)]:
            started = time.perf_counter()
            rounds[name](K)
            _sync(device)
            times[name].append(time.perf_counter() - started)
    floor = statistics.median(times["floor"])
    results = {}
    for name in names:
        median = statistics.median(times[name])
        results[name] = {"median_s": median, "ratio_to_floor": median / floor, "times_s": times[name]}
        if name in ctx.extra:
            results[name]["batch_median_s"] = statistics.median(ctx.extra[name])
    model = Problem(data, ctx.model()).model
    return {"title": workload.title, "clients": workload.clients, "dim": model.dim, "batch_size": workload.batch_size,
            "auto_backend": choose_backend(model, device), "repeats": len(times["floor"]), "variants": results}


def print_table(key: str, result: dict) -> None:
    print(f"\n{key}: {result['title']}, d={result['dim']:,}, K={K}, B={result['batch_size']}, "
          f"{result['repeats']} rounds each; auto picks {result['auto_backend']}")
    print(f"  {'variant':<14} {'median s':>9} {'x floor':>8}   {'min..max s':<15} {'of which batch':>14}")
    for name, row in result["variants"].items():
        times = row["times_s"]
        batch = f"{row['batch_median_s']:.3f} s" if "batch_median_s" in row else ""
        print(f"  {name:<14} {row['median_s']:9.3f} {row['ratio_to_floor']:7.2f}x   "
              f"{min(times):.3f}..{max(times):<8.3f} {batch:>14}")
    sys.stdout.flush()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    choices = [*WORKLOADS, "rule", *RULE]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed rounds (about 1 min on 2 idle CPU cores)")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--workloads", default="w1,w2",
                        help=f"comma-separated, from {', '.join(choices)} (default w1,w2; 'rule' = all rule ones)")
    parser.add_argument("--repeats", type=int, default=None, help="timed rounds per variant (overrides the defaults)")
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's own)")
    parser.add_argument("--json", type=Path, default=None, help="write the results to this file")
    args = parser.parse_args(argv)
    keys = []
    for key in args.workloads.split(","):
        key = key.strip()
        if key not in choices:
            parser.error(f"--workloads: {key!r} not one of {choices}")
        keys += list(RULE) if key == "rule" else [key]
    args.workloads = list(dict.fromkeys(keys))
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"--device={args.device}: CUDA is not available here")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    everything = {**WORKLOADS, **RULE}
    report = {
        "device": str(device), "torch": torch.__version__, "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(), "load_average": _load(),
        "K": K, "B": B, "lr": LR,
        "dropout": "on (train mode) in every variant", "quick": args.quick, "workloads": {},
    }
    print(f"round_speed: torch {torch.__version__} on {device}, {torch.get_num_threads()} threads, "
          f"K={K}, B={B} (w3: 4), lr={LR}, dropout on in every variant; load average {_load()}")
    started, load_start = time.perf_counter(), os.getloadavg()[0]
    for key in args.workloads:
        workload = everything[key]
        repeats = args.repeats or (workload.quick_repeats if args.quick else workload.repeats)
        budget = float("inf") if args.repeats else workload.budget_s / (3 if args.quick else 1)
        report["workloads"][key] = result = run_workload(key, workload, device, repeats, budget)
        print_table(key, result)
    report["total_s"] = time.perf_counter() - started
    report["load_average_end"] = _load()
    print(f"\ntotal {report['total_s']:.0f} s; load average {_load()}")
    # this run itself keeps about `threads` cores busy; more than that means other processes
    if load_start > 1.0 or os.getloadavg()[0] > torch.get_num_threads() + 1.0:
        print("(other processes were busy: times are inflated and noisy, most for the variants that make many "
              "small multi-threaded calls; compare ratios within this run, or rerun with --threads 1)")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
