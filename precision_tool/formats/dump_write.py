"""Write NPU binary dump files, for tests, corpora and the sample network."""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dtypes import dump_dtype, pack_bits
from .proto.dump_enums import DATA_TYPE_VALUES, FORMAT_VALUES
from .proto.dumpdata import DumpData


@dataclass(frozen=True)
class TensorSpec:
    """One tensor to write: ``array`` is already in the device layout and shape."""

    array: np.ndarray
    data_type: str  # OutputDataType name, e.g. "FLOAT16"
    format: str = "ND"  # device format name
    original_shape: Sequence[int] | None = None
    original_op: tuple[str, int, str] | None = None  # (TF name, output index, origin format)
    sub_format: int = 0
    shape: Sequence[int] | None = None  # override the recorded device shape (corrupt-data tests)


def tensor_bytes(spec: TensorSpec) -> bytes:
    """The raw bytes a dump stores for ``spec.array``."""
    dtype = dump_dtype(DATA_TYPE_VALUES[spec.data_type])
    array = np.asarray(spec.array)
    if dtype.packed:
        return pack_bits(array.astype(dtype.dtype), dtype)
    return np.ascontiguousarray(array, dtype=dtype.dtype).tobytes()


def _fill(proto, spec: TensorSpec, payload: bytes) -> None:
    proto.data_type = DATA_TYPE_VALUES[spec.data_type]
    proto.format = FORMAT_VALUES[spec.format]
    proto.shape.dim.extend(int(d) for d in (spec.array.shape if spec.shape is None else spec.shape))
    if spec.original_shape is not None:
        proto.original_shape.dim.extend(int(d) for d in spec.original_shape)
    proto.size = len(payload)
    proto.sub_format = spec.sub_format


def build_dump(
    op_name: str, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec], dump_time: int = 0, version: str = "2.0"
) -> bytes:
    """The complete bytes of a dump file: header length, DumpData header, inputs, outputs."""
    message = DumpData(version=version, dump_time=dump_time, op_name=op_name)
    payloads = []
    for spec in inputs:
        payloads.append(tensor_bytes(spec))
        _fill(message.input.add(), spec, payloads[-1])
    for spec in outputs:
        payload = tensor_bytes(spec)
        proto = message.output.add()
        _fill(proto, spec, payload)
        if spec.original_op is not None:
            name, index, origin_format = spec.original_op
            proto.original_op.name = name
            proto.original_op.output_index = index
            proto.original_op.format = FORMAT_VALUES[origin_format]
        payloads.append(payload)
    header = message.SerializeToString()
    return struct.pack("<Q", len(header)) + header + b"".join(payloads)


def write_dump(
    path: str | os.PathLike,
    op_name: str,
    inputs: Sequence[TensorSpec],
    outputs: Sequence[TensorSpec],
    dump_time: int = 0,
) -> Path:
    """Write one dump file at ``path`` (its directory is created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(build_dump(op_name, inputs, outputs, dump_time))
    return path
