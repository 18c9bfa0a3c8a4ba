"""Federated algorithms: one file per paper family, one shared round skeleton (``base``).

``make("fedadam", client_lr=0.1, server_lr=0.01)`` builds any of them by name.
"""

from collections.abc import Callable

from fedcore.algorithms.base import RoundBatch, constant, exp_decay, local_sgd, pseudo_gradient
from fedcore.algorithms.fafed import FAFED, fafed, stem, storm_momentum, storm_step_size
from fedcore.algorithms.fedopt import (
    FedOpt,
    fedadagrad,
    fedadam,
    fedams,
    fedavg,
    fedavgm,
    fedyogi,
)
from fedcore.algorithms.fedprox import FedProx, fedprox
from fedcore.algorithms.local_adaptive import LocalAdaptive, local_adaptive
from fedcore.algorithms.scaffold import Scaffold, scaffold
from fedcore.checks import check_choice

Algorithm = FedOpt | FAFED | LocalAdaptive

ALGORITHMS: dict[str, Callable[..., Algorithm]] = {
    "fedavg": fedavg,
    "fedavgm": fedavgm,
    "fedadagrad": fedadagrad,
    "fedadam": fedadam,
    "fedyogi": fedyogi,
    "fedams": fedams,
    "fedprox": fedprox,
    "scaffold": scaffold,
    "stem": stem,
    "fafed": fafed,
    "local_adaptive": local_adaptive,
}


def make(name: str, **hyperparameters) -> Algorithm:
    """An algorithm by name: ``make("scaffold", client_lr=0.05)``."""
    return ALGORITHMS[check_choice("algorithm", name, ALGORITHMS)](**hyperparameters)


__all__ = [
    "ALGORITHMS",
    "FAFED",
    "LocalAdaptive",
    "fafed",
    "local_adaptive",
    "stem",
    "storm_momentum",
    "storm_step_size",
    "FedOpt",
    "FedProx",
    "RoundBatch",
    "Scaffold",
    "constant",
    "exp_decay",
    "fedadagrad",
    "fedadam",
    "fedams",
    "fedavg",
    "fedavgm",
    "fedprox",
    "fedyogi",
    "local_sgd",
    "make",
    "pseudo_gradient",
    "scaffold",
]
