"""Benchmark ``vc`` on msprobe dumps against msprobe's own ``compare``, and check they agree.

    python bench/msprobe_bench.py [--size 500M] [--framework pytorch|mindspore] [--level mix|L1]
                                  [--repeat 3] [--workdir DIR] [--msprobe PATH] [--write]

Generates (or reuses, under ``--workdir``) the seeded workload of ``bench/msprobe_workload.py``:
an NPU (bfloat16 / float16) and a bench (float32) msprobe dump of a transformer-like stack,
task ``tensor``, of about ``--size`` bytes of tensor files (both sides).

After a warm-up read of every tensor file (its rate is printed as the limit) and one untimed run
of each of our commands (numba compiles and caches its kernels on a first run), it runs, as
subprocesses of the real command lines, interleaved run by run, ``--repeat`` times each:

* ``vc all`` / ``vc -alg 0``: ``python -m precision_tool --data ROOT vc --fresh`` (all ten
  metrics / cosine only);
* ``npy path``: the same ``.npy`` files through vc's npy-dir path (``-lt``/``-rt`` on the two
  ``dump_tensor_data`` dirs: no dump.json), MindSpore only (vc's npy path reads no ``.pt``);
* ``msprobe``: ``msprobe compare -tp NPU/step0 -gp BENCH/step0 -o OUT`` of mindstudio-probe
  (``--msprobe``, default ``/tmp/msprobe-venv/bin/msprobe``; a venv with mindstudio-probe, torch
  CPU and, for MindSpore dumps, mindspore). Without it, says why and measures ours alone.

Times are medians (min and max beside); GB/s is tensor-file bytes of both sides over the
median wall time; CPU is user + system of the run's process tree (``os.wait4``); peak RSS is the
largest sum of RSS over the run's process tree, sampled every 50 ms with psutil (a page shared
by forked workers counts in each), and ``max proc`` the largest single process (sampled too:
``ru_maxrss`` would carry this process's RSS into the child's). ``others`` is the CPU the rest of the machine used during the run (``/proc/stat``
busy time less the run's own), in cores: on a shared machine it says how loaded the runs were.
Then the agreement of the last runs: rows paired by NPU Name, the largest differences per
metric; exit status 1 when they disagree. ``--write`` puts the tables into docs/performance.md.
No numbers are asserted.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from msprobe_workload import RUNS, add_workload_arguments, tensor_files
from perf_doc import write_doc
from run_env import tool_env

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MSPROBE = "/tmp/msprobe-venv/bin/msprobe"
COSINE_LIMIT = 1e-6
SLACK = 1e-12  # two cosines printed to 6 decimals can differ by 1e-6 plus a float's error
DOC = REPO / "docs" / "performance.md"
SECTION = "msprobe dumps"  # its section of docs/performance.md (bench/perf_doc.py writes it)
INTRO = (
    "`bench/msprobe_bench.py`: `vc` on msprobe dumps against msprobe's own `compare`, and how their "
    "results agree (the script's doc says how each figure is taken)."
)


# --- measuring a run -----------------------------------------------------------------------------


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores), from /proc/stat."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = [int(v) for v in handle.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _tree_rss(pid: int) -> tuple[int, int]:
    """(sum of RSS over ``pid`` and its descendants, the largest single RSS) now."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0, 0
    sizes = []
    for proc in procs:
        try:
            sizes.append(proc.memory_info().rss)
        except psutil.Error:
            continue
    return sum(sizes), max(sizes, default=0)


def measure(command: list[str], env: dict, log: Path) -> dict:
    """Run ``command`` (output to ``log``): wall, tree CPU and peak RSS, the others' load."""
    peak, done = [0, 0], threading.Event()
    busy0, mine0, start = _busy_seconds(), time.process_time(), time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command, env=env, cwd=log.parent, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

        def sample() -> None:
            while not done.wait(0.05):
                peak[:] = map(max, peak, _tree_rss(proc.pid))

        watcher = threading.Thread(target=sample, daemon=True)
        watcher.start()
        # wait4: the CPU of the run's tree (children it waited for included). Not its ru_maxrss:
        # Linux carries the forking parent's RSS into the child's, so memory comes from sampling
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        watcher.join()
    cpu = usage.ru_utime + usage.ru_stime
    mine = time.process_time() - mine0  # this process's sampling is not the others' load
    others = max(0.0, _busy_seconds() - busy0 - cpu - mine) / wall
    return {"wall": wall, "cpu": cpu, "rss": peak[0], "maxproc": peak[1], "others": others, "status": proc.returncode}


class Runner:
    """One command measured: its name, how it is run, where it writes, and the statuses it may end with."""

    def __init__(self, name: str, command: list[str], out: Path, env: dict, ok=(0, 1)) -> None:
        self.name, self.command, self.out, self.env, self.ok = name, command, out, env, ok
        self.runs: list[dict] = []

    def run(self, keep: bool = True) -> dict:
        """One run, kept among the measured ones unless ``keep`` is False (a warm-up)."""
        shutil.rmtree(self.out, ignore_errors=True)
        self.out.mkdir(parents=True)
        result = measure(self.command, self.env, self.out.parent / f"{self.out.name}.log")
        if result["status"] not in self.ok:
            tail = (self.out.parent / f"{self.out.name}.log").read_text(errors="replace")[-3000:]
            raise SystemExit(f"{self.name}: {' '.join(self.command)} ended with status {result['status']}:\n{tail}")
        if keep:
            self.runs.append(result)
        return result


def _vc_env(workers: int, scratch: Path) -> dict:
    """The environment of our runs: this checkout, ``workers``, and bytecode kept (under
    ``scratch``) as an installed package has it; msprobe's venv has its own from pip. (A
    PYTHONDONTWRITEBYTECODE inherited from the shell made every run compile ~120 modules.)"""
    return tool_env(REPO, scratch / "pycache", PRECISION_TOOL_WORKERS=str(workers))


def our_runners(root: Path, scratch: Path, framework: str, workers: int) -> tuple[list[Runner], str]:
    """vc all, vc -alg 0 and (MindSpore) the npy path, and what the npy path is measured as."""
    base = [sys.executable, "-m", "precision_tool", "--data", str(root), "vc", "--fresh"]
    env = _vc_env(workers, scratch)
    runners = [
        Runner("vc all", base + ["-o", str(scratch / "vc_all")], scratch / "vc_all", env),
        Runner("vc -alg 0", base + ["-alg", "0", "-o", str(scratch / "vc_alg0")], scratch / "vc_alg0", env),
    ]
    if framework != "mindspore":
        return runners, "npy path: not run: vc's npy-dir path reads .npy files, and a PyTorch dump holds .pt files"
    sides = [str(root / run / "step0" / "rank0" / "dump_tensor_data") for run in RUNS]
    npy = base + ["-lt", sides[0], "-rt", sides[1]]
    runners += [
        Runner("npy path all", npy + ["-o", str(scratch / "npy_all")], scratch / "npy_all", env),
        Runner("npy path -alg 0", npy + ["-alg", "0", "-o", str(scratch / "npy_alg0")], scratch / "npy_alg0", env),
    ]
    return runners, "npy path: the same .npy files through vc -lt/-rt on the two dump_tensor_data dirs (no dump.json)"


# --- msprobe -------------------------------------------------------------------------------------


def msprobe_facts(executable: str) -> tuple[dict, str]:
    """(versions of mindstudio-probe, torch and mindspore in its venv, why it cannot run or '')."""
    path = Path(executable)
    python = path.parent / "python"
    if not path.is_file() or not python.exists():
        return {}, f"{executable} not found (make a venv with mindstudio-probe; see the module doc)"
    probe = (
        "import importlib.metadata as m, json\nout = {}\nfor n in ('mindstudio-probe', 'torch', 'mindspore'):\n"
        "    try: out[n] = m.version(n)\n    except m.PackageNotFoundError: out[n] = None\nprint(json.dumps(out))"
    )
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {}, f"{python} could not report its packages: {done.stderr.strip()[-300:]}"
    return json.loads(done.stdout), ""


def msprobe_runner(executable: str, root: Path, scratch: Path, framework: str) -> tuple[Runner | None, dict, str]:
    facts, why = msprobe_facts(executable)
    needs = "torch" if framework == "pytorch" else "mindspore"
    if not why and not facts.get("mindstudio-probe"):
        why = "mindstudio-probe is not installed beside it"
    if not why and not facts.get(needs):
        why = f"msprobe compare of {framework} dumps imports {needs}, which is not installed beside it"
    if why:
        return None, facts, why
    out = scratch / "msprobe"
    command = [
        executable,
        "compare",
        "-tp",
        str(root / "npu" / "step0"),
        "-gp",
        str(root / "bench" / "step0"),
        "-o",
        str(out),
    ]
    return Runner("msprobe compare", command, out, dict(os.environ), ok=(0,)), facts, ""


def msprobe_csv(out: Path, executable: str) -> Path:
    """msprobe's result as CSV (an .xlsx is converted with pandas in msprobe's venv)."""
    found = sorted(out.rglob("compare_result*.csv"))
    if found:
        return found[-1]
    books = sorted(out.rglob("compare_result*.xlsx"))
    if not books:
        raise SystemExit(f"msprobe wrote no compare_result CSV or xlsx in {out}")
    target = books[-1].with_suffix(".csv")
    script = "import sys, pandas\npandas.read_excel(sys.argv[1]).to_csv(sys.argv[2], index=False)"
    subprocess.run(
        [str(Path(executable).parent / "python"), "-c", script, str(books[-1]), str(target)], check=True, timeout=600
    )
    return target


# --- agreement -----------------------------------------------------------------------------------

METRICS = ("Cosine", "EucDist", "MaxAbsErr", "MaxRelativeErr", "One Thousandth Err Ratio", "Five Thousandths Err Ratio")


def _number(text: str | None) -> float | None:
    """A metric cell as a float; None for N/A, unsupported, empty."""
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def _rows(path: Path) -> list[dict]:
    csv.field_size_limit(1 << 30)  # msprobe's NPU_Stack_Info cells are long
    with open(path, newline="", encoding="utf-8-sig") as handle:
        return list(csv.DictReader(handle))


def our_rows(out: Path) -> list[dict]:
    """The lines of our run's msprobe-columns CSV (``msprobe/compare_result_*.csv``)."""
    (ms_path,) = (out / "msprobe").glob("compare_result_*.csv")
    return _rows(ms_path)


def by_name(lines: list[dict]) -> dict:
    """NPU Name -> (Bench Name, {metric: value})."""
    return {r["NPU Name"]: (r["Bench Name"], {m: _number(r.get(m)) for m in METRICS}) for r in lines}


def line_notes(ours: list[dict], theirs: list[dict]) -> tuple[list[str], bool]:
    """How the two CSVs agree line by line: the same lines in the same order, and which
    columns beside the metrics hold another text (every cell is compared as text)."""
    same_order = [r["NPU Name"] for r in ours] == [r["NPU Name"] for r in theirs]
    mine = {r["NPU Name"]: r for r in ours}
    differing: dict[str, int] = {}
    for row in theirs:
        other = mine.get(row["NPU Name"])
        for column, cell in (other or {}).items():
            if column not in METRICS and column in row and cell != row[column]:
                differing[column] = differing.get(column, 0) + 1
    notes = [
        f"lines: {len(ours)} ours, {len(theirs)} msprobe's, in {'the same' if same_order else 'another'} order; "
        "columns beside the metrics with another text: "
        + (", ".join(f"{c} ({n} lines)" for c, n in differing.items()) or "none")
    ]
    return notes, same_order and not differing


def _within(metric: str, mine: float, theirs: float) -> bool:
    if not (math.isfinite(mine) and math.isfinite(theirs)):
        return (math.isnan(mine) and math.isnan(theirs)) or mine == theirs
    diff = abs(mine - theirs)
    if metric == "Cosine":
        return diff <= COSINE_LIMIT + SLACK
    return diff <= 1e-6 + SLACK or diff <= 1e-5 * abs(theirs)  # 6 printed decimals, or 1e-5 relative


def agreement(ours: dict, theirs: dict) -> tuple[list[str], list[list[str]], bool]:
    """Notes, one table row per metric both have, and whether everything agrees."""
    common = sorted(set(ours) & set(theirs))
    alike = [n for n in common if ours[n][0] == theirs[n][0]]
    only_ours = sorted(set(ours) - set(theirs))
    notes = [
        f"rows: {len(ours)} ours, {len(theirs)} msprobe's; "
        f"{len(common)} in both, {len(alike)} paired alike (same Bench Name), {len(only_ours)} ours only"
        + (f" (first {only_ours[0]})" if only_ours else "")
    ]
    table, ok = [], len(alike) == len(common) and not only_ours and bool(common)
    for metric in METRICS:
        both = [(ours[n][1][metric], theirs[n][1][metric]) for n in alike]
        pairs = [(a, b) for a, b in both if a is not None and b is not None]
        one_side = sum((a is None) != (b is None) for a, b in both)
        if not pairs:
            continue
        finite = [(a, b) for a, b in pairs if math.isfinite(a) and math.isfinite(b)]
        worst = max((abs(a - b) for a, b in finite), default=0.0)
        relative = max((abs(a - b) / abs(b) for a, b in finite if b), default=0.0)
        bad = sum(not _within(metric, a, b) for a, b in pairs)
        ok = ok and not bad and (metric != "Cosine" or worst <= COSINE_LIMIT + SLACK)
        table.append([metric, str(len(pairs)), f"{worst:.3g}", f"{relative:.3g}", str(bad), str(one_side)])
    if not any(row[0] == "Cosine" for row in table):
        ok = False
        notes.append("no row has a cosine on both sides")
    return notes, table, ok


AGREEMENT_HEADER = ["metric", "rows", "max abs diff", "max rel diff", "over the limit", "one side only"]


# --- the report ----------------------------------------------------------------------------------

RUN_HEADER = [
    "run",
    "n",
    "wall s med (min-max)",
    "GB/s",
    "CPU s",
    "peak RSS tree",
    "max proc",
    "others (cores)",
    "ours/msprobe wall",
    "ours/msprobe RSS",
]


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n else ""


def run_rows(runners: list[Runner], data_bytes: int, raw: float) -> list[list[str]]:
    """One row per measured command (medians), and the warm read of every tensor file first."""
    theirs = next((r for r in runners if r.name.startswith("msprobe") and r.runs), None)
    rows = [["read every file (warm)", "1", f"{raw:.2f}", f"{data_bytes / raw / 1e9:.2f}", "", "", "", "", "", ""]]
    for runner in runners:
        if not runner.runs:
            continue
        walls = sorted(r["wall"] for r in runner.runs)
        wall = statistics.median(walls)
        rss = statistics.median(r["rss"] for r in runner.runs)
        ratio = ratio_rss = ""
        if theirs is not None and runner is not theirs:
            ratio = f"{wall / statistics.median(r['wall'] for r in theirs.runs):.3f}"
            ratio_rss = f"{rss / statistics.median(r['rss'] for r in theirs.runs):.2f}"
        rows.append(
            [
                runner.name,
                str(len(walls)),
                f"{wall:.2f} ({walls[0]:.2f}-{walls[-1]:.2f})",
                f"{data_bytes / wall / 1e9:.3f}",
                f"{statistics.median(r['cpu'] for r in runner.runs):.2f}",
                _mib(int(rss)),
                _mib(max(r["maxproc"] for r in runner.runs)),
                f"{statistics.median(r['others'] for r in runner.runs):.2f}",
                ratio,
                ratio_rss,
            ]
        )
    return rows


def text_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
        for r in [header, *rows]
    )


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| --- |" + " ---: |" * (len(header) - 1)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def machine_facts(facts: dict) -> str:
    import importlib.util
    import platform

    with open("/proc/meminfo", encoding="ascii") as handle:
        ram = next(int(line.split()[1]) for line in handle if line.startswith("MemTotal:")) / 2**20
    ms = ", ".join(f"{k} {v}" for k, v in facts.items() if v) or "not installed"
    return (
        f"{os.cpu_count()} cores, {ram:.1f} GiB RAM, Python {platform.python_version()}, numba "
        f"{'present' if importlib.util.find_spec('numba') else 'absent'}, msprobe venv: {ms}"
    )


# --- the run -------------------------------------------------------------------------------------


def interleave(runners: list[Runner], repeat: int, ms_repeat: int) -> None:
    """``repeat`` rounds, each runner once a round (msprobe in the first ``ms_repeat`` only), the
    order rotated round by round: the load of a shared machine drifts. Our commands run once
    first, not timed: numba compiles its kernels for new dtypes on a first run and caches them
    (a user pays that once per install); msprobe compiles nothing."""
    for runner in runners:
        if not runner.name.startswith("msprobe"):
            print(f"  warm-up {runner.name}: {runner.run(keep=False)['wall']:.2f} s", file=sys.stderr, flush=True)
    for round_ in range(repeat):
        order = runners[round_ % len(runners) :] + runners[: round_ % len(runners)]
        for runner in order:
            if runner.name.startswith("msprobe") and round_ >= ms_repeat:
                continue
            result = runner.run()
            print(
                f"  round {round_ + 1} {runner.name}: {result['wall']:.2f} s, load of others "
                f"{result['others']:.2f} cores",
                file=sys.stderr,
                flush=True,
            )


def measure_all(args, root: Path, scratch: Path) -> tuple[list[str], list[list[str]], list[str], list[list[str]], bool]:
    """Run everything; (notes, run rows, agreement notes, agreement rows, agreed)."""
    from compare_bench import raw_read

    files = tensor_files(root)
    data_bytes = sum(p.stat().st_size for p in files)
    sides = {run: sum(p.stat().st_size for p in files if p.is_relative_to(root / run)) for run in RUNS}
    raw_read(files)  # the warm-up: every file in the page cache
    raw = raw_read(files)
    runners, npy_note = our_runners(root, scratch, args.framework, args.workers)
    ms, facts, why = msprobe_runner(args.msprobe, root, scratch, args.framework)
    marker = json.loads((root / "bench.json").read_text(encoding="utf-8"))
    notes = [
        f"data: {len(files)} tensor files, {data_bytes / 1e9:.3f} GB ({sides['npu'] / 1e9:.3f} NPU + "
        f"{sides['bench'] / 1e9:.3f} bench), {marker['layers']} layers, {args.framework}, level {args.level}, "
        f"NPU {args.npu_dtype} vs bench float32, under {root}",
        f"machine: {machine_facts(facts)}; vc workers {args.workers}; load average at the start "
        f"{os.getloadavg()[0]:.2f}",
        npy_note,
        f"msprobe: {'`' + ' '.join(ms.command) + '`' if ms else 'NOT RUN: ' + why}",
        "memory: peak RSS tree = largest sum of RSS over the run's process tree, max proc = largest "
        "single process, both sampled with psutil every 50 ms; CPU = user + system of the tree (os.wait4)",
    ]
    if ms is not None:
        runners.append(ms)
    interleave(runners, args.repeat, args.ms_repeat or args.repeat)
    notes.append(f"load average at the end {os.getloadavg()[0]:.2f}")
    rows = run_rows(runners, data_bytes, raw)
    if ms is None:
        return notes, rows, [f"agreement: not measured: {why}"], [], True
    ours, theirs = our_rows(scratch / "vc_all"), _rows(msprobe_csv(ms.out, args.msprobe))
    a_notes, a_rows, agreed = agreement(by_name(ours), by_name(theirs))
    lines, alike = line_notes(ours, theirs)
    a_notes += lines + [f"limits: Cosine |diff| <= {COSINE_LIMIT:g}, others |diff| <= 1e-6 or 1e-5 relative"]
    return notes, rows, a_notes, a_rows, agreed and alike


def prepare_in_child(args, workdir: Path) -> Path:
    """The workload's root, written (or found) by msprobe_workload.py in a process of its own,
    so this one stays small while it measures."""
    script = Path(__file__).resolve().with_name("msprobe_workload.py")
    flags = [
        "--size",
        args.size,
        "--framework",
        args.framework,
        "--level",
        args.level,
        "--npu-dtype",
        args.npu_dtype,
        "--seed",
        str(args.seed),
    ]
    done = subprocess.run(
        [sys.executable, str(script), str(workdir), *flags],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=True,
    )
    lines = done.stdout.strip().split("\n")
    for line in lines[:-1]:  # "generated N layers in S s" when it wrote them
        print(line, flush=True)
    return Path(lines[-1])


def bench(args) -> int:
    """Generate (or reuse) the workload, measure, print the tables; 1 when the results disagree."""
    import shlex

    workdir = Path(args.workdir) if args.workdir else Path(tempfile.gettempdir()) / "msprobe_bench"
    root = prepare_in_child(args, workdir)
    notes, rows, a_notes, a_rows, agreed = measure_all(args, root, workdir / "runs")
    verdict = "AGREE" if agreed else "DISAGREE"
    print("\n".join(notes), "", text_table(RUN_HEADER, rows), "", *a_notes, sep="\n")
    if a_rows:
        print(text_table(AGREEMENT_HEADER, a_rows))
    print(f"agreement: {verdict}" if a_rows else "")
    if args.write:
        command = "python " + shlex.join(["bench/msprobe_bench.py", *sys.argv[1:]])
        body = "\n".join(
            [
                f"`{command}` ({time.strftime('%Y-%m-%d')})",
                "",
                *[f"- {n}" for n in notes],
                "",
                markdown_table(RUN_HEADER, rows),
                "",
                *[f"- {n}" for n in a_notes],
            ]
            + (["", markdown_table(AGREEMENT_HEADER, a_rows), "", f"Agreement: {verdict}."] if a_rows else [])
        )
        write_doc(SECTION, INTRO, f"{args.framework}, level {args.level}, NPU {args.npu_dtype}, {args.size}", body)
        print(f"written to {DOC}")
    return 0 if agreed else 1


def main(argv: list[str] | None = None) -> int:
    """Parse the flags and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_workload_arguments(parser)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (default 3)")
    parser.add_argument("--ms-repeat", type=int, help="runs of msprobe compare (default --repeat)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="vc worker processes")
    parser.add_argument(
        "--workdir",
        help="where the workload and run outputs go (default TMP/msprobe_bench); "
        "a workload there with the same parameters is reused",
    )
    parser.add_argument(
        "--msprobe",
        default=DEFAULT_MSPROBE,
        help=f"the msprobe executable of a venv with mindstudio-probe (default {DEFAULT_MSPROBE})",
    )
    parser.add_argument("--write", action="store_true", help="put the tables into docs/performance.md")
    return bench(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
