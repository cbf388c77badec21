"""Corpus cases: NPU dump files that are truncated, corrupt, odd or full of odd numbers.

Each case rewrites net/relu's dump (see :mod:`.base`). The usual checks: ``vc`` finishes with a
row whose CompareFailReason names the problem (and net/add is still compared), ``pt`` and ``dc``
on the file print one error line naming it, ``ni`` shows the op with the reason.
"""

from __future__ import annotations

import struct

import ml_dtypes
import numpy as np

from precision_tool.formats.dump_write import TensorSpec
from precision_tool.formats.proto.dumpdata import DumpData

from .base import (
    ERROR,
    FINE,
    RELU_FILE,
    ROW,
    SHAPE,
    TS,
    Case,
    Check,
    f32,
    input_value,
    relu_dump,
    relu_value,
    write_golden_value,
    write_relu,
)

DUMP = "{step}/" + RELU_FILE


def _broken(text: str, names: str = RELU_FILE, *, dc: bool = True) -> tuple[Check, ...]:
    """vc gives a row with ``text``; pt (and dc) on the file give one error line with it."""
    checks = [Check("vc", ROW, text), Check(f"pt {DUMP}", ERROR, text, names), Check("ni net/relu", FINE, text)]
    if dc:
        checks.append(Check(f"dc {DUMP}", ERROR, text, names))
    return tuple(checks)


def _cut(size_of_keep):
    """A build function writing net/relu's dump cut to ``size_of_keep(data)`` bytes."""

    def build(case_dir):
        data = relu_dump()
        write_relu(case_dir, data[: size_of_keep(data)])

    return build


def _header_length(data: bytes) -> int:
    return struct.unpack("<Q", data[:8])[0]


def _with_length(length: int):
    def build(case_dir):
        write_relu(case_dir, struct.pack("<Q", length) + relu_dump()[8:])

    return build


def _with_header(edit):
    """Rewrite the DumpData header of net/relu's dump with ``edit(message)``, keeping the data."""

    def build(case_dir):
        data = relu_dump()
        length = _header_length(data)
        message = DumpData()
        message.ParseFromString(data[8 : 8 + length])
        edit(message)
        header = message.SerializeToString()
        write_relu(case_dir, struct.pack("<Q", len(header)) + header + data[8 + length :])

    return build


def _set(field_path: str, value):
    def edit(message):
        kind, index, name = field_path.split(".")
        target = getattr(message, kind)[int(index)]
        if name == "shape":
            del target.shape.dim[:]
            target.shape.dim.extend(value)
        else:
            setattr(target, name, value)

    return edit


def _garbage_proto(case_dir):
    body = b"\x0f" * 40  # field 1 with wire type 7: no protobuf parser accepts it
    write_relu(case_dir, struct.pack("<Q", len(body)) + body + b"\0" * 48)


def _relu_with(inputs, outputs, golden=None):
    """net/relu's dump with the given tensors, and optionally its golden output replaced."""

    def build(case_dir):
        write_relu(case_dir, relu_dump(inputs, outputs))
        if golden is not None:
            write_golden_value(case_dir, "net/relu", golden)

    return build


def _nan_at(positions, value=np.nan, base=None):
    array = relu_value().copy() if base is None else base.copy()
    array.reshape(-1)[list(positions)] = value
    return array


def _typed(array, data_type):
    return TensorSpec(np.asarray(array), data_type)


_RELU = relu_value()
_BOOL = relu_value() > 0

CASES = [
    Case(
        "dump_truncated_in_length_field",
        "5 bytes: the 8-byte header length is cut",
        _cut(lambda d: 5),
        _broken("shorter than the 8-byte header length"),
    ),
    Case(
        "dump_truncated_in_header",
        "the file ends inside the DumpData protobuf",
        _cut(lambda d: 8 + _header_length(d) // 2),
        _broken("does not fit a file"),
    ),
    Case(
        "dump_truncated_in_input",
        "the file ends inside input 0",
        _cut(lambda d: 8 + _header_length(d) + 10),
        _broken("sizes do not add up"),
    ),
    Case(
        "dump_truncated_in_output",
        "the file ends inside output 0 (the last tensor)",
        _cut(lambda d: len(d) - 3),
        _broken("truncated"),
    ),
    Case("dump_header_length_zero", "header length 0", _with_length(0), _broken("header length 0")),
    Case(
        "dump_header_length_past_file",
        "header length larger than the file",
        _with_length(10_000),
        _broken("header length 10000 does not fit"),
    ),
    Case("dump_header_length_2_63", "header length 2**63", _with_length(2**63), _broken(f"header length {2**63}")),
    Case(
        "dump_garbage_protobuf",
        "the header bytes are not a protobuf message",
        _garbage_proto,
        _broken("not a valid DumpData protobuf"),
    ),
    Case(
        "dump_sizes_past_file",
        "the tensor sizes add up to more than the file",
        _with_header(_set("output.0.size", 4096)),
        _broken("sizes do not add up"),
    ),
    Case(
        "dump_sizes_short_of_file",
        "the tensor sizes add up to less than the file",
        _with_header(_set("output.0.size", 8)),
        _broken("trailing bytes"),
    ),
    Case(
        "dump_unknown_data_type",
        "output 0 has data_type 99",
        _with_header(_set("output.0.data_type", 99)),
        (
            Check("vc", ROW, "unknown data_type 99"),
            Check(f"pt {DUMP}", ERROR, "unknown data_type 99", RELU_FILE),
            Check(f"pt {DUMP}:input:0", FINE, RELU_FILE + ":input:0"),
            Check(f"dc {DUMP}", FINE, "unknown data_type 99"),
            Check("ni net/relu", FINE, "unknown data_type 99"),
        ),
    ),
    Case(
        "dump_unsupported_data_type",
        "output 0 is a STRING tensor (13)",
        _with_header(_set("output.0.data_type", 13)),
        (Check("vc", ROW, "unsupported data_type STRING"), Check("ni net/relu", FINE, "STRING")),
    ),
    Case(
        "dump_unknown_format_counts_match",
        "output 0 has format 77, same element count",
        _with_header(_set("output.0.format", 77)),
        (Check("vc", ROW, "unsupported format UNKNOWN(77), compared in its stored order"),),
    ),
    Case(
        "dump_unknown_format_counts_differ",
        "format 77 and an original shape of another size",
        _with_header(lambda m: (_set("output.0.format", 77)(m), m.output[0].original_shape.dim.extend([7, 7]))),
        (
            Check("vc", ROW, "unsupported format UNKNOWN(77)"),
            Check(f"pt {DUMP}", ERROR, "unsupported format UNKNOWN(77)", RELU_FILE),
            Check(f"pt {DUMP} --device", FINE, "UNKNOWN(77)"),
        ),
    ),
    Case(
        "dump_shape_product_disagrees_with_size",
        "shape [4,4] over the bytes of 6 floats",
        _with_header(_set("output.0.shape", [4, 4])),
        (
            Check("vc", ROW, "needs 64 bytes but the dump holds 24"),
            Check(f"pt {DUMP}", ERROR, "needs 64 bytes but the dump holds 24", RELU_FILE),
            Check(f"dc {DUMP}", FINE, "not decoded: " + RELU_FILE + " output:0"),
        ),
    ),
    Case(
        "dump_empty_tensors",
        "input and output with shape [0] and no bytes; golden empty too",
        _relu_with([f32(np.zeros((0,)))], [f32(np.zeros((0,)))], golden=np.zeros((0,), np.float32)),
        (Check("vc", ROW, "empty"), Check(f"pt {DUMP}", FINE, "elements"), Check(f"dc {DUMP}", FINE, "written")),
    ),
    Case(
        "dump_scalar",
        "a scalar (empty shape, 4 bytes) against a 0-d golden",
        _relu_with([f32(np.float32(2.0))], [f32(np.float32(2.0))], golden=np.float32(2.0)),
        (Check("vc", ROW, "scalar"), Check(f"pt {DUMP}", FINE, "2"), Check(f"dc {DUMP}", FINE, "written")),
    ),
    Case(
        "dump_one_element",
        "shape [1] on both sides",
        _relu_with([f32(np.ones(1))], [f32(np.ones(1) * 3)], golden=np.full(1, 3, np.float32)),
        (Check("vc", ROW, "scalar"), Check(f"pt {DUMP}", FINE, "3")),
    ),
    Case(
        "dump_nan_npu_side",
        "a NaN in the NPU output only",
        _relu_with(None, [f32(_nan_at([2]))]),
        (Check("vc", ROW, "The NPU tensor holds 1 NaN."), Check(f"pt {DUMP}", FINE, "NaN")),
    ),
    Case(
        "dump_inf_npu_side",
        "an Inf in the NPU output only",
        _relu_with(None, [f32(_nan_at([1], np.inf))]),
        (Check("vc", ROW, "The NPU tensor holds 1 Inf."),),
    ),
    Case(
        "dump_nan_golden_side",
        "a NaN in the golden tensor only",
        _relu_with(None, None, golden=_nan_at([0])),
        (Check("vc", ROW, "The golden tensor holds 1 NaN."),),
    ),
    Case(
        "dump_nan_both_same_position",
        "NaN at the same position on both sides",
        _relu_with(None, [f32(_nan_at([3]))], golden=_nan_at([3])),
        (Check("vc", ROW, "The NPU tensor holds 1 NaN. The golden tensor holds 1 NaN."),),
    ),
    Case(
        "dump_nan_both_different_positions",
        "NaN on both sides, at different positions",
        _relu_with(None, [f32(_nan_at([3]))], golden=_nan_at([4])),
        (
            Check("vc", ROW, "The NPU tensor holds 1 NaN. The golden tensor holds 1 NaN."),
            Check(f"cp {DUMP} {{golden}}/net_relu.0.{TS}.npy", FINE, "left 1, right 1"),
        ),
    ),
    Case(
        "dump_inf_both_sides",
        "+Inf on both sides at the same position",
        _relu_with(None, [f32(_nan_at([0], np.inf))], golden=_nan_at([0], np.inf)),
        (Check("vc", ROW, "The NPU tensor holds 1 Inf. The golden tensor holds 1 Inf."),),
    ),
    Case(
        "dump_all_zero_one_side",
        "the NPU output is all zero, the golden is not",
        _relu_with(None, [f32(np.zeros(SHAPE))]),
        (Check("vc", ROW, "zero"),),
    ),
    Case(
        "dump_all_zero_both_sides",
        "both sides all zero",
        _relu_with(None, [f32(np.zeros(SHAPE))], golden=np.zeros(SHAPE, np.float32)),
        (Check("vc", FINE, "5 tensors compared, 0 not compared"),),
    ),
    Case(
        "dump_bool",
        "bool tensors on both sides",
        _relu_with([_typed(_BOOL, "BOOL")], [_typed(_BOOL, "BOOL")], golden=_BOOL),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check(f"pt {DUMP}", FINE, "bool"),
            Check(f"dc {DUMP}", FINE, "written"),
        ),
    ),
    Case(
        "dump_int",
        "int32 on the NPU, int64 golden",
        _relu_with(
            [_typed(np.arange(6).reshape(SHAPE), "INT32")],
            [_typed(np.arange(6).reshape(SHAPE), "INT32")],
            golden=np.arange(6).reshape(SHAPE),
        ),
        (Check("vc", FINE, "5 tensors compared, 0 not compared"), Check(f"pt {DUMP}", FINE, "int32")),
    ),
    Case(
        "dump_bf16",
        "bfloat16 on the NPU",
        _relu_with(
            [_typed(input_value().astype(ml_dtypes.bfloat16), "BF16")],
            [_typed(_RELU.astype(ml_dtypes.bfloat16), "BF16")],
        ),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check(f"pt {DUMP}", FINE, "bfloat16"),
            Check(f"dc {DUMP}", FINE, "written"),
        ),
    ),
    Case(
        "dump_fp8",
        "float8_e4m3fn output, float8_e5m2 input",
        _relu_with(
            [_typed(input_value().astype(ml_dtypes.float8_e5m2), "FLOAT8_E5M2")],
            [_typed(_RELU.astype(ml_dtypes.float8_e4m3fn), "FLOAT8_E4M3FN")],
        ),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check(f"pt {DUMP}", FINE, "float8_e4m3fn"),
            Check(f"dc {DUMP}", FINE, "written"),
        ),
    ),
    Case(
        "dump_nano_magic",
        "a file starting with the nano format's magic 0x5A5A5A5A",
        lambda c: write_relu(c, struct.pack("<I", 0x5A5A5A5A) + relu_dump()[4:]),
        _broken("nano dump format"),
    ),
    Case(
        "dump_zero_bytes",
        "an empty file named like a dump",
        lambda c: write_relu(c, b""),
        _broken("DumpData dump: truncated: 0 bytes"),
    ),
    Case(
        "dump_shape_too_big",
        "output shape [0, 2**62]: no bytes, but no array can have it",
        _relu_with(None, [TensorSpec(np.zeros(0, np.float32), "FLOAT", shape=(0, 2**62))]),
        _broken("shape [0,4611686018427387904] of 4-byte elements is too big for any array", dc=False)
        + (Check(f"dc {DUMP}", FINE, "not decoded: " + RELU_FILE + " output:0"),),
    ),
    Case(
        "dump_shape_million_dims",
        "output shape of 10**6 dimensions of 1 (4 bytes of data)",
        _relu_with(None, [TensorSpec(np.ones(1, np.float32), "FLOAT", shape=(1,) * 10**6)]),
        _broken("shape has 1000000 dimensions", dc=False)
        + (Check(f"dc {DUMP}", FINE, "shape has 1000000 dimensions (numpy arrays have at most"),),
    ),
    Case(
        "dump_original_shape_too_many_dims",
        "output original_shape of 100 dimensions (6 elements)",
        _relu_with(None, [f32(_RELU, original_shape=(1,) * 98 + SHAPE)]),
        (
            Check("vc", ROW, "output:0: original shape has 100 dimensions (numpy arrays have at most"),
            Check(f"pt {DUMP}", ERROR, "original shape has 100 dimensions", RELU_FILE),
            Check(f"pt {DUMP} --device", FINE, "output:0"),
            Check("ni net/relu", FINE, "100 dimensions"),
        ),
    ),
]
