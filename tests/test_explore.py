"""fedcore.plots draws only; fedcore.explore computes, then draws (CONTRIBUTING.md's split)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fedcore
from papers.fafed import explore as fafed_explore
from papers.fedli import explore as fedli_explore
from papers.fedopt import explore as fedopt_explore
from papers.padamfed import explore as padamfed_explore

PACKAGE = Path(fedcore.__file__).resolve().parent
COMPUTING = ("fedcore.algorithms", "fedcore.counterexample", "fedcore.toy", "fedcore.run", "fedcore.params",
             "fedcore.explore", "papers")


def _runtime_imports(path: Path, every: bool = False) -> list[str]:
    """Modules imported by ``path`` outside ``if TYPE_CHECKING:`` blocks (``every``: inside them too)."""
    tree = ast.parse(path.read_text())
    guarded = [block for block in ast.walk(tree)
               if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")]
    skipped = set() if every else {id(node) for block in guarded for statement in block.body
                                   for node in ast.walk(statement)}
    names = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def test_plots_imports_nothing_that_computes():
    imported = _runtime_imports(PACKAGE / "plots.py")
    assert "matplotlib.pyplot" in imported  # the check sees the imports
    offending = [name for name in imported if name.startswith(COMPUTING)]
    assert not offending, f"fedcore/plots.py imports {offending} at runtime: it must only draw"


def test_explore_computes_with_the_library_and_draws_with_plots():
    imported = _runtime_imports(PACKAGE / "explore.py")
    assert {"fedcore.plots", "fedcore.toy.server_optimizer_path"} <= set(imported)


def test_the_library_imports_no_paper():
    """The papers sit on fedcore, never the other way: no module of ``fedcore/`` imports ``papers`` (the
    papers' explorers, ``papers.<paper>.explore``, are built from :mod:`fedcore.explore`'s parts)."""
    found = [f"{path.relative_to(PACKAGE.parent)}: {name}" for path in sorted(PACKAGE.rglob("*.py"))
             for name in _runtime_imports(path, every=True) if name == "papers" or name.startswith("papers.")]
    assert not found, found
    assert "papers.fafed.figures" in _runtime_imports(PACKAGE.parent / "papers" / "fafed" / "explore.py", every=True)


# The sentences beside the counterexample explorer in 04_fafed, checked at the corners of its sliders
# (eta 0.01..1, beta 0..0.99, q 1..20, rho 1e-4..1, alpha 0.05..1).
SLIDER_CORNERS = [(eta, beta, q) for eta in (0.01, 1.0) for beta in (0.0, 0.99) for q in (1, 20)]


def test_naive_average_ends_farther_from_0_whatever_the_sliders() -> None:
    """'Whatever you choose, the naive average ends farther from 0 than it started', after 50 and after 300
    steps at every corner; and 'a single step can move it back' (eta = 1, beta = 0.99, q = 20) is true too."""
    from fedcore import counterexample
    from fedcore.algorithms import local_adaptive

    for eta, beta, q in SLIDER_CORNERS:
        for steps in (50, 300):
            trajectory = counterexample.run(local_adaptive(eta, beta=beta), max(1, steps // q), q)
            assert trajectory.final() > 10, (eta, beta, q, steps)
    dipping = counterexample.run(local_adaptive(1.0, beta=0.99), 3, 20).frame["mean"].diff()
    assert bool((dipping < 0).any())


def test_fafed_comes_down_for_small_steps_and_can_fail_to_for_large_ones() -> None:
    """'With eta <= 0.1 FAFED comes down from 10 for every beta, q, rho and alpha on the sliders; with
    eta = 1 and a long period it can end above its start': both halves, at the corners."""
    from fedcore import counterexample
    from fedcore.algorithms import fafed

    for eta, beta, q in SLIDER_CORNERS:
        if eta > 0.1:
            continue
        for rho in (1e-4, 1.0):
            for alpha in (0.05, 1.0):
                trajectory = counterexample.run(fafed(eta, alpha=alpha, beta=beta, rho=rho), max(1, 300 // q), q)
                assert trajectory.final() < 10, (eta, beta, q, rho, alpha)
    climbing = counterexample.run(fafed(1.0, alpha=1.0, beta=0.5, rho=1e-4), 300 // 20, 20)
    assert climbing.final() > 10


# ---- issue 10: what the explorers and figures of 00 and 04 rely on -------------------------------------


def test_sliders_used_is_what_each_optimizer_reads() -> None:
    """toy.SLIDERS_USED (the explorer greys out the rest) against behaviour: moving a slider an optimizer
    uses changes its path, moving one it does not use leaves the path bit for bit the same."""
    import torch

    from fedcore import toy

    base = {"server_lr": 0.1, "beta1": 0.9, "tau": 1e-3}
    moved = {"server_lr": 0.3, "beta1": 0.5, "tau": 1e-1}
    assert set(toy.SLIDERS_USED) == set(toy.SERVER_OPTIMIZERS)
    for optimizer in toy.SERVER_OPTIMIZERS:
        reference = toy.server_optimizer_path(optimizer, **base, rounds=15).frame[["x1", "x2"]].to_numpy()
        for name in base:
            path = toy.server_optimizer_path(optimizer, **{**base, name: moved[name]}, rounds=15)
            same = bool(torch.equal(torch.tensor(path.frame[["x1", "x2"]].to_numpy()), torch.tensor(reference)))
            assert same == (name not in toy.SLIDERS_USED[optimizer]), (optimizer, name)


def test_disable_unused_greys_out_what_the_choice_does_not_use() -> None:
    import ipywidgets as widgets

    from fedcore import explore, toy

    explorer = widgets.interactive(
        lambda optimizer, server_lr, tau, beta1, rounds: None,
        optimizer=widgets.Dropdown(options=toy.SERVER_OPTIMIZERS, value="sgd"),
        server_lr=widgets.FloatSlider(value=0.1), tau=widgets.FloatSlider(value=0.1),
        beta1=widgets.FloatSlider(value=0.5), rounds=widgets.fixed(50))
    explore.disable_unused(explorer, toy.SLIDERS_USED)
    disabled = lambda: {w._kwarg for w in explorer.kwargs_widgets if getattr(w, "disabled", False)}  # noqa: E731
    assert disabled() == {"tau", "beta1"}
    explorer.kwargs_widgets[0].value = "sgdm"
    assert disabled() == {"tau"}
    explorer.kwargs_widgets[0].value = "adam"
    assert disabled() == set()


def test_final_distance_map_is_the_runs_final_distances() -> None:
    from fedcore import counterexample
    from fedcore.algorithms import fafed, local_adaptive

    table = counterexample.final_distance_map(lambda eta: fafed(eta, alpha=0.5, beta=0.5), [0.01, 1.0], [1, 20], 100)
    assert list(table.index) == [0.01, 1.0] and list(table.columns) == [1, 20]
    # the map reads the server model (recorded); the traced run averages the clients' last models: equal to rounding
    assert table.loc[1.0, 20] == pytest.approx(abs(counterexample.run(fafed(1.0, alpha=0.5, beta=0.5), 5, 20).final()),
                                               rel=1e-12)
    assert table.loc[0.01, 1] < 10  # a small step comes down
    naive = counterexample.final_distance_map(lambda eta: local_adaptive(eta, beta=0.5), [0.01, 0.3], [1, 5], 100)
    assert (naive.to_numpy() > 10).all()  # the naive method climbs away at every point


def test_compare_keeps_coinciding_runs_visible_and_legend_is_optional() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd

    from fedcore import plots
    from fedcore.results import History

    frame = pd.DataFrame({"train_loss": [1.0, 0.5, 0.25]}, index=pd.Index([0, 1, 2], name="round"))
    same = {name: History(frame, name, "loop", {}) for name in ("FedAvg", "STEM", "FAFED")}
    ax = plots.compare(same, "train_loss", legend=False)
    styles = {(line.get_linestyle(), line.get_marker()) for line in ax.get_lines()}
    assert len(styles) == 3 and ax.get_legend() is None
    assert plots.compare(same, "train_loss").get_legend() is not None


def test_distance_map_prints_every_cell_and_outlines_those_above_the_start() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import pandas as pd


    table = pd.DataFrame({1: [0.5, 12.0], 5: [3.0, 25.0]}, index=pd.Index([0.1, 1.0], name="eta"))
    from papers.fafed import figures as fafed_figures

    ax = fafed_figures.DistanceMapDisplay(table).plot(title="map").axes_[0]
    assert [text.get_text() for text in ax.texts] == ["0.5", "3", "12", "25"]
    assert len(ax.patches) == 2 and tuple(ax.figure.get_size_inches()) == (6, 3.8)
    assert fafed_figures.DistanceMapDisplay(table).summary() == (
        "1 of 4 runs end within 1 of the optimum 0 (inside the quadratic piece)\n"
        "2 end farther from 0 than the start x0=10: eta=1, q=1; eta=1, q=5")


def test_warm_up_changes_no_result() -> None:
    """Warming up (one gradient and one evaluation) leaves a later run's history exactly the same."""
    import torch

    from fedcore import algorithms, models
    from fedcore.data import FederatedData

    generator = torch.Generator().manual_seed(0)
    inputs, targets = torch.randn(40, 8, generator=generator), torch.arange(40) % 3
    data = FederatedData(inputs, targets, torch.tensor([10, 10, 20]), inputs[:8], targets[:8], 3)
    problem = fedcore.Problem(data, models.make("mlp", (8,), 3, hidden=(16,), dropout=0.3))
    options = dict(rounds=3, clients_per_round=2, local_steps=2, batch_size=4, progress=False)
    cold = fedcore.simulate(problem, algorithms.fedavg(0.1), **options)
    assert fedcore.warm_up(problem) > 0
    warm = fedcore.simulate(problem, algorithms.fedavg(0.1), **options)
    columns = ["train_loss", "test_loss", "test_accuracy"]
    assert cold.frame[columns].equals(warm.frame[columns])


def _blobs_problem():
    import torch

    from fedcore import models
    from fedcore.data import FederatedData

    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(120) % 3
    inputs = 2 * torch.eye(3)[labels].repeat(1, 2) + torch.randn(120, 6, generator=generator)
    data = FederatedData(inputs, labels, torch.full((6,), 20), inputs[:30], labels[:30], 3)
    return fedcore.Problem(data, models.make("logistic_regression", (6,), 3, seed=0))


def test_fedopt_explorer_sliders_used_are_what_each_method_reads() -> None:
    """FEDOPT_METHODS (the explorer greys out the rest) against behaviour on a small run: a used slider
    changes the final model, an unused one leaves it bit for bit the same."""
    import torch


    problem = _blobs_problem()
    base = {"client_lr": 0.1, "server_lr": 0.03, "tau": 1e-3, "beta1": 0.9, "beta2": 0.99}
    moved = {"client_lr": 0.2, "server_lr": 0.1, "tau": 1e-1, "beta1": 0.5, "beta2": 0.9}
    options = dict(rounds=4, clients_per_round=3, local_steps=2, batch_size=5, progress=False)
    for method, used in fedopt_explore.FEDOPT_METHODS.items():
        final = fedcore.simulate(problem, fedopt_explore.fedopt_algorithm(method, **base), **options).final_state["x"]
        for name in base:
            other = fedcore.simulate(problem, fedopt_explore.fedopt_algorithm(method, **{**base, name: moved[name]}),
                                     **options).final_state["x"]
            assert torch.equal(final, other) == (name not in used), (method, name)
    assert fedopt_explore.fedopt_algorithm("fedavgm", **base).server.beta == 0.9


def test_fedopt_explorer_runs_headless_against_fedavg() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    assert fedopt_explore.explore_fedopt("fedyogi", rounds=5, problem=_blobs_problem()) is None
    left, right = plt.gcf().axes[:2]
    legend = plt.gcf().legends[0]  # one, beside both panels, with each run's final test accuracy
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels[0].startswith("fedyogi: ") and labels[1].startswith("fedavg (server lr 1): ")
    assert legend.get_title().get_text() == "final test accuracy" and right.get_legend() is None
    assert left.get_ylabel() == "test accuracy" and right.get_yscale() == "log"
    plt.close("all")
    fedli_explore.explore_fedli(client_lr=0.1, rounds=2, problem=_blobs_problem())  # 03's tables give accuracy in %
    left = plt.gcf().axes[0]
    labels = [text.get_text() for text in plt.gcf().legends[0].get_texts()]
    assert left.get_ylabel() == "test accuracy (%)" and all(label.endswith("%") for label in labels)
    assert left.yaxis.get_major_formatter()(0.5, 0) == "50"
    plt.close("all")


def test_fedopt_explorer_takes_a_tasks_settings_and_smooths_the_loss() -> None:
    """``settings`` replace the live run's round options (the run equals simulate with them); ``smooth`` draws the
    training loss's running mean over that many rounds, and the axis says so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd


    problem, settings = _blobs_problem(), {"clients_per_round": 3, "local_steps": 2, "batch_size": 10,
                                           "eval_every": 2, "weighting": "uniform"}
    fedopt_explore.explore_fedopt("fedadam", rounds=6, problem=problem, settings=settings, smooth=3)
    right = plt.gcf().axes[1]
    assert right.get_ylabel() == "train loss, mean of the last 3"
    algorithm = fedopt_explore.fedopt_algorithm("fedadam", 0.1, 0.01)
    run = fedcore.simulate(problem, algorithm, 6, progress=False, **settings)
    expected = run.frame["train_loss"].dropna().rolling(3, min_periods=1).mean()
    drawn = right.get_lines()[0]
    np.testing.assert_allclose(drawn.get_ydata(), expected.to_numpy(), rtol=1e-6)
    assert list(drawn.get_xdata()) == list(expected.index)
    assert pd.Series(run.frame["test_accuracy"].dropna().index).tolist() == [0, 2, 4, 6]  # eval_every came through
    plt.close("all")
    with pytest.raises(ValueError, match="settings has \\['rounds'\\]"):
        fedopt_explore.explore_fedopt("fedadam", rounds=6, problem=problem, settings={"rounds": 3})
    with pytest.raises(ValueError, match="smooth=0 must be an int >= 1"):
        fedopt_explore.explore_fedopt("fedadam", rounds=2, problem=problem, smooth=0)


def test_explorers_read_a_setting_drawn_before_from_the_store(tmp_path) -> None:
    """With ``store`` an explorer keeps its runs, and drawing the same setting again reads them back (the same
    figure, nothing recomputed); another slider value adds its own runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from fedcore.store import Store

    runs = Store(tmp_path / "runs.sqlite", keep_models=False)
    drawn = []
    for call in [lambda: fafed_explore.explore_counterexample(eta=0.1, q=5, steps=50, store=runs),
                 lambda: fedopt_explore.explore_fedopt("fedadam", rounds=4, problem=_blobs_problem(), store=runs),
                 lambda: fedli_explore.explore_fedli(client_lr=0.1, rounds=3, problem=_blobs_problem(), store=runs),
                 lambda: padamfed_explore.explore_padamfed(4, 2, 6, problem=_blobs_problem(), store=runs)]:
        before = len(runs)
        for _ in range(2):
            call()
            lines = [line.get_ydata() for ax in plt.gcf().axes for line in ax.get_lines()]
            drawn.append(lines)
            plt.close("all")
        added = len(runs) - before
        assert added >= 2, added  # each explorer draws at least two runs, each kept once
        assert len(drawn[-1]) == len(drawn[-2]) and all(np.array_equal(a, b) for a, b in zip(drawn[-1], drawn[-2]))
    fafed_explore.explore_counterexample(eta=0.2, q=5, steps=50, store=runs)
    plt.close("all")
    assert len(runs) == before + added + 2


# ---- what a student sees: readouts and ticks (tests/test_browser.py checks them in a browser) --------------------


def test_grid_options_label_each_value_with_three_digits_and_keep_the_values() -> None:
    from fedcore import explore

    values = [10 ** -2.5, 10 ** -2, 10 ** -1.5, 10 ** -0.5, 1.0]
    options = explore.grid_options(values)
    assert [label for label, _ in options] == ["0.00316", "0.01", "0.0316", "0.316", "1"]
    assert [value for _, value in options] == values  # the slider's value stays the grid's float
    with pytest.raises(ValueError, match="give the same label twice"):
        explore.grid_options([0.1, 0.10001])


@pytest.mark.parametrize("scale, limits", [("symlog", (0.0131, 0.0142)), ("symlog", (0.5, 0.9)),
                                           ("symlog", (20.0, 60.0))])
def test_ensure_labelled_ticks_gives_a_narrow_axis_two_labels(scale, limits) -> None:
    """A symlog axis spanning less than a decade (04's f(x_bar_t) at a small step) labels no tick (a log axis
    labels its minor ticks there, a linear one takes an offset); afterwards it labels at least two, inside its view,
    and a wide axis keeps its own ticks."""
    import matplotlib.pyplot as plt

    from fedcore import plots

    figure, (narrow, wide) = plt.subplots(1, 2)
    narrow.plot([0, 1], limits)
    narrow.set_yscale(scale, linthresh=1e-2)
    narrow.set_ylim(*limits)
    wide.plot([0, 1], [1e-3, 1e3])
    wide.set_yscale("log")
    wide_ticks = list(wide.yaxis.get_major_locator()())
    assert plots.labelled_ticks(narrow.yaxis) < 2  # the defect, as matplotlib labels it
    plots.ensure_labelled_ticks(figure)
    figure.canvas.draw()
    shown = [label.get_text() for label in narrow.get_yticklabels() if label.get_text()]
    assert len(set(shown)) >= 2 and plots.labelled_ticks(narrow.yaxis) >= 2
    low, high = sorted(narrow.get_ylim())
    assert all(low <= tick <= high for tick in narrow.get_yticks())
    assert list(wide.yaxis.get_major_locator()()) == wide_ticks
    plt.close(figure)


def test_ensure_labelled_ticks_leaves_hidden_labels_hidden() -> None:
    """A shared axis's hidden labels and a colour bar's short side (no ticks at all) stay as they are."""
    import matplotlib.pyplot as plt
    import numpy as np

    from fedcore import plots

    figure, (left, right) = plt.subplots(1, 2, sharey=True)
    for ax in (left, right):
        ax.plot([0, 1], [0.0131, 0.0132])
        ax.set_yscale("symlog", linthresh=1e-2)
    bar = figure.colorbar(right.imshow(np.eye(2)), ax=right)
    plots.ensure_labelled_ticks(figure)
    figure.canvas.draw()
    assert right.yaxis.get_tick_params().get("labelleft") is False  # the shared side stays unlabelled
    assert plots.labelled_ticks(left.yaxis) >= 2
    assert [label.get_text() for label in bar.ax.get_xticklabels()] == []  # the bar's short side: no ticks
    plt.close(figure)


def test_counterexample_explorer_labels_every_axis_at_every_step_size_of_its_slider() -> None:
    """Notebook 04's slider: eta = 10^-2 .. 1 in steps of 10^0.1 (eta = 0.0126 labelled one y tick before): every
    axis of the figure shows at least two labelled ticks, at each position."""
    import matplotlib.pyplot as plt
    import numpy as np

    from fedcore import plots

    for eta in 10 ** np.arange(-2, 0.01, 0.1):
        fafed_explore.explore_counterexample(eta=float(eta), beta=0.5, q=5, steps=300)
        figure = plt.gcf()
        figure.canvas.draw()
        for ax in figure.axes:
            for axis in (ax.xaxis, ax.yaxis):
                assert plots.labelled_ticks(axis) >= 2, (f"eta={eta:.3g}", ax.get_ylabel(), ax.get_xlabel())
        plt.close("all")
