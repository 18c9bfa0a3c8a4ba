"""Bad input to the models, the gradient oracle, the explorers, the figures and the FAFED experiment fails at
once, naming the argument, its value and what is allowed (the fuzzing report's models, params, explore, toy,
plots and experiments.fafed sections)."""

from __future__ import annotations

import math
from dataclasses import replace

import matplotlib
import numpy as np
import pandas as pd
import pytest
import torch

from fedcore import explore, models, plots, toy
from fedcore.data import federated_quadratic
from fedcore.params import FlatModel, GradientOracle, evaluate
from fedcore.run import Problem
from papers.common import Task
from papers.fafed import experiment, theory
from papers.fafed import explore as fafed_explore
from papers.fafed import figures as fafed_figures

matplotlib.use("Agg")
NAN = float("nan")


def quadratic_problem() -> Problem:
    return Problem(federated_quadratic(num_clients=4, dim=3, samples_per_client=5),
                   models.linear_regression((3,)).double())


def quadratic_task() -> Task:
    """The federated quadratic as a task of the low setting (b = 5, q capped at 2)."""
    return Task("low", quadratic_problem().data, lambda seed: models.linear_regression((3,)).double(),
                dict(rounds=1, clients_per_round=4, local_steps=2, batch_size=5, eval_every=1, weighting="uniform"),
                baseline=0.0, metric="test_loss", higher_is_better=False)


def oracle(backend: str = "auto") -> GradientOracle:
    return GradientOracle(FlatModel(models.linear_regression((3,)), "mse"), backend)


def evaluate_mlp(**options):
    model = FlatModel(models.mlp((1, 6, 6), 10))
    return evaluate(model, model.x0(), torch.zeros(4, 1, 6, 6), torch.zeros(4, dtype=torch.long), **options)


def figure():
    return matplotlib.pyplot.figure()



CASES = [
    # models: input_shape (type, length, entries, smallest image), flags, widths, num_classes, seed
    (lambda: models.cnn((28, 28)), ValueError, r"input_shape=\(28, 28\) must be \(channels, height, width\)"),
    (lambda: models.cnn(None), TypeError, r"input_shape=None must be \(channels, height, width\), got NoneType"),
    (lambda: models.cnn((1, 2, 2)), ValueError, r"input_shape=\(1, 2, 2\): the CNN .* at least 6x6"),
    (lambda: models.tanh_cnn((1, 9, 9)), ValueError, r"input_shape=\(1, 9, 9\): the tanh CNN .* at least 10x10"),
    (lambda: models.tanh_cnn((0, 28, 28)), ValueError, r"input_shape=\(0, 28, 28\): channels=0 must be >= 1"),
    (lambda: models.cnn(dropout="no"), TypeError, r"dropout='no' must be True or False"),
    (lambda: models.logistic_regression((-5,)), ValueError, r"input_shape=\(-5,\): input_shape\[0\]=-5 must be >= 1"),
    (lambda: models.logistic_regression("abc"), TypeError, r"input_shape='abc' must be a tuple of ints >= 1"),
    (lambda: models.logistic_regression((2.5,)), TypeError, r"input_shape\[0\]=2.5 must be an int"),
    (lambda: models.mlp(hidden=5), TypeError, r"hidden=5 must be a sequence of layer widths"),
    (lambda: models.mlp(dropout=True), TypeError, r"dropout=True must be a number"),
    (lambda: models.linear_regression((0,)), ValueError, r"input_shape=\(0,\): input_shape\[0\]=0 must be >= 1"),
    (lambda: models.linear_regression((5,), num_classes=10), ValueError,
     r"num_classes=10: linear_regression has one output"),
    (lambda: models.char_lstm(input_shape=80), TypeError, r"input_shape=80 must be \(sequence_length,\)"),
    (lambda: models.char_lstm(input_shape=(0,)), ValueError, r"sequence_length=0 must be >= 1"),
    (lambda: models.char_lstm(fused="yes"), TypeError, r"fused='yes' must be True or False"),
    (lambda: models.BatchableLSTM(2, 3, unrolled=1), TypeError, r"unrolled=1 must be True or False"),
    (lambda: models.make("mlp", (1, 28, 28), 10, seed=-1), ValueError, r"seed=-1 must be >= 0"),
    (lambda: models.make("mlp", (1, 28, 28), 10, seed="a"), TypeError, r"seed='a' must be an int"),
    (lambda: models.make("cnn", None, 10), TypeError, r"input_shape=None must be \(channels, height, width\)"),
    # params: the loss, modules without parameters, devices, batches the model cannot take, evaluate
    (lambda: FlatModel(torch.nn.Linear(2, 1), loss=None), TypeError,
     r"loss=None must be one of \['cross_entropy', 'mse'\] or a function"),
    (lambda: FlatModel(torch.nn.Linear(2, 1), loss=42), TypeError, r"loss=42 must be one of"),
    (lambda: FlatModel(torch.nn.ReLU()), ValueError, r"module=ReLU\(\.\.\.\) has no trainable parameters"),
    (lambda: Problem(federated_quadratic(num_clients=4, dim=3, samples_per_client=5), torch.nn.ReLU()),
     ValueError, r"has no trainable parameters \(d=0\)"),
    (lambda: GradientOracle(FlatModel(torch.nn.Linear(2, 1)), device="gpu"), ValueError,
     r"device='gpu' is not a device"),
    (lambda: GradientOracle(FlatModel(torch.nn.Linear(2, 1)), device="cuda:99"), ValueError,
     r"device='cuda:99' is not available here"),
    (lambda: oracle()(torch.zeros(2, 3), torch.zeros(2, 1, 4), torch.zeros(2, 1)), ValueError,
     r"the model does not accept this batch \(X \(2, 3\) dtype=torch.float32, inputs \(2, 1, 4\)"),
    (lambda: oracle("loop")(torch.zeros(2, 3), torch.zeros(2, 1, 4), torch.zeros(2, 1)), ValueError,
     r"the model does not accept this batch .*mat1 and mat2"),
    (lambda: oracle()(torch.zeros(2, 3, dtype=torch.float64), torch.zeros(2, 1, 3), torch.zeros(2, 1)), ValueError,
     r"the inputs' dtype torch.float32 is not the parameters' torch.float64"),
    (lambda: oracle()([[0.0] * 3] * 2, torch.zeros(2, 1, 3), torch.zeros(2, 1)), TypeError,
     r"X must be a tensor, got list"),
    (lambda: oracle()(torch.zeros(2, 3), torch.zeros(2, 1, 3), torch.zeros(2, 5)), ValueError,
     r"inputs \(2, 1, 3\) and targets \(2, 5\) must agree on \[S, B\]"),
    (lambda: oracle().losses(torch.zeros(2, 3), torch.zeros(2, 1, 4), torch.zeros(2, 1)), ValueError,
     r"the model does not accept this batch"),
    (lambda: evaluate(FlatModel(models.linear_regression((3,)), "mse"), torch.zeros(3), torch.zeros(4, 3),
                      torch.zeros(5)), ValueError, r"inputs \(4, 3\) and targets \(5,\) must have one row per sample"),
    (lambda: evaluate(FlatModel(models.linear_regression((3,)), "mse"), torch.zeros(3), torch.zeros(4, 5),
                      torch.zeros(4)), ValueError, r"the model does not accept this batch \(x \(3,\)"),
    (lambda: evaluate_mlp(ignore_classes="ab"), TypeError, r"ignore_classes='ab' must be a sequence of class ids"),
    (lambda: evaluate_mlp(ignore_classes=(1.5,)), TypeError, r"ignore_classes=1.5 must be an int"),
    # explore: the user's names, bools, q <= steps, a cap on the work
    (lambda: explore.explore_server_optimizer(reference="no"), TypeError, r"reference='no' must be True or False"),
    (lambda: explore.explore_server_optimizer(rounds=10**6), ValueError, r"rounds=1000000 > 10000"),
    (lambda: fafed_explore.explore_counterexample(eta=-1), ValueError, r"eta=-1 must be > 0"),
    (lambda: fafed_explore.explore_counterexample(beta=1.0), ValueError, r"beta=1.0 not in \[0, 1\)"),
    (lambda: fafed_explore.explore_counterexample(q=50, steps=10), ValueError, r"q=50 > steps=10"),
    (lambda: fafed_explore.explore_counterexample(steps=10**7), ValueError, r"steps=10000000 > 10000"),
    # toy: start is a pair of finite numbers, seed an int >= 0
    (lambda: toy.server_optimizer_path(start=(1.0, NAN)), ValueError,
     r"start=\(1.0, nan\) must be two finite numbers"),
    (lambda: toy.server_optimizer_path(start=("a", "b")), TypeError, r"start=\('a', 'b'\) must be two finite numbers"),
    (lambda: toy.server_optimizer_path(start=5), TypeError, r"start=5 must be a point \(x1, x2\)"),
    (lambda: toy.server_optimizer_path(seed="a"), TypeError, r"seed='a' must be an int"),
    (lambda: toy.server_optimizer_path(seed=-1), ValueError, r"seed=-1 must be >= 0"),
    # plots: the main argument's type, axes, flags, savefig's figure, name and directory
    (lambda: plots.label_distribution(None), TypeError, r"data=None must be a FederatedData"),
    (lambda: plots.compare("abc"), TypeError, r"histories='abc' must be \{label: History\} or a list of History"),
    (lambda: plots.compare({"a": 1}), TypeError, r"histories\['a'\]=1 must be a History"),
    (lambda: plots.compare({}, logy="no"), TypeError, r"logy='no' must be True or False"),
    (lambda: plots.compare({}, ax=1), TypeError, r"ax=1 must be an Axes or None"),
    (lambda: plots.plot_server_path(None), TypeError, r"path=None must be a ServerPath"),
    (lambda: fafed_figures.counterexample_panels(None, None, 0.1, 0.5), TypeError, r"naive=None must be a Trajectory"),
    (lambda: fafed_figures.DistanceMapDisplay(pd.DataFrame([[1.0]]), start="10").plot(), TypeError,
     r"start='10' must be a number"),
    (lambda: plots.savefig(figure(), "x.png", 123), TypeError, r"directory=123 must be a folder path"),
    (lambda: plots.savefig(None, "x.png", None), TypeError, r"figure=None must be a Figure"),
    (lambda: plots.savefig(figure(), "x.unknownext", None), ValueError,
     r"name='x.unknownext': unknown image format '.unknownext'; use one of \[.*'pdf', .*'png'"),
    # experiments.fafed: the scale, the tasks, the grids against the builders
    (lambda: replace(experiment.SCALES["small"], max_local_steps=0), ValueError, r"max_local_steps=0 must be >= 1"),
    (lambda: replace(experiment.SCALES["small"], seeds=3), ValueError, r"seeds=3 must be a non-empty list of seeds"),
    (lambda: replace(experiment.SCALES["small"], rho=-1), ValueError, r"rho=-1 must be > 0"),
    (lambda: replace(experiment.SCALES["small"], clients=0), ValueError, r"clients=0 must be >= 1"),
    (lambda: experiment.tasks("huge"), ValueError, r"SCALE='huge' not one of \['smoke', 'small', 'medium', 'paper'\]"),
    (lambda: experiment.tasks(replace(experiment.SCALES["smoke"], tasks=("extreme",))), ValueError,
     r"tasks='extreme' not one of \['high', 'low', 'moderate'\]"),
    (lambda: experiment.tasks(replace(experiment.SCALES["smoke"], model="vit")), ValueError, r"model='vit' not one of"),
    (lambda: experiment.tune(quadratic_task(), experiment.make_builders(quadratic_task(), "smoke"),
                             {"FedAvg": {"client_lr": [0.1]}}, [0]), TypeError,
     r"got unknown argument\(s\) \['client_lr'\]; it takes \['lr'\]"),
    (lambda: experiment.tune(quadratic_task(), experiment.make_builders(quadratic_task(), "smoke"),
                             {"FedAvg": {"lr": [-0.1]}}, [0]), ValueError,
     r"every point of the grid of 'FedAvg' diverged on some seed or was refused"),
    (lambda: theory.law_table(pd.Series([10.0, 10.1]), eta=0.1, beta=1.0), ValueError, r"beta=1.0 not in \[0, 1\)"),
    (lambda: theory.law_table(pd.Series([10.0, 10.1]), eta=0, beta=0.5), ValueError, r"eta=0 must be > 0"),
    (lambda: theory.law_table([10.0, 10.1], eta=0.1, beta=0.5), TypeError, r"naive_mean must be a Series .* got list"),
    (lambda: theory.divergence_maps(0.5, 0.01, "huge"), ValueError, r"scale='huge' not one of"),
    (lambda: theory.divergence_maps(1.5, 0.01, "smoke"), ValueError, r"beta=1.5 not in \[0, 1\)"),
    (lambda: theory.storm_tracking(quadratic_task().problem(), [1.0], lr=0, steps=3, batch_size=2), ValueError,
     r"lr=0 must be > 0"),
    (lambda: theory.storm_tracking(quadratic_task().problem(), [1.0], lr=0.1, steps=1, batch_size=2), ValueError,
     r"steps=1 must be >= 2"),
    (lambda: replace(experiment.SCALES["small"], widen=-1), ValueError, r"widen=-1 must be >= 0"),
    (lambda: experiment.start_scores(None, rounds=1), ValueError, r"rounds=1 must be >= 2"),
]


@pytest.mark.parametrize("call, error, message", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_argument_is_named(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()
    matplotlib.pyplot.close("all")


def test_enough_cases() -> None:
    assert len(CASES) >= 40


def test_the_edges_of_what_is_allowed_still_work(tmp_path) -> None:
    """The smallest images the CNNs take, num_classes=1 for a regression, a start given as an array, no hidden
    layer, a figure name without an extension: accepted."""
    assert models.cnn((1, 6, 6))(torch.zeros(1, 1, 6, 6)).shape == (1, 10)
    assert models.tanh_cnn(torch.Size([1, 10, 10]))(torch.zeros(1, 1, 10, 10)).shape == (1, 10)
    assert FlatModel(models.linear_regression((3,), num_classes=1)).dim == 3
    assert FlatModel(models.mlp((4,), 3, hidden=())).dim == 15
    assert toy.server_optimizer_path(start=np.array([1.0, 2.0]), rounds=2).start == (1.0, 2.0)
    model = FlatModel(models.mlp((1, 6, 6), 10))
    metrics = evaluate(model, model.x0(), torch.zeros(4, 1, 6, 6), torch.zeros(4, dtype=torch.long),
                       ignore_classes=[np.int64(3)])
    assert not math.isnan(metrics["test_loss"])
    plots.savefig(figure(), "plain", tmp_path)
    matplotlib.pyplot.close("all")
    assert (tmp_path / "plain.png").exists()
