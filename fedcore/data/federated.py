"""``FederatedData``: every client's samples resident as tensors, gathered by index.

All training samples live in one tensor, ordered so that client ``i`` owns the
contiguous rows ``offsets[i] : offsets[i] + sizes[i]``.  A round asks for the
minibatches of its ``S`` sampled clients for ``K`` local steps of ``B`` samples and
gets them in one gather, shaped ``[S, K, B, ...]``: no DataLoader, no per-client
Python copies.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor

from fedcore.checks import check_device, check_int


@dataclass
class FederatedData:
    """Client-partitioned training data plus a centralized test set.

    Build one with :meth:`from_partition`.  ``targets`` are class ids (``long``) for
    classification or reals (``float``) for regression; ``num_classes`` is ``None``
    for regression.  ``info`` holds what a source knows beyond the samples (a known
    optimum ``x_star``, class names, the partition's parameters).
    """

    inputs: Tensor
    targets: Tensor
    sizes: Tensor
    test_inputs: Tensor
    test_targets: Tensor
    num_classes: int | None = None
    name: str = "data"
    info: dict = field(default_factory=dict)
    offsets: Tensor = field(init=False)

    def __post_init__(self) -> None:
        for name in ("inputs", "targets", "sizes", "test_inputs", "test_targets"):
            if not isinstance(getattr(self, name), Tensor):
                raise TypeError(f"{name}={type(getattr(self, name)).__name__} must be a torch.Tensor")
        tensors = {name: getattr(self, name) for name in ("inputs", "targets", "sizes", "test_inputs", "test_targets")}
        apart = [f"{name} on {t.device}" for name, t in tensors.items()
                 if name != "sizes" and t.device != self.inputs.device]
        if apart:
            raise ValueError(f"inputs is on {self.inputs.device} but {', '.join(apart)}: the training and test "
                             "tensors of a FederatedData live on one device (move them with .to(device) first)")
        for name, tensor in tensors.items():
            if tensor.is_meta:
                raise ValueError(f"{name} is on the meta device (a shape without values): a FederatedData needs "
                                 "the samples themselves")
        if self.num_classes is not None:
            self.num_classes = check_int("num_classes", self.num_classes, 2)
        if self.inputs.shape[0] != self.targets.shape[0]:
            raise ValueError(
                f"inputs has {self.inputs.shape[0]} rows but targets has {self.targets.shape[0]}"
            )
        if self.test_inputs.shape[0] != self.test_targets.shape[0]:
            raise ValueError(f"test_inputs has {self.test_inputs.shape[0]} rows but test_targets has "
                             f"{self.test_targets.shape[0]}")
        if self.test_inputs.shape[1:] != self.inputs.shape[1:] or self.test_targets.shape[1:] != self.targets.shape[1:]:
            raise ValueError(f"test samples are shaped {tuple(self.test_inputs.shape[1:])} -> "
                             f"{tuple(self.test_targets.shape[1:])}, training samples "
                             f"{tuple(self.inputs.shape[1:])} -> {tuple(self.targets.shape[1:])}: they must agree")
        if self.num_classes is not None and self.targets.is_floating_point():
            raise ValueError(f"targets are {self.targets.dtype} but num_classes={self.num_classes}: class targets "
                             "are integer ids (use .long()), or pass num_classes=None for regression")
        if self.sizes.dim() != 1 or self.sizes.is_floating_point() or self.sizes.is_complex():
            raise ValueError(f"sizes must be a 1-d integer tensor of client sample counts, got "
                             f"{self.sizes.dtype} of shape {tuple(self.sizes.shape)}")
        for name in ("inputs", "test_inputs", "targets", "test_targets"):
            values = getattr(self, name)  # NaN and inf show in the extremes (one pass, 15x cheaper than isfinite)
            if values.is_floating_point() and values.numel() and not bool(torch.isfinite(torch.stack(
                    torch.aminmax(values))).all()):
                raise ValueError(f"{name} has {int((~torch.isfinite(values)).sum())} non-finite entries (NaN or inf)")
        if self.sizes.numel() == 0:
            raise ValueError("sizes is empty: a federation needs at least one client")
        if int(self.sizes.sum()) != self.inputs.shape[0]:
            raise ValueError(f"sizes sum to {int(self.sizes.sum())}, not {self.inputs.shape[0]} rows")
        if bool((self.sizes <= 0).any()):
            empty = torch.nonzero(self.sizes <= 0).flatten().tolist()
            raise ValueError(f"clients {empty[:10]} have no samples; every client needs at least one")
        for name in ("targets", "test_targets"):
            values = getattr(self, name)
            if self.num_classes is not None and values.numel():
                low, high = int(values.min()), int(values.max())
                if low < 0 or high >= self.num_classes:
                    raise ValueError(f"{name} span [{low}, {high}], outside num_classes={self.num_classes}")
        self.sizes = self.sizes.to(device=self.inputs.device, dtype=torch.long)
        self.offsets = torch.cumsum(self.sizes, 0) - self.sizes

    @classmethod
    def from_partition(
        cls,
        inputs: Tensor,
        targets: Tensor,
        client_indices: Sequence[Tensor],
        test_inputs: Tensor,
        test_targets: Tensor,
        num_classes: int | None = None,
        name: str = "data",
        info: dict | None = None,
    ) -> FederatedData:
        """Reorder ``inputs``/``targets`` so each client's rows (``client_indices[i]``) are contiguous.

        Each row belongs to at most one client (a row given to two is refused); rows no client
        holds are left out, with a warning that says how many.
        """
        if not isinstance(client_indices, Sequence) or isinstance(client_indices, (str, bytes, Tensor)):
            raise TypeError(f"client_indices={type(client_indices).__name__} must be a list of index tensors, "
                            "one per client")
        if len(client_indices) == 0:
            raise ValueError("client_indices is empty: a federation needs at least one client")
        num_rows = targets.shape[0] if isinstance(targets, Tensor) else len(targets)
        indices = [_client_rows(i, idx, num_rows) for i, idx in enumerate(client_indices)]
        order = torch.cat(indices)
        owners = torch.full((num_rows,), -1, dtype=torch.long)
        for client, rows in enumerate(indices):
            taken = owners[rows] >= 0
            if bool(taken.any()) or rows.unique().numel() != rows.numel():
                row = int(rows[taken][0]) if bool(taken.any()) else int(rows[rows.bincount().argmax()])
                first = int(owners[row]) if owners[row] >= 0 else client
                raise ValueError(f"row {row} is given to client {first} and client {client} (client_indices[{client}]"
                                 "): each row belongs to at most one client")
            owners[rows] = client
        unassigned = int((owners < 0).sum())
        if unassigned:
            warnings.warn(f"{unassigned} of {num_rows} rows are held by no client and left out of training",
                          UserWarning, stacklevel=2)
        sizes = torch.tensor([idx.numel() for idx in indices], dtype=torch.long)
        return cls(
            inputs[order], targets[order], sizes, test_inputs, test_targets, num_classes, name,
            dict(info or {}),
        )

    @property
    def num_clients(self) -> int:
        return int(self.sizes.numel())

    @property
    def device(self) -> torch.device:
        return self.inputs.device

    def to(self, device: str | torch.device) -> FederatedData:
        """A copy with every tensor on ``device`` (``self`` when they are all there already)."""
        check_device("device", device)
        tensors = [self.inputs, self.targets, self.sizes, self.test_inputs, self.test_targets,
                   *(v for v in self.info.values() if isinstance(v, Tensor))]
        if all(tensor.device == torch.device(device) for tensor in tensors):
            return self
        return FederatedData(
            self.inputs.to(device),
            self.targets.to(device),
            self.sizes.to(device),
            self.test_inputs.to(device),
            self.test_targets.to(device),
            self.num_classes,
            self.name,
            {k: v.to(device) if isinstance(v, Tensor) else v for k, v in self.info.items()},
        )

    def test_subset(self, keep: int | None, seed: int = 0) -> FederatedData:
        """A copy with a random ``keep`` of the test samples (drawn from ``seed``, kept in their order); the
        whole test set when ``keep`` is None or not smaller.  The training data is shared, not copied."""
        if keep is None or check_int("keep", keep) >= self.test_targets.shape[0]:
            return self
        rows = torch.randperm(self.test_targets.shape[0], generator=torch.Generator().manual_seed(seed))[:keep]
        rows = rows.sort().values.to(self.device)
        return FederatedData(self.inputs, self.targets, self.sizes, self.test_inputs[rows], self.test_targets[rows],
                             self.num_classes, self.name, {**self.info, "test_samples": keep})

    def client(self, i: int) -> tuple[Tensor, Tensor]:
        """All training samples of client ``i`` as ``(inputs, targets)``."""
        check_int("client", i, 0, self.num_clients - 1)
        start, size = int(self.offsets[i]), int(self.sizes[i])
        return self.inputs[start : start + size], self.targets[start : start + size]

    def label_counts(self) -> Tensor:
        """``[num_clients, num_classes]`` count of each label on each client."""
        if self.num_classes is None:
            raise ValueError(f"{self.name} is a regression data set: it has no labels to count")
        owner = torch.repeat_interleave(torch.arange(self.num_clients, device=self.device), self.sizes)
        flat = owner * self.num_classes + self.targets.long()
        counts = torch.bincount(flat, minlength=self.num_clients * self.num_classes)
        return counts.view(self.num_clients, self.num_classes)

    def label_skew(self) -> float:
        """Mean over clients of the total-variation distance between the client's label
        distribution and the global one: 0 for identical label shares, 1 for disjoint labels."""
        counts = self.label_counts().double()
        shares, overall = counts / counts.sum(1, keepdim=True), counts.sum(0) / counts.sum()
        return float(0.5 * (shares - overall).abs().sum(1).mean())

    def sample_batches(
        self, clients: Tensor, steps: int, batch_size: int, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """Minibatches for ``steps`` local steps of each client in ``clients``.

        Returns ``(inputs [S, K, B, ...], targets [S, K, B, ...])``, gathered at the rows
        of :meth:`sample_indices` (the simulator keeps the rows and gathers step by step).
        """
        clients = torch.as_tensor(clients, device=self.device) if isinstance(clients, (list, tuple)) else clients
        if not isinstance(clients, Tensor) or clients.is_floating_point() or clients.dim() != 1:
            raise TypeError(f"clients={clients!r} must be a 1-d integer tensor of client ids")
        if clients.numel() == 0 or int(clients.min()) < 0 or int(clients.max()) >= self.num_clients:
            raise ValueError(f"clients={clients.tolist()[:10]} must be non-empty ids in [0, {self.num_clients - 1}]")
        rows = self.sample_indices(clients, steps, batch_size, generator)
        flat = rows.reshape(-1)
        return (
            self.inputs.index_select(0, flat).view(*rows.shape, *self.inputs.shape[1:]),
            self.targets.index_select(0, flat).view(*rows.shape, *self.targets.shape[1:]),
        )

    def sample_indices(
        self, clients: Tensor, steps: int, batch_size: int, generator: torch.Generator | None = None
    ) -> Tensor:
        """Global row indices ``[S, K, B]`` of the round's minibatches.

        Each client walks through a fresh random permutation of its samples, as a
        shuffled DataLoader does in an epoch: its ``K * B`` samples of the round are
        drawn without replacement, and a client with fewer than ``K * B`` samples goes
        through the same permutation again.  So every minibatch of ``B <= n_i`` samples
        is distinct, and ``B = n_i`` gives each step the client's full data set (an
        exact gradient).
        """
        check_int("steps", steps)
        check_int("batch_size", batch_size)
        sizes = self.sizes[clients].view(-1, 1)
        width = int(sizes.max())
        keys = torch.rand((clients.numel(), width), generator=generator, device=self.device)
        keys.masked_fill_(torch.arange(width, device=self.device) >= sizes, 2.0)  # padding sorts last
        permutation = keys.argsort(dim=1)  # row s: a permutation of 0..n_s-1, then the padding
        position = torch.arange(steps * batch_size, device=self.device) % sizes  # [S, K*B]
        local = permutation.gather(1, position)
        return (self.offsets[clients].view(-1, 1) + local).view(-1, steps, batch_size)

    def __repr__(self) -> str:
        sizes = self.sizes.float()
        return (
            f"FederatedData({self.name!r}: {self.num_clients} clients, {int(self.sizes.sum())} train "
            f"and {self.test_targets.shape[0]} test samples, input {tuple(self.inputs.shape[1:])}, "
            f"client sizes {int(sizes.min())}..{int(sizes.max())} (mean {sizes.mean():.1f}))"
        )


def _client_rows(client: int, rows: object, num_rows: int) -> Tensor:
    """``client_indices[client]`` as a 1-d long tensor of rows in ``[0, num_rows)``."""
    tensor = torch.as_tensor(rows).cpu()
    if tensor.numel() and (tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool):
        raise TypeError(f"client_indices[{client}] holds {tensor.dtype} values; row indices are integers")
    tensor = tensor.long().reshape(-1)
    if tensor.numel() and (int(tensor.min()) < 0 or int(tensor.max()) >= num_rows):
        bad = int(tensor.min()) if int(tensor.min()) < 0 else int(tensor.max())
        raise ValueError(f"client_indices[{client}] holds row {bad}, outside [0, {num_rows}) (the data has "
                         f"{num_rows} rows)")
    return tensor
