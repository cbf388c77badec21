"""Corpus cases: GE graph dumps (TextFormat and atc JSON) and result CSVs that break the rules."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_csv import write_result_csv
from precision_tool.formats.graph_write import build_model, write_graph_json

from .base import (
    ERROR,
    FINE,
    MODEL,
    RELU_FILE,
    ROW,
    Case,
    Check,
    OpSpec,
    base_ops,
    graph_path,
    write_graph,
)

BIG_OPS = 100_000
GRAPH_NAME = "ge_proto_00000001_Build.txt"
DUMP = "{step}/" + RELU_FILE


def _edit_text(edit):
    def build(case_dir: Path) -> None:
        path = graph_path(case_dir)
        path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")

    return build


def _syntax_error(text: str) -> str:
    return text.replace('type: "Relu"', 'type: "Relu', 1)


def _unknown_fields(text: str) -> str:
    extra = '    future_field: 42\n    future_block {\n      nested: "x"\n    }\n'
    text = text.replace("  op {\n", "  op {\n" + extra, 1)
    return 'new_top_level: "from a newer GE"\n' + text


def _duplicate_names(text: str) -> str:
    return text.replace('\n    name: "net/add"', '\n    name: "net/relu"', 1)


def _big_graph(text: str) -> str:
    lines = []
    for i in range(BIG_OPS):  # protobuf's own TextFormat layout, as GE prints it
        lines += ["  op {", f'    name: "big/{i}"', '    type: "Relu"']
        lines += [f'    input: "big/{i - 1}:0"'] if i else ['    input: "net/add:0"']
        lines.append("  }")
    head, _, tail = text.rpartition("}")
    return head + "\n".join(lines) + "\n}" + tail


def _graph_ops(edit_ops):
    def build(case_dir: Path) -> None:
        ops = base_ops()
        edit_ops(ops)
        write_graph(case_dir, ops)

    return build


def _cycle(ops: list[OpSpec]) -> None:
    data, relu, add = ops
    cast_a = OpSpec("net/cast_a", "Cast", ["net/cast_b:0"], relu.input_descs, relu.output_descs, original_op_names=[])
    cast_b = OpSpec("net/cast_b", "Cast", ["net/cast_a:0"], relu.input_descs, relu.output_descs, original_op_names=[])
    relu.inputs = ["net/cast_a:0"]
    add.inputs = ["net/relu:0", "net/add:0"]  # an op reading its own output
    ops[:] = [data, cast_a, cast_b, relu, add]


def _dangling(ops: list[OpSpec]) -> None:
    ops[1].inputs = ["net/ghost:0", "net/ghost2:-1"]


def _json(edit):
    def build(case_dir: Path) -> None:
        txt = graph_path(case_dir)
        txt.unlink()
        path = write_graph_json(build_model(base_ops(), name=MODEL), txt.with_name(GRAPH_NAME + ".json"))
        data = json.loads(path.read_text(encoding="utf-8"))
        edit(data)
        path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")

    return build


def _ops(data: dict) -> list[dict]:
    return data["graph"][0]["op"]


def _nulls_and_missing(data: dict) -> None:
    data_op, relu, add = _ops(data)
    relu["attr"] = relu.get("attr", []) + [{"key": "_null_attr", "value": None}, {"key": "_no_value"}]
    relu["output_desc"][0]["attr"] = None
    relu["input_desc"][0]["shape"] = None
    del data_op["type"]
    del add["input_desc"]
    del data["graph"][0]["name"]
    data["graph"][0]["op"].append(None)


def _no_name(data: dict) -> None:
    del _ops(data)[1]["name"]


def _rows() -> list[CompareRow]:
    rows = []
    for index, (op, cos) in enumerate((("net/relu", 0.5), ("net/add", 0.99))):
        for kind in ("input", "output"):
            metrics = {"CosineSimilarity": cos if kind == "output" else 1.0, "MaxAbsoluteError": 0.1}
            rows.append(
                CompareRow(
                    index,
                    "Relu",
                    op,
                    "float32",
                    None,
                    op,
                    "float32",
                    f"{op}:{kind}:0",
                    (2, 3),
                    metrics,
                    "(0.1;0.2),(0.1;0.2)",
                )
            )
    return rows


def _csv(edit):
    """A result CSV written by the project's writer, then edited as text rows."""

    def build(case_dir: Path) -> None:
        path = write_result_csv(case_dir / "result.csv", _rows())
        table = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))
        out = edit(table)
        if isinstance(out, list):
            buffer = io.StringIO()
            csv.writer(buffer).writerows(out)
            out = buffer.getvalue().encode("utf-8")
        path.write_bytes(out)

    return build


def _drop_column(name: str):
    def edit(table):
        at = table[0].index(name)
        return [row[:at] + row[at + 1 :] for row in table]

    return edit


def _extra_columns(table):
    return [
        ["Extra"] + row + ["Trailing", "More"] if i == 0 else ["x"] + row + ["y", "z"] for i, row in enumerate(table)
    ]


def _nan_texts(table):
    at = table[0].index("CosineSimilarity")
    for row, text in zip(table[1:], ("nan", "NaN", "Nan", "*")):
        row[at] = text
    return table


def _bom(table):
    buffer = io.StringIO()
    csv.writer(buffer).writerows(table)
    return b"\xef\xbb\xbf" + buffer.getvalue().encode("utf-8")


def _bad_number(table):
    table[2][table[0].index("CosineSimilarity")] = "abc"
    return table


def _ragged(table):
    return [table[0]] + [row[: len(row) // 2] for row in table[1:]]


VCS = "vcs -f {case}/result.csv"

CASES = [
    Case(
        "graph_syntax_error",
        "an unterminated string in the TextFormat graph",
        _edit_text(_syntax_error),
        (
            Check("vc", ERROR, "TextFormat syntax error at line", GRAPH_NAME),
            Check("ls", ERROR, "syntax error", GRAPH_NAME),
            Check("ni net/relu", ERROR, "syntax error", GRAPH_NAME),
            Check(f"pt {DUMP}", FINE, "elements"),
        ),
    ),
    Case(
        "graph_unknown_fields",
        "fields and blocks this schema does not know",
        _edit_text(_unknown_fields),
        (Check("vc", FINE, "5 tensors compared, 0 not compared"), Check("ls", FINE, "Relu")),
    ),
    Case(
        "graph_cycles",
        "a Cast loop feeding net/relu and an op reading its own output",
        _graph_ops(_cycle),
        (
            Check("vc", ROW, "no ground truth dump file for net/relu:input:0"),
            Check("ni net/relu -s 3", FINE, "subgraph"),
            Check("ni net/add -s 2", FINE, "subgraph"),
        ),
    ),
    Case(
        "graph_dangling_inputs",
        "net/relu reads ops the graph does not have",
        _graph_ops(_dangling),
        (
            Check("vc", ROW, "no ground truth dump file for net/relu:input:0 (net/ghost:0)"),
            Check("ni net/relu -s 2", FINE, "net/ghost"),
            Check("ls -n ghost", FINE, "0 op(s)"),
        ),
    ),
    Case(
        "graph_duplicate_op_names",
        "two ops called net/relu",
        _edit_text(_duplicate_names),
        (Check("vc", ERROR, "two ops named 'net/relu'", GRAPH_NAME), Check("ls", ERROR, "two ops named", GRAPH_NAME)),
    ),
    Case(
        "graph_100k_ops",
        f"{BIG_OPS} more ops after the network",
        _edit_text(_big_graph),
        (
            Check("ls -t Relu -n big/9999", FINE, "op(s)"),
            Check("ni big/5000 -s 1", FINE, "big/5001"),
            Check("vc", ROW, 'there is no dump file for operator "big/99999"'),
        ),
        summarise=False,
    ),
    Case(
        "graph_json_nulls_and_missing_keys",
        'atc JSON only: "value": null, keys left out, a null op',
        _json(_nulls_and_missing),
        (
            Check("vc", FINE, "5 tensors compared, 0 not compared"),
            Check("ni net/relu -a", FINE, "attributes"),
            Check("ls", FINE, "Relu"),
        ),
    ),
    Case(
        "graph_json_op_without_name",
        "atc JSON whose second op has no name",
        _json(_no_name),
        (Check("vc", ERROR, "has no name", GRAPH_NAME + ".json"), Check("ls", ERROR, "has no name", GRAPH_NAME)),
    ),
    Case(
        "graph_empty_file",
        "a zero-byte graph file",
        _edit_text(lambda text: ""),
        (Check("vc", ERROR, "graph file is empty", GRAPH_NAME),),
    ),
    Case(
        "graph_binary",
        "a binary (not UTF-8) file under the graph's name",
        lambda c: graph_path(c).write_bytes(b"\x08\x96\x01\xff\xfe" * 20),
        (Check("vc", ERROR, "not a text graph dump", GRAPH_NAME), Check("ls", ERROR, "not UTF-8", GRAPH_NAME)),
    ),
    Case(
        "graph_json_invalid",
        "a .txt.json that is not JSON",
        lambda c: (graph_path(c).unlink(), graph_path(c).with_name(GRAPH_NAME + ".json").write_text('{"graph": [')),
        (Check("vc", ERROR, "not valid JSON", GRAPH_NAME),),
    ),
    Case(
        "csv_missing_columns",
        "a result CSV without CosineSimilarity",
        _csv(_drop_column("CosineSimilarity")),
        (Check(VCS, ERROR, "no CosineSimilarity column", "result.csv"),),
        base=False,
    ),
    Case(
        "csv_missing_optional_columns",
        "a result CSV without Shape and OpType",
        _csv(lambda t: _drop_column("OpType")(_drop_column("Shape")(t))),
        (Check(VCS, FINE, "first operator that introduces the error: net/relu (?)"),),
        base=False,
    ),
    Case(
        "csv_extra_columns",
        "columns before, after and unknown",
        _csv(_extra_columns),
        (Check(VCS, FINE, "first operator that introduces the error: net/relu (Relu)"),),
        base=False,
    ),
    Case(
        "csv_nan_variants",
        "cosines written nan, NaN, Nan and *",
        _csv(_nan_texts),
        (Check(VCS, FINE, "2 op(s) with a NaN output cosine, not judged: net/relu, net/add"),),
        base=False,
    ),
    Case(
        "csv_bom",
        "a UTF-8 byte order mark before the header",
        _csv(_bom),
        (Check(VCS, FINE, "first operator that introduces the error: net/relu (Relu)"),),
        base=False,
    ),
    Case(
        "csv_bad_number",
        "a cosine cell reading abc",
        _csv(_bad_number),
        (Check(VCS, ERROR, "CosineSimilarity is 'abc'", "result.csv"),),
        base=False,
    ),
    Case(
        "csv_ragged_rows",
        "rows cut short",
        _csv(_ragged),
        (Check(VCS, FINE, "first operator that introduces the error: net/relu (Relu)"),),
        base=False,
    ),
    Case(
        "csv_empty",
        "a zero-byte CSV",
        _csv(lambda t: b""),
        (Check(VCS, ERROR, "no Index column", "result.csv"),),
        base=False,
    ),
    Case(
        "csv_binary",
        "bytes that are not UTF-8",
        _csv(lambda t: b"\xff\xfe\x00\x01" * 10),
        (Check(VCS, ERROR, "cannot read the result CSV", "result.csv"),),
        base=False,
    ),
]
