"""msprobe ``dump.json``: real files of every task, level and framework, against their raw JSON;
random nested arguments through a writer of the tests' own; files cut at every byte; bad input.

Expected values come from the raw text read with plain :mod:`json` and walked here, by msprobe's
rule for a leaf (a dict with a string ``type``) and a tensor (a leaf with ``dtype`` and
``shape``), never from the reader under test.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.formats import msprobe_json
from precision_tool.formats.msprobe_dump import (
    Tensor,
    Value,
    nest,
    parse_dump,
    read_dump,
    tensor_path,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "msprobe"
QUICK = DATA / "quick_start" / "step0" / "proc2016" / "dump.json"
REAL = {  # file: (task, level, framework)
    "ms_mix/dump.json": ("statistics", "mix", "mindspore"),
    "pt_mix/dump.json": ("statistics", "mix", "pytorch"),
    "quick_start/step0/proc2016/dump.json": ("statistics", "mix", "pytorch"),
    "docs/pt_L0_tensor.json": ("tensor", "L0", "pytorch"),
    "docs/pt_L1_tensor.json": ("tensor", "L1", "pytorch"),
    "docs/ms_L0_tensor.json": ("tensor", "L0", "mindspore"),
    "docs/ms_L1_tensor.json": ("tensor", "L1", "mindspore"),
}
SECTIONS = ("input_args", "input_kwargs", "input", "output", "parameters")
CUT = "cut short after {n} (the run probably crashed before msprobe's stop())"


def calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


# --- the tests' own reading of the raw JSON ------------------------------------------------------


def raw_leaves(node: Any, path: tuple) -> list[tuple[tuple, Any]]:
    """(path, raw leaf) of a section: dicts with a string type, null, empty lists and dicts, and
    bare scalars are leaves; other lists and dicts are walked. A torch.distributed.P2POp is one
    leaf, its tensor's record (None without one), as msprobe's compare (op_item_parse) takes it."""
    if isinstance(node, dict) and node.get("class_type") == "torch.distributed.P2POp":
        tensor = node.get("tensor")
        return [(path, tensor if isinstance(tensor, dict) and tensor else None)]
    if isinstance(node, dict) and node and not isinstance(node.get("type"), str):
        return [pair for k, v in node.items() for pair in raw_leaves(v, (*path, k))]
    if isinstance(node, list) and node:
        return [pair for i, v in enumerate(node) for pair in raw_leaves(v, (*path, i))]
    return [(path, node)]


def raw_call_leaves(key: str, entry: dict) -> list[tuple[tuple, Any]]:
    if key.split(".")[-1] == "parameters_grad" or key.split(".")[-2:-1] == ["parameters_grad"]:
        out = []
        for name, grads in entry.items():
            one = grads[0] if isinstance(grads, list) and len(grads) == 1 else grads
            out += raw_leaves(one, ("parameters_grad", name))
        return out
    return [pair for s in SECTIONS if s in entry for pair in raw_leaves(entry[s], (s,))]


def is_raw_tensor(leaf: Any) -> bool:
    return isinstance(leaf, dict) and isinstance(leaf.get("type"), str) and ("dtype" in leaf and "shape" in leaf)


def number(raw: Any) -> float | None:
    if isinstance(raw, (bool, int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def same(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and math.isnan(a) and math.isnan(b))


def assert_tensor_is(tensor: Tensor, raw: dict) -> None:
    assert tensor.type == raw["type"]
    assert tensor.dtype == raw["dtype"]
    assert tensor.shape == tuple(raw["shape"])
    for field, key in (("max", "Max"), ("min", "Min"), ("mean", "Mean"), ("norm", "Norm")):
        assert same(getattr(tensor, field), number(raw.get(key))), (tensor.name, key)
    assert tensor.md5 == raw.get("md5")
    assert tensor.requires_grad == raw.get("requires_grad")
    assert tensor.data_name == raw.get("data_name")


def assert_value_is(value: Value, raw: Any) -> None:
    if raw is None:
        assert value.type == "None" and value.value is None
    elif raw == [] or raw == {}:
        assert value.type == type(raw).__name__ and value.value == ()
    elif isinstance(raw, dict):
        assert value.type == raw["type"]
        assert value.value == freeze(raw.get("value"))
        others = {k: freeze(v) for k, v in raw.items() if k not in ("type", "value")}
        assert dict(value.fields) == others
    else:
        assert value.type == type(raw).__name__ and value.value == raw


def freeze(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, freeze(v)) for k, v in value.items())
    return value


def assert_dump_is(dump, raw: dict) -> None:
    """Every call, leaf and field of ``dump`` against the raw document."""
    assert [c.key.text for c in dump.calls] == list(raw["data"])
    assert [c.order for c in dump.calls] == list(range(len(raw["data"])))
    for call, (key, entry) in zip(dump.calls, raw["data"].items()):
        expected = raw_call_leaves(key, entry)
        assert [leaf.path for leaf in call.leaves] == [path for path, _ in expected], key
        for leaf, (_, raw_leaf) in zip(call.leaves, expected):
            if is_raw_tensor(raw_leaf):
                assert isinstance(leaf, Tensor)
                assert_tensor_is(leaf, raw_leaf)
            else:
                assert isinstance(leaf, Value), leaf
                assert_value_is(leaf, raw_leaf)


# --- the real files ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_files_give_every_call_leaf_and_statistic_of_their_json(name):
    raw = json.loads((DATA / name).read_text())
    dump = read_dump(DATA / name)
    assert (dump.header.task, dump.header.level, dump.header.framework) == REAL[name]
    assert dump.framework == REAL[name][2]
    assert dump.problems == () and dump.complete
    assert dump.header.dump_data_dir == raw["dump_data_dir"]
    assert_dump_is(dump, raw)
    tensors = [
        leaf for key, entry in raw["data"].items() for _, leaf in raw_call_leaves(key, entry) if is_raw_tensor(leaf)
    ]
    assert sum(len(call.tensors) for call in dump.calls) == len(tensors)


def test_real_counts():
    counts = {
        name: (len(d.calls), sum(len(c.tensors) for c in d.calls)) for name in REAL for d in [read_dump(DATA / name)]
    }
    for name, (calls, tensors) in counts.items():
        raw = json.loads((DATA / name).read_text())["data"]
        text = (DATA / name).read_text()
        assert calls == len(raw)
        # every tensor of these files has a dtype, and nothing else has one
        assert tensors == len(re.findall(r'"dtype"\s*:', text)), name


def test_mindspore_mix_values():
    dump = read_dump(DATA / "ms_mix" / "dump.json")
    calls = {c.key.text: c for c in dump.calls}
    boolean = calls["Tensor.__bool__.1.forward"]
    (tensor,) = boolean.tensors
    assert (tensor.dtype, tensor.shape, tensor.max, tensor.min, tensor.mean) == ("Bool", (), 0.0, 0.0, None)
    assert tensor.requires_grad is None  # MindSpore writes none
    assert boolean.outputs == (Value(("output", 0), "bool", False),)
    rms = calls["Primitive.norm.RmsNorm.0.forward"]
    assert (rms.key.prefix, rms.key.name, rms.key.index) == ("Primitive", "norm.RmsNorm", 0)
    back = calls["Functional.flash_attention_score.0.backward"]
    assert [leaf.name for leaf in back.inputs] == ["input.0"]
    assert len(back.outputs) == 4


def test_a_p2pop_argument_is_one_leaf_its_tensor_at_the_p2pops_place():
    """msprobe's compare takes a torch.distributed.P2POp as one item named by its place, the
    tensor's record (its op, peer, tag and group are no column); one without a tensor record is
    a None item. (tests/data/msprobe_args holds msprobe's own CSV for a P2POp.)"""
    tensor = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": 1.0, "Min": 0.0}
    tensor |= {"Mean": 0.5, "Norm": 1.0, "requires_grad": False, "data_name": "x.pt"}
    p2p = {"class_type": "torch.distributed.P2POp", "op": "isend", "peer": 1, "tag": 0, "group_id": 7}
    doc = {"task": "tensor", "level": "L1", "framework": "pytorch", "dump_data_dir": None, "data": {}}
    doc["data"]["Distributed.batch_isend_irecv.0.forward"] = {
        "input_args": [[p2p | {"tensor": tensor}, p2p | {"tensor": None}]],
        "input_kwargs": {},
        "output": [None],
    }
    (call,) = parse_dump(json.dumps(doc)).calls
    first, second = call.inputs[:2]  # then input_kwargs, empty
    assert isinstance(first, Tensor) and first.name == "input_args.0.0" and first.data_name == "x.pt"
    assert second == Value(("input_args", 0, 1), "None")


def test_quick_start_values_and_msprobe_names():
    dump = read_dump(QUICK)
    calls = {c.key.text: c for c in dump.calls}
    conv = calls["Functional.conv2d.0.forward"]
    assert conv.recompute is False
    assert [leaf.name for leaf in conv.inputs][:5] == [
        "input_args.0",
        "input_args.1",
        "input_args.2",
        "input_args.3.0",
        "input_args.3.1",
    ]
    assert conv.inputs[2] == Value(("input_args", 2), "None")
    assert conv.inputs[3] == Value(("input_args", 3, 0), "int", 2)
    assert nest(conv.leaves, "input_args")[3] == [
        Value(("input_args", 3, 0), "int", 2),
        Value(("input_args", 3, 1), "int", 2),
    ]
    assert nest(conv.leaves, "input_kwargs") == {} and nest(conv.leaves, "parameters") is None
    grads = calls["Module.conv1.Conv2d.parameters_grad.0"]
    assert grads.key.direction == "parameters_grad" and grads.key.module_path == "conv1"
    (weight,) = grads.parameters
    assert (weight.name, weight.shape, weight.requires_grad) == ("parameters_grad.weight", (64, 3, 7, 7), False)
    assert grads.msprobe_name(weight) == "Module.conv1.Conv2d.parameters_grad.0.weight"
    module = calls["Module.conv1.Conv2d.forward.0"]
    assert module.msprobe_name(module.parameters[0]) == ("Module.conv1.Conv2d.forward.0.parameters.weight")
    assert conv.msprobe_name(conv.inputs[3]) == "Functional.conv2d.0.forward.input.3.0"
    # a module's entry comes after the API calls inside it: msprobe re-inserts it at its output
    assert conv.order < module.order


def test_tensor_files_of_the_documented_tensor_dumps(tmp_path):
    for name, suffix in (("docs/pt_L0_tensor.json", ".pt"), ("docs/ms_L0_tensor.json", ".npy")):
        dump = read_dump(DATA / name)
        for tensor in (t for call in dump.calls for t in call.tensors):
            where = tensor_path(tmp_path / "rank0", tensor)
            assert where == tmp_path / "rank0" / "dump_tensor_data" / tensor.data_name
            assert where.suffix == suffix


def test_md5_mode_from_the_documented_entry():
    fragment = (DATA / "docs" / "ms_md5_entry.json").read_text()
    text = (
        '{"task": "statistics", "level": "L0", "framework": "mindspore", '
        '"dump_data_dir": null, "data": {' + fragment + "}}"
    )
    dump, raw = parse_dump(text), json.loads(text)
    assert_dump_is(dump, raw)
    assert dump.has_md5
    assert [t.md5 for t in dump.calls[0].tensors] == re.findall(r'"md5": "([0-9a-f]{8})"', fragment)
    (call,) = dump.calls
    assert "input_args.1.data_info.img_hw" in [leaf.name for leaf in call.leaves]
    assert call.msprobe_name(call.tensors[1]) == ("Cell.network.module.NetworkWithLoss.forward.0.input.1.y")


def test_framework_after_data_and_missing():
    after = read_dump(DATA / "odd" / "framework_after_data.json")
    assert after.header.framework == "pytorch"
    assert [c.key.direction for c in after.calls] == [None]
    assert after.problems == (
        f"{DATA / 'odd' / 'framework_after_data.json'}: outside msprobe's "
        "grammar, read but naming no forward or backward call: 1 key (the "
        "first: 'api')",
    )
    missing = read_dump(DATA / "odd" / "no_framework.json")
    assert missing.header.framework is None and missing.framework is None


# --- statistics of every spelling ----------------------------------------------------------------


def one_tensor_dump(**fields: Any) -> str:
    tensor = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], **fields}
    return json.dumps(
        {
            "task": "statistics",
            "level": "L1",
            "data": {"Torch.x.0.forward": {"input_args": [tensor], "input_kwargs": {}, "output": []}},
        }
    )


@pytest.mark.parametrize(
    "raw, expected",
    [
        (1.5, 1.5),
        (3, 3.0),
        (True, 1.0),
        (False, 0.0),
        (None, None),
        ("inf", math.inf),
        ("-inf", -math.inf),
        ("nan", math.nan),
        ("Infinity", math.inf),
        ("1e3", 1000.0),
        ("abc", None),
        ("", None),
        ([1], None),
        (10**400, math.inf),
        (-(10**400), -math.inf),
        (float("nan"), math.nan),
        (float("-inf"), -math.inf),
    ],
)
def test_statistics_of_every_spelling(raw, expected):
    (tensor,) = parse_dump(one_tensor_dump(Max=raw, Min=raw, Mean=raw, Norm=raw)).calls[0].tensors
    for value in (tensor.max, tensor.min, tensor.mean, tensor.norm):
        assert same(value, expected)


def test_missing_fields_and_odd_types_give_none():
    (tensor,) = (
        parse_dump(one_tensor_dump(shape="(2,)", dtype=7, md5="", data_name="", requires_grad="yes")).calls[0].tensors
    )
    assert (tensor.shape, tensor.dtype, tensor.md5, tensor.data_name, tensor.requires_grad) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert (tensor.max, tensor.min, tensor.mean, tensor.norm) == (None, None, None, None)


def test_complex_xor_and_tensor_kinds():
    entry = {
        "input_args": [
            {
                "type": "torch.Tensor",
                "dtype": "torch.complex64",
                "shape": [3],
                "Max": 2.0,
                "Min": 0.5,
                "Mean": 1.0,
                "Norm": None,
                "requires_grad": False,
            },
            {
                "type": "torch.distributed.tensor.DTensor",
                "dtype": "torch.bfloat16",
                "shape": [4, 4],
                "md5": "0x00000000deadbeef",
                "device_mesh": [0, 1],
                "placements": [{"Shard": {"dim": 0}}],
            },
            {
                "type": "numpy.ndarray",
                "dtype": "float32",
                "shape": [1],
                "Max": 1.0,
                "Min": 1.0,
                "Mean": 1.0,
                "Norm": 1.0,
            },
            {"type": "torch.Size", "value": [2, 3]},
            {"type": "slice", "value": [None, 4, 2]},
            {"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": "1a2b3c4d"},
            {"type": "torch.memory_format", "format": "contiguous_format"},
            {"type": "ellipsis", "value": "..."},
            {
                "class_type": "torch.distributed.P2POp",
                "op": "isend",
                "peer": 1,
                "tensor": {"type": "torch.Tensor", "dtype": "torch.int64", "shape": [], "Max": 7, "Min": 7},
            },
        ],
        "input_kwargs": {
            "dtype": {"type": "torch.dtype", "value": "torch.float16"},
            "device": {"type": "torch.device", "value": "npu:0"},
        },
        "output": [None],
    }
    text = json.dumps({"task": "statistics", "level": "L1", "data": {"Distributed.isend.0.forward": entry}})
    dump = parse_dump(text)
    assert_dump_is(dump, json.loads(text))
    call = dump.calls[0]
    assert [t.dtype for t in call.tensors] == ["torch.complex64", "torch.bfloat16", "float32", "torch.int64"]
    assert call.tensors[1].md5 == "0x00000000deadbeef"
    assert call.tensors[3].name == "input_args.8"  # the P2POp's tensor, at the P2POp's place
    values = {leaf.name: leaf for leaf in call.leaves if isinstance(leaf, Value)}
    assert values["input_args.4"].value == (None, 4, 2)
    assert values["input_args.5"].fields == (("group_ranks", (0, 1)), ("group_id", "1a2b3c4d"))
    assert not any(name.startswith("input_args.8.") for name in values)  # its op and peer: no line
    assert values["input_kwargs.dtype"].value == "torch.float16"
    assert values["output.0"].type == "None"


# --- random nested arguments through the tests' own writer ---------------------------------------

FLOATS = st.floats() | st.none() | st.booleans() | st.integers(-5, 5)  # NaN and inf too
TENSOR = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["torch.Tensor", "mindspore.Tensor", "numpy.ndarray"]),
        "dtype": st.sampled_from(["torch.float16", "Float32", "BFloat16", "torch.bool", "int64"]),
        "shape": st.lists(st.integers(0, 4096), max_size=4),
    },
    optional={
        "Max": FLOATS,
        "Min": FLOATS,
        "Mean": FLOATS,
        "Norm": FLOATS,
        "requires_grad": st.booleans(),
        "md5": st.from_regex(r"[0-9a-f]{8}", fullmatch=True),
        "data_name": st.from_regex(r"[A-Za-z_.0-9]{1,30}\.pt", fullmatch=True),
    },
)
VALUE = (
    st.builds(lambda v: {"type": "int", "value": v}, st.integers())
    | st.builds(lambda v: {"type": "float", "value": v}, st.floats(allow_nan=False))
    | st.builds(lambda v: {"type": "bool", "value": v}, st.booleans())
    | st.builds(lambda v: {"type": "str", "value": v}, st.text(max_size=10))
    | st.builds(lambda v: {"type": "slice", "value": v}, st.lists(st.none() | st.integers(), min_size=3, max_size=3))
    | st.builds(lambda v: {"type": "torch.Size", "value": v}, st.lists(st.integers(0, 9), max_size=4))
    | st.sampled_from(
        [
            {"type": "torch.dtype", "value": "torch.float32"},
            {"type": "ellipsis", "value": "..."},
            {"type": "mindspore.dtype", "value": "Float16"},
            None,
        ]
    )
)
NAME = st.text("abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=6)
ARG = st.recursive(
    TENSOR | VALUE, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3), max_leaves=12
)
ENTRY = st.fixed_dictionaries(
    {
        "input_args": st.lists(ARG, max_size=4),
        "input_kwargs": st.dictionaries(NAME, ARG, max_size=3),
        "output": st.lists(ARG, max_size=3),
    },
    optional={"parameters": st.dictionaries(NAME, TENSOR, max_size=2)},
)
KEYS = st.sampled_from(
    [
        "Functional.linear.{}.forward",
        "Tensor.__add__.{}.forward",
        "Module.layers.{}.attn.Attention.forward.0",
        "Cell.x.Dense.backward.{}",
    ]
)
DOCS = st.lists(st.tuples(KEYS, st.integers(0, 999), ENTRY), min_size=1, max_size=5)


def write_dump(calls: list[tuple[str, int, dict]], indent: int | None) -> tuple[str, dict]:
    """The tests' writer: a dump.json as msprobe lays it out, and the document it holds."""
    data = {pattern.format(index): entry for pattern, index, entry in calls}
    doc = {"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": None, "data": data}
    return json.dumps(doc, indent=indent), doc


def structure(node: Any) -> Any:
    """Containers as they are, every leaf as ``L`` (None, [] and {} stay themselves)."""
    described = isinstance(node, dict) and isinstance(node.get("type"), str)
    if isinstance(node, (Tensor, Value)) or described:
        return "L"
    if isinstance(node, list):
        return [structure(v) for v in node]
    if isinstance(node, dict):
        return {k: structure(v) for k, v in node.items()}
    return node


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS, st.sampled_from([None, 1, 4]))
def test_random_nested_arguments_round_trip(calls, indent):
    text, doc = write_dump(calls, indent)
    dump = parse_dump(text)
    assert dump.problems == () and dump.complete
    assert_dump_is(dump, doc)
    for call, entry in zip(dump.calls, doc["data"].values()):
        for section in entry:
            assert structure(nest(call.leaves, section)) == structure(entry[section])


# --- cut short at every byte ---------------------------------------------------------------------


def entry_ends(text: str, indent: int = 1) -> list[int]:
    """Where each member of ``data`` ends in a file json.dumps(..., indent=indent) wrote: its
    closing brace, the only ones at twice the indent."""
    return [m.end() for m in re.finditer("\n" + " " * 2 * indent + r"\}", text)]


def assert_cut_keeps_the_whole_calls(text: str, whole, ends: list[int], cuts) -> None:
    for cut in cuts:
        dump = parse_dump(text[:cut])
        count = sum(1 for end in ends if end <= cut)
        assert dump.calls == whole.calls[:count], cut
        assert not dump.complete
        assert dump.problems == ("dump.json: " + CUT.format(n=calls(count)),), cut


def test_a_file_cut_at_every_byte_keeps_exactly_the_whole_calls_before_the_cut():
    path = DATA / "docs" / "pt_L0_tensor.json"  # forward, parameters_grad, backward
    text, whole = path.read_text(), read_dump(path)
    ends = entry_ends(text, indent=2)
    assert len(ends) == len(whole.calls) == 3
    assert_cut_keeps_the_whole_calls(text, whole, ends, range(len(text.rstrip())))
    assert parse_dump(text).problems == ()


def test_the_quick_start_file_cut_around_every_call_and_between():
    text, whole = QUICK.read_text(), read_dump(QUICK)
    ends = entry_ends(text)
    assert len(ends) == len(whole.calls) == 17
    near = {end + step for end in ends for step in range(-3, 4)}
    assert_cut_keeps_the_whole_calls(text, whole, ends, sorted(near | set(range(0, len(text), 97))))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS, st.data())
def test_random_files_cut_anywhere_keep_the_whole_calls(calls, data):
    text, doc = write_dump(calls, 1)
    cut = data.draw(st.integers(0, len(text) - 1))
    dump = parse_dump(text[:cut])
    count = sum(1 for end in entry_ends(text) if end <= cut)
    assert [c.key.text for c in dump.calls] == list(doc["data"])[:count]
    assert_dump_is(dump, {"data": dict(list(doc["data"].items())[:count])})


def test_a_cut_file_on_disk_names_itself(tmp_path):
    path = tmp_path / "dump.json"
    text = QUICK.read_text()
    path.write_text(text[: entry_ends(text)[4] + 10])
    dump = read_dump(path)
    assert len(dump.calls) == 5 and dump.problems == (f"{path}: " + CUT.format(n="5 calls"),)


def test_a_cut_inside_a_multibyte_character(tmp_path):
    text = (
        '{"task": "tensor", "data": {"Torch.a.0.forward": {"input_args": [{"type": "str", '
        '"value": "ok"}]}, "Torch.b.0.forward": {"input_args": [{"type": "str", '
        '"value": "\u00e9\u00e9'
    )
    data = text.encode("utf-8")[:-1]  # half of the last character
    (tmp_path / "dump.json").write_bytes(data)
    dump = read_dump(tmp_path / "dump.json")
    assert [c.key.text for c in dump.calls] == ["Torch.a.0.forward"] and not dump.complete


# --- bad input: one line each, and what could be read is kept ------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "cut short after 0 calls"),
        (b"   \n", "cut short after 0 calls"),
        (b'{"task": "statistics", "lev', "cut short after 0 calls"),
    ],
)
def test_files_cut_before_any_call(tmp_path, content, message):
    (tmp_path / "dump.json").write_bytes(content)
    dump = read_dump(tmp_path / "dump.json")
    assert dump.calls == () and len(dump.problems) == 1 and message in dump.problems[0]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hello", "not an msprobe dump.json: not a JSON object (character 0 is 'h')"),
        (b"[1, 2]", "not an msprobe dump.json: the top level is an array, not an object"),
        (b'"x"', "not an msprobe dump.json: the top level is a string, not an object"),
        (b'{"task": "tensor"}', 'not an msprobe dump.json: it has no "data" object'),
        (b'{"task": "tensor", "data": [1]}', 'not an msprobe dump.json: "data" is list, not an object'),
        (b'{"task": "tensor", "data": {x}}', "not an msprobe dump.json: expected a quoted name at character 28"),
        (b'{"data": {}} ]', "not an msprobe dump.json: extra data after the object at character 13"),
        (b'\xff\xfe{"data": {}}', "dump.json is not UTF-8 text (byte 0)"),
    ],
)
def test_bad_files_give_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "dump.json"
    path.write_bytes(content)
    with pytest.raises(PrecisionToolError) as caught:
        read_dump(path)
    assert str(caught.value) == f"{path}: {message}"
    assert "\n" not in str(caught.value)


def test_the_real_file_without_data(tmp_path):
    with pytest.raises(PrecisionToolError, match='it has no "data" object'):
        read_dump(DATA / "odd" / "no_data.json")


def test_damage_after_some_calls_keeps_them():
    text = QUICK.read_text()
    end = entry_ends(text)[2]
    dump = parse_dump(text[:end] + ", garbage" + text[end:])
    assert len(dump.calls) == 3
    assert dump.problems == (
        f"dump.json: damaged: expected a quoted name at character {end + 2}; read 3 calls before it",
    )
    assert not dump.complete


def test_entries_that_are_not_objects_are_skipped():
    text = json.dumps(
        {"data": {"Torch.a.0.forward": {"output": []}, "Torch.b.0.forward": [1], "Torch.c.0.forward": None}}
    )
    dump = parse_dump(text)
    assert [c.key.text for c in dump.calls] == ["Torch.a.0.forward"]
    assert dump.problems == ("dump.json: not an object, skipped: 2 entries of data (the first: 'Torch.b.0.forward')",)


def test_deep_nesting_is_damage_not_a_crash():
    text = '{"data": {"Torch.a.0.forward": {"output": []}, "Torch.b.0.forward": ' + "[" * 100_000
    dump = parse_dump(text)
    assert [c.key.text for c in dump.calls] == ["Torch.a.0.forward"]
    assert len(dump.problems) == 1


def test_a_value_nested_as_deep_as_json_reads_is_skipped_not_a_crash():
    for depth in range(900, 1000, 7):
        deep = "[" * depth + "]" * depth
        text = (
            '{"data": {"Torch.a.0.forward": {"output": []}, "Torch.b.0.forward": {"output": '
            '[{"type": "x", "value": ' + deep + "}]}}}"
        )
        dump = parse_dump(text)
        assert dump.calls[0].key.text == "Torch.a.0.forward"
        assert len(dump.calls) + len(dump.problems) == 2


def test_too_large_a_file_is_refused_before_reading(tmp_path, monkeypatch):
    monkeypatch.setattr("precision_tool.formats.msprobe_dump.MAX_DUMP_JSON_BYTES", 100)
    path = tmp_path / "dump.json"
    path.write_text(QUICK.read_text())
    with pytest.raises(PrecisionToolError, match=r"dump.json is larger than 100 bytes"):
        read_dump(path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "dump.json")
    with pytest.raises(PrecisionToolError) as caught:
        read_dump(tmp_path / "dump.json")
    assert str(caught.value).endswith("dump.json is a FIFO (named pipe), not a regular file: not read")


def test_not_a_regular_file(tmp_path):
    with pytest.raises(PrecisionToolError, match="dump.json not found"):
        read_dump(tmp_path / "dump.json")
    (tmp_path / "dir").mkdir()
    with pytest.raises(PrecisionToolError, match="is a directory"):
        read_dump(tmp_path / "dir")


@pytest.mark.parametrize("name", ["../x.pt", "a/b.pt", "..", "/etc/passwd", "a\\b.pt", "a\0.pt"])
def test_tensor_files_never_leave_dump_tensor_data(tmp_path, name):
    tensor = Tensor(("output", 0), "torch.Tensor", "torch.float32", (1,), None, None, None, None, data_name=name)
    with pytest.raises(PrecisionToolError, match="leaves the directory: refused"):
        tensor_path(tmp_path, tensor)


def test_a_statistics_tensor_has_no_file(tmp_path):
    (tensor,) = read_dump(DATA / "pt_mix" / "dump.json").calls[0].tensors[:1]
    with pytest.raises(PrecisionToolError, match="'input_args.0' has no tensor file"):
        tensor_path(tmp_path, tensor)


def test_header_members_the_scan_never_needs_are_kept_when_cut_later():
    text = QUICK.read_text()
    dump = parse_dump(text[:2000])
    assert (dump.header.task, dump.header.level, dump.header.framework) == ("statistics", "mix", "pytorch")
    assert msprobe_json.DumpHeader.of({"task": 3}).task is None
