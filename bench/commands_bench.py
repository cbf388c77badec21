"""The commands a user runs after ``vc``, timed one-shot, code trees side by side.

    python bench/commands_bench.py DATA_ROOT [CODE_DIR ...] [--commands ac,report,vcs] [--repeat 3]

``vc`` is the comparison; what comes after it on a large network is ``vcs`` (the summary and
the first op that introduces the error), ``ac`` (the checks: the overflow scan reads every NPU
tensor, the verdict replays the flagged ops) and ``report`` (the same, drawn into one page).
Each tree first runs ``vc`` once into an output root of its own (not counted), so every
command reads a result. Then each command runs ``--repeat`` times per tree
(``python -m precision_tool --data ROOT COMMAND``, a fresh process, start-up included), the trees
alternating run by run since a shared machine's load drifts. It prints each command's median
and least wall and CPU time (the process tree's, from ``os.wait4``). No numbers are asserted.
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

FLAGGED = (0, 1)  # the commands' statuses: 1 when an op is flagged


def main(argv: list[str] | None = None) -> int:
    """Parse the flags, make each tree's result, time the commands, print a line per tree and command."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_root_and_trees(parser, "a data root with NPU dumps and goldens (e.g. compare_bench.py --keep DIR)")
    parser.add_argument("--commands", default="ac,report,vcs", help="commands to time, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command per tree (default 3)")
    add_write_flag(parser)
    args = parser.parse_args(argv)
    root, codes = root_and_trees(args)
    names = [name.strip() for name in args.commands.split(",") if name.strip()]
    scratch = Path(tempfile.mkdtemp(prefix="commands_bench_"))
    base = {
        code: [sys.executable, "-m", "precision_tool", "--data", root, *tree_output_args(scratch, code)]
        for code in codes
    }
    print(f"load average at the start {os.getloadavg()[0]:.2f}")
    for code in codes:
        run_once(base[code] + ["vc"], tool_env(code), ok=FLAGGED)
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {(name, str(c)): [] for name in names for c in codes}
    for _ in range(args.repeat):
        for name in names:
            for code in codes:
                runs[(name, str(code))].append(run_once(base[code] + [name], tool_env(code), ok=FLAGGED))
    for (name, code), found in runs.items():
        print(timing_line(f"{name} ({code})", found))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    return 0


INTRO = (
    "`bench/commands_bench.py`: wall and CPU time of the one-shot commands that follow a `vc` "
    "(`ac`, `report`, `vcs`) on one data root, per code tree."
)

if __name__ == "__main__":
    sys.exit(run_writing(main, "commands_bench.py", "Commands after vc", INTRO))
