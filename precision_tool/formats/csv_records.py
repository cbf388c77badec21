"""CSV records of any field length, read without touching ``csv.field_size_limit``.

Python's csv module refuses a field over ``csv.field_size_limit()`` (131072 characters by
default), and that limit is one setting for the whole process. Our own files pass it: the
GroundTruth cell of a fused op lists every TF op fused into it, and 3,000 of them make a cell
of some 150 KiB. Raising the process-wide limit would change every other csv reader in the
process and drop the guard against a damaged file (a quote never closed makes the rest of the
file one field). So :func:`csv_records` leaves the limit alone: the csv module reads every
record it can, at C speed, and only a record it refuses for its length is read here, in
Python, under a bound of our own (:data:`LONGEST_RECORD` characters), past which it is an error.

The record read here is split as the csv module splits it with the default (``excel``,
non-strict) dialect: ``,`` between fields, ``"`` around a field, ``""`` for a quote inside
one, newlines inside quotes kept, and anything after a closing quote (or a quote inside an
unquoted field) taken as it stands.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Iterable, Iterator

# Far over any real cell (150,000 fused op names of 400 characters) yet a bound: a damaged
# file costs at most this much memory before it is an error.
LONGEST_RECORD = 64 * 2**20

_QUOTED_PART = re.compile(r'[^"]*(?:""[^"]*)*')  # up to the closing quote or the line's end
_PLAIN_PART = re.compile(r"[^,\r\n]*")  # up to the next comma or the end of the line


def csv_records(lines: Iterable[str], longest: int = LONGEST_RECORD) -> Iterator[tuple[int, list[str]]]:
    """The records of ``lines`` (a text file opened with ``newline=""``) as (the number of the
    record's last line, its cells), empty lines included as ``[]`` like ``csv.reader`` gives them.

    Raises:
        csv.Error: a record the csv module refuses for a reason other than a field's length, or
            one longer than ``longest`` characters.
    """
    record: list[str] = []  # the lines of the record being read, should the csv module refuse it

    def kept() -> Iterator[str]:
        for line in lines:
            record.append(line)
            yield line

    source = kept()
    reader = csv.reader(source)
    read_here = 0  # lines the csv module did not see: its line_num leaves them out
    while True:
        record.clear()
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error:
            if sum(map(len, record)) <= csv.field_size_limit():
                raise  # not a long field: the csv module's own complaint stands
            seen = len(record)
            cells = _long_record(itertools.chain(list(record), source), longest)
            read_here += len(record) - seen
        yield reader.line_num + read_here, cells


def _long_record(lines: Iterator[str], longest: int) -> list[str]:
    """The cells of the record that starts at the first of ``lines``; lines are taken only while
    a quoted field stays open. At the end of the input an open field ends, as in the csv module."""
    cells: list[str] = []
    field: list[str] = []
    quoted, at_field_start, size = False, True, 0
    for line in lines:
        size += len(line)
        if size > longest:
            raise csv.Error(f"a record over {longest // 2**20} MiB (a quote never closed?)")
        pos = 0
        while True:
            if at_field_start:
                at_field_start = False
                if line.startswith('"', pos):
                    quoted, pos = True, pos + 1
            if quoted:
                part = _QUOTED_PART.match(line, pos)
                field.append(part.group().replace('""', '"'))
                pos = part.end()
                if pos == len(line):
                    break  # the quoted field goes on in the next line
                quoted, pos = False, pos + 1  # past the closing quote
            part = _PLAIN_PART.match(line, pos)
            field.append(part.group())
            pos = part.end()
            cells.append("".join(field))
            field = []
            if not line.startswith(",", pos):
                return cells  # a line end (or the end of the input) ends the record
            pos, at_field_start = pos + 1, True
    cells.append("".join(field))
    return cells
