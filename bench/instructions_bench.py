"""Instructions a piece of a run executes, counted by valgrind's callgrind, code trees side by side.

    python bench/instructions_bench.py DATA_ROOT [CODE_DIR ...] [--what worker|graph|plan|run] [--times 8] [--alg 0]

The wall time of a run on a shared two-core machine moves by a quarter from one hour to the
next, more than most single changes save (docs/performance.md). The instructions a piece of
Python executes move by well under a percent from run to run, so a change of a few percent in
the tool's own Python shows. Each piece runs in a fresh interpreter under callgrind twice, set
up alike, doing its work 0 and ``--times`` times; the difference is the work's own count:

- ``graph``: the data root's Build graph loaded as a session loads it, from its cache (each
  tree under an output root of its own, its cache made by a plain run before the counted ones:
  trees sharing one root replaced each other's);
- ``plan``: the comparisons planned and every task of the first one paired (the graph from its
  cache, the golden index, the dump headers);
- ``worker``: ``run_job`` on the first calls of the first comparison (each the size a pool of
  two workers sends), with numpy's kernels: numba's compiled kernels are cached for the CPU,
  which valgrind presents as another, so they would be compiled again, differently, each run.
- ``run``: a whole one-shot ``vc --fresh`` (imports, graph, plan, the compare, its files), once:
  the fixed cost of a small run (issue 28, item 2), start-up included, which a shared machine's
  wall time cannot separate by tens of milliseconds. Only the tool's process is counted: a run
  that compares inline (below the pool's size, as a 10 MB network does) whole, a larger one
  without its fork server and workers (the tool's own share of a pooled run: its plan, the
  rows it takes back, its CSV and row cache). A plain run before it makes the graph's cache, so
  it counts a repeated run, as the other pieces do.

Instructions are not time (a memory-bound copy costs more per instruction than Python does),
so this measures the tool's own Python; ``cpu_split_bench.py`` measures the run. Needs
``valgrind`` (``apt-get install valgrind``); a run takes about half a minute a tree and piece.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import add_root_and_trees, last_line, root_and_trees, start_run, tool_env, tree_output_args  # noqa: E402

# Run as ``python -c WORK WHAT ROOT TIMES ALG [OUTPUT_ROOT]``: the set-up, then the work TIMES times.
WORK = r"""
import sys
from pathlib import Path
what, root, times, alg = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4] or None
output = Path(sys.argv[5]) if len(sys.argv) > 5 else None
if what == "run":  # a whole one-shot vc from the interpreter's start: done once, or not at all
    if times:
        from precision_tool import cli
        on = ["--out", str(output)] if output else []
        status = cli.main(["--data", str(root), *on, "vc", "--fresh", *(["-alg", alg] if alg else [])])
        if status not in (0, 1):  # 1: it ran and flagged ops
            sys.exit(f"vc ended with status {status}")
    sys.exit(0)
from precision_tool.compare.plan import plan_comparisons
from precision_tool.compare.workspace import Workspace
from precision_tool.config import Config
workspace = lambda: Workspace(Config(data_root_dir=root, output_root=output))
if what == "graph":
    if not workspace().models():
        sys.exit("no graph under the data root")
    for _ in range(times):
        workspace().models()
    sys.exit(0)
first = plan_comparisons(workspace())[0]
tasks = list(first.tasks)
if what == "plan":
    for _ in range(times):
        list(plan_comparisons(workspace())[0].tasks)
    sys.exit(0)
from precision_tool.compare import engine, jobs
from precision_tool.compare.load import DEFAULT_CHUNK
from precision_tool.compare.metrics import select_metrics
plan = jobs.plan_jobs(tasks, select_metrics(alg), DEFAULT_CHUNK, True)
calls = [c for c in jobs.batch_jobs(plan.jobs, plan.sizes, jobs.pool_batch_bytes(plan, 2)) if isinstance(c, list)]
engine.run_job(calls[-1], *plan.job_args)  # first reads, lazy imports: in both runs alike
for job in calls[:times]:
    engine.run_job(job, *plan.job_args)
"""


def instructions(code: Path, what: str, root: str, times: int, alg: str, output: Path, counted: bool = True) -> int:
    """The instructions ``python -c WORK`` of the tree ``code`` executes under callgrind, its
    output root ``output``; ``counted`` False: run plainly (a set-up run), 0 returned."""
    env = tool_env(code, PYTHONHASHSEED="0", PRECISION_TOOL_KERNELS="numpy")
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        under = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] if counted else []
        command = [*under, sys.executable, "-c", WORK, what, root, str(times), alg, str(output)]
        run = start_run(command, env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        _, errors = run.communicate()
        if run.returncode != 0:
            last = last_line(errors)
            how = " under callgrind" if counted else ""
            raise SystemExit(f"{what} of {code}{how} ended with status {run.returncode}: {last}")
        return callgrind_total(out.read_text(encoding="utf-8", errors="replace")) if counted else 0


def callgrind_total(text: str) -> int:
    """The instruction count a callgrind output file records (its ``totals:`` or ``summary:``)."""
    for key in ("totals:", "summary:"):
        for line in text.splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    raise SystemExit("callgrind wrote no totals")


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, count each tree's work, print one line per tree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_root_and_trees(parser, "a data root, e.g. a compare_bench --keep")
    parser.add_argument(
        "--what", choices=("graph", "plan", "worker", "run"), default="worker", help="the piece (default worker)"
    )
    parser.add_argument("--times", type=int, default=8, help="how many times the work is done (default 8)")
    parser.add_argument("--alg", default="", help="the worker's metrics, as vc's -alg (default all)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    args.root, codes = root_and_trees(args)
    if args.what == "run":
        args.times = 1  # a second run in the same process would be a warm one: not the fixed cost
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions_bench.py needs valgrind (apt-get install valgrind)")
    print(f"{args.what} of {args.root}, done {args.times} times" + (f", -alg {args.alg}" if args.alg else ""))
    first, scratch = None, Path(tempfile.mkdtemp(prefix="instructions_"))
    for code in codes:
        output = Path(tree_output_args(scratch, code)[1])
        # the set-up run makes the tree's graph cache; for "run" only a run itself does (else the
        # counted run would parse a cached-size graph, and fork the child that writes its cache)
        setup = args.times if args.what == "run" else 0
        instructions(code, args.what, args.root, setup, args.alg, output, counted=False)
        work = instructions(code, args.what, args.root, args.times, args.alg, output)
        work -= instructions(code, args.what, args.root, 0, args.alg, output)
        first = work if first is None else first
        print(
            f"{code}: {work / 1e6:,.1f} M instructions, {work / args.times / 1e6:,.2f} M each, {work / first:.3f} of the first"
        )
    return 0


INTRO = (
    "`bench/instructions_bench.py`: the instructions a piece of a run (the graph loaded from its cache, the "
    "plan, the worker's calls, a whole small run) executes under valgrind's callgrind, code trees side by side: a "
    "measure of the tool's own Python that a shared machine's drift does not move."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "instructions_bench.py", "Instructions of a piece of a run", INTRO))
