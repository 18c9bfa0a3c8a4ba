"""The two models of Reddi et al. (ICLR 2021) added for issue 11: the CIFAR ResNet-18 with GroupNorm and the
EMNIST autoencoder; their sizes (counted by formula, layer by layer), shapes, seeding, errors, and both gradient
backends on them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedcore import models
from fedcore.params import FlatModel, GradientOracle


def resnet18_parameters(channels: int, num_classes: int) -> int:
    """Layer by layer: 3x3 convolutions without bias, GroupNorm with a scale and a shift per channel, 1x1
    projections (and their GroupNorm) where a block changes the width or the stride, a dense head."""
    def conv(k: int, c_in: int, c_out: int) -> int:
        return k * k * c_in * c_out

    def norm(c: int) -> int:
        return 2 * c

    total = conv(3, channels, 64) + norm(64)  # stem
    width = 64
    for size in (64, 128, 256, 512):
        for block in range(2):
            c_in = width if block == 0 else size
            total += conv(3, c_in, size) + norm(size) + conv(3, size, size) + norm(size)
            if c_in != size:  # strides 1/2/2/2: the shape changes exactly where the width does
                total += conv(1, c_in, size) + norm(size)
        width = size
    return total + 512 * num_classes + num_classes


def autoencoder_parameters(widths: list[int]) -> int:
    return sum((a + 1) * b for a, b in zip(widths, widths[1:]))


def test_resnet_parameter_count() -> None:
    assert resnet18_parameters(3, 10) == 11_173_962  # "about 11.2M"
    for channels, num_classes in ((3, 10), (3, 100), (1, 62)):
        module = models.resnet18_gn((channels, 32, 32), num_classes)
        assert FlatModel(module).dim == resnet18_parameters(channels, num_classes)
        norms = [m for m in module.modules() if isinstance(m, nn.GroupNorm)]
        assert len(norms) == 1 + 8 * 2 + 3 and all(m.num_groups == 2 for m in norms)  # stem, blocks, projections
        assert not any(isinstance(m, (nn.BatchNorm2d, nn.MaxPool2d)) for m in module.modules())
        assert not list(module.buffers())


def test_autoencoder_parameter_count() -> None:
    widths = [784, 1000, 500, 250, 30, 250, 500, 1000, 784]
    assert autoencoder_parameters(widths) == 2_837_314
    assert FlatModel(models.autoencoder()).dim == 2_837_314
    assert FlatModel(models.autoencoder((5,), hidden=(4, 3), bottleneck=2)).dim == autoencoder_parameters(
        [5, 4, 3, 2, 3, 4, 5])


def test_autoencoder_layers() -> None:
    """Sigmoid after every hidden layer and the output, none after the 30-unit bottleneck."""
    module = models.autoencoder()
    kinds = [type(m).__name__ for m in module]
    assert kinds == ["Flatten"] + ["Linear", "Sigmoid"] * 3 + ["Linear"] + ["Linear", "Sigmoid"] * 4
    assert [m.out_features for m in module if isinstance(m, nn.Linear)] == [1000, 500, 250, 30, 250, 500, 1000, 784]


@pytest.mark.parametrize("side", [32, 24, 8])
def test_resnet_forward_shape(side: int) -> None:
    module = models.resnet18_gn((3, side, side), 10)
    assert module(torch.randn(2, 3, side, side)).shape == (2, 10)


def test_autoencoder_forward_shape() -> None:
    out = models.autoencoder()(torch.rand(4, 1, 28, 28))
    assert out.shape == (4, 784) and bool(((out > 0) & (out < 1)).all())
    assert models.autoencoder((2, 3, 4), hidden=(8,), bottleneck=2)(torch.rand(5, 2, 3, 4)).shape == (5, 24)


@pytest.mark.parametrize("name, shape, num_classes, options", [
    ("resnet18_gn", (3, 24, 24), 10, {}),
    ("autoencoder", (1, 28, 28), None, {}),
])
def test_make_is_seeded(name: str, shape: tuple[int, ...], num_classes: int | None, options: dict) -> None:
    x = [FlatModel(models.make(name, shape, num_classes, seed=seed, **options)).x0() for seed in (5, 5, 6)]
    assert torch.equal(x[0], x[1])
    assert not torch.equal(x[0], x[2])


def test_make_passes_options() -> None:
    module = models.make("resnet18_gn", (3, 24, 24), 100, seed=0, groups=4)
    assert all(m.num_groups == 4 for m in module.modules() if isinstance(m, nn.GroupNorm))
    assert FlatModel(models.make("autoencoder", (1, 28, 28), None, hidden=(8,), bottleneck=3)).dim == (
        autoencoder_parameters([784, 8, 3, 8, 784]))


CASES = [
    (lambda: models.resnet18_gn((3, 7, 7)), ValueError, r"input_shape=\(3, 7, 7\): the ResNet-18 .* at least 8x8"),
    (lambda: models.resnet18_gn((3, 32, 4)), ValueError, r"input_shape=\(3, 32, 4\)"),
    (lambda: models.resnet18_gn((32, 32)), ValueError, r"input_shape=\(32, 32\) must be \(channels, height, width\)"),
    (lambda: models.resnet18_gn(num_classes=1), ValueError, r"num_classes=1 must be >= 2"),
    (lambda: models.resnet18_gn(num_classes=None), TypeError, r"num_classes=None must be an int"),
    (lambda: models.resnet18_gn(groups=3), ValueError, r"groups=3: GroupNorm's groups must divide every channel "
                                                        r"count 64, 128, 256, 512"),
    (lambda: models.resnet18_gn(groups=128), ValueError, r"groups=128: .*must divide"),
    (lambda: models.resnet18_gn(groups=0), ValueError, r"groups=0 must be >= 1"),
    (lambda: models.resnet18_gn(groups=2.0), TypeError, r"groups=2.0 must be an int"),
    (lambda: models.make("resnet18_gn", (3, 4, 4), 10), ValueError, r"input_shape=\(3, 4, 4\)"),
    (lambda: models.autoencoder(num_classes=10), ValueError, r"num_classes=10: the autoencoder has no classes"),
    (lambda: models.make("autoencoder", (1, 28, 28), 62), ValueError, r"num_classes=62: .*give None"),
    (lambda: models.autoencoder(hidden=1000), TypeError, r"hidden=1000 must be a sequence of layer widths"),
    (lambda: models.autoencoder(hidden=(10, 0)), ValueError, r"hidden=0 must be >= 1"),
    (lambda: models.autoencoder(bottleneck=0), ValueError, r"bottleneck=0 must be >= 1"),
    (lambda: models.autoencoder((0, 28, 28)), ValueError, r"input_shape=\(0, 28, 28\)"),
]


@pytest.mark.parametrize("call, error, message", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_arguments_are_named(call, error, message) -> None:
    with pytest.raises(error, match=message):
        call()


def gradients(model: FlatModel, inputs: torch.Tensor, targets: torch.Tensor, clients: int = 2):
    X = model.x0() + 0.01 * torch.randn(clients, model.dim, generator=torch.Generator().manual_seed(1))
    return {backend: GradientOracle(model, backend)(X, inputs, targets) for backend in ("loop", "vmap")}, X


def test_resnet_backends_agree() -> None:
    """S=2 clients, B=3 random 24x24 CIFAR-shaped images: loop and vmap give the same losses and gradients,
    and client 1's gradient is plain autograd's on the module."""
    generator = torch.Generator().manual_seed(0)
    inputs, targets = torch.randn(2, 3, 3, 24, 24, generator=generator), torch.randint(10, (2, 3), generator=generator)
    model = FlatModel(models.make("resnet18_gn", (3, 24, 24), 10, seed=0))
    results, X = gradients(model, inputs, targets)
    assert torch.allclose(results["loop"][0], results["vmap"][0], atol=1e-5)
    assert torch.allclose(results["loop"][1], results["vmap"][1], atol=1e-5)
    assert not torch.allclose(results["loop"][1][0], results["loop"][1][1])
    module = models.resnet18_gn((3, 24, 24), 10)
    nn.utils.vector_to_parameters(X[1], module.parameters())
    nn.functional.cross_entropy(module(inputs[1]), targets[1]).backward()
    expected = torch.cat([p.grad.flatten() for p in module.parameters()])
    assert torch.allclose(results["loop"][1][1], expected, atol=1e-5)


def test_autoencoder_backends_agree() -> None:
    """The targets are the inputs flattened; the loss is fedcore's ``mse`` (half the mean square)."""
    inputs = torch.rand(2, 3, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    targets = inputs.flatten(2)
    model = FlatModel(models.make("autoencoder", (1, 28, 28), None, seed=0), "mse")
    results, X = gradients(model, inputs, targets)
    assert torch.allclose(results["loop"][0], results["vmap"][0], atol=1e-5)
    assert torch.allclose(results["loop"][1], results["vmap"][1], atol=1e-5)
    module = models.autoencoder()
    nn.utils.vector_to_parameters(X[0], module.parameters())
    loss = 0.5 * ((module(inputs[0]) - targets[0]) ** 2).mean()
    loss.backward()
    expected = torch.cat([p.grad.flatten() for p in module.parameters()])
    assert torch.allclose(results["vmap"][1][0], expected, atol=1e-5)
    assert float(results["loop"][0][0]) == pytest.approx(loss.item(), rel=1e-5)
    # targets shaped as the images give the same loss
    same, _ = GradientOracle(model, "loop")(X, inputs, inputs)
    assert torch.allclose(same, results["loop"][0])

