"""Offline models (``.om``) built byte by byte, for the OM reader's tests; independent of it.

The layout is GE's (``framework/common/types.h``: ``ModelFileHeader``, ``ModelPartitionTable``;
``om_file_helper.cc`` reads the tables): a 256-byte little-endian header, then per model a
partition table followed by its partitions in table order. Offsets here are written out by
hand from that header, field by field, never taken from the reader under test.
"""

from __future__ import annotations

import struct

MAGIC = 0x444F4D49
V1, V2 = 0x10000000, 0x20000000
MODEL_DEF, WEIGHTS, TASK_INFO, TBE_KERNELS = 0, 1, 2, 3


def table(parts: list[tuple[int, bytes]], wide: bool) -> bytes:
    """One partition table and its partitions: ``(type, bytes)`` in order."""
    out, offset = [], 0
    if wide:  # u32 num, 4 bytes of padding, then (u32 type, 4 pad, u64 offset, u64 size)
        out.append(struct.pack("<I4x", len(parts)))
        for kind, data in parts:
            out.append(struct.pack("<I4xQQ", kind, offset, len(data)))
            offset += len(data)
    else:  # u32 num, then (u32 type, u32 offset, u32 size)
        out.append(struct.pack("<I", len(parts)))
        for kind, data in parts:
            out.append(struct.pack("<III", kind, offset, len(data)))
            offset += len(data)
    return b"".join(out) + b"".join(data for _, data in parts)


def header(
    body_length: int,
    *,
    version: int = V2,
    wide: bool = False,
    model_type: int = 0,
    name: bytes = b"",
    encrypt: int = 0,
    model_num: int = 1,
    unknown: int = 0,
    magic: int = MAGIC,
    head_size: int = 256,
) -> bytes:
    """The 256-byte file header: ``length`` (u32 at 76) for a narrow table, ``model_length``
    (u64 at 184) for a wide one, as GE writes them."""
    raw = bytearray(256)
    struct.pack_into("<III", raw, 0, magic, head_size, version)
    struct.pack_into("<I", raw, 76, 0 if wide and model_type != 3 else body_length)
    raw[80], raw[82] = encrypt, model_type
    raw[84 : 84 + len(name)] = name
    struct.pack_into("<I", raw, 156, model_num)
    raw[160:168] = b"Ascend31"  # platform_version
    if wide and model_type != 3:
        struct.pack_into("<Q", raw, 184, body_length)
    raw[193] = unknown
    return bytes(raw)


def om_bytes(models: list[list[tuple[int, bytes]]], *, wide: bool = False, **fields) -> bytes:
    """A whole OM: the header, then each model's table and partitions."""
    body = b"".join(table(parts, wide) for parts in models)
    fields.setdefault("model_num", len(models))
    fields.setdefault("unknown", 1 if len(models) > 1 else 0)
    return header(len(body), wide=wide, **fields) + body


def model_def_bytes(name: str, graphs: dict[str, list[tuple[str, str]]]) -> bytes:
    """A serialized ``ge.proto.ModelDef``: graphs of ``(op name, op type)``, built with the
    protobuf library over the project's schema."""
    from precision_tool.formats.proto import ge_ir

    model = ge_ir.ModelDef(name=name)
    for graph_name, ops in graphs.items():
        graph = model.graph.add(name=graph_name)
        for op_name, op_type in ops:
            graph.op.add(name=op_name, type=op_type)
    return model.SerializeToString()


def om_of_text_graph(text: str, *, wide: bool = True) -> bytes:
    """An OM whose MODEL_DEF is the ge_proto TextFormat ``text`` (protobuf's own text parser,
    then its binary form), beside a weights and a task partition, as atc lays them out."""
    from google.protobuf import text_format

    from precision_tool.formats.proto import ge_ir

    model = text_format.Parse(text, ge_ir.ModelDef())
    parts = [(MODEL_DEF, model.SerializeToString()), (WEIGHTS, bytes(64)), (TASK_INFO, b"\x08\x01")]
    return om_bytes([parts], wide=wide, name=model.name.encode()[:31])
