"""Parsing a Shakespeare play into speeches ``(role, text)``: :func:`parse_play`.

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

:func:`role_text` joins one role's speeches into the text its samples are cut from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["parse_play", "role_text", "strip_directions"]

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
