"""Read NPU binary dump files (FORMATS.md section 1), in either of the two forms Ascend writes.

A DumpData dump is an 8-byte little-endian header length, a ``toolkit.dumpdata.DumpData``
protobuf header, then the raw bytes of every input, output, buffer and workspace, back to back.
A nano dump has the same 8-byte length, then a TLV header starting with the magic 0x5A5A5A5A
(:mod:`.nano_dump` describes it), then the bytes of its inputs and outputs. :func:`read_dump`
tells them apart by the magic at byte 8 and gives both as the same :class:`DumpFile`; each of
its errors says which form it read the file as (``DumpData dump: ...``, ``nano dump: ...``).
Only the header is read up front; a tensor's bytes are memory-mapped when it is asked for, so
asking for one tensor of a 2 GB dump reads that tensor only.

What a header claims is checked before anything is allocated for it: a shape no array can
have is that tensor's problem (:mod:`.dump_tensor`, where :class:`DumpFile` and
:class:`DumpTensor` are defined).
"""

from __future__ import annotations

import functools
import io
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from .dtypes import data_type_name
from .dump_names import DumpName, parse_dump_name
from .dump_tensor import DumpFile, DumpTensor, OriginalOp
from .files import FetchReader, held_fetch, open_regular_descriptor
from .nano_dump import MAGIC_OFFSET, MAX_HEADER, NANO_MAGIC, NanoHeader, NanoTensor, is_nano, read_nano_header
from .proto.dump_enums import FORMAT_NAMES
from .shapes import rank_problem

if TYPE_CHECKING:
    from .proto.dumpdata import DumpData

_DUMPDATA = "DumpData dump: "  # how every error about the DumpData envelope starts
_FIRST_READ = 4096  # read_dump's first read: the header length, a nano dump's magic, the header


def format_name(value: int) -> str:
    """The ``OutputFormat`` name of ``value``, or ``UNKNOWN(value)``."""
    return FORMAT_NAMES.get(value, f"UNKNOWN({value})")


@functools.cache
def _protobuf() -> tuple[type, type]:
    """``(DumpData, DecodeError)``, imported on the first header read: a run of msprobe dumps
    reads none. Kept by the cache because an import statement run again costs 7 us, a fifth
    of a worker's whole parse of a small dump's header."""
    from google.protobuf.message import DecodeError

    from .proto.dumpdata import DumpData

    return DumpData, DecodeError


def load_header_parser() -> None:
    """Import the DumpData parser now, not at the first header read: for the pool's fork
    server, whose workers then start with it (0.05 s of imports each, paid by every worker of
    every GE run otherwise)."""
    _protobuf()


def _read_header(path: Path, handle, file_size: int) -> tuple[DumpData, int]:
    head = handle.read(8)
    if len(head) < 8:
        raise PrecisionToolError(
            f"{_DUMPDATA}truncated: {file_size} bytes, shorter than the 8-byte header length", path
        )
    if struct.unpack("<I", head[:4])[0] == NANO_MAGIC:  # as a length, more than any header's
        raise PrecisionToolError(
            f"{_DUMPDATA}the nano dump format's magic 0x5A5A5A5A at byte 0, where the header length "
            f"belongs, is not supported (a nano dump has it at byte {MAGIC_OFFSET})",
            path,
        )
    length = struct.unpack("<Q", head)[0]
    if length == 0 or length > min(file_size - 8, MAX_HEADER):
        raise PrecisionToolError(f"{_DUMPDATA}header length {length} does not fit a file of {file_size} bytes", path)
    DumpData, DecodeError = _protobuf()
    message = DumpData()
    try:
        message.ParseFromString(handle.read(length))
    except DecodeError as exc:
        raise PrecisionToolError(f"{_DUMPDATA}header is not a valid DumpData protobuf ({exc})", path) from None
    return message, 8 + length


def _shape(message) -> tuple[int, ...]:
    return tuple(message.dim)  # a repeated int64 field: Python ints already


def _original_op(proto) -> OriginalOp | None:
    if not proto.HasField("original_op"):
        return None
    op = proto.original_op
    return OriginalOp(op.name, op.output_index, data_type_name(op.data_type), format_name(op.format))


def _shape_of(message) -> tuple[tuple[int, ...], str | None]:
    """The dimensions of a ShapeDef, or () and why when no array can have that many (a header
    may list millions: they are not copied)."""
    problem = rank_problem(len(message.dim))
    return ((), problem) if problem else (_shape(message), None)


def _tensors(path: Path, kind: str, protos, offset: int) -> tuple[list[DumpTensor], int]:
    tensors = []
    for index, proto in enumerate(protos):
        shape, defect = _shape_of(proto.shape)
        original_shape, original_defect = _shape_of(proto.original_shape)
        tensors.append(
            DumpTensor.of_header(
                path=path,
                kind=kind,
                index=index,
                data_type=proto.data_type,
                format=format_name(proto.format),
                shape=shape,
                original_shape=original_shape,
                size=proto.size,
                offset=offset,
                sub_format=proto.sub_format,
                original_op=_original_op(proto) if kind == "output" else None,
                defect=defect,
                original_defect=original_defect,
            )
        )
        offset += proto.size
    return tensors, offset


def _check_sizes(path: Path, message: DumpData, data_start: int, file_size: int) -> None:
    parts = [*message.input, *message.output, *message.buffer, *message.space]
    expected = data_start + sum(p.size for p in parts)
    if expected != file_size:
        raise PrecisionToolError(
            f"{_DUMPDATA}sizes do not add up: header and tensor sizes give {expected} bytes, file has "
            f"{file_size} ({'truncated' if expected > file_size else 'trailing bytes'})",
            path,
        )


def _nano_tensors(
    path: Path, kind: str, descriptors: tuple[NanoTensor, ...], offset: int
) -> tuple[list[DumpTensor], int]:
    """The DumpTensors of nano descriptors whose data starts at ``offset``, and where it ends."""
    tensors = []
    for index, desc in enumerate(descriptors):
        original = desc.original
        original_op = (
            None
            if original is None
            else OriginalOp(original.name, original.index, original.data_type.label, format_name(original.format))
        )
        known = desc.data_type.value is not None
        tensors.append(
            DumpTensor.of_header(
                path=path,
                kind=kind,
                index=index,
                data_type=desc.data_type.value if known else 0,
                format=format_name(desc.format),
                shape=desc.shape,
                original_shape=desc.original_shape,
                size=desc.size,
                offset=offset,
                defect=desc.defect,
                original_defect=desc.original_defect,
                foreign_type=None if known else desc.data_type.label,
                original_op=original_op,
            )
        )
        offset += desc.size
    return tensors, offset


def _nano_file(path: Path, header: NanoHeader, name: str | DumpName | None) -> DumpFile:
    """A nano dump's DumpFile: its op and time come from the file name only."""
    inputs, outputs = _indexed(path, header)
    parsed = _parsed_name(path, name)
    return DumpFile(
        path=path,
        op_type=parsed.op_type if parsed else "",
        op_name=parsed.op_name if parsed else path.name,
        task_id=parsed.task_id if parsed else None,
        stream_id=parsed.stream_id if parsed else None,
        timestamp=parsed.timestamp if parsed else 0,
        version=str(header.version),
        inputs=inputs,
        outputs=outputs,
    )


def _parsed_name(path: Path, name: str | DumpName | None) -> DumpName | None:
    """The fields of the file's name: ``name`` parsed already, else ``name`` (an alias's real
    name) or the path's own, parsed here."""
    return name if isinstance(name, DumpName) else parse_dump_name(name or path.name)


def _read_either(path: Path, handle, file_size: int) -> NanoHeader | tuple[DumpData, int, int]:
    """A nano dump's header, or a DumpData header, where its data starts and the file size
    (``file_size``: the only bound a header needs)."""
    nano = is_nano(handle.read(MAGIC_OFFSET + 4))
    handle.seek(0)
    if nano:
        return read_nano_header(path, handle, file_size)
    return (*_read_header(path, handle, file_size), file_size)


def read_dump(path: str | os.PathLike, name: str | DumpName | None = None) -> DumpFile:
    """Read a dump file's header and index its tensors (their data stays on disk).

    Both forms are read, DumpData and nano (told apart by the magic 0x5A5A5A5A at byte 8).
    ``name`` is the file's real name when ``path`` is an alias from ``mapping.csv``, or that
    name parsed already (a :class:`~.dump_names.DumpName`: a directory listing parsed them all).
    Raises PrecisionToolError naming the file for anything that is not a well-formed dump.
    """
    path = path if isinstance(path, Path) else Path(path)  # Path(a Path) parses it again
    return _dump_file(path, _read_file_header(path), name)


def tensor_counts(path: str | os.PathLike) -> tuple[int, int]:
    """How many inputs and outputs the dump at ``path`` holds, the file checked as
    :func:`read_dump` checks it (raising what it raises), its tensors not indexed: all that
    the graph's pairing needs of a header (it reads every op's, before any is compared)."""
    header = _read_file_header(path)  # the path is only named in errors: no Path made
    if isinstance(header, NanoHeader):
        return len(header.inputs), len(header.outputs)
    message, data_start, file_size = header
    _check_sizes(path, message, data_start, file_size)
    return len(message.input), len(message.output)


def _read_file_header(path: str | os.PathLike) -> NanoHeader | tuple[DumpData, int, int]:
    """:func:`_read_either` of the file at ``path``, its problems PrecisionToolErrors."""
    try:
        descriptor, info = open_regular_descriptor(path, "dump file")
        try:  # one read holds a GE header as a rule; a longer one is read on from the file
            held = os.read(descriptor, _FIRST_READ)
            return _read_either(path, FetchReader(held_fetch(held, descriptor)), info.st_size)
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise PrecisionToolError(f"cannot read dump file ({exc.strerror or exc})", path) from None
    except MemoryError:  # a header length under MAX_HEADER, still more than this machine has
        raise PrecisionToolError("not enough memory to read the dump's header", path) from None


def dump_from_bytes(path: str | os.PathLike, data: bytes, name: str | DumpName | None = None) -> DumpFile:
    """:func:`read_dump` of a dump file its caller has read whole (``data``: all its bytes, as
    the file was), for a reader that wants the tensors' bytes too: one read, no second open.
    Raises PrecisionToolError as :func:`read_dump` does."""
    path = path if isinstance(path, Path) else Path(path)
    return _dump_file(path, _read_either(path, io.BytesIO(data), len(data)), name)


def dump_tensors_from_bytes(path: str | os.PathLike, data: bytes) -> tuple[list[DumpTensor], list[DumpTensor]]:
    """The inputs and outputs of :func:`dump_from_bytes`, checked as it checks them, without
    the op's name, time and attributes (a comparison reads the tensors alone)."""
    path = path if isinstance(path, Path) else Path(path)
    return _indexed(path, _read_either(path, io.BytesIO(data), len(data)))


def _indexed(path: Path, header: NanoHeader | tuple[DumpData, int, int]) -> tuple[list[DumpTensor], list[DumpTensor]]:
    """The inputs and outputs of a header :func:`_read_either` read (a DumpData header's sizes
    checked against the file's)."""
    if isinstance(header, NanoHeader):
        inputs, offset = _nano_tensors(path, "input", header.inputs, header.data_start)
        return inputs, _nano_tensors(path, "output", header.outputs, offset)[0]
    message, data_start, file_size = header
    _check_sizes(path, message, data_start, file_size)
    inputs, offset = _tensors(path, "input", message.input, data_start)
    outputs, _ = _tensors(path, "output", message.output, offset)
    return inputs, outputs


def _dump_file(path: Path, header: NanoHeader | tuple[DumpData, int, int], name: str | DumpName | None) -> DumpFile:
    """The DumpFile of a header :func:`_read_either` read."""
    if isinstance(header, NanoHeader):
        return _nano_file(path, header, name)
    message = header[0]
    inputs, outputs = _indexed(path, header)
    parsed = _parsed_name(path, name)
    return DumpFile(
        path=path,
        op_type=parsed.op_type if parsed else "",
        op_name=message.op_name or (parsed.op_name if parsed else path.name),
        task_id=parsed.task_id if parsed else None,
        stream_id=parsed.stream_id if parsed else None,
        timestamp=parsed.timestamp if parsed else message.dump_time,
        version=message.version,
        inputs=inputs,
        outputs=outputs,
        attrs={a.name: a.value for a in message.attr},
    )
