"""The cosine curve in the terminal: one character per op (or per bucket of ops) along execution
order, its height from the worst output cosine, its colour from the worst verdict among its ops (the
one palette), and a caret under the first operator
that introduces the error -- the shape of the report's plot without a browser.

::

    cosine ▇▇▇▇▇▇▁▃▄▅▅▇▇▇▇  15 ops, 0.36..1, threshold 0.98
                 ^ first introducer: resnet/conv2/Conv2D (Index 13)

With more ops than columns each character stands for a run of consecutive ops and shows the
lowest cosine among them, so a single bad op is never averaged away. A bucket whose ops all have
a NaN output cosine is a ``?``. Heights scale from the lowest cosine (or the threshold, when
lower) up to 1.
"""

from __future__ import annotations

import math

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text

from ..compare.divergence import Divergence, OpCosines
from ..compare.verdict import CLEAN, INHERITS, INTRODUCES, NEAR, NONFINITE, NOT_COMPARED
from .fit import Words
from .lines import visible
from .op_graph import node_state
from .palette import swatch

LEVELS = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"  # lower one eighth block .. full block
LABEL = "cosine "
MIN_COLUMNS = 10


def strip_ops(divergence: Divergence) -> list[OpCosines]:
    """The ops the strip shows: those with a compared output, in execution order."""
    return [op for op in divergence.ops if op.outputs]


def buckets(count: int, columns: int) -> list[range]:
    """``count`` consecutive items cut into at most ``columns`` runs of near-equal length."""
    columns = max(1, min(columns, count))
    return [range(k * count // columns, (k + 1) * count // columns) for k in range(columns)]


def bucket_cosine(ops: list[OpCosines]) -> float:
    """The lowest output cosine of ``ops``; NaN when none has a number."""
    values = [op.worst_output for op in ops if op.worst_output is not None]
    return min(values) if values else math.nan


def level(cosine: float, low: float) -> int:
    """0..7: where ``cosine`` sits between ``low`` and 1."""
    if low >= 1.0:
        return len(LEVELS) - 1
    share = (min(cosine, 1.0) - low) / (1.0 - low)
    return max(0, min(len(LEVELS) - 1, round(share * (len(LEVELS) - 1))))


_SEVERITY = (INTRODUCES, INHERITS, NONFINITE, NEAR, CLEAN, NOT_COMPARED)


def worst_state(ops) -> str:
    """The state a run of ops is drawn in: its most severe (:func:`~.op_graph.node_state`)."""
    states = {node_state(op) if op.has_tensors else NOT_COMPARED for op in ops}
    return next((s for s in _SEVERITY if s in states), NOT_COMPARED)


class CosineStrip:
    """A renderable: the strip of ``divergence`` fitted to the width it is given."""

    def __init__(self, divergence: Divergence) -> None:
        self.divergence = divergence
        self.ops = strip_ops(divergence)

    def _low(self) -> float:
        values = [op.worst_output for op in self.ops if op.worst_output is not None]
        return min(values + [self.divergence.threshold])

    def _suffix(self) -> str:
        low = self._low()
        return f"  {len(self.ops)} ops, {low:.2f}..1, threshold {self.divergence.threshold:g}"

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widest = len(LABEL) + len(self.ops) + len(self._suffix())
        return Measurement(min(widest, len(LABEL) + MIN_COLUMNS), widest)

    def strip(self, columns: int) -> tuple[Text, int | None]:
        """The strip in at most ``columns`` characters, and the column of the first
        introducer (None when there is none)."""
        low = self._low()
        first = self.divergence.first_introducer
        text, marked = Text(), None
        for column, run in enumerate(buckets(len(self.ops), columns)):
            ops = [self.ops[i] for i in run]
            cosine = bucket_cosine(ops)
            style = swatch(worst_state(ops)).style
            text.append("?" if math.isnan(cosine) else LEVELS[level(cosine, low)], style=style)
            if first is not None and any(op is first for op in ops):
                marked = column
        return text, marked

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not self.ops:
            return
        suffix = self._suffix()
        room = options.max_width - len(LABEL) - len(suffix)
        if room < MIN_COLUMNS:
            suffix, room = "", options.max_width - len(LABEL)
        strip, marked = self.strip(max(room, 1))
        yield Text.assemble((LABEL, "muted"), strip, (suffix, "muted"), no_wrap=True, overflow="crop")
        first = self.divergence.first_introducer
        if marked is not None and first is not None:
            caret = " " * (len(LABEL) + marked) + "^"
            note = f"first introducer: {visible(first.name)} (Index {first.index})"
            style = swatch(INTRODUCES).style
            if len(caret) + 1 + cell_len(note) <= options.max_width:
                yield Text(f"{caret} {note}", style=style, no_wrap=True)
            else:  # the name would be cut at the edge: the caret alone, the note below, whole
                yield Text(caret, style=style, no_wrap=True)
                yield Words(Text(note, style=style))
