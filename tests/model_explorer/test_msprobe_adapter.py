"""An msprobe ``dump.json`` through the adapter, as Model Explorer's server calls it: msprobe's
own quick_start example (tests/data/msprobe), each call a node in its module's layer."""

from __future__ import annotations

import json
from pathlib import Path

from tests.model_explorer.explorer import convert, require_explorer

DUMP = Path(__file__).resolve().parents[1] / "data" / "msprobe" / "quick_start" / "step0" / "proc2016" / "dump.json"


def test_a_dump_json_is_its_calls_in_their_modules_with_the_inferred_edges():
    require_explorer()
    (graph,) = convert(DUMP)["graphs"]
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert list(nodes) == list(json.loads(DUMP.read_text())["data"])
    parents = json.loads((DUMP.parent / "construct.json").read_text())
    conv = nodes["Functional.conv2d.0.forward"]
    assert parents["Functional.conv2d.0.forward"] == "Module.conv1.Conv2d.forward.0"
    assert (conv["namespace"], conv["label"]) == ("conv1", "Functional.conv2d.0.forward")
    assert nodes["Module.conv1.Conv2d.forward.0"]["namespace"] == ""  # its parent is null: the top
    (edge,) = nodes["Functional.batch_norm.0.forward"]["incomingEdges"]
    assert (edge["sourceNodeId"], edge["sourceNodeOutputId"]) == ("Module.conv1.Conv2d.forward.0", "0")


def test_node_data_names_the_graph_as_the_adapter_does():
    """The session calls a rank's model ``step0/proc2016``; the adapter, reading the dump.json
    alone, ``proc2016``: the node data must use the adapter's id, or nothing is overlaid."""
    require_explorer()
    from precision_tool.formats.msprobe_graph import read_model_at
    from precision_tool.model_explorer.ids import graph_ids

    (graph,) = convert(DUMP)["graphs"]
    model = read_model_at(DUMP.parent, "step0/proc2016")  # as Workspace.msprobe_model_at names it
    assert model.graphs[0].name == "step0/proc2016"
    assert graph_ids(model) == [graph["id"]] == ["proc2016"]
