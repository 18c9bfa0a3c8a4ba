"""Federated data: the resident-tensor container, partitioners and sources."""

from fedcore.data.federated import FederatedData
from fedcore.data.leaf_synthetic import leaf_synthetic
from fedcore.data.partition import PARTITIONERS, dirichlet, iid, shards, similarity
from fedcore.data.shakespeare import load_shakespeare
from fedcore.data.sources import (
    LOADERS,
    from_arrays,
    load,
    load_fashion_mnist,
    load_torchvision,
    read_idx,
)
from fedcore.data.synthetic import federated_quadratic

# The dispatcher ``partition`` is not re-exported: it would hide the submodule
# ``fedcore.data.partition``; use ``from fedcore.data.partition import partition``.
__all__ = [
    "FederatedData",
    "LOADERS",
    "PARTITIONERS",
    "dirichlet",
    "federated_quadratic",
    "from_arrays",
    "iid",
    "leaf_synthetic",
    "load",
    "load_fashion_mnist",
    "load_shakespeare",
    "load_torchvision",
    "read_idx",
    "shards",
    "similarity",
]
