"""``write_pt`` writes what ``torch.save`` writes for a contiguous CPU tensor.

The references are independent of the writer: SHA-256 digests of files real torch 2.13 wrote
(``bench/check_torch_write.py`` compares every dtype and shape with torch itself), the zip
structure read back with ``zipfile`` and ``struct``, the pickle read with ``pickletools.genops``
(which parses and never executes), and the values with ``numpy.frombuffer``.
"""

from __future__ import annotations

import hashlib
import io
import pickletools
import struct
import zipfile

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.torch_write import TORCH_DTYPES, archive_name, pt_bytes, write_pt

# storage class -> element dtype, as the test reads them (not the writer's table)
STORAGES = {
    "HalfStorage": np.float16,
    "BFloat16Storage": ml_dtypes.bfloat16,
    "FloatStorage": np.float32,
    "DoubleStorage": np.float64,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "ShortStorage": np.int16,
    "IntStorage": np.int32,
    "LongStorage": np.int64,
    "BoolStorage": np.bool_,
    "ComplexFloatStorage": np.complex64,
    "ComplexDoubleStorage": np.complex128,
}
UNTYPED = {
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
}
RECORDS = [
    "data.pkl",
    ".format_version",
    ".storage_alignment",
    "byteorder",
    "data/0",
    "version",
    ".data/serialization_id",
]

# files torch 2.13.0+cpu wrote with torch.save(tensor, name): size and SHA-256
TORCH_WROTE = {
    "Functional.linear.0.forward.input.0.pt": (
        np.arange(6, dtype=np.float16).reshape(2, 3),
        1837,
        "68aa86ecf138aff41fb478ea77687793bf73682e24be2983d10fc1df9ca3f86a",
    ),
    "Tensor.__add__.0.forward.output.0.pt": (
        (np.arange(12, dtype=np.float32) / 8 - 0.5).astype(ml_dtypes.bfloat16).reshape(3, 4),
        1823,
        "83afb9cfe8c1b6c7371335b384710bad0b1321407f051ee7d152e22815251923",
    ),
    "Module.embed.Embedding.forward.0.input.0.pt": (
        np.array([[3, 1, 4], [1, 5, 9]], dtype=np.int64),
        2000,
        "8ae0ac131042cf620b1a5ad0171fb7b19f0499039820df66fe69c87ccb0b3d16",
    ),
    "Tensor.__gt__.0.forward.output.0.pt": (
        np.array([True, False, True]),
        1816,
        "6e55eaad90cd112b26f734e3929773508843edf2937a53a0f1962b3bc57fd308",
    ),
    "Tensor.sum.0.forward.output.0.pt": (
        np.array(2.5, np.float32),
        1795,
        "97f20ec9cbc2677234d35ce0bef29877d67d891c7ee689c57d28c6e4991431ab",
    ),
}
# data.pkl of torch.save(torch.arange(6, dtype=torch.float16).reshape(2, 3)), as torch wrote it
TORCH_PICKLE = (
    b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\n"
    b"HalfStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04K\x06tq\x05QK\x00K\x02"
    b"K\x03\x86q\x06K\x03K\x01\x86q\x07\x89ccollections\nOrderedDict\nq\x08)Rq\ttq\nRq\x0b."
)


def read_pt(path):
    """(archive, the pickle's opcodes, the tensor as numpy), read without the writer's code."""
    with zipfile.ZipFile(path) as z:
        archive = z.namelist()[0].split("/")[0]
        ops = [(op.name, arg) for op, arg, _pos in pickletools.genops(z.read(f"{archive}/data.pkl"))]
        raw = z.read(f"{archive}/data/0")
    globals_ = [arg for name, arg in ops if name == "GLOBAL"]
    storage = globals_[1].split()[1]
    dtype = STORAGES[storage] if storage in STORAGES else UNTYPED[globals_[-1].split()[1]]
    ints = [arg for name, arg in ops if name.startswith("BININT") or name == "LONG1"]
    after_pid = [
        arg
        for name, arg in ops[[n for n, _ in ops].index("BINPERSID") + 1 :]
        if name.startswith("BININT") or name == "LONG1"
    ]
    rank = (len(after_pid) - 1) // 2
    shape = tuple(after_pid[1 : 1 + rank])
    assert ints[0] == (int(np.prod(shape)) * (1 if storage in STORAGES else np.dtype(dtype).itemsize))
    return archive, ops, np.frombuffer(raw, dtype).reshape(shape)


@pytest.mark.parametrize("name", sorted(TORCH_WROTE))
def test_the_file_is_the_one_torch_save_writes(tmp_path, name):
    array, size, digest = TORCH_WROTE[name]
    data = write_pt(tmp_path / name, array).read_bytes()
    assert len(data) == size
    assert hashlib.sha256(data).hexdigest() == digest


def test_the_pickle_is_torchs_opcode_for_opcode():
    with zipfile.ZipFile(io.BytesIO(pt_bytes(np.arange(6, dtype=np.float16).reshape(2, 3)))) as z:
        assert z.read("archive/data.pkl") == TORCH_PICKLE


def test_records_are_stored_in_torchs_order_with_their_data_on_64_byte_boundaries(tmp_path):
    path = write_pt(tmp_path / "Functional.linear.0.forward.output.0.pt", np.ones((3, 5), np.float32))
    blob = path.read_bytes()
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        assert [i.filename for i in infos] == [f"Functional.linear.0.forward.output.0/{r}" for r in RECORDS]
        assert {i.compress_type for i in infos} == {zipfile.ZIP_STORED}
        assert z.testzip() is None  # every CRC checks
        assert z.read(infos[1]) == b"1" and z.read(infos[2]) == b"64" and z.read(infos[3]) == b"little"
        assert z.read(infos[5]) == b"3\n" and len(z.read(infos[6])) == 40
    for info in infos:
        name_len, extra_len = struct.unpack_from("<HH", blob, info.header_offset + 26)
        start = info.header_offset + 30 + name_len
        assert blob[start : start + 2] == b"FB" and set(blob[start + 4 : start + extra_len]) <= {ord("Z")}
        assert (start + extra_len) % 64 == 0
    assert blob.count(b"PK\x06\x06") == 1 and blob.endswith(b"\x00\x00")  # zip64 end record, no comment


def test_the_pickle_calls_rebuild_tensor_v2_with_the_storage_as_persistent_id(tmp_path):
    path = write_pt(tmp_path / "x.pt", np.zeros((2, 3, 4), np.float32), location="npu:0")
    _archive, ops, _values = read_pt(path)
    with zipfile.ZipFile(path) as z:
        assert all(op.proto <= 2 for op, _arg, _pos in pickletools.genops(z.read("x/data.pkl")))
    assert ops[0] == ("PROTO", 2)
    assert ("GLOBAL", "torch._utils _rebuild_tensor_v2") in ops and ("GLOBAL", "torch FloatStorage") in ops
    texts = [arg for name, arg in ops if name == "BINUNICODE"]
    assert texts == ["storage", "0", "npu:0"]
    names = [name for name, _ in ops]
    assert names.count("BINPERSID") == 1 and "NEWFALSE" in names and names[-1] == "STOP"
    assert ("GLOBAL", "collections OrderedDict") in ops


def test_dtypes_without_a_typed_storage_use_rebuild_tensor_v3(tmp_path):
    _archive, ops, values = read_pt(write_pt(tmp_path / "x.pt", np.arange(6, dtype=np.uint16).reshape(3, 2)))
    globals_ = [arg for name, arg in ops if name == "GLOBAL"]
    assert globals_ == [
        "torch._utils _rebuild_tensor_v3",
        "torch.storage UntypedStorage",
        "collections OrderedDict",
        "torch uint16",
    ]
    assert values.tolist() == [[0, 1], [2, 3], [4, 5]]


def test_dtype_name_casts_the_values(tmp_path):
    values = np.array([1.0, 1 / 3, 1e-3], np.float32)
    _archive, ops, stored = read_pt(write_pt(tmp_path / "x.pt", values, dtype_name="torch.bfloat16"))
    assert ("GLOBAL", "torch BFloat16Storage") in ops
    assert stored.tobytes() == values.astype(ml_dtypes.bfloat16).tobytes()


@pytest.mark.parametrize(
    ("path", "archive"),
    [
        (
            "/dump/step0/rank0/dump_tensor_data/Functional.linear.0.forward.input.0.pt",
            "Functional.linear.0.forward.input.0",
        ),
        ("plain", "plain"),
        ("dir.d/x.pt", "x"),
        ("Tensor.名.0.forward.output.0.pt", "archive"),
    ],
)
def test_the_archive_is_named_as_torch_names_it(path, archive):
    assert archive_name(path) == archive


@pytest.mark.parametrize(
    "array",
    [np.array(["a", "b"]), np.array([object()], dtype=object), np.zeros(2, np.float16).astype(">f2").astype("V2")],
)
def test_a_value_torch_cannot_hold_is_one_line_and_nothing_is_written(tmp_path, array):
    with pytest.raises(PrecisionToolError) as raised:
        write_pt(tmp_path / "x.pt", array)
    assert "\n" not in str(raised.value) and "torch has no dtype" in str(raised.value)
    assert not (tmp_path / "x.pt").exists()
    write_pt(tmp_path / "y.pt", np.ones(2))  # the next one is written


def test_an_unknown_dtype_name_is_one_line():
    with pytest.raises(PrecisionToolError, match="no torch dtype 'torch.float7'"):
        pt_bytes(np.ones(2), dtype_name="torch.float7")


shapes = st.lists(st.integers(0, 5), min_size=0, max_size=5).map(tuple)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(TORCH_DTYPES)), shape=shapes, data=st.data())
def test_round_trip_of_every_dtype_and_shape(tmp_path_factory, name, shape, data):
    dtype = TORCH_DTYPES[name].numpy
    count = int(np.prod(shape)) if shape else 1
    raw = data.draw(st.binary(min_size=count * dtype.itemsize, max_size=count * dtype.itemsize))
    if dtype == np.bool_:
        raw = bytes(b & 1 for b in raw)  # torch's bool is one byte holding 0 or 1
    array = np.frombuffer(raw, dtype).reshape(shape)
    path = write_pt(tmp_path_factory.mktemp("rt") / "t.pt", array)
    archive, ops, back = read_pt(path)
    assert archive == "t"
    assert back.shape == shape and back.dtype == dtype and back.tobytes() == raw
    strides = [arg for op, arg in ops if op.startswith("BININT") or op == "LONG1"][-len(shape) :] if shape else []
    expected, step = [], 1
    for size in reversed(shape):
        expected.insert(0, step)
        step *= max(size, 1)
    assert strides == expected
