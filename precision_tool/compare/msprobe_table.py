"""msprobe's compare-result table as CSV text (:mod:`.msprobe_files` makes its lines).

A cell is written as msprobe's writer writes it (:func:`cell_text`); names from the data are
neutralised, so none starts a spreadsheet formula. The eight statistics columns follow
msprobe's rule for a column: one that holds numbers alone is a float column (an ``int``
argument shows as ``3.0``), one with any text keeps each value as it is (``3``). That rule
looks at a whole column, yet the table is rendered a call at a time, as each call's lines are
made while the run still compares (:class:`TableText`), and only the calls the rest of the
table proves wrongly guessed are rendered again at the end.

A line is written as Python's csv writer writes it with its default dialect, by
:func:`.result_csv.line_text` (26 against 74 ms for the 5,894 lines of the 1.5 GB bench pair:
the writer looks at a long cell, a call's stack, a character at a time).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Hashable, Iterable, Sequence
from operator import itemgetter

from .result_csv import line_text, neutralise

_INFINITIES = (math.inf, -math.inf)


def cell_text(value) -> str:
    """A cell as msprobe's table writes it: a float as Python prints it, NaN as ``nan``,
    infinities with a leading space (a spreadsheet then reads text, not a #NAME? formula),
    None as ``None``."""
    kind = value.__class__
    if kind is str:  # most cells (fourteen a line: a hot path)
        return value
    if kind is float or isinstance(value, float):
        if value != value:
            return "nan"
        if value in _INFINITIES:
            return " inf" if value > 0 else " -inf"
        return str(value)
    return "None" if value is None else str(value)


class TableText:
    """The CSV text of one table, rendered a call at a time (:meth:`add`), joined at the end
    (:meth:`text`). ``head``: the columns; ``statistics``: the indexes of the statistics
    columns (none in md5 mode); ``text_columns``: the names of the columns whose cells come
    from the data, neutralised.

    A call is rendered with what the table has shown so far: a statistics column that has held
    a text is a text column (it stays one), any other a float column. Only an ``int`` (or a
    bool) is written differently by the two (``3`` or ``3.0``), so a call that held one in a
    column still taken for floats is kept, and rendered again at the end should a text come
    later in that column."""

    def __init__(self, head: list[str], statistics: Sequence[int], text_columns: frozenset[str]) -> None:
        self._head = head
        self._statistics = list(statistics)
        self._neutralised = [i for i, name in enumerate(head) if name in text_columns]
        self._pick = _picker(self._statistics)
        self._texts = [False] * len(self._statistics)  # a statistics column has held a text
        self._chunks: dict[Hashable, str] = {}
        self._guessed: dict[Hashable, tuple[list[list], list[int]]] = {}
        self._out = io.StringIO()
        self._writer = csv.writer(self._out)
        self._head_text = self._csv([list(head)])  # column names: nothing to neutralise in them

    def add(self, key: Hashable, lines: list[list]) -> None:
        """Render the lines of call ``key`` now (see the class)."""
        if self._floats_alone(lines):  # most calls: no text and no int, so nothing to note or guess
            self._chunks[key] = self._csv([self._with_floats(line) for line in lines])
            return
        numbers = self._note(lines)
        floats = self._floats()
        self._chunks[key] = self._csv(self._rendered(lines, floats))
        guessed = [k for k in numbers if floats[k]]
        if guessed:
            self._guessed[key] = (lines, guessed)

    def text(self, calls: Iterable[tuple[Hashable, list[list]]]) -> str:
        """The whole table: every call of ``calls`` (key, lines) in order; a call :meth:`add`
        did not render is rendered now."""
        calls = list(calls)
        for key, lines in calls:
            if key not in self._chunks:
                self._note(lines)
        floats = self._floats()
        for key, (lines, guessed) in self._guessed.items():
            if not all(floats[k] for k in guessed):  # a text came later in one of its columns
                self._chunks[key] = self._csv(self._rendered(lines, floats))
        rendered = (self._chunks.get(key) or self._csv(self._rendered(lines, floats)) for key, lines in calls)
        return self._head_text + "".join(rendered)

    def _floats_alone(self, lines: list[list]) -> bool:
        """Every statistics cell of ``lines`` is a float (a Python float: numpy's take the
        general way)."""
        pick = self._pick
        return all(cell.__class__ is float for line in lines for cell in pick(line))

    def _with_floats(self, line: list) -> list:
        """A copy of ``line`` whose statistics cells, floats all, are written as floats."""
        line = line.copy()
        for i in self._statistics:
            line[i] = cell_text(line[i])
        return line

    def _floats(self) -> list[bool]:
        return [not text for text in self._texts]

    def _note(self, lines: list[list]) -> list[int]:
        """Note the statistics columns ``lines`` hold a text in; returns those they hold an
        ``int`` or a bool in (positions among the statistics columns)."""
        numbers = []
        for k, i in enumerate(self._statistics):
            cells = [line[i] for line in lines]
            if any(not isinstance(cell, (int, float)) for cell in cells):
                self._texts[k] = True
            if any(isinstance(cell, int) for cell in cells):  # an int or a bool: not a float
                numbers.append(k)
        return numbers

    def _rendered(self, lines: list[list], floats: list[bool]) -> list[list]:
        """The lines with their statistics cells as text: in a column of ``floats`` numbers are
        written as floats; any other cell is written as it is."""
        columns = list(zip(self._statistics, floats))
        rendered = []
        for line in lines:
            line = line.copy()
            for i, wide in columns:
                cell = line[i]
                line[i] = cell_text(float(cell) if wide and isinstance(cell, (int, float)) else cell)
            rendered.append(line)
        return rendered

    def _csv(self, lines: list[list]) -> str:
        """The CSV text of ``lines`` (rendered copies: neutralised in place): joined by
        :func:`line_text`, or through the table's one writer (emptied after each use)."""
        texts = []
        for cells in lines:  # names from the data could start a spreadsheet formula; numbers cannot
            for i in self._neutralised:
                cells[i] = neutralise(cells[i])
            text = line_text(cells)
            if text is None:
                self._writer.writerow(cells)
                text = self._out.getvalue()
                self._out.seek(0)
                self._out.truncate()
            texts.append(text)
        return "".join(texts)


def _picker(indexes: Sequence[int]):
    """A line's cells at ``indexes``, as a sequence."""
    if not indexes:
        return lambda line: ()
    if len(indexes) == 1:
        return lambda line: (line[indexes[0]],)
    return itemgetter(*indexes)


__all__ = ["TableText", "cell_text"]
