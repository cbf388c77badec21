"""``vc``: vector compare, every NPU tensor against its golden counterpart, into result CSVs.

What is compared is planned by :mod:`precision_tool.compare.plan` (without ``-lt``: debug_0's
newest run against ``tf/dump`` through the Build graph; with ``-lt``/``-rt``: any two
directories); this command runs each planned comparison and streams its rows into one CSV per
(device, sub-graph, step), all in one new ``temp/vector_compare/{YYYYmmddHHMMSS}/`` (or the
``-o`` directory, whose earlier vc result the run replaces: :mod:`precision_tool.compare.result_dir`).

:func:`vector_compare` is the programmatic entry (``ac -c`` uses it); :func:`run` is the command;
:mod:`.vc_run` writes a planned run into its directory.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..collector import gc_paused
from ..errors import PrecisionToolError
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult

if TYPE_CHECKING:  # rich and the readers load only when vc runs (--help builds this module)
    from ..context import Context


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
    from .vc_run import remove_stale_parts, run_into

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
    remove_stale_parts(context, swept)
    spec = cluster_spec(config, context, allow_partial)
    with stop_on_signals():  # SIGTERM, SIGHUP: as Ctrl-C, then the process ends by the signal
        if not resume:  # after planning: bad input leaves no directory behind
            directory = new_result_dir(context.output, context.output_at(output) if output else None)
            if not reuse:  # rows are stored, and this run's resume reuses only its own
                directory = replace(directory, fresh_since=time.time_ns())
        summaries, counts = run_into(
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
    from ..compare.metric_table import words_need_cosine_sums_only  # no numpy: the server starts sooner

    if args.resume or args.scheduler or config.scheduler or config.worker_count < 2 or not numba_line.numba_enabled():
        return  # a resumed run's options are in its directory; a cluster has its own workers
    from ..formats.files import bytes_under

    try:  # the default metrics are more than cosine's
        enough = numba_line.numba_min_bytes(args.alg is not None and words_need_cosine_sums_only(args.alg))
    except PrecisionToolError:
        return  # the run says what is wrong with -alg
    inputs = [path for path in (args.left, args.right) if path] or [config.data_root_dir]
    if bytes_under(inputs, skip=[config.temp_dir], enough=enough) >= enough:
        try:
            pool_server.start()
        except OSError:  # no process to be had now: the pool forks or spawns as without it
            pass


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
    multiplies=False,  # its workers compare; nothing is replayed here
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
