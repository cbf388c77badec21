"""The fusion check: where it looks, the two tables per graph, nothing found, data absent."""

from __future__ import annotations

import json

import pytest

from precision_tool.checks.fusion import check_fusion, fusion_candidates
from precision_tool.render.checks import render_fusion
from precision_tool.sample.fusion import write_fusion_sample
from tests.checks.rendering import flat, render_text
from tests.conftest import make_context

OBJECTS = [
    {
        "session_and_graph_id": "3_1",
        "graph_fusion": {
            "ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "2"},
            "ZeroEffectGraphPass": {"effect_times": "0", "match_times": "6"},
        },
        "ub_fusion": {
            "TbeConvReluFusionPass": {"effect_times": "1", "match_times": "3"},
            "ZeroEffectUbPass": {"effect_times": "0", "match_times": "1"},
        },
    },
    {
        "graphId": "3_2",
        "graph_fusion": {"MatMulBiasAddFusionPass": {"effect_times": "4", "match_times": "5"}},
        "ub_fusion": {},
    },
]


@pytest.fixture
def dirs(tmp_path):
    root = tmp_path / "precision_data"
    cwd = tmp_path / "work"
    root.mkdir()
    cwd.mkdir()
    return root, cwd


def write(path, objects, tail=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(o, indent=2) for o in objects) + tail)
    return path


def rendered(result) -> str:
    return render_text(render_fusion(result))


def table_rows(text: str) -> dict[str, list[str]]:
    """``{first cell: other cells}`` of every table row inside the panel."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if line.count("│") >= 5 and cells:
            rows[cells[0]] = cells[1:]
    return rows


def test_absent_says_what_and_where(dirs):
    root, cwd = dirs
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert not result.present and not result.found
    assert result.looked_in == (cwd / "fusion_result.json", root / "fusion" / "fusion_result.json")
    text = rendered(result)
    assert flat(text) == (f"fusion check: data absent: looked for fusion_result.json in {cwd} and {root / 'fusion'}")


def test_data_root_file_gives_two_tables_per_graph_of_effective_rules(dirs):
    root, cwd = dirs
    source = write(root / "fusion" / "fusion_result.json", OBJECTS)
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.source == source and result.problem is None and result.found
    assert [g.key for g in result.graphs] == ["3_1", "3_2"]
    text = rendered(result)
    for title in ("session 3, graph 1: graph fusion", "session 3, graph 1: UB fusion", "graph 3_2: graph fusion"):
        assert title in text
    assert "graph 3_2: UB fusion: no rule took effect" in text
    rows = table_rows(text)
    assert rows["ConvBiasAddFusionPass"] == ["2", "2"]
    assert rows["TbeConvReluFusionPass"] == ["1", "3"]
    assert rows["MatMulBiasAddFusionPass"] == ["4", "5"]
    assert "ZeroEffect" not in text
    assert (
        text.index("session 3, graph 1: graph fusion")
        < text.index("ConvBiasAddFusionPass")
        < text.index("session 3, graph 1: UB fusion")
        < text.index("TbeConvReluFusionPass")
    )


def test_working_directory_file_wins_and_nothing_is_copied(dirs):
    root, cwd = dirs
    write(root / "fusion" / "fusion_result.json", OBJECTS)
    local = write(cwd / "fusion_result.json", [OBJECTS[1]])
    before = sorted(p.relative_to(root.parent) for p in root.parent.rglob("*"))
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.source == local
    assert [g.key for g in result.graphs] == ["3_2"]
    assert sorted(p.relative_to(root.parent) for p in root.parent.rglob("*")) == before
    assert fusion_candidates(context, cwd)[0] == local


def test_nothing_found_when_no_rule_took_effect(dirs):
    root, cwd = dirs
    zero = [
        {"graphId": "1", "graph_fusion": {"A": {"effect_times": "0", "match_times": "1"}}},
        {"session_and_graph_id": "2", "ub_fusion": {"B": {"effect_times": "0"}}},
    ]
    write(root / "fusion" / "fusion_result.json", zero)
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.present and not result.found
    text = flat(rendered(result))
    assert "nothing found: no fusion rule took effect in 2 graph(s)" in text
    assert "fusion check" in text and " A " not in text


def test_garbage_tail_keeps_earlier_graphs_and_says_where(dirs):
    root, cwd = dirs
    good = "".join(json.dumps(o, indent=2) for o in OBJECTS)
    path = write(root / "fusion" / "fusion_result.json", OBJECTS, tail="}{oops")
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert [g.key for g in result.graphs] == ["3_1", "3_2"]
    assert result.problem.startswith(str(path)) and f"offset {len(good)}" in result.problem
    text = flat(rendered(result))
    assert f"problem: {path}: not JSON" in text
    assert "showing the 2 graph(s) before it" in text
    assert "MatMulBiasAddFusionPass" in text


def test_unreadable_file_is_a_problem_not_a_crash(dirs):
    root, cwd = dirs
    (cwd / "fusion_result.json").write_bytes(b"\xff\xfe")
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.present and not result.graphs and "not UTF-8" in result.problem
    text = flat(rendered(result))
    assert "nothing found" not in text and "problem:" in text


def test_repeated_graph_ids_with_other_rules_are_told_apart(dirs):
    root, cwd = dirs
    other = dict(OBJECTS[1], graph_fusion={"MatMulBiasAddFusionPass": {"effect_times": "1"}})
    write(root / "fusion" / "fusion_result.json", [OBJECTS[1], other])
    context, _ = make_context(root)
    text = flat(rendered(check_fusion(context, cwd=cwd)))
    assert "graph 3_2 (entry 1): graph fusion" in text
    assert "graph 3_2 (entry 2): graph fusion" in text
    assert "graph 3_2 is written 2 times with 2 different sets of rules: each set is kept" in text


def test_a_graph_written_again_unchanged_is_shown_once_and_said(dirs):
    root, cwd = dirs
    write(root / "fusion" / "fusion_result.json", [OBJECTS[1], OBJECTS[1], OBJECTS[1]])
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert [(g.key, g.copies) for g in result.graphs] == [("3_2", 3)]
    text = flat(rendered(result))
    assert "graph 3_2 is written 3 times with the same rules: read as one graph" in text
    assert text.count("MatMulBiasAddFusionPass") == 1 and "(entry" not in text


def test_a_file_of_null_is_no_graph_and_no_rule(dirs):
    root, cwd = dirs
    path = root / "fusion" / "fusion_result.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"null")  # what a torch_npu run that fused nothing wrote
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.present and result.problem is None and result.graphs == ()
    text = flat(rendered(result))
    assert "nothing found: no fusion rule took effect (the file lists no graph)" in text
    assert "problem" not in text and "damaged" not in text


def test_sample_fusion_file_shows_its_passes(sample_data, tmp_path):
    write_fusion_sample(sample_data)
    context, _ = make_context(sample_data)
    result = check_fusion(context, cwd=tmp_path / "elsewhere")
    assert result.found and result.source == sample_data / "fusion" / "fusion_result.json"
    text = rendered(result)
    assert "session 1, graph 1: graph fusion" in text and "session 1, graph 1: UB fusion" in text
    for name in (
        "ConvBiasAddFusionPass",
        "BatchNormInferFusionPass",
        "MatMulBiasAddFusionPass",
        "TbeConvReluFusionPass",
    ):
        assert name in text
    assert "TbeEltwiseFusionPass" not in text


def test_keyed_form_of_current_cann_shows_its_rules_per_session(dirs):
    root, cwd = dirs
    entry = {
        "graph_fusion": {"ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "2"}},
        "ub_fusion": {"TbeConvReluFusionPass": {"effect_times": "1", "match_times": "1", "repository_hit_times": "0"}},
    }
    path = root / "fusion" / "fusion_result.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"session_and_graph_id_0_1": entry, "session_and_graph_id_1_1": entry}, indent=4))
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    assert result.found and result.problem is None
    text = rendered(result)
    assert "nothing found" not in text
    for label in ("session 0, graph 1: graph fusion", "session 1, graph 1: UB fusion"):
        assert label in text
    assert table_rows(text)["TbeConvReluFusionPass"] == ["1", "1"]


def test_a_file_in_no_form_is_one_problem_line_with_the_offset(dirs):
    root, cwd = dirs
    path = root / "fusion" / "fusion_result.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"session_and_graph_id_0_0": "oops"}')
    context, _ = make_context(root)
    result = check_fusion(context, cwd=cwd)
    text = flat(rendered(result))
    assert "nothing found" not in text
    assert f"problem: {path}: object 1, key 'session_and_graph_id_0_0': found a JSON string" in text
    assert "at offset 1" in text
