"""The shell's commands on an msprobe data root through the real command line: ``ls``, ``ni
KEY``, ``pt NAME``, ``cp A B`` and ``report`` after ``vc``, and one piped shell session. The
dumps are written here (arrays chosen by the test, construct.json and stack.json by hand), and
every expectation is computed from them with numpy or read from the text the user sees."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.compare.msprobe_trees import write_rank

RNG = np.random.default_rng(23)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 6)).astype(np.float32)
Z = RNG.standard_normal((4, 6)).astype(np.float32)
GOOD = X @ W
BAD = GOOD.copy()
BAD[:, 1] *= -2.0  # the planted defect: matmul's second column
MATMUL, RELU = "Functional.matmul.0.forward", "Functional.relu.0.forward"
BLOCK, ADD = "Module.block.Block.forward.0", "Tensor.__add__.0.forward"
USER_FRAME = "File /home/user/train.py, line 12, in forward, \n y = torch.matmul(x, w)"
LIBRARY_FRAME = (
    "File /usr/lib/python3.10/site-packages/torch/nn/modules/module.py, line 1501, "
    "in _call_impl, \n return forward_call(*args, **kwargs)"
)


def _rank(rank_dir: Path, out: np.ndarray) -> Path:
    relu = np.maximum(out, 0)
    write_rank(
        rank_dir,
        [(MATMUL, [X, W], [out]), (RELU, [out], [relu]), (BLOCK, [X], [relu]), (ADD, [relu, Z], [relu + Z])],
        framework="pytorch",
    )
    (rank_dir / "construct.json").write_text(json.dumps({MATMUL: BLOCK, RELU: BLOCK, BLOCK: None, ADD: None}))
    (rank_dir / "stack.json").write_text(
        json.dumps({"0": [[MATMUL], [LIBRARY_FRAME, USER_FRAME]], "1": [[RELU, ADD], [USER_FRAME]]})
    )
    return rank_dir


@pytest.fixture
def data_root(tmp_path) -> Path:
    root = tmp_path / "precision_data"
    _rank(root / "npu" / "step0" / "rank0", BAD)
    _rank(root / "bench" / "step0" / "rank0", GOOD)
    return root


def _tool(root: Path, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=root.parent,
        input=stdin,
    )


def _words(text: str) -> str:
    return " ".join(text.split())


def test_ls_counts_calls_per_type_and_filters(data_root):
    done = _tool(data_root, "ls")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "calls per type (msprobe dump)" in text
    for op_type, count in (("Functional.matmul", 1), ("Module.Block", 1), ("Tensor.__add__", 1)):
        assert re.search(rf"{re.escape(op_type)}\s+│\s+{count}\s+│", text), (op_type, text)
    assert re.search(r"total\s+│\s+4\s+│", text)
    assert re.search(r"npu\s+│\s+step0/rank0\s+│\s+pytorch\s+│\s+tensor\s+│\s+L1\s+│\s+4\s+│\s+0\s+│\s+0", text)
    done = _tool(data_root, "ls", "-t", "relu")
    assert done.stdout.splitlines() == [f"[Functional.relu] {RELU}  (npu)", "1 op(s)"]
    done = _tool(data_root, "ls", "-n", "block", "-d", "bench")
    assert done.stdout.splitlines() == [f"[Module.Block] {BLOCK}  (bench)", "1 op(s)"]


def test_ni_shows_the_call_its_module_stack_tensors_and_bench_counterpart(data_root):
    done = _tool(data_root, "ni", RELU)
    assert done.returncode == 0, done.stderr
    text = _words(done.stdout)
    assert f"call {RELU}" in text and "type Functional.relu" in text
    assert f"module block inside {BLOCK}" in text
    assert "stack (1 of your frames first, then 0 in libraries) /home/user/train.py:12 in forward" in text
    relu_in = BAD.astype(np.float64)
    stats = f"{relu_in.max():.6g} │ {relu_in.min():.6g} │ {relu_in.mean():.6g} │ {np.linalg.norm(relu_in):.6g}"
    assert f"input:0 │ input.0 │ Float32 │ [4,6] │ {stats} │ {RELU}.input.0.npy │ {MATMUL}:0" in text
    assert (
        "output:0 │ output.0 │ Float32 │ [4,6]" in text
        and f"{ADD}" not in text.split("dump.json outputs")[1].split("producers")[0]
    )
    assert "producers and consumers are inferred" in text
    assert f"bench: {RELU} in step0/rank0 (the same key in bench/ (no result compares it yet))" in text


def test_ni_of_the_user_frame_comes_before_the_libraries(data_root):
    text = _tool(data_root, "ni", MATMUL).stdout
    user, library = text.index("/home/user/train.py:12"), text.index("site-packages/torch/nn/modules/module.py")
    assert user < library  # stack.json lists the library frame first
    assert "y = torch.matmul(x, w)" in text


def test_after_vc_ni_names_the_ground_truth_and_the_verdict(data_root):
    assert _tool(data_root, "vc").returncode == 1  # flagged
    text = _words(_tool(data_root, "ni", MATMUL).stdout)
    assert "verdict: ▲ introduces" in text or "verdict: introduces" in text, text
    assert f"bench: {MATMUL} in step0/rank0 (the GroundTruth of the newest result (" in text


def test_pt_prints_a_tensor_by_its_msprobe_name_and_exports_it(data_root):
    done = _tool(data_root, "pt", f"{MATMUL}.output.0", "-n", "3")
    assert done.returncode == 0, done.stderr
    text = _words(done.stdout)
    assert f"max │ {BAD.max():.6g}" in text or f"max │ {float(BAD.max())}" in text, text
    assert f"call │ {MATMUL} output:0 (npu, step0/rank0)" in text
    assert f"bench │ {MATMUL}.output.0 (pt bench:step0/rank0:{MATMUL}.output.0)" in text
    (export,) = (data_root / "temp" / "pt").glob("*.txt")
    np.testing.assert_array_equal(np.loadtxt(export, dtype=np.float32), BAD.ravel())
    done = _tool(data_root, "pt", f"{MATMUL}:input:1", "-n", "0")
    assert f"shape │ {list(W.shape)}" in _words(done.stdout)


def test_cp_compares_an_npu_tensor_with_its_bench_tensor(data_root):
    done = _tool(data_root, "cp", f"{MATMUL}:output:0", f"bench:{MATMUL}.output.0")
    assert done.returncode == 1, done.stderr  # the defect diverges
    a, b = BAD.astype(np.float64).ravel(), GOOD.astype(np.float64).ravel()
    cosine = a @ b / np.sqrt((a @ a) * (b @ b))
    assert f"cosine │ {cosine:.8f}" in _words(done.stdout)
    same = _tool(data_root, "cp", f"{MATMUL}.input.0", f"bench:{MATMUL}.input.0")
    assert same.returncode == 0 and "no mismatching elements" in same.stdout


def test_names_that_match_nothing_are_one_line(data_root):
    done = _tool(data_root, "pt", "Functional.matmul.9.forward")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "did you mean Functional.matmul.0.forward" in done.stderr


def test_report_draws_the_calls_inside_their_modules(data_root):
    assert _tool(data_root, "vc").returncode == 1
    done = _tool(data_root, "report")
    assert done.returncode == 0, done.stderr
    (page,) = (data_root / "temp" / "report").glob("*/index.html")
    html = page.read_text()
    assert f"Subgraph: {MATMUL}, depth 2 (2 ops, graph step0/rank0)" in html
    assert "first operator that introduces the error" in html and MATMUL in html
    if shutil.which("dot"):
        svg = html[html.index('class="subgraph dot"') :]
        assert f">{BLOCK}</text>" in svg.split("</svg>")[0]  # the module cluster's label


def test_report_with_model_explorer_overlays_the_rank_dirs_dump_json(data_root):
    assert _tool(data_root, "vc").returncode == 1
    done = _tool(data_root, "report", "--model-explorer")
    assert done.returncode == 0, done.stderr
    dump = data_root / "npu" / "step0" / "rank0" / "dump.json"
    line = next(line for line in done.stdout.splitlines() if line.startswith("model explorer: "))
    assert line.startswith("model explorer: python3 -m precision_tool.model_explorer.serve ")
    assert json.loads(Path(line.split()[-1]).read_text())["graph"] == str(dump.resolve())
    (verdicts,) = (data_root / "temp" / "report").glob("*/model_explorer/*/verdict.json")
    (graph,) = json.loads(verdicts.read_text()).values()
    assert graph["results"][MATMUL]["value"] == "▲ introduces"


def test_report_without_dot_names_each_calls_module(data_root):
    from precision_tool.report.write import make_report
    from tests.conftest import make_context

    assert _tool(data_root, "vc").returncode == 1
    context, _ = make_context(data_root)
    (csv,) = (data_root / "temp" / "vector_compare").glob("*/result_*.csv")
    written = make_report(context, [csv], use_dot=False)
    html = written.index.read_text()
    # the hover text: the call, its API and module on the first line, its ports below
    assert f"<title>{MATMUL} [Functional.matmul] in {BLOCK}\nout0 Float32" in html
    assert f"<title>{RELU} [Functional.relu] in {BLOCK}\nin0 Float32" in html


def test_a_piped_shell_session(data_root):
    lines = ["ls -n relu", f"ni {RELU}", f"pt {RELU}:input:0 -n 0", "pt nothing.here", "exit", "ls"]
    done = _tool(data_root, stdin="\n".join(lines) + "\n")
    assert done.returncode == 2  # the worst status of the lines run: the bad name
    text = _words(done.stdout + done.stderr)
    assert f"[Functional.relu] {RELU} (npu) 1 op(s)" in text
    assert f"module block inside {BLOCK}" in text
    assert f"call │ {RELU} input:0 (npu, step0/rank0)" in text
    assert "no tensor of the msprobe dump in npu/ matches 'nothing.here'" in text
    assert "calls per type" not in text  # nothing after exit
    assert "Traceback" not in text


def test_a_damaged_dump_json_is_one_line_and_the_shell_goes_on(data_root):
    dump = data_root / "npu" / "step0" / "rank0" / "dump.json"
    dump.write_text("[1, 2, 3]")
    done = _tool(data_root, stdin="ls\nhelp ls\n")
    errors = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("error:")]
    assert errors == [f"error: {dump}: not an msprobe dump.json: the top level is an array, not an object"]
    assert "usage: ls" in done.stdout and "Traceback" not in done.stdout + done.stderr


def test_a_damaged_construct_json_is_a_warning_and_ni_still_shows_the_call(data_root):
    construct = data_root / "npu" / "step0" / "rank0" / "construct.json"
    construct.write_text('{"a": ')
    done = _tool(data_root, "ni", RELU)
    assert done.returncode == 0, done.stderr
    text = _words(done.stdout)
    assert f"warning: {construct}: cut short after 0 nodes (the run probably crashed)" in text
    assert "module unknown (no construct.json, or an empty one)" in text
    assert f"{RELU}.input.0.npy │ {MATMUL}:0" in text  # the edges do not need it


def test_the_banner_names_the_two_msprobe_dumps(data_root):
    import io

    from rich.console import Console

    from precision_tool.formats.data_survey import survey
    from precision_tool.render.survey import render_survey

    buffer = io.StringIO()
    Console(file=buffer, width=100).print(render_survey(survey(data_root), "9.9"))
    lines = [_words(line) for line in buffer.getvalue().splitlines()]
    assert lines[-2:] == ["npu/ msprobe dump 1 rank dir(s), step(s) 0", "bench/ msprobe dump 1 rank dir(s), step(s) 0"]
