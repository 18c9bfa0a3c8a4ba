"""Synthetic(alpha, beta): the federated logistic-regression data of FedProx and LEAF.

Li et al., *Federated Optimization in Heterogeneous Networks* (FedProx, MLSys 2020),
Section 5.1 and Appendix C.1, following LEAF's ``synthetic`` generator (Caldas et al.
2018).  For client ``k``:

    u_k ~ N(0, alpha),  W_k ~ N(u_k, 1) in R^{C x d},  b_k ~ N(u_k, 1) in R^C
    B_k ~ N(0, beta),   v_k ~ N(B_k, 1) in R^d
    x ~ N(v_k, Sigma),  Sigma = diag(j^{-1.2}, j = 1..d)
    y = argmax softmax(W_k x + b_k)

``alpha`` controls how much the local models differ, ``beta`` how much the local
inputs differ.  As in LEAF's code, the second argument of ``N(mean, .)`` for ``alpha``
and ``beta`` is used as the standard deviation (numpy's ``scale``).  ``iid=True`` is
FedProx's Synthetic-IID: one ``W, b ~ N(0, 1)`` for all clients and ``v_k = 0``.

Client sizes follow LEAF's power law ``int(lognormal(4, 2)) + 50``, capped at
``max_client_size`` so the total stays modest.  Each client's samples are split into
train and test by ``test_fraction``; the test set of the returned data is the union of
the clients' test splits, in client order (``info["test_sizes"]`` gives each client's
share).  Every draw comes from ``numpy.random.default_rng(seed)``, so the values differ
from LEAF's files (which use ``np.random.seed``) but are reproducible.
"""

from __future__ import annotations

import numpy as np
import torch

from fedcore.checks import check_bool, check_device, check_int, check_range, check_seed
from fedcore.data.federated import FederatedData
from fedcore.memory import check_allocation


def _client_sizes(rng: np.random.Generator, num_clients: int, max_client_size: int) -> np.ndarray:
    sizes = rng.lognormal(4, 2, num_clients).astype(np.int64) + 50
    return np.minimum(sizes, max_client_size)


def _client_models(rng, alpha: float, num_clients: int, dim: int, num_classes: int, iid: bool):
    """``W [N, C, d]`` and ``b [N, C]``: per-client, or one shared model when ``iid``."""
    if iid:
        shared_w = rng.normal(0.0, 1.0, (num_classes, dim))
        shared_b = rng.normal(0.0, 1.0, num_classes)
        return np.broadcast_to(shared_w, (num_clients, num_classes, dim)), \
            np.broadcast_to(shared_b, (num_clients, num_classes))
    u = rng.normal(0.0, alpha, num_clients)
    weights = rng.normal(u[:, None, None], 1.0, (num_clients, num_classes, dim))
    biases = rng.normal(u[:, None], 1.0, (num_clients, num_classes))
    return weights, biases


def _client_means(rng, beta: float, num_clients: int, dim: int, iid: bool) -> np.ndarray:
    """``v [N, d]``: v_k ~ N(B_k, 1) with B_k ~ N(0, beta); zeros when ``iid``."""
    if iid:
        return np.zeros((num_clients, dim))
    big_b = rng.normal(0.0, beta, num_clients)
    return rng.normal(big_b[:, None], 1.0, (num_clients, dim))


def _labels(x: np.ndarray, weights, biases, sizes: np.ndarray) -> np.ndarray:
    """y = argmax softmax(W_k x + b_k) = argmax of the logits, client by client."""
    y = np.empty(x.shape[0], dtype=np.int64)
    for k, (start, stop) in enumerate(zip(np.cumsum(sizes) - sizes, np.cumsum(sizes))):
        y[start:stop] = (x[start:stop] @ weights[k].T + biases[k]).argmax(axis=1)
    return y


def _split_train_test(x, y, sizes: np.ndarray, test_fraction: float):
    """Per client: first ``n_k - floor(test_fraction n_k)`` rows train, the rest test."""
    owner = np.repeat(np.arange(sizes.size), sizes)
    position = np.arange(owner.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    test_sizes = np.floor(test_fraction * sizes).astype(np.int64)
    is_test = position >= (sizes - test_sizes)[owner]
    return x[~is_test], y[~is_test], x[is_test], y[is_test], sizes - test_sizes, test_sizes


def leaf_synthetic(
    alpha: float, beta: float, num_clients: int = 30, dim: int = 60, num_classes: int = 10,
    seed: int = 0, iid: bool = False, test_fraction: float = 0.2,
    max_client_size: int = 1000, device: str | torch.device = "cpu",
) -> FederatedData:
    """FedProx's Synthetic(alpha, beta) as :class:`FederatedData` (see module docstring).

    Inputs float32 ``[n, dim]``, targets long.  ``Synthetic(0, 0)``, ``(0.5, 0.5)`` and
    ``(1, 1)`` are the paper's settings (30 clients, d = 60, 10 classes).
    """
    check_range("alpha", alpha, 0)
    check_range("beta", beta, 0)
    check_int("num_clients", num_clients)
    check_int("dim", dim)
    check_int("num_classes", num_classes, 2)
    check_seed("seed", seed)
    check_range("test_fraction", test_fraction, 0, 1)
    check_int("max_client_size", max_client_size, 50)
    check_bool("iid", iid)
    check_device("device", device)
    samples = num_clients * max_client_size
    check_allocation(f"leaf_synthetic(num_clients={num_clients}, dim={dim}, num_classes={num_classes})",
                     8 * (samples * (dim + num_classes) + num_clients * num_classes * (dim + 1)),
                     remedy="use fewer clients, a smaller dim or fewer classes")
    rng = np.random.default_rng(seed)
    sizes = _client_sizes(rng, num_clients, max_client_size)
    weights, biases = _client_models(rng, float(alpha), num_clients, dim, num_classes, iid)
    means = _client_means(rng, float(beta), num_clients, dim, iid)
    owner = np.repeat(np.arange(num_clients), sizes)
    sigma = np.arange(1, dim + 1) ** -0.6  # std = sqrt(j^-1.2)
    x = means[owner] + rng.standard_normal((owner.size, dim)) * sigma
    y = _labels(x, weights, biases, sizes)
    train_x, train_y, test_x, test_y, train_sizes, test_sizes = _split_train_test(
        x, y, sizes, float(test_fraction)
    )
    info = {"alpha": alpha, "beta": beta, "iid": iid, "seed": seed,
            "test_sizes": torch.from_numpy(test_sizes)}
    data = FederatedData(
        torch.from_numpy(train_x).float(), torch.from_numpy(train_y).long(),
        torch.from_numpy(train_sizes), torch.from_numpy(test_x).float(),
        torch.from_numpy(test_y).long(), num_classes, f"synthetic({alpha},{beta})", info,
    )
    return data.to(device)
