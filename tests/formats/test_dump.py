"""The NPU dump reader: header, integrity, every dtype, lazy tensors, and each corrupt input."""

from __future__ import annotations

import struct
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool import PrecisionToolError, read_dump
from precision_tool.formats.dump import dump_from_bytes, dump_tensors_from_bytes, tensor_counts
from precision_tool.formats.dump_write import TensorSpec, build_dump, write_dump
from precision_tool.formats.proto.dumpdata import DumpData

NAME = "Conv2D.model_conv1_Conv2D.12.3.1718170000000074"
DATA = Path(__file__).resolve().parents[1] / "data"


def _write(tmp_path, inputs, outputs, name=NAME, op_name="model/conv1/Conv2D"):
    return write_dump(tmp_path / name, op_name, inputs, outputs, dump_time=1718170000000074)


def test_header_fields_and_name_parts(tmp_path):
    x = np.arange(24, dtype=np.float16).reshape(2, 3, 4)
    dump = read_dump(_write(tmp_path, [TensorSpec(x, "FLOAT16")], [TensorSpec(x * 2, "FLOAT16")]))
    assert (dump.op_type, dump.op_name, dump.task_id, dump.stream_id) == ("Conv2D", "model/conv1/Conv2D", 12, 3)
    assert dump.timestamp == 1718170000000074
    assert [t.name for t in dump.tensors] == ["input:0", "output:0"]
    np.testing.assert_array_equal(dump.inputs[0].device(), x)
    np.testing.assert_array_equal(dump.outputs[0].device(), x * 2)


def test_inputs_come_before_outputs_in_the_data_section(tmp_path):
    a, b, c = (np.full(4, v, np.float32) for v in (1, 2, 3))
    dump = read_dump(_write(tmp_path, [TensorSpec(a, "FLOAT"), TensorSpec(b, "FLOAT")], [TensorSpec(c, "FLOAT")]))
    assert [t.offset for t in dump.tensors] == sorted(t.offset for t in dump.tensors)
    assert [float(t.device()[0]) for t in dump.tensors] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    "data_type, dtype",
    [
        ("FLOAT", np.float32),
        ("FLOAT16", np.float16),
        ("DOUBLE", np.float64),
        ("BF16", ml_dtypes.bfloat16),
        ("INT8", np.int8),
        ("UINT8", np.uint8),
        ("INT16", np.int16),
        ("UINT16", np.uint16),
        ("INT32", np.int32),
        ("UINT32", np.uint32),
        ("INT64", np.int64),
        ("UINT64", np.uint64),
        ("BOOL", np.bool_),
        ("COMPLEX64", np.complex64),
        ("FLOAT8_E5M2", ml_dtypes.float8_e5m2),
        ("FLOAT8_E4M3FN", ml_dtypes.float8_e4m3fn),
    ],
)
def test_every_byte_sized_dtype_round_trips(tmp_path, data_type, dtype):
    values = (np.arange(-6, 6) % (2 if dtype == np.bool_ else 7)).astype(dtype).reshape(3, 4)
    tensor = read_dump(_write(tmp_path, [], [TensorSpec(values, data_type)])).outputs[0]
    assert tensor.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(tensor.device(), values)


def test_int4_is_unpacked_low_nibble_first_and_sign_extended(tmp_path):
    values = np.array([-8, -1, 0, 7, 3], np.int8)
    path = _write(tmp_path, [], [TensorSpec(values, "INT4")])
    tensor = read_dump(path).outputs[0]
    assert tensor.size == 3
    assert path.read_bytes()[-3:] == bytes([0xF8, 0x70, 0x03])
    np.testing.assert_array_equal(tensor.device(), values)


def test_bf16_reads_like_uint16_shifted_into_float32(tmp_path):
    values = np.array([1.5, -2.25, 3e38, 1e-30], ml_dtypes.bfloat16)
    tensor = read_dump(_write(tmp_path, [], [TensorSpec(values, "BF16")])).outputs[0]
    as_float32 = (values.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    np.testing.assert_array_equal(tensor.device().astype(np.float32), as_float32)
    assert tensor.dtype_name == "bfloat16"


def test_empty_shape_with_data_is_a_flat_tensor(tmp_path):
    values = np.arange(5, dtype=np.float32)
    tensor = read_dump(_write(tmp_path, [], [TensorSpec(values, "FLOAT", shape=[])])).outputs[0]
    assert tensor.shape == ()
    np.testing.assert_array_equal(tensor.device(), values)


def test_empty_tensor_reads_as_empty_array(tmp_path):
    tensor = read_dump(_write(tmp_path, [], [TensorSpec(np.zeros((0, 3), np.float16), "FLOAT16")])).outputs[0]
    assert tensor.device().shape == (0, 3)


def test_tensor_data_is_memory_mapped_not_read(tmp_path):
    """A 1 GiB sparse output: reading the 4-element input must not touch the rest."""
    small = np.arange(4, dtype=np.float32)
    big_shape = (256, 1024, 1024)
    data = build_dump(
        "op", [TensorSpec(small, "FLOAT")], [TensorSpec(np.zeros(1, np.float32), "FLOAT", shape=big_shape)]
    )
    header_len = struct.unpack("<Q", data[:8])[0]
    message = DumpData()
    message.ParseFromString(data[8 : 8 + header_len])
    message.output[0].size = 4 * 256 * 1024 * 1024
    header = message.SerializeToString()
    path = tmp_path / "Big.op.1.0.1718170000000000"
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(header)) + header + small.tobytes())
        handle.truncate(8 + len(header) + 16 + message.output[0].size)
    dump = read_dump(path)
    arr = dump.inputs[0].device()
    assert isinstance(arr, np.memmap)
    np.testing.assert_array_equal(arr, small)
    big = dump.outputs[0].device()
    assert isinstance(big, np.memmap) and big.shape == big_shape


def test_original_op_and_shapes_are_kept(tmp_path):
    x = np.zeros((2, 1, 4, 4, 16), np.float16)
    spec = TensorSpec(x, "FLOAT16", "NC1HWC0", original_shape=[2, 4, 4, 3], original_op=("model/conv1/Relu", 0, "NHWC"))
    tensor = read_dump(_write(tmp_path, [], [spec])).outputs[0]
    assert tensor.format == "NC1HWC0" and tensor.shape == (2, 1, 4, 4, 16)
    assert tensor.original_shape == (2, 4, 4, 3)
    assert (tensor.original_op.name, tensor.original_op.output_index, tensor.original_op.format) == (
        "model/conv1/Relu",
        0,
        "NHWC",
    )


def test_host_converts_nc1hwc0_to_the_origin_layout(tmp_path):
    nchw = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float16)
    padded = np.zeros((2, 16, 4, 5), np.float16)
    padded[:, :3] = nchw
    device = padded.reshape(2, 1, 16, 4, 5).transpose(0, 1, 3, 4, 2)
    spec = TensorSpec(device, "FLOAT16", "NC1HWC0", original_shape=[2, 4, 5, 3], original_op=("t", 0, "NHWC"))
    tensor = read_dump(_write(tmp_path, [], [spec])).outputs[0]
    np.testing.assert_array_equal(tensor.host(), nchw.transpose(0, 2, 3, 1))


# ---- corrupt input: one PrecisionToolError naming the file and the problem ----


def _good_bytes():
    x = np.arange(8, dtype=np.float32)
    return build_dump("op", [TensorSpec(x, "FLOAT")], [TensorSpec(x, "FLOAT")])


def _expect_error(tmp_path, data: bytes, fragment: str):
    path = tmp_path / "Add.op.1.0.1718170000000000"
    path.write_bytes(data)
    with pytest.raises(PrecisionToolError) as info:
        read_dump(path)
    assert str(path) in str(info.value)
    assert info.value.problem.startswith("DumpData dump: ")  # the form it was read as
    assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(PrecisionToolError) as counted:  # the pairing's read: the same one line
        tensor_counts(path)
    assert str(counted.value) == str(info.value)


def test_truncated_in_the_length_field(tmp_path):
    _expect_error(tmp_path, _good_bytes()[:5], "truncated")


def test_zero_byte_file(tmp_path):
    _expect_error(tmp_path, b"", "truncated")


def test_header_length_past_the_end(tmp_path):
    data = _good_bytes()
    _expect_error(tmp_path, struct.pack("<Q", len(data) * 10) + data[8:], "header length")


def test_header_length_two_to_the_63(tmp_path):
    _expect_error(tmp_path, struct.pack("<Q", 2**63) + _good_bytes()[8:], "header length")


def test_header_length_zero(tmp_path):
    _expect_error(tmp_path, struct.pack("<Q", 0) + _good_bytes()[8:], "header length")


def test_garbage_protobuf(tmp_path):
    _expect_error(tmp_path, struct.pack("<Q", 16) + b"\xff" * 16 + b"\x00" * 8, "not a valid DumpData")


def test_truncated_in_a_tensor(tmp_path):
    _expect_error(tmp_path, _good_bytes()[:-5], "sizes do not add up")


def test_trailing_bytes(tmp_path):
    _expect_error(tmp_path, _good_bytes() + b"\0\0", "sizes do not add up")


def test_nano_magic_where_the_header_length_belongs(tmp_path):
    # a nano dump has its magic at byte 8 (test_nano_dump.py); at byte 0 it is neither form
    _expect_error(
        tmp_path, struct.pack("<I", 0x5A5A5A5A) + b"\0" * 60, "the nano dump format's magic 0x5A5A5A5A at byte 0"
    )


def test_non_utf8_op_name(tmp_path):
    x = np.arange(2, dtype=np.float32)
    data = build_dump("AAAA", [], [TensorSpec(x, "FLOAT")]).replace(b"AAAA", b"\xff\xfe\xfd\xfc")
    _expect_error(tmp_path, data, "not a valid DumpData")


def test_directory_instead_of_file(tmp_path):
    path = tmp_path / "Add.op.1.0.1718170000000000"
    path.mkdir()
    with pytest.raises(PrecisionToolError, match="directory"):
        read_dump(path)


def _with_output_field(tmp_path, **fields):
    data = _good_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    message = DumpData()
    message.ParseFromString(data[8 : 8 + length])
    for key, value in fields.items():
        if key == "shape":
            del message.output[0].shape.dim[:]
            message.output[0].shape.dim.extend(value)
        else:
            setattr(message.output[0], key, value)
    header = message.SerializeToString()
    path = tmp_path / "Add.op.1.0.1718170000000000"
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + length :])
    return read_dump(path)


def test_unknown_data_type_is_a_per_tensor_error(tmp_path):
    dump = _with_output_field(tmp_path, data_type=99)
    assert dump.outputs[0].problem == "output:0: unknown data_type 99"  # every problem names its tensor
    np.testing.assert_array_equal(dump.inputs[0].device(), np.arange(8, dtype=np.float32))
    with pytest.raises(PrecisionToolError, match="unknown data_type 99"):
        dump.outputs[0].device()


def test_unrepresentable_data_type_is_named(tmp_path):
    dump = _with_output_field(tmp_path, data_type=13)  # STRING
    assert "unsupported data_type STRING" in dump.outputs[0].problem


def test_unknown_format_value_is_kept_and_named(tmp_path):
    dump = _with_output_field(tmp_path, format=200)
    assert dump.outputs[0].format == "UNKNOWN(200)"
    np.testing.assert_array_equal(dump.outputs[0].device(), np.arange(8, dtype=np.float32))


def test_shape_that_disagrees_with_size(tmp_path):
    dump = _with_output_field(tmp_path, shape=[3, 3])
    assert "needs 36 bytes but the dump holds 32" in dump.outputs[0].problem
    with pytest.raises(PrecisionToolError):
        dump.outputs[0].device()


def test_unknown_format_host_conversion_fails_when_counts_disagree(tmp_path):
    data = _good_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    message = DumpData()
    message.ParseFromString(data[8 : 8 + length])
    message.output[0].format = 200
    message.output[0].original_shape.dim.extend([3, 3])
    header = message.SerializeToString()
    path = tmp_path / "Add.op.1.0.1718170000000000"
    path.write_bytes(struct.pack("<Q", len(header)) + header + data[8 + length :])
    with pytest.raises(PrecisionToolError) as info:
        read_dump(path).outputs[0].host()
    assert "unsupported format UNKNOWN(200)" in str(info.value) and str(path) in str(info.value)


# ---- a dump read whole by its caller: the same DumpFile, the same one-line errors ----

_REAL_DUMPS = sorted(
    p for p in (DATA / "fixtures").rglob("*") if p.is_file() and p.parent.name == "0" and "." in p.name
) + [DATA / "nano" / "ConcatV2D.concatv2.0.0.550288648"]


def test_the_real_dumps_read_from_their_bytes_are_what_read_dump_reads():
    assert len(_REAL_DUMPS) >= 14  # the fixture's GE dumps and a nano dump
    for path in _REAL_DUMPS:
        whole = read_dump(path)
        assert dump_from_bytes(path, path.read_bytes()) == whole, path.name
        assert dump_tensors_from_bytes(path, path.read_bytes()) == (whole.inputs, whole.outputs), path.name


def _outcome(read):
    try:
        return read()
    except PrecisionToolError as exc:
        return ("error", str(exc))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cut=st.integers(min_value=0, max_value=200),
    flips=st.lists(st.tuples(st.integers(min_value=0, max_value=199), st.integers(1, 255)), max_size=3),
    extra=st.binary(max_size=4),
)
def test_damaged_bytes_read_whole_fail_or_read_as_from_the_file(tmp_path, cut, flips, extra):
    data = bytearray(_good_bytes())
    for at, mask in flips:
        data[at % len(data)] ^= mask
    data = bytes(data[: len(data) - cut % len(data)]) + extra
    path = tmp_path / "Add.op.1.0.1718170000000000"
    path.write_bytes(data)
    assert _outcome(lambda: dump_from_bytes(path, data)) == _outcome(lambda: read_dump(path))
    whole = _outcome(lambda: read_dump(path))  # the pairing's count fails as the reader does
    tensors = _outcome(lambda: dump_tensors_from_bytes(path, data))  # and the engine's index too
    assert tensors == (whole if isinstance(whole, tuple) else (whole.inputs, whole.outputs))
    counted = _outcome(lambda: tensor_counts(path))
    assert counted == (whole if isinstance(whole, tuple) else (len(whole.inputs), len(whole.outputs)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shapes=st.lists(st.lists(st.integers(0, 3), max_size=3), max_size=6),
    inputs=st.integers(0, 6),
)
def test_tensor_counts_are_the_tensors_written(tmp_path, shapes, inputs):
    specs = [TensorSpec(np.ones(shape, np.float16), "FLOAT16") for shape in shapes]
    cut = min(inputs, len(specs))
    path = write_dump(tmp_path / NAME, "op", specs[:cut], specs[cut:], dump_time=1)
    assert tensor_counts(path) == (cut, len(specs) - cut)


def test_tensor_counts_of_every_real_dump_are_its_tensors_by_kind():
    for path in _REAL_DUMPS:
        dump = read_dump(path)
        kinds = [t.kind for t in dump.tensors]
        assert tensor_counts(path) == (kinds.count("input"), kinds.count("output")), path.name


def test_a_tensor_made_from_a_header_equals_one_made_by_its_init(tmp_path):
    from dataclasses import fields

    from precision_tool.formats.dump_tensor import DumpTensor

    for path in _REAL_DUMPS:
        for tensor in read_dump(path).tensors:
            values = {f.name: getattr(tensor, f.name) for f in fields(DumpTensor)}
            made = DumpTensor(**values)
            assert tensor == made and hash(tensor) == hash(made)
            assert set(vars(tensor)) >= set(values)  # every field set, defaults included
    shortest = DumpTensor.of_header(
        path=Path("x"), kind="input", index=0, data_type=1, format="ND", shape=(2,), original_shape=(), size=4, offset=8
    )
    assert shortest == DumpTensor(Path("x"), "input", 0, 1, "ND", (2,), (), 4, 8)
    assert (shortest.sub_format, shortest.original_op, shortest.foreign_type) == (0, None, None)


def test_a_name_parsed_already_gives_the_dump_what_its_text_gives(tmp_path):
    from precision_tool.formats.dump_names import parse_dump_name

    for k, path in enumerate(_REAL_DUMPS):
        alias = tmp_path / f"a{k}"  # as mapping.csv's short names: the real name is told apart
        alias.write_bytes(path.read_bytes())
        parsed = read_dump(alias, name=parse_dump_name(path.name))
        assert parsed == read_dump(alias, name=path.name) and parsed.op_type, path.name
