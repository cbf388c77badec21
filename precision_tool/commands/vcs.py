"""``vcs``: the summary of a comparison result, with the first operator that introduces the error.

Reads result CSVs (ours or msaccucmp's, any header variant) from a file, a directory, or by
default the newest ``temp/vector_compare/{stamp}`` directory; each CSV is summarised on its own.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.text import Text

from ..compare.divergence import analyse
from ..compare.result_csv import latest_result_dir, read_result_csv
from ..context import Context
from ..errors import PrecisionToolError
from ..render.lines import OneLine
from ..render.summary import render_summary
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult


def cosine_arg(text: str) -> float:
    """An argparse type: a cosine threshold between -1 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not -1.0 <= value <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is not a cosine between -1 and 1")
    return value


def limit_arg(text: str) -> int:
    """An argparse type: how many ops to list, 0 meaning all."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative (0 lists every flagged op)")
    return value


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("-f", "--file", metavar="FILE|DIR",
                        help="a result CSV or a directory of them; defaults to the newest result "
                             "under temp/vector_compare/")
    parser.add_argument("-c", "--cosine", type=cosine_arg, metavar="COS",
                        help="flag ops with an output cosine <= COS; defaults to the config's "
                             "threshold (0.98)")
    parser.add_argument("-l", "--limit", type=limit_arg, metavar="LIMIT",
                        help="list at most LIMIT flagged ops, 0 for all; defaults to the config's "
                             "vcs limit (3)")


def _newest_subdir_with_csv(directory: Path) -> Path | None:
    dirs = [d for d in directory.iterdir() if d.is_dir() and any(d.glob("*.csv"))]
    return max(dirs, key=lambda d: d.name, default=None)


def _csvs_in(directory: Path) -> list[Path]:
    csvs = sorted(p for p in directory.glob("*.csv") if p.is_file())
    if csvs:
        return csvs
    newest = _newest_subdir_with_csv(directory)  # e.g. -f temp/vector_compare
    if newest is None:
        raise PrecisionToolError("no result CSV in this directory", directory)
    return sorted(p for p in newest.glob("*.csv") if p.is_file())


def _given_path(text: str, context: Context) -> Path:
    path = Path(text).expanduser()
    if not path.exists() and not path.is_absolute():
        under_root = context.config.data_root_dir / path
        if under_root.exists():
            return under_root
    if not path.exists():
        raise PrecisionToolError("no such result file or directory", path)
    return path


def result_sources(file_arg: str | None, context: Context) -> list[Path]:
    """The CSVs to summarise: ``file_arg`` (a CSV or a directory of them), or every CSV of the
    newest result directory under the data root.

    Raises:
        PrecisionToolError: nothing to summarise there (the message suggests running ``vc``).
    """
    if file_arg:
        path = _given_path(file_arg, context)
        return _csvs_in(path) if path.is_dir() else [path]
    newest = latest_result_dir(context.config.data_root_dir)
    if newest is None:
        where = context.config.data_root_dir / "temp" / "vector_compare"
        raise PrecisionToolError(f"no comparison result under {where}; run 'vc' (or 'ac -c') first")
    return sorted(p for p in newest.glob("*.csv") if p.is_file())


def summarise(paths: list[Path], threshold: float, limit: int) -> CommandResult:
    """The summary of each CSV of ``paths``; FLAGGED when any op is flagged, ERROR when a CSV
    cannot be read (the others are still summarised). A single CSV that cannot be read raises
    PrecisionToolError: the one error line then goes where errors go (stderr one-shot)."""
    renderables: list = []
    status = ExitStatus.OK
    if paths:
        renderables.append(Text(f"result: {paths[0].parent}", style="muted"))
    for path in paths:
        try:
            rows = read_result_csv(path, require=("CosineSimilarity",))  # summarised by cosine
        except PrecisionToolError as exc:
            if len(paths) == 1:
                raise
            renderables.append(OneLine(f"error: {exc}"))
            status = max(status, ExitStatus.ERROR)
            continue
        divergence = analyse(rows, threshold)
        renderables.append(render_summary(path.name, divergence, limit))
        if divergence.flagged:
            status = max(status, ExitStatus.FLAGGED)
    return CommandResult(renderables, ExitStatus(status))


def settings(args, context: Context) -> tuple[float, int]:
    """(threshold, limit) from ``-c``/``-l``, the config's defaults where not given."""
    threshold = context.config.cosine_threshold if getattr(args, "cosine", None) is None else args.cosine
    limit = context.config.vcs_limit if args.limit is None else args.limit
    return threshold, limit


def run(args, context: Context) -> CommandResult:
    """Summarise the result named by ``-f`` (default: the newest) at ``-c``, listing ``-l`` ops."""
    threshold, limit = settings(args, context)
    return summarise(result_sources(args.file, context), threshold, limit)


COMMAND = Command(
    name="vcs", summary="summary of a comparison result: flagged ops and the first that introduces the error",
    add_arguments=_add_arguments, run=run,
    completions={"-f": "path", "--file": "path"},
    description="List, in execution order, the ops whose output cosine is <= COS with the cosine of "
                "every input and output, and name the first operator that introduces the error "
                "(its inputs match, its output does not). Exit status 1 when ops are flagged.")
