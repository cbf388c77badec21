"""The cast check: dangerous dtype pairs from descriptors, grouped, configurable; absent/none."""

from __future__ import annotations

from precision_tool.checks.casts import CastGroup, CastOp, cast_dtypes, check_casts
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.render.checks import render_casts
from tests.checks.rendering import flat, render_text
from tests.conftest import make_context


def cast(name: str, src: str, dst: str, attrs=None) -> OpSpec:
    return OpSpec(
        name, "Cast", ["x:0"], [tensor_desc(src, shape=(4,))], [tensor_desc(dst, shape=(4,))], attrs=attrs or {}
    )


def write_graph(root, specs, number: int = 1, debug: str = "debug_0", graph_name: str = "g"):
    graph_dir = root / "npu" / debug / "graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    model = build_model(
        [OpSpec("x", "Data", output_descs=[tensor_desc("DT_FLOAT", shape=(4,))]), *specs], name=graph_name
    )
    return write_graph_text(model, graph_dir / f"ge_proto_{number:08d}_Build.txt")


def rendered(result) -> str:
    return render_text(render_casts(result))


SPECS = [
    cast("to_int_a", "DT_FLOAT", "DT_INT32"),
    cast("narrow_a", "DT_INT64", "DT_INT32"),
    cast("safe_widen", "DT_FLOAT16", "DT_FLOAT"),
    cast("to_int_b", "DT_FLOAT", "DT_INT32"),
    # GE numbering in the attrs says DT_FLOAT (0) -> DT_INT32 (3); the descriptors say a safe
    # DT_FLOAT -> DT_FLOAT16: the descriptors win and the op is not listed.
    cast("attrs_lie_safe", "DT_FLOAT", "DT_FLOAT16", {"SrcT": 0, "DstT": 3, "dst_type": 3}),
    # attrs say a safe DT_FLOAT -> DT_FLOAT16 (0 -> 1); descriptors say DT_INT64 -> DT_INT32.
    cast("attrs_lie_narrow", "DT_INT64", "DT_INT32", {"SrcT": 0, "DstT": 1, "dst_type": 1}),
    OpSpec("argmax", "ArgMaxV2", ["x:0"], [tensor_desc("DT_FLOAT")], [tensor_desc("DT_INT32")]),
]


def test_dangerous_casts_grouped_by_pair_from_descriptors(tmp_path):
    root = tmp_path / "precision_data"
    path = write_graph(root, SPECS)
    context, _ = make_context(root)
    result = check_casts(context)
    assert result.present and result.found
    assert result.graph_files == (path,)
    assert result.casts == 6
    assert result.groups == (
        CastGroup("DT_FLOAT", "DT_INT32", (CastOp("g", "to_int_a"), CastOp("g", "to_int_b"))),
        CastGroup("DT_INT64", "DT_INT32", (CastOp("g", "narrow_a"), CastOp("g", "attrs_lie_narrow"))),
    )
    text = rendered(result)
    assert "DT_FLOAT -> DT_INT32" in text and "DT_INT64 -> DT_INT32" in text
    for name in ("to_int_a", "to_int_b", "narrow_a", "attrs_lie_narrow"):
        assert name in text
    for name in ("safe_widen", "attrs_lie_safe", "argmax", "DT_FLOAT16 -> DT_FLOAT"):
        assert name not in text
    float_row = next(line for line in text.splitlines() if "DT_FLOAT -> DT_INT32" in line)
    assert " 2 " in float_row and "to_int_a" in float_row


def test_custom_dangerous_list_from_config(tmp_path):
    root = tmp_path / "precision_data"
    write_graph(root, [cast("to_int8", "DT_FLOAT", "DT_INT8"), *SPECS])
    context, _ = make_context(root, DANGEROUS_CASTS=[("DT_FLOAT", "DT_INT8")])
    assert context.config.dangerous_casts == (("DT_FLOAT", "DT_INT8"),)
    result = check_casts(context)
    assert result.groups == (CastGroup("DT_FLOAT", "DT_INT8", (CastOp("g", "to_int8"),)),)
    text = rendered(result)
    assert "DT_FLOAT -> DT_INT8" in text and "DT_INT32" not in text


def test_nothing_found_counts_the_casts_seen(tmp_path):
    root = tmp_path / "precision_data"
    write_graph(root, [cast("safe_widen", "DT_FLOAT16", "DT_FLOAT"), cast("c2", "DT_INT32", "DT_INT64")])
    context, _ = make_context(root)
    result = check_casts(context)
    assert result.present and not result.found and result.casts == 2
    text = flat(rendered(result))
    assert "cast check" in text
    assert "nothing found: none of the 2 Cast op(s) converts to a dangerous dtype" in text


def test_absent_says_what_and_where(tmp_path):
    root = tmp_path / "precision_data"
    root.mkdir()
    context, _ = make_context(root)
    result = check_casts(context)
    assert not result.present and not result.found
    assert flat(rendered(result)) == (
        "cast check: data absent: looked for Build graphs "
        f"(ge_proto_*_Build.txt, atc JSON or .om) in {root / 'npu' / 'debug_0' / 'graph'}"
    )


def test_several_graph_files_name_the_graph(tmp_path):
    root = tmp_path / "precision_data"
    write_graph(root, [cast("a", "DT_FLOAT", "DT_INT32")], 1, graph_name="first")
    write_graph(root, [cast("b", "DT_FLOAT", "DT_INT32")], 2, graph_name="second")
    context, _ = make_context(root)
    result = check_casts(context)
    assert result.groups == (CastGroup("DT_FLOAT", "DT_INT32", (CastOp("first", "a"), CastOp("second", "b"))),)
    text = rendered(result)
    assert "a (first)" in text and "b (second)" in text


def test_cast_without_descriptors_is_skipped(tmp_path):
    root = tmp_path / "precision_data"
    write_graph(root, [OpSpec("bare", "Cast", ["x:0"], attrs={"SrcT": 0, "DstT": 3})])
    context, _ = make_context(root)
    op = context.models()[0].graphs[0].op("bare")
    assert cast_dtypes(op) is None
    result = check_casts(context)
    assert result.casts == 1 and not result.found


def test_sample_graph_has_one_dangerous_cast_of_two(sample_data):
    context, _ = make_context(sample_data)
    result = check_casts(context)
    assert result.present and result.casts == 2  # trans_Cast_0 float -> float16 is safe
    assert [(g.src, g.dst, [op.name for op in g.ops]) for g in result.groups] == [
        ("DT_INT64", "DT_INT32", ["trans_Cast_5"])
    ]
