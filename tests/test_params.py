"""The flat-vector view of a model and the gradient oracle's two backends."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedcore import models
from fedcore.params import LOOP_ABOVE_PARAMS, FlatModel, GradientOracle, choose_backend, evaluate

MODELS = {
    "cnn": (lambda: models.cnn((1, 12, 12), 5), (1, 12, 12), 5),
    "tanh_cnn": (lambda: models.tanh_cnn((1, 14, 14), 5), (1, 14, 14), 5),
    "logistic_regression": (lambda: models.logistic_regression((1, 12, 12), 5), (1, 12, 12), 5),
    "mlp": (lambda: models.mlp((1, 12, 12), 5, hidden=(16, 8)), (1, 12, 12), 5),
}


def batch(shape, num_classes, clients=4, size=6, seed=0):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(clients, size, *shape, generator=generator)
    return inputs, torch.randint(num_classes, (clients, size), generator=generator)


def test_flatten_unflatten_round_trip() -> None:
    module = models.mlp((3,), 2, hidden=(4,))
    model = FlatModel(module)
    x = model.x0()
    assert model.dim == 3 * 4 + 4 + 4 * 2 + 2 == x.numel()
    params = model.unflatten(x)
    for name, p in module.named_parameters():
        assert torch.equal(params[name], p.detach())
    inputs = torch.randn(5, 3)
    torch.testing.assert_close(model.forward(x, inputs), module(inputs))
    with pytest.raises(ValueError, match="x has 7 entries, the model has d=26"):
        model.unflatten(torch.zeros(7))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_backends_agree(name: str) -> None:
    """Both backends give each client's own gradient, checked against plain autograd on the module."""
    factory, shape, num_classes = MODELS[name]
    model = FlatModel(factory())
    model.module.eval()  # dropout off: the two backends then compute the same function
    X = model.x0() + 0.05 * torch.randn(4, model.dim, generator=torch.Generator().manual_seed(1))
    inputs, targets = batch(shape, num_classes)
    results = {b: GradientOracle(model, b)(X, inputs, targets) for b in ("loop", "vmap")}
    torch.testing.assert_close(results["loop"][0], results["vmap"][0], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(results["loop"][1], results["vmap"][1], rtol=1e-5, atol=1e-5)
    s = 2  # independent check of one client with the module itself
    module = factory().eval()
    torch.nn.utils.vector_to_parameters(X[s], module.parameters())
    loss = nn.functional.cross_entropy(module(inputs[s]), targets[s])
    loss.backward()
    expected = torch.cat([p.grad.flatten() for p in module.parameters()])
    torch.testing.assert_close(results["vmap"][1][s], expected, rtol=1e-5, atol=1e-5)
    assert float(results["loop"][0][s]) == pytest.approx(loss.item(), rel=1e-5)


@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_dropout_draws_independent_masks_per_client(backend: str) -> None:
    """Identical clients (same x, same batch) get different gradients when dropout is on."""
    model = FlatModel(models.cnn((1, 12, 12), 5))
    model.module.train()
    inputs, targets = batch((1, 12, 12), 5, clients=1)
    X = model.x0().expand(3, -1)
    torch.manual_seed(0)
    losses, grads = GradientOracle(model, backend)(X, inputs.expand(3, -1, -1, -1, -1), targets.expand(3, -1))
    assert not torch.allclose(grads[0], grads[1]) and not torch.allclose(grads[1], grads[2])
    model.module.eval()
    _, grads = GradientOracle(model, backend)(X, inputs.expand(3, -1, -1, -1, -1), targets.expand(3, -1))
    torch.testing.assert_close(grads[0], grads[1])


def test_losses_without_gradients_match() -> None:
    model = FlatModel(models.mlp((1, 12, 12), 5, hidden=(8,)))
    X = model.x0().expand(4, -1)
    inputs, targets = batch((1, 12, 12), 5)
    for backend in ("loop", "vmap"):
        oracle = GradientOracle(model, backend)
        torch.testing.assert_close(oracle.losses(X, inputs, targets), oracle(X, inputs, targets)[0])


def test_auto_rule() -> None:
    assert choose_backend(FlatModel(models.cnn()), "cpu") == "loop"
    assert choose_backend(FlatModel(models.logistic_regression()), "cpu") == "vmap"
    assert choose_backend(FlatModel(models.cnn()), "cuda") == "vmap"
    assert GradientOracle(FlatModel(models.logistic_regression()), "auto").backend == "vmap"


def test_auto_rule_switches_at_the_size_threshold() -> None:
    """Dense models: vmap up to LOOP_ABOVE_PARAMS parameters on a CPU, loop above; always vmap on cuda."""
    def dense(d: int) -> FlatModel:  # nn.Linear(n_in, 1) has n_in + 1 parameters
        return FlatModel(nn.Linear(d - 1, 1))

    assert choose_backend(dense(LOOP_ABOVE_PARAMS), "cpu") == "vmap"
    assert choose_backend(dense(LOOP_ABOVE_PARAMS + 1), "cpu") == "loop"
    assert choose_backend(dense(LOOP_ABOVE_PARAMS + 1), "cuda") == "vmap"
    assert choose_backend(FlatModel(nn.Sequential(nn.Flatten(), nn.Linear(3, 2))), torch.device("cpu")) == "vmap"
    assert choose_backend(FlatModel(nn.RNN(2, 3, batch_first=True)), "cpu") == "loop"
    assert choose_backend(FlatModel(nn.LSTM(2, 3, batch_first=True)), "cuda") == "loop"  # no vmap rule


@pytest.mark.parametrize("backend", ["loop", "vmap"])
def test_recycled_gradients_are_never_overwritten_while_held(backend: str) -> None:
    """A result the caller holds is never overwritten by a later call; memory is reused only where the
    caller hands it in (out=)."""
    model = FlatModel(models.logistic_regression((1, 12, 12), 5))
    oracle = GradientOracle(model, backend)
    inputs, targets = batch((1, 12, 12), 5)
    X = torch.randn(4, model.dim, generator=torch.Generator().manual_seed(1)) * 0.1
    held = [oracle(X * scale, inputs, targets)[1] for scale in (1.0, 2.0, 3.0)]  # three live results
    view, row = oracle(X * 4.0, inputs, targets)[1][1:3], oracle(X * 5.0, inputs, targets)[1][0].clone()
    as_numpy = oracle(X * 6.0, inputs, targets)[1].numpy()
    for _ in range(3):
        oracle(X * 7.0, inputs, targets)  # results dropped at once: these may reuse memory
    fresh = GradientOracle(model, backend)
    for scale, grads in zip((1.0, 2.0, 3.0), held):
        torch.testing.assert_close(grads, fresh(X * scale, inputs, targets)[1])
    torch.testing.assert_close(view, fresh(X * 4.0, inputs, targets)[1][1:3])
    torch.testing.assert_close(row, fresh(X * 5.0, inputs, targets)[1][0])
    torch.testing.assert_close(torch.from_numpy(as_numpy), fresh(X * 6.0, inputs, targets)[1])
    # Reuse is now the caller's explicit decision (issue 8 removed the reference-count guess): a buffer
    # passed as out= is written in place, every time (this replaced "dropped results get reused").
    buffer = torch.empty_like(X)
    pointers = {oracle(X, inputs, targets, out=buffer)[1].data_ptr() for _ in range(4)}
    assert pointers == {buffer.data_ptr()}


def test_evaluate_matches_hand_count() -> None:
    module = models.logistic_regression((4,), 3)
    model = FlatModel(module)
    inputs = torch.randn(50, 4, generator=torch.Generator().manual_seed(0))
    targets = torch.randint(3, (50,), generator=torch.Generator().manual_seed(1))
    metrics = evaluate(model, model.x0(), inputs, targets, batch_size=7)
    with torch.no_grad():
        outputs = module(inputs)
    assert metrics["test_accuracy"] == pytest.approx((outputs.argmax(1) == targets).float().mean().item())
    assert metrics["test_loss"] == pytest.approx(nn.functional.cross_entropy(outputs, targets).item(), rel=1e-5)


def test_models_have_the_papers_sizes() -> None:
    """Reddi et al.'s EMNIST CNN: 32*9+32 + 64*32*9+64 + 9216*128+128 + 128*10+10 = 1,199,882."""
    assert FlatModel(models.cnn((1, 28, 28), 10)).dim == 1_199_882
    assert FlatModel(models.logistic_regression((1, 28, 28), 10)).dim == 7850
    # Nouiehed et al.'s tanh CNN (FAFED): 5*9+5 + 10*5*9+10 + 250*100+100 + 100*10+10 = 26,620
    assert FlatModel(models.tanh_cnn((1, 28, 28), 10)).dim == 26_620
    a, b = models.make("mlp", (1, 28, 28), 10, seed=3), models.make("mlp", (1, 28, 28), 10, seed=3)
    assert torch.equal(FlatModel(a).x0(), FlatModel(b).x0())


def test_evaluate_leaves_ignored_classes_out_of_the_accuracy() -> None:
    """Targets 2 (say out-of-vocabulary) are not scored: 2 right of the 3 others, not 2 of 5."""
    module = nn.Linear(2, 3, bias=False)
    with torch.no_grad():
        module.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [-5.0, -5.0]]))
    inputs = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # predicts 0, 1, 0, 0, 1
    targets = torch.tensor([0, 1, 1, 2, 2])
    model = FlatModel(module)
    plain = evaluate(model, model.x0(), inputs, targets)
    ignoring = evaluate(model, model.x0(), inputs, targets, ignore_classes=(2,))
    assert plain["test_accuracy"] == pytest.approx(2 / 5) and ignoring["test_accuracy"] == pytest.approx(2 / 3)
    assert plain["test_loss"] == ignoring["test_loss"]  # the loss counts every target
