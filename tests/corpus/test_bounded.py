"""Bounded work on a dump of many tensors: ``ni`` and ``pt`` print the same number of lines for
300 tensors as for 1,500 (the first entries, then "... N more"), compute statistics only of
what they show, and walk an op's input list a fixed number of times, not once per input (which
made ``ni`` quadratic). ``--full`` shows every entry. Counts, never times."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from precision_tool.commands import ni_report as ni
from precision_tool.formats.dump_write import TensorSpec, build_dump
from precision_tool.formats.golden import write_golden
from precision_tool.formats.graph_write import OpSpec, build_model, tensor_desc, write_graph_text
from precision_tool.render.limits import LIST_LIMIT
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context, run_command

RUN = "20260101000000"
MODEL = f"ge_default_{RUN}_1"
TS = 1767225600000000
SMALL, BIG = 300, 1500
assert LIST_LIMIT < SMALL < BIG


def _many_inputs(root: Path, n: int) -> Path:
    """net/concat (ConcatV2) of ``n`` inputs, all net/input:0; one dump file of its ``n`` input
    tensors and one output; golden tensors of both ops."""
    step = root / f"npu/debug_0/dump/{RUN}/0/{MODEL}/1/0"
    step.mkdir(parents=True)
    one = tensor_desc("DT_FLOAT", "ND", (1,), origin_format="ND", origin_shape=(1,))
    out = tensor_desc("DT_FLOAT", "ND", (n,), origin_format="ND", origin_shape=(n,))
    ops = [
        OpSpec("net/input", "Data", [], [one], [one]),
        OpSpec("net/concat", "ConcatV2", ["net/input:0"] * n, [one] * n, [out]),
    ]
    graph = root / "npu/debug_0/graph/ge_proto_00000001_Build.txt"
    graph.parent.mkdir(parents=True)
    write_graph_text(build_model(ops, name=MODEL), graph)
    inputs = [TensorSpec(np.full(1, k, np.float32), "FLOAT") for k in range(n)]
    output = TensorSpec(np.arange(n, dtype=np.float32), "FLOAT")
    (step / f"ConcatV2.net_concat.2.0.{TS + 20}").write_bytes(
        build_dump("net/concat", inputs, [output], dump_time=TS + 20)
    )
    write_golden(root / "tf/dump", "net/input", 0, TS, np.ones(1, np.float32))
    write_golden(root / "tf/dump", "net/concat", 0, TS, np.arange(n, dtype=np.float32))
    return root


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> dict[int, Path]:
    base = tmp_path_factory.mktemp("bounded")
    return {n: _many_inputs(base / f"n{n}" / "precision_data", n) for n in (SMALL, BIG)}


def _run(root: Path, line: str) -> tuple[ExitStatus, str]:
    context, out = make_context(root, width=200, WORKERS=1)
    return run_command(context, line), out.getvalue()


def _shown_inputs(output: str, table_mark: str) -> set[int]:
    """The input slots named in the rows of the NPU dump (``input:7`` cells) or the inputs
    table (``│ 7 │ net/input:0``), read from the text with a regex."""
    if table_mark == "dump":
        return {int(m) for m in re.findall(r"│ input:(\d+) +│ net/input:0", output)}
    return {int(m) for m in re.findall(r"│ +(\d+) │ net/input:0 ", output)}


def test_ni_prints_the_same_lines_for_300_and_1500_inputs(roots):
    lines = {}
    for n, root in roots.items():
        status, output = _run(root, "ni net/concat")
        assert status == ExitStatus.OK, output
        lines[n] = len(output.splitlines())
        assert _shown_inputs(output, "dump") == set(range(LIST_LIMIT))
        assert _shown_inputs(output, "inputs") == set(range(LIST_LIMIT))
        hidden = f"{n - LIST_LIMIT:,}"
        assert f"... {hidden} more inputs (--full shows all)" in output
        assert f"... {hidden} more tensors (--full shows all)" in output  # dump and golden
        assert output.count(f"... {hidden} more tensors") == 2
    assert lines[SMALL] == lines[BIG] < 4 * LIST_LIMIT + 80


def test_ni_full_shows_every_input(roots):
    status, output = _run(roots[SMALL], "ni net/concat --full")
    assert status == ExitStatus.OK
    assert _shown_inputs(output, "dump") == set(range(SMALL))
    assert _shown_inputs(output, "inputs") == set(range(SMALL))
    assert "more inputs" not in output and "more tensors" not in output


def test_ni_computes_statistics_of_the_shown_tensors_only(roots, monkeypatch):
    calls = []
    real = ni.tensor_stats
    monkeypatch.setattr(ni, "tensor_stats", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert _run(roots[BIG], "ni net/concat")[0] == ExitStatus.OK
    assert len(calls) == 2 * (LIST_LIMIT + 1)  # dump and golden: LIST_LIMIT inputs, 1 output


class _CountingList(list):
    """A list that counts how often it is walked from the start."""

    walks = 0

    def __iter__(self):
        _CountingList.walks += 1
        return super().__iter__()


def test_ni_walks_the_input_list_a_fixed_number_of_times(roots, monkeypatch):
    """Each input's desc used to rebuild the op's list of data inputs: n walks of n entries."""
    counts = {}
    for n, root in roots.items():
        context, out = make_context(root, width=200, WORKERS=1)
        op = context.models("debug_0")[0].graphs[0].op("net/concat")
        object.__setattr__(op, "inputs", _CountingList(op.inputs))
        _CountingList.walks = 0
        assert run_command(context, "ni net/concat --full") == ExitStatus.OK, out.getvalue()
        counts[n] = _CountingList.walks
    assert counts[SMALL] == counts[BIG] <= 5, counts


def _others(output: str) -> list[str]:
    """The tensor names of pt's "this dump also holds ..." line."""
    text = output.split("this dump also holds", 1)[1].split("(select with", 1)[0]
    return re.findall(r"\binput:\d+", text)


def test_pt_names_the_first_other_tensors_and_counts_the_rest(roots):
    lines = {}
    for n, root in roots.items():
        status, output = _run(root, "pt net/concat -n 5")
        assert status == ExitStatus.OK, output
        lines[n] = len(output.splitlines())
        listed = _others(output)
        assert len(listed) == LIST_LIMIT and listed[0] == "input:0"
        assert f"... {n - LIST_LIMIT:,} more (--full shows all)" in " ".join(output.split())
    assert lines[SMALL] == lines[BIG]
    status, output = _run(roots[SMALL], "pt net/concat -n 0 --full")
    listed = _others(output)
    assert status == ExitStatus.OK and len(listed) == SMALL and "more (--full" not in output


# --- a graph bigger than the memory at hand ---------------------------------------------------

GIB = 1 << 30


def _graph_with_one_huge_line(path: Path, line_bytes: int) -> None:
    """The Build graph followed by one line of ``line_bytes`` (a sparse hole: no disk used)."""
    text = path.read_bytes()
    with open(path, "wb") as handle:
        handle.write(text + b"# ")
        handle.seek(len(text) + line_bytes)
        handle.write(b"\n")


def _limit_address_space() -> None:  # in the child, before exec: as `ulimit -v 2097152`
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * GIB, 2 * GIB))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux")
def test_a_graph_with_a_1_gib_line_under_a_2_gib_limit_is_one_line(tmp_path):
    from .base import GRAPH_REL, Case, make_case, root_of

    root = root_of(make_case(tmp_path, Case("huge_line", "the base network", lambda c: None, ())))
    graph = root / GRAPH_REL
    _graph_with_one_huge_line(graph, GIB)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PRECISION_TOOL_WORKERS": "1"}
    env.pop("PRECISION_TOOL_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), "ls"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
        preexec_fn=_limit_address_space,
    )
    assert done.returncode == ExitStatus.ERROR, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert str(graph) in lines[0] and "not enough memory to read this graph" in lines[0], lines
    assert "with a line of 1 GiB" in lines[0], lines
    assert "MemoryError" not in done.stderr + done.stdout


def test_the_longest_line_is_measured_a_block_at_a_time(tmp_path):
    from precision_tool.formats.graph_memory import longest_line

    path = tmp_path / "g.txt"
    for data in (b"", b"a", b"ab\n\ncde\n", b"x" * 10 + b"\n" + b"y" * 25, b"\n" * 7):
        path.write_bytes(data)
        expected = max((len(line) for line in data.split(b"\n")), default=0)
        assert longest_line(path, block=4) == expected == longest_line(path), data
