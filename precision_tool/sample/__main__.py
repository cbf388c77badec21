"""``python -m precision_tool.sample [DIR] [--defect KIND | --framework F [--task T]]``: (re)write
the sample data tree, or with ``--framework`` the msprobe sample pair ``DIR/npu`` + ``DIR/bench``."""

import argparse
import re
import shutil
import sys
from pathlib import Path

from precision_tool.formats.msprobe_write import FRAMEWORKS, TASKS
from precision_tool.sample import write_sample
from precision_tool.sample.defects import KINDS
from precision_tool.sample.msprobe import RUNS, write_msprobe_sample


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m precision_tool.sample",
        description="Write the sample precision_data tree, or an msprobe sample pair.",
    )
    parser.add_argument(
        "root", nargs="?", help="where to write it (default precision_data; with --framework, msprobe_data)"
    )
    parser.add_argument(
        "--defect",
        choices=KINDS,
        help="plant this kind of defect instead of the shipped one (conv2's kernel "
        "read with H and W swapped, a 'computation' defect); none: no defect",
    )
    parser.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        help="write msprobe dumps of a small transformer instead: DIR/npu (the NPU run, "
        "with layers.1.attn.proj's weight read untransposed) and DIR/bench",
    )
    parser.add_argument(
        "--task",
        choices=TASKS,
        help="with --framework: tensor (statistics and every tensor, the default) or statistics",
    )
    return parser


def _write_msprobe(root: Path, framework: str, task: str) -> int:
    # Only earlier msprobe runs are replaced: a directory holding anything but step dirs is not ours.
    for run in RUNS:
        path = root / run
        if path.is_dir() and any(not re.fullmatch(r"step[0-9]+", p.name) for p in path.iterdir()):
            print(f"{path}: holds more than msprobe step directories; not replaced", file=sys.stderr)
            return 2
    for run in RUNS:
        shutil.rmtree(root / run, ignore_errors=True)
    write_msprobe_sample(root, framework, task)
    print(f"msprobe {framework} sample ({task}) written to {root / 'npu'} and {root / 'bench'}")
    return 0


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.framework:
        if args.defect:
            parser.error("--defect plants defects in the precision_data sample, not with --framework")
        return _write_msprobe(Path(args.root or "msprobe_data"), args.framework, args.task or "tensor")
    if args.task:
        parser.error("--task goes with --framework")
    root = Path(args.root or "precision_data")
    # Only the generated sources are replaced; the tool's own output under temp/ is kept.
    for part in ("npu", "tf", "overflow", "fusion"):
        shutil.rmtree(root / part, ignore_errors=True)
    write_sample(root, defect=args.defect)
    print(f"sample data written to {root}" + (f" (defect: {args.defect})" if args.defect else ""))
    return 0


sys.exit(main(sys.argv[1:]))
