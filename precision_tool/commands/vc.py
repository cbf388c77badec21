"""``vc``: vector compare, every NPU tensor against its golden counterpart, into result CSVs.

What is compared is planned by :mod:`precision_tool.compare.plan` (without ``-lt``: debug_0's
newest run against ``tf/dump`` through the Build graph; with ``-lt``/``-rt``: any two
directories); this command runs each planned comparison and streams its rows into one CSV per
(device, sub-graph, step), all in one new ``temp/vector_compare/{YYYYmmddHHMMSS}/``.

:func:`vector_compare` is the programmatic entry (``ac -c`` uses it); :func:`run` is the command.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rich.text import Text

from ..context import Context
from ..formats.atomic import STAMP, OutputRoot, stamps
from ..render.lines import OneLineText, one_line
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult


@dataclass
class Summary:
    """What one CSV holds, counted while it was written."""

    label: str
    path: Path
    rule: object  # a compare.divergence.FlagRule
    compared: int = 0
    not_compared: int = 0
    flagged_ops: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set, repr=False)

    def add(self, row) -> None:
        """Count one :class:`~precision_tool.compare.result.CompareRow`."""
        if row.compared:
            self.compared += 1
        elif row.tensor_index:
            self.not_compared += 1
        diverges = self.rule.diverges(row.cosine, row.metric("RelativeEuclideanDistance"),
                                      row.npu_nonfinite)
        if row.is_output and diverges and row.op_name not in self._seen:
            self._seen.add(row.op_name)
            self.flagged_ops.append(row.op_name)

    def line(self) -> OneLineText:
        """The one-line summary (kept on one line so scripts can take the path from it)."""
        flagged = len(self.flagged_ops)
        return OneLineText(Text.assemble(
            (one_line(self.label), "title"),
            f": {self.compared} tensors compared, {self.not_compared} not compared, ",
            (f"{flagged} op(s) flagged ({self.rule.describe()})", "cos.bad" if flagged else "cos.good"),
            " -> ", (one_line(str(self.path)), "path")))


class CompareProgress:
    """The one live display: a transient bar of pairs and bytes per CSV, on terminals only.

    Refreshed from the engine's progress callback rather than by rich's refresh thread, so the
    process stays single-threaded and the engine can fork its workers (see the engine).
    """

    def __init__(self, console, enabled: bool = True) -> None:
        self.progress = None
        if enabled and console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)

            self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                                     MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                                     TimeElapsedColumn(), console=console, transient=True,
                                     auto_refresh=False)

    def __enter__(self) -> CompareProgress:
        if self.progress is not None:
            self.progress.start()
            self.progress.refresh()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def track(self, label: str, total: int):
        """A progress callback for one CSV, or None when nothing is displayed."""
        if self.progress is None:
            return None
        from rich.filesize import decimal

        task = self.progress.add_task(label, total=total, rate="")
        start = time.monotonic()

        def update(done: int, _total: int, nbytes: int) -> None:
            rate = nbytes / max(time.monotonic() - start, 1e-6)
            self.progress.update(task, completed=done, rate=f"{decimal(nbytes)} at {decimal(int(rate))}/s")
            self.progress.refresh()
        return update


# --- running ---------------------------------------------------------------------------------

def _result_dir(context: Context, output: str | None) -> tuple[OutputRoot, Path, datetime, bool]:
    """(the root written under, the directory of the CSVs, their time stamp, whether the
    directory is new). Without ``-o``: a new ``vector_compare/{stamp}`` of the output root,
    created exclusively, so runs started in the same second never share (or replace) a result."""
    from ..compare.result_csv import RESULTS_DIR

    when = datetime.now().replace(microsecond=0)
    if output:
        root = context.output_at(output)
        existed = root.path.is_dir()
        return root, root.directory(), when, not existed
    root = context.output
    directory = root.new_directory([RESULTS_DIR], stamps(when))
    return root, directory, datetime.strptime(directory.name, STAMP), True


def _csv_path(directory: Path, when: datetime, tag: str | None) -> Path:
    from ..compare.result_csv import result_path

    return directory / result_path(directory, when, tag).name


def _write(plan, root: OutputRoot, path: Path, metrics, workers: int, rule, display) -> Summary:
    from ..compare.api import run_comparison
    from ..compare.result_csv import ResultWriter

    summary = Summary(plan.label, path, rule)
    progress = display.track(plan.label, len(plan.tasks)) if display else None
    with ResultWriter(path, root=root, golden_address=plan.npu_vs_npu) as writer:
        for row in run_comparison(plan, metrics, workers, progress):
            writer.write(row)
            summary.add(row)
    return summary


def _csv_tags(plans) -> list[str | None]:
    """The tag of each plan's CSV name: none for a single CSV, made unique when tags repeat."""
    tags = [p.tag for p in plans]
    if len(plans) == 1:
        return [None]
    return [tag if tags.count(tag) == 1 else f"{tag}_{i}" for i, tag in enumerate(tags)]


def vector_compare(context: Context, *, left: str | None = None, right: str | None = None,
                   graph: str | None = None, steps: str | None = None, algorithms: str | None = None,
                   output: str | None = None, show_progress: bool = True) -> CommandResult:
    """Run a vector compare and return the notes and one summary line per CSV written.

    Status FLAGGED when any op is flagged (compare.divergence's rule), else OK; the
    CSVs written are the result's ``files``. Raises PrecisionToolError for bad input (no dumps,
    bad -lt/-rt, unknown metric or graph).
    """
    from ..compare.divergence import FlagRule
    from ..compare.metrics import select_metrics
    from ..compare.plan import plan_comparisons

    metrics = select_metrics(algorithms)
    plans = plan_comparisons(context, left=left, right=right, graph=graph, steps=steps)
    root, directory, when, created = _result_dir(context, output)
    out: list = [Text(note, style="warn") for p in plans for note in p.notes]
    summaries, config = [], context.config
    try:
        with CompareProgress(context.console, enabled=show_progress) as display:
            for plan, tag in zip(plans, _csv_tags(plans)):
                summaries.append(_write(plan, root, _csv_path(directory, when, tag), metrics,
                                        config.worker_count, FlagRule.from_config(config), display))
    except BaseException:  # Ctrl-C or an error: no CSV of this one is left half-written
        if created:  # only succeeds when empty: complete CSVs of earlier plans stay
            root.remove_empty_dir(directory)
        raise
    out += [s.line() for s in summaries]
    flagged = any(s.flagged_ops for s in summaries)
    return CommandResult(out, ExitStatus.FLAGGED if flagged else ExitStatus.OK, [s.path for s in summaries])


def run(args, context: Context) -> CommandResult:
    """The ``vc`` command."""
    return vector_compare(context, left=args.left, right=args.right, graph=args.graph, steps=args.step,
                          algorithms=args.alg, output=args.output)


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument("-lt", "--left", metavar="LEFT",
                        help="left directory: an NPU debug dir (npu/debug_N: newest run), any NPU dump "
                             "dir down to a step dir, or a dir of .npy files")
    parser.add_argument("-rt", "--right", metavar="RIGHT",
                        help="right directory, as -lt: npy (NPU vs TF), NPU (NPU vs NPU, by op name) "
                             "or npy with an npy -lt (by golden name and index, else file name)")
    parser.add_argument("-g", "--graph", metavar="GRAPH",
                        help="the Build graph to pair with: a graph file, or a model/graph name "
                             "(default: the graph named like the step dir's model, or the only one)")
    parser.add_argument("--step", metavar="S", help="steps to compare, as TF_DUMP_STEP ('0', '0|5', '3-5')")
    parser.add_argument("-alg", "--alg", metavar="ALG",
                        help="metrics: msaccucmp numbers 0-9 or names, comma-separated (0 = cosine "
                             "only, fastest). Default: all ten")
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="write the CSV(s) into DIR instead of vector_compare/{timestamp}/ of "
                             "the output root (temp/ unless --out)")


COMMAND = Command(
    name="vc", summary="vector compare: every NPU tensor against its golden tensor, into result CSVs",
    add_arguments=_add_arguments, run=run,
    completions={"-lt": "path", "--left": "path", "-rt": "path", "--right": "path", "-g": "path",
                 "--graph": "path", "-o": "path", "--output": "path"},
    description=(
        "Without -lt: npu/debug_0 (newest run, steps of TF_DUMP_STEP or --step) against tf/dump, "
        "paired through the Build graph (fused ops, Cast/TransData stepped over); by name when "
        "there is no graph. With -lt/-rt: an NPU dump dir (npu/debug_N, a run dir or a step dir) "
        "against an npy dir or another NPU dump dir (by op name, tensors by kind and index), or "
        "npy dir against npy dir. One CSV per device/sub-graph/step in "
        "temp/vector_compare/{YYYYmmddHHMMSS}/, written as results stream in. Prints one line per "
        "CSV; exit status 1 when an op is flagged: an output cosine <= COSINE_THRESHOLD, a "
        "RelativeEuclideanDistance >= RED_THRESHOLD, or NaN/Inf on the NPU."))
