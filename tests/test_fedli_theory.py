"""Notebook 03's descent experiments (papers.fedli.theory): the convex two-client federation and our
instance of Remark 2."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from fedcore import objectives  # noqa: E402
from papers.fedli import explore as fedli_explore  # noqa: E402
from papers.fedli import figures, theory  # noqa: E402


def test_quadratic_clients_hold_exactly_the_stated_objectives() -> None:
    """fedcore's mse (half the squared error) of client i at x is a_i (x - b_i)^2."""
    data = objectives.quadratic_clients((0.01, 1.0), (10.0, 0.0))
    for i, (a, b) in enumerate(((0.01, 10.0), (1.0, 0.0))):
        inputs, targets = data.client(i)
        for x in (-2.0, 0.0, 3.5):
            assert float(0.5 * (inputs[:, 0] * x - targets).square().mean()) == pytest.approx(a * (x - b) ** 2)
    with pytest.raises(ValueError, match="same length"):
        objectives.quadratic_clients((1.0,), (0.0, 1.0))
    with pytest.raises(ValueError, match="a=0"):
        objectives.quadratic_clients((0.0, 1.0), (0.0, 1.0))


def test_two_client_run_ascends_globally_while_each_client_descends() -> None:
    run = theory.two_client_run(rounds=6)  # f_2 = 1.1 x^2: off the Armijo tie (the numbers of tests/test_fedli.py)
    F = lambda x: (0.01 * (x - 10) ** 2 + 1.1 * x**2) / 2  # noqa: E731
    assert run.global_objective == pytest.approx([F(x) for x in run.x])
    assert [round(v, 3) for v in run.global_objective] == [0.5, 0.873, 1.345, 1.620, 1.757, 1.821, 1.851]
    assert theory.convex_optimum() == pytest.approx(10 / 111)
    assert all(b > a for a, b in zip(run.global_objective, run.global_objective[1:]))
    for before, after in zip(run.own_before, run.own_after):
        assert after[0] < before[0] and (after[1] < before[1] or before[1] == 0.0)
    one_step = theory.two_client_run(local_steps=1, rounds=1)
    assert [round(v, 3) for v in one_step.global_objective] == [0.5, 0.496]


def test_one_step_clients_raise_the_global_objective_at_k_1() -> None:
    """theory.ONE_STEP_CLIENTS by hand: client 1 (f_1 = 10 x^2, slope -20 at -1) backtracks from 1 to 0.9^23 (Armijo:
    eta <= 0.9 / 10), x_1 = -1 + 20 * 0.9^23; client 2 (slope 14.4) keeps 1 (1 <= 0.9 / 0.8), x_2 = -15.4; the global
    objective (f_1 + f_2) / 2 goes from 37.4 to f((x_1 + x_2) / 2), more than 7 times."""
    run = theory.two_client_run(**theory.ONE_STEP_CLIENTS, local_steps=1, rounds=1)
    x1, x2 = -1 + 20 * 0.9**23, -15.4
    assert run.x[1] == pytest.approx((x1 + x2) / 2, rel=1e-12)
    assert run.own_after[0] == pytest.approx([10 * x1**2, 0.8 * (x2 + 10) ** 2], rel=1e-12)
    assert run.own_after[0][0] < run.own_before[0][0] and run.own_after[0][1] < run.own_before[0][1]
    assert run.global_objective[0] == pytest.approx(37.4)
    assert run.global_objective[1] == pytest.approx((10 * run.x[1] ** 2 + 0.8 * (run.x[1] + 10) ** 2) / 2)
    assert run.global_objective[1] > 7 * run.global_objective[0]


def test_remark2_instance_by_hand() -> None:
    """f_1 = (x^2-1)^2 + 3x, f_2 = (x^2-1)^2 - 3x at x_0 = 0.5: slopes 4 * 0.5 * (-0.75) +- 3 = 1.5, -4.5;
    x_1 = 0.5 - 0.5 * 1.5 = -0.25, x_2 = 0.5 + 0.05 * 4.5 = 0.725, mean 0.2375."""
    step = theory.remark2_step()
    assert (step["x1"], step["x2"], step["x_bar"]) == pytest.approx((-0.25, 0.725, 0.2375))
    assert step["f1(x0)"] == pytest.approx(0.5625 + 1.5) and step["f1(x1)"] == pytest.approx(0.87890625 - 0.75)
    assert step["f2(x2)"] == pytest.approx((0.725**2 - 1) ** 2 - 3 * 0.725)
    assert step["f(x_bar)"] == pytest.approx((0.2375**2 - 1) ** 2) and step["f(x0)"] == pytest.approx(0.5625)
    assert step["f(x_bar)"] > step["f(x0)"]
    assert step["client 1 descends"] and step["client 2 descends"] and step["client 1 Armijo"]
    assert step["client 2 Armijo"] and not step["global descends"]
    same = theory.remark2_step(eta1=0.05, eta2=0.05)  # equal small steps: the tilts cancel in the mean
    assert same["global descends"] and same["x_bar"] == pytest.approx(0.5 - 0.05 * (-1.5))
    with pytest.raises(ValueError, match="eta1=0"):
        theory.remark2_step(eta1=0)


def test_remark2_explorer_draws_the_three_curves_and_names_the_ascent() -> None:
    import matplotlib.pyplot as plt

    step = fedli_explore.explore_remark2()
    ax = plt.gcf().axes[0]
    assert "the average ASCENDS" in ax.get_title() and not step["global descends"]
    assert len([line for line in ax.get_lines() if len(line.get_xdata()) > 100]) == 3
    server = ax.get_lines()[-1]  # the last move, x_0 = 0.5 to (x_1 + x_2) / 2
    # x_1 = 0.5 - 0.5 * f_1'(0.5) = 0.5 - 0.5 * 1.5, x_2 = 0.5 - 0.05 * f_2'(0.5) = 0.5 + 0.05 * 4.5
    assert list(server.get_xdata()) == pytest.approx([0.5, 0.2375]) and server.get_label().startswith("server")
    low, high = ax.get_ylim()
    assert low < -1.95 and high > 2.06  # every move in view: client 2 ends at -1.950, client 1 starts at 2.062
    plt.close("all")


def test_suboptimality_and_the_linear_rate_bound_by_hand() -> None:
    """On clients that share their rows, f* by least squares, the gap from x_0 = 0 falls at least by the bound's
    factor (1 - 2 c mu eta_lo)^K every round, eta_lo = min(eta_max, 2 beta (1 - c) / L)."""
    from fedcore import algorithms

    data = objectives.shared_clients()
    A, y = data.inputs[:8], data.targets[:8]
    mu, L = torch.linalg.eigvalsh(A.T @ A / 8)[[0, -1]].tolist()
    bound = theory.linear_rate_bound(data, local_steps=5, eta_max=10.0)
    assert bound == pytest.approx((1 - 2 * 0.1 * mu * min(10.0, 2 * 0.9 * 0.9 / L)) ** 5)
    gaps = theory.suboptimality(data, algorithms.fedli_ls(eta_max=10.0), local_steps=5, rounds=8)
    x_star = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1)
    assert gaps[0] == pytest.approx(float(0.5 * y.square().mean() - 0.5 * (A @ x_star - y).square().mean()))
    assert all(after <= bound * before + 1e-14 for before, after in zip(gaps, gaps[1:]) if before > 1e-12)


def test_fedli_explorer_moves_only_the_baselines() -> None:
    import matplotlib.pyplot as plt

    curves = {}
    for lr in (0.01, 1.0):
        fedli_explore.explore_fedli(client_lr=lr, rounds=4)
        left = plt.gcf().axes[0]
        curves[lr] = {line.get_label().split(":")[0].split(" (")[0]: line.get_ydata().tolist()
                      for line in left.get_lines() if not line.get_label().startswith("_")}
        plt.close("all")
    assert curves[0.01]["FedLi-LS"] == curves[1.0]["FedLi-LS"] and curves[0.01]["FedLi-LU"] == curves[1.0]["FedLi-LU"]
    assert curves[0.01]["FedAvg"] != curves[1.0]["FedAvg"]


def test_descent_display_keeps_then_draws_the_gap_the_clients_and_the_server_iterate() -> None:
    import matplotlib.pyplot as plt

    run = theory.two_client_run(rounds=3)
    display = figures.DescentDisplay.from_runs([1.0, 0.1, 0.01], 0.5, run, x_star=10 / 101)
    assert display.run is run and display.gaps == [1.0, 0.1, 0.01] and display.bound == 0.5
    left, middle, right = display.plot().axes_
    assert list(left.get_lines()[1].get_ydata()) == pytest.approx([1.0, 0.5, 0.25])  # the bound's geometric rate
    colours: dict[str, set] = {}
    for line in middle.get_lines()[1:]:  # each client's before and after
        colours.setdefault(line.get_label()[:8], set()).add(line.get_color())
    assert sorted(colours) == ["client 1", "client 2"] and all(len(c) == 1 for c in colours.values())
    assert colours["client 1"] != colours["client 2"]
    assert list(right.get_lines()[0].get_ydata()) == run.x and right.get_lines()[1].get_ydata()[0] == 10 / 101
    plt.close(display.figure_)
