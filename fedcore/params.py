"""An ``nn.Module`` seen as a flat parameter vector ``x`` in R^d, and the gradient oracle.

The papers write every update in R^d; so does fedcore.  :class:`FlatModel` flattens a
module's parameters once, and evaluates ``loss(x, batch)`` for any vector ``x`` through
``torch.func.functional_call``.  :class:`GradientOracle` is the only place that knows
about ``nn.Module``: it takes the ``S`` client models of a round as a matrix
``X [S, d]`` (a pass of R runs hands it all R*S clients as one matrix:
:func:`~fedcore.algorithms.client.train_clients`) and one minibatch per client, and returns
per-client losses ``[S]`` and gradients ``[S, d]``.  Its two backends compute the same numbers:

- ``loop``: one autograd call per client (fast for convolutions and LSTMs on a CPU);
- ``vmap``: ``torch.func.vmap(grad_and_value(loss))``, all clients in one batched call
  per layer (fast where per-call overhead dominates: dense models, any model on a GPU).

``auto`` picks by a fixed rule (:func:`choose_backend`), so a run never changes backend.

Speed (``benchmarks/README.md``): both backends hand each client's gradient, parameter by
parameter, straight into one ``[S, d]`` matrix, which the caller may own and pass as
``out=`` (the K-step loop of :mod:`fedcore.algorithms.client` does): on a CPU a fresh matrix
over 32 MB pages in new memory, 3-5% of a CNN round, 12-21% of a round of MLPs with
0.16M-1.8M parameters.  Reuse is the caller's decision, never a guess.

Two points on the same minibatch with the same dropout masks (STORM's second gradient,
a line search's loss probes): take :meth:`GradientOracle.random_state` before the first
evaluation and evaluate the others inside :meth:`GradientOracle.replaying`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad_and_value, vmap

from fedcore.checks import check_choice, check_device, check_int
from fedcore.models import BatchableLSTM

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
        elif not callable(loss):
            raise TypeError(f"loss={loss!r} must be one of {sorted(LOSSES)} or a function (outputs, targets) -> "
                            f"scalar loss, got {type(loss).__name__}")
        self.module = module
        self.loss_fn: LossFn = loss
        named = [(name, p) for name, p in module.named_parameters() if p.requires_grad]
        self.names = [name for name, _ in named]
        self.shapes = [p.shape for _, p in named]
        self.numels = [p.numel() for _, p in named]
        self.dim = sum(self.numels)
        if self.dim == 0:
            raise ValueError(f"module={type(module).__name__}(...) has no trainable parameters (d=0): nothing to train")
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
        return self.call(list(self.unflatten(x).values()), inputs)

    def call(self, params: list[Tensor], inputs: Tensor) -> Tensor:
        """The module's output with its parameters replaced by ``params`` (in :attr:`names` order)."""
        return functional_call(self.module, (dict(zip(self.names, params)), self.buffers), (inputs,))

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


_LOOP_LAYERS = (nn.modules.conv._ConvNd, BatchableLSTM)  # nn.RNNBase: loop on any device
LOOP_ABOVE_PARAMS = 700_000


def choose_backend(model: FlatModel, device: str | torch.device) -> str:
    """The ``auto`` rule: ``loop`` for a model with a fused ``nn.RNNBase`` layer (``nn.LSTM``
    has no vmap batching rule), else ``vmap`` on an accelerator; on a CPU, ``loop`` for models
    with convolutions or recurrent layers or more than ``LOOP_ABOVE_PARAMS`` (0.7M)
    parameters, ``vmap`` for smaller dense models.

    Measured on 2 CPU cores (``benchmarks/round_speed.py --workloads rule``, a FedAvg round,
    K=10, B=32, 2 threads): time of a vmap round / a loop round, for S=20 and S=100 clients
    (more, with 1 thread, in ``benchmarks/README.md``):

    ======================================  =====  =====
    model (parameters)                      S=20   S=100
    ======================================  =====  =====
    CNN of Reddi et al. (1.2M)              2.00
    logistic regression (7.9k)              0.43   0.21
    MLP 784-200-10 (0.16M)                  0.49   0.70
    MLP 784-400-10 (0.32M)                  0.64   1.03
    MLP 784-500-500-10 (0.65M)              1.11   1.09
    MLP 784-1000-10 (0.80M)                 1.01   1.19
    MLP 784-1000-1000-10 (1.8M)             1.26   1.39
    ======================================  =====  =====

    vmap turns convolutions into grouped ones, slow on a CPU; for small dense models it saves
    the per-client call overhead; once the S clients' weights no longer fit in the cache, the
    loop, which finishes each client's forward and backward while its weights are still
    there, catches up (between 0.3M and 0.8M parameters, within 10-20% and noisy) and then
    wins.  The rule depends on neither S nor the thread count, so a run never changes backend.
    """
    if any(isinstance(m, nn.RNNBase) for m in model.module.modules()):
        return "loop"  # nn.LSTM/GRU/RNN have no vmap batching rule (models.BatchableLSTM does)
    if torch.device(device).type != "cpu":
        return "vmap"
    has_loop_layer = any(isinstance(m, _LOOP_LAYERS) for m in model.module.modules())
    return "loop" if has_loop_layer or model.dim > LOOP_ABOVE_PARAMS else "vmap"


class RandomState(NamedTuple):
    """The random streams' state at one moment (see :meth:`GradientOracle.replaying`)."""

    cpu: Tensor
    cuda: Tensor | None


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
        self.device = torch.device(check_device("device", device))
        self.backend = choose_backend(model, self.device) if backend == "auto" else backend
        self.calls = 0
        # vmap over the per-parameter views of X (not over rows of X): each client's gradient
        # comes back per parameter and is concatenated once, into the [S, d] matrix
        self._batched = vmap(grad_and_value(self._loss_of_params), randomness="different")
        self._batched_loss = vmap(model.loss, randomness="different")

    def _loss_of_params(self, params: tuple[Tensor, ...], inputs: Tensor, targets: Tensor) -> Tensor:
        return self.model.loss_fn(self.model.call(list(params), inputs), targets)

    def __call__(
        self, X: Tensor, inputs: Tensor, targets: Tensor, out: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """``(losses [S], grads [S, d])``; the gradients are written into ``out`` when it is given
        (a ``[S, d]`` tensor the caller owns and may reuse), else into a new tensor."""
        self._check(X, inputs, targets)
        if out is None:
            out = torch.empty_like(X)
        elif out.shape != X.shape or out.dtype != X.dtype or out.device != X.device:
            raise ValueError(
                f"out has shape {tuple(out.shape)} ({out.dtype}, {out.device}); expected X's "
                f"{tuple(X.shape)} ({X.dtype}, {X.device})"
            )
        self.calls += 1
        try:
            with torch.enable_grad():
                if self.backend == "vmap":
                    return self._vmap(X, inputs, targets, out)
                return self._loop(X, inputs, targets, out)
        except torch.OutOfMemoryError:
            raise
        except (RuntimeError, IndexError) as error:  # the model or its loss cannot take this batch
            raise _batch_error(error, X=X, inputs=inputs, targets=targets) from None

    def _check(self, X: Tensor, inputs: Tensor, targets: Tensor) -> None:
        for name, value in (("X", X), ("inputs", inputs), ("targets", targets)):
            if not isinstance(value, Tensor):
                raise TypeError(f"{name} must be a tensor, got {type(value).__name__} (X [S, d], inputs [S, B, ...], "
                                "targets [S, B])")
        if X.dim() != 2 or X.shape[1] != self.model.dim:
            raise ValueError(f"X has shape {tuple(X.shape)}, expected [S, d={self.model.dim}]")
        if inputs.shape[0] != X.shape[0] or targets.shape[0] != X.shape[0]:
            raise ValueError(
                f"X has {X.shape[0]} clients but inputs/targets have "
                f"{inputs.shape[0]}/{targets.shape[0]}"
            )
        if inputs.dim() < 2 or targets.dim() < 2 or inputs.shape[1] != targets.shape[1]:
            raise ValueError(f"inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} must agree on [S, B] "
                             "(inputs [S, B, ...], targets [S, B, ...]): one target per sample")

    def _vmap(self, X: Tensor, inputs: Tensor, targets: Tensor, grads: Tensor) -> tuple[Tensor, Tensor]:
        parts, losses = self._batched(tuple(self.model.unflatten(X).values()), inputs, targets)
        torch.cat([g.reshape(X.shape[0], -1) for g in parts], dim=1, out=grads)
        return losses.detach(), grads

    def _loop(self, X: Tensor, inputs: Tensor, targets: Tensor, grads: Tensor) -> tuple[Tensor, Tensor]:
        model = self.model
        losses = X.new_empty(X.shape[0])
        for s in range(X.shape[0]):
            # the parameters as separate leaves (views of X[s]): autograd then hands back one
            # gradient per parameter, concatenated straight into row s (no [d] temporary)
            leaves = [p.detach().requires_grad_(True) for p in model.unflatten(X[s]).values()]
            loss = model.loss_fn(model.call(leaves, inputs[s]), targets[s])
            parts = torch.autograd.grad(loss, leaves, allow_unused=True, materialize_grads=True)
            torch.cat([g.reshape(-1) for g in parts], out=grads[s])
            losses[s] = loss.detach()
        return losses, grads

    def losses(self, X: Tensor, inputs: Tensor, targets: Tensor) -> Tensor:
        """Per-client losses ``[S]`` without gradients (a line search's probes).  With the same
        random state they equal the losses that ``oracle(X, inputs, targets)`` returns."""
        self._check(X, inputs, targets)
        try:
            with torch.no_grad():
                if self.backend == "vmap":
                    return self._batched_loss(X, inputs, targets)
                return torch.stack([self.model.loss(X[s], inputs[s], targets[s]) for s in range(len(X))])
        except torch.OutOfMemoryError:
            raise
        except (RuntimeError, IndexError) as error:
            raise _batch_error(error, X=X, inputs=inputs, targets=targets) from None

    def random_state(self) -> RandomState:
        """A snapshot of the random streams that dropout draws from (the CPU's; and the CUDA
        device's when the model is there)."""
        cuda = torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else None
        return RandomState(torch.get_rng_state(), cuda)

    @contextmanager
    def replaying(self, state: RandomState) -> Iterator[None]:
        """Inside the block, random draws repeat those made after ``state`` was taken, so an
        evaluation on the same minibatch uses the same dropout masks; on leaving, the streams
        are where they were before the block (a replay consumes nothing)."""
        devices = [self.device] if state.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(state.cpu)
            if state.cuda is not None:
                torch.cuda.set_rng_state(state.cuda, self.device)
            yield


def _batch_error(error: Exception, **tensors: Tensor) -> ValueError:
    """The error for a model (or its loss) that failed on a batch: every shape and dtype, then torch's words."""
    (_, point), (_, inputs) = list(tensors.items())[:2]
    parts = ", ".join(f"{name} {tuple(t.shape)} dtype={t.dtype}" for name, t in tensors.items())
    if inputs.is_floating_point() and inputs.dtype != point.dtype:
        parts += f"; the inputs' dtype {inputs.dtype} is not the parameters' {point.dtype}"
    return ValueError(f"the model does not accept this batch ({parts}): {type(error).__name__}: {error}")


def evaluate(
    model: FlatModel, x: Tensor, inputs: Tensor, targets: Tensor, batch_size: int = 2000,
    ignore_classes: Sequence[int] = (),
) -> dict[str, float]:
    """Mean loss and (for class targets) accuracy of the model at ``x``, in eval mode.

    The accuracy leaves out targets in ``ignore_classes`` (e.g. Shakespeare's
    out-of-vocabulary and padding ids); the loss counts every target.  With no test samples
    (``test_fraction=0``) both are NaN: nothing was measured.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"x must be a tensor, got {type(x).__name__}")
    return evaluate_runs(model, x.reshape(1, -1), inputs, targets, batch_size, ignore_classes)[0]


@torch.no_grad()
def evaluate_runs(
    model: FlatModel, X: Tensor, inputs: Tensor, targets: Tensor, batch_size: int = 2000,
    ignore_classes: Sequence[int] = (), backend: str = "loop",
) -> list[dict[str, float]]:
    """:func:`evaluate` for R models ``X [R, d]`` on the same test set: one dict per model.  With
    ``backend="vmap"`` the R models go through one forward per test batch (``torch.func.vmap`` over the
    parameters); with ``"loop"`` one model at a time."""
    check_int("batch_size", batch_size)
    for name, value in (("x", X), ("inputs", inputs), ("targets", targets)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a tensor, got {type(value).__name__}")
    if inputs.dim() == 0 or targets.dim() == 0 or inputs.shape[0] != targets.shape[0]:
        raise ValueError(f"inputs {tuple(inputs.shape)} and targets {tuple(targets.shape)} must have one row per "
                         "sample, the same number of rows")
    if isinstance(ignore_classes, (str, bytes)) or not isinstance(ignore_classes, Iterable):
        raise TypeError(f"ignore_classes={ignore_classes!r} must be a sequence of class ids (ints >= 0)")
    ids = [check_int("ignore_classes", c, 0) for c in ignore_classes]
    ignored = torch.as_tensor(ids, dtype=torch.long, device=targets.device)
    runs = X.shape[0]
    total_loss, correct = torch.zeros(runs, dtype=torch.float64), torch.zeros(runs, dtype=torch.long)
    count, scored = 0, 0
    forward = vmap(model.forward, in_dims=(0, None)) if backend == "vmap" and runs > 1 else None
    with model.mode(training=False):
        for start in range(0, targets.shape[0], batch_size):
            batch_in = inputs[start : start + batch_size]
            batch_t = targets[start : start + batch_size]
            try:
                outputs = forward(X, batch_in) if forward else torch.stack([model.forward(x, batch_in) for x in X])
                losses = torch.stack([model.loss_fn(out, batch_t) for out in outputs])
            except torch.OutOfMemoryError:
                raise
            except (RuntimeError, IndexError) as error:
                raise _batch_error(error, x=X[0] if runs == 1 else X, inputs=batch_in, targets=batch_t) from None
            total_loss += losses.double().cpu() * batch_t.numel()
            count += batch_t.numel()
            if not batch_t.is_floating_point():
                kept = ~torch.isin(batch_t, ignored)
                correct += ((outputs.argmax(-1) == batch_t) & kept).flatten(1).sum(1).cpu()
                scored += int(kept.sum())
    results = []
    for run in range(runs):
        metrics = {"test_loss": float(total_loss[run]) / count if count else math.nan}
        if not targets.is_floating_point():
            metrics["test_accuracy"] = int(correct[run]) / scored if scored else math.nan
        results.append(metrics)
    return results
