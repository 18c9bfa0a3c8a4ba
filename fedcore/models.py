"""The papers' models, as plain ``nn.Module`` factories (no algorithm knows them).

- :func:`cnn`: the EMNIST CNN of Reddi et al. (ICLR 2021, Table 3 of the appendix):
  conv 3x3 32, conv 3x3 64, max-pool 2, dropout 0.25, dense 128, dropout 0.5, dense classes.
- :func:`tanh_cnn`: the small tanh CNN of Nouiehed et al. (NeurIPS 2019) that FAFED (Wu et
  al., AAAI 2023) uses on Fashion-MNIST: conv 3x3 5, tanh, max-pool 2, conv 3x3 10, tanh,
  max-pool 2, dense 100, tanh, dense classes (26,620 parameters on 28x28 inputs).
- :func:`logistic_regression`: one dense layer on the flattened input.
- :func:`mlp`: dense layers with ReLU.
- :func:`linear_regression`: ``y = <a, x>`` with no bias, for the federated quadratics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn

from fedcore.checks import check_choice, check_int, check_range


def _features(input_shape: Sequence[int]) -> int:
    return math.prod(input_shape)


def cnn(input_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10, dropout: bool = True) -> nn.Module:
    """Reddi et al.'s EMNIST CNN (about 1.2M parameters on 28x28 inputs)."""
    check_int("num_classes", num_classes, 2)
    channels, height, width = input_shape
    flat = 64 * ((height - 4) // 2) * ((width - 4) // 2)
    return nn.Sequential(
        nn.Conv2d(channels, 32, 3), nn.ReLU(),
        nn.Conv2d(32, 64, 3), nn.ReLU(),
        nn.MaxPool2d(2), nn.Dropout(0.25 if dropout else 0.0), nn.Flatten(),
        nn.Linear(flat, 128), nn.ReLU(), nn.Dropout(0.5 if dropout else 0.0),
        nn.Linear(128, num_classes),
    )


def tanh_cnn(input_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10) -> nn.Module:
    """Nouiehed et al.'s tanh CNN, as FAFED's Fashion-MNIST experiments use it (26,620 parameters)."""
    check_int("num_classes", num_classes, 2)
    channels, height, width = input_shape
    flat = 10 * ((((height - 2) // 2) - 2) // 2) * ((((width - 2) // 2) - 2) // 2)
    return nn.Sequential(
        nn.Conv2d(channels, 5, 3), nn.Tanh(), nn.MaxPool2d(2),
        nn.Conv2d(5, 10, 3), nn.Tanh(), nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(flat, 100), nn.Tanh(),
        nn.Linear(100, num_classes),
    )


def logistic_regression(input_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10) -> nn.Module:
    """Multinomial logistic regression: ``softmax(W vec(a) + b)``."""
    check_int("num_classes", num_classes, 2)
    return nn.Sequential(nn.Flatten(), nn.Linear(_features(input_shape), num_classes))


def mlp(
    input_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10, hidden: Sequence[int] = (200,),
    dropout: float = 0.0,
) -> nn.Module:
    """Dense ReLU network ``d_in -> hidden... -> num_classes`` with optional dropout."""
    check_int("num_classes", num_classes, 2)
    check_range("dropout", dropout, 0, 1)
    layers: list[nn.Module] = [nn.Flatten()]
    width = _features(input_shape)
    for size in hidden:
        layers += [nn.Linear(width, check_int("hidden", size)), nn.ReLU(), nn.Dropout(dropout)]
        width = size
    return nn.Sequential(*layers, nn.Linear(width, num_classes))


def linear_regression(input_shape: Sequence[int] = (10,), num_classes: int | None = None) -> nn.Module:
    """``y = <a, x>`` (no bias): with the ``mse`` loss, a least-squares quadratic in x."""
    return nn.Sequential(nn.Flatten(), nn.Linear(_features(input_shape), 1, bias=False))


MODELS: dict[str, Callable[..., nn.Module]] = {
    "cnn": cnn,
    "tanh_cnn": tanh_cnn,
    "logistic_regression": logistic_regression,
    "mlp": mlp,
    "linear_regression": linear_regression,
}


def make(name: str, input_shape: Sequence[int], num_classes: int | None, seed: int = 0, **options) -> nn.Module:
    """A model by name, its initial weights drawn from ``seed``."""
    factory = MODELS[check_choice("model", name, MODELS)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory(input_shape, num_classes, **options)
