"""``dc``: NPU dump files to one .npy per tensor, bit for bit against independent conversions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from precision_tool import read_dump
from precision_tool.commands.dc_decode import output_name
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.status import ExitStatus
from tests.conftest import FIXTURES, make_context, run_command

STEP = "npu/debug_0/dump/20240612103000/0/ge_default_20240612103000_1/1/0"
SAMPLE_STEP = "npu/debug_0/dump/20261129120000/0/ge_default_20261129120000_1/1/0"
OUT = "temp/decode/dump_convert"


def _run(data, line):
    context, out = make_context(data, width=400)
    return run_command(context, line), out.getvalue()


def _case(small_case) -> tuple[dict, dict]:
    case = json.loads((small_case / "case.json").read_text())
    files = {f["op"]: f["file_name"] for f in case["dump_files"][str(case["golden_step"])]}
    return case, files


def _files(root) -> dict:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def _raw(tensor) -> bytes:
    """The tensor's bytes straight from the file, with no reader in between."""
    with open(tensor.path, "rb") as handle:
        handle.seek(tensor.offset)
        return handle.read(tensor.size)


def _bf16_to_f32(raw: bytes) -> np.ndarray:
    return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32)


def _device_array(tensor) -> np.ndarray:
    """The device array from the raw bytes; bfloat16 widened to float32 by bit shifting."""
    if tensor.dtype_name == "bfloat16":
        return _bf16_to_f32(_raw(tensor)).reshape(tensor.shape)
    return np.frombuffer(_raw(tensor), tensor.dtype).reshape(tensor.shape)


def _expected_host(tensor, host_shape) -> np.ndarray:
    """FORMATS.md section 3, written out here independently of precision_tool.formats.layouts."""
    device = _device_array(tensor)
    if tensor.format == "NC1HWC0":  # host NHWC
        n, c1, h, w, c0 = device.shape
        c = host_shape[3]
        nchw = device.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)[:, :c]
        return nchw.transpose(0, 2, 3, 1)
    if tensor.format == "FRACTAL_Z":  # host HWCN
        h, w, c, n = host_shape
        c1, c0, n1 = -(-c // device.shape[3]), device.shape[3], device.shape[1]
        blocks = device.reshape(c1, h, w, n1, 16, c0).transpose(1, 2, 0, 5, 3, 4)
        return blocks.reshape(h, w, c1 * c0, n1 * 16)[:, :, :c, :n]
    if tensor.format == "FRACTAL_NZ":  # host [H, W]
        w1, h1 = device.shape[:2]
        rows, cols = host_shape
        full = device.reshape(1, w1, h1, 16, 16).transpose(0, 2, 3, 1, 4).reshape(1, h1 * 16, w1 * 16)
        return full[0, :rows, :cols]
    assert list(device.shape) == list(host_shape)
    return device


def _same_bits(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    assert np.ascontiguousarray(actual).tobytes() == np.ascontiguousarray(expected).tobytes()


def test_whole_step_dir_equals_the_fixture_bit_for_bit(fixture_data, small_case):
    case, files = _case(small_case)
    before = _files(fixture_data)
    status, text = _run(fixture_data, f"dc {fixture_data / STEP}")
    assert status == ExitStatus.OK, text
    out = fixture_data / OUT
    expected_names = set()
    for t in case["tensors"]:
        dims = "x".join(map(str, t["host_shape"]))
        name = f"{files[t['op']]}.{t['kind']}.{t['index']}.{dims}.npy"
        expected_names.add(name)
        dump = read_dump(fixture_data / STEP / files[t["op"]])
        tensor = (dump.inputs if t["kind"] == "input" else dump.outputs)[t["index"]]
        _same_bits(np.load(out / name, allow_pickle=False), _expected_host(tensor, t["host_shape"]))
    assert {p.name for p in out.iterdir()} == expected_names
    assert "37 tensor(s) of 13 dump file(s) written to" in text
    assert set(_files(fixture_data)) - set(before) == {out / n for n in expected_names}


def test_decoded_tensors_match_their_golden_with_the_known_cosine(fixture_data, small_case):
    case, files = _case(small_case)
    assert _run(fixture_data, f"dc {fixture_data / STEP}")[0] == ExitStatus.OK
    for t in case["tensors"]:
        dims = "x".join(map(str, t["host_shape"]))
        decoded = np.load(fixture_data / OUT / f"{files[t['op']]}.{t['kind']}.{t['index']}.{dims}.npy")
        golden = np.load(fixture_data / "tf/dump" / t["golden_file"]).astype(np.float64).ravel()
        x = decoded.astype(np.float64).ravel()
        assert np.dot(x, golden) / np.linalg.norm(x) / np.linalg.norm(golden) == pytest.approx(t["cosine"], abs=1e-9)


def test_device_flag_writes_the_raw_device_bytes(fixture_data):
    status, _ = _run(fixture_data, f"dc {fixture_data / STEP} --device")
    assert status == ExitStatus.OK
    count = 0
    for path in sorted((fixture_data / STEP).iterdir()):
        for tensor in read_dump(path).tensors:
            name = f"{path.name}.{tensor.kind}.{tensor.index}.{'x'.join(map(str, tensor.shape))}.npy"
            saved = np.load(fixture_data / OUT / name, allow_pickle=False)
            if tensor.dtype_name == "bfloat16":  # saved as float32; every value exact
                _same_bits(saved, _bf16_to_f32(_raw(tensor)).reshape(tensor.shape))
            else:
                assert saved.dtype == tensor.dtype and list(saved.shape) == list(tensor.shape)
                assert saved.tobytes() == _raw(tensor)
            count += 1
    assert count == len(list((fixture_data / OUT).iterdir())) == 37


def test_format_flag_transposes_the_host_tensor(fixture_data):
    conv = "Conv2D.model_conv1_Conv2D.12.0.1718170000000074"
    status, text = _run(fixture_data, "dc model/conv1/Conv2D -f nchw")
    assert status == ExitStatus.OK, text
    dump = read_dump(fixture_data / STEP / conv)
    out = fixture_data / OUT
    x = np.load(out / f"{conv}.input.0.2x3x8x8.npy")
    _same_bits(x, np.ascontiguousarray(_expected_host(dump.inputs[0], [2, 8, 8, 3]).transpose(0, 3, 1, 2)))
    w = np.load(out / f"{conv}.input.1.8x3x3x3.npy")  # HWCN [3,3,3,8] -> NCHW [8,3,3,3]
    _same_bits(w, np.ascontiguousarray(_expected_host(dump.inputs[1], [3, 3, 3, 8]).transpose(3, 2, 0, 1)))
    _same_bits(np.load(out / f"{conv}.input.2.8.npy"), _device_array(dump.inputs[2]))  # ND: kept
    assert (out / f"{conv}.output.0.2x8x8x8.npy").exists()
    assert "NCHW from NHWC" in text and "NCHW from HWCN" in text and "[8] ND (kept: no dim order)" in text
    status, _ = _run(fixture_data, "dc model/conv1/Conv2D:output:0 -f NHWC")
    y = np.load(out / f"{conv}.output.0.2x8x8x8.npy")
    _same_bits(y, np.ascontiguousarray(_expected_host(dump.outputs[0], [2, 8, 8, 8])))


def test_output_dir_and_nothing_written_elsewhere(fixture_data, tmp_path):
    before = _files(tmp_path)
    target = tmp_path / "decoded" / "here"
    status, text = _run(fixture_data, f"dc model/add/add -o {target}")
    assert status == ExitStatus.OK
    written = set(_files(tmp_path)) - set(before)
    assert written == set(target.iterdir()) and len(written) == 3
    assert not (fixture_data / "temp").exists()
    assert all(_files(tmp_path)[p] == m for p, m in before.items())


def test_selector_and_one_file_by_path(fixture_data):
    status, text = _run(fixture_data, "dc model/dense/MatMul:input:1")
    assert status == ExitStatus.OK
    [only] = (fixture_data / OUT).iterdir()
    assert only.name == "MatMulV2.model_dense_MatMul.20.0.1718170000000370.input.1.8x10.npy"
    path = next((fixture_data / STEP).glob("SoftmaxV2.*"))
    assert _run(fixture_data, f"dc {path}")[0] == ExitStatus.OK
    saved = np.load(fixture_data / OUT / f"{path.name}.output.0.2x10.npy")
    assert saved.dtype == np.float32  # bfloat16 widened, exactly


def test_every_launch_of_an_op_name_on_the_sample(sample_data):
    step = sample_data / SAMPLE_STEP
    first = step / "Relu.resnet_relu2_Relu.16.0.1764417600000001"
    first.write_bytes((step / "Relu.resnet_relu2_Relu.16.0.1764417600000222").read_bytes())
    status, text = _run(sample_data, "dc resnet/relu2/Relu")
    assert status == ExitStatus.OK
    assert sorted(p.name for p in (sample_data / OUT).iterdir()) == [
        "Relu.resnet_relu2_Relu.16.0.1764417600000001.input.0.4x12x12x24.npy",
        "Relu.resnet_relu2_Relu.16.0.1764417600000001.output.0.4x12x12x24.npy",
        "Relu.resnet_relu2_Relu.16.0.1764417600000222.input.0.4x12x12x24.npy",
        "Relu.resnet_relu2_Relu.16.0.1764417600000222.output.0.4x12x12x24.npy",
    ]


def test_bad_tensors_and_files_are_reported_and_skipped(tmp_path, sample_data):
    step = tmp_path / "step"
    step.mkdir()
    good = np.arange(6, dtype=np.float32).reshape(2, 3)
    write_dump(
        step / "Add.a.1.0.1718170000000001", "a", [TensorSpec(good, "FLOAT")], [TensorSpec(good, "FLOAT", shape=[4, 4])]
    )  # output: 16 floats claimed, 6 stored
    (step / "Add.b.2.0.1718170000000002").write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00abc")
    (step / "notes.txt").write_text("not a dump")
    status, text = _run(sample_data, f"dc {step}")
    assert status == ExitStatus.FLAGGED
    out = sample_data / OUT
    assert [p.name for p in out.iterdir()] == ["Add.a.1.0.1718170000000001.input.0.2x3.npy"]
    np.testing.assert_array_equal(np.load(out / "Add.a.1.0.1718170000000001.input.0.2x3.npy"), good)
    assert "not decoded: Add.a.1.0.1718170000000001 output:0: output:0: shape [4, 4] of float32 needs 64 bytes" in text
    assert "not decoded: " in text and "Add.b.2.0.1718170000000002: DumpData dump: header length" in text
    assert "skipped notes.txt: not a dump file name" in text
    assert list(step.iterdir()) and not any(p.suffix == ".npy" for p in step.iterdir())


@pytest.mark.parametrize(
    "line, message",
    [
        ("dc no/such/op", "no NPU dump file matches 'no/such/op'"),
        ("dc /no/such/file", "no NPU dump file matches '/no/such/file'"),
        ("dc tf:input.0", "names a golden tensor; dc decodes NPU dump files"),
        ("dc model/conv1/Conv2D -f XYZ", "unknown format 'XYZ'"),
        ("dc model/conv1/Conv2D -f NCHW --device", "-f/--format and --device do not go together"),
        ("dc model/conv1/Conv2D:output:1", "no output:1 in this dump"),
        ("dc model/conv1/Conv2D:output:0 -f NCDHW", "output:0: cannot convert NHWC to NCDHW"),
    ],
)
def test_errors_are_one_line(fixture_data, line, message):
    status, text = _run(fixture_data, line)
    assert status == ExitStatus.ERROR, text
    assert message in text and "Traceback" not in text


def test_a_format_some_tensors_cannot_take_skips_them(fixture_data):
    status, text = _run(fixture_data, "dc model/conv1/Conv2D -f NCDHW")
    assert status == ExitStatus.FLAGGED
    assert "input:1: cannot convert HWCN to NCDHW" in text and "1 tensor(s) of 1 dump file(s)" in text
    assert [p.name for p in (fixture_data / OUT).iterdir()] == [
        "Conv2D.model_conv1_Conv2D.12.0.1718170000000074.input.2.8.npy"
    ]


def test_a_single_bad_file_is_an_error_naming_it(tmp_path, sample_data):
    bad = tmp_path / "Conv2D.x.1.0.1718170000000001"
    bad.write_bytes(b"\x00" * 3)
    status, text = _run(sample_data, f"dc {bad}")
    assert status == ExitStatus.ERROR and str(bad) in text and "DumpData dump: truncated" in text
    npy = tmp_path / "a.npy"
    np.save(npy, np.zeros(2))
    status, text = _run(sample_data, f"dc {npy}")
    assert status == ExitStatus.ERROR and "a.npy" in text


def test_refuses_to_write_into_the_dump_directories(fixture_data):
    status, text = _run(fixture_data, f"dc model/add/add -o {fixture_data / STEP}")
    assert status == ExitStatus.ERROR and "refusing to write into the input data" in text
    assert not any(p.suffix == ".npy" for p in (fixture_data / STEP).iterdir())


def test_output_names():
    dump = read_dump(next((FIXTURES / "small/precision_data" / STEP).glob("Add.*")))
    tensor = dump.outputs[0]
    assert output_name("Add.x.1.0.1", tensor, (2, 8)) == "Add.x.1.0.1.output.0.2x8.npy"
    assert output_name("Add.x.1.0.1", tensor, ()) == "Add.x.1.0.1.output.0.scalar.npy"
    assert output_name("Add.x.1.0.1", tensor, (0, 3)) == "Add.x.1.0.1.output.0.0x3.npy"
    long = output_name("Add." + "a/b.." * 80 + ".1.0.1", tensor, (2, 8))
    assert len(long) <= 255 and "/" not in long and ".." not in long and long.endswith(".output.0.2x8.npy")
