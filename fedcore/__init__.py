"""fedcore: adaptive and parameter-free federated optimization on flat parameter vectors.

    import fedcore
    data = fedcore.data.federated_quadratic(num_clients=10)
    problem = fedcore.Problem(data, fedcore.models.linear_regression((5,)).double())
    history = fedcore.simulate(problem, fedcore.algorithms.fedadam(client_lr=0.1), rounds=50,
                               clients_per_round=10, local_steps=5, batch_size=20)
    history.plot("test_loss")
"""

from fedcore import algorithms, counterexample, data, models, server_opt, toy
from fedcore.engine import RunOptions
from fedcore.identity import VERSION
from fedcore.params import FlatModel, GradientOracle, evaluate
from fedcore.problem import Problem
from fedcore.results import History, Trajectory
from fedcore.run import simulate, simulate_runs, warm_up
from fedcore.sweeps import sweep

__version__ = VERSION  # the package's metadata (pyproject.toml), read by fedcore.identity
__all__ = [
    "FlatModel",
    "GradientOracle",
    "History",
    "Problem",
    "RunOptions",
    "Trajectory",
    "algorithms",
    "counterexample",
    "data",
    "evaluate",
    "models",
    "server_opt",
    "simulate",
    "simulate_runs",
    "sweep",
    "toy",
    "warm_up",
]
