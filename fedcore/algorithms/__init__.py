"""Federated algorithms: one file per paper family, written against one contract (``contract``: what a family
defines, the round the framework runs with it), on the round's batch (``batch``), the schedules (``schedules``)
and the client side written once (``client``: the K-step loop and the client rules).

``make("fedadam", client_lr=0.1, server_lr=0.01)`` builds any of them by name.
"""

from collections.abc import Callable

from fedcore.algorithms import client
from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRule, ClientRun, train_clients
from fedcore.algorithms.contract import Algorithm, Federated, declared, server_step
from fedcore.algorithms.fafed import FAFED, fafed, stem
from fedcore.algorithms.fedexp import extrapolation, fedexp
from fedcore.algorithms.fedli import FedLiLS, deep_frank_wolfe, fedli_ls, fedli_lu
from fedcore.algorithms.fedopt import (
    FedOpt,
    fedadagrad,
    fedadam,
    fedams,
    fedavg,
    fedavgm,
    fedyogi,
)
from fedcore.algorithms.fedprox import Proximal, fedprox
from fedcore.algorithms.local_adaptive import LocalAdaptive, local_adaptive
from fedcore.algorithms.padamfed import PAdaMFed, padamfed, padamfed_vr
from fedcore.algorithms.scaffold import (
    Scaffold,
    control_variates,
    refresh_control_variates,
    scaffold,
    scaffold_m,
    scaffold_m_vr,
)
from fedcore.algorithms.schedules import constant, exp_decay, storm_momentum, storm_step_size
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_choice, check_keywords

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
    "padamfed": padamfed,
    "padamfed_vr": padamfed_vr,
    "scaffold_m": scaffold_m,
    "scaffold_m_vr": scaffold_m_vr,
    "fedexp": fedexp,
    "fedli_ls": fedli_ls,
    "fedli_lu": fedli_lu,
}


def make(name: str, **hyperparameters) -> Algorithm:
    """An algorithm by name: ``make("scaffold", client_lr=0.05)``."""
    factory = ALGORITHMS[check_choice("algorithm", name, ALGORITHMS)]
    check_keywords(factory, hyperparameters, f"make({name!r})")
    return factory(**hyperparameters)


__all__ = [
    "ALGORITHMS",
    "FAFED",
    "Algorithm",
    "ClientRule",
    "ClientRun",
    "FedLiLS",
    "FedOpt",
    "Federated",
    "LocalAdaptive",
    "PAdaMFed",
    "Proximal",
    "RoundBatch",
    "Scaffold",
    "client",
    "constant",
    "control_variates",
    "declared",
    "deep_frank_wolfe",
    "exp_decay",
    "extrapolation",
    "fafed",
    "fedadagrad",
    "fedadam",
    "fedams",
    "fedavg",
    "fedavgm",
    "fedexp",
    "fedli_ls",
    "fedli_lu",
    "fedprox",
    "fedyogi",
    "local_adaptive",
    "make",
    "padamfed",
    "padamfed_vr",
    "refresh_control_variates",
    "scaffold",
    "scaffold_m",
    "scaffold_m_vr",
    "server_step",
    "stem",
    "storm_momentum",
    "storm_step_size",
    "theory_hyperparameters",
    "train_clients",
]
