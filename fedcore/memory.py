"""Refuse a run that cannot fit before it allocates anything.

A per-client state (SCAFFOLD's control variates, FAFED's previous client models) holds
``num_clients x d`` numbers; a round gathers ``S x K x B`` row indices and each local step
``S x B`` samples.  A run whose state or round is larger than the memory the device has free
fails inside torch's allocator (or is killed by the kernel) after minutes of set-up.
:func:`check_fits` measures both first and raises a ``MemoryError`` with the sizes and a remedy.

The state's size is measured, not guessed: the algorithm's ``init`` runs on torch's ``meta``
device, which records shapes and allocates nothing.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from torch import Tensor

from fedcore.algorithms.contract import name_of

INDEX_BYTES = 8  # int64 row indices
ROUND_COPIES = 3  # sample_indices holds the sort keys, the positions and the gathered rows at once


def readable(count: float) -> str:
    """``96000000000`` -> ``'96 GB'``, ``24`` -> ``'24 B'``."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{int(count)} B"


def available_bytes(device: torch.device) -> int | None:
    """Free memory on ``device``: ``MemAvailable`` of ``/proc/meminfo`` on the CPU (or the physical
    pages the OS reports free), ``cudaMemGetInfo`` on a GPU; None where it cannot be read."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_allocation(what: str, count: float, device: Any = "cpu", remedy: str = "") -> None:
    """Raise ``MemoryError`` when ``count`` bytes for ``what`` exceed the free memory of ``device``
    (a data set about to be generated, say), before anything is allocated."""
    free = available_bytes(torch.device(device))
    if free is not None and count > free:
        raise MemoryError(f"{what} needs {readable(count)} but {torch.device(device)} has {readable(free)} free"
                          + (f": {remedy}" if remedy else ""))


def tensor_bytes(state: Any) -> int:
    """Bytes of every tensor in a (nested) state."""
    if isinstance(state, Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, dict):
        return sum(tensor_bytes(value) for value in state.values())
    if isinstance(state, (list, tuple)):
        return sum(tensor_bytes(value) for value in state)
    return 0


def state_bytes(algorithm: Any, x0: Tensor, num_clients: int) -> int | None:
    """Bytes of ``algorithm.init(x0, num_clients)``, measured on the meta device (None when the
    algorithm's init does something the meta device cannot)."""
    try:
        return tensor_bytes(algorithm.init(x0.to("meta"), num_clients))
    except Exception:  # noqa: BLE001 -- an init the meta device cannot run is simply not measured
        return None


def check_fits(
    algorithm: Any, x0: Tensor, num_clients: int, clients_per_round: int, local_steps: int, batch_size: int,
    sample_bytes: int, device: torch.device, available: int | None = None,
) -> None:
    """Raise ``MemoryError`` when the algorithm's state, or one round's indices and one step's samples,
    need more than the ``available`` bytes (default: what ``device`` has free)."""
    available = available_bytes(device) if available is None else available
    if available is None:
        return
    name = name_of(algorithm)
    state = state_bytes(algorithm, x0, num_clients)
    if state is not None and state > available:
        per_client = state / max(num_clients, 1)
        raise MemoryError(
            f"{name}'s state needs {readable(state)} (num_clients={num_clients} x d={x0.numel()}, "
            f"{readable(per_client)} per client) but {device} has {readable(available)} free: use fewer "
            "clients, a smaller model, an algorithm without per-client state (FedAvg, FedAdam), or a device "
            "with more memory"
        )
    round_bytes = (ROUND_COPIES * INDEX_BYTES * clients_per_round * local_steps * batch_size
                   + 2 * clients_per_round * batch_size * sample_bytes)
    if round_bytes + (state or 0) > available:
        raise MemoryError(
            f"one round needs at least {readable(round_bytes)} (clients_per_round={clients_per_round} x "
            f"local_steps={local_steps} x batch_size={batch_size} row indices, and {clients_per_round} x "
            f"{batch_size} samples of {sample_bytes} bytes per step) beside the state's "
            f"{readable(state or 0)}, but {device} has {readable(available)} free: use a smaller batch_size, "
            "fewer clients_per_round or fewer local_steps"
        )
