"""``--defect KIND``: each kind plants its defect at its op (checked here with plain numpy on
the files written, not with ``why``), the rest of the network stays healthy, and the default
stays the shipped sample."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from precision_tool import read_dump, read_golden, read_graph
from precision_tool.formats.tree import DumpTree
from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS
from tests.conftest import REPO_ROOT


def _red(npu, golden):
    n, g = np.asarray(npu, np.float64).ravel(), np.asarray(golden, np.float64).ravel()
    keep = np.isfinite(n) & np.isfinite(g)
    bad = int((~np.isfinite(n) & np.isfinite(g)).sum())
    return np.linalg.norm(n[keep] - g[keep]) / np.linalg.norm(g[keep]), bad


def _first_differing(root):
    """The first dumped op (graph order) whose output 0, or an input, is off its golden by more
    than float16 rounding: relative error above 4e-3, or non-finite where the golden is not."""
    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    golden = read_golden(root / "tf/dump")
    tree = DumpTree(root / "npu/debug_0/dump")
    listing = tree.listing(tree.select()[0])
    for op in graph.ops:
        ref = listing.latest(op.name)
        if ref is None:
            continue
        dump = read_dump(ref.path)
        sides = [(dump.outputs[0].host(), op.output_descs[0])]
        sides += [(t.host(), graph.op(src.src).output_descs[src.index]) for t, src in zip(dump.inputs, op.data_inputs)]
        for npu, desc in sides:
            red, bad = _red(npu, golden.lookup(desc.origin_name, desc.origin_output_index))
            if red > 4e-3 or bad:
                return op.name
    return None


@pytest.mark.parametrize("kind", sorted(DEFECTS))
def test_each_kind_starts_at_its_op(tmp_path, kind):
    root = write_sample(tmp_path / "precision_data", defect=kind)
    assert _first_differing(root) == DEFECTS[kind].op


def test_defect_roots_carry_ge_attributes_the_shipped_sample_lacks(tmp_path):
    root = write_sample(tmp_path / "precision_data", defect="sign")
    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    conv = graph.op("resnet/conv2/Conv2D").attrs
    assert (conv["strides"], conv["pads"]) == ([1, 1, 1, 1], [1, 1, 1, 1])
    assert (conv["padding"], conv["data_format"]) == ("SAME", "NHWC")
    assert graph.op("resnet/pool/MaxPool").attrs["ksize"] == [1, 2, 2, 1]
    assert graph.op("resnet/bn1/FusedBatchNormV3").attrs["epsilon"] == pytest.approx(1e-3)
    shipped = read_graph(REPO_ROOT / "precision_data/npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    assert "strides" not in shipped.op("resnet/conv2/Conv2D").attrs


def test_the_command_line_option(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", str(tmp_path / "d"), "--defect", "sign"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and "(defect: sign)" in done.stdout
    assert _first_differing(tmp_path / "d") == "resnet/add/add"
    bad = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", str(tmp_path / "e"), "--defect", "bogus"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 2 and "invalid choice: 'bogus'" in bad.stderr
    assert not (tmp_path / "e").exists()
