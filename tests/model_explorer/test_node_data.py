"""The node data ``report --model-explorer`` writes: Model Explorer's own node_data_builder
classes hold exactly it, its keys are the adapter's node ids, its values the CSV's, every overlay
is coloured by the one verdict, and the verdict overlay (shown when the graph opens) names each
op's state."""

from __future__ import annotations

import dataclasses
import json
import math
import sys

from precision_tool.compare.result_csv import NUMERIC_METRICS, write_result_csv
from precision_tool.compare.result_read import read_result_csv
from precision_tool.compare.result_view import read_view
from precision_tool.formats.graph import read_graph
from precision_tool.model_explorer.node_data import NodeDataFiles, metric_node_data
from precision_tool.render.palette import marked, swatch
from precision_tool.report.write import make_report
from tests.conftest import make_context
from tests.model_explorer.explorer import convert, require_explorer
from tests.report.synthetic import csv_ops, write_chain


def expected_state(k: int) -> str:
    """The verdict on op ``k`` of ``written``'s chain (``vcs`` agrees): ops 10.. at or below the
    threshold, op 10 the first; op 20's output was not compared, so op 21, whose only input
    has no cosine, introduces again."""
    if k == 20:
        return "not compared"
    if k < 10:
        return "clean"
    return "introduces" if k in (10, 21) else "inherits"


def written(data_root):
    csv_path = write_chain(data_root, 30, 10, nan_at=(20,))
    context, _ = make_context(data_root)
    report = make_report(context, [csv_path], output=data_root / "out", model_explorer=True)
    (prepared,) = report.explorer
    assert prepared.files[-1] == prepared.config  # the node data, then explore.json
    return csv_path, NodeDataFiles(prepared.launch.graph_file, prepared.files[:-1])


def as_builder(data: dict):
    """``data`` rebuilt with Model Explorer's ``node_data_builder`` classes."""
    ndb = require_explorer().node_data_builder
    graphs = {}
    for graph_id, graph in data.items():
        graphs[graph_id] = ndb.GraphNodeData(
            results={key: ndb.NodeDataResult(**value) for key, value in graph["results"].items()},
            thresholds=[ndb.ThresholdItem(**item) for item in graph.get("thresholds", [])],
            **{k: v for k, v in graph.items() if k not in ("results", "thresholds")},
        )
    return ndb.ModelNodeData(graphsData=graphs)


def test_node_data_builder_serialises_the_same_json(data_root):
    """Rebuilt with Model Explorer's classes and serialised by them, the data is ours plus the
    classes' own defaults for the fields we leave out."""
    ndb = require_explorer().node_data_builder
    defaults = {
        f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
        for f in dataclasses.fields(ndb.GraphNodeData)
        if f.name != "results"
    }
    _, files = written(data_root)
    assert [p.stem for p in files.files] == [*NUMERIC_METRICS, "verdict"]  # as written (explore.json orders them)
    for path in files.files:
        ours = json.loads(path.read_text(encoding="utf-8"))
        theirs = json.loads(as_builder(ours).to_json_string())
        assert list(theirs) == list(ours)
        for graph_id, graph in theirs.items():
            assert {k: v for k, v in graph.items() if k in ours[graph_id]} == ours[graph_id], path.name
            assert all(v == defaults[k] for k, v in graph.items() if k not in ours[graph_id])


def test_keys_are_the_adapters_node_ids_and_values_the_csvs(data_root):
    require_explorer()
    csv_path, files = written(data_root)
    graph = convert(files.graph_file)["graphs"][0]
    node_ids = {n["id"] for n in graph["nodes"]}
    expected = {name: tensors["output"] for (_, name), tensors in csv_ops(csv_path).items()}
    for path in files.files[:-1]:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert list(data) == [graph["id"]]
        results = data[graph["id"]]["results"]
        assert set(results) <= node_ids
        metric = path.stem
        with_value = {name for name, out in expected.items() if metric in out}
        assert set(results) == with_value  # every op with a number; the NaN op left out
        for name, result in results.items():
            assert result["value"] == expected[name][metric]
        assert "net/block2/op20" not in results
    verdict = json.loads(files.files[-1].read_text(encoding="utf-8"))[graph["id"]]
    assert set(verdict["results"]) == set(expected) <= node_ids  # the NaN op too: not compared


def test_every_overlay_is_coloured_by_the_verdict(data_root):
    _, files = written(data_root)
    for path in files.files:
        (graph,) = json.loads(path.read_text(encoding="utf-8")).values()
        assert "thresholds" not in graph, path.name  # no colour by one metric's value
        for name, result in graph["results"].items():
            k = int(name.rsplit("op", 1)[1])
            assert result["bgColor"] == swatch(expected_state(k)).colour, (path.name, name)
            if path.stem == "verdict":
                assert result["value"] == marked(expected_state(k)), name
    verdict = json.loads(files.files[-1].read_text(encoding="utf-8"))
    (graph,) = verdict.values()
    assert graph["showExpandedSummaryOnGroupNode"] and graph["showLabelCountColumnsInChildrenStatsTable"]
    assert graph["hideInAggregatedStatsTable"]  # a "sum" of words is 0: no numbers for the verdict
    assert {r["value"] for r in graph["results"].values()} == {
        "clean",
        "\u25b2 introduces",
        "\u25cf inherits",
        "not compared",
    }


def test_infinite_values_become_the_largest_float(data_root):
    rows = read_result_csv(write_chain(data_root, 10, 5))
    rows = [
        dataclasses.replace(r, metrics={**r.metrics, "MaxAbsoluteError": math.inf})
        if r.tensor_index == "net/block0/op2:output:0"
        else r
        for r in rows
    ]
    csv_path = write_result_csv(data_root / "inf.csv", rows)
    assert ",inf," in csv_path.read_text(encoding="utf-8")
    model = read_graph(data_root / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt")
    view = read_view(csv_path, 0.98)
    found = [
        (m, r)
        for m in NUMERIC_METRICS
        for g in metric_node_data(view, model, m).values()
        for r in g["results"].values()
        if r["value"] == sys.float_info.max
    ]
    assert [m for m, _ in found] == ["MaxAbsoluteError"]
    assert all(r["bgColor"] == swatch("clean").colour for _, r in found)  # the verdict's colour
    json.dumps(metric_node_data(view, model, found[0][0]), allow_nan=False)
    assert not any(math.isinf(r["value"]) for _, r in found)


def test_no_metric_overlay_sums_or_averages_a_layer(data_root):
    """Model Explorer aggregates a layer's values by min, max, sum and mean; only min and max
    (the worst and best op) mean something for a cosine or an error."""
    _, files = written(data_root)
    for path in files.files[:-1]:
        (graph,) = json.loads(path.read_text(encoding="utf-8")).values()
        assert graph["hideAggregatedStats"] == ["sum", "avg"], path.name
        assert graph["hideInChildrenStatsTable"], path.name  # its column: each child's share of the sum
