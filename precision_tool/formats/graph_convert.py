"""A ``ge.proto.ModelDef`` message, or the plain field values the fast TextFormat reader gives,
as the dataclasses of :mod:`.graph_model`: the one set of rules for both.

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

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..collector import gc_paused
from ..errors import PrecisionToolError
from .graph_model import GraphDesc, InputRef, Model, Op, TensorDesc
from .proto import ge_ir
from .proto.ge_ir import shortest_float32

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
    "s": _text,
    "i": int,
    "f": shortest_float32,
    "b": bool,
    "bt": bytes,
    "dt": int,
    "td": lambda td: tensor_desc_from_proto(td),
    "t": _tensor,
    "g": lambda g: g.name,
    "na": _named,
}


def list_member(val_type: int, populated) -> str:
    """The ``ListValue`` member that holds a list's items ("" for an empty list): the one
    ``val_type`` names, else (``val_type`` absent, as in older GE, or contradicted by the data)
    the first for which ``populated(member)`` is true."""
    member = _LIST_MEMBER_BY_TYPE.get(val_type, "")
    if not member or not populated(member):
        member = next((m for m in _LIST_MEMBERS if populated(m)), "")
    return member


def _list_value(lv) -> list[Any]:
    member = list_member(lv.val_type, lambda m: len(getattr(lv, m)))
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
    "list_list_float": lambda a: [[shortest_float32(v) for v in x.list_f] for x in a.list_list_float.list_list_f],
}


def attrs_from_proto(attr_map) -> dict[str, Any]:
    """A ``map<string, AttrDef>`` as ``{name: Python value}``, sorted by name (see module doc)."""
    if not attr_map:
        return {}
    out = {}
    for key in sorted(attr_map):  # keys, then lookups: a protobuf map's items() is a Python generator
        value = attr_map[key]
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
    return tensor_desc_from_fields(
        desc.dtype, desc.layout, tuple(desc.shape.dim), attrs_from_proto(desc.attr), desc.name
    )


def tensor_desc_from_fields(
    dtype: int, layout: str, shape: tuple[int, ...], attrs: dict[str, Any], name: str
) -> TensorDesc:
    """A :class:`TensorDesc` from a ``TensorDescriptor``'s field values: ``dtype`` is GE's
    number, ``attrs`` are already Python values (see the module doc)."""
    return named_tensor_desc(_DTYPE_NAMES.get(dtype) or f"DT_UNKNOWN_{dtype}", layout, shape, attrs, name)


def named_tensor_desc(
    dtype_name: str, layout: str, shape: tuple[int, ...], attrs: dict[str, Any], name: str
) -> TensorDesc:
    """A :class:`TensorDesc` from its dtype's name and the other field values; the fields that
    come from ``attrs`` (the origin's format, shape, name, output index and data type) are
    found here, the one rule for every reader and for the graph cache (:mod:`.graph_json`)."""
    return TensorDesc(*_tensor_desc_values(dtype_name, layout, shape, attrs, name))


def _tensor_desc_values(
    dtype_name: str, layout: str, shape: tuple[int, ...], attrs: dict[str, Any], name: str
) -> tuple:
    """The field values, in order, of :func:`named_tensor_desc`'s :class:`TensorDesc`."""
    if not attrs:  # no lookups: this runs for every tensor of big graphs
        return dtype_name, layout, shape, None, None, None, None, None, attrs, name
    get = attrs.get
    origin_shape = get("origin_shape")
    return (
        dtype_name,
        layout,
        shape,
        _str_or_none(get("_datadump_origin_format")) or _str_or_none(get("origin_format")),
        # list items share one kind, so the first tells whether these are dims
        (
            tuple(origin_shape)
            if isinstance(origin_shape, list) and _int_or_none((origin_shape or [0])[0]) is not None
            else None
        ),
        _str_or_none(get("_datadump_origin_name")),
        _int_or_none(get("_datadump_origin_output_index")),
        _str_or_none(get("_datadump_origin_data_type")) or _str_or_none(get("origin_data_type")),
        attrs,
        name,
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
    return InputRef(src, number if number >= -1 else -1, number < 0, slot)


OpFields = tuple[str, str, int, Sequence[str], list[TensorDesc], list[TensorDesc], dict[str, Any], int, list[str]]
"""One op's field values: name, type, id, input entries (``"src:idx"``), input descs, output
descs, attrs (Python values), stream id, sub-graph names."""


def _op_from_fields(fields: OpFields, refs: list[InputRef], by_output: list[list]) -> Op:
    name, op_type, op_id, _, input_descs, outputs, attrs, stream_id, subgraph_names = fields
    if not attrs:  # positional, and no lookups: this runs once per op of graphs with 100k ops
        return Op(
            name,
            op_type,
            op_id,
            refs,
            input_descs,
            outputs,
            by_output,
            attrs,
            None,
            [],
            [],
            False,
            None,
            None,
            None,
            stream_id,
            subgraph_names,
        )
    get = attrs.get
    names = get("_datadump_original_op_names")
    return Op(
        name,
        op_type,
        op_id,
        refs,
        input_descs,
        outputs,
        by_output,
        attrs,
        None if names is None else _str_list(names),
        _str_list(get("pass_name")),
        _str_list(get("_datadump_original_op_types")),
        get("_datadump_is_multiop") is True,
        _str_or_none(get(f"{name}_kernelname")) or _str_or_none(get("_kernelname")),
        _str_or_none(get("_ge_attr_op_kernel_lib_name")),
        _str_or_none(get("_session_graph_id")),
        stream_id,
        subgraph_names,
    )


def _consumed(by_output: list[list], index: int, consumer: tuple[str, int]) -> None:
    while len(by_output) <= index:  # consumed beyond its described outputs
        by_output.append([])
    by_output[index].append(consumer)


class GraphBuilder:
    """A :class:`GraphDesc` built from its ops' field values as they come, in file order, each
    op's consumers filled in as the ops reading it arrive (before or after it), so that the
    graph is ready once the last op is in. An error (an op without a name, two ops of one
    name) is raised only by :meth:`finish`, once the caller knows the whole text parsed.
    """

    def __init__(self, source: Path | None) -> None:
        self.source = source
        self.ops: list[Op] = []
        self._nameless: int | None = None  # position of the first op without a name
        self._by_output: dict[str, list[list]] = {}  # op name -> consumers by output index
        self._waiting: dict[str, list[tuple[int, tuple[str, int]]]] = {}  # read before it came
        self._twice = False

    def add(self, ops: list[OpFields]) -> None:
        """Add ``ops``, which follow those added before."""
        by_output_of, waiting, built = self._by_output, self._waiting, self.ops
        for fields in ops:
            name = fields[0]
            if not name and self._nameless is None:
                self._nameless = len(built)
            refs = [parse_input(entry, slot) for slot, entry in enumerate(fields[3]) if entry]
            for ref in refs:
                if not ref.is_control:
                    found = by_output_of.get(ref.src)
                    if found is None:
                        waiting.setdefault(ref.src, []).append((ref.index, (name, ref.slot)))
                    else:
                        _consumed(found, ref.index, (name, ref.slot))
            by_output: list[list] = [[] for _ in fields[5]]
            early = waiting.pop(name, None)
            for index, consumer in early or ():
                _consumed(by_output, index, consumer)
            if by_output_of.setdefault(name, by_output) is not by_output:
                self._twice = True  # the first keeps its consumers; an error in any case
            built.append(_op_from_fields(fields, refs, by_output))

    def finish(self, name: str, attrs: dict[str, Any], inputs: list[str], outputs: list[str]) -> GraphDesc:
        """The graph, called ``name``. Raises :class:`PrecisionToolError` (naming the source)
        for an op without a name, else for two ops of the graph with the same name."""
        if self._nameless is not None:
            raise PrecisionToolError(f"op #{self._nameless} of graph {name!r} has no name", self.source)
        if self._twice:
            names = [op.name for op in self.ops]
            twice = next(n for n in names if names.count(n) > 1)  # only on this error path
            raise PrecisionToolError(f"graph {name!r} has two ops named {twice!r}", self.source)
        return GraphDesc(name, self.ops, attrs, inputs, outputs)


def graph_from_fields(
    name: str, ops: list[OpFields], attrs: dict[str, Any], inputs: list[str], outputs: list[str], source: Path | None
) -> GraphDesc:
    """A :class:`GraphDesc` from a ``GraphDef``'s field values, each op's consumers found
    (:class:`GraphBuilder`).

    Raises :class:`PrecisionToolError` (naming ``source``) for an op without a name or two ops
    of the graph with the same name.
    """
    builder = GraphBuilder(source)
    builder.add(ops)
    return builder.finish(name, attrs, inputs, outputs)


def _op_fields(opdef) -> OpFields:
    return (
        opdef.name,
        opdef.type,
        opdef.id,
        opdef.input,
        [tensor_desc_from_proto(d) for d in opdef.input_desc],
        [tensor_desc_from_proto(d) for d in opdef.output_desc],
        attrs_from_proto(opdef.attr),
        opdef.stream_id,
        list(opdef.subgraph_name),
    )


def _graph_from_proto(graph, source: Path | None) -> GraphDesc:
    return graph_from_fields(
        graph.name,
        [_op_fields(opdef) for opdef in graph.op],
        attrs_from_proto(graph.attr),
        list(graph.input),
        list(graph.output),
        source,
    )


def model_from_proto(proto, source_path: str | os.PathLike | None = None) -> Model:
    """A ``ge.proto.ModelDef`` message as a :class:`Model`.

    Raises :class:`PrecisionToolError` (naming ``source_path``) for an op without a name or two
    ops of one graph with the same name.
    """
    source = None if source_path is None else Path(source_path)
    with gc_paused():
        graphs = [_graph_from_proto(g, source) for g in proto.graph]
    return Model(proto.name, graphs, attrs_from_proto(proto.attr), source, proto.version, proto.custom_version)
