"""Counts and a figure of a Shakespeare data set: :func:`summary`, :func:`describe`, the windows histogram."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from fedcore.checks import check_int
from fedcore.data.federated import FederatedData
from fedcore.data.shakespeare_corpus import (
    DEFAULT_MIN_LINES,
    check_selection,
    check_targets,
    load_corpus,
    select_roles,
)
from fedcore.data.shakespeare_windows import count_chunks, count_windows

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["describe", "plot_windows_per_client", "summary"]

_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


def _summarize(num_plays: int, train_sizes: Tensor, test_sizes: Tensor) -> dict[str, Any]:
    sizes = train_sizes.double()
    quantiles = torch.quantile(sizes, torch.tensor(_QUANTILES, dtype=torch.float64)).tolist()
    return {
        "plays": num_plays,
        "clients": int(train_sizes.numel()),
        "train_windows": int(train_sizes.sum()),
        "test_windows": int(test_sizes.sum()),
        "mean_windows_per_client": float(sizes.mean()),
        "windows_per_client_quantiles": dict(zip(_QUANTILES, quantiles)),
    }


def summary(data: FederatedData) -> dict[str, Any]:
    """Counts of a loaded Shakespeare data set: plays, clients, train and test windows, and
    the quantiles (0, .1, .25, .5, .75, .9, 1) and mean of the training windows per client."""
    return _summarize(int(data.info["num_plays"]), data.sizes.cpu(), data.info["test_sizes"].cpu())


def describe(
    seq_len: int = 80, min_lines: int = DEFAULT_MIN_LINES, test_fraction: float = 0.2, *,
    plays: str | Sequence[str] | None = None, stride: int = 1, root: str | Path | None = None,
    download: bool = True, targets: str = "next",
) -> dict[str, Any]:
    """:func:`summary` of ``load_shakespeare(seq_len=..., ...)`` (all clients) without building
    the samples: counted from the cached corpus in milliseconds.  With ``targets="sequence"`` the
    "windows" are the chunks of ``seq_len + 1`` characters."""
    check_selection(None, seq_len, min_lines, test_fraction, stride, 0, plays)
    check_targets(targets, stride)
    corpus = load_corpus(root, download)
    kept, cuts = select_roles(corpus, None, seq_len, min_lines, test_fraction, plays, 0)
    lengths = (corpus["offsets"][1:] - corpus["offsets"][:-1]).tolist()

    def count(length: int) -> int:
        return count_chunks(length, seq_len) if targets == "sequence" else count_windows(length, seq_len, stride)

    train = torch.tensor([count(cut) for cut in cuts])
    test = torch.tensor([count(lengths[i] - cut) for i, cut in zip(kept, cuts)])
    return _summarize(len({corpus["clients"][i][0] for i in kept}), train, test)


def plot_windows_per_client(data: FederatedData, ax: Axes | None = None, bins: int = 40) -> Axes:
    """Histogram of the training windows per client (log-spaced bins, log x axis); returns the Axes."""
    import matplotlib.pyplot as plt

    check_int("bins", bins)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    sizes = data.sizes.cpu().double().numpy()
    edges = np.geomspace(max(sizes.min(), 1), sizes.max() * 1.0001, bins + 1)
    ax.hist(sizes, bins=edges, color="C0", edgecolor="white")
    ax.set_xscale("log")
    ax.axvline(float(np.median(sizes)), color="C3", linestyle="--", label=f"median {np.median(sizes):,.0f}")
    ax.set_xlabel("training windows per client")
    ax.set_ylabel("clients")
    ax.set_title(f"{data.name}: {data.num_clients} clients, {int(sizes.sum()):,} training windows")
    ax.legend()
    return ax
