"""What a run is about: :class:`Problem`, a federated data set and the model trained on it, checked against each
other.  What a run produced (``History``) is in :mod:`fedcore.results`."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from fedcore.data.federated import FederatedData
from fedcore.params import FlatModel, LossFn


class Problem:
    """A federated data set and the model trained on it (``loss`` follows the data by default)."""

    def __init__(self, data: FederatedData, model: nn.Module | FlatModel, loss: str | LossFn | None = None):
        if not isinstance(data, FederatedData):
            raise TypeError(f"data={type(data).__name__} must be a FederatedData")
        if loss is None:
            loss = "mse" if data.num_classes is None else "cross_entropy"
        self.data = data
        module = model.module if isinstance(model, FlatModel) else model
        if isinstance(module, nn.Module) and (meta := [n for n, p in module.named_parameters() if p.is_meta]):
            raise ValueError(f"model has parameters on the meta device ({', '.join(meta[:3])}): shapes without values "
                             "cannot be trained; build the model on a real device (or call .to_empty(device=...) and "
                             "initialize it)")
        self.model = model if isinstance(model, FlatModel) else FlatModel(model, loss)
        self.model.to(data.device)
        self._check_model()

    def _check_model(self) -> None:
        """One forward pass on one sample: the model must take the data's inputs, give one output per
        class, and its loss must accept the targets (the message names both shapes)."""
        data, model = self.data, self.model
        inputs, targets = data.inputs[:1], data.targets[:1]
        shapes = f"inputs {tuple(data.inputs.shape[1:])} per sample, targets {tuple(data.targets.shape[1:])}"
        try:
            with torch.no_grad(), model.mode(training=False):
                outputs = model.forward(model.x0().to(data.device), inputs)
        except Exception as error:  # noqa: BLE001 -- any failure here is the model not fitting the data
            raise ValueError(f"model does not accept the data ({shapes}): {type(error).__name__}: {error}") from None
        if data.num_classes is not None and outputs.shape[-1] != data.num_classes:
            raise ValueError(f"model gives {outputs.shape[-1]} outputs per sample (output shape {tuple(outputs.shape)})"
                             f" but the data has num_classes={data.num_classes} ({shapes})")
        try:
            with torch.no_grad():
                model.loss_fn(outputs, targets)
        except Exception as error:  # noqa: BLE001
            raise ValueError(f"the loss does not accept the model's output {tuple(outputs.shape)} with the data's "
                             f"targets ({shapes}, {data.targets.dtype}): {type(error).__name__}: {error}") from None

    def x0(self) -> Tensor:
        return self.model.x0().to(self.data.device)

    def __repr__(self) -> str:
        return f"Problem({self.data!r}, model with d={self.model.dim})"
