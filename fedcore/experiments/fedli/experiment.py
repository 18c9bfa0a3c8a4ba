"""FedLi's Tables 1 and 2 on the tasks reachable here (notebook ``03_fedli``, sections 3 and 4), on the common layer
(:mod:`fedcore.experiments.common`).

The paper (:mod:`~fedcore.experiments.fedli.paper`: its setup and numbers) trains on CIFAR-10/100, FEMNIST and
Shakespeare.  Here (:func:`tasks` builds them as :class:`~fedcore.experiments.common.Task`):

- **FEMNIST -> Fashion-MNIST** (EMNIST cannot be fetched): 100 clients by Dirichlet(0.5) (the paper's split of
  FEMNIST is by writer; its Dirichlet value for CIFAR was lost), 10 per round, batch 32, one local epoch (K =
  ceil(mean client size / 32), capped per scale).  Model: the paper's "a CNN" is not specified; at ``paper`` scale
  fedcore's ``cnn`` (Reddi et al.'s EMNIST CNN), at ``small`` and ``smoke`` a one-hidden-layer MLP (64 units), so the
  notebook fits 2 CPU cores.
- **Shakespeare** on its own data (one client per play and role), the char-LSTM, 10 clients per round, batch 32.
- **CIFAR-10/100** with ResNet-18 (GroupNorm), 100 clients by Dirichlet(0.5), run only at ``paper`` scale where
  torchvision has the files (:data:`CIFAR`, :func:`task_names`).

The partition is drawn once from the seed :func:`tasks` is given and stays fixed; a seed draws the initial model,
the client sampling and the minibatches (``task.problem(seed)``, ``simulate(..., seed=seed)``).

Methods (:func:`builders`): FedLi-LS (Armijo clients, the non-convex server rule: the largest client step, with the
reset growth of one local epoch), FedLi-LU (SGD clients and the DFW server), and the tuned baselines FedAdam, FedAvg,
FedProx, SCAFFOLD and FedExP.  The paper does not say which client rate FedLi-LU's SGD clients use; here FedAvg's
tuned rate (the one a user of FedAvg would have).  **Tuning** (:data:`GRIDS`, :func:`tune`, through
:func:`fedcore.experiments.common.tune`): the paper searches 100 rounds on training accuracy; fedcore's runs record
the clients' training loss, not accuracy, so the search keeps the lowest final training loss after :data:`SCALES`'
``tune_rounds``.  The grids' values were lost in our copy of the text: ours are half-decades of the client rate,
FedProx's mu, FedAdam's server rate and FedExP's eps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
from torch import nn

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_scale, check_seed
from fedcore.data import FederatedData, load_fashion_mnist, load_shakespeare, load_torchvision
from fedcore.experiments import common
from fedcore.experiments.claims import Scope, trivial_baseline
from fedcore.experiments.common import Task, Tuning, good_range, half_decades
from fedcore.experiments.fedli.paper import METHODS, NEAR_BEST
from fedcore.experiments.fedli.theory import FIRST_PASS_LINE_SEARCH
from fedcore.results import History
from fedcore.run import simulate, sweep
from fedcore.store import Store

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 3, "eval_every": 3, "tune_rounds": 2, "max_local_steps": 2, "test_samples": 200,
              "shakespeare_roles": 10, "grid_points": 1, "rate_sweep_tasks": ("femnist",),
              "shakespeare": {"rounds": 2, "eval_every": 2, "tune_rounds": 1, "max_local_steps": 1}},
    "small": {"rounds": 40, "eval_every": 5, "tune_rounds": 10, "max_local_steps": 5, "test_samples": 2000,
              "shakespeare_roles": 100, "grid_points": None, "rate_sweep_tasks": ("femnist",),
              "shakespeare": {"rounds": 20, "eval_every": 5, "tune_rounds": 5, "max_local_steps": 2,
                              "client_lrs": half_decades(-1.0, 0.0)}},
    "paper": {"rounds": 500, "eval_every": 10, "tune_rounds": 100, "max_local_steps": None, "test_samples": None,
              "shakespeare_roles": None, "grid_points": None, "rate_sweep_tasks": ("femnist", "shakespeare"),
              "shakespeare": {}},
}
"""Per scale: rounds (the paper: 500), evaluation period, rounds per tuning run (the paper: 100), a cap on K,
test samples (None: all), Shakespeare roles (None: every eligible one), grid points per list (None: all; smoke:
the middle one), the tasks of the client-rate sweep (:func:`client_rate_sweep`; the LSTM's is left to ``paper``,
for time), and what Shakespeare's char-LSTM, the slow task on a CPU, does differently (fewer rounds and
local steps, three client rates in the grids at ``small``)."""
TASKS = ("femnist", "shakespeare")
CIFAR = ("cifar10", "cifar100")
"""CIFAR-10/100 with ResNet-18 (GroupNorm), 100 clients by Dirichlet(0.5): ``paper`` scale only, where torchvision
has the files (the paper's Dirichlet value was lost; 0.5 as for its CIFAR-10 elsewhere)."""
CLIENTS, CLIENTS_PER_ROUND, BATCH_SIZE, ALPHA = 100, 10, 32, 0.5
WEIGHTING = "samples"
"""The aggregation weights of the tables' runs: ``w_i = n_i / sum_S n_j`` over the round's clients (the authors'
code)."""
CLIENT_LRS = half_decades(-2.0, 0.0)
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"client_lr": CLIENT_LRS},
    "FedProx": {"client_lr": CLIENT_LRS, "mu": [0.001, 0.01, 0.1]},
    "SCAFFOLD": {"client_lr": CLIENT_LRS},
    "FedAdam": {"client_lr": CLIENT_LRS, "server_lr": half_decades(-2.0, -1.0)},
    "FedExP": {"client_lr": CLIENT_LRS, "eps": [0.001, 0.01, 0.1]},
}
"""The baselines' grids (ours; the paper's were lost): 5 + 15 + 5 + 15 + 15 = 55 runs per task."""
FEDADAM_TAU = 1e-3
SWEEP_LRS = half_decades(-3.0, 0.5)
"""The clients' SGD rates of :func:`client_rate_sweep`: half-decades from 0.001 to 3.16."""


def _scale(scale: str) -> dict[str, Any]:
    return check_scale(scale, SCALES)


def task_names(scale: str) -> tuple[str, ...]:
    """The tasks that run at ``scale``: :data:`TASKS`, and :data:`CIFAR` at ``paper``."""
    return TASKS + CIFAR if _scale(scale) is SCALES["paper"] else TASKS


def scale_settings(scale: str, task: str) -> dict[str, Any]:
    """:data:`SCALES`' entry of ``scale`` for ``task`` (Shakespeare's overrides applied)."""
    base = _scale(scale)
    check_choice("task", task, TASKS + CIFAR)
    return {**base, **(base["shakespeare"] if task == "shakespeare" else {})}


def epoch_steps(data: FederatedData) -> int:
    """One local epoch as a fixed K: ``ceil(mean client size / 32)`` (the paper's K, before a scale's cap)."""
    return math.ceil(float(data.sizes.double().mean()) / BATCH_SIZE)


def _data(task: str, scale: str, seed: int, device: str) -> FederatedData:
    """The stand-in of ``task`` at ``scale``, its partition drawn from ``seed``: Fashion-MNIST by Dirichlet(0.5) over
    100 clients for FEMNIST, the Shakespeare roles (all, or :data:`SCALES`' count) for Shakespeare; CIFAR-10/100 at
    ``paper`` scale.  The test set is cut to the scale's ``test_samples``."""
    chosen = _scale(scale)
    if task in CIFAR:
        if task not in task_names(scale):
            raise ValueError(f"task={task!r} runs only at scale 'paper' (ResNet-18, torchvision files); got {scale!r}")
        data = load_torchvision(task, CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
    elif task == "femnist":
        data = load_fashion_mnist(CLIENTS, "dirichlet", seed, device=device, alpha=ALPHA)
        data.info.update(stands_for="FEMNIST", stand_in="Fashion-MNIST, 100 clients, Dirichlet(0.5)")
    else:
        data = load_shakespeare(chosen["shakespeare_roles"], seed=seed, device=device)
    return data.test_subset(chosen["test_samples"], seed)


def _model(task: str, scale: str, data: FederatedData) -> tuple[Callable[[int], nn.Module], str]:
    """``(model drawn from a seed, label)`` of ``task``: the char-LSTM for Shakespeare (the paper: an RNN),
    ResNet-18 with GroupNorm for CIFAR; for the FEMNIST stand-in fedcore's CNN at ``paper`` scale (the paper's is
    not specified) and an MLP with 64 hidden units below it."""
    shape, classes = tuple(data.inputs.shape[1:]), data.num_classes
    if task == "shakespeare":
        return (lambda seed: models.make("char_lstm", shape, classes, seed=seed)), "the char-LSTM for the paper's RNN"
    if task in CIFAR:
        return (lambda seed: models.make("resnet18_gn", shape, classes, seed=seed)), ""
    if _scale(scale) is SCALES["paper"]:
        return (lambda seed: models.make("cnn", shape, classes, seed=seed)), "Reddi et al.'s CNN for the paper's CNN"
    return (lambda seed: models.make("mlp", shape, classes, seed=seed, hidden=(64,))), \
        "a 784-64-10 MLP standing in for the CNN"


def tasks(scale: str, seed: int = 0, device: str = "cpu", names: Sequence[str] | None = None) -> dict[str, Task]:
    """``{name: Task}`` for the tasks of ``scale`` (:func:`task_names`, or ``names``): the data, its partition drawn
    from ``seed`` (and fixed), the model drawn from a seed, test accuracy with its trivial baseline (%, the most
    frequent class or next character), and the round settings: the scale's rounds and evaluation period (Shakespeare's
    own at ``small``), 10 clients per round, one local epoch of batch 32 capped at the scale's ``max_local_steps``,
    the clients weighted by their samples (:data:`WEIGHTING`)."""
    seed = check_seed("seed", seed)
    names = task_names(scale) if names is None else tuple(check_choice("names", name, TASKS + CIFAR)
                                                          for name in names)
    built = {}
    for name in names:
        chosen, data = scale_settings(scale, name), _data(name, scale, seed, device)
        model, label = _model(name, scale, data)
        steps, cap = epoch_steps(data), chosen["max_local_steps"]
        settings = {"rounds": chosen["rounds"], "clients_per_round": CLIENTS_PER_ROUND,
                    "local_steps": min(steps, cap) if cap else steps, "batch_size": BATCH_SIZE,
                    "eval_every": chosen["eval_every"], "weighting": WEIGHTING}
        built[name] = Task(name, data, model, settings, baseline=trivial_baseline(data), model_label=label)
    return built


def scopes(tasks: Mapping[str, Task], scale: str, seeds: Sequence[int]) -> dict[str, Scope]:
    """Per task, what a verdict on its runs rests on: the task, the scale, its rounds, the ``seeds`` and its model
    where it is not the paper's (:class:`fedcore.experiments.claims.Scope`)."""
    _scale(scale)
    return {name: common.scope({name: task}, scale, seeds, task.model_label) for name, task in tasks.items()}


_BASELINES: dict[str, Callable[..., Any]] = {
    "FedAvg": lambda client_lr: algorithms.fedavg(client_lr),
    "FedProx": lambda client_lr, mu: algorithms.fedprox(client_lr, mu=mu),
    "SCAFFOLD": lambda client_lr: algorithms.scaffold(client_lr),
    "FedAdam": lambda client_lr, server_lr: algorithms.fedadam(client_lr, server_lr=server_lr, tau=FEDADAM_TAU),
    "FedExP": lambda client_lr, eps: algorithms.fedexp(client_lr, eps=eps),
}
"""The baselines, by the keywords of :data:`GRIDS` (FedAdam with the paper's betas and tau = 1e-3)."""


def grids(scale: str, task: str | None = None) -> dict[str, dict[str, list[float]]]:
    """:data:`GRIDS` at ``scale`` for ``task``: at ``smoke`` the middle value of every list; where the scale gives
    the task its own ``client_lrs`` (Shakespeare at ``small``), those."""
    chosen = _scale(scale) if task is None else scale_settings(scale, task)
    lrs = chosen.get("client_lrs")
    full = {method: {**grid, **({"client_lr": lrs} if lrs else {})} for method, grid in GRIDS.items()}
    if chosen["grid_points"] is None:
        return full
    return {method: {name: [values[len(values) // 2]] for name, values in grid.items()}
            for method, grid in full.items()}


def final_value(history: History, metric: str) -> float:
    """What Tables 1 and 2 report of a run: ``metric``'s last value, in % for ``test_accuracy``; NaN if the run
    diverged."""
    if history.diverged:
        return math.nan
    return (100.0 if metric == "test_accuracy" else 1.0) * history.final(metric)


def final_train_loss(history: History) -> float:
    """The tuning score and Table 2's number: the clients' mean training loss in the last round."""
    return final_value(history, "train_loss")


def final_accuracy(history: History) -> float:
    """Table 1's number: the last test accuracy in %."""
    return final_value(history, "test_accuracy")


def tune(task: Task, scale: str, seed: int = 0, *, store: Store | None = None, progress: bool = False) -> Tuning:
    """Each baseline's grid point (:func:`grids`) with the lowest :func:`final_train_loss` after the scale's
    ``tune_rounds`` rounds from ``seed``, without test evaluations (:func:`fedcore.experiments.common.tune`)."""
    tuning = common.tune(task, make_builders(), grids(scale, task.name), [check_seed("seed", seed)], final_train_loss,
                         higher_is_better=False, store=store, progress=progress,
                         rounds=scale_settings(scale, task.name)["tune_rounds"], eval_every=0)
    chosen = {method: {key: float(value) for key, value in point.items()} for method, point in tuning.chosen.items()}
    return Tuning(chosen, tuning.tables)


def make_builders() -> dict[str, Callable[..., Any]]:
    """``{method: build(**hyperparameters)}`` of the tuned baselines (:data:`GRIDS`' keywords; every paper's
    experiment names its builders so); :func:`algorithms_at` binds them to the chosen points."""
    return dict(_BASELINES)


def algorithms_at(chosen: Mapping[str, Mapping[str, float]], task: Task) -> dict[str, Callable[[], Any]]:
    """``{method: build()}`` for the seven methods in Table 1's order: FedLi-LS with the non-convex server rule and
    the reset growth of one local epoch (``task``'s K), FedLi-LU with FedAvg's tuned client rate and the authors'
    DFW constants, the baselines at their ``chosen`` points (:func:`tune`)."""
    missing = [method for method in _BASELINES if method not in chosen]
    if missing:
        raise ValueError(f"chosen has no hyperparameters for {missing}: give every baseline of {list(_BASELINES)}")
    epoch = check_int("local_steps", task.settings["local_steps"])
    made: dict[str, Callable[[], Any]] = {
        "FedLi-LU": lambda: algorithms.fedli_lu(chosen["FedAvg"]["client_lr"]),
        "FedLi-LS": lambda: algorithms.fedli_ls(batches_per_epoch=epoch, server_step_size="max_client_step",
                                                **FIRST_PASS_LINE_SEARCH),
    }
    made |= {method: (lambda m=method: _BASELINES[m](**chosen[m])) for method in _BASELINES}
    return {method: made[method] for method in METHODS}


def run(task: Task, chosen: Mapping[str, Mapping[str, float]], seed: int = 0, *, store: Store | None = None,
        progress: bool = False) -> dict[str, History]:
    """``{method: History}``: Tables 1 and 2's runs, every method of :func:`builders` on ``task`` from ``seed``'s
    initial model, client sampling and minibatches, with the task's round settings.  Each method runs alone
    (:func:`fedcore.simulate`, not :func:`fedcore.experiments.common.run_seeds`, whose batched passes give the same
    numbers but split a pass's time among its runs), so its ``seconds`` are its own: section 5 compares them."""
    seed = check_seed("seed", seed)
    problem = task.problem(seed)
    return {method: simulate(problem, build(), seed=seed, store=store, progress=progress, **task.settings)
            for method, build in algorithms_at(chosen, task).items()}


def results_table(histories: Mapping[str, Mapping[str, History]], metric: str) -> pd.DataFrame:
    """Tasks by methods: ``metric``'s last value, as % for ``test_accuracy`` (Table 1) or as is for ``train_loss``
    (Table 2: the clients' mean training loss in the last round, as the paper reports it)."""
    return pd.DataFrame({task: {method: final_value(h, metric) for method, h in runs.items()}
                         for task, runs in histories.items()}).T


def line_search_cost(histories: Mapping[str, History]) -> pd.DataFrame:
    """Per method: seconds per round, relative to FedAvg, and for FedLi-LS the line search's loss evaluations per
    local step and the clients' step sizes (mean over rounds of the round's mean, min, max)."""
    if "FedAvg" not in histories:
        raise ValueError(f"histories needs a FedAvg run to compare with; it has {list(histories)}")
    rows = {}
    base = float(histories["FedAvg"].frame["seconds"].mean())
    for method, history in histories.items():
        frame = history.frame
        row = {"seconds per round": float(frame["seconds"].mean()),
               "relative to FedAvg": float(frame["seconds"].mean()) / base}
        for column, name in (("loss_evaluations_per_step", "loss evaluations per step"),
                             ("client_step_mean", "client step: mean"), ("client_step_min", "min"),
                             ("client_step_max", "max")):
            if column in frame:
                row[name] = float(frame[column].mean())
        rows[method] = row
    return pd.DataFrame(rows).T


def server_steps(histories: Mapping[str, Mapping[str, History]]) -> pd.DataFrame:
    """Per task: the server steps the two FedLi methods computed.  FedLi-LS's ``eta_g`` (the largest client step,
    section 3's rule: the share of the clients' mean move the server takes) and FedLi-LU's Deep-Frank-Wolfe
    ``gamma_t``: at 1 it is clipped, and the server's step is then ``eta`` times the pseudo-gradient plus momentum,
    a fixed step, not a computed one."""
    rows = {}
    for task, runs in histories.items():
        eta_g, gamma = runs["FedLi-LS"].frame["eta_g"].dropna(), runs["FedLi-LU"].frame["gamma"].dropna()
        rows[task] = {"FedLi-LS eta_g: mean": eta_g.mean(), "min": eta_g.min(), "max": eta_g.max(),
                      "FedLi-LU: rounds": len(gamma), "rounds with gamma_t = 1": int((gamma >= 1.0).sum()),
                      "smallest gamma_t": gamma.min()}
    return pd.DataFrame(rows).T


def identical_curves(runs: Mapping[str, History], metric: str = "test_accuracy") -> list[list[str]]:
    """Groups of methods whose ``metric`` curves are identical (they hide each other in a figure)."""
    groups: dict[tuple, list[str]] = {}
    for method, history in runs.items():
        groups.setdefault(tuple(history.frame[metric].dropna().round(12)), []).append(method)
    return [group for group in groups.values() if len(group) > 1]


def on_grid_edge(chosen: Mapping[str, Mapping[str, float]],
                 grids: Mapping[str, Mapping[str, list[float]]]) -> list[str]:
    """The tuned values that sit on an edge of their grid (the best might lie beyond it): ``"FedAvg client_lr =
    1 (largest)"``; grids of one value are left out."""
    edges = []
    for method, names in common.on_edge(chosen, grids).items():
        for name in names:
            value = chosen[method][name]
            word = "largest" if math.isclose(value, max(grids[method][name])) else "smallest"
            edges.append(f"{method} {name} = {value:.3g} ({word})")
    return edges


def client_rate_sweep(task: Task, chosen: Mapping[str, Mapping[str, float]], seed: int = 0,
                      fedli_ls: History | None = None, *, store: Store | None = None,
                      progress: bool = False) -> pd.DataFrame:
    """How much FedLi-LU still depends on a learning rate: the final test accuracy (%, :func:`final_accuracy`) at
    every clients' SGD rate of :data:`SWEEP_LRS` (rows) for the methods whose clients run SGD at a rate nobody sets
    for them: FedLi-LU (its server step is computed; the paper does not say which client rate it used), FedAvg
    and FedExP (at its ``chosen`` eps); FedLi-LS (Armijo clients, no rate) once, as a flat column.  The runs are
    Table 1's (``task``'s round settings, from ``seed``), so the table's point at the tuned rate is Table 1's number;
    a diverged run scores NaN.  ``fedli_ls``: Table 1's FedLi-LS run, if there is one (else it is run here)."""
    seed = check_seed("seed", seed)
    problem, settings = task.problem(seed), {**task.settings, "seed": seed, "store": store, "progress": progress}
    sgd_clients = {"FedLi-LU": algorithms.fedli_lu, "FedAvg": _BASELINES["FedAvg"],
                   "FedExP": lambda client_lr: _BASELINES["FedExP"](client_lr, chosen["FedExP"]["eps"])}
    table = {method: sweep(problem, build, {"client_lr": SWEEP_LRS},
                           summary=lambda h: {"score": final_accuracy(h)}, **settings).set_index("client_lr")["score"]
             for method, build in sgd_clients.items()}
    if fedli_ls is None:
        fedli_ls = simulate(problem, algorithms_at(chosen, task)["FedLi-LS"](), **settings)
    line_search = final_accuracy(fedli_ls)
    return pd.DataFrame({**table, "FedLi-LS": line_search}).rename_axis("client SGD rate")


def rate_summary(table: pd.DataFrame, within: float = NEAR_BEST) -> pd.DataFrame:
    """Per method of :func:`client_rate_sweep`: its best accuracy, at which rate, the worst, and how many decades
    of rates lie within ``within`` points of the best (``common.good_range``)."""
    return pd.DataFrame({method: {"best accuracy": table[method].max(), "at rate": table[method].idxmax(),
                                  "worst accuracy": table[method].min(),
                                  f"decades within {within:g} points of best": good_range(table[method], within)}
                         for method in table if table[method].nunique() > 1}).T
