"""Graph dump file names: every form GE writes, stages, ids, and which file of a graph is read."""

from __future__ import annotations

import os

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph import read_graph
from precision_tool.formats.graph_names import (
    GraphFileName,
    content_kind,
    find_graph_files,
    graph_stages,
    is_content_named,
    parse_graph_file_name,
    prefer_ge_proto,
)
from precision_tool.formats.graph_write import OpSpec, build_model, write_graph_text
from precision_tool.formats.onnx_write import write_graph_onnx
from tests.conftest import REAL
from tests.formats.om_bytes import MODEL_DEF, model_def_bytes, om_bytes


@pytest.mark.parametrize(
    "name, want",
    [
        ("ge_proto_00000001_Build.txt", ("ge_proto", 1, None, "Build", False)),
        ("ge_proto_00056_Build.txt", ("ge_proto", 56, None, "Build", False)),
        ("ge_proto_00000001_graph_31_Build.txt", ("ge_proto", 1, 31, "Build", False)),
        ("ge_proto_00000001_graph_0_PreRunBegin.txt", ("ge_proto", 1, 0, "PreRunBegin", False)),
        ("ge_proto_00000003_PreRunAfterBuild.txt", ("ge_proto", 3, None, "PreRunAfterBuild", False)),
        ("ge_onnx_00000000_graph_1_Build.pbtxt", ("ge_onnx", 0, 1, "Build", False)),
        ("ge_proto_00000001_graph_31_Build.txt.json", ("ge_proto", 1, 31, "Build", True)),
    ],
)
def test_every_name_form(name, want):
    parsed = parse_graph_file_name(name)
    assert (parsed.form, parsed.index, parsed.graph_id, parsed.stage, parsed.is_json) == want
    assert parsed.bad_graph_id is None and parsed.base == name.removesuffix(".json")


@pytest.mark.parametrize(
    "name",
    ["ge_proto_x_Build.txt", "notes.txt", "ge_onnx_1_Build.pbtxt.json", "ge_proto_1_Build.bin", "ge_proto__Build.txt"],
)
def test_other_names_are_not_graph_dumps(name):
    assert parse_graph_file_name(name) is None


def test_a_non_numeric_graph_id_is_kept_for_the_error():
    parsed = parse_graph_file_name("ge_proto_00000001_graph_x1_Build.txt")
    assert isinstance(parsed, GraphFileName)
    assert (parsed.graph_id, parsed.bad_graph_id, parsed.stage) == (None, "x1", "Build")


def _touch(directory, *names):
    for name in names:
        (directory / name).write_text("")


def test_find_lists_every_build_form_by_index_and_leaves_other_stages(tmp_path):
    _touch(
        tmp_path,
        "ge_proto_00000002_graph_31_Build.txt",
        "ge_proto_00056_Build.txt",
        "ge_proto_00000001_Build.txt",
        "ge_proto_00000001_graph_0_PreRunBegin.txt",
        "ge_onnx_00000003_graph_7_Build.pbtxt",
        "ge_proto_00000004_graph_x_Other.txt",
    )
    assert [p.name for p in find_graph_files(tmp_path)] == [
        "ge_proto_00000001_Build.txt",
        "ge_proto_00000002_graph_31_Build.txt",
        "ge_onnx_00000003_graph_7_Build.pbtxt",
        "ge_proto_00056_Build.txt",
    ]
    assert [p.name for p in find_graph_files(tmp_path, "PreRunBegin")[:1]] == [
        "ge_proto_00000001_graph_0_PreRunBegin.txt"
    ]
    assert graph_stages(tmp_path) == {"Build", "PreRunBegin", "Other"}


def test_a_build_graph_with_a_non_numeric_id_is_one_error_naming_it(tmp_path):
    _touch(tmp_path, "ge_proto_00000001_Build.txt", "ge_proto_00000002_graph_abc_Build.txt")
    with pytest.raises(PrecisionToolError) as caught:
        find_graph_files(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "ge_proto_00000002_graph_abc_Build.txt") in message
    assert "graph id 'abc' in the file name is not a number" in message
    assert len(find_graph_files(tmp_path, "PreRunBegin")) == 0  # other stages are not looked at


def test_ge_proto_wins_over_ge_onnx_of_the_same_graph(tmp_path):
    _touch(
        tmp_path,
        "ge_proto_00000005_graph_1_Build.txt",
        "ge_onnx_00000005_graph_1_Build.pbtxt",
        "ge_onnx_00000000_graph_2_Build.pbtxt",
        "ge_proto_00000007_Build.txt",
        "ge_onnx_00000007_Build.pbtxt",
        "ge_proto_00000001_graph_3_Build.txt.json",
    )
    assert [p.name for p in find_graph_files(tmp_path)] == [
        "ge_onnx_00000000_graph_2_Build.pbtxt",
        "ge_proto_00000001_graph_3_Build.txt.json",
        "ge_proto_00000005_graph_1_Build.txt",
        "ge_proto_00000007_Build.txt",
    ]


def test_ge_proto_wins_by_content_when_the_names_cannot_tell(tmp_path):
    model = build_model([OpSpec("a", "Relu")], name="ge_default_1")
    other = build_model([OpSpec("b", "Relu")], name="ge_default_2")
    proto = write_graph_text(model, tmp_path / "ge_proto_00000001_Build.txt")
    same = write_graph_onnx(model, tmp_path / "ge_onnx_00000000_graph_1_Build.pbtxt")
    different = write_graph_onnx(other, tmp_path / "ge_onnx_00000000_graph_2_Build.pbtxt")
    models = [read_graph(p) for p in find_graph_files(tmp_path)]
    assert len(models) == 3
    kept = prefer_ge_proto(models)
    assert [m.source_path for m in kept] == [different, proto]
    assert [m.graph_id for m in kept] == [2, None]
    assert read_graph(same).graph_id == 1


# --- graphs under names of the user's, found by content ------------------------------------------

OM = om_bytes([[(MODEL_DEF, model_def_bytes("net", {"net": [("x", "Data")]}))]])


@pytest.mark.parametrize(
    "head, kind",
    [
        (b'{\n  "attr": [\n    {\n      "key": "atc_cmdline",', "json"),  # atc: keys sorted
        (b'{"custom_version": "", "graph": [', "json"),
        (b'{\n  "name": "resnet50",\n  "version": 1,\n  "graph": [\n', "json"),  # protobuf's order
        (b'\xef\xbb\xbf{"graph": []}', "json"),
        (b'graph {\n  name: "ge_default_1"\n  op {\n', "text"),
        (b'# dumped by GE\nname: "m"\nversion: 1\ngraph {', "text"),
        (b'ir_version: 6\nproducer_name: "GE"\ngraph {\n  node {', "text"),  # GE's ONNX text
        (b"graph: <\n", "text"),
        (b"IMOD\x00\x01\x00\x00", "om"),
        (b'{"name": "my-package", "version": "1.0.0", "dependencies": {}}', None),
        (b'{"graph_fusion": {}}', None),
        (b"name: John\nversion: 1.0\n", None),
        (b"[1, 2, 3]", None),
        (b"some notes\n", None),
        (b"", None),
    ],
)
def test_content_kind_from_the_first_kib(head, kind):
    assert content_kind(head) == kind


def test_content_kind_of_the_real_graphs():
    for name, kind in (
        ("atc_model.json", "json"),
        ("ge_proto_00000001_Build.txt", "text"),
        ("ge_onnx_00000000_graph_1_Build.pbtxt", "text"),
    ):
        assert content_kind((REAL / name).read_bytes()[:1024]) == kind


def test_user_named_graphs_are_the_build_graphs_when_no_dump_is_named(tmp_path):
    (tmp_path / "resnet50.json").write_text('{"attr": [], "graph": [{"name": "g", "op": []}]}')
    (tmp_path / "model.om").write_bytes(OM)
    (tmp_path / "broken.om").write_bytes(b"not an om")  # a .om always: the reader says what is wrong
    (tmp_path / "notes.txt").write_text("nothing here\n")
    (tmp_path / "fusion_result.json").write_text('{"graph_fusion": {}}')
    (tmp_path / "model.bin").write_bytes(OM)  # not a suffix looked at
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "ge_proto_00000001_graph_0_PreRunBegin.txt").write_text("graph {\n}\n")
    found = [p.name for p in find_graph_files(tmp_path)]
    assert found == ["broken.om", "model.om", "resnet50.json"]
    assert all(is_content_named(tmp_path / name) for name in found)
    assert [p.name for p in find_graph_files(tmp_path, "PreRunBegin")] == ["ge_proto_00000001_graph_0_PreRunBegin.txt"]


def test_named_build_dumps_win_over_user_named_graphs(tmp_path):
    (tmp_path / "resnet50.json").write_text('{"attr": [], "graph": []}')
    (tmp_path / "model.om").write_bytes(OM)
    write_graph_text(build_model([OpSpec("a", "Relu")]), tmp_path / "ge_proto_00000001_Build.txt")
    assert [p.name for p in find_graph_files(tmp_path)] == ["ge_proto_00000001_Build.txt"]
    assert not is_content_named(tmp_path / "ge_proto_00000001_Build.txt")


def test_a_fifo_or_unreadable_file_is_not_a_graph_and_never_blocks(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    secret = tmp_path / "secret.txt"
    secret.write_text("graph {\n}\n")
    secret.chmod(0)
    try:
        found = [p.name for p in find_graph_files(tmp_path)]
    finally:
        secret.chmod(0o600)
    assert "pipe.json" not in found
    assert found in ([], ["secret.txt"])  # root reads a mode-000 file


def test_one_model_under_one_name_is_read_once_the_model_over_its_conversions(tmp_path):
    json_text = '{"attr": [], "graph": [{"name": "g", "op": []}]}'
    for name in ("resnet50.json", "resnet50.txt.json", "RESNET50.JSON", "bert.json", "bert.TXT"):
        (tmp_path / name).write_text(json_text if "json" in name.lower() else "graph {\n}\n")
    (tmp_path / "resnet50.om").write_bytes(OM)
    assert [p.name for p in find_graph_files(tmp_path)] == ["bert.TXT", "resnet50.om"]
    (tmp_path / "resnet50.om").unlink()
    (tmp_path / "bert.TXT").unlink()
    assert [p.name for p in find_graph_files(tmp_path)] == ["RESNET50.JSON", "bert.json"]
