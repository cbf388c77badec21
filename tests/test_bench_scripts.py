"""The bench/ scripts are not run by the suite (they take minutes and measure speed), but each
must at least start: its arguments parse and its imports resolve. A syntax slip in a bench is
otherwise found only by the next person who wants a number."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
REPO = BENCH.parent  # the tree a measured run of the tests imports
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_there_are_bench_scripts():
    assert {p.name for p in SCRIPTS} >= {"compare_bench.py", "scaling_bench.py", "graph_load_bench.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_starts_and_explains_itself(script):
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--help" in done.stdout


# --- docs/performance.md, the one place for the figures (issue 25.3) ----------------------------


def _bench_module(name: str):
    """A module of bench/, imported as the scripts import each other (bench/ on the path)."""
    import importlib

    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


def _perf_doc():
    sys.path.insert(0, str(BENCH))
    try:
        import perf_doc
    finally:
        sys.path.remove(str(BENCH))
    return perf_doc


def test_write_doc_replaces_one_subsection_and_keeps_the_rest(tmp_path):
    perf_doc = _perf_doc()
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n## Other\n\nkept\n\n### a run\n\nold\n", encoding="utf-8")
    perf_doc.write_doc("Graph loading", "what it measures", "Latest run: bench/x.py", "first", doc)
    perf_doc.write_doc("Other", "unused", "a run", "new", doc)
    perf_doc.write_doc("Graph loading", "unused", "Latest run: bench/x.py", "second", doc)
    text = doc.read_text(encoding="utf-8")
    assert text == (
        "# Performance\n\nintro\n\n## Other\n\nkept\n\n### a run\n\nnew\n\n"
        "## Graph loading\n\nwhat it measures\n\n### Latest run: bench/x.py\n\nsecond\n"
    )


def test_run_writing_records_what_the_bench_printed(tmp_path, monkeypatch, capsys):
    perf_doc = _perf_doc()
    monkeypatch.setattr(perf_doc, "DOC", tmp_path / "performance.md")
    monkeypatch.setattr(sys, "argv", ["x.py", "--rows", "5", "--write"])
    status = perf_doc.run_writing(lambda: print("rows 5: 0.01 s") or 0, "x.py", "Result store", "intro")
    text = (tmp_path / "performance.md").read_text(encoding="utf-8")
    assert status == 0 and "rows 5: 0.01 s" in capsys.readouterr().out
    assert "## Result store\n\nintro\n\n### Latest run: bench/x.py\n\n`python bench/x.py --rows 5 --write` (" in text
    assert "```\nrows 5: 0.01 s\n```" in text


@pytest.mark.parametrize(
    "script",
    [
        p
        for p in SCRIPTS
        if p.name
        not in (
            "perf_doc.py",
            "msprobe_reference.py",
            "msprobe_args_reference.py",
            "msprobe_workload.py",
            "check_torch_write.py",
            "noise_calibration.py",
            "verdict_tables.py",
            "ge_network.py",
            "generated.py",
            "run_env.py",
        )
    ],
    ids=lambda p: p.name,
)
def test_every_bench_writes_its_figures_to_docs_performance(script):
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert "--write" in done.stdout and "performance.md" in " ".join(done.stdout.split())


def test_a_bench_never_clears_a_directory_it_did_not_generate(tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        from generated import clear_generated
    finally:
        sys.path.remove(str(BENCH))
    theirs = tmp_path / "someones_data"
    (theirs / "npu").mkdir(parents=True)
    (theirs / "npu" / "keep.bin").write_bytes(b"x")
    with pytest.raises(SystemExit, match="holds files no bench generated .no bench.json."):
        clear_generated(theirs, "bench.json")
    assert (theirs / "npu" / "keep.bin").read_bytes() == b"x"
    ours = tmp_path / "generated"
    (ours / "npu").mkdir(parents=True)
    (ours / "bench.json").write_text("{}")
    clear_generated(ours, "bench.json")
    clear_generated(tmp_path / "absent", "bench.json")
    assert not ours.exists()


def test_a_measured_run_keeps_bytecode_and_none_of_the_shells_settings(monkeypatch, tmp_path):
    sys.path.insert(0, str(BENCH))
    try:
        from run_env import tool_env
    finally:
        sys.path.remove(str(BENCH))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("PRECISION_TOOL_KERNELS", "numpy")
    monkeypatch.setenv("HOME", "/home/someone")
    env = tool_env(tmp_path / "code", tmp_path / "pycache", PRECISION_TOOL_WORKERS="2")
    assert "PYTHONDONTWRITEBYTECODE" not in env and "PRECISION_TOOL_KERNELS" not in env
    assert env["PRECISION_TOOL_WORKERS"] == "2" and env["HOME"] == "/home/someone"
    assert env["PYTHONPATH"] == str(tmp_path / "code") and env["PYTHONPYCACHEPREFIX"] == str(tmp_path / "pycache")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert "PYTHONPATH" not in tool_env() and "PYTHONPYCACHEPREFIX" not in tool_env()


def test_a_fixed_cost_run_that_fails_stops_the_bench_with_its_error_line():
    sys.path.insert(0, str(BENCH))
    try:
        from run_env import run_once
    finally:
        sys.path.remove(str(BENCH))
    wall, cpu = run_once([sys.executable, "-c", "import sys; sys.exit(1)"], dict(os.environ), ok=(0, 1))
    assert wall > 0 and cpu >= 0
    with pytest.raises(SystemExit) as stopped:
        run_once([sys.executable, "-c", "import sys; sys.exit('error: no NPU dumps here')"], dict(os.environ))
    assert "ended with status 1: error: no NPU dumps here" in str(stopped.value)


def test_the_cpu_split_of_a_pool_run_adds_up_to_its_process_tree(sample_data):
    """The CPU bench through its driver, on the sample with a pool: a worker was launched, the
    process tree (wait4) used more than the tool's process (getrusage) and the server, and the
    main thread's stages (thread_time), timed where the sample's graph was read and its pairs
    paired, fit in the main thread's CPU (/proc, in ticks)."""
    cpu_split_bench = _bench_module("cpu_split_bench")
    run = cpu_split_bench.run_once(REPO, str(sample_data), sample_data / "out", [], stages=True, pool_always=True)
    assert 0 < run["launched"] < run["wall"]
    assert 0 < run["main"] <= run["tool"] and run["total"] > run["tool"] + run["server"]
    assert run["stages"]["graph"] > 0 and run["stages"]["pairing"] > 0
    assert sum(run["stages"].values()) <= run["main"] + 0.02  # the stages do not nest; ticks of 10 ms
    inline = cpu_split_bench.run_once(REPO, str(sample_data), sample_data / "out", ["-alg", "0"])
    assert math.isnan(inline["launched"])  # the launch hooks saw no worker
    # --workers-at: the tool's CPU at the launch is part of its CPU, and the least wall time
    # with the workers' own CPU, on the cores this machine has, is a lower bound of the wall
    # measured (ticks of 10 ms aside)
    assert 0 < run["tool_at_launch"] <= run["tool"]
    own = cpu_split_bench.least_wall(run, run["workers"])
    assert run["launched"] < own <= run["wall"] + 0.02
    assert cpu_split_bench.least_wall(run, 0.0) < own
    assert math.isnan(cpu_split_bench.least_wall(inline, inline["workers"]))


def test_a_rerun_reuses_the_rows_its_fresh_run_stored_and_times_the_reuse(sample_data, tmp_path):
    """--reuse: after a fresh run fills the tree's row cache, a run without --fresh launches no
    worker (the server's CPU is then all its children's), and its keys, the store's read and
    the rows made from it are stages of the main thread, timed where they ran."""
    cpu_split_bench = _bench_module("cpu_split_bench")
    out = tmp_path / "out"
    cpu_split_bench.run_once(REPO, str(sample_data), out, ["-alg", "0"], pool_always=True)
    again = cpu_split_bench.run_once(REPO, str(sample_data), out, ["-alg", "0"], stages=True, fresh=False)
    assert math.isnan(again["launched"]) and again["workers"] == 0
    for stage in ("row keys", "store read", "stored rows"):
        assert again["stages"][stage] > 0, stage
    fresh = cpu_split_bench.run_once(REPO, str(sample_data), out, ["-alg", "0"], stages=True, pool_always=True)
    assert "stored rows" not in fresh["stages"] and "row keys" not in fresh["stages"]  # keys found by the workers


def test_the_least_wall_time_shares_what_is_left_after_the_launch_among_the_cores():
    """Worked by hand: launched at 0.5 s with the tool at 0.4 CPU-s, the tool at 1.2 CPU-s in
    all, workers at 1.0: 0.8 + 1.0 CPU-s after the launch on two cores take 0.9 s at least."""
    cpu_split_bench = _bench_module("cpu_split_bench")
    run = {"launched": 0.5, "tool": 1.2, "tool_at_launch": 0.4, "workers": 1.6, "wall": 1.8}
    assert cpu_split_bench.least_wall(run, 1.0, cores=2) == pytest.approx(1.4)
    assert cpu_split_bench.least_wall(run, 1.0, cores=1) == pytest.approx(2.3)
    lines = cpu_split_bench.bound_lines([run], [0.0, 1.0], cores=2)
    assert lines == [
        "  its workers' own CPU: at least 1.700 s (measured 1.800 s)",
        "  workers at 0.000 CPU-s: at least 0.900 s",
        "  workers at 1.000 CPU-s: at least 1.400 s",
    ]


@pytest.mark.parametrize("text", ["", "x", "1,-2", "nan", "inf"])
def test_workers_at_takes_cpu_seconds_only(text):
    """--workers-at refuses what is not a list of CPU-seconds, in argparse's one line."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "cpu_split_bench.py"), "/nonexistent", "--workers-at", text],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "--workers-at: not CPU-seconds" in done.stderr, done.stderr


def test_each_tree_runs_under_an_output_root_of_its_own(sample_data, tmp_path):
    """Two trees alternating on one output root replaced each other's graph cache (one model a
    graph, keyed by a digest of the code that makes it) and both were measured parsing the
    graph: a tree's runs write under a root of its own, the same for every run of the tree."""
    run_env = _bench_module("run_env")
    mine, other = run_env.tree_output_args(tmp_path, REPO), run_env.tree_output_args(tmp_path, tmp_path / "main")
    assert mine == run_env.tree_output_args(tmp_path, REPO) and mine[0] == other[0] == "--out"
    assert mine[1] != other[1] and Path(mine[1]).parent == tmp_path
    cpu_split_bench = _bench_module("cpu_split_bench")
    cpu_split_bench.run_once(REPO, str(sample_data), tmp_path / "out", ["-alg", "0"])
    own_root = Path(run_env.tree_output_args(tmp_path / "out", REPO)[1])
    assert (own_root / "row_cache" / "rows.sqlite").is_file()  # what the run stored, in its tree's root
    assert not (sample_data / "temp" / "row_cache").exists()


def test_a_measured_run_imports_the_tree_it_is_given_even_from_inside_a_checkout(tmp_path, monkeypatch):
    """``python -m`` and ``-c`` put the working directory first on sys.path: a bench started in
    a checkout measured that checkout for every tree it was given, until runs started in
    run_env.run_dir() with PYTHONSAFEPATH set."""
    run_env = _bench_module("run_env")
    run_dir, tool_env = run_env.run_dir, run_env.tool_env
    tree = tmp_path / "tree"
    (tree / "precision_tool").mkdir(parents=True)
    (tree / "precision_tool" / "__init__.py").write_text("WHICH = 'the tree given'\n")
    monkeypatch.chdir(BENCH.parent)  # the checkout itself, as when a bench is run from it
    probe = [sys.executable, "-c", "import precision_tool; print(precision_tool.WHICH)"]
    started_here = subprocess.run(probe, env=tool_env(tree), capture_output=True, text=True, check=False)
    assert started_here.stdout.strip() == "the tree given", started_here.stderr  # PYTHONSAFEPATH
    elsewhere = dict(tool_env(tree))
    del elsewhere["PYTHONSAFEPATH"]  # as on Python 3.10: the directory alone decides
    started = run_env.start_run(probe, elsewhere, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = started.communicate(timeout=60)
    assert out.strip() == "the tree given", err
    from_checkout = subprocess.run(probe, env=elsewhere, capture_output=True, text=True, check=False)
    assert from_checkout.returncode != 0 or from_checkout.stdout.strip() != "the tree given"  # the bug itself
    assert list(run_dir().iterdir()) == []


@pytest.mark.parametrize("what", ["graph", "plan", "worker", "run"])
def test_each_piece_of_the_instructions_bench_runs_without_valgrind(sample_data, what, tmp_path):
    """The work callgrind counts, run plainly on the sample once, as the bench's set-up run
    does, under an output root of its own: a piece that fails (a moved function, a cache the
    piece cannot find) fails here, not after minutes under valgrind."""
    instructions_bench = _bench_module("instructions_bench")
    output = tmp_path / "out"
    assert instructions_bench.instructions(REPO, what, str(sample_data), 1, "0", output, counted=False) == 0
    with pytest.raises(SystemExit) as stopped:  # a data root with nothing to read stops the bench
        instructions_bench.instructions(REPO, what, str(tmp_path / "empty"), 1, "0", output, counted=False)
    assert f"{what} of {REPO} ended with status 1" in str(stopped.value)


def test_the_pair_floor_bench_measures_both_passes_on_the_sample(sample_data):
    """Both passes run on the sample's GE dump: the engine's over every task, the floor's over
    the pairs of a dump tensor and a .npy golden that numba's kernels read as stored: all of the
    sample's compared pairs but those of integers (a Cast's), which the engine folds with numpy."""
    import numpy as np

    from precision_tool.compare.plan import plan_comparisons
    from precision_tool.compare.workspace import Workspace
    from precision_tool.config import Config
    from precision_tool.formats.dump import read_dump

    pair_floor_bench = _bench_module("pair_floor_bench")
    figures = pair_floor_bench.measure(REPO, str(sample_data), 1, "0")
    assert figures["tasks"] >= figures["compared"] > 0
    tasks = [t for t in plan_comparisons(Workspace(Config(data_root_dir=sample_data)))[0].tasks if t.comparable]
    integer_pairs = 0
    for task in tasks:
        dump = read_dump(task.left.path)
        stored = (dump.inputs if task.left.kind == "input" else dump.outputs)[task.left.index]
        integer_pairs += stored.dtype.kind in "iu" or np.load(task.right.path).dtype.kind in "iu"
    assert len(tasks) == figures["compared"] and integer_pairs == 2
    assert figures["floor_pairs"] == figures["compared"] - integer_pairs
    line = pair_floor_bench.line(REPO, figures)
    assert f"{figures['compared']:,} compared" in line and "engine / floor" in line and "above lean" in line


def test_the_pair_floor_bench_lean_pass_gives_the_engines_cosines(sample_data):
    """The ``lean`` pass converts each device tensor to its host layout as the tool does: its
    cosine of every pair it compares is the engine's, to the CSV's six decimals, on the sample's
    dump (its blocked layouts among them: the floor, which folds them as stored, differs)."""
    from precision_tool.compare import engine, jobs
    from precision_tool.compare.load import DEFAULT_CHUNK
    from precision_tool.compare.metrics import select_metrics
    from precision_tool.compare.plan import plan_comparisons
    from precision_tool.compare.workspace import Workspace
    from precision_tool.config import Config
    from precision_tool.formats.dump import read_dump

    figures = _bench_module("pair_floor_bench").measure(REPO, str(sample_data), 1, "0")
    lean = figures["lean_cosines"]
    assert figures["lean_pairs"] == len(lean) == figures["floor_pairs"]
    tasks = [t for t in plan_comparisons(Workspace(Config(data_root_dir=sample_data)))[0].tasks if t.comparable]
    plan = jobs.plan_jobs(tasks, select_metrics("0"), DEFAULT_CHUNK, False)
    rows = engine.run_job(tasks, *plan.job_args).rows
    cosines = {row.tensor_index: "%.6f" % row.cosine for row in rows if row.cosine is not None}
    assert lean and all(lean[index] == cosines[index] for index in lean)

    def stored_format(task) -> str:
        dump = read_dump(task.left.path)
        return (dump.inputs if task.left.kind == "input" else dump.outputs)[task.left.index].format

    blocked = {t.tensor_index for t in tasks if stored_format(t) in ("NC1HWC0", "FRACTAL_Z", "FRACTAL_NZ")}
    assert blocked & set(lean)  # the conversion was exercised, not only plain layouts


def test_the_pair_floor_bench_splits_the_engine_by_phase(sample_data):
    """``--phases`` puts the profiled engine pass's CPU into its phases: each has some on the
    sample's dump (blocked layouts, every metric), almost nothing is left unplaced, and the line
    gives every phase's share."""
    pair_floor_bench = _bench_module("pair_floor_bench")
    figures = pair_floor_bench.measure(REPO, str(sample_data), 1, "", phases=True)
    split = figures["phases"]
    named = [name for name in split if name != "other"]
    assert named == ["read", "row keys", "layout conversion", "kernels", "metrics and rows"]
    assert all(split[name] > 0 for name in named)
    assert split["other"] < 0.05 * sum(split.values())
    line = pair_floor_bench.phase_line(REPO, figures)
    assert all(f"{name} " in line for name in split)
    assert pair_floor_bench.measure(REPO, str(sample_data), 1, "0")["phases"] is None


def test_the_pair_floor_bench_stops_with_a_line_on_a_root_with_nothing_to_compare(tmp_path):
    pair_floor_bench = _bench_module("pair_floor_bench")
    with pytest.raises(SystemExit) as stopped:
        pair_floor_bench.measure(REPO, str(tmp_path), 1, "")
    assert str(stopped.value).endswith(
        "ended with status 1: cannot plan the data root: "
        + str(tmp_path / "npu" / "debug_0" / "dump")
        + ": no NPU dumps here"
    )


def test_the_skim_floor_cuts_every_attribute_and_nothing_else():
    """``graph_load_bench.py --steps skim`` reads a GE printer-layout graph with every op's and
    every desc's attributes cut out: the fast reader then gives the whole text's ops, inputs
    and descs (the reference: the same reader over the whole text), with no attribute left; a
    text whose blocks are not closed at their indent is refused, not cut wrong."""
    from precision_tool.formats.graph_text_fast import model_from_text

    bench = _bench_module("graph_load_bench")
    text = bench.ge_graph_text(40)
    whole, cut = model_from_text(text), model_from_text(bench._skimmed(text))

    def skeleton(op):
        descs = [(d.dtype, d.layout, d.shape, d.name) for d in op.input_descs + op.output_descs]
        return op.name, op.type, op.id, op.inputs, op.stream_id, descs

    assert [skeleton(op) for op in cut.graphs[0].ops] == [skeleton(op) for op in whole.graphs[0].ops]
    assert all(op.attrs for op in whole.graphs[0].ops)
    assert not any(op.attrs or any(d.attrs for d in op.input_descs + op.output_descs) for op in cut.graphs[0].ops)
    broken = text.replace("\n    }\n  }\n", "\n  }\n", 1)  # an op's last desc left unclosed
    with pytest.raises(ValueError, match="printer layout"):
        bench._skimmed(broken)


def test_the_regex_floor_finds_every_attribute_key_the_reader_reads():
    """``graph_load_bench.py --steps regex`` finds each attribute's key with one ``re.findall``:
    the keys found are those of every op's and every desc's attributes in the fast reader's
    model of the same GE printer-layout text (the reference), each as often; and each value's
    first field is one of ``AttrDef``'s own."""
    from collections import Counter

    from precision_tool.formats.graph_text_fast import model_from_text
    from precision_tool.formats.proto import ge_ir

    bench = _bench_module("graph_load_bench")
    text = bench.ge_graph_text(30)
    found = bench._attribute_keys(text)
    expected = Counter()
    for op in model_from_text(text).graphs[0].ops:
        expected.update(op.attrs.keys())
        for desc in op.input_descs + op.output_descs:
            expected.update(desc.attrs.keys())
    assert len(found) > 30 and Counter(key for key, _ in found) == expected
    fields = {field.name for field in ge_ir.AttrDef.DESCRIPTOR.fields}
    assert {member for _, member in found} <= fields


def test_the_compiled_floor_runs_a_kernel_over_every_byte():
    """``graph_load_bench.py --steps compiled`` loads the tool's numba kernels and runs one over
    the whole text read as float16 bits: its NaN and Inf counts are numpy's of the same bits
    (a byte left out would change them: ``}`` and ``|`` make such bits)."""
    import numpy as np

    raw = _bench_module("graph_load_bench").ge_graph_text(20).encode()
    halves = np.frombuffer(raw, np.float16, len(raw) // 2)
    # in a process of its own: the floor claims its process as the tool's (heap, numba's probe)
    code = (
        f"import sys; sys.path.insert(0, {str(BENCH)!r}); import graph_load_bench as bench; "
        "print(bench._compiled_pass(sys.stdin.buffer.read()).tolist())"
    )
    tool_env = _bench_module("run_env").tool_env
    run = subprocess.run([sys.executable, "-c", code], input=raw, capture_output=True, check=True, env=tool_env(REPO))
    counts = [int(n) for n in run.stdout.decode().strip().strip("[]").split(",")]
    assert sum(counts) > 0
    assert counts == [int(np.isnan(halves).sum()), int(np.isinf(halves).sum())]


def test_the_commands_bench_times_each_command_after_a_vc_of_its_own(sample_data, capsys):
    """Each command reads the result its tree's own `vc` made (a run that found no result would
    stop the bench with its error line), and nothing is written into the data root."""
    commands_bench = _bench_module("commands_bench")
    assert commands_bench.main([str(sample_data), "--commands", "vcs,ac", "--repeat", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    timed = [line for line in lines if "wall median" in line]
    assert [line.split(" (")[0] for line in timed] == ["vcs", "ac"]
    assert all(f"({REPO})" in line for line in timed)
    assert not (sample_data / "temp").exists()
