"""``fusion_result.json``: the four forms, graph and session ids, string counts, bad input."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.fusion_result import (
    FusionResultError,
    FusionRule,
    RepeatedKey,
    parse_fusion_result,
    read_fusion_result,
    repeated_keys,
)
from precision_tool.sample.build import network_ops
from precision_tool.sample.fusion import fusion_objects, write_fusion_sample

FIRST = {
    "session_and_graph_id": "1_1",
    "graph_fusion": {
        "ConvBiasAddFusionPass": {"effect_times": "2", "match_times": "3"},
        "ConstToAttrPass": {"effect_times": "0", "match_times": "4"},
    },
    "ub_fusion": {"TbeConvReluFusionPass": {"effect_times": "1", "match_times": "1"}},
}
SECOND = {
    "graphId": "0_7",
    "graph_fusion": {"MatMulBiasAddFusionPass": {"effect_times": 5}},
    "ub_fusion": {"TbeEltwiseFusionPass": {"effect_times": "0", "match_times": "2"}},
}


def concatenated(*objects, indent=None) -> str:
    return "".join(json.dumps(obj, indent=indent) for obj in objects)


def test_concatenated_objects_are_read_in_order_with_both_id_keys():
    text = concatenated(FIRST, SECOND, indent=4)
    graphs = parse_fusion_result(text)
    assert [(g.session_id, g.graph_id) for g in graphs] == [("1", "1"), (None, "0_7")]
    assert [g.key for g in graphs] == ["1_1", "0_7"]
    assert [g.index for g in graphs] == [0, 1]
    assert graphs[0].offset == 0 and graphs[1].offset == len(json.dumps(FIRST, indent=4))
    assert graphs[0].graph_fusion == (FusionRule("ConvBiasAddFusionPass", 2, 3), FusionRule("ConstToAttrPass", 0, 4))
    assert graphs[0].effective("graph_fusion") == [FusionRule("ConvBiasAddFusionPass", 2, 3)]
    assert graphs[0].effective("ub_fusion") == [FusionRule("TbeConvReluFusionPass", 1, 1)]
    # integer counts are taken too; a missing match_times is None; effect 0 is left out
    assert graphs[1].effective("graph_fusion") == [FusionRule("MatMulBiasAddFusionPass", 5, None)]
    assert graphs[1].effective("ub_fusion") == []


def test_one_object_whitespace_bom_and_empty_text():
    assert [g.key for g in parse_fusion_result(json.dumps(FIRST))] == ["1_1"]
    spaced = "\ufeff\n  " + json.dumps(FIRST) + "\n\n\t" + json.dumps(SECOND) + "\n"
    assert [g.key for g in parse_fusion_result(spaced)] == ["1_1", "0_7"]
    assert parse_fusion_result("") == [] and parse_fusion_result(" \n") == []
    assert parse_fusion_result("[]") == [] and parse_fusion_result("{} [ ]") == []


def test_session_and_graph_id_wins_and_a_missing_id_is_none():
    both = dict(FIRST, graphId="old", sessionId="9")
    assert parse_fusion_result(json.dumps(both))[0].key == "1_1"
    missing = parse_fusion_result(json.dumps({"graph_fusion": {}}))[0]
    assert missing.graph_id is None and missing.session_id is None and missing.key is None
    numeric = parse_fusion_result(json.dumps({"graphId": 3}))[0]
    assert numeric.graph_id == "3" and numeric.graph_fusion == () and numeric.ub_fusion == ()
    bare = parse_fusion_result(json.dumps({"session_and_graph_id": "7"}))[0]
    assert (bare.session_id, bare.graph_id) == (None, "7")


def test_older_graph_id_keeps_its_session():
    first = {"graphId": "1", "sessionId": "0", "graph_fusion": {"A": {"effect_times": "1"}}}
    second = dict(first, sessionId="1")
    graphs = parse_fusion_result(concatenated(first, second))
    assert [(g.session_id, g.graph_id, g.key) for g in graphs] == [("0", "1", "0_1"), ("1", "1", "1_1")]
    session_only = parse_fusion_result(json.dumps({"sessionId": 2, "graph_fusion": {}}))[0]
    assert session_only.key == "2_?"


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
    assert [g.key for g in error.graphs] == ["1_1", "0_7"]


def test_truncated_object_is_an_error_at_its_offset():
    text = concatenated(FIRST) + json.dumps(SECOND)[:-5]
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(text, "f.json")
    assert [g.key for g in caught.value.graphs] == ["1_1"]
    assert caught.value.offset >= len(json.dumps(FIRST))
    assert str(caught.value).startswith("f.json: not JSON")


@pytest.mark.parametrize(
    "bad, words",
    [
        ([1, 2], "array 2, item 1: found a JSON number, not an object"),
        ("text", "value 2: found a JSON string, not an object or an array of objects"),
        ({"model": "m"}, "object 2: not a fusion result: none of graph_fusion"),
        ({"graph_fusion": {"R": {"effect_times": "many"}}}, "graph_fusion R effect_times is 'many'"),
        ({"ub_fusion": {"R": {"effect_times": "1", "match_times": True}}}, "ub_fusion R match_times"),
        ({"graph_fusion": ["R"]}, "graph_fusion is a JSON array"),
        ({"graph_fusion": {"R": "1"}}, "graph_fusion rule 'R' is not an object of counts"),
    ],
)
def test_a_bad_object_is_an_error_at_its_start(bad, words):
    head = json.dumps(FIRST)
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(head + json.dumps(bad) + json.dumps(SECOND), "x.json")
    assert words in str(caught.value)
    assert caught.value.offset == len(head) + (1 if isinstance(bad, list) else 0)
    assert [g.key for g in caught.value.graphs] == ["1_1"]


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
    assert passes == {
        "ConvBiasAddFusionPass",
        "TbeConvReluFusionPass",
        "BatchNormInferFusionPass",
        "MatMulBiasAddFusionPass",
    }
    assert passes <= effective
    ub = {r.name for g in graphs for r in g.effective("ub_fusion")}
    assert "TbeConvReluFusionPass" in ub
    ignored = {
        r.name for g in graphs for s in ("graph_fusion", "ub_fusion") for r in getattr(g, s) if r.effect_times == 0
    }
    assert ignored and not ignored & effective


# --- the four forms -----------------------------------------------------------------------------


def keyed(*objects) -> dict:
    """Form 4: one object keyed ``session_and_graph_id_S_G``, ids taken out of the entries."""
    out = {}
    for obj in objects:
        session, _, graph = obj["session_and_graph_id"].partition("_")
        out[f"session_and_graph_id_{session}_{graph}"] = {k: v for k, v in obj.items() if k != "session_and_graph_id"}
    return out


THIRD = dict(FIRST, session_and_graph_id="2_5")


@pytest.mark.parametrize("form", ["objects", "array", "arrays", "keyed", "mixed"])
def test_every_form_gives_the_same_graphs(form):
    objects = [FIRST, THIRD]
    text = {
        "objects": concatenated(*objects, indent=2),
        "array": json.dumps(objects, indent=4),
        "arrays": json.dumps([FIRST]) + "\n" + json.dumps([THIRD]),
        "keyed": json.dumps(keyed(*objects), indent=4),
        "mixed": json.dumps([FIRST]) + json.dumps(keyed(THIRD)),
    }[form]
    graphs = parse_fusion_result(text)
    assert [(g.session_id, g.graph_id, g.index) for g in graphs] == [("1", "1", 0), ("2", "5", 1)]
    assert graphs[0].graph_fusion == (FusionRule("ConvBiasAddFusionPass", 2, 3), FusionRule("ConstToAttrPass", 0, 4))
    assert graphs[1].effective("ub_fusion") == [FusionRule("TbeConvReluFusionPass", 1, 1)]
    assert all(text[g.offset] in '{"' for g in graphs)  # each points at its entry (or its key)


def test_keyed_form_ignores_other_keys_and_unknown_fields():
    entry = {
        "graph_fusion": {"A": {"effect_times": "2", "match_times": "3", "repository_hit_times": "1"}},
        "ub_fusion": {},
        "future_section": {"x": 1},
    }
    text = json.dumps(
        {"version": "8.0", "session_and_graph_id_0_3": entry, "session_and_graph_id_1_3": entry, "extra": [1, 2]}
    )
    graphs = parse_fusion_result(text)
    assert [g.key for g in graphs] == ["0_3", "1_3"]  # graph 3 of two sessions: two graphs
    assert graphs[0].graph_fusion == (FusionRule("A", 2, 3),)
    assert text[graphs[1].offset :].startswith('"session_and_graph_id_1_3"')


def test_truncated_array_keeps_the_items_before():
    text = json.dumps([FIRST, SECOND, THIRD])
    cut = text[: text.index('"2_5"')]
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(cut, "f.json")
    assert [g.key for g in caught.value.graphs] == ["1_1", "0_7"]
    assert str(caught.value).startswith("f.json: not JSON") and "offset" in str(caught.value)
    assert caught.value.offset >= len(json.dumps([FIRST, SECOND])) - 1
    with pytest.raises(FusionResultError, match=r"'\]' missing: the file ends early\) at offset"):
        parse_fusion_result(json.dumps([FIRST])[:-1])
    with pytest.raises(FusionResultError, match="Expecting ',' delimiter"):
        parse_fusion_result("[" + json.dumps(FIRST) + " x]")


def test_keyed_values_that_are_not_objects_are_one_error_at_their_key():
    text = json.dumps({"session_and_graph_id_0_0": {"graph_fusion": {}}, "session_and_graph_id_0_1": ["A", "B"]})
    with pytest.raises(FusionResultError) as caught:
        parse_fusion_result(text, "k.json")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("k.json: object 1, key 'session_and_graph_id_0_1'")
    assert "found a JSON array, not an object of fusion rules" in message
    assert caught.value.offset == text.index('"session_and_graph_id_0_1"')
    assert [g.key for g in caught.value.graphs] == ["0_0"]


# --- null, and keys written more than once --------------------------------------------------


@pytest.mark.parametrize(
    "text", ["null", "null\n", " null ", "[null]", "[null, null]", '{"session_and_graph_id_0_0": null}', "null[]null"]
)
def test_null_is_no_graph(text, tmp_path):
    assert parse_fusion_result(text) == []
    path = tmp_path / "fusion_result.json"
    path.write_text(text)
    assert read_fusion_result(path) == []


def test_null_among_graphs_is_skipped_and_the_graphs_are_kept():
    text = "null" + json.dumps(FIRST) + "\n" + json.dumps([None, THIRD])
    assert [g.key for g in parse_fusion_result(text)] == ["1_1", "2_5"]


def _member(key: str, entry: dict) -> str:
    return f'"session_and_graph_id_{key}": {json.dumps(entry, indent=4)}'


def _appended_by_processes(distinct: int, processes: int) -> str:
    """One keyed object whose every key is written once per process, as a job of several
    processes left it (json.dumps cannot write a key twice, so the members are joined by hand)."""
    entries = {
        f"0_{g}": {"graph_fusion": {f"Pass{g}": {"effect_times": str(g % 3), "match_times": "3"}}, "ub_fusion": {}}
        for g in range(distinct)
    }
    members = [_member(key, entry) for _ in range(processes) for key, entry in entries.items()]
    return "{\n" + ",\n".join(members) + "\n}"


def test_a_key_written_by_four_processes_is_one_graph():
    text = _appended_by_processes(18, 4)
    import re

    written = re.findall(r'"session_and_graph_id_(\d+_\d+)"', text)  # counted on the raw text
    assert len(written) == 72 and len(set(written)) == 18
    graphs = parse_fusion_result(text)
    assert [g.key for g in graphs] == list(dict.fromkeys(written))
    assert [g.copies for g in graphs] == [4] * 18 and [g.index for g in graphs] == list(range(18))
    assert graphs[5].graph_fusion == (FusionRule("Pass5", 2, 3),)
    assert text[graphs[5].offset :].startswith('"session_and_graph_id_0_5"')  # its first writing
    assert repeated_keys(graphs) == [RepeatedKey(key, 4, 1) for key in dict.fromkeys(written)]
    assert repeated_keys(graphs)[0].note == "graph 0_0 is written 4 times with the same rules: read as one graph"


def test_a_key_written_again_with_other_rules_keeps_both_and_says_so():
    one = {"graph_fusion": {"A": {"effect_times": "1", "match_times": "1"}}}
    two = {"graph_fusion": {"A": {"effect_times": "0", "match_times": "1"}}}
    text = "{" + ",".join([_member("0_1", one), _member("0_2", one), _member("0_1", two), _member("0_1", one)]) + "}"
    graphs = parse_fusion_result(text)
    assert [(g.key, g.copies, g.graph_fusion[0].effect_times) for g in graphs] == [
        ("0_1", 2, 1),
        ("0_2", 1, 1),
        ("0_1", 1, 0),
    ]
    (repeat,) = repeated_keys(graphs)
    assert (repeat.key, repeat.entries, repeat.variants) == ("0_1", 3, 2)
    assert repeat.note == "graph 0_1 is written 3 times with 2 different sets of rules: each set is kept"


def test_repeated_keys_after_another_key_first_are_read_member_by_member():
    entry = {"graph_fusion": {"A": {"effect_times": "2"}}}
    text = '{"version": "8.0", ' + ", ".join([_member("3_3", entry)] * 3) + "}"
    assert json.loads(text).keys() == {"version", "session_and_graph_id_3_3"}  # a dict keeps one
    (graph,) = parse_fusion_result(text)
    assert (graph.key, graph.copies) == ("3_3", 3)


def test_graphs_without_ids_are_never_folded():
    entry = {"graph_fusion": {"A": {"effect_times": "2"}}}
    graphs = parse_fusion_result(json.dumps(entry) + json.dumps(entry))
    assert [(g.key, g.copies) for g in graphs] == [(None, 1), (None, 1)]
    assert repeated_keys(graphs) == []


# --- random files in every form (property) ------------------------------------------------------

_names = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh", min_size=1, max_size=12)
_counts = st.fixed_dictionaries(
    {"effect_times": st.integers(0, 99).map(str), "match_times": st.integers(0, 99).map(str)}
)
_entries = st.fixed_dictionaries(
    {
        "ids": st.tuples(st.integers(0, 30), st.integers(0, 300)),
        "graph_fusion": st.dictionaries(_names, _counts, max_size=4),
        "ub_fusion": st.dictionaries(_names, _counts, max_size=3),
    }
)


def _write(entries, form: str, indent) -> str:
    plain = [
        {"session_and_graph_id": f"{s}_{g}", "graph_fusion": e["graph_fusion"], "ub_fusion": e["ub_fusion"]}
        for e in entries
        for s, g in [e["ids"]]
    ]
    if form == "objects":
        return "".join(json.dumps(o, indent=indent) for o in plain)
    if form == "array":
        return json.dumps(plain, indent=indent)
    if form == "arrays":
        return "".join(json.dumps([o], indent=indent) for o in plain)
    return json.dumps(
        {
            f"session_and_graph_id_{s}_{g}": {"graph_fusion": e["graph_fusion"], "ub_fusion": e["ub_fusion"]}
            for e in entries
            for s, g in [e["ids"]]
        },
        indent=indent,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_entries, max_size=5, unique_by=lambda e: e["ids"]),
    st.sampled_from(["objects", "array", "arrays", "keyed"]),
    st.sampled_from([None, 1, 4]),
)
def test_any_file_in_any_form_reads_back(entries, form, indent):
    graphs = parse_fusion_result(_write(entries, form, indent))
    assert [(g.session_id, g.graph_id) for g in graphs] == [(str(s), str(g)) for e in entries for s, g in [e["ids"]]]
    for graph, entry in zip(graphs, entries):
        for section in ("graph_fusion", "ub_fusion"):
            assert getattr(graph, section) == tuple(
                FusionRule(name, int(c["effect_times"]), int(c["match_times"])) for name, c in entry[section].items()
            )


# --- the real files -----------------------------------------------------------------------------


def _json_values(text: str) -> list:
    """Every top-level JSON value of ``text``, decoded with the json module alone."""
    decoder, values, position = json.JSONDecoder(), [], 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return values
        value, position = decoder.raw_decode(text, position)
        values.append(value)


def _expected_graphs(text: str) -> list[tuple[str, str, int, int, int]]:
    """(session, graph, graph rules, UB rules, effective rules) per graph, by the json module."""
    out = []
    for value in _json_values(text):
        for item in value if isinstance(value, list) else [value]:
            pairs = [
                (k[len("session_and_graph_id_") :].split("_"), v)
                for k, v in item.items()
                if k.startswith("session_and_graph_id_")
            ] or [
                (
                    str(item.get("session_and_graph_id", "")).split("_")
                    if "session_and_graph_id" in item
                    else [item.get("sessionId"), item.get("graphId")],
                    item,
                )
            ]
            for (session, graph), entry in pairs:
                rules = [c for s in ("graph_fusion", "ub_fusion") for c in entry.get(s, {}).values()]
                out.append(
                    (
                        str(session),
                        str(graph),
                        len(entry.get("graph_fusion", {})),
                        len(entry.get("ub_fusion", {})),
                        sum(int(c["effect_times"]) > 0 for c in rules),
                        json.dumps(entry, sort_keys=True),
                    )
                )
    return out


def _folded(graphs: list[tuple]) -> list[tuple[tuple, int]]:
    """Each distinct (ids, content) once, in first-seen order, with how often it is written."""
    counts: dict[tuple, int] = {}
    for graph in graphs:
        counts[graph] = counts.get(graph, 0) + 1
    return [(graph[:5], count) for graph, count in counts.items()]


REAL_FUSION = [
    "objects_concatenated.json",
    "graphid_sessionid.json",
    "json_array.json",
    "arrays_concatenated.json",
    "keyed_by_graph.json",
]


@pytest.mark.parametrize("name", REAL_FUSION)
def test_real_files_give_the_graphs_and_rules_the_json_holds(real_dir, name):
    path = real_dir / "fusion" / name
    text = path.read_text(encoding="utf-8")
    graphs = read_fusion_result(path)
    want = _folded(_expected_graphs(text))
    assert [
        (
            (
                g.session_id,
                g.graph_id,
                len(g.graph_fusion),
                len(g.ub_fusion),
                len(g.effective("graph_fusion") + g.effective("ub_fusion")),
            ),
            g.copies,
        )
        for g in graphs
    ] == want
    # every rule of the file, counted on the raw text
    assert sum((len(g.graph_fusion) + len(g.ub_fusion)) * g.copies for g in graphs) == text.count('"effect_times"')
    assert len(graphs) >= 1


def test_real_arrays_appended_by_four_processes_are_one_graph(real_dir):
    path = real_dir / "fusion" / "arrays_concatenated.json"
    text = path.read_text(encoding="utf-8")
    assert text.count('"session_and_graph_id": "0_0"') == 4 and text.count("}][{") == 3
    (graph,) = read_fusion_result(path)
    assert (graph.key, graph.copies) == ("0_0", 4)
    assert graph.graph_fusion == (FusionRule("RefreshInt64ToInt32FusionPass", 1, 1),)


def test_real_older_file_keeps_session_and_graph_apart(real_dir):
    graphs = read_fusion_result(real_dir / "fusion" / "graphid_sessionid.json")
    assert [g.key for g in graphs] == ["0_11", "0_41"]
    assert graphs[0].effective("ub_fusion") == [FusionRule("AutomaticUbFusion", 2, 2)]
    assert graphs[0].effective("graph_fusion") == []  # MulAddFusionPass matched 4 times, 0 effect


def test_the_public_api_reads_every_form(real_dir):
    import precision_tool as pt

    assert pt.read_fusion_result is read_fusion_result and "read_fusion_result" in pt.__all__
    (graph,) = pt.read_fusion_result(real_dir / "fusion" / "keyed_by_graph.json")
    assert isinstance(graph, pt.FusionGraph) and (graph.session_id, graph.graph_id) == ("0", "0")
    assert graph.graph_fusion[0] == pt.FusionRule("RefreshInt64ToInt32FusionPass", 0, 1)
