"""The model definition inside an offline model (``.om``, what ``atc`` writes), without CANN.

An OM is GE's container (``ModelFileHeader`` and ``ModelPartitionTable`` of GE's
``framework/common/types.h``; loaded by ``om_file_helper.cc``), all little-endian:

====  ==========  ====================================================================
 at   field       meaning
====  ==========  ====================================================================
   0  u32 magic   0x444F4D49: the bytes ``IMOD`` on disk
   4  u32         header size: 256
   8  u32         header version: 0x10000000 (1.0) or 0x20000000 (2.0)
  12  64 bytes    checksum (signature), not checked here
  76  u32         length of what follows the header (0 when the u64 at 184 holds it)
  80  u8 x 4      is_encrypt, is_checksum, modeltype (0 IR, 1 standard, 2 tiny, 3 flow,
                  4 lite, 5 bundle), genmode
  84  32 bytes    model name, NUL-padded
 152  u32 x 2     om_ir_version; model_num (header 2.0 only)
 160  20 bytes    platform version; 180: u8 platform type
 184  u64         model_length (newer GE; 0 in older files); 193: u8 is_unknow_model
====  ==========  ====================================================================

Then one partition table per model, each followed by its partitions, back to back in table
order (GE walks them by size; ``mem_offset`` is only their running sum). A table is ``u32 num``
and ``num`` entries (``type``, ``mem_offset``, ``mem_size``): three u32 (12 bytes) in older
files, or, when ``model_length`` is set or the model is a flow model, ``num`` padded to 8 bytes
and entries of u32 type, 4 bytes of padding, u64 offset, u64 size (24 bytes). A 2.0 header with
``model_num`` > 1 or ``is_unknow_model`` (a dynamic-shape model split into sub-models) has
``model_num`` tables; any other has one. The ``MODEL_DEF`` partition (type 0) holds a binary
``ge.proto.ModelDef``; the first model's is the root graph, and later ones add graphs it lacks.

Only what is needed is read: the header, the tables, then the model-def partitions, each offset
and size checked against the file before it is read (an OM's weights may be gigabytes).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import PrecisionToolError
from .files import open_regular, size_text
from .graph_names import OM_MAGIC, looks_like_om

HEADER_SIZE = 256
VERSIONS = {0x10000000: "1.0", 0x20000000: "2.0"}
_VERSION_2 = 0x20000000
MODEL_DEF = 0
FLOW_MODEL_TYPE, BUNDLE_MODEL_TYPE = 3, 5
PARTITION_NAMES = {
    0: "MODEL_DEF",
    1: "WEIGHTS_DATA",
    2: "TASK_INFO",
    3: "TBE_KERNELS",
    4: "CUST_AICPU_KERNELS",
    5: "SO_BINS",
    6: "FLOW_MODEL",
    7: "FLOW_SUBMODEL",
    8: "MODEL_INOUT_INFO",
    9: "STATIC_TASK_DESC",
    10: "DYNAMIC_TASK_DESC",
    11: "TASK_PARAM",
    12: "TILING_DATA",
}
MAX_PARTITIONS = 4096  # GE's own bound (a flow model's); real tables hold 1 to 8
MAX_MODELS = 4096
MAX_MODEL_DEF_BYTES = (2 << 30) - 1  # protobuf reads no message of 2 GiB or more
_NARROW, _WIDE = struct.Struct("<III"), struct.Struct("<I4xQQ")


@dataclass(frozen=True)
class OmHeader:
    """What an OM's file header says (see the module doc)."""

    version: int
    data_length: int  # bytes after the header: model_length, else length
    is_encrypt: int
    model_type: int
    name: str
    model_num: int
    platform_version: str
    is_unknown_model: int
    wide_table: bool  # 24-byte partition entries (u64 offset and size)

    @property
    def table_count(self) -> int:
        """How many partition tables (models) follow the header."""
        split = self.version >= _VERSION_2 and (self.model_num > 1 or self.is_unknown_model == 1)
        return max(self.model_num, 1) if split else 1


@dataclass(frozen=True)
class OmPartition:
    """One partition: of model ``model`` (0 the root), its ``kind`` and where its bytes are."""

    model: int
    kind: int
    offset: int  # from the start of the file
    size: int

    @property
    def name(self) -> str:
        return PARTITION_NAMES.get(self.kind, f"type {self.kind}")


@dataclass(frozen=True)
class OmLayout:
    """An OM's header and every partition of every model, in file order."""

    header: OmHeader
    partitions: tuple[OmPartition, ...]

    def of_kind(self, kind: int) -> list[OmPartition]:
        return [p for p in self.partitions if p.kind == kind]


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def parse_header(raw: bytes, file_size: int, path: Path) -> OmHeader:
    """The header of an OM of ``file_size`` bytes whose first bytes are ``raw``.

    Raises:
        PrecisionToolError: naming ``path``: too short, not an OM, an unknown header size or
            version, encrypted, a bundle of models, or a length past the end of the file.
    """
    if len(raw) < HEADER_SIZE:
        raise PrecisionToolError(f"too short for an OM: {len(raw)} bytes, the header alone is {HEADER_SIZE}", path)
    if not looks_like_om(raw):
        raise PrecisionToolError(
            f"not an OM model: it starts with {raw[:4].hex()} (an OM starts with {OM_MAGIC.hex()}, 'IMOD')", path
        )
    head_size, version = struct.unpack_from("<II", raw, 4)
    if head_size != HEADER_SIZE:
        raise PrecisionToolError(f"OM header size {head_size} is not GE's {HEADER_SIZE}", path)
    if version not in VERSIONS:
        known = ", ".join(f"0x{v:08x} ({name})" for v, name in VERSIONS.items())
        raise PrecisionToolError(f"unknown OM header version 0x{version:08x} (known: {known})", path)
    (length,) = struct.unpack_from("<I", raw, 76)
    is_encrypt, _, model_type = raw[80], raw[81], raw[82]
    (model_num,) = struct.unpack_from("<I", raw, 156)
    (model_length,) = struct.unpack_from("<Q", raw, 184)
    header = OmHeader(
        version,
        model_length or length,
        is_encrypt,
        model_type,
        _text(raw[84:116]),
        model_num if version >= _VERSION_2 else 1,
        _text(raw[160:180]),
        raw[193],
        bool(model_length) or model_type == FLOW_MODEL_TYPE,
    )
    _check_header(header, file_size, path)
    return header


def _check_header(header: OmHeader, file_size: int, path: Path) -> None:
    if header.is_encrypt:
        raise PrecisionToolError(
            f"encrypted OM (is_encrypt={header.is_encrypt}): its model "
            "definition cannot be read; give the unencrypted .om or the "
            "JSON atc --mode=1 writes of it",
            path,
        )
    if header.model_type == BUNDLE_MODEL_TYPE:
        raise PrecisionToolError(
            f"a bundle of {header.model_num} OM models (modeltype="
            f"{BUNDLE_MODEL_TYPE}): not supported; give one of its models",
            path,
        )
    if header.table_count > MAX_MODELS:
        raise PrecisionToolError(f"OM header claims {header.model_num} models (at most {MAX_MODELS} are read)", path)
    if HEADER_SIZE + header.data_length > file_size:
        raise PrecisionToolError(
            f"truncated OM: the header says {header.data_length:,} bytes follow "
            f"it, the file has {file_size - HEADER_SIZE:,}",
            path,
        )


class _Bounded:
    """Reads of ``handle`` that never go past ``end`` (the model data's end)."""

    def __init__(self, handle: BinaryIO, end: int, path: Path):
        self.handle, self.end, self.path = handle, end, path

    def read(self, offset: int, size: int, what: str) -> bytes:
        if offset + size > self.end:
            raise PrecisionToolError(
                f"truncated OM: {what} ({size:,} bytes at offset {offset:,}) "
                f"runs past the end of the model data ({self.end:,} bytes)",
                self.path,
            )
        self.handle.seek(offset)
        data = self.handle.read(size)
        if len(data) != size:  # the file shrank while it was read
            raise PrecisionToolError(f"truncated OM: {what} at offset {offset:,} is cut short", self.path)
        return data


def _table(reader: _Bounded, offset: int, model: int, wide: bool) -> tuple[list[OmPartition], int]:
    """The partitions of the table at ``offset`` and the offset just past them."""
    (num,) = struct.unpack("<I", reader.read(offset, 4, f"the partition table of model {model}"))
    if num > MAX_PARTITIONS:
        raise PrecisionToolError(
            f"OM partition table of model {model} claims {num:,} partitions (GE writes at most {MAX_PARTITIONS})",
            reader.path,
        )
    entry = _WIDE if wide else _NARROW
    start = offset + (8 if wide else 4)
    raw = reader.read(start, entry.size * num, f"the {num} entries of model {model}'s partition table")
    position = start + entry.size * num
    found = []
    for kind, _offset, size in entry.iter_unpack(raw):
        found.append(OmPartition(model, kind, position, size))
        position += size
    return found, position


def read_layout(handle: BinaryIO, file_size: int, path: Path) -> OmLayout:
    """The header and partitions of the OM open in ``handle`` (its size ``file_size``), every
    partition checked to lie inside the model data; no partition's bytes are read."""
    handle.seek(0)
    header = parse_header(handle.read(HEADER_SIZE), file_size, path)
    end = HEADER_SIZE + header.data_length
    reader = _Bounded(handle, end, path)
    partitions: list[OmPartition] = []
    offset = HEADER_SIZE
    for model in range(header.table_count):
        found, offset = _table(reader, offset, model, header.wide_table)
        for part in found:
            if part.offset + part.size > end:
                raise PrecisionToolError(
                    f"truncated OM: partition {part.name} of model {model} ({part.size:,} bytes at "
                    f"offset {part.offset:,}) runs past the end of the model data ({end:,} bytes)",
                    path,
                )
        partitions.extend(found)
    return OmLayout(header, tuple(partitions))


def _model_def(reader: _Bounded, part: OmPartition) -> Any:
    from google.protobuf.message import DecodeError  # protobuf: only when a model is read

    from .proto import ge_ir

    if part.size > MAX_MODEL_DEF_BYTES:
        raise PrecisionToolError(
            f"the MODEL_DEF partition of model {part.model} is {size_text(part.size)}: larger than protobuf reads",
            reader.path,
        )
    proto = ge_ir.ModelDef()
    try:
        proto.ParseFromString(reader.read(part.offset, part.size, "the MODEL_DEF partition"))
    except (DecodeError, RecursionError) as err:
        raise PrecisionToolError(
            f"the MODEL_DEF partition of model {part.model} is not a ge.proto ModelDef: {err}", reader.path
        ) from None
    return proto


def _no_model_def(layout: OmLayout, path: Path) -> PrecisionToolError:
    kinds = ", ".join(dict.fromkeys(p.name for p in layout.partitions if p.model == 0)) or "none"
    return PrecisionToolError(f"OM without a MODEL_DEF partition (its partitions: {kinds})", path)


def read_om_model_def(path: str | os.PathLike) -> Any:
    """The ``ge.proto.ModelDef`` of the OM at ``path``: the root model's, with the graphs of the
    later models (sub-models of a dynamic-shape OM) that it does not hold itself.

    Raises:
        PrecisionToolError: one line naming ``path``: not a regular readable file, not an OM
            (the magic), an unknown header version, encrypted, truncated (any table or partition
            past the data the header declares), no MODEL_DEF partition, or one that does not
            parse as a ModelDef.
    """
    path = Path(path)
    with open_regular(path, "OM model") as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            layout = read_layout(handle, size, path)
            reader = _Bounded(handle, HEADER_SIZE + layout.header.data_length, path)
            parts = layout.of_kind(MODEL_DEF)
            if not parts or parts[0].model != 0:
                raise _no_model_def(layout, path)
            root = _model_def(reader, parts[0])
            names = {graph.name for graph in root.graph}
            for part in parts[1:]:
                for graph in _model_def(reader, part).graph:
                    if graph.name not in names:
                        names.add(graph.name)
                        root.graph.add().CopyFrom(graph)
        except OSError as exc:
            raise PrecisionToolError(f"cannot read OM model: {exc.strerror or exc}", path) from None
    return root
