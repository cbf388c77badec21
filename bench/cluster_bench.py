"""``vc`` on a real Dask cluster: a ``dask scheduler`` and ``dask worker --nworkers K`` (nannies,
as the docs start them), K = 1, 2, 4; calls/s and GB/s per worker; and the malloc setting.

    python bench/cluster_bench.py [--keep DIR] [--devices 4] [--device-gb 0.25] [--repeat 2]
                                  [--workers 1,2,4] [--calls 1000]

Measured for each K (a fresh cluster each time, so one K's memory state never helps another):

* calls/s: ``--calls`` no-op calls through the tool's Session (the worker-side wrapper
  included), at most 2 per worker in flight, as the engine keeps them;
* GB/s: ``vc --fresh --scheduler ADDR`` (the real command line: process start, preflight
  check, every metric) on scaling_bench's multi-device tree (hard links: warm page cache, a
  compute-bound rate), the data's bytes over the wall time, and that over K;
* the malloc setting (K = 1, numpy kernels, ``PRECISION_TOOL_KERNELS=numpy`` on the workers):
  Dask's nanny sets ``MALLOC_TRIM_THRESHOLD_=65536`` in the workers it starts. Three runs:
  the tool as shipped (it puts glibc's thresholds back in each worker process,
  :func:`~precision_tool.compare.cluster_preflight.restore_malloc`); workers whose nanny was
  configured not to set it (``distributed.nanny.pre-spawn-environ``, the docs' set-up); and
  the variable left to act (the restore switched off by a preload of this bench only).

The machine's cores are shared with whatever else runs: the load average is printed beside the
figures. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_bench import REPO, data_files, measure  # noqa: E402
from perf_doc import add_write_flag, run_writing  # noqa: E402
from scaling_bench import make_tree  # noqa: E402

NO_RESTORE = """
from precision_tool.compare import cluster_preflight
cluster_preflight.restore_malloc = lambda: False  # the bench's "left to act" runs only
"""
KEEP_UNSET = "distributed:\n  nanny:\n    pre-spawn-environ:\n      MALLOC_TRIM_THRESHOLD_: null\n"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECISION_TOOL_", "DASK_"))}
    return {**env, "PYTHONPATH": str(REPO), **extra}


class RealCluster:
    """``dask scheduler`` on loopback and ``dask worker --nworkers K --nthreads 1``."""

    def __init__(self, base: Path, workers: int, worker_env: dict | None = None, preload: str | None = None) -> None:
        base.mkdir(parents=True, exist_ok=True)
        file = base / "scheduler.json"
        file.unlink(missing_ok=True)
        self.log = open(base / "dask.log", "ab")
        common = dict(stdout=self.log, stderr=self.log, cwd=base, start_new_session=True)
        self.procs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    "0",
                    "--no-dashboard",
                    "--scheduler-file",
                    str(file),
                ],
                env=_env(),
                **common,
            )
        ]
        while not (file.exists() and file.stat().st_size):
            time.sleep(0.1)
        self.address = json.loads(file.read_text())["address"]
        argv = [
            sys.executable,
            "-m",
            "distributed.cli.dask_worker",
            self.address,
            "--nworkers",
            str(workers),
            "--nthreads",
            "1",
            "--no-dashboard",
        ]
        if preload:
            script = base / "preload.py"
            script.write_text(preload)
            argv += ["--preload", str(script)]
        self.procs.append(subprocess.Popen(argv, env=_env(**(worker_env or {})), **common))
        from distributed import Client

        with Client(self.address, set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        self.log.close()


def _noop(i: int) -> int:
    return i


def calls_per_second(address: str, calls: int) -> float:
    """No-op calls through the tool's Session, 2 per worker in flight."""
    sys.path.insert(0, str(REPO))
    from precision_tool.compare.cluster import Session

    with Session(address) as session:
        window, pending = 2 * session.workers, []
        start = time.perf_counter()
        for i in range(calls):
            pending.append(session.submit(_noop, i))
            if len(pending) >= window:
                session.result(pending.pop(0))
        for future in pending:
            session.result(future)
        return calls / (time.perf_counter() - start)


def vc_seconds(root: Path, out: Path, address: str, env: dict | None = None) -> float:
    command = [
        sys.executable,
        "-m",
        "precision_tool",
        "--data",
        str(root),
        "vc",
        "--fresh",
        "-o",
        str(out),
        "--scheduler",
        address,
    ]
    return measure(command, root.parent, _env(**(env or {})), ok=(0, 1), every=None)["seconds"]


def _mmm(values: list[float], digits: int = 2) -> str:
    v = sorted(values)
    return "/".join(f"{x:.{digits}f}" for x in (v[0], statistics.median(v), v[-1]))


def bench_workers(root: Path, scratch: Path, counts: list[int], calls: int, repeat: int) -> None:
    data = sum(p.stat().st_size for p in data_files(root) if "/tf/dump/" not in str(p))
    goldens = sum(p.stat().st_size for p in data_files(root) if "/tf/dump/" in str(p))
    devices = len(list((root / "npu/debug_0/dump").iterdir().__next__().iterdir()))
    total = data + goldens * devices  # the goldens are read once per device
    print(f"\nreal scheduler, nanny workers, tree of {total / 1e9:.2f} GB per run, {os.cpu_count()} CPUs")
    print(f"{'workers':>7}{'calls/s':>16}{'vc s (min/med/max)':>22}{'GB/s':>7}{'GB/s/worker':>13}{'load':>6}")
    for k in counts:
        cluster = RealCluster(scratch / f"cluster{k}", k)
        try:
            rates = [calls_per_second(cluster.address, calls) for _ in range(repeat)]
            seconds = [vc_seconds(root, scratch / "out", cluster.address) for _ in range(repeat)]
        finally:
            cluster.stop()
        rate = total / statistics.median(seconds) / 1e9
        print(
            f"{k:>7}{_mmm(rates, 0):>16}{_mmm(seconds):>22}{rate:>7.2f}{rate / k:>13.3f}{os.getloadavg()[0]:>6.2f}",
            flush=True,
        )


def bench_malloc(root: Path, scratch: Path, repeat: int) -> None:
    config = scratch / "dask-config"
    config.mkdir(exist_ok=True)
    (config / "unset.yaml").write_text(KEEP_UNSET)
    numpy = {"PRECISION_TOOL_KERNELS": "numpy"}
    cases = [
        ("restored by the tool (default)", numpy, None),
        ("unset by pre-spawn-environ", {**numpy, "DASK_CONFIG": str(config)}, None),
        ("MALLOC_TRIM_THRESHOLD_=65536 acting", numpy, NO_RESTORE),
    ]
    print("\nmalloc setting, 1 nanny worker, numpy kernels (PRECISION_TOOL_KERNELS=numpy on the worker)")
    for label, env, preload in cases:
        cluster = RealCluster(scratch / "malloc", 1, env, preload)
        try:
            seconds = [vc_seconds(root, scratch / "out", cluster.address) for _ in range(repeat)]
        finally:
            cluster.stop()
        print(f"  {label:<40} {_mmm(seconds)} s (min/med/max), load {os.getloadavg()[0]:.2f}", flush=True)


MICRO = """
import resource, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from precision_tool.compare.cluster_preflight import restore_malloc
if sys.argv[2] == "restore":
    restore_malloc()
rng = np.random.default_rng(0)
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
x = rng.standard_normal(n).astype(np.float16)
y = rng.standard_normal(n).astype(np.float32)
start = resource.getrusage(resource.RUSAGE_SELF)
for _ in range(30 * (1 << 22) // n):  # what the numpy kernels do per block: widen, subtract, square, sum
    a, b = x.astype(np.float64), y.astype(np.float64)
    d = a - b
    (d * d).sum(), (a * b).sum(), np.abs(d).max()
end = resource.getrusage(resource.RUSAGE_SELF)
print(end.ru_utime - start.ru_utime + end.ru_stime - start.ru_stime, end.ru_minflt - start.ru_minflt)
"""


def malloc_micro(repeat: int) -> None:
    """CPU seconds (user + system, so less sensitive to a shared machine than wall time) of the
    numpy kernels' kind of work on tensors of 256 Ki, 1 Mi and 4 Mi elements (120 Mi elements in
    all each time), with MALLOC_TRIM_THRESHOLD_=65536 as a nanny sets it, left to act or restored
    by the tool; the two alternate."""
    print(
        "\nmalloc: numpy work on float16 vs float32 blocks (widen, subtract, 3 reductions), "
        "MALLOC_TRIM_THRESHOLD_=65536, CPU s (user + system)"
    )
    for elements in (1 << 18, 1 << 20, 1 << 22):
        results: dict = {"left to act": [], "restored": []}
        for _ in range(repeat):
            for label, how in (("left to act", "keep"), ("restored", "restore")):
                done = subprocess.run(
                    [sys.executable, "-c", MICRO, str(REPO), how, str(elements)],
                    capture_output=True,
                    text=True,
                    env=_env(MALLOC_TRIM_THRESHOLD_="65536"),
                    check=True,
                )
                cpu, faults = done.stdout.split()
                results[label].append((float(cpu), int(faults)))
        for label, runs in results.items():
            print(
                f"  {elements >> 10:>5} Ki elements, {label:<12} CPU s {_mmm([c for c, _ in runs])} "
                f"(min/med/max), minor page faults {statistics.median([f for _, f in runs]):.0f}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", metavar="DIR", help="generate the tree into DIR and keep it")
    parser.add_argument("--devices", type=int, default=4)
    parser.add_argument("--device-gb", type=float, default=0.25)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--workers", default="1,2,4", help="worker processes to run with (default 1,2,4; '' none)")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--no-malloc", dest="malloc", action="store_false")
    parser.add_argument("--micro-only", action="store_true", help="only the malloc micro-benchmark")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    if args.micro_only:
        malloc_micro(max(args.repeat, 3))
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vc_cluster_"))
    scratch = Path(tempfile.mkdtemp(prefix="vc_cluster_out_"))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} (shared: other work may run)")
    tree = base / "tree" / "precision_data"
    make_tree(tree, args.devices, args.device_gb)
    if args.workers:
        bench_workers(tree, scratch, [int(k) for k in args.workers.split(",")], args.calls, args.repeat)
    if args.malloc:
        bench_malloc(tree, scratch, args.repeat)
        malloc_micro(max(args.repeat, 3))
    return 0


INTRO = (
    "`bench/cluster_bench.py`: calls/s and GB/s per worker on a real Dask scheduler with 1, 2 and 4 "
    "nanny workers, and the workers' malloc setting (projections from these rates: docs/scaling.md)."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "cluster_bench.py", "Scaling: the local pool and Dask", INTRO))
