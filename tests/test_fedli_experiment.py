"""Notebook 03's experiment definitions (fedcore.experiments.fedli)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from conftest import cifar_like_loader

from fedcore import algorithms, objectives
from fedcore.experiments.claims import DOES_NOT_HOLD, HOLDS, NOT_TESTABLE, PARTLY
from fedcore.experiments.fedli import experiment
from fedcore.experiments.fedli import paper as fedli_paper
from fedcore.results import History
from fedcore.run import simulate


@pytest.fixture(scope="module")
def femnist():
    data = experiment.load_task("femnist", "smoke")
    return data, experiment.problem("femnist", data, "smoke")


def test_femnist_stand_in_settings(femnist) -> None:
    data, problem = femnist
    assert data.num_clients == 100 and data.test_targets.shape[0] == 200
    assert data.info["partition_kwargs"] == {"alpha": 0.5} and data.info["stands_for"] == "FEMNIST"
    assert problem.x0().numel() == 784 * 64 + 64 + 64 * 10 + 10  # the MLP below paper scale
    assert experiment.local_steps(data, "paper") == math.ceil(600 / 32)  # one epoch of the mean client (600)
    assert experiment.local_steps(data, "small") == 5 and experiment.local_steps(data, "smoke") == 2
    run = experiment.options(data, "small", tuning=True)
    assert (run["rounds"], run["clients_per_round"], run["batch_size"], run["eval_every"]) == (10, 10, 32, 0)
    assert experiment.options(data, "paper")["rounds"] == 500
    paper_problem = experiment.problem("femnist", data, "paper")
    assert paper_problem.x0().numel() > 10**6  # the CNN
    with pytest.raises(ValueError, match="SCALE='huge'"):
        experiment.options(data, "huge")
    with pytest.raises(ValueError, match="task='emnist' not one of"):
        experiment.load_task("emnist", "smoke")


def test_grids_and_their_smoke_points() -> None:
    sizes = {method: math.prod(len(values) for values in grid.values()) for method, grid in experiment.GRIDS.items()}
    assert sizes == {"FedAvg": 5, "FedProx": 15, "SCAFFOLD": 5, "FedAdam": 15, "FedExP": 15}
    smoke = experiment.grids("smoke")
    assert smoke["FedAdam"] == {"client_lr": [0.1], "server_lr": [10**-1.5]}
    assert experiment.grids("small") == experiment.GRIDS


def test_tune_keeps_the_lowest_final_training_loss(femnist, monkeypatch) -> None:
    data, problem = femnist
    monkeypatch.setattr(experiment, "GRIDS", {"FedAvg": {"client_lr": [0.001, 0.1]}})
    monkeypatch.setitem(experiment.SCALES["small"], "tune_rounds", 2)
    monkeypatch.setitem(experiment.SCALES["small"], "max_local_steps", 1)
    chosen, tables = experiment.tune(problem, data, "small")
    losses = {lr: experiment.final_train_loss(simulate(problem, algorithms.fedavg(lr),
                                                       **experiment.options(data, "small", tuning=True)))
              for lr in (0.001, 0.1)}
    assert chosen["FedAvg"] == {"client_lr": min(losses, key=losses.get)}
    assert sorted(tables["FedAvg"]["score"]) == pytest.approx(sorted(losses.values()))


def test_builders_make_the_seven_methods_in_table_order(femnist) -> None:
    data, _ = femnist
    chosen = {"FedAvg": {"client_lr": 0.1}, "FedProx": {"client_lr": 0.1, "mu": 0.01}, "SCAFFOLD": {"client_lr": 0.1},
              "FedAdam": {"client_lr": 0.1, "server_lr": 0.01}, "FedExP": {"client_lr": 0.1, "eps": 0.01}}
    built = {method: build() for method, build in experiment.builders(chosen, data, "smoke").items()}
    assert list(built) == list(fedli_paper.METHODS)
    assert {m: a.name for m, a in built.items()} == {m: m for m in fedli_paper.METHODS}
    assert built["FedLi-LS"].server_step_size == "max_client_step" and built["FedLi-LS"].batches_per_epoch == 2
    assert built["FedLi-LU"].client_lr == 0.1 and built["FedProx"].correction.mu == 0.01
    with pytest.raises(ValueError, match=r"no hyperparameters for \['SCAFFOLD'\]"):
        experiment.builders({k: v for k, v in chosen.items() if k != "SCAFFOLD"}, data, "smoke")


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
    data, problem = femnist
    chosen = {"FedAvg": {"client_lr": 0.1}, "FedProx": {"client_lr": 0.1, "mu": 0.01}, "SCAFFOLD": {"client_lr": 0.1},
              "FedAdam": {"client_lr": 0.1, "server_lr": 0.01}, "FedExP": {"client_lr": 0.1, "eps": 0.01}}
    run = {**experiment.options(data, "smoke"), "rounds": 1, "eval_every": 1}
    histories = {m: simulate(problem, build(), **run)
                 for m, build in experiment.builders(chosen, data, "smoke").items()}
    assert all(not h.diverged for h in histories.values())
    assert histories["FedLi-LS"].final("loss_evaluations_per_step") >= 1
    shakespeare = experiment.load_task("shakespeare", "smoke")
    lstm = experiment.problem("shakespeare", shakespeare, "smoke")
    assert lstm.x0().dtype == torch.float32 and shakespeare.num_clients == 10
    assert experiment.options(shakespeare, "small")["rounds"] == 20
    assert experiment.local_steps(shakespeare, "small") == 2
    assert experiment.grids("small", shakespeare)["FedProx"]["client_lr"] == pytest.approx([0.1, 10**-0.5, 1.0])
    one = simulate(lstm, algorithms.fedli_ls(batches_per_epoch=1), **{**experiment.options(shakespeare, "smoke"),
                                                                        "rounds": 1, "local_steps": 1, "eval_every": 1})
    assert math.isfinite(one.final("train_loss"))


def test_claims_on_the_quadratics_and_hand_made_tables() -> None:
    from fedcore.experiments.fedli import theory

    data = objectives.shared_clients()
    gaps = theory.suboptimality(data, algorithms.fedli_ls(eta_max=10.0), local_steps=5, rounds=6)
    evidence = experiment.Evidence(gaps, theory.linear_rate_bound(data, 5, eta_max=10.0),
                                   theory.two_client_run(rounds=6), theory.remark2_step())
    table = experiment.claims_table(evidence)
    assert list(table["verdict"]) == [DOES_NOT_HOLD, DOES_NOT_HOLD, HOLDS, NOT_TESTABLE]  # refuted by the two clients
    assert "rises in 6 of 6 rounds" in table.loc[0, "ours"]
    descending = SimpleNamespace(global_objective=[1.0, 0.5, 0.2], x=[0.0, 10 / 101])  # no counterexample
    kept = experiment.claims_table(experiment.Evidence(gaps, evidence.shared_bound, descending, theory.remark2_step()))
    assert list(kept["verdict"][:2]) == [HOLDS, HOLDS]
    accuracy = pd.DataFrame([[80.0, 79.0, 78.0, 77.0, 76.0, 75.0, 74.0], [40.0, 41.0, 48.0, 42.0, 45.0, 35.0, 41.0]],
                            index=["femnist", "shakespeare"], columns=list(fedli_paper.METHODS))
    both = experiment.claims_table(experiment.Evidence(gaps, 0.5, theory.two_client_run(rounds=2),
                                                       theory.remark2_step(), accuracy, accuracy))
    assert len(both) == 7 and list(both["verdict"][4:]) == [PARTLY, PARTLY, PARTLY]
    assert both.loc[4, "the paper's own tables"].endswith("(partly)")


def test_client_rate_sweep_runs_each_rate_as_table_1_does(femnist, monkeypatch) -> None:
    data, problem = femnist
    monkeypatch.setattr(experiment, "SWEEP_LRS", [0.01, 1.0])
    chosen = {"FedAvg": {"client_lr": 0.1}, "FedProx": {"client_lr": 0.1, "mu": 0.01}, "SCAFFOLD": {"client_lr": 0.1},
              "FedAdam": {"client_lr": 0.1, "server_lr": 0.01}, "FedExP": {"client_lr": 0.1, "eps": 0.01}}
    table = experiment.client_rate_sweep(problem, data, chosen, "smoke")
    assert list(table.columns) == ["FedLi-LU", "FedAvg", "FedExP", "FedLi-LS"] and list(table.index) == [0.01, 1.0]
    run = experiment.options(data, "smoke")
    for method, build in {"FedLi-LU": lambda: algorithms.fedli_lu(1.0), "FedAvg": lambda: algorithms.fedavg(1.0),
                          "FedExP": lambda: algorithms.fedexp(1.0, eps=0.01)}.items():
        assert table.loc[1.0, method] == pytest.approx(experiment.final_accuracy(simulate(problem, build(), **run)))
    assert table["FedLi-LS"].nunique() == 1  # no rate: one run, a flat column
    ls = simulate(problem, experiment.builders(chosen, data, "smoke")["FedLi-LS"](), **run)
    assert table.loc[1.0, "FedLi-LS"] == experiment.final_accuracy(ls)
    other = simulate(problem, algorithms.fedavg(1.0), **run)  # a given run is used as it is, not rerun
    given = experiment.client_rate_sweep(problem, data, chosen, "smoke", fedli_ls=other)
    assert (given["FedLi-LS"] == experiment.final_accuracy(other)).all() and other.final("test_accuracy") != ls.final(
        "test_accuracy")
    pd.testing.assert_frame_equal(given.drop(columns="FedLi-LS"), table.drop(columns="FedLi-LS"))
    assert table.loc[0.01, "FedLi-LU"] != table.loc[1.0, "FedLi-LU"]  # its clients' rate matters
    summary = experiment.rate_summary(table)
    assert list(summary.index) == ["FedLi-LU", "FedAvg", "FedExP"]  # the flat column has no best rate


def test_rate_summary_and_the_tuning_claim_by_hand() -> None:
    from fedcore.experiments.fedli import theory

    rates = [0.001, 0.01, 0.1, 1.0]
    table = pd.DataFrame({"FedLi-LU": [10.0, 70.0, 78.0, 11.0], "FedAvg": [40.0, 76.0, 79.0, 77.0],
                          "FedExP": [60.0, 77.0, 78.0, math.nan], "FedLi-LS": 75.0}, index=rates)
    summary = experiment.rate_summary(table)
    assert summary.loc["FedLi-LU", "best accuracy"] == 78.0 and summary.loc["FedLi-LU", "at rate"] == 0.1
    assert summary.loc["FedAvg", "decades within 3 points of best"] == pytest.approx(2.0)  # 0.01 .. 1
    assert summary.loc["FedLi-LU", "decades within 3 points of best"] == 0.0
    data = objectives.shared_clients()
    gaps = theory.suboptimality(data, algorithms.fedli_ls(eta_max=10.0), local_steps=5, rounds=3)
    base = (gaps, 0.5, theory.two_client_run(rounds=2), theory.remark2_step())
    claim = experiment.claims_table(experiment.Evidence(*base, rate_sweep=table)).iloc[3]
    assert claim["verdict"] == DOES_NOT_HOLD  # 0.0 decades against 2.0 and 1.0
    assert claim["ours"].endswith("FedLi-LU 0.0, FedAvg 2.0, FedExP 1.0")
    table["FedLi-LU"] = [10.0, 76.0, 78.0, 11.0]  # now 0.01 .. 0.1: one decade, as FedExP's
    assert experiment.claims_table(experiment.Evidence(*base, rate_sweep=table)).iloc[3]["verdict"] == PARTLY


@pytest.mark.parametrize("task, classes", [("cifar10", 10), ("cifar100", 100)])
def test_cifar_code_path_on_generated_tensors_of_the_same_shape(task, classes, monkeypatch) -> None:
    """At paper scale CIFAR runs with ResNet-18 and Dirichlet(0.5); here the loader gets CIFAR-shaped images."""
    monkeypatch.setattr(experiment, "load_torchvision", cifar_like_loader(classes))
    assert experiment.tasks("paper") == ("femnist", "shakespeare", "cifar10", "cifar100")
    assert experiment.tasks("small") == ("femnist", "shakespeare")
    with pytest.raises(ValueError, match="only at scale 'paper'"):
        experiment.load_task(task, "small")
    data = experiment.load_task(task, "paper")
    assert data.inputs.shape[1:] == (3, 32, 32) and data.num_clients == 100 and data.num_classes == classes
    assert data.info["partition_kwargs"] == {"alpha": 0.5}
    problem = experiment.problem(task, data, "paper")
    run = {**experiment.options(data, "paper"), "rounds": 1, "clients_per_round": 2, "local_steps": 1,
           "batch_size": 2, "eval_every": 1}
    history = simulate(problem, algorithms.fedavg(0.1), **run)
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
