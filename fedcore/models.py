"""The papers' models, as plain ``nn.Module`` factories (no algorithm knows them).

- :func:`cnn`: the EMNIST CNN of Reddi et al. (ICLR 2021, Table 3 of the appendix):
  conv 3x3 32, conv 3x3 64, max-pool 2, dropout 0.25, dense 128, dropout 0.5, dense classes.
- :func:`tanh_cnn`: the small tanh CNN of Nouiehed et al. (NeurIPS 2019) that FAFED (Wu et
  al., AAAI 2023) uses on Fashion-MNIST: conv 3x3 5, tanh, max-pool 2, conv 3x3 10, tanh,
  max-pool 2, dense 100, tanh, dense classes (26,620 parameters on 28x28 inputs).
- :func:`logistic_regression`: one dense layer on the flattened input.
- :func:`mlp`: dense layers with ReLU.
- :func:`linear_regression`: ``y = <a, x>`` with no bias, for the federated quadratics.
- :func:`char_lstm`: the Shakespeare char-LSTM of Reddi et al. (embedding 8, 2 LSTM layers of
  256, dense over the vocabulary), on :class:`BatchableLSTM` so ``torch.func.vmap`` can batch it;
  the last step's logits, or every step's (``all_steps=True``, for TFF's sequence targets).
- :func:`resnet18_gn`: the CIFAR ResNet-18 of Reddi et al. with GroupNorm in place of BatchNorm
  (after Hsieh et al., ICML 2020), 11,173,962 parameters for 10 classes.
- :func:`autoencoder`: the EMNIST autoencoder of Reddi et al. (after Hinton & Salakhutdinov,
  Science 2006): 784-1000-500-250-30-250-500-1000-784, sigmoid, 2,837,314 parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedcore.checks import check_bool, check_choice, check_int, check_range, check_seed


def _shape(input_shape: Any, names: Sequence[str] = ()) -> tuple[int, ...]:
    """``input_shape`` as a tuple of ints >= 1; ``names`` (e.g. channels, height, width) fix its length."""
    layout = f"({', '.join(names)}{',' if len(names) == 1 else ''})" if names else "a tuple of ints >= 1, e.g. (784,)"
    if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, Sequence):
        raise TypeError(f"input_shape={input_shape!r} must be {layout}, got {type(input_shape).__name__}")
    shape = tuple(input_shape)
    if not shape or (names and len(shape) != len(names)):
        raise ValueError(f"input_shape={shape!r} must be {layout}")
    labels = names or [f"input_shape[{i}]" for i in range(len(shape))]
    try:
        return tuple(check_int(label, size) for label, size in zip(labels, shape))
    except (TypeError, ValueError) as error:
        raise type(error)(f"input_shape={shape!r}: {error}") from None


def _features(input_shape: Any) -> int:
    return math.prod(_shape(input_shape))


def _image(input_shape: Any, smallest: int, model: str) -> tuple[int, int, int]:
    """``(channels, height, width)`` of an image at least ``smallest`` pixels on each side."""
    channels, height, width = _shape(input_shape, ("channels", "height", "width"))
    if min(height, width) < smallest:
        raise ValueError(f"input_shape={tuple(input_shape)!r}: {model} needs images of at least {smallest}x{smallest}")
    return channels, height, width


def cnn(input_shape: Sequence[int] = (1, 28, 28), num_classes: int = 10, dropout: bool = True) -> nn.Module:
    """Reddi et al.'s EMNIST CNN (about 1.2M parameters on 28x28 inputs)."""
    check_int("num_classes", num_classes, 2)
    check_bool("dropout", dropout)
    channels, height, width = _image(input_shape, 6, "the CNN (two 3x3 convolutions and a 2x2 pool)")
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
    channels, height, width = _image(input_shape, 10, "the tanh CNN (two 3x3 convolutions, each with a 2x2 pool)")
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
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise TypeError(f"hidden={hidden!r} must be a sequence of layer widths, e.g. (200,), or () for none")
    widths = [check_int("hidden", size) for size in hidden]
    layers: list[nn.Module] = [nn.Flatten()]
    width = _features(input_shape)
    for size in widths:
        layers += [nn.Linear(width, size), nn.ReLU(), nn.Dropout(dropout)]
        width = size
    return nn.Sequential(*layers, nn.Linear(width, num_classes))


def linear_regression(input_shape: Sequence[int] = (10,), num_classes: int | None = None) -> nn.Module:
    """``y = <a, x>`` (no bias): with the ``mse`` loss, a least-squares quadratic in x."""
    if num_classes is not None and (isinstance(num_classes, bool) or num_classes != 1):
        raise ValueError(f"num_classes={num_classes!r}: linear_regression has one output (a regression); "
                         "give None (or 1)")
    return nn.Sequential(nn.Flatten(), nn.Linear(_features(input_shape), 1, bias=False))


SHAKESPEARE_VOCAB = 82  # fedcore.data.shakespeare.VOCAB_SIZE: LEAF's 80 characters, out-of-vocabulary, padding


class BatchableLSTM(nn.Module):
    """A multi-layer ``batch_first`` LSTM that ``torch.func.vmap`` can batch, equal to ``nn.LSTM``.

    ``nn.LSTM`` calls one fused kernel that has no vmap batching rule (on a CPU torch falls back
    to a slow per-sample loop with a warning; on CUDA it may fail).  Under a ``torch.func``
    transform (the ``vmap`` gradient oracle) this module runs the same recurrence with plain
    tensor ops, unrolled over time: per layer one matmul for the input projection of all steps,
    then per step ``gates = W_hh h + (W_ih x_t + b_ih + b_hh)``, ``i, f, g, o = sigmoid,
    sigmoid, tanh, sigmoid`` of the four row blocks, ``c = f c + i g``, ``h = o tanh(c)``.
    Outside one (the ``loop`` oracle, evaluation) it calls the fused kernel ``nn.LSTM`` uses,
    5-6x faster on a CPU; ``unrolled=True`` always unrolls.  Parameters carry ``nn.LSTM``'s
    names, shapes, row layout ``[i; f; g; o]`` and initialization, so
    ``load_state_dict(lstm.state_dict())`` works both ways.  No dropout between layers, no
    projections, no bidirection.

    ``forward(inputs [B, T, input_size], hx=None)`` returns ``(outputs [B, T, H], (h_n, c_n))``
    with ``h_n, c_n [num_layers, B, H]``, as ``nn.LSTM(..., batch_first=True)``.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, unrolled: bool = False) -> None:
        super().__init__()
        self.input_size = check_int("input_size", input_size)
        self.hidden_size = check_int("hidden_size", hidden_size)
        self.num_layers = check_int("num_layers", num_layers)
        self.unrolled = check_bool("unrolled", unrolled)
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size
            self.register_parameter(f"weight_ih_l{layer}", nn.Parameter(torch.empty(4 * hidden_size, width)))
            self.register_parameter(f"weight_hh_l{layer}", nn.Parameter(torch.empty(4 * hidden_size, hidden_size)))
            self.register_parameter(f"bias_ih_l{layer}", nn.Parameter(torch.empty(4 * hidden_size)))
            self.register_parameter(f"bias_hh_l{layer}", nn.Parameter(torch.empty(4 * hidden_size)))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """``nn.LSTM``'s initialization: every entry uniform in ``[-1/sqrt(H), 1/sqrt(H)]``."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            nn.init.uniform_(weight, -bound, bound)

    def _weights(self, layer: int) -> list[Tensor]:
        return [getattr(self, f"{kind}_l{layer}") for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]

    def forward(self, inputs: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        if hx is None:
            zeros = inputs.new_zeros(self.num_layers, inputs.shape[0], self.hidden_size)
            hx = (zeros, zeros)
        weights = [w for layer in range(self.num_layers) for w in self._weights(layer)]
        wrapped = torch._C._functorch.is_functorch_wrapped_tensor
        if self.unrolled or any(wrapped(t) for t in (inputs, *hx, *weights)):
            return self._unrolled(inputs, hx)
        outputs, h_n, c_n = torch.lstm(inputs, hx, weights, True, self.num_layers, 0.0, self.training, False, True)
        return outputs, (h_n, c_n)

    def _unrolled(self, inputs: Tensor, hx: tuple[Tensor, Tensor]) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        outputs, last_h, last_c = inputs, [], []
        for layer in range(self.num_layers):
            h, c = hx[0][layer], hx[1][layer]
            weight_ih, weight_hh, bias_ih, bias_hh = self._weights(layer)
            # the input projection of all T steps in one matmul; only W_hh h stays in the loop
            projected = F.linear(outputs, weight_ih, bias_ih) + bias_hh
            hs = []
            for t in range(inputs.shape[1]):
                gates = projected[:, t] + F.linear(h, weight_hh)
                i, f, g, o = gates.chunk(4, dim=-1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
                h = torch.sigmoid(o) * torch.tanh(c)
                hs.append(h)
            outputs = torch.stack(hs, dim=1)
            last_h.append(h)
            last_c.append(c)
        return outputs, (torch.stack(last_h), torch.stack(last_c))

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, batch_first=True"


class CharLSTM(nn.Module):
    """Embedding -> LSTM -> dense: ``[B, T]`` characters -> ``[B, classes]`` logits from the last step's
    output, or ``[B, T, classes]`` from every step's with ``all_steps=True``."""

    def __init__(self, embedding: nn.Embedding, lstm: nn.Module, dense: nn.Linear, all_steps: bool = False) -> None:
        super().__init__()
        self.embedding, self.lstm, self.dense = embedding, lstm, dense
        self.all_steps = check_bool("all_steps", all_steps)

    def forward(self, inputs: Tensor) -> Tensor:
        outputs, _ = self.lstm(self.embedding(inputs.long()))  # data sets may keep ids as uint8
        return self.dense(outputs if self.all_steps else outputs[:, -1])

    def extra_repr(self) -> str:
        # only when set: the default's repr (a stored run's architecture, fedcore.identity) stays as it was
        return "all_steps=True" if self.all_steps else ""


def char_lstm(
    input_shape: Sequence[int] = (80,), num_classes: int = SHAKESPEARE_VOCAB, embedding_dim: int = 8,
    hidden_size: int = 256, num_layers: int = 2, fused: bool = False, all_steps: bool = False,
) -> nn.Module:
    """Reddi et al.'s Shakespeare char-LSTM (ICLR 2021, Table 3 of the appendix): embedding 8,
    2 LSTM layers of 256 units, dense over the vocabulary; input and output share the vocabulary
    of ``num_classes`` characters.  Inputs are int64 ``[B, T]`` (T = ``input_shape[0]`` = 80),
    outputs ``[B, num_classes]``: the logits of the character after the sequence, from the last
    step's output, so targets ``[B]`` and the ``cross_entropy`` loss apply (LEAF's samples,
    ``load_shakespeare(targets="next")``).

    ``all_steps=True`` applies the dense layer to every step's output: outputs
    ``[B, T, num_classes]``, the logits of each position's next character, for targets ``[B, T]``
    (TFF's samples, which Reddi et al. train on: ``load_shakespeare(targets="sequence")``); the
    ``cross_entropy`` loss then averages over all ``B T`` targets and the accuracy scores each.  The
    option changes only the forward: the same parameters and, for a given seed, the same
    initialization, and the last step's logits equal those of ``all_steps=False``.

    Parameters: ``V E + sum_l (4 H (in_l + H) + 8 H) + (H + 1) V`` with ``in_0 = E``,
    ``in_l = H`` after; with E=8, H=256, 2 layers that is ``798,720 + 265 V``:
    819,920 for V=80, 820,450 for V=82 (fedcore's Shakespeare: LEAF's 80 characters, out-of-vocabulary
    and padding; the default), 822,570 for V=90 (TFF's).

    The LSTM is a :class:`BatchableLSTM` (same parameters as ``nn.LSTM``): the fused kernel
    under the ``loop`` backend, an unrolled form the ``vmap`` backend can batch over the S
    clients (``nn.LSTM`` has no vmap batching rule).  ``fused=True`` uses ``nn.LSTM`` itself:
    the same model and initialization, ``loop`` backend only.
    """
    check_int("num_classes", num_classes, 2)
    check_int("embedding_dim", embedding_dim)
    check_int("hidden_size", hidden_size)
    check_int("num_layers", num_layers)
    check_bool("fused", fused)
    check_bool("all_steps", all_steps)
    _shape(input_shape, ("sequence_length",))
    embedding = nn.Embedding(num_classes, embedding_dim)
    if fused:
        lstm: nn.Module = nn.LSTM(embedding_dim, hidden_size, num_layers, batch_first=True)
    else:
        lstm = BatchableLSTM(embedding_dim, hidden_size, num_layers)
    return CharLSTM(embedding, lstm, nn.Linear(hidden_size, num_classes), all_steps)


RESNET18_WIDTHS = (64, 128, 256, 512)  # the channels of the four stages (the stem has the first)


class BasicBlock(nn.Module):
    """ResNet's basic block with GroupNorm: ``relu(gn(conv3x3(relu(gn(conv3x3(a))))) + shortcut(a))``.

    The first 3x3 convolution has stride ``stride``; the shortcut is the identity when the shape is
    kept, else a 1x1 convolution with that stride followed by GroupNorm (He et al. 2016's option B).
    Convolutions have no bias (the normalization after each has one).
    """

    def __init__(self, in_channels: int, channels: int, stride: int, groups: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, stride=stride, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(groups, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(groups, channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != channels:
            self.shortcut = nn.Sequential(nn.Conv2d(in_channels, channels, 1, stride=stride, bias=False),
                                          nn.GroupNorm(groups, channels))

    def forward(self, inputs: Tensor) -> Tensor:
        outputs = F.relu(self.norm1(self.conv1(inputs)))
        outputs = self.norm2(self.conv2(outputs))
        return F.relu(outputs + self.shortcut(inputs))


def resnet18_gn(input_shape: Sequence[int] = (3, 32, 32), num_classes: int = 10, groups: int = 2) -> nn.Module:
    """Reddi et al.'s CIFAR ResNet-18 (ICLR 2021, for CIFAR-10 and CIFAR-100): BatchNorm replaced by
    GroupNorm with ``groups`` groups per layer, 2 by default, as Hsieh et al. (ICML 2020) recommend
    for non-i.i.d. federated data.  ``[B, channels, H, W]`` images -> ``[B, num_classes]`` logits.

    Architecture (the CIFAR variant of He et al. 2016): a 3x3 convolution with 64 channels, stride
    1, then GroupNorm and ReLU (no max-pool); four stages of two :class:`BasicBlock` s with 64, 128,
    256, 512 channels and strides 1, 2, 2, 2 (a 1x1 convolution and GroupNorm on the shortcut where
    the shape changes); global average pooling; a dense layer to ``num_classes``.  No convolution
    has a bias.  Any image of at least 8x8 works (the three stride-2 stages bring 8x8 to 1x1): 32x32
    CIFAR, or the 24x24 crops Reddi et al. train on.

    Parameters (GroupNorm has a scale and a shift per channel, as BatchNorm): 11,173,962 for 3
    input channels and 10 classes, 11,220,132 for 100 classes (``513 num_classes`` + 11,168,832).
    ``groups`` must divide 64 (so every width 64..512).  No buffers: the model is the same in
    train and eval mode.
    """
    check_int("num_classes", num_classes, 2)
    check_int("groups", groups)
    if any(width % groups for width in RESNET18_WIDTHS):
        raise ValueError(f"groups={groups}: GroupNorm's groups must divide every channel count "
                         f"{', '.join(map(str, RESNET18_WIDTHS))} (e.g. 1, 2, 4, 8, 16, 32, 64)")
    channels, _, _ = _image(input_shape, 8, "the ResNet-18 (three stride-2 stages)")
    layers: list[nn.Module] = [
        nn.Conv2d(channels, RESNET18_WIDTHS[0], 3, padding=1, bias=False),
        nn.GroupNorm(groups, RESNET18_WIDTHS[0]), nn.ReLU(),
    ]
    width = RESNET18_WIDTHS[0]
    for stage, size in enumerate(RESNET18_WIDTHS):
        stride = 1 if stage == 0 else 2
        layers += [BasicBlock(width, size, stride, groups), BasicBlock(size, size, 1, groups)]
        width = size
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, num_classes))


def autoencoder(
    input_shape: Sequence[int] = (1, 28, 28), num_classes: int | None = None,
    hidden: Sequence[int] = (1000, 500, 250), bottleneck: int = 30,
) -> nn.Module:
    """Reddi et al.'s EMNIST autoencoder (ICLR 2021, Table 3 of the appendix; the deep autoencoder
    of Hinton & Salakhutdinov, Science 2006): ``d -> hidden... -> bottleneck -> reversed(hidden)...
    -> d`` with ``d = prod(input_shape)``; sigmoid after every hidden layer, a linear (no activation)
    bottleneck, a sigmoid output.  The defaults give 784-1000-500-250-30-250-500-1000-784,
    2,837,314 parameters (``sum (in + 1) out`` over the 8 dense layers).

    It maps ``[B, *input_shape]`` to ``[B, d]``, the flattened reconstruction in [0, 1].  There are
    no classes (``num_classes`` must be None): the targets are the inputs themselves, flattened
    (``[B, d]``; or shaped as the inputs, which ``params.half_mse`` accepts), and the loss is the
    mean squared error, fedcore's ``mse``.  Note that ``mse`` is ``0.5 * mean((out - target)^2)``
    (``params.half_mse``): twice it is the MSE Reddi et al. report (Table 1, x1000), and its
    gradient is half theirs.
    """
    if num_classes is not None:
        raise ValueError(f"num_classes={num_classes!r}: the autoencoder has no classes, it reconstructs its input "
                         "(the targets are the inputs, flattened; loss 'mse'); give None")
    if isinstance(hidden, (str, bytes)) or not isinstance(hidden, Sequence):
        raise TypeError(f"hidden={hidden!r} must be a sequence of layer widths, e.g. (1000, 500, 250), or () for none")
    widths = [check_int("hidden", size) for size in hidden]
    check_int("bottleneck", bottleneck)
    features = _features(input_shape)
    encoder, decoder = [features, *widths], [bottleneck, *reversed(widths)]
    layers: list[nn.Module] = [nn.Flatten()]
    for width, size in zip(encoder, encoder[1:]):
        layers += [nn.Linear(width, size), nn.Sigmoid()]
    layers.append(nn.Linear(encoder[-1], bottleneck))  # the linear bottleneck
    for width, size in zip(decoder, [*decoder[1:], features]):
        layers += [nn.Linear(width, size), nn.Sigmoid()]
    return nn.Sequential(*layers)


MODELS: dict[str, Callable[..., nn.Module]] = {
    "cnn": cnn,
    "tanh_cnn": tanh_cnn,
    "logistic_regression": logistic_regression,
    "mlp": mlp,
    "linear_regression": linear_regression,
    "char_lstm": char_lstm,
    "resnet18_gn": resnet18_gn,
    "autoencoder": autoencoder,
}


def make(name: str, input_shape: Sequence[int], num_classes: int | None, seed: int = 0, **options) -> nn.Module:
    """A model by name, its initial weights drawn from ``seed``."""
    factory = MODELS[check_choice("model", name, MODELS)]
    check_seed("seed", seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return factory(input_shape, num_classes, **options)
