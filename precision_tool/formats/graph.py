"""GE graph dumps (``ge_proto_*_Build.txt``, atc's ``.txt.json``, ``ge_onnx_*_Build.pbtxt``) as
plain Python objects.

Every form is parsed into one ``ge.proto.ModelDef`` message -- TextFormat by protobuf's own
parser (:mod:`.proto.ge_ir`), JSON by walking the schema (:mod:`.proto.atc_json`), GE's ONNX
text by protobuf's parser over an ONNX schema and then unflattened (:mod:`.onnx_graph`) -- and
then converted once, by :func:`model_from_proto`, into the dataclasses of :mod:`.graph_model`.
Ops keep the file's order, which is GE's execution order. File names: :mod:`.graph_names`.

Attribute values become Python values:

=====================  ===========================================================
AttrDef member         Python value
=====================  ===========================================================
``s``                  ``str`` (UTF-8, undecodable bytes replaced)
``bt``                 ``bytes``
``i`` / ``dt``         ``int`` (``dt`` uses GE's internal dtype numbering, FORMATS.md s.9)
``f``                  ``float``: the shortest decimal of the stored float32 (0.001, not
                       0.0010000000474974513)
``b``                  ``bool``
``list``               ``list`` of the member named by ``val_type`` (else the populated one),
                       items converted as above; an empty list is ``[]``
``td``                 :class:`TensorDesc`
``t``                  ``{"desc": TensorDesc, "data": bytes}``
``g``                  the sub-graph's name (``str``)
``func`` / list ``na`` ``{"name": str, "attrs": dict}``
``list_list_int``      ``list[list[int]]``; ``list_list_float`` likewise with floats
nothing set            the attribute is left out (atc writes these as ``"value": null``)
=====================  ===========================================================
"""

from __future__ import annotations

import gc
import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf import text_format

from ..errors import PrecisionToolError
from .files import read_user_bytes
from .graph_memory import names_the_file_when_out_of_memory
from .graph_model import GraphDesc, InputRef, Model, Op, TensorDesc
from .graph_names import GRAPH_FILE_RE, find_graph_files, parse_graph_file_name
from .onnx_graph import OnnxGraphError, looks_like_onnx, model_def_from_onnx
from .proto import atc_json, ge_ir, onnx_ir
from .proto.ge_ir import shortest_float32

__all__ = ["GRAPH_FILE_RE", "find_graph_files", "model_from_proto", "parse_input", "read_graph",
           "read_graph_proto", "tensor_desc_from_proto"]


# --- proto -> model --------------------------------------------------------------------------

_DTYPE_NAMES = {v.number: v.name for v in ge_ir.DATA_TYPE.values}
_LIST_MEMBERS = ("s", "i", "f", "b", "bt", "td", "t", "g", "na", "dt")
_LIST_MEMBER_BY_TYPE = dict(enumerate(("",) + _LIST_MEMBERS))  # VT_LIST_STRING = 1 -> "s", ...


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _tensor(t) -> dict[str, Any]:
    return {"desc": tensor_desc_from_proto(t.desc), "data": bytes(t.data)}


def _named(na) -> dict[str, Any]:
    return {"name": na.name, "attrs": attrs_from_proto(na.attr)}


_ITEM = {
    "s": _text, "i": int, "f": shortest_float32, "b": bool, "bt": bytes, "dt": int,
    "td": lambda td: tensor_desc_from_proto(td), "t": _tensor, "g": lambda g: g.name,
    "na": _named,
}


def _list_value(lv) -> list[Any]:
    member = _LIST_MEMBER_BY_TYPE.get(lv.val_type, "")
    if not member or not len(getattr(lv, member)):
        # val_type absent (older GE) or contradicted by the data: take what is populated.
        member = next((m for m in _LIST_MEMBERS if len(getattr(lv, m))), "")
    if not member:
        return []
    items = getattr(lv, member)
    return list(items) if member in ("i", "b", "dt") else [_ITEM[member](x) for x in items]


_VALUE = {
    "s": lambda a: _text(a.s),
    "i": lambda a: a.i,
    "f": lambda a: shortest_float32(a.f),
    "b": lambda a: a.b,
    "bt": lambda a: bytes(a.bt),
    "dt": lambda a: a.dt,
    "list": lambda a: _list_value(a.list),
    "td": lambda a: tensor_desc_from_proto(a.td),
    "t": lambda a: _tensor(a.t),
    "g": lambda a: a.g.name,
    "func": lambda a: _named(a.func),
    "list_list_int": lambda a: [list(x.list_i) for x in a.list_list_int.list_list_i],
    "list_list_float": lambda a: [[shortest_float32(v) for v in x.list_f]
                                  for x in a.list_list_float.list_list_f],
}


def attrs_from_proto(attr_map) -> dict[str, Any]:
    """A ``map<string, AttrDef>`` as ``{name: Python value}``, sorted by name (see module doc)."""
    if not attr_map:
        return {}
    out = {}
    for key, value in sorted(attr_map.items()):
        member = value.WhichOneof("value")
        if member is not None:
            out[key] = _VALUE[member](value)
    return out


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str_list(value: Any) -> list[str]:
    """An attribute that GE writes either as ``s`` or as ``list.s``, as a list of names."""
    if isinstance(value, str):
        return [value] if value else []
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def tensor_desc_from_proto(desc) -> TensorDesc:
    """A ``TensorDescriptor`` message as a :class:`TensorDesc`."""
    attrs = attrs_from_proto(desc.attr)
    origin_shape = attrs.get("origin_shape")
    return TensorDesc(
        dtype=_DTYPE_NAMES.get(desc.dtype, f"DT_UNKNOWN_{desc.dtype}"),
        layout=desc.layout,
        shape=tuple(desc.shape.dim),
        origin_format=(_str_or_none(attrs.get("_datadump_origin_format"))
                       or _str_or_none(attrs.get("origin_format"))),
        # list items share one kind, so the first tells whether these are dims
        origin_shape=(tuple(origin_shape) if isinstance(origin_shape, list)
                      and _int_or_none((origin_shape or [0])[0]) is not None else None),
        origin_name=_str_or_none(attrs.get("_datadump_origin_name")),
        origin_output_index=_int_or_none(attrs.get("_datadump_origin_output_index")),
        origin_data_type=(_str_or_none(attrs.get("_datadump_origin_data_type"))
                          or _str_or_none(attrs.get("origin_data_type"))),
        attrs=attrs,
        name=desc.name,
    )


def parse_input(entry: str, slot: int | None = None) -> InputRef:
    """``"src:idx"`` as an :class:`InputRef`; a negative index (``"src:-1"``) is a control edge.

    Op names may hold ``:`` themselves (``onnx::Gather_1764_0:0``), so the index is what follows
    the last one; an entry without a numeric index is taken as output 0 of the whole name.
    """
    src, sep, index = entry.rpartition(":")
    try:
        number = int(index) if sep else 0
    except ValueError:
        src, number = entry, 0
    if not sep:
        src = entry
    return InputRef(src, max(number, -1), number < 0, slot)


def _op_from_proto(opdef, name: str, refs: list[InputRef], consumers: dict[int, list]) -> Op:
    attrs = attrs_from_proto(opdef.attr)
    get = attrs.get
    outputs = [tensor_desc_from_proto(d) for d in opdef.output_desc]
    width = max(len(outputs), max(consumers, default=-1) + 1)
    names = get("_datadump_original_op_names")
    return Op(  # positional: this runs once per op of graphs with 100k ops
        name, opdef.type, opdef.id, refs,
        [tensor_desc_from_proto(d) for d in opdef.input_desc],
        outputs,
        [consumers.get(i, []) for i in range(width)],
        attrs,
        None if names is None else _str_list(names),
        _str_list(get("pass_name")),
        _str_list(get("_datadump_original_op_types")),
        get("_datadump_is_multiop") is True,
        _str_or_none(get(f"{name}_kernelname")) or _str_or_none(get("_kernelname")),
        _str_or_none(get("_ge_attr_op_kernel_lib_name")),
        _str_or_none(get("_session_graph_id")),
        opdef.stream_id,
        list(opdef.subgraph_name),
    )


def _graph_from_proto(graph, source: Path | None) -> GraphDesc:
    parsed = []
    # consumers[src][output index] -> [(consumer, slot)], filled in one pass over all inputs
    consumers: dict[str, dict[int, list[tuple[str, int]]]] = {}
    for position, opdef in enumerate(graph.op):
        name = opdef.name
        if not name:
            raise PrecisionToolError(f"op #{position} of graph {graph.name!r} has no name", source)
        refs = [parse_input(entry, slot) for slot, entry in enumerate(opdef.input) if entry]
        for ref in refs:
            if not ref.is_control:
                consumers.setdefault(ref.src, {}).setdefault(ref.index, []).append((name, ref.slot))
        parsed.append((opdef, name, refs))
    if len({name for _, name, _ in parsed}) != len(parsed):
        names = [name for _, name, _ in parsed]
        twice = next(name for name in names if names.count(name) > 1)  # only on this error path
        raise PrecisionToolError(f"graph {graph.name!r} has two ops named {twice!r}", source)
    empty: dict[int, list] = {}
    ops = [_op_from_proto(opdef, name, refs, consumers.get(name, empty))
           for opdef, name, refs in parsed]
    return GraphDesc(graph.name, ops, attrs_from_proto(graph.attr), list(graph.input),
                     list(graph.output))


@contextmanager
def _gc_paused():
    # A graph is millions of small objects; the collector's repeated full passes over them,
    # which can free nothing, would otherwise double the load time.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def model_from_proto(proto, source_path: str | os.PathLike | None = None) -> Model:
    """A ``ge.proto.ModelDef`` message as a :class:`Model`.

    Raises :class:`PrecisionToolError` (naming ``source_path``) for an op without a name or two
    ops of one graph with the same name.
    """
    source = None if source_path is None else Path(source_path)
    with _gc_paused():
        graphs = [_graph_from_proto(g, source) for g in proto.graph]
    return Model(proto.name, graphs, attrs_from_proto(proto.attr), source, proto.version,
                 proto.custom_version)


# --- files -----------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    raw = read_user_bytes(path, "graph file")
    try:
        return raw.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as err:
        raise PrecisionToolError(f"not a text graph dump: byte {err.start} is not UTF-8 "
                                 "(binary .pb/.om graphs are not supported)", path) from None


def _parse_text(text: str, path: Path, parse, kind: str = "TextFormat"):
    """``parse(text)``, its errors as one PrecisionToolError naming ``path`` (and the line)."""
    try:
        return parse(text)
    except text_format.ParseError as err:
        line, column = err.GetLine(), err.GetColumn()
        problem = str(err)
        prefix = f"{line}:{column} : "
        problem = problem[len(prefix):] if problem.startswith(prefix) else problem
        where = f" at line {line}, column {column}" if line is not None else ""
        raise PrecisionToolError(f"{kind} syntax error{where}: {problem}", path) from None
    except (ValueError, RecursionError) as err:
        raise PrecisionToolError(f"cannot parse {kind} graph: {err}", path) from None


def _parse_onnx(text: str, path: Path):
    model = _parse_text(text, path, onnx_ir.parse_text, "ONNX TextFormat")
    try:
        return model_def_from_onnx(model)
    except OnnxGraphError as err:
        raise PrecisionToolError(f"not a GE ONNX graph dump: {err}", path) from None


def _parse_json(text: str, path: Path):
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise PrecisionToolError(f"not valid JSON: {err.msg} at line {err.lineno}, "
                                 f"column {err.colno}", path) from None
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


def read_graph_proto(path: str | os.PathLike, *, workers: int | None = None):
    """A GE graph dump as a ``ge.proto.ModelDef`` message (see :func:`read_graph`)."""
    path = Path(path)
    text = _read_text(path)
    head = text.lstrip()
    if not head:
        raise PrecisionToolError("graph file is empty", path)
    with _gc_paused():
        if head[0] in "{[":  # TextFormat starts with a field name or a comment
            return _parse_json(text, path)
        if _is_onnx(text, path):
            return _parse_onnx(text, path)
        count = workers or os.cpu_count() or 1
        return _parse_text(text, path, lambda t: ge_ir.parse_text(t, count))


def _is_onnx(text: str, path: Path) -> bool:
    """ONNX by the fields the text holds; by the file name when they do not tell."""
    by_content = looks_like_onnx(text)
    if by_content is not None:
        return by_content
    parsed = parse_graph_file_name(path.name)
    return parsed.is_onnx if parsed is not None else path.suffix == ".pbtxt"


@names_the_file_when_out_of_memory
def read_graph(path: str | os.PathLike, *, workers: int | None = None) -> Model:
    """Read a GE graph dump: ge_proto TextFormat, atc JSON or GE's ONNX TextFormat (decided by
    content; by the file name only when the content does not tell).

    ``workers``: processes for parsing a large ge_proto TextFormat file. Defaults to all cores.
    Raises :class:`PrecisionToolError` naming the file and the problem for a missing or
    unreadable file, a TextFormat syntax error (with its line), invalid JSON, or JSON that does
    not fit the schema, ONNX text that holds no graph, or a graph with an unnamed op or two ops
    of one name. Unknown fields are skipped in every form, so newer GE versions load.
    """
    return model_from_proto(read_graph_proto(path, workers=workers), path)
