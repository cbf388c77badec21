"""Benchmark the HTML report at 1,000, 10,000 and 100,000 ops: its size and how long headless
Chromium takes to load it.

    python bench/report_bench.py [--ops 1000,10000,100000] [--repeat 3] [--keep DIR] [--write]

Each network is a chain written by the report tests' generator
(:func:`tests.report.synthetic.write_many`: a Build graph and its result CSV): one introducer per
~416 ops, each inherited by the next 124 ops, so 10,000 ops have 24 introducers and 3,000
flagged ops (the shape of issue 24's network), and 100,000 ops 240 and 30,000. For each it
prints the seconds ``make_report`` took (reading the CSV, the verdict, the subgraph, the page),
the page's size, and from Chromium (``/usr/bin/chromium`` driven over its DevTools pipe, a fresh
tab per load, the browser itself started beforehand) the load time -- the page's own
``loadEventEnd - startTime`` of its navigation entry, after which the table's first rows and the
curve are drawn -- as the median of ``--repeat`` loads, and the DOM's element count.
``--write`` puts what the run prints under the "Report" section of docs/performance.md (bench/perf_doc.py). No numbers are
asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402

EVERY, TAIL = 416, 124

LOAD = """(() => { const n = performance.getEntriesByType('navigation')[0];
    return [n.loadEventEnd - n.startTime, document.querySelectorAll('*').length,
            document.querySelectorAll('table.flagged tbody tr[data-pos]').length]; })()"""


def build(root: Path, ops: int):
    """Write the ``ops``-op network under ``root``; (its report, seconds make_report took)."""
    from precision_tool.config import load_config
    from precision_tool.context import Context
    from precision_tool.render.theme import make_console
    from precision_tool.report.write import make_report
    from tests.report.synthetic import write_many

    introducers = tuple(range(7, ops, EVERY))
    csv_path = write_many(root, ops, introducers, tail=TAIL)
    config = load_config({"DATA_ROOT_DIR": root}, environ={}, cwd=root.parent)
    context = Context(config, make_console(file=open("/dev/null", "w", encoding="utf-8"), width=120))
    started = time.perf_counter()
    written = make_report(context, [csv_path], output=root.parent / "report")
    return written, time.perf_counter() - started


def load(index: Path, repeat: int) -> tuple[float, int, int]:
    """(median load milliseconds, DOM elements, table rows drawn) of ``index`` in Chromium."""
    from tests.report.browser import Chromium

    times, nodes, rows = [], 0, 0
    with Chromium(width=1400, height=1000) as browser:
        for _ in range(repeat):
            browser.open(index.as_uri(), settle=0.2)
            ms, nodes, rows = browser.evaluate(LOAD)
            times.append(ms)
            browser.send(
                "Target.closeTarget",
                {"targetId": browser.send("Target.getTargetInfo")["targetInfo"]["targetId"]},
                session=False,
            )
    return statistics.median(times), nodes, rows


def table(results: list[tuple]) -> str:
    lines = [
        "| ops | flagged | introducers | make_report (s) | page (KiB) | load in Chromium (ms) "
        "| DOM elements | rows drawn |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for ops, flagged, introducers, seconds, size, ms, nodes, rows in results:
        lines.append(
            f"| {ops:,} | {flagged:,} | {introducers} | {seconds:.1f} | {size / 1024:,.0f} "
            f"| {ms:,.0f} | {nodes:,} | {rows} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", default="1000,10000,100000", help="comma-separated op counts")
    parser.add_argument("--repeat", type=int, default=3, help="loads per page (the median is shown)")
    parser.add_argument("--keep", metavar="DIR", help="write the networks and reports into DIR and keep them")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    results = []
    with tempfile.TemporaryDirectory(prefix="report-bench-") as scratch:
        base = Path(args.keep) if args.keep else Path(scratch)
        for ops in (int(n) for n in args.ops.split(",")):
            written, seconds = build(base / f"ops{ops}" / "precision_data", ops)
            view = written.parts[0].view
            ms, nodes, rows = load(written.index, args.repeat)
            results.append(
                (
                    ops,
                    len(view.flagged),
                    sum(r.op.introduces for r in view.flagged),
                    seconds,
                    written.size,
                    ms,
                    nodes,
                    rows,
                )
            )
            print(table(results[-1:]).splitlines()[-1], flush=True)
    print(table(results))
    return 0


INTRO = (
    "`bench/report_bench.py`: the HTML report of chains of 1,000, 10,000 and 100,000 ops; page size, "
    "Chromium load time and DOM elements (what each column means: the section's text below)."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "report_bench.py", "Report", INTRO))
