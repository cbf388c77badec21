"""Benchmark ``vc``: throughput and peak memory against a naive baseline and the raw read rate.

    python bench/compare_bench.py [--gb 2] [--workers N] [--keep DIR]

Generates (deterministically, with the project's writers) a synthetic ``precision_data`` of about
``--gb`` GB: a chain of ops, each dumping a float16 NC1HWC0 input and output of 8x64x64x128
(8 MiB each) against float32 NHWC golden ``.npy`` (16 MiB), with a Build graph. Then, on a warm
page cache, it prints:

* ``raw``: every file read once and summed with numpy, serially (the physical limit);
* ``vc all``: ``vc`` with all ten metrics, through the real command (pairing, workers, CSV);
* ``vc -alg 0``: cosine only;
* ``naive``: load both tensors whole, convert to float64, one numpy expression per metric,
  serially, as a straightforward script would.

Rates are GB/s of the data set (every dump and golden file counted once) and GB/s of the pairs
compared (both sides' file bytes of every tensor pair, as ``vc``'s progress counts them: a
chain's golden output is also the next op's input, so each golden file is compared twice).
Each measured run is a subprocess; its peak RSS is the sum over its process tree (workers
included), sampled every 20 ms from /proc, with the sum of every process's own peak (VmHWM) as an
upper bound. No numbers are asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from precision_tool.formats.dump_write import TensorSpec, write_dump  # noqa: E402
from precision_tool.formats.golden import write_golden  # noqa: E402
from precision_tool.formats.graph_write import (  # noqa: E402
    OpSpec,
    build_model,
    tensor_desc,
    write_graph_text,
)
from precision_tool.formats.layouts import to_device  # noqa: E402

RUN, MODEL = "20260101000000", "ge_default_20260101000000_1"
HOST_SHAPE = (8, 64, 64, 128)  # NHWC; C = 8 x C0, so NC1HWC0 has no padding
TYPES = ("Conv2D", "Relu", "Add", "Mul", "BiasAdd", "Sigmoid")
GIB = 1 << 30


# --- data ------------------------------------------------------------------------------------

def _op_bytes() -> int:
    n = math.prod(HOST_SHAPE)
    return n * 2 * 2 + n * 4  # dump: fp16 input + output; golden: fp32


def _desc(name: str, device_shape) -> object:
    return tensor_desc("DT_FLOAT16", "NC1HWC0", device_shape, origin_format="NHWC",
                       origin_shape=HOST_SHAPE, origin_name=name, origin_output_index=0)


def generate(root: Path, gb: float) -> int:
    """Write the synthetic data set under ``root``; returns the number of compute ops."""
    ops = max(2, round(gb * 1e9 / _op_bytes()))
    rng = np.random.default_rng(2026)
    step_dir = root / "npu/debug_0/dump" / RUN / "0" / MODEL / "1" / "0"
    golden_dir = root / "tf/dump"
    golden = rng.standard_normal(HOST_SHAPE, dtype=np.float32)
    write_golden(golden_dir, "input", 0, 1767200000000000, golden)
    npu_prev = to_device(golden.astype(np.float16), "NC1HWC0", "NHWC")
    specs = [OpSpec("input", "Data", output_descs=[_desc("input", npu_prev.shape)])]
    prev = "input"
    for i in range(ops):
        name, op_type = f"net/block{i}/op", TYPES[i % len(TYPES)]
        golden = np.tanh(golden * 1.5 + rng.standard_normal(HOST_SHAPE, dtype=np.float32) * 0.3)
        noise = 0.02 if i % 7 else 0.5  # every 7th op drifts more: some rows get flagged
        npu = (golden + noise * rng.standard_normal(HOST_SHAPE, dtype=np.float32)).astype(np.float16)
        device = to_device(npu, "NC1HWC0", "NHWC")
        write_golden(golden_dir, name, 0, 1767200000000000 + 100 * (i + 1), golden)
        stamp = 1767300000000000 + 37 * i
        write_dump(step_dir / f"{op_type}.{name.replace('/', '_')}.{10 + i}.0.{stamp}", name,
                   [TensorSpec(npu_prev, "FLOAT16", "NC1HWC0", HOST_SHAPE)],
                   [TensorSpec(device, "FLOAT16", "NC1HWC0", HOST_SHAPE, (name, 0, "NHWC"))], dump_time=stamp)
        specs.append(OpSpec(name, op_type, [f"{prev}:0"], [_desc(prev, npu_prev.shape)],
                            [_desc(name, device.shape)], original_op_names=[name]))
        npu_prev, prev = device, name
    graph_dir = root / "npu/debug_0/graph"
    graph_dir.mkdir(parents=True, exist_ok=True)
    write_graph_text(build_model(specs, name=MODEL), graph_dir / "ge_proto_00000001_Build.txt")
    return ops


def data_files(root: Path) -> list[Path]:
    """Every dump and golden file of the data set."""
    parts = ("npu/debug_0/dump", "tf/dump")
    return sorted(p for part in parts for p in (root / part).rglob("*") if p.is_file())


# --- what the subprocesses run ---------------------------------------------------------------

def compared_bytes(root: Path) -> int:
    """Both sides' file bytes of the tensor pairs vc compares (what its progress counts)."""
    from precision_tool import read_dump, read_golden, read_graph
    from precision_tool.compare.pairing import pair_with_graph
    from precision_tool.formats.tree import DumpTree

    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    step, = tree.select()
    total = 0
    for task in pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump")):
        if task.comparable:
            dump = read_dump(task.left.path)
            tensors = dump.inputs if task.left.kind == "input" else dump.outputs
            total += tensors[task.left.index].size + task.right.path.stat().st_size
    return total


def run_vc(root: Path, alg: str, workers: int) -> dict:
    """``vc`` through the real command path; returns its wall time and status."""
    from precision_tool.commands.vc import vector_compare
    from precision_tool.config import load_config
    from precision_tool.context import Context
    from precision_tool.render.theme import make_console

    config = load_config({"DATA_ROOT_DIR": root, "WORKERS": workers}, environ={}, cwd=root.parent)
    context = Context(config, make_console(file=open(os.devnull, "w")))
    start = time.perf_counter()
    result = vector_compare(context, algorithms=alg, output=str(root / "temp/bench"), show_progress=False)
    return {"seconds": time.perf_counter() - start, "status": int(result.status)}


def _naive_metrics(x: np.ndarray, y: np.ndarray) -> dict:
    eps = np.finfo(np.float64).eps
    diff = x - y
    mask = np.abs(y) > eps
    rel = np.where(mask, np.abs(np.divide(x, y, out=np.zeros_like(x), where=mask) - 1), 0.0)
    p = np.maximum((x - x.min()) / (x.max() - x.min()), np.finfo(np.float32).eps)
    q = np.maximum((y - y.min()) / (y.max() - y.min()), np.finfo(np.float32).eps)
    p, q = p / p.sum(), q / q.sum()
    return {
        "cos": float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))),
        "max_abs": float(np.max(np.abs(diff))),
        "acc_rel": float(np.sum(rel)),
        "red": float(np.sqrt(np.sum(diff ** 2) / np.sum(y ** 2))),
        "kl": float(np.sum(p * np.log(p / q))),
        "std": (float(np.mean(x)), float(np.std(x)), float(np.mean(y)), float(np.std(y))),
        "mae": float(np.mean(np.abs(diff))),
        "rmse": float(np.sqrt(np.mean(diff ** 2))),
        "max_rel": float(np.max(rel)),
        "mean_rel": float(np.mean(rel)),
    }


def run_naive(root: Path) -> dict:
    """The baseline: whole tensors, float64, one numpy expression per metric, serially."""
    from precision_tool import read_dump, read_golden, read_graph
    from precision_tool.compare.pairing import DumpSide, pair_with_graph
    from precision_tool.formats.tree import DumpTree

    start = time.perf_counter()
    graph = read_graph(root / "npu/debug_0/graph/ge_proto_00000001_Build.txt").graphs[0]
    tree = DumpTree(root / "npu/debug_0/dump")
    step, = tree.select()
    tasks = pair_with_graph(graph, tree.listing(step), read_golden(root / "tf/dump"))
    for task in (t for t in tasks if t.comparable):
        side: DumpSide = task.left
        dump = read_dump(side.path)
        tensor = (dump.inputs if side.kind == "input" else dump.outputs)[side.index]
        x = tensor.host(side.origin_format).astype(np.float64).ravel()
        y = np.load(task.right.path).astype(np.float64).ravel()
        _naive_metrics(x, y)
    return {"seconds": time.perf_counter() - start, "status": 0}


def raw_rate(files: list[Path]) -> float:
    """Seconds to read every file once into a reused buffer and sum it with numpy."""
    buffer = np.empty(max(p.stat().st_size for p in files) + 8, np.uint8)
    start = time.perf_counter()
    for path in files:
        size = path.stat().st_size
        view = buffer[:size]
        with open(path, "rb", buffering=0) as handle:
            handle.readinto(memoryview(view))
        int(view[:size - size % 8].view(np.uint64).sum())
    return time.perf_counter() - start


# --- measuring subprocesses ------------------------------------------------------------------

def _tree_rss(pid: int, hwm: dict[int, int]) -> int:
    """Resident bytes of ``pid`` and all its descendants now; records each one's VmHWM."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
            total += int(fields["VmRSS"].split()[0]) * 1024
            hwm[current] = max(hwm.get(current, 0), int(fields["VmHWM"].split()[0]) * 1024)
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo += [int(c) for c in handle.read().split()]
        except (OSError, KeyError, ValueError):
            continue
    return total


def measure(args: list[str]) -> dict:
    """Run ``bench/compare_bench.py ARGS`` as a subprocess; its JSON plus peak RSS figures.

    ``ru_maxrss`` of RUSAGE_CHILDREN is no use here: Linux carries the forking parent's RSS into
    it, and it is the largest single process, not the tree. So /proc is sampled instead.
    """
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    peak, hwm, done = [0], {}, threading.Event()

    def sample() -> None:
        while not done.wait(0.02):
            peak[0] = max(peak[0], _tree_rss(proc.pid, hwm))
    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    out, _ = proc.communicate()
    done.set()
    watcher.join()
    if proc.returncode:
        raise SystemExit(f"benchmark step {args} failed with status {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    result["tree_rss"] = peak[0]
    result["hwm_sum"] = sum(hwm.values())  # every process at its own peak: an upper bound
    return result


def _line(name: str, data_bytes: int, pair_bytes: int, result: dict, raw_seconds: float) -> str:
    rate = data_bytes / result["seconds"] / 1e9
    return (f"{name:<14} {rate:7.3f} GB/s  {pair_bytes / result['seconds'] / 1e9:7.3f} GB/s compared  "
            f"{result['seconds']:6.2f} s  {rate * raw_seconds * 1e9 / data_bytes:6.1%} of raw"
            f"  peak RSS {result['tree_rss'] / 2**20:6.1f} MiB"
            f" (sum of per-process peaks {result['hwm_sum'] / 2**20:6.1f})")


def main(argv: list[str] | None = None) -> int:
    """Parse the flags; run the benchmark, or one measured step when called as a subprocess."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=2.0, help="data set size in GB (default 2)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="vc worker processes")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (reused when present)")
    parser.add_argument("--run-vc", nargs=3, metavar=("ROOT", "ALG", "WORKERS"), help=argparse.SUPPRESS)
    parser.add_argument("--run-naive", metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_vc:
        print(json.dumps(run_vc(Path(args.run_vc[0]), args.run_vc[1], int(args.run_vc[2]))))
        return 0
    if args.run_naive:
        print(json.dumps(run_naive(Path(args.run_naive))))
        return 0
    return bench(args)


def bench(args) -> int:
    """Generate (or reuse) the data set, then measure and print everything."""
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vc_bench_")) / "precision_data"
    marker = root / "bench.json"
    wanted = {"gb": args.gb, "shape": HOST_SHAPE}
    try:
        if not (marker.exists() and json.loads(marker.read_text()) == json.loads(json.dumps(wanted))):
            shutil.rmtree(root, ignore_errors=True)
            start = time.perf_counter()
            ops = generate(root, args.gb)
            marker.write_text(json.dumps(wanted))
            print(f"generated {ops} ops in {time.perf_counter() - start:.1f} s under {root}")
        files = data_files(root)
        data_bytes, pair_bytes = sum(p.stat().st_size for p in files), compared_bytes(root)
        print(f"data set: {len(files)} files, {data_bytes / 1e9:.3f} GB; pairs compared: "
              f"{pair_bytes / 1e9:.3f} GB (both sides); {args.workers} worker(s), {os.cpu_count()} CPU(s)")
        raw_rate(files)  # warm the page cache
        raw_seconds = min(raw_rate(files) for _ in range(3))
        print(f"{'raw read+sum':<14} {data_bytes / raw_seconds / 1e9:7.3f} GB/s  {raw_seconds:7.2f} s")
        results = {
            "vc all": measure(["--run-vc", str(root), "all", str(args.workers)]),
            "vc -alg 0": measure(["--run-vc", str(root), "0", str(args.workers)]),
            "naive": measure(["--run-naive", str(root)]),
        }
        for name, result in results.items():
            print(_line(name, data_bytes, pair_bytes, result, raw_seconds))
        ours, naive = results["vc all"]["seconds"], results["naive"]["seconds"]
        print(f"vc all / naive: {naive / ours:.2f}x faster; vc -alg 0 / vc all: "
              f"{ours / results['vc -alg 0']['seconds']:.2f}x faster")
    finally:
        if not args.keep:
            shutil.rmtree(root.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
