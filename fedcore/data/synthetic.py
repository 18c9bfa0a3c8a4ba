"""Federated quadratics with a known optimum.

Client i holds least-squares data ``(A_i, y_i)``; with the ``mse`` loss its objective is
``f_i(x) = 1/(2 n_i) ||A_i x - y_i||^2`` and the federation's (weights ``n_i / n``) is
``f(x) = 1/(2n) sum_i ||A_i x - y_i||^2``, minimized at the normal-equation solution
``x* = (sum_i A_i^T A_i)^{-1} sum_i A_i^T y_i``.

Heterogeneity: each client's targets come from its own ``x*_i = x_c + h z_i``
(``z_i ~ N(0, I)``, ``h = heterogeneity``).  With ``shared_design=True`` all clients
share one design ``A``; then every client Hessian is the same, and FedAvg with K local
steps has no client-drift bias: it converges to ``x*`` exactly, like every other
algorithm here, which makes it the test problem with a known answer.
"""

from __future__ import annotations

import torch

from fedcore.checks import check_bool, check_int, check_range, check_seed
from fedcore.data.federated import FederatedData
from fedcore.memory import check_allocation


def federated_quadratic(
    num_clients: int = 10,
    dim: int = 5,
    samples_per_client: int = 20,
    heterogeneity: float = 1.0,
    noise: float = 0.0,
    shared_design: bool = True,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> FederatedData:
    """A least-squares federation; ``info['x_star']`` is its optimum, ``info['f_star']`` its value."""
    check_int("num_clients", num_clients)
    check_int("dim", dim)
    check_int("samples_per_client", samples_per_client, dim)
    check_range("heterogeneity", heterogeneity, 0)
    check_range("noise", noise, 0)
    check_bool("shared_design", shared_design)
    check_seed("seed", seed)
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype={dtype!r} not one of [torch.float32, torch.float64] (the optimum is solved in it)")
    numbers = num_clients * samples_per_client * (dim + 1) * (1 if shared_design else 2)
    check_allocation(f"federated_quadratic(num_clients={num_clients}, dim={dim}, samples_per_client="
                     f"{samples_per_client})", numbers * dtype.itemsize,
                     remedy="use fewer clients, fewer samples per client or a smaller dim")
    generator = torch.Generator().manual_seed(seed)
    draw = lambda *shape: torch.randn(*shape, generator=generator, dtype=dtype)  # noqa: E731
    center = draw(dim)
    if shared_design:
        design = draw(samples_per_client, dim).expand(num_clients, -1, -1)
    else:
        design = draw(num_clients, samples_per_client, dim)
    client_optima = center + heterogeneity * draw(num_clients, dim)
    targets = torch.einsum("nkd,nd->nk", design, client_optima) + noise * draw(num_clients, samples_per_client)
    inputs, targets = design.reshape(-1, dim).clone(), targets.reshape(-1)
    x_star = torch.linalg.solve(inputs.T @ inputs, inputs.T @ targets)
    f_star = 0.5 * float((inputs @ x_star - targets).pow(2).mean())
    sizes = torch.full((num_clients,), samples_per_client)
    return FederatedData(
        inputs, targets, sizes, inputs, targets, None, "federated_quadratic",
        {"x_star": x_star, "f_star": f_star, "client_optima": client_optima},
    )
