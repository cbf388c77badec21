"""A nano dump (9-digit timestamp in its name) through the real CLI: ``ls`` lists its op,
``pt`` prints its tensors, ``vc`` compares them with their golden tensors, and a corrupt one
is one error line naming the form it was read as."""

from __future__ import annotations

import csv
import re

import numpy as np
import pytest

from precision_tool.formats.golden import write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.render.tensor_view import format_value
from precision_tool.status import ExitStatus
from tests.commands.test_why import cli
from tests.formats.test_nano_dump import Desc, nano_bytes
from tests.netdata import GRAPH_REL, MODEL, STEP_REL

NANO = "ConcatV2D.concatv2.0.0.550288648"
A, B = np.linspace(-1, 1, 6, dtype=np.float16).reshape(1, 6), np.array([[3, -4]], np.float16)
OUT = np.concatenate([A, B], axis=1)
TS = 1772323200000000  # the golden files' own (16-digit) timestamps


def _desc(shape):
    return tensor_desc("DT_FLOAT16", "ND", shape, origin_format="ND", origin_shape=shape)


@pytest.fixture
def root(tmp_path):
    """A data root: Build graph x, y -> concatv2; a nano dump of concatv2; the golden tensors."""
    root = tmp_path / "precision_data"
    ops = [
        OpSpec("x", "Data", output_descs=[_desc(A.shape)]),
        OpSpec("y", "Data", output_descs=[_desc(B.shape)]),
        OpSpec("concatv2", "ConcatV2D", ["x:0", "y:0"], [_desc(A.shape), _desc(B.shape)], [_desc(OUT.shape)]),
    ]
    (root / GRAPH_REL).parent.mkdir(parents=True)
    write_graph_text(build_model(ops, name=MODEL), root / GRAPH_REL)
    step = root / STEP_REL
    step.mkdir(parents=True)
    inputs = [Desc(A.tobytes(), 1, 2, A.shape, A.shape), Desc(B.tobytes(), 1, 2, B.shape, B.shape)]
    output = Desc(OUT.tobytes(), 1, 2, OUT.shape, OUT.shape, original=(0, 1, 2, b"concatv2"))
    (step / NANO).write_bytes(nano_bytes(inputs, [output]))
    for k, (name, value) in enumerate((("x", A), ("y", B), ("concatv2", OUT))):
        write_golden(root / "tf" / "dump", name, 0, TS + k, value.astype(np.float32))
    return root


def _row(text: str, label: str) -> str:
    match = re.search(rf"│ {label}\s+│ (.+?)\s+│", text) or re.search(rf"^{label}  (.+?)\s*$", text, re.M)
    assert match, f"no {label} row in:\n{text}"
    return match.group(1)


def test_ls_lists_the_op_and_pt_prints_the_nano_tensors(root):
    done = cli("--data", str(root), "ls", "-t", "ConcatV2D")
    assert done.returncode == ExitStatus.OK, done.stderr
    assert "[ConcatV2D] concatv2" in done.stdout and "1 op(s)" in done.stdout
    done = cli("--data", str(root), "pt", "concatv2", "-n", "8")
    assert done.returncode == ExitStatus.OK, done.stderr
    text = done.stdout
    assert f"{NANO}:output:0" in text
    assert (_row(text, "shape"), _row(text, "dtype")) == ("[1, 8]", "float16")
    assert _row(text, "max") == format_value(OUT.max()) and _row(text, "min") == format_value(OUT.min())
    assert "this dump also holds input:0, input:1" in text
    exported = root / "temp" / "pt" / f"{NANO}.output.0.txt"
    np.testing.assert_array_equal(np.loadtxt(exported, dtype=np.float32), OUT.reshape(-1).astype(np.float32))
    done = cli("--data", str(root), "pt", f"{NANO}:input:1")
    assert done.returncode == ExitStatus.OK and _row(done.stdout, "shape") == "[1, 2]", done.stderr


def test_vc_compares_the_nano_tensors(root, tmp_path):
    done = cli("--data", str(root), "vc", "-o", str(tmp_path / "result"))
    assert done.returncode == ExitStatus.OK, done.stdout + done.stderr
    [result] = (tmp_path / "result").glob("result_*.csv")
    with open(result, newline="") as handle:
        rows = [row for row in csv.DictReader(handle) if row["NPUDump"] == "concatv2"]
    assert len(rows) == 3, rows  # input 0, input 1, output 0
    assert {row["CosineSimilarity"] for row in rows} == {"1.000000"}, rows


def test_a_corrupt_nano_dump_is_one_line_naming_the_form(root):
    path = root / STEP_REL / NANO
    path.write_bytes(path.read_bytes()[:-1])
    done = cli("--data", str(root), "pt", "concatv2")
    assert done.returncode == ExitStatus.ERROR
    assert done.stderr.splitlines() == [
        f"error: {path}: nano dump: sizes do not add up: header and "
        f"tensor sizes give {path.stat().st_size + 1} bytes, file has "
        f"{path.stat().st_size} (truncated)"
    ], done.stderr
