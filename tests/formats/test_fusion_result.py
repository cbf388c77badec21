"""``fusion_result.json``: concatenated objects, both graph-id keys, string counts, bad tails."""

from __future__ import annotations

import json

import pytest

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.fusion_result import (
    FusionResultError,
    FusionRule,
    parse_fusion_result,
    read_fusion_result,
)
from precision_tool.sample.build import network_ops
from precision_tool.sample.fusion import fusion_objects, write_fusion_sample

FIRST = {"session_and_graph_id": "1_1",
         "graph_fusion": {"ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "3"},
                          "ConstToAttrPass": {"effect_times": "0", "match_times": "4"}},
         "ub_fusion": {"TbeConvReluFusionPass": {"effect_times": "1", "match_times": "1"}}}
SECOND = {"graphId": "0_7",
          "graph_fusion": {"MatMulBiasAddFusionPass": {"effect_times": 5}},
          "ub_fusion": {"TbeEltwiseFusionPass": {"effect_times": "0", "match_times": "2"}}}


def concatenated(*objects, indent=None) -> str:
    return "".join(json.dumps(obj, indent=indent) for obj in objects)


def test_concatenated_objects_are_read_in_order_with_both_id_keys():
    text = concatenated(FIRST, SECOND, indent=4)
    graphs = parse_fusion_result(text)
    assert [g.graph_id for g in graphs] == ["1_1", "0_7"]
    assert [g.index for g in graphs] == [0, 1]
    assert graphs[0].offset == 0 and graphs[1].offset == len(json.dumps(FIRST, indent=4))
    assert graphs[0].graph_fusion == (FusionRule("ConvBiasAddFusionPass", 2, 3),
                                      FusionRule("ConstToAttrPass", 0, 4))
    assert graphs[0].effective("graph_fusion") == [FusionRule("ConvBiasAddFusionPass", 2, 3)]
    assert graphs[0].effective("ub_fusion") == [FusionRule("TbeConvReluFusionPass", 1, 1)]
    # integer counts are taken too; a missing match_times is None; effect 0 is left out
    assert graphs[1].effective("graph_fusion") == [FusionRule("MatMulBiasAddFusionPass", 5, None)]
    assert graphs[1].effective("ub_fusion") == []


def test_one_object_whitespace_bom_and_empty_text():
    assert [g.graph_id for g in parse_fusion_result(json.dumps(FIRST))] == ["1_1"]
    spaced = "\ufeff\n  " + json.dumps(FIRST) + "\n\n\t" + json.dumps(SECOND) + "\n"
    assert [g.graph_id for g in parse_fusion_result(spaced)] == ["1_1", "0_7"]
    assert parse_fusion_result("") == [] and parse_fusion_result(" \n") == []


def test_session_and_graph_id_wins_and_a_missing_id_is_none():
    both = dict(FIRST, graphId="old")
    assert parse_fusion_result(json.dumps(both))[0].graph_id == "1_1"
    assert parse_fusion_result(json.dumps({"graph_fusion": {}}))[0].graph_id is None
    numeric = parse_fusion_result(json.dumps({"graphId": 3}))[0]
    assert numeric.graph_id == "3" and numeric.graph_fusion == () and numeric.ub_fusion == ()


def test_garbage_tail_names_file_and_offset_and_keeps_earlier_objects(tmp_path):
    good = concatenated(FIRST, SECOND)
    path = tmp_path / "fusion_result.json"
    path.write_text(good + "\n garbage")
    with pytest.raises(FusionResultError) as caught:
        read_fusion_result(path)
    error = caught.value
    assert isinstance(error, PrecisionToolError)
    assert error.offset == len(good) + 2
    assert str(path) in str(error) and f"offset {len(good) + 2}" in str(error)
    assert [g.graph_id for g in error.graphs] == ["1_1", "0_7"]


def test_truncated_object_is_an_error_at_its_offset():
    text = concatenated(FIRST) + json.dumps(SECOND)[:-5]
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(text, "f.json")
    assert [g.graph_id for g in caught.value.graphs] == ["1_1"]
    assert caught.value.offset >= len(json.dumps(FIRST))
    assert str(caught.value).startswith("f.json: not JSON")


@pytest.mark.parametrize("bad, words", [
    ([1, 2], "object 2: found a JSON list, not an object"),
    ({"graph_fusion": {"R": {"effect_times": "many"}}}, "graph_fusion R effect_times is 'many'"),
    ({"ub_fusion": {"R": {"effect_times": "1", "match_times": True}}}, "ub_fusion R match_times"),
    ({"graph_fusion": ["R"]}, "graph_fusion is a list"),
    ({"graph_fusion": {"R": "1"}}, "graph_fusion rule 'R' is not an object of counts"),
])
def test_a_bad_object_is_an_error_at_its_start(bad, words):
    head = json.dumps(FIRST)
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(head + json.dumps(bad) + json.dumps(SECOND), "x.json")
    assert words in str(caught.value)
    assert caught.value.offset == len(head)
    assert [g.graph_id for g in caught.value.graphs] == ["1_1"]


def test_read_leaves_the_file_alone(tmp_path):
    path = tmp_path / "fusion_result.json"
    path.write_text(concatenated(FIRST, SECOND))
    before = (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir()))
    assert len(read_fusion_result(path)) == 2
    assert (path.read_bytes(), path.stat().st_mtime_ns, sorted(p.name for p in tmp_path.iterdir())) == before


def test_unreadable_files_are_user_errors(tmp_path):
    with pytest.raises(PrecisionToolError, match="not found"):
        read_fusion_result(tmp_path / "absent.json")
    with pytest.raises(PrecisionToolError, match="is a directory"):
        read_fusion_result(tmp_path)
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"{\xff}")
    with pytest.raises(PrecisionToolError, match="not UTF-8"):
        read_fusion_result(binary)


def test_sample_file_is_concatenated_deterministic_and_covers_the_graph_passes(tmp_path):
    first = write_fusion_sample(tmp_path / "a")
    second = write_fusion_sample(tmp_path / "b")
    assert first == tmp_path / "a" / "fusion" / "fusion_result.json"
    assert first.read_bytes() == second.read_bytes()
    text = first.read_text()
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # not one document: objects back to back
    graphs = read_fusion_result(first)
    assert len(graphs) == len(fusion_objects()) >= 2
    effective = {r.name for g in graphs for s in ("graph_fusion", "ub_fusion") for r in g.effective(s)}
    passes = {p for op in network_ops() for p in (op.pass_name or ())}
    assert passes == {"ConvBiasAddFusionPass", "TbeConvReluFusionPass",
                      "BatchNormInferFusionPass", "MatMulBiasAddFusionPass"}
    assert passes <= effective
    ub = {r.name for g in graphs for r in g.effective("ub_fusion")}
    assert "TbeConvReluFusionPass" in ub
    ignored = {r.name for g in graphs for s in ("graph_fusion", "ub_fusion")
               for r in getattr(g, s) if r.effect_times == 0}
    assert ignored and not ignored & effective
