"""A run's identity and verified checkpoints (issue 9, parts 1 and 2): a checkpoint resumes only
into the same run, and a file that was altered, truncated or is not a checkpoint is refused clearly."""

from __future__ import annotations

import os

import pytest
import torch
from conftest import blobs

import fedcore
from fedcore import algorithms, checkpoint, models, server_opt
from fedcore.checkpoint import CheckpointError
from fedcore.identity import describe, differences, uncomparable
from fedcore.run import Problem, simulate


def run(data, algorithm, rounds, path, resume=False, model_seed=0, **kwargs):
    problem = Problem(data, models.make("mlp", (8,), 3, hidden=(6,), seed=model_seed))
    return simulate(problem, algorithm, rounds=rounds, clients_per_round=3, local_steps=2, batch_size=4,
                    progress=False, checkpoint=path, checkpoint_every=1, resume=resume, **kwargs)


@pytest.fixture
def data():
    return blobs()


def fedadam(**options):
    return algorithms.FedOpt(0.1, server_opt.adam(0.05, **options), "FedAdam")


@pytest.mark.parametrize(("first", "second", "field", "values"), [
    (fedadam(), fedadam(bias_correction="keras"), "algorithm.server.bias_correction", ("'none'", "'keras'")),
    (fedadam(), fedadam(tau_inside_sqrt=True), "algorithm.server.tau_inside_sqrt", ("False", "True")),
    (fedadam(), fedadam(initial_v="zero"), "algorithm.server.initial_v", ("'tau^2'", "'zero'")),
    (algorithms.fedavg(algorithms.exp_decay(0.1, 0.5, 2)), algorithms.fedavg(algorithms.exp_decay(0.1, 0.25, 2)),
     "algorithm.client_lr.factor", ("0.5", "0.25")),
    (algorithms.fedavg(0.1), algorithms.fedavg(algorithms.exp_decay(0.1, 0.5, 2)), "algorithm.client_lr",
     ("0.1", "exp_decay")),
    (algorithms.fedprox(0.1, mu=0.1), algorithms.fedprox(0.1, mu=0.2), "algorithm.correction.mu", ("0.1", "0.2")),
])
def test_resume_refuses_another_hyperparameter_naming_it(data, tmp_path, first, second, field, values) -> None:
    path = tmp_path / "run.pt"
    run(data, first, 2, path)
    with pytest.raises(ValueError, match="written by a different run") as error:
        run(data, second, 4, path, resume=True)
    message = str(error.value)
    assert field in message and all(value in message for value in values), message
    assert "resume=False" in message and str(path) in message


def test_resume_refuses_other_data_with_the_same_shape(data, tmp_path) -> None:
    """Same client count, sizes, dimension and classes; other samples: the content hash differs."""
    path = tmp_path / "run.pt"
    run(data, algorithms.fedavg(0.1), 2, path)
    other = blobs(seed=1)
    assert other.num_clients == data.num_clients and other.inputs.shape == data.inputs.shape
    with pytest.raises(ValueError, match=r"data\.content is '[0-9a-f]+' there and '[0-9a-f]+' here"):
        run(other, algorithms.fedavg(0.1), 4, path, resume=True)


IN_PLACE = {  # every way a user changes data in place: torch's in-place ops, numpy views, .data, the test set
    "mul_": lambda data: data.inputs.mul_(10),
    "slice assignment": lambda data: data.inputs.__setitem__(slice(0, 3), 0.0),
    "through numpy": lambda data: data.inputs.numpy().__setitem__((0, 0), 123.0),
    "through .data": lambda data: data.targets.data.__setitem__(0, (int(data.targets[0]) + 1) % 3),
    "test set": lambda data: data.test_inputs.sub_(data.test_inputs.mean(0)),
}


@pytest.mark.parametrize("change", list(IN_PLACE))
def test_resume_refuses_data_changed_in_place_after_the_checkpoint(data, tmp_path, change) -> None:
    """The same FederatedData object, changed in place (a normalization, a cell run twice): another run."""
    path = tmp_path / "run.pt"
    run(data, algorithms.fedavg(0.1), 2, path)
    IN_PLACE[change](data)
    with pytest.raises(ValueError, match=r"data\.content is '[0-9a-f]+' there and '[0-9a-f]+' here"):
        run(data, algorithms.fedavg(0.1), 4, path, resume=True)


def test_resume_refuses_other_initial_parameters_options_or_version(data, tmp_path, monkeypatch) -> None:
    path = tmp_path / "run.pt"
    run(data, algorithms.fedavg(0.1), 2, path)
    with pytest.raises(ValueError, match=r"model\.initial_parameters"):
        run(data, algorithms.fedavg(0.1), 4, path, resume=True, model_seed=1)
    with pytest.raises(ValueError, match=r"options\.weighting is 'samples' there and 'uniform' here"):
        run(data, algorithms.fedavg(0.1), 4, path, resume=True, weighting="uniform")
    monkeypatch.setattr(fedcore.identity, "VERSION", "9.9.9")
    with pytest.raises(ValueError, match=r"fedcore is '\d+\.\d+\.\d+' there and '9\.9\.9' here"):
        run(data, algorithms.fedavg(0.1), 4, path, resume=True)


def test_resume_refuses_a_checkpoint_with_more_rounds_than_asked(data, tmp_path) -> None:
    path = tmp_path / "run.pt"
    run(data, algorithms.fedavg(0.1), 6, path)
    with pytest.raises(ValueError, match=r"holds 6 rounds, more than rounds=3: pass rounds>=6"):
        run(data, algorithms.fedavg(0.1), 3, path, resume=True)
    assert run(data, algorithms.fedavg(0.1), 6, path, resume=True).frame.index[-1] == 6  # equal is fine


def test_a_lambda_schedule_resumes_by_its_code_and_an_opaque_one_only_on_trust(data, tmp_path) -> None:
    """A lambda schedule is compared by its code and the values it reads: the same one resumes, an edited one is
    another run; one that reads an object of no known kind resumes only on the caller's word."""
    path = tmp_path / "run.pt"
    schedule = lambda t: 0.1 * 0.5 ** (t // 2)  # noqa: E731
    full = run(data, algorithms.fedavg(schedule), 4, tmp_path / "full.pt")
    run(data, algorithms.fedavg(schedule), 2, path)
    resumed = run(data, algorithms.fedavg(lambda t: 0.1 * 0.5 ** (t // 2)), 4, path, resume=True)
    assert torch.equal(full.final_state["x"], resumed.final_state["x"])
    run(data, algorithms.fedavg(schedule), 2, path)
    with pytest.raises(ValueError, match=r"written by a different run: algorithm\.client_lr\.code"):
        run(data, algorithms.fedavg(lambda t: 0.1 * 0.5 ** (t // 3)), 4, path, resume=True)
    opaque = object()
    schedule = lambda t: 0.1 * 0.5 ** (t // 2) if opaque else 0.2  # noqa: E731
    full = run(data, algorithms.fedavg(schedule), 4, tmp_path / "full2.pt")
    run(data, algorithms.fedavg(schedule), 2, path)
    with pytest.raises(ValueError, match=r"cannot check algorithm\.client_lr\.closure\.opaque .*resume='trust'"):
        run(data, algorithms.fedavg(schedule), 4, path, resume=True)
    resumed = run(data, algorithms.fedavg(schedule), 4, path, resume="trust")
    assert torch.equal(full.final_state["x"], resumed.final_state["x"])
    with pytest.raises(ValueError, match=r"resume='yes' not one of False, True, 'trust'"):
        run(data, algorithms.fedavg(0.1), 4, path, resume="yes")


def test_schedules_and_server_options_are_described_by_their_fields() -> None:
    assert describe(algorithms.exp_decay(0.1, 0.5, 7)) == {"type": "exp_decay", "lr": 0.1, "factor": 0.5, "every": 7}
    lr = algorithms.storm_step_size(2.0, 3.0)
    assert describe(algorithms.storm_momentum(0.5, lr))["step_size"] == {"type": "storm_step_size", "scale": 2.0,
                                                                          "w": 3.0}
    assert describe(server_opt.yogi(0.01, bias_correction="flower"))["bias_correction"] == "flower"
    opaque = object()
    assert uncomparable(describe(algorithms.fedavg(lambda t: 0.1 if opaque else 0.2))) == \
        ["client_lr.closure.opaque (object object)"]
    assert uncomparable(describe(algorithms.fedavg(lambda t: 0.1))) == []  # keyed by its code
    assert differences({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 3]}) == [("b[1]", 2, 3)]


# ---- the file itself ---------------------------------------------------------------------------------


def written(tmp_path, data) -> str:
    path = tmp_path / "run.pt"
    run(data, algorithms.scaffold(0.1), 2, path)
    return path


def refused(path, *patterns) -> str:
    with pytest.raises(CheckpointError) as error:
        checkpoint.read(path)
    message = str(error.value)
    assert str(path) in message and "weights_only=False" not in message and "delete it" in message
    for pattern in patterns:
        assert pattern in message, message
    return message


def test_altered_bytes_are_refused(data, tmp_path) -> None:
    """Eight bytes flipped deep inside the payload (in the state's tensors) fail the checksum."""
    path = written(tmp_path, data)
    raw = bytearray(path.read_bytes())
    middle = len(raw) // 2
    raw[middle:middle + 8] = bytes(b ^ 0xFF for b in raw[middle:middle + 8])
    path.write_bytes(bytes(raw))
    refused(path, "does not match its checksum")
    with pytest.raises(CheckpointError):
        run(data, algorithms.scaffold(0.1), 4, path, resume=True)


@pytest.mark.parametrize(("make", "pattern"), [
    (lambda raw: raw[: len(raw) - 100], "does not match its checksum"),
    (lambda raw: raw[:30], r"is truncated: its 30 bytes end inside the checksum line"),
    (lambda raw: raw[:10], r"is truncated: its 10 bytes end inside the header"),
    (lambda raw: b"", "is empty (0 bytes)"),
    (lambda raw: b"round,loss\n1,0.5\n", "not a fedcore checkpoint"),
])
def test_truncated_empty_or_foreign_files_get_one_clear_error(data, tmp_path, make, pattern) -> None:
    path = written(tmp_path, data)
    path.write_bytes(make(path.read_bytes()))
    refused(path, pattern)


def test_a_store_or_one_of_its_entries_given_as_a_checkpoint_says_what_it_is(data, tmp_path) -> None:
    import sqlite3

    from fedcore.store import Store

    store = Store(tmp_path / "runs.sqlite")
    problem = Problem(data, models.make("mlp", (8,), 3, hidden=(6,), seed=0))
    simulate(problem, algorithms.fedavg(0.1), 2, 3, 2, 4, progress=False, store=store)
    refused(store.path, "is a fedcore results store (an SQLite file: pass it as store=")
    entry = tmp_path / "entry.pt"
    with sqlite3.connect(store.path) as db:
        entry.write_bytes(db.execute("SELECT payload FROM fedcore_runs").fetchone()[0])
    refused(entry, "is an entry of a fedcore results store (a finished run's history")


def test_a_plain_torch_file_or_a_folder_is_refused(tmp_path) -> None:
    path = tmp_path / "plain.pt"
    torch.save({"x": torch.ones(3)}, path)
    refused(path, "older fedcore")
    refused(tmp_path, "cannot be read")


def test_checksum_passes_but_payload_is_not_plain_data(tmp_path) -> None:
    """A payload with an arbitrary object is refused by weights_only loading, with fedcore's own advice."""
    import hashlib
    import io

    buffer = io.BytesIO()
    torch.save({"object": CheckpointError("x")}, buffer)
    data = buffer.getvalue()
    path = tmp_path / "object.pt"
    path.write_bytes(checkpoint.MAGIC + hashlib.sha256(data).hexdigest().encode() + b"\n" + data)
    refused(path, "cannot be loaded as tensors and plain values")


def test_a_stale_partial_of_a_dead_writer_is_removed_and_a_live_ones_kept(data, tmp_path) -> None:
    path = tmp_path / "run.pt"
    dead = tmp_path / "run.pt.999999999.deadbeef.partial"
    live = tmp_path / f"run.pt.{os.getpid()}.cafef00d.partial"
    dead.write_bytes(b"half")
    live.write_bytes(b"being written")
    run(data, algorithms.fedavg(0.1), 1, path)
    assert not dead.exists() and live.exists()
    assert checkpoint.read(path)["round"] == 1
