"""``vc``: vector compare, every NPU tensor against its golden counterpart, into result CSVs.

What is compared is planned by :mod:`precision_tool.compare.plan` (without ``-lt``: debug_0's
newest run against ``tf/dump`` through the Build graph; with ``-lt``/``-rt``: any two
directories); this command runs each planned comparison and streams its rows into one CSV per
(device, sub-graph, step), all in one new ``temp/vector_compare/{YYYYmmddHHMMSS}/`` (or the
``-o`` directory, whose earlier vc result the run replaces: :mod:`precision_tool.compare.result_dir`).

:func:`vector_compare` is the programmatic entry (``ac -c`` uses it); :func:`run` is the command.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..collector import gc_paused
from ..errors import PrecisionToolError
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult

if TYPE_CHECKING:  # rich and the readers load only when vc runs (--help builds this module)
    from ..context import Context
    from ..render.lines import OneLineText


@dataclass
class Summary:
    """What one CSV holds, counted while it was written."""

    label: str
    path: Path
    rule: object  # a compare.divergence.FlagRule
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

    def track(self, label: str, total: int):
        """A progress callback for one CSV, or None when nothing is displayed."""
        if self.progress is None:
            return None
        from rich.filesize import decimal

        task = self.progress.add_task(label, total=total, rate="")
        start = time.monotonic()

        def update(done: int, total: int, nbytes: int) -> None:  # total: the rows still to compute
            rate = nbytes / max(time.monotonic() - start, 1e-6)
            self.progress.update(task, completed=done, total=total, rate=f"{decimal(nbytes)} at {decimal(int(rate))}/s")
            self.progress.refresh()

        return update


# --- running ---------------------------------------------------------------------------------


def _write_all(
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
    progress = display.track(label, sum(len(p.tasks) for p in plans)) if display else None
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


OPTION_FLAGS = {
    "left": "-lt",
    "right": "-rt",
    "graph": "-g",
    "steps": "--step",
    "devices": "--device",
    "algorithms": "-alg",
    "mapping": "--mapping",
}  # CompareOptions' fields as the command line spells them


def _resumed(context: Context, resume: bool | str, output: str | None, given):
    """The result directory and options of the run to resume (the one ``resume`` or ``output``
    names, else the newest interrupted under the output root), and the warnings of the search.
    Refuses options ``given`` that differ from the run's."""
    from ..compare.result_dir import RUN_FILE, interrupted_run, resumable_dir

    named = resume if isinstance(resume, str) else None
    if named and output and Path(named).expanduser().resolve() != Path(output).expanduser().resolve():
        raise PrecisionToolError(f"vc --resume {named} and -o {output} name two directories; give one")
    named = named or output
    if named:
        directory, options = resumable_dir(context.output_at(named))
        skipped: tuple[str, ...] = ()
    else:
        found = interrupted_run(context.output)
        if found is None:
            raise PrecisionToolError(
                "vc --resume: no interrupted comparison under "
                f"{context.config.temp_dir / 'vector_compare'} (an interrupted "
                "vc -o DIR resumes with vc --resume DIR)"
            )
        directory, options, skipped = found
    _refuse_other_options(options, given, directory.path / RUN_FILE)
    return directory, options, skipped


def _refuse_other_options(run, given, where: Path) -> None:
    """A resume continues the run as it was started: an option given otherwise is refused."""
    differing = run.differing(given)
    if not differing:
        return
    asked = ", ".join(f"{OPTION_FLAGS[name]} {getattr(given, name)}" for name in differing)
    theirs = ", ".join(
        f"{OPTION_FLAGS[name]} {getattr(run, name)}" if getattr(run, name) is not None else f"no {OPTION_FLAGS[name]}"
        for name in differing
    )
    raise PrecisionToolError(
        f"vc --resume: {asked} is not how the run was started ({theirs}); leave "
        "it out to resume the run, or run vc without --resume to start afresh",
        where,
    )


def _cache_lines(counts: dict) -> list:
    """Why the row cache turned itself off (a damaged file, a full disk), one line never wrapped,
    and how many rows it gave; each only when there is something to say."""
    from rich.text import Text

    from ..render.lines import OneLine

    lines: list = [OneLine(counts["cache_warning"], "warn")] if counts.get("cache_warning") else []
    reused = counts.get("reused", 0)
    if reused:
        lines.append(
            Text(
                f"reused {reused} row(s) of earlier runs (same files and metrics), "
                f"computed {counts.get('computed', 0)}",
                style="muted",
            )
        )
    return lines


@gc_paused()  # its plan and rows: many small objects and no cycles (precision_tool.collector)
def vector_compare(
    context: Context,
    *,
    left: str | None = None,
    right: str | None = None,
    graph: str | None = None,
    steps: str | None = None,
    algorithms: str | None = None,
    output: str | None = None,
    show_progress: bool = True,
    devices: str | None = None,
    resume: bool | str = False,
    reuse: bool = True,
    scheduler: str | None = None,
    mapping: str | None = None,
    allow_partial: bool = False,
) -> CommandResult:
    """Run a vector compare and return the notes and one summary line per CSV written.

    Rows an earlier run computed from the same files and metrics are reused unless ``reuse`` is
    False (a row cache that cannot be used is one warning line); ``resume`` continues an
    interrupted run in its directory with its options: the one in the directory ``resume`` (or
    ``output``) names, else the newest under the output root;
    options given besides must be the run's. ``output`` without ``resume`` holds this run only:
    an earlier vc result there is replaced when this one is complete (see
    :mod:`~precision_tool.compare.result_dir`). ``scheduler`` (a Dask address or ``local:N``)
    overrides the SCHEDULER setting; its workers are checked first (one line naming a worker
    that lacks something, or, with ``allow_partial``, the run goes on without it), Dask's log
    goes to ``cluster_logs/`` under the output root, and a cluster that goes away or gives no
    result for CLUSTER_TIMEOUT seconds leaves the run interrupted, for ``--resume``; rows a
    worker could not read make the status ERROR. ``reuse`` False (``--fresh``) still stores the
    rows computed, and the run's resume reuses only those. ``mapping`` (msprobe dumps) is a tensor mapping file whose
    pairs win; the pairing used is written beside the CSVs, in ``msprobe/``, with msprobe's
    own compare-result columns.
    Status FLAGGED when any op is flagged (compare.divergence's rule), else OK; the CSVs
    written are the result's ``files``. Raises PrecisionToolError for bad input (no dumps, bad
    -lt/-rt, unknown metric or graph, nothing to resume, other options than the resumed run's,
    an output directory with other result CSVs). SIGTERM and SIGHUP during the run stop it as
    Ctrl-C does (no new CSV, the directory marked interrupted), then end the process by that
    signal (:func:`~precision_tool.lifetime.stop_on_signals`). Temporary files that
    killed runs left under the output root are removed first.
    """
    from rich.text import Text

    from ..compare.metrics import select_metrics
    from ..compare.plan import plan_comparisons
    from ..compare.result_dir import CompareOptions, new_result_dir
    from ..config import check_setting
    from ..lifetime import stop_on_signals
    from .vc_cluster import cluster_spec, resumed_options, unreadable_line

    config = context.config
    if scheduler is not None:
        config = replace(config, scheduler=check_setting("SCHEDULER", scheduler, "vc --scheduler"))
    options = CompareOptions(left, right, graph, steps, devices, algorithms, mapping)
    skipped: tuple[str, ...] = ()
    if resume:  # the interrupted run's directory and options
        directory, options, skipped = _resumed(context, resume, output, options)
    metrics = select_metrics(options.algorithms)
    plans = plan_comparisons(
        context,
        left=options.left,
        right=options.right,
        graph=options.graph,
        steps=options.steps,
        devices=options.devices,
        mapping=options.mapping,
    )
    if any(plan.msprobe is not None for plan in plans):  # msprobe's metrics: imported only then
        from ..compare.msprobe_rows import metrics_for

        metrics = metrics_for(plans, metrics, asked=options.algorithms is not None)
    out: list = [Text(f"passed over: {line}", style="warn") for line in skipped]
    out += [Text(note, style="warn") for p in plans for note in p.notes]
    if resume:
        directory, applied = resumed_options(directory, reuse, scheduler, allow_partial)
        out += [Text(line, style="muted") for line in applied]
    swept = directory.root if resume else context.output_at(output) if output else None
    _remove_stale_parts(context, swept)
    spec = cluster_spec(config, context, allow_partial)
    with stop_on_signals():  # SIGTERM, SIGHUP: as Ctrl-C, then the process ends by the signal
        if not resume:  # after planning: bad input leaves no directory behind
            directory = new_result_dir(context.output, context.output_at(output) if output else None)
            if not reuse:  # rows are stored, and this run's resume reuses only its own
                directory = replace(directory, fresh_since=time.time_ns())
        summaries, counts = _run_into(
            directory,
            options,
            plans,
            metrics,
            context,
            config,
            spec,
            show_progress=show_progress,
            reuse=reuse or bool(resume),
            resume=resume,
        )
    out += _cache_lines(counts) + [s.line() for s in summaries]
    unread = sum(s.unreadable for s in summaries)
    if unread:
        out.append(unreadable_line(unread))
        return CommandResult(out, ExitStatus.ERROR, [s.path for s in summaries])
    flagged = any(s.flagged_ops for s in summaries)
    return CommandResult(out, ExitStatus.FLAGGED if flagged else ExitStatus.OK, [s.path for s in summaries])


def _run_into(
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
    (ClusterStopped) leaves the run interrupted, as Ctrl-C does, and says how to resume. Returns :func:`_write_all`'s, the counts with ``cache_warning`` when the row
    cache turned itself off."""
    from ..compare.cluster import ClusterStopped
    from ..compare.divergence import FlagRule
    from ..compare.manifest import csv_info, write_manifest
    from ..compare.result_dir import COMPLETE, RUNNING, csv_tags
    from ..compare.row_cache import RowCache

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
            found = _write_all(
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


def _remove_stale_parts(context: Context, output) -> None:
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


def run(args, context: Context) -> CommandResult:
    """The ``vc`` command."""
    return vector_compare(
        context,
        left=args.left,
        right=args.right,
        graph=args.graph,
        steps=args.step,
        algorithms=args.alg,
        output=args.output,
        devices=args.device,
        resume=args.resume,
        reuse=not args.fresh,
        scheduler=args.scheduler,
        mapping=args.mapping,
        allow_partial=args.allow_partial,
    )


def prepare(args, config) -> None:
    """Before the run imports or reads anything: start the pool's fork server when this run
    will use a pool and numba's kernels, so numba loads while the graph is read and the run
    planned (:mod:`~precision_tool.compare.pool_server`). A guess from the words and the sizes
    of the files (at a stat each); the run decides again once planned, and a wrong guess costs
    only the server's load, on another core."""
    from ..compare import numba_line, pool_server

    if args.resume or args.scheduler or config.scheduler or config.worker_count < 2 or not numba_line.numba_enabled():
        return  # a resumed run's options are in its directory; a cluster has its own workers
    from ..formats.files import bytes_under

    try:  # the default metrics are more than cosine's: told without importing them (nor numpy)
        enough = numba_line.numba_min_bytes(args.alg is not None and _cosine_only(args.alg))
    except PrecisionToolError:
        return  # the run says what is wrong with -alg
    inputs = [path for path in (args.left, args.right) if path] or [config.data_root_dir]
    if bytes_under(inputs, skip=[config.temp_dir], enough=enough) >= enough:
        try:
            pool_server.start()
        except OSError:  # no process to be had now: the pool forks or spawns as without it
            pass


def _cosine_only(algorithms: str) -> bool:
    from ..compare.kernels import needs_cosine_sums_only
    from ..compare.metrics import select_metrics

    return needs_cosine_sums_only(select_metrics(algorithms))


def _add_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "-lt",
        "--left",
        metavar="LEFT",
        help="left directory: an NPU debug dir (npu/debug_N: newest run), any NPU dump "
        "dir down to a step dir, or a dir of .npy files",
    )
    parser.add_argument(
        "-rt",
        "--right",
        metavar="RIGHT",
        help="right directory, as -lt: npy (NPU vs TF), NPU (NPU vs NPU, by op name) "
        "or npy with an npy -lt (by golden name and index, else file name)",
    )
    parser.add_argument(
        "-g",
        "--graph",
        metavar="GRAPH",
        help="the Build graph to pair with: a graph file (a GE dump, atc JSON, an "
        ".om), or a model/graph name (default: the graph named like the step "
        "dir's model, or the only one)",
    )
    parser.add_argument("--step", metavar="S", help="steps to compare, as TF_DUMP_STEP ('0', '0|5', '3-5')")
    parser.add_argument(
        "--device", metavar="D", help="devices (ranks) to compare: '0', '0,3-5'; default all, in one pool"
    )
    parser.add_argument(
        "-alg",
        "--alg",
        metavar="ALG",
        help="metrics: msaccucmp numbers 0-9 or names, comma-separated (0 = cosine only, fastest). Default: all ten",
    )
    parser.add_argument(
        "--mapping",
        metavar="FILE",
        help="msprobe dumps: a tensor mapping file (msprobe's -dm YAML, 'NPU_NAME: "
        "BENCH_NAME' per line) whose pairs win; vc writes the pairing it used "
        "in this form, in msprobe/ beside the CSVs, to edit and give back",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="DIR",
        help="continue an interrupted vc in its directory with its options, computing "
        "only the rows it had not: the one in DIR (or -o DIR), else the newest "
        "under vector_compare/; other -lt/-rt/-g/--step/--device/-alg are refused",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="compute every row again (default: reuse rows earlier runs computed from "
        "the same files and metrics); the rows are still stored, and a resume "
        "of the run reuses only those",
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="on a Dask cluster: go on with the workers that pass the check made "
        "before the run (this package at this version, the kernels, the data "
        "at the same paths); default: one line naming the first that fails",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDR",
        help="compute on a Dask cluster: its scheduler's address (tcp://HOST:8786; its "
        "workers must see the same paths), or local:N for N local processes. "
        "Default: SCHEDULER ('': this machine's worker processes)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        help="write the CSV(s) into DIR instead of vector_compare/{timestamp}/ of "
        "the output root (temp/ unless --out); an earlier vc result in DIR is "
        "replaced when the new one is complete, other files stay, and a DIR "
        "with result CSVs vc did not write is refused",
    )


COMMAND = Command(
    name="vc",
    summary="vector compare: every NPU tensor against its golden tensor, into result CSVs",
    add_arguments=_add_arguments,
    run=run,
    prepare=prepare,
    completions={
        "-lt": "path",
        "--left": "path",
        "-rt": "path",
        "--right": "path",
        "-g": "path",
        "--graph": "path",
        "-o": "path",
        "--output": "path",
        "--resume": "path",
        "--mapping": "path",
    },
    description=(
        "Without -lt: npu/debug_0 (newest run, steps of TF_DUMP_STEP or --step) against tf/dump, "
        "paired through the Build graph (fused ops, Cast/TransData stepped over); by name when "
        "there is no graph. With -lt/-rt: an NPU dump dir (npu/debug_N, a run dir or a step dir) "
        "against an npy dir or another NPU dump dir (by op name, tensors by kind and index), or "
        "npy dir against npy dir, or two msprobe dumps (PyTorch/MindSpore: a dump root, step or "
        "rank dir each; a data root with npu/ and bench/ msprobe dumps without -lt), paired by "
        "call key, then by API and call order, --mapping first. One CSV per device/sub-graph/step "
        "(msprobe: per rank) in "
        "temp/vector_compare/{YYYYmmddHHMMSS}/, written as results stream in. Prints one line per "
        "CSV; exit status 1 when an op is flagged: an output cosine <= COSINE_THRESHOLD, a "
        "RelativeEuclideanDistance >= RED_THRESHOLD, or NaN/Inf on the NPU."
    ),
)
