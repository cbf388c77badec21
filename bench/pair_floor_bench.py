"""What a worker spends on a compared pair beyond reading it and folding it, code trees side by side.

    python bench/pair_floor_bench.py DATA_ROOT [CODE_DIR ...] [--repeat 3] [--alg 0] [--phases]

On two cores a large run is bound by CPU, and most of it is the workers' (``cpu_split_bench.py``).
This bench splits a worker's CPU into what no arrangement of the per-pair Python could avoid and
everything else. Each tree plans the data root's first comparison and, in a fresh process set up
as a pool's worker is (the tool's heap, numba's kernels loaded), times three passes over the same
calls (each the size a pool of two workers sends), the least CPU of ``--repeat`` passes each:

- ``engine``: ``run_job`` on every call, as a worker runs it (rows, keys, notes and all);
- ``floor``: the same calls' pairs of an NPU dump tensor against a ``.npy`` golden, with only
  what any worker must do: each dump file read whole once and its header parsed (the tool's own
  parser), each golden read whole and its ``.npy`` header's dtype found, and numba's cosine
  kernel run over the two sides' elements as stored. No layout conversion (a blocked tensor is
  folded in device order, its padding cut off the end), no row, key, check or note: a lower
  bound, not a comparison, which is why its cosines are not printed;
- ``lean``: the floor's pairs with what a row of cosine cannot go without as well: the device
  tensor converted to its host layout by the tool's own conversion (``layouts.to_host``, with
  the conversion plans a worker keeps), the cosine from the kernel's sums, and the row's cells
  as text (index, name, tensor index, both dtypes, shape, the cosine to six decimals). Every
  pair is compared (no repeated pair is looked up, which the engine does), and there are no
  file identities, row keys, checks beyond the floor's, notes, or the engine's objects
  (sources, accumulator, rows). Its cosines are the engine's (a test holds it to that on the
  sample).

``engine / floor`` is how many times the essential work the worker's CPU is; the difference per
pair is the budget a leaner per-pair path could win (docs/performance.md), and ``lean`` says how
much of it a comparison in the fewest Python steps would still spend. Pairs of other kinds
(msprobe tensor files, two dump directories) are in the engine's pass and not in the others'.

``--phases`` profiles one more engine pass with cProfile and splits its CPU by phase (issue 28's
item 1): reading (files, dump and ``.npy`` headers), the row cache's keys and file identities,
layout conversion, the kernels and their wrappers, and the rest of the engine (metrics, notes,
rows, repeated pairs, streaming). Each function's own time goes to the phase of its file, a
built-in's to its callers' phases by the time they spent in it. The profiler slows Python
calls more than the C they call, so the shares are a profile's, not the pass's seconds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import add_root_and_trees, last_line, root_and_trees, start_run, tool_env  # noqa: E402

# Run as ``python -c WORK ROOT REPEAT ALG``; prints one JSON line.
WORK = r"""
import json, math, os, re, resource, sys, time
from pathlib import Path
import numpy as np
root, repeat, alg, phases = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] or None, sys.argv[4] == "1"
from precision_tool.compare import engine, jobs
from precision_tool.compare.golden_pairing import DumpSide, NpySide
from precision_tool.compare.load import DEFAULT_CHUNK
from precision_tool.compare.metrics import select_metrics
from precision_tool.compare.numba_line import claim_process
from precision_tool.compare.numba_load import kernel_operand, numba_kernels
from precision_tool.compare.plan import plan_comparisons
from precision_tool.compare.workspace import Workspace
from precision_tool.config import Config
from precision_tool.errors import PrecisionToolError
from precision_tool.formats.dump import dump_from_bytes
claim_process()  # the heap as the tool's own processes keep it
compiled = numba_kernels()  # numba loaded, as a pool's workers have it
if compiled is None:
    sys.exit("numba's kernels did not load: the floor is theirs")
try:
    comparisons = plan_comparisons(Workspace(Config(data_root_dir=root)))
except PrecisionToolError as exc:
    sys.exit(f"cannot plan the data root: {exc}")
if not comparisons:
    sys.exit("nothing to compare under the data root")
plan = jobs.plan_jobs(list(comparisons[0].tasks), select_metrics(alg), DEFAULT_CHUNK, True)
calls = [c for c in jobs.batch_jobs(plan.jobs, plan.sizes, jobs.pool_batch_bytes(plan, 2)) if isinstance(c, list)]
DESCR = re.compile(rb"'descr':\s*'([^']+)'")

def whole(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        return os.read(descriptor, os.fstat(descriptor).st_size)
    finally:
        os.close(descriptor)

def npy_values(raw):
    wide = raw[6] != 1  # format 2.0 and later: a 4-byte header length
    start = (12 + int.from_bytes(raw[8:12], "little")) if wide else (10 + int.from_bytes(raw[8:10], "little"))
    return np.frombuffer(raw, np.dtype(DESCR.search(raw[:start]).group(1).decode()), offset=start)

def engine_pass():
    for call in calls:
        engine.run_job(call, *plan.job_args)
    return sum(len(call) for call in calls)

# each pair of an NPU dump tensor against a .npy golden, as (task, tensor, its elements as
# stored): each dump file read whole once, its header parsed
def stored_pairs():
    path = None
    for call in calls:
        for task in call:
            left, right = task.left, task.right
            if not (task.comparable and isinstance(left, DumpSide) and isinstance(right, NpySide)):
                continue
            if left.path != path:
                path, raw = left.path, whole(left.path)
                dump, data = dump_from_bytes(path, raw), np.frombuffer(raw, np.uint8)
            tensor = (dump.inputs if left.kind == "input" else dump.outputs)[left.index]
            try:
                dtype = tensor.dtype
            except PrecisionToolError:
                continue  # a data type no array holds: the engine's row says so
            if dtype.itemsize == 0 or tensor.size % dtype.itemsize:
                continue  # packed sub-byte elements: not a kernel's operand as stored
            yield task, tensor, data[tensor.offset : tensor.offset + tensor.size].view(dtype)

def floor_pass():
    sums, pairs = np.zeros(8), 0
    for task, tensor, x in stored_pairs():
        y = npy_values(whole(task.right.path))
        n = min(x.size, y.size)
        xv, yv = kernel_operand(x[:n]), kernel_operand(y[:n])
        if xv is None or yv is None:
            continue
        compiled.cosine(xv, yv, sums)
        pairs += 1
    return pairs

from precision_tool.compare.load import CONVERSION_PLANS
from precision_tool.formats import layouts
LEAN_ROWS = []

def lean_pass():
    rows, sums = [], np.zeros(8)
    for task, tensor, stored in stored_pairs():
        origin = tensor.origin_format(task.left.origin_format)
        host = layouts.to_host(
            stored.reshape(tensor.shape), tensor.format, tensor.original_shape, origin,
            groups=max(tensor.sub_format, 1), plans=CONVERSION_PLANS,
        )
        y = npy_values(whole(task.right.path))
        x = host.reshape(-1)
        xv, yv = kernel_operand(x), kernel_operand(y)
        if xv is None or yv is None or x.size != y.size:
            continue
        compiled.cosine(xv, yv, sums)
        norms = math.sqrt(sums[1]) * math.sqrt(sums[2])
        cosine = min(sums[0] / norms, 1.0) if norms else math.nan
        cells = [str(task.index), task.npu_name, task.tensor_index, stored.dtype.name, y.dtype.name]
        cells += [str(list(host.shape)), "%.6f" % cosine]
        rows.append(cells)
    LEAN_ROWS[:] = rows
    return len(rows)

def least_cpu(work):
    work()  # the first pass: lazy imports, numba's signatures, the page cache
    best = float("inf")
    for _ in range(repeat):
        begin = time.process_time()
        count = work()
        best = min(best, time.process_time() - begin)
    return best, count

engine_cpu, tasks = least_cpu(engine_pass)
floor_cpu, pairs = least_cpu(floor_pass)
lean_cpu, lean_pairs = least_cpu(lean_pass)
# --phases: one more engine pass under cProfile, each function's own time put in the phase of
# the file it is in (the first that matches), a built-in's in its callers' phases
PHASES = (
    ("read", ("formats/golden.py", "formats/files.py", "formats/dump.py", "formats/dump_tensor.py",
              "compare/sides.py", "google/", "formats/npy_file.py", "formats/dtypes.py", "formats/shapes.py",
              "pathlib.py", "posixpath")),
    ("row keys", ("compare/row_keys.py", "formats/file_identity.py")),
    ("layout conversion", ("formats/layouts.py", "formats/conversion_plans.py", "formats/tile_copy.py",
                           "formats/blocked_formats.py")),
    ("kernels", ("compare/kernels_numba.py", "compare/kernels.py", "compare/numba_load.py",
                 "compare/stat_groups.py", "compare/scaled_sums.py")),
    ("metrics and rows", ("compare/", "dataclasses.py", "functools.py", "<string>", "numpy/")),
)

def phase_of(func):
    return next((name for name, parts in PHASES if any(part in func[0] for part in parts)), None)

def callers_phases(stats, func, depth=2):
    weights = {}
    for caller, figures in stats[func][4].items():
        phase = phase_of(caller) if caller[0] != "~" else None
        if phase is not None:
            weights[phase] = weights.get(phase, 0.0) + figures[3]
        elif depth > 1 and caller in stats:
            for name, weight in callers_phases(stats, caller, depth - 1).items():
                weights[name] = weights.get(name, 0.0) + weight
    return weights

def phase_split():
    import cProfile, pstats
    profile = cProfile.Profile()
    profile.enable()
    engine_pass()
    profile.disable()
    stats = pstats.Stats(profile).stats
    split = {name: 0.0 for name, _ in PHASES}
    split["other"] = 0.0
    for func, figures in stats.items():
        own, phase = figures[2], phase_of(func) if func[0] != "~" else None
        weights = {phase: 1.0} if phase else callers_phases(stats, func)
        total = sum(weights.values())
        if not total:
            split["other"] += own
            continue
        for name, weight in weights.items():
            split[name] += own * weight / total
    return split

compared = sum(1 for call in calls for task in call if task.comparable)
print(json.dumps(dict(
    phases=phase_split() if phases else None,
    engine=engine_cpu, floor=floor_cpu, tasks=tasks, compared=compared, floor_pairs=pairs,
    lean=lean_cpu, lean_pairs=lean_pairs, lean_cosines={row[2]: row[-1] for row in LEAN_ROWS},
    bytes=sum(plan.sizes.values()), peak_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
)))
"""


def measure(code: Path, root: str, repeat: int, alg: str, phases: bool = False) -> dict:
    """The figures of one tree: the JSON line ``python -c WORK`` prints (``phases``: with the
    engine's profile split by phase)."""
    run = start_run(
        [sys.executable, "-c", WORK, root, str(repeat), alg, "1" if phases else "0"],
        tool_env(code),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, errors = run.communicate()
    if run.returncode != 0:
        last = last_line(errors)
        raise SystemExit(f"{code} ended with status {run.returncode}: {last}")
    return json.loads(out.strip().splitlines()[-1])


def line(code: Path, figures: dict) -> str:
    """One tree's line: the three passes' CPU, per pair, the engine's against the floor and the
    lean pass, the peak RSS."""
    compared, pairs = max(figures["compared"], 1), max(figures["floor_pairs"], 1)
    engine_us, floor_us = figures["engine"] / compared * 1e6, figures["floor"] / pairs * 1e6
    lean_us = figures["lean"] / max(figures["lean_pairs"], 1) * 1e6
    return (
        f"{code}: engine {figures['engine']:.3f} CPU-s ({figures['compared']:,} compared of {figures['tasks']:,}, "
        f"{engine_us:.0f} us a pair), floor {figures['floor']:.3f} CPU-s ({figures['floor_pairs']:,} pairs, "
        f"{floor_us:.0f} us a pair), lean {figures['lean']:.3f} CPU-s ({figures['lean_pairs']:,} pairs, "
        f"{lean_us:.0f} us a pair); engine / floor {engine_us / floor_us:.2f}x, "
        f"{engine_us - floor_us:.0f} us a pair above it, {engine_us - lean_us:.0f} above lean; "
        f"{figures['bytes'] / 1e9:.2f} GB of files at "
        f"{figures['bytes'] / 1e6 / max(figures['engine'], 1e-9):,.0f} MB per engine CPU-s; "
        f"peak RSS {figures['peak_rss'] / 2**20:,.0f} MiB"
    )


def phase_line(code: Path, figures: dict) -> str:
    """One tree's engine pass under cProfile: each phase's share of the profiled CPU."""
    split = figures["phases"]
    total = sum(split.values()) or 1.0
    shares = ", ".join(f"{name} {seconds / total:.0%}" for name, seconds in split.items())
    return f"{code}: the engine under cProfile ({total:.3f} profiled CPU-s): {shares}"


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, measure each tree, print one line per tree."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_root_and_trees(parser, "a data root, e.g. a compare_bench --keep")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes of each kind (default 3)")
    parser.add_argument("--alg", default="", help="the engine's metrics, as vc's -alg (default all)")
    parser.add_argument(
        "--phases", action="store_true", help="also profile one engine pass and split it by phase (issue 28, item 1)"
    )
    add_write_flag(parser)
    args = parser.parse_args(argv)
    root, codes = root_and_trees(args)
    print(f"{root}, least CPU of {args.repeat} passes each" + (f", -alg {args.alg}" if args.alg else ""))
    for code in codes:
        figures = measure(code, root, args.repeat, args.alg, args.phases)
        print(line(code, figures))
        if args.phases:
            print(phase_line(code, figures))
    return 0


INTRO = (
    "`bench/pair_floor_bench.py`: a worker's CPU on a data root's calls in one process, against the "
    "floor of the same pairs (files read whole, dump headers parsed, one kernel pass) and a lean pass "
    "(the floor with the layout conversion, the cosine and a row of text): how much of a compared "
    "pair's cost is the per-pair Python around the essential work."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "pair_floor_bench.py", "A worker's CPU against its floor", INTRO))
