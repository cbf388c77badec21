"""One preparation for Model Explorer: what ``report --model-explorer`` writes into its page's
directory opens the same graph, overlays (in the same order) and focus op as what ``explore``
writes, and every path it names is where the committed report put the file."""

from __future__ import annotations

import json
import os

import pytest

from precision_tool.compare.verdict import FlagRule
from precision_tool.model_explorer.launch import read_launch
from precision_tool.model_explorer.prepare import prepare
from precision_tool.report.write import make_report
from tests.conftest import make_context
from tests.report.synthetic import write_chain


@pytest.mark.parametrize("nan_at", [(), (20,)])
def test_the_report_and_explore_open_the_same_thing(data_root, nan_at):
    csv_path = write_chain(data_root, 30, 10, nan_at=nan_at)
    context, _ = make_context(data_root)
    report = make_report(context, [csv_path], output=data_root / "out", model_explorer=True)
    (prepared,) = report.explorer
    assert prepared.config == (data_root / "out" / "model_explorer" / csv_path.stem / "explore.json").resolve()
    assert all(os.path.isfile(p) for p in prepared.files) and prepared.files[-1].name == "explore.json"
    from_report = read_launch(prepared.config)
    explored = prepare(
        context,
        csv_path,
        FlagRule.from_config(context.config, None),
        context.output_at(data_root / "ex"),
        data_root / "ex",
    )
    from_explore = read_launch(data_root / "ex" / "explore.json")
    assert from_report.graph_file == from_explore.graph_file == explored.graph_file
    assert [p.name for p in from_report.node_data] == [p.name for p in from_explore.node_data]
    assert from_report.node_data[0].name == "verdict.json" and from_report.node_data[-1].name == "CosineSimilarity.json"
    assert all(p.is_file() and p.parent == prepared.config.parent for p in from_report.node_data)
    assert (from_report.graph_id, from_report.focus, from_report.expanded, from_report.focus_state) == (
        from_explore.graph_id,
        from_explore.focus,
        from_explore.expanded,
        from_explore.focus_state,
    )
    assert from_report.focus == "net/block1/op10"  # the chain's first introducer, op 10
    for a, b in zip(from_report.node_data, from_explore.node_data):  # the same overlay values
        assert json.loads(a.read_text(encoding="utf-8")) == json.loads(b.read_text(encoding="utf-8"))
