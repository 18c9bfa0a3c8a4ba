"""fedcore on Flower's engines.  Deployment Engine: a SuperLink and three SuperNodes as separate processes on
localhost (insecure), each node given its client partition through its node config, the example app
(examples/flower) started with `flwr run`; three rounds of FAFED (a prologue exchange, each client's last iterate
kept on its node) equal simulate.  Simulation Engine: three rounds of PAdaMFed-VR equal simulate.  A SuperNode killed
mid-run is reported with its round and node, every completed round written.  Every process the test starts is
stopped, also on failure (fedcore.flower.local)."""

from __future__ import annotations

import json
import os
import re
import time
import tomllib
from pathlib import Path

import pytest
import torch

from fedcore.flower.deploy import algorithm_of, problem_of
from fedcore.flower.local import local_federation, run_app, start_app
from fedcore.run import sample_round, simulate

APP = Path(__file__).resolve().parents[1] / "examples" / "flower"
CONFIG = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]  # the app's run
ENGINES = {
    # FAFED: a prologue exchange in round 1, each client's last iterate kept in its node's Context.state
    "deployment": {"algorithm": "fafed", "hyperparameters": '{"lr": 0.01, "alpha": 0.9}'},
    # PAdaMFed-VR: line 1 visits every client first, each keeps its c_i; Algorithm 1's uniform weights
    "simulation": {"algorithm": "padamfed_vr", "hyperparameters": '{"eta": 0.02, "gamma": 0.1, "beta": 0.5}',
                   "weighting": "uniform"},
}


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_three_rounds_on_the_engine_equal_simulate(tmp_path, engine) -> None:
    """Flower's Deployment Engine (a SuperLink and three SuperNodes as processes) and its Simulation Engine (a
    SuperLink with --simulation, three virtual SuperNodes in Ray): three rounds of the example app equal
    simulate."""
    config = {**CONFIG, **ENGINES[engine]}
    output = tmp_path / "out"
    with local_federation(tmp_path, nodes=3, simulation=engine == "simulation") as federation:
        done = run_app(federation, APP, {**ENGINES[engine], "output": str(output)}, timeout=420)
        logs = federation.tail("superlink") + federation.tail("node0")
        served = [federation.tail(name) for name in federation.logs]
    assert done.returncode == 0 and (output / "model.pt").exists(), f"{done.stdout[-3000:]}\n{done.stderr}\n{logs}"
    assert all(served), "every process logged its work"
    models_after: list[torch.Tensor] = []
    history = simulate(problem_of(config), algorithm_of(config), rounds=config["rounds"], weighting=config["weighting"],
                       clients_per_round=config["clients-per-round"], local_steps=config["local-steps"],
                       batch_size=config["batch-size"], seed=config["seed"], eval_every=0, progress=False,
                       callback=lambda t, state: models_after.append(state["x"].reshape(-1).clone()))
    drawn = sum(_clients_of_rounds(config, config["rounds"]), [])
    assert len(set(drawn)) < len(drawn), "some client is drawn twice: its node's kept state is read back"
    on_flower = torch.load(output / "model.pt")
    assert float((on_flower - problem_of(config).x0()).abs().max()) > 1e-3  # it moved
    assert torch.allclose(on_flower, models_after[-1], atol=1e-5, rtol=0)
    rounds = json.loads((output / "history.json").read_text())
    assert [row["train_loss"] for row in rounds] == pytest.approx(list(history.frame["train_loss"].dropna()), abs=1e-5)
    assert all(row["seconds"] > 0 for row in rounds)


def test_a_supernode_killed_mid_run_is_reported_with_its_round_and_node(tmp_path) -> None:
    """Once round 1 is written, the SuperNode of a client that round 2 samples is killed (SIGKILL, with what it
    runs): the SuperLink reports the node unavailable when its heartbeats stop, the run stops naming round 2 and
    the node, and the output holds round 1 (the model after it equals simulate's)."""
    output = tmp_path / "out"
    rounds = _clients_of_rounds(CONFIG, 2)
    victim = rounds[1][0] % 3  # the partition of a client round 2 samples
    with local_federation(tmp_path, nodes=3) as federation:
        running = start_app(federation, APP, {"rounds": 4, "output": str(output)})
        try:
            deadline = time.monotonic() + 300
            while not (output / "history.json").exists() or not json.loads((output / "history.json").read_text()):
                assert running.poll() is None and time.monotonic() < deadline, "round 1 was never written"
                time.sleep(0.2)
            federation.kill(f"node{victim}")
            stdout, stderr = running.communicate(timeout=240)
        finally:
            if running.poll() is None:
                running.kill()
                running.communicate()
    said = stdout + stderr
    reported = re.search(r"round 2: node \d+ \(client (\d+)\) failed .*state after round 1 is kept", said)
    assert reported, said[-3000:]
    assert int(reported.group(1)) % 3 == victim  # the client named is one the killed node held
    kept = json.loads((output / "history.json").read_text())
    assert len(kept) == 1
    expected = simulate(problem_of(CONFIG), algorithm_of(CONFIG), rounds=1, seed=CONFIG["seed"],
                        clients_per_round=CONFIG["clients-per-round"], local_steps=CONFIG["local-steps"],
                        batch_size=CONFIG["batch-size"], eval_every=0, progress=False).final_state["x"].reshape(-1)
    assert torch.allclose(torch.load(output / "model.pt"), expected, atol=1e-5, rtol=0)


def _clients_of_rounds(config: dict, rounds: int) -> list[list[int]]:
    """The clients each of the first ``rounds`` rounds samples (fedcore's sampler from the run's seed, as the
    strategy draws them)."""
    data = problem_of(config).data
    sampler, batches = torch.Generator().manual_seed(config["seed"]), torch.Generator().manual_seed(config["seed"] + 1)
    return [sample_round(data, t, config["clients-per-round"], config["local-steps"], config["batch-size"], "samples",
                         torch.float32, sampler, batches).clients[0].tolist() for t in range(rounds)]


def test_the_processes_are_stopped_when_the_block_fails(tmp_path) -> None:
    with pytest.raises(RuntimeError, match="inside"):
        with local_federation(tmp_path, nodes=1) as federation:
            assert list(federation.logs) == ["superlink", "node0"] and len(federation.pids) == 2
            raise RuntimeError("inside")
    for pid in federation.pids:
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)  # neither the process nor anything it started is left


@pytest.mark.parametrize("run_config, refusal", [
    ({"algorithm": "fed'avg"}, r"run_config\['algorithm'\]=\"fed'avg\" holds a single quote"),
    ({"algorithm": "fedavgg"}, r"algorithm='fedavgg' not one of"),
    ({"algorithm": "padamfed", "hyperparameters": '{"eta": 0.02, "gamma": 0.1, "beta": 0.5, '
                                                  '"initialization": "first_round"}'},
     r"algorithm='PAdaMFed' cannot run on Flower with initialization='first_round'"),
    ({"algorithm": "padamfed", "hyperparameters": '{"clients_per_round": 4, "local_steps": 3, "rounds": 10}'},
     r"computed for clients_per_round=4, local_steps=3, rounds=10.*rounds=3"),
    ({"hyperparameters": "client_lr=0.1"}, r"hyperparameters='client_lr=0.1' is not JSON"),
    ({"hyperparameters": "[0.1]"}, r"hyperparameters='\[0.1\]' must be a JSON object"),
    ({"weighting": "equal"}, r"weighting='equal' not one of"),
    ({"client-lr": 0.1}, r"run_config keys \['client-lr'\] are not in the app's run config"),
])
def test_a_run_config_the_app_cannot_carry_is_refused_before_flwr_run(tmp_path, run_config, refusal) -> None:
    """Refused by name before `flwr run` is started (no federation is running here: a start would fail otherwise)."""
    from fedcore.flower.local import Federation

    with pytest.raises(ValueError, match=refusal):
        run_app(Federation({}, tmp_path), APP, run_config)
