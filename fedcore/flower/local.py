"""A Flower federation on this machine, as separate processes: a SuperLink and ``nodes`` SuperNodes on free
localhost ports (insecure), each SuperNode given its partition through its node config, and a Flower configuration
that names the SuperLink ``deployment``; :func:`run_app` runs an app on it with ``flwr run``.  With
``simulation=True`` it is Flower's Simulation Engine instead: one SuperLink with ``--simulation``, whose ``nodes``
virtual SuperNodes run in Ray actors (``pip install fedcore[flower]`` brings ``flwr[simulation]``), each given
``partition-id`` and ``num-partitions`` by the engine.  Every process it starts is stopped when the ``with`` block
ends, whatever happened in it (the tests and the benchmark use it)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedcore.checks import check_bool, check_choice, check_int
from fedcore.flower.deploy import check_run_config

BIN = Path(sys.executable).parent
"""Where the environment's ``flower-superlink``, ``flower-supernode``, ``flower-superexec`` and ``flwr`` are."""


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Federation:
    """A running local federation: its ``env`` (``FLWR_HOME``, ``PATH``), its folder, the processes' logs and
    their ids."""

    env: dict[str, str]
    folder: Path
    logs: dict[str, Path] = field(default_factory=dict)
    pids: list[int] = field(default_factory=list)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)
    options: list[str] = field(default_factory=list)
    """What ``flwr run`` adds for this federation (the simulation's ``--federation-config num-supernodes=N``)."""

    def tail(self, name: str, characters: int = 2000) -> str:
        """The end of process ``name``'s log (``"superlink"``, ``"node0"`` ...)."""
        return self.logs[name].read_text()[-characters:] if name in self.logs else ""

    def kill(self, name: str) -> None:
        """Kill process ``name`` and everything it started at once (SIGKILL to its group), as a machine that goes
        away would: what a SuperNode was computing is lost, it says goodbye to no one."""
        if name not in self.processes:
            raise ValueError(f"name={name!r} is not a process of this federation ({sorted(self.processes)})")
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        _stop_group(process.pid)


def _wait_for(port: int, process: subprocess.Popen, log: Path, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args[0]} exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise RuntimeError(f"nothing listens on port {port} after {seconds:g} s:\n{log.read_text()[-3000:]}")


ISOLATIONS = ("subprocess", "process")
"""Flower's isolation modes of a SuperNode: ``subprocess`` (it starts its own SuperExec) or ``process`` (a SuperExec
started apart, :func:`local_federation` starts one per node).  In flwr 1.42 either SuperExec starts one
``flwr-clientapp`` process per message (its ``subprocess`` executor), so neither keeps a ClientApp alive
(``benchmarks/flower_round.py`` measures both)."""


@contextmanager
def local_federation(folder: str | os.PathLike, nodes: int = 3, start_seconds: float = 60.0,
                     simulation: bool = False, isolation: str = "subprocess") -> Iterator[Federation]:
    """Start a SuperLink and ``nodes`` SuperNodes (``partition-id = 0 .. nodes - 1`` of ``nodes``) under
    ``folder``, each in its own process group, and stop them all when the block ends; ``simulation=True``: a
    SuperLink of Flower's Simulation Engine, whose runs get ``nodes`` virtual SuperNodes; ``isolation`` the
    SuperNodes' (:data:`ISOLATIONS`).  Apps run in this environment (``--disable-runtime-dependency-installation``:
    nothing is installed at run time)."""
    check_int("nodes", nodes)
    check_bool("simulation", simulation)
    check_choice("isolation", isolation, ISOLATIONS)
    folder = Path(folder)
    home = folder / "flwr"
    home.mkdir(parents=True, exist_ok=True)
    link = free_port()
    (home / "config.toml").write_text(f'[superlink]\ndefault = "deployment"\n\n[superlink.deployment]\n'
                                      f'address = "127.0.0.1:{link}"\ninsecure = true\n')
    env = {**os.environ, "FLWR_HOME": str(home), "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    federation = Federation(env, folder, options=["--federation-config", f"num-supernodes={nodes}"] if simulation
                            else [])
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> subprocess.Popen:
        log = folder / f"{name}.log"
        federation.logs[name] = log
        process = subprocess.Popen([str(BIN / args[0]), *args[1:]], stdout=log.open("w"), stderr=subprocess.STDOUT,
                                   env=env, cwd=folder, start_new_session=True)
        processes.append(process)
        federation.pids.append(process.pid)
        federation.processes[name] = process
        return process

    try:
        superlink = start("superlink", "flower-superlink", "--insecure", "--port", str(link),
                          "--disable-runtime-dependency-installation", *(["--simulation"] if simulation else []))
        _wait_for(link, superlink, federation.logs["superlink"], start_seconds)
        for part in range(0 if simulation else nodes):
            port = free_port()
            node = start(f"node{part}", "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{link}",
                         "--port", str(port), "--node-config", f"partition-id={part} num-partitions={nodes}",
                         "--isolation", isolation)
            _wait_for(port, node, federation.logs[f"node{part}"], start_seconds)
            if isolation == "process":  # the node's SuperExec, started apart
                start(f"exec{part}", "flower-superexec", "--insecure", "--runtime-api-address", f"127.0.0.1:{port}")
        yield federation
    finally:  # each process started a session: stop its whole group (its SuperExec and app processes too)
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            _stop_group(process.pid)


def _stop_group(group: int, seconds: float = 10.0) -> None:
    """Wait until nothing of process group ``group`` is left (a SuperNode's SuperExec and app processes may outlive
    it), then kill what still is."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        return
    time.sleep(0.5)


def start_app(federation: Federation, app: str | os.PathLike, run_config: Mapping[str, Any]) -> subprocess.Popen:
    """``flwr run <app> deployment --stream`` (and the federation's options) on ``federation``, started and not
    waited for (its output in pipes); the ``run_config`` values override the app's (a string goes as a TOML literal
    string, ``'...'``, so JSON's double quotes pass; it may not hold a single quote)."""
    for key, value in run_config.items():
        if isinstance(value, str) and "'" in value:
            raise ValueError(f"run_config[{key!r}]={value!r} holds a single quote, which flwr's --run-config cannot "
                             "carry in a TOML literal string")
    app_config = tomllib.loads((Path(app) / "pyproject.toml").read_text())["tool"]["flwr"]["app"]["config"]
    unknown = sorted(set(run_config) - set(app_config))
    if unknown:
        raise ValueError(f"run_config keys {unknown} are not in the app's run config ({sorted(app_config)})")
    check_run_config({**app_config, **run_config})  # refused here, before flwr run starts anything
    values = " ".join(f"{key}='{value}'" if isinstance(value, str) else f"{key}={value}"
                      for key, value in run_config.items())
    command = [str(BIN / "flwr"), "run", str(app), "deployment", "--stream", *federation.options]
    command += ["--run-config", values] if values else []
    return subprocess.Popen(command, env=federation.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_app(federation: Federation, app: str | os.PathLike, run_config: Mapping[str, Any],
            timeout: float = 600.0) -> subprocess.CompletedProcess:
    """:func:`start_app`, waited for at most ``timeout`` seconds (then killed, and ``TimeoutExpired`` raised)."""
    process = start_app(federation, app, run_config)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
