"""What Reddi et al. report: *Adaptive Federated Optimization*, ICLR 2021 (notebook ``01_fedopt``), as data.

Transcribed from the paper, the authors' code and public reproductions:
the per-task setting (:data:`PAPER_TASKS`, the paper's Section 5 and Appendix C), the best learning rates
(:data:`BEST_HYPERPARAMETERS`, log10, Appendix D; CIFAR-10 from a public reproduction), Table 1
(:data:`TABLE1`, with its metric per row in :data:`TABLE1_METRIC`) and Table 11 (:data:`TABLE11`,
EMNIST CR centralized and federated, constant client learning rate and ExpDecay).
:func:`hyperparameters` turns the log10 table into the values a builder takes.  Also as data: how the
authors' code, Flower and TFF read "FedAdam" (:data:`VARIANTS`) and the options that make the server
rules torch.optim's (:data:`TORCH_ADAM`, :data:`TORCH_ADAGRAD`).

The Stack Overflow rows (``so_nwp``, ``so_lr``) are kept for the record: the data is not reachable here
(:data:`UNREACHABLE`), so they are never run.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from fedcore.checks import check_choice

METHODS = ("FedAdagrad", "FedAdam", "FedYogi", "FedAvgM", "FedAvg")
"""Table 1's columns, in the paper's order."""
ADAPTIVE = ("FedAdagrad", "FedAdam", "FedYogi")
LOCAL_EPOCHS = 1
"""Every task of the paper runs one local epoch per round (E = 1)."""

PAPER_TASKS: dict[str, dict[str, Any]] = {
    "cifar10": {"name": "CIFAR-10", "clients": 500, "clients_per_round": 10, "rounds": 4000, "batch_size": 20,
                "model": "ResNet-18, GroupNorm, 24x24 crops", "partition": "LDA alpha 0.1 over labels"},
    "cifar100": {"name": "CIFAR-100", "clients": 500, "clients_per_round": 10, "rounds": 4000, "batch_size": 20,
                 "model": "ResNet-18, GroupNorm", "partition": "two-level Pachinko: coarse 0.1, fine 10"},
    "emnist_cr": {"name": "EMNIST CR", "clients": 3400, "clients_per_round": 10, "rounds": 1500, "batch_size": 20,
                  "model": "conv32-conv64 (3x3, ReLU), maxpool 2, dropout .25, dense 128, dropout .5, dense 62",
                  "partition": "natural (writers), 62 classes"},
    "emnist_ae": {"name": "EMNIST AE", "clients": 3400, "clients_per_round": 10, "rounds": 3000, "batch_size": 20,
                  "model": "784-1000-500-250-30-250-500-1000-784, sigmoid, linear bottleneck; MSE",
                  "partition": "natural (writers)"},
    "shakespeare": {"name": "Shakespeare", "clients": 715, "clients_per_round": 10, "rounds": 1200, "batch_size": 4,
                    "model": "embedding 8, 2 x LSTM 256, dense over the vocabulary; sequences of 80",
                    "partition": "natural (speaking roles)"},
    "so_nwp": {"name": "SO NWP", "clients": 342_477, "clients_per_round": 50, "rounds": 1500, "batch_size": 16,
               "model": "vocab 10k, embedding 96, LSTM 670, projection 96", "partition": "natural (users)"},
    "so_lr": {"name": "SO LR", "clients": 342_477, "clients_per_round": 10, "rounds": 1500, "batch_size": 100,
              "model": "bag of 10k words -> 500 tags, Recall@5", "partition": "natural (users)"},
}
"""Per task: training clients, clients per round, rounds, client batch B, model, split (local epochs: 1)."""
for _task in PAPER_TASKS.values():
    _task["local_epochs"] = LOCAL_EPOCHS

UNREACHABLE = {"so_nwp": "Stack Overflow is not reachable on these machines (no copy, no network)",
               "so_lr": "Stack Overflow is not reachable on these machines (no copy, no network)"}
"""Tasks kept for the record but never run here, and why."""

BEST_HYPERPARAMETERS: dict[str, dict[str, tuple[float, ...]]] = {
    "cifar10": {"FedAdagrad": (-1.5, -1, -2), "FedAdam": (-1.5, -2, -3), "FedYogi": (-1.5, -2, -3),
                "FedAvgM": (-1.5, -0.5), "FedAvg": (-0.5, 0)},
    "cifar100": {"FedAdagrad": (-1, -1, -2), "FedAdam": (-1.5, 0, -1), "FedYogi": (-1.5, 0, -1),
                 "FedAvgM": (-1.5, 0), "FedAvg": (-1, 0.5)},
    "emnist_ae": {"FedAdagrad": (1.5, -1.5, -3), "FedAdam": (1, -1.5, -3), "FedYogi": (1, -1.5, -3),
                  "FedAvgM": (0.5, 0), "FedAvg": (1, 0)},
    "emnist_cr": {"FedAdagrad": (-1.5, -1, -2), "FedAdam": (-1.5, -2.5, -4), "FedYogi": (-1.5, -2.5, -4),
                  "FedAvgM": (-1.5, -0.5), "FedAvg": (-1, 0)},
    "shakespeare": {"FedAdagrad": (0, -0.5, -1), "FedAdam": (0, -2, -3), "FedYogi": (0, -2, -3),
                    "FedAvgM": (0, -0.5), "FedAvg": (0, 0)},
    "so_nwp": {"FedAdagrad": (-0.5, -1.5, -4), "FedAdam": (-0.5, -2, -5), "FedYogi": (-0.5, -2, -5),
               "FedAvgM": (-0.5, 0), "FedAvg": (-0.5, 0)},
    "so_lr": {"FedAdagrad": (2, 1, -2), "FedAdam": (2, -0.5, -5), "FedYogi": (2, -0.5, -5),
              "FedAvgM": (2, 0), "FedAvg": (2, 0)},
}
"""log10 of (client lr, server lr, tau) per task and method (FedAvgM, FedAvg: no tau), tuned by the
authors on the average training accuracy of the last 100 rounds (Appendix D; CIFAR-10: a reproduction)."""
FEDAVGM_MOMENTUM = 0.9

TABLE1: pd.DataFrame = pd.DataFrame(
    [[72.1, 77.4, 78.0, 77.4, 72.8], [47.9, 52.5, 52.4, 52.4, 44.7], [85.1, 85.6, 85.5, 85.2, 84.9],
     [57.5, 57.0, 57.2, 57.3, 56.9], [23.8, 25.2, 25.2, 23.8, 19.5], [67.1, 65.8, 65.9, 36.9, 30.0],
     [4.20, 1.01, 0.98, 1.65, 6.47]],
    index=["cifar10", "cifar100", "emnist_cr", "shakespeare", "so_nwp", "so_lr", "emnist_ae"], columns=list(METHODS))
"""Table 1: average validation performance over the last 100 rounds (rows: tasks, columns: methods)."""
TABLE1_METRIC: dict[str, str] = {**{task: "% accuracy" for task in TABLE1.index},
                                 "so_lr": "Recall@5 x100", "emnist_ae": "MSE x1000"}
"""The unit of each row of Table 1 (higher is better, but for the MSE)."""
LOWER_IS_BETTER = frozenset({"emnist_ae"})

TABLE11: pd.DataFrame = pd.DataFrame(
    {"centralized": [88.0, 87.9, 88.0, 87.7, 87.7], "federated, constant": [85.1, 85.6, 85.5, 85.2, 84.9],
     "federated, ExpDecay": [85.3, 86.2, 86.2, 85.8, 85.2]},
    index=list(METHODS))
"""Table 11, EMNIST CR, % accuracy.  The centralized rows are the optimizer itself (Adagrad, Adam, Yogi,
SGDM, SGD); ExpDecay multiplies the client lr by 0.1 every 500 rounds (a reproduction's reading)."""
CENTRALIZED_NAMES = {"FedAdagrad": "Adagrad", "FedAdam": "Adam", "FedYogi": "Yogi", "FedAvgM": "SGDM", "FedAvg": "SGD"}


VARIANTS: dict[str, dict[str, Any]] = {
    "paper": {"source": "Reddi et al., Algorithm 2", "methods": {
        "FedAdagrad": {"beta1": 0.9}, "FedAdam": {"beta1": 0.9, "beta2": 0.99},
        "FedYogi": {"beta1": 0.9, "beta2": 0.99}}},
    "keras": {"source": "the authors' code (Keras Adam and Adagrad, their Yogi)", "methods": {
        "FedAdagrad": {"beta1": 0.0, "initial_v": "zero"},
        "FedAdam": {"beta1": 0.9, "beta2": 0.999, "bias_correction": "keras", "initial_v": "zero"},
        "FedYogi": {"beta1": 0.9, "beta2": 0.999, "bias_correction": "keras", "initial_v": "zero"}}},
    "flower": {"source": "Flower's FedAdagrad/FedAdam/FedYogi strategies", "methods": {
        "FedAdagrad": {"beta1": 0.0, "initial_v": "zero"},
        "FedAdam": {"beta1": 0.9, "beta2": 0.99, "bias_correction": "flower", "initial_v": "zero"},
        "FedYogi": {"beta1": 0.9, "beta2": 0.99, "initial_v": "zero"}}},
    "tau_inside": {"source": "TFF's Adagrad, the slides' rendering: sqrt(v + tau)", "methods": {
        "FedAdagrad": {"beta1": 0.9, "tau_inside_sqrt": True}}},
}
"""Four readings of the same names, as server-optimizer options (everything else: the paper's defaults,
``bias_correction="none"``, ``initial_v="tau^2"``, tau outside the root).  Keras' Yogi ``beta2 = 0.999`` is
TF-Addons' default (our choice: the source does not say); Flower's FedYogi has neither bias correction nor
``v0 = tau^2`` (flwr ``strategy/fedyogi.py``: ``v`` starts at zeros)."""

TORCH_ADAM = {"bias_correction": "keras", "initial_v": "zero"}
"""Options that make FedAdam's server rule torch.optim.Adam's (with ``tau`` = torch's ``eps`` and the same
``beta2``: torch's default is 0.999, the paper's 0.99).  The one
difference left: torch adds eps to ``sqrt(v_hat)``, Keras' form to ``sqrt(v)``, i.e. fedcore's tau acts
as ``eps sqrt(1 - beta2^t)`` in torch's units: the same iterates up to a relative ``O(eps / sqrt(v_hat))``."""
TORCH_ADAGRAD = {"beta1": 0.0, "initial_v": "zero"}
"""FedAdagrad without momentum and ``v0 = 0`` is torch.optim.Adagrad (``lr_decay = 0``, ``eps`` = tau) exactly."""


def hyperparameters(task: str, method: str) -> dict[str, float]:
    """The paper's best values (``10**x`` of :data:`BEST_HYPERPARAMETERS`) as builder keywords:
    ``client_lr``, ``server_lr`` and, for the adaptive methods, ``tau``; FedAvgM adds ``beta = 0.9``.

    >>> hyperparameters("shakespeare", "FedAdam")
    {'client_lr': 1.0, 'server_lr': 0.01, 'tau': 0.001}
    """
    check_choice("task", task, BEST_HYPERPARAMETERS)
    check_choice("method", method, METHODS)
    values = dict(zip(("client_lr", "server_lr", "tau"), (10.0**x for x in BEST_HYPERPARAMETERS[task][method])))
    if method == "FedAvgM":
        values["beta"] = FEDAVGM_MOMENTUM
    return values


def paper_table() -> pd.DataFrame:
    """Table 1 with its task names and metric column, for the notebook."""
    table = TABLE1.copy()
    table.insert(0, "metric", [TABLE1_METRIC[task] for task in table.index])
    table.index = [PAPER_TASKS[task]["name"] for task in table.index]
    return table
