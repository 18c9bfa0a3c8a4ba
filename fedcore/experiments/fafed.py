"""FAFED's image experiment: Wu, Huang, Hu & Huang, *Faster Adaptive Federated Learning*, AAAI 2023,
section "Experimental Results", image classification (notebook ``04_fafed``, its section 4).

Fashion-MNIST dealt to 20 worker nodes at three levels of heterogeneity (:data:`SETTINGS`), the
tanh CNN of Nouiehed et al. 2019 (:func:`problem`), FAFED against FedAvg, SCAFFOLD, STEM, FedAdam
and FedAMS (:func:`make_builders`) on the paper's grids (:data:`GRIDS`), every node in every round
with uniform weights (:func:`options`).  :func:`tune` searches the grids, :func:`run_all` runs
every algorithm on every setting, and :data:`CLAIMS` holds the paper's claims, each with a function
that reads our evidence and a verdict off the results (:func:`claims_table`).

Where the paper is silent we choose: "moderate" is ``similarity(s=0.5)`` (half iid, half sorted
by label), and the pairing of batch size ``b`` and period ``q`` with the settings is our reading
of "we increase the batch size and decrease the inner loop number".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from fedcore import algorithms, models
from fedcore.checks import check_bool, check_choice, check_int, check_keywords, check_positive, check_scale, check_seed
from fedcore.data import load_fashion_mnist
from fedcore.experiments.claims import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, PARTLY, Claim, verdict  # noqa: F401
from fedcore.experiments.claims import claims_table as shared_claims_table
from fedcore.experiments.fafed_theory import (  # noqa: F401 -- the notebook reads them as experiment.*
    LAW,
    law_table,
    map_grid,
    map_summary,
    open_choices,
    theorem2_step_note,
)
from fedcore.run import Problem, simulate, sweep
from fedcore.store import Store

if TYPE_CHECKING:
    from fedcore.data import FederatedData
    from fedcore.run import History

SCALES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 2, "eval_every": 2, "max_local_steps": 2, "tune_rounds": 1},
    "small": {"rounds": 40, "eval_every": 5, "max_local_steps": None, "tune_rounds": 10},
    "paper": {"rounds": 300, "eval_every": 10, "max_local_steps": None, "tune_rounds": 30},
}
"""Rounds per run, evaluation period, a cap on the local steps ``q`` and rounds per tuning run."""

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


BUILDERS = make_builders()


def scale_settings(scale: str, rounds: int | None = None) -> dict[str, Any]:
    """The :data:`SCALES` entry of ``scale``, with ``rounds`` instead of its own when given."""
    return dict(check_scale(scale, SCALES), **({"rounds": rounds} if rounds else {}))


def options(setting: str, rounds: int, eval_every: int, *, num_clients: int, seed: int, progress: bool = False,
            max_local_steps: int | None = None, store: Store | None = None) -> dict[str, Any]:
    """``simulate``'s options for ``setting``: all ``num_clients`` clients, uniform weights, its ``b``
    and ``q`` (``q`` capped at ``max_local_steps`` when that is given), the results ``store``."""
    spec = SETTINGS[check_choice("setting", setting, SETTINGS)]
    check_int("rounds", rounds)
    check_int("eval_every", eval_every)
    check_int("num_clients", num_clients)
    check_seed("seed", seed)
    check_bool("progress", progress)
    local_steps = spec["local_steps"]
    if max_local_steps is not None:
        local_steps = min(local_steps, check_int("max_local_steps", max_local_steps))
    return dict(rounds=rounds, clients_per_round=num_clients, local_steps=local_steps,
                batch_size=spec["batch_size"], eval_every=eval_every, weighting="uniform",
                seed=seed, progress=progress, store=store)


def problem(data: FederatedData, seed: int) -> Problem:
    """The paper's model on ``data``: ``tanh_cnn`` (26,620 parameters), initialized from ``seed``."""
    return Problem(data, models.make("tanh_cnn", (1, 28, 28), 10, seed=seed))


def load_datasets(num_clients: int, seed: int, device: str = "cpu") -> dict[str, FederatedData]:
    """Fashion-MNIST split among ``num_clients`` clients as each of :data:`SETTINGS` prescribes."""
    return {name: load_fashion_mnist(num_clients, seed=seed, device=device, **spec["partition"])
            for name, spec in SETTINGS.items()}


def tune(
    datasets: Mapping[str, FederatedData], rounds: int, *, num_clients: int, seed: int, progress: bool = False,
    max_local_steps: int | None = None, grids: Mapping[str, Mapping[str, list[float]]] = GRIDS,
    builders: Mapping[str, Builder] = BUILDERS, make_problem: Callable[[FederatedData, int], Problem] = problem,
    report: Callable[[str], None] | None = print, store: Store | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """``{setting: {algorithm: hyperparameters}}``: per setting and algorithm, the point of its grid
    with the lowest final training loss after ``rounds`` rounds (``fedcore.sweep``).

    Each result is passed to ``report`` as a line (None: silent)."""
    runs = {setting: options(setting, rounds, 10**6, num_clients=num_clients, seed=seed, progress=progress,
                             max_local_steps=max_local_steps, store=store)
            for setting in _mapping("datasets", datasets)}
    for name, grid in _mapping("grids", grids).items():
        _check_keywords(f"grids[{name!r}]", grid, builders, name)
    if report is not None and not callable(report):
        raise TypeError(f"report={report!r} must be a function of one line (str) or None")
    chosen: dict[str, dict[str, dict[str, float]]] = {}
    for setting, data in datasets.items():
        chosen[setting] = {}
        for name, grid in grids.items():
            results = sweep(make_problem(data, seed), builders[name], dict(grid), **runs[setting])
            if "final_train_loss" not in results:  # every point was refused by its builder
                raise ValueError(f"every point of grids[{name!r}] failed in setting {setting!r}: "
                                 f"{results['error'].iloc[0]}")
            best = results.sort_values("final_train_loss").iloc[0]
            chosen[setting][name] = {key: float(best[key]) for key in grid}
            if report is not None:
                report(f"{setting} {name} {chosen[setting][name]} final train loss {best['final_train_loss']:.4f}")
    return chosen


def run_all(
    datasets: Mapping[str, FederatedData], chosen: Mapping[str, Mapping[str, Mapping[str, float]]], rounds: int,
    eval_every: int, *, num_clients: int, seed: int, progress: bool = False, max_local_steps: int | None = None,
    builders: Mapping[str, Builder] = BUILDERS, make_problem: Callable[[FederatedData, int], Problem] = problem,
    store: Store | None = None,
) -> dict[str, dict[str, History]]:
    """``{setting: {algorithm: History}}``: every algorithm of ``builders`` with its ``chosen``
    hyperparameters on every setting, each from the same initial model and minibatches (``seed``);
    a run already in ``store`` is read from it, not recomputed."""
    runs = {setting: options(setting, rounds, eval_every, num_clients=num_clients, seed=seed, progress=progress,
                             max_local_steps=max_local_steps, store=store)
            for setting in _mapping("datasets", datasets)}
    _mapping("chosen", chosen)
    missing = {setting: [name for name in _mapping("builders", builders) if name not in chosen.get(setting, {})]
               for setting in datasets}
    if any(missing.values()):
        raise ValueError(f"chosen has no hyperparameters for {({s: n for s, n in missing.items() if n})} "
                         "({setting: [algorithms]}); give chosen[setting][algorithm] for every setting of datasets "
                         "and algorithm of builders, as tune() returns")
    for setting in datasets:
        for name in builders:
            _check_keywords(f"chosen[{setting!r}][{name!r}]", chosen[setting][name], builders, name)
    return {
        setting: {name: simulate(make_problem(data, seed), builders[name](**chosen[setting][name]), **runs[setting])
                  for name in builders}
        for setting, data in datasets.items()
    }


def _mapping(name: str, value: Any) -> Mapping:
    """``value`` must be a mapping (``{setting: ...}``, ``{algorithm: ...}``)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}={value!r} must be a dict, got {type(value).__name__}")
    return value


def _check_keywords(name: str, keywords: Mapping[str, Any], builders: Mapping[str, Builder], algorithm: str) -> None:
    """``builders[algorithm]`` must exist and take every key of ``keywords`` (named ``name`` in the message)."""
    if algorithm not in _mapping("builders", builders):
        raise ValueError(f"{name}: no builder for algorithm {algorithm!r}; builders has {list(builders)}")
    if not callable(builders[algorithm]):
        raise TypeError(f"builders[{algorithm!r}]={builders[algorithm]!r} must be a function of the hyperparameters")
    check_keywords(builders[algorithm], _mapping(name, keywords), f"{name}: the builder of {algorithm}")


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


def hyperparameter_table(chosen: Mapping[str, Mapping[str, Mapping[str, float]]]) -> pd.DataFrame:
    """Algorithms by settings, each cell ``lr=0.1, alpha=0.9``."""
    return pd.DataFrame(chosen).map(lambda h: ", ".join(f"{k}={v:g}" for k, v in h.items()))


def results_table(histories: Mapping[str, Mapping[str, History]]) -> pd.DataFrame:
    """One row per (setting, algorithm): final train loss, final and best test accuracy, the round a
    run diverged at and its wall time in seconds."""
    return pd.DataFrame([
        {"setting": setting, "algorithm": name, "final train loss": history.frame["train_loss"].iloc[-1],
         "final test accuracy": history.final("test_accuracy"),
         "best test accuracy": history.frame["test_accuracy"].max(),
         "diverged at round": history.diverged_round, "seconds": history.frame["seconds"].sum()}
        for setting, runs in histories.items() for name, history in runs.items()
    ])


def by_setting(results: pd.DataFrame, column: str) -> pd.DataFrame:
    """``column`` of :func:`results_table` as algorithms by settings (settings in their order there)."""
    if not isinstance(results, pd.DataFrame):
        raise TypeError(f"results must be a DataFrame (results_table(...)), got {type(results).__name__}")
    missing = [key for key in ("setting", "algorithm", column) if key not in results.columns]
    if missing:
        raise ValueError(f"results has no column {missing}: pass results_table(...) and one of its columns "
                         f"{list(results.columns)} as column")
    settings = list(dict.fromkeys(results["setting"]))
    return results.pivot(index="algorithm", columns="setting", values=column)[settings]


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


# ------------------------------------------------------------------ the paper's claims as data

ACCURACY_TOLERANCE = 0.02
"""'Performs well': test accuracy within this of the best (what another seed moves)."""
PAPER_FIRST_STEP = {"client 1": "9.858", "client 2": "10.14", "client 3": "10.14", "mean": "10.05"}
"""The counterexample's first step as the paper prints it (eta = 0.1, beta = 0.5; Theorem 1's proof)."""


@dataclass(frozen=True)
class Evidence:
    """What the claims are judged on: final test accuracy and final train loss (algorithms by
    settings, :func:`by_setting`), the counterexample's first step with the paper's eta = 0.1,
    beta = 0.5 (``Trajectory.frame.loc[1]``) and the per-step law table (:func:`law_table`)."""

    accuracy: pd.DataFrame
    loss: pd.DataFrame
    first_step: Mapping[str, float] | None = None
    law: pd.DataFrame | None = None


def _ranked_first(e: Evidence) -> tuple[str, str]:
    if "FAFED" not in e.loss.index:
        return "no FAFED run", NOT_TESTABLE
    ranks = e.loss.rank()  # 1 = lowest final training loss; a NaN loss (diverged) has no rank
    ours = ", ".join(f"{s}: FAFED ranks {'-' if pd.isna(r) else int(r)} of {len(ranks)}"
                     for s, r in ranks.loc["FAFED"].items())
    return ours, verdict(int((ranks.loc["FAFED"] == 1).sum()), len(ranks.columns))


def _accurate(e: Evidence) -> tuple[str, str]:
    if "FAFED" not in e.accuracy.index:
        return "no FAFED run", NOT_TESTABLE
    best, fafed = e.accuracy.max(), e.accuracy.loc["FAFED"]
    ours = ", ".join(f"{s}: {fafed[s]:.3f} (best {e.accuracy[s].idxmax()} {best[s]:.3f})" for s in e.accuracy)
    return ours, verdict(int((fafed >= best - ACCURACY_TOLERANCE).sum()), len(e.accuracy.columns))


def _harder(e: Evidence) -> tuple[str, str]:
    if "FedAvg" not in e.accuracy.index:
        return "no FedAvg run", NOT_TESTABLE
    fedavg = e.accuracy.loc["FedAvg"]
    ours = "final test accuracy of FedAvg: " + ", ".join(f"{s} {a:.3f}" for s, a in fedavg.items())
    drops = (fedavg.diff().iloc[1:] < 0).sum()  # from each setting to the next more heterogeneous one
    return ours, verdict(int(drops), len(fedavg) - 1)


def _first_step(first_step: Mapping[str, float]) -> tuple[str, bool]:
    """Our first step beside the paper's, which agrees when within one unit of its last printed digit."""
    ours = {key: float(first_step[key]) for key in PAPER_FIRST_STEP}
    same = all(abs(ours[key] - float(printed)) < 10.0 ** -len(printed.split(".")[1])
               for key, printed in PAPER_FIRST_STEP.items())
    c1, c2, c3, mean = (f"{value:.4f}" for value in ours.values())
    clients = f"{c1}, {c2} (twice)" if c2 == c3 else f"{c1}, {c2}, {c3}"
    return f"{'reproduced exactly' if same else 'differs from the paper'}: {clients}, mean {mean}", same


def _diverges(e: Evidence) -> tuple[str, str]:
    parts, checks = [], []
    if e.first_step is not None:
        text, same = _first_step(e.first_step)
        parts.append(text)
        checks.append(same)
    if e.law is not None:
        follows = bool(np.allclose(e.law["move"], e.law[LAW], rtol=1e-9, atol=0))
        parts.append(f"the mean {'moves' if follows else 'does not move'} by eta/(3 sqrt(1-beta^t))")
        checks.append(follows)
    return "; ".join(parts) or "no counterexample run", verdict(sum(checks), len(checks))


CLAIMS: tuple[Claim, ...] = (
    Claim("FAFED reaches the lowest training loss in every setting "
          "('our algorithms consistently outperform the other baseline algorithms')", _ranked_first),
    Claim("FAFED 'performs well under all conditions' in test accuracy", _accurate),
    Claim("Training becomes harder as heterogeneity grows", _harder),
    Claim("Naive local adaptivity (Alg. 1) can diverge for any eta, beta (Theorem 1)", _diverges),
)
"""The main text's claims (section "Experimental Results" and Theorem 1), in the notebook's order."""


def claims_table(evidence: Evidence, claims: tuple[Claim, ...] = CLAIMS) -> pd.DataFrame:
    """One row per claim: the claim, what our results show and the verdict (:mod:`fedcore.experiments.claims`)."""
    return shared_claims_table(evidence, claims)


