"""A data root holding each Build graph name form works for ``ls``, ``ni -s 1`` and ``vc``,
driven through the real command line (``python -m precision_tool``).

The forms: the sample's ``ge_proto_00000001_Build.txt`` (8-digit index), a 5-digit index, the
newer ``ge_proto_00000001_graph_1_Build.txt``, only ``ge_onnx_00000000_graph_1_Build.pbtxt``
(the sample graph written as GE's ONNX text), only atc's JSON under a name of the user's
(``resnet50.json``), and only an offline model (``model.om``, built byte by byte around the
graph's binary ModelDef). What each must give is computed from the sample graph's raw text, and
every form must give the same comparison rows.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_write import write_graph_json
from precision_tool.formats.onnx_write import write_graph_onnx
from tests.formats.om_bytes import om_of_text_graph

SAMPLE_NAME = "ge_proto_00000001_Build.txt"
FORMS = {
    "8-digit": "ge_proto_00000001_Build.txt",
    "5-digit": "ge_proto_00001_Build.txt",
    "graph id": "ge_proto_00000001_graph_1_Build.txt",
    "ge_onnx only": "ge_onnx_00000000_graph_1_Build.pbtxt",
    "atc JSON, own name": "resnet50.json",
    "om only": "model.om",
}
ROOT_OP = "trans_TransData_3"  # feeds resnet/dense/MatMul, whose weight and bias come from elsewhere


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(root.parent), "XDG_DATA_HOME": str(root.parent / ".xdg")}
    env.pop("PRECISION_TOOL_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        cwd=root.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> Path:
    """The sample data tree, written by ``python -m precision_tool.sample DIR``."""
    root = tmp_path_factory.mktemp("sample") / "precision_data"
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", str(root)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return root


def _raw_types(path: Path) -> Counter:
    """Op types of a ge_proto TextFormat graph, by regex on its text."""
    blocks = re.findall(r"^  op \{\n(.*?)^  \}\n", path.read_text(encoding="utf-8"), re.M | re.S)
    return Counter(re.search(r'^    type: "(.*)"$', b, re.M).group(1) for b in blocks)


def _with_form(sample: Path, tmp_path: Path, form: str) -> Path:
    root = tmp_path / form.replace(" ", "_") / "precision_data"
    shutil.copytree(sample, root)
    for debug in ("debug_0", "debug_1"):
        original = root / "npu" / debug / "graph" / SAMPLE_NAME
        target = original.with_name(FORMS[form])
        if target.name.startswith("ge_onnx"):
            write_graph_onnx(read_graph(original), target)
            original.unlink()
        elif target.suffix == ".json":
            write_graph_json(read_graph(original), target)
            original.unlink()
        elif target.suffix == ".om":
            target.write_bytes(om_of_text_graph(original.read_text(encoding="utf-8")))
            original.unlink()
        elif target != original:
            original.rename(target)
    return root


def _rows(root: Path) -> list[tuple]:
    (path,) = (root / "temp" / "vector_compare").glob("*/result_*.csv")
    with path.open(newline="", encoding="utf-8") as handle:
        table = list(csv.reader(handle))
    header = table[0]
    keep = [
        header.index(name)
        for name in (
            "Index",
            "OpType",
            "NPUDump",
            "TensorIndex",
            "GroundTruth",
            "CosineSimilarity",
            "CompareFailReason",
        )
    ]
    return [tuple(row[i] for i in keep) for row in table[1:]]


@pytest.fixture(scope="module")
def reference_rows(sample, tmp_path_factory) -> list[tuple]:
    root = tmp_path_factory.mktemp("reference") / "precision_data"
    shutil.copytree(sample, root)
    done = _cli(root, "vc")
    assert done.returncode in (0, 1), done.stderr
    return _rows(root)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_ls_counts_the_ops_of_the_graph_text(sample, tmp_path, form):
    types = _raw_types(sample / "npu" / "debug_0" / "graph" / SAMPLE_NAME)
    root = _with_form(sample, tmp_path, form)
    done = _cli(root, "ls", "-d", "debug_0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for op_type, count in types.items():
        assert re.search(rf"^│ {re.escape(op_type)}\s+│\s+{count} │$", out, re.M), (op_type, out)
    assert re.search(rf"^│ total\s+│\s+{sum(types.values())} │$", out, re.M)
    assert FORMS[form] in out
    graph_id = "1" if "graph_1" in FORMS[form] else "-"
    assert re.search(rf"{re.escape(FORMS[form])}\s+│\s+{graph_id} │", out)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_ni_s1_draws_the_consumer_and_its_other_producers(sample, tmp_path, form):
    root = _with_form(sample, tmp_path, form)
    done = _cli(root, "ni", ROOT_OP, "-s", "1", "-d", "debug_0")
    assert done.returncode == 0, done.stderr
    (gv,) = (root / "temp" / "op_graph").glob(f"debug_0.*.{ROOT_OP}.1.gv")
    source = gv.read_text(encoding="utf-8")
    for name in (ROOT_OP, "resnet/pool/Mean", "resnet/dense/MatMul", "resnet/dense/kernel", "resnet/dense/bias"):
        assert f'tooltip="{name}"' in source or f"tooltip={name}" in source, (name, source)
    assert "resnet/softmax/Softmax" not in source  # two edges down
    if "graph_1" in FORMS[form]:
        assert re.search(r"^graph id\s+1\s*$", done.stdout, re.M)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_vc_gives_the_same_rows_in_every_form(sample, tmp_path, form, reference_rows):
    root = _with_form(sample, tmp_path, form)
    done = _cli(root, "vc")
    assert done.returncode in (0, 1), done.stderr
    assert "tensors compared" in done.stdout
    rows = _rows(root)
    assert rows == reference_rows
    assert any(row[2] == "resnet/conv1/Conv2D" for row in rows)  # the graph paired the dumps


def test_ge_proto_and_ge_onnx_of_one_graph_are_read_once(sample, tmp_path):
    root = _with_form(sample, tmp_path, "graph id")
    graph = root / "npu" / "debug_0" / "graph"
    write_graph_onnx(read_graph(graph / FORMS["graph id"]), graph / FORMS["ge_onnx only"])
    done = _cli(root, "ls", "-d", "debug_0")
    assert done.returncode == 0, done.stderr
    assert FORMS["ge_onnx only"] not in done.stdout
    total = sum(_raw_types(sample / "npu" / "debug_0" / "graph" / SAMPLE_NAME).values())
    assert re.search(rf"^│ total\s+│\s+{total} │$", done.stdout, re.M)


def test_another_stage_is_read_only_when_g_names_it(sample, tmp_path):
    root = _with_form(sample, tmp_path, "graph id")
    graph = root / "npu" / "debug_0" / "graph"
    shutil.copy(graph / FORMS["graph id"], graph / "ge_proto_00000001_graph_1_PreRunBegin.txt")
    plain = _cli(root, "ls", "-d", "debug_0")
    assert "PreRunBegin" not in plain.stdout
    staged = _cli(root, "ls", "-d", "debug_0", "-g", "PreRunBegin")
    assert staged.returncode == 0, staged.stderr
    assert "ge_proto_00000001_graph_1_PreRunBegin.txt" in staged.stdout
    by_id = _cli(root, "ni", "resnet/dense/MatMul", "-g", "1", "-d", "debug_0")
    assert by_id.returncode == 0 and "resnet/dense/MatMul" in by_id.stdout


@pytest.mark.parametrize("form", ["atc JSON, own name", "om only"])
def test_ls_says_which_user_named_file_it_read(sample, tmp_path, form):
    root = _with_form(sample, tmp_path, form)
    done = _cli(root, "ls")
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())  # the note may wrap
    for debug in ("debug_0", "debug_1"):
        where = Path("precision_data", "npu", debug, "graph", FORMS[form])
        assert f"{where}: {debug}'s Build graph, by its content" in out


def test_g_takes_an_om_or_atc_json_anywhere_on_disk(sample, tmp_path):
    root = _with_form(sample, tmp_path, "8-digit")
    text = (root / "npu" / "debug_0" / "graph" / SAMPLE_NAME).read_text(encoding="utf-8")
    om = tmp_path / "models" / "resnet.om"
    om.parent.mkdir()
    om.write_bytes(om_of_text_graph(text))
    total = sum(_raw_types(root / "npu" / "debug_0" / "graph" / SAMPLE_NAME).values())
    listed = _cli(root, "ls", "-g", str(om))
    assert listed.returncode == 0, listed.stderr
    assert re.search(rf"^│ total\s+│\s+{total} │$", listed.stdout, re.M)
    squeezed = re.sub(r"\s", "", listed.stdout)  # the note wraps, maybe inside the path
    assert re.sub(r"\s", "", f"{om}: the graph file -g gives") in squeezed
    info = _cli(root, "ni", "resnet/dense/MatMul", "-g", str(om))
    assert info.returncode == 0 and "resnet/dense/MatMul" in info.stdout and "MatMulV2" in info.stdout
    compared = _cli(root, "vc", "-g", str(om))
    assert compared.returncode in (0, 1), compared.stderr
    assert any(row[2] == "resnet/conv1/Conv2D" for row in _rows(root))


def test_a_bad_om_is_one_error_line(sample, tmp_path):
    root = _with_form(sample, tmp_path, "om only")
    om = root / "npu" / "debug_0" / "graph" / FORMS["om only"]
    raw = bytearray(om.read_bytes())
    raw[80] = 1  # is_encrypt
    om.write_bytes(bytes(raw))
    done = _cli(root, "ls")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "model.om: encrypted OM (is_encrypt=1)" in line
