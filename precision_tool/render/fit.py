"""Tables and panels that never cut a name or a number, whatever the width.

Rich fits a table to the console by shrinking its columns, which folds an op name in the middle
(``model/mlp/ge`` / ``lu/Gelu``) or cuts it with an ellipsis (``-0.03988…``): a name that cannot
be grepped and a number that cannot be read. :class:`FitTable` lays a table out itself:

1. columns whose cells are all empty are dropped (their width goes to the others);
2. when every cell fits on its line, the table is drawn as it is;
3. else, when every column can be as wide as its longest word, cells wrap between words only
   (a name has no spaces, so it stays whole);
4. else each row is folded into lines of its own, ``header: value``, printed whole (a terminal
   may wrap a long line on screen, the text itself is never broken).

:class:`FitPanel` draws a panel around its lines when the longest word fits inside it, else the
title and the lines without a border. Every cell from the data is made
:func:`~.lines.visible` before it is measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from rich import box as boxes
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.measure import Measurement
from rich.panel import Panel
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from .lines import data_text, visible_text

HUGE = 1 << 20  # a width no table reaches: for measuring a layout
FOLD_INDENT = "  "


def _text(cell: object) -> Text:
    if isinstance(cell, Text):
        return visible_text(cell)
    return data_text("" if cell is None else cell)


def _longest_line(text: Text) -> int:
    return max((cell_len(line) for line in text.plain.split("\n")), default=0)


def _longest_word(text: Text) -> int:
    return max((cell_len(word) for word in text.plain.split()), default=0)


@dataclass
class _Column:
    header: str
    justify: str = "left"
    style: str | None = None
    keep: bool = False  # shown even when every cell is empty


@dataclass
class FitTable:
    """A table that folds rather than cuts (see the module doc); the API of rich's ``Table``
    for what the tool uses: ``add_column``, ``add_row``.

    Args:
        title: a line above the table (never wrapped into the table's width).
        show_header: draw the column headers. Defaults to True.
        grid: no borders, two spaces between columns (a key/value list). Defaults to False.
        caption: a muted line below the table (e.g. how many rows were left out).
    """

    title: str | Text | None = None
    caption: str | None = None
    show_header: bool = True
    grid: bool = False
    title_style: str = "title"
    columns: list[_Column] = field(default_factory=list)
    rows: list[tuple[list[Text], str | None]] = field(default_factory=list)

    def add_column(self, header: str = "", justify: str = "left", style: str | None = None, keep: bool = False) -> None:
        """A column; ``keep`` shows it even when all its cells are empty."""
        self.columns.append(_Column(header, justify, style, keep))

    def add_row(self, *cells: object, style: str | None = None) -> None:
        """One row; ``str`` cells are data (made visible), ``Text`` cells keep their styles."""
        texts = [_text(cell) for cell in cells]
        texts += [Text("")] * (len(self.columns) - len(texts))
        self.rows.append((texts, style))

    # --- layout -------------------------------------------------------------------------------

    def _shown(self) -> list[int]:
        if not self.rows:
            return list(range(len(self.columns)))
        return [
            i
            for i, column in enumerate(self.columns)
            if column.keep or any(cells[i].plain.strip() for cells, _ in self.rows)
        ]

    def _headers(self, shown: list[int]) -> list[Text]:
        return [Text(self.columns[i].header) for i in shown]

    def _widths(self, shown: list[int], measure) -> list[int]:
        out = []
        for i in shown:
            cells = [cells[i] for cells, _ in self.rows]
            if self.show_header:
                cells.append(Text(self.columns[i].header))
            out.append(max((measure(cell) for cell in cells), default=0))
        return out

    def _table(self, shown: list[int], widths: list[int], rows: bool = True) -> Table:
        if self.grid:
            table = Table.grid(padding=(0, 2))
        else:
            table = Table(box=boxes.HEAVY_HEAD, show_header=self.show_header)
        for i, width in zip(shown, widths):
            column = self.columns[i]
            table.add_column(
                column.header, justify=column.justify, style=column.style, width=max(width, 1), overflow="fold"
            )
        for cells, style in self.rows if rows else ():
            table.add_row(*(cells[i] for i in shown), style=style)
        return table

    def _overhead(self, console: Console, options: ConsoleOptions, shown: list[int]) -> int:
        widths = [1] * len(shown)
        table = self._table(shown, widths, rows=False)  # borders and padding: the columns' only
        measured = Measurement.get(console, options.update_width(HUGE), table)
        return measured.maximum - sum(widths)

    def _layout(self, console: Console, options: ConsoleOptions) -> tuple[list[int], list[int] | None]:
        """The columns shown and their widths; None widths: fold the rows."""
        shown = self._shown()
        room = options.max_width - self._overhead(console, options, shown)
        natural = self._widths(shown, _longest_line)
        if sum(natural) <= room:
            return shown, natural
        least = self._widths(shown, _longest_word)
        if sum(least) > room:
            return shown, None
        spare, wanted = room - sum(least), sum(n - m for n, m in zip(natural, least))
        return shown, [m + (n - m) * spare // wanted for n, m in zip(natural, least)]

    # --- folded rows --------------------------------------------------------------------------

    def _folded(self, shown: list[int]) -> list:
        """Each row on lines of its own: ``header: value`` pieces side by side, a new line
        between pieces when the next one does not fit (headerless rows: the cells in words)."""
        out: list = []
        headers = self._headers(shown)
        for cells, style in self.rows:
            row = [(headers[k], cells[i]) for k, i in enumerate(shown) if cells[i].plain.strip()]
            if not self.show_header:
                out.append(Words(Text("  ", style=style or "").join(cell for _, cell in row)))
                continue
            pieces = [Text.assemble((f"{header.plain}: ", "muted"), cell, style=style or "") for header, cell in row]
            out.append(Pieces(pieces))
        return out

    # --- rich protocol ------------------------------------------------------------------------

    def _title(self) -> Text | None:
        if self.title is None or (isinstance(self.title, str) and not self.title):
            return None
        title = _text(self.title)
        title.stylize(self.title_style)
        return title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        title = self._title()
        if title is not None:
            yield Words(title)
        shown, widths = self._layout(console, options)
        if widths is not None:
            yield self._table(shown, widths)
        else:
            yield from self._folded(shown)
        if self.caption:
            yield Words(Text(self.caption, style="muted"))

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        shown = self._shown()
        natural = sum(self._widths(shown, _longest_line)) + self._overhead(console, options, shown)
        words = [cell_len(FOLD_INDENT) + _longest_word(cells[i]) for cells, _ in self.rows for i in shown]
        title = self._title()
        least = max([*words, _longest_word(title) if title is not None else 0, 1])
        return Measurement(min(least, natural), max(natural, least))


_WORD = re.compile(r"\S+\s*|\s+")


def word_breaks(line: str, width: int) -> list[int]:
    """Offsets where ``line`` is broken to fit ``width``: between words only, so a word longer
    than ``width`` gets a line of its own, whole."""
    breaks, used = [], 0
    for match in _WORD.finditer(line):
        word = match.group()
        if used and used + cell_len(word.rstrip()) > width:
            breaks.append(match.start())
            used = 0
        used += cell_len(word)
    return breaks


class Words:
    """``text`` wrapped at the width between words only, never inside one: a name longer than
    the line is printed whole (a terminal may wrap it on screen; the text has no break)."""

    def __init__(self, text: Text) -> None:
        self.text = visible_text(text, keep="\n")

    def __str__(self) -> str:
        return self.text.plain

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.text.split("\n", allow_blank=True):
            for piece in line.divide(word_breaks(line.plain, options.max_width)):
                piece.rstrip()
                yield from _line(console, piece)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(max(_longest_word(self.text), 1), max(_longest_line(self.text), 1))


class Pieces:
    """Pieces of text side by side, two spaces apart, a new (indented) line before a piece that
    would not fit; a piece is never broken, one wider than the line is printed whole."""

    GAP = "  "

    def __init__(self, pieces: list[Text]) -> None:
        self.pieces = pieces

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        line, used = Text(), 0
        for piece in self.pieces:
            width = cell_len(piece.plain)
            if used and used + len(self.GAP) + width > options.max_width:
                yield from _line(console, line)
                line, used = Text(FOLD_INDENT), len(FOLD_INDENT)
            elif used:
                line.append(self.GAP)
                used += len(self.GAP)
            line.append_text(piece)
            used += width
        if used:
            yield from _line(console, line)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        widths = [cell_len(piece.plain) for piece in self.pieces] or [1]
        return Measurement(max(widths) + len(FOLD_INDENT), sum(widths) + len(self.GAP) * (len(widths) - 1))


def _line(console: Console, text: Text) -> RenderResult:
    yield from text.render(console)
    yield Segment.line()


class FitPanel:
    """A bordered panel of ``renderables`` under ``title`` when their longest word fits inside
    the border; else the title and the renderables without it (so nothing is cut)."""

    BORDER = 4  # two border characters and two of padding

    def __init__(self, renderables: Iterable[RenderableType], title: str | Text) -> None:
        self.renderables = list(renderables)
        self.title = _text(title)
        self.title.stylize("title")

    def _fits(self, console: Console, options: ConsoleOptions) -> bool:
        wide = options.update_width(HUGE)
        least = max((Measurement.get(console, wide, r).minimum for r in self.renderables), default=0)
        return least + self.BORDER <= options.max_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self._fits(console, options):
            yield Panel(Group(*self.renderables), title=self.title, title_align="left", expand=False)
            return
        yield Words(self.title)
        for renderable in self.renderables:
            yield Words(renderable) if isinstance(renderable, Text) else renderable

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        inner = Measurement.get(console, options, Group(*self.renderables))
        return Measurement(inner.minimum, inner.maximum + self.BORDER)


class FitTree:
    """A tree of text lines like rich's ``Tree``, but a label is wrapped between words only and
    never cropped (a long name runs past the width whole), and it is drawn without recursion:
    a tree thousands of levels deep renders.

    ``label`` may be extended (``tree.label.append(...)``) until the tree is printed.
    """

    GUIDES = ("├── ", "└── ", "│   ", "    ")

    def __init__(self, label: Text) -> None:
        self.label = label
        self.children: list[FitTree] = []

    def add(self, label: Text) -> FitTree:
        """A new child below the others; returns it."""
        child = FitTree(label)
        self.children.append(child)
        return child

    def _lines(self, width: int) -> Iterable[tuple[str, str, Text]]:
        """(guide of the first line, guide of the continuation lines, label) depth first."""
        stack: list[tuple[FitTree, str, str, str]] = [(self, "", "", "")]
        while stack:
            node, guide, first, rest = stack.pop()
            yield guide + first, guide + rest, node.label
            inner = guide + rest
            last = len(node.children) - 1
            for k, child in reversed(list(enumerate(node.children))):
                branch, below = (self.GUIDES[1], self.GUIDES[3]) if k == last else (self.GUIDES[0], self.GUIDES[2])
                stack.append((child, inner, branch, below))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for first, rest, label in self._lines(options.max_width):
            text = visible_text(label)
            room = max(options.max_width - cell_len(first), 1)
            for n, piece in enumerate(text.divide(word_breaks(text.plain, room))):
                piece.rstrip()
                yield from _line(console, Text(first if n == 0 else rest, style="muted") + piece)

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        least = most = 1
        for first, _, label in self._lines(options.max_width):
            least = max(least, cell_len(first) + _longest_word(label))
            most = max(most, cell_len(first) + _longest_line(label))
        return Measurement(least, most)
