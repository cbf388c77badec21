"""Long lists are cut: their first :data:`LIST_LIMIT` entries, then one "... N more" note.

A dump of a million tensors or an op of a million inputs must not print a million lines (nor
compute a million statistics to print them): ``ni`` and ``pt`` show the first entries of each
list and say how many they left out; their ``--full`` flag shows every one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

LIST_LIMIT = 100
FULL_FLAG = "--full"

T = TypeVar("T")


def head(items: Sequence[T], limit: int | None) -> tuple[Sequence[T], int]:
    """The first ``limit`` of ``items`` (all of them when ``limit`` is None), and how many are
    left out."""
    if limit is None or len(items) <= limit:
        return items, 0
    return items[:limit], len(items) - limit


def more_note(hidden: int, what: str = "") -> str:
    """``... 1,234 more inputs (--full shows all)``; empty when nothing is hidden."""
    if hidden <= 0:
        return ""
    return f"... {hidden:,} more{' ' + what if what else ''} ({FULL_FLAG} shows all)"
