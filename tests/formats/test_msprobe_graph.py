"""An msprobe rank directory as a graph model: calls as ops, slots as result rows number them,
edges inferred from equal statistics, construct.json's parents, stack.json in both layouts.

The dumps here are written by hand (each statistic chosen by the test, so the test knows which
output feeds which input), plus msprobe's own quick_start example (tests/data/msprobe), whose
expected edges the test finds by comparing the raw JSON records itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats.msprobe_dump import parse_dump
from precision_tool.formats.msprobe_graph import (
    MODULE_PATH,
    MODULES,
    STACK,
    VALUES,
    MsprobeSource,
    build_model,
    call_slots,
    module_chain,
    module_namespace,
    msprobe_source,
    parse_frame,
    read_model,
    read_model_at,
    user_frames_first,
)
from precision_tool.formats.msprobe_tree import find_tree

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"


def tensor(stat: float, shape=(2, 3), dtype="torch.float32", **overrides) -> dict:
    """A tensor record whose four statistics derive from ``stat`` (distinct stats per value)."""
    record = {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": None if shape is None else list(shape),
        "Max": stat,
        "Min": -stat,
        "Mean": stat / 7,
        "Norm": stat * 3,
        "requires_grad": False,
    }
    record.update(overrides)
    return record


def call(inputs=(), outputs=(), kwargs=None, parameters=None) -> dict:
    entry = {"input_args": list(inputs), "input_kwargs": kwargs or {}, "output": list(outputs)}
    if parameters is not None:
        entry["parameters"] = parameters
    return entry


def model_of(data: dict, construct: dict | None = None, stack: dict | None = None, tmp: Path | None = None):
    """The model of a rank directory written from ``data`` (and the side files)."""
    rank = (tmp or Path(".")) / "step0" / "rank0"
    rank.mkdir(parents=True, exist_ok=True)
    (rank / "dump.json").write_text(
        json.dumps({"task": "statistics", "level": "mix", "framework": "pytorch", "data": data})
    )
    if construct is not None:
        (rank / "construct.json").write_text(json.dumps(construct))
    if stack is not None:
        (rank / "stack.json").write_text(json.dumps(stack))
    return read_model_at(rank)


def edges(model) -> set[tuple[str, int, str, int]]:
    """(producer, output slot, consumer, input slot) of every inferred edge."""
    return {(ref.src, ref.index, op.name, ref.slot) for op in model.graphs[0].ops for ref in op.inputs}


A, B, C, D = (f"Functional.{n}.0.forward" for n in ("linear", "relu", "add", "mul"))


def test_an_input_is_fed_by_the_earlier_output_of_equal_statistics(tmp_path):
    data = {
        A: call([tensor(1.0)], [tensor(2.0)]),
        B: call([tensor(2.0)], [tensor(3.0)]),
        C: call([tensor(2.0), tensor(3.0)], [tensor(4.0)]),
        D: call([tensor(99.0)], [tensor(5.0)]),
    }  # 99 is nobody's output
    model = model_of(data, tmp=tmp_path)
    assert edges(model) == {(A, 0, B, 0), (A, 0, C, 0), (B, 0, C, 1)}
    graph = model.graphs[0]
    assert [op.name for op in graph.ops] == [A, B, C, D] and [op.id for op in graph.ops] == [0, 1, 2, 3]
    assert graph.op(A).consumers == [[(B, 0), (C, 0)]]
    assert graph.op(D).inputs == [] and graph.op(D).consumers == [[]]
    assert graph.op(A).type == "Functional.linear"


def test_ties_go_to_the_latest_output_and_a_call_never_feeds_itself(tmp_path):
    first, second, user = "Tensor.zeros.0.forward", "Tensor.zeros.1.forward", "Tensor.add_.0.forward"
    data = {
        first: call([], [tensor(0.5)]),
        second: call([], [tensor(0.5)]),
        user: call([tensor(0.5)], [tensor(0.5)]),
    }  # in-place: its output is like its input
    model = model_of(data, tmp=tmp_path)
    assert edges(model) == {(second, 0, user, 0)}


@pytest.mark.parametrize(
    "missing", [{"Mean": None}, {"Norm": None}, {"Max": math.nan}, {"shape": None}, {"dtype": None}]
)
def test_no_edge_on_statistics_that_are_missing(tmp_path, missing):
    produced = tensor(2.0, **missing)
    data = {A: call([], [produced]), B: call([dict(produced)], [])}
    assert edges(model_of(data, tmp=tmp_path)) == set()


def test_forward_and_backward_calls_do_not_feed_each_other(tmp_path):
    backward = "Functional.linear.0.backward"
    grads = "Module.fc.Linear.parameters_grad.0"
    data = {
        A: call([], [tensor(2.0)]),
        backward: {"input": [tensor(2.0)], "output": [tensor(6.0), tensor(7.0)]},
        grads: {"weight": [tensor(7.0)]},
    }
    model = model_of(data, tmp=tmp_path)
    assert edges(model) == {(backward, 1, grads, 0)}  # the weight's gradient; not A -> backward


def test_slots_number_inputs_as_result_rows_do(tmp_path):
    key = "Module.fc.Linear.forward.0"
    data = {
        key: call(
            [tensor(1.0), {"type": "int", "value": 3}],
            [tensor(2.0)],
            kwargs={"scale": tensor(4.0), "mode": {"type": "str", "value": "fast"}},
            parameters={"weight": tensor(5.0), "bias": tensor(6.0)},
        )
    }
    op = model_of(data, tmp=tmp_path).graphs[0].op(key)
    assert [d.name for d in op.input_descs] == [
        f"{key}.input.0",
        f"{key}.input.scale",
        f"{key}.parameters.weight",
        f"{key}.parameters.bias",
    ]
    assert [d.name for d in op.output_descs] == [f"{key}.output.0"]
    assert [d.attrs["Max"] for d in op.input_descs] == [1.0, 4.0, 5.0, 6.0]
    assert op.input_descs[0].dtype == "torch.float32" and op.input_descs[0].shape == (2, 3)
    assert op.attrs[VALUES] == {f"{key}.input.1": "int 3", f"{key}.input.mode": "str 'fast'"}
    assert op.type == "Module.Linear" and op.attrs[MODULE_PATH] == "fc"


def test_construct_gives_parents_and_module_paths_and_keeps_a_module_off_its_own_calls(tmp_path):
    block, inner, top = (
        "Module.layers.0.Block.forward.0",
        "Tensor.contiguous.0.forward",
        "Functional.embedding.0.forward",
    )
    data = {
        top: call([], [tensor(1.0)]),
        inner: call([tensor(1.0)], [tensor(1.0)]),  # the block's first call: same stats out
        block: call([tensor(1.0)], [tensor(8.0)]),
    }
    construct = {top: None, inner: block, block: "Module.model.Net.forward.0"}
    model = model_of(data, construct, tmp=tmp_path)
    graph = model.graphs[0]
    assert edges(model) == {(top, 0, inner, 0), (top, 0, block, 0)}  # not inner -> block
    assert graph.op(inner).attrs[MODULES] == (block, "Module.model.Net.forward.0")
    assert graph.op(inner).attrs[MODULE_PATH] == "layers.0"
    assert MODULE_PATH not in graph.op(top).attrs and module_chain(graph.op(top)) == ()
    assert module_namespace(graph.op(inner)) == "layers/0"
    # without construct.json the rule cannot know the block ran its own call: it takes the latest
    assert (inner, 0, block, 0) in edges(model_of(data, tmp=tmp_path / "bare"))


def test_megatron_micro_steps_and_a_cycle_in_construct(tmp_path):
    a, b = "Module.a.A.forward.0", "Module.b.B.forward.0"
    data = {a: call([], [tensor(1.0)]), b: call([], [tensor(2.0)])}
    construct = {a: [b, 1], b: [a, 0], "megatron_micro_step_number": 2}
    graph = model_of(data, construct, tmp=tmp_path).graphs[0]
    assert graph.op(a).attrs["micro_step"] == 1 and graph.op(a).attrs[MODULES] == (b,)


def test_both_stack_layouts(tmp_path):
    frames = [
        "File /home/me/train.py, line 7, in step, \n y = model(x)",
        "File /usr/lib/python3.10/site-packages/torch/nn/functional.py, line 9, in relu, \n return f(x)",
    ]
    data = {A: call([], [tensor(1.0)]), B: call([], [tensor(2.0)])}
    older = model_of(data, stack={A: frames, B: frames[1:]}, tmp=tmp_path / "older").graphs[0]
    current = model_of(data, stack={"0": [[A], frames], "1": [[B], frames[1:]]}, tmp=tmp_path / "current").graphs[0]
    for graph in (older, current):
        assert graph.op(A).attrs[STACK] == tuple(frames) and graph.op(B).attrs[STACK] == tuple(frames[1:])
    user, library = user_frames_first(tuple(reversed(frames)))
    assert [f.path for f in user] == ["/home/me/train.py"] and user[0].line == 7
    assert user[0].function == "step" and user[0].source == "y = model(x)"
    assert library[0].is_library and library[0].function == "relu"


def test_a_frame_of_another_form_is_kept_whole():
    frame = parse_frame("The call stack retrieval failed.")
    assert frame.text == "The call stack retrieval failed." and not frame.path and not frame.is_library


def test_bad_side_files_are_problem_lines_and_the_model_is_still_built(tmp_path):
    model = model_of({A: call([], [tensor(1.0)])}, tmp=tmp_path)
    rank = tmp_path / "step0" / "rank0"
    (rank / "construct.json").write_text("[1, 2]")
    (rank / "stack.json").write_bytes(b"\xff\xfe")
    model = read_model_at(rank)
    problems = msprobe_source(model).problems
    assert len(problems) == 2 and all("(read without it)" in p for p in problems)
    assert "construct.json" in problems[0] and "stack.json" in problems[1]
    assert [op.name for op in model.graphs[0].ops] == [A]


def test_a_missing_dump_json_is_one_line(tmp_path):
    with pytest.raises(PrecisionToolError, match="no msprobe dump here"):
        read_model_at(tmp_path)


# --- msprobe's own example: quick_start (ResNet on a GPU, statistics) ---------------------------


def _raw(name: str) -> dict:
    return json.loads((DATA / "quick_start" / "step0" / "proc2016" / name).read_text())


def _signature(record: dict) -> tuple:
    return tuple(record[k] for k in ("dtype", "shape", "Max", "Min", "Mean", "Norm"))


def test_quick_start_calls_stacks_and_parents():
    model = read_model(find_tree(DATA / "quick_start").ranks[0])
    raw, stacks, parents = _raw("dump.json")["data"], _raw("stack.json"), _raw("construct.json")
    graph = model.graphs[0]
    assert [op.name for op in graph.ops] == list(raw) and len(graph.ops) == 17
    listed = {key: tuple(frames) for keys, frames in stacks.values() for key in keys}
    assert {op.name: op.attrs.get(STACK) for op in graph.ops if STACK in op.attrs} == listed
    conv = graph.op("Functional.conv2d.0.forward")
    assert conv.attrs[MODULES] == (parents["Functional.conv2d.0.forward"],) and conv.attrs[MODULE_PATH] == "conv1"
    assert graph.op("Module.conv1.Conv2d.forward.0").attrs[MODULE_PATH] == "conv1"
    assert model.name == "proc2016" and msprobe_source(model).dump.framework == "pytorch"


def test_quick_start_edges_follow_the_records():
    graph = read_model(find_tree(DATA / "quick_start").ranks[0]).graphs[0]
    raw = _raw("dump.json")["data"]
    batch_norm_in = _signature(raw["Functional.batch_norm.0.forward"]["input_args"][0])
    producers = [
        k
        for k in ("Functional.conv2d.0.forward", "Module.conv1.Conv2d.forward.0")
        if _signature(raw[k]["output"][0]) == batch_norm_in
    ]
    assert producers == ["Functional.conv2d.0.forward", "Module.conv1.Conv2d.forward.0"]
    (ref,) = graph.op("Functional.batch_norm.0.forward").inputs
    assert (ref.src, ref.index, ref.slot) == (producers[-1], 0, 0)  # the latest of the two
    weight = _signature(raw["Module.conv1.Conv2d.parameters_grad.0"]["weight"][0])
    grad_outputs = [_signature(t) for t in raw["Functional.conv2d.0.backward"]["output"] if t]
    assert weight in grad_outputs
    (ref,) = graph.op("Module.conv1.Conv2d.parameters_grad.0").inputs
    assert (ref.src, ref.index) == ("Functional.conv2d.0.backward", grad_outputs.index(weight))


def test_ms_mix_older_stack_layout():
    model = read_model_at(DATA / "ms_mix")
    stacks = json.loads((DATA / "ms_mix" / "stack.json").read_text())
    graph = model.graphs[0]
    assert {op.name: op.attrs[STACK] for op in graph.ops if STACK in op.attrs} == {
        k: tuple(v) for k, v in stacks.items() if k in graph
    }


# --- property: edges drawn on purpose are the edges inferred -------------------------------------


@st.composite
def dataflow(draw):
    """Calls in order, each reading some earlier outputs; every output's statistics distinct."""
    count = draw(st.integers(1, 12))
    calls, fed = [], set()
    for k in range(count):
        outputs = draw(st.integers(0, 2))
        earlier = [(j, slot) for j, (_, outs) in enumerate(calls) for slot in range(outs)]
        picks = draw(st.lists(st.sampled_from(earlier), max_size=3)) if earlier else []
        calls.append((picks, outputs))
        fed |= {(j, slot, k, n) for n, (j, slot) in enumerate(picks)}
    return calls, fed


@settings(max_examples=60, deadline=None)
@given(dataflow())
def test_inferred_edges_are_the_drawn_ones(flow):
    calls, drawn = flow
    keys = [f"Functional.f{k}.0.forward" for k in range(len(calls))]
    data = {}
    for k, (picks, outputs) in enumerate(calls):
        data[keys[k]] = call(
            [tensor(1.0 + 10 * j + slot) for j, slot in picks], [tensor(1.0 + 10 * k + slot) for slot in range(outputs)]
        )
    dump = parse_dump(json.dumps({"data": data}))
    model = build_model(MsprobeSource(None, dump), "flow")
    assert edges(model) == {(keys[j], slot, keys[k], n) for j, slot, k, n in drawn}
    assert all(len(call_slots(c)[1]) == outs for c, (_, outs) in zip(dump.calls, calls))
