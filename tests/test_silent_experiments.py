"""Nothing silent in the experiments' layer: every field of every paper's ``Scale`` is checked when the scale is
built (and on ``dataclasses.replace``), the claim helpers refuse what ``judge`` refuses, and a grid search whose
every point the builder refuses says why."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
from conftest import blobs

from fedcore import algorithms, comparisons, models
from fedcore.comparisons import CONFIRMED, CONTRADICTED, NOT_DECIDABLE, WITHIN_NOISE
from papers import claims, common
from papers.claims import Scope
from papers.fafed import experiment as fafed
from papers.fedli import experiment as fedli
from papers.fedopt import experiment as fedopt
from papers.fedopt import tuning as fedopt_grids
from papers.padamfed import experiment as padamfed

SCALES = {"fedopt": fedopt.SCALES, "fedopt grids": fedopt_grids.GRIDS, "padamfed": padamfed.SCALES,
          "fedli": fedli.SCALES, "fafed": fafed.SCALES}


# ---------------------------------------------------------------- the papers' scales: every field checked


@pytest.mark.parametrize("paper", list(SCALES))
def test_every_scale_of_every_paper_builds_and_rebuilds_the_same(paper) -> None:
    """Each paper has its four scales, and each, built again through ``dataclasses.replace`` (which checks every
    field again), is the same scale."""
    assert list(SCALES[paper]) == ["smoke", "small", "medium", "paper"]
    for name, scale in SCALES[paper].items():
        assert scale.name == name and dataclasses.replace(scale) == scale


@pytest.mark.parametrize("paper", list(SCALES))
def test_every_field_of_every_scale_has_a_declared_kind(paper) -> None:
    """The base ``Scale`` checks each field by the kind its class declares: a field without one is a ``TypeError``
    when the class is first built, so none is left unchecked."""
    scale = SCALES[paper]["small"]
    assert {f.name for f in dataclasses.fields(scale)} == set(type(scale).kinds())


def test_the_declared_task_names_are_the_papers() -> None:
    """A scale's ``tasks`` are checked against the tasks its paper's ``tasks()`` builds."""
    assert set(fedopt.FedoptScale.kinds()["tasks"]("tasks", tuple(fedopt.STAND_INS))) == set(fedopt.STAND_INS)
    assert set(fafed.FafedScale.kinds()["tasks"]("tasks", tuple(fafed.SETTINGS))) == set(fafed.SETTINGS)
    with pytest.raises(ValueError, match="model='cnn' not one of"):
        fafed.FafedScale.kinds()["model"]("model", "cnn")
    assert all(fafed.FafedScale.kinds()["model"]("model", model) == model for model in fafed.MODELS)


def test_the_values_the_notebooks_pass_still_pass() -> None:
    """What the notebooks and the papers' helpers give ``dataclasses.replace``: 04's parameters, 02's CIFAR-10
    run, a task subset, a list of seeds, a scale that tunes nothing."""
    small = fafed.SCALES["small"]
    changed = dataclasses.replace(small, clients=8, rho=0.05, tune=False, rounds=7, seeds=small.seeds_or([4, 5]))
    assert changed.seeds == (4, 5) and changed.rounds == 7 and not changed.tune
    assert dataclasses.replace(small, tuning_seeds=()).tuning_seeds == ()
    assert dataclasses.replace(padamfed.SCALES["paper"], tasks=("cifar10",)).tasks == ("cifar10",)
    assert dataclasses.replace(fedli.SCALES["paper"], tasks=("femnist",)).tasks == ("femnist",)
    assert dataclasses.replace(fedopt.SCALES["smoke"], tasks=("emnist_cr",), rounds=None).rounds is None
    assert dataclasses.replace(fedli.SCALES["small"], long={"rounds": 100}).long == {"rounds": 100}
    assert dataclasses.replace(fedopt_grids.GRIDS["small"], client=(-1, 0)).client == (-1.0, 0.0)
    assert padamfed.SCALES["smoke"].factors() == pytest.approx([10 ** -0.5, 1.0])


SMALL = {paper: scales["small"] for paper, scales in SCALES.items()}
BAD_SCALES = [
    # Reddi et al.: the clients per round, the models, ExpDecay's schedule, the seeds the extra runs take
    ("fedopt", {"models": "ligth"}, ValueError, r"models='ligth' not one of \['light', 'paper'\]"),
    ("fedopt", {"clients_per_round": 0}, ValueError, r"clients_per_round=0 must be >= 1"),
    ("fedopt", {"clients_per_round": 2.5}, TypeError, r"clients_per_round=2.5 must be an int.*or None"),
    ("fedopt", {"centralized": -1}, ValueError, r"centralized=-1 must be >= 1"),
    ("fedopt", {"centralized": 0}, ValueError, r"centralized=0 must be >= 1"),
    ("fedopt", {"decayed": 0}, ValueError, r"decayed=0 must be >= 1"),
    ("fedopt", {"decay": "late"}, ValueError, r"decay='late' not one of \['once_late', 'paper'\]"),
    ("fedopt", {"paper_schedule": "yes"}, TypeError, r"paper_schedule='yes' must be True or False"),
    ("fedopt", {"shakespeare_roles": 0}, ValueError, r"shakespeare_roles=0 must be >= 1"),
    ("fedopt", {"tasks": ("emnist",)}, ValueError, r"task='emnist' not one of \['cifar10', 'cifar100', 'emnist_ae'"),
    ("fedopt", {"rounds": {"emnist_cr": 10}}, TypeError, r"rounds=\{'emnist_cr': 10\} must be an int"),
    # the fields every paper shares
    ("fedopt", {"tuning_seeds": 0}, ValueError, r"tuning_seeds=0 must be a non-empty list of seeds \(or \(\)"),
    ("fafed", {"tuning_seeds": "100"}, ValueError, r"tuning_seeds='100' must be a non-empty list of seeds"),
    ("fafed", {"name": ""}, ValueError, r"name='' must be a non-empty string"),
    ("fafed", {"name": 5}, TypeError, r"name=5 must be a non-empty string"),
    ("fafed", {"rounds": None}, TypeError, r"rounds=None must be an int"),
    # PAdaMFed: the multipliers' range, the clients, the horizons swept, T and the period per task
    ("padamfed", {"multipliers": (2.0, -2.0)}, ValueError, r"multipliers=\(2.0, -2.0\) must be \(low, high\)"),
    ("padamfed", {"multipliers": (0.5, 2.0)}, ValueError, r"multipliers=\(0.5, 2.0\) must be .*low <= 0 <= high"),
    ("padamfed", {"multipliers": (-0.3, 1.0)}, ValueError, r"multipliers=\(-0.3, 1.0\) must be .*multiples of 0.5"),
    ("padamfed", {"multipliers": (1.0,)}, ValueError, r"multipliers=\(1.0,\) must be \(low, high\)"),
    ("padamfed", {"multipliers": "(-1, 1)"}, TypeError, r"multipliers='\(-1, 1\)' must be \(low, high\)"),
    ("padamfed", {"clients": 0}, ValueError, r"clients=0 must be >= 1"),
    ("padamfed", {"swept": ("cifar10",)}, ValueError, r"swept='cifar10' not one of \['fashion_mnist', 'fashion_mn"),
    ("padamfed", {"swept": "fashion_mnist"}, TypeError, r"swept='fashion_mnist' must be a sequence of task names"),
    ("padamfed", {"rounds": 60}, TypeError, r"rounds=60 must be \{task: int >= 1\}"),
    ("padamfed", {"eval_every": {"fashion_mnist": 5}}, ValueError,
     r"eval_every=\{'fashion_mnist': 5\} has no entry for \['fashion_mnist_long'\]"),
    ("padamfed", {"rounds": {"fashion_mnist": 60, "fashion_mnist_lng": 300}}, ValueError,
     r"rounds has task='fashion_mnist_lng' not one of"),
    # FedLi: the long horizon, the Shakespeare roles, the tasks
    ("fedli", {"long": {"rounds": 0}}, ValueError, r"long\['rounds'\]=0 must be >= 1"),
    ("fedli", {"long": {"round": 500}}, ValueError, r"long=\{'round': 500\} must be .*'rounds'"),
    ("fedli", {"long": {"eval_every": 10}}, ValueError, r"long=\{'eval_every': 10\} must be .*'rounds'"),
    ("fedli", {"long": 500}, TypeError, r"long=500 must be"),
    ("fedli", {"long": {"rounds": 500, "eval_every": 0}}, ValueError, r"long\['eval_every'\]=0 must be >= 1"),
    ("fedli", {"shakespeare_roles": 0}, ValueError, r"shakespeare_roles=0 must be >= 1"),
    ("fedli", {"tasks": ("emnist",)}, ValueError, r"tasks='emnist' not one of \['cifar10', 'cifar100', 'femnist'"),
    # FAFED: the model, the flags
    ("fafed", {"model": "vit"}, ValueError, r"model='vit' not one of \['mlp', 'tanh_cnn'\]"),
    ("fafed", {"tune": "no"}, TypeError, r"tune='no' must be True or False"),
    ("fafed", {"ablation": 1}, TypeError, r"ablation=1 must be True or False"),
    ("fafed", {"tasks": ("extreme",)}, ValueError, r"tasks='extreme' not one of \['high', 'low', 'moderate'\]"),
    # 01's grids: the log10 ranges and the taus
    ("fedopt grids", {"client": (0.0, -2.5)}, ValueError, r"client=\(0.0, -2.5\) must be \(low, high\)"),
    ("fedopt grids", {"server": (0.3, 1.0)}, ValueError, r"server=\(0.3, 1.0\) must be .*multiples of 0.5"),
    ("fedopt grids", {"taus": ()}, ValueError, r"taus=\(\) must be a non-empty sequence of numbers > 0"),
    ("fedopt grids", {"taus": (-1e-3,)}, ValueError, r"taus\[0\]=-0.001 must be > 0"),
    ("fedopt grids", {"taus": 1e-3}, TypeError, r"taus=0.001 must be a non-empty sequence of numbers > 0"),
]


@pytest.mark.parametrize("paper, change, error, message", BAD_SCALES,
                         ids=[f"{paper}-{next(iter(change))}={next(iter(change.values()))!r}"
                              for paper, change, _, _ in BAD_SCALES])
def test_a_scale_refuses_a_bad_field_at_once_naming_it(paper, change, error, message) -> None:
    """Each bad value is refused when the scale is built (``dataclasses.replace`` builds it), with the class, the
    field, the value and what is allowed, not later under another name or never."""
    small = SMALL[paper]
    with pytest.raises(error, match=message) as raised:
        dataclasses.replace(small, **change)
    assert str(raised.value).startswith(f"{type(small).__name__}: ")


@pytest.mark.parametrize("build", [
    lambda: fedopt.FedoptScale("small", seeds=(0, 1), rounds=2, eval_every=1, models="ligth"),
    lambda: padamfed.PadamfedScale("small", seeds=(0, 1), rounds={"fashion_mnist": 4}, eval_every={"fashion_mnist": 2},
                                   multipliers=(2.0, -2.0)),
    lambda: fedli.FedliScale("small", seeds=(0, 1), rounds=3, eval_every=3, long={"rounds": 0}),
    lambda: fafed.FafedScale("small", seeds=(0, 1), rounds=2, eval_every=1, model="ligth"),
    lambda: fedopt_grids.GridScale("small", seeds=(0, 1), rounds=2, eval_every=1, client=(0.0, -2.5)),
])
def test_a_scale_built_directly_is_checked_too(build) -> None:
    with pytest.raises(ValueError):
        build()


def test_a_subclass_field_without_a_kind_is_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Unchecked(common.Scale):
        extra: int = 3

    with pytest.raises(TypeError, match=r"Unchecked declares no kind for \['extra'\]"):
        Unchecked("small", seeds=(0, 1), rounds=2, eval_every=1)


# ---------------------------------------------------------------- the claim helpers take what judge takes


def test_compare_refuses_a_seed_labelled_beside_an_unlabelled_input() -> None:
    """Labels on one side only would pair by position, the labels ignored: the verdict flips with their order."""
    a = pd.Series([3.5, 2.5, 1.5, 0.5], index=[3, 2, 1, 0])
    b = [0.0, 1.0, 2.0, 3.0]
    for call in (lambda: comparisons.compare(a, b), lambda: comparisons.compare(b, a), lambda: comparisons.paired(a, b),
                 lambda: comparisons.compare(a.to_dict(), np.asarray(b))):
        with pytest.raises(ValueError, match=r"labelled by seeds .* and (a|b) is not"):
            call()
    assert comparisons.compare(a, pd.Series(b, index=[0, 1, 2, 3]))[0] == CONFIRMED  # both labelled: by seed
    assert comparisons.compare(list(a), b)[0] == WITHIN_NOISE  # neither: by position, as given


@pytest.mark.parametrize("call, error, message", [
    (lambda: comparisons.any_of(["confirmd", CONFIRMED]), ValueError, r"outcomes \['confirmd'\] are not among"),
    (lambda: comparisons.all_of(["confirmd", CONFIRMED]), ValueError, r"outcomes \['confirmd'\] are not among"),
    (lambda: comparisons.all_of("confirmed"), TypeError, r"outcomes='confirmed' must be a list of outcomes"),
    (lambda: comparisons.any_of("confirmed"), TypeError, r"outcomes='confirmed' must be a list of outcomes"),
    (lambda: comparisons.any_of(5), TypeError, r"outcomes=5 must be a list of outcomes"),
    (lambda: comparisons.any_of([]), ValueError, r"outcomes=\[\] is empty: any_of needs at least one alternative"),
    (lambda: claims.judge([NOT_DECIDABLE], seeds=-2), ValueError, r"seeds=-2 must be >= 1"),
    (lambda: claims.judge([NOT_DECIDABLE], seeds=0), ValueError, r"seeds=0 must be >= 1"),
    (lambda: claims.judge([CONFIRMED], seeds=2.5), TypeError, r"seeds=2.5 must be an int"),
    (lambda: claims.not_decidable(-2), ValueError, r"seeds=-2 must be >= 1"),
    (lambda: comparisons.holm([1.5, 0.01]), ValueError, r"p_values\[0\]=1.5 not in \[0, 1\]"),
    (lambda: comparisons.holm([0.01, -0.2]), ValueError, r"p_values\[1\]=-0.2 not in \[0, 1\]"),
    (lambda: comparisons.holm(0.05), TypeError, r"p_values=0.05 must be a list of p-values"),
    (lambda: comparisons.holm("0.05"), TypeError, r"p_values='0.05' must be a list of p-values"),
    (lambda: comparisons.holm(["0.05"]), TypeError, r"p_values\[0\]='0.05' must be a number"),
    (lambda: Scope(("t",), "small", 10, (0, 0)), ValueError, r"seeds=\[0, 0\] repeats a seed"),
    (lambda: Scope(("t",), "small", 10, (-1, 2)), ValueError, r"seeds=-1 must be >= 0"),
    (lambda: Scope(("t",), "small", 10, ()), ValueError, r"seeds=\(\) is empty, but rounds=10"),
    (lambda: Scope(("t",), "small", 10, "01"), ValueError, r"seeds='01' must be a non-empty list of seeds"),
    (lambda: Scope(("t",), "small", 10, (0, 1), tuning_seeds=(5, 5)), ValueError, r"tuning_seeds=\[5, 5\] repeats"),
    (lambda: Scope(("t",), "small", 10, (0, 1), corrected=-1), ValueError, r"corrected=-1 must be >= 0"),
    (lambda: claims.learned_something({"FedAvg": "high"}, 10.0, 1.0), TypeError,
     r"scores\['FedAvg'\]='high' must be a number"),
    (lambda: claims.learned_something({"FedAvg": None}, 10.0, 1.0), TypeError, r"scores\['FedAvg'\]=None must be"),
    (lambda: Scope("cr", "small", 10, (0, 1)), TypeError, r"tasks='cr' must be a sequence of task names"),
    (lambda: Scope(("cr",), "small", 10, (0, 1)).narrowed("cr"), TypeError, r"tasks='cr' must be a sequence"),
    (lambda: comparisons.paired([1.0, 2.0, 3.0], [0.0, 1.5, 2.0]).interval(95), ValueError,
     r"confidence=95 not in \(0, 1\)"),
])
def test_a_claim_helper_refuses_what_judge_refuses(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_the_claim_helpers_still_take_what_they_document() -> None:
    """NaN p-values (one seed) stay NaN in Holm's k; a deterministic scope has no seeds; a NaN score beats nothing;
    a generator of outcomes is a list of outcomes; all_of of no check is confirmed."""
    adjusted = comparisons.holm([0.5, math.nan, 0.0, 1.0])
    assert math.isnan(adjusted[1]) and adjusted[2] == 0.0 and adjusted[0] == 1.0
    assert str(Scope((), "small", None, ())).endswith("deterministic")
    assert Scope(("t",), "small", 10, [2, 1], tuning_seeds=[7]).seeds == (2, 1)
    assert claims.learned_something({"FedAvg": math.nan, "FedAdam": 80.0, "SCAFFOLD": np.float32(81)}, 10.0, 1.0)
    assert comparisons.all_of(o for o in (CONFIRMED, CONFIRMED)) == CONFIRMED and comparisons.all_of([]) == CONFIRMED
    assert comparisons.any_of((CONTRADICTED, WITHIN_NOISE)) == WITHIN_NOISE
    assert claims.judge([NOT_DECIDABLE], seeds=3) == "not decidable at 3 seeds"
    assert claims.judge([NOT_DECIDABLE], seeds=None) == "not decidable at these seeds"


# ---------------------------------------------------------------- tune: a grid the builder refuses says why


def _task() -> common.Task:
    return common.Task("blobs", blobs(), lambda seed: models.make("mlp", (8,), 3, hidden=(6,), seed=seed),
                       dict(rounds=2, clients_per_round=3, local_steps=2, batch_size=4, eval_every=1,
                            weighting="samples"), baseline=1 / 3)


def test_a_tune_whose_every_point_is_refused_says_why() -> None:
    """Every point refused by the builder: the error gives the builder's own refusal, not only "was refused"."""
    with pytest.raises(ValueError) as refused:
        algorithms.fedavg(-0.1)
    with pytest.raises(ValueError, match=r"every point of the grid of 'FedAvg' diverged on some seed or was "
                                         r"refused") as error:
        common.tune(_task(), {"FedAvg": algorithms.fedavg}, {"FedAvg": {"client_lr": [-0.1, -1.0]}}, [0, 1])
    assert str(refused.value) in str(error.value)
    assert "client_lr=-1.0" in str(error.value)  # each distinct refusal, not only the first
