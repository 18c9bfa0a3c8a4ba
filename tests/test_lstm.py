"""The Shakespeare char-LSTM: BatchableLSTM equals nn.LSTM, and both oracle backends agree on it."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from fedcore.models import BatchableLSTM, char_lstm, make
from fedcore.params import FlatModel, GradientOracle, choose_backend

SMALL = {"embedding_dim": 5, "hidden_size": 16, "num_layers": 2}
VOCAB, SEQ = 11, 12


def lstm_params(input_size: int, hidden: int, layers: int) -> int:
    return sum(4 * hidden * ((input_size if layer == 0 else hidden) + hidden) + 8 * hidden for layer in range(layers))


def client_batches(clients: int = 3, batch: int = 4, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randint(0, VOCAB, (clients, batch, SEQ), generator=generator)
    return inputs, torch.randint(0, VOCAB, (clients, batch), generator=generator)


@pytest.mark.parametrize("unrolled", [True, False])
def test_batchable_lstm_equals_nn_lstm_in_outputs_and_gradients(unrolled: bool):
    """The unrolled recurrence (what vmap runs) and the fused path (what the loop runs) both equal nn.LSTM."""
    torch.manual_seed(0)
    reference = nn.LSTM(7, 16, num_layers=2, batch_first=True)
    ours = BatchableLSTM(7, 16, num_layers=2, unrolled=unrolled)
    ours.load_state_dict(reference.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in reference.named_parameters()]
    inputs = torch.randn(3, SEQ, 7)
    hx = (torch.randn(2, 3, 16), torch.randn(2, 3, 16))
    for state in (None, hx):
        expected, (h_ref, c_ref) = reference(inputs, state)
        got, (h, c) = ours(inputs, state)
        for a, b in ((got, expected), (h, h_ref), (c, c_ref)):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
        weights = torch.randn_like(expected)
        grads_ref = torch.autograd.grad((expected * weights).sum() + h_ref.sum() + c_ref.sum(), reference.parameters())
        grads = torch.autograd.grad((got * weights).sum() + h.sum() + c.sum(), ours.parameters())
        for g, g_ref in zip(grads, grads_ref, strict=True):
            torch.testing.assert_close(g, g_ref, atol=1e-5, rtol=1e-5)


def test_fused_and_batchable_share_initialization_and_shapes():
    fused = make("char_lstm", (SEQ,), VOCAB, seed=3, fused=True, **SMALL)
    ours = make("char_lstm", (SEQ,), VOCAB, seed=3, **SMALL)
    assert isinstance(fused.lstm, nn.LSTM) and isinstance(ours.lstm, BatchableLSTM)
    for (name, p), (name_ref, p_ref) in zip(ours.named_parameters(), fused.named_parameters(), strict=True):
        assert name == name_ref and torch.equal(p, p_ref)
    inputs, _ = client_batches()
    assert ours(inputs[0]).shape == (4, VOCAB)


def test_loop_and_vmap_oracles_agree_and_fused_matches():
    """loop runs the fused kernel, vmap the unrolled recurrence: they agree, and with nn.LSTM itself."""
    model = FlatModel(char_lstm((SEQ,), VOCAB, **SMALL))
    fused = FlatModel(char_lstm((SEQ,), VOCAB, fused=True, **SMALL))
    assert fused.names == model.names
    X = model.x0() + 0.1 * torch.randn(3, model.dim, generator=torch.Generator().manual_seed(1))
    inputs, targets = client_batches()
    loss_loop, grad_loop = GradientOracle(model, "loop")(X, inputs, targets)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "batching rule not implemented ... fall back" warning
        loss_vmap, grad_vmap = GradientOracle(model, "vmap")(X, inputs, targets)
        losses_only = GradientOracle(model, "vmap").losses(X, inputs, targets)
    loss_fused, grad_fused = GradientOracle(fused, "loop")(X, inputs, targets)
    for loss, grad in ((loss_vmap, grad_vmap), (loss_fused, grad_fused)):
        torch.testing.assert_close(loss, loss_loop, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(grad, grad_loop, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(losses_only, loss_loop, atol=1e-5, rtol=1e-5)
    assert grad_loop.abs().sum(1).min() > 0


def test_full_size_parameter_count():
    vocab, embedding, hidden = 80, 8, 256
    expected = vocab * embedding + lstm_params(embedding, hidden, 2) + hidden * vocab + vocab
    assert expected == 819_920 == 798_720 + 265 * vocab
    model = make("char_lstm", (80,), vocab, seed=0)
    assert sum(p.numel() for p in model.parameters()) == expected
    assert FlatModel(model).dim == expected


def test_unrolled_only_under_a_functorch_transform(monkeypatch):
    """Outside vmap/grad transforms the fused kernel runs (the unrolled form is never called)."""
    lstm = BatchableLSTM(5, 8, num_layers=2)
    monkeypatch.setattr(BatchableLSTM, "_unrolled", lambda *args: pytest.fail("unrolled outside vmap"))
    outputs, (h, c) = lstm(torch.randn(2, SEQ, 5))
    assert outputs.shape == (2, SEQ, 8) and h.shape == c.shape == (2, 2, 8)


def test_choose_backend_loop_on_cpu_vmap_on_cuda():
    model = FlatModel(char_lstm((SEQ,), VOCAB, **SMALL))  # small: only the LSTM makes it loop
    assert model.dim < 700_000
    assert choose_backend(model, "cpu") == "loop"
    assert choose_backend(model, "cuda") == "vmap"


@pytest.mark.parametrize(
    ("options", "name"),
    [({"hidden_size": 0}, "hidden_size"), ({"num_layers": 0}, "num_layers"), ({"embedding_dim": 1.5}, "embedding_dim")],
)
def test_bad_arguments_are_named(options, name):
    with pytest.raises((ValueError, TypeError), match=name):
        char_lstm((SEQ,), VOCAB, **options)


def test_bad_vocabulary_and_shape_are_named():
    with pytest.raises(ValueError, match="num_classes"):
        make("char_lstm", (80,), 1)
    with pytest.raises(ValueError, match="input_shape"):
        char_lstm((1, 28, 28), VOCAB)
