"""Benchmark ``cp``'s element-wise comparison against a tight numpy loop doing the same work.

    python bench/cp_bench.py [--elements 100000000] [--repeat 3] [--baseline CODE_DIR] [--keep DIR]

Writes two float32 ``.npy`` tensors of ``--elements`` elements (the second a noisy copy of the
first), then times, each in a fresh subprocess on a warm page cache:

* ``tight numpy``: the floor. One loop over 64 Ki-element blocks with every buffer allocated
  once: upcast both blocks to float64, ``|l - r|``, ``atol + rtol |r|``, the close mask and its
  count, the argmax of the error, three dot products (what ``cp`` must compute, nothing else);
* ``compare_elementwise``: what ``cp`` runs on the two memory-mapped tensors;
* ``baseline``: the same function of another checkout (``--baseline``, e.g. the main branch);
* ``cp (CLI)``: the whole command, ``python -m precision_tool cp A B -p 0``, process start and
  loading included.

Prints seconds (min/median/max over ``--repeat``), elements per second and the share of the
tight loop's speed. No numbers are asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BLOCK = 1 << 16


def tight_loop(a: np.ndarray, b: np.ndarray, atol: float = 1e-5, rtol: float = 1e-3) -> tuple:
    """The same work as cp, in the leanest numpy loop: preallocated buffers, out= everywhere."""
    left, right, diff, tol = (np.empty(BLOCK) for _ in range(4))
    close = np.empty(BLOCK, np.bool_)
    bad, peak, dot, ll, rr = 0, 0.0, 0.0, 0.0, 0.0
    for start in range(0, a.size, BLOCK):
        n = min(BLOCK, a.size - start)
        lhs, r, d, t, c = left[:n], right[:n], diff[:n], tol[:n], close[:n]
        np.copyto(lhs, a[start : start + n], casting="unsafe")
        np.copyto(r, b[start : start + n], casting="unsafe")
        np.subtract(lhs, r, out=d)
        np.abs(d, out=d)
        np.abs(r, out=t)
        np.multiply(t, rtol, out=t)
        np.add(t, atol, out=t)
        np.less_equal(d, t, out=c)
        bad += n - int(np.count_nonzero(c))
        peak = max(peak, float(d[int(np.argmax(d))]))
        dot += float(np.einsum("i,i->", lhs, r))
        ll += float(np.einsum("i,i->", lhs, lhs))
        rr += float(np.einsum("i,i->", r, r))
    return bad, peak, dot / np.sqrt(ll * rr)


def _run_one(mode: str, left: Path, right: Path) -> float:
    a, b = np.load(left, mmap_mode="r"), np.load(right, mmap_mode="r")
    start = time.perf_counter()
    if mode == "tight":
        tight_loop(a, b)
    else:
        from precision_tool.compare.elementwise import compare_elementwise

        compare_elementwise(a, b, limit=20)
    return time.perf_counter() - start


def _measure(command: list[str], env: dict, repeat: int, inner: bool) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if out.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
        times.append(json.loads(out.stdout.strip().splitlines()[-1]) if inner else time.perf_counter() - start)
    return times


def main(argv: list[str] | None = None) -> int:
    """Parse the flags; write the tensors; time every variant and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_write_flag(parser)
    parser.add_argument("--elements", type=int, default=100_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="CODE_DIR", help="also time compare_elementwise of this checkout")
    parser.add_argument("--keep", metavar="DIR", help="write the tensors into DIR and keep them")
    parser.add_argument("--run", nargs=4, metavar=("MODE", "LEFT", "RIGHT", "CODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run:
        sys.path.insert(0, args.run[3])
        print(json.dumps(_run_one(args.run[0], Path(args.run[1]), Path(args.run[2]))))
        return 0
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="cp_bench_"))
    try:
        left, right = _tensors(folder, args.elements)
        for path in (left, right):
            path.read_bytes()  # warm the page cache
        rows = []
        me = [sys.executable, str(Path(__file__).resolve()), "--run"]
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        rows.append(("tight numpy", _measure(me + ["tight", str(left), str(right), str(REPO)], env, args.repeat, True)))
        rows.append(
            ("compare_elementwise", _measure(me + ["ours", str(left), str(right), str(REPO)], env, args.repeat, True))
        )
        if args.baseline:
            base = str(Path(args.baseline).resolve())
            rows.append(
                (
                    "baseline",
                    _measure(
                        me + ["ours", str(left), str(right), base],
                        {**os.environ, "PYTHONPATH": base},
                        args.repeat,
                        True,
                    ),
                )
            )
        cli = [sys.executable, "-m", "precision_tool", "cp", str(left), str(right), "-p", "0"]
        rows.append(("cp (CLI)", _measure(cli, env, args.repeat, False)))
        _print(rows, args.elements)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


def _tensors(folder: Path, n: int) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    left, right = folder / f"left_{n}.npy", folder / f"right_{n}.npy"
    if not (left.exists() and right.exists()):
        rng = np.random.default_rng(7)
        a = np.lib.format.open_memmap(left, "w+", np.float32, (n,))
        b = np.lib.format.open_memmap(right, "w+", np.float32, (n,))
        for start in range(0, n, 1 << 22):
            stop = min(n, start + (1 << 22))
            a[start:stop] = rng.standard_normal(stop - start, dtype=np.float32)
            b[start:stop] = a[start:stop] * np.float32(1 + 1e-3) + np.float32(1e-4)
        a.flush()
        b.flush()
        del a, b
    return left, right


def _print(rows: list[tuple[str, list[float]]], n: int) -> None:
    tight = statistics.median(rows[0][1])
    print(f"{n} float32 elements a side, {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f}")
    print(f"{'run':<22}{'s (min/med/max)':>22}{'Melem/s':>10}{'of tight':>10}")
    for name, times in rows:
        med = statistics.median(times)
        print(f"{name:<22}{min(times):>8.2f}/{med:.2f}/{max(times):.2f}{n / med / 1e6:>10.0f}{tight / med:>10.0%}")


SECTION = "Compare kernels: vc and cp"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = (
    "`bench/compare_bench.py` times `vc` (numba kernels and numpy) against Huawei's msaccucmp"
    " and the raw read rate, warm and cold; `bench/cp_bench.py` times `cp`'s element-wise "
    "pass against a tight numpy loop."
)


if __name__ == "__main__":
    sys.exit(run_writing(main, "cp_bench.py", SECTION, INTRO))
