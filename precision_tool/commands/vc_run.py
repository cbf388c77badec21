"""How ``vc`` writes a run: its CSVs into the run's directory from one run of the engine, what
each CSV holds counted as it is written (:class:`Summary`), the live progress bar, and what a
failed or stopped run leaves (nothing half-written; an interrupted run can resume).

:func:`run_into` is :func:`~precision_tool.commands.vc.vector_compare`'s once planned.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ClusterStopped, PrecisionToolError

if TYPE_CHECKING:
    from ..context import Context
    from ..render.lines import OneLineText


@dataclass
class Summary:
    """What one CSV holds, counted while it was written."""

    label: str
    path: Path
    rule: object  # a compare.verdict.FlagRule
    compared: int = 0
    not_compared: int = 0
    unreadable: int = 0  # not compared: a Dask worker could not read the files
    flagged_ops: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set, repr=False)

    def add(self, row) -> None:
        """Count one :class:`~precision_tool.compare.result.CompareRow`."""
        if row.compared:
            self.compared += 1
        elif row.tensor_index:
            from ..compare.cluster_preflight import UNREADABLE  # only for rows not compared

            self.not_compared += 1
            self.unreadable += row.fail_reason.startswith(UNREADABLE)
        diverges = self.rule.diverges(row.cosine, row.metric("RelativeEuclideanDistance"), row.npu_nonfinite)
        if row.is_output and diverges and row.op_name not in self._seen:
            self._seen.add(row.op_name)
            self.flagged_ops.append(row.op_name)

    def line(self) -> OneLineText:
        """The one-line summary (kept on one line so scripts can take the path from it)."""
        from rich.text import Text

        from ..render.lines import OneLineText, one_line

        flagged = len(self.flagged_ops)
        return OneLineText(
            Text.assemble(
                (one_line(self.label), "title"),
                f": {self.compared} tensors compared, {self.not_compared} not compared, ",
                (f"{flagged} op(s) flagged ({self.rule.describe()})", "cos.bad" if flagged else "cos.good"),
                " -> ",
                (one_line(str(self.path)), "path"),
            )
        )


class CompareProgress:
    """The one live display: a transient bar of pairs and bytes per CSV, on terminals only.

    Refreshed from the engine's progress callback rather than by rich's refresh thread, so the
    process stays single-threaded and the engine can fork its workers (see the engine).
    """

    def __init__(self, console, enabled: bool = True) -> None:
        self.progress = None
        if enabled and console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=24),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                auto_refresh=False,
            )

    def __enter__(self) -> CompareProgress:
        if self.progress is not None:
            self.progress.start()
            self.progress.refresh()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()

    def track(self, label: str):
        """A progress callback for one run, or None when nothing is displayed. Its total is the
        engine's: the rows to compute of the tasks paired so far (the pairing may still run)."""
        if self.progress is None:
            return None
        from rich.filesize import decimal

        task = self.progress.add_task(label, total=None, rate="")
        start = time.monotonic()

        def update(done: int, total: int, nbytes: int) -> None:  # total: the rows still to compute
            rate = nbytes / max(time.monotonic() - start, 1e-6)
            self.progress.update(task, completed=done, total=total, rate=f"{decimal(nbytes)} at {decimal(int(rate))}/s")
            self.progress.refresh()

        return update


# --- running ---------------------------------------------------------------------------------


def write_all(
    plans, root, paths: list[Path], metrics, config, rule, display, cache, scheduler, collectors
) -> tuple[list[Summary], dict]:
    """Every plan's rows into its CSV, from one run of the engine (one pool for all devices,
    sub-graphs and steps: local workers, or the cluster of ``config.scheduler``), and into its
    collector of ``collectors`` (msprobe's lines, or None); every CSV appears only once all are
    complete. Returns the summaries and how many rows were reused from ``cache`` and computed."""
    from contextlib import ExitStack

    from ..compare.api import run_comparisons
    from ..compare.result_csv import ResultWriter

    summaries = [Summary(plan.label, path, rule) for plan, path in zip(plans, paths)]
    label = plans[0].label if len(plans) == 1 else f"{len(plans)} comparisons"
    progress = display.track(label) if display else None  # not len(plan.tasks): that would pair them all first
    counts: dict = {}
    with ExitStack() as stack:
        writers = [
            stack.enter_context(ResultWriter(path, root=root, golden_address=plan.npu_vs_npu, metrics=metrics))
            for plan, path in zip(plans, paths)
        ]
        for owner, row in run_comparisons(
            plans,
            metrics,
            config.worker_count,
            progress,
            cache,
            counts,
            scheduler=scheduler,
            split_bytes=config.split_bytes,
        ):
            writers[owner].write(row)
            summaries[owner].add(row)
            if collectors[owner] is not None:
                collectors[owner].add(row)
    return summaries, counts


def run_into(
    directory,
    options,
    plans,
    metrics,
    context: Context,
    config,
    spec,
    *,
    show_progress: bool,
    reuse: bool,
    resume: bool,
) -> tuple[list[Summary], dict]:
    """Every plan's CSV in ``directory``, its run.json saying running, then complete. Until the
    manifest names the new CSVs (the moment readers switch to them) a failure or a stop leaves
    none of them: on a bad output nothing of the run is left (a resumed run's directory stays),
    on Ctrl-C or a stop signal the directory is marked interrupted, for ``vc --resume``. After
    it, the CSVs of the earlier run there go. ``config`` is the context's, with the command's
    scheduler; ``spec`` the cluster's (None: local workers). A cluster that went away
    (ClusterStopped) leaves the run interrupted, as Ctrl-C does, and says how to resume. Returns :func:`write_all`'s, the counts with ``cache_warning`` when the row
    cache turned itself off."""
    from ..compare.manifest import csv_info, write_manifest
    from ..compare.result_dir import COMPLETE, RUNNING, csv_tags
    from ..compare.row_cache import RowCache
    from ..compare.verdict import FlagRule

    paths = [directory.csv_path(tag) for tag in csv_tags([p.tag for p in plans])]
    collectors: list = [None] * len(plans)
    if any(plan.msprobe is not None for plan in plans):  # imported only for msprobe dumps
        from ..compare.msprobe_files import msprobe_lines, write_msprobe_files

        collectors = msprobe_lines(plans)
    switched = False
    try:
        cache = RowCache(context.output, read=reuse, since=directory.fresh_since)
        directory.mark(RUNNING, options)
        with (
            CompareProgress(context.console, enabled=show_progress) as display,
            cache if cache is not None else nullcontext(),
        ):
            found = write_all(
                plans,
                directory.root,
                paths,
                metrics,
                config,
                FlagRule.from_config(config),
                display,
                cache,
                spec,
                collectors,
            )
        if cache is not None and cache.warning:  # read after the last flush, at the with's end
            found[1]["cache_warning"] = cache.warning
        write_manifest(directory.root, directory.path, [csv_info(p.name, plan) for p, plan in zip(paths, plans)])
        if any(collectors):
            write_msprobe_files(directory.root, directory.path, plans, collectors)
        switched = True
        directory.replace_previous(paths)
        directory.mark(COMPLETE, options)
    except ClusterStopped as exc:  # not the data's fault: what was computed is kept, to resume
        _drop_unfinished(directory, [] if switched else paths)
        _mark_interrupted(directory, options)
        raise PrecisionToolError(f"{exc}; vc --resume {directory.path} computes the rest") from None
    except PrecisionToolError:  # a full disk, a refused link: no new CSV and no directory is left
        _drop_unfinished(directory, [] if switched else paths)
        _abandon(directory, options, resume)
        raise
    except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: no CSV is left half-written, the run can resume
        _drop_unfinished(directory, [] if switched else paths)
        _mark_interrupted(directory, options)
        raise
    return found


def remove_stale_parts(context: Context, output) -> None:
    """Temporary files earlier runs left when they were killed (SIGKILL, a power cut): gone,
    under the output root and in ``output`` (the OutputRoot of -o or of the run resumed)."""
    context.output.remove_stale_parts()
    if output is not None:
        output.remove_stale_parts(depth=0)


def _drop_unfinished(directory, paths: list[Path]) -> None:
    """Remove the CSVs of ``paths`` this attempt made (some may be complete when another
    failed): a result is all its CSVs or none. Those an earlier attempt left stay listed for
    replacing."""
    for path in paths:
        if path.name not in directory.replaces:
            directory.root.remove(path)


def _abandon(directory, options, resume: bool) -> None:
    """Remove what a failed run made: its run.json and, when empty, its directory (a resumed
    run's directory stays, marked interrupted again)."""
    from ..compare.result_dir import RUN_FILE

    if resume:
        _mark_interrupted(directory, options)
        return
    directory.root.remove(directory.path / RUN_FILE)
    directory.root.remove_empty_dir(directory.path)


def _mark_interrupted(directory, options) -> None:
    """Say the run stopped, so ``vc --resume`` continues it; never masks why it stopped."""
    from ..compare.result_dir import INTERRUPTED

    try:
        directory.mark(INTERRUPTED, options)
    except (OSError, PrecisionToolError):
        pass
