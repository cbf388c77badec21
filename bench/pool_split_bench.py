"""Where a parallel ``vc`` run's CPU goes: the same data compared inline and on the pool.

    python bench/pool_split_bench.py DATA_ROOT [--repeat 5] [--workers 2] [CODE_DIR]

Runs ``vc --fresh`` of DATA_ROOT inline (``PRECISION_TOOL_WORKERS=1``) and on a pool of
``--workers`` processes, alternating run by run (a shared machine's load drifts). Every process
of a run loads a ``sitecustomize`` from a temporary directory that wraps the engine's two entries
(``run_job``, a pool call; ``compare_job``, an inline job) and appends each call's CPU time and
task count to a file, and the tool's own process writes its CPU at exit. So each run splits into:
the comparison itself (per task), the tool's process (its imports, the plan, the rows it writes),
and the other processes (the fork server's preload, the resource tracker, the workers' CPU
outside their calls: pickles and the call queue). Also printed: minor page faults and
involuntary context switches of the whole tree (``os.wait4``).

The wrap costs a file append per call and nothing inside the comparison; the resource tracker,
which never compares, is left unwrapped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run_env, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import start_run, tool_env  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# Loaded at the start of every Python process of a run (PYTHONPATH): wraps the engine's entries
# where they are looked up (the pool pickles run_job by module and name, so the wrap keeps both).
SITECUSTOMIZE = """
import os, sys, time
_LOG = os.environ.get("POOL_SPLIT_LOG")
if _LOG and "resource_tracker" not in " ".join(getattr(sys, "orig_argv", sys.argv)):
    import atexit
    import precision_tool.compare.engine as _engine

    def _wrapped(name):
        original = getattr(_engine, name)

        def call(*args, **kwargs):
            start = time.process_time()
            result = original(*args, **kwargs)
            with open(_LOG, "a") as log:
                log.write(f"call {os.getpid()} {name} {time.process_time() - start:.6f} {len(args[0])}\\n")
            return result

        call.__name__ = call.__qualname__ = name
        call.__module__ = _engine.__name__
        return call

    for _name in ("run_job", "compare_job"):
        setattr(_engine, _name, _wrapped(_name))
    if getattr(sys, "orig_argv", [])[1:3] == ["-m", "precision_tool"]:  # the tool's own process
        atexit.register(lambda: open(_LOG, "a").write(f"tool {time.process_time():.6f}\\n"))
"""


def one_run(root: str, code: Path, workers: int, site: Path, log: Path, out: Path) -> dict:
    """One ``vc --fresh`` run and its split (seconds; faults and switches as counts)."""
    log.unlink(missing_ok=True)
    env = tool_env(code, PRECISION_TOOL_WORKERS=str(workers), POOL_SPLIT_LOG=str(log))
    env["PYTHONPATH"] = os.pathsep.join([str(site), env["PYTHONPATH"]])
    command = [sys.executable, "-m", "precision_tool", "--data", root, "vc", "--fresh", "-o", str(out)]
    start = time.perf_counter()
    proc = start_run(command, env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: ops flagged
        raise SystemExit(f"{' '.join(command)} ended with status {os.waitstatus_to_exitcode(status)}")
    calls, tool = [], 0.0
    for line in log.read_text().splitlines():
        kind, *rest = line.split()
        if kind == "tool":
            tool = float(rest[0])
        else:
            calls.append((rest[0], rest[1], float(rest[2]), int(rest[3])))
    pooled = {pid for pid, name, _, _ in calls if name == "run_job"}  # inside a pool call: counted once
    counted = [(cpu, tasks) for pid, name, cpu, tasks in calls if name == "run_job" or pid not in pooled]
    compare = sum(cpu for cpu, _ in counted)
    workers_compare = compare if pooled else 0.0
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "wall": wall,
        "cpu": cpu,
        "compare": compare,
        "tasks": sum(tasks for _, tasks in counted),
        "tool": tool - (0.0 if pooled else compare),  # the tool's process without the comparison
        "other": cpu - tool - workers_compare,
        "faults": usage.ru_minflt,
        "switches": usage.ru_nivcsw,
    }


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run both ways alternately, print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="a data root (e.g. bench/compare_bench.py --network mixed --gb 1.5 --keep DIR)")
    parser.add_argument("code", nargs="?", default=str(REPO), help="the code tree to run (default: this checkout)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each (default 5)")
    parser.add_argument("--workers", type=int, default=2, help="the pool's workers (default 2)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    args.root = os.path.abspath(args.root)  # the runs start in run_env.run_dir()
    work = Path(tempfile.mkdtemp(prefix="pool_split_"))
    (work / "site").mkdir()
    (work / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
    modes = {"inline": 1, f"pool of {args.workers}": args.workers}
    found: dict[str, list[dict]] = {mode: [] for mode in modes}
    print(f"load average at the start {os.getloadavg()[0]:.2f}")
    for _ in range(args.repeat):
        for mode, workers in modes.items():
            run = one_run(args.root, Path(args.code).resolve(), workers, work / "site", work / "log", work / "out")
            found[mode].append(run)
    for mode, runs in found.items():
        med = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(
            f"{mode}: wall {med['wall']:.3f} s, CPU {med['cpu']:.2f} s = comparison {med['compare']:.2f} s "
            f"({med['compare'] / med['tasks'] * 1e6:.0f} us a task) + the tool's process {med['tool']:.2f} s "
            f"+ other processes {med['other']:.2f} s; minor faults {med['faults']:.0f}, "
            f"involuntary switches {med['switches']:.0f}"
        )
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


INTRO = (
    "`bench/pool_split_bench.py`: a `vc --fresh` run inline and on the pool, alternately, its CPU split into "
    "the comparison itself, the tool's process and the other processes."
)

if __name__ == "__main__":
    sys.exit(
        run_writing(main, "pool_split_bench.py", "GE dumps: `vc` against msaccucmp on a held-out-like network", INTRO)
    )
