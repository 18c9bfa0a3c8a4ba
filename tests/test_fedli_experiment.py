"""Notebook 03's experiment definitions (papers.fedli.experiment), on the common layer."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from conftest import cifar_like_loader

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate
from papers import common
from papers.claims import Scope, trivial_baseline
from papers.common import ROUND_SETTINGS, Results, Selection, Task, Tuning
from papers.fedli import experiment
from papers.fedli import paper as fedli_paper

CHOSEN = {"FedAvg": {"client_lr": 0.1}, "FedProx": {"client_lr": 0.1, "mu": 0.01}, "SCAFFOLD": {"client_lr": 0.1},
          "FedAdam": {"client_lr": 0.1, "server_lr": 0.01}, "FedExP": {"client_lr": 0.1, "eps": 0.01},
          "FedLi-LU": {"client_lr": 0.1}}
SMOKE = experiment.SCALES["smoke"]


def _bound(task: Task) -> dict:
    return common.bind(experiment.make_builders(task, "smoke"), CHOSEN)


@pytest.fixture(scope="module")
def femnist() -> Task:
    return experiment.tasks("smoke")["femnist"]


def test_femnist_stand_in_task(femnist) -> None:
    data = femnist.data
    assert femnist.name == "femnist" and data.num_clients == 100 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 0.5} and data.info["stands_for"] == "FEMNIST"
    assert femnist.problem(0).x0().numel() == 784 * 64 + 64 + 64 * 10 + 10  # the MLP below paper scale
    assert "MLP" in femnist.model_label
    assert femnist.metric == "test_accuracy" and femnist.higher_is_better and femnist.unit == 100.0  # in %
    assert femnist.baseline == trivial_baseline(data) and 10.0 <= femnist.baseline < 30.0  # the most frequent class
    assert femnist.selection == Selection("train_loss", 1, higher_is_better=False, rounds=2, eval_every=0)
    assert experiment.epoch_steps(data) == math.ceil(600 / 32)  # one epoch of the mean client (600)
    assert dict(femnist.settings) == {"rounds": 3, "clients_per_round": 10, "local_steps": 2, "batch_size": 32,
                                      "eval_every": 3, "weighting": "samples"}
    assert set(femnist.settings) == set(ROUND_SETTINGS)
    small = experiment.SCALES["small"]
    assert (small.rounds, small.tune_rounds, small.max_local_steps, small.test_samples) == (40, 10, 5, None)
    seeds = {scale: experiment.SCALES[scale].seeds_or() for scale in ("smoke", "small", "paper")}
    assert seeds == {"smoke": [0, 1], "small": [0, 1, 2, 3, 4], "paper": [0, 1, 2, 3, 4]}
    tuning = {name: scale.tuning_seeds for name, scale in experiment.SCALES.items()}  # apart from the judging seeds
    assert tuning == {"smoke": (100,), "small": (100, 101), "medium": (100, 101, 102), "paper": (100, 101, 102)}
    with pytest.raises(ValueError, match=r"tuning_seeds=\[100\] share seeds \[100\]"):
        dataclasses.replace(SMOKE, seeds=(0, 100))
    assert small.seeds_or([4, 7]) == [4, 7]
    paper = dataclasses.replace(experiment.SCALES["paper"], tasks=("femnist",))  # another set: the caller's scale
    assert paper.rounds == 500 and paper.max_local_steps is None  # the full epoch
    paper_task = experiment.tasks(paper)["femnist"]
    assert paper_task.problem(0).x0().numel() > 10**6 and "CNN" in paper_task.model_label  # the CNN
    assert paper_task.settings["local_steps"] == experiment.epoch_steps(paper_task.data)
    assert len(paper_task.data.test_targets) == 10_000  # the whole test set
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.tasks("huge")
    with pytest.raises(ValueError, match="tasks='emnist' not one of"):
        experiment.tasks(dataclasses.replace(SMOKE, tasks=("emnist",)))
    with pytest.raises(ValueError, match="seeds"):
        small.seeds_or([1, 1])


def test_the_long_horizon_is_the_task_with_the_papers_rounds(femnist) -> None:
    long = experiment.long_task(femnist, "smoke")
    assert long.name == "femnist (long)" and long.data is femnist.data
    assert dict(long.settings) == {**femnist.settings, "rounds": 4, "eval_every": 2}
    assert experiment.SCALES["small"].long == {"rounds": 500, "eval_every": 50}  # the paper's 500 rounds


def test_the_task_runs_as_the_data_model_and_options_did_before(femnist) -> None:
    """The runs of a Task are those the notebook made before it moved onto the common layer: Fashion-MNIST by
    Dirichlet(0.5) from the partition seed, the MLP drawn from each run's seed, simulate's default (sample)
    weighting; each seed its own model and clients."""
    data = load_fashion_mnist(100, "dirichlet", 0, alpha=0.5).test_subset(200, 0)
    runs = experiment.run(femnist, {"FedAvg": _bound(femnist)["FedAvg"]}, [0, 1], alone=True)["femnist"]["FedAvg"]
    for seed, after in zip((0, 1), runs):
        problem = Problem(data, models.make("mlp", (1, 28, 28), 10, seed=seed, hidden=(64,)))
        before = simulate(problem, algorithms.fedavg(0.1), rounds=3, clients_per_round=10, local_steps=2,
                          batch_size=32, eval_every=3, seed=seed, progress=False)
        pd.testing.assert_frame_equal(before.frame.drop(columns="seconds"), after.frame.drop(columns="seconds"))
    assert runs[0].final("train_loss") != runs[1].final("train_loss")


def test_a_tasks_scope_says_the_task_scale_rounds_seeds_and_model(femnist) -> None:
    scope = common.scope({"femnist": femnist}, "smoke", [0], femnist.model_label)  # as the notebook builds them
    assert scope == Scope(("femnist",), "smoke", 3, (0,), femnist.model_label)
    assert str(scope).startswith("femnist; smoke (a 784-64-10 MLP") and str(scope).endswith("; 3 rounds; 1 seed (0)")


def test_grids_and_their_smoke_points() -> None:
    sizes = {method: math.prod(len(values) for values in grid.values()) for method, grid in experiment.GRIDS.items()}
    assert sizes == {"FedAvg": 5, "FedProx": 15, "SCAFFOLD": 5, "FedAdam": 15, "FedExP": 15}
    assert experiment.GRIDS["FedAdam"] == {"client_lr": [10**k for k in (-2.0, -1.5, -1.0, -0.5, 0.0)],
                                           "server_lr": [0.01, 10**-1.5, 0.1]}  # half-decades
    smoke = common.grids_at("smoke", experiment.GRIDS)  # each list's ends
    assert smoke["FedAdam"] == {"client_lr": [0.01, 1.0], "server_lr": [0.01, 0.1]}


def test_tune_keeps_the_lowest_mean_final_training_loss_over_the_seeds(femnist) -> None:
    """The task's Selection: the final training loss of a run of tune_rounds rounds without test evaluations, the
    point with the lowest mean over the seeds chosen (common.tune)."""
    assert experiment.tune is common.tune and experiment.run is common.run
    tuning = experiment.tune(femnist, experiment.make_builders(femnist, "smoke"),
                             {"FedAvg": {"client_lr": [0.001, 0.1]}}, [0, 1])
    assert isinstance(tuning, Tuning)
    tuning_run = {**femnist.settings, "rounds": 2, "eval_every": 0}  # smoke's tune_rounds
    starts = femnist.initial([0, 1])
    losses = {(lr, seed): simulate(femnist.problem(0), algorithms.fedavg(lr), seed=seed, x0=starts[seed],
                                   progress=False, **tuning_run).final("train_loss")
              for lr in (0.001, 0.1) for seed in (0, 1)}
    means = {lr: (losses[(lr, 0)] + losses[(lr, 1)]) / 2 for lr in (0.001, 0.1)}
    assert tuning.chosen["FedAvg"] == {"client_lr": min(means, key=means.get)}
    assert all(type(value) is float for value in tuning.chosen["FedAvg"].values())  # printed as 0.1, not np.float64
    assert tuning.tables["FedAvg"].loc[0.1, 1] == pytest.approx(losses[(0.1, 1)])  # one column per seed
    assert tuning.tables["FedAvg"].loc[0.001, "score"] == pytest.approx(means[0.001])


def test_builders_make_the_seven_methods_in_table_order_then_the_server_rules(femnist) -> None:
    built = {method: build() for method, build in _bound(femnist).items()}
    assert list(built) == [*fedli_paper.METHODS, *list(experiment.SERVER_STEP_RULES)[1:]]
    assert {m: built[m].name for m in fedli_paper.METHODS} == {m: m for m in fedli_paper.METHODS}
    ls = built["FedLi-LS"]  # SLS's constants, the growth over each client's epoch, the non-convex server rule
    assert (ls.server_step_size, ls.eta_max, ls.init_step_size, ls.batches_per_epoch, ls.c) == \
        ("max_client_step", 10.0, 1.0, None, 0.1)
    assert built["FedLi-LU"].client_lr == 0.1 and built["FedProx"].correction.mu == 0.01
    assert experiment.fedli_ls(eta_max=1.0).eta_max == 1.0 and experiment.fedli_ls().server_step_size == \
        "max_client_step"
    assert built["FedLi-LS (server step 1)"].server_step_size == "one"
    with pytest.raises(TypeError, match="client_lr"):  # a baseline without its point
        common.bind(experiment.make_builders(femnist, "smoke"), {})["FedAvg"]()


def _history(rows: list[dict], algorithm: str = "x") -> History:
    return History(pd.DataFrame(rows).set_index("round"), algorithm, "loop", {})


def _run(accuracies: list[float], losses: list[float], seconds: float, **columns: list[float]) -> History:
    rows = [{"round": r + 1, "test_accuracy": a, "train_loss": loss, "seconds": seconds,
             **{k: v[r] for k, v in columns.items()}} for r, (a, loss) in enumerate(zip(accuracies, losses))]
    return _history(rows)


def test_scores_tables_and_costs_by_hand(femnist) -> None:
    """Table 1's score is the mean test accuracy (%) over the last four evaluations, Table 2's the training loss over
    the same rounds (Results.scores); the cells are mean ± sd over seeds; the cost ratio is the median of the
    per-seed ratios."""
    avg = [_run([0.1, 0.5, 0.6, 0.7, 0.8], [3.0, 2.0, 1.0, 1.0, 1.0], 1.0),
           _run([0.1, 0.5, 0.6, 0.7, 0.6], [3.0, 2.0, 2.0, 2.0, 2.0], 2.0),
           _run([0.1, 0.1, 0.1, 0.1, 0.1], [3.0, 3.0, 3.0, 3.0, 3.0], 1.0)]
    ls = [_run([0.2] * 5, [1.0] * 5, s, loss_evaluations_per_step=[2.0] * 5, client_step_mean=[0.5] * 5,
               client_step_min=[0.1] * 5, client_step_max=[m] * 5) for s, m in ((3.0, 1.0), (2.0, 2.0), (5.0, 3.0))]
    results = Results({"femnist": {"FedAvg": avg, "FedLi-LS": ls}}, (0, 1, 2), {"femnist": femnist})
    accuracy = results.scores()
    assert accuracy.loc[("femnist", "FedAvg")].tolist() == pytest.approx([65.0, 60.0, 10.0])  # rounds 2-5
    assert accuracy.loc[("femnist", "FedLi-LS")].tolist() == pytest.approx([20.0] * 3)
    assert results.scores("train_loss").loc[("femnist", "FedAvg")].tolist() == pytest.approx([1.25, 2.0, 3.0])
    assert results.mean_sd().loc["FedAvg", "femnist"] == f"45.00 ± {np.std([65, 60, 10], ddof=1):.2f}"
    assert results.means().loc["femnist", "FedAvg"] == pytest.approx(45.0)
    cost = experiment.line_search_cost(results["femnist"])
    assert cost.loc["FedLi-LS", "relative to FedAvg"] == pytest.approx(3.0)  # the median of 3, 1 and 5
    assert cost.loc["FedLi-LS", "seconds per round"] == 3.0 and cost.loc["FedAvg", "relative to FedAvg"] == 1.0
    assert cost.loc["FedLi-LS", "loss evaluations per step"] == 2.0 and cost.loc["FedLi-LS", "client step max"] == 2.0
    assert math.isnan(cost.loc["FedAvg", "loss evaluations per step"])
    with pytest.raises(ValueError, match="needs FedAvg's runs"):
        experiment.line_search_cost({"FedLi-LS": ls})


def test_server_rules_run_beside_table_1s_and_are_paired_against_it(femnist) -> None:
    def runs(values: list[float], step: float) -> list[History]:
        return [_run([v / 100] * 4, [1.0] * 4, 1.0, eta_g=[step] * 4) for v in values]

    rules = list(experiment.SERVER_STEP_RULES)
    made = Results({"femnist": dict(zip(rules, (runs([50.0, 60.0, 70.0], 0.5), runs([51.0, 59.0, 72.0], 1.0))))},
                   (0, 1, 2), {"femnist": femnist})
    paired = made.paired("FedLi-LS")
    # +1, -1, +2: mean 0.67, sd 1.53, ± 4.303 * 1.53 / sqrt(3) = ± 3.79, p 0.529 (t 0.76, 2 df); 23 seeds: 2.074 *
    # 1.53 / sqrt(23) = 0.66 < 0.67
    assert paired.loc["femnist", rules[1]] == "+0.67 [-3.13, +4.46], p 0.529; ~23 seeds would decide (within the noise)"
    assert experiment.server_steps(made)["mean"].tolist() == pytest.approx([0.5, 1.0])
    assert made.mean_sd().loc["FedLi-LS", "femnist"] == "60.00 ± 10.00"
    one_round = dataclasses.replace(femnist, settings={**femnist.settings, "rounds": 1, "eval_every": 1})
    built = experiment.run(one_round, _bound(femnist), [0], alone=True)["femnist"]
    assert list(built) == [*fedli_paper.METHODS, *rules[1:]]
    assert built["FedLi-LS (server step 1)"][0].final("eta_g") == 1.0
    assert all(not runs[0].diverged for runs in built.values())
    assert built["FedLi-LS"][0].final("loss_evaluations_per_step") >= 1


def test_the_shakespeare_code_path() -> None:
    """Shakespeare runs at paper scale only; its task (the LSTM on the plays' roles) is built the same way."""
    shakespeare = experiment.tasks(dataclasses.replace(SMOKE, tasks=("shakespeare",)))["shakespeare"]
    lstm = shakespeare.problem(0)
    assert lstm.x0().dtype == torch.float32 and shakespeare.data.num_clients == 10
    assert "LSTM" in shakespeare.model_label and experiment.SCALES["paper"].tasks[1] == "shakespeare"
    one = simulate(lstm, experiment.fedli_ls(), **{**shakespeare.settings, "rounds": 1, "local_steps": 1,
                                                   "eval_every": 1, "progress": False})
    assert math.isfinite(one.final("train_loss"))


def test_client_rate_sweep_runs_each_rate_and_seed_as_table_1_does(femnist) -> None:
    table = experiment.client_rate_sweep(femnist, CHOSEN, [0, 1], rates=[0.1, 1.0])  # outward from 0.1, the chosen
    assert list(table.columns) == [(m, s) for m in ("FedLi-LU", "FedAvg", "FedExP") for s in (0, 1)]
    assert list(table.index) == [0.1, 1.0] and table.index.name == "client SGD rate"
    assert list(experiment.client_rate_sweep(femnist, CHOSEN, [0], methods=["FedAvg"], rates=[0.1]).columns) == \
        [("FedAvg", 0)]
    with pytest.raises(ValueError, match="methods='FedAdam' not one of"):
        experiment.client_rate_sweep(femnist, CHOSEN, [0], methods=["FedAdam"], rates=[0.1])
    starts = femnist.initial([0, 1])
    for method, build in {"FedLi-LU": lambda: algorithms.fedli_lu(1.0), "FedAvg": lambda: algorithms.fedavg(1.0),
                          "FedExP": lambda: algorithms.fedexp(1.0, eps=0.01)}.items():
        direct = simulate(femnist.problem(0), build(), seed=1, x0=starts[1], progress=False, **femnist.settings)
        assert table.loc[1.0, (method, 1)] == pytest.approx(100 * common.window_score(direct, "test_accuracy"))
    assert table.loc[0.1, ("FedLi-LU", 0)] != table.loc[1.0, ("FedLi-LU", 0)]  # its clients' rate matters


def test_constant_sweep_runs_fedli_at_each_value(femnist) -> None:
    starts = femnist.initial([0, 1])
    table = experiment.constant_sweep(femnist, "FedLi-LS c", [0, 1])
    assert list(table.index) == experiment.CONSTANTS["FedLi-LS c"]["values"] and list(table.columns) == [0, 1]
    direct = simulate(femnist.problem(0), experiment.fedli_ls(c=0.3), seed=0, x0=starts[0], progress=False,
                      **femnist.settings)
    assert table.loc[0.3, 0] == pytest.approx(femnist.score(direct))
    shrink = experiment.constant_sweep(femnist, "FedLi-LS 1 - beta_b", [0])  # swept as 1 - beta_b
    direct = simulate(femnist.problem(0), experiment.fedli_ls(backtrack=0.5), seed=0, x0=starts[0], progress=False,
                      **femnist.settings)
    assert shrink.loc[0.5, 0] == pytest.approx(femnist.score(direct)) and shrink.index.name == "shrink"
    lu = experiment.constant_sweep(femnist, "FedLi-LU eta (DFW)", [0, 1], client_lr=0.1)
    direct = simulate(femnist.problem(0), algorithms.fedli_lu(0.1, eta=0.1), seed=1, x0=starts[1], progress=False,
                      **femnist.settings)
    assert lu.loc[0.1, 1] == pytest.approx(femnist.score(direct))
    momentum = experiment.constant_sweep(femnist, "FedLi-LU 1 - mu (DFW)", [1], client_lr=0.1)  # swept as 1 - mu
    direct = simulate(femnist.problem(0), algorithms.fedli_lu(0.1, mu=0.5), seed=1, x0=starts[1], progress=False,
                      **femnist.settings)
    assert momentum.loc[0.5, 1] == pytest.approx(femnist.score(direct)) and momentum.index.name == "damping"
    with pytest.raises(ValueError, match="needs client_lr"):
        experiment.constant_sweep(femnist, "FedLi-LU eta (DFW)", [0])
    with pytest.raises(ValueError, match="constant='mu' not one of"):
        experiment.constant_sweep(femnist, "mu", [0])


def test_span_table_by_hand() -> None:
    """The good span around the value a user runs with, contiguous, each end carried on to where the scores cross
    the threshold (linear in log10): seed 0 [10, 76, 78, 77, 11] around 0.1 within 3 of its 78: 0.01..1 and 1/66,
    2/66 beyond: 2.045; seed 1 [10, 70, 78, 76, 11]: 0.1..1, 3/8 and 1/65 beyond: 1.390.  Against a best method's
    80 (threshold 77): seed 0 0.1..1, 1/2 towards 0.01, 0 beyond 1: 1.5; seed 1 1/8 + 1/2 = 0.625.  0 when the
    value itself is not within (it must be tuned)."""
    values = [0.001, 0.01, 0.1, 1.0, 10.0]
    default_good = pd.DataFrame({0: [10.0, 76.0, 78.0, 77.0, 11.0], 1: [10.0, 70.0, 78.0, 76.0, 11.0]}, index=values)
    default_bad = pd.DataFrame({0: [80.0, 70.0, 60.0, 79.0, 78.0], 1: [80.0, 70.0, 60.0, 79.0, 78.0]}, index=values)
    best = {"a": {0: 80.0, 1: 80.0}, "b": {0: 80.0, 1: 80.0}}
    table = experiment.span_table({"a": default_good, "b": default_bad}, {"a": 0.1, "b": 0.1}, best)
    assert table.loc["a", "own best: width per seed (decades)"] == "2.05, 1.39"
    assert table.loc["a", "own best: mean"] == pytest.approx(1.72)
    assert table.loc["a", "best method: width per seed"] == "1.50, 0.62" and table.loc["a", "best method: mean"] == 1.06
    assert table.loc["b", "own best: width per seed (decades)"] == "0.00, 0.00"
    assert table.loc["b", "best value"] == 0.001
    assert table.loc["b", "at 'around' (%)"] == 60.0
    rates = pd.concat({"FedAvg": default_good}, axis=1)
    assert common.best_value(rates, "FedAvg") == 0.1 == common.best_value(default_good)
    best = experiment.at_best({"a": default_good, "b": default_bad}, "a")
    assert best.loc["b", "best value"] == 0.001
    assert best.loc["b", "accuracy (%, mean ± sd)"] == "80.00 ± 0.00"
    column = "minus a (points, mean [95% interval], p)"
    assert best.loc["b", column] == "+2.00 [+2.00, +2.00], p < 0.001 (confirmed)" and best.loc["a", column] == "-"
    with pytest.raises(ValueError, match="reference='c' is not one of the tables"):
        experiment.at_best({"a": default_good}, "c")


@pytest.mark.parametrize("task, classes", [("cifar10", 10), ("cifar100", 100)])
def test_cifar_code_path_on_generated_tensors_of_the_same_shape(task, classes, monkeypatch) -> None:
    """At paper scale CIFAR runs with ResNet-18 and Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(classes))
    assert experiment.SCALES["paper"].tasks == ("femnist", "shakespeare", "cifar10", "cifar100")
    assert experiment.SCALES["small"].tasks == ("femnist",)
    built = experiment.tasks(dataclasses.replace(experiment.SCALES["paper"], tasks=(task,)))[task]
    data = built.data
    assert data.inputs.shape[1:] == (3, 32, 32) and data.num_clients == 100 and data.num_classes == classes
    assert data.info["partition_kwargs"] == {"alpha": 0.5} and built.model_label == ""  # the paper's model
    assert built.settings["rounds"] == 500 and built.settings["local_steps"] == experiment.epoch_steps(data)
    run = {**built.settings, "rounds": 1, "clients_per_round": 2, "local_steps": 1, "batch_size": 2, "eval_every": 1}
    history = simulate(built.problem(0), algorithms.fedavg(0.1), progress=False, **run)
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


def test_server_steps_by_hand() -> None:
    ls = [_history([{"round": 1, "eta_g": 0.2}, {"round": 2, "eta_g": 1.0}]),
          _history([{"round": 1, "eta_g": 1.5}, {"round": 2, "eta_g": 0.3}])]
    lu = [_history([{"round": 1, "gamma": 1.0}, {"round": 2, "gamma": 0.25}]),
          _history([{"round": 1, "gamma": 1.0}, {"round": 2, "gamma": 1.0}])]
    steps = experiment.server_steps({"femnist": {"FedLi-LS": ls, "FedLi-LU": lu, "FedAvg": [_history(
        [{"round": 1, "test_accuracy": 0.5}])] * 2}})
    assert list(steps.index) == [("femnist", "FedLi-LS"), ("femnist", "FedLi-LU")]  # FedAvg computes no step
    ls_row, lu_row = steps.loc[("femnist", "FedLi-LS")], steps.loc[("femnist", "FedLi-LU")]
    assert ls_row["server step"] == "eta_g" and ls_row["mean"] == pytest.approx(0.75)  # every round of every seed
    beyond = "rounds above 1 (eta_g) or at 1 (gamma_t)"
    assert ls_row[beyond] == 1 and ls_row["max"] == 1.5 and ls_row["rounds (all seeds)"] == 4  # 1.0 is not above
    assert lu_row["server step"] == "gamma_t" and lu_row[beyond] == 3 and lu_row["min"] == 0.25  # clipped at 1
    assert steps.round(1).loc[("femnist", "FedLi-LS"), "min"] == 0.2  # numeric columns, so the notebook can round
    assert steps["rounds (all seeds)"].dtype.kind == "i"  # counts print as counts


def test_step_means_capped_rounds_and_the_gamma_table_by_hand() -> None:
    """Each seed's mean eta_g (0.6 and 0.9), the rounds where FedLi-LU's gamma_t sits at its cap (3 of 4), and the
    gamma table: shares, means and the paired difference of two labels' scores (+1 on every seed: confirmed)."""
    ls = [_history([{"round": 1, "eta_g": 0.2}, {"round": 2, "eta_g": 1.0}]),
          _history([{"round": 1, "eta_g": 1.5}, {"round": 2, "eta_g": 0.3}])]
    lu = [_history([{"round": 1, "gamma": 1.0}, {"round": 2, "gamma": 0.25}]),
          _history([{"round": 1, "gamma": 1.0}, {"round": 2, "gamma": 1.0}])]
    means = experiment.step_means({"femnist": {"FedLi-LS": ls, "FedAvg": [_history([{"round": 1}])] * 2}})
    assert list(means.index) == [("femnist", "FedLi-LS")]
    assert means.loc[("femnist", "FedLi-LS")].tolist() == pytest.approx([0.6, 0.9])
    assert experiment.step_means({"femnist": {"FedLi-LU": lu}}, "gamma").loc[("femnist", "FedLi-LU")].tolist() == \
        pytest.approx([0.625, 1.0])
    with pytest.raises(ValueError, match="no run reports 'eta_g'"):
        experiment.step_means({"femnist": {"FedLi-LU": lu}})
    assert experiment.capped_rounds(lu) == (3, 4)
    ablated = [_history([{"round": 1, "gamma": 0.5}, {"round": 2, "gamma": 0.5}])] * 2
    table = experiment.gamma_table({"FedLi-LU": (lu, [80.0, 81.0]), "ablation": (ablated, [81.0, 82.0])}, "FedLi-LU")
    assert table.loc["FedLi-LU", "rounds at gamma_t = 1 (%)"] == 75.0
    assert table.loc["ablation", "rounds at gamma_t = 1 (%)"] == 0.0 and table.loc["ablation", "mean gamma_t"] == 0.5
    assert table.loc["FedLi-LU", "mean gamma_t"] == pytest.approx(0.812, abs=1e-3)  # (1 + 0.25 + 1 + 1) / 4
    assert table.loc["ablation"].iloc[-1].startswith("+1.00 [+1.00, +1.00]") and "(confirmed)" in \
        table.loc["ablation"].iloc[-1]
    with pytest.raises(ValueError, match="reference='FedAvg' is not one of the runs"):
        experiment.gamma_table({"FedLi-LU": (lu, [80.0, 81.0])}, "FedAvg")


def test_gamma_sweep_reads_the_dfw_sweeps_runs(femnist) -> None:
    """gamma_t of FedLi-LU at each DFW eta: the runs constant_sweep makes (their gamma is that of a direct simulate),
    and the authors' eta = 0.01 capped in every round here."""
    ran = pd.DataFrame({0: [1.0, float("nan"), 2.0]}, index=[0.01, 0.1, 1.0])  # 0.1 not run: left out
    table = experiment.gamma_sweep(femnist, 0.1, ran, [0])
    assert list(table.index) == [0.01, 1.0]
    direct = simulate(femnist.problem(0), algorithms.fedli_lu(0.1, eta=1.0), seed=0, x0=femnist.initial([0])[0],
                      progress=False, **femnist.settings)
    gammas = direct.frame["gamma"].dropna()
    assert table.loc[1.0, "mean gamma_t"] == pytest.approx(float(gammas.mean()))
    assert table.loc[1.0, "smallest gamma_t"] == pytest.approx(float(gammas.min()))
    assert table.loc[1.0, "rounds at gamma_t = 1 (%)"] == pytest.approx(100 * float((gammas >= 1).mean()), abs=0.05)
    assert table.loc[0.01, "rounds at gamma_t = 1 (%)"] == 100.0


def test_accuracy_at_early_rounds_and_the_largest_client_step() -> None:
    """Accuracy in % at the evaluated rounds asked for (round 3 was not evaluated: left out); with none of them
    evaluated, the first evaluation after round 0.  The largest last step any client accepted, over rounds and runs."""
    def history(accuracies: dict[int, float], steps: list[float]) -> History:
        rows = [{"round": r, "test_accuracy": accuracies.get(r, float("nan")),
                 "client_step_max": steps[r - 1] if r else float("nan")} for r in range(0, 6)]
        return _history(rows)

    runs = {"FedAvg": [history({0: 0.1, 2: 0.5, 4: 0.6}, [0.1] * 5), history({0: 0.1, 2: 0.4, 4: 0.7}, [0.2] * 5)],
            "FedLi-LS": [history({0: 0.1, 2: 0.3, 4: 0.8}, [0.1, 0.3, 0.2, 0.1, 0.1]),
                         history({0: 0.1, 2: 0.2, 4: 0.9}, [0.4] + [0.1] * 4)]}
    table = experiment.accuracy_at({"femnist": runs}, (2, 3, 4))
    assert list(table.index) == [("femnist", 2, "FedAvg"), ("femnist", 2, "FedLi-LS"), ("femnist", 4, "FedAvg"),
                                 ("femnist", 4, "FedLi-LS")]
    assert table.loc[("femnist", 4, "FedLi-LS")].tolist() == pytest.approx([80.0, 90.0])
    first = experiment.accuracy_at({"femnist": runs}, (5, 10))  # none evaluated: round 2, the first after 0
    assert list(first.index.get_level_values("round").unique()) == [2]
    assert experiment.largest_client_step(runs["FedLi-LS"]) == pytest.approx(0.4)
