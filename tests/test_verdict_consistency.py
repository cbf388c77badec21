"""One verdict, told the same way everywhere: for a clean sample and each defect kind of
``precision_tool.sample``, the flagged ops and the ops that introduce the error are collected
from every view (``vcs`` text, ``vcs --json``, ``ac --json``'s summary, ``why --json``, the
``ni -s`` digraph's fills) and must be one set; ``cp`` says of every output what the verdict
says (rounding everywhere in the clean network, "differs" for the planted defect's).

``vc`` runs once per network through the real command line; each view then runs on a fresh
session (nothing remembered from another view).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from precision_tool.compare.result_csv import latest_result_dir
from precision_tool.compare.result_read import read_result_csv
from precision_tool.render.palette import LEGEND_ORDER, swatch
from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS, KINDS
from tests import dotparse
from tests.conftest import REPO_ROOT, make_context, run_command

WIDE = 1000  # no name wraps


def _tool(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS=str(WIDE))
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=root.parent,
    )


@pytest.fixture(scope="module")
def networks(tmp_path_factory) -> dict[str, Path]:
    found = {}
    for kind in KINDS:
        root = write_sample(tmp_path_factory.mktemp(kind) / "precision_data", defect=kind)
        done = _tool(root, "vc")
        assert done.returncode in (0, 1), done.stderr
        found[kind] = root
    return found


def _view(root: Path, line: str) -> str:
    context, buffer = make_context(root, width=WIDE)
    run_command(context, line)
    return buffer.getvalue()


def _from_json(summary: dict) -> tuple[list[str], list[str]]:
    (result,) = summary["results"]
    flagged = [op["op"] for op in result["flagged"]]
    return flagged, [op["op"] for op in result["flagged"] if op["state"] == "introduces"]


_OP_LINE = re.compile(r"^\W*\d+\. \[[^\]]*\] (\S+)\s+index \d+\s+(▲|●) (introduces|inherits)", re.M)


def _from_text(text: str) -> tuple[list[str], list[str]]:
    found = _OP_LINE.findall(text)
    return [name for name, _, _ in found], [name for name, _, verb in found if verb == "introduces"]


def _from_digraph(root: Path, flagged: list[str]) -> tuple[list[str], list[str]]:
    """The whole network drawn around its first flagged op (or its last op): the fills' states."""
    centre = flagged[0] if flagged else "resnet/softmax/Softmax"
    _view(root, f"ni {centre} -s 40")
    (gv,) = sorted((root / "temp" / "op_graph").glob("*.gv"), key=lambda p: p.stat().st_mtime)[-1:]
    states = {swatch(state).colour: state for state in LEGEND_ORDER}
    drawn = {
        dotparse.unescape(a["tooltip"]): states[a["fillcolor"]]
        for a in dotparse.parse(gv.read_text()).nodes.values()
        if a["fillcolor"] in states
    }
    order = [op for op in _all_ops(root) if op in drawn]
    return (
        [op for op in order if drawn[op] in ("introduces", "inherits")],
        [op for op in order if drawn[op] == "introduces"],
    )


def _all_ops(root: Path) -> list[str]:
    (csv,) = latest_result_dir(root / "temp").glob("*.csv")
    return list(dict.fromkeys(row.npu_name for row in read_result_csv(csv)))


@pytest.mark.parametrize("kind", KINDS)
def test_every_view_flags_the_same_ops_and_names_the_same_introducers(networks, kind):
    root = networks[kind]
    flagged, introducers = _from_json(json.loads(_view(root, "vcs --json -l 0")))
    views = {
        "vcs": _from_text(_view(root, "vcs -l 0")),
        "ac --json": _from_json(json.loads(_view(root, "ac --json -l 0"))["summary"]),
        "ni -s": _from_digraph(root, flagged),
    }
    for name, (view_flagged, view_introducers) in views.items():
        assert (view_flagged, view_introducers) == (flagged, introducers), name
    explained = [e["op"] for e in json.loads(_view(root, "why --json -l 0"))]
    assert explained == (introducers or flagged[:1])  # why explains exactly the introducers
    if kind == "none":
        assert flagged == [] and introducers == []
    elif kind == "input":  # the network's input data differ: every op only carries the error
        assert introducers == [] and flagged[:1] == [DEFECTS[kind].op], (flagged, introducers)
    else:
        assert introducers[:1] == [DEFECTS[kind].op], (flagged, introducers)


def _states(root: Path) -> dict[tuple[str, int], str]:
    """Every compared NPU output of the newest result with its state as ``vcs --json`` tells it:
    a flagged op's outputs carry theirs; an op not flagged is near, non-finite or rounding."""
    (result,) = json.loads(_view(root, "vcs --json -l 0"))["results"]
    states = {(op["op"], t["slot"]): t["state"] for op in result["flagged"] for t in op["outputs"]}
    near, nonfinite = set(result["near"]), set(result["nonfinite"])
    (csv,) = latest_result_dir(root / "temp").glob("*.csv")
    for row in read_result_csv(csv):
        if row.is_output and row.compared and row.ground_truth not in ("", "*"):
            default = "non-finite" if row.npu_name in nonfinite else "near" if row.npu_name in near else "rounding"
            states.setdefault((row.npu_name, row.slot), default)
    return states


CP_WORDS = {
    "rounding": "within float16 rounding",
    "near": "beyond float16 rounding, not flagged",
    "diverges": "differs: diverges",
    "non-finite": "non-finite",
}


@pytest.mark.parametrize("kind", KINDS)
def test_cp_tells_every_output_what_vcs_tells(networks, kind):
    """``cp`` of each output against its golden says what the verdict says of it: every output
    of the clean network is rounding, the planted defect's output differs, and the outputs that
    carry an inherited error without being flagged are near in both."""
    root = networks[kind]
    states = _states(root)
    said = {}
    for (op, slot), state in states.items():
        text = _view(root, f"cp {op}:output:{slot} {_golden_path(root, op, slot)}")
        verdict = next(line for line in text.splitlines() if "verdict" in line)
        said[(op, slot)] = (state, CP_WORDS[state] in verdict)
    assert [k for k, (_, agrees) in said.items() if not agrees] == [], said
    if kind == "none":
        assert set(states.values()) == {"rounding"} and len(states) >= 9  # every op with a golden
    elif kind != "input":
        assert {s for (op, _), s in states.items() if op == DEFECTS[kind].op} <= {"diverges", "non-finite"}


def _golden_path(root: Path, op: str, slot: int) -> Path:
    """The golden file vc paired ``op:output:slot`` with (``vc``'s own pairing rule)."""
    from precision_tool.compare.golden_pairing import golden_for

    context, _ = make_context(root)
    graph, graph_op = context.models("debug_0")[0].find_op(op)
    return context.golden().path_for(*golden_for(graph, graph_op, "output", slot))


@pytest.mark.parametrize("kind", ["computation", "scale", "nan", "none"])
def test_ni_tells_each_op_s_verdict(networks, kind):
    """``ni OP`` names the op's verdict in the newest result: introduces / inherits for the ops
    vcs flags (and which), within rounding for the rest."""
    root = networks[kind]
    (result,) = json.loads(_view(root, "vcs --json -l 0"))["results"]
    states = {op["op"]: op["state"] for op in result["flagged"]}
    for op in _all_ops(root):
        text = _view(root, f"ni {op}")
        line = next((t for t in text.splitlines() if t.startswith("verdict: ")), "")
        if op in states:
            words = "introduces the error" if states[op] == "introduces" else "inherits an upstream error"
            assert words in line, (op, line)
        elif line:  # ops without a dump row in the result say so, the rest are judged
            assert any(
                w in line
                for w in (
                    "within rounding",
                    "beyond rounding",
                    "NaN or Inf",
                    "not compared",
                    "not in the newest result",
                )
            ), (op, line)
