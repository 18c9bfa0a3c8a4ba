"""The simulator: seeding, checkpoint/resume, the divergence guard, evaluation, weighting."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from fedcore import algorithms, checkpoint, models
from fedcore.run import Problem, simulate

COLUMNS = ["train_loss", "test_loss", "test_accuracy"]


def dropout_problem(data) -> Problem:
    """An MLP with dropout: its masks come from the run's seeded RNG stream."""
    return Problem(data, models.make("mlp", (8,), 3, hidden=(16,), dropout=0.3))


def run(data, rounds=6, seed=0, **kwargs):
    options = dict(rounds=rounds, clients_per_round=3, local_steps=2, batch_size=4, seed=seed, progress=False)
    options.update(kwargs)
    algorithm = options.pop("algorithm", algorithms.fedadam(client_lr=0.1, server_lr=0.05))
    return simulate(dropout_problem(data), algorithm, **options)


def test_same_seed_same_history(tiny_classification) -> None:
    first, second = run(tiny_classification), run(tiny_classification)
    pd.testing.assert_frame_equal(first.frame[COLUMNS], second.frame[COLUMNS])
    assert torch.equal(first.final_state["x"], second.final_state["x"])
    other = run(tiny_classification, seed=1)
    assert not torch.equal(first.final_state["x"], other.final_state["x"])


def test_dropout_draws_are_part_of_the_seeded_stream(tiny_classification) -> None:
    """Global RNG use between runs must not change a run (the run forks its own stream)."""
    first = run(tiny_classification)
    torch.rand(1000)
    assert torch.equal(first.final_state["x"], run(tiny_classification).final_state["x"])


def test_history_layout(tiny_classification) -> None:
    history = run(tiny_classification, rounds=5, eval_every=2)
    assert list(history.frame.index) == [0, 1, 2, 3, 4, 5]
    evaluated = history.frame["test_accuracy"].dropna().index.tolist()
    assert evaluated == [0, 2, 4, 5]  # the start, every 2 rounds, and the last round
    assert history.frame.loc[1:, "train_loss"].notna().all()
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


def test_eval_every_zero_skips_the_test_set_and_changes_nothing_else(tiny_classification) -> None:
    """A tuning search scored on the training loss skips the test set: same training, no test columns."""
    evaluated = run(tiny_classification, rounds=4, eval_every=1)
    blind = run(tiny_classification, rounds=4, eval_every=0)
    assert "test_accuracy" not in blind.frame and list(blind.frame.index) == [0, 1, 2, 3, 4]
    pd.testing.assert_series_equal(evaluated.frame["train_loss"], blind.frame["train_loss"])
    assert torch.equal(evaluated.final_state["x"], blind.final_state["x"])  # dropout masks untouched by evaluation
    with pytest.raises(ValueError, match="eval_every=-1 must be >= 0"):
        run(tiny_classification, eval_every=-1)


@pytest.mark.parametrize("stop_at", [2, 3])
def test_resume_from_checkpoint_is_identical(tiny_classification, tmp_path, stop_at: int) -> None:
    """An interrupted run (stopped after `stop_at` rounds) resumed from its checkpoint ends identical,
    dropout masks, client sampling, minibatches and SCAFFOLD's per-client state included."""
    path = tmp_path / "run.pt"
    algorithm = algorithms.scaffold(client_lr=0.1)
    full = run(tiny_classification, rounds=6, algorithm=algorithm)
    run(tiny_classification, rounds=stop_at, algorithm=algorithm, checkpoint=path, checkpoint_every=1)
    resumed = run(tiny_classification, rounds=6, algorithm=algorithm, checkpoint=path, resume=True)
    assert torch.equal(full.final_state["x"], resumed.final_state["x"])
    assert torch.equal(full.final_state["c_i"], resumed.final_state["c_i"])
    pd.testing.assert_frame_equal(full.frame[COLUMNS], resumed.frame[COLUMNS])


def test_resume_refuses_a_different_run(tiny_classification, tmp_path) -> None:
    path = tmp_path / "run.pt"
    run(tiny_classification, rounds=2, checkpoint=path)
    with pytest.raises(ValueError, match="written by a different run"):
        run(tiny_classification, rounds=4, checkpoint=path, resume=True, algorithm=algorithms.fedavg(client_lr=0.1))


def test_divergence_stops_cleanly_and_keeps_history(quadratic, tmp_path) -> None:
    """FedAvg with client_lr = 5 on a quadratic whose Hessian has eigenvalues ~1 blows up geometrically."""
    path = tmp_path / "diverge.pt"
    problem = Problem(quadratic, models.linear_regression((5,)).double())
    with pytest.warns(RuntimeWarning, match=r"diverged at round \d+"):
        history = simulate(problem, algorithms.fedavg(client_lr=5.0), rounds=500, clients_per_round=10,
                           local_steps=5, batch_size=20, progress=False, checkpoint=path, checkpoint_every=1)
    assert history.diverged and 1 < history.diverged_round < 500
    assert history.frame.index[-1] == history.diverged_round
    assert history.frame["train_loss"].iloc[1:-1].map(lambda v: v == v and abs(v) < float("inf")).all()
    assert torch.isfinite(history.final_state["x"]).all()  # the last finite state is kept
    saved = checkpoint.read(path)  # the verified format of issue 9 (was a plain torch.load)
    assert saved["round"] == history.diverged_round - 1  # what was written before is not lost


def test_diverge_above_stops_at_the_first_round_over_the_bound(quadratic, tmp_path) -> None:
    """With diverge_above, the first round whose train loss exceeds the bound ends the run; the reason is
    recorded, and history, state and checkpoint stay at the round before (same as a non-finite loss)."""
    problem = Problem(quadratic, models.linear_regression((5,)).double())
    options = dict(rounds=60, clients_per_round=10, local_steps=5, batch_size=20, progress=False)
    free = simulate(problem, algorithms.fedavg(client_lr=2.0), **options)
    losses = free.frame["train_loss"].dropna()
    bound = float(losses.iloc[len(losses) // 2])  # a value the loss passes partway through the run
    first_over = int(losses.index[(losses > bound).argmax()])
    assert 1 < first_over < 60 and not free.diverged
    path = tmp_path / "bounded.pt"
    with pytest.warns(RuntimeWarning, match=rf"diverged at round {first_over} \(train_loss=.* > diverge_above="):
        bounded = simulate(problem, algorithms.fedavg(client_lr=2.0), diverge_above=bound, checkpoint=path,
                           checkpoint_every=1, **options)
    assert bounded.diverged_round == first_over and bounded.diverged_because.endswith(f"diverge_above={bound:g}")
    assert (bounded.frame["train_loss"].iloc[1:-1] <= bound).all()
    assert checkpoint.read(path)["round"] == first_over - 1
    assert free.diverged_because is None


def test_no_test_set_gives_nan_test_metrics_said_once(tiny_classification) -> None:
    """test_fraction=0 (no test samples): the test metrics are NaN (not measured), never 0.0, and one
    warning says so."""
    from fedcore.data import FederatedData

    data = tiny_classification
    empty = FederatedData(data.inputs, data.targets, data.sizes, data.test_inputs[:0], data.test_targets[:0],
                          data.num_classes)
    with pytest.warns(UserWarning, match="no test samples") as caught:
        history = run(empty, rounds=3)
    assert sum("no test samples" in str(w.message) for w in caught) == 1
    assert history.frame["test_accuracy"].isna().all() and history.frame["test_loss"].isna().all()
    assert history.frame["train_loss"].iloc[1:].notna().all()


def test_a_run_that_cannot_fit_is_refused_before_allocating(tiny_classification) -> None:
    """The state's size is measured on the meta device (FAFED: x, m, v, A and t, plus N previous client
    models); a run needing more than the memory available is refused with the sizes."""
    from fedcore.memory import check_fits, state_bytes

    x0 = torch.zeros(1000)
    fafed = algorithms.fafed(lr=0.1)
    assert state_bytes(fafed, x0, 50) == (4 * 1000 + 50 * 1000) * 4 + 8
    assert state_bytes(algorithms.fedavg(client_lr=0.1), x0, 50) == 1000 * 4
    check_fits(fafed, x0, 50, 5, 2, 8, 100, torch.device("cpu"), available=300_000)  # 216 kB + 1 kB: fits
    with pytest.raises(MemoryError, match=r"FAFED's state needs 216 kB \(num_clients=50 x d=1000, 4.32 kB per client"):
        check_fits(fafed, x0, 50, 5, 2, 8, 100, torch.device("cpu"), available=200_000)
    with pytest.raises(MemoryError, match=r"one round needs at least 9.92 MB .* use a smaller batch_size"):
        check_fits(fafed, x0, 50, 5, 2, 8000, 100, torch.device("cpu"), available=2_000_000)


def test_uniform_weighting_differs_from_sample_weighting(tiny_classification) -> None:
    by_samples = run(tiny_classification, weighting="samples")
    uniform = run(tiny_classification, weighting="uniform")
    assert not torch.equal(by_samples.final_state["x"], uniform.final_state["x"])


def test_callback_sees_every_round(tiny_classification) -> None:
    seen = []
    run(tiny_classification, rounds=4, callback=lambda t, state: seen.append((t, state["x"].clone())))
    assert [t for t, _ in seen] == [1, 2, 3, 4]
    assert not torch.equal(seen[0][1], seen[-1][1])


def test_history_plot_draws_the_metric(tiny_classification) -> None:
    import matplotlib

    matplotlib.use("Agg")
    history = run(tiny_classification, rounds=3)
    ax = history.plot("test_accuracy")
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="metric='nope' not one of"):
        history.plot("nope")


def test_sweep_records_divergence_as_a_result(quadratic) -> None:
    from fedcore.sweeps import sweep

    problem = Problem(quadratic, models.linear_regression((5,)).double())
    table = sweep(problem, lambda client_lr: algorithms.fedavg(client_lr=client_lr), {"client_lr": [0.1, 5.0]},
                  rounds=60, clients_per_round=10, local_steps=5, batch_size=20, progress=False)
    assert list(table["client_lr"]) == [0.1, 5.0]
    assert table["diverged_round"].isna().tolist() == [True, False]
    assert table["final_train_loss"].iloc[0] < 1
    with pytest.raises(ValueError, match="grid=.* is empty"):
        sweep(problem, algorithms.fedavg, {}, rounds=1, clients_per_round=1, local_steps=1, batch_size=1)
