"""What an NPU dump file holds (:mod:`.dump` reads it): :class:`DumpFile`, its header, and
:class:`DumpTensor`, one input or output whose bytes stay on disk until asked for.

What a header claims is checked before anything is allocated for it (:mod:`.shapes`): a shape
of more dimensions than numpy allows, or too big for any array (``[0, 2**62]``), is that
tensor's :attr:`DumpTensor.problem` (:attr:`~DumpTensor.host_problem` for the original
shape), as is a file that became shorter than its header says after the header was read
(truncated while being compared): :meth:`DumpTensor.device` maps the file again, and says so.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, field, fields
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import PrecisionToolError
from . import layouts
from .dtypes import DumpDType, data_type_name, display_name, dump_dtype, unpack_bits
from .files import open_regular
from .shapes import shape_problem


@dataclass(frozen=True)
class OriginalOp:
    """The TF tensor a dumped output stands for, as the dump header records it."""

    name: str
    output_index: int
    data_type: str
    format: str


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
    foreign_type: str | None = None  # a nano data type OutputDataType lacks ("HIFLOAT4 (nano 42)")
    # dtype, dtype_name, problem and host_problem are cached: they depend on the fields alone,
    # and a comparison asks for them several times a tensor

    @classmethod
    def of_header(cls, **values) -> DumpTensor:
        """``DumpTensor(**values)``, made without the frozen dataclass's ``__init__``, which
        sets each field through ``object.__setattr__`` (1.9 against 0.3 us): a run makes one
        for every tensor of every dump file its workers read, and of every header read whole."""
        tensor = object.__new__(cls)
        tensor.__dict__.update(_TENSOR_DEFAULTS, **values)
        return tensor

    @property
    def name(self) -> str:
        """``{kind}:{index}``, as in a TensorIndex."""
        return f"{self.kind}:{self.index}"

    @cached_property
    def dtype(self) -> np.dtype:
        """The numpy dtype of the elements (after unpacking sub-byte types)."""
        return self._dump_dtype().dtype

    @cached_property
    def dtype_name(self) -> str:
        """How the data type is shown: ``float16``, ``bfloat16``, or the enum name if unsupported."""
        try:
            return display_name(self._dump_dtype())
        except PrecisionToolError:
            return self.foreign_type or data_type_name(self.data_type)

    @cached_property
    def problem(self) -> str | None:
        """Why this tensor cannot be read (in its device layout), or None when it can; the text
        starts with the tensor's name (``output:0: ...``)."""
        try:
            self._element_count()
        except PrecisionToolError as exc:
            return exc.problem
        return None

    @cached_property
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
        if self.foreign_type:
            raise PrecisionToolError(f"{self.name}: unsupported data_type {self.foreign_type}")
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
                f"{dtype.nbytes(count)} bytes but the dump holds {self.size}"
            )
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
                    "read?",
                    self.path,
                ) from None

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
            return layouts.to_host(
                self.device(),
                self.format,
                self.original_shape,
                self.origin_format(origin_format),
                groups=max(self.sub_format, 1),
            )
        except PrecisionToolError as exc:
            raise PrecisionToolError(f"{self.name}: {exc.problem}", self.path) from None


# what of_header gives a field its values leave out (a field without a default must be given)
_TENSOR_DEFAULTS = {f.name: f.default for f in fields(DumpTensor) if f.default is not MISSING}


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


__all__ = ["DumpFile", "DumpTensor", "OriginalOp"]
