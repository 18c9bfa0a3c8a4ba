"""Shared fixtures: small problems with known answers, built in milliseconds; and CONTRIBUTING's new family,
registered as its guide says, so that every generic test (each parametrized over ``algorithms.EXAMPLES``) runs it."""

from __future__ import annotations

import pathlib
import re
import sqlite3

import pytest
import torch

from fedcore import algorithms
from fedcore.data import FederatedData, federated_quadratic

GUIDE = pathlib.Path(__file__).resolve().parents[1] / "CONTRIBUTING.md"


def guide_family() -> type:
    """CONTRIBUTING's "Adding an algorithm" block, executed once per test session (it registers its family as
    ``"server_momentum"``): its ``ServerMomentum``."""
    if "server_momentum" not in algorithms.ALGORITHMS:
        text = GUIDE.read_text().split("## Adding an algorithm", 1)[1]
        block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
        assert len(block.splitlines()) < 60, "a new family in under 60 lines, imports included"
        namespace: dict = {"__name__": "contributing_guide"}
        exec(compile(block, str(GUIDE), "exec", dont_inherit=True), namespace)  # noqa: S102 -- our own guide
    return algorithms.ALGORITHMS["server_momentum"]


guide_family()


@pytest.fixture
def quadratic() -> FederatedData:
    """10 clients, d = 5, a shared design: every algorithm's fixed point is ``info['x_star']``."""
    return federated_quadratic(num_clients=10, dim=5, samples_per_client=20, heterogeneity=1.0, seed=0)


def blobs(num_clients: int = 6, dim: int = 8, num_classes: int = 3, seed: int = 0) -> FederatedData:
    """Gaussian class blobs on clients of unequal size (7..27 samples), labels skewed per client."""
    generator = torch.Generator().manual_seed(seed)
    sizes = torch.tensor([7 + 4 * i for i in range(num_clients)])
    centers = 2 * torch.randn(num_classes, dim, generator=generator)
    labels = torch.cat([torch.arange(int(n)) % (1 + i % num_classes) for i, n in enumerate(sizes)])
    inputs = centers[labels] + torch.randn(len(labels), dim, generator=generator)
    test_labels = torch.arange(60) % num_classes
    test_inputs = centers[test_labels] + torch.randn(60, dim, generator=generator)
    return FederatedData(inputs, labels, sizes, test_inputs, test_labels, num_classes, "blobs")


@pytest.fixture
def tiny_classification() -> FederatedData:
    return blobs()


def cifar_like_loader(classes: int, per_client: int = 40):
    """A stand-in for ``load_torchvision`` that returns images of CIFAR's shape and label range (uint8
    ``[n, 32, 32, 3]``, ``per_client`` per client, 20 test images) through the same ``from_arrays``: the paper-scale
    CIFAR code paths run on it without the torchvision files."""
    from fedcore.data.sources import NORMALIZATION, from_arrays

    def generated(name, num_clients, partition, seed, device="cpu", **kwargs):
        images = torch.randint(0, 256, (num_clients * per_client, 32, 32, 3), dtype=torch.uint8,
                               generator=torch.Generator().manual_seed(seed))
        labels = torch.arange(num_clients * per_client) % classes
        return from_arrays(images, labels, images[:20], labels[:20], classes, num_clients, partition, seed, name,
                           *NORMALIZATION[name], device=device, **kwargs)

    return generated


def damage_store_entry(path: pathlib.Path) -> None:
    """Flip one byte in the middle of the (one) entry of the results store at ``path``: its checksum no longer
    matches."""
    with sqlite3.connect(path) as db:
        (payload,) = db.execute("SELECT payload FROM fedcore_runs").fetchone()
        damaged = bytearray(payload)
        damaged[len(damaged) // 2] ^= 0xFF
        db.execute("UPDATE fedcore_runs SET payload = ?", (bytes(damaged),))
