"""The toy objectives, in one place below the experiments: small federations whose optimum, smoothness or
pathology is known in closed form, for the notebooks' theory sections, the explorers and the tests.

- :func:`quadratic_2d`: a 2-D least-squares federation with one shared design (the quickstart's server paths,
  :mod:`fedcore.toy`).
- :func:`quadratic_task` (:class:`QuadraticTask`): least squares with clients of their own designs and optima
  and noisy targets, with its smoothness ``L`` (Reddi et al.'s corollaries, notebook 01);
  :func:`scaled_quadratic_task` multiplies its objective by a factor (PAdaMFed's scale-freeness, notebook 02);
  :func:`tilted_quadratic_task` adds each client a linear term that sums to zero over the clients, so that only
  the clients' dissimilarity grows (notebook 02's heterogeneity family).
- :func:`quadratic_clients` (one client per ``a_i (x - b_i)^2``), :func:`shared_clients` (clients that hold the
  same rows) and :func:`double_well` (FedLi's Lemma 3 and Remark 2, notebook 03).
- :func:`counterexample_problem`: Wu et al.'s divergence counterexample (FAFED, AAAI 2023, Theorem 1; notebook
  04), three clients in one dimension,

      f_1(x) = 3 x^2        (|x| <= 1),   6 |x| - 2    (|x| > 1)
      f_2(x) = f_3(x) = -x^2 (|x| <= 1),  -2 |x| + 1   (|x| > 1)
      f(x) = (f_1 + f_2 + f_3) / 3 = x^2 / 3  (|x| <= 1),  2 |x| / 3  (|x| > 1),

  whose only stationary point is 0 (its dynamics: :mod:`fedcore.counterexample`).
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from fedcore import models
from fedcore.checks import check_number, check_positive
from fedcore.data import federated_quadratic
from fedcore.data.federated import FederatedData
from fedcore.problem import Problem


def quadratic_2d(seed: int = 7, num_clients: int = 10, heterogeneity: float = 1.0) -> Problem:
    """The 2-D federated least-squares problem of :func:`fedcore.toy.server_optimizer_path` (float64).

    ``num_clients`` clients with 3 samples each and one shared design (module docstring);
    ``problem.data.info`` holds ``x_star`` and ``f_star``.
    """
    data = federated_quadratic(
        num_clients=num_clients, dim=2, samples_per_client=3, heterogeneity=heterogeneity, seed=seed
    )
    return Problem(data, models.linear_regression((2,)).double())

@dataclass(frozen=True)
class QuadraticTask:
    """A least-squares federation ``f(x) = 1/(2n) ||A x - y||^2`` with its smoothness ``L`` (the largest
    eigenvalue of ``A^T A / n``) and the gradient bound ``G`` at the start (the largest coordinate of
    ``|grad f(x_0)|``).  ``A`` is the inputs' first ``features`` columns (None: all of them; a tilted federation's
    inputs carry the clients' tilts beside, which cancel in ``f``)."""

    problem: Problem
    smoothness: float
    features: int | None = None

    @property
    def design(self) -> Tensor:
        """``A``: the inputs' first :attr:`features` columns."""
        return self.problem.data.inputs[:, :self.features]

    @property
    def gradient_bound(self) -> float:
        """``G``: the largest coordinate of ``|grad f(x_0)|`` at the model's start."""
        return float(self.gradient(self.problem.x0()).abs().max())

    def value(self, x: Tensor) -> float:
        """``f(x) = 1/(2n) ||A x - y||^2`` (a tilted federation's tilts cancel in f)."""
        return 0.5 * float((self.design @ x - self.problem.data.targets).square().mean())

    def gradient(self, x: Tensor) -> Tensor:
        """``grad f(x) = A^T (A x - y) / n``, the full gradient of the federation's objective."""
        design = self.design
        return design.T @ (design @ x - self.problem.data.targets) / design.shape[0]

    @property
    def record(self) -> SquaredGradientNorm:
        """``simulate(..., record=task.record)``: ``||grad f(x_t)||^2`` of every round's server model."""
        return SquaredGradientNorm(self.design, self.problem.data.targets)


@dataclass(frozen=True, eq=False)
class SquaredGradientNorm:
    """``||grad f(x)||^2`` of ``f(x) = 1/(2n) ||A x - y||^2`` at each row of ``x`` (``record=`` hands one run's
    server model, ``[1, d]``), as ``simulate(..., record=...)`` asks: a dataclass, so that the runs that record it
    are compared (``A`` and ``y`` by content) and kept in the results store."""

    inputs: Tensor
    targets: Tensor

    def __call__(self, x: Tensor) -> dict[str, Tensor]:
        gradients = (self.inputs.T @ (self.inputs @ x.T - self.targets.unsqueeze(1))).T / self.inputs.shape[0]
        return {"squared_gradient_norm": gradients.square().sum(1)}


def quadratic_task(num_clients: int = 50, dim: int = 10, samples_per_client: int = 20, heterogeneity: float = 1.0,
                   noise: float = 0.5, seed: int = 0) -> QuadraticTask:
    """Clients with their own designs and optima (``shared_design=False``: client drift is real) and noisy
    targets; minibatches of 4 of a client's samples make the gradients stochastic.  The data and the model's
    initial parameters both come from ``seed``."""
    data = federated_quadratic(num_clients, dim, samples_per_client, heterogeneity, noise, shared_design=False,
                               seed=seed)
    problem = Problem(data, models.make("linear_regression", (dim,), None, seed=seed).double())
    smoothness = float(torch.linalg.eigvalsh(data.inputs.T @ data.inputs / data.inputs.shape[0]).max())
    return QuadraticTask(problem, smoothness)

def scaled_quadratic_task(factor: float, seed: int = 0) -> QuadraticTask:
    """:func:`quadratic_task` with its objective times ``factor``: inputs and
    targets times ``sqrt(factor)``, the same minimizer and start, L (and every other constant) times ``factor``."""
    base, root = quadratic_task(seed=seed), math.sqrt(check_positive("factor", factor))
    data = base.problem.data
    scaled = dataclasses.replace(data, inputs=data.inputs * root, targets=data.targets * root,
                                 test_inputs=data.test_inputs * root, test_targets=data.test_targets * root)
    return QuadraticTask(Problem(scaled, base.problem.model), base.smoothness * factor)

def reparametrized_quadratic_task(scale: float, seed: int = 0) -> QuadraticTask:
    """:func:`quadratic_task` in other coordinates: ``g(theta) = f(scale * theta)`` (inputs times ``scale``),
    started at ``theta_0 = x_0 / scale``, the same point of ``f``.  The initial gap and the objective's values are
    unchanged; the smoothness is ``scale^2 L`` and the distance to the optimum ``|x_0 - x*| / scale``, so step
    sizes that suit one ``scale`` are too long or too short for another."""
    base, scale = quadratic_task(seed=seed), check_positive("scale", scale)
    data = base.problem.data
    moved = dataclasses.replace(data, inputs=data.inputs * scale, test_inputs=data.test_inputs * scale,
                                info={**data.info, "x_star": data.info["x_star"] / scale})
    module = copy.deepcopy(base.problem.model.module)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.div_(scale)
    return QuadraticTask(Problem(moved, module), base.smoothness * scale**2)


class TiltedLinear(nn.Module):
    """``y = <a, x>`` and ``<b, x>`` for an input row ``[a, b]`` (two outputs): with :func:`tilted_half_mse`, a
    least-squares sample plus the linear term ``<b, x>`` of its client."""

    def __init__(self, weight: Tensor) -> None:
        super().__init__()
        self.linear = nn.Linear(weight.shape[-1], 1, bias=False, dtype=weight.dtype)
        with torch.no_grad():
            self.linear.weight.copy_(weight.reshape(1, -1))

    def forward(self, inputs: Tensor) -> Tensor:
        design, tilt = inputs.chunk(2, dim=-1)
        return torch.cat([self.linear(design), self.linear(tilt)], dim=-1)


def tilted_half_mse(outputs: Tensor, targets: Tensor) -> Tensor:
    """``mean(0.5 (<a, x> - y)^2 + <b, x>)`` over a batch of :class:`TiltedLinear`'s outputs: a sample's gradient is
    ``a (<a, x> - y) + b``, its client's tilt ``b`` the same for every sample of the client."""
    return (0.5 * (outputs[..., 0] - targets).pow(2) + outputs[..., 1]).mean()


def tilted_quadratic_task(tilt: float, seed: int = 0) -> QuadraticTask:
    """:func:`quadratic_task` (its clients sharing one optimum: ``heterogeneity=0``) with client i's objective
    tilted, ``f_i(x) = f_i^0(x) + tilt <b_i, x>``, where the ``b_i`` sum to zero over the (equal-sized) clients and
    their root mean square norm is ``||grad f(x_0)||``.  The tilts cancel in ``f``, so ``f``, its optimum, the
    initial gap Delta, the smoothness L and every sample's gradient noise are the same at every ``tilt``; only the
    clients' gradients move apart (``grad f_i(x*) = grad f_i^0(x*) + tilt b_i``).  A sample's input is ``[a, b_i]``
    (:class:`TiltedLinear`, :func:`tilted_half_mse`); ``data.info["tilts"]`` holds ``tilt b``."""
    tilt, base = check_number("tilt", tilt), quadratic_task(heterogeneity=0.0, seed=seed)
    if tilt < 0:
        raise ValueError(f"tilt={tilt!r} must be >= 0 (the tilts' size; 0 is the untilted federation)")
    data, x0 = base.problem.data, base.problem.x0()
    directions = torch.randn(data.num_clients, data.inputs.shape[1], dtype=data.inputs.dtype,
                             generator=torch.Generator().manual_seed(seed + 1))
    directions -= directions.mean(0)  # sum_i b_i = 0: the tilts cancel in f
    directions *= float(base.gradient(x0).norm()) / float(directions.square().sum(1).mean().sqrt())
    tilts = tilt * directions
    owner = torch.repeat_interleave(torch.arange(data.num_clients), data.sizes)
    inputs = torch.cat([data.inputs, tilts[owner]], dim=1)
    test_owner = owner if data.test_inputs.shape[0] == data.inputs.shape[0] else None
    if test_owner is None:
        raise ValueError("the base federation's test set is not its training set: the tilt has no client there")
    tilted = dataclasses.replace(data, inputs=inputs, test_inputs=torch.cat([data.test_inputs, tilts[test_owner]], 1),
                                 info={**data.info, "tilts": tilts})
    problem = Problem(tilted, TiltedLinear(x0), loss=tilted_half_mse)
    return QuadraticTask(problem, base.smoothness, features=data.inputs.shape[1])


def quadratic_clients(a: Sequence[float], b: Sequence[float]) -> FederatedData:
    """One client per ``(a_i, b_i)``, holding one sample whose half squared error is ``f_i(x) = a_i (x - b_i)^2``
    (input ``s_i = sqrt(2 a_i)``, target ``s_i b_i``: ``0.5 (s x - s b)^2 = (s^2 / 2) (x - b)^2``), float64."""
    if len(a) != len(b) or not a:
        raise ValueError(f"a={list(a)} and b={list(b)} must be non-empty and of the same length (one per client)")
    s = torch.tensor([math.sqrt(2 * check_positive("a", a_i)) for a_i in a], dtype=torch.float64)
    inputs, targets = s.unsqueeze(1), s * torch.tensor([check_number("b", b_i) for b_i in b], dtype=torch.float64)
    clients = [torch.tensor([i]) for i in range(len(a))]
    return FederatedData.from_partition(inputs, targets, clients, inputs, targets, name="quadratic clients")

def shared_clients(num_clients: int = 4, dim: int = 3, samples: int = 8, seed: int = 4) -> FederatedData:
    """``num_clients`` clients that all hold the same ``samples`` least-squares rows (every ``f_i`` is ``f``):
    the homogeneous case, where Lemma 3's argument is sound."""
    base = federated_quadratic(num_clients=1, dim=dim, samples_per_client=samples, heterogeneity=1.0,
                               shared_design=False, seed=seed)
    rows = [torch.arange(samples * i, samples * (i + 1)) for i in range(num_clients)]
    return FederatedData.from_partition(base.inputs.repeat(num_clients, 1), base.targets.repeat(num_clients), rows,
                                        base.inputs, base.targets, name="shared clients")

def double_well(x: float, tilt: float = 0.0) -> float:
    """``(x^2 - 1)^2 + tilt x``: client 1 is ``tilt = +a``, client 2 ``-a``, their mean ``tilt = 0``."""
    return (x * x - 1) ** 2 + tilt * x


def double_well_slope(x: float, tilt: float = 0.0) -> float:
    """``4 x (x^2 - 1) + tilt``."""
    return 4 * x * (x * x - 1) + tilt

COUNTEREXAMPLE_CLIENTS = 3


def counterexample_f1(x: Tensor) -> Tensor:
    """``3 x^2`` for ``|x| <= 1``, ``6 |x| - 2`` beyond."""
    return torch.where(x.abs() <= 1, 3 * x**2, 6 * x.abs() - 2)


def counterexample_f2(x: Tensor) -> Tensor:
    """``-x^2`` for ``|x| <= 1``, ``-2 |x| + 1`` beyond (clients 2 and 3)."""
    return torch.where(x.abs() <= 1, -(x**2), -2 * x.abs() + 1)


def counterexample_f(x: Tensor) -> Tensor:
    """The global objective ``(f_1 + 2 f_2) / 3``: ``x^2 / 3`` or ``2 |x| / 3``."""
    return (counterexample_f1(x) + 2 * counterexample_f2(x)) / 3


class PiecewiseClients(nn.Module):
    """One parameter ``x``; a sample's input 1 selects ``f_1``, 0 selects ``f_2``."""

    def __init__(self, x0: float = 10.0) -> None:
        super().__init__()
        self.x = nn.Parameter(torch.tensor([x0], dtype=torch.float64))

    def forward(self, inputs: Tensor) -> Tensor:
        is_first = inputs.reshape(-1) > 0.5
        return torch.where(is_first, counterexample_f1(self.x), counterexample_f2(self.x))


def _mean_output(outputs: Tensor, targets: Tensor) -> Tensor:
    return outputs.mean()


def counterexample_problem(x0: float = 10.0) -> Problem:
    """The counterexample as a fedcore :class:`~fedcore.run.Problem` (float64, 3 clients)."""
    check_number("x0", x0)
    codes = torch.tensor([[1.0], [0.0], [0.0]], dtype=torch.float64)
    zeros = torch.zeros(COUNTEREXAMPLE_CLIENTS, dtype=torch.float64)
    data = FederatedData(codes, zeros, torch.ones(COUNTEREXAMPLE_CLIENTS, dtype=torch.long), codes, zeros,
                         name="counterexample")
    return Problem(data, PiecewiseClients(x0), loss=_mean_output)
