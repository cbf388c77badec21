"""docs/performance.md, the one place for benchmark figures: each bench script's ``--write``.

    python bench/perf_doc.py --help

A bench script's section is a ``## `` heading of docs/performance.md; ``--write`` replaces one
``### `` subsection of it (the latest run), leaving the rest of the file as it was. Scripts that
build their own tables (``msprobe_bench.py``) call :func:`write_doc`; the others run under
:func:`run_writing`, which also records what they print and puts that, with the command line and
the date, under the subsection ``Latest run: bench/<script>``.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import shlex
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "performance.md"
TITLE = "# Performance\n\nFigures the bench scripts printed on this project's machine, one section per script.\n"


def _span(lines: list[str], heading: str, start: int, end: int, level: str) -> tuple[int, int]:
    """Where ``heading``'s lines are within ``lines[start:end]``, up to its next heading of
    ``level``; (end, end) when it is not there."""
    if heading not in lines[start:end]:
        return end, end
    first = lines.index(heading, start)
    last = next((i for i in range(first + 1, end) if lines[i].startswith(level)), end)
    return first, last


def write_doc(section: str, intro: str, key: str, body: str, path: Path | None = None) -> None:
    """Put ``body`` under ``### key`` in ``## section`` of ``path`` (docs/performance.md),
    replacing that subsection only; the section (with ``intro``) or the file is created when
    missing."""
    path = DOC if path is None else path
    text = path.read_text(encoding="utf-8") if path.exists() else TITLE
    lines = text.rstrip("\n").split("\n")
    heading = f"## {section}"
    if heading not in lines:
        lines += ["", heading, "", *intro.strip("\n").split("\n")]
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    first, last = _span(lines, f"### {key}", start, end, "### ")
    before = lines[:first]
    while before and not before[-1]:
        before.pop()
    new = before + ["", f"### {key}", "", *body.strip("\n").split("\n"), ""] + lines[last:]
    path.write_text("\n".join(new).rstrip("\n") + "\n", encoding="utf-8")


def machine() -> str:
    """The machine a run was on, in one line (cores, RAM, Python)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            kib = next(int(line.split()[1]) for line in handle if line.startswith("MemTotal:"))
        ram = f", {kib / 2**20:.1f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        ram = ""
    return f"{os.cpu_count()} cores{ram}, Python {platform.python_version()}"


class _Tee(io.TextIOBase):
    """Standard output that is also kept, so what a bench prints can be written down."""

    def __init__(self, stream):
        self.stream, self.kept = stream, io.StringIO()

    def write(self, text: str) -> int:
        self.kept.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def add_write_flag(parser: argparse.ArgumentParser) -> None:
    """``--write``: put what the run prints into docs/performance.md."""
    parser.add_argument(
        "--write", action="store_true", help=f"also put what this run prints into {DOC.relative_to(REPO)}"
    )


def run_writing(main, script: str, section: str, intro: str) -> int:
    """``main()``'s status; with ``--write`` among the arguments, what it printed goes under
    ``### Latest run: bench/<script>`` of ``section``, after the command line, the date and the
    machine."""
    if "--write" not in sys.argv[1:]:
        return main() or 0
    tee = _Tee(sys.stdout)
    sys.stdout = tee
    try:
        status = main() or 0
    finally:
        sys.stdout = tee.stream
    command = shlex.join(["python", f"bench/{script}", *sys.argv[1:]])
    body = (
        f"`{command}` ({time.strftime('%Y-%m-%d')}; {machine()}; exit status {status}):\n\n"
        f"```\n{tee.kept.getvalue().rstrip()}\n```"
    )
    write_doc(section, intro, f"Latest run: bench/{script}", body)
    print(f"written to {DOC}")
    return status


def main(argv: list[str] | None = None) -> int:
    """Only explains itself: the module is a helper of the other bench scripts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
