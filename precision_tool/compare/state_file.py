"""The small JSON files ``vc`` writes beside its results (``run.json``, ``comparisons.json``),
read back as untrusted input.

Anything may sit under those names: a FIFO (a plain open would wait for a writer for ever),
``/dev/zero`` behind a link, a file of gigabytes, bytes that are not UTF-8, brackets nested
deeper than the parser's recursion allows, a list where an object belongs, a number where a
name belongs. Each is one :class:`~precision_tool.errors.PrecisionToolError` naming the file,
never an internal error or a hang.

The bytes are read by :func:`~precision_tool.formats.files.read_regular`, the one bounded
reader of regular files every side file goes through.
"""

from __future__ import annotations

import json
import os
import types
import typing
from functools import cache
from pathlib import Path

from ..errors import PrecisionToolError
from ..formats.files import read_regular

MAX_STATE_BYTES = 64 << 20  # far above any run.json or comparisons.json vc writes (100k CSVs: ~30 MB)
_SHOWN_CHARS = 40


def read_json_file(path: str | os.PathLike, limit: int = MAX_STATE_BYTES) -> object:
    """The JSON document in the file at ``path`` (links followed, as for any input).

    Raises:
        FileNotFoundError: there is no such file.
        PrecisionToolError: it is not a regular file, is larger than ``limit`` bytes, cannot be
            read, is not UTF-8 or not JSON, or is nested too deeply to parse.
    """
    path = Path(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(path)
    data = read_regular(path, path.name, limit)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise PrecisionToolError("not UTF-8 text", path) from None
    except RecursionError:  # json gives up on deep nesting this way, not with a ValueError
        raise PrecisionToolError("nested too deeply to be a file vc wrote", path) from None
    except ValueError as exc:
        raise PrecisionToolError(f"not JSON ({exc})", path) from None


def shown(value: object) -> str:
    """``value`` as a message shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."


@cache
def _field_types(cls: type) -> tuple[tuple[str, tuple[type, ...]], ...]:
    """Each field of ``cls`` with the types its annotation allows (found once: a manifest may
    have thousands of entries)."""
    found = []
    for name, annotation in typing.get_type_hints(cls).items():
        if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
            found.append((name, typing.get_args(annotation)))
        else:
            found.append((name, (annotation,)))
    return tuple(found)


def _fits(value: object, allowed: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # JSON true is no number, and 1 is no truth value
        return bool in allowed
    return isinstance(value, allowed)


_TYPE_NAMES = {
    str: "text",
    int: "a whole number",
    bool: "true or false",
    dict: "an object",
    list: "a list",
    type(None): "null",
}


def typed_fields(cls: type, document: object, path: Path, where: str = "") -> dict:
    """The fields of the dataclass ``cls`` found in the JSON object ``document``, each checked
    against the field's annotated type (``str | None``, ``int``, ``dict``...); other keys are
    left out (a newer vc may add some). ``where`` is the object's place in the file, shown
    before the field names (``"options."``).

    Raises:
        PrecisionToolError: ``document`` is not an object, or a field holds another type.
    """
    if not isinstance(document, dict):
        what = where.rstrip(".") or "the file"
        raise PrecisionToolError(f"{what} is {shown(document)}, not an object", path)
    found = {}
    for name, allowed in _field_types(cls):
        if name in document:
            value = document[name]
            if not _fits(value, allowed):
                expected = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in allowed)
                raise PrecisionToolError(f"{where}{name} is {shown(value)}, not {expected}", path)
            found[name] = value
    return found
