"""``pt``: statistics, first values and the .txt export of one tensor, and how NAMEs resolve."""

from __future__ import annotations

import re

import numpy as np
import pytest

from precision_tool import read_dump, read_golden
from precision_tool.compare.tensor_names import parse_name, resolve_tensor
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.text import safe_file_name
from precision_tool.render.tensor_view import format_value
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

STEP = "npu/debug_0/dump/20240612103000/0/ge_default_20240612103000_1/1/0"
SAMPLE_STEP = "npu/debug_0/dump/20261129120000/0/ge_default_20261129120000_1/1/0"
CONV1 = "Conv2D.model_conv1_Conv2D.12.0.1718170000000074"


def _run(data, line, width=200):
    context, out = make_context(data, width=width)
    return run_command(context, line), out.getvalue()


def _row(text: str, label: str) -> str:
    """The value of a key/value row: drawn in a table, or folded to ``label  value`` when a
    value (a long path) is too wide for one."""
    match = re.search(rf"│ {label}\s+│ (.+?)\s+│", text) or re.search(rf"^{label}  (.+?)\s*$", text, re.M)
    assert match, f"no {label} row in:\n{text}"
    return match.group(1)


def _exported(data) -> list:
    return sorted((data / "temp/pt").glob("*.txt"))


def _files(root) -> dict:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def test_golden_by_name_shows_stats_and_exports_every_value(fixture_data):
    status, text = _run(fixture_data, "pt model_dense_MatMul.0")
    assert status == ExitStatus.OK
    golden = np.load(next((fixture_data / "tf/dump").glob("model_dense_MatMul.0.*.npy")))
    assert _row(text, "shape") == str(list(golden.shape))
    assert _row(text, "dtype") == str(golden.dtype)
    assert _row(text, "max") == format_value(golden.max())
    assert _row(text, "min") == format_value(golden.min())
    assert _row(text, "mean") == format_value(golden.astype(np.float64).mean())
    [txt] = _exported(fixture_data)
    assert txt.name == "model_dense_MatMul.0.1718160000002100.txt"
    header = txt.read_text().splitlines()[0]
    assert header.startswith("# model_dense_MatMul.0.1718160000002100.npy") and f"shape={list(golden.shape)}" in header
    np.testing.assert_array_equal(np.loadtxt(txt, dtype=golden.dtype), golden.reshape(-1))


def test_npu_tensor_is_shown_in_host_layout(fixture_data):
    status, text = _run(fixture_data, "pt model/conv1/Conv2D:output:0 -n 3")
    assert status == ExitStatus.OK
    host = read_dump(fixture_data / STEP / CONV1).outputs[0].host()
    assert _row(text, "shape") == "[2, 8, 8, 8]"
    assert _row(text, "layout") == "host NHWC (from device NC1HWC0 [2, 1, 8, 8, 16])"
    assert _row(text, "max") == format_value(host.max())
    assert _row(text, "mean") == format_value(host.astype(np.float64).mean())
    assert "first 3 of 1024 values" in text
    assert re.search(r"\(0, 0, 0, 0\)\s+│\s+" + re.escape(format_value(host.flat[0])), text)
    assert "this dump also holds input:0, input:1, input:2" in text
    [txt] = _exported(fixture_data)
    assert txt.name == f"{CONV1}.output.0.txt"
    np.testing.assert_array_equal(np.loadtxt(txt, dtype=np.float32), host.reshape(-1).astype(np.float32))


def test_default_tensor_is_output_0_and_device_flag_keeps_the_device_layout(fixture_data):
    status, text = _run(fixture_data, f"pt {CONV1} --device -n 0")
    assert status == ExitStatus.OK
    assert f"{CONV1}:output:0" in text and "first " not in text
    assert _row(text, "shape") == "[2, 1, 8, 8, 16]"
    [txt] = _exported(fixture_data)
    assert txt.name == f"{CONV1}.output.0.device.txt"
    device = read_dump(fixture_data / STEP / CONV1).outputs[0].device()
    np.testing.assert_array_equal(np.loadtxt(txt, dtype=np.float32), device.reshape(-1).astype(np.float32))


def test_input_selector_and_file_paths(fixture_data):
    kernel = read_dump(fixture_data / STEP / CONV1).inputs[1].host()
    status, text = _run(fixture_data, f"pt {fixture_data / STEP / CONV1}:input:1")
    assert status == ExitStatus.OK and _row(text, "shape") == "[3, 3, 3, 8]"
    assert _row(text, "layout").startswith("host HWCN")
    assert _row(text, "max") == format_value(kernel.max())
    golden = next((fixture_data / "tf/dump").glob("input.0.*.npy"))
    status, text = _run(fixture_data, f"pt {golden}")
    assert status == ExitStatus.OK and _row(text, "shape") == "[2, 8, 8, 3]"


def test_bfloat16_tensor_exports_exact_values(fixture_data):
    status, text = _run(fixture_data, "pt model/softmax/Softmax:output:0")
    assert status == ExitStatus.OK and _row(text, "dtype") == "bfloat16"
    [txt] = _exported(fixture_data)
    bits = read_dump(next((fixture_data / STEP).glob("SoftmaxV2.*"))).outputs[0].device().view(np.uint16)
    expected = (bits.astype(np.uint32) << 16).view(np.float32).reshape(-1)
    np.testing.assert_array_equal(np.loadtxt(txt, dtype=np.float32), expected)


def test_nan_and_inf_are_counted(tmp_path, sample_data):
    path = tmp_path / "odd.npy"
    np.save(path, np.array([1.0, np.nan, np.inf, -2.0, np.nan], np.float32))
    status, text = _run(sample_data, f"pt {path}")
    assert status == ExitStatus.OK
    assert (_row(text, "NaN"), _row(text, "Inf")) == ("2", "1")
    assert (_row(text, "max"), _row(text, "min"), _row(text, "mean")) == ("1", "-2", "-0.5")
    values = np.loadtxt(_exported(sample_data)[0], dtype=np.float32)
    np.testing.assert_array_equal(values, np.load(path))


def test_integer_and_float64_exports_round_trip(tmp_path, sample_data):
    for name, array in (
        ("i.npy", np.array([[2**62, -5], [0, 7]], np.int64)),
        ("d.npy", np.array([np.pi, 1e-300, -1 / 3])),
    ):
        np.save(tmp_path / name, array)
        assert _run(sample_data, f"pt {tmp_path / name}")[0] == ExitStatus.OK
        txt = sample_data / "temp/pt" / (name[:-4] + ".txt")
        np.testing.assert_array_equal(np.loadtxt(txt, dtype=array.dtype), array.reshape(-1))


def test_export_in_several_chunks_reads_back_whole(tmp_path, sample_data, monkeypatch):
    from precision_tool.commands import pt_print as pt
    from precision_tool.formats.output_root import OutputRoot

    monkeypatch.setattr(pt, "_CHUNK", 7)
    array = np.random.default_rng(1).standard_normal((5, 9)).astype(np.float16)
    path = pt.export_text(OutputRoot(tmp_path), array, tmp_path / "x.txt", "x")
    lines = path.read_text().splitlines()
    assert lines[0] == "# x" and len(lines) == 46
    np.testing.assert_array_equal(np.loadtxt(path, dtype=np.float16), array.reshape(-1))
    cplx = np.array([1 + 2j, -0.5j, 3], np.complex128)
    np.testing.assert_array_equal(
        np.loadtxt(pt.export_text(OutputRoot(tmp_path), cplx, tmp_path / "c.txt", "c")),
        np.column_stack([cplx.real, cplx.imag]),
    )


def test_writes_only_under_temp(fixture_data):
    before = _files(fixture_data)
    assert _run(fixture_data, "pt model/conv1/Conv2D")[0] == ExitStatus.OK
    assert _run(fixture_data, f"pt {next((fixture_data / 'tf/dump').iterdir())}")[0] == ExitStatus.OK
    after = _files(fixture_data)
    new = set(after) - set(before)
    assert len(new) == 2 and all(p.parent == fixture_data / "temp/pt" for p in new)
    assert all(after[p] == before[p] for p in before)


def test_sample_data_by_dump_file_prefix(sample_data):
    status, text = _run(sample_data, "pt Conv2D.resnet_conv2")
    assert status == ExitStatus.OK
    assert "Conv2D.resnet_conv2_Conv2D.14.0.1764417600000148:output:0" in text
    assert _row(text, "shape") == "[4, 12, 12, 24]"


@pytest.mark.parametrize(
    "line, message",
    [
        ("pt no_such_tensor", "no NPU dump file or golden tensor matches 'no_such_tensor'"),
        (
            "pt tf:model_bn1_FusedBatchNormV3",
            "ambiguous; candidates: model_bn1_FusedBatchNormV3.0.1718160000001000.npy, "
            "model_bn1_FusedBatchNormV3.1.1718160000001000.npy, model_bn1_FusedBatchNormV3.2",
        ),
        ("pt model_conv", "ambiguous"),
        ("pt model/conv1/Conv2D:output:3", "no output:3 in this dump (it has: input:0, input:1, input:2, output:0)"),
        ("pt model_dense_MatMul.0:output:0", "no NPU dump file or golden tensor matches"),
        ("pt model/conv1/Conv2D -n -1", "-n/--count must be 0 or more"),
        ("pt tf:input.0 --device", "--device applies to NPU dump tensors"),
    ],
)
def test_errors_are_one_line(fixture_data, line, message):
    status, text = _run(fixture_data, line, width=400)
    assert status == ExitStatus.ERROR
    assert message in text
    assert text.startswith("error:") and "Traceback" not in text


def test_bad_files_are_named_in_the_error(tmp_path, sample_data):
    pickled = tmp_path / "pickled.npy"
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\x01" * 40)
    for path, why in (
        (pickled, "pickled Python objects"),
        (garbage, "header length"),
        (tmp_path / "missing.npy", "no NPU dump file or golden tensor matches"),
    ):
        status, text = _run(sample_data, f"pt {path}", width=400)
        assert status == ExitStatus.ERROR and why in text, text
        assert str(path.name) in text
    status, text = _run(sample_data, f"pt {tmp_path}", width=400)
    assert status == ExitStatus.ERROR and "is a directory" in text


def test_a_tensor_that_cannot_be_converted_suggests_the_device_layout(tmp_path, sample_data):
    from precision_tool.formats.dump_write import TensorSpec, write_dump

    path = write_dump(
        tmp_path / "Add.a.1.0.1718170000000001",
        "a",
        [],
        [TensorSpec(np.zeros((2, 1, 2, 2, 16), np.float16), "FLOAT16", format="NC1HWC0", original_shape=[2, 5, 5, 3])],
    )
    status, text = _run(sample_data, f"pt {path}", width=400)
    assert status == ExitStatus.ERROR and "--device shows the device layout" in text and path.name in text
    status, text = _run(sample_data, f"pt {path} --device")
    assert status == ExitStatus.OK and _row(text, "shape") == "[2, 1, 2, 2, 16]"


# --- NAME resolution -------------------------------------------------------------------------


def test_parse_name():
    assert parse_name("a/b:output:2") == parse_name("a/b:output:2")
    spec = parse_name("debug_1:x/y:input:0")
    assert (spec.text, spec.source, spec.debug, spec.kind, spec.index) == ("x/y", "npu", "debug_1", "input", 0)
    spec = parse_name("golden:resnet/conv1/Relu:0")
    assert (spec.text, spec.source, spec.kind) == ("resnet/conv1/Relu:0", "tf", None)
    assert parse_name("input:0").kind is None  # a TF tensor name, not a selector
    with pytest.raises(PrecisionToolError):
        parse_name("npu: ")


@pytest.mark.parametrize(
    "name, label",
    [
        ("resnet/conv1/Relu:0", "resnet_conv1_Relu.0.1764410000001300.npy"),
        ("resnet_conv1_Relu.0", "resnet_conv1_Relu.0.1764410000001300.npy"),
        ("resnet_conv1_Relu.0.1764410000001300.npy", "resnet_conv1_Relu.0.1764410000001300.npy"),
        ("resnet_pool_Mean", "ReduceMeanD.resnet_pool_Mean.19.0.1764417600000333:output:0"),  # op beats golden
        ("tf:resnet_pool_Mean", "resnet_pool_Mean.0.1764410000002000.npy"),  # exact name beats prefix
        ("resnet/pool/MaxPool:input:0", "MaxPool.resnet_pool_MaxPool.17.0.1764417600000259:input:0"),
        ("TransData.trans_TransData_3", "TransData.trans_TransData_3.20.0.1764417600000370:output:0"),
        ("tf/dump/input.0.1764410000000000.npy", "input.0.1764410000000000.npy"),  # relative to the data root
    ],
)
def test_names_resolve(sample_data, name, label):
    context, _ = make_context(sample_data)
    assert resolve_tensor(context, name).label == label


def test_newest_launch_and_newest_golden_win(sample_data):
    step = sample_data / SAMPLE_STEP
    old = step / "Relu.resnet_relu2_Relu.16.0.1764417600000001"
    old.write_bytes((step / "Relu.resnet_relu2_Relu.16.0.1764417600000222").read_bytes())
    golden = sample_data / "tf/dump"
    (golden / "input.0.1764419999999999.npy").write_bytes((golden / "input.0.1764410000000000.npy").read_bytes())
    context, _ = make_context(sample_data)
    assert resolve_tensor(context, "resnet/relu2/Relu").label.startswith("Relu.resnet_relu2_Relu.16.0.1764417600000222")
    assert resolve_tensor(context, "Relu.resnet_relu2_Relu.16.0.1764417600000001").path == old
    assert resolve_tensor(context, "input:0").label == "input.0.1764419999999999.npy"
    assert read_golden(golden).path_for("input", 0).name == "input.0.1764419999999999.npy"


def test_later_debug_dirs_are_searched_only_with_a_prefix_or_when_debug_0_lacks_the_name(sample_data):
    import shutil

    shutil.copytree(sample_data / "npu/debug_0/dump", sample_data / "npu/debug_1/dump")
    context, _ = make_context(sample_data)
    assert "/debug_0/" in str(resolve_tensor(context, "resnet/conv1/Conv2D").path)
    assert "/debug_1/" in str(resolve_tensor(context, "debug_1:resnet/conv1/Conv2D").path)


def test_safe_file_name():
    assert safe_file_name("../a/b\\c:d", ".txt") == "__a_b_c_d.txt"
    assert safe_file_name("...", ".npy") == "_.npy"
    long = safe_file_name("x" * 400, ".output.0.2x3.npy")
    assert len(long) == 255 and long.endswith(".output.0.2x3.npy")
    assert long != safe_file_name("x" * 399 + "y", ".output.0.2x3.npy")  # the hash keeps them apart
    assert safe_file_name("Conv2D.a_b.1.2.1718170000000074", ".txt") == "Conv2D.a_b.1.2.1718170000000074.txt"


def test_a_symbolic_link_loop_is_named_as_such(sample_data, tmp_path):
    (tmp_path / "a.npy").symlink_to(tmp_path / "b.npy")
    (tmp_path / "b.npy").symlink_to(tmp_path / "a.npy")
    status, text = _run(sample_data, f"pt {tmp_path / 'a.npy'}", width=400)
    assert status == ExitStatus.ERROR
    assert text.strip() == f"error: {tmp_path / 'a.npy'}: a symbolic link that loops or points nowhere"
