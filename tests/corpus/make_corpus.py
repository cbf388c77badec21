"""Generate the corpus of bad and odd inputs: ``python -m tests.corpus.make_corpus DIR``.

Every file is written by the project's own writers (``dump_write``, ``golden.write_golden``,
``graph_write``, ``result_csv``) and then broken on purpose, so no binary is committed. Each
case is a directory ``DIR/{case}/`` with its own data root ``precision_data/``; ``DIR/cases.json``
lists every case with the commands run on it and the outcome each must get.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .base import Case, make_case, manifest
from .cases_dump import CASES as DUMP_CASES
from .cases_files import CASES as FILE_CASES
from .cases_forms import CASES as FORM_CASES
from .cases_graph import CASES as GRAPH_CASES

CASES: list[Case] = [*DUMP_CASES, *FILE_CASES, *GRAPH_CASES, *FORM_CASES]


def make_corpus(directory: str | Path, names: list[str] | None = None) -> list[Case]:
    """Write the cases (all, or those called ``names``) under ``directory``, which must be new
    or empty; returns them."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise ValueError(f"{directory} is not empty: the corpus goes into a new directory")
    chosen = [c for c in CASES if names is None or c.name in names]
    for case in chosen:
        make_case(directory, case)
    (directory / "cases.json").write_text(manifest(chosen) + "\n", encoding="utf-8")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.corpus.make_corpus", description="Write the corpus of bad and odd inputs."
    )
    parser.add_argument("directory", help="where to write it (created)")
    parser.add_argument("cases", nargs="*", help="only these cases (default: all)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.cases) - {case.name for case in CASES})
    if unknown:
        parser.error(f"no such case: {', '.join(unknown)}")
    try:
        chosen = make_corpus(args.directory, args.cases or None)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"{len(chosen)} cases written to {args.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
