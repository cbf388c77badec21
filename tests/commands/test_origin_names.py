"""One spelling of an output's origin (TF name and output index) through the real CLI: what
``vc`` pairs an output with, what ``ni`` shows for it and what Model Explorer shows for the node
of ``report --model-explorer`` are the same ``name:index``.

The op has three outputs whose origins test the three readings GE's attributes allow: an index
given and equal to the output's position (``tf/P``), no ``_datadump_origin_output_index`` at all
(``tf/A``: the output's own position, 1, as Huawei's own graph parser reads it), and an index
given that differs from the position (``tf/B``: 0 at position 2). The wrong readings have golden
files of their own, with other values, so a wrong pairing compares without a reason and only
its cosine gives it away.
"""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from precision_tool.formats.dump_names import normalise_op_name
from precision_tool.formats.dump_write import TensorSpec, write_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from tests.commands.test_why import cli
from tests.model_explorer.explorer import convert, require_explorer
from tests.netdata import GRAPH_REL, INPUT, MODEL, SHAPE, STEP_REL, TS

OP = "npu/SplitFused"
EXPECTED = ["tf/P:0", "tf/A:1", "tf/B:0"]  # output 0, 1, 2
WRONG = ["tf/A:0", "tf/B:2"]  # the other readings of outputs 1 and 2: golden files with other values
_SPELLED = re.compile(r"\btf/[ABP]:(?:\d+|None)\b")


def _desc(**origin):
    return tensor_desc("DT_FLOAT16", "ND", SHAPE, origin_format="ND", origin_shape=SHAPE, **origin)


def _write(root):
    """The data root: a Data op and one three-output op; its dump; the goldens."""
    outputs = [
        _desc(origin_name="tf/P", origin_output_index=0),
        _desc(origin_name="tf/A"),
        _desc(origin_name="tf/B", origin_output_index=0),
    ]
    ops = [
        OpSpec(INPUT, "Data", output_descs=[_desc(origin_name=INPUT, origin_output_index=0)]),
        OpSpec(OP, "SplitD", [f"{INPUT}:0"], [_desc()], outputs, original_op_names=["tf/P", "tf/A", "tf/B"]),
    ]
    graph = root / GRAPH_REL
    graph.parent.mkdir(parents=True)
    write_graph_text(build_model(ops, name=MODEL), graph)
    rng = np.random.default_rng(5)
    values = {name: rng.standard_normal(SHAPE).astype(np.float32) for name in [INPUT + ":0", *EXPECTED, *WRONG]}
    for k, (tensor, value) in enumerate(values.items()):
        name, index = tensor.rsplit(":", 1)
        write_golden(root / "tf" / "dump", name, int(index), TS + k, value)
    half = {t: v.astype(np.float16) for t, v in values.items()}
    write_dump(
        root / STEP_REL / f"SplitD.{normalise_op_name(OP)}.2.0.{TS + 50}",
        OP,
        [TensorSpec(half[INPUT + ":0"], "FLOAT16", original_shape=SHAPE)],
        [TensorSpec(half[t], "FLOAT16", original_shape=SHAPE) for t in EXPECTED],
        dump_time=TS + 50,
    )
    return root


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """The data root after ``vc``, and the rows of its result CSV by TensorIndex."""
    root = _write(tmp_path_factory.mktemp("origin") / "precision_data")
    done = cli("--data", str(root), "vc")
    assert done.returncode in (0, 1), done.stderr
    (path,) = (root / "temp" / "vector_compare").glob("*/*.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        rows = {row["TensorIndex"]: row for row in csv.DictReader(handle)}
    return root, rows


def test_vc_pairs_each_output_with_its_origin(compared):
    _, rows = compared
    for k in range(3):
        row = rows[f"{OP}:output:{k}"]
        assert row["CompareFailReason"] == "" and row["GroundTruth"] == "tf/P,tf/A,tf/B"
        assert float(row["CosineSimilarity"]) > 0.9999, (k, row["CosineSimilarity"])  # its own golden


def test_ni_spells_every_origin_as_vc_pairs_it(compared):
    root, _ = compared
    done = cli("--data", str(root), "ni", OP)
    assert done.returncode == 0, done.stderr
    spelled = set(_SPELLED.findall(done.stdout))
    assert spelled == set(EXPECTED), done.stdout
    for k, tensor in enumerate(EXPECTED):  # the golden table names each output's golden
        assert f"output:{k} = {tensor}" in done.stdout


def test_model_explorer_shows_the_origins_vc_pairs(compared, tmp_path):
    require_explorer()
    root, _ = compared
    done = cli("--data", str(root), "report", "--model-explorer", "-o", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("model explorer: "))
    graph_path = str(root / GRAPH_REL)
    launch = json.loads(open(line.split()[-1], encoding="utf-8").read())  # the explore.json it names
    assert launch["graph"] == str((root / GRAPH_REL).resolve())
    (cosine_file,) = [p for p in launch["node_data"] if p.endswith("/CosineSimilarity.json")]
    results = json.loads(open(cosine_file, encoding="utf-8").read())[MODEL]["results"]
    assert results[OP]["value"] > 0.9999  # the node data colours the op by its own goldens
    (graph,) = convert(graph_path)["graphs"]
    node = next(n for n in graph["nodes"] if n["id"] == OP)
    shown = [{kv["key"]: kv["value"] for kv in item["attrs"]}["origin_name"] for item in node["outputsMetadata"]]
    assert shown == EXPECTED
