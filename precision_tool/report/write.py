"""Write the report: ``temp/report/{stamp}/index.html`` (or ``-o DIR``), and with
``model_explorer`` the node-data JSON and an ``explore.json`` per result beside it.

Everything is written under the one output directory, each file under a temporary name and
renamed when complete, never through a link (:class:`~precision_tool.formats.output_root.OutputRoot`);
a new ``{stamp}`` directory is created exclusively, so two reports of the same second never
share one. A report appears whole or not at all: the node data are written into a hidden
directory (:class:`~precision_tool.formats.pending_dir.PendingDirectory`), the page's bytes are
written next, and only then do both take their names (:func:`_put_in_place`); a full disk at
any point leaves neither, nor an empty ``{stamp}`` directory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rich.console import RenderableType

from ..compare.judged import judged_rows
from ..compare.result_read import read_result_csv
from ..compare.result_view import ResultView, build_view
from ..compare.verdict import FlagRule
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.graph_model import Model
from ..formats.graph_query import neighbourhood
from ..formats.output_root import OutputRoot, stamps
from ..formats.pending_dir import PendingDirectory
from ..model_explorer.launch import serve_command
from ..model_explorer.prepare import Prepared, write_launch
from . import DEFAULT_DEPTH
from .checks_html import checks_html, run_checks
from .escape import esc
from .page import PageInput, ResultPart, Subgraph, render_page
from .subgraph import subgraph_svg


@dataclass
class WrittenReport:
    """What :func:`make_report` wrote."""

    index: Path
    size: int
    parts: list[ResultPart]
    explorer: list[Prepared] = field(default_factory=list)  # per result: its explore.json

    @property
    def files(self) -> list[Path]:
        """Every file written: the page first."""
        return [self.index] + [f for n in self.explorer for f in n.files]

    def explorer_commands(self) -> list[str]:
        """The short command that starts Model Explorer on each result's ``explore.json``."""
        return [serve_command(n.config) for n in self.explorer]


def report_dir(context: Context, output: str | Path | None) -> tuple[OutputRoot, Path]:
    """The root written under and the report's directory (created): ``output``, else a new
    ``report/{YYYYmmddHHMMSS}`` of the output root (a second later while taken)."""
    if output:
        root = context.output_at(output)
        return root, root.directory()
    root = context.output
    return root, root.new_directory(["report"], stamps(datetime.now()))


def focus_subgraph(context: Context, view: ResultView, section: int, depth: int, use_dot: bool = True) -> Subgraph:
    """The neighbourhood of ``view``'s focus op (first introducer, else first flagged op)."""
    focus = view.focus
    if focus is None:
        return Subgraph()
    name = focus.op.name
    try:
        found = context.result_op(name, view.path)  # msprobe: its rank dir; else debug_0's first
    except PrecisionToolError as exc:
        return Subgraph(caption=name, note=f"the graph could not be read: {exc}")
    if found is None:
        return Subgraph(caption=name, note="no Build graph under npu/*/graph holds this op")
    graph, op = found.graph, found.op
    hood = neighbourhood(graph, op, depth)
    drawn = subgraph_svg(graph, hood, view, section, use_dot)
    return Subgraph(
        drawn.svg, drawn.how, f"{name}, depth {depth} ({len(hood.nodes)} ops, graph {graph.name})", drawn.note
    )


def judged_view(context: Context, path: Path, rule: FlagRule, causes: Mapping[str, str] | None = None) -> ResultView:
    """The view of the result CSV ``path`` built from the one verdict on it (replays attached,
    :func:`~precision_tool.compare.judged.judged_rows`: what ``vcs`` says), with ``causes`` (op
    name -> cause) on the ops of those names: the page and the node data show only it.

    Raises:
        PrecisionToolError: the CSV cannot be read.
    """
    rows = read_result_csv(path)
    divergence = judged_rows(context, path, rows, rule)
    return build_view(path, rows, rule, divergence.with_causes(causes or {}))


def _part(
    context: Context,
    path: Path,
    rule: FlagRule,
    section: int,
    depth: int,
    causes: Mapping[str, str] | None,
    use_dot: bool,
    strict: bool,
) -> ResultPart:
    """One result's section; an unreadable CSV is an error line, or raises when ``strict``."""
    try:
        view = judged_view(context, path, rule, causes)
    except PrecisionToolError as exc:
        if strict:
            raise
        return ResultPart(path, error=str(exc))
    return ResultPart(path, view, subgraph=focus_subgraph(context, view, section, depth, use_dot))


def _all_models(context: Context) -> list[Model]:
    try:
        return [m for debug in context.debug_names() for m in context.models(debug)]
    except PrecisionToolError:
        return []


def _result_models(context: Context, csv: Path, models: list[Model]) -> list[Model]:
    """The models a result's node data may overlay: an msprobe result's own rank directory,
    else every graph loaded."""
    try:
        own = context.result_model(csv)
    except PrecisionToolError:
        own = None
    return [own] if own is not None else models


def _explorer(
    context: Context, parts: list[ResultPart], root: OutputRoot, directory: PendingDirectory
) -> list[Prepared]:
    """Each result's node data and ``explore.json`` (Model Explorer's one preparation,
    :func:`~precision_tool.model_explorer.prepare.write_launch`), written into ``directory``
    (not yet in place) and naming the paths they will have once it is."""
    models, written = _all_models(context), []
    for part in parts:
        if part.view is None:
            continue
        prepared = write_launch(
            root,
            part.view,
            _result_models(context, part.path, models),
            directory.path / part.path.stem,
            directory.final,
        )
        if prepared is not None:
            written.append(prepared)
    return written


def _put_in_place(root: OutputRoot, index: Path, data: bytes, node_data: PendingDirectory | None) -> Path:
    """Write the page ``data`` to ``index`` and put it and the node data in place together.

    The page's bytes are written first (a full disk shows there, and the node data are still
    hidden); then the node data take their name, then the page; node data whose page fails at
    the last step are removed again.
    """
    pending = root.begin(index, binary=True)
    try:
        pending.handle.write(data)
        pending.handle.flush()
    except OSError as exc:
        raise pending.failed(exc) from None
    except BaseException:
        pending.discard()
        raise
    try:
        placed = node_data.commit() if node_data is not None else None
    except BaseException:
        pending.discard()
        raise
    try:
        return pending.commit()  # a failed commit removes the page's file itself
    except BaseException:
        if placed is not None:
            root.remove_tree(placed)
        raise


def _explorer_html(prepared: list[Prepared]) -> str:
    if not prepared:
        return '<p class="muted">no Build graph holds the ops of these results: no node data</p>'
    blocks = [f'<code class="command">{esc(serve_command(n.config))}</code>' for n in prepared]
    return (
        "<p>Open the Build graph at the first introducer, the verdict overlay first (needs "
        '<code>pip install "precision-tool[explorer]"</code>):</p>' + "".join(blocks)
    )


def make_report(
    context: Context,
    csv_paths: Sequence[Path],
    *,
    output: str | Path | None = None,
    threshold: float | None = None,
    depth: int = DEFAULT_DEPTH,
    checks: Sequence[RenderableType] | None = None,
    causes: Mapping[str, str] | None = None,
    model_explorer: bool = False,
    use_dot: bool = True,
) -> WrittenReport:
    """Write the report of ``csv_paths`` (see :func:`write_report`); returns what was written.

    Raises:
        PrecisionToolError: the only CSV cannot be read, or the output cannot be written.
    """
    rule = FlagRule.from_config(context.config, threshold)
    parts = [
        _part(context, Path(p), rule, k, depth, causes, use_dot, len(csv_paths) == 1) for k, p in enumerate(csv_paths)
    ]
    root, directory = report_dir(context, output)
    explorer = None
    try:
        explorer = PendingDirectory(root, directory / "model_explorer") if model_explorer else None
        prepared = _explorer(context, parts, root, explorer) if explorer is not None else []
        page = PageInput(
            context.config.data_root_dir,
            parts,
            checks_html(run_checks(context) if checks is None else checks),
            _explorer_html(prepared) if model_explorer else "",
        )
        data = render_page(page).encode("utf-8")
        index = _put_in_place(root, directory / "index.html", data, explorer)
    except BaseException:  # Ctrl-C, a full disk: no part of the report, no empty directory left
        if explorer is not None:
            explorer.discard()
        root.remove_empty_dir(directory)
        raise
    return WrittenReport(index, len(data), parts, prepared)


def write_report(context: Context, csv_paths: Sequence[Path], **options) -> Path:
    """Write the HTML report of ``csv_paths`` and return the path of its ``index.html``.

    For ``ac -c``: ``write_report(context, csv_paths)`` after ``vc`` (pass ``checks=`` the
    check renderables ``ac`` already has, so the checks do not run twice).

    Args:
        context: the session (data root, config, loaded graphs).
        csv_paths: the result CSVs, one section each; one that cannot be read is an error line
            in the page (the only one raises).
        **options: ``output`` (the directory; default ``temp/report/{stamp}``), ``threshold``
            (default the config's), ``depth`` of the subgraph (2), ``checks`` (renderables; run
            here when None), ``causes`` (op name -> cause text, ``why``'s: put on the ops of that
            name, shown in the headline and as a table column), and
            ``model_explorer`` (also write node data), see :func:`make_report`.
    """
    return make_report(context, csv_paths, **options).index
