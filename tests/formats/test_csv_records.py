"""csv_records: records with fields over the csv module's limit, split as the csv module splits
them (the reference is ``csv.reader`` with its limit raised for the one check), and a bound."""

from __future__ import annotations

import csv
import io

import pytest

from precision_tool.formats.csv_records import csv_records

BIG = "x" * 200_000  # over the default field limit of 131072


def records(text: str, **kwargs) -> list[tuple[int, list[str]]]:
    return list(csv_records(io.StringIO(text, newline=""), **kwargs))


def reference(text: str) -> list[tuple[int, list[str]]]:
    """What csv.reader gives with no limit in the way (the limit is put back at once)."""
    old = csv.field_size_limit(2**31 - 1)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        return [(reader.line_num, cells) for cells in reader]
    finally:
        csv.field_size_limit(old)


TRICKY = [
    f'1,"{BIG}",3\r\n',
    f"1,{BIG},3\r\n",  # unquoted
    f'"{BIG}"\r\n',  # the long field first
    f'1,"{BIG}""quoted"" and, a comma",""\r\n',
    f'1,"{BIG}\r\nsecond line\nthird, line\r\n",after\r\n',  # newlines inside quotes
    f'1,"{BIG}"tail after the quote,x\r\n',
    f'1,{BIG}"a quote inside an unquoted field,x\r\n',
    f'1,"{BIG}""\r\n""",x\r\n',  # an escaped quote right before a line end
    f'1,,"{BIG}",,\r\n',  # empty fields
    f'1,"{BIG}",3\r',  # CR line ends
    f'1,"{BIG}",3',  # no line end at the end of the input
    f'1,"{BIG}",',
    f'1,"{BIG} a quote never closed\r\nmore\r\n',  # the csv module ends an open field at the end
]


@pytest.mark.parametrize("record", TRICKY, ids=range(len(TRICKY)))
def test_a_long_record_is_split_as_the_csv_module_splits_it(record):
    after = "9,8,7\r\n\r\nlast,row\r\n" if record.endswith(("\n", "\r")) else ""
    text = f"a,b,c\r\n{record}{after}"
    assert records(text) == reference(text)


def test_the_records_around_a_long_one_keep_their_line_numbers():
    text = f'h\r\n1\r\n"{BIG}\r\n\r\n"\r\n2\r\n"multi\r\nline"\r\n3\r\n'
    got = records(text)
    assert got == reference(text)
    assert [line for line, _ in got] == [1, 2, 5, 6, 8, 9]


def test_a_short_file_is_read_by_the_csv_module_alone():
    text = 'a,b\r\n1,"x""y"\r\n\r\n2,3\r\n'
    assert records(text) == reference(text) == [(1, ["a", "b"]), (2, ["1", 'x"y']), (3, []), (4, ["2", "3"])]


def test_a_quote_never_closed_stops_at_the_bound():
    """A damaged file: its rest is one field; reading stops once the record passes ``longest``
    rather than holding the whole file."""
    text = 'a,b\r\n1,"never closed\r\n' + "more of the file\r\n" * 200_000
    with pytest.raises(csv.Error, match="a record over 1 MiB"):
        records(text, longest=2**20)
    assert len(records(text)[1][1][1]) > 3_000_000  # under the default bound the field ends at the end


def test_other_complaints_of_the_csv_module_stand():
    lines = ["a,b\r\n", "1,x\ry\r\n"]  # lines split without newline="": a CR inside one
    with pytest.raises(csv.Error, match="new-line character seen in unquoted field"):
        list(csv_records(lines))


def test_the_limit_is_left_alone():
    before = csv.field_size_limit()
    records(f'1,"{BIG}"\r\n')
    assert csv.field_size_limit() == before
