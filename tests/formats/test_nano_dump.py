"""Nano dumps: files built byte by byte from the layout (nano_dump.py's docstring), and the one
public nano dump (msprobe's sample, tests/data/README.md) checked against its raw bytes."""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool import PrecisionToolError, read_dump
from precision_tool.formats.dump_names import list_dump_files
from precision_tool.formats.proto.dump_enums import FORMAT_NAMES

REAL = Path(__file__).resolve().parents[1] / "data" / "nano" / "ConcatV2D.concatv2.0.0.550288648"
NAME = "ConcatV2D.concatv2.0.0.550288648"
MAGIC = 0x5A5A5A5A

# ---- a test-side writer of the layout, independent of the reader --------------------------


@dataclass
class Desc:
    """One descriptor and its data; ``data_type`` in GE's numbering (0 FLOAT, 1 FLOAT16...)."""

    data: bytes
    data_type: int = 1
    format: int = 2  # ND
    shape: tuple | None = None
    original_shape: tuple | None = None
    original: tuple | None = None  # (index, GE data type, format, name bytes)
    extra_l3: bytes = b""  # entries the reader does not know
    size: int | None = None  # what the descriptor claims (default: len(data))


def entry(kind: int, value: bytes) -> bytes:
    return struct.pack("<II", kind, len(value)) + value


def dims(shape) -> bytes:
    return struct.pack(f"<{len(shape)}Q", *shape)


def _level3(desc: Desc, output: bool) -> bytes:
    out = b"" if desc.shape is None else entry(0, dims(desc.shape))
    out += b"" if desc.original_shape is None else entry(1, dims(desc.original_shape))
    if output and desc.original is not None:
        out += entry(2, desc.original[3])
    return out + desc.extra_l3


def descriptor(desc: Desc, output: bool) -> bytes:
    level3 = _level3(desc, output)
    size = len(desc.data) if desc.size is None else desc.size
    if output:
        index, original_type, original_format, _ = desc.original or (0, 0, 0, b"")
        fixed = struct.pack(
            "<iiiiiiQQQI",
            desc.data_type,
            desc.format,
            3,
            index,
            original_type,
            original_format,
            0,
            0,
            size,
            len(level3),
        )
    else:
        fixed = struct.pack("<iiiQQQI", desc.data_type, desc.format, 3, 0, 0, size, len(level3))
    return fixed + level3


def desc_list(descs, output: bool) -> bytes:
    return struct.pack("<I", len(descs)) + b"".join(descriptor(d, output) for d in descs)


def header_bytes(inputs, outputs, version=0, before=b"", after=b"", lists=True) -> bytes:
    body = before
    if lists or inputs:
        body += entry(4, desc_list(inputs, False))
    if lists or outputs:
        body += entry(5, desc_list(outputs, True))
    return struct.pack("<II", MAGIC, version) + body + after


def nano_bytes(inputs=(), outputs=(), **header) -> bytes:
    head = header_bytes(list(inputs), list(outputs), **header)
    return struct.pack("<Q", len(head)) + head + b"".join(d.data for d in (*inputs, *outputs))


def write(tmp_path, data: bytes, name: str = NAME) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def f16(values) -> bytes:
    return np.asarray(values, np.float16).tobytes()


# ---- the real file: every number against its raw bytes -------------------------------------

# Offsets derived by hand from the layout: 8 (length) + 8 (magic, version), input list entry
# at 16 (type, length, count at 24), input 0's 40 fixed bytes at 28 and its 48-byte level-3
# list at 68, input 1 at 116 (list at 156), the output list entry at 204 (count at 212), the
# output's 52 fixed bytes at 216 and its 64-byte list at 268 (name at 324), the data at 332.
RAW_FIELDS = {  # offset: (struct format, value the bytes hold)
    0: ("<Q", 324),
    8: ("<I", MAGIC),
    12: ("<I", 0),
    16: ("<II", (4, 180)),
    24: ("<I", 2),
    28: ("<iii", (1, 1, 3)),
    56: ("<QI", (29304, 48)),
    76: ("<QQ", (1, 14652)),
    100: ("<QQ", (1, 14652)),
    144: ("<QI", (60, 48)),
    164: ("<QQ", (1, 30)),
    204: ("<II", (5, 120)),
    212: ("<I", 1),
    216: ("<iiiiii", (1, 1, 3, 0, 1, 1)),
    256: ("<QI", (29364, 64)),
    276: ("<QQ", (1, 14682)),
    316: ("<II", (2, 8)),
}


def test_the_real_file_raw_bytes_say_what_the_layout_says():
    raw = REAL.read_bytes()
    assert len(raw) == 59060 == 332 + 29304 + 60 + 29364
    for offset, (fmt, value) in RAW_FIELDS.items():
        got = struct.unpack_from(fmt, raw, offset)
        assert got == (value if isinstance(value, tuple) else (value,)), offset
    assert raw[324:332] == b"concatv2"


def test_the_real_file_reads_as_its_bytes_say():
    raw = REAL.read_bytes()
    dump = read_dump(REAL)
    assert (dump.op_type, dump.op_name, dump.task_id, dump.stream_id, dump.timestamp) == (
        "ConcatV2D",
        "concatv2",
        0,
        0,
        550288648,
    )
    assert dump.version == "0" and dump.attrs == {}
    expected = [
        ("input:0", 332, 29304, (1, 14652)),
        ("input:1", 29636, 60, (1, 30)),
        ("output:0", 29696, 29364, (1, 14682)),
    ]
    assert [(t.name, t.offset, t.size, t.shape) for t in dump.tensors] == expected
    for tensor, (_, offset, size, shape) in zip(dump.tensors, expected):
        assert (tensor.dtype_name, tensor.format, tensor.original_shape) == ("float16", "NHWC", shape)
        assert tensor.problem is None
        by_hand = np.frombuffer(raw, np.float16, size // 2, offset).reshape(shape)
        np.testing.assert_array_equal(tensor.device(), by_hand)
        np.testing.assert_array_equal(tensor.host(), by_hand)
    op = dump.outputs[0].original_op
    assert (op.name, op.output_index, op.data_type, op.format) == ("concatv2", 0, "FLOAT16", "NHWC")
    assert [t.original_op for t in dump.inputs] == [None, None]


def test_the_real_output_is_its_inputs_concatenated():
    dump = read_dump(REAL)
    joined = np.concatenate([t.device() for t in dump.inputs], axis=1)
    np.testing.assert_array_equal(dump.outputs[0].device(), joined)


def test_the_real_file_is_listed_in_its_step_directory(tmp_path):
    shutil.copy(REAL, tmp_path / NAME)
    listing = list_dump_files(tmp_path)
    assert [ref.path.name for ref in listing.files] == [NAME] and listing.skipped == []
    assert listing.latest("concatv2").name.timestamp == 550288648


def test_the_real_file_read_through_a_mapping_alias(tmp_path):
    shutil.copy(REAL, tmp_path / "1001")
    dump = read_dump(tmp_path / "1001", name=NAME)
    assert (dump.op_type, dump.op_name, dump.timestamp) == ("ConcatV2D", "concatv2", 550288648)


# ---- built files ---------------------------------------------------------------------------

# GE DataType value -> the numpy dtype its elements are (metadef docs/api/DataType.md)
GE_TYPES = [
    (0, np.float32),
    (1, np.float16),
    (2, np.int8),
    (3, np.int32),
    (4, np.uint8),
    (6, np.int16),
    (7, np.uint16),
    (8, np.uint32),
    (9, np.int64),
    (10, np.uint64),
    (11, np.float64),
    (12, np.bool_),
    (16, np.complex64),
    (17, np.complex128),
    (18, np.int8),
    (27, ml_dtypes.bfloat16),
    (35, ml_dtypes.float8_e5m2),
    (36, ml_dtypes.float8_e4m3fn),
]


@pytest.mark.parametrize("code, dtype", GE_TYPES)
def test_ge_data_types_become_their_numpy_types(tmp_path, code, dtype):
    values = (np.arange(6) % (2 if dtype == np.bool_ else 5)).astype(dtype).reshape(2, 3)
    path = write(tmp_path, nano_bytes(outputs=[Desc(values.tobytes(), code, shape=(2, 3))]))
    tensor = read_dump(path).outputs[0]
    assert tensor.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(tensor.device(), values)


def test_int4_is_packed_two_to_a_byte(tmp_path):
    path = write(tmp_path, nano_bytes(outputs=[Desc(bytes([0xF8, 0x70, 0x03]), 29, shape=(5,))]))
    np.testing.assert_array_equal(read_dump(path).outputs[0].device(), [-8, -1, 0, 7, 3])


@pytest.mark.parametrize(
    "code, label",
    [(5, "UNKNOWN(nano 5)"), (42, "HIFLOAT4 (nano 42)"), (-1, "UNKNOWN(nano -1)"), (1000, "UNKNOWN(nano 1000)")],
)
def test_a_type_with_no_output_data_type_is_that_tensors_problem(tmp_path, code, label):
    path = write(
        tmp_path, nano_bytes(inputs=[Desc(f16([1, 2]), shape=(2,))], outputs=[Desc(b"\0\0", code, shape=(2,))])
    )
    dump = read_dump(path)
    assert dump.outputs[0].problem == f"output:0: unsupported data_type {label}"
    assert dump.outputs[0].dtype_name == label
    np.testing.assert_array_equal(dump.inputs[0].device(), [1, 2])
    with pytest.raises(PrecisionToolError, match="unsupported data_type"):
        dump.outputs[0].device()


def test_original_op_drives_the_host_layout(tmp_path):
    nchw = np.arange(2 * 3 * 2 * 2, dtype=np.float16).reshape(2, 3, 2, 2)
    padded = np.zeros((2, 16, 2, 2), np.float16)
    padded[:, :3] = nchw
    device = padded.reshape(2, 1, 16, 2, 2).transpose(0, 1, 3, 4, 2)
    out = Desc(
        device.tobytes(), 1, 3, shape=device.shape, original_shape=(2, 2, 2, 3), original=(2, 1, 1, b"net/conv/Relu")
    )  # NC1HWC0 from host NHWC
    tensor = read_dump(write(tmp_path, nano_bytes(outputs=[out]))).outputs[0]
    assert tensor.format == "NC1HWC0" and tensor.original_shape == (2, 2, 2, 3)
    op = tensor.original_op
    assert (op.name, op.output_index, op.data_type, op.format) == ("net/conv/Relu", 2, "FLOAT16", "NHWC")
    np.testing.assert_array_equal(tensor.host(), nchw.transpose(0, 2, 3, 1))


def test_a_name_with_its_terminator_and_unknown_entries_are_skipped(tmp_path):
    out = Desc(f16([1]), shape=(1,), original=(0, 1, 2, b"x\0"), extra_l3=entry(9, b"abc"))
    data = nano_bytes(outputs=[out], before=entry(0, b"op"), after=entry(8, b"\1" * 40))
    tensor = read_dump(write(tmp_path, data)).outputs[0]
    assert tensor.original_op.name == "x" and tensor.device().tolist() == [1.0]


def test_missing_lists_and_shapes(tmp_path):
    data = nano_bytes(outputs=[Desc(f16([1, 2, 3]))], lists=False)  # no input list, no shape
    dump = read_dump(write(tmp_path, data))
    assert dump.inputs == [] and dump.outputs[0].shape == () and dump.outputs[0].original_shape == ()
    np.testing.assert_array_equal(dump.outputs[0].device(), [1, 2, 3])  # a flat tensor of what fits
    assert read_dump(write(tmp_path, nano_bytes(lists=False), "A.b.1.2.3")).tensors == []


def test_tensor_data_is_memory_mapped_not_read(tmp_path):
    """A 1 GiB sparse output: reading the 4-element input touches nothing else."""
    small = np.arange(4, dtype=np.float32)
    big = Desc(b"", 0, shape=(256, 1024, 1024), size=4 << 28)
    data = nano_bytes(inputs=[Desc(small.tobytes(), 0, shape=(4,))], outputs=[big])
    path = write(tmp_path, data)
    with open(path, "r+b") as handle:
        handle.truncate(len(data) + big.size)
    dump = read_dump(path)
    assert isinstance(dump.inputs[0].device(), np.memmap)
    np.testing.assert_array_equal(dump.inputs[0].device(), small)
    assert dump.outputs[0].device().shape == (256, 1024, 1024)


@pytest.mark.parametrize(
    "out, problem",
    [
        (Desc(b"", shape=(1,) * 100), "output:0: shape has 100 dimensions"),
        (Desc(b"", shape=(0, 2**62)), "output:0: shape [0,4611686018427387904] of 2-byte elements is too big"),
        (Desc(b"", original_shape=(1,) * 70), "output:0: original shape has 70 dimensions"),
        (Desc(f16([1, 2]), shape=(3,)), "output:0: shape [3] of float16 needs 6 bytes but the dump holds 4"),
    ],
)
def test_shapes_no_array_can_have_are_that_tensors_problem(tmp_path, out, problem):
    tensor = read_dump(write(tmp_path, nano_bytes(outputs=[out]))).outputs[0]
    assert (tensor.host_problem or "").startswith(problem), tensor.host_problem


# ---- corrupt headers: one line naming "nano dump" and the file -----------------------------


def _good() -> bytes:
    return nano_bytes(
        inputs=[Desc(f16([1, 2]), shape=(2,))], outputs=[Desc(f16([3]), shape=(1,), original=(0, 1, 2, b"y"))]
    )


def _length_changed(data: bytes, at: int, value: int) -> bytes:
    return data[:at] + struct.pack("<I", value) + data[at + 4 :]


GOOD = _good()
HEADER_LENGTH = struct.unpack_from("<Q", GOOD)[0]

BAD = {
    "header length past the end": (struct.pack("<Q", 10**6) + GOOD[8:], "header length 1000000 does not fit"),
    "header length 2**63": (struct.pack("<Q", 2**63) + GOOD[8:], "header length 9223372036854775808"),
    "header length 4": (struct.pack("<Q", 4) + GOOD[8:], "header length 4 leaves no room for its magic"),
    "cut in the header": (GOOD[:40], "header length"),
    "cut in the data": (GOOD[:-1], "sizes do not add up: header and tensor sizes give"),
    "trailing bytes": (GOOD + b"\0", "(trailing bytes)"),
    "entry past the header": (_length_changed(GOOD, 20, 2**32 - 1), "entry of type 4 claims 4294967295 bytes"),
    "count of 2**32-1": (_length_changed(GOOD, 24, 2**32 - 1), "input list claims 4294967295 descriptors"),
    "level-3 list past its list": (_length_changed(GOOD, 64, 10**6), "input 0: its shape list claims 1000000"),
    "shape of 12 bytes": (_length_changed(GOOD, 72, 12), "input 0: entry of type 0 claims 12 bytes"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_corrupt_files_are_one_line_naming_nano(tmp_path, case):
    data, fragment = BAD[case]
    path = write(tmp_path, data)
    with pytest.raises(PrecisionToolError) as info:
        read_dump(path)
    assert info.value.path == str(path) and info.value.problem.startswith("nano dump: ")
    assert fragment in info.value.problem and "\n" not in str(info.value)


def _header_variant(**header) -> bytes:
    return nano_bytes(inputs=[Desc(f16([1]), shape=(1,))], **header)


@pytest.mark.parametrize(
    "data, fragment",
    [
        (_header_variant(after=entry(4, struct.pack("<I", 0))), "header has two lists of inputs"),
        (_header_variant(after=b"\1\2\3"), "header: 3 bytes left, too few for an entry's type and length"),
        (nano_bytes(before=entry(4, b"\1\0"), lists=False), "input list of 2 bytes has no room for its count"),
        (
            nano_bytes(before=entry(4, desc_list([Desc(b"")], False) + b"xx"), lists=False),
            "input list has 2 bytes after its 1 descriptors",
        ),
        (
            nano_bytes(outputs=[Desc(b"", extra_l3=entry(0, b"\0" * 12))]),
            "output 0: a shape of 12 bytes is not a whole number of 8-byte dimensions",
        ),
        (nano_bytes(outputs=[Desc(b"", shape=(0,), extra_l3=entry(0, dims((0,))))]), "output 0: two shapes"),
        (nano_bytes(outputs=[Desc(b"", original=(0, 1, 2, b"\xff\xfe"))]), "output 0: its original name is not UTF-8"),
    ],
)
def test_inconsistent_lists_are_one_line_naming_nano(tmp_path, data, fragment):
    path = write(tmp_path, data)
    with pytest.raises(PrecisionToolError) as info:
        read_dump(path)
    assert info.value.problem.startswith("nano dump: ") and fragment in info.value.problem
    assert info.value.path == str(path)


def test_a_bad_nano_dump_in_a_directory_does_not_stop_the_others(tmp_path):
    write(tmp_path, GOOD[:-1], "Relu.bad.1.0.550288001")
    shutil.copy(REAL, tmp_path / NAME)
    results = {}
    for ref in list_dump_files(tmp_path).files:
        try:
            results[ref.path.name] = len(read_dump(ref.path).tensors)
        except PrecisionToolError as exc:
            results[ref.path.name] = exc.problem.split(":")[0]
    assert results == {"Relu.bad.1.0.550288001": "nano dump", NAME: 3}


# ---- properties ----------------------------------------------------------------------------

_BYTE_TYPES = dict(GE_TYPES[:12])  # the plain numeric and bool types
_SHAPES = st.lists(st.integers(0, 4), max_size=4).map(tuple)


@st.composite
def _descs(draw, output: bool):
    code = draw(st.sampled_from(sorted(_BYTE_TYPES)))
    shape = draw(_SHAPES)
    count = int(np.prod(shape)) if shape else draw(st.integers(0, 5))
    data = draw(
        st.binary(
            min_size=count * np.dtype(_BYTE_TYPES[code]).itemsize, max_size=count * np.dtype(_BYTE_TYPES[code]).itemsize
        )
    )
    original = None
    if output and draw(st.booleans()):
        name = draw(
            st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=12)
        ).encode()
        original = (
            draw(st.integers(0, 9)),
            draw(st.sampled_from(sorted(_BYTE_TYPES))),
            draw(st.sampled_from(sorted(FORMAT_NAMES))),
            name,
        )
    return Desc(
        data, code, draw(st.sampled_from(sorted(FORMAT_NAMES))), shape or None, draw(st.none() | _SHAPES), original
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    inputs=st.lists(_descs(False), max_size=3),
    outputs=st.lists(_descs(True), max_size=3),
    version=st.integers(0, 2**32 - 1),
)
def test_random_descriptor_sets_round_trip(tmp_path, inputs, outputs, version):
    dump = read_dump(write(tmp_path, nano_bytes(inputs, outputs, version=version)))
    assert dump.version == str(version)
    assert [t.name for t in dump.tensors] == [f"input:{i}" for i in range(len(inputs))] + [
        f"output:{i}" for i in range(len(outputs))
    ]
    offset = 8 + struct.unpack_from("<Q", nano_bytes(inputs, outputs))[0]
    for tensor, desc in zip(dump.tensors, (*inputs, *outputs)):
        assert tensor.dtype == np.dtype(_BYTE_TYPES[desc.data_type])
        assert (tensor.format, tensor.shape, tensor.original_shape) == (
            FORMAT_NAMES[desc.format],
            desc.shape or (),
            desc.original_shape or (),
        )
        assert (tensor.offset, tensor.size) == (offset, len(desc.data))
        assert tensor.device().tobytes() == desc.data
        offset += len(desc.data)
        if desc.original is not None:
            op = tensor.original_op
            assert (op.name.encode(), op.output_index, op.format) == (
                desc.original[3],
                desc.original[0],
                FORMAT_NAMES[desc.original[2]],
            )
        else:
            assert tensor.original_op is None


def _read_all(path: Path) -> None:
    """Read the header and every tensor: only PrecisionToolError may come out."""
    dump = read_dump(path)
    for tensor in dump.tensors:
        if tensor.host_problem is None:
            tensor.device()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(12, len(GOOD) - 1))
def test_every_truncation_is_one_line_naming_nano(tmp_path, at):
    path = write(tmp_path, GOOD[:at])
    with pytest.raises(PrecisionToolError) as info:
        read_dump(path)
    assert info.value.problem.startswith("nano dump: ") and "\n" not in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(at=st.integers(12, 8 + HEADER_LENGTH - 1), value=st.integers(0, 255))
def test_a_corrupt_header_byte_reads_or_is_one_line_naming_nano(tmp_path, at, value):
    path = write(tmp_path, GOOD[:at] + bytes([value]) + GOOD[at + 1 :])
    try:
        _read_all(path)
    except PrecisionToolError as exc:
        assert "\n" not in str(exc)
        assert exc.problem.startswith(("nano dump: ", "input:", "output:")), exc.problem
