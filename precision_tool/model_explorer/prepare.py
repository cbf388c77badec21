"""Everything ``explore`` writes before Model Explorer starts: for one result CSV, the node data
(:mod:`.node_data`; the verdict overlay first: :func:`overlay_order`) and ``explore.json``
(:mod:`.launch`), which opens the graph holding most of the result's ops at its focus op (the
first op that introduces the error, else the first flagged one).

The verdict is the one ``vcs`` gives (:func:`~precision_tool.compare.judged.judged_rows`,
remembered for the session): this module asks for it and never decides anything itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..compare.judged import judged_rows
from ..compare.result_read import read_result_csv
from ..compare.result_view import ResultView, build_view
from ..compare.verdict import FlagRule
from ..compare.workspace import Workspace
from ..errors import PrecisionToolError
from ..formats.graph_model import Model
from ..formats.output_root import OutputRoot
from ..render.op_graph import node_cosine
from .ids import graph_ids, node_id
from .launch import CONFIG_NAME, Launch
from .namespaces import node_place
from .node_data import VERDICT, best_model, write_node_data

GROUP_SUFFIX = "___group___"  # Model Explorer's id of the layer node for a namespace


def judged_view(workspace: Workspace, path: Path, rule: FlagRule) -> ResultView:
    """The view of result ``path`` built on the one verdict (what ``vcs`` says)."""
    rows = read_result_csv(path)
    return build_view(path, rows, rule, judged_rows(workspace, path, rows, rule))


def candidate_models(workspace: Workspace, csv: Path) -> list[Model]:
    """The models a result may overlay: an msprobe result's own rank directory, else every
    Build graph loaded."""
    own = workspace.result_model(csv)
    if own is not None:
        return [own]
    return [m for debug in workspace.debug_names() for m in workspace.models(debug)]


def layer_ids(layer: str) -> tuple[str, ...]:
    """The layer node ids from the top down to ``layer`` (``a/b`` -> ``a___group___``,
    ``a/b___group___``): the layers expanded on open."""
    parts = [p for p in layer.split("/") if p]
    return tuple("/".join(parts[:k]) + GROUP_SUFFIX for k in range(1, len(parts) + 1))


def focus_of(view: ResultView, model: Model) -> tuple[str, str, tuple[str, ...], str]:
    """(graph id, node id, layers to expand, verdict state) of the view's focus op in ``model``;
    the first graph and nothing selected when there is none."""
    ids = graph_ids(model)
    focus = view.focus
    if focus is not None:
        for graph, graph_id in zip(model.graphs, ids):
            op = graph.find_op(focus.op.name)
            if op is not None:
                return graph_id, node_id(op), layer_ids(node_place(graph, op)[0]), node_cosine(focus.op).verdict
    return (ids[0] if ids else ""), "", (), ""


def has_values(view: ResultView, metric: str) -> bool:
    """Whether any op of ``view`` has a value of ``metric`` (an msprobe comparison computes
    three metrics by default: the others would be empty overlays)."""
    return any(not math.isnan(r.output(metric)) for r in view.records if r.outputs)


def overlay_order(files: list[Path]) -> list[Path]:
    """The verdict overlay first, the metrics after it, the cosine last.

    Model Explorer lists overlays in the order given and shows the last one. With the verdict
    last, headless Chromium saw the web app select the focus node and lose it again as it laid
    the graph out (Model Explorer 0.1.34); with the verdict first it stays selected. Every
    overlay colours each op by its verdict, so the one shown on open, the cosine, looks the
    same, with the cosine as each op's value.
    """
    verdict = [p for p in files if p.stem == VERDICT]
    cosine = [p for p in files if p.stem == "CosineSimilarity"]
    return verdict + [p for p in files if p not in verdict + cosine] + cosine


@dataclass(frozen=True)
class Prepared:
    """What :func:`write_launch` wrote for one result, each path where it will be read from."""

    launch: Launch
    config: Path  # explore.json: ``serve_command(config)`` starts Model Explorer on it
    files: tuple[Path, ...]  # every file written: the node data, then explore.json


def write_launch(
    root: OutputRoot,
    view: ResultView,
    models: list[Model],
    directory: Path,
    final: Callable[[Path], Path] | None = None,
) -> Prepared | None:
    """Write the node data of ``view`` and ``explore.json`` into ``directory`` (under ``root``);
    None when no model of ``models`` holds its ops. ``final`` maps a path written to the one it
    will have (the report writes into a hidden directory renamed when the page is complete), so
    ``explore.json`` names the files where the server will find them.

    The one home of what Model Explorer opens: ``explore`` and ``report --model-explorer``
    both call it, so both open the same graph, overlays (:func:`overlay_order`) and focus.
    """
    model = best_model(view, models)
    if model is None or model.source_path is None:
        return None
    place = final or (lambda path: path)
    files = write_node_data(root, view, model, directory)
    graph_id, focus, expanded, state = focus_of(view, model)
    computed = [p for p in files.files if p.stem == VERDICT or has_values(view, p.stem)]
    launch = Launch(
        Path(model.source_path).resolve(),
        tuple(place(p).resolve() for p in overlay_order(computed)),
        graph_id,
        focus,
        expanded,
        state,
        view.path.resolve(),
    )
    config = directory / CONFIG_NAME
    root.write_text(config, launch.to_json())
    return Prepared(launch, place(config).resolve(), tuple(place(p) for p in (*files.files, config)))


def prepare(workspace: Workspace, csv: Path, rule: FlagRule, root: OutputRoot, directory: Path) -> Launch:
    """Write the node data of result ``csv`` and ``explore.json`` into ``directory`` (under
    ``root``); the :class:`Launch` written.

    Raises:
        PrecisionToolError: the CSV cannot be read, or no graph holds its ops.
    """
    prepared = write_launch(root, judged_view(workspace, csv, rule), candidate_models(workspace, csv), directory)
    if prepared is None:
        raise PrecisionToolError("no Build graph (npu/*/graph) holds this result's ops: nothing to show", csv)
    return prepared.launch
