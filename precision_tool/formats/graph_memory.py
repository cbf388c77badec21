"""A graph too big for the memory at hand is one line naming the file, never a crash.

Every reader of a GE graph dump takes the whole text in (protobuf's parser and the TextFormat
readers need it whole), so a file of one gigabyte needs several in memory. Where there is not
that much (a memory limit, ``ulimit -v``, a small machine), Python raises MemoryError from
somewhere deep in the parser; :func:`names_the_file_when_out_of_memory` guards the entries that
read graphs (:func:`~.graph.read_graph`, :func:`~.graph_cache.read_graph_cached`) and turns it
into a PrecisionToolError naming the file, its size and its longest line (a GE graph's lines
are short: one of a gigabyte is the likely culprit). The memory the parse held is released
before the file is looked at again, a block at a time.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import PrecisionToolError
from .files import open_regular, size_text

BLOCK = 1 << 20  # bytes read at a time when the file is measured after a MemoryError
LONG_LINE = 1 << 20  # longer lines than this are named in the message
Read = TypeVar("Read", bound=Callable)


def names_the_file_when_out_of_memory(read: Read) -> Read:
    """Decorate a graph reader whose first argument is the graph file's path."""

    @functools.wraps(read)
    def guarded(path: str | os.PathLike, *args, **kwargs):
        try:
            return read(path, *args, **kwargs)
        except MemoryError:
            pass  # leave the handler first: its traceback holds the frames, and their text
        raise PrecisionToolError(out_of_memory_problem(Path(path)), Path(path))

    return guarded  # type: ignore[return-value]


def out_of_memory_problem(path: Path) -> str:
    """The problem to report when reading the graph at ``path`` ran out of memory."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return "not enough memory to read this graph"
    longest = longest_line(path)
    line = f", with a line of {size_text(longest)}" if longest is not None and longest >= LONG_LINE else ""
    return (
        f"not enough memory to read this graph ({size_text(size)}{line}; a graph is read whole, "
        "so it needs several times its size)"
    )


def longest_line(path: Path, block: int = BLOCK) -> int | None:
    """Bytes in the longest line of the file (newline excluded), reading ``block`` bytes at a
    time; None when it cannot be read."""
    longest = current = 0
    try:
        with open_regular(path, "graph file") as handle:
            while chunk := handle.read(block):
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    longest = max(longest, current + end - start)
                    current, start = 0, end + 1
                current += len(chunk) - start
    except (OSError, PrecisionToolError):
        return None
    return max(longest, current)
