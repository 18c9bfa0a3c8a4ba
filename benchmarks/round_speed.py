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

Variants, all doing the same arithmetic on the same minibatches (same model and initial
weights, K, B, S, client lr 0.05, cross-entropy, dropout ON in all of them: train mode, as
in training).  Every variant draws its round as ``simulate`` does: the clients with a CPU
generator seeded 0, the rows ``[S, K, B]`` of their minibatches in the resident tensors
with ``FederatedData.sample_indices`` and a generator seeded 1 on the data's device (each
client walks through a fresh permutation of its samples), so round r of every variant
steps on the same minibatches, and the time of every variant includes drawing them:

- ``fedcore-loop`` / ``fedcore-vmap``: a real fedcore round, ``fedavg(0.05).round(state,
  batch, oracle)``, with the ``RoundBatch`` formed by ``fedcore.run.sample_round`` as in
  ``simulate`` (client permutation, weights, ``sample_indices``; each step's minibatch is
  gathered inside the round): the time includes forming the batch (its share is printed
  as ``batch``);
- ``minimal``: a hand-written sequential loop: one nn.Module reused, its parameters loaded
  from the flat global vector for each client, each step's B rows (from ``sample_indices``)
  gathered from the resident tensors, SGD by hand (``torch._foreach_add_``), weighted
  average of flat vectors;
- ``conventional``: how typical research code does it: per client ``copy.deepcopy`` of the
  global model, a ``DataLoader`` (batch B) over the client's ``Subset`` of a
  ``TensorDataset``, a ``torch.optim.SGD``, then ``state_dict`` averaging.  What typical
  code pays is all still there (deepcopy, optimizer set-up, per-sample ``__getitem__`` and
  collation in the DataLoader, state_dict arithmetic); only the choice of the minibatches
  is now shared: instead of ``shuffle=True`` the DataLoader's sampler is the client's K*B
  positions from ``sample_indices``, in order, so it yields exactly the other variants'
  minibatches;
- ``floor``: one model stepping the concatenated batch of all clients (S*B samples) K
  times, with the same per-step gather of S*B rows (``sample_indices``' rows, step k of
  every client): what the round would cost if the clients' models did not differ.  No
  per-client Python work: the draw and the gathers are tensor operations.

Before the timing, a cheap check (one round of K = 2, and K = 1 for the floor) that the
variants really see the same minibatches: see ``check_same_minibatches``.

Each variant is warmed up once (one round with K = 1: same shapes), then the variants
are timed round-robin, the order rotated every repeat, so that load from other
processes spreads over all of them; the table gives the median (and min..max) per round
and its ratio to the floor's median.  A workload starts no new repeat after its time
budget, so a busy machine gives fewer rounds, not a much longer run.  Results and what
they mean: ``benchmarks/README.md``.

    python benchmarks/round_speed.py                       # w1 and w2, ~2.5 min on 2 idle CPU cores
    python benchmarks/round_speed.py --quick --json out.json   # ~1 min
    python benchmarks/round_speed.py --workloads rule      # the auto rule's measurements
    python benchmarks/round_speed.py --workloads runs      # many runs in one pass (benchmarks/passes.py)
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
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
    seed: int = 0  # the model's initial weights
    sample_seed: int = 0  # the round's draws, as simulate(seed=...): clients seed, minibatches seed + 1
    train: bool = True  # dropout on (train mode); the minibatch check turns it off
    extra: dict[str, list[float]] = field(default_factory=dict)

    @property
    def batch(self) -> int:
        return self.workload.batch_size

    def model(self) -> nn.Module:
        """The workload's model, same initial weights every time, in train mode (or eval for the check)."""
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.seed)
            return self.workload.model().to(self.device).train(self.train)

    def generators(self) -> tuple[torch.Generator, torch.Generator]:
        """The clients' sampler (CPU) and the minibatches' generator (data's device), seeded as in simulate."""
        sampler = torch.Generator().manual_seed(self.sample_seed)
        return sampler, torch.Generator(device=self.device).manual_seed(self.sample_seed + 1)

    def draw(self, sampler: torch.Generator, generator: torch.Generator, steps: int) -> tuple[Tensor, Tensor, Tensor]:
        """The round's S clients ``[S]`` (all of them, in a random order), weights n_i / sum n_j ``[S]`` and
        the rows ``[S, K, B]`` of their minibatches: what ``fedcore.run.sample_round`` draws, tensor ops only."""
        clients = torch.randperm(self.data.num_clients, generator=sampler)[: self.workload.clients].to(self.device)
        sizes = self.data.sizes[clients].float()
        rows = self.data.sample_indices(clients, steps, self.batch, generator)
        return clients, sizes / sizes.sum(), rows


@dataclass(frozen=True)
class Variant:
    round: Callable[[int], None]  # one round of `steps` local steps
    x: Callable[[], Tensor]  # the global model after the last round, flat (for the minibatch check)


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _flat(module: nn.Module) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def fedcore_variant(ctx: Context, backend: str) -> Variant:
    data, S = ctx.data, ctx.workload.clients
    problem = Problem(data, ctx.model())
    algorithm = fedavg(client_lr=LR)
    oracle = GradientOracle(problem.model, backend, ctx.device)
    state = algorithm.init(problem.x0(), data.num_clients)
    sampler, batch_generator = ctx.generators()
    batch_times = ctx.extra.setdefault(f"fedcore-{backend}", [])

    def one_round(steps: int) -> None:
        nonlocal state
        started = time.perf_counter()
        batch = sample_round(data, 0, S, steps, ctx.batch, "samples", state["x"].dtype, sampler, batch_generator)
        _sync(ctx.device)
        batch_times.append(time.perf_counter() - started)
        with problem.model.mode(training=ctx.train):
            state, _ = algorithm.round(state, batch, oracle)

    return Variant(one_round, lambda: state["x"])


def minimal_variant(ctx: Context) -> Variant:
    """One module reused; parameters loaded from the flat global vector per client; each step
    gathers that client's B rows of ``sample_indices`` from the resident tensors."""
    module = ctx.model()
    params = list(module.parameters())
    x = torch.nn.utils.parameters_to_vector(params).detach().clone()
    numels = [p.numel() for p in params]
    inputs, targets = ctx.data.inputs, ctx.data.targets
    sampler, generator = ctx.generators()

    def one_round(steps: int) -> None:
        nonlocal x
        _, weights, rows = ctx.draw(sampler, generator, steps)
        new_x = torch.zeros_like(x)
        for client_rows, weight in zip(rows, weights):  # [K, B], []
            with torch.no_grad():
                torch._foreach_copy_(params, [v.view_as(p) for v, p in zip(x.split(numels), params)])
            for step_rows in client_rows:  # [B]
                loss = F.cross_entropy(module(inputs.index_select(0, step_rows)), targets.index_select(0, step_rows))
                grads = torch.autograd.grad(loss, params)
                with torch.no_grad():
                    torch._foreach_add_(params, grads, alpha=-LR)
            with torch.no_grad():
                new_x += weight * torch.cat([p.reshape(-1) for p in params])
        x = new_x

    return Variant(one_round, lambda: x)


def conventional_variant(ctx: Context) -> Variant:
    """Typical research code: per client deepcopy + DataLoader(Subset) + torch.optim.SGD, state_dict
    averaging.  It keeps all of that code's overhead (deepcopy, optimizer set-up, the DataLoader's
    per-sample ``__getitem__`` through Subset and TensorDataset and its collation, state_dict
    arithmetic); only the minibatch choice is shared with the other variants: the DataLoader's
    sampler is the client's K*B positions from ``sample_indices`` in order (where typical code
    has ``shuffle=True``), so its K batches are exactly the other variants' minibatches."""
    global_model = ctx.model()
    dataset = TensorDataset(ctx.data.inputs, ctx.data.targets)
    subsets = [
        Subset(dataset, range(int(start), int(start + size)))
        for start, size in zip(ctx.data.offsets, ctx.data.sizes)
    ]
    offsets = ctx.data.offsets
    sampler, generator = ctx.generators()

    def one_round(steps: int) -> None:
        clients, _, rows = ctx.draw(sampler, generator, steps)
        positions = (rows - offsets[clients].view(-1, 1, 1)).flatten(1)  # [S, K*B] within each client's Subset
        states, sizes = [], []
        for client, order in zip(clients.tolist(), positions.tolist()):
            local = copy.deepcopy(global_model)
            local.train(ctx.train)
            optimizer = torch.optim.SGD(local.parameters(), lr=LR)
            loader = DataLoader(subsets[client], batch_size=ctx.batch, sampler=order)  # K batches of B, in order
            for xb, yb in loader:
                optimizer.zero_grad()
                F.cross_entropy(local(xb), yb).backward()
                optimizer.step()
            states.append(local.state_dict())
            sizes.append(len(subsets[client]))
        total = sum(sizes)
        average = {key: sum(s[key] * (n / total) for s, n in zip(states, sizes)) for key in states[0]}
        global_model.load_state_dict(average)

    return Variant(one_round, lambda: _flat(global_model))


def floor_variant(ctx: Context) -> Variant:
    """One model, K steps on the concatenated S*B samples: step k gathers step k's rows of all
    clients (``sample_indices``) in one index_select.  No per-client Python work."""
    module = ctx.model()
    params = list(module.parameters())
    inputs, targets = ctx.data.inputs, ctx.data.targets
    sampler, generator = ctx.generators()

    def one_round(steps: int) -> None:
        _, _, rows = ctx.draw(sampler, generator, steps)
        for batch in rows.transpose(0, 1).reshape(steps, -1):  # [K, S*B]: a loop over steps, not clients
            loss = F.cross_entropy(module(inputs.index_select(0, batch)), targets.index_select(0, batch))
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                torch._foreach_add_(params, grads, alpha=-LR)

    return Variant(one_round, lambda: _flat(module))


def make_variant(name: str, ctx: Context) -> Variant:
    if name.startswith("fedcore-"):
        return fedcore_variant(ctx, name.removeprefix("fedcore-"))
    return {"minimal": minimal_variant, "conventional": conventional_variant, "floor": floor_variant}[name](ctx)


CHECK_TOLERANCE, CHECK_CLIENTS = 1e-4, 4


def check_same_minibatches(workload: Workload, data: FederatedData, device: torch.device) -> dict:
    """Do the variants train on the same minibatches?  One round of 4 of the clients from fresh
    variants (cheap: a few seconds), compared with ``minimal`` (max abs difference of the averaged
    model, asserted <= 1e-4):

    - every per-client variant (fedcore's, conventional) after one round of K = 2 steps;
    - the floor after one step (K = 1), when the round's weights are equal (all clients the same
      size, as in the iid Fashion-MNIST splits): then its one step on the S*B concatenated rows,
      whose mean loss has gradient (1/S) sum_i g_i, is FedAvg's K = 1 round.  Shakespeare's roles
      differ in size: there the floor is not compared (it draws its rows with the same code).

    The check runs in eval mode (dropout off; same model and weights otherwise): with dropout on
    the variants draw different masks (the loops consume torch's global generator in different
    orders, vmap draws per client batch), so even on the same minibatches their models would differ
    by far more than the tolerance, and the check could not tell masks from minibatches.  A control,
    ``minimal`` with other draws (sample seed 100), shows how far apart other minibatches put the
    model: the check fails if that is not above 10x the tolerance.
    """
    workload = dataclasses.replace(workload, clients=min(workload.clients, CHECK_CLIENTS))
    steps = {name: 1 if name == "floor" else 2 for name in workload.variants}

    def after_one_round(name: str, k: int, sample_seed: int = 0) -> Tensor:
        variant = make_variant(name, Context(data, workload, device, sample_seed=sample_seed, train=False))
        variant.round(k)
        return variant.x().detach().clone()

    reference = {k: after_one_round("minimal", k) for k in sorted(set(steps.values()) | {2})}
    start = _flat(Context(data, workload, device, train=False).model())
    report: dict = {"steps": steps, "tolerance": CHECK_TOLERANCE, "max_abs_difference": {},
                    "update_max_abs": float((reference[2] - start).abs().max())}
    control = float((after_one_round("minimal", 2, sample_seed=100) - reference[2]).abs().max())
    report["control_other_minibatches"] = control
    if not control > 10 * CHECK_TOLERANCE:
        raise AssertionError(f"{workload.title}: other minibatches move the model by only {control:.2e}")
    equal_weights = bool((data.sizes == data.sizes[0]).all())
    for name in workload.variants:
        if name == "minimal" or (name == "floor" and not equal_weights):
            continue
        difference = float((after_one_round(name, steps[name]) - reference[steps[name]]).abs().max())
        report["max_abs_difference"][name] = difference
        if not difference <= CHECK_TOLERANCE:
            raise AssertionError(
                f"{workload.title}: {name} after one round (K={steps[name]}, eval mode) differs from minimal by "
                f"{difference:.2e} > {CHECK_TOLERANCE}: not the same minibatches?")
    return report


def run_workload(key: str, workload: Workload, device: torch.device, repeats: int, budget_s: float) -> dict:
    data = workload.data(workload.clients, device)
    check = check_same_minibatches(workload, data, device)
    ctx = Context(data, workload, device)
    rounds = {name: make_variant(name, ctx).round for name in workload.variants}
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
            round_started = time.perf_counter()
            rounds[name](K)
            _sync(device)
            times[name].append(time.perf_counter() - round_started)
    floor = statistics.median(times["floor"])
    results = {}
    for name in names:
        median = statistics.median(times[name])
        results[name] = {"median_s": median, "ratio_to_floor": median / floor, "times_s": times[name]}
        if name in ctx.extra:
            results[name]["batch_median_s"] = statistics.median(ctx.extra[name])
    model = Problem(data, ctx.model()).model
    return {"title": workload.title, "clients": workload.clients, "dim": model.dim, "batch_size": workload.batch_size,
            "auto_backend": choose_backend(model, device), "repeats": len(times["floor"]), "variants": results,
            "same_minibatches_check": check}


def print_table(key: str, result: dict) -> None:
    print(f"\n{key}: {result['title']}, d={result['dim']:,}, K={K}, B={result['batch_size']}, "
          f"{result['repeats']} rounds each; auto picks {result['auto_backend']}")
    print(f"  {'variant':<14} {'median s':>9} {'x floor':>8}   {'min..max s':<15} {'of which batch':>14}")
    for name, row in result["variants"].items():
        times = row["times_s"]
        batch = f"{row['batch_median_s']:.3f} s" if "batch_median_s" in row else ""
        print(f"  {name:<14} {row['median_s']:9.3f} {row['ratio_to_floor']:7.2f}x   "
              f"{min(times):.3f}..{max(times):<8.3f} {batch:>14}")
    check = result["same_minibatches_check"]
    differences = ", ".join(f"{name} {value:.0e}" for name, value in check["max_abs_difference"].items())
    print(f"  same minibatches (one round, eval mode; max |x - x_minimal|): {differences}; "
          f"other minibatches: {check['control_other_minibatches']:.0e}")
    sys.stdout.flush()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    choices = [*WORKLOADS, "rule", *RULE, "runs"]
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
        if key == "runs":  # many runs in one pass against one at a time: benchmarks/passes.py
            from passes import measure

            print("\nruns: R runs in one pass (simulate_runs) against one simulate per run, seconds per run-round")
            report["workloads"]["runs"] = measure(device, args.quick)
            continue
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
