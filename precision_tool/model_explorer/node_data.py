"""Per-op results as Model Explorer node data, for ``--node_data_paths``: the verdict, and one
JSON file per metric.

Each file has the shape of Model Explorer's ``node_data_builder.ModelNodeData``: graph id ->
``GraphNodeData`` with ``results`` keyed by the adapter's node ids (:mod:`.ids`), so it overlays
the graphs :mod:`.main` shows. Every node is coloured by its op's verdict in the one palette
(:mod:`precision_tool.render.palette`; the state ``ni -s`` and the report draw,
:func:`~precision_tool.render.op_graph.node_cosine`), whatever the overlay, so the ops that
introduce or inherit the error stand out in each. The verdict overlay's value is the state with
its marker (``▲ introduces``, ``● inherits``, ``◆ near``, ``clean``, ``✕ non-finite``,
``not compared``): Model Explorer has no legend for node data, but for text values it shows each
value's share, count and colour on the layers (``showExpandedSummaryOnGroupNode``) and in the
children table (``showLabelCountColumnsInChildrenStatsTable``), which is the legend. A metric's
value is the op's worst output value (lowest cosine, highest error), as the report shows it; a
NaN value has no JSON form and is left out, an infinite one is written as the largest float.
A metric overlay shows no sum or mean over a layer (:data:`METRIC_STATS`), the verdict none of
the aggregated numbers (a "sum" of words is 0).

The order Model Explorer adds them in (the verdict first) is
:func:`~precision_tool.model_explorer.prepare.overlay_order`'s, not :attr:`NodeDataFiles.files`'.
Plain dicts and ``json``: writing node data does not need Model Explorer installed.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ..compare.result_csv import NUMERIC_METRICS
from ..compare.result_view import OpRecord, ResultView
from ..formats.graph_model import Model
from ..formats.output_root import OutputRoot
from ..render.op_graph import node_cosine
from ..render.palette import marked, swatch
from .ids import graph_ids, node_id

VERDICT = "verdict"  # the verdict overlay's file stem and name
# A layer's sum or mean of cosines (or of max errors) means nothing; its min and max are its
# worst and best op. The children table shows each child's share of the sum: hidden too.
METRIC_STATS = {"hideAggregatedStats": ["sum", "avg"], "hideInChildrenStatsTable": True}
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class NodeDataFiles:
    """The node-data files written for one result and the graph file they overlay."""

    graph_file: Path | None
    files: tuple[Path, ...]


def _json_number(value: float) -> float:
    if math.isinf(value):
        return math.copysign(sys.float_info.max, value)
    return value


def _matches(view: ResultView, model: Model, compared: bool = True) -> list[tuple[str, str, OpRecord]]:
    """(graph id, node id, record) of every op of ``view`` found in ``model`` (``compared``:
    only those with a compared output)."""
    found = []
    for graph, graph_id in zip(model.graphs, graph_ids(model)):
        for record in view.records:
            op = graph.find_op(record.op.name) if record.outputs or not compared else None
            if op is not None:
                found.append((graph_id, node_id(op), record))
    return found


def _result(value, record: OpRecord) -> dict:
    return {"value": value, "bgColor": swatch(node_cosine(record.op).verdict).colour}


def metric_node_data(view: ResultView, model: Model, metric: str) -> dict:
    """The ``ModelNodeData`` JSON object of ``metric`` for ``view`` on ``model``."""
    graphs: dict[str, dict] = {}
    for graph_id, node, record in _matches(view, model):
        value = record.output(metric)
        if math.isnan(value):
            continue
        entry = graphs.setdefault(graph_id, {"results": {}, "name": f"{metric} ({view.path.name})", **METRIC_STATS})
        entry["results"][node] = _result(_json_number(value), record)
    return graphs


def verdict_node_data(view: ResultView, model: Model) -> dict:
    """The ``ModelNodeData`` JSON object of the verdict overlay: every op of ``view`` found in
    ``model``, its value the state with its marker (module doc)."""
    graphs: dict[str, dict] = {}
    for graph_id, node, record in _matches(view, model, compared=False):
        entry = graphs.setdefault(
            graph_id,
            {
                "results": {},
                "name": f"{VERDICT} ({view.path.name})",
                "hideInAggregatedStatsTable": True,  # no min/sum of words
                "showExpandedSummaryOnGroupNode": True,
                "showLabelCountColumnsInChildrenStatsTable": True,
            },
        )
        entry["results"][node] = _result(marked(node_cosine(record.op).verdict), record)
    return graphs


def best_model(view: ResultView, models: list[Model]) -> Model | None:
    """The model holding most of ``view``'s ops (the first on a tie); None when none holds any."""
    scored = [(len(_matches(view, m)), -k, m) for k, m in enumerate(models)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: s[:2])[2] if scored else None


def write_node_data(root: OutputRoot, view: ResultView, model: Model, directory: Path) -> NodeDataFiles:
    """One ``{metric}.json`` per numeric metric, then ``verdict.json`` (shown first: module
    doc), in ``directory`` under ``root`` (created), each written atomically and never through a
    link."""
    documents = [(metric, metric_node_data(view, model, metric)) for metric in NUMERIC_METRICS]
    documents.append((VERDICT, verdict_node_data(view, model)))
    files = []
    for stem, document in documents:
        text = json.dumps(document, ensure_ascii=True, allow_nan=False)
        files.append(root.write_text(directory / f"{_SAFE.sub('_', stem)}.json", text))
    return NodeDataFiles(model.source_path, tuple(files))
