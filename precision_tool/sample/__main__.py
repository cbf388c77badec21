"""``python -m precision_tool.sample [DIR] [--defect KIND]``: (re)write the sample data tree."""

import argparse
import shutil
import sys
from pathlib import Path

from precision_tool.sample import write_sample
from precision_tool.sample.defects import KINDS


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m precision_tool.sample",
                                     description="Write the sample precision_data tree.")
    parser.add_argument("root", nargs="?", default="precision_data", help="where to write it")
    parser.add_argument("--defect", choices=KINDS,
                        help="plant this kind of defect instead of the shipped one (conv2's kernel "
                             "read with H and W swapped, a 'computation' defect); none: no defect")
    args = parser.parse_args(argv)
    root = Path(args.root)
    # Only the generated sources are replaced; the tool's own output under temp/ is kept.
    for part in ("npu", "tf", "overflow", "fusion"):
        shutil.rmtree(root / part, ignore_errors=True)
    write_sample(root, defect=args.defect)
    print(f"sample data written to {root}" + (f" (defect: {args.defect})" if args.defect else ""))
    return 0


sys.exit(main(sys.argv[1:]))
