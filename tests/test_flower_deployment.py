"""fedcore on Flower's Deployment Engine: a SuperLink and three SuperNodes as separate processes on localhost
(insecure), each node given its client partition through its node config, the example app (examples/flower)
started with `flwr run`; three rounds equal simulate.  Every process the test starts is stopped, also on failure
(fedcore.flower.local)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
import torch

from fedcore.flower.deploy import algorithm_of, problem_of
from fedcore.flower.local import local_federation, run_app
from fedcore.run import simulate

APP = Path(__file__).resolve().parents[1] / "examples" / "flower"


def test_three_rounds_on_the_deployment_engine_equal_simulate(tmp_path) -> None:
    config = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]  # the app's run
    output = tmp_path / "out"
    with local_federation(tmp_path, nodes=3) as federation:
        done = run_app(federation, APP, {"output": str(output)}, timeout=420)
        logs = federation.tail("superlink") + federation.tail("node0")
        served = [federation.tail(f"node{part}") for part in range(3)]
    assert done.returncode == 0 and (output / "model.pt").exists(), f"{done.stdout[-3000:]}\n{done.stderr}\n{logs}"
    assert all(served), "every SuperNode logged its work"
    models_after: list[torch.Tensor] = []
    history = simulate(problem_of(config), algorithm_of(config), rounds=config["rounds"],
                       clients_per_round=config["clients-per-round"], local_steps=config["local-steps"],
                       batch_size=config["batch-size"], seed=config["seed"], eval_every=0, progress=False,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()))
    on_flower = torch.load(output / "model.pt")
    assert float((on_flower - problem_of(config).x0()).abs().max()) > 1e-3  # it moved
    assert torch.allclose(on_flower, models_after[-1], atol=1e-5, rtol=0)
    rounds = json.loads((output / "history.json").read_text())
    assert [row["train_loss"] for row in rounds] == pytest.approx(list(history.frame["train_loss"].dropna()), abs=1e-5)
    assert all(row["seconds"] > 0 for row in rounds)


def test_the_processes_are_stopped_when_the_block_fails(tmp_path) -> None:
    with pytest.raises(RuntimeError, match="inside"):
        with local_federation(tmp_path, nodes=1) as federation:
            assert list(federation.logs) == ["superlink", "node0"] and len(federation.pids) == 2
            raise RuntimeError("inside")
    for pid in federation.pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # neither the process nor anything it started is left


def test_a_run_config_value_flwr_cannot_carry_is_refused(tmp_path) -> None:
    from fedcore.flower.local import Federation

    with pytest.raises(ValueError, match=r"run_config\['algorithm'\]=\"fed'avg\" holds a single quote"):
        run_app(Federation({}, tmp_path), APP, {"algorithm": "fed'avg"})
