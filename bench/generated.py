"""The data sets the benches generate, and the one rule for clearing one before it is made again."""

from __future__ import annotations

import shutil
from pathlib import Path


def clear_generated(root: Path, marker: str) -> None:
    """Empty ``root`` for a new data set: a directory a bench generated (it holds ``marker``),
    an empty one or none. Anything else is refused with one line, so a ``--keep`` or
    ``--workdir`` that names other data never deletes it."""
    if not root.exists():
        return
    if not (root / marker).is_file() and any(root.iterdir()):
        raise SystemExit(f"error: {root} holds files no bench generated (no {marker}): name a new or empty directory")
    shutil.rmtree(root)


def main(argv: list[str] | None = None) -> int:
    """Only explains itself: the module is a helper of the other bench scripts."""
    import argparse

    argparse.ArgumentParser(description=__doc__).parse_args(argv)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
