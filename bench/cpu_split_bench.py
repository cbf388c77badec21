"""Where the CPU of a ``vc`` run goes, process by process, code trees side by side.

    python bench/cpu_split_bench.py DATA_ROOT [--repeat 6] [CODE_DIR ...] [--vc "-alg 0"] [--stages]

On two cores a large run is bound by CPU once its workers are launched: the tool's process,
two workers and what is left of the pool's fork server share the cores, so the wall time after
the first launch is about half their CPU, and a change pays off only by the CPU it saves
(docs/performance.md, "Where 25x and 50x stand now"). So each run's CPU is split:

- ``tool``: the tool's own process; ``main`` its main thread (imports, graph, pairing, rows,
  CSV, row cache), ``threads`` the others (the pool's task feeder and result threads);
- ``server``: the pool's fork server up to the first launch (numpy, numba and the kernels
  loaded before any worker is forked); for a run with no worker, all its children used;
- ``workers``: the rest of the process tree (``os.wait4``), the workers' comparisons;
- ``launched``: seconds from the start to the first worker launched (nan: none was).

``--workers-at W[,W...]`` also prints, for each W, the least wall time the run could take had
its workers used W CPU-seconds instead of what they used: after the first launch, the tool's
process (its CPU from then on) and the workers share the cores at best perfectly, so the run
takes at least ``launched + (tool after launch + W) / cores``. With W the workers' own CPU it
is a lower bound of the measured wall (how close says how CPU-bound the run is); with W a
floor (``bench/pair_floor_bench.py``: reading the files and the kernel alone) or 0 it says
what no faster worker could beat while the rest of the run stays as it is.

With ``--stages`` the main thread's CPU is also split by the functions of :data:`STAGES` (their
thread CPU, callees included: ``pairing`` holds the dump headers it reads), each a median
over the runs; a stage whose function a tree lacks is left out of that tree's line. The timing
costs the run something: a 4 GB re-run, whose keys alone are 22,367 timed calls, took about
0.1 s more wall and 0.18 CPU-s more, and about 0.1 CPU-s of the main thread's then shows under
``threads``; compare wall times and totals from runs without ``--stages``.

``--reuse`` measures a re-run instead: ``vc`` without ``--fresh``, each tree's row cache filled by
its first, uncounted run, so every row is the store's and no worker is launched (the row keys,
the store's read and its rows are then stages of their own).

Each run is ``vc --fresh`` (``vc`` with ``--reuse``) of DATA_ROOT through a driver
(``python -c``) that reads its threads' CPU at exit and times the first worker's launch; the
trees alternate run by run (a shared machine's load drifts) and medians are printed. Linux only
(``/proc``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import add_root_and_trees, last_line, root_and_trees, start_run, tool_env, tree_output_args  # noqa: E402

MARK = "cpu-split: "  # how the driver's one line on stderr starts
FIELDS = ("wall", "launched", "tool", "main", "threads", "server", "workers", "total")
CORES = os.cpu_count() or 1
STAGES = {  # stage: (module, attribute path) of the tool's own functions, timed on the main thread
    "golden index": ("precision_tool.compare.workspace", "Workspace.golden"),
    "graph": ("precision_tool.compare.workspace", "Workspace.models"),
    "pairing": ("precision_tool.compare.paired_tasks", "PairedTasks._pair_one"),
    "file sizes": ("precision_tool.compare.jobs", "JobStream._size"),
    "row cache": ("precision_tool.compare.row_cache", "RowCache.put"),
    "CSV": ("precision_tool.compare.result_csv", "ResultWriter.write"),
    "summary": ("precision_tool.commands.vc_run", "Summary.add"),
    # a re-run's (--reuse): every key found before anything is computed, the store read, its rows made
    "row keys": ("precision_tool.compare.row_keys", "RowKeys.key"),
    "store read": ("precision_tool.compare.row_cache", "RowCache.outcomes"),
    "stored rows": ("precision_tool.compare.row_cache", "_with_outcome"),
}

# Run by the measured interpreter as ``python -c``: no file, so the fork server has no main
# module to import again. Its exit hook is registered before the CLI's, so it runs after them.
DRIVER = r"""
import atexit, importlib, json, os, resource, sys, threading, time
start = float(os.environ["CPU_SPLIT_T0"])
marks, stages = {}, {}
tick = os.sysconf("SC_CLK_TCK")

def stat_cpu(path):
    fields = open(path).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick  # utime + stime

def report():  # the process's CPU counts its ended threads too; /proc's main thread, itself only
    usage = resource.getrusage(resource.RUSAGE_SELF)
    main = stat_cpu(f"/proc/{os.getpid()}/task/{os.getpid()}/stat")
    found = dict(marks, main=main, tool=usage.ru_utime + usage.ru_stime, stages=stages)
    print("MARK" + json.dumps(found), file=sys.stderr)

atexit.register(report)

import multiprocessing.forkserver as forkserver
import multiprocessing.popen_fork as popen_fork
import multiprocessing.popen_forkserver as popen_forkserver
import multiprocessing.popen_spawn_posix as popen_spawn

def timed_launch(launch, by_server):
    def run(self, obj):
        done = launch(self, obj)
        if "launched" not in marks:  # the first worker, forked by the server or here
            marks["launched"] = time.time() - start
            pid = getattr(forkserver._forkserver, "_forkserver_pid", None) if by_server else None
            marks["server"] = stat_cpu(f"/proc/{pid}/stat") if pid else 0.0
            usage = resource.getrusage(resource.RUSAGE_SELF)
            marks["tool_at_launch"] = usage.ru_utime + usage.ru_stime
        return done
    return run

for popen, by_server in ((popen_forkserver, True), (popen_fork, False), (popen_spawn, False)):
    popen.Popen._launch = timed_launch(popen.Popen._launch, by_server)

def timed(label, function):
    def run(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return function(*args, **kwargs)
        begin = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            stages[label] = stages.get(label, 0.0) + time.thread_time() - begin
    return run

for label, (module, path) in json.loads(os.environ.get("CPU_SPLIT_STAGES", "{}")).items():
    try:
        owner = importlib.import_module(module)
        *outer, name = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        setattr(owner, name, timed(label, getattr(owner, name)))
    except (ImportError, AttributeError):
        pass  # not in this tree: left out of its line

if os.environ.get("CPU_SPLIT_POOL"):  # --pool-always: workers however small the run
    import precision_tool.compare.api as api
    api.POOL_MIN_BYTES = 0

sys.argv = ["precision-tool", *sys.argv[1:]]
from precision_tool.cli import entry
entry()
""".replace("MARK", MARK)


def run_once(
    code: Path,
    root: str,
    out: Path,
    vc_args: list[str],
    stages: bool = False,
    pool_always: bool = False,
    fresh: bool = True,
) -> dict:
    """One run of ``vc`` of the tree ``code`` (``--fresh`` unless ``fresh`` is False: then it
    reuses what the tree's row cache under ``out`` holds): the fields of :data:`FIELDS` and
    ``stages`` (the main thread's CPU by stage when ``stages``, else empty). ``pool_always``:
    the run uses the worker pool however small it is."""
    env = tool_env(code, CPU_SPLIT_T0=repr(time.time()), CPU_SPLIT_STAGES=json.dumps(STAGES if stages else {}))
    if pool_always:
        env["CPU_SPLIT_POOL"] = "1"
    own_root = tree_output_args(out, code)  # the tree's own graph cache
    fresh_flag = ["--fresh"] if fresh else []
    command = [sys.executable, "-c", DRIVER, "--data", root, *own_root, "vc", *fresh_flag, "-o", str(out), *vc_args]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        proc = start_run(command, env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        errors.seek(0)
        text = errors.read().decode(errors="replace")
        lines = text.splitlines()
    code_status = os.waitstatus_to_exitcode(status)
    found = [line for line in lines if line.startswith(MARK)]
    if code_status not in (0, 1) or not found:  # 1: ops flagged
        raise SystemExit(f"vc of {code} ended with status {code_status}: {last_line(text)}")
    split = json.loads(found[-1][len(MARK) :])
    total = usage.ru_utime + usage.ru_stime
    tool = split["tool"]
    # no worker launched (a small run compares inline): what the children used is the server's
    server = split["server"] if "launched" in split else total - tool
    return dict(
        wall=wall,
        launched=split.get("launched", float("nan")),
        tool=tool,
        main=split["main"],
        threads=tool - split["main"],
        server=server,
        workers=total - tool - server,
        total=total,
        stages=split["stages"],
        tool_at_launch=split.get("tool_at_launch", float("nan")),
    )


def least_wall(run: dict, workers_cpu: float, cores: int = CORES) -> float:
    """The least wall time ``run`` could take with its workers at ``workers_cpu`` CPU-seconds
    (see the module docstring): its first launch, then the CPU left to it shared perfectly by
    ``cores``. nan for a run that launched no worker."""
    after_launch = run["tool"] - run["tool_at_launch"] + workers_cpu
    return run["launched"] + after_launch / cores


def bound_lines(found: list[dict], workers_at: list[float], cores: int = CORES) -> list[str]:
    """A tree's lines for ``--workers-at``: the median least wall with its workers' own CPU
    (against the median measured wall) and with each CPU of ``workers_at``."""
    own = statistics.median(least_wall(r, r["workers"], cores) for r in found)
    wall = statistics.median(r["wall"] for r in found)
    lines = [f"  its workers' own CPU: at least {own:.3f} s (measured {wall:.3f} s)"]
    for cpu in workers_at:
        least = statistics.median(least_wall(r, cpu, cores) for r in found)
        lines.append(f"  workers at {cpu:.3f} CPU-s: at least {least:.3f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run the trees alternately, print one line of medians per tree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_root_and_trees(parser, "a data root (e.g. bench/compare_bench.py --network mixed --gb 1.5 --keep DIR)")
    parser.add_argument("--repeat", type=int, default=6, help="runs of each tree (default 6)")
    parser.add_argument("--vc", default="", help="more vc arguments, as one string (e.g. '-alg 0')")
    parser.add_argument("--stages", action="store_true", help="also split the main thread's CPU by stage")
    parser.add_argument("--pool-always", action="store_true", help="use the worker pool however small the dump")
    parser.add_argument(
        "--reuse", action="store_true", help="measure a re-run: vc without --fresh, every row from the row cache"
    )
    parser.add_argument(
        "--workers-at",
        type=_cpu_list,
        default=[],
        metavar="W[,W...]",
        help="also print the least wall time with the workers at these CPU-seconds (e.g. a floor, 0)",
    )
    add_write_flag(parser)
    args = parser.parse_args(argv)
    args.root, codes = root_and_trees(args)
    if not Path("/proc/self/task").is_dir():
        raise SystemExit("cpu_split_bench.py reads /proc: Linux only")
    out = Path(tempfile.mkdtemp(prefix="cpu_split_"))
    vc_args = shlex.split(args.vc)
    subprocess.run(["find", args.root, "-type", "f", "-exec", "cat", "{}", "+"], stdout=subprocess.DEVNULL, check=False)
    for code in codes:  # a first run of each, not counted: bytecode written, caches made (rows too)
        run_once(code, args.root, out, vc_args, pool_always=args.pool_always)
    runs: dict[Path, list[dict]] = {code: [] for code in codes}
    fresh = not args.reuse
    title = f"vc{' --fresh' if fresh else ''} {args.vc}".rstrip()
    print(f"{title} of {args.root}; load average at the start {os.getloadavg()[0]:.2f}")
    for _ in range(args.repeat):
        for code in codes:
            runs[code].append(run_once(code, args.root, out, vc_args, args.stages, args.pool_always, fresh))
    print(f"medians of {args.repeat} runs a tree, seconds (CPU seconds but for wall and launched)")
    print("tree: " + " ".join(FIELDS))
    for code, found in runs.items():
        print(f"{code}: " + " ".join(f"{statistics.median(r[f] for r in found):.3f}" for f in FIELDS))
    if args.stages:
        print("the main thread's CPU by stage (callees included), seconds")
        for code, found in runs.items():
            named = [label for label in STAGES if all(label in r["stages"] for r in found)]
            medians = (f"{label} {statistics.median(r['stages'][label] for r in found):.3f}" for label in named)
            print(f"{code}: " + ", ".join(medians))
    if args.workers_at:
        print(f"the least wall time after the first launch on {CORES} cores, medians")
        for code, found in runs.items():
            print(f"{code}:")
            print("\n".join(bound_lines(found, args.workers_at)))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


def _cpu_list(text: str) -> list[float]:
    """``--workers-at``'s CPU-seconds, comma-separated."""
    try:
        values = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not CPU-seconds: {text!r}") from None
    if not values or any(not math.isfinite(v) or v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"not CPU-seconds: {text!r}")
    return values


INTRO = (
    "`bench/cpu_split_bench.py`: a `vc --fresh` run's CPU split into the tool's main thread, its other "
    "threads, the pool's fork server and the workers, with the wall time and the first worker's launch; "
    "code trees alternating run by run."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "cpu_split_bench.py", "CPU of a run, process by process", INTRO))
