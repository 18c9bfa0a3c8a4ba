"""The random streams of a run, one convention for the engine and for :mod:`fedcore.flower`.

A run's seed ``s`` starts three streams, each used for one thing only, so that Flower's strategy draws the clients
and minibatch rows :func:`fedcore.simulate` draws (a Flower node's dropout masks come from its own process):

- ``clients``: which clients each round samples (``s``, a CPU generator: ``randperm(N)[:S]``);
- ``minibatches``: the rows of each sampled client's K minibatches (``s + 1``, on the data's device);
- ``dropout``: the masks of dropout layers, torch's global generator seeded ``s + 2`` while the run computes (a pass
  of several runs draws its masks from its first run's stream).

:meth:`Streams.sample` draws round ``t``'s batch.  A checkpoint keeps the three states (:meth:`Streams.state`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from fedcore.algorithms.batch import RoundBatch
from fedcore.checks import check_device, check_seed
from fedcore.data.federated import FederatedData


class Streams:
    """The three random streams of the run with seed ``seed`` on ``device`` (see the module docstring); the seed is
    an int in ``[0, 2**62]`` (:func:`~fedcore.checks.check_seed`: torch would wrap a negative one) and the device one
    this machine has (:func:`~fedcore.checks.check_device`), both refused by name."""

    def __init__(self, seed: int, device: torch.device | str = "cpu") -> None:
        seed, device = check_seed("seed", seed), check_device("device", device)
        self.clients = torch.Generator().manual_seed(seed)
        self.minibatches = torch.Generator(device=device).manual_seed(seed + 1)
        self.dropout: Tensor = torch.Generator().manual_seed(seed + 2).get_state()

    def sample(self, data: FederatedData, t: int, options: Any, dtype: torch.dtype) -> RoundBatch:
        """Round ``t``'s batch of this run under ``options`` (a :class:`~fedcore.engine.options.RunOptions`):
        :func:`sample_round` from these streams."""
        return sample_round(data, t, options.clients_per_round, options.local_steps, options.batch_size,
                            options.weighting, dtype, self.clients, self.minibatches)

    def state(self) -> dict[str, Tensor]:
        """The three streams' states (a checkpoint keeps them)."""
        return {"sampler": self.clients.get_state(), "batch_generator": self.minibatches.get_state(),
                "dropout_rng": self.dropout}

    def load(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state`'s ``state``."""
        self.clients.set_state(state["sampler"])
        self.minibatches.set_state(state["batch_generator"].to(self.minibatches.get_state().device))
        self.dropout = state["dropout_rng"]


def sample_round(
    data: FederatedData, t: int, clients_per_round: int, local_steps: int, batch_size: int,
    weighting: str, dtype: torch.dtype, sampler: torch.Generator, batch_generator: torch.Generator,
) -> RoundBatch:
    """Round ``t``'s batch of one run: ``clients_per_round`` clients drawn without replacement (``sampler``,
    a CPU generator), their weights (``n_i / sum n_j`` or uniform) and the rows ``[S, K, B]`` of their
    ``local_steps`` minibatches of ``batch_size`` (``batch_generator``, on the data's device:
    :meth:`FederatedData.sample_indices`), gathered step by step by :meth:`RoundBatch.step`."""
    clients = torch.randperm(data.num_clients, generator=sampler)[:clients_per_round].to(data.device)
    sizes = data.sizes[clients].to(dtype)
    weights = sizes / sizes.sum() if weighting == "samples" else torch.full_like(sizes, 1 / clients_per_round)
    rows = data.sample_indices(clients, local_steps, batch_size, batch_generator)
    return RoundBatch(t, clients, weights, rows, data.inputs, data.targets, data.num_clients, sizes=data.sizes)
