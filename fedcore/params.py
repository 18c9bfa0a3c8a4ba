"""An ``nn.Module`` seen as a flat parameter vector ``x`` in R^d, and the gradient oracle.

The papers write every update in R^d; so does fedcore.  :class:`FlatModel` flattens a
module's parameters once, and evaluates ``loss(x, batch)`` for any vector ``x`` through
``torch.func.functional_call``.  :class:`GradientOracle` is the only place that knows
about ``nn.Module``: it takes the ``S`` client models of a round as a matrix
``X [S, d]`` and one minibatch per client, and returns per-client losses ``[S]`` and
gradients ``[S, d]``.  Its two backends compute the same numbers:

- ``loop``: one autograd call per client (fast for convolutions and LSTMs on a CPU);
- ``vmap``: ``torch.func.vmap(grad_and_value(loss))``, all clients in one batched call
  per layer (fast where per-call overhead dominates: dense models, any model on a GPU).

``auto`` picks by a fixed rule (:func:`choose_backend`), so a run never changes backend.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, vmap

from fedcore.checks import check_choice, check_int

LossFn = Callable[[Tensor, Tensor], Tensor]


def half_mse(outputs: Tensor, targets: Tensor) -> Tensor:
    """``0.5 * mean((outputs - targets)^2)``: least squares, gradient ``A^T (A x - y) / n``."""
    return 0.5 * (outputs.reshape(targets.shape) - targets).pow(2).mean()


def cross_entropy(outputs: Tensor, targets: Tensor) -> Tensor:
    """Mean cross-entropy over a batch; sequence outputs ``[B, T, C]`` are flattened."""
    return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))


LOSSES: dict[str, LossFn] = {"cross_entropy": cross_entropy, "mse": half_mse}
BACKENDS = ("auto", "loop", "vmap")


class FlatModel:
    """A module's parameters as one vector ``x`` in R^d (buffers stay in the module).

    >>> model = FlatModel(nn.Linear(3, 2))
    >>> model.dim, model.x0().shape
    (8, torch.Size([8]))
    """

    def __init__(self, module: nn.Module, loss: str | LossFn = "cross_entropy") -> None:
        if not isinstance(module, nn.Module):
            raise TypeError(f"module={module!r} must be a torch.nn.Module")
        if isinstance(loss, str):
            loss = LOSSES[check_choice("loss", loss, LOSSES)]
        self.module = module
        self.loss_fn: LossFn = loss
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        self.names = [name for name, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.dim = sum(self.numels)
        self.buffers = dict(module.named_buffers())

    def x0(self) -> Tensor:
        """The module's current parameters, flattened (a copy)."""
        params = dict(self.module.named_parameters())
        return torch.cat([params[name].detach().reshape(-1) for name in self.names])

    def unflatten(self, x: Tensor) -> dict[str, Tensor]:
        """Views of ``x`` shaped like each parameter, keyed by parameter name."""
        if x.shape[-1] != self.dim:
            raise ValueError(f"x has {x.shape[-1]} entries, the model has d={self.dim}")
        chunks = torch.split(x, self.numels, dim=-1)
        return {n: c.view(*x.shape[:-1], *s) for n, c, s in zip(self.names, chunks, self.shapes)}

    def forward(self, x: Tensor, inputs: Tensor) -> Tensor:
        """The module's output at parameters ``x``."""
        return functional_call(self.module, (self.unflatten(x), self.buffers), (inputs,))

    def loss(self, x: Tensor, inputs: Tensor, targets: Tensor) -> Tensor:
        """``F(x; batch)``: the scalar loss of the model at ``x`` on one minibatch."""
        return self.loss_fn(self.forward(x, inputs), targets)

    def to(self, device: str | torch.device) -> FlatModel:
        self.module.to(device)
        self.buffers = dict(self.module.named_buffers())
        return self

    @contextmanager
    def mode(self, training: bool) -> Iterator[None]:
        """Temporarily switch dropout & co. to train or eval mode."""
        before = self.module.training
        self.module.train(training)
        try:
            yield
        finally:
            self.module.train(before)


_LOOP_LAYERS = (nn.modules.conv._ConvNd, nn.RNNBase)


def choose_backend(model: FlatModel, device: str | torch.device) -> str:
    """The ``auto`` rule: ``vmap`` on an accelerator; on a CPU, ``loop`` for models with
    convolutions or recurrent layers (vmap turns them into slow grouped convolutions or a
    per-sample fallback) and ``vmap`` for dense models (3-13x faster: benchmarks/)."""
    if torch.device(device).type != "cpu":
        return "vmap"
    has_loop_layer = any(isinstance(m, _LOOP_LAYERS) for m in model.module.modules())
    return "loop" if has_loop_layer else "vmap"


class GradientOracle:
    """Per-client losses and gradients of ``S`` client models on one minibatch each.

    ``oracle(X, inputs, targets)`` with ``X [S, d]``, ``inputs [S, B, ...]`` and
    ``targets [S, B]`` returns ``(losses [S], grads [S, d])``; ``grads[s]`` is
    ``grad F(X[s]; inputs[s], targets[s])``.  Dropout draws independent masks per
    client under both backends.
    """

    def __init__(self, model: FlatModel, backend: str = "auto", device: str | torch.device = "cpu"):
        check_choice("backend", backend, BACKENDS)
        self.model = model
        self.backend = choose_backend(model, device) if backend == "auto" else backend
        self.calls = 0
        self._batched = vmap(grad_and_value(model.loss), randomness="different")

    def __call__(self, X: Tensor, inputs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        if X.dim() != 2 or X.shape[1] != self.model.dim:
            raise ValueError(f"X has shape {tuple(X.shape)}, expected [S, d={self.model.dim}]")
        if inputs.shape[0] != X.shape[0] or targets.shape[0] != X.shape[0]:
            raise ValueError(
                f"X has {X.shape[0]} clients but inputs/targets have "
                f"{inputs.shape[0]}/{targets.shape[0]}"
            )
        self.calls += 1
        if self.backend == "vmap":
            grads, losses = self._batched(X, inputs, targets)
            return losses.detach(), grads.detach()
        return self._loop(X, inputs, targets)

    def _loop(self, X: Tensor, inputs: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
        losses = X.new_empty(X.shape[0])
        grads = torch.empty_like(X)
        for s in range(X.shape[0]):
            x = X[s].detach().requires_grad_(True)
            loss = self.model.loss(x, inputs[s], targets[s])
            (grads[s],) = torch.autograd.grad(loss, x)
            losses[s] = loss.detach()
        return losses, grads

    def losses(self, X: Tensor, inputs: Tensor, targets: Tensor) -> Tensor:
        """Per-client losses ``[S]`` without gradients (for line searches)."""
        with torch.no_grad():
            if self.backend == "vmap":
                return vmap(self.model.loss, randomness="different")(X, inputs, targets)
            return torch.stack([self.model.loss(X[s], inputs[s], targets[s]) for s in range(len(X))])


@torch.no_grad()
def evaluate(
    model: FlatModel, x: Tensor, inputs: Tensor, targets: Tensor, batch_size: int = 2000
) -> dict[str, float]:
    """Mean loss and (for class targets) accuracy of the model at ``x``, in eval mode."""
    check_int("batch_size", batch_size)
    total_loss, correct, count = 0.0, 0, 0
    with model.mode(training=False):
        for start in range(0, targets.shape[0], batch_size):
            batch_in = inputs[start : start + batch_size]
            batch_t = targets[start : start + batch_size]
            outputs = model.forward(x, batch_in)
            total_loss += float(model.loss_fn(outputs, batch_t)) * batch_t.numel()
            count += batch_t.numel()
            if not batch_t.is_floating_point():
                correct += int((outputs.argmax(-1) == batch_t).sum())
    metrics = {"test_loss": total_loss / max(count, 1)}
    if not targets.is_floating_point():
        metrics["test_accuracy"] = correct / max(count, 1)
    return metrics
