"""A run's checkpoint: its state, rows and random streams every ``every`` rounds, and the check that a file resumed
from was written by the same run (the file format, verified before use, is :mod:`fedcore.checkpoint`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedcore import checkpoint as checkpoint_file
from fedcore.identity import differences, uncomparable

VERSION = 2


@dataclass(frozen=True)
class Checkpoint:
    """The checkpoint of a one-run pass at ``path``, written every ``every`` rounds and after the last."""

    path: Path
    every: int

    def due(self, round: int, rounds: int) -> bool:  # noqa: A002 (the round, as the loop counts it)
        return round % self.every == 0 or round == rounds

    def save(self, p: Any) -> None:
        """Write the pass ``p`` (one run): its identity, state, rows, rounds done and random streams."""
        checkpoint_file.write(self.path, {"version": VERSION, "identity": p.identity, "state": p.state,
                                          "rows": p.rows[0], "round": p.round, **p.streams[0].state()})

    def load(self, p: Any, trust: bool) -> None:
        """Continue the pass ``p`` from this file after checking that the same run wrote it (its identity: data,
        model and start, every hyperparameter, the options, fedcore's version) and that it holds at most the pass's
        rounds; ``trust``: resume although a part of the identity cannot be compared (an object of no known kind)."""
        path, rounds = self.path, p.options.rounds
        unknown = uncomparable(p.identity)
        if unknown and not trust:
            raise ValueError(
                f"resume=True cannot check {', '.join(unknown)} against checkpoint={str(path)!r}: its content cannot "
                "be compared; use fedcore's schedules (constant, exp_decay, storm_step_size, storm_momentum) or "
                "pass resume='trust' to resume on your word"
            )
        saved = checkpoint_file.read(path, p.problem.data.device)
        found = differences(saved.get("identity"), p.identity)
        if saved.get("version") != VERSION or found:
            field, there, here = found[0] if found else ("version", saved.get("version"), VERSION)
            more = f" (and {len(found) - 1} more: {', '.join(f for f, _, _ in found[1:4])})" if len(found) > 1 else ""
            raise ValueError(
                f"checkpoint={str(path)!r} was written by a different run: {field} is {there!r} there and "
                f"{here!r} here{more}; delete it, pass another checkpoint path, or pass resume=False to start over"
            )
        if saved["round"] > rounds:
            raise ValueError(
                f"checkpoint={str(path)!r} holds {saved['round']} rounds, more than rounds={rounds}: pass "
                f"rounds>={saved['round']} to continue it, or another checkpoint path"
            )
        p.state, p.rows[0], p.round = saved["state"], saved["rows"], saved["round"]
        p.streams[0].load(saved)
