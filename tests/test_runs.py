"""Many runs in one pass (issue 19): every batched run equals its separate run, for every algorithm of the
table; divergence, the store and dropout per run; what cannot share a pass runs alone."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest
import torch
from conftest import blobs

from fedcore import algorithms, models
from fedcore import run as run_module
from fedcore.engine import passes as runs
from fedcore.run import Problem, simulate, simulate_runs
from fedcore.schedules import exp_decay
from fedcore.store import Store
from fedcore.sweeps import sweep

# every algorithm runs here on clients of different sizes with weighting="samples": the invariants hold under any
# weighting, and PAdaMFed's warning about mixing them with its 1/S and 1/N is tested in test_padamfed.py
pytestmark = pytest.mark.filterwarnings("ignore:.*non-uniform client weights:UserWarning")

OPTIONS = dict(rounds=4, clients_per_round=3, local_steps=3, batch_size=4, progress=False)
FACTORS = (1.0, 0.6, 0.8)  # each run of a pass scales the table's numbers by its factor
SEEDS = (0, 1, 5)
METRICS = ["train_loss", "test_loss", "test_accuracy"]


def problem(data=None, dropout: float = 0.0) -> Problem:
    model = models.make("mlp", (8,), 3, hidden=(6,), dropout=dropout, seed=0)
    return Problem(blobs() if data is None else data, model)


def variants(name: str) -> list:
    """Three algorithms of one family, differing in every number of the table's hyperparameters."""
    table = algorithms.EXAMPLES[name] or {"c": 0.1}
    return [algorithms.make(name, **{key: value * factor if isinstance(value, float) else value
                                     for key, value in table.items()}) for factor in FACTORS]


def assert_same_run(batched, separate, tolerance: float = 1e-6) -> None:
    columns = [c for c in separate.frame.columns if c != "seconds"]
    assert list(batched.frame.columns) == list(separate.frame.columns)
    pd.testing.assert_frame_equal(batched.frame[columns], separate.frame[columns], check_exact=False,
                                  atol=tolerance, rtol=tolerance)  # rtol: a diverging run's losses reach 1e51
    torch.testing.assert_close(batched.final_state["x"], separate.final_state["x"], atol=tolerance, rtol=tolerance)
    assert batched.diverged_round == separate.diverged_round


@pytest.mark.parametrize("name", sorted(algorithms.EXAMPLES))
@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_each_run_of_a_pass_equals_its_separate_run(name: str, backend: str) -> None:
    """Three runs of one family (other hyperparameters, other seeds) in one pass, each against
    ``simulate(..., seed=s)``: partial participation (3 of 6 clients), minibatches of 4 of 7..27 samples."""
    built = variants(name)
    assert len({runs.signature(a)[0] for a in built}) == 1, "the three variants must share a pass"
    batched = simulate_runs(problem(), built, seeds=SEEDS, batch=3, backend=backend, **OPTIONS)
    for algorithm, seed, history in zip(built, SEEDS, batched):
        assert_same_run(history, simulate(problem(), algorithm, seed=seed, backend=backend, **OPTIONS))
    finals = [history.final_state["x"] for history in batched]
    assert not torch.equal(finals[0], finals[1])  # the runs did differ


def test_the_largest_difference_over_the_table_is_float_rounding() -> None:
    """The largest |batched - separate| over every algorithm, model and metric stays at float32 rounding of
    numbers of order 1 (measured: below 1e-6; the check above is per algorithm)."""
    largest = 0.0
    for name in sorted(algorithms.EXAMPLES):
        built = variants(name)
        for algorithm, seed, history in zip(built, SEEDS, simulate_runs(problem(), built, seeds=SEEDS, **OPTIONS)):
            separate = simulate(problem(), algorithm, seed=seed, **OPTIONS)
            largest = max(largest, float((history.final_state["x"] - separate.final_state["x"]).abs().max()),
                          float((history.frame[METRICS] - separate.frame[METRICS]).abs().max().max()))
    assert largest < 1e-6, largest


def test_schedules_stack_and_plain_functions_run_alone_said_once() -> None:
    """exp_decay schedules with other rates share a pass (their fields become per-run tensors); a lambda
    schedule cannot, and runs alone with one warning however many runs it has."""
    decays = [algorithms.fedavg(exp_decay(lr, 0.5, 2)) for lr in (0.1, 0.2)]
    assert runs.signature(decays[0])[0] == runs.signature(decays[1])[0]
    for algorithm, history in zip(decays, simulate_runs(problem(), decays, seeds=(3,), **OPTIONS)):
        assert_same_run(history, simulate(problem(), algorithm, seed=3, **OPTIONS))
    plain = [algorithms.fedavg(lambda t: 0.1), algorithms.fedavg(lambda t: 0.2)]
    key, reason = runs.signature(plain[0])
    assert key is None and "plain Python function" in reason
    runs._said.clear()
    with pytest.warns(UserWarning, match="runs alone") as caught:
        simulate_runs(problem(), plain * 2, **OPTIONS)
    assert len([w for w in caught if "runs alone" in str(w.message)]) == 1


def test_different_families_never_share_a_pass() -> None:
    mixed = [algorithms.fedavg(0.1), algorithms.fedadam(0.1, server_lr=0.01),
             algorithms.fedadam(0.1, server_lr=0.01, tau=1e-2),
             algorithms.fedadam(0.1, server_lr=0.01, bias_correction="keras")]
    keys = [runs.signature(a)[0] for a in mixed]
    assert keys[0] != keys[1] and keys[1] == keys[2] and keys[1] != keys[3]
    with pytest.raises(ValueError, match="cannot stack"):
        runs.stack(mixed[:2])


def test_a_diverging_run_leaves_its_pass_alone() -> None:
    """SCAFFOLD at client_lr 0.1, 9.0 and 0.2 on the quadratic: the middle run diverges at the round its separate
    run does, keeps its state of the round before (its c_i rows put back), and the others run to the end."""
    data = __import__("fedcore.data", fromlist=["federated_quadratic"]).federated_quadratic(
        num_clients=10, dim=5, samples_per_client=20, heterogeneity=1.0, seed=0)
    quadratic = Problem(data, models.linear_regression((5,)).double())
    built = [algorithms.scaffold(lr) for lr in (0.1, 9.0, 0.2)]
    options = dict(rounds=60, clients_per_round=4, local_steps=5, batch_size=20, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        batched = simulate_runs(quadratic, built, seeds=(0,), **options)
        separate = [simulate(quadratic, algorithm, **options) for algorithm in built]
    assert separate[1].diverged and not separate[0].diverged and not separate[2].diverged
    for history, alone in zip(batched, separate):
        assert_same_run(history, alone, tolerance=1e-9)
        assert history.diverged_because == alone.diverged_because
        torch.testing.assert_close(history.final_state["c_i"], alone.final_state["c_i"], atol=1e-9, rtol=1e-9)
    assert len(batched[0].frame) == 61 and len(batched[1].frame) == batched[1].diverged_round + 1


def test_dropout_masks_differ_across_the_runs_of_a_pass_and_nothing_else_does() -> None:
    """Two identical runs (same algorithm, same seed) in one pass: with dropout their masks differ, so their
    models do; with dropout at 0 (the same clients, minibatches and start) they are equal."""
    twins = [algorithms.fedavg(0.1), algorithms.fedavg(0.1)]
    with_dropout = simulate_runs(problem(dropout=0.5), twins, seeds=(0,), batch=2, **OPTIONS)
    assert not torch.equal(with_dropout[0].final_state["x"], with_dropout[1].final_state["x"])
    without = simulate_runs(problem(dropout=1e-12), twins, seeds=(0,), batch=2, **OPTIONS)
    assert torch.equal(without[0].final_state["x"], without[1].final_state["x"])


def test_the_store_keeps_each_run_and_computes_only_what_it_lacks(tmp_path, monkeypatch) -> None:
    store = Store(tmp_path / "runs.sqlite")
    built = [algorithms.fedavg(lr) for lr in (0.1, 0.2, 0.3)]
    first = simulate_runs(problem(), built, seeds=(0,), store=store, **OPTIONS)
    assert len(store) == 3 and not any(h.stored for h in first)
    passes = []
    original = run_module.run_pass
    monkeypatch.setattr(run_module, "run_pass", lambda p, *a: passes.append(len(p.algorithms)) or original(p, *a))
    again = simulate_runs(problem(), built + [algorithms.fedavg(0.4)], seeds=(0,), store=store, **OPTIONS)
    assert [h.stored for h in again] == [True, True, True, False] and passes == [1]
    for stored, computed in zip(again, first):
        pd.testing.assert_frame_equal(stored.frame, computed.frame)
    alone = simulate(problem(), built[1], store=store, **OPTIONS)  # simulate finds a run a pass kept
    assert alone.stored


def test_an_interrupted_sweep_keeps_every_finished_pass(tmp_path, monkeypatch) -> None:
    """Four points in passes of two; the user stops the sweep during the second pass: the first pass's two
    runs are kept, and the rerun computes only the other two."""
    store = Store(tmp_path / "runs.sqlite")
    original, passes = run_module.run_pass, []

    def interrupted(p, *args):
        passes.append(len(p.algorithms))
        if len(passes) == 2:
            raise KeyboardInterrupt
        return original(p, *args)

    grid = {"client_lr": [0.1, 0.2, 0.3, 0.4]}
    monkeypatch.setattr(run_module, "run_pass", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep(problem(), algorithms.fedavg, grid, batch=2, store=store, **OPTIONS)
    assert len(store) == 2
    monkeypatch.setattr(run_module, "run_pass", lambda p, *a: passes.append(len(p.algorithms)) or original(p, *a))
    table = sweep(problem(), algorithms.fedavg, grid, batch=2, store=store, **OPTIONS)
    assert passes[2:] == [2] and len(store) == 4 and table["final_train_loss"].notna().all()


def test_sweep_has_one_row_per_point_and_seed_equal_to_separate_runs() -> None:
    table = sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.3]}, seeds=(0, 2), **OPTIONS)
    assert list(zip(table["client_lr"], table["seed"])) == [(0.1, 0), (0.1, 2), (0.3, 0), (0.3, 2)]
    for _, row in table.iterrows():
        alone = simulate(problem(), algorithms.fedavg(row["client_lr"]), seed=int(row["seed"]), **OPTIONS)
        assert abs(row["final_train_loss"] - alone.frame["train_loss"].iloc[-1]) < 1e-6
    off = sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.3]}, seeds=(0, 2), batch="off", **OPTIONS)
    pd.testing.assert_frame_equal(off.drop(columns=[]), table, check_exact=False, atol=1e-6)


def initial(seed: int) -> torch.Tensor:
    """The initial parameters of problem()'s model drawn from ``seed``."""
    return Problem(blobs(), models.make("mlp", (8,), 3, hidden=(6,), seed=seed)).x0()


@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_runs_from_their_own_initial_models_share_a_pass(backend: str) -> None:
    """x0 per run: each run of the pass starts where its own model does (a seed that draws the initial model)
    and equals ``simulate(..., x0=...)``; sweep's x0 maps each seed to its start, and the store keys each run by
    its start."""
    starts = [initial(seed) for seed in SEEDS]
    built = [algorithms.fedadam(0.1, server_lr=0.03)] * 3
    batched = simulate_runs(problem(), built, seeds=SEEDS, x0=starts, backend=backend, batch=3, **OPTIONS)
    for algorithm, seed, start, history in zip(built, SEEDS, starts, batched):
        assert_same_run(history, simulate(problem(), algorithm, seed=seed, x0=start, backend=backend, **OPTIONS))
    own_start = simulate(problem(), built[1], seed=SEEDS[1], backend=backend, **OPTIONS)
    assert not torch.allclose(batched[1].final_state["x"], own_start.final_state["x"])  # another start, another run
    table = sweep(problem(), algorithms.fedavg, {"client_lr": [0.1, 0.3]}, seeds=SEEDS,
                  x0=dict(zip(SEEDS, starts)), backend=backend, **OPTIONS)
    for _, row in table.iterrows():
        alone = simulate(problem(), algorithms.fedavg(row["client_lr"]), seed=int(row["seed"]),
                         x0=starts[SEEDS.index(int(row["seed"]))], backend=backend, **OPTIONS)
        assert abs(row["final_train_loss"] - alone.frame["train_loss"].iloc[-1]) < 1e-6


def test_a_store_tells_runs_from_different_starts_apart(tmp_path) -> None:
    from fedcore.store import Store

    runs, starts = Store(tmp_path / "runs.sqlite"), [initial(seed) for seed in (0, 1)]
    first = simulate_runs(problem(), [algorithms.fedavg(0.1)] * 2, x0=starts, store=runs, **OPTIONS)
    assert len(runs) == 2 and not first[1].stored
    again = simulate_runs(problem(), [algorithms.fedavg(0.1)] * 2, x0=starts[::-1], store=runs, **OPTIONS)
    assert all(history.stored for history in again) and len(runs) == 2
    assert torch.equal(again[0].final_state["x"], first[1].final_state["x"])


@pytest.mark.parametrize("bad, message", [
    (dict(batch="sometimes"), r"batch='sometimes' not one of"), (dict(batch=0), r"batch=0 must be >= 1"),
    (dict(seeds=(0, 1)), r"seeds has 2 seeds for 3 algorithms"), (dict(seeds=(-1,)), r"seeds=-1"),
    (dict(x0=[torch.zeros(3)] * 3), r"x0\[0\] has shape \(3,\); expected a tensor of shape \(75,\)"),
    (dict(x0=[torch.zeros(75)] * 2), r"x0 must be a tensor of shape \(75,\) or a list of 3 of them"),
    (dict(x0=[torch.full((75,), float("nan"))] * 3), r"x0\[0\] has 75 non-finite entries"),
])
def test_bad_pass_arguments_are_named(bad, message) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        simulate_runs(problem(), [algorithms.fedavg(lr) for lr in (0.1, 0.2, 0.3)], **{**OPTIONS, **bad})


def test_per_client_state_is_written_row_by_row() -> None:
    """SCAFFOLD's c_i is updated in place (the same storage after a round: no [N, d] copy per round), only the
    sampled rows change, and undo puts them back."""
    algorithm = algorithms.scaffold(0.1)
    data = blobs()
    model = problem(data).model
    from fedcore.engine.streams import sample_round
    from fedcore.params import GradientOracle

    oracle = GradientOracle(model, "loop")
    state = algorithm.init(model.x0(), data.num_clients)
    state["c_i"] += torch.arange(data.num_clients, dtype=torch.float32).view(1, -1, 1)
    before, storage = state["c_i"].clone(), state["c_i"].data_ptr()
    batch = sample_round(data, 0, 3, 2, 4, "samples", torch.float32, torch.Generator().manual_seed(0),
                         torch.Generator().manual_seed(1))
    new_state, _ = algorithm.round(state, batch, oracle)
    assert new_state["c_i"].data_ptr() == storage
    changed = (new_state["c_i"] != before).any(dim=-1)[0]
    assert changed.nonzero().flatten().tolist() == sorted(batch.clients[0].tolist())
    batch.undo(torch.tensor([0]))
    assert torch.equal(new_state["c_i"], before)


def test_auto_holds_at_most_160_rows_and_4_2m_entries_per_pass() -> None:
    """The measured rule (benchmarks/README.md): loop-backend models one at a time; on vmap, R*S <= 160 rows and
    R*S*d <= 4.2M entries."""
    from fedcore.engine.passes import runs_per_pass

    data = blobs(dim=784, num_classes=10)
    logistic = Problem(data, models.logistic_regression())  # d = 7,850
    mlp = Problem(data, models.mlp(hidden=(64,)))  # d = 50,890
    assert [runs_per_pass(logistic, "vmap", s) for s in (10, 20, 200)] == [16, 8, 1]
    assert [runs_per_pass(mlp, "vmap", s) for s in (10, 5, 100)] == [8, 16, 1]
    assert runs_per_pass(logistic, "loop", 1) == 1


# ---------------------------------------------------------------- record: a measure of every round's server model


def test_record_adds_a_column_equal_to_what_a_callback_measures_and_is_stored(tmp_path) -> None:
    """``record`` measures every round's server model (here ||grad f||^2 on a least-squares federation, checked
    against the same quantity taken through a callback); in a pass each run records its own; a dataclass record
    is part of the identity, so its runs are stored and read back with the column; so is a plain function's, keyed by
    its code (the same code is the same run, another body another run)."""
    from fedcore.objectives import quadratic_task

    task = quadratic_task(num_clients=6, dim=3, samples_per_client=5)
    options = dict(rounds=5, clients_per_round=3, local_steps=2, batch_size=2, progress=False)
    seen = []
    alone = simulate(task.problem, algorithms.fedavg(0.1), **options, seed=2, record=task.record,
                     callback=lambda t, state: seen.append(float(task.gradient(state["x"]).square().sum())))
    column = alone.frame["squared_gradient_norm"]
    assert column.index.tolist() == [0, 1, 2, 3, 4, 5]
    assert column.iloc[0] == pytest.approx(float(task.gradient(task.problem.x0()).square().sum()), rel=1e-12)
    assert column.loc[1:].tolist() == pytest.approx(seen, rel=1e-12)

    store = Store(tmp_path / "runs.sqlite")
    passed = simulate_runs(task.problem, [algorithms.fedavg(0.1), algorithms.fedavg(0.05)], seeds=(2, 3),
                           record=task.record, store=store, batch=2, **options)
    assert passed[0].frame["squared_gradient_norm"].tolist() == pytest.approx(column.tolist(), rel=1e-9)
    other = simulate(task.problem, algorithms.fedavg(0.05), **options, seed=3, record=task.record, store=store)
    assert other.stored and other.frame["squared_gradient_norm"].tolist() == \
        passed[1].frame["squared_gradient_norm"].tolist()
    assert len(store) == 2
    plain = simulate(task.problem, algorithms.fedavg(0.1), **options, seed=2, store=store,
                     record=lambda x: {"norm": x.norm(dim=1)})
    assert not plain.stored and len(store) == 3 and plain.frame["norm"].notna().all()
    again = simulate(task.problem, algorithms.fedavg(0.1), **options, seed=2, store=store,
                     record=lambda x: {"norm": x.norm(dim=1)})
    assert again.stored and again.frame["norm"].equals(plain.frame["norm"])
    edited = simulate(task.problem, algorithms.fedavg(0.1), **options, seed=2, store=store,
                      record=lambda x: {"norm": x.abs().sum(dim=1)})
    assert not edited.stored and len(store) == 4
    without = simulate(task.problem, algorithms.fedavg(0.1), **options, seed=2, store=store)
    assert not without.stored and "squared_gradient_norm" not in without.frame  # another run: no record


@pytest.mark.parametrize("record, message", [
    (lambda x: x.sum(), r"record=.* returned tensor.*; it must return \{name: one number\} for the model x \[1, d\]"),
    (lambda: {}, r"record=.* must take 1 positional argument\(s\) \(x\)"),
    ("norm", r"record='norm' must be a function \(x\)"),
])
def test_a_bad_record_is_named(record, message) -> None:
    with pytest.raises(TypeError, match=message):
        simulate(problem(), algorithms.fedavg(0.1), record=record, **OPTIONS)
