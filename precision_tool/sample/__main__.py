"""``python -m precision_tool.sample [DIR]``: (re)write the sample data tree."""

import shutil
import sys
from pathlib import Path

from precision_tool.sample import write_sample


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "precision_data")
    # Only the generated sources are replaced; the tool's own output under temp/ is kept.
    for part in ("npu", "tf", "overflow", "fusion"):
        shutil.rmtree(root / part, ignore_errors=True)
    write_sample(root)
    print(f"sample data written to {root}")
    return 0


sys.exit(main(sys.argv[1:]))
