"""Nothing silent in what identifies a run (issue 58, points 1-3): a value or code reached through a user's module, a
plain (non-dataclass) object of a user's class, and a non-frozen ``@dataclass`` are keyed by what they hold, so an
edit is another run and never the stored one; what cannot be described is never kept nor served."""

from __future__ import annotations

import importlib
import math
import shutil
import sys
import textwrap
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore.algorithms.contract import federated_round
from fedcore.identity import describe, uncomparable
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.store import Store
from fedcore.sweeps import sweep

OPTIONS = dict(rounds=3, clients_per_round=3, local_steps=2, batch_size=4, progress=False)


def problem() -> Problem:
    return Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), dropout=0.0, seed=0))


def user_module(tmp_path: Path, name: str, files: dict[str, str]):
    """Write a user's module (or package: ``{"pkg/__init__.py": ..., "pkg/sub.py": ...}``) under ``tmp_path`` and
    import it afresh, as a notebook's ``import cfg`` would."""
    for loaded in [key for key in sys.modules if key == name or key.startswith(f"{name}.")]:
        del sys.modules[loaded]
    return _load(tmp_path, files, lambda: importlib.import_module(name))


def rewrite(tmp_path: Path, module, path: str, source: str):
    """Edit a user's module file and reload it (the same module object, its attributes replaced)."""
    return _load(tmp_path, {path: source}, lambda: importlib.reload(module))


def _load(tmp_path: Path, files: dict[str, str], load):
    """Write ``files`` under ``tmp_path`` (their compiled copies removed) and ``load()`` with ``tmp_path`` on the
    import path."""
    for path, source in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(textwrap.dedent(source))
        shutil.rmtree((tmp_path / path).parent / "__pycache__", ignore_errors=True)
    sys.path.insert(0, str(tmp_path))
    try:
        importlib.invalidate_caches()
        return load()
    finally:
        sys.path.remove(str(tmp_path))


def same_run(first, second) -> bool:
    return second.frame["train_loss"].equals(first.frame["train_loss"])


# ---------------------------------------------------------------- 1. values and code read through a user's module


def _lambda_reading(module, expression: str, how: str):
    """``lambda t: <expression>`` over the user's module (``cfg`` or ``s``: the module, ``pkg``: its package), read as
    globals (a notebook's cell: exec'd code) or as closure cells (a function that returns the schedule)."""
    cfg = s = module  # noqa: F841 -- read by the lambdas below as closure cells
    pkg = sys.modules[module.__name__.split(".")[0]]  # noqa: F841
    if how == "global":
        namespace = {"cfg": cfg, "s": s, "pkg": pkg}
        exec(f"schedule = lambda t: {expression}", namespace)
        return namespace["schedule"]
    return {"cfg.LR": lambda t: cfg.LR, "cfg.rate(t)": lambda t: cfg.rate(t),
            "pkg.sub.LR": lambda t: pkg.sub.LR, "s.LR": lambda t: s.LR}[expression]


CHANGES = {  # name: (files, the module to import, the expression, how to change it)
    "a number (cfg.LR)": ({"cfg_lr.py": "LR = 0.1\n"}, "cfg_lr", "cfg.LR", "set"),
    "a function edited and reloaded (cfg.rate(t))": (
        {"cfg_rate.py": "def rate(t):\n    return 0.1\n"}, "cfg_rate", "cfg.rate(t)", "reload"),
    "through a package's submodule (pkg.sub.LR)": (
        {"pkg_lr/__init__.py": "", "pkg_lr/sub.py": "LR = 0.1\n"}, "pkg_lr.sub", "pkg.sub.LR", "set"),
    "a submodule imported as s (s.LR)": (
        {"pkg_as/__init__.py": "", "pkg_as/sub.py": "LR = 0.1\n"}, "pkg_as.sub", "s.LR", "set"),
}


@pytest.mark.parametrize("how", ["global", "closure"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_a_value_or_code_read_through_a_users_module_is_keyed(tmp_path, change, how) -> None:
    files, name, expression, edit = CHANGES[change]
    module = user_module(tmp_path, name, files)
    schedule = _lambda_reading(module, expression, how)
    runs = Store(tmp_path / "s.sqlite")
    first = simulate(problem(), algorithms.fedavg(schedule), store=runs, **OPTIONS)
    again = simulate(problem(), algorithms.fedavg(schedule), store=runs, **OPTIONS)
    assert not first.stored and again.stored, "the same module's values: the stored run"
    if edit == "set":
        module.LR = 0.2
    else:
        rewrite(tmp_path, module, next(iter(files)), "def rate(t):\n    return 0.1 * 2.0\n")
    changed = simulate(problem(), algorithms.fedavg(schedule), store=runs, **OPTIONS)
    assert not changed.stored and len(runs) == 2
    assert not same_run(first, changed)


def test_runs_of_many_through_a_users_module_are_keyed(tmp_path) -> None:
    """simulate_runs looks each run up by the same identity: a changed module value misses there too."""
    cfg = user_module(tmp_path, "cfg_many", {"cfg_many.py": "LR = 0.1\n"})
    runs = Store(tmp_path / "s.sqlite")
    first = simulate_runs(problem(), [algorithms.fedavg(lambda t: cfg.LR)], store=runs, **OPTIONS)[0]
    cfg.LR = 0.2
    changed = simulate_runs(problem(), [algorithms.fedavg(lambda t: cfg.LR)], store=runs, **OPTIONS)[0]
    assert not changed.stored and not same_run(first, changed)


class HeldRate:
    """A schedule object holding a user's module (plain class)."""

    def __init__(self, cfg) -> None:
        self.cfg = cfg

    def __call__(self, t):
        return self.cfg.LR


@dataclass(frozen=True)
class HeldField:
    """A schedule dataclass holding a user's module in a field."""

    cfg: Any

    def __call__(self, t):
        return self.cfg.LR


@pytest.mark.parametrize("holder", [HeldRate, HeldField])
def test_a_users_module_held_by_an_object_is_keyed_by_its_attributes(tmp_path, holder) -> None:
    cfg = user_module(tmp_path, "cfg_held", {"cfg_held.py": "LR = 0.1\n"})
    runs = Store(tmp_path / "s.sqlite")
    first = simulate(problem(), algorithms.fedavg(holder(cfg)), store=runs, **OPTIONS)
    again = simulate(problem(), algorithms.fedavg(holder(cfg)), store=runs, **OPTIONS)
    cfg.LR = 0.2
    changed = simulate(problem(), algorithms.fedavg(holder(cfg)), store=runs, **OPTIONS)
    assert not first.stored and again.stored and not changed.stored and not same_run(first, changed)


def test_a_library_module_is_described_by_name_and_a_users_module_by_what_is_read(tmp_path) -> None:
    """``torch``/``math`` stay names (their code is the libraries'); a user's module adds only the attributes the
    code reads, so an attribute the code never reads changes nothing."""
    cfg = user_module(tmp_path, "cfg_reads", {"cfg_reads.py": "LR = 0.1\nUNREAD = 1\n"})
    described = describe(lambda t: cfg.LR * math.exp(-t) + torch.zeros(()).item())
    assert described["closure"]["cfg"] == {"module": "cfg_reads", "reads": {"LR": 0.1}}
    assert described["globals"]["math"] == {"module": "math"} and described["globals"]["torch"] == {"module": "torch"}
    cfg.UNREAD = 2
    assert describe(lambda t: cfg.LR * math.exp(-t) + torch.zeros(()).item()) == described


# ---------------------------------------------------------------- 2. a plain (non-dataclass) algorithm class


PLAIN = '''
from fedcore import algorithms
from fedcore.algorithms.contract import federated_round

class MyAdam:
    """A user's algorithm: init and round, hyperparameters set in __init__, a repr that does not show them all."""
    name = "MyAdam"
    BETA = {beta}

    def __init__(self, client_lr, server_lr=1.0):
        self.client_lr, self.server_lr = client_lr, server_lr

    def __repr__(self):
        return f"MyAdam({{self.client_lr}})"

    def inner(self):
        return algorithms.fedadam(self.client_lr, server_lr={server_lr_expression}, beta1=self.BETA)

    def init(self, x0, num_clients):
        return self.inner().init(x0, num_clients)

    def round(self, state, batch, oracle):
        return federated_round(self.inner(), state, batch, oracle)
'''


def _plain(tmp_path: Path, beta: str = "0.9", server_lr: str = "self.server_lr"):
    return user_module(tmp_path, "user_plain", {"user_plain.py": PLAIN.format(beta=beta,
                                                                              server_lr_expression=server_lr)})


@pytest.mark.parametrize("change", ["a field the repr hides", "an edited method", "a class attribute"])
def test_a_plain_algorithm_class_is_keyed_by_its_code_and_its_instance(tmp_path, change) -> None:
    module = _plain(tmp_path)
    runs = Store(tmp_path / "s.sqlite")
    first = simulate(problem(), module.MyAdam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    again = simulate(problem(), module.MyAdam(0.1, server_lr=0.05), store=runs, **OPTIONS)
    assert not first.stored and again.stored, "the same class and fields: the stored run"
    if change == "a field the repr hides":
        algorithm = module.MyAdam(0.1, server_lr=0.5)
    elif change == "an edited method":
        algorithm = _plain(tmp_path, server_lr="self.server_lr * 10").MyAdam(0.1, server_lr=0.05)
    else:
        algorithm = _plain(tmp_path, beta="0.5").MyAdam(0.1, server_lr=0.05)
    assert repr(algorithm) == repr(module.MyAdam(0.1, server_lr=0.05))
    changed = simulate(problem(), algorithm, store=runs, **OPTIONS)
    assert not changed.stored and len(runs) == 2
    assert not same_run(first, changed)


class Factor(torch.nn.Module):
    """A user's layer whose number is an attribute (``repr``: ``Factor()``) or a buffer."""

    def __init__(self, factor: float, buffer: bool = False) -> None:
        super().__init__()
        if buffer:
            self.register_buffer("factor", torch.tensor(factor))
        else:
            self.factor = factor

    def forward(self, x):
        return x * self.factor


@pytest.mark.parametrize("buffer", [False, True], ids=["attribute", "buffer"])
def test_a_users_layer_is_keyed_by_its_own_attributes_and_buffers(tmp_path, buffer) -> None:
    def model(factor: float) -> Problem:
        torch.manual_seed(0)  # the same initial parameters
        return Problem(blobs(), torch.nn.Sequential(torch.nn.Linear(8, 3), Factor(factor, buffer)))

    runs = Store(tmp_path / "s.sqlite")
    first = simulate(model(2.0), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    again = simulate(model(2.0), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    changed = simulate(model(3.0), algorithms.fedavg(0.1), store=runs, **OPTIONS)
    assert not first.stored and again.stored and not changed.stored and not same_run(first, changed)


class Generated:
    """A plain object whose hyperparameter lives in a random generator's state (no description of its content)."""

    name = "Generated"

    def __init__(self, seed: int) -> None:
        self.generator = torch.Generator().manual_seed(seed)

    def __repr__(self) -> str:
        return "Generated()"

    def init(self, x0, num_clients):
        return algorithms.fedavg(0.1).init(x0, num_clients)

    def round(self, state, batch, oracle):
        lr = float(torch.rand((), generator=self.generator)) * 0.2
        return federated_round(algorithms.fedavg(lr), state, batch, oracle)


class Queued(deque):
    """A plain object whose content is held by its C base (a deque), not in ``__dict__``."""

    name = "Queued"

    def init(self, x0, num_clients):
        return algorithms.fedavg(self[0]).init(x0, num_clients)

    def round(self, state, batch, oracle):
        return federated_round(algorithms.fedavg(self[0]), state, batch, oracle)

    def __repr__(self) -> str:
        return "Queued()"


@pytest.mark.parametrize("unkeyable", ["an attribute of no known kind", "content outside __dict__"])
def test_a_plain_object_whose_content_cannot_be_described_is_never_stored(tmp_path, unkeyable) -> None:
    """Uncomparable: neither served nor kept (simulate computes it every time), and the description says why and how
    to make it keyable."""
    build = (lambda: Generated(3)) if unkeyable == "an attribute of no known kind" else (lambda: Queued([0.1]))
    unknown = uncomparable(describe(build()))
    assert unknown, "its content cannot be compared"
    if unkeyable == "content outside __dict__":
        assert "deque" in unknown[0] and "dataclass" in unknown[0]
    runs = Store(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match=r"this run is computed and not kept.*cannot be compared: algorithm"):
        first = simulate(problem(), build(), store=runs, **OPTIONS)
    with pytest.warns(RuntimeWarning, match=r"computed and not kept"):
        second = simulate(problem(), build(), store=runs, **OPTIONS)
    assert not first.stored and not second.stored and len(runs) == 0


def test_fedcores_own_algorithms_and_library_values_are_described_as_before() -> None:
    """The identities of runs of fedcore's families, server optimizers and options do not change: no code, no
    object state (the notebooks' results store keeps their runs)."""
    described = describe(algorithms.fedadam(0.1, server_lr=0.05))
    assert "code" not in described and "state" not in described and described["type"] == "FedOpt"
    assert describe({"device": torch.device("cpu"), "dtype": torch.float64}) == \
        {"device": "device(type='cpu')", "dtype": "torch.float64"}


# ---------------------------------------------------------------- 3. non-frozen dataclasses


@dataclass
class Scaled:
    """A non-frozen record (``@dataclass`` sets ``__hash__ = None``)."""

    scale: float = 1.0

    def __call__(self, x):
        return {"scaled": x.norm(dim=1) * self.scale}


@dataclass
class Halving:
    """A non-frozen schedule."""

    lr: float = 0.1

    def __call__(self, t):
        return self.lr * 0.5 ** (t // 2)


@dataclass
class PlainFedAvg:
    """A non-frozen algorithm dataclass (``init`` and ``round``)."""

    client_lr: float = 0.1
    name: str = "PlainFedAvg"

    def init(self, x0, num_clients):
        return algorithms.fedavg(self.client_lr).init(x0, num_clients)

    def round(self, state, batch, oracle):
        return federated_round(algorithms.fedavg(self.client_lr), state, batch, oracle)


def _algorithm_and_settings(kind: str, value: float):
    if kind == "record":
        return algorithms.fedavg(0.1), {"record": Scaled(value)}
    if kind == "schedule":
        return algorithms.fedavg(Halving(value)), {}
    return PlainFedAvg(value), {}


@pytest.mark.parametrize("kind", ["record", "schedule", "algorithm"])
@pytest.mark.parametrize("how", ["store", "checkpoint", "simulate_runs", "sweep"])
def test_a_non_frozen_dataclass_runs_and_is_keyed_by_its_fields(tmp_path, kind, how) -> None:
    algorithm, settings = _algorithm_and_settings(kind, 0.1)
    if how == "store":
        runs = Store(tmp_path / "s.sqlite")
        first = simulate(problem(), algorithm, store=runs, **settings, **OPTIONS)
        same, same_settings = _algorithm_and_settings(kind, 0.1)  # equal objects, not the same ones
        again = simulate(problem(), same, store=runs, **same_settings, **OPTIONS)
        other, other_settings = _algorithm_and_settings(kind, 0.3)
        changed = simulate(problem(), other, store=runs, **other_settings, **OPTIONS)
        assert not first.stored and again.stored and not changed.stored and len(runs) == 2
    elif how == "checkpoint":
        path = tmp_path / "run.pt"
        first = simulate(problem(), algorithm, checkpoint=path, **settings, **OPTIONS)
        resumed = simulate(problem(), algorithm, checkpoint=path, resume=True, **settings, **OPTIONS)
        pd.testing.assert_frame_equal(first.frame.drop(columns="seconds"), resumed.frame.drop(columns="seconds"))
        other, other_settings = _algorithm_and_settings(kind, 0.3)
        with pytest.raises(ValueError, match="was written by a different run"):
            simulate(problem(), other, checkpoint=path, resume=True, **other_settings, **OPTIONS)
    else:  # no store: the runs are planned into passes by their signature (fedcore.engine.passes)
        alone = [simulate(problem(), *_algorithm_and_settings(kind, value)[:1], **settings, **OPTIONS)
                 for value in (0.1, 0.3)]
        if how == "simulate_runs":
            histories = simulate_runs(problem(), [algorithm, _algorithm_and_settings(kind, 0.3)[0]], **settings,
                                      **OPTIONS)
            finals = [history.frame["train_loss"].iloc[-1] for history in histories]
            assert kind != "record" or all(history.frame["scaled"].notna().all() for history in histories)
        else:
            table = sweep(problem(), lambda value: _algorithm_and_settings(kind, value)[0], {"value": [0.1, 0.3]},
                          **settings, **OPTIONS)
            assert "error" not in table or table["error"].isna().all()
            finals = list(table["final_train_loss"])
        assert finals == pytest.approx([run.frame["train_loss"].iloc[-1] for run in alone], rel=1e-5)
        assert finals[0] != finals[1] or kind == "record"  # a record changes no number of the run
