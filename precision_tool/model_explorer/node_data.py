"""Per-op results as Model Explorer node data: one JSON file per metric, for ``--node_data_paths``.

Each file has the shape of Model Explorer's ``node_data_builder.ModelNodeData``: graph id ->
``GraphNodeData`` with ``results`` keyed by the adapter's node ids (:mod:`.ids`), so it overlays
the graphs :mod:`.main` shows. The value of an op is its worst output value of the metric (lowest
cosine, highest error), as the report shows it. Colours follow the cosine threshold: the cosine
file uses ``thresholds`` (red at or below, green above); the other metrics colour each node by
its op's verdict (red: output cosine at or below the threshold, green above, yellow NaN), so the
flagged ops stand out whatever the metric. A NaN value has no JSON form and is left out; an
infinite one is written as the largest float, coloured red.

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
from ..compare.result_view import COSINE, OpRecord, ResultView
from ..formats.atomic import OutputRoot
from ..formats.graph_model import Model
from ..render.summary import cosine_style
from .ids import graph_ids, node_id

COLOURS = {"bad": "#ef9a9a", "good": "#a5d6a7", "nan": "#fff59d"}
COSINE_CEILING = 2.0  # above any cosine: the "good" band of the thresholds ends here
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


def _matches(view: ResultView, model: Model) -> list[tuple[str, str, OpRecord]]:
    """(graph id, node id, record) of every op of ``view`` with an output found in ``model``."""
    found = []
    for graph, graph_id in zip(model.graphs, graph_ids(model)):
        for record in view.records:
            op = graph.find_op(record.op.name) if record.outputs else None
            if op is not None:
                found.append((graph_id, node_id(op), record))
    return found


def metric_node_data(view: ResultView, model: Model, metric: str) -> dict:
    """The ``ModelNodeData`` JSON object of ``metric`` for ``view`` on ``model``."""
    graphs: dict[str, dict] = {}
    for graph_id, node, record in _matches(view, model):
        value = record.output(metric)
        if math.isnan(value):
            continue
        entry = graphs.setdefault(graph_id, {"results": {}, "name": f"{metric} ({view.path.name})"})
        result = {"value": _json_number(value)}
        if metric != COSINE:
            result["bgColor"] = COLOURS["bad" if math.isinf(value) else
                                        cosine_style(record.cosine, view.threshold).removeprefix("cos.")]
        entry["results"][node] = result
    if metric == COSINE:
        for entry in graphs.values():
            entry["thresholds"] = [{"value": view.threshold, "bgColor": COLOURS["bad"]},
                                   {"value": COSINE_CEILING, "bgColor": COLOURS["good"]}]
    return graphs


def best_model(view: ResultView, models: list[Model]) -> Model | None:
    """The model holding most of ``view``'s ops (the first on a tie); None when none holds any."""
    scored = [(len(_matches(view, m)), -k, m) for k, m in enumerate(models)]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: s[:2])[2] if scored else None


def write_node_data(root: OutputRoot, view: ResultView, model: Model,
                    directory: Path) -> NodeDataFiles:
    """One ``{metric}.json`` per numeric metric in ``directory`` under ``root`` (created), each
    written atomically and never through a link."""
    files = []
    for metric in NUMERIC_METRICS:
        path = directory / f"{_SAFE.sub('_', metric)}.json"
        text = json.dumps(metric_node_data(view, model, metric), ensure_ascii=True, allow_nan=False)
        files.append(root.write_text(path, text))
    return NodeDataFiles(model.source_path, tuple(files))
