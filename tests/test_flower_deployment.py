"""fedcore on Flower's Deployment Engine: a SuperLink and three SuperNodes as separate processes on localhost
(insecure), each node given its client partition through its node config, the example app (examples/flower)
started with `flwr run`; three rounds equal simulate.  Every process the test starts, it stops, also on failure."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import torch

from fedcore.flower.deploy import algorithm_of, problem_of
from fedcore.run import simulate

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
APP = ROOT / "examples" / "flower"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, process: subprocess.Popen, log: Path, seconds: float = 60.0) -> None:
    """Until something listens on ``port``; a process that exits first fails the test with its log."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"{process.args[0]} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    pytest.fail(f"nothing listens on port {port} after {seconds:g} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def federation(tmp_path):
    """A SuperLink and three SuperNodes (partition-id 0, 1, 2 of 3) in their own process groups, and the Flower
    configuration that names the SuperLink ``deployment``; all stopped at the end, whatever happened."""
    home = tmp_path / "flwr"
    home.mkdir()
    link = _free_port()
    (home / "config.toml").write_text(f'[superlink]\ndefault = "deployment"\n\n[superlink.deployment]\n'
                                      f'address = "127.0.0.1:{link}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = tmp_path / f"{name}.log"
        process = subprocess.Popen([str(BIN / args[0]), *args[1:]], stdout=log.open("w"), stderr=subprocess.STDOUT,
                                   env=env, cwd=tmp_path, start_new_session=True)
        processes.append(process)
        return process, log

    try:
        superlink, log = start("superlink", "flower-superlink", "--insecure", "--port", str(link),
                               "--disable-runtime-dependency-installation")
        _wait_for(link, superlink, log)
        for part in range(3):
            port = _free_port()
            node, log = start(f"node{part}", "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{link}",
                              "--port", str(port), "--node-config", f"partition-id={part} num-partitions=3")
            _wait_for(port, node, log)
        yield env, tmp_path
    finally:
        for process in processes:  # each started a session: stop the process group (its SuperExec, app processes)
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_three_rounds_on_the_deployment_engine_equal_simulate(federation) -> None:
    env, tmp_path = federation
    output = tmp_path / "out"
    config = tomllib.loads((APP / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]  # the app's run
    done = subprocess.run([str(BIN / "flwr"), "run", str(APP), "deployment", "--stream",
                           "--run-config", f'output="{output}"'], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=420)
    logs = "\n".join((tmp_path / f"{name}.log").read_text()[-1500:] for name in ("superlink", "node0"))
    assert done.returncode == 0 and (output / "model.pt").exists(), f"{done.stdout[-3000:]}\n{done.stderr}\n{logs}"
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
    served = [(tmp_path / f"node{part}.log").read_text() for part in range(3)]
    assert all(served), "every SuperNode logged its work"
