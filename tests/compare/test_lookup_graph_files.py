"""``-g GRAPH`` as a graph file (:func:`precision_tool.compare.lookup.graph_refs`, and ``vc``'s
:func:`precision_tool.compare.plan.pick_graph`): a path anywhere on disk in any form (atc JSON
under any name, an ``.om``), or a file of a debug dir's ``graph/`` that is not its Build graph."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

from precision_tool.compare.lookup import graph_refs, lookup_op
from precision_tool.compare.plan import pick_graph
from precision_tool.compare.workspace import Workspace
from precision_tool.config import load_config
from precision_tool.errors import PrecisionToolError
from tests.conftest import REAL, REPO_ROOT
from tests.formats.om_bytes import om_of_text_graph

GRAPH = "npu/debug_0/graph/ge_proto_00000001_Build.txt"


@pytest.fixture
def root(tmp_path):
    target = tmp_path / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", target, ignore=shutil.ignore_patterns("temp"))
    return target


def _workspace(root) -> Workspace:
    return Workspace(load_config({"DATA_ROOT_DIR": root}, environ={}, cwd=root.parent))


def _raw_types(text: str) -> Counter:
    blocks = re.findall(r"^  op \{\n(.*?)^  \}\n", text, re.M | re.S)
    return Counter(re.search(r'^    type: "(.*)"$', b, re.M).group(1) for b in blocks)


def test_a_graph_file_anywhere_on_disk(root, tmp_path):
    text = (root / GRAPH).read_text(encoding="utf-8")
    elsewhere = tmp_path / "models" / "resnet.om"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(om_of_text_graph(text))
    workspace = _workspace(root)
    refs = graph_refs(workspace, str(elsewhere))
    assert Counter(r.op.type for r in refs) == _raw_types(text)
    assert {r.debug for r in refs} == {"debug_0"} and refs[0].model.source_path == elsewhere
    assert graph_refs(workspace, str(elsewhere), "debug_1")[0].debug == "debug_1"
    assert lookup_op(workspace, "resnet/conv1/Conv2D", str(elsewhere)).model is refs[0].model
    assert pick_graph([], str(elsewhere), workspace) is refs[0].graph  # vc -g: the same, read once


def test_a_graph_file_given_by_path_needs_no_data_root(tmp_path):
    atc = tmp_path / "resnet50.json"
    shutil.copy(REAL / "atc_model.json", atc)
    refs = graph_refs(_workspace(tmp_path / "nowhere"), str(atc))
    assert len(refs) == 19 and {r.debug for r in refs} == {"debug_0"}


def test_a_file_of_the_graph_dir_that_is_not_its_build_graph(root):
    atc = root / "npu/debug_1/graph/resnet50.json"
    shutil.copy(REAL / "atc_model.json", atc)
    workspace = _workspace(root)
    assert len(workspace.models("debug_1")) == 1  # the named Build dump wins
    refs = graph_refs(workspace, "resnet50.json")
    assert len(refs) == 19 and {r.debug for r in refs} == {"debug_1"}
    assert refs[0].model.source_path == atc
    with pytest.raises(PrecisionToolError, match="no graph named 'resnet50.json'"):
        graph_refs(workspace, "resnet50.json", "debug_0")
    models = workspace.models("debug_1")
    assert pick_graph(models, "resnet50.json", workspace, atc.parent) is refs[0].graph


def test_the_graph_dir_s_own_file_is_the_model_already_loaded(root):
    workspace = _workspace(root)
    loaded = workspace.models("debug_0")[0]
    assert workspace.graph_file(root / GRAPH) is loaded
    assert graph_refs(workspace, str(root / GRAPH))[0].model is loaded


def test_a_bad_graph_file_is_one_line_naming_it(root, tmp_path):
    bad = tmp_path / "model.om"
    bad.write_bytes(b"IMOD" + bytes(300))
    with pytest.raises(PrecisionToolError) as caught:
        graph_refs(_workspace(root), str(bad))
    assert str(caught.value).startswith(str(bad)) and "OM header size 0" in str(caught.value)
