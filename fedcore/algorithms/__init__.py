"""Federated algorithms: one file per paper family, written against one contract (``contract``: what a family
defines, the round the framework runs with it), on the round's batch (``batch``) and the client side written once
(``client``: the K-step loop and the client rules).  Their hyperparameters may be schedules
(:mod:`fedcore.schedules`) and server optimizers (:mod:`fedcore.server_opt`).

``make("fedadam", client_lr=0.1, server_lr=0.01)`` builds any of them by name; :func:`register` adds one.
"""

from collections.abc import Callable
from typing import Any

from fedcore.algorithms import client
from fedcore.algorithms.batch import RoundBatch
from fedcore.algorithms.client import ClientRule, ClientRun, train_clients
from fedcore.algorithms.contract import Algorithm, Federated, declared
from fedcore.algorithms.fafed import FAFED, fafed, stem
from fedcore.algorithms.fedexp import extrapolation, fedexp
from fedcore.algorithms.fedli import FedLiLS, deep_frank_wolfe, fedli_ls, fedli_lu
from fedcore.algorithms.fedopt import FedOpt, fedadagrad, fedadam, fedams, fedavg, fedavgm, fedyogi
from fedcore.algorithms.fedprox import Proximal, fedprox
from fedcore.algorithms.local_adaptive import LocalAdaptive, local_adaptive
from fedcore.algorithms.padamfed import PAdaMFed, padamfed, padamfed_vr
from fedcore.algorithms.scaffold import Scaffold, refresh_control_variates, scaffold, scaffold_m, scaffold_m_vr
from fedcore.algorithms.theorems import theory_hyperparameters
from fedcore.checks import check_choice, check_keywords
from fedcore.contract_checks import checked_registration
from fedcore.schedules import constant, exp_decay, storm_momentum, storm_step_size
from fedcore.server_opt import ServerRule, server_step

ALGORITHMS: dict[str, Callable[..., Algorithm]] = {}
"""Every algorithm by name: its factory (:func:`make` builds it)."""
EXAMPLES: dict[str, dict[str, Any]] = {}
"""One configuration of each algorithm, which the generic tests run (``tests/``: invariants, passes, Flower): on a
federated quadratic with full-batch gradients it converges to the optimum, unless the family cannot (Wu et al.'s
Algorithm 1, PAdaMFed's normalized steps)."""


def register(name: str, factory: Callable[..., Algorithm], **example: Any) -> None:
    """Make ``factory`` an algorithm of fedcore's: ``make(name, ...)`` builds it, and the generic tests run it with
    the hyperparameters ``example``.  Checked before the registry changes (a refusal leaves it as it was): ``name`` a
    non-empty string not taken, ``factory`` callable with ``example``'s keywords, and ``factory(**example)``, built
    once here, an algorithm :func:`declared` accepts (a ``TypeError`` or ``ValueError`` naming the registration)."""
    checked_registration(name, factory, example, ALGORITHMS, declared)
    ALGORITHMS[name], EXAMPLES[name] = factory, dict(example)


def make(name: str, **hyperparameters) -> Algorithm:
    """An algorithm by name: ``make("scaffold", client_lr=0.05)``."""
    factory = ALGORITHMS[check_choice("algorithm", name, ALGORITHMS)]
    check_keywords(factory, hyperparameters, f"make({name!r})")
    return factory(**hyperparameters)


register("fedavg", fedavg, client_lr=0.1)
register("fedavgm", fedavgm, client_lr=0.1, server_lr=0.5, beta=0.9)
register("fedadagrad", fedadagrad, client_lr=0.1, server_lr=1.0)
register("fedadam", fedadam, client_lr=0.1, server_lr=0.05)
register("fedyogi", fedyogi, client_lr=0.1, server_lr=0.05)
register("fedams", fedams, client_lr=0.1, server_lr=0.05)
register("fedprox", fedprox, client_lr=0.1, mu=0.1)
register("scaffold", scaffold, client_lr=0.1)
register("stem", stem, lr=0.1, alpha=0.5)
register("fafed", fafed, lr=0.05, alpha=0.9)
register("local_adaptive", local_adaptive, lr=0.01)
register("padamfed", padamfed, eta=0.02, gamma=0.1, beta=0.5)
register("padamfed_vr", padamfed_vr, eta=0.02, gamma=0.1, beta=0.5)
register("scaffold_m", scaffold_m, eta=0.1, gamma=0.5, beta=0.5)
register("scaffold_m_vr", scaffold_m_vr, eta=0.1, gamma=0.5, beta=0.5)
# FedExP at the paper's EMNIST eps: at 1e-3 the clients' disagreement at x* drives eta_g to spread / (2 eps)
register("fedexp", fedexp, client_lr=0.1, eps=0.1)
# FedLi-LS capped at 1 (every client accepts 1 on the quadratic: a round is GD); at SLS's cap of 10 the clients'
# steps grow apart and their mean model stops off x* (client drift)
register("fedli_ls", fedli_ls, eta_max=1.0)
# FedLi-LU: the authors' eta = 0.01 is too slow for the tests' rounds; weight decay moves the fixed point off x*
register("fedli_lu", fedli_lu, client_lr=0.1, eta=0.5, weight_decay=0.0)

__all__ = [
    "ALGORITHMS", "EXAMPLES", "FAFED", "Algorithm", "ClientRule", "ClientRun", "FedLiLS", "FedOpt", "Federated",
    "LocalAdaptive", "PAdaMFed", "Proximal", "RoundBatch", "Scaffold", "ServerRule", "client", "constant",
    "declared", "deep_frank_wolfe", "exp_decay", "extrapolation", "fafed", "fedadagrad", "fedadam", "fedams",
    "fedavg", "fedavgm", "fedexp", "fedli_ls", "fedli_lu", "fedprox", "fedyogi", "local_adaptive", "make",
    "padamfed", "padamfed_vr", "refresh_control_variates", "register", "scaffold", "scaffold_m", "scaffold_m_vr",
    "server_step", "stem", "storm_momentum", "storm_step_size", "theory_hyperparameters", "train_clients",
]
