"""``vc``: vector compare, every NPU tensor against its golden counterpart, into result CSVs.

Without ``-lt``: the newest run of ``npu/debug_0`` (steps of TF_DUMP_STEP, or ``--step``) against
``tf/dump``, paired through the Build graph whose name is the step directory's model name (or
the only graph; ``-g`` picks one), by name when there is no graph. With ``-lt``/``-rt``: any two
directories (see :mod:`precision_tool.compare.pair_dirs`). One CSV per (device, sub-graph, step)
compared, all in one new ``temp/vector_compare/{YYYYmmddHHMMSS}/``, written as rows come in.

:func:`vector_compare` is the programmatic entry (``ac -c`` uses it); :func:`run` is the command.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from rich.text import Text

from ..compare.engine import compare_tasks
from ..compare.metrics import select_metrics
from ..compare.pair_dirs import DirSide, match_steps, pair_npu_npu, pair_npy_npy, resolve_dir
from ..compare.pairing import DumpSide, NpySide, PairTask, pair_by_name, pair_with_graph
from ..compare.result import CompareRow
from ..compare.result_csv import ResultWriter, result_path
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.graph import find_graph_files, read_graph
from ..formats.graph_cache import CACHE_DIR, read_graph_cached
from ..formats.graph_model import GraphDesc, Model
from ..formats.tree import StepDir
from ..render.lines import OneLineText, one_line
from ..status import ExitStatus
from .registry import Command, CommandParser, CommandResult
from .tensors import safe_file_name

POOL_MIN_BYTES = 32 << 20  # below this, starting worker processes costs more than it saves
MAX_TAG = 180  # "result_{stamp}_{tag}.csv" stays far below the 255 a file name may have


@dataclass
class Comparison:
    """One CSV to write: its tasks, a label for the user, and notes about the pairing."""

    label: str
    tag: str
    tasks: list[PairTask]
    notes: list[str] = field(default_factory=list)
    npu_vs_npu: bool = False


@dataclass
class Summary:
    """What one CSV holds, counted while it was written."""

    label: str
    path: Path
    threshold: float
    compared: int = 0
    not_compared: int = 0
    flagged_ops: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set, repr=False)

    def add(self, row: CompareRow) -> None:
        """Count one row."""
        if row.compared:
            self.compared += 1
        elif row.tensor_index:
            self.not_compared += 1
        cosine = row.cosine
        if row.is_output and cosine <= self.threshold and row.op_name not in self._seen:
            self._seen.add(row.op_name)  # NaN compares False: never flagged
            self.flagged_ops.append(row.op_name)

    def line(self) -> OneLineText:
        """The one-line summary (kept on one line so scripts can take the path from it)."""
        flagged = len(self.flagged_ops)
        return OneLineText(Text.assemble(
            (one_line(self.label), "title"),
            f": {self.compared} tensors compared, {self.not_compared} not compared, ",
            (f"{flagged} op(s) with output cosine <= {self.threshold:g}",
             "cos.bad" if flagged else "cos.good"),
            " -> ", (one_line(str(self.path)), "path")))


# --- planning: what to compare ---------------------------------------------------------------

def _all_graphs(models: list[Model]) -> list[tuple[Model, GraphDesc]]:
    return [(m, g) for m in models for g in m.graphs]


def _pick_graph(models: list[Model], wanted: str | None) -> GraphDesc | None:
    """The ``-g`` graph: a graph file, or a model or graph name among ``models``."""
    if wanted is None:
        return None
    if Path(wanted).is_file():
        model = read_graph(wanted)
        return model.graphs[0] if model.graphs else None
    for model, graph in _all_graphs(models):
        file_name = model.source_path.name if model.source_path else None
        if wanted in (graph.name, model.name, file_name):
            return graph
    names = ", ".join(g.name for _, g in _all_graphs(models)) or "none"
    raise PrecisionToolError(f"no Build graph called {wanted!r} (graphs: {names})")


def _graph_for(step: StepDir, models: list[Model], chosen: GraphDesc | None) -> GraphDesc | None:
    if chosen is not None:
        return chosen
    graphs = _all_graphs(models)
    for model, graph in graphs:
        if step.model_name is not None and step.model_name in (graph.name, model.name):
            return graph
    return graphs[0][1] if len(graphs) == 1 else None


def _tag(step: StepDir) -> str:
    """The CSV name's tag: model, id, device, step; safe and short enough for a file name."""
    parts = [step.model_name, step.model_id, f"dev{step.device}" if step.device is not None else None,
             f"step{step.step}" if step.step is not None else None]
    text = "_".join(str(p) for p in parts if p is not None) or step.path.name
    return safe_file_name(re.sub(r"[^A-Za-z0-9_.-]", "_", text), limit=MAX_TAG)


def _label(step: StepDir) -> str:
    return f"device {step.device}, {step.model_name}, step {step.step}"


def _npu_vs_golden(step: StepDir, listing, golden, graph: GraphDesc | None) -> Comparison:
    if graph is None:
        note = (f"{_label(step)}: no Build graph for {step.model_name}: paired by name "
                "(inputs not compared)")
        return Comparison(_label(step), _tag(step), pair_by_name(listing, golden), [note])
    return Comparison(_label(step), _tag(step), pair_with_graph(graph, listing, golden))


def plan_default(context: Context, graph: str | None, steps: str | None) -> list[Comparison]:
    """``vc`` without ``-lt``: debug_0's newest run in the steps asked for, against tf/dump."""
    tree = context.dump_tree("debug_0")
    spec = steps if steps is not None else context.config.tf_dump_step
    chosen = tree.select(steps=spec)
    if not chosen:
        present = ", ".join(str(s) for s in tree.steps(tree.newest_run())) or "none"
        raise PrecisionToolError(f"no step directory for step(s) {spec!r} in the newest run "
                                 f"(steps present: {present}); use --step", tree.root)
    golden, models = context.golden(), context.models("debug_0")
    picked = _pick_graph(models, graph)
    return [_npu_vs_golden(s, tree.listing(s), golden, _graph_for(s, models, picked)) for s in chosen]


def _models_in(graph_dir: Path | None, context: Context) -> list[Model]:
    if graph_dir is None:
        return []
    cache = context.config.temp_dir / CACHE_DIR
    return [read_graph_cached(p, cache, workers=context.config.worker_count)
            for p in find_graph_files(graph_dir)]


def plan_dirs(context: Context, left: str, right: str, graph: str | None,
              steps: str | None) -> list[Comparison]:
    """``vc -lt LEFT -rt RIGHT``: see :mod:`precision_tool.compare.pair_dirs`."""
    spec = steps if steps is not None else context.config.tf_dump_step
    lside, rside = resolve_dir(left, spec), resolve_dir(right, spec)
    if not lside.is_npu and rside.is_npu:
        raise PrecisionToolError("put the NPU dump directory on the left (-lt) and the npy "
                                 "directory on the right (-rt)")
    if not lside.is_npu:
        tasks = pair_npy_npy(lside.golden, rside.golden)
        return [Comparison(f"{lside.path} vs {rside.path}", "npy", tasks)]
    if not rside.is_npu:
        models = _models_in(lside.graph_dir, context)
        picked = _pick_graph(models, graph)
        return [_npu_vs_golden(s, lside.tree.listing(s), rside.golden, _graph_for(s, models, picked))
                for s in lside.steps]
    return _npu_npu_plan(lside, rside)


def _npu_npu_plan(lside: DirSide, rside: DirSide) -> list[Comparison]:
    plans = []
    for lstep, rstep in match_steps(lside.steps, rside.steps):
        if rstep is None:
            raise PrecisionToolError(f"no step directory in {rside.path} matches {lstep.path}")
        tasks = pair_npu_npu(lside.tree.listing(lstep), rside.tree.listing(rstep))
        label = f"{_label(lstep)} vs {rstep.path.name}"
        plans.append(Comparison(label, _tag(lstep), tasks, npu_vs_npu=True))
    return plans


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

def _estimated_bytes(tasks: list[PairTask]) -> int:
    paths = {side.path for t in tasks if t.comparable for side in (t.left, t.right)
             if isinstance(side, (DumpSide, NpySide))}
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            pass
    return total


def _result_dir(context: Context, output: str | None) -> tuple[Path, datetime]:
    when = datetime.now().replace(microsecond=0)
    if output:
        return Path(output), when
    while result_path(context.config.data_root_dir, when).parent.exists():
        when += timedelta(seconds=1)  # one new directory per run, even within one second
    return result_path(context.config.data_root_dir, when).parent, when


def _csv_path(directory: Path, when: datetime, tag: str | None) -> Path:
    return directory / result_path(directory, when, tag).name


def _write(plan: Comparison, path: Path, metrics, workers: int, threshold: float, display) -> Summary:
    summary = Summary(plan.label, path, threshold)
    pooled = workers if _estimated_bytes(plan.tasks) >= POOL_MIN_BYTES else 1
    progress = display.track(plan.label, len(plan.tasks)) if display else None
    with ResultWriter(path, golden_address=plan.npu_vs_npu, metrics=metrics) as writer:
        for row in compare_tasks(plan.tasks, metrics, workers=pooled, progress=progress):
            writer.write(row)
            summary.add(row)
    return summary


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()  # only succeeds when empty: complete CSVs of earlier plans stay
    except OSError:
        pass


def vector_compare(context: Context, *, left: str | None = None, right: str | None = None,
                   graph: str | None = None, steps: str | None = None, algorithms: str | None = None,
                   output: str | None = None, show_progress: bool = True) -> CommandResult:
    """Run a vector compare and return the notes and one summary line per CSV written.

    Status FLAGGED when any op's output cosine is <= the configured threshold, else OK.
    Raises PrecisionToolError for bad input (no dumps, bad -lt/-rt, unknown metric or graph).
    """
    if (left is None) != (right is None):
        raise PrecisionToolError("vc: give both -lt and -rt, or neither")
    metrics = select_metrics(algorithms)
    plans = plan_dirs(context, left, right, graph, steps) if left else plan_default(context, graph, steps)
    directory, when = _result_dir(context, output)
    tags = [p.tag for p in plans]
    out: list = [Text(note, style="warn") for p in plans for note in p.notes]
    summaries, config = [], context.config
    created = not directory.exists()
    try:
        with CompareProgress(context.console, enabled=show_progress) as display:
            for i, plan in enumerate(plans):
                tag = None if len(plans) == 1 else (plan.tag if tags.count(plan.tag) == 1 else f"{plan.tag}_{i}")
                summaries.append(_write(plan, _csv_path(directory, when, tag), metrics, config.worker_count,
                                        config.cosine_threshold, display))
    except BaseException:  # Ctrl-C or an error: no CSV of this one is left half-written
        if created:
            _remove_if_empty(directory)
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
                        help="write the CSV(s) into DIR instead of temp/vector_compare/{timestamp}/")


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
        "CSV; exit status 1 when any op's output cosine is <= COSINE_THRESHOLD."))
