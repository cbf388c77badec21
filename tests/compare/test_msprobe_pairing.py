"""Pairing two msprobe dumps: by key, by kind and order when call counts drift, the mapping
file first, fused (N:1) and absorbed (1:0) calls told as such. The dumps are JSON the tests
write; what each pair must be is read off that JSON by hand."""

from __future__ import annotations

import json
from difflib import SequenceMatcher

from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.compare import msprobe_pairing
from precision_tool.compare.msprobe_pairing import call_kind, pair_calls
from precision_tool.formats.msprobe_dump import parse_dump


def leaf(shape, dtype="torch.float16") -> dict:
    return {
        "type": "torch.Tensor",
        "dtype": dtype,
        "shape": list(shape),
        "Max": 1.0,
        "Min": 0.0,
        "Mean": 0.5,
        "Norm": 1.0,
        "requires_grad": False,
    }


def call(inputs, outputs, kwargs=None) -> dict:
    return {
        "input_args": [leaf(s) for s in inputs],
        "input_kwargs": {k: leaf(s) for k, s in (kwargs or {}).items()},
        "output": [leaf(s) for s in outputs],
    }


def dump(calls: dict) -> object:
    return parse_dump(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch", "data": calls}))


def pairs_of(result) -> list[tuple[str, str | None, str]]:
    return [(p.npu_name, p.bench_name, p.how) for p in result.pairs]


LINEAR = call([(2, 4), (8, 4)], [(2, 8)], {"bias": (8,)})
RELU = call([(2, 8)], [(2, 8)])


def test_same_keys_pair_call_by_call_and_tensor_by_tensor():
    calls = {"Functional.linear.0.forward": LINEAR, "Functional.relu.0.forward": RELU}
    result = pair_calls(dump(calls), dump(calls))
    assert pairs_of(result) == [
        ("Functional.linear.0.forward.input.0", "Functional.linear.0.forward.input.0", "key"),
        ("Functional.linear.0.forward.input.1", "Functional.linear.0.forward.input.1", "key"),
        ("Functional.linear.0.forward.input.bias", "Functional.linear.0.forward.input.bias", "key"),
        ("Functional.linear.0.forward.output.0", "Functional.linear.0.forward.output.0", "key"),
        ("Functional.relu.0.forward.input.0", "Functional.relu.0.forward.input.0", "key"),
        ("Functional.relu.0.forward.output.0", "Functional.relu.0.forward.output.0", "key"),
    ]
    assert all(not p.reason for p in result.pairs) and not result.notes and not result.bench_only
    assert result.mapping()[0] == ("Functional.linear.0.forward.input.0", "Functional.linear.0.forward.input.0")


def test_a_count_that_drifted_pairs_by_kind_and_order():
    # the bench framework makes one more linear call first (another version wraps a projection)
    npu = {"Functional.linear.0.forward": LINEAR, "Functional.relu.0.forward": RELU}
    bench = {
        "Functional.linear.0.forward": call([(2, 3), (4, 3)], [(2, 4)], {"bias": (4,)}),
        "Functional.linear.1.forward": LINEAR,
        "Functional.relu.0.forward": RELU,
    }
    result = pair_calls(dump(npu), dump(bench))
    first = result.pairs[0]
    assert (first.npu_name, first.bench_name, first.how) == (
        "Functional.linear.0.forward.input.0",
        "Functional.linear.1.forward.input.0",
        "order",
    )
    assert not first.reason  # the shapes agree: the drift is found, not a mismatch
    assert [c.key.text for c in result.bench_only] == ["Functional.linear.0.forward"]
    assert pairs_of(result)[-1] == ("Functional.relu.0.forward.output.0", "Functional.relu.0.forward.output.0", "key")


def test_a_shape_mismatch_inside_an_unmatched_stretch_is_the_rows_reason():
    npu = {"Functional.linear.0.forward": LINEAR}
    bench = {"Functional.linear.0.forward": call([(2, 4), (6, 4)], [(2, 6)], {"bias": (6,)})}
    result = pair_calls(dump(npu), dump(bench))
    reasons = {p.npu_name: p.reason for p in result.pairs}
    assert reasons["Functional.linear.0.forward.input.0"] == ""
    assert reasons["Functional.linear.0.forward.output.0"] == "shape mismatch: NPU [2, 8], bench [2, 6]"


def test_one_npu_call_for_several_bench_calls_is_fused_and_compares_its_output():
    npu = {
        "Functional.linear.0.forward": LINEAR,
        "NPU.npu_fusion_attention.0.forward": call([(2, 8), (2, 8), (2, 8)], [(2, 8)]),
        "Functional.relu.0.forward": RELU,
    }
    bench = {
        "Functional.linear.0.forward": LINEAR,
        "Torch.matmul.0.forward": call([(2, 8), (8, 2)], [(2, 2)]),
        "Functional.softmax.0.forward": call([(2, 2)], [(2, 2)]),
        "Torch.matmul.1.forward": call([(2, 2), (2, 8)], [(2, 8)]),
        "Functional.relu.0.forward": RELU,
    }
    result = pair_calls(dump(npu), dump(bench))
    fused = [p for p in result.pairs if p.npu_call.key.text.startswith("NPU.")]
    assert [(p.npu_name, p.bench_name, p.how) for p in fused if p.bench is not None] == [
        ("NPU.npu_fusion_attention.0.forward.output.0", "Torch.matmul.1.forward.output.0", "fused")
    ]
    assert all(p.reason.startswith("a fused NPU call") for p in fused if p.bench is None)
    (note,) = result.notes
    assert note.startswith("NPU.npu_fusion_attention.0.forward stands for 3 bench calls")
    assert "(3:1)" in note and not result.bench_only


def test_an_npu_call_with_nothing_on_the_bench_side_is_one_to_zero():
    npu = {
        "Functional.linear.0.forward": LINEAR,
        "Tensor.contiguous.0.forward": RELU,
        "Functional.relu.0.forward": RELU,
    }
    bench = {"Functional.linear.0.forward": LINEAR, "Functional.relu.0.forward": RELU}
    result = pair_calls(dump(npu), dump(bench))
    alone = [p for p in result.pairs if p.npu_call.key.text == "Tensor.contiguous.0.forward"]
    assert len(alone) == 2 and all(p.bench is None and "(1:0)" in p.reason for p in alone)
    assert any("1 NPU call(s) have no bench counterpart (1:0)" in n for n in result.notes)


def test_the_mapping_wins_and_a_name_it_does_not_know_is_noted():
    calls = {"Functional.linear.0.forward": LINEAR, "Functional.linear.1.forward": LINEAR}
    mapping = {
        "Functional.linear.0.forward.output.0": "Functional.linear.1.forward.output.0",
        "Functional.nothing.0.forward.output.0": "x",
    }
    result = pair_calls(dump(calls), dump(calls), mapping)
    by_name = {p.npu_name: p for p in result.pairs}
    mapped = by_name["Functional.linear.0.forward.output.0"]
    assert (mapped.bench_name, mapped.how) == ("Functional.linear.1.forward.output.0", "mapping")
    other = by_name["Functional.linear.0.forward.input.0"]
    assert other.bench is None and "mapping pairs other tensors" in other.reason
    assert by_name["Functional.linear.1.forward.output.0"].how == "key"
    assert any("1 mapping line(s) name no NPU tensor" in n for n in result.notes)


def test_call_kind_leaves_the_count_out():
    (one,) = dump({"Module.layers.0.attn.Attention.forward.3": RELU}).calls
    assert call_kind(one) == "Module.layers.0.attn.Attention.forward"


# --- property: dropping calls from the bench side never pairs across kinds -----------------

_kinds = st.sampled_from(["Functional.linear", "Functional.relu", "Tensor.__add__", "Torch.matmul"])


@settings(max_examples=80, deadline=None)
@given(st.lists(_kinds, min_size=1, max_size=12), st.data())
def test_pairs_keep_kinds_and_order_when_the_bench_drops_calls(names, data):
    counts: dict[str, int] = {}
    npu = {}
    for name in names:
        npu[f"{name}.{counts.get(name, 0)}.forward"] = RELU
        counts[name] = counts.get(name, 0) + 1
    keys = list(npu)
    kept = data.draw(st.lists(st.booleans(), min_size=len(keys), max_size=len(keys)))
    bench = {k: RELU for k, keep in zip(keys, kept) if keep}
    result = pair_calls(dump(npu), dump(bench))
    paired = [(p.npu_call, p.bench_call) for p in result.pairs if p.bench_call is not None]
    assert all(call_kind(n) == call_kind(b) for n, b in paired)  # never across kinds
    bench_orders = [b.order for _, b in paired]
    assert bench_orders == sorted(bench_orders)  # in order
    assert len({id(b) for _, b in paired}) * 2 == len(paired)  # each bench call used once


def _difflib_runs(npu: list, bench: list) -> list:
    """The runs rule 2 takes, straight from difflib (the reference for _aligned)."""
    matcher = SequenceMatcher(None, npu, bench, autojunk=False)
    return [
        ("equal" if t == "equal" else "stretch", npu[i1:i2], bench[j1:j2])
        for t, i1, i2, j1, j2 in matcher.get_opcodes()
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=12), st.lists(st.integers(0, 3), max_size=12), st.booleans())
def test_aligned_runs_are_difflibs_also_for_equal_sequences(npu, bench, same):
    bench = list(npu) if same else bench  # equal sequences take a shortcut: the same runs
    assert list(msprobe_pairing._aligned(npu, bench, signature=lambda call: call)) == _difflib_runs(npu, bench)
