"""FedLi's Tables 1 and 2 and its hyper-parameter claims on the tasks reachable here (notebook ``03_fedli``,
sections 3 to 5), on the common contract.  Stand-ins: Fashion-MNIST by Dirichlet(0.5) over 100 clients for FEMNIST
with a 784-64-10 MLP below ``paper`` (Reddi et al.'s CNN at ``paper``); Shakespeare (the char-LSTM) and CIFAR-10/100
(ResNet-18, GroupNorm) at ``paper`` only.  A score is the test accuracy in % over the last four evaluations; tuning
keeps the lowest final training loss after ``tune_rounds`` (the paper: training accuracy, not recorded here) on our
grids (the paper's were lost); FedLi-LU's clients run at FedAvg's tuned rate (the paper does not say which).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_seed, check_seeds
from fedcore.comparisons import compare
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.results import History
from fedcore.store import Store
from papers import common
from papers.claims import trivial_baseline
from papers.common import Kinds, Scale, Selection, Task, best_value, half_decades, scale_at
from papers.fedli.paper import METHODS, NEAR_BEST, RATE_METHODS, TASKS, widths

run, tune = common.run, common.tune  # the contract's machinery, not a copy


@dataclass(frozen=True)
class FedliScale(Scale):
    """A ``Scale`` with the Shakespeare roles (None: all) and the long horizon (:func:`long_task`: the paper's 500
    rounds) on which the paper's accuracy sentences and FedLi-LU's sweeps are judged."""

    shakespeare_roles: int | None = None
    long: Mapping[str, int] = field(default_factory=lambda: {"rounds": 500, "eval_every": 10})

    KINDS = {"rounds": Kinds.count(), "eval_every": Kinds.count(), "tasks": Kinds.names(TASKS),
             "shakespeare_roles": Kinds.optional(Kinds.count(), "all"),
             "long": Kinds.counts(("rounds", "eval_every"), required=("rounds",))}


SCALES: dict[str, FedliScale] = {
    "smoke": FedliScale("smoke", seeds=(0, 1), rounds=3, eval_every=3, tasks=("femnist",), tune_rounds=2,
                        max_local_steps=2, test_samples=200, shakespeare_roles=10,
                        long={"rounds": 4, "eval_every": 2}, tuning_seeds=(100,)),
    "small": FedliScale("small", seeds=(0, 1, 2, 3, 4), rounds=40, eval_every=5, tasks=("femnist",), tune_rounds=10,
                        max_local_steps=5, shakespeare_roles=100, long={"rounds": 500, "eval_every": 50},
                        tuning_seeds=(100, 101)),
    "medium": FedliScale("medium", seeds=(0, 1, 2, 3, 4), rounds=100, eval_every=10, tasks=("femnist",),
                         tune_rounds=25, max_local_steps=10, shakespeare_roles=100,
                         long={"rounds": 500, "eval_every": 50}, tuning_seeds=(100, 101, 102)),
    "paper": FedliScale("paper", seeds=(0, 1, 2, 3, 4), rounds=500, eval_every=10,
                        tasks=("femnist", "shakespeare", "cifar10", "cifar100"), tune_rounds=100,
                        long={"rounds": 500, "eval_every": 10}, tuning_seeds=(100, 101, 102)),
}
"""The paper: 5 seeds, 500 rounds, tuning runs of 100 rounds, the full local epoch, every task.  ``medium``: the
paper's 5 seeds, 100 rounds, twice ``small``'s K (about an hour on 2 CPU cores, estimated from ``small``).  The grid
searches run on ``tuning_seeds``, apart from the judging ``seeds``; the partition is the same for both."""
CIFAR = ("cifar10", "cifar100")
CLIENTS, CLIENTS_PER_ROUND, BATCH_SIZE, ALPHA = 100, 10, 32, 0.5
WEIGHTING = "samples"
"""``w_i = n_i / sum_S n_j`` over the round's clients (the authors' code)."""
CLIENT_LRS = half_decades(-2.0, 0.0)
"""Half-decades from 0.01 to 1: the baselines' client rates in their grids, and :func:`client_rate_sweep`'s."""
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": CLIENT_LRS},
    "FedProx": {"client_lr": CLIENT_LRS, "mu": [0.001, 0.01, 0.1]},
    "SCAFFOLD": {"client_lr": CLIENT_LRS},
    "FedAdam": {"client_lr": CLIENT_LRS, "server_lr": half_decades(-2.0, -1.0)},
    "FedExP": {"client_lr": CLIENT_LRS, "eps": [0.001, 0.01, 0.1]},
}
"""The baselines' grids (ours; the paper's were lost): 5 + 15 + 5 + 15 + 15 = 55 points per task (at ``smoke``
each list's ends, ``common.grids_at``)."""
FEDADAM_TAU = 1e-3
SERVER_STEP_RULES: dict[str, dict[str, Any]] = {
    "FedLi-LS": {"server_step_size": "max_client_step"},
    "FedLi-LS (server step 1)": {"server_step_size": "one"},
}
"""FedLi-LS under each server rule: Table 1's (``eta_g = max_i eta_i``, the non-convex rule) and the convex rule
``eta_g = 1``."""
CONSTANTS: dict[str, dict[str, Any]] = {
    "FedLi-LS c": {"method": "FedLi-LS", "name": "c", "default": 0.1, "values": [0.01, 0.1, 0.3, 0.9],
                   "horizon": "tables"},
    "FedLi-LS 1 - beta_b": {"method": "FedLi-LS", "name": "shrink", "default": 0.1, "values": [0.05, 0.1, 0.5],
                            "horizon": "tables"},
    "FedLi-LS growth gamma": {"method": "FedLi-LS", "name": "gamma", "default": 2.0, "values": [1.0, 2.0, 10.0],
                              "horizon": "tables"},
    "FedLi-LU eta (DFW)": {"method": "FedLi-LU", "name": "eta", "default": 0.01, "values": [1e-3, 1e-2, 1e-1, 1.0],
                           "horizon": "long"},
    "FedLi-LU 1 - mu (DFW)": {"method": "FedLi-LU", "name": "damping", "default": 0.1, "values": [0.01, 0.1, 0.5, 1.0],
                              "horizon": "long"},
}
"""FedLi's constants that act, swept around their defaults, each on the horizon where it is judged: the tables' for
FedLi-LS (SLS's Armijo constant, backtracking factor and growth), the long one (:func:`long_task`) for FedLi-LU (the
authors' DFW step and its momentum).  The two factors below 1 are swept as what they take away, so that decades of
them compare with decades of a rate: ``1 - beta_b`` (the share of the step each backtrack removes) and ``1 - mu``
(``1 / (1 - mu)`` is the momentum's gain).  SLS's cap ``eta_max = 10`` is left out: the accepted steps stay far below
it (:func:`largest_client_step`), so it never acts."""
LONG_RATES = [0.01, 0.1, 1.0]
"""The clients' rates swept on the long horizon: decades (the tables' grid in half-decades costs twice the runs)."""
LONG_RATE_METHODS = ("FedLi-LU", "FedAvg")
"""The methods whose client rate is swept on the long horizon: FedLi-LU and the paper's first baseline (the budget
leaves FedExP's to Table 1's horizon)."""


def epoch_steps(data: FederatedData) -> int:
    """One local epoch as a fixed K: ``ceil(mean client size / 32)`` (the paper's K, before a scale's cap)."""
    return math.ceil(float(data.sizes.double().mean()) / BATCH_SIZE)


def _data(task: str, scale: FedliScale, seed: int, device: str) -> FederatedData:
    if task in CIFAR:
        data = load_torchvision(task, CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
    elif task == "femnist":
        data = load_fashion_mnist(CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
        data.info.update(stands_for="FEMNIST", stand_in="Fashion-MNIST, 100 clients, Dirichlet(0.5)")
    else:
        data = load_shakespeare(scale.shakespeare_roles, seed=seed, device=device)
    return data.test_subset(scale.test_samples, seed)


def _model(task: str, scale: FedliScale, data: FederatedData) -> tuple[Callable[[int], Any], str]:
    """``(model drawn from a seed, label where it is not the paper's)``."""
    name, options, label = (("char_lstm", {}, "the char-LSTM for the paper's RNN") if task == "shakespeare" else
                            ("resnet18_gn", {}, "") if task in CIFAR else
                            ("cnn", {}, "Reddi et al.'s CNN for the paper's CNN") if scale.name == "paper" else
                            ("mlp", {"hidden": (64,)}, "a 784-64-10 MLP standing in for the CNN"))
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    return (lambda seed: models.make(name, shape, classes, seed=seed, **options)), label


def tasks(scale: str | FedliScale, *, partition_seed: int = 0, device: str = "cpu") -> dict[str, Task]:
    """``{name: Task}`` for ``scale.tasks``: the data (its partition drawn from ``partition_seed``), the model drawn
    from a seed, test accuracy in % with its trivial baseline, 10 clients per round, one local epoch of batch 32
    capped at ``max_local_steps``; tuning by the final training loss after ``tune_rounds`` rounds."""
    chosen = scale_at(SCALES, scale)
    partition_seed = check_seed("partition_seed", partition_seed)
    selection = Selection("train_loss", evaluations=1, higher_is_better=False, rounds=chosen.tune_rounds,
                          eval_every=0)
    built = {}
    for name in chosen.tasks:
        data = _data(check_choice("tasks", name, TASKS), chosen, partition_seed, device)
        model, label = _model(name, chosen, data)
        steps, cap = epoch_steps(data), chosen.max_local_steps
        settings = {"rounds": chosen.rounds, "clients_per_round": CLIENTS_PER_ROUND,
                    "local_steps": min(steps, cap) if cap else steps, "batch_size": BATCH_SIZE,
                    "eval_every": chosen.eval_every, "weighting": WEIGHTING}
        built[name] = Task(name, data, model, settings, baseline=trivial_baseline(data), model_label=label,
                           unit=100.0, selection=selection)
    return built


def long_task(task: Task, scale: str | FedliScale) -> Task:
    """``task`` on the scale's long horizon (``long``: the paper's 500 rounds at ``small``), where FedLi-LU's fixed
    small server step has had time to act: its sweeps run there."""
    return dataclasses.replace(task, name=f"{task.name} (long)",
                               settings={**task.settings, **scale_at(SCALES, scale).long})


def fedli_ls(**options: Any) -> algorithms.FedLiLS:
    """Table 1's FedLi-LS: SLS's constants (first step 1, cap 10, growth over each client's own epoch) and the
    non-convex server rule, the largest client step; ``options`` replace any of them (:data:`SERVER_STEP_RULES`)."""
    return algorithms.fedli_ls(**{"server_step_size": "max_client_step", **options})


_BUILDERS: dict[str, Callable[..., Any]] = {
    "FedLi-LU": lambda client_lr: algorithms.fedli_lu(client_lr),
    "FedLi-LS": fedli_ls,
    "FedAdam": lambda client_lr, server_lr: algorithms.fedadam(client_lr, server_lr=server_lr, tau=FEDADAM_TAU),
    "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
    "FedProx": lambda client_lr, mu: algorithms.fedprox(client_lr, mu=mu),
    "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
    "FedExP": lambda client_lr, eps: algorithms.fedexp(client_lr, eps=eps),
}


def make_builders(task: Task, scale: str | FedliScale) -> dict[str, Callable[..., Any]]:
    """``{method: build(**hyperparameters)}``: the seven methods in Table 1's order (FedLi-LS takes none, FedLi-LU
    ``client_lr``, the baselines :data:`GRIDS`' keywords), then FedLi-LS under the other :data:`SERVER_STEP_RULES`."""
    scale_at(SCALES, scale)
    rules = {method: partial(fedli_ls, **options) for method, options in list(SERVER_STEP_RULES.items())[1:]}
    return {method: _BUILDERS[method] for method in METHODS} | rules


def line_search_cost(runs: Mapping[str, Sequence[History]]) -> pd.DataFrame:
    """Per method of ``runs`` (``{method: [History of each seed]}``): the seconds per round (median over the seeds),
    its ratio to FedAvg's (the median of the per-seed ratios), and for FedLi-LS the loss evaluations per local step
    and the clients' step sizes (each round's mean, min, max over the clients, averaged over rounds and seeds)."""
    if "FedAvg" not in runs:
        raise ValueError(f"runs needs FedAvg's runs to compare with; it has {list(runs)}")
    base = [float(h.frame["seconds"].mean()) for h in runs["FedAvg"]]
    rows = {}
    for method, histories in runs.items():
        if len(histories) != len(base):
            raise ValueError(f"{method} has {len(histories)} runs, FedAvg {len(base)}: one per seed each")
        seconds = [float(h.frame["seconds"].mean()) for h in histories]
        rows[method] = {"seconds per round": float(np.median(seconds)),
                        "relative to FedAvg": float(np.median([s / b for s, b in zip(seconds, base)]))} | {
            column.replace("_", " "): float(np.mean([h.frame[column].mean() for h in histories]))
            for column in ("loss_evaluations_per_step", "client_step_mean", "client_step_min", "client_step_max")
            if column in histories[0].frame}
    return pd.DataFrame(rows).T


def server_steps(results: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Per (task, method) that computes its server step (FedLi-LS's ``eta_g``, FedLi-LU's Deep-Frank-Wolfe
    ``gamma_t``, clipped at 1), that step over all rounds of all seeds."""
    rows = {}
    for task, by_method in results.items():
        for method, histories in by_method.items():
            for column, name in (("eta_g", "eta_g"), ("gamma", "gamma_t")):
                if column in histories[0].frame:
                    steps = pd.concat([h.frame[column].dropna() for h in histories])
                    beyond = steps > 1.0 if column == "eta_g" else steps >= 1.0  # gamma_t is clipped at 1
                    rows[(task, method)] = {"server step": name, "mean": steps.mean(), "min": steps.min(),
                                            "max": steps.max(), "rounds (all seeds)": len(steps),
                                            "rounds above 1 (eta_g) or at 1 (gamma_t)": int(beyond.sum())}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["task", "method"])


def step_means(results: Mapping[str, Mapping[str, Sequence[History]]], column: str = "eta_g") -> pd.DataFrame:
    """Per (task, method) whose runs report ``column`` (FedLi-LS's ``eta_g``, FedLi-LU's ``gamma``), each seed's
    mean over its rounds: rows ``(task, method)``, one column per seed (in the runs' order)."""
    rows = {(task, method): [float(h.frame[column].dropna().mean()) for h in histories]
            for task, by_method in results.items() for method, histories in by_method.items()
            if column in histories[0].frame}
    if not rows:
        raise ValueError(f"no run reports {column!r}: give FedLi-LS's runs (eta_g) or FedLi-LU's (gamma)")
    return pd.DataFrame(list(rows.values()), index=pd.MultiIndex.from_tuples(list(rows), names=["task", "method"]))


def gammas(histories: Sequence[History]) -> pd.Series:
    """FedLi-LU's Deep-Frank-Wolfe ``gamma_t`` over every round of every run of ``histories``."""
    return pd.concat([h.frame["gamma"].dropna() for h in histories])


def gamma_columns(histories: Sequence[History]) -> dict[str, float]:
    """Over every round of FedLi-LU's runs ``histories``: the share of rounds (%) with ``gamma_t = 1`` (the cap),
    the mean and the smallest ``gamma_t``."""
    every = gammas(histories)
    return {"rounds at gamma_t = 1 (%)": round(100 * float((every >= 1.0).mean()), 1),
            "mean gamma_t": float(every.mean()), "smallest gamma_t": float(every.min())}


def capped_rounds(histories: Sequence[History]) -> tuple[int, int]:
    """``(rounds with gamma_t = 1, rounds)`` over FedLi-LU's runs ``histories``: where ``gamma_t`` is clipped at 1 the
    clients' loss average does not enter the step (:func:`fedcore.algorithms.deep_frank_wolfe`)."""
    every = gammas(histories)
    return int((every >= 1.0).sum()), len(every)


ABLATION = "FedLi-LU, pseudo-gradient / (client rate K)"
"""FedLi-LU with its pseudo-gradient on the gradient's scale (``fedli_lu(pseudo_gradient_scale=client_lr K)``): an
ablation of ours, where the Polyak step can fall below its cap."""


def gamma_table(runs: Mapping[str, tuple[Sequence[History], Sequence[float]]], reference: str) -> pd.DataFrame:
    """Per label of ``runs`` (``{label: (FedLi-LU's histories, their scores)}``, one of each per seed): the score
    (mean ± sd), the share of rounds with ``gamma_t = 1`` and the mean ``gamma_t`` over all rounds and seeds, and the
    paired difference from ``reference``'s scores (mean [95% interval], p; outcome)."""
    if reference not in runs:
        raise ValueError(f"reference={reference!r} is not one of the runs {list(runs)}")
    rows = {}
    for label, (histories, scores) in runs.items():
        shares = gamma_columns(histories)
        rows[label] = {"accuracy (%, mean ± sd)": common.mean_sd_cell(scores),
                       "rounds at gamma_t = 1 (%)": shares["rounds at gamma_t = 1 (%)"],
                       "mean gamma_t": round(shares["mean gamma_t"], 3),
                       f"minus {reference} (points, mean [95% interval], p)": "-" if label == reference else
                       "{1} ({0})".format(*compare(list(scores), list(runs[reference][1])))}
    return pd.DataFrame(rows).T


def gamma_sweep(task: Task, client_lr: float, table: pd.DataFrame, seeds: Sequence[int], *,
                store: Store | None = None) -> pd.DataFrame:
    """FedLi-LU's Deep-Frank-Wolfe ``gamma_t`` at each DFW ``eta`` that :func:`constant_sweep` ran (``table``: its
    sweep of ``"FedLi-LU eta (DFW)"``, its clients at ``client_lr``; the runs read back from ``store``): per ``eta``
    the share of rounds with ``gamma_t = 1`` (the cap: the step is ``eta`` times the pseudo-gradient), the mean and
    the smallest ``gamma_t``, all seeds."""
    values = [float(eta) for eta in table.index if table.loc[eta].notna().any()]
    ran = run(task, {f"{eta:g}": partial(algorithms.fedli_lu, client_lr, eta=eta) for eta in values}, seeds,
              store=store)[task.name]
    return pd.DataFrame({eta: gamma_columns(ran[label]) for eta, label in zip(values, ran)}).T.rename_axis("DFW eta")


def largest_client_step(histories: Sequence[History]) -> float:
    """The largest step any FedLi-LS client accepted last in a round, over every round of ``histories``: where it
    stays below SLS's cap ``eta_max`` the cap never acted on a last step (earlier steps are not recorded)."""
    return float(max(h.frame["client_step_max"].max() for h in histories))


def client_rate_sweep(task: Task, chosen: Mapping[str, Mapping[str, float]], seeds: Sequence[int],
                      methods: Sequence[str] = RATE_METHODS, rates: Sequence[float] = CLIENT_LRS, *,
                      store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """How much each SGD method of ``methods`` (of :data:`RATE_METHODS`; FedExP at its ``chosen`` eps) depends on
    its clients' rate: ``Task.score`` at the ``rates`` (rows) from every seed (columns: method, seed), each curve run
    outward from the method's ``chosen`` rate (FedLi-LU: FedAvg's) and stopped on a side once it has fallen
    :data:`NEAR_BEST` below its best (:func:`~papers.common.outward_sweep`; NaN: not run)."""
    seeds = check_seeds("seeds", seeds)
    builds = {"FedLi-LU": _BUILDERS["FedLi-LU"], "FedAvg": _BUILDERS["FedAvg"],
              "FedExP": partial(_BUILDERS["FedExP"], eps=chosen["FedExP"]["eps"])}
    tables = {}
    for method in methods:
        around = chosen["FedAvg" if check_choice("methods", method, RATE_METHODS) == "FedLi-LU" else method]
        tables[method] = common.outward_sweep(lambda values, method=method: common.sweep_table(
            task, {method: builds[method]}, "client_lr", values, seeds, store=store, progress=progress)[method],
            rates, NEAR_BEST, around["client_lr"])
    return pd.concat(tables, axis=1, names=["method"]).rename_axis("client SGD rate")


def constant_sweep(task: Task, constant: str, seeds: Sequence[int], client_lr: float | None = None, *,
                   store: Store | None = None, progress: bool = False) -> pd.DataFrame:
    """``Task.score`` of FedLi at the values of one ``constant`` of :data:`CONSTANTS` (rows), the others at their
    defaults, from every seed (columns): FedLi-LS as in Table 1, FedLi-LU's clients at ``client_lr``; run outward
    from the default (:func:`~papers.common.outward_sweep`; NaN: not run)."""
    entry = CONSTANTS[check_choice("constant", constant, tuple(CONSTANTS))]
    if entry["method"] == "FedLi-LU" and client_lr is None:
        raise ValueError(f"constant={constant!r} needs client_lr, the rate of FedLi-LU's SGD clients")
    build = {"shrink": lambda shrink: fedli_ls(backtrack=1 - shrink),
             "damping": lambda damping: algorithms.fedli_lu(client_lr, mu=1 - damping)}.get(
        entry["name"], fedli_ls if entry["method"] == "FedLi-LS" else partial(algorithms.fedli_lu, client_lr))
    return common.outward_sweep(lambda values: common.sweep_table(
        task, {constant: build}, entry["name"], values, seeds, store=store, progress=progress)[constant],
        entry["values"], NEAR_BEST, entry["default"]).rename_axis(entry["name"])


def at_best(tables: Mapping[str, pd.DataFrame], reference: str) -> pd.DataFrame:
    """Each sweep of ``tables`` (``{label: table}``, rows the swept values, one column per seed) at its best value:
    the value, the score (mean ± sd) and its paired difference from ``reference``'s (mean, 95% interval, p;
    outcome), each row alone (uncorrected)."""
    if reference not in tables:
        raise ValueError(f"reference={reference!r} is not one of the tables {list(tables)}")
    best = {label: table.loc[best_value(table)] for label, table in tables.items()}
    rows = {label: {"best value": best_value(tables[label]), "accuracy (%, mean ± sd)": common.mean_sd_cell(scores),
                    f"minus {reference} (points, mean [95% interval], p)": "-" if label == reference else
                    "{1} ({0})".format(*compare(list(scores), list(best[reference])))}
            for label, scores in best.items()}
    return pd.DataFrame(rows).T


def span_table(tables: Mapping[str, pd.DataFrame], around: Mapping[str, float],
               best: Mapping[str, Mapping[Any, float]], within: float = NEAR_BEST) -> pd.DataFrame:
    """Per sweep (``{setting: table}``, one column per seed, rows the values; NaN: not run): the value ``around``
    which its span is measured, the best value (mean over seeds) and its score, the score at ``around``, and each
    seed's width in decades (:func:`~papers.fedli.paper.widths`) within ``within`` of its own best and
    of ``best[setting]`` (per seed: the best score any method reached at that horizon), with their means."""
    rows = {}
    for setting, table in tables.items():
        mean = table.mean(axis=1, skipna=False)
        at = around[setting]
        own, common_target = widths(table, at, within), widths(table, at, within, best[setting])
        rows[setting] = {"around": at, "best value": mean.idxmax(), "best (%)": round(mean.max(), 2),
                         "at 'around' (%)": round(mean[at], 2),
                         "own best: width per seed (decades)": ", ".join(f"{w:.2f}" for w in own),
                         "own best: mean": round(float(np.mean(own)), 2),
                         "best method: width per seed": ", ".join(f"{w:.2f}" for w in common_target),
                         "best method: mean": round(float(np.mean(common_target)), 2)}
    return pd.DataFrame(rows).T


def accuracy_at(results: Mapping[str, Mapping[str, Sequence[History]]], rounds: Sequence[int]) -> pd.DataFrame:
    """Test accuracy in % at each of ``rounds`` that the runs evaluated (else the first round they evaluated after
    round 0): rows ``(task, round, method)``, one column per seed (the runs' order)."""
    rows = {}
    for task, by_method in results.items():
        evaluated = [int(r) for r in by_method[next(iter(by_method))][0].frame["test_accuracy"].dropna().index if r > 0]
        for r in [r for r in rounds if r in evaluated] or evaluated[:1]:
            for method, histories in by_method.items():
                rows[(task, r, method)] = [100 * float(h.frame.loc[r, "test_accuracy"]) for h in histories]
    return pd.DataFrame(list(rows.values()),
                        index=pd.MultiIndex.from_tuples(list(rows), names=["task", "round", "method"]))
