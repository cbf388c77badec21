"""PyTorch .pt files read without torch: torch's own files against torch's own values
(tests/data/torch/expected.json), archives built here opcode by opcode, refusals, bad files."""

from __future__ import annotations

import itertools
import json
import math
import struct
import tempfile
import zipfile
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats import torch_file
from precision_tool.formats.torch_file import PtReader, pt_header, read_pt

DATA = Path(__file__).resolve().parents[1] / "data" / "torch"
EXPECTED = json.loads((DATA / "expected.json").read_text())
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ONLY = "a .pt file may only rebuild tensors"

# torch's dtype names as numpy's, written out here apart from the reader's table
NUMPY = {
    "torch.float32": np.float32,
    "torch.float16": np.float16,
    "torch.float64": np.float64,
    "torch.bfloat16": ml_dtypes.bfloat16,
    "torch.int8": np.int8,
    "torch.uint8": np.uint8,
    "torch.int16": np.int16,
    "torch.int32": np.int32,
    "torch.int64": np.int64,
    "torch.bool": np.bool_,
    "torch.complex64": np.complex64,
    "torch.uint16": np.uint16,
    "torch.float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "torch.float8_e5m2": ml_dtypes.float8_e5m2,
}


def _one_line(exc: pytest.ExceptionInfo, path: Path) -> str:
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{path}: ")
    return text[len(f"{path}: ") :]


# --- torch's own files ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED["tensors"]))
def test_a_file_torch_wrote_reads_as_torch_lists_it(name):
    expected = EXPECTED["tensors"][name]
    array = read_pt(DATA / name)
    dtype = np.dtype(NUMPY[expected["dtype"]])
    assert array.dtype == dtype and list(array.shape) == expected["shape"]
    values = expected["values"]
    if dtype.kind == "c":
        values = [complex(*pair) for pair in values]
    wanted = np.array(values, dtype=np.complex128 if dtype.kind == "c" else np.float64)
    assert np.array_equal(array.astype(wanted.dtype), wanted.reshape(expected["shape"]), equal_nan=True)
    assert pt_header(DATA / name) == (dtype, tuple(expected["shape"]))
    assert not array.flags.writeable


def _chain(array: np.ndarray) -> list:
    """``array`` and the arrays it views, through as_strided's interface object."""
    found = []
    while array is not None:
        if isinstance(array, np.ndarray):
            found.append(array)
        array = getattr(array, "base", None)
    return found


@pytest.mark.parametrize("name", ["transposed.pt", "sliced.pt", "expanded.pt"])
def test_a_saved_view_keeps_torch_strides_and_offset(name):
    expected = EXPECTED["tensors"][name]
    array = read_pt(DATA / name)
    assert [s // array.itemsize for s in array.strides] == expected["stride"]
    storage = max(_chain(array), key=lambda a: a.size)  # the whole storage, mapped
    start = array.__array_interface__["data"][0] - storage.__array_interface__["data"][0]
    assert start == expected["storage_offset"] * array.itemsize


def test_a_small_file_is_read_in_one_read_and_not_mapped():
    assert not any(isinstance(a, np.memmap) for a in _chain(read_pt(DATA / "float32.pt")))
    assert not any(isinstance(a, np.memmap) for a in _chain(read_pt(DATA / "deflated.pt")))


@pytest.mark.parametrize("name", sorted(set(EXPECTED["tensors"]) - {"deflated.pt"}))
def test_torch_written_files_are_read_without_zipfile(name, monkeypatch):
    """torch's writer lays its archives out as the direct reader expects (a zip64 end record
    before the end record, sizes in the directory): no file of it needs zipfile."""

    def refuse(*_args, **_kwargs):
        raise AssertionError("zipfile used")

    monkeypatch.setattr(torch_file.zipfile, "ZipFile", refuse)
    expected = EXPECTED["tensors"][name]
    array = read_pt(DATA / name)
    assert list(array.shape) == expected["shape"] and not array.flags.writeable
    assert pt_header(DATA / name) == (np.dtype(NUMPY[expected["dtype"]]), tuple(expected["shape"]))


def test_the_direct_reader_checks_the_pickle_crc_as_zipfile_does(tmp_path):
    path = build_pt(tmp_path / "c.pt", tensor_pickle(("torch", "FloatStorage"), 6, 0, (6,), (1,)), {"0": b"\0" * 24})
    _patch_directory(path, "archive/data.pkl", 16, b"\0\0\0\0")  # the CRC-32 field
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(path)
    assert "Bad CRC-32" in _one_line(exc, path)


def test_a_file_larger_than_one_read_is_mapped(tmp_path):
    count = torch_file.WHOLE_LIMIT // 4 + 16
    values = np.arange(count, dtype="<f4")
    path = build_pt(
        tmp_path / "big.pt", tensor_pickle(("torch", "FloatStorage"), count, 0, (count,), (1,)), {"0": values.tobytes()}
    )
    array = read_pt(path)
    assert any(isinstance(a, np.memmap) for a in _chain(array))
    assert np.array_equal(array, values) and not array.flags.writeable


def two_files_sharing_a_pickle(tmp_path, monkeypatch) -> tuple[Path, Path, list]:
    """Two ``.pt`` files (1, 2, 3 and 4, 5, 6) whose ``data.pkl`` is the same bytes, and the
    list of the files whose pickle torch_file interprets, filled as it does."""
    pickle = tensor_pickle(("torch", "FloatStorage"), 3, 0, (3,), (1,))
    first = build_pt(tmp_path / "a.pt", pickle, {"0": struct.pack("<3f", 1, 2, 3)})
    second = build_pt(tmp_path / "b.pt", pickle, {"0": struct.pack("<3f", 4, 5, 6)}, prefix="other")
    runs = []
    interpret = torch_file.read_tensor_pickle
    monkeypatch.setattr(torch_file, "read_tensor_pickle", lambda data, path: runs.append(path) or interpret(data, path))
    return first, second, runs


def test_a_reader_interprets_a_shared_pickle_once_and_reads_each_files_data(tmp_path, monkeypatch):
    first, second, runs = two_files_sharing_a_pickle(tmp_path, monkeypatch)
    reader = PtReader()
    assert read_pt(first, reader).tolist() == [1, 2, 3]
    assert read_pt(second, reader).tolist() == [4, 5, 6]
    assert pt_header(second, reader) == (np.dtype(np.float32), (3,))
    assert runs == [first]


def test_a_reader_refuses_a_shared_hostile_pickle_for_every_file(tmp_path):
    pickle = b"\x80\x02" + _global("os", "system") + _text("true") + b"\x85R."
    reader = PtReader()
    for name in ("a.pt", "b.pt"):
        path = build_pt(tmp_path / name, pickle, {"0": b"\0" * 4})
        with pytest.raises(PrecisionToolError) as exc:
            read_pt(path, reader)
        assert _one_line(exc, path) == f"refuses to run os.system: {ONLY}"


def test_the_process_reader_refuses_a_hostile_pickle_for_each_file_naming_it_and_remembers_nothing(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(torch_file, "PROCESS_READER", PtReader())
    pickle = b"\x80\x02" + _global("os", "system") + _text("true") + b"\x85R."
    for name in ("a.pt", "b.pt"):
        path = build_pt(tmp_path / name, pickle, {"0": b"\0" * 4})
        with pytest.raises(PrecisionToolError) as exc:
            read_pt(path)  # the process's reader, by default
        assert _one_line(exc, path) == f"refuses to run os.system: {ONLY}"
    assert torch_file.PROCESS_READER._records == {}


def test_a_shape_no_array_can_have_is_refused_for_each_file_naming_it_and_not_remembered(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_file, "PROCESS_READER", PtReader())
    huge = (1 << 40, 1 << 40)
    pickle = tensor_pickle(("torch", "FloatStorage"), 1, 0, huge, (1 << 40, 1))
    for name in ("a.pt", "b.pt"):
        path = build_pt(tmp_path / name, pickle, {"0": b"\0" * 4})
        with pytest.raises(PrecisionToolError) as exc:
            read_pt(path)
        assert _one_line(exc, path).startswith(f"shape [{1 << 40},{1 << 40}] of 4-byte elements is too big")
    assert torch_file.PROCESS_READER._records == {}


def test_a_remembered_pickle_still_has_each_files_storage_checked_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(torch_file, "PROCESS_READER", PtReader())
    pickle = tensor_pickle(("torch", "FloatStorage"), 4, 0, (4,), (1,))
    whole = build_pt(tmp_path / "whole.pt", pickle, {"0": struct.pack("<4f", 1, 2, 3, 4)})
    short = build_pt(tmp_path / "short.pt", pickle, {"0": struct.pack("<3f", 1, 2, 3)})
    assert read_pt(whole).tolist() == [1, 2, 3, 4]
    assert len(torch_file.PROCESS_READER._records) == 1
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(short)
    assert _one_line(exc, short) == "truncated: record archive/data/0 holds 12 bytes, the tensor's storage is 16"
    assert read_pt(whole).tolist() == [1, 2, 3, 4]


def test_a_reader_remembers_at_most_its_bound_of_pickle_bytes(tmp_path, monkeypatch):
    reader = PtReader()
    pickles = [tensor_pickle(("torch", "FloatStorage"), n, 0, (n,), (1,)) for n in (1, 2, 3)]
    monkeypatch.setattr(torch_file, "PICKLE_BYTES_KEPT", len(pickles[0]) + len(pickles[1]))
    for n, pickle in zip((1, 2, 3), pickles):
        path = build_pt(tmp_path / f"{n}.pt", pickle, {"0": b"\0" * 4 * n})
        assert read_pt(path, reader).shape == (n,)
    assert list(reader._records) == pickles[:2]  # the third would pass the bound: read, not kept
    assert read_pt(tmp_path / "3.pt", reader).shape == (3,)


def test_a_remembered_record_cannot_be_changed(tmp_path):
    metadata = {"npu_format_/ND": True}
    pickle = tensor_pickle(("torch", "FloatStorage"), 1, 0, (1,), (1,), metadata=metadata)
    path = build_pt(tmp_path / "m.pt", pickle, {"0": b"\0" * 4})
    record = PtReader().record(pickle, path)
    assert record.metadata == metadata
    with pytest.raises(TypeError):
        record.metadata["npu_format_/ND"] = False


def test_the_legacy_format_is_named_and_refused():
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(DATA / "legacy.pt")
    assert _one_line(exc, DATA / "legacy.pt").startswith("legacy torch format")


@pytest.mark.parametrize("name", sorted(EXPECTED["refused"]))
def test_a_hostile_pickle_is_refused_by_name(name):
    what = EXPECTED["refused"][name]
    for read in (read_pt, pt_header):
        with pytest.raises(PrecisionToolError) as exc:
            read(DATA / name)
        verb = "call" if what == "torch.FloatStorage" else "run"
        assert _one_line(exc, DATA / name) == f"refuses to {verb} {what}: {ONLY}"
    assert read_pt(DATA / "float32.pt").shape == (2, 3)  # and the next file is read as ever


# --- a builder of torch archives, opcode by opcode ------------------------------------------


def _text(text: str) -> bytes:
    data = text.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def _int(value: int) -> bytes:
    if 0 <= value < 256:
        return b"K" + bytes([value])
    if 0 <= value < 65536:
        return b"M" + struct.pack("<H", value)
    if -(2**31) <= value < 2**31:
        return b"J" + struct.pack("<i", value)
    data = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return b"\x8a" + bytes([len(data)]) + data


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _tuple(*items: bytes) -> bytes:
    return b"(" + b"".join(items) + b"t"


def tensor_pickle(
    storage: tuple[str, str],
    numel: int,
    offset: int,
    shape,
    stride,
    *,
    dtype: str | None = None,
    metadata: dict | None = None,
    key: str = "0",
    call: tuple[str, str] | None = None,
) -> bytes:
    """``torch._utils._rebuild_tensor_v2`` (``_v3`` when ``dtype`` is given) of one storage."""
    pid = _tuple(_text("storage"), _global(*storage), _text(key), _text("npu:0"), _int(numel))
    args = [
        pid + b"Q",
        _int(offset),
        _tuple(*map(_int, shape)),
        _tuple(*map(_int, stride)),
        b"\x89",
        _global("collections", "OrderedDict") + b")R",
    ]
    if dtype:
        args.append(_global("torch", dtype))
    if metadata is not None:
        args.append(b"}(" + b"".join(_text(k) + b"\x88" for k in metadata) + b"u")
    func = call or ("torch._utils", "_rebuild_tensor_v3" if dtype else "_rebuild_tensor_v2")
    return b"\x80\x02" + _global(*func) + b"q\x00" + _tuple(*args) + b"R."


def build_pt(
    path: Path,
    pickle: bytes,
    storages: dict[str, bytes],
    *,
    prefix="archive",
    byteorder: str | None = "little",
    compression=zipfile.ZIP_STORED,
) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr(f"{prefix}/data.pkl", pickle)
        if byteorder is not None:
            archive.writestr(f"{prefix}/byteorder", byteorder)
        for key, data in storages.items():
            archive.writestr(f"{prefix}/data/{key}", data)
        archive.writestr(f"{prefix}/version", "3\n")
    return path


# (typed storage class or None for UntypedStorage with the dtype given to _v3, torch dtype, numpy)
DTYPES = [
    ("FloatStorage", "float32", np.float32),
    ("DoubleStorage", "float64", np.float64),
    ("HalfStorage", "float16", np.float16),
    ("BFloat16Storage", "bfloat16", ml_dtypes.bfloat16),
    ("LongStorage", "int64", np.int64),
    ("IntStorage", "int32", np.int32),
    ("ShortStorage", "int16", np.int16),
    ("CharStorage", "int8", np.int8),
    ("ByteStorage", "uint8", np.uint8),
    ("BoolStorage", "bool", np.bool_),
    ("ComplexFloatStorage", "complex64", np.complex64),
    (None, "float8_e4m3fn", ml_dtypes.float8_e4m3fn),
    (None, "float8_e5m2", ml_dtypes.float8_e5m2),
    (None, "uint16", np.uint16),
    (None, "uint64", np.uint64),
    (None, "float32", np.float32),
]


@st.composite
def tensors(draw):
    storage_class, torch_name, numpy_type = draw(st.sampled_from(DTYPES))
    itemsize = np.dtype(numpy_type).itemsize
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    stride = [draw(st.integers(0, 6)) for _ in shape]
    offset = draw(st.integers(0, 5))
    reach = offset + sum((d - 1) * s for d, s in zip(shape, stride)) if math.prod(shape) else 0
    count = reach + 1 + draw(st.integers(0, 3))
    if numpy_type is np.bool_:
        data = bytes(draw(st.lists(st.integers(0, 1), min_size=count, max_size=count)))
    else:
        data = draw(st.binary(min_size=count * itemsize, max_size=count * itemsize))
    return storage_class, torch_name, numpy_type, tuple(shape), tuple(stride), offset, data


def _expected_bytes(data: bytes, itemsize: int, shape, stride, offset) -> bytes:
    """The tensor's elements in C order, by walking every index (no strides from numpy)."""
    out = []
    for index in itertools.product(*map(range, shape)):
        at = (offset + sum(i * s for i, s in zip(index, stride))) * itemsize
        out.append(data[at : at + itemsize])
    return b"".join(out)


@SETTINGS
@given(tensors(), st.sampled_from(["little", "big", None]), st.booleans(), st.sampled_from(["archive", "x", "dump_7"]))
def test_any_strided_tensor_reads_back_element_for_element(tensor, byteorder, deflate, prefix):
    storage_class, torch_name, numpy_type, shape, stride, offset, data = tensor
    itemsize = np.dtype(numpy_type).itemsize
    stored = data
    if byteorder == "big":  # each element's bytes reversed; a complex number's two halves each
        part = itemsize // 2 if numpy_type is np.complex64 else itemsize
        stored = b"".join(data[i : i + part][::-1] for i in range(0, len(data), part))
    if storage_class:
        pickle = tensor_pickle(("torch", storage_class), len(data) // itemsize, offset, shape, stride)
    else:
        pickle = tensor_pickle(("torch.storage", "UntypedStorage"), len(data), offset, shape, stride, dtype=torch_name)
    with tempfile.TemporaryDirectory() as folder:
        path = build_pt(
            Path(folder) / "t.pt",
            pickle,
            {"0": stored},
            prefix=prefix,
            byteorder=byteorder,
            compression=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED,
        )
        array = read_pt(path)
        assert pt_header(path) == (np.dtype(numpy_type), shape)
    assert array.dtype == np.dtype(numpy_type) and array.shape == shape
    assert np.ascontiguousarray(array).tobytes() == _expected_bytes(data, itemsize, shape, stride, offset)


def test_npu_metadata_and_a_parameter_are_read(tmp_path):
    data = np.arange(6, dtype=np.float32).tobytes()
    metadata = {"base_sizes_/2/3/": True, "npu_format_/NC1HWC0": True, "origin_format_/ND": True}
    inner = tensor_pickle(("torch", "FloatStorage"), 6, 0, (2, 3), (3, 1), metadata=metadata)
    path = build_pt(tmp_path / "npu.pt", inner, {"0": data})
    assert read_pt(path).tolist() == [[0, 1, 2], [3, 4, 5]]
    # _rebuild_parameter(tensor, requires_grad, OrderedDict())
    param = (
        b"\x80\x02"
        + _global("torch._utils", "_rebuild_parameter")
        + b"("
        + inner[2:-1]
        + b"\x88"
        + _global("collections", "OrderedDict")
        + b")Rt"
        + b"R."
    )
    path = build_pt(tmp_path / "param.pt", param, {"0": data})
    assert read_pt(path).shape == (2, 3)


# --- refusals and bad files: one line each -----------------------------------------------------


def _problem(tmp_path, pickle: bytes, storages=None, **options) -> str:
    path = build_pt(tmp_path / "bad.pt", pickle, {"0": b"\0" * 24} if storages is None else storages, **options)
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(path)
    return _one_line(exc, path)


def test_a_stride_past_the_storage_is_out_of_bounds(tmp_path):
    problem = _problem(tmp_path, tensor_pickle(("torch", "FloatStorage"), 6, 0, (2, 3), (4, 1)))
    assert problem == (
        "tensor of shape [2,3], stride [4,1] at offset 0 reaches element 6 of a storage of 6: out of bounds"
    )


def test_an_offset_past_the_storage_is_out_of_bounds(tmp_path):
    problem = _problem(tmp_path, tensor_pickle(("torch", "FloatStorage"), 6, 6, (1,), (1,)))
    assert problem.endswith("reaches element 6 of a storage of 6: out of bounds")


def test_a_storage_record_shorter_than_its_numel_is_truncated(tmp_path):
    problem = _problem(tmp_path, tensor_pickle(("torch", "FloatStorage"), 7, 0, (7,), (1,)))
    assert problem == "truncated: record archive/data/0 holds 24 bytes, the tensor's storage is 28"


def test_a_missing_storage_record_is_named(tmp_path):
    problem = _problem(tmp_path, tensor_pickle(("torch", "FloatStorage"), 6, 0, (6,), (1,), key="3"))
    assert problem == "has no record archive/data/3: the tensor's storage is missing"


def test_an_archive_without_data_pkl_is_not_torch(tmp_path):
    path = tmp_path / "x.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data/0", b"\0" * 4)
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(path)
    assert _one_line(exc, path) == "not a torch.save archive: no archive/data.pkl"


@pytest.mark.parametrize("content", [b"", b"hello", b"PK\x03\x04" + b"\0" * 40])
def test_a_file_that_is_no_zip_is_one_line(tmp_path, content):
    path = tmp_path / "x.pt"
    path.write_bytes(content)
    with pytest.raises(PrecisionToolError) as exc:
        pt_header(path)
    assert _one_line(exc, path).startswith("not a torch .pt zip archive")


@SETTINGS
@given(st.data())
def test_a_truncated_archive_is_one_line(data):
    whole = (DATA / data.draw(st.sampled_from(sorted(EXPECTED["tensors"])))).read_bytes()
    cut = data.draw(st.integers(0, len(whole) - 1))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cut.pt"
        path.write_bytes(whole[:cut])
        with pytest.raises(PrecisionToolError) as exc:
            read_pt(path)
        _one_line(exc, path)


@pytest.mark.parametrize(
    "pickle, problem",
    [
        (
            b"\x80\x02" + _global("torch._utils", "_rebuild_tensor_v2") + b"(i",
            f"refuses the pickle opcode INST: {ONLY}",
        ),
        (b"\x80\x02" + _global("torch", "float32") + b")R.", f"refuses to call torch.float32: {ONLY}"),
        (b"\x80\x02}q\x00.", "holds a state dict, not one tensor"),
        (b"\x80\x02K\x01.", "holds a value of type int, not one tensor"),
        (
            b"\x80\x02" + _global("torch", "complex32") + b".",
            "holds a tensor of torch.complex32, which numpy has no type for",
        ),
        (b"\x80\x02(X\x06\x00\x00\x00moduleQ.", f"refuses the persistent id 'module': {ONLY}"),
        (b"\x80\x02\xff", f"refuses the pickle opcode 0xff: {ONLY}"),
        (b"\x80\x02X\x10\x00\x00\x00ab", "data.pkl: ends inside an opcode (at byte 7 of 9)"),
        (b"\x80\x02h\x05.", "data.pkl: reads memo 5, which was never stored"),
        (b"\x80\x02R.", "data.pkl: pops an empty stack (at byte 3)"),
        (b"\x80\x02" + _global("\x1b[2Jos", "system"), f"refuses to run \\x1b[2Jos.system: {ONLY}"),
    ],
)
def test_a_bad_pickle_is_one_line(tmp_path, pickle, problem):
    assert _problem(tmp_path, pickle) == problem


def test_a_bad_byteorder_is_one_line(tmp_path):
    pickle = tensor_pickle(("torch", "FloatStorage"), 6, 0, (6,), (1,))
    assert _problem(tmp_path, pickle, byteorder="middle") == "byteorder record says 'middle', not little or big"


@SETTINGS
@given(st.binary(max_size=200), st.integers(0, 200), st.binary(max_size=8))
def test_any_mangled_pickle_is_read_or_refused_in_one_line(junk, at, insert):
    good = tensor_pickle(("torch", "FloatStorage"), 6, 0, (2, 3), (3, 1))
    for pickle in (junk, good[:at] + insert + good[at + len(insert) :]):
        with tempfile.TemporaryDirectory() as folder:
            path = build_pt(Path(folder) / "m.pt", pickle, {"0": b"\0" * 24})
            try:
                read_pt(path)
            except PrecisionToolError as exc:
                assert "\n" not in str(exc) and str(exc).startswith(f"{path}: ")


def test_the_reader_never_runs_what_it_refuses(tmp_path):
    marker = tmp_path / "ran"
    command = f"touch {marker}"
    pickle = b"\x80\x02" + _global("os", "system") + _text(command) + b"\x85R."
    assert _problem(tmp_path, pickle) == f"refuses to run os.system: {ONLY}"
    assert not marker.exists()


def _patch_directory(path: Path, name: str, at: int, value: bytes) -> None:
    """Overwrite bytes ``at`` into ``name``'s central directory entry (flags at 8, compressed
    size at 20)."""
    data = bytearray(path.read_bytes())
    entry = data.rindex(b"PK\x01\x02", 0, data.rindex(name.encode()))
    data[entry + at : entry + at + len(value)] = value
    path.write_bytes(bytes(data))


def test_an_encrypted_storage_record_is_refused(tmp_path):
    path = build_pt(tmp_path / "e.pt", tensor_pickle(("torch", "FloatStorage"), 6, 0, (6,), (1,)), {"0": b"\0" * 24})
    _patch_directory(path, "archive/data/0", 8, struct.pack("<H", 1))
    with pytest.raises(PrecisionToolError) as exc:
        read_pt(path)
    assert _one_line(exc, path) == "record archive/data/0 is encrypted: not read"


def test_a_stored_record_whose_compressed_size_is_short_is_truncated(tmp_path):
    path = build_pt(tmp_path / "c.pt", tensor_pickle(("torch", "FloatStorage"), 6, 0, (6,), (1,)), {"0": b"\0" * 24})
    _patch_directory(path, "archive/data/0", 20, struct.pack("<I", 20))
    with pytest.raises(PrecisionToolError) as exc:
        pt_header(path)
    assert _one_line(exc, path) == ("truncated: record archive/data/0 holds 20 bytes, the tensor's storage is 24")
