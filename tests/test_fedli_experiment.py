"""Notebook 03's experiment definitions (fedcore.experiments.fedli.experiment), on the common layer."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest
import torch
from conftest import cifar_like_loader

from fedcore import algorithms, models
from fedcore.data import load_fashion_mnist
from fedcore.experiments.claims import Scope, trivial_baseline
from fedcore.experiments.common import ROUND_SETTINGS, Task, Tuning
from fedcore.experiments.fedli import experiment
from fedcore.experiments.fedli import paper as fedli_paper
from fedcore.problem import Problem
from fedcore.results import History
from fedcore.run import simulate

CHOSEN = {"FedAvg": {"client_lr": 0.1}, "FedProx": {"client_lr": 0.1, "mu": 0.01}, "SCAFFOLD": {"client_lr": 0.1},
          "FedAdam": {"client_lr": 0.1, "server_lr": 0.01}, "FedExP": {"client_lr": 0.1, "eps": 0.01}}


@pytest.fixture(scope="module")
def femnist() -> Task:
    return experiment.tasks("smoke", names=["femnist"])["femnist"]


def test_femnist_stand_in_task(femnist) -> None:
    data = femnist.data
    assert femnist.name == "femnist" and data.num_clients == 100 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 0.5} and data.info["stands_for"] == "FEMNIST"
    assert femnist.problem(0).x0().numel() == 784 * 64 + 64 + 64 * 10 + 10  # the MLP below paper scale
    assert "MLP" in femnist.model_label
    assert femnist.metric == "test_accuracy" and femnist.higher_is_better
    assert femnist.baseline == trivial_baseline(data) and 10.0 <= femnist.baseline < 30.0  # the most frequent class
    assert experiment.epoch_steps(data) == math.ceil(600 / 32)  # one epoch of the mean client (600)
    assert dict(femnist.settings) == {"rounds": 3, "clients_per_round": 10, "local_steps": 2, "batch_size": 32,
                                      "eval_every": 3, "weighting": "samples"}
    assert set(femnist.settings) == set(ROUND_SETTINGS)
    small = experiment.scale_settings("small", "femnist")
    assert (small["rounds"], small["tune_rounds"], small["max_local_steps"]) == (40, 10, 5)
    assert experiment.scale_settings("paper", "femnist")["rounds"] == 500
    assert experiment.scale_settings("paper", "femnist")["max_local_steps"] is None  # the full epoch
    paper_task = experiment.tasks("paper", names=["femnist"])["femnist"]
    assert paper_task.problem(0).x0().numel() > 10**6 and "CNN" in paper_task.model_label  # the CNN
    assert paper_task.settings["local_steps"] == experiment.epoch_steps(paper_task.data)
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.tasks("huge")
    with pytest.raises(ValueError, match="names='emnist' not one of"):
        experiment.tasks("smoke", names=["emnist"])


def test_the_task_runs_as_the_data_model_and_options_did_before(femnist) -> None:
    """The runs of a Task are those the notebook made before it moved onto the common layer: Fashion-MNIST by
    Dirichlet(0.5) from the seed, the MLP drawn from the seed, simulate's default (sample) weighting."""
    data = load_fashion_mnist(100, "dirichlet", 0, alpha=0.5).test_subset(200, 0)
    problem = Problem(data, models.make("mlp", (1, 28, 28), 10, seed=0, hidden=(64,)))
    before = simulate(problem, algorithms.fedavg(0.1), rounds=3, clients_per_round=10, local_steps=2, batch_size=32,
                      eval_every=3, seed=0, progress=False)
    after = experiment.run(femnist, CHOSEN, 0)["FedAvg"]
    pd.testing.assert_frame_equal(before.frame.drop(columns="seconds"), after.frame.drop(columns="seconds"))
    other = experiment.run(femnist, CHOSEN, 1)["FedAvg"]  # another seed: another model and other clients
    assert other.final("train_loss") != after.final("train_loss")


def test_scopes_say_the_task_scale_rounds_seeds_and_model(femnist) -> None:
    scopes = experiment.scopes({"femnist": femnist}, "smoke", [0])
    assert scopes == {"femnist": Scope(("femnist",), "smoke", 3, (0,), femnist.model_label)}
    assert str(scopes["femnist"]).startswith("femnist; smoke (a 784-64-10 MLP") and \
        str(scopes["femnist"]).endswith("; 3 rounds; 1 seed (0)")


def test_grids_and_their_smoke_points() -> None:
    sizes = {method: math.prod(len(values) for values in grid.values()) for method, grid in experiment.GRIDS.items()}
    assert sizes == {"FedAvg": 5, "FedProx": 15, "SCAFFOLD": 5, "FedAdam": 15, "FedExP": 15}
    smoke = experiment.grids("smoke")
    assert smoke["FedAdam"] == {"client_lr": [0.1], "server_lr": [10**-1.5]}
    assert experiment.grids("small") == experiment.GRIDS == experiment.grids("small", "femnist")
    assert experiment.grids("small", "shakespeare")["FedProx"]["client_lr"] == pytest.approx([0.1, 10**-0.5, 1.0])
    assert experiment.grids("small", "shakespeare")["FedProx"]["mu"] == [0.001, 0.01, 0.1]


def test_tune_keeps_the_lowest_final_training_loss(femnist, monkeypatch) -> None:
    """The grid search is common.tune's, over the one seed, scored as before: the final training loss of a run of
    tune_rounds rounds without test evaluations, the point with the lowest chosen."""
    monkeypatch.setattr(experiment, "GRIDS", {"FedAvg": {"client_lr": [0.001, 0.1]}})
    monkeypatch.setitem(experiment.SCALES["smoke"], "grid_points", None)
    tuning = experiment.tune(femnist, "smoke", 0)
    assert isinstance(tuning, Tuning)
    tuning_run = {**femnist.settings, "rounds": 2, "eval_every": 0}  # smoke's tune_rounds
    losses = {lr: experiment.final_train_loss(simulate(femnist.problem(0), algorithms.fedavg(lr), seed=0,
                                                       progress=False, **tuning_run))
              for lr in (0.001, 0.1)}
    assert tuning.chosen["FedAvg"] == {"client_lr": min(losses, key=losses.get)}
    assert all(type(value) is float for value in tuning.chosen["FedAvg"].values())  # printed as 0.1, not np.float64
    assert sorted(tuning.tables["FedAvg"]["score"]) == pytest.approx(sorted(losses.values()))
    assert tuning.tables["FedAvg"].loc[0.1, 0] == pytest.approx(losses[0.1])  # one column per seed


def test_builders_make_the_seven_methods_in_table_order(femnist) -> None:
    built = {method: build() for method, build in experiment.algorithms_at(CHOSEN, femnist).items()}
    assert list(built) == list(fedli_paper.METHODS)
    assert {m: a.name for m, a in built.items()} == {m: m for m in fedli_paper.METHODS}
    assert built["FedLi-LS"].server_step_size == "max_client_step" and built["FedLi-LS"].batches_per_epoch == 2
    assert built["FedLi-LU"].client_lr == 0.1 and built["FedProx"].correction.mu == 0.01
    with pytest.raises(ValueError, match=r"no hyperparameters for \['SCAFFOLD'\]"):
        experiment.algorithms_at({k: v for k, v in CHOSEN.items() if k != "SCAFFOLD"}, femnist)


def _history(rows: list[dict], algorithm: str = "x") -> History:
    return History(pd.DataFrame(rows).set_index("round"), algorithm, "loop", {})


def test_results_and_cost_tables_by_hand() -> None:
    a = _history([{"round": 1, "test_accuracy": 0.5, "train_loss": 2.0, "seconds": 1.0},
                  {"round": 2, "test_accuracy": 0.6, "train_loss": 1.5, "seconds": 3.0}])
    b = _history([{"round": 1, "test_accuracy": 0.4, "train_loss": 2.5, "seconds": 4.0,
                   "loss_evaluations_per_step": 3.0, "client_step_mean": 0.5, "client_step_min": 0.2,
                   "client_step_max": 0.9},
                  {"round": 2, "test_accuracy": 0.7, "train_loss": 1.0, "seconds": 8.0,
                   "loss_evaluations_per_step": 1.0, "client_step_mean": 0.7, "client_step_min": 0.4,
                   "client_step_max": 1.0}])
    table1 = experiment.results_table({"femnist": {"FedAvg": a, "FedLi-LS": b}}, "test_accuracy")
    assert table1.loc["femnist", "FedAvg"] == pytest.approx(60.0) and table1.loc["femnist", "FedLi-LS"] == 70.0
    assert experiment.results_table({"femnist": {"FedAvg": a}}, "train_loss").loc["femnist", "FedAvg"] == 1.5
    cost = experiment.line_search_cost({"FedAvg": a, "FedLi-LS": b})
    assert cost.loc["FedLi-LS", "relative to FedAvg"] == pytest.approx(3.0)
    assert cost.loc["FedLi-LS", "loss evaluations per step"] == 2.0 and cost.loc["FedLi-LS", "max"] == 0.95
    assert math.isnan(cost.loc["FedAvg", "loss evaluations per step"])
    with pytest.raises(ValueError, match="needs a FedAvg run"):
        experiment.line_search_cost({"FedLi-LS": b})


def test_one_smoke_round_of_every_method_on_both_tasks(femnist) -> None:
    one_round = dataclasses.replace(femnist, settings={**femnist.settings, "rounds": 1, "eval_every": 1})
    histories = experiment.run(one_round, CHOSEN, 0)
    assert list(histories) == list(fedli_paper.METHODS) and all(not h.diverged for h in histories.values())
    assert histories["FedLi-LS"].final("loss_evaluations_per_step") >= 1
    shakespeare = experiment.tasks("smoke", names=["shakespeare"])["shakespeare"]
    lstm = shakespeare.problem(0)
    assert lstm.x0().dtype == torch.float32 and shakespeare.data.num_clients == 10
    assert (shakespeare.settings["rounds"], shakespeare.settings["local_steps"]) == (2, 1)  # smoke's overrides
    small = experiment.scale_settings("small", "shakespeare")
    assert (small["rounds"], small["eval_every"], small["tune_rounds"], small["max_local_steps"]) == (20, 5, 5, 2)
    assert "LSTM" in shakespeare.model_label
    one = simulate(lstm, algorithms.fedli_ls(batches_per_epoch=1), **{**shakespeare.settings, "rounds": 1,
                                                                        "eval_every": 1, "progress": False})
    assert math.isfinite(one.final("train_loss"))


def test_client_rate_sweep_runs_each_rate_as_table_1_does(femnist, monkeypatch) -> None:
    monkeypatch.setattr(experiment, "SWEEP_LRS", [0.01, 1.0])
    table = experiment.client_rate_sweep(femnist, CHOSEN, 0)
    assert list(table.columns) == ["FedLi-LU", "FedAvg", "FedExP", "FedLi-LS"] and list(table.index) == [0.01, 1.0]
    run = {**femnist.settings, "seed": 0, "progress": False}
    for method, build in {"FedLi-LU": lambda: algorithms.fedli_lu(1.0), "FedAvg": lambda: algorithms.fedavg(1.0),
                          "FedExP": lambda: algorithms.fedexp(1.0, eps=0.01)}.items():
        assert table.loc[1.0, method] == pytest.approx(experiment.final_accuracy(
            simulate(femnist.problem(0), build(), **run)))
    assert table["FedLi-LS"].nunique() == 1  # no rate: one run, a flat column
    ls = experiment.run(femnist, CHOSEN, 0)["FedLi-LS"]
    assert table.loc[1.0, "FedLi-LS"] == experiment.final_accuracy(ls)
    other = simulate(femnist.problem(0), algorithms.fedavg(1.0), **run)  # a given run is used as it is, not rerun
    given = experiment.client_rate_sweep(femnist, CHOSEN, 0, fedli_ls=other)
    assert (given["FedLi-LS"] == experiment.final_accuracy(other)).all() and other.final("test_accuracy") != ls.final(
        "test_accuracy")
    pd.testing.assert_frame_equal(given.drop(columns="FedLi-LS"), table.drop(columns="FedLi-LS"))
    assert table.loc[0.01, "FedLi-LU"] != table.loc[1.0, "FedLi-LU"]  # its clients' rate matters
    summary = experiment.rate_summary(table)
    assert list(summary.index) == ["FedLi-LU", "FedAvg", "FedExP"]  # the flat column has no best rate


def test_rate_summary_by_hand() -> None:
    rates = [0.001, 0.01, 0.1, 1.0]
    table = pd.DataFrame({"FedLi-LU": [10.0, 70.0, 78.0, 11.0], "FedAvg": [40.0, 76.0, 79.0, 77.0],
                          "FedExP": [60.0, 77.0, 78.0, math.nan], "FedLi-LS": 75.0}, index=rates)
    summary = experiment.rate_summary(table)
    assert summary.loc["FedLi-LU", "best accuracy"] == 78.0 and summary.loc["FedLi-LU", "at rate"] == 0.1
    assert summary.loc["FedAvg", "decades within 3 points of best"] == pytest.approx(2.0)  # 0.01 .. 1
    assert summary.loc["FedLi-LU", "decades within 3 points of best"] == 0.0
    assert summary.loc["FedExP", "decades within 3 points of best"] == pytest.approx(1.0)  # 0.01 .. 0.1 (1 diverged)


@pytest.mark.parametrize("task, classes", [("cifar10", 10), ("cifar100", 100)])
def test_cifar_code_path_on_generated_tensors_of_the_same_shape(task, classes, monkeypatch) -> None:
    """At paper scale CIFAR runs with ResNet-18 and Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(classes))
    assert experiment.task_names("paper") == ("femnist", "shakespeare", "cifar10", "cifar100")
    assert experiment.task_names("small") == ("femnist", "shakespeare")
    with pytest.raises(ValueError, match="only at scale 'paper'"):
        experiment.tasks("small", names=[task])
    built = experiment.tasks("paper", names=[task])[task]
    data = built.data
    assert data.inputs.shape[1:] == (3, 32, 32) and data.num_clients == 100 and data.num_classes == classes
    assert data.info["partition_kwargs"] == {"alpha": 0.5} and built.model_label == ""  # the paper's model
    assert built.settings["rounds"] == 500 and built.settings["local_steps"] == experiment.epoch_steps(data)
    run = {**built.settings, "rounds": 1, "clients_per_round": 2, "local_steps": 1, "batch_size": 2, "eval_every": 1}
    history = simulate(built.problem(0), algorithms.fedavg(0.1), progress=False, **run)
    assert not history.diverged and 0 <= history.final("test_accuracy") <= 1


def test_server_steps_identical_curves_and_grid_edges() -> None:
    ls = _history([{"round": 1, "eta_g": 0.2, "test_accuracy": 0.5}, {"round": 2, "eta_g": 0.4, "test_accuracy": 0.6}])
    lu = _history([{"round": 1, "gamma": 1.0, "test_accuracy": 0.5}, {"round": 2, "gamma": 0.25, "test_accuracy": 0.6}])
    avg = _history([{"round": 1, "test_accuracy": 0.5}, {"round": 2, "test_accuracy": 0.7}])
    steps = experiment.server_steps({"femnist": {"FedLi-LS": ls, "FedLi-LU": lu}})
    assert steps.loc["femnist", "FedLi-LS eta_g: mean"] == pytest.approx(0.3)
    assert steps.loc["femnist", "FedLi-LU: rounds"] == 2 and steps.loc["femnist", "rounds with gamma_t = 1"] == 1
    assert steps.round(1).loc["femnist", "max"] == 0.4  # numeric columns, so the notebook can round them
    assert steps.loc["femnist", "smallest gamma_t"] == 0.25
    assert experiment.identical_curves({"FedLi-LS": ls, "FedLi-LU": lu, "FedAvg": avg}) == [["FedLi-LS", "FedLi-LU"]]
    assert experiment.identical_curves({"FedLi-LS": ls, "FedAvg": avg}) == []
    grids = {"FedAvg": {"client_lr": [0.1, 10**-0.5, 1.0]}, "FedProx": {"client_lr": [0.1, 1.0], "mu": [0.01]}}
    chosen = {"FedAvg": {"client_lr": 1.0}, "FedProx": {"client_lr": 0.1, "mu": 0.01}}
    assert experiment.on_grid_edge(chosen, grids) == ["FedAvg client_lr = 1 (largest)",
                                                      "FedProx client_lr = 0.1 (smallest)"]
    assert experiment.on_grid_edge({"FedAvg": {"client_lr": 10**-0.5}}, grids) == []
