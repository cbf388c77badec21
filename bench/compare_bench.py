"""Benchmark ``vc`` against msaccucmp and the raw read rate, warm and cold, on the same data.

    python bench/compare_bench.py [--gb 1.5] [--network uniform|mixed] [--workers N] [--repeat 3]
                                  [--keep DIR] [--baseline CODE_DIR] [--no-cold] [--naive]

Generates (deterministically, with the project's writers) a synthetic ``precision_data`` of about
``--gb`` GB: a chain of ops, each dumping a float16 input and output of 8x64x64x128 (8 MiB each;
outputs in NC1HWC0, every third in FRACTAL_NZ as 512x64x128) against float32 NHWC golden ``.npy`` (16 MiB); every
sixth op is a Conv2D with a FRACTAL_Z weight (HWCN golden). ``--network mixed`` writes a
held-out-like network instead (:mod:`ge_network`: padded NC1HWC0 convolutions, FRACTAL_NZ
attention, many small tensors beside mid-size ones). The Build graph is written as text
and as atc JSON (msaccucmp reads the JSON). Then it measures, each run a subprocess of the real
command line (``python -m precision_tool --data ROOT vc [-alg 0]``, process start included):

* ``raw read``: every file read once into a reused buffer and summed with numpy (the limit);
* ``vc all`` / ``vc -alg 0``: all ten metrics / cosine only, ``--repeat`` times;
* ``msaccucmp all`` / ``msaccucmp -alg 0``: Huawei's msaccucmp on the same files, when
  ``MSACCUCMP_DIR`` (its source directory) and ``MSACCUCMP_PYTHON`` (an interpreter with its
  dependencies) are set; the runner is ``$MSACCUCMP_RUNNER`` or
  ``../shared/tools/msaccucmp/run_msaccucmp.py``. Without them it says so and prints no ratio;
* ``--baseline DIR``: ``vc`` of another checkout (e.g. the main branch) on the same data, to show
  the change;
* ``--naive``: whole tensors, float64, one numpy expression per metric, serially.

Warm runs have every file in the page cache (read before). Cold runs first evict the data
files from the page cache (fsync + ``POSIX_FADV_DONTNEED`` per file: no root needed, nothing
else on the machine is touched); Python, numpy and the compiled kernels stay cached, as they
would for a user. Rates are GB/s of the data set (every dump and golden file counted once);
``% raw`` is the raw read time over the run's time. Peak RSS is the sum over the run's process
tree (workers included), sampled every 20 ms from /proc, and so is PSS (shared pages divided
among the processes: the tree's real footprint). Ours and the baseline alternate run by run,
since the load of a shared machine drifts; times are min / median / max over the repeats; ratios
use medians. No numbers are asserted.
"""

from __future__ import annotations

import argparse
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from generated import clear_generated  # noqa: E402
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import tool_env, tree_output_args  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RUN, MODEL = "20260101000000", "ge_default_20260101000000_1"
HOST_SHAPE = (8, 64, 64, 128)  # NHWC; C = 8 x C0, so NC1HWC0 has no padding
WEIGHT_SHAPE = (3, 3, 128, 128)  # HWCN
TYPES = ("Conv2D", "Relu", "MatMul", "Mul", "BiasAdd", "Sigmoid")
NZ_SHAPE = (8 * 64, 64, 128)  # FRACTAL_NZ tensors are 3-D (msaccucmp flattens the batch dims)
LAYOUT_VERSION = "mix-3"  # changes when generate() writes something else
STEP_DIR = Path("npu/debug_0/dump") / RUN / "0" / MODEL / "1" / "0"
GRAPH = Path("npu/debug_0/graph/ge_proto_00000001_Build.txt")


# --- data ------------------------------------------------------------------------------------


def _op_bytes() -> int:
    n = math.prod(HOST_SHAPE)
    return n * 2 * 2 + n * 4  # dump: fp16 input + output; golden: fp32


def _output_format(i: int) -> str:
    return "FRACTAL_NZ" if i % 3 == 2 else "NC1HWC0"


def _host(fmt: str) -> tuple[tuple[int, ...], str]:
    """The host shape and layout a tensor of ``fmt`` has in the data set."""
    return (NZ_SHAPE, "ND") if fmt == "FRACTAL_NZ" else (HOST_SHAPE, "NHWC")


def _desc(name: str, fmt: str, device_shape, host_shape=None, origin=None):
    from precision_tool.formats.graph_write import tensor_desc

    if host_shape is None:
        host_shape, origin = _host(fmt)
    return tensor_desc(
        "DT_FLOAT16",
        fmt,
        device_shape,
        origin_format=origin,
        origin_shape=host_shape,
        origin_name=name,
        origin_output_index=0,
    )


def generate(root: Path, gb: float) -> int:
    """Write the synthetic data set under ``root``; returns the number of compute ops."""
    from precision_tool.formats.dump_write import TensorSpec, write_dump
    from precision_tool.formats.golden import write_golden
    from precision_tool.formats.graph_write import OpSpec, build_model, write_graph_json, write_graph_text
    from precision_tool.formats.layouts import to_device

    ops = max(2, round(gb * 1e9 / _op_bytes()))
    rng = np.random.default_rng(2026)
    golden_dir = root / "tf/dump"
    golden = rng.standard_normal(HOST_SHAPE, dtype=np.float32)
    write_golden(golden_dir, "input", 0, 1767200000000000, golden)
    prev_fmt, prev = "NC1HWC0", "input"
    npu_prev = to_device(golden.astype(np.float16), prev_fmt, "NHWC")
    specs = [OpSpec("input", "Data", output_descs=[_desc("input", prev_fmt, npu_prev.shape)])]
    for i in range(ops):
        name, op_type, fmt = f"net/block{i}/op", TYPES[i % len(TYPES)], _output_format(i)
        golden = np.tanh(golden * 1.5 + rng.standard_normal(HOST_SHAPE, dtype=np.float32) * 0.3)
        noise = 0.02 if i % 7 else 0.5  # every 7th op drifts more: some rows get flagged
        npu = (golden + noise * rng.standard_normal(HOST_SHAPE, dtype=np.float32)).astype(np.float16)
        shape, layout = _host(fmt)
        device = to_device(npu.reshape(shape), fmt, layout)
        write_golden(golden_dir, name, 0, 1767200000000000 + 100 * (i + 1), golden.reshape(shape))
        inputs = [TensorSpec(npu_prev, "FLOAT16", prev_fmt, _host(prev_fmt)[0])]
        input_names, input_descs = [f"{prev}:0"], [_desc(prev, prev_fmt, npu_prev.shape)]
        if op_type == "Conv2D":
            kernel = f"net/block{i}/kernel"
            weight = rng.standard_normal(WEIGHT_SHAPE, dtype=np.float32) * 0.05
            write_golden(golden_dir, kernel, 0, 1767100000000000 + i, weight)
            wdev = to_device(weight.astype(np.float16), "FRACTAL_Z", "HWCN")
            inputs.append(TensorSpec(wdev, "FLOAT16", "FRACTAL_Z", WEIGHT_SHAPE))
            wdesc = _desc(kernel, "FRACTAL_Z", wdev.shape, WEIGHT_SHAPE, "HWCN")
            specs.append(OpSpec(kernel, "Const", output_descs=[wdesc]))
            input_names.append(f"{kernel}:0")
            input_descs.append(wdesc)
        stamp = 1767300000000000 + 37 * i
        write_dump(
            root / STEP_DIR / f"{op_type}.{name.replace('/', '_')}.{10 + i}.0.{stamp}",
            name,
            inputs,
            [TensorSpec(device, "FLOAT16", fmt, shape, (name, 0, layout))],
            dump_time=stamp,
        )
        specs.append(
            OpSpec(name, op_type, input_names, input_descs, [_desc(name, fmt, device.shape)], original_op_names=[name])
        )
        npu_prev, prev, prev_fmt = device, name, fmt
    (root / GRAPH).parent.mkdir(parents=True, exist_ok=True)
    model = build_model(specs, name=MODEL)
    write_graph_text(model, root / GRAPH)
    write_graph_json(model, root / GRAPH.with_name(GRAPH.name + ".json"))
    return ops


def data_files(root: Path) -> list[Path]:
    """Every dump and golden file of the data set."""
    parts = ("npu/debug_0/dump", "tf/dump")
    return sorted(p for part in parts for p in (root / part).rglob("*") if p.is_file())


def evict(files: list[Path]) -> None:
    """Drop the files' pages from the page cache (they are clean once fsync'ed)."""
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def raw_read(files: list[Path]) -> float:
    """Seconds to read every file once into a reused buffer and sum it with numpy."""
    buffer = np.empty(max(p.stat().st_size for p in files) + 8, np.uint8)
    start = time.perf_counter()
    for path in files:
        size = path.stat().st_size
        view = buffer[:size]
        with open(path, "rb", buffering=0) as handle:
            handle.readinto(memoryview(view))
        int(view[: size - size % 8].view(np.uint64).sum())
    return time.perf_counter() - start


# --- the naive baseline (a subprocess) -------------------------------------------------------


def _naive_metrics(x: np.ndarray, y: np.ndarray) -> None:
    eps = np.finfo(np.float64).eps
    diff = x - y
    mask = np.abs(y) > eps
    rel = np.where(mask, np.abs(np.divide(x, y, out=np.zeros_like(x), where=mask) - 1), 0.0)
    p = np.maximum((x - x.min()) / (x.max() - x.min()), np.finfo(np.float32).eps)
    q = np.maximum((y - y.min()) / (y.max() - y.min()), np.finfo(np.float32).eps)
    p, q = p / p.sum(), q / q.sum()
    _ = (
        np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)),
        np.max(np.abs(diff)),
        np.sum(rel),
        np.sqrt(np.sum(diff**2) / np.sum(y**2)),
        np.sum(p * np.log(p / q)),
        np.mean(x),
        np.std(x),
        np.mean(y),
        np.std(y),
        np.mean(np.abs(diff)),
        np.sqrt(np.mean(diff**2)),
        np.max(rel),
        np.mean(rel),
    )


def run_naive(root: Path) -> None:
    """Whole tensors, float64, one numpy expression per metric, serially."""
    from precision_tool import read_dump, read_golden, read_graph
    from precision_tool.compare.golden_pairing import pair_with_graph
    from precision_tool.formats.tree import DumpTree

    graph = read_graph(root / GRAPH).graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    (step,) = tree.select()
    for task in (t for t in pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump")) if t.comparable):
        dump = read_dump(task.left.path)
        tensor = (dump.inputs if task.left.kind == "input" else dump.outputs)[task.left.index]
        x = tensor.host(task.left.origin_format).astype(np.float64).ravel()
        y = np.load(task.right.path).astype(np.float64).ravel()
        _naive_metrics(x, y)


# --- measuring subprocesses ------------------------------------------------------------------


def _tree_memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) bytes of ``pid`` and all its descendants now.

    RSS counts a page shared by several processes (numba's LLVM, numpy, forked workers' common
    pages) once in each; PSS divides it among them, so its sum is the tree's real footprint.
    """
    rss = pss = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            rss += int(fields["VmRSS"].split()[0]) * 1024
            with open(f"/proc/{current}/smaps_rollup") as handle:
                pss += sum(int(line.split()[1]) * 1024 for line in handle if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo += [int(c) for c in handle.read().split()]
        except (OSError, KeyError, ValueError):
            continue
    return rss, pss


def measure(command: list[str], cwd: Path, env: dict, ok=(0,), every: float | None = 0.02) -> dict:
    """Run ``command``; its wall time and, unless ``every`` is None, the peak RSS and PSS of its
    process tree, sampled every ``every`` seconds (0 when not sampled).

    ``ru_maxrss`` of RUSAGE_CHILDREN is no use here: Linux carries the forking parent's RSS into
    it, and it is the largest single process, not the tree. So /proc is sampled instead. Reading
    every process's smaps_rollup 50 times a second takes CPU the measured run would use (on 2
    cores, `vc`'s two workers had 10-20% less): so time and memory come from separate runs of
    ``vc`` (see :func:`_measure_all`), and msaccucmp, whose runs last minutes, is sampled every
    0.5 s.
    """
    peak, done = [0, 0], threading.Event()
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sample() -> None:
        while not done.wait(every):
            rss, pss = _tree_memory(proc.pid)
            peak[0], peak[1] = max(peak[0], rss), max(peak[1], pss)

    watcher = threading.Thread(target=sample, daemon=True) if every is not None else None
    if watcher is not None:
        watcher.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    done.set()
    if watcher is not None:
        watcher.join()
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(command)} failed with status {proc.returncode}:\n{err[-2000:]}")
    return {"seconds": seconds, "rss": peak[0], "pss": peak[1], "stdout": out}


def with_memory(runs: list[dict], sampled: dict) -> list[dict]:
    """Timed (unsampled) runs given the peak memory of a sampled run of the same command."""
    return [dict(r, rss=sampled["rss"], pss=sampled["pss"]) for r in runs]


def _vc_command(root: Path, alg: str, out: Path, code: Path = REPO) -> list[str]:
    own_root = tree_output_args(out.parent, code)  # the tree's own graph cache
    command = [sys.executable, "-m", "precision_tool", "--data", str(root), *own_root, "vc", "-o", str(out)]
    if "--fresh" in (code / "precision_tool" / "commands" / "vc.py").read_text(encoding="utf-8"):
        command.append("--fresh")  # every run computes every row: reused rows are not the speed
    return command + ([] if alg == "all" else ["-alg", alg])


class Msaccucmp:
    """Huawei's msaccucmp through the runner of ../shared/tools/msaccucmp, when configured."""

    def __init__(self, enabled: bool = True) -> None:
        self.source = os.environ.get("MSACCUCMP_DIR", "")
        self.python = os.environ.get("MSACCUCMP_PYTHON", "")
        runner = os.environ.get("MSACCUCMP_RUNNER") or REPO.parent / "shared/tools/msaccucmp/run_msaccucmp.py"
        self.runner = Path(runner)
        checks = (
            ("MSACCUCMP_DIR", self.source and Path(self.source).is_dir()),
            ("MSACCUCMP_PYTHON", self.python and Path(self.python).exists()),
            (f"the runner {self.runner}", self.runner.is_file()),
        )
        missing = [what + " not set or not found" for what, ok in checks if not ok]
        self.why_not = ", ".join(missing) if enabled else "--no-msaccucmp given"

    @property
    def available(self) -> bool:
        return not self.why_not

    def run(self, root: Path, alg: str, out: Path) -> dict:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        command = [
            self.python,
            str(self.runner),
            "compare",
            "-m",
            str(root / STEP_DIR),
            "-g",
            str(root / "tf/dump"),
            "-f",
            str(root / GRAPH.with_name(GRAPH.name + ".json")),
            "-out",
            str(out),
        ] + ([] if alg == "all" else ["-alg", alg])
        env = {**os.environ, "MSACCUCMP_DIR": self.source}
        result = measure(command, Path(self.source), env, ok=(0, 2), every=0.5)  # 2: some ops have no dump
        if not list(out.glob("*.csv")):
            raise SystemExit(f"msaccucmp wrote no CSV in {out}")
        return result


# --- the run ---------------------------------------------------------------------------------


def _stats(runs: list[dict]) -> dict:
    seconds = sorted(r["seconds"] for r in runs)
    return {
        "min": seconds[0],
        "median": statistics.median(seconds),
        "max": seconds[-1],
        "rss": max(r["rss"] for r in runs),
        "pss": max(r.get("pss", 0) for r in runs),
        "n": len(runs),
    }


def _repeat(fn, times: int, before=None, label: str = "") -> dict:
    runs = []
    for _ in range(times):
        if before is not None:
            before()
        runs.append(fn())
    if label:  # progress on stderr: the table comes at the end
        print(f"  {label}: {', '.join('%.2f s' % r['seconds'] for r in runs)}", file=sys.stderr, flush=True)
    return _stats(runs)


def _agreement(ours_dir: Path, theirs_dir: Path) -> str:
    """Largest cosine difference between our CSV and msaccucmp's, over the rows both compared."""
    sys.path.insert(0, str(REPO))
    from precision_tool.compare.result_read import read_result_csv

    ours = {r.tensor_index: r for r in read_result_csv(next(ours_dir.rglob("*.csv"))) if r.compared}
    theirs = {r.tensor_index: r for r in read_result_csv(next(theirs_dir.glob("*.csv"))) if r.compared}
    common = sorted(set(ours) & set(theirs))
    worst = max((abs(ours[k].cosine - theirs[k].cosine) for k in common), default=math.nan)
    text = f"{len(common)} tensors in both, {len(ours)} ours, {len(theirs)} msaccucmp's; max |cosine diff| {worst:.2e}"
    # the tests' rule: within 1e-5 relative, or within one unit of the printed 6th decimal
    worst: dict[str, float] = {}
    for key in common:
        for name, theirs_value in theirs[key].metrics.items():
            mine = ours[key].metrics.get(name, math.nan)
            if math.isfinite(theirs_value) and math.isfinite(mine):
                share = abs(mine - theirs_value) / max(1e-5 * abs(theirs_value), 1e-6)
                worst[name] = max(worst.get(name, 0.0), share)
    std = sum(ours[k].std_text != theirs[k].std_text for k in common)
    listed = ", ".join(f"{name} {value:.2f}" for name, value in worst.items())
    return (
        f"{text}\n  largest difference per metric, in units of max(1e-5 relative, 1e-6): {listed}"
        f"\n  StandardDeviation texts that differ: {std}"
    )


def bench(args) -> int:
    """Generate (or reuse) the data set, then measure and print the table."""
    sys.path.insert(0, str(REPO))
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vc_bench_")) / "precision_data"
    scratch = Path(tempfile.mkdtemp(prefix="vc_bench_out_"))
    try:
        _prepare(root, args.gb, args.network)
        files = data_files(root)
        data_bytes = sum(p.stat().st_size for p in files)
        ms = Msaccucmp(enabled=args.msaccucmp)
        print(
            f"data set: {len(files)} files, {data_bytes / 1e9:.3f} GB under {root}; {args.workers} worker(s), "
            f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}"
        )
        print(f"msaccucmp: {'available' if ms.available else 'NOT AVAILABLE: ' + ms.why_not}")
        rows = _measure_all(args, root, files, ms, scratch)
        _print_table(rows, data_bytes)
        if ms.available:
            print("agreement with msaccucmp (all metrics):", _agreement(scratch / "vc_all", scratch / "ms_all"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
    return 0


def _prepare(root: Path, gb: float, network: str = "uniform") -> None:
    marker = root / "bench.json"
    wanted = {"gb": gb, "shape": list(HOST_SHAPE), "layout": LAYOUT_VERSION}
    if network != "uniform":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import ge_network

        wanted = {"gb": gb, "network": network, "layout": ge_network.VERSION}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return
    clear_generated(root, "bench.json")
    start = time.perf_counter()
    if network == "uniform":
        ops = generate(root, gb)
    else:
        ops = ge_network.generate(root, gb, STEP_DIR, root / GRAPH, MODEL)
    marker.write_text(json.dumps(wanted))
    print(f"generated {ops} ops in {time.perf_counter() - start:.1f} s")


def _measure_all(args, root: Path, files: list[Path], ms: Msaccucmp, scratch: Path) -> list[tuple]:
    warm = lambda: raw_read(files)  # noqa: E731 -- also what puts every file in the cache
    cold_before = (lambda: evict(files)) if args.cold else None
    raw_warm = [warm() for _ in range(3)][1:]
    rows = [("raw read", "warm", _stats([{"seconds": s, "rss": 0} for s in raw_warm]))]
    if args.cold:
        rows.append(("raw read", "cold", _repeat(lambda: {"seconds": raw_read(files), "rss": 0}, 2, cold_before)))
    codes = [("vc", REPO)] + ([("baseline vc", Path(args.baseline).resolve())] if args.baseline else [])
    for alg in ("all", "0"):
        for cache in ("warm", "cold") if args.cold else ("warm",):
            runs = {label: [] for label, _ in codes}
            memory = {}
            for _ in range(args.repeat):  # ours and the baseline alternate: the load drifts
                for label, code in codes:
                    out = scratch / f"{'vc' if label == 'vc' else 'base'}_{alg}"
                    command = _vc_command(root, alg, out, code)
                    env = tool_env(code, scratch / "pycache", PRECISION_TOOL_WORKERS=str(args.workers))
                    if label not in memory:  # the memory run (sampled, not timed); warms the caches
                        memory[label] = measure(command, root.parent, env, ok=(0, 1))
                    if cache == "cold":
                        evict(files)
                    runs[label].append(measure(command, root.parent, env, ok=(0, 1), every=None))
            for label, _ in codes:
                name = f"{label} {'all' if alg == 'all' else '-alg 0'}"
                print(
                    f"  {name} {cache}: {', '.join('%.2f s' % r['seconds'] for r in runs[label])}",
                    file=sys.stderr,
                    flush=True,
                )
                rows.append((name, cache, _stats(with_memory(runs[label], memory[label]))))
    if ms.available:
        for alg in ("all", "0"):
            name = f"msaccucmp {'all' if alg == 'all' else '-alg 0'}"
            warm()
            rows.append(
                (
                    name,
                    "warm",
                    _repeat(
                        lambda alg=alg: ms.run(root, alg, scratch / f"ms_{alg}"), args.ms_repeat, label=f"{name} warm"
                    ),
                )
            )
            if args.cold and args.ms_cold:
                rows.append(
                    (
                        name,
                        "cold",
                        _repeat(
                            lambda alg=alg: ms.run(root, alg, scratch / f"ms_{alg}"), 1, cold_before, f"{name} cold"
                        ),
                    )
                )
    if args.naive:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        script = [sys.executable, str(Path(__file__).resolve()), "--run-naive", str(root)]
        warm()
        rows.append(("naive numpy", "warm", _repeat(lambda: measure(script, REPO, env), 1)))
    return rows


def _print_table(rows: list[tuple], data_bytes: int) -> None:
    lookup = {(name, cache): stats for name, cache, stats in rows}
    print(
        f"\n{'run':<22}{'cache':<6}{'s (min/med/max)':>24}{'GB/s':>8}{'% raw':>8}{'x msaccucmp':>13}"
        f"{'peak RSS':>11}{'peak PSS':>11}"
    )
    for name, cache, s in rows:
        raw = lookup.get(("raw read", cache))
        theirs = _msaccucmp_for(name, cache, lookup)
        ratio = f"{theirs['median'] / s['median']:.1f}x" if theirs and not name.startswith("msaccucmp") else ""
        share = f"{raw['median'] / s['median']:.0%}" if raw and name != "raw read" else ""
        rss = f"{s['rss'] / 2**20:.0f} MiB" if s["rss"] else ""
        pss = f"{s['pss'] / 2**20:.0f} MiB" if s.get("pss") else ""
        times = f"{s['min']:.2f}/{s['median']:.2f}/{s['max']:.2f}" if s["n"] > 1 else f"{s['min']:.2f}"
        print(
            f"{name:<22}{cache:<6}{times:>24}{data_bytes / s['median'] / 1e9:>8.2f}{share:>8}{ratio:>13}"
            f"{rss:>11}{pss:>11}"
        )


def _msaccucmp_for(name: str, cache: str, lookup: dict) -> dict | None:
    """msaccucmp's run with the same metrics (warm; cold when it was run cold)."""
    if name == "raw read" or name.startswith("naive"):
        return lookup.get(("msaccucmp all", "warm"))
    alg = "-alg 0" if name.endswith("-alg 0") else "all"
    return lookup.get((f"msaccucmp {alg}", cache)) or lookup.get((f"msaccucmp {alg}", "warm"))


def main(argv: list[str] | None = None) -> int:
    """Parse the flags; run the benchmark, or the naive baseline when called as a subprocess."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_write_flag(parser)
    parser.add_argument("--gb", type=float, default=1.5, help="data set size in GB (default 1.5)")
    parser.add_argument(
        "--network",
        choices=("uniform", "mixed"),
        default="uniform",
        help="uniform: the bench's chain of 8 MiB tensors (default); mixed: a "
        "held-out-like network (bench/ge_network.py)",
    )
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="vc worker processes")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each vc measurement (default 3)")
    parser.add_argument("--ms-repeat", type=int, default=1, help="runs of each msaccucmp measurement (default 1)")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (reused when present)")
    parser.add_argument("--baseline", metavar="CODE_DIR", help="also measure vc of this checkout (e.g. ../main)")
    parser.add_argument("--no-cold", dest="cold", action="store_false", help="skip the cold-cache runs")
    parser.add_argument("--ms-cold", action="store_true", help="also run msaccucmp cold (slow)")
    parser.add_argument(
        "--no-msaccucmp", dest="msaccucmp", action="store_false", help="skip msaccucmp even when it is available"
    )
    parser.add_argument("--naive", action="store_true", help="also run the naive numpy baseline")
    parser.add_argument("--run-naive", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_naive:
        sys.path.insert(0, str(REPO))
        run_naive(Path(args.run_naive))
        return 0
    return bench(args)


SECTION = "Compare kernels: vc and cp"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = (
    "`bench/compare_bench.py` times `vc` (numba kernels and numpy) against Huawei's msaccucmp"
    " and the raw read rate, warm and cold; `bench/cp_bench.py` times `cp`'s element-wise "
    "pass against a tight numpy loop."
)


if __name__ == "__main__":
    sys.exit(run_writing(main, "compare_bench.py", SECTION, INTRO))
