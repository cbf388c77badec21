"""Read NPU binary dump files (FORMATS.md section 1).

A dump file is an 8-byte little-endian header length, a ``toolkit.dumpdata.DumpData`` protobuf
header, then the raw bytes of every input, output, buffer and workspace, back to back. Only the
header is read up front; a tensor's bytes are memory-mapped when it is asked for, so asking for
one tensor of a 2 GB dump reads that tensor only.

What a header claims is checked before anything is allocated for it (:mod:`.shapes`): a shape
of more dimensions than numpy allows, or too big for any array (``[0, 2**62]``), is that
tensor's :attr:`DumpTensor.problem` (:attr:`~DumpTensor.host_problem` for the original
shape), as is a file that became shorter than its header says
after the header was read (truncated while being compared).
"""

from __future__ import annotations

import math
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from google.protobuf.message import DecodeError

from ..errors import PrecisionToolError
from . import layouts
from .dtypes import DumpDType, data_type_name, display_name, dump_dtype, unpack_bits
from .dump_names import parse_dump_name
from .files import open_regular
from .proto.dumpdata import FORMAT_NAMES, DumpData
from .shapes import rank_problem, shape_problem

NANO_MAGIC = 0x5A5A5A5A
_MAX_HEADER = 1 << 30  # a header is a few KB; anything near this is a corrupt length field


@dataclass(frozen=True)
class OriginalOp:
    """The TF tensor a dumped output stands for, as the dump header records it."""

    name: str
    output_index: int
    data_type: str
    format: str


def format_name(value: int) -> str:
    """The ``OutputFormat`` name of ``value``, or ``UNKNOWN(value)``."""
    return FORMAT_NAMES.get(value, f"UNKNOWN({value})")


@dataclass(frozen=True)
class DumpTensor:
    """One input or output of a dump file; its data stays on disk until asked for."""

    path: Path
    kind: str  # "input" or "output"
    index: int
    data_type: int  # the OutputDataType enum value
    format: str  # device format name, e.g. "NC1HWC0"
    shape: tuple[int, ...]  # device shape
    original_shape: tuple[int, ...]  # host shape (empty: same as the device shape)
    size: int  # bytes in the file
    offset: int  # where those bytes start
    sub_format: int = 0  # groups of a grouped convolution on FRACTAL_Z
    original_op: OriginalOp | None = None
    defect: str | None = None  # a device shape no array can have (the shapes are left empty)
    original_defect: str | None = None  # an original shape no array can have (left empty)

    @property
    def name(self) -> str:
        """``{kind}:{index}``, as in a TensorIndex."""
        return f"{self.kind}:{self.index}"

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements (after unpacking sub-byte types)."""
        return self._dump_dtype().dtype

    @property
    def dtype_name(self) -> str:
        """How the data type is shown: ``float16``, ``bfloat16``, or the enum name if unsupported."""
        try:
            return display_name(self._dump_dtype())
        except PrecisionToolError:
            return data_type_name(self.data_type)

    @property
    def problem(self) -> str | None:
        """Why this tensor cannot be read (in its device layout), or None when it can; the text
        starts with the tensor's name (``output:0: ...``)."""
        try:
            self._element_count()
        except PrecisionToolError as exc:
            return exc.problem
        return None

    @property
    def host_problem(self) -> str | None:
        """Why this tensor cannot be read in host layout before any conversion is tried (its
        :attr:`problem`, or an original shape no array can have), or None."""
        try:
            self._element_count()
            self._check_original_shape()
        except PrecisionToolError as exc:
            return exc.problem
        return None

    def _check_shape(self, shape: tuple[int, ...], defect: str | None, which: str = "") -> None:
        """PrecisionToolError when no array can have ``shape`` (``which``: "" or "original ")."""
        problem = defect or shape_problem(shape, self._dump_dtype().dtype.itemsize)
        if problem:
            raise PrecisionToolError(f"{self.name}: {which}{problem}")

    def _check_original_shape(self) -> None:
        self._check_shape(self.original_shape, self.original_defect, "original ")

    def _dump_dtype(self) -> DumpDType:
        try:
            return dump_dtype(self.data_type)
        except PrecisionToolError as exc:  # every problem of a tensor starts with its name
            raise PrecisionToolError(f"{self.name}: {exc.problem}") from None

    def _element_count(self) -> int:
        dtype = self._dump_dtype()
        self._check_shape(self.shape, self.defect)
        if not self.shape:  # empty shape with data: a flat tensor of what fits
            return dtype.count(self.size)
        count = math.prod(self.shape)
        if dtype.nbytes(count) != self.size:
            raise PrecisionToolError(
                f"{self.name}: shape {list(self.shape)} of {self.dtype_name} needs "
                f"{dtype.nbytes(count)} bytes but the dump holds {self.size}")
        return count

    def device(self) -> np.ndarray:
        """The tensor in its device layout and shape (read-only, memory-mapped where possible)."""
        dtype, count = self._dump_dtype(), self._element_count()
        shape = self.shape or (count,)
        if count == 0 or self.size == 0:
            return np.zeros(shape, dtype.dtype)
        try:  # the file is opened once more for the mapping: it may have changed since its header
            handle = open_regular(self.path, "dump file")
        except PrecisionToolError as exc:
            raise PrecisionToolError(f"{self.name}: {exc.problem}", self.path) from None
        with handle:
            try:
                if dtype.packed:
                    raw = np.memmap(handle, np.uint8, "r", self.offset, (self.size,))
                    return unpack_bits(np.asarray(raw), dtype, count).reshape(shape)
                return np.memmap(handle, dtype.dtype, "r", self.offset, shape)
            except (ValueError, OSError) as exc:  # "mmap length is greater than file size"
                raise PrecisionToolError(
                    f"{self.name}: cannot map its {self.size} bytes at offset {self.offset} "
                    f"({getattr(exc, 'strerror', None) or exc}): truncated since its header was "
                    "read?", self.path) from None

    def origin_format(self, fallback: str | None = None) -> str | None:
        """The host layout: OriginalOp.format when the dump has it, else ``fallback``."""
        if self.original_op is not None:
            return self.original_op.format
        return fallback

    def host(self, origin_format: str | None = None) -> np.ndarray:
        """The tensor in host layout and ``original_shape``.

        The origin format comes from ``OriginalOp.format`` when the dump records one, else from
        ``origin_format``, else it is inferred from ``original_shape`` against the device shape.
        """
        problem = self.host_problem
        if problem:
            raise PrecisionToolError(problem, self.path)
        try:
            return layouts.to_host(self.device(), self.format, self.original_shape,
                                   self.origin_format(origin_format), groups=max(self.sub_format, 1))
        except PrecisionToolError as exc:
            raise PrecisionToolError(f"{self.name}: {exc.problem}", self.path) from None


@dataclass(frozen=True)
class DumpFile:
    """The header of one NPU dump file: who dumped it and what tensors it holds."""

    path: Path
    op_type: str
    op_name: str
    task_id: int | None
    stream_id: int | None
    timestamp: int
    version: str
    inputs: list[DumpTensor] = field(default_factory=list)
    outputs: list[DumpTensor] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)

    @property
    def tensors(self) -> list[DumpTensor]:
        """Inputs then outputs."""
        return [*self.inputs, *self.outputs]


def _read_header(path: Path, handle, file_size: int) -> tuple[DumpData, int]:
    head = handle.read(8)
    if len(head) < 8:
        raise PrecisionToolError(f"truncated dump: {file_size} bytes, shorter than the 8-byte header length", path)
    if struct.unpack("<I", head[:4])[0] == NANO_MAGIC:
        raise PrecisionToolError("nano dump format (magic 0x5A5A5A5A) is not supported", path)
    length = struct.unpack("<Q", head)[0]
    if length == 0 or length > min(file_size - 8, _MAX_HEADER):
        raise PrecisionToolError(f"header length {length} does not fit a file of {file_size} bytes", path)
    message = DumpData()
    try:
        message.ParseFromString(handle.read(length))
    except DecodeError as exc:
        raise PrecisionToolError(f"header is not a valid DumpData protobuf ({exc})", path) from None
    return message, 8 + length


def _shape(message) -> tuple[int, ...]:
    return tuple(int(d) for d in message.dim)


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
        tensors.append(DumpTensor(
            path=path, kind=kind, index=index, data_type=proto.data_type,
            format=format_name(proto.format), shape=shape, original_shape=original_shape,
            size=proto.size, offset=offset, sub_format=proto.sub_format,
            original_op=_original_op(proto) if kind == "output" else None, defect=defect,
            original_defect=original_defect))
        offset += proto.size
    return tensors, offset


def _check_sizes(path: Path, message: DumpData, data_start: int, file_size: int) -> None:
    parts = [*message.input, *message.output, *message.buffer, *message.space]
    expected = data_start + sum(p.size for p in parts)
    if expected != file_size:
        raise PrecisionToolError(
            f"sizes do not add up: header and tensor sizes give {expected} bytes, file has {file_size}"
            f" ({'truncated' if expected > file_size else 'trailing bytes'})", path)


def read_dump(path: str | os.PathLike, name: str | None = None) -> DumpFile:
    """Read a dump file's header and index its tensors (their data stays on disk).

    ``name`` is the file's real name when ``path`` is an alias from ``mapping.csv``.
    Raises PrecisionToolError naming the file for anything that is not a well-formed dump.
    """
    path = Path(path)
    try:
        with open_regular(path, "dump file") as handle:
            file_size = os.fstat(handle.fileno()).st_size  # the only bound its header needs
            message, data_start = _read_header(path, handle, file_size)
    except OSError as exc:
        raise PrecisionToolError(f"cannot read dump file ({exc.strerror or exc})", path) from None
    except MemoryError:  # a header length under _MAX_HEADER, still more than this machine has
        raise PrecisionToolError("not enough memory to read the dump's header", path) from None
    _check_sizes(path, message, data_start, file_size)
    inputs, offset = _tensors(path, "input", message.input, data_start)
    outputs, _ = _tensors(path, "output", message.output, offset)
    parsed = parse_dump_name(name or path.name)
    return DumpFile(
        path=path,
        op_type=parsed.op_type if parsed else "",
        op_name=message.op_name or (parsed.op_name if parsed else path.name),
        task_id=parsed.task_id if parsed else None,
        stream_id=parsed.stream_id if parsed else None,
        timestamp=parsed.timestamp if parsed else message.dump_time,
        version=message.version, inputs=inputs, outputs=outputs,
        attrs={a.name: a.value for a in message.attr})
