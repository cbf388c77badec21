"""Scaling of ``vc``: local pool against a Dask LocalCluster, 1 and 2 workers, many devices, and
one huge tensor compared in ranges; throughput, parallel efficiency and peak memory.

    python bench/scaling_bench.py [--devices 8] [--device-gb 0.5] [--big-gb 4] [--repeat 3]
                                  [--quick] [--keep DIR] [--no-big]

Data (generated once with the project's writers, reused with ``--keep``):

* a multi-device tree ``npu/debug_0/dump/{run}/{device}/{model}/1/0`` of ``--devices`` devices,
  each of about ``--device-gb`` GB (dump + golden bytes, compare_bench's data set: float16
  NC1HWC0 / FRACTAL_NZ / FRACTAL_Z dumps against float32 goldens). Devices 1.. are hard links to
  device 0's files: the same bytes, so the page cache holds one device and every rate here is
  a warm (compute-bound) rate; compare_bench.py measures cold reads;
* with ``--big-gb``: one float32 golden of that many GB and its float16 NPU dump (half the
  size), beside 16 small pairs, written in pieces (nothing holds the tensor in memory).

Runs (each a subprocess of the real command line, ``python -m precision_tool vc --fresh``,
process start and cluster start included; configurations alternate within each repeat since the
load of a shared machine drifts):

* ``pool N`` (``PRECISION_TOOL_WORKERS=N``) and ``local:N`` (``--scheduler local:N``) for N = 1, 2,
  each on device 0 alone and on every device. The all-devices rate is the data over the wall
  time; the per-core rate comes from the difference of the two runs (the extra devices' data
  over the extra time), which removes the fixed costs (process, imports, cluster start);
  efficiency = rate(2) / (2 x rate(1));
* Dask's cost per call: no-op calls through a ``local:2`` client in the engine's window;
* the big tensor: ``pool 2`` and ``local:2``, split as configured (SPLIT_BYTES 0: derived) and
  unsplit (SPLIT_BYTES = 2**50), to show that it is split across the workers and does not
  serialise the run, with the peak memory of the whole process tree.

Peak RSS is the sum over the run's process tree (workers, nannies included), sampled every
20 ms in a run of its own (sampling takes CPU from the run, so the timed runs are not sampled);
PSS divides shared pages among the processes. Times are min / median / max over the
repeats. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_bench import REPO, RUN, data_files, generate, measure, raw_read, with_memory  # noqa: E402
from generated import clear_generated  # noqa: E402
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import tool_env  # noqa: E402

BIG_NAME, BIG_STAMP = "net/huge/op", 1767400000000000
UNSPLIT = str(1 << 50)


# --- data ------------------------------------------------------------------------------------


def make_tree(root: Path, devices: int, device_gb: float) -> None:
    """compare_bench's data set on device 0, hard-linked as devices 1 .. devices-1."""
    marker = root / "scaling.json"
    wanted = {"devices": devices, "device_gb": device_gb, "layout": 1}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return
    clear_generated(root, "scaling.json")
    start = time.perf_counter()
    ops = generate(root, device_gb)
    runs = root / "npu/debug_0/dump" / RUN
    for device in range(1, devices):
        shutil.copytree(runs / "0", runs / str(device), copy_function=os.link)
    marker.write_text(json.dumps(wanted))
    print(f"generated {ops} ops x {devices} devices in {time.perf_counter() - start:.1f} s", file=sys.stderr)


def _write_big_dump(path: Path, elements: int, rng, golden: np.ndarray) -> None:
    """A float16 ND dump of ``elements`` written piece by piece: the header says the full size."""
    sys.path.insert(0, str(REPO))
    from precision_tool.formats.dump_write import TensorSpec, build_dump
    from precision_tool.formats.proto.dumpdata import DumpData

    data = build_dump(
        BIG_NAME,
        [],
        [TensorSpec(np.zeros(1, np.float16), "FLOAT16", "ND", (elements,), shape=(elements,))],
        dump_time=BIG_STAMP,
    )
    length = struct.unpack("<Q", data[:8])[0]
    header = DumpData()
    header.ParseFromString(data[8 : 8 + length])
    header.output[0].size = elements * 2
    raw = header.SerializeToString()
    path.parent.mkdir(parents=True, exist_ok=True)
    step = 1 << 24
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(raw)) + raw)
        for start in range(0, elements, step):
            y = golden[start : start + step]
            handle.write((y + 0.01 * rng.standard_normal(y.size, dtype=np.float32)).astype(np.float16).tobytes())


def make_big(root: Path, gb: float) -> None:
    """One huge float32 golden of ``gb`` GB and its float16 dump, beside 16 small pairs."""
    marker = root / "big.json"
    if marker.exists() and json.loads(marker.read_text()) == {"gb": gb}:
        return
    shutil.rmtree(root, ignore_errors=True)
    sys.path.insert(0, str(REPO))
    from precision_tool.formats.dump_write import TensorSpec, write_dump
    from precision_tool.formats.golden import write_golden

    rng = np.random.default_rng(16)
    elements = int(gb * 1e9 / 4) // 4096 * 4096
    gold_path = write_golden(root / "golden", BIG_NAME, 0, BIG_STAMP, np.zeros(1, np.float32))
    golden = np.lib.format.open_memmap(gold_path, mode="w+", dtype=np.float32, shape=(elements,))
    for start in range(0, elements, 1 << 24):
        golden[start : start + (1 << 24)] = rng.standard_normal(min(1 << 24, elements - start), dtype=np.float32)
    golden.flush()
    _write_big_dump(root / "npu" / f"MatMul.{BIG_NAME.replace('/', '_')}.3.0.{BIG_STAMP}", elements, rng, golden)
    del golden
    for i in range(16):
        name, y = f"net/small{i}/op", rng.standard_normal((256, 1024), dtype=np.float32)
        write_golden(root / "golden", name, 0, BIG_STAMP + 10 + i, y)
        write_dump(
            root / "npu" / f"Add.{name.replace('/', '_')}.{10 + i}.0.{BIG_STAMP + 10 + i}",
            name,
            [],
            [TensorSpec(y.astype(np.float16), "FLOAT16")],
            dump_time=BIG_STAMP + 10 + i,
        )
    marker.write_text(json.dumps({"gb": gb}))


# --- runs ------------------------------------------------------------------------------------


def _read_share(files: list[str]) -> None:
    raw_read([Path(f) for f in files])


def parallel_read(files: list[Path], processes: int) -> float:
    """GB/s of reading ``files`` (warm) into buffers with ``processes`` readers, files dealt out
    round robin: the page-cache bandwidth the comparison's reads share."""
    from multiprocessing import get_context

    shares = [[str(f) for f in files[k::processes]] for k in range(processes)]
    context = get_context("fork")
    start = time.perf_counter()
    readers = [context.Process(target=_read_share, args=(share,)) for share in shares]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    return sum(f.stat().st_size for f in files) / (time.perf_counter() - start) / 1e9


def print_read_rates(files: list[Path], repeat: int) -> None:
    """The warm read rate with 1 and 2 readers (min/median/max over ``repeat``)."""
    raw_read(files)
    for processes in (1, 2):
        rates = sorted(parallel_read(files, processes) for _ in range(repeat))
        print(
            f"raw read, {processes} reader(s): {rates[0]:.2f}/{statistics.median(rates):.2f}/{rates[-1]:.2f} GB/s "
            f"(min/median/max)"
        )


def _env(workers: int, split: str | None = None) -> dict:
    env = tool_env(REPO, PRECISION_TOOL_WORKERS=str(workers))
    if split is not None:
        env["PRECISION_TOOL_SPLIT_BYTES"] = split
    return env


def _vc(
    root: Path, out: Path, how: str, workers: int, extra: list[str], split: str | None = None, memory: bool = False
) -> dict:
    """One timed run (``memory``: a run sampled for its peak memory instead, not to be timed:
    the sampling takes CPU from the run, see compare_bench.measure)."""
    command = [sys.executable, "-m", "precision_tool", "--data", str(root), "vc", "--fresh", "-o", str(out)]
    command += (["--scheduler", f"local:{workers}"] if how == "local" else []) + extra
    shutil.rmtree(out, ignore_errors=True)
    return measure(command, root.parent, _env(workers, split), ok=(0, 1), every=0.02 if memory else None)


def _summary(runs: list[dict]) -> dict:
    seconds = sorted(r["seconds"] for r in runs)
    return {
        "min": seconds[0],
        "median": statistics.median(seconds),
        "max": seconds[-1],
        "all": [r["seconds"] for r in runs],
        "rss": max(r["rss"] for r in runs),
        "pss": max(r["pss"] for r in runs),
    }


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def _times(s: dict) -> str:
    return f"{s['min']:.2f}/{s['median']:.2f}/{s['max']:.2f}"


def bench_devices(root: Path, scratch: Path, devices: int, repeat: int) -> None:
    """The multi-device table: pool and LocalCluster, 1 and 2 workers."""
    files = data_files(root)
    device_bytes = sum(p.stat().st_size for p in files if f"/{RUN}/0/" in str(p) or "/tf/dump/" in str(p))
    total = device_bytes * devices  # every device's dumps, and the goldens read once per device
    configs = [(how, n) for n in (1, 2) for how in ("pool", "local")]
    subsets = {"one": ["--device", "0"], "all": []}
    raw_read(files)
    memory = {
        (how, n, s): _vc(root, scratch / "warm", how, n, extra, memory=True)  # also warms the caches
        for how, n in configs
        for s, extra in subsets.items()
    }
    runs = {(how, n, s): [] for how, n in configs for s in subsets}
    for k in range(repeat):
        for how, n in configs:
            for subset, extra in subsets.items():
                runs[(how, n, subset)].append(_vc(root, scratch / "out", how, n, extra))
        print(f"  repeat {k + 1}/{repeat} done, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(
        f"\nmulti-device tree: {devices} devices x {device_bytes / 1e9:.3f} GB = {total / 1e9:.2f} GB "
        f"compared per run, {os.cpu_count()} CPUs"
    )
    print(
        f"{'run':<10}{'devices':>8}{'s (min/med/max)':>22}{'GB/s':>7}{'per-core GB/s':>15}"
        f"{'efficiency':>12}{'peak RSS':>11}{'peak PSS':>11}"
    )
    core: dict = {}
    for how, n in configs:
        one = _summary(with_memory(runs[(how, n, "one")], memory[(how, n, "one")]))
        every = _summary(with_memory(runs[(how, n, "all")], memory[(how, n, "all")]))
        extra_bytes, extra_s = total - device_bytes, every["median"] - one["median"]
        core[(how, n)] = extra_bytes / extra_s / n if extra_s > 0 else float("nan")
        efficiency = core[(how, n)] / core[(how, 1)] if n > 1 else 1.0
        name = f"pool {n}" if how == "pool" else f"local:{n}"
        for label, s, size in (("1", one, device_bytes), (str(devices), every, total)):
            rate = size / s["median"] / 1e9
            tail = f"{core[(how, n)] / 1e9:>15.3f}{efficiency:>12.0%}" if label != "1" else f"{'':>15}{'':>12}"
            print(f"{name:<10}{label:>8}{_times(s):>22}{rate:>7.2f}{tail}{_mib(s['rss']):>11}{_mib(s['pss']):>11}")
    print(
        "per-core GB/s: (all devices - device 0) bytes / (time all - time one) / workers; "
        "efficiency: per-core rate at 2 workers / at 1"
    )
    print_read_rates(files, repeat)
    for (how, n, subset), rs in sorted(runs.items()):
        print(f"  raw seconds {how} {n} {subset}: {', '.join('%.2f' % r['seconds'] for r in rs)}")


def bench_big(root: Path, scratch: Path, repeat: int) -> None:
    """One huge tensor: split across 2 workers against unsplit, on the pool and a LocalCluster."""
    npu, golden = root / "npu", root / "golden"
    data = sum(p.stat().st_size for p in npu.iterdir()) + sum(p.stat().st_size for p in golden.iterdir())
    big = max(p.stat().st_size for p in golden.iterdir())
    extra = ["-lt", str(npu), "-rt", str(golden)]
    raw_read(sorted(npu.iterdir()) + sorted(golden.iterdir()))
    configs = [("pool", None), ("local", None), ("pool", UNSPLIT), ("local", UNSPLIT)]
    runs: dict = {c: [] for c in configs}
    memory = {(how, split): _vc(root, scratch / "big", how, 2, extra, split, memory=True) for how, split in configs}
    for k in range(repeat):
        for how, split in configs:
            runs[(how, split)].append(_vc(root, scratch / "big", how, 2, extra, split))
        print(f"  big repeat {k + 1}/{repeat} done, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print(
        f"\none huge tensor: golden {big / 1e9:.2f} GB float32 (+ its float16 dump), with 16 small pairs: "
        f"{data / 1e9:.2f} GB, 2 workers"
    )
    print_read_rates(sorted(npu.iterdir()) + sorted(golden.iterdir()), repeat)
    print(f"{'run':<10}{'split':<22}{'s (min/med/max)':>22}{'GB/s':>7}{'peak RSS':>11}{'peak PSS':>11}")
    for how, split in configs:
        s = _summary(with_memory(runs[(how, split)], memory[(how, split)]))
        name = "pool 2" if how == "pool" else "local:2"
        label = "unsplit" if split else "in ranges (derived)"
        print(
            f"{name:<10}{label:<22}{_times(s):>22}{data / s['median'] / 1e9:>7.2f}{_mib(s['rss']):>11}"
            f"{_mib(s['pss']):>11}"
        )


def _noop(i: int) -> int:
    return i


def bench_scheduler(tasks: int, repeat: int) -> None:
    """Dask's cost per call: ``tasks`` no-op calls through a local:2 Session, in the engine's
    window (at most 2 per worker in flight, as :func:`~precision_tool.compare.window.stream_units`)."""
    sys.path.insert(0, str(REPO))
    from precision_tool.compare.cluster import Session

    rates = []
    with Session("local:2") as session:
        for _ in range(repeat):
            start, window, pending = time.perf_counter(), 2 * session.workers, []
            for i in range(tasks):
                pending.append(session.submit(_noop, i))
                if len(pending) >= window:
                    session.result(pending.pop(0))
            for future in pending:
                session.result(future)
            rates.append(tasks / (time.perf_counter() - start))
    rates.sort()
    print(
        f"\nDask round trips (local:2, {tasks} no-op calls, window 4): {rates[0]:.0f}/"
        f"{statistics.median(rates):.0f}/{rates[-1]:.0f} calls/s (min/median/max)"
    )


def main(argv: list[str] | None = None) -> int:
    """Generate (or reuse) the data, measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_write_flag(parser)
    parser.add_argument("--devices", type=int, default=8, help="devices of the tree (default 8)")
    parser.add_argument("--device-gb", type=float, default=0.5, help="GB per device (default 0.5)")
    parser.add_argument("--big-gb", type=float, default=4.0, help="GB of the huge golden tensor (default 4)")
    parser.add_argument("--no-big", dest="big", action="store_false", help="skip the huge tensor")
    parser.add_argument("--no-devices", dest="devices_run", action="store_false", help="skip the tree")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (default 3)")
    parser.add_argument(
        "--quick", action="store_true", help="a quick look: 4 devices x 0.1 GB, a 0.5 GB tensor, 2 repeats"
    )
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep it (reused when present)")
    args = parser.parse_args(argv)
    if args.quick:
        args.devices, args.device_gb, args.big_gb, args.repeat = 4, 0.1, 0.5, 2
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vc_scaling_"))
    scratch = Path(tempfile.mkdtemp(prefix="vc_scaling_out_"))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; data under {base}")
    try:
        if args.devices_run:
            tree = base / "tree" / "precision_data"
            make_tree(tree, args.devices, args.device_gb)
            bench_devices(tree, scratch, args.devices, args.repeat)
        bench_scheduler(2000, args.repeat)
        if args.big:
            big = base / "big" / "precision_data"
            make_big(big, args.big_gb)
            bench_big(big, scratch, args.repeat)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


SECTION = "Scaling: the local pool and Dask"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = (
    "`bench/scaling_bench.py`: `vc` on 1 and 8 devices with the local pool and a Dask "
    "LocalCluster; what the figures project for real training jobs is in "
    "[scaling.md](scaling.md)."
)


if __name__ == "__main__":
    sys.exit(run_writing(main, "scaling_bench.py", SECTION, INTRO))
