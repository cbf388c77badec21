"""The arguments that name a comparison result and the thresholds it is judged at.

``vcs`` reads them, and so do the commands that show the same result another way (``report``,
``ac``, ``why``, ``explore``): they import them from here, not from each other, so each flag is
spelled and checked once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from .registry import CommandParser, setting_arg

if TYPE_CHECKING:
    from ..compare.verdict import FlagRule
    from ..context import Context


# The flags standing for settings, checked by the settings' own rules (config.py's).
cosine_arg = setting_arg("COSINE_THRESHOLD")  # a cosine between -1 and 1
red_arg = setting_arg("RED_THRESHOLD")  # a finite RelativeEuclideanDistance, 0 or more
limit_arg = setting_arg("VCS_LIMIT")  # how many ops to list, 0 meaning all


def add_result_argument(parser: CommandParser) -> None:
    """``-f FILE|DIR``: the result to read (:func:`result_sources`), for vcs and report."""
    parser.add_argument(
        "-f",
        "--file",
        metavar="FILE|DIR",
        help="a result CSV or a directory of them; defaults to the newest result under temp/vector_compare/",
    )


def _newest_subdir_with_csv(directory: Path) -> Path | None:
    dirs = [d for d in directory.iterdir() if d.is_dir() and any(d.glob("*.csv"))]
    return max(dirs, key=lambda d: d.name, default=None)


def _csvs_in(directory: Path) -> list[Path]:
    from ..compare.manifest import result_csvs

    csvs = result_csvs(directory)
    if csvs:
        return csvs
    newest = _newest_subdir_with_csv(directory)  # e.g. -f temp/vector_compare
    if newest is None:
        raise PrecisionToolError("no result CSV in this directory", directory)
    return result_csvs(newest)


def _given_path(text: str, context: Context) -> Path:
    path = Path(text).expanduser()
    if not path.exists() and not path.is_absolute():
        for base in (context.config.data_root_dir, context.config.temp_dir):
            if (base / path).exists():
                return base / path
    if not path.exists():
        raise PrecisionToolError("no such result file or directory", path)
    return path


def result_sources(file_arg: str | None, context: Context) -> list[Path]:
    """The CSVs to summarise: ``file_arg`` (a CSV or a directory of them), or every CSV of the
    newest result directory under the output root.

    Raises:
        PrecisionToolError: nothing to summarise there (the message suggests running ``vc``).
    """
    if file_arg:
        path = _given_path(file_arg, context)
        return _csvs_in(path) if path.is_dir() else [path]
    from ..compare.result_csv import newest_result_csvs

    return newest_result_csvs(context.output_dir)


def settings(args, context: Context) -> tuple[FlagRule, int]:
    """(flag rule, limit) from ``-c``/``--red``/``-l``, the config where not given."""
    from ..compare.verdict import FlagRule

    rule = FlagRule.from_config(context.config, getattr(args, "cosine", None))
    if getattr(args, "red", None) is not None:
        rule = FlagRule(rule.cosine, args.red)
    limit = context.config.vcs_limit if args.limit is None else args.limit
    return rule, limit
