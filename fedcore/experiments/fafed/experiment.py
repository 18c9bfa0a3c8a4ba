"""FAFED's image experiment (Wu, Huang, Hu & Huang, AAAI 2023, "Experimental Results"; notebook ``04_fafed``,
section 4) on the common contract: Fashion-MNIST at three levels of heterogeneity, FAFED against FedAvg, SCAFFOLD,
STEM, FedAdam and FedAMS on the paper's grids."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from fedcore import algorithms, models
from fedcore.checks import check_choice, check_int, check_positive, check_seed
from fedcore.data import load_fashion_mnist
from fedcore.experiments import common
from fedcore.experiments.claims import trivial_baseline
from fedcore.experiments.common import Builder, Scale, Selection, Task, scale_at


@dataclass(frozen=True)
class FafedScale(Scale):
    """A :class:`~fedcore.experiments.common.Scale` with the model (:data:`MODELS`), whether the grids are searched,
    the number of clients and FAFED's ``rho`` (``A = sqrt(v_bar) + rho``; the paper's 0.01)."""

    model: str = "mlp"
    tune: bool = True
    clients: int = 20
    rho: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("clients", self.clients)
        check_positive("rho", self.rho)


SCALES: dict[str, FafedScale] = {
    "smoke": FafedScale("smoke", seeds=(0, 1), rounds=2, eval_every=1, max_local_steps=2, tune_rounds=1,
                        tuning_seeds=(100,)),
    "small": FafedScale("small", seeds=(0, 1, 2, 3, 4), rounds=40, eval_every=5, tune_rounds=10,
                        tuning_seeds=(100, 101, 102)),
    "medium": FafedScale("medium", seeds=(1, 2, 3), rounds=40, eval_every=5, tune_rounds=10, model="tanh_cnn",
                         tune=False, tuning_seeds=(100, 101, 102)),
    "paper": FafedScale("paper", seeds=(1, 2, 3, 4, 5), rounds=300, eval_every=10, tune_rounds=30, model="tanh_cnn",
                        tune=False, tuning_seeds=(100, 101, 102)),
}
"""``tune``: the grids are searched, on ``tuning_seeds`` (apart from the judging ``seeds``), where it is cheap (the
MLP: minutes; the CNN: 25 min a seed); medium and paper search them only when the notebook sets ``TUNE=True``."""

SETTINGS: dict[str, dict[str, Any]] = {
    "low": {"partition": {"partition": "similarity", "s": 0.95}, "batch_size": 5, "local_steps": 20},
    "moderate": {"partition": {"partition": "similarity", "s": 0.5}, "batch_size": 50, "local_steps": 10},
    "high": {"partition": {"partition": "shards", "classes_per_client": 5}, "batch_size": 100, "local_steps": 5},
}
"""The three heterogeneity levels: the partition (``load_fashion_mnist`` arguments), ``b`` and ``q``.  Our reading
where the paper is silent: "moderate" as ``similarity(s=0.5)``, and which ``b`` and ``q`` go with which level."""

STEP_SIZES, SERVER_LRS, MOMENTA = [0.001, 0.01, 0.02, 0.05, 0.1], [10**-1.5, 10**-2, 10**-2.5], [0.1, 0.9]
GRIDS: dict[str, dict[str, list[float]]] = {
    "FedAvg": {"lr": STEP_SIZES}, "SCAFFOLD": {"lr": STEP_SIZES},
    "FedAdam": {"lr": STEP_SIZES, "server_lr": SERVER_LRS}, "FedAMS": {"lr": STEP_SIZES, "server_lr": SERVER_LRS},
    "STEM": {"lr": STEP_SIZES, "alpha": MOMENTA}, "FAFED": {"lr": STEP_SIZES, "alpha": MOMENTA, "beta": MOMENTA},
}
"""The paper's grids: client step size, server learning rate (FedAdam, FedAMS), momentum and beta."""
MODELS: dict[str, tuple[Callable[[int], Any], str, str]] = {
    "tanh_cnn": (lambda seed: models.make("tanh_cnn", (1, 28, 28), 10, seed=seed),
                 "the tanh CNN of Nouiehed et al. 2019 (conv 5 and 10 channels, dense 100; 26,620 parameters), our "
                 "reading of the paper's model", "the tanh CNN"),
    "mlp": (lambda seed: models.make("mlp", (1, 28, 28), 10, hidden=(32,), seed=seed),
            "ours: a 784-32-10 ReLU MLP (25,450 parameters), a stand-in for the tanh CNN at a tenth of its compute",
            "a 784-32-10 MLP standing in for the CNN"),
}
"""``{name: (model drawn from a seed, label, short label)}``: the paper's model as we read it, and small's stand-in."""


def tasks(scale: str | FafedScale, *, partition_seed: int = 0, device: str = "cpu") -> dict[str, Task]:
    """The scale's settings (``scale.tasks``, else all): Fashion-MNIST dealt to ``scale.clients`` clients, every
    client in every round with uniform weights, test accuracy against the most frequent class; a tuning run of
    ``scale.tune_rounds`` rounds scores its training loss over its last 3 rounds (it evaluates no test set)."""
    scale = scale_at(SCALES, scale)
    model, label, _ = MODELS[check_choice("model", scale.model, MODELS)]
    check_seed("partition_seed", partition_seed)
    selection = Selection("train_loss", 3, higher_is_better=False, rounds=scale.tune_rounds,
                          eval_every=scale.tune_rounds)
    built = {}
    for name in scale.tasks or SETTINGS:
        spec = SETTINGS[check_choice("tasks", name, SETTINGS)]
        data = load_fashion_mnist(scale.clients, seed=partition_seed, device=device, **spec["partition"])
        settings = dict(rounds=scale.rounds, clients_per_round=scale.clients, local_steps=min(
            spec["local_steps"], scale.max_local_steps or spec["local_steps"]), batch_size=spec["batch_size"],
            eval_every=scale.eval_every, weighting="uniform")
        built[name] = Task(name, data, model, settings, trivial_baseline(data) / 100, model_label=label,
                           selection=selection)
    return built


def make_builders(task: Task, scale: str | FafedScale) -> dict[str, Builder]:
    """``{method: build(**hyperparameters)}``, the same on every setting: SCAFFOLD (option II) with global learning
    rate 1, FedAMS with ``eps = tau^2``, STEM and FAFED with a constant step."""
    rho = scale_at(SCALES, scale).rho
    return {
        "FedAvg": lambda lr: algorithms.fedavg(lr),
        "SCAFFOLD": lambda lr: algorithms.scaffold(lr),
        "FedAdam": lambda lr, server_lr: algorithms.fedadam(lr, server_lr=server_lr, beta1=0.9, beta2=0.99, tau=0.01),
        "FedAMS": lambda lr, server_lr: algorithms.fedams(lr, server_lr=server_lr, beta1=0.9, beta2=0.99, eps=1e-4),
        "STEM": lambda lr, alpha: algorithms.stem(lr, alpha=alpha),
        "FAFED": lambda lr, alpha, beta: algorithms.fafed(lr, alpha=alpha, beta=beta, rho=rho),
    }


run, tune = common.run, common.tune


def settings_table() -> pd.DataFrame:
    """:data:`SETTINGS` as a table: the partition as a call, the batch size ``b`` and the period ``q``."""
    def call(partition: Mapping[str, Any]) -> str:
        scheme, *options = partition.items()
        return f"{scheme[1]}({', '.join(f'{key}={value}' for key, value in options)})"
    return pd.DataFrame({name: {"partition": call(spec["partition"]), "batch size b": spec["batch_size"],
                                "period q": spec["local_steps"]} for name, spec in SETTINGS.items()}).T


def grid_table() -> pd.DataFrame:
    """:data:`GRIDS` as methods by hyperparameters, each cell the values searched (empty: not taken), and the
    ``points`` each method's search tries (the paper's grids differ in size)."""
    table = pd.DataFrame({name: {key: ", ".join(f"{v:g}" for v in values) for key, values in grid.items()}
                          for name, grid in GRIDS.items()}).T.fillna("")
    return table.assign(points=[math.prod(map(len, grid.values())) for grid in GRIDS.values()])


def heterogeneity_table(tasks: Mapping[str, Task]) -> pd.DataFrame:
    """Per setting: samples per client, classes per client (those holding at least 1% of its rows) and the mean
    total-variation distance between a client's label distribution and the global one (``label_skew``)."""
    def span(values: Any) -> str:
        return f"{int(values.min())}..{int(values.max())}"
    return pd.DataFrame.from_dict({name: {
        "samples per client": span(task.data.sizes),
        "classes per client (>= 1%)": span((task.data.label_counts() >= 0.01 * task.data.sizes[:, None]).sum(1)),
        "mean TV distance": round(task.data.label_skew(), 3)}
        for name, task in tasks.items()}, orient="index").rename_axis("setting")


def epochs(tasks: Mapping[str, Task]) -> dict[str, float]:
    """Per setting, how many times a run passes a client's data: rounds x q x b over the mean client's samples."""
    return {name: task.settings["rounds"] * task.settings["local_steps"] * task.settings["batch_size"]
            / float(task.data.sizes.float().mean()) for name, task in tasks.items()}
