"""Nothing silent on Flower's strategy, its run config and the notebook runner (issue 58, points 7 and 13).

Every option :class:`fedcore.flower.FedcoreStrategy` takes is honoured as :func:`fedcore.simulate` honours it, or
refused with where its value goes; a run config's JSON gives each key once; ``scripts/run_notebooks.py`` reads every
path from where it was called and refuses two values of one setting (its argument handling only: no notebook runs).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from flwr.app import ArrayRecord

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.engine.options import RunOptions
from fedcore.flower import FedcoreStrategy, LocalGrid, client_app
from fedcore.problem import Problem
from fedcore.run import simulate

ROOT = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------- point 7: FedcoreStrategy and the run config

SETTINGS = dict(clients_per_round=4, local_steps=2, batch_size=8)


@pytest.fixture(scope="module")
def problem() -> Problem:
    data = load_fashion_mnist(8, "dirichlet", 0, alpha=0.5).test_subset(50, 0)
    return Problem(data, models.make("logistic_regression", (1, 28, 28), 10, seed=0))


class CountingGrid(LocalGrid):
    """A LocalGrid that counts the train messages it carries."""

    sent = 0

    def send_and_receive(self, messages, *, timeout=None):
        messages = list(messages)
        self.sent += len(messages)
        return super().send_and_receive(messages, timeout=timeout)


def _grid(problem: Problem, algorithm) -> CountingGrid:
    return CountingGrid(client_app(problem, algorithm), range(problem.data.num_clients))


def _arrays(problem: Problem) -> ArrayRecord:
    return ArrayRecord(torch_state_dict={"value": problem.x0()})


@pytest.mark.parametrize("how", ["keyword", "options"])
def test_the_strategys_rounds_are_run_and_a_different_num_rounds_is_refused(problem, how) -> None:
    """``rounds=5`` (or ``options=RunOptions(rounds=5, ...)``) runs 5 rounds when ``start`` is given none; a
    ``num_rounds`` that differs is refused naming both, before any message."""
    algorithm = algorithms.fedavg(0.1)

    def strategy() -> FedcoreStrategy:
        if how == "keyword":
            return FedcoreStrategy(algorithm, problem, rounds=5, **SETTINGS)
        return FedcoreStrategy(algorithm, problem, options=RunOptions(rounds=5, **SETTINGS))

    ran = strategy()
    ran.start(_grid(problem, algorithm), _arrays(problem))
    assert len(ran.history) == 5
    grid = _grid(problem, algorithm)
    with pytest.raises(ValueError, match=r"num_rounds=2 .*rounds=5"):
        strategy().start(grid, _arrays(problem), num_rounds=2)
    assert grid.sent == 0
    same = strategy()
    same.start(_grid(problem, algorithm), _arrays(problem), num_rounds=5)
    assert len(same.history) == 5


def test_without_rounds_the_strategy_runs_flowers_num_rounds(problem) -> None:
    algorithm = algorithms.fedavg(0.1)
    strategy = FedcoreStrategy(algorithm, problem, **SETTINGS)
    strategy.start(_grid(problem, algorithm), _arrays(problem), num_rounds=2)
    assert len(strategy.history) == 2


def _norm(x: torch.Tensor) -> dict:
    return {"norm": x.norm(dim=1)}


def _meddling(x: torch.Tensor) -> dict:
    value = x.norm(dim=1)
    x.mul_(0.0)  # a record that changes its argument must not change the run
    return {"norm": value}


@pytest.mark.parametrize("record", [_norm, _meddling], ids=["reads", "writes its argument"])
def test_record_is_honoured_as_simulate_honours_it(problem, record) -> None:
    """``record=`` gives a column of every round (and of the start, ``initial``) equal to simulate's, on a copy of
    the model: the run is the same whatever the record does to its argument."""
    algorithm = algorithms.fedavg(0.1)
    expected = simulate(problem, algorithm, rounds=3, seed=2, eval_every=0, progress=False, record=_norm,
                        **SETTINGS).frame
    strategy = FedcoreStrategy(algorithm, problem, seed=2, record=record, **SETTINGS)
    strategy.start(_grid(problem, algorithm), _arrays(problem), num_rounds=3)
    assert strategy.initial == pytest.approx({"norm": expected.loc[0, "norm"]})
    assert [row["norm"] for row in strategy.history] == pytest.approx(list(expected.loc[1:, "norm"]), abs=1e-5)
    assert [row["train_loss"] for row in strategy.history] == pytest.approx(list(expected.loc[1:, "train_loss"]),
                                                                             abs=1e-5)


def test_a_record_taking_a_column_of_the_run_is_refused_by_name(problem) -> None:
    with pytest.raises(ValueError, match=r"record=.* returned the column 'train_loss'"):
        strategy = FedcoreStrategy(algorithms.fedavg(0.1), problem, record=lambda x: {"train_loss": 1.0},
                                   **SETTINGS)
        strategy.start(_grid(problem, algorithms.fedavg(0.1)), _arrays(problem), num_rounds=1)


@pytest.mark.parametrize("bound", ["first round", "never"])
def test_diverge_above_ends_the_run_as_simulate_does(problem, bound) -> None:
    """A round whose training loss is above ``diverge_above`` ends the run with a warning naming it: the state and
    history of the round before kept, no message sent after it, ``evaluate_fn`` not called on it; as simulate."""
    algorithm = algorithms.fedavg(0.1)
    above = 1e-3 if bound == "first round" else 1e6
    with warnings.catch_warnings(record=True) as simulated_warnings:
        warnings.simplefilter("always")
        expected = simulate(problem, algorithm, rounds=3, seed=1, eval_every=0, progress=False, diverge_above=above,
                            **SETTINGS)
    strategy = FedcoreStrategy(algorithm, problem, seed=1, diverge_above=above, **SETTINGS)
    grid, evaluated = _grid(problem, algorithm), []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        strategy.start(grid, _arrays(problem), num_rounds=3, evaluate_fn=lambda t, arrays: evaluated.append(t))
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == len([w for w in simulated_warnings if issubclass(w.category, RuntimeWarning)])
    assert strategy.diverged_round == expected.diverged_round
    assert len(strategy.history) == len(expected.frame) - 1
    torch.testing.assert_close(strategy.state["x"].reshape(-1), expected.final_state["x"].reshape(-1), atol=1e-5,
                               rtol=0)
    if bound == "first round":
        assert said and "diverged at round 1" in said[0] and "diverge_above=0.001" in said[0]
        assert strategy.diverged_because == expected.diverged_because
        assert grid.sent == SETTINGS["clients_per_round"]  # round 1's messages, none after it
        assert evaluated == [0]
    else:
        assert evaluated == [0, 1, 2, 3]


def test_a_non_finite_loss_ends_the_run(problem) -> None:
    """Without ``diverge_above`` a loss that is not finite still ends the run (simulate's rule), its model kept."""
    algorithm = algorithms.fedavg(1e38)
    with pytest.warns(RuntimeWarning):
        expected = simulate(problem, algorithm, rounds=4, eval_every=0, progress=False, **SETTINGS)
    strategy = FedcoreStrategy(algorithm, problem, **SETTINGS)
    with pytest.warns(RuntimeWarning, match=r"diverged at round 1 \(train_loss=nan is not finite\)"):
        strategy.start(_grid(problem, algorithm), _arrays(problem), num_rounds=4)
    assert (strategy.diverged_round, strategy.diverged_because) == (expected.diverged_round,
                                                                    expected.diverged_because)
    assert torch.equal(strategy.state["x"].reshape(-1), problem.x0()) and len(strategy.history) == 1


@pytest.mark.parametrize("every, due", [(2, [0, 2, 4, 5]), (0, []), (1, [0, 1, 2, 3, 4, 5])])
def test_eval_every_is_honoured_by_evaluate_fn(problem, every, due) -> None:
    """``eval_every`` is simulate's: ``evaluate_fn`` is called before the first round, every ``eval_every`` rounds
    and after the last; 0 never."""
    algorithm = algorithms.fedavg(0.1)
    strategy = FedcoreStrategy(algorithm, problem, eval_every=every, **SETTINGS)
    called = []
    strategy.start(_grid(problem, algorithm), _arrays(problem), num_rounds=5,
                   evaluate_fn=lambda t, arrays: called.append(t))
    assert called == due


@pytest.mark.parametrize("how", ["keyword", "options"])
def test_a_backend_the_strategy_cannot_use_is_refused_with_where_it_goes(problem, how) -> None:
    """The strategy computes no gradient: a ``backend`` other than ``auto`` is refused, naming client_app's."""
    given = dict(backend="vmap", **SETTINGS)
    with pytest.raises(ValueError, match=r"backend='vmap'.*client_app\(problem, algorithm, backend='vmap'\)"):
        if how == "keyword":
            FedcoreStrategy(algorithms.fedavg(0.1), problem, **given)
        else:
            FedcoreStrategy(algorithms.fedavg(0.1), problem, options=RunOptions(rounds=2, **given))


RUN_CONFIG = {"algorithm": "fedavg", "hyperparameters": '{"client_lr": 0.1}', "rounds": 3, "clients": 12,
              "clients-per-round": 4, "local-steps": 3, "batch-size": 16, "seed": 0, "partition-seed": 0, "hidden": 16,
              "test-samples": 200}


@pytest.mark.parametrize("text, key", [
    ('{"client_lr": 0.1, "client_lr": 0.5}', "client_lr"),
    ('{"client_lr": 0.1, "server_lr": 1.0, "server_lr": 2.0}', "server_lr"),
])
def test_a_run_config_json_key_given_twice_is_refused_by_name(text, key) -> None:
    from flwr.app import Context, RecordDict

    from fedcore.flower import deploy

    config = {**RUN_CONFIG, "algorithm": "fedavgm" if "server_lr" in text else "fedavg", "hyperparameters": text}
    with pytest.raises(ValueError, match=rf"run config hyperparameters=.* gives {key!r} twice"):
        deploy.check_run_config(config)
    context = Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config=config)
    with pytest.raises(ValueError, match=rf"gives {key!r} twice"):
        deploy.main(None, context)


# ---------------------------------------------------------------- point 13: scripts/run_notebooks.py


@pytest.fixture()
def runner(monkeypatch, tmp_path):
    """scripts/run_notebooks.py as a module, called from ``tmp_path`` with none of fedcore's variables set."""
    spec = importlib.util.spec_from_file_location("run_notebooks_under_test", ROOT / "scripts" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("FEDCORE_SCALE", "FEDCORE_STORE", "FEDCORE_FIGURES", "FEDCORE_DATA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return module


def _refused(runner, capsys, argv: list[str]) -> str:
    with pytest.raises(SystemExit) as stopped:
        runner.parse_args(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["--scale", "smoke", "-p", "SCALE", "paper"], ["--scale smoke", "-p SCALE paper"]),
    (["-p", "SEED", "1", "-p", "SEED", "2"], ["-p SEED", "'1'", "'2'"]),
    (["-p", "STORE", "a.sqlite", "-p", "STORE", "b.sqlite"], ["-p STORE", "a.sqlite", "b.sqlite"]),
    (["-p", "SCALE", "larger"], ["-p SCALE", "larger", "smoke"]),
    (["--timeout", "0"], ["--timeout", "0", "> 0"]),
    (["--timeout", "-5"], ["--timeout", "-5"]),
])
def test_two_values_of_one_setting_and_a_timeout_of_none_are_refused(runner, capsys, argv, named) -> None:
    said = _refused(runner, capsys, argv)
    for part in named:
        assert part in said, said


def test_the_scale_given_as_a_parameter_is_the_one_announced(runner) -> None:
    """``-p SCALE paper`` alone is the scale (what is announced, what FEDCORE_SCALE says, what papermill injects)."""
    args = runner.parse_args(["-p", "SCALE", "paper"])
    assert args.scale == "paper" and runner.parameters(args) == {"SCALE": "paper"}
    assert runner.kernel_environment(args, {}, Path.cwd())["FEDCORE_SCALE"] == "paper"
    args = runner.parse_args(["--scale", "smoke", "-p", "SCALE", "smoke", "-p", "SEED", "3"])
    assert runner.parameters(args) == {"SCALE": "smoke", "SEED": 3}


@pytest.mark.parametrize("name", ["STORE", "FIGURES"])
def test_a_path_parameter_is_the_callers_as_its_variable_is(runner, tmp_path, name) -> None:
    """``-p STORE build/x.sqlite`` and ``FEDCORE_STORE=build/x.sqlite`` name one file: the caller's; ``~`` is the home
    folder in both; the kernel's variable says the same as the parameter."""
    args = runner.parse_args(["-p", name, "build/x"])
    assert runner.parameters(args)[name] == str(tmp_path / "build" / "x")
    environment = runner.kernel_environment(args, {}, tmp_path)
    assert environment[f"FEDCORE_{name}"] == str(tmp_path / "build" / "x")
    args = runner.parse_args(["-p", name, "~/x"])
    assert runner.parameters(args)[name] == str(tmp_path / "home" / "x")
    from_variable = runner.kernel_environment(runner.parse_args([]), {f"FEDCORE_{name}": "~/y"}, tmp_path)
    assert from_variable[f"FEDCORE_{name}"] == str(tmp_path / "home" / "y")
    from_variable = runner.kernel_environment(runner.parse_args([]), {f"FEDCORE_{name}": "b/y"}, tmp_path)
    assert from_variable[f"FEDCORE_{name}"] == str(tmp_path / "b" / "y")


def test_a_store_path_expands_the_home_folder_first(runner, tmp_path) -> None:
    assert runner.from_caller("~/x.sqlite", "/elsewhere", "STORE") == str(tmp_path / "home" / "x.sqlite")
    for kept in ("", "off", "None", "/abs/x.sqlite"):
        assert runner.from_caller(kept, "/elsewhere", "STORE") == kept


def test_every_path_the_kernel_reads_is_the_callers(runner, tmp_path) -> None:
    """FEDCORE_DATA (read by fedcore in the kernel) and --out are the caller's too; FEDCORE_FIGURES set by the
    caller is kept, not replaced by --out's figures folder."""
    args = runner.parse_args(["--out", "~/runs"])
    assert args.out == tmp_path / "home" / "runs"
    environment = runner.kernel_environment(args, {"FEDCORE_DATA": "data", "FEDCORE_FIGURES": "figs"}, tmp_path)
    assert environment["FEDCORE_DATA"] == str(tmp_path / "data")
    assert environment["FEDCORE_FIGURES"] == str(tmp_path / "figs")
    assert runner.kernel_environment(args, {}, tmp_path)["FEDCORE_FIGURES"] == str(tmp_path / "home" / "runs" /
                                                                                     "figures")
    assert runner.kernel_environment(args, {}, tmp_path)["FEDCORE_STORE"] == ""


@pytest.mark.parametrize("argv, said", [
    (["--scale", "smoke", "-p", "SCALE", "paper"], "--scale smoke"),
    (["--timeout", "0"], "--timeout"),
])
def test_the_script_stops_before_any_notebook(tmp_path, argv, said) -> None:
    """The refusal comes from the argument check, before the notebooks are looked for (the one named here does not
    exist: a script that went on would stop there, with another message, and run nothing)."""
    ran = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_notebooks.py"), *argv, "--out",
                          str(tmp_path / "out"), "no_such.ipynb"], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert ran.returncode == 2 and said in ran.stderr, ran.stderr
    assert not (tmp_path / "out").exists()


def test_main_gives_the_kernel_what_it_announces(runner, monkeypatch, tmp_path, capsys) -> None:
    """``main`` up to the notebooks (each run replaced here, nothing executed): the kernel's variables are
    :func:`kernel_environment`'s, the -p value among them, and the line it prints says the scale, figures and store
    that run."""
    environ = {"HOME": str(tmp_path / "home"), "FEDCORE_STORE": "ignored.sqlite"}
    monkeypatch.setattr(os, "environ", environ)
    seen = []

    def run_one(path, out, args):
        seen.append((dict(os.environ), runner.parameters(args)))
        return True, 0.0, ""

    monkeypatch.setattr(runner, "run_one", run_one)
    notebook = ROOT / "notebooks" / "00_quickstart.ipynb"
    assert runner.main(["-p", "SCALE", "smoke", "-p", "STORE", "~/s.sqlite", "--out", "out", str(notebook)]) == 0
    (kernel, injected), = seen
    store = str(tmp_path / "home" / "s.sqlite")
    assert injected == {"SCALE": "smoke", "STORE": store}
    assert kernel["FEDCORE_SCALE"] == "smoke" and kernel["FEDCORE_STORE"] == store
    assert kernel["FEDCORE_FIGURES"] == str(tmp_path / "out" / "figures") and (tmp_path / "out" / "figures").is_dir()
    said = capsys.readouterr().out
    assert "SCALE=smoke" in said and f"store {store}" in said and f"figures {tmp_path / 'out' / 'figures'}" in said
