"""Characters to ids and texts to samples, LEAF's way: the vocabulary, windows, the train/test cut.

**Samples (LEAF conventions).**  A client is one role of one play: its speeches, in
order, are joined into one text with every run of whitespace (newlines included) made
a single space, as LEAF's ``txt_to_data`` does.  A sample is a window of ``seq_len=80``
characters and its target, the next character; windows start every ``stride``
characters (LEAF: 1).  Characters are encoded with LEAF's 80-character alphabet
:data:`VOCABULARY` (ids 0..79 equal to LEAF's ``letter_to_index``), :data:`OOV_ID` = 80
for any other character and :data:`PAD_ID` = 81 for padding (windows are all full, so it
occurs only in the last chunk of a text part under ``targets="sequence"``):
``num_classes = VOCAB_SIZE = 82``.

**Chunks (TFF's conventions, ``targets="sequence"``).**  :func:`make_chunks` cuts a text
into non-overlapping chunks of ``seq_len + 1`` ids, the last one padded with
:data:`PAD_ID`; a chunk's input is its first ``seq_len`` ids and its targets its last
``seq_len`` (the input shifted by one), so every position predicts its next character.

Each role's text is cut at one character (:func:`split_point`) into train and test, the
windows that would straddle the cut dropped (see :mod:`fedcore.data.shakespeare`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

__all__ = [
    "OOV_ID",
    "PAD_ID",
    "TARGETS",
    "VOCABULARY",
    "VOCAB_SIZE",
    "count_chunks",
    "count_windows",
    "decode",
    "encode",
    "make_chunks",
    "make_windows",
    "split_point",
]

VOCABULARY = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
"""LEAF's ``ALL_LETTERS`` (80 characters); character ``VOCABULARY[i]`` has id ``i``."""
OOV_ID = len(VOCABULARY)  # 80: any character outside VOCABULARY
PAD_ID = OOV_ID + 1  # 81: padding, only in the last chunk of a text part under targets="sequence"
VOCAB_SIZE = PAD_ID + 1  # 82 = num_classes of the returned FederatedData
_CODE_TO_ID = np.full(257, OOV_ID, dtype=np.uint8)  # code point (clipped at 256) -> id
_CODE_TO_ID[[ord(c) for c in VOCABULARY]] = np.arange(len(VOCABULARY), dtype=np.uint8)
_ID_TO_CHAR = VOCABULARY + "\ufffd" + "\x00"  # OOV decodes to U+FFFD, padding to NUL
TARGETS = ("next", "sequence")
"""The sample layouts of ``load_shakespeare(targets=...)``: LEAF's windows with one next character, TFF's chunks."""


def encode(text: str) -> Tensor:
    """``int64`` ids of ``text``'s characters: ``VOCABULARY.index(c)``, else :data:`OOV_ID`."""
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    return torch.from_numpy(_CODE_TO_ID[np.minimum(codes, 256)].astype(np.int64))


def decode(ids: Tensor | Sequence[int]) -> str:
    """The characters of ``ids`` (``OOV_ID`` -> ``"\\ufffd"``, ``PAD_ID`` -> ``"\\x00"``)."""
    return "".join(_ID_TO_CHAR[int(i)] for i in torch.as_tensor(ids).flatten().tolist())


def make_windows(ids: Tensor, seq_len: int = 80, stride: int = 1) -> tuple[Tensor, Tensor]:
    """All windows of ``ids`` and their next character: ``inputs [n, seq_len]``, ``targets [n]``.

    Window ``k`` is ``ids[k*stride : k*stride + seq_len]``, its target ``ids[k*stride + seq_len]``;
    ``n = (len(ids) - seq_len - 1) // stride + 1`` (0 when ``len(ids) <= seq_len``).  Both int64.
    """
    ids = torch.as_tensor(ids).long().flatten()
    if ids.numel() <= seq_len:
        return torch.empty(0, seq_len, dtype=torch.long), torch.empty(0, dtype=torch.long)
    blocks = ids.unfold(0, seq_len + 1, stride)
    return blocks[:, :seq_len].contiguous(), blocks[:, seq_len].contiguous()


def count_windows(length: int, seq_len: int, stride: int) -> int:
    """How many windows :func:`make_windows` cuts from ``length`` ids (without cutting them)."""
    return 0 if length <= seq_len else (length - seq_len - 1) // stride + 1


def make_chunks(ids: Tensor, seq_len: int = 80) -> tuple[Tensor, Tensor]:
    """TFF's samples: ``ids`` cut into non-overlapping chunks of ``seq_len + 1``, ``inputs [n, seq_len]`` and
    ``targets [n, seq_len]``, both int64.

    Chunk ``k`` is ``ids[k*(seq_len+1) : (k+1)*(seq_len+1)]``, the last one padded at its end with
    :data:`PAD_ID` to ``seq_len + 1`` ids; its input is ``chunk[:-1]``, its targets ``chunk[1:]``
    (``targets[k, j] == inputs[k, j + 1]``).  ``n = ceil(len(ids) / (seq_len + 1))`` (0 for no ids):
    no chunk is all padding.
    """
    ids = torch.as_tensor(ids).long().flatten()
    n = count_chunks(ids.numel(), seq_len)
    blocks = torch.full((n * (seq_len + 1),), PAD_ID, dtype=torch.long)
    blocks[: ids.numel()] = ids
    blocks = blocks.view(n, seq_len + 1)
    return blocks[:, :-1].contiguous(), blocks[:, 1:].contiguous()


def count_chunks(length: int, seq_len: int) -> int:
    """How many chunks :func:`make_chunks` cuts from ``length`` ids: ``ceil(length / (seq_len + 1))``."""
    return -(-length // (seq_len + 1))


def split_point(length: int, seq_len: int, test_fraction: float) -> int | None:
    """Where a role's text of ``length`` characters is cut into train ``[:cut]`` and test ``[cut:]``.

    At stride 1 the text has ``usable = length - 2 * seq_len`` windows that lie wholly on
    one side of a cut (the ``seq_len`` windows across it are dropped); the test side gets
    ``n_test = round(test_fraction * usable)`` of them, clamped to ``[1, usable - 1]``, and
    ``cut = length - seq_len - n_test``.  ``test_fraction = 0`` gives ``cut = length`` (no
    test).  ``None`` when the text cannot give a train and a test window.
    """
    if test_fraction == 0:
        return length if length > seq_len else None
    usable = length - 2 * seq_len
    if usable < 2:
        return None
    n_test = min(max(math.floor(test_fraction * usable + 0.5), 1), usable - 1)
    return length - seq_len - n_test
