"""A fixed set of short runs of all 18 algorithms, and the exact numbers they gave when recorded.

``python tests/golden_runs.py`` computes them and writes ``tests/golden_runs.json``; ``test_golden_runs.py`` computes
them again and compares.  They were recorded before the engine's refactor of issue 36 (the round loop moved to its own
module, the options made one typed value, one seeding convention), at commit 1d8e885, so the test says that the
refactor, and every change after it that is not meant to change a number, leaves every history bit-identical.

Each of fedcore's algorithms (at its registered example, ``fedcore.algorithms.EXAMPLES``) runs on an
MLP with dropout (so the dropout masks' stream is part of the run), 6 clients of unequal size, 3 of them per round,
3 local steps of 4 samples, 3 rounds, evaluated every round:

- ``simulate`` on the ``loop`` backend and on the ``vmap`` backend (seed 0, weighting by samples);
- ``simulate_runs`` of two seeds (1 and 2) and uniform weighting in one pass on ``vmap`` (``batch=2``).

Every number of every history frame but ``seconds`` is kept as ``float.hex`` (exact), and each final model as the
SHA-256 of its bytes.  Float results depend on the CPU's kernels: where the machine's torch version, CPU capability
or CPU differs from the recording's, the test compares the frames to 1e-5 relative instead, and warns (the final
models' bits only on the recording's kernels).
"""

from __future__ import annotations

import hashlib
import json
import math
import platform
import sys
import warnings
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import blobs  # noqa: E402

from fedcore import algorithms, models  # noqa: E402
from fedcore.run import Problem, simulate, simulate_runs  # noqa: E402

PATH = HERE / "golden_runs.json"
LIBRARY = {name: example for name, example in algorithms.EXAMPLES.items()
           if algorithms.ALGORITHMS[name].__module__.startswith("fedcore.")}
"""fedcore's own algorithms at their registered examples (not a family a test registers: CONTRIBUTING's)."""
OPTIONS = dict(rounds=3, clients_per_round=3, local_steps=3, batch_size=4, progress=False)


def problem() -> Problem:
    return Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), dropout=0.3, seed=0))


def machine() -> dict[str, str]:
    """What the exact bits depend on besides fedcore: torch's version, the CPU kernels it dispatches to and the CPU."""
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else \
        platform.processor()
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu": model}


def summary(history) -> dict:
    """A history as exact numbers: every frame column but ``seconds`` (``float.hex``; NaN as ``"nan"``), how it ended,
    and the final model's SHA-256."""
    frame = history.frame.drop(columns="seconds")
    columns = {name: [value.hex() if not math.isnan(value) else "nan" for value in frame[name].astype(float)]
               for name in frame.columns}
    x = history.final_state["x"].detach().contiguous().cpu()
    return {"rounds": [int(t) for t in frame.index], "columns": columns, "diverged_round": history.diverged_round,
            "x_sha256": hashlib.sha256(x.numpy().tobytes()).hexdigest()}


def compute() -> dict[str, dict]:
    """Every run of the set, by ``"<algorithm>/<variant>"``."""
    runs = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in sorted(LIBRARY):
            for backend in ("loop", "vmap"):
                history = simulate(problem(), algorithms.make(name, **LIBRARY[name]), backend=backend, **OPTIONS)
                runs[f"{name}/{backend}"] = summary(history)
            pair = simulate_runs(problem(), [algorithms.make(name, **LIBRARY[name])] * 2, seeds=(1, 2), batch=2,
                                 backend="vmap", weighting="uniform", **OPTIONS)
            for seed, history in zip((1, 2), pair):
                runs[f"{name}/pass seed {seed}"] = summary(history)
    return runs


if __name__ == "__main__":
    runs = compute()
    lines = [f" {json.dumps(key)}: {json.dumps(runs[key], sort_keys=True)}" for key in sorted(runs)]
    PATH.write_text('{"machine": ' + json.dumps(machine(), sort_keys=True) + ',\n"runs": {\n' + ",\n".join(lines)
                    + "\n}}\n")
    print(f"wrote {PATH}")
