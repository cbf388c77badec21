"""Should results also be kept as Parquet? ``vcs`` on a million-row result, CSV against Parquet.

    python bench/result_store_bench.py [--rows 1000000]

Writes a synthetic result of ``--rows`` rows (a chain of ops, two inputs and one output each,
all ten metrics) as msaccucmp-format CSV with the project's writer, and the same rows as a
Parquet file with pyarrow (when installed), then times what ``vcs`` does with each: read the
rows, and judge them (``compare.divergence.analyse``). Prints seconds, file sizes and peak RSS
of each step. No numbers are asserted.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from precision_tool.compare.divergence import analyse  # noqa: E402
from precision_tool.compare.result import CompareRow  # noqa: E402
from precision_tool.compare.result_csv import NUMERIC_METRICS, write_result_csv  # noqa: E402
from precision_tool.compare.result_read import read_result_csv  # noqa: E402


def synthetic_rows(count: int):
    """``count`` rows of a chain; the error enters two thirds of the way."""
    ops = count // 3
    for i in range(ops):
        bad = i >= 2 * ops // 3
        for kind, slot, cosine in (
            ("input", 0, 0.5 if bad and i > 2 * ops // 3 else 1.0),
            ("input", 1, 1.0),
            ("output", 0, 0.5 if bad else 0.999),
        ):
            metrics = {name: 0.001 * (k + 1) for k, name in enumerate(NUMERIC_METRICS)}
            metrics["CosineSimilarity"] = cosine
            yield CompareRow(
                i,
                "Add",
                f"net/block_{i}/add",
                "float16",
                None,
                f"net/block_{i}/add",
                "float32",
                f"net/block_{i}/add:{kind}:{slot}",
                (8, 64, 64, 16),
                metrics,
                "(0.001;1.000),(0.001;1.000)",
            )


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _timed(label: str, work):
    start = time.perf_counter()
    value = work()
    print(f"{label:<42} {time.perf_counter() - start:8.2f} s   peak RSS {_rss_mib():7.0f} MiB")
    return value


def parquet_round_trip(rows, path: Path):
    """Write ``rows`` as Parquet, then read them back into CompareRows; None without pyarrow."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        print("pyarrow is not installed: Parquet not measured")
        return None
    columns = {
        "index": [r.index for r in rows],
        "op_type": [r.op_type for r in rows],
        "npu_name": [r.npu_name for r in rows],
        "ground_truth": [r.ground_truth for r in rows],
        "tensor_index": [r.tensor_index for r in rows],
        "std": [r.std_text for r in rows],
        "reason": [r.fail_reason for r in rows],
    }
    for name in NUMERIC_METRICS:
        columns[name] = [r.metrics.get(name) for r in rows]
    _timed("parquet: write", lambda: pq.write_table(pa.table(columns), path))
    print(f"{'parquet: size':<42} {path.stat().st_size / 2**20:8.1f} MiB")

    def read():
        table = pq.read_table(path).to_pydict()
        metric_cols = [table[name] for name in NUMERIC_METRICS]
        return [
            CompareRow(
                table["index"][i],
                table["op_type"][i],
                table["npu_name"][i],
                "float16",
                None,
                table["ground_truth"][i],
                "float32",
                table["tensor_index"][i],
                None,
                {n: col[i] for n, col in zip(NUMERIC_METRICS, metric_cols) if col[i] is not None},
                table["std"][i],
                table["reason"][i],
            )
            for i in range(len(table["index"]))
        ]

    return _timed("parquet: read into rows", read)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_write_flag(parser)
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rows = list(synthetic_rows(args.rows))
    with tempfile.TemporaryDirectory() as scratch:
        csv = Path(scratch) / "result.csv"
        _timed("csv: write (the project's writer)", lambda: write_result_csv(csv, rows))
        print(f"{'csv: size':<42} {csv.stat().st_size / 2**20:8.1f} MiB")
        back = _timed("csv: read into rows (what vcs does)", lambda: read_result_csv(csv))
        _timed("analyse (vcs's verdict, either source)", lambda: analyse(back, 0.98))
        parquet_round_trip(rows, Path(scratch) / "result.parquet")
    return 0


SECTION = "Result store: CSV and Parquet"  # of docs/performance.md, which --write fills (bench/perf_doc.py)
INTRO = "`bench/result_store_bench.py`: `vcs`'s reading and judging of a million-row result from CSV and from Parquet."


if __name__ == "__main__":
    sys.exit(run_writing(main, "result_store_bench.py", SECTION, INTRO))
