"""First divergence: flagged ops, introduce vs inherit, and the first op that introduces the error."""

from __future__ import annotations

import math

import pytest

from precision_tool.compare.divergence import analyse
from precision_tool.compare.result import CompareRow
from precision_tool.compare.result_read import read_result_csv
from precision_tool.compare.verdict import FlagRule
from tests.conftest import FIXTURES

T = 0.98


def row(
    index: int,
    op: str,
    kind: str | None = None,
    slot: int = 0,
    cos: float | None = None,
    op_type: str = "Add",
    reason: str = "",
) -> CompareRow:
    """A CSV row of ``op``; ``cos=None`` means not compared, ``kind=None`` an op without dump."""
    return CompareRow(
        index=index,
        op_type=op_type,
        npu_name=op,
        npu_dtype="float16",
        npu_address=None,
        ground_truth=f"tf/{op}",
        golden_dtype="float32",
        tensor_index=f"{op}:{kind}:{slot}" if kind else None,
        shape=(4,),
        metrics={} if cos is None else {"CosineSimilarity": cos},
        fail_reason=reason,
    )


def names(ops) -> list[str]:
    return [op.name for op in ops]


def test_a_chain_introduces_once_and_then_inherits():
    rows = [
        row(0, "data", op_type="Data"),
        row(1, "a", "input", 0, 1.0),
        row(1, "a", "output", 0, 0.99),
        row(2, "b", "input", 0, 0.99),
        row(2, "b", "input", 1, 1.0),
        row(2, "b", "output", 0, 0.5),
        row(3, "c", "input", 0, 0.5),
        row(3, "c", "output", 0, 0.7),
    ]
    result = analyse(rows, T)
    assert names(result.ops) == ["data", "a", "b", "c"]
    assert names(result.dumped) == ["a", "b", "c"]
    assert names(result.flagged) == ["b", "c"]
    b, c = result.flagged
    assert b.introduces and not b.inherits
    assert c.inherits and not c.introduces
    assert result.first_introducer is b
    assert b.cosine_drop == (0.99, 0.5)
    assert b.op_type == "Add" and b.ground_truth == "tf/b" and b.index == 2
    assert [(t.kind, t.slot, t.cosine) for t in b.inputs] == [("input", 0, 0.99), ("input", 1, 1.0)]


def test_an_independent_second_error_also_introduces_but_the_first_is_named():
    rows = [
        row(1, "a", "input", 0, 1.0),
        row(1, "a", "output", 0, 0.9),
        row(2, "b", "input", 0, 1.0),
        row(2, "b", "output", 0, 0.1),
    ]
    result = analyse(rows, T)
    assert [op.introduces for op in result.flagged] == [True, True]
    assert result.first_introducer.name == "a"
    assert result.first_introducer.cosine_drop == (1.0, 0.9)


def test_not_compared_inputs_are_ignored_and_nonfinite_ones_are_inherited():
    rows = [
        row(1, "a", "input", 0, None, reason="no ground truth dump file for a:input:0"),
        row(1, "a", "input", 1, 1.0),
        row(1, "a", "output", 0, 0.3),
        row(2, "b", "input", 0, math.nan, reason="The golden tensor holds 1 NaN."),
        row(2, "b", "output", 0, 0.2),
        row(3, "c", "input", 0, math.nan),
        row(3, "c", "output", 0, 0.2),
    ]
    a, b, c = analyse(rows, T).flagged
    assert a.introduces and a.worst_input == 1.0 and a.cosine_drop == (1.0, 0.3)
    assert a.inputs[0].is_nan and a.inputs[0].reason.startswith("no ground truth")
    # a NaN only the golden holds says nothing against the NPU input
    assert b.introduces and b.worst_input is None and b.cosine_drop == (1.0, 0.2)
    # a computed nan cosine without a note (msaccucmp's CSV): the NPU input is non-finite
    assert c.inherits


def test_an_op_without_inputs_introduces_from_one():
    result = analyse([row(3, "const_like", "output", 0, 0.4)], T)
    (op,) = result.flagged
    assert op.inputs == () and op.introduces
    assert op.cosine_drop == (1.0, 0.4)


def test_multiple_outputs_flag_on_any_and_the_worst_is_the_drop():
    rows = [
        row(1, "split", "input", 0, 1.0),
        row(1, "split", "output", 0, 0.999),
        row(1, "split", "output", 1, 0.97),
        row(1, "split", "output", 2, math.nan),
    ]
    (op,) = analyse(rows, T).flagged
    assert [t.slot for t in op.outputs] == [0, 1, 2]
    assert op.worst_output == 0.97 and op.has_nan_output
    assert op.cosine_drop == (1.0, 0.97)


def test_not_compared_outputs_never_flag_but_are_reported_as_unjudged():
    rows = [
        row(1, "a", "input", 0, 1.0),
        row(1, "a", "output", 0, None),
        row(2, "b", "output", 0, math.nan, reason="The golden tensor holds 2 Inf."),
        row(2, "b", "output", 1, 1.0),
        row(3, "c", "output", 0, 1.0),
    ]
    result = analyse(rows, T)
    assert result.flagged == () and result.first_introducer is None
    assert names(result.unjudged) == ["a", "b"]
    assert result.ops[0].cosine_drop is None


def test_an_output_turning_nonfinite_from_finite_inputs_introduces_the_error():
    rows = [
        row(1, "a", "input", 0, 1.0),
        row(1, "a", "output", 0, 1.0),
        row(2, "exp", "input", 0, 1.0),
        row(2, "exp", "output", 0, math.nan, reason="The NPU tensor holds 3 Inf."),
        row(3, "next", "input", 0, math.nan, reason="The NPU tensor holds 3 Inf."),
        row(3, "next", "output", 0, math.nan, reason="The NPU tensor holds 3 NaN."),
    ]
    result = analyse(rows, T)
    assert names(result.flagged) == ["exp", "next"]
    assert result.first_introducer.name == "exp" and result.flagged[0].nonfinite
    assert result.flagged[1].inherits
    assert result.unjudged == ()


def test_cosine_is_blind_to_scale_but_red_is_not():
    half = {"CosineSimilarity": 1.0, "RelativeEuclideanDistance": 0.5}
    fine = {"CosineSimilarity": 1.0, "RelativeEuclideanDistance": 0.001}
    rows = [
        CompareRow(1, "Mul", "scale", "float16", None, "tf/scale", "float32", f"scale:{kind}:0", (4,), metrics=metrics)
        for kind, metrics in (("input", fine), ("output", half))
    ]
    rows += [
        CompareRow(2, "Relu", "after", "float16", None, "tf/after", "float32", f"after:{kind}:0", (4,), metrics=half)
        for kind in ("input", "output")
    ]
    assert analyse(rows, FlagRule(T, red=math.inf)).flagged == ()  # the cosine alone sees nothing
    combined = analyse(rows, T)
    assert names(combined.flagged) == ["scale", "after"]
    assert combined.first_introducer.name == "scale" and combined.flagged[1].inherits
    assert not analyse(rows, FlagRule(T, red=0.6)).flagged
    rule = FlagRule(T)
    assert rule.red_threshold == pytest.approx(0.2)
    assert rule.diverges(0.5) and rule.diverges(1.0, 0.21) and not rule.diverges(1.0, 0.19)
    assert rule.diverges(math.nan, math.nan, nonfinite=True) and not rule.diverges(math.nan)


@pytest.mark.parametrize("cosine", [0.5, 0.9, 0.98, 0.999])
def test_errors_that_keep_the_norm_are_judged_as_by_the_cosine_alone(cosine):
    import numpy as np

    rng = np.random.default_rng(7)
    y = rng.standard_normal(1000)
    noise = rng.standard_normal(1000)
    noise -= noise @ y / (y @ y) * y  # perpendicular to y
    for target in (cosine - 0.01, cosine + 0.005):
        angle = math.acos(min(target, 1.0))
        x = math.cos(angle) * y + math.sin(angle) * noise * (np.linalg.norm(y) / np.linalg.norm(noise))
        cos = float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))
        red = float(np.linalg.norm(x - y) / np.linalg.norm(y))
        assert FlagRule(cosine).diverges(cos, red) == (cos <= cosine)


def test_the_threshold_is_inclusive():
    at = analyse([row(1, "a", "output", 0, T)], T)
    above = analyse([row(1, "a", "output", 0, 0.980001)], T)
    assert names(at.flagged) == ["a"] and above.flagged == ()
    inherits = analyse([row(1, "a", "input", 0, T), row(1, "a", "output", 0, 0.5)], T)
    assert inherits.flagged[0].inherits and inherits.first_introducer is None
    passes = analyse([row(1, "a", "input", 0, 0.981), row(1, "a", "output", 0, 0.5)], T)
    assert passes.first_introducer.name == "a"


def test_the_threshold_changes_the_verdict():
    rows = [
        row(1, "a", "input", 0, 1.0),
        row(1, "a", "output", 0, 0.95),
        row(2, "b", "input", 0, 0.95),
        row(2, "b", "output", 0, 0.6),
    ]
    assert names(analyse(rows, 0.98).flagged) == ["a", "b"]
    assert analyse(rows, 0.98).first_introducer.name == "a"
    assert names(analyse(rows, 0.9).flagged) == ["b"]
    assert analyse(rows, 0.9).first_introducer.name == "b"  # its input is fine at 0.9
    assert analyse(rows, 0.5).flagged == ()


def test_ops_come_in_index_order_and_same_index_ops_stay_apart():
    rows = [
        row(5, "late", "output", 0, 0.1),
        row(2, "x", "output", 0, 0.2),
        row(2, "y", "output", 0, 1.0),
        row(2, "x", "input", 0, 1.0),
    ]
    result = analyse(rows, T)
    assert names(result.ops) == ["x", "y", "late"]
    assert [t.kind for t in result.ops[0].inputs + result.ops[0].outputs] == ["input", "output"]
    assert result.first_introducer.name == "x"


def test_every_flagged_op_inherits_when_the_error_comes_from_an_undumped_op():
    rows = [row(0, "data", op_type="Data"), row(1, "a", "input", 0, 0.5), row(1, "a", "output", 0, 0.5)]
    result = analyse(rows, T)
    assert names(result.flagged) == ["a"] and result.first_introducer is None


def test_empty_rows():
    result = analyse([], T)
    assert result.ops == () and result.flagged == () and result.first_introducer is None


def test_reference_csv_of_msaccucmp():
    rows = read_result_csv(FIXTURES / "small" / "reference_result.csv")
    result = analyse(rows, T)
    assert names(result.flagged) == [
        "model/add/add",
        "model/relu2/Relu",
        "trans_TransData_2",
        "model/pool/Mean",
        "trans_TransData_3",
        "model/dense/MatMul",
        "trans_TransData_4",
        "model/softmax/Softmax",
    ]
    first = result.first_introducer
    assert (first.name, first.op_type, first.index) == ("model/add/add", "Add", 14)
    assert first.cosine_drop == pytest.approx((1.0, 0.505089))
    assert all(op.inherits for op in result.flagged[1:])
    assert len(result.dumped) == 13 and len(result.ops) == 25


def test_lowest_output_and_ops_beyond_rounding_but_not_flagged():
    """ "Near" is beyond the noise model's rounding, not "a cosine just above the threshold": a
    float16 output at cosine 0.999999 (RED ~1.4e-3, under 3 float16 ulps, from a cosine-only
    row) is rounding at every threshold; 0.995 and 0.9576 are far beyond it."""
    rows = [
        row(1, "a", "output", 0, 0.995),
        row(2, "b", "output", 0, 0.9576),
        row(3, "c", "output", 0, 0.999999),
        row(4, "d", "output", 0, None),
    ]
    result = analyse(rows, FlagRule(0.9, red=math.inf))
    assert result.flagged == ()
    assert result.lowest_output.name == "b"
    assert names(result.near) == ["a", "b"]
    assert names(analyse(rows, FlagRule(0.95, red=math.inf)).near) == ["a", "b"]
    assert names(analyse(rows, FlagRule(0.98, red=math.inf)).near) == ["a"]  # b is flagged now
    c = result.ops[2]
    assert c.outputs[0].state(result.rule) == "rounding" and c.state == "clean"
    assert result.ops[3].state == "not compared"
    assert analyse([], 0.9).lowest_output is None


def _red_row(index, op, kind, slot, red, op_type="LayerNorm"):
    return CompareRow(
        index=index,
        op_type=op_type,
        npu_name=op,
        npu_dtype="float16",
        npu_address=None,
        ground_truth=f"tf/{op}",
        golden_dtype="float32",
        tensor_index=f"{op}:{kind}:{slot}",
        shape=(4, 8),
        metrics={"CosineSimilarity": 1.0, "RelativeEuclideanDistance": red},
    )


def test_the_replay_decides_introduces_or_inherits_and_says_so():
    """The issue's LayerNorm: its input's RED 0.192 is just under 0.2, its output's 0.21 over
    it. By the input rule it introduces; its replay from its own NPU inputs matches its NPU
    output, so it inherits (without amplifying it: 0.21 is less than 1.5 x 0.192); a replay that
    differs beyond its noise, or makes NaN the replay does not, makes it an introducer."""
    from precision_tool.compare.noise import replay_noise
    from precision_tool.compare.verdict import LocalCheck

    rows = [_red_row(1, "ln", "input", 0, 0.192), _red_row(1, "ln", "output", 0, 0.21)]
    by_inputs = analyse(rows, T)
    (ln,) = by_inputs.flagged
    assert ln.introduces and ln.decided_by == "inputs"
    faithful = LocalCheck(3e-4, 0, replay_noise("float16", "LayerNorm"), "LayerNorm")
    (ln,) = by_inputs.with_local({(1, "ln"): faithful}).flagged
    assert ln.inherits and not ln.introduces and ln.decided_by == "replay" and not ln.amplifies
    assert ln.state == "inherits"
    wrong = LocalCheck(0.2, 0, replay_noise("float16", "LayerNorm"), "LayerNorm")
    (ln,) = by_inputs.with_local({(1, "ln"): wrong}).flagged
    assert ln.introduces and ln.state == "introduces"
    nan_made = LocalCheck(0.0, 3, replay_noise("float16", "LayerNorm"), "LayerNorm")
    assert by_inputs.with_local({(1, "ln"): nan_made}).flagged[0].introduces


def test_an_op_that_inherits_and_doubles_the_error_amplifies_it():
    from precision_tool.compare.noise import replay_noise
    from precision_tool.compare.verdict import LocalCheck

    rows = [_red_row(1, "mul", "input", 0, 0.25, "Mul"), _red_row(1, "mul", "output", 0, 0.5, "Mul")]
    faithful = LocalCheck(1e-4, 0, replay_noise("float16", "Mul"), "Mul")
    (op,) = analyse(rows, T).with_local({(1, "mul"): faithful}).flagged
    assert op.inherits and op.amplifies
