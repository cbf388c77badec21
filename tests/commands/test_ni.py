"""``ni``: node info, dump and golden statistics, ``-a``, ``-g``, and the ``-s`` subgraph."""

from __future__ import annotations

import json
import math
import re
import shlex
import shutil
import struct
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from precision_tool.commands import build_registry
from precision_tool.commands.ni_report import graph_file_stem, safe_part
from precision_tool.commands.registry import run_words
from precision_tool.formats import digraph_files
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.render.palette import LEGEND_ORDER, swatch
from precision_tool.status import ExitStatus
from tests.conftest import FIXTURES, make_context, run_command

WIDE = 260  # no table cell is cut or wrapped
FIXTURE_GRAPH = "ge_default_20240612103000_1"
NUMPY_DTYPES = {"DT_FLOAT16": np.float16, "DT_FLOAT": np.float32}


def _ni(data: Path, line: str, **settings) -> tuple[ExitStatus, str]:
    context, out = make_context(data, width=WIDE, **settings)
    return run_command(context, line), out.getvalue()


def _table(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the rich table whose title contains ``title``, as {column: cell}."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    header = next(line for line in lines[start:] if "┃" in line)
    columns = [c.strip() for c in header.split("┃")[1:-1]]
    rows = []
    for line in lines[lines.index(header, start) + 1 :]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append(dict(zip(columns, (c.strip() for c in line.split("│")[1:-1]))))
    return rows


def _row(text: str, title: str, tensor: str) -> dict[str, str]:
    return next(r for r in _table(text, title) if r["tensor"] == tensor)


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _case() -> dict:
    return json.loads((FIXTURES / "small" / "case.json").read_text())


def _raw_dump_tensors(path: Path, specs: list[tuple[str, list[int]]]) -> list[np.ndarray]:
    """The tensors of a dump file read by hand: 8-byte header length, header, data back to back."""
    data = path.read_bytes()
    offset = 8 + struct.unpack("<Q", data[:8])[0]
    arrays = []
    for dtype_name, shape in specs:
        dtype = np.dtype(NUMPY_DTYPES[dtype_name])
        count = math.prod(shape)
        arrays.append(np.frombuffer(data, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    return arrays


def _snapshot(root: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


# --- node info on the sample ---------------------------------------------------------------------


def test_sample_conv_shows_fusion_kernel_dump_and_golden(sample_data):
    status, text = _ni(sample_data, "ni resnet/conv1/Conv2D")
    assert status == ExitStatus.OK
    assert re.search(r"^type\s+Conv2D\s*$", text, re.M)
    assert re.search(r"^PassName\s+ConvBiasAddFusionPass, TbeConvReluFusionPass\s*$", text, re.M)
    assert re.search(r"^OriginalOp\s+resnet/conv1/Conv2D, resnet/conv1/BiasAdd, resnet/conv1/Relu\s*$", text, re.M)
    assert re.search(r"^kernel name\s+te_conv2d_0006\s*$", text, re.M)
    assert re.search(r"^kernel lib\s+AIcoreEngine\s*$", text, re.M)
    assert re.search(r"^graph\s+ge_default_\d+_1\s+\[debug_0\]", text, re.M)
    dumps = sorted(sample_data.glob("npu/debug_0/dump/*/*/*/*/*/Conv2D.resnet_conv1_Conv2D.*"))
    latest = max(dumps, key=lambda p: int(p.name.split(".")[-1]))
    assert f"NPU dump (step 0, device 0): {latest.name}" in text
    golden = sorted(sample_data.glob("tf/dump/resnet_conv1_Relu.0.*.npy"))[-1]
    row = _row(text, "TF golden", "output:0 = resnet/conv1/Relu:0")
    array = np.load(golden).astype(np.float64)
    assert row["file"] == golden.name
    assert (row["max"], row["min"], row["mean"]) == (_fmt(array.max()), _fmt(array.min()), _fmt(array.mean()))
    inputs = _table(text, "inputs")
    assert [r["producer"] for r in inputs] == ["trans_TransData_1:0", "resnet/conv1/kernel:0", "resnet/conv1/bias:0"]
    outputs = _table(text, "outputs")
    assert outputs[0]["consumers"] == "resnet/bn1/FusedBatchNormV3:0"
    assert outputs[0]["origin name:index"] == "resnet/conv1/Relu:0"


def test_sample_name_option_and_unfused_op(sample_data):
    status, text = _ni(sample_data, "ni -n resnet/add/add")
    assert status == ExitStatus.OK
    assert re.search(r"^type\s+Add\s*$", text, re.M)
    assert "PassName" not in text  # not fused
    assert [r["producer"] for r in _table(text, "inputs")] == ["resnet/bn1/FusedBatchNormV3:0", "resnet/conv2/Conv2D:0"]


# --- node info on the small fixture --------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ["ni model/conv1/Conv2D", "ni model_conv1_Conv2D", "ni -n model/conv1/Conv2D", "ni -n model_conv1_Conv2D"]
)
def test_fixture_name_forms(fixture_data, line):
    status, text = _ni(fixture_data, line)
    assert status == ExitStatus.OK
    assert re.search(r"^op\s+model/conv1/Conv2D\s*$", text, re.M)
    assert re.search(r"^PassName\s+BiasaddConvFusionPass, TbeConvReluFusionPass\s*$", text, re.M)
    assert "model/conv1/Conv2D, model/conv1/BiasAdd, model/conv1/Relu" in text


def test_fixture_dump_stats_match_numpy_on_the_raw_file(fixture_data):
    case = _case()
    entry = next(f for f in case["dump_files"]["0"] if f["op"] == "model/conv1/Conv2D")
    tensors = [t for t in case["tensors"] if t["op"] == "model/conv1/Conv2D"]
    ordered = sorted(tensors, key=lambda t: (t["kind"] != "input", t["index"]))
    arrays = _raw_dump_tensors(fixture_data.parent / entry["file"], [(t["dtype"], t["device_shape"]) for t in ordered])
    status, text = _ni(fixture_data, "ni model/conv1/Conv2D")
    assert status == ExitStatus.OK
    title = f"NPU dump (step 0, device 0): {entry['file_name']}"
    assert title in text
    bias = arrays[2].astype(np.float64)  # ND: the device layout is the host layout
    row = _row(text, title, "input:2")
    assert (row["max"], row["min"], row["shape"]) == (_fmt(bias.max()), _fmt(bias.min()), "[8]")
    # NC1HWC0 [2,1,8,8,16] -> NHWC [2,8,8,8]: the mean leaves the 8 padding channels out
    n, c1, h, w, c0 = arrays[3].shape
    host = arrays[3].transpose(0, 2, 3, 1, 4).reshape(n, h, w, c1 * c0)[..., :8].astype(np.float64)
    row = _row(text, title, "output:0")
    assert row["format"] == "NC1HWC0->NHWC" and row["shape"] == "[2,8,8,8]"
    assert (row["max"], row["min"], row["mean"]) == (_fmt(host.max()), _fmt(host.min()), _fmt(host.mean()))
    assert row["mean"] != _fmt(arrays[3].astype(np.float64).mean())
    golden = np.load(fixture_data / "tf/dump" / case["golden_files"]["model/conv1/Relu:0"])
    row = _row(text, "TF golden", "output:0 = model/conv1/Relu:0")
    assert row["file"] == case["golden_files"]["model/conv1/Relu:0"]
    assert (row["max"], row["min"]) == (_fmt(golden.max()), _fmt(golden.min()))


def test_latest_launch_nan_inf_and_tensor_problems_are_noted(fixture_data):
    step = fixture_data / _case()["paths"]["npu_dump_dir"].removeprefix("precision_data/")
    newer = "Relu.model_relu2_Relu.99.0.1718170000009999"
    write_dump(
        step / newer,
        "model/relu2/Relu",
        [TensorSpec(np.zeros(4, np.float16), "FLOAT16", "ND", shape=(5,))],
        [TensorSpec(np.array([1, np.nan, np.inf, -2], np.float16), "FLOAT16", "ND", original_shape=(4,))],
    )
    status, text = _ni(fixture_data, "ni model/relu2/Relu")
    assert status == ExitStatus.OK
    title = f"NPU dump (step 0, device 0): {newer}"
    assert title in text and "Relu.model_relu2_Relu.16.0" not in text
    assert "needs 10 bytes but the dump holds 8" in _row(text, title, "input:0")["note"]
    row = _row(text, title, "output:0")
    assert (row["max"], row["min"], row["mean"]) == ("1", "-2", "-0.5")
    assert "1 NaN, 1 Inf" in row["note"]


def test_unreadable_dump_and_missing_golden_are_one_line_each(fixture_data):
    case = _case()
    entry = next(f for f in case["dump_files"]["0"] if f["op"] == "model/conv1/Conv2D")
    dump = fixture_data.parent / entry["file"]
    dump.write_bytes(dump.read_bytes()[:100])
    shutil.rmtree(fixture_data / "tf")
    status, text = _ni(fixture_data, "ni model/conv1/Conv2D")
    assert status == ExitStatus.OK
    assert re.search(rf"NPU dump \(step 0, device 0\): {re.escape(entry['file_name'])}: cannot read it", text)
    assert re.search(r"^TF golden: none \(.*golden.*\)$", text, re.M)


def test_missing_dumps_are_said_plainly(fixture_data):
    shutil.rmtree(fixture_data / "npu/debug_0/dump")
    status, text = _ni(fixture_data, "ni model/add/add")
    assert status == ExitStatus.OK
    assert "NPU dump: none" in text
    assert _row(text, "TF golden", "output:0 = model/add/add:0")["file"].startswith("model_add_add.0.")


def test_op_without_dump_file(fixture_data):
    status, text = _ni(fixture_data, "ni model/conv1/kernel")
    assert status == ExitStatus.OK
    assert ("NPU dump: no dump file of model/conv1/kernel in the newest run (debug_0, TF_DUMP_STEP=0)") in text
    golden = _row(text, "TF golden", "output:0 = model/conv1/kernel:0")
    assert golden["file"].startswith("model_conv1_kernel.0.")


def test_ambiguous_substring_lists_possible_operators(fixture_data):
    status, text = _ni(fixture_data, "ni conv1")
    assert status == ExitStatus.ERROR
    assert "possible operators" in text
    for name in ("model/conv1/Conv2D", "model/conv1/kernel", "model/conv1/bias"):
        assert name in text


def test_unknown_name_is_an_error_line(fixture_data):
    status, text = _ni(fixture_data, "ni no/such/op")
    assert status == ExitStatus.ERROR
    assert text.strip() == "error: no operator matches 'no/such/op'"


@pytest.mark.parametrize("line", ["ni", "ni a -n b", "ni -s -1 model/add/add", "ni model/add/add --bogus"])
def test_bad_arguments_print_usage(fixture_data, line):
    status, text = _ni(fixture_data, line)
    assert status == ExitStatus.ERROR
    assert "usage: ni" in text


def test_all_attributes(fixture_data):
    _, plain = _ni(fixture_data, "ni model/conv1/Conv2D")
    status, text = _ni(fixture_data, "ni model/conv1/Conv2D -a")
    assert status == ExitStatus.OK
    assert "│ padding" not in plain and not re.search(r"^attributes", plain, re.M)
    assert re.search(r"^attributes", text, re.M)
    rows = dict(_table_pairs(text))
    assert rows["padding"] == "SAME"
    assert rows["strides"] == "[1, 1, 1, 1]"
    assert rows["output[0]._datadump_origin_name"] == "model/conv1/Relu"
    assert rows["input[1].origin_format"] == "HWCN"
    keys = [k for k in rows if "[" not in k]
    assert keys == sorted(keys)


def _table_pairs(text: str):
    for row in _table(text, "attributes"):
        yield row["attribute"], row["value"]


def test_long_attribute_values_are_shortened(fixture_data):
    graph_dir = fixture_data / "npu/debug_0/graph"
    for path in graph_dir.glob("ge_proto_*"):
        path.unlink()
    spec = OpSpec(
        "big",
        "Const",
        output_descs=[tensor_desc("DT_FLOAT", "ND", (3,))],
        attrs={"many": list(range(1000)), "raw": b"\x00" * 64},
    )
    write_graph_text(build_model([spec], name="g"), graph_dir / "ge_proto_00000001_Build.txt")
    status, text = _ni(fixture_data, "ni big -a")
    assert status == ExitStatus.OK
    rows = dict(_table_pairs(text))
    assert rows["many"].startswith("[0, 1, 2,") and rows["many"].endswith("... (1000 items)]")
    assert rows["raw"] == "<64 bytes>"


def test_a_long_string_is_cut_but_a_name_in_a_list_never_is():
    from precision_tool.render.node_info import MAX_STRING_CHARS, short_value

    assert short_value("x" * 1500) == "x" * MAX_STRING_CHARS + "... (1500 characters)"
    assert short_value("model/" + "y" * 400) == "model/" + "y" * 400  # a name, whole
    names = [f"model/block_{k}/" + "z" * 30 for k in range(20)]
    shown = short_value(names)
    assert shown.endswith(", ... (20 items)]")
    items = shown[1:].split(", ... ")[0].split(", ")
    assert items and all(item in names for item in items)  # each shown item whole


def _add_second_graph(data: Path) -> None:
    desc = tensor_desc("DT_FLOAT16", "ND", (4,))
    ops = [OpSpec("model/conv1/Conv2D", "Conv2DBackpropInput", output_descs=[desc])]
    write_graph_text(build_model(ops, name="other_graph"), data / "npu/debug_0/graph/ge_proto_00000002_Build.txt")


def test_graph_option_filters(fixture_data):
    _add_second_graph(fixture_data)
    status, text = _ni(fixture_data, "ni model/conv1/Conv2D -g other_graph")
    assert status == ExitStatus.OK
    assert re.search(r"^type\s+Conv2DBackpropInput\s*$", text, re.M)
    assert re.search(r"^graph\s+other_graph\s+\[debug_0\]", text, re.M)
    # the dump dirs belong to the fixture's graph, not to other_graph
    assert "NPU dump: no dump file of model/conv1/Conv2D" in text
    status, text = _ni(fixture_data, f"ni model/conv1/Conv2D -g {FIXTURE_GRAPH}")
    assert re.search(r"^type\s+Conv2D\s*$", text, re.M) and "NPU dump (step 0" in text
    status, text = _ni(fixture_data, "ni model/conv1/Conv2D -g nope")
    assert status == ExitStatus.ERROR and "no graph named 'nope'" in text


# --- the -s subgraph -----------------------------------------------------------------------------

NODE_RE = re.compile(r"^\s*(n\d+) \[(label=.*)\]$", re.M)
TOOLTIP_RE = re.compile(r'tooltip=(?:"((?:[^"\\]|\\.)*)"|(\w+))')  # DOT quotes only when needed
LABEL_RE = re.compile(r'^label="(?:[^"\\]|\\.)*"')
EDGE_RE = re.compile(r"^\s*(n\d+)(?::out(\d+)(?::[a-z]+)?)? -> (n\d+)(?::in(\d+)(?::[a-z]+)?)?(.*)$", re.M)


def _expected_neighbourhood(case: dict, root: str, depth: int):
    """Nodes and edges of the depth-``depth`` neighbourhood (producers up, consumers down and
    the consumers' other producers), from case.json's op inputs."""
    inputs = {}
    for op in case["ops"]:
        parsed = [(entry.rsplit(":", 1)[0], int(entry.rsplit(":", 1)[1])) for entry in op["inputs"]]
        inputs[op["name"]] = [(src, idx) for src, idx in parsed if idx >= 0]
    consumers = defaultdict(set)
    for name, refs in inputs.items():
        for src, _ in refs:
            consumers[src].add(name)

    def reach(step):
        seen, frontier = {root}, {root}
        for _ in range(depth):
            frontier = {n for f in frontier for n in step(f)} - seen
            seen |= frontier
        return seen

    down = reach(lambda n: consumers[n])
    # the consumers' other producers too (the next MatMul's weight), as the original drew them
    side = {src for name in down - {root} for src, _ in inputs.get(name, [])}
    nodes = reach(lambda n: [src for src, _ in inputs[n]]) | down | side
    edges = {(src, idx, dst, port) for dst in nodes for port, (src, idx) in enumerate(inputs[dst]) if src in nodes}
    return nodes, edges


def _parse_gv(source: str):
    names, attrs = {}, {}
    for node_id, attributes in NODE_RE.findall(source):
        quoted, bare = TOOLTIP_RE.search(attributes).groups()
        names[node_id] = bare or quoted
        attrs[names[node_id]] = LABEL_RE.sub("", attributes)  # the attributes but the label
    edges = {(names[a], int(i), names[b], int(j)) for a, i, b, j, _ in EDGE_RE.findall(source)}
    return set(names.values()), edges, attrs


def _gv_path(data: Path, op_type: str, name: str, depth: int) -> Path:
    stem = graph_file_stem("debug_0", FIXTURE_GRAPH, op_type, name, depth)
    return data / "temp" / "op_graph" / f"{stem}.gv"


@pytest.mark.parametrize(
    "root,op_type",
    [
        ("model/conv1/Conv2D", "Conv2D"),
        ("model/bn1/FusedBatchNormV3", "BNInfer"),
        ("model/conv2/Conv2D", "Conv2D"),
        ("model/add/add", "Add"),
        ("trans_Cast_0", "Cast"),
        ("model/pool/Mean", "ReduceMeanD"),
        ("Node_Output", "NetOutput"),
    ],
)
def test_subgraph_is_exactly_the_depth_2_neighbourhood(fixture_data, root, op_type):
    status, text = _ni(fixture_data, f"ni {root} -s 2")
    assert status == ExitStatus.OK
    gv = _gv_path(fixture_data, op_type, root, 2)
    nodes, edges, attrs = _parse_gv(gv.read_text())
    want_nodes, want_edges = _expected_neighbourhood(_case(), root, 2)
    assert nodes == want_nodes
    assert edges == want_edges
    assert "penwidth=3" in attrs[root] and "filled,bold" in attrs[root]
    assert not any("penwidth" in a for name, a in attrs.items() if name != root)
    grey = swatch("not compared").colour
    assert all(f'fillcolor="{grey}"' in a for a in attrs.values())  # no result yet: all grey
    assert (
        str(gv)
        in text.splitlines()[
            text.splitlines().index(next(line for line in text.splitlines() if line.startswith("subgraph: ")))
        ]
    )  # the path line is whole


def test_subgraph_records_carry_port_dtypes_and_shapes(fixture_data):
    _ni(fixture_data, "ni model/add/add -s 1")
    source = _gv_path(fixture_data, "Add", "model/add/add", 1).read_text()
    assert (
        "{{<in0> in0 FLOAT16 NC1HWC0 [2,1,8,8,16]\\nhost NHWC [2,8,8,8]|"
        "<in1> in1 FLOAT16 NC1HWC0 [2,1,8,8,16]\\nhost NHWC [2,8,8,8]}|model/add/add\\nAdd\\nnot compared|"
        "{<out0> out0 FLOAT16 NC1HWC0 [2,1,8,8,16]\\nhost NHWC [2,8,8,8]}}" in source
    )


def test_argument_orders_give_the_same_subgraph(fixture_data):
    sources = []
    for line in ("ni model/add/add -s 2", "ni -s 2 model/add/add", "ni -n model/add/add -s 2"):
        assert _ni(fixture_data, line)[0] == ExitStatus.OK
        sources.append(_gv_path(fixture_data, "Add", "model/add/add", 2).read_text())
    assert sources[0] == sources[1] == sources[2]


@pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz 'dot' is not installed (CI installs it)")
def test_svg_is_rendered_with_dot(fixture_data):
    context, out = make_context(fixture_data, width=WIDE)
    result = run_words(build_registry(), shlex.split("ni model/add/add -s 2"), context)
    gv = _gv_path(fixture_data, "Add", "model/add/add", 2)
    svg = gv.with_suffix(".svg")
    assert result.files == [gv, svg]
    content = svg.read_text()
    assert content.lstrip().startswith("<?xml") and "<svg" in content
    want_nodes, want_edges = _expected_neighbourhood(_case(), "model/add/add", 2)
    assert content.count('class="node"') == len(want_nodes) + len(LEGEND_ORDER)  # and the legend
    assert content.count('class="edge"') == len(want_edges)
    assert any(type(r).__name__ == "FitTree" for r in result.renderables)  # the tree too, always


def test_without_dot_the_gv_is_written_and_a_tree_printed(fixture_data, monkeypatch):
    monkeypatch.setattr(digraph_files.shutil, "which", lambda *args, **kwargs: None)
    status, text = _ni(fixture_data, "ni model/add/add -s 2")
    assert status == ExitStatus.OK
    gv = _gv_path(fixture_data, "Add", "model/add/add", 2)
    assert gv.is_file() and not gv.with_suffix(".svg").exists()
    assert "'dot' is not installed" in text
    tree = text[text.index("model/add/add [Add]  not compared\n") :]
    assert "upstream (producers, depth 2)" in tree and "downstream (consumers, depth 2)" in tree
    assert "in0 <- model/bn1/FusedBatchNormV3:0 [BNInfer]" in tree
    assert "in0 <- model/conv1/Conv2D:0 [Conv2D]" in tree  # depth 2
    assert "out0 -> trans_TransData_2:in0 [TransData]" in tree
    assert "model/pool/Mean" not in tree  # depth 3


def test_depth_zero_is_the_op_alone(fixture_data):
    _ni(fixture_data, "ni model/add/add -s 0")
    nodes, edges, _ = _parse_gv(_gv_path(fixture_data, "Add", "model/add/add", 0).read_text())
    assert nodes == {"model/add/add"} and edges == set()


def test_file_name_parts_are_sanitised():
    part = safe_part("../a/b\\c d\x01..e")
    assert not re.search(r"[/\\ \x00-\x1f]|\.\.", part)
    stem = graph_file_stem("debug_0", "g/../x", "Conv2D", "a/b", 3)
    assert stem == "debug_0.g____x.Conv2D.a_b.3" and "/" not in stem
    long_a, long_b = safe_part("x" * 300 + "a"), safe_part("x" * 300 + "b")
    assert len(long_a) <= 60 and long_a != long_b


def test_writes_only_under_temp_even_for_hostile_names(fixture_data):
    graph_dir = fixture_data / "npu/debug_0/graph"
    hostile = "../../evil name/..\\x"
    desc = tensor_desc("DT_FLOAT", "ND", (2,))
    ops = [
        OpSpec("src", "Data", output_descs=[desc]),
        OpSpec(hostile, "Relu", inputs=["src:0"], input_descs=[desc], output_descs=[desc]),
    ]
    write_graph_text(build_model(ops, name="../g"), graph_dir / "ge_proto_00000003_Build.txt")
    outside = fixture_data.parent
    before = _snapshot(outside)
    for line in (
        f"ni {shlex.quote(hostile)} -s 1 -a",
        "ni model/add/add -s 2 -a",
        "ni -s 1 trans_Cast_0",
        "ni model/conv1/Conv2D",
    ):
        assert _ni(fixture_data, line)[0] == ExitStatus.OK, line
    after = _snapshot(outside)
    changed = {p for p in after if before.get(p) != after[p]}
    temp = fixture_data / "temp"
    assert changed and all(p.is_relative_to(temp) for p in changed)
    assert set(before) <= set(after)
    written = sorted(p.name for p in (temp / "op_graph").glob("*.gv"))
    assert any(name.startswith("debug_0.___g.Relu.") for name in written)
    assert all(p.parent == temp / "op_graph" for p in changed)


# --- several graphs holding one name (real dumps) -------------------------------------------------


def _real_root(real_dir: Path, tmp_path: Path) -> Path:
    """A data root whose debug_0 holds the real ge_proto graph (renamed with graph id 11) and
    the real ge_onnx graph (graph id 1): both have an op called Variable."""
    root = tmp_path / "precision_data"
    graph_dir = root / "npu" / "debug_0" / "graph"
    graph_dir.mkdir(parents=True)
    shutil.copy(real_dir / "ge_proto_00000001_Build.txt", graph_dir / "ge_proto_00000001_graph_11_Build.txt")
    shutil.copy(real_dir / "ge_onnx_00000000_graph_1_Build.pbtxt", graph_dir)
    return root


def test_a_name_held_by_several_graphs_shows_every_match_with_its_graph(real_dir, tmp_path):
    root = _real_root(real_dir, tmp_path)
    status, text = _ni(root, "ni Variable")
    assert status == ExitStatus.OK
    assert (
        "2 graphs of debug_0 hold Variable: ge_default_20230713074122_1 (graph id 1), "
        "ge_default_20230713074125_sub_1_unknow (graph id 11)" in " ".join(text.split())
    )
    assert "-- 1/2: Variable in ge_default_20230713074122_1 (graph id 1) [debug_0] --" in text
    assert "-- 2/2: Variable in ge_default_20230713074125_sub_1_unknow (graph id 11) [debug_0] --" in text
    assert len(re.findall(r"^type\s+Variable\s*$", text, re.M)) == 2
    status, text = _ni(root, "ni Variable -g 11")
    assert status == ExitStatus.OK and "hold Variable" not in text
    assert re.search(r"^graph id\s+11\s*$", text, re.M)
    status, text = _ni(root, "ni Variable -g ge_default_20230713074122_1 -s 1")
    assert status == ExitStatus.OK and re.search(r"^graph id\s+1\s*$", text, re.M)
    assert "subgraph: 3 ops" in text  # Variable, its consumer Assign, and Assign's other input


def test_g_naming_nothing_is_one_error_line(real_dir, tmp_path):
    status, text = _ni(_real_root(real_dir, tmp_path), "ni Variable -g 99")
    assert status == ExitStatus.ERROR and "no graph named '99'" in text
    assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1
