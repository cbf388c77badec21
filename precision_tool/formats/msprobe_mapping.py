"""The tensor mapping file of ``msprobe compare -dm``: which bench tensor each NPU tensor is
compared with, one ``NPU_NAME: BENCH_NAME`` line per tensor.

msprobe reads it with a YAML loader into a flat dict of full tensor names
(``Functional.linear.0.forward.input.0: Functional.linear.1.forward.input.0``). ``vc`` writes the
pairing it used in this form (each name double-quoted, so any name is safe), for the user to
edit and hand back with ``vc --mapping FILE``; msprobe takes the same file with ``-dm``.

The reader takes the flat mappings such files hold and nothing more: plain, single- or double-
quoted scalars, ``#`` comments, blank lines, a leading ``---``. Anything else (nesting, lists,
anchors, flow style) is one error naming the line: a mapping file is data, never a program.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import PrecisionToolError
from .files import read_text

MAX_MAPPING_BYTES = 64 << 20  # a name pair per tensor: tens of megabytes for the largest runs
HEADER = (
    "# NPU tensor: bench tensor, as vc paired them (msprobe compare -dm reads this file,\n"
    "# and so does vc --mapping). Edit a bench name to pair differently; delete a line\n"
    "# to pair that tensor by vc's own rules.\n"
)
_PLAIN = re.compile(r"^[^\s#'\"{}\[\],&*!|>%@`-][^#]*?$|^-[^\s-][^#]*?$")
_SINGLE = re.compile(r"^'((?:[^']|'')*)'")
_DOUBLE = re.compile(r'^"((?:[^"\\]|\\.)*)"')


def _scalar(text: str, line_no: int, path: Path | None) -> tuple[str, str]:
    """The scalar at the start of ``text`` and what follows it."""
    if text.startswith('"'):
        match = _DOUBLE.match(text)
        if match is None:
            raise PrecisionToolError(f"line {line_no}: unterminated double-quoted name", path)
        return json.loads(match.group(0)), text[match.end() :]
    if text.startswith("'"):
        match = _SINGLE.match(text)
        if match is None:
            raise PrecisionToolError(f"line {line_no}: unterminated single-quoted name", path)
        return match.group(1).replace("''", "'"), text[match.end() :]
    return text, ""


def _split_plain_key(text: str, line_no: int, path: Path | None) -> tuple[str, str]:
    """``KEY: VALUE`` with a plain key: the key ends at the first ``": "`` (names hold dots,
    never a colon followed by a space)."""
    key, sep, rest = text.partition(": ")
    if not sep:
        if text.endswith(":"):
            key, rest = text[:-1], ""
        else:
            raise PrecisionToolError(f"line {line_no}: not a 'NPU_NAME: BENCH_NAME' line", path)
    return key.strip(), rest


def _value(text: str, line_no: int, path: Path | None) -> str:
    text = text.strip()
    if not text or text.startswith("#"):
        raise PrecisionToolError(
            f"line {line_no}: no bench name after the colon (a nested mapping is not a tensor mapping)", path
        )
    if text[0] in "'\"":
        value, rest = _scalar(text, line_no, path)
    else:
        value, _, rest = text.partition(" #")
        value, rest = value.strip(), ""
        if not _PLAIN.match(value) or ": " in value or value.endswith(":"):
            raise PrecisionToolError(f"line {line_no}: {value[:40]!r} is not a plain name (quote it)", path)
    if rest.strip() and not rest.strip().startswith("#"):
        raise PrecisionToolError(f"line {line_no}: text after the bench name", path)
    return value


def _pair(line: str, line_no: int, path: Path | None) -> tuple[str, str]:
    if line[:1].isspace():
        raise PrecisionToolError(f"line {line_no}: indented: a tensor mapping is flat", path)
    if line[0] in "'\"":
        key, rest = _scalar(line, line_no, path)
        rest = rest.lstrip()
        if not rest.startswith(":"):
            raise PrecisionToolError(f"line {line_no}: no ':' after the NPU name", path)
        rest = rest[1:]
    else:
        if not _PLAIN.match(line.split(": ", 1)[0].rstrip(":")):
            raise PrecisionToolError(f"line {line_no}: not a 'NPU_NAME: BENCH_NAME' line", path)
        key, rest = _split_plain_key(line, line_no, path)
    return key, _value(rest, line_no, path)


def parse_mapping(text: str, path: str | os.PathLike | None = None) -> dict[str, str]:
    """The NPU name -> bench name pairs of a mapping file's text, in file order.

    A name given twice keeps its last bench name, as a YAML loader does. Raises
    PrecisionToolError naming the line for anything but a flat mapping of names.
    """
    where = Path(path) if path is not None else None
    pairs: dict[str, str] = {}
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#") or (line_no == 1 and line == "---"):
            continue
        key, value = _pair(line, line_no, where)
        pairs[key] = value
    return pairs


def read_mapping_file(path: str | os.PathLike) -> dict[str, str]:
    """Read a ``-dm`` / ``--mapping`` file (see :func:`parse_mapping`); never writes it."""
    path = Path(path)
    return parse_mapping(read_text(path, "mapping file", MAX_MAPPING_BYTES), path)


def mapping_text(pairs: Iterable[tuple[str, str]]) -> str:
    """The file :func:`parse_mapping` and msprobe's YAML loader read back as ``pairs``."""
    lines = [
        f"{json.dumps(npu, ensure_ascii=False)}: {json.dumps(bench, ensure_ascii=False)}\n" for npu, bench in pairs
    ]
    return HEADER + "".join(lines)
