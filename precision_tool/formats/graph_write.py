"""Write GE graph dumps: a :class:`~.graph_model.Model` as TextFormat or as atc's JSON.

Used by the tests and the sample-data generator. A model goes to a ``ge.proto.ModelDef`` by
:func:`model_to_proto` and is then printed by protobuf (TextFormat) or by
:func:`message_to_atc_json` (atc's JSON shape: maps as key/value lists, enum names, bytes as
plain strings, empty messages as ``null``). Reading either file back gives an equal model.

Small graphs are easiest to make with :func:`tensor_desc` and :class:`OpSpec` /
:func:`build_model`, which give the same objects the reader would.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import text_format
from google.protobuf.descriptor import FieldDescriptor

from .graph import model_from_proto, parse_input, tensor_desc_from_proto
from .graph_model import Model, Op, TensorDesc
from .proto import ge_ir
from .proto.atc_json import is_map_field
from .proto.ge_ir import shortest_float32

_VT = {name: number for number, name in enumerate(ge_ir.LIST_VALUE_TYPES)}


# --- Python attribute values -> AttrDef -----------------------------------------------------


def _list_member(values: list[Any]) -> tuple[str, str]:
    """The ``ListValue`` member and ``val_type`` for a non-empty list of Python values."""
    if all(isinstance(v, bool) for v in values):
        return "b", "VT_LIST_BOOL"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return "i", "VT_LIST_INT"
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return "f", "VT_LIST_FLOAT"
    for member, kind, val_type in (
        ("s", str, "VT_LIST_STRING"),
        ("bt", bytes, "VT_LIST_BYTES"),
        ("td", TensorDesc, "VT_LIST_TENSOR_DESC"),
    ):
        if all(isinstance(v, kind) for v in values):
            return member, val_type
    if all(isinstance(v, dict) and "desc" in v for v in values):
        return "t", "VT_LIST_TENSOR"
    if all(isinstance(v, dict) and "attrs" in v for v in values):
        return "na", "VT_LIST_NAMED_ATTRS"
    raise TypeError(f"cannot write a list mixing {sorted({type(v).__name__ for v in values})}")


def _set_list(attr, values: list[Any]) -> None:
    if values and all(isinstance(v, (list, tuple)) for v in values):
        floats = any(isinstance(x, float) for row in values for x in row)
        rows = attr.list_list_float.list_list_f if floats else attr.list_list_int.list_list_i
        for row in values:
            item = rows.add()
            (item.list_f if floats else item.list_i).extend(row)
        return
    target = attr.list
    target.SetInParent()  # an empty list is still a list, not an unset value
    if not values:
        return
    member, val_type = _list_member(values)
    target.val_type = _VT[val_type]
    container = getattr(target, member)
    if member in ("td", "t", "na"):
        fill = {"td": _desc_to_proto, "t": _tensor_to_proto, "na": _named_to_proto}[member]
        for value in values:
            fill(value, container.add())
    else:
        container.extend([v.encode("utf-8") if member == "s" else v for v in values])


def _tensor_to_proto(value: Mapping[str, Any], target) -> None:
    target.SetInParent()
    if value.get("desc") is not None:
        _desc_to_proto(value["desc"], target.desc)
    target.data = bytes(value.get("data") or b"")


def _named_to_proto(value: Mapping[str, Any], target) -> None:
    target.SetInParent()
    target.name = value.get("name", "")
    _attrs_to_proto(value.get("attrs") or {}, target.attr)


def _set_attr(attr, value: Any) -> None:
    """Store one Python attribute value (see :mod:`.graph` for the mapping) into ``attr``."""
    if value is None:
        return
    if isinstance(value, bool):
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode("utf-8")
    elif isinstance(value, bytes):
        attr.bt = value
    elif isinstance(value, TensorDesc):
        _desc_to_proto(value, attr.td)
    elif isinstance(value, Mapping) and "desc" in value:
        _tensor_to_proto(value, attr.t)
    elif isinstance(value, Mapping) and "attrs" in value:
        _named_to_proto(value, attr.func)
    elif isinstance(value, (list, tuple)):
        _set_list(attr, list(value))
    else:
        raise TypeError(f"cannot write an attribute of type {type(value).__name__}")


def _attrs_to_proto(attrs: Mapping[str, Any], target) -> None:
    for key, value in attrs.items():
        _set_attr(target[key], value)


def _dtype_number(name: str) -> int:
    known = ge_ir.DATA_TYPE.values_by_name.get(name)
    if known is not None:
        return known.number
    if name.startswith("DT_UNKNOWN_"):  # how the reader names a number the schema lacks
        return int(name[len("DT_UNKNOWN_") :])
    raise ValueError(f"unknown dtype {name!r}")


def _desc_to_proto(desc: TensorDesc, target) -> None:
    target.SetInParent()
    target.name = desc.name
    target.dtype = _dtype_number(desc.dtype)
    target.layout = desc.layout
    target.shape.dim.extend(desc.shape)
    _attrs_to_proto(desc.attrs, target.attr)
    target.device_type, target.real_dim_cnt = "NPU", len(desc.shape)  # as GE writes them


# --- model -> ModelDef ------------------------------------------------------------------------


def _input_entries(data: Sequence[str], control: Sequence[str], descs: int, op_type: str) -> list[str]:
    # GE keeps `input` parallel to `input_desc`: an absent optional input is "", and a Data op,
    # which has an input desc but no producer, gets [""].
    entries = list(data) + [""] * max(0, descs - len(data))
    if not entries and op_type == "Data":
        entries = [""]
    return entries + list(control)


def _placed_inputs(op: Op) -> list[str]:
    data = [ref for ref in op.inputs if not ref.is_control]
    control = [str(ref) for ref in op.inputs if ref.is_control]
    slots = [ref.slot for ref in data]
    if data and None not in slots and len(set(slots)) == len(slots):
        placed = [""] * (max(slots) + 1)
        for ref in data:
            placed[ref.slot] = str(ref)
        return _input_entries(placed, control, len(op.input_descs), op.type)
    return _input_entries([str(ref) for ref in data], control, len(op.input_descs), op.type)


def _op_to_proto(op: Op, target) -> None:
    target.name, target.type, target.id, target.stream_id = op.name, op.type, op.id, op.stream_id
    target.input.extend(_placed_inputs(op))
    target.has_out_attr = True
    _attrs_to_proto(op.attrs, target.attr)
    # GE's bookkeeping of the edges, which the reader derives from `input` instead.
    data = [ref for ref in op.inputs if not ref.is_control]
    target.input_name.extend(ref.src for ref in data)
    target.src_name.extend(ref.src for ref in data)
    target.src_index.extend(ref.index for ref in data)
    for consumers in op.consumers:
        target.dst_name.extend(name for name, _ in consumers)
        target.dst_index.extend(slot for _, slot in consumers)
    for desc in op.input_descs:
        _desc_to_proto(desc, target.input_desc.add())
    for desc in op.output_descs:
        _desc_to_proto(desc, target.output_desc.add())
    target.subgraph_name.extend(op.subgraph_names)


def model_to_proto(model: Model):
    """``model`` as a ``ge.proto.ModelDef`` message."""
    proto = ge_ir.ModelDef(name=model.name, version=model.version, custom_version=model.custom_version)
    _attrs_to_proto(model.attrs, proto.attr)
    for graph in model.graphs:
        target = proto.graph.add(name=graph.name)
        target.input.extend(graph.inputs)
        target.output.extend(graph.outputs)
        _attrs_to_proto(graph.attrs, target.attr)
        for op in graph.ops:
            _op_to_proto(op, target.op.add())
    return proto


# --- ModelDef -> atc JSON ---------------------------------------------------------------------


def _json_scalar(fd, value: Any) -> Any:
    if fd.cpp_type == FieldDescriptor.CPPTYPE_ENUM:
        known = fd.enum_type.values_by_number.get(value)
        return known.name if known is not None else value
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return value.decode("utf-8", errors="replace")
    if fd.cpp_type in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        if not math.isfinite(value):
            return str(value)  # JSON has no inf/nan; atc quotes floats, and the reader takes both
        return shortest_float32(value) if fd.cpp_type == FieldDescriptor.CPPTYPE_FLOAT else value
    return value


def _json_value(fd, value: Any) -> Any:
    if is_map_field(fd):
        return [{"key": key, "value": message_to_atc_json(value[key]) or None} for key in sorted(value)]
    if fd.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
        return [message_to_atc_json(item) for item in value] if fd.is_repeated else message_to_atc_json(value)
    if fd.is_repeated:
        return [_json_scalar(fd, item) for item in value]
    return _json_scalar(fd, value)


def message_to_atc_json(message) -> dict[str, Any]:
    """``message`` as atc writes it: keys sorted, defaults left out, empty messages ``null``."""
    return {
        fd.name: _json_value(fd, value) for fd, value in sorted(message.ListFields(), key=lambda item: item[0].name)
    }


def write_graph_text(model: Model, path: str | os.PathLike) -> Path:
    """Write ``model`` as a TextFormat graph dump (``ge_proto_*_Build.txt``); returns the path."""
    path = Path(path)
    path.write_text(text_format.MessageToString(model_to_proto(model)), encoding="utf-8")
    return path


def write_graph_json(model: Model, path: str | os.PathLike) -> Path:
    """Write ``model`` as ``atc --mode=5`` would (``<txt>.json``); returns the path.

    Like atc, this writes bytes as text, so ``bytes`` values that are not UTF-8 do not survive.
    """
    path = Path(path)
    text = json.dumps(message_to_atc_json(model_to_proto(model)), indent=2, ensure_ascii=False)
    path.write_text(text + "\n", encoding="utf-8")
    return path


# --- builders ---------------------------------------------------------------------------------


def tensor_desc(
    dtype: str = "DT_FLOAT",
    layout: str = "ND",
    shape: Sequence[int] = (),
    *,
    origin_format: str | None = None,
    origin_shape: Sequence[int] | None = None,
    origin_name: str | None = None,
    origin_output_index: int | None = None,
    origin_data_type: str | None = None,
    attrs: Mapping[str, Any] | None = None,
    name: str = "",
) -> TensorDesc:
    """A :class:`TensorDesc` as the reader would give it, the origin fields stored as GE does.

    ``origin_format`` / ``origin_shape`` become the ``origin_format`` / ``origin_shape``
    attributes; ``origin_name``, ``origin_output_index`` and ``origin_data_type`` the
    ``_datadump_origin_*`` ones. Keys in ``attrs`` win.
    """
    stored = {
        key: value
        for key, value in (
            ("origin_format", origin_format),
            ("origin_shape", None if origin_shape is None else list(origin_shape)),
            ("_datadump_origin_name", origin_name),
            ("_datadump_origin_output_index", origin_output_index),
            ("_datadump_origin_data_type", origin_data_type),
        )
        if value is not None
    }
    stored.update(attrs or {})
    bare = TensorDesc(dtype, layout, tuple(shape), None, None, None, None, None, stored, name)
    message = ge_ir.TensorDescriptor()
    _desc_to_proto(bare, message)
    return tensor_desc_from_proto(message)


@dataclass
class OpSpec:
    """One op for :func:`build_model`; ``inputs`` are ``"src:idx"`` (``"src:-1"``: control).

    The optional fields are shorthands for the attributes GE stores them in.
    """

    name: str
    type: str
    inputs: Sequence[str] = ()
    input_descs: Sequence[TensorDesc] = ()
    output_descs: Sequence[TensorDesc] = ()
    attrs: Mapping[str, Any] = field(default_factory=dict)
    original_op_names: Sequence[str] | None = None
    pass_name: Sequence[str] | None = None
    kernel_name: str | None = None
    kernel_lib: str | None = None
    stream_id: int = 0

    def all_attrs(self) -> dict[str, Any]:
        """``attrs`` with the shorthand fields added under GE's attribute names."""
        extra = {
            key: value
            for key, value in (
                (
                    "_datadump_original_op_names",
                    None if self.original_op_names is None else list(self.original_op_names),
                ),
                ("pass_name", None if self.pass_name is None else list(self.pass_name)),
                (f"{self.name}_kernelname", self.kernel_name),
                ("_ge_attr_op_kernel_lib_name", self.kernel_lib),
            )
            if value is not None
        }
        return {**extra, **self.attrs}


def build_model(
    ops: Sequence[OpSpec],
    *,
    name: str = "ge_default_graph",
    graph_name: str | None = None,
    graph_inputs: Sequence[str] = (),
    graph_outputs: Sequence[str] = (),
    attrs: Mapping[str, Any] | None = None,
    graph_attrs: Mapping[str, Any] | None = None,
) -> Model:
    """A one-graph :class:`Model` of ``ops`` (ids in list order), as the reader would give it."""
    proto = ge_ir.ModelDef(name=name)
    _attrs_to_proto(attrs or {}, proto.attr)
    graph = proto.graph.add(name=graph_name or name)
    graph.input.extend(graph_inputs)
    graph.output.extend(graph_outputs)
    _attrs_to_proto(graph_attrs or {}, graph.attr)
    for index, spec in enumerate(ops):
        target = graph.op.add(name=spec.name, type=spec.type, id=index, stream_id=spec.stream_id)
        control = [entry for entry in spec.inputs if parse_input(entry).is_control]
        data = [entry for entry in spec.inputs if not parse_input(entry).is_control]
        target.input.extend(_input_entries(data, control, len(spec.input_descs), spec.type))
        _attrs_to_proto(spec.all_attrs(), target.attr)
        for desc in spec.input_descs:
            _desc_to_proto(desc, target.input_desc.add())
        for desc in spec.output_descs:
            _desc_to_proto(desc, target.output_desc.add())
    return model_from_proto(proto)
