"""The fixed cost of a ``vc`` run: wall and CPU time of small runs, code trees side by side.

    python bench/fixed_cost_bench.py DATA_ROOT [--repeat 7] [CODE_DIR ...]

Runs ``python -m precision_tool --data DATA_ROOT vc --fresh`` of each code tree (default: this
checkout), the trees alternating run by run since a shared machine's load drifts, and beside them
the floor no run can go under: a Python that imports numpy and rich and exits. Wall time and the
CPU (user + system, from ``os.wait4``) of each run's process tree; medians and minima; the load
average at the start and the end. ``PYTHONDONTWRITEBYTECODE`` is dropped from the runs'
environment: a user's install has its bytecode cached, and without it every run compiles the
package again (about 2 s of CPU).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # perf_doc, also when loaded by path
from perf_doc import add_write_flag, run_writing  # noqa: E402
from run_env import add_root_and_trees, root_and_trees, run_once, timing_line, tool_env, tree_output_args  # noqa: E402

FLOOR = "floor: python -c 'import numpy, rich.console'"


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, run, print one line per code tree and the floor."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_root_and_trees(parser, "the data root of a small dump (e.g. bench/compare_bench.py --gb 0.01 --keep)")
    parser.add_argument("--repeat", type=int, default=7, help="runs of each (default 7)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    args.root, codes = root_and_trees(args)
    out = Path(tempfile.mkdtemp(prefix="fixed_cost_"))
    runs: dict[str, list[tuple[float, float]]] = {str(c): [] for c in codes} | {FLOOR: []}
    print(f"load average at the start {os.getloadavg()[0]:.2f}")
    commands = {
        code: [sys.executable, "-m", "precision_tool", "--data", args.root, *tree_output_args(out, code)]
        + ["vc", "-o", str(out), "--fresh"]
        for code in codes
    }
    for code in codes:  # a first run of each, not counted: its graph cache made in its own root
        run_once(commands[code], tool_env(code), ok=(0, 1))
    for _ in range(args.repeat):
        for code in codes:
            runs[str(code)].append(run_once(commands[code], tool_env(code), ok=(0, 1)))  # 1: ops flagged
        runs[FLOOR].append(run_once([sys.executable, "-c", "import numpy, rich.console"], tool_env()))
    for label, found in runs.items():
        print(timing_line(label, found))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


INTRO = (
    "`bench/fixed_cost_bench.py`: wall and CPU time of a `vc` run on a small dump, per code tree, "
    "beside the interpreter floor (`import numpy, rich.console`)."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "fixed_cost_bench.py", "Fixed cost of a run", INTRO))
