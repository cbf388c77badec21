"""Finding ops and tensors by name over a bare Workspace (no console, no command), as explain/,
report/ and the checks do: exact and dump-file spellings, debug dirs in order and lazily, the
op's dump files, the names users type (fused TF names, close names) and tensor names."""

from __future__ import annotations

import pytest

from precision_tool.compare.lookup import lookup_op, lookup_ops
from precision_tool.compare.tensor_names import resolve_tensor
from precision_tool.compare.workspace import Workspace
from precision_tool.config import load_config
from precision_tool.errors import PrecisionToolError

CONV = "resnet/conv1/Conv2D"


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory):
    import shutil

    from tests.conftest import REPO_ROOT

    target = tmp_path_factory.mktemp("lookup") / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", target, ignore=shutil.ignore_patterns("temp"))
    return target


def _workspace(root) -> Workspace:
    return Workspace(load_config({"DATA_ROOT_DIR": root}, environ={}, cwd=root.parent))


@pytest.fixture
def workspace(sample_root) -> Workspace:
    return _workspace(sample_root)


def test_find_op_by_exact_and_dump_file_spelling(workspace):
    exact = workspace.find_op(CONV)
    assert (exact.debug, exact.op.name, exact.op.type) == ("debug_0", CONV, "Conv2D")
    assert exact.graph.get(CONV) is exact.op and exact.model.graphs[0] is exact.graph
    assert workspace.find_op("resnet_conv1_Conv2D").op is exact.op  # as a dump file names it
    assert workspace.find_op("resnet/conv1/BiasAdd") is None  # a fused TF name is not an op name
    assert workspace.find_op("no/such/op") is None


def test_find_ops_walks_the_debug_dirs_in_order_and_only_as_far_as_needed(workspace, monkeypatch):
    assert [ref.debug for ref in workspace.find_ops(CONV)] == ["debug_0", "debug_1"]
    assert workspace.find_op(CONV, "debug_1").debug == "debug_1"
    loaded = []
    models = Workspace.models
    monkeypatch.setattr(
        Workspace, "models", lambda self, debug="debug_0", *a: loaded.append(debug) or models(self, debug, *a)
    )
    assert workspace.find_op(CONV).debug == "debug_0" and loaded == ["debug_0"]


def test_an_unreadable_graph_is_an_error_of_that_file(sample_data):
    graph = next((sample_data / "npu" / "debug_0" / "graph").glob("ge_proto_*_Build.txt"))
    graph.write_text("graph { op { name: ", encoding="utf-8")
    with pytest.raises(PrecisionToolError) as raised:
        _workspace(sample_data).find_op(CONV)
    assert graph.name in str(raised.value)


def test_op_dumps_are_the_ops_latest_launch_per_step(workspace):
    ((step, file),) = workspace.op_dumps(workspace.find_op(CONV))
    assert file.name.op_name == "resnet_conv1_Conv2D" and file.path.is_file()
    assert step.model_name == workspace.find_op(CONV).graph.name
    assert workspace.op_dumps(workspace.find_op("resnet/conv1/kernel")) == []  # a Const: no dump


def test_names_users_type_resolve_over_a_workspace(workspace):
    found = lookup_ops(workspace, "resnet/conv1/BiasAdd")  # fused into the Conv2D
    assert [r.op.name for r in found.refs] == [CONV] and found.other_debugs == ["debug_1"]
    assert found.note == f"resnet/conv1/BiasAdd is fused into {CONV}"
    assert lookup_op(workspace, "conv1/Conv2D").op.name == CONV  # a substring
    with pytest.raises(
        PrecisionToolError,
        match=r"no operator matches 'resnet/conv1/Conv2E'; "
        r"did you mean resnet/conv1/Conv2D",
    ):
        lookup_ops(workspace, "resnet/conv1/Conv2E")


def test_tensor_names_resolve_over_a_workspace(workspace):
    npu = resolve_tensor(workspace, CONV)
    assert npu.is_dump and npu.op_name == CONV and npu.dump_tensor.name == "output:0"
    golden = resolve_tensor(workspace, "tf:resnet/conv1/Relu:0")
    assert not golden.is_dump and golden.path.name.startswith("resnet_conv1_Relu.0.")
