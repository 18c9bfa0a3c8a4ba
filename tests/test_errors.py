"""Bad input fails at once, naming the argument, its value and what is allowed."""

from __future__ import annotations

import pytest
import torch

from fedcore import algorithms, models, server_opt
from fedcore.data import FederatedData, federated_quadratic
from fedcore.params import FlatModel, GradientOracle
from fedcore.run import Problem, simulate


def quadratic_problem() -> Problem:
    return Problem(federated_quadratic(num_clients=4, dim=3, samples_per_client=5),
                   models.linear_regression((3,)).double())


def simulate_with(**overrides):
    options = dict(rounds=2, clients_per_round=2, local_steps=1, batch_size=5, progress=False)
    options.update(overrides)
    algorithm = options.pop("algorithm", algorithms.fedavg(client_lr=0.1))
    return simulate(quadratic_problem(), algorithm, **options)


CASES = [
    (lambda: simulate_with(clients_per_round=30), ValueError, r"clients_per_round=30 > num_clients=4"),
    (lambda: simulate_with(rounds=0), ValueError, r"rounds=0 must be >= 1"),
    (lambda: simulate_with(local_steps=2.5), TypeError, r"local_steps=2.5 must be an int"),
    (lambda: simulate_with(batch_size=-1), ValueError, r"batch_size=-1 must be >= 1"),
    (lambda: simulate_with(weighting="by_size"), ValueError, r"weighting='by_size' not one of \['samples', 'unif"),
    (lambda: simulate_with(backend="jit"), ValueError, r"backend='jit' not one of \['auto', 'loop', 'vmap'\]"),
    (lambda: simulate_with(resume=True), ValueError, r"resume=True needs checkpoint"),
    (lambda: simulate_with(algorithm="fedavg"), TypeError, r"algorithm='fedavg' needs init"),
    (lambda: server_opt.adam(beta1=1.2), ValueError, r"beta1=1.2 not in \[0, 1\)"),
    (lambda: server_opt.yogi(beta2=-0.1), ValueError, r"beta2=-0.1 not in \[0, 1\)"),
    (lambda: server_opt.adam(tau=0), ValueError, r"tau=0 must be > 0"),
    (lambda: server_opt.adagrad(lr=float("nan")), ValueError, r"lr=nan must be finite"),
    (lambda: server_opt.adam(bias_correction="tff"), ValueError, r"bias_correction='tff' not one of"),
    (lambda: server_opt.adam(initial_v="one"), ValueError, r"initial_v='one' not one of \['tau\^2', 'zero'\]"),
    (lambda: server_opt.make("lamb"), ValueError, r"server optimizer='lamb' not one of \['adagrad', 'adam'"),
    (lambda: server_opt.sgdm(beta=1.0), ValueError, r"beta=1.0 not in \[0, 1\)"),
    (lambda: algorithms.make("fedsgd", client_lr=0.1), ValueError, r"algorithm='fedsgd' not one of \[.*'fafed'"),
    (lambda: algorithms.fedavg(client_lr=0), ValueError, r"client_lr=0 must be > 0"),
    (lambda: algorithms.fedavg(client_lr="0.1"), TypeError, r"client_lr='0.1' must be a number"),
    (lambda: algorithms.fedprox(client_lr=0.1, mu=-1), ValueError, r"mu=-1 not in \[0, inf\)"),
    (lambda: algorithms.scaffold(client_lr=0.1, option="III"), ValueError, r"option='III' not one of \['I', 'II'\]"),
    (lambda: algorithms.exp_decay(0.1, factor=1.5), ValueError, r"factor=1.5 not in \(0, 1\]"),
    (lambda: models.make("resnet", (1, 28, 28), 10), ValueError, r"model='resnet' not one of \[.*'tanh_cnn'"),
    (lambda: models.cnn(num_classes=1), ValueError, r"num_classes=1 must be >= 2"),
    (lambda: FlatModel(models.mlp(), loss="hinge"), ValueError, r"loss='hinge' not one of \['cross_entropy', 'mse'\]"),
    (lambda: FlatModel("mlp"), TypeError, r"module='mlp' must be a torch.nn.Module"),
    (lambda: GradientOracle(FlatModel(models.linear_regression((3,))))(torch.zeros(2, 4), torch.zeros(2, 1, 3),
                                                                        torch.zeros(2, 1)),
     ValueError, r"X has shape \(2, 4\), expected \[S, d=3\]"),
    (lambda: federated_quadratic(samples_per_client=2, dim=5), ValueError, r"samples_per_client=2 must be >= 5"),
    (lambda: FederatedData(torch.zeros(3, 2), torch.zeros(3), torch.tensor([3, 0]), torch.zeros(1, 2),
                           torch.zeros(1)), ValueError, r"clients \[1\] have no samples"),
    (lambda: FederatedData(torch.zeros(3, 2), torch.tensor([0, 1, 7]), torch.tensor([3]), torch.zeros(1, 2),
                           torch.zeros(1, dtype=torch.long), 3),
     ValueError, r"targets span \[0, 7\], outside num_classes=3"),
    (lambda: Problem("data", models.mlp()), TypeError, r"data=str must be a FederatedData"),
]


@pytest.mark.parametrize("call, error, message", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_argument_is_named(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def test_enough_cases() -> None:
    assert len(CASES) >= 15
