"""Every history is the one recorded before the engine's refactor (``golden_runs.py`` says which runs and when)."""

from __future__ import annotations

import json
import math
import warnings

import pytest
from golden_runs import LIBRARY, PATH, compute, machine

RECORDED = json.loads(PATH.read_text())


@pytest.fixture(scope="module")
def computed() -> dict[str, dict]:
    return compute()


def test_the_set_covers_every_algorithm_on_both_backends_and_a_pass() -> None:
    names = {key.split("/")[0] for key in RECORDED["runs"]}
    assert names == set(LIBRARY) and len(LIBRARY) == 18
    assert len(RECORDED["runs"]) == 4 * len(LIBRARY)


def _close(recorded: str, value: str) -> bool:
    a, b = float.fromhex(recorded), float.fromhex(value)
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)


@pytest.mark.parametrize("key", sorted(RECORDED["runs"]))
def test_the_history_is_the_recorded_one(key: str, computed: dict[str, dict]) -> None:
    recorded, now = RECORDED["runs"][key], computed[key]
    assert now["rounds"] == recorded["rounds"] and now["diverged_round"] == recorded["diverged_round"]
    assert set(now["columns"]) == set(recorded["columns"])
    if machine() == RECORDED["machine"]:  # the same kernels: every bit
        assert now["columns"] == recorded["columns"]
        assert now["x_sha256"] == recorded["x_sha256"]
    else:  # another CPU or torch: float kernels may round differently
        warnings.warn(f"golden runs recorded on {RECORDED['machine']}, this is {machine()}: compared to 1e-5, not bit "
                      "for bit", UserWarning, stacklevel=1)
        for name, values in recorded["columns"].items():
            assert all(_close(a, b) for a, b in zip(values, now["columns"][name], strict=True)), name
