"""The overflow check: Opdebug files decoded, the op found by the payload's ids, the limit, the
absent and empty cases, Inf/NaN against golden, the sample, and the panel."""

from __future__ import annotations

import io
import math
import os
import shutil
import struct

import numpy as np
import pytest
from rich.console import Console

from precision_tool.checks import overflow
from precision_tool.checks.overflow import (
    DEFAULT_LIMIT,
    check_overflow,
    find_overflows,
)
from precision_tool.compare.plan import graph_for_step, npu_vs_golden
from precision_tool.formats.dump import read_dump
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.golden import read_golden
from precision_tool.formats.overflow import (
    NANO_MAGIC,
    PAYLOAD_SIZE,
    UnitInfo,
    build_overflow_payload,
    opdebug_file_name,
    write_overflow_dump,
)
from precision_tool.formats.tree import DumpTree
from precision_tool.render.overflow import render_overflow
from precision_tool.render.theme import THEME
from precision_tool.sample.overflow import overflow_step_dir, write_overflow_sample
from tests.conftest import make_context

RUN, OLD_RUN = "20260101120000", "20251231120000"
T0 = 1767268800000000
SIGN_BIT = "AI Core: sign-bit inversion overflow (NEG of the most negative integer)"
FLOAT_OVERFLOW = "AI Core: floating-point overflow"


def step_dir(root, run=RUN):
    return root / "overflow" / "dump" / run / "0" / "ge_default_1" / "1" / "0"


def _f16(values):
    return np.array(values, dtype=np.float16)


def write_op_dumps(directory):
    """Ordinary dumps: conv (task 7, stream 3) twice, a decoy on stream 4, add (task 8, stream 3)."""
    conv_in = TensorSpec(_f16([[1.0, -2.0], [3.0, 4.0]]), "FLOAT16")
    conv_out = TensorSpec(_f16([np.inf, 2.0, -6.0, 1.0]), "FLOAT16")
    write_dump(directory / f"Conv2D.net_conv.7.3.{T0 + 1}", "net/conv", [conv_in], [conv_out])
    later = TensorSpec(_f16([0.5, 0.5, 0.5, 0.5]), "FLOAT16")  # a later launch: not the first
    write_dump(directory / f"Conv2D.net_conv.7.3.{T0 + 60}", "net/conv", [conv_in], [later])
    write_dump(directory / f"Mul.net_decoy.7.4.{T0 + 2}", "net/decoy", [conv_in], [later])
    add_in = TensorSpec(_f16([np.nan, 1.0, 2.0]), "FLOAT16")
    add_out = TensorSpec(np.array([1, 2, 3], np.int32), "INT32")
    write_dump(directory / f"Add.net_add.8.3.{T0 + 3}", "net/add", [add_in], [add_out])


def write_debug_files(directory):
    """Five Opdebug files, written out of timestamp order; file-name ids are the debug task's."""
    conv, add = UnitInfo(1, 3, 7, 0, 0x100, 0x200), UnitInfo(1, 3, 8, 0, 0x300, 0x400)
    files = {
        40: build_overflow_payload(conv, 0),  # no overflow
        10: build_overflow_payload(conv, 0x8 | 0x20, kernel_code=0x77, block_idx=2),
        30: build_overflow_payload(l2=add, l2_status=2 << 16),
        25: struct.pack("<I", NANO_MAGIC) + bytes(PAYLOAD_SIZE - 4),
        20: build_overflow_payload(dha=add, dha_status=0x9 << 8),
    }
    for offset, payload in files.items():
        write_overflow_dump(directory / opdebug_file_name(50 + offset, 9, T0 + offset), payload)


@pytest.fixture
def overflow_root(tmp_path):
    root = tmp_path / "precision_data"
    write_op_dumps(step_dir(root))
    write_debug_files(step_dir(root))
    old = step_dir(root, OLD_RUN)  # an older run: never looked at
    write_overflow_dump(old / opdebug_file_name(1, 1, T0 - 100), build_overflow_payload(UnitInfo(), 0x400))
    return root


def test_each_finding_is_decoded_and_points_at_its_op(overflow_root):
    result = find_overflows(overflow_root / "overflow" / "dump", limit=0)
    assert result.present and result.found and result.run == RUN and result.debug_files == 5
    assert [f.timestamp - T0 for f in result.findings] == [10, 20, 25, 30, 40]
    first, dha, magic, l2, clean = result.findings
    assert first.types == [SIGN_BIT, FLOAT_OVERFLOW]
    assert (first.payload.task_id, first.payload.stream_id) == (7, 3)
    assert first.file_name == opdebug_file_name(60, 9, T0 + 10)  # ids in the name are not used
    assert first.payload.ai_core.kernel_code == 0x77 and first.payload.ai_core.block_idx == 2
    assert first.op.op_name == "net/conv" and first.op.file_name == f"Conv2D.net_conv.7.3.{T0 + 1}"
    conv_in, conv_out = first.op.tensors
    assert (conv_in.name, conv_in.shape, conv_in.dtype) == ("input:0", (2, 2), "float16")
    assert (conv_in.stats.max, conv_in.stats.min, conv_in.stats.mean) == (4.0, -2.0, 1.5)
    assert not conv_in.has_inf_nan
    assert conv_out.has_inf_nan and (conv_out.stats.inf, conv_out.stats.nan) == (1, 0)
    assert (conv_out.stats.max, conv_out.stats.min, conv_out.stats.mean) == (2.0, -6.0, -1.0)
    assert first.overflowed and first.op.has_inf_nan
    assert dha.types == ["DHA atomic add: overflow"] and dha.payload.culprit.unit == "DHA atomic add"
    assert dha.op.op_name == "net/add"
    add_in, add_out = dha.op.tensors
    assert add_in.has_inf_nan and add_in.stats.nan == 1 and add_in.stats.mean == 1.5
    assert not add_out.has_inf_nan and add_out.dtype == "int32" and add_out.stats.max == 3
    assert "not supported" in magic.problem and magic.payload is None and magic.op is None
    assert l2.types == ["L2 atomic add: underflow"] and l2.op.op_name == "net/add"
    assert not clean.overflowed and clean.types == [] and clean.op.op_name == "net/conv"


@pytest.mark.parametrize(
    "limit, expected",
    [
        (1, [10]),
        (2, [10, 20]),
        (None, [10, 20, 25]),
        (DEFAULT_LIMIT, [10, 20, 25]),
        (9, [10, 20, 25, 30, 40]),
        (0, [10, 20, 25, 30, 40]),
    ],
)
def test_the_limit_shows_exactly_that_many_in_timestamp_order(overflow_root, limit, expected):
    result = find_overflows(overflow_root / "overflow" / "dump", limit=limit)
    assert [f.timestamp - T0 for f in result.shown] == expected
    assert [f.timestamp - T0 for f in result.findings] == [10, 20, 25, 30, 40]  # all, whatever -l
    assert result.debug_files == 5


@pytest.mark.parametrize("limit", [1, None, 0])
def test_the_conclusion_counts_every_file_and_names_the_first_to_overflow_first(overflow_root, limit):
    """net/conv overflows at T0+10, net/add at T0+20: conv is named first (alphabetically it
    would come last), and the count is 3 of 5 at every -l."""
    from precision_tool.render.conclusion import overflow_line

    line = overflow_line(find_overflows(overflow_root / "overflow" / "dump", limit=limit)).plain
    assert "3 of 5 Opdebug file(s) report an overflow in net/conv, net/add" in line


def test_no_matching_op_is_said(tmp_path):
    root = tmp_path / "precision_data"
    write_overflow_dump(
        step_dir(root) / opdebug_file_name(1, 1, T0), build_overflow_payload(UnitInfo(task_id=99, stream_id=3), 0x20)
    )
    (finding,) = find_overflows(root / "overflow" / "dump").findings
    assert finding.op is None
    assert "no dump with task id 99 and stream id 3" in finding.op_problem


def test_a_tensor_that_does_not_convert_is_shown_in_device_layout(tmp_path):
    root = tmp_path / "precision_data"
    odd = TensorSpec(np.ones((1, 1, 2, 2, 16), np.float16), "FLOAT16", "NC1HWC0", original_shape=(1, 2, 2, 99))
    write_dump(step_dir(root) / f"Conv2D.net_odd.5.0.{T0}", "net/odd", [odd], [])
    write_overflow_dump(
        step_dir(root) / opdebug_file_name(1, 1, T0 + 1),
        build_overflow_payload(UnitInfo(task_id=5, stream_id=0), 0x400),
    )
    (finding,) = find_overflows(root / "overflow" / "dump").findings
    assert finding.types == ["AI Core: cube accumulation overflow"]
    (tensor,) = finding.op.tensors
    assert tensor.note == "device layout" and tensor.shape == (1, 1, 2, 2, 16) and tensor.stats.mean == 1.0
    assert "device layout" in render_text(render_overflow(find_overflows(root / "overflow" / "dump")))


def test_missing_overflow_dir_is_data_absent(tmp_path):
    root = tmp_path / "precision_data"
    root.mkdir()
    context, _ = make_context(root)
    result = check_overflow(context)
    assert not result.present and not result.found and result.findings == ()
    assert "no NPU dumps" in result.nonfinite_absent
    text = render_text(render_overflow(result))
    where = str(root / "overflow" / "dump")
    assert text.strip().replace("\n", "") == (
        f"overflow check: data absent: looked for Opdebug.Node_OpDebug.* files in {where}"
    )


@pytest.mark.parametrize("with_dumps", [False, True])
def test_no_opdebug_files_is_nothing_found(tmp_path, with_dumps):
    root = tmp_path / "precision_data"
    (root / "overflow" / "dump").mkdir(parents=True)
    if with_dumps:
        write_op_dumps(step_dir(root))
    result = find_overflows(root / "overflow" / "dump")
    assert result.present and not result.found and result.findings == ()
    text = render_text(render_overflow(result))
    assert "nothing found: no Opdebug file in the newest run of" in text
    assert "data absent" not in text


def render_text(renderable, width=200) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, theme=THEME, color_system=None).print(renderable)
    return buffer.getvalue()


def test_the_panel_shows_types_ids_op_and_tensors(overflow_root):
    result = find_overflows(overflow_root / "overflow" / "dump", limit=3)
    text = render_text(render_overflow(result))
    assert "overflow check" in text
    assert f"run {RUN}: 5 Opdebug file(s), the first 3 (limit 3; -l 0 shows all), oldest first" in text
    assert (
        "AI Core status 0x28: sign-bit inversion overflow (NEG of the most negative integer); floating-point overflow"
    ) in text
    assert "task id 7, stream id 3 (from the AI Core info words), kernel_code 0x77, block_idx 2" in text
    assert f"op: Conv2D net/conv  (Conv2D.net_conv.7.3.{T0 + 1})  holds Inf/NaN" in text
    assert "DHA atomic add status 0x900: overflow" in text
    assert "cannot decode:" in text and "not supported" in text
    assert "L2 atomic add" not in text  # the fourth file is past the limit
    rows = [line for line in text.splitlines() if "output:0" in line]
    assert any("[4]" in r and "float16" in r and "yes (1 inf, 0 nan)" in r for r in rows)
    assert any("int32" in r and " no " in r for r in rows)
    assert "not checked" not in text  # find_overflows alone: the golden part was not asked for


# --- Inf/NaN against golden ------------------------------------------------------------------


def rewrite_dump(path, mutate):
    """Rewrite one NPU dump with ``mutate(kind, index, array) -> array`` applied (device layout)."""
    dump = read_dump(path)

    def spec(tensor, with_origin):
        array = mutate(tensor.kind, tensor.index, np.array(tensor.device()))
        origin = tensor.original_op if with_origin else None
        return TensorSpec(
            array,
            _data_type(tensor),
            tensor.format,
            tensor.original_shape or None,
            (origin.name, origin.output_index, origin.format) if origin else None,
            tensor.sub_format,
        )

    inputs = [spec(t, False) for t in dump.inputs]
    outputs = [spec(t, True) for t in dump.outputs]
    write_dump(path, dump.op_name, inputs, outputs)


def _data_type(tensor):
    from precision_tool.formats.proto.dump_enums import DATA_TYPE_NAMES

    return DATA_TYPE_NAMES[tensor.data_type]


def plant_inf(kind="output", index=0, flat_index=0, value=np.inf):
    def mutate(k, i, array):
        if (k, i) == (kind, index):
            array.reshape(-1)[flat_index] = value
        return array

    return mutate


def npu_file(root, op_file_prefix):
    step = next(iter((root / "npu/debug_0/dump").rglob(f"{op_file_prefix}.*")))
    return step


def test_inf_where_golden_has_none_is_listed_in_execution_order(sample_data):
    shutil.rmtree(sample_data / "overflow")  # the Opdebug part is then "data absent"
    rewrite_dump(npu_file(sample_data, "SoftmaxV2.resnet_softmax_Softmax"), plant_inf(value=np.nan))
    rewrite_dump(npu_file(sample_data, "Relu.resnet_relu2_Relu"), plant_inf())
    # conv1's output holds inf, and so does its golden: not new, not listed.
    rewrite_dump(npu_file(sample_data, "Conv2D.resnet_conv1_Conv2D"), plant_inf())
    golden_path = read_golden(sample_data / "tf/dump").path_for("resnet/conv1/Relu", 0)
    golden = np.load(golden_path)
    golden.reshape(-1)[5] = np.inf
    np.save(golden_path, golden)
    context, _ = make_context(sample_data)
    result = check_overflow(context)
    assert result.nonfinite_absent == ""
    listed = [(item.tensor_index, item.npu.inf, item.npu.nan) for item in result.nonfinite]
    assert listed == [("resnet/relu2/Relu:output:0", 1, 0), ("resnet/softmax/Softmax:output:0", 0, 1)]
    relu = result.nonfinite[0]
    assert relu.op_type == "Relu" and relu.golden.finite and relu.npu.shape == (4, 12, 12, 24)
    assert relu.golden_path.name.startswith("resnet_relu2_Relu.0.")
    assert result.nonfinite[0].position < result.nonfinite[1].position
    assert result.flagged
    text = render_text(render_overflow(result))
    assert "data absent: looked for Opdebug.Node_OpDebug.* files in" in text  # still said
    assert "NPU tensors holding Inf/NaN where golden does not" in text
    assert text.index("resnet/relu2/Relu:output:0") < text.index("resnet/softmax/Softmax:output:0")
    assert "resnet/conv1/Conv2D:output:0" not in text


def test_finite_sample_lists_nothing(sample_data):
    shutil.rmtree(sample_data / "overflow")
    context, _ = make_context(sample_data)
    result = check_overflow(context)
    assert result.nonfinite == () and result.nonfinite_absent == "" and not result.flagged
    # No overflow dumps and nothing non-finite: the one "data absent" line.
    assert len(render_text(render_overflow(result)).strip().splitlines()) == 1
    write_overflow_sample(sample_data)
    context.reload()
    text = render_text(render_overflow(check_overflow(context)))
    assert "nothing found: no NPU tensor holds Inf/NaN where its golden does not" in text


def test_the_scan_reads_each_small_dump_file_once_for_all_its_tensors(sample_data, monkeypatch):
    """The finite sample's tasks, paired first: the scan opens every NPU dump file once (its
    bytes give the header and every tensor) and maps none; it used to read each header, then map
    each tensor."""
    context, _ = make_context(sample_data)
    listings, models = context.step_listings("debug_0"), context.models("debug_0")
    scans = [
        (step, list(npu_vs_golden(step, listing, context.golden(), graph_for_step(step, models)).tasks))
        for step, listing in listings.items()
    ]
    dumps = sorted(str(p) for p in (sample_data / "npu/debug_0/dump").rglob("*") if p.is_file())
    opened: list[str] = []
    real_open = os.open

    def counting_open(path, *args, **kwargs):
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(np, "memmap", None)  # any mapping fails the scan loudly
    assert [overflow._scan_tasks(step, tasks) for step, tasks in scans] == [[]]
    counts = {path: opened.count(path) for path in dumps}
    assert len(dumps) > 5 and set(counts.values()) == {1}, counts


# --- the sample ---------------------------------------------------------------------------------


def test_sample_overflow_run_shows_a_real_finding(sample_data):
    shutil.rmtree(sample_data / "overflow")  # the shipped sample has it; write it anew
    before = sorted(p.relative_to(sample_data) for p in sample_data.rglob("*") if p.is_file())
    write_overflow_sample(sample_data)
    after = sorted(p.relative_to(sample_data) for p in sample_data.rglob("*") if p.is_file())
    added = sorted(set(after) - set(before))
    assert len(added) == 2 and all(p.parts[:2] == ("overflow", "dump") for p in added)
    assert overflow_step_dir(sample_data).is_dir()
    context, _ = make_context(sample_data)
    result = check_overflow(context)
    (finding,) = result.findings
    assert finding.types == [FLOAT_OVERFLOW, "AI Core: FP32-to-FP16 or INT32-to-FP16 conversion overflow"]
    assert (finding.payload.task_id, finding.payload.stream_id) == (19, 0)
    assert finding.file_name.startswith("Opdebug.Node_OpDebug.2.1.")
    assert (finding.op.op_type, finding.op.op_name) == ("ReduceMeanD", "resnet/pool/Mean")
    op_in, op_out = finding.op.tensors
    assert not op_in.has_inf_nan and op_in.shape == (4, 6, 6, 24)
    assert op_out.has_inf_nan and op_out.shape == (4, 24) and op_out.stats.inf == 29
    assert math.isfinite(op_out.stats.max) and op_out.stats.max < 65504
    assert result.nonfinite == ()  # npu/ and tf/ are untouched
    text = render_text(render_overflow(result))
    assert "AI Core status 0x120: floating-point overflow; FP32-to-FP16" in text
    assert "op: ReduceMeanD resnet/pool/Mean" in text and "yes (29 inf, 0 nan)" in text


def test_sample_overflow_is_reproducible(tmp_path):
    first, second = write_overflow_sample(tmp_path / "a"), write_overflow_sample(tmp_path / "b")
    names = sorted(p.name for p in first.iterdir())
    assert names == sorted(p.name for p in second.iterdir()) and len(names) == 2
    assert all((first / n).read_bytes() == (second / n).read_bytes() for n in names)
    assert DumpTree(tmp_path / "a" / "overflow" / "dump").newest_run() == "20261129130000"
