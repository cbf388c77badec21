"""``vcs``: the summary of a comparison result, with the first operator that introduces the error.

Reads result CSVs (ours or msaccucmp's, any header variant) from a file, a directory, or by
default the newest ``vector_compare/{stamp}`` directory of the output root (``temp/``); each CSV
is summarised on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult
from .result_args import add_result_argument, cosine_arg, limit_arg, red_arg, result_sources, settings

if TYPE_CHECKING:  # the result reader and the renderers load numpy: only when vcs runs
    from ..compare.devices import DeviceVerdict
    from ..compare.divergence import Divergence
    from ..compare.verdict import FlagRule
    from ..context import Context


def _add_arguments(parser: CommandParser) -> None:
    add_result_argument(parser)
    parser.add_argument(
        "-c",
        "--cosine",
        type=cosine_arg,
        metavar="COS",
        help="flag ops with an output cosine <= COS; defaults to the config's threshold (0.98)",
    )
    parser.add_argument(
        "--red",
        type=red_arg,
        metavar="RED",
        help="also flag ops with an output RelativeEuclideanDistance >= RED; defaults "
        "to RED_THRESHOLD, else the RED that goes with COS (0.2 at 0.98)",
    )
    parser.add_argument(
        "-l",
        "--limit",
        type=limit_arg,
        metavar="LIMIT",
        help="list at most LIMIT flagged ops, 0 for all; defaults to the config's vcs limit (3)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the verdict as JSON (every flagged op; see docs/json.md)"
    )


@dataclass
class Summaries:
    """The verdict on each CSV read, and the errors of those that could not be read."""

    results: list[tuple[Path, Divergence]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def devices(self) -> list[DeviceVerdict]:
        """The cross-device verdicts; each CSV's device comes from its result manifest."""
        from ..compare.devices import device_verdicts
        from ..compare.manifest import info_of

        return device_verdicts(
            ((info.device if (info := info_of(path)) else None), divergence) for path, divergence in self.results
        )

    @property
    def status(self) -> ExitStatus:
        """ERROR when a CSV could not be read, else FLAGGED when an op is flagged, else OK."""
        if self.errors:
            return ExitStatus.ERROR
        return ExitStatus.FLAGGED if any(d.flagged for _, d in self.results) else ExitStatus.OK


def analyse_results(context: Context, paths: list[Path], rule: FlagRule) -> Summaries:
    """Read and judge each CSV of ``paths`` (the one verdict: :func:`~..compare.judged.judged_rows`).
    A single CSV that cannot be read raises PrecisionToolError (its one error line then goes
    where errors go); with several, the others are still judged and the error is kept."""
    from ..compare.judged import judged_rows
    from ..compare.result_read import read_result_csv

    found = Summaries()
    for path in paths:
        try:
            rows = read_result_csv(path, require=("CosineSimilarity",))  # summarised by cosine
        except PrecisionToolError as exc:
            if len(paths) == 1:
                raise
            found.errors.append(str(exc))
            continue
        found.results.append((path, judged_rows(context, path, rows, rule)))
    return found


def render_summaries(found: Summaries, limit: int, as_json: bool = False) -> list:
    """The renderables of :func:`analyse_results`' verdicts: panels, or one JSON document."""
    from rich.text import Text

    from ..render.devices import device_panel
    from ..render.json_out import dumps, summary_json
    from ..render.lines import OneLine, RawLines
    from ..render.summary import render_summary

    devices = found.devices()
    if as_json:
        return [RawLines(dumps(summary_json(found.results, found.errors, devices)))]
    renderables: list = []
    if found.results:
        renderables.append(Text(f"result: {found.results[0][0].parent}", style="muted"))
    renderables += [OneLine(f"error: {error}") for error in found.errors]
    renderables += [render_summary(path.name, divergence, limit) for path, divergence in found.results]
    if len(devices) > 1:
        renderables.append(device_panel(devices))
    return renderables


def summarise(context: Context, paths: list[Path], rule: FlagRule, limit: int, as_json: bool = False) -> CommandResult:
    """The summary of each CSV of ``paths`` (see :func:`analyse_results`), as text or JSON."""
    found = analyse_results(context, paths, rule)
    return CommandResult(render_summaries(found, limit, as_json), found.status)


def run(args, context: Context) -> CommandResult:
    """Summarise the result named by ``-f`` (default: the newest) at ``-c``, listing ``-l`` ops."""
    rule, limit = settings(args, context)
    return summarise(context, result_sources(args.file, context), rule, limit, as_json=args.json)


COMMAND = Command(
    name="vcs",
    summary="summary of a comparison result: flagged ops and the first that introduces the error",
    add_arguments=_add_arguments,
    run=run,
    completions={"-f": "path", "--file": "path"},
    description="List, in execution order, the flagged ops (an output cosine <= COS, an output "
    "RelativeEuclideanDistance >= RED, or NaN/Inf on the NPU) with the cosine of every "
    "input and output, and name the first operator that introduces the error (its "
    "inputs match, its output does not). Exit status 1 when ops are flagged.",
)
