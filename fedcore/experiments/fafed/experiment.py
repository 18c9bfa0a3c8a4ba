"""FAFED's image experiment: Wu, Huang, Hu & Huang, *Faster Adaptive Federated Learning*, AAAI 2023, section
"Experimental Results", image classification (notebook ``04_fafed``, its section 4), on the common layer
(:mod:`fedcore.experiments.common`).

Fashion-MNIST dealt to 20 worker nodes at three levels of heterogeneity (:data:`SETTINGS`); the tanh CNN of
Nouiehed et al. 2019 at ``medium`` and ``paper``, a stand-in MLP at ``small`` (:data:`MODELS`); FAFED against
FedAvg, SCAFFOLD, STEM, FedAdam and FedAMS (:func:`make_builders`) on the paper's grids (:data:`GRIDS`), every
node in every round with uniform weights.  :func:`tasks` builds the three settings as
:class:`~fedcore.experiments.common.Task`, :func:`run` runs every algorithm over the seeds, :func:`tune`
searches the grids over the seeds.  The partition is drawn once (``partition_seed``) and stays fixed; a seed
draws the initial model and the minibatches.

Where the paper is silent we choose: "moderate" is ``similarity(s=0.5)`` (half iid, half sorted by label), and
the pairing of batch size ``b`` and period ``q`` with the settings is our reading of "we increase the batch size
and decrease the inner loop number".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_keywords, check_positive, check_seed, check_seeds
from fedcore.data import FederatedData, load_fashion_mnist
from fedcore.experiments import common
from fedcore.experiments.claims import trivial_baseline
from fedcore.experiments.common import Scale, Task, Tuning, scale_at
from fedcore.results import History
from fedcore.store import Store


@dataclass(frozen=True)
class FafedScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` with the model (:data:`MODELS`) and whether the grids are
    searched by default (where the model makes it cheap)."""

    model: str = "mlp"
    tune: bool = True


SCALES: dict[str, FafedScale] = {
    "smoke": FafedScale("smoke", seeds=(0, 1), rounds=2, eval_every=1, max_local_steps=2, tune_rounds=1),
    "small": FafedScale("small", seeds=(0, 1, 2, 3, 4), rounds=40, eval_every=5, tune_rounds=10),
    "medium": FafedScale("medium", seeds=(0, 1, 2), rounds=40, eval_every=5, tune_rounds=10, model="tanh_cnn",
                         tune=False),
    "paper": FafedScale("paper", seeds=(0, 1, 2, 3, 4), rounds=300, eval_every=10, tune_rounds=30, model="tanh_cnn",
                        tune=False),
}
"""Rounds per run, evaluation period, a cap on the local steps ``q``, rounds per tuning run, the seeds, the model
(:data:`MODELS`) and whether the grids are searched by default (where the model makes it cheap: the stand-in's
search over 5 seeds takes minutes, the tanh CNN's about 25 minutes for one seed and one setting)."""

SETTINGS: dict[str, dict[str, Any]] = {
    "low": {"partition": {"partition": "similarity", "s": 0.95}, "batch_size": 5, "local_steps": 20},
    "moderate": {"partition": {"partition": "similarity", "s": 0.5}, "batch_size": 50, "local_steps": 10},
    "high": {"partition": {"partition": "shards", "classes_per_client": 5}, "batch_size": 100, "local_steps": 5},
}
"""The three heterogeneity levels: the partition (``load_fashion_mnist`` arguments), ``b`` and ``q``."""

STEP_SIZES, SERVER_LRS, MOMENTA = [0.001, 0.01, 0.02, 0.05, 0.1], [10**-1.5, 10**-2, 10**-2.5], [0.1, 0.9]
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"lr": STEP_SIZES}, "SCAFFOLD": {"lr": STEP_SIZES},
    "FedAdam": {"lr": STEP_SIZES, "server_lr": SERVER_LRS}, "FedAMS": {"lr": STEP_SIZES, "server_lr": SERVER_LRS},
    "STEM": {"lr": STEP_SIZES, "alpha": MOMENTA}, "FAFED": {"lr": STEP_SIZES, "alpha": MOMENTA, "beta": MOMENTA},
}
"""The paper's grids: client step size, server learning rate (FedAdam, FedAMS), momentum and beta."""
RHO = 0.01
"""FAFED's rho (``A = sqrt(v_bar) + rho``) in the paper's experiments."""
MODELS: dict[str, tuple[Callable[[int], Any], str, str]] = {
    "tanh_cnn": (lambda seed: models.make("tanh_cnn", (1, 28, 28), 10, seed=seed),
                 "the tanh CNN of Nouiehed et al. 2019 (conv 5 and 10 channels, dense 100; 26,620 parameters), our "
                 "reading of the paper's model", "the tanh CNN"),
    "mlp": (lambda seed: models.make("mlp", (1, 28, 28), 10, hidden=(32,), seed=seed),
            "ours: a 784-32-10 ReLU MLP (25,450 parameters), a stand-in for the tanh CNN at a tenth of its compute",
            "a 784-32-10 MLP standing in for the CNN"),
}
"""``{name: (model drawn from a seed, label, short label)}``: the paper's model (its structure is in the paper's
supplement, which we could not obtain; the main text points to Nouiehed et al. 2019), and the stand-in that lets
five seeds and the grid search run within ``small``'s budget on 2 CPU cores (the CNN's convolutions run client by
client; the MLP's clients, and runs of several seeds, go through one batched forward)."""

Builder = Callable[..., Any]


def make_builders(rho: float = RHO) -> dict[str, Builder]:
    """``{name: build(**hyperparameters)}`` for the six algorithms, the keywords those of :data:`GRIDS`.

    SCAFFOLD (option II) with global learning rate 1; FedAdam and FedAMS with ``beta1 = 0.9``,
    ``beta2 = 0.99``, ``tau = 0.01`` (FedAMS: ``eps = tau^2``); STEM and FAFED with a constant step.
    """
    check_positive("rho", rho)
    return {
        "FedAvg": lambda lr: algorithms.fedavg(lr),
        "SCAFFOLD": lambda lr: algorithms.scaffold(lr),
        "FedAdam": lambda lr, server_lr: algorithms.fedadam(lr, server_lr=server_lr, beta1=0.9, beta2=0.99, tau=0.01),
        "FedAMS": lambda lr, server_lr: algorithms.fedams(lr, server_lr=server_lr, beta1=0.9, beta2=0.99, eps=1e-4),
        "STEM": lambda lr, alpha: algorithms.stem(lr, alpha=alpha),
        "FAFED": lambda lr, alpha, beta: algorithms.fafed(lr, alpha=alpha, beta=beta, rho=rho),
    }


def scale_settings(scale: str, rounds: int | None = None, seeds: Sequence[int] | None = None) -> FafedScale:
    """The :data:`SCALES` entry of ``scale``, with ``rounds`` and ``seeds`` instead of its own when given."""
    settings = scale_at(SCALES, scale)
    if rounds is not None:  # checked by the Scale
        settings = replace(settings, rounds=rounds)
    if seeds is not None:
        settings = replace(settings, seeds=check_seeds("seeds", seeds, hint=" (with papermill: -y 'SEEDS: [0, 1, 2]')"))
    return settings


def round_settings(setting: str, rounds: int, eval_every: int, num_clients: int,
                   max_local_steps: int | None = None) -> dict[str, Any]:
    """``simulate``'s round settings for ``setting``: all ``num_clients`` clients, uniform weights, its ``b`` and
    ``q`` (``q`` capped at ``max_local_steps`` when that is given)."""
    spec = SETTINGS[check_choice("setting", setting, SETTINGS)]
    local_steps = spec["local_steps"]
    if max_local_steps is not None:
        local_steps = min(local_steps, check_int("max_local_steps", max_local_steps))
    return dict(rounds=check_int("rounds", rounds), clients_per_round=check_int("num_clients", num_clients),
                local_steps=local_steps, batch_size=spec["batch_size"], eval_every=check_int("eval_every", eval_every),
                weighting="uniform")


def load_datasets(num_clients: int, partition_seed: int, device: str = "cpu") -> dict[str, FederatedData]:
    """Fashion-MNIST split among ``num_clients`` clients as each of :data:`SETTINGS` prescribes (the partition
    drawn from ``partition_seed``)."""
    check_seed("partition_seed", partition_seed)
    return {name: load_fashion_mnist(num_clients, seed=partition_seed, device=device, **spec["partition"])
            for name, spec in SETTINGS.items()}


def tasks(datasets: Mapping[str, FederatedData], settings: Mapping[str, Any]) -> dict[str, Task]:
    """The three settings as tasks: the scale's model (:data:`MODELS`), test accuracy with its trivial baseline
    (the most frequent class), and the round settings of :func:`round_settings` for the scale's ``settings``
    (:func:`scale_settings`)."""
    model, label, _ = MODELS[check_choice("model", settings.model, MODELS)]
    return {name: Task(name, data, model, round_settings(name, settings.rounds, settings.eval_every,
                                                         data.num_clients, settings.max_local_steps),
                       baseline=trivial_baseline(data) / 100, model_label=label)
            for name, data in _mapping("datasets", datasets).items()}


def run(tasks: Mapping[str, Task], chosen: Mapping[str, Mapping[str, Mapping[str, float]]], seeds: Sequence[int], *,
        builders: Mapping[str, Builder] | None = None, store: Store | None = None,
        progress: bool = False) -> dict[str, dict[str, list[History]]]:
    """``{setting: {algorithm: [History of each seed]}}``: every algorithm of ``builders`` with its ``chosen``
    hyperparameters on every setting, each seed from its own initial model and minibatches, the same for every
    algorithm (:func:`fedcore.experiments.common.run_seeds`)."""
    builders = make_builders() if builders is None else builders
    _check_chosen(tasks, chosen, builders)
    return {setting: common.run_seeds(task, {name: builders[name](**chosen[setting][name]) for name in builders},
                                      seeds, store=store, progress=progress)
            for setting, task in tasks.items()}


def train_loss_score(history: History) -> float:
    """The score the tuning minimizes and claim 1 compares: the training loss over the score's window."""
    return common.window_score(history, "train_loss")


def accuracy_score(history: History) -> float:
    """Test accuracy over the score's window (the last evaluations)."""
    return common.window_score(history, "test_accuracy")


TUNING_ROUNDS_SCORED = 3
"""A tuning run is scored by its training loss averaged over its last 3 rounds (it evaluates no test set)."""


def tuning_score(history: History) -> float:
    """The training loss over the last :data:`TUNING_ROUNDS_SCORED` rounds of a tuning run."""
    return common.window_score(history, "train_loss", TUNING_ROUNDS_SCORED, evaluated="train_loss")


def tune(tasks: Mapping[str, Task], rounds: int, seeds: Sequence[int], *,
         grids: Mapping[str, Mapping[str, list[float]]] = GRIDS, builders: Mapping[str, Builder] | None = None,
         store: Store | None = None, progress: bool = False) -> dict[str, Tuning]:
    """Per setting, :func:`fedcore.experiments.common.tune` of every grid for ``rounds`` rounds over ``seeds``,
    choosing the point with the lowest mean training loss over the seeds (:func:`tuning_score`)."""
    builders = make_builders() if builders is None else builders
    return {setting: common.tune(task, builders, grids, seeds, tuning_score, higher_is_better=False,
                                 store=store, progress=progress, rounds=check_int("rounds", rounds),
                                 eval_every=rounds)
            for setting, task in tasks.items()}


def _mapping(name: str, value: Any) -> Mapping:
    """``value`` must be a mapping (``{setting: ...}``, ``{algorithm: ...}``)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}={value!r} must be a dict, got {type(value).__name__}")
    return value


def _check_chosen(tasks: Mapping[str, Task], chosen: Mapping[str, Any], builders: Mapping[str, Builder]) -> None:
    """``chosen[setting][algorithm]`` must exist for every setting and algorithm and fit its builder."""
    _mapping("tasks", tasks)
    _mapping("chosen", chosen)
    missing = {setting: [name for name in _mapping("builders", builders) if name not in chosen.get(setting, {})]
               for setting in tasks}
    if any(missing.values()):
        raise ValueError(f"chosen has no hyperparameters for {({s: n for s, n in missing.items() if n})} "
                         "({setting: [algorithms]}); give chosen[setting][algorithm] for every setting and "
                         "algorithm of builders")
    for setting in tasks:
        for name in builders:
            if not callable(builders[name]):
                raise TypeError(f"builders[{name!r}]={builders[name]!r} must be a function of the hyperparameters")
            check_keywords(builders[name], _mapping(f"chosen[{setting!r}][{name!r}]", chosen[setting][name]),
                           f"chosen[{setting!r}][{name!r}]: the builder of {name}")


def settings_table() -> pd.DataFrame:
    """:data:`SETTINGS` as a table: the partition as a call, the batch size ``b`` and the period ``q``."""
    def call(partition: Mapping[str, Any]) -> str:
        scheme, *options = partition.items()
        return f"{scheme[1]}({', '.join(f'{key}={value}' for key, value in options)})"
    return pd.DataFrame({name: {"partition": call(spec["partition"]), "batch size b": spec["batch_size"],
                                "period q": spec["local_steps"]} for name, spec in SETTINGS.items()}).T


def grid_table(grids: Mapping[str, Mapping[str, list[float]]] = GRIDS) -> pd.DataFrame:
    """The grids as algorithms by hyperparameters, each cell the values searched (empty: not taken)."""
    return pd.DataFrame({name: {key: ", ".join(f"{v:g}" for v in values) for key, values in grid.items()}
                         for name, grid in grids.items()}).T.fillna("")


def hyperparameter_table(chosen: Mapping[str, Mapping[str, Mapping[str, float]]],
                         grids: Mapping[str, Mapping[str, list[float]]] = GRIDS) -> pd.DataFrame:
    """Algorithms by settings, each cell ``lr=0.1*, alpha=0.9``: a ``*`` marks a value at either end of its grid
    (of more than two values), where a wider grid might have chosen otherwise (a choice between two values is at
    an end either way, and not marked)."""
    def cell(method: str, point: Mapping[str, float]) -> str:
        def edge(key: str, value: float) -> str:
            values = grids.get(method, {}).get(key, [])
            return "*" if len(values) > 2 and any(math.isclose(value, end) for end in (min(values), max(values))) \
                else ""
        return ", ".join(f"{key}={value:g}{edge(key, value)}" for key, value in point.items())
    return pd.DataFrame({setting: {method: cell(method, point) for method, point in by_method.items()}
                         for setting, by_method in chosen.items()})


def classes_per_client(data: FederatedData) -> str:
    """``"min..max"`` over clients of the classes holding at least 1% of a client's rows."""
    held = (data.label_counts() >= 0.01 * data.sizes[:, None]).sum(1)
    return f"{int(held.min())}..{int(held.max())}"


def heterogeneity_table(datasets: Mapping[str, FederatedData]) -> pd.DataFrame:
    """Per setting: samples per client, classes per client and the mean total-variation distance
    between a client's label distribution and the global one (``FederatedData.label_skew``)."""
    return pd.DataFrame([
        {"setting": name, "samples per client": f"{int(d.sizes.min())}..{int(d.sizes.max())}",
         "classes per client (>= 1%)": classes_per_client(d), "mean TV distance": round(d.label_skew(), 3)}
        for name, d in datasets.items()
    ]).set_index("setting")


def epochs(tasks: Mapping[str, Task]) -> dict[str, float]:
    """Per setting, how many times a run passes a client's data: rounds x q x b over the mean client's samples."""
    return {name: task.settings["rounds"] * task.settings["local_steps"] * task.settings["batch_size"]
            / float(task.data.sizes.float().mean()) for name, task in tasks.items()}


def first_round_table(results: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Methods by settings: the training loss of the first round, mean over the seeds (how each method starts)."""
    return pd.DataFrame({setting: {name: sum(float(h.frame.loc[1, "train_loss"]) for h in histories) / len(histories)
                                   for name, histories in runs.items()} for setting, runs in results.items()})


def diverged_runs(results: Mapping[str, Mapping[str, Sequence[History]]], seeds: Sequence[int]) -> pd.DataFrame:
    """One row per run that diverged: setting, algorithm, seed and the round."""
    return pd.DataFrame([{"setting": setting, "algorithm": name, "seed": seed, "diverged at round": h.diverged_round}
                         for setting, runs in results.items() for name, histories in runs.items()
                         for seed, h in zip(seeds, histories) if h.diverged],
                        columns=["setting", "algorithm", "seed", "diverged at round"])


def seconds_table(results: Mapping[str, Mapping[str, Sequence[History]]]) -> pd.DataFrame:
    """Algorithms by settings: the mean wall time of a run in seconds (a run read from the store shows the time it
    took when it was computed; runs computed in one pass share its time)."""
    return pd.DataFrame({setting: {name: sum(h.frame["seconds"].sum() for h in histories) / len(histories)
                                   for name, histories in runs.items()} for setting, runs in results.items()})
