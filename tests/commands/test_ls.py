"""``ls``: op-type counts per debug dir, and filtered op lists."""

from __future__ import annotations

import re
import shutil

from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command


def test_type_counts_on_the_sample(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "ls") == ExitStatus.OK
    text = out.getvalue()
    assert re.search(r"TransData\s+│\s+4\s+│\s+4", text)
    assert re.search(r"Const\s+│\s+10\s+│\s+10", text)
    assert re.search(r"total\s+│\s+28\s+│\s+29", text)  # debug_1 has an extra Identity


def test_type_counts_per_debug_dir(sample_data):
    shutil.copytree(sample_data / "npu/debug_0/graph", sample_data / "npu/debug_2/graph")
    context, out = make_context(sample_data)
    run_command(context, "ls")
    assert re.search(r"Conv2D\s+│\s+2\s+│\s+2\s+│\s+2", out.getvalue())
    assert re.search(r"Identity\s+│\s+0\s+│\s+1\s+│\s+0", out.getvalue())


def test_filters_give_one_line_per_op(sample_data):
    context, out = make_context(sample_data)
    run_command(context, "ls -t conv2d -d debug_0")
    lines = out.getvalue().splitlines()
    assert "[Conv2D][ConvBiasAddFusionPass,TbeConvReluFusionPass] resnet/conv1/Conv2D  (debug_0)" in lines
    assert "2 op(s)" in lines
    context, out = make_context(sample_data)
    run_command(context, "ls -f TbeConvRelu -d debug_0")
    assert "1 op(s)" in out.getvalue() and "resnet/conv1/Conv2D" in out.getvalue()
    context, out = make_context(sample_data)
    run_command(context, "ls -n trans_ -t TransData -d debug_0")
    assert "4 op(s)" in out.getvalue()
    context, out = make_context(sample_data)
    run_command(context, "ls -k te_relu -d debug_0")
    assert "[Relu] resnet/relu2/Relu" in out.getvalue()


def test_fixture_graph_counts(fixture_data):
    context, out = make_context(fixture_data)
    run_command(context, "ls")
    assert re.search(r"total\s+│\s+25", out.getvalue())


def test_no_graph_says_where_it_looked(tmp_path):
    (tmp_path / "precision_data").mkdir()
    context, out = make_context(tmp_path / "precision_data")
    assert run_command(context, "ls") == ExitStatus.OK
    assert "no Build graph" in out.getvalue()


def test_a_bad_om_is_one_line_and_the_session_goes_on(sample_data):
    from tests.formats.om_bytes import om_of_text_graph

    graph = sample_data / "npu/debug_1/graph"
    text = (graph / "ge_proto_00000001_Build.txt").read_text(encoding="utf-8")
    (graph / "ge_proto_00000001_Build.txt").unlink()
    (graph / "model.om").write_bytes(om_of_text_graph(text)[:300])  # cut inside the ModelDef
    context, out = make_context(sample_data)
    assert run_command(context, "ls") == ExitStatus.ERROR
    (line,) = out.getvalue().strip().splitlines()
    assert "model.om: truncated OM" in line
    (graph / "model.om").write_bytes(om_of_text_graph(text))
    context.reload()
    assert run_command(context, "ls") == ExitStatus.OK
    assert re.search(r"total\s+│\s+28\s+│\s+29", out.getvalue())
    assert run_command(context, "ls -d debug_0") == ExitStatus.OK
