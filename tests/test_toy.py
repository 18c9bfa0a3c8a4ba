"""fedcore.toy: the server-optimizer path on the 2-D federated quadratic, and its plots."""

from __future__ import annotations

import math

import matplotlib
import numpy as np
import pytest
import torch

import fedcore
from fedcore import explore, objectives, plots, toy
from fedcore.data import FederatedData

matplotlib.use("Agg")


def test_fedavg_path_decreases_monotonically_to_the_optimum():
    """Server SGD at lr 1 with full participation is FedAvg on a shared-Hessian quadratic:
    ``x_{t+1} - x* = (I - eta_l H)^K (x_t - x*)``, a contraction in every eigendirection,
    so the loss gap falls every round; 200 rounds of factor (1 - 0.1 * 0.237)^10 = 0.787 take 3.7 below 1e-20."""
    path = toy.server_optimizer_path("sgd", server_lr=1.0, rounds=200)
    gap = path.frame["loss_gap"].to_numpy()
    assert len(gap) == 201 and path.diverged_round is None
    assert (np.diff(gap) < 0).all()
    assert gap[-1] < 1e-8
    final = torch.tensor(path.frame[["x1", "x2"]].iloc[-1].to_numpy())
    torch.testing.assert_close(final, path.x_star, atol=1e-6, rtol=0)


def test_fedavg_contraction_factor_matches_closed_form():
    """Along each eigenvector of H the FedAvg error shrinks by ``(1 - eta_l lambda)^K`` per round;
    the loss gap (a sum of two such squares) ends up dominated by the smallest eigenvalue."""
    path = toy.server_optimizer_path("sgd", 1.0, rounds=60, client_lr=0.1, local_steps=5)
    lam_min = float(torch.linalg.eigvalsh(path.hessian)[0])
    expected = (1 - 0.1 * lam_min) ** 10  # squared, for the loss: per-round ratio of f - f*
    gap = path.frame["loss_gap"]
    assert gap.iloc[-1] / gap.iloc[-2] == pytest.approx(expected, rel=1e-6)


def test_path_is_deterministic():
    first = toy.server_optimizer_path("adam", server_lr=0.1, tau=1e-3, rounds=30)
    second = toy.server_optimizer_path("adam", server_lr=0.1, tau=1e-3, rounds=30)
    assert first.frame.equals(second.frame)
    assert first.optimizer == second.optimizer == "adam(lr=0.1, beta1=0.9, beta2=0.99, tau=0.001)"


def test_loss_gap_agrees_with_the_library_loss():
    """The closed form ``1/2 (x - x*)^T H (x - x*)`` equals ``fedcore.evaluate``'s loss minus f*."""
    path = toy.server_optimizer_path("yogi", server_lr=0.05, rounds=10)
    problem = objectives.quadratic_2d()
    data = problem.data
    for _, row in path.frame.iterrows():
        x = torch.tensor([row["x1"], row["x2"]], dtype=torch.float64)
        loss = fedcore.evaluate(problem.model, x, data.test_inputs, data.test_targets)["test_loss"]
        assert row["loss_gap"] == pytest.approx(loss - data.info["f_star"], rel=1e-9, abs=1e-12)


def test_path_is_the_simulators_run():
    """Round by round through ``FedOpt.round`` ends where ``fedcore.simulate`` ends with the same
    full-participation, full-batch configuration (batch order differs: only round-off may)."""
    rounds, start = 12, (-1.0, 2.0)
    path = toy.server_optimizer_path("adam", server_lr=0.1, rounds=rounds, start=start)
    problem = objectives.quadratic_2d()
    algorithm = fedcore.algorithms.FedOpt(0.1, fedcore.server_opt.adam(lr=0.1, beta1=0.9, tau=1e-3))
    history = fedcore.simulate(
        problem, algorithm, rounds, clients_per_round=problem.data.num_clients, local_steps=5, batch_size=3,
        progress=False, x0=torch.tensor(start, dtype=torch.float64),
    )
    ours = torch.tensor(path.frame[["x1", "x2"]].iloc[-1].to_numpy())
    torch.testing.assert_close(ours, history.final_state["x"], atol=1e-10, rtol=0)
    gap = path.frame["loss_gap"].to_numpy() + problem.data.info["f_star"]
    np.testing.assert_allclose(gap, history.frame["test_loss"].to_numpy(), rtol=1e-9)


SERVER_LRS = {"sgd": 1.0, "sgdm": 1.0, "adagrad": 0.3, "adam": 0.1, "yogi": 0.1, "amsgrad": 0.1}


def test_every_server_optimizer_is_covered():
    assert set(SERVER_LRS) == set(toy.SERVER_OPTIMIZERS) == set(fedcore.server_opt.SERVER_OPTIMIZERS)


@pytest.mark.parametrize("optimizer", toy.SERVER_OPTIMIZERS)
def test_every_server_optimizer_runs_and_approaches_the_optimum(optimizer):
    path = toy.server_optimizer_path(optimizer, server_lr=SERVER_LRS[optimizer], rounds=50)
    gap = path.frame["loss_gap"]
    assert path.diverged_round is None and gap.notna().all()
    assert gap.iloc[-1] < 0.05 * gap.iloc[0]
    assert path.optimizer.startswith(optimizer + "(")


def test_options_each_optimizer_takes():
    assert toy.server_optimizer_options("sgd", 1.0, 0.9, 1e-3) == {"lr": 1.0}
    assert toy.server_optimizer_options("sgdm", 1.0, 0.5, 1e-3) == {"lr": 1.0, "beta": 0.5}
    assert toy.server_optimizer_options("adagrad", 0.1, 0.9, 1e-2) == {"lr": 0.1, "beta1": 0.9, "tau": 1e-2}
    assert toy.server_optimizer_options("amsgrad", 0.1, 0.9, 1e-3)["eps"] == pytest.approx(1e-6)
    assert "beta=0.5" in toy.server_optimizer_path("sgdm", 1.0, beta1=0.5, rounds=1).optimizer


def test_bad_optimizer_name_raises_naming_it():
    with pytest.raises(ValueError, match=r"optimizer='adamw' not one of"):
        toy.server_optimizer_path("adamw")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"server_lr": 0.0}, "server_lr=0.0 must be > 0"), ({"tau": -1.0}, "tau=-1.0 must be > 0"),
     ({"beta1": 1.0}, r"beta1=1.0 not in \[0, 1\)"), ({"rounds": 0}, "rounds=0 must be >= 1"),
     ({"client_lr": -0.1}, "client_lr=-0.1 must be > 0")],
)
def test_bad_hyperparameters_raise_naming_them(kwargs, message):
    with pytest.raises(ValueError, match=message):
        toy.server_optimizer_path("adam", **kwargs)


def test_divergence_stops_the_path():
    """Server SGD with eta = 30 multiplies the steep direction's error by |1 - 30 * 0.72| > 20 a
    round: the loss gap overflows after about 120 rounds, the model after about 240."""
    path = toy.server_optimizer_path("sgd", server_lr=30.0, rounds=400)
    assert path.diverged_round is not None and 100 < path.diverged_round < 400
    assert len(path.frame) == path.diverged_round
    assert np.isfinite(path.frame.to_numpy()).all()


def test_explore_server_optimizer_draws_two_panels_headless():
    plt = matplotlib.pyplot
    plt.close("all")
    for optimizer in toy.SERVER_OPTIMIZERS:
        assert explore.explore_server_optimizer(optimizer, server_lr=0.1, tau=1e-3, beta1=0.9, rounds=10) is None
        figure = plt.gcf()
        path_ax, gap_ax = figure.axes[:2]
        assert len(path_ax.lines) >= 3 and len(gap_ax.lines) == 2
        assert optimizer in figure.get_suptitle()
        plt.close(figure)


def test_plot_server_path_window_contains_start_and_optimum():
    path = toy.server_optimizer_path("sgd", 1.0, rounds=5)
    ax = plots.plot_server_path(path)
    (x_low, x_high), (y_low, y_high) = ax.get_xlim(), ax.get_ylim()
    for x1, x2 in (path.start, tuple(path.x_star.tolist())):
        assert x_low < x1 < x_high and y_low < x2 < y_high
    assert math.isclose(x_high - x_low, y_high - y_low)
    matplotlib.pyplot.close(ax.figure)


# ---------------------------------------------------------------- the other shared figures


def _labelled_data(num_clients: int = 6, num_classes: int = 4) -> FederatedData:
    """Client i holds ``i + 1`` samples of each class below ``i % num_classes + 1``."""
    labels = [torch.arange(i % num_classes + 1).repeat(i + 1) for i in range(num_clients)]
    targets = torch.cat(labels)
    sizes = torch.tensor([len(y) for y in labels])
    return FederatedData(torch.zeros(len(targets), 2), targets, sizes, torch.zeros(3, 2),
                         torch.zeros(3, dtype=torch.long), num_classes, "toy", {"class_names": list("abcd")})


def test_label_distribution_stacks_the_label_counts():
    data = _labelled_data()
    ax = plots.label_distribution(data, max_clients=5)
    heights = np.array([[patch.get_height() for patch in container] for container in ax.containers])
    np.testing.assert_array_equal(heights.T, data.label_counts().numpy()[:5])
    assert "first 5 of 6 clients" in ax.get_title()
    assert [text.get_text() for text in ax.get_legend().get_texts()] == list("abcd")
    matplotlib.pyplot.close(ax.figure)


def test_compare_draws_one_curve_per_history():
    problem = objectives.quadratic_2d()
    runs = {
        name: fedcore.simulate(problem, fedcore.algorithms.make(name, client_lr=0.1), 3, 10, 2, 3, progress=False)
        for name in ("fedavg", "fedadam")
    }
    ax = plots.compare(runs, "test_loss", logy=True)
    assert [line.get_label() for line in ax.lines] == ["fedavg", "fedadam"]
    assert ax.get_yscale() == "log" and len(ax.lines[0].get_xdata()) == 4
    ax = plots.compare(list(runs.values()), "train_loss")
    assert [line.get_label() for line in ax.lines] == ["FedAvg", "FedAdam"]
    with pytest.raises(ValueError, match="histories is empty"):
        plots.compare({}, "test_loss")
    matplotlib.pyplot.close("all")


def test_savefig_writes_only_when_given_a_folder(tmp_path, monkeypatch):
    figure = matplotlib.pyplot.figure()
    monkeypatch.chdir(tmp_path)
    assert plots.savefig(figure, "a.png", None) is None
    plots.savefig(figure, "a.png", "figures/sub")
    assert (tmp_path / "figures" / "sub" / "a.png").stat().st_size > 0
    matplotlib.pyplot.close(figure)
