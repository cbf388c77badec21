"""One pairing rule: ``ni`` shows, for every tensor, the golden tensor ``vc`` compares it with."""

from __future__ import annotations

import re
from pathlib import Path

from precision_tool.compare.golden_pairing import NpySide
from precision_tool.compare.plan import plan_comparisons
from tests.conftest import make_context, run_command


def _planned_goldens(context) -> dict[str, dict[str, str | None]]:
    """op name -> {"input:0": golden file name or None, ...} from vc's own plan."""
    found: dict[str, dict[str, str | None]] = {}
    for plan in plan_comparisons(context):
        for task in plan.tasks:
            if task.tensor_index is None or task.left is None:
                continue
            op, kind, slot = task.tensor_index.rsplit(":", 2)
            golden = Path(task.right.path).name if isinstance(task.right, NpySide) else None
            found.setdefault(op, {})[f"{kind}:{slot}"] = golden
    return found


def _ni_goldens(context, out, op: str) -> dict[str, str]:
    """ "input:0" -> the golden file name on that line of ni's TF golden table ("" when none)."""
    out.seek(0)
    out.truncate()
    run_command(context, f"ni '{op}'")
    text = out.getvalue().split("TF golden")[-1]
    shown = {}
    for line in text.splitlines():
        match = re.match(r"\W*((?:input|output):\d+) = \S+\s*\W\s*(\S*\.npy)?", line)
        if match:
            shown[match[1]] = match[2] or ""
    return shown


def _check_agreement(root):
    context, out = make_context(root, width=1000)
    planned = _planned_goldens(context)
    assert planned
    for op, tensors in planned.items():
        shown = _ni_goldens(context, out, op)
        for tensor, golden in tensors.items():
            assert tensor in shown, (op, tensor, out.getvalue())
            assert shown[tensor] == (golden or ""), (op, tensor)
    return planned


def test_sample_every_tensor_agrees(sample_data):
    planned = _check_agreement(sample_data)
    assert sum(len(t) for t in planned.values()) > 20


def test_fixture_every_tensor_agrees_including_inserted_casts(fixture_data):
    planned = _check_agreement(fixture_data)
    # an NPU-inserted Cast is compared with the value it converts, the graph input, in vc and ni
    cast = planned["trans_Cast_0"]
    assert cast["output:0"] == cast["input:0"] and cast["output:0"].startswith("input.0.")


def test_pt_names_the_same_golden_as_vc(sample_data):
    context, out = make_context(sample_data, width=1000)
    planned = _planned_goldens(context)
    checked = 0
    for op, tensors in planned.items():
        for tensor, golden in tensors.items():
            out.seek(0)
            out.truncate()
            run_command(context, f"pt 'npu:{op}:{tensor}' -n 0")
            line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("│ golden"))
            if golden:
                assert f"-> {golden}" in line, (op, tensor, line)
            else:
                assert "no such golden file" in line or "unknown" in line, (op, tensor, line)
            checked += 1
    assert checked > 20
