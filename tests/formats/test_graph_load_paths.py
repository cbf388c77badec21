"""The shortcuts of the fast graph load, each against an independent reference: protobuf's
parser for what the reader learns (integer lines, one-line messages whose literals differ,
blocks in several versions, the benchmark's layouts), hand-made expectations for the graph
builder, and faked CPU counters for the idle-core watch."""

from __future__ import annotations

import gc
import importlib.util
from pathlib import Path

import pytest
from google.protobuf import text_format

from precision_tool import idle_cores
from precision_tool.collector import FREEZE_MIN_OBJECTS, gc_paused
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.graph_convert import GraphBuilder
from precision_tool.formats.proto import ge_ir
from precision_tool.formats.proto.fast_text import BLOCK_CHURN, BLOCK_VERSIONS

from .test_graph_text_fast import assert_same, fast_reading, protobuf_reading

REPO = Path(__file__).resolve().parents[2]


def _bench_graph_text():
    spec = importlib.util.spec_from_file_location("graph_load_bench", REPO / "bench" / "graph_load_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.graph_text


@pytest.mark.parametrize("layout,ops", [("compact", 300), ("printer", 300), ("ge", 40)])
def test_the_benchmark_graph_reads_as_protobuf_reads_it(layout, ops):
    assert_same(_bench_graph_text()(ops, True, layout))


def test_the_benchmark_ge_layout_is_protobufs_printer_layout():
    text = _bench_graph_text()(20, True, "ge")
    proto = text_format.Parse(text, ge_ir.ModelDef())
    assert text_format.MessageToString(proto) == text
    assert len(proto.graph[0].op) == 20 and len(proto.graph[0].op[3].attr) > 20


def _attr_block(key: str, values: list[str]) -> str:
    items = "".join(f'          s: "{value}"\n' for value in values)
    return (
        f'    attr {{\n      key: "{key}"\n      value {{\n        list {{\n{items}'
        "          val_type: VT_LIST_STRING\n        }\n      }\n    }\n"
    )


@pytest.mark.parametrize("versions", [2, 3, BLOCK_VERSIONS + 1, BLOCK_VERSIONS + 4, BLOCK_CHURN + 10])
def test_blocks_that_take_turns_among_versions(versions):
    # one attribute's block in several versions, coming back in turn and out of turn: each
    # is replayed as the version it is (a block kept in one version would be relearnt); past
    # BLOCK_CHURN new versions the block is read line by line from then on
    order = [i % versions for i in range(3 * versions)] + [0, versions - 1, 1, 0]
    ops = "".join(
        f'  op {{\n    name: "n{i}"\n'
        + _attr_block("pass_name", [f"P{v}", "Q"][: 1 + v % 2])
        + _attr_block("other", ["x"])
        + "  }\n"
        for i, v in enumerate(order)
    )
    assert_same(f"graph {{\n{ops}}}\n")


def test_integer_lines_learnt_by_what_precedes_them():
    ops = "\n".join(f'  op {{\n    name: "n{i}"\n    id: {i}\n    stream_id: {i % 3}\n  }}' for i in range(50))
    assert_same(f"graph {{\n{ops}\n}}\n")
    # the same head with what is not a plain decimal: octal, a sign, a trailing space
    odd = (
        "graph {\n  op {\n    id: 5\n  }\n  op {\n    id: 012\n  }\n  op {\n    id: -3\n  }\n"
        "  op {\n    id: 7 \n  }\n}\n"
    )
    assert_same(odd)
    bools = "\n".join(f'attr {{\n  key: "b{i}"\n  value {{\n    b: {i % 2}\n  }}\n}}' for i in range(6))
    assert_same(bools)


def test_an_integer_given_twice_is_left_to_protobuf():
    text = "version: 1\nversion: 2\n"
    assert fast_reading(text) is None
    assert protobuf_reading(text)[0] == "error"


def test_one_line_messages_that_differ_only_in_their_literals():
    lines = []
    for i in range(40):
        # replayed from a template learnt from the first such line (a map entry with a oneof
        # member, a constant among the literals, a repeated field, a nested message)
        lines += [
            f'attr {{ key: "s{i}" value {{ s: "v{i}" }} }}',
            f'attr {{ key: "f{i}" value {{ f: 1.5 }} }}',
            f'attr {{ key: "l{i}" value {{ list {{ s: "a{i}" s: "b" }} }} }}',
            f'attr {{ key: "t{i}" value {{ td {{ layout: "L{i}" shape {{ dim: 2 }} }} }} }}',
        ]
    assert_same('graph {\n  op {\n    name: "x"\n    ' + "\n    ".join(lines) + "\n  }\n}\n")


# --- the graph builder --------------------------------------------------------------------


def _op(name: str, inputs: list[str], outputs: int = 1) -> tuple:
    return (name, "T", 0, inputs, [], [None] * outputs, {}, 0, [])


def test_consumers_are_found_before_and_after_their_producer():
    builder = GraphBuilder(None)
    builder.add([_op("c", ["a:0", "b:1"]), _op("a", [])])  # c reads a before a comes
    builder.add([_op("b", ["a:0", "a:-1"]), _op("d", ["a:0", "b:3", "gone:0"])])
    graph = builder.finish("g", {}, [], [])
    by_name = {op.name: op for op in graph.ops}
    assert [op.name for op in graph.ops] == ["c", "a", "b", "d"]
    assert by_name["a"].consumers == [[("c", 0), ("b", 0), ("d", 0)]]  # file order; no control edge
    assert by_name["b"].consumers == [[], [("c", 1)], [], [("d", 1)]]  # widened to output 3
    assert by_name["c"].consumers == [[]] and by_name["d"].consumers == [[]]


def test_bad_ops_are_reported_only_when_the_graph_is_finished():
    builder = GraphBuilder(Path("g.txt"))
    builder.add([_op("a", []), _op("b", []), _op("b", []), _op("a", [])])
    with pytest.raises(PrecisionToolError, match="graph 'g' has two ops named 'a'"):
        builder.finish("g", {}, [], [])  # the first name in file order that comes twice
    builder = GraphBuilder(None)
    builder.add([_op("a", []), _op("a", []), _op("", [])])
    with pytest.raises(PrecisionToolError, match="op #2 of graph 'h' has no name"):
        builder.finish("h", {}, [], [])  # a missing name is told before a repeated one


# --- the collector after a big load ---------------------------------------------------------


def test_a_big_load_leaves_its_objects_to_reference_counting():
    gc.unfreeze()  # whatever an earlier test's load froze: counted from nothing
    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with gc_paused():
            with gc_paused():  # nested: only the outer one decides
                kept = [[] for _ in range(FREEZE_MIN_OBJECTS)]
            assert not gc.isenabled()
        assert gc.isenabled() and gc.get_freeze_count() >= before + FREEZE_MIN_OBJECTS
    finally:
        gc.unfreeze()
    with gc_paused():
        small = [[] for _ in range(10)]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    del kept, small


def test_a_failed_load_freezes_nothing():
    gc.unfreeze()
    with pytest.raises(ValueError):
        with gc_paused():
            kept = [[] for _ in range(FREEZE_MIN_OBJECTS)]  # noqa: F841
            raise ValueError
    assert gc.isenabled() and gc.get_freeze_count() == 0


# --- the idle-core watch --------------------------------------------------------------------


def test_this_process_own_work_counts_as_idle(monkeypatch):
    ticks = iter([(1000, 500), (1200, 550)])  # two cores, 100 ticks each, 50 of them idle
    clock = iter([10.0, 10.5, 10.5])  # the mark, the wait check, the end
    cpu = iter([3.0, 4.0])  # this process ran 1 s = 100 ticks meanwhile
    monkeypatch.setattr(idle_cores, "_ticks", lambda: next(ticks))
    monkeypatch.setattr(idle_cores.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(idle_cores.time, "process_time", lambda: next(cpu))
    monkeypatch.setattr(idle_cores.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(idle_cores.os, "sysconf", lambda name: 100)
    mark = idle_cores.cpu_mark()
    assert idle_cores.free_cores(mark) == pytest.approx(2 * (50 + 100) / 200)


def test_without_proc_stat_the_load_average_stands_in(monkeypatch):
    def unreadable():
        raise OSError("no /proc here")

    monkeypatch.setattr(idle_cores, "_ticks", unreadable)
    monkeypatch.setattr(idle_cores.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(idle_cores.os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert idle_cores.cpu_mark() is None
    assert idle_cores.free_cores() == pytest.approx(2.5)
