"""GE graph dumps (``ge_proto_*_Build.txt``, atc's ``.txt.json``, ``ge_onnx_*_Build.pbtxt``) and
offline models (``.om``) as plain Python objects.

Every form is parsed into one ``ge.proto.ModelDef`` message -- TextFormat by protobuf's own
parser (:mod:`.proto.ge_ir`), JSON by walking the schema (:mod:`.proto.atc_json`), GE's ONNX
text by protobuf's parser over an ONNX schema and then unflattened (:mod:`.onnx_graph`), an OM's
binary model definition by protobuf out of its container (:mod:`.om_model`) -- and then
converted once, by :func:`model_from_proto`, into the dataclasses of :mod:`.graph_model`.
Ops keep the file's order, which is GE's execution order. ge_proto TextFormat is first given to
:mod:`.graph_text_fast`, which reads it straight into the same dataclasses with the same rules
(``*_from_fields`` below), many times faster, and leaves to protobuf what it does not take.
File names: :mod:`.graph_names`.

How each attribute becomes a Python value: :mod:`.graph_convert`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from ..collector import gc_paused
from ..errors import PrecisionToolError
from .files import open_regular, read_regular
from .graph_convert import model_from_proto, parse_input, tensor_desc_from_proto
from .graph_memory import names_the_file_when_out_of_memory
from .graph_model import Model
from .graph_names import GRAPH_FILE_RE, find_graph_files, looks_like_om, looks_like_onnx, parse_graph_file_name
from .graph_text_fast import model_from_text
from .proto import ge_ir

# The other forms' readers (an OM's container, ONNX's schema, atc's JSON) are imported when a
# graph of their form is read: a run on GE's own text loads none of them.

MAX_GRAPH_BYTES = 8 << 30  # a graph is read whole, and needs several times its size in memory

__all__ = [
    "GRAPH_FILE_RE",
    "find_graph_files",
    "model_from_proto",
    "parse_input",
    "read_graph",
    "read_graph_proto",
    "tensor_desc_from_proto",
]


# --- files -----------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    raw = read_regular(path, "graph file", MAX_GRAPH_BYTES)
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as err:
        raise PrecisionToolError(
            f"not a text graph dump: byte {err.start} is not UTF-8 (of binary graphs only .om models are read)", path
        ) from None


def _is_om(path: Path) -> bool:
    """An OM by its magic; a ``.om`` file whatever it holds (the OM reader says what is wrong)."""
    if path.suffix.lower() == ".om":
        return True
    with open_regular(path, "graph file") as handle:
        try:
            return looks_like_om(handle.read(4))
        except OSError as exc:
            raise PrecisionToolError(f"cannot read graph file: {exc.strerror or exc}", path) from None


def _parse_text(text: str, path: Path, parse, kind: str = "TextFormat"):
    """``parse(text)``, its errors as one PrecisionToolError naming ``path`` (and the line)."""
    try:
        return parse(text)
    except text_format.ParseError as err:
        line, column = err.GetLine(), err.GetColumn()
        problem = str(err)
        prefix = f"{line}:{column} : "
        problem = problem[len(prefix) :] if problem.startswith(prefix) else problem
        where = f" at line {line}, column {column}" if line is not None else ""
        raise PrecisionToolError(f"{kind} syntax error{where}: {problem}", path) from None
    except (ValueError, RecursionError) as err:
        raise PrecisionToolError(f"cannot parse {kind} graph: {err}", path) from None


def _parse_onnx(text: str, path: Path):
    from .onnx_graph import OnnxGraphError, model_def_from_onnx
    from .proto import onnx_ir

    model = _parse_text(text, path, onnx_ir.parse_text, "ONNX TextFormat")
    try:
        return model_def_from_onnx(model)
    except OnnxGraphError as err:
        raise PrecisionToolError(f"not a GE ONNX graph dump: {err}", path) from None


def _parse_json(text: str, path: Path):
    from .proto import atc_json

    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise PrecisionToolError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}", path) from None
    except RecursionError:
        raise PrecisionToolError("not valid JSON: nested too deeply", path) from None
    if not isinstance(obj, dict) or "graph" not in obj:
        raise PrecisionToolError('JSON has no "graph" list: not a graph from atc --mode=5', path)
    try:
        return atc_json.message_from_atc_json(obj)
    except atc_json.AtcJsonError as err:
        raise PrecisionToolError(f"JSON {err.where}: {err.problem}", path) from None
    except RecursionError:
        raise PrecisionToolError("JSON graph nested too deeply", path) from None


def _graph_text(path: Path) -> str:
    text = _read_text(path)
    if not text.strip():
        raise PrecisionToolError("graph file is empty", path)
    return text


def _is_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")  # TextFormat starts with a field name or a comment


def _is_onnx(text: str, path: Path) -> bool:
    """ONNX by the fields the text holds; by the file name when they do not tell."""
    by_content = looks_like_onnx(text)
    if by_content is not None:
        return by_content
    parsed = parse_graph_file_name(path.name)
    return parsed.is_onnx if parsed is not None else path.suffix == ".pbtxt"


def _proto_from_text(text: str, path: Path):
    with gc_paused():
        if _is_json(text):
            return _parse_json(text, path)
        if _is_onnx(text, path):
            return _parse_onnx(text, path)
        return _parse_text(text, path, ge_ir.parse_text)


def _read_om(path: Path):
    from .om_model import read_om_model_def

    return read_om_model_def(path)


def read_graph_proto(path: str | os.PathLike):
    """A GE graph dump as a ``ge.proto.ModelDef`` message, by protobuf's parsers alone (see
    :func:`read_graph`)."""
    path = Path(path)
    if _is_om(path):
        return _read_om(path)
    return _proto_from_text(_graph_text(path), path)


def load_graph(path: str | os.PathLike) -> tuple[Model, Any]:
    """:func:`read_graph`, and the ``ModelDef`` message it went through: None when the
    ge_proto TextFormat was read straight into the model (:mod:`.graph_text_fast`)."""
    path = Path(path)
    if _is_om(path):
        proto = _read_om(path)
        return model_from_proto(proto, path), proto
    text = _graph_text(path)
    if not _is_json(text) and not _is_onnx(text, path):
        with gc_paused():
            model = model_from_text(text, path)
        if model is not None:
            return model, None
    proto = _proto_from_text(text, path)
    return model_from_proto(proto, path), proto


@names_the_file_when_out_of_memory
def read_graph(path: str | os.PathLike) -> Model:
    """Read a GE graph dump: ge_proto TextFormat, atc JSON, GE's ONNX TextFormat or an offline
    model (decided by content: an OM by its magic; by the file name only when the content does
    not tell).

    ge_proto TextFormat is read by :mod:`.graph_text_fast`, and by protobuf's parser when that
    does not take it.
    Raises :class:`PrecisionToolError` naming the file and the problem for a missing or
    unreadable file, a TextFormat syntax error (with its line), invalid JSON, or JSON that does
    not fit the schema, ONNX text that holds no graph, an OM whose model definition cannot be
    read (:func:`.om_model.read_om_model_def`), or a graph with an unnamed op or two ops of one
    name. Unknown fields are skipped in every form, so newer GE versions load.
    """
    return load_graph(path)[0]
