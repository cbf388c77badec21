"""What ``ac`` does: with ``-c`` a ``vc`` first; then the ``vcs`` summary, ``why`` on the first
introducers, the four checks of the original ``ac`` (overflow, fusion, dangerous casts,
debug_0 vs debug_1 graph similarity), the HTML report after ``-c``, and the conclusion.
:func:`auto_check` gathers it all into an :class:`AutoCheck`; :func:`render_text` and
:func:`render_json` show it. Each check is a panel, or one line saying what data it looked for
and where when that data is absent. The ``ac`` command (:mod:`.ac`) imports this module only
when it runs, so the shell and ``help`` start without the readers and numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text

from ..checks.casts import check_casts
from ..checks.fusion import check_fusion
from ..checks.graph_diff import check_graph_diff
from ..checks.overflow import check_overflow
from ..compare.verdict import FlagRule
from ..context import Context
from ..errors import PrecisionToolError
from ..formats.datadir import require_data_root
from ..render.checks import render_casts, render_fusion, render_graph_diff
from ..render.conclusion import (
    casts_line,
    comparison_lines,
    conclusion_panel,
    fusion_line,
    graph_diff_line,
    overflow_line,
)
from ..render.devices import device_lines
from ..render.json_out import SCHEMA_VERSION, dumps, plain, summary_json
from ..render.lines import RawLines
from ..render.overflow import render_overflow
from ..render.why import cause_line, why_panel
from ..render.why_json import explanation_data
from ..status import ExitStatus
from . import vc, vcs
from .registry import CommandResult
from .result_args import result_sources


@dataclass(frozen=True)
class Check:
    """One of ac's checks: how to run it, render it, say it in one line, and judge it."""

    name: str  # the key in --json
    title: str  # how its error line starts
    run: Callable[[Context, int], object]
    render: Callable[[object], object]
    line: Callable[[object], Text]
    flags: Callable[[object], bool]  # overflow and dangerous casts count as suspicious
    msprobe: bool = True  # it applies to msprobe dumps too (the others read GE graphs only)


CHECKS = (
    Check("overflow", "overflow check", check_overflow, render_overflow, overflow_line, lambda r: r.flagged),
    Check("fusion", "fusion check", lambda c, _: check_fusion(c), render_fusion, fusion_line, lambda r: False),
    Check(
        "casts", "cast check", lambda c, _: check_casts(c), render_casts, casts_line, lambda r: r.found, msprobe=False
    ),
    Check(
        "graph_similarity",
        "graph similarity",
        lambda c, _: check_graph_diff(c),
        render_graph_diff,
        graph_diff_line,
        lambda r: False,
        msprobe=False,
    ),
)


def checks_for(context: Context) -> tuple[Check, ...]:
    """The checks that apply to the data root: all four for GE dumps; for msprobe dumps the
    overflow check (NaN/Inf on the NPU where the bench has none) and the fusion check."""
    if context.is_msprobe:
        return tuple(c for c in CHECKS if c.msprobe)
    return CHECKS


@dataclass
class AutoCheck:
    """Everything ``ac`` found, before it is rendered."""

    comparison: CommandResult | None = None  # vc's result with -c
    comparison_error: str = ""
    summaries: vcs.Summaries | None = None
    summary_error: str = ""
    explanations: list = field(default_factory=list)  # explain.diagnosis.Explanation per first introducer
    why_error: str = ""
    checks: list[tuple[Check, object | None, str]] = field(default_factory=list)  # (check, result, error)
    report: Path | None = None  # the HTML report written after -c
    report_error: str = ""

    @property
    def status(self) -> ExitStatus:
        """The worst of the parts."""
        failed = self.comparison_error or self.summary_error or self.report_error
        statuses = [ExitStatus.ERROR if failed else ExitStatus.OK]
        if self.summaries is not None:
            statuses.append(self.summaries.status)
        for check, result, error in self.checks:
            statuses.append(ExitStatus.ERROR if error else ExitStatus.FLAGGED if check.flags(result) else ExitStatus.OK)
        return ExitStatus(max(statuses))


def _compare(context: Context, found: AutoCheck, quiet: bool) -> list[Path] | None:
    try:
        found.comparison = vc.vector_compare(context, show_progress=not quiet)
    except PrecisionToolError as exc:
        found.comparison_error = str(exc)
        return None
    return list(found.comparison.files)


def _summarise(context: Context, found: AutoCheck, paths: list[Path] | None) -> None:
    try:
        sources = paths or result_sources(None, context)
        found.summaries = vcs.analyse_results(context, sources, FlagRule.from_config(context.config))
    except PrecisionToolError as exc:
        found.summary_error = str(exc)


def auto_check(context: Context, compare: bool, limit: int, quiet: bool = False) -> AutoCheck:
    """Run ``ac``: with ``compare`` a vc first, then the summary of its result (else of the newest
    result), then every check; a part that fails is kept as its error and the rest still run.

    Raises:
        PrecisionToolError: there is no data root (every part reads it: one line, not one a part).
    """
    require_data_root(context.config.data_root_dir)  # before any part: not once per part
    found = AutoCheck()
    paths = _compare(context, found, quiet) if compare else None
    if not found.comparison_error:  # after a failed comparison an older result would mislead
        _summarise(context, found, paths)
    if found.summaries is not None and any(d.flagged for _, d in found.summaries.results):
        _explain(context, found, limit)
    for check in checks_for(context):
        try:
            found.checks.append((check, check.run(context, limit), ""))
        except PrecisionToolError as exc:
            found.checks.append((check, None, str(exc)))
    if compare and found.summaries is not None and found.summaries.results:
        _write_report(context, found)
    return found


def _explain(context: Context, found: AutoCheck, limit: int) -> None:
    """Why the first introducers differ: one more pass over their own tensors only."""
    from ..explain.diagnosis import explain_newest

    try:
        found.explanations = explain_newest(context, limit, [p for p, _ in found.summaries.results])
    except PrecisionToolError as exc:
        found.why_error = str(exc)
        return
    causes = {e.op: e.cause for e in found.explanations}  # the verdict carries them from here on
    found.summaries.results = [(p, d.with_causes(causes)) for p, d in found.summaries.results]


def _write_report(context: Context, found: AutoCheck) -> None:
    """The HTML report of what was just compared, with the check panels already made."""
    from ..report import write_report

    panels = [Text(f"{c.title}: error: {e}", style="error") if e else c.render(r) for c, r, e in found.checks]
    causes = {e.op: e.cause_text for e in found.explanations if e.cause_text}  # why's, on the ops
    try:
        found.report = write_report(
            context, [path for path, _ in found.summaries.results], checks=panels, causes=causes
        )
    except PrecisionToolError as exc:
        found.report_error = str(exc)


def _conclusion(found: AutoCheck) -> list[Text]:
    lines: list[Text] = []
    if found.comparison_error:
        lines.append(Text(f"comparison: error: {found.comparison_error}", style="error"))
    if found.summary_error:
        lines.append(Text(f"comparison: {found.summary_error}", style="error"))
    if found.summaries is not None:
        lines += comparison_lines([d for _, d in found.summaries.results])
        devices = found.summaries.devices()
        if len(devices) > 1:
            lines += device_lines(devices)
    lines[1:1] = [cause_line(e) for e in found.explanations[:3]]  # right after the root cause
    if found.why_error:
        lines.append(Text(f"why: error: {found.why_error}", style="error"))
    for check, result, error in found.checks:
        lines.append(Text(f"{check.title}: error: {error}", style="error") if error else check.line(result))
    if found.report is not None:
        lines.append(Text.assemble(("report: ", "title"), (str(found.report), "path")))
    if found.report_error:
        lines.append(Text(f"report: error: {found.report_error}", style="error"))
    return lines


def render_text(found: AutoCheck, limit: int) -> list:
    """The details in order (vc, the summary, each check's panel), then the conclusion."""
    out: list = list(found.comparison.renderables) if found.comparison else []
    if found.comparison_error:
        out.append(Text(f"error: vc: {found.comparison_error}", style="error"))
    if found.summary_error:
        out.append(Text(f"error: {found.summary_error}", style="error"))
    if found.summaries is not None:
        out += vcs.render_summaries(found.summaries, limit)
    if found.explanations:
        out.append(why_panel(found.explanations))
    if found.why_error:
        out.append(Text(f"why: error: {found.why_error}", style="error"))
    for check, result, error in found.checks:
        out.append(Text(f"{check.title}: error: {error}", style="error") if error else check.render(result))
    return out + [conclusion_panel(_conclusion(found))]


def render_json(found: AutoCheck) -> RawLines:
    """The ``ac --json`` document (docs/json.md)."""
    comparison = None
    if found.comparison is not None or found.comparison_error:
        files = [str(p) for p in found.comparison.files] if found.comparison else []
        comparison = {"csvs": files, "error": found.comparison_error or None}
    summary = (
        summary_json(found.summaries.results, found.summaries.errors, found.summaries.devices())
        if found.summaries is not None
        else {"error": found.summary_error or None}
    )
    checks = {check.name: plain(result) if not error else {"error": error} for check, result, error in found.checks}
    report = {"path": str(found.report) if found.report else None, "error": found.report_error or None}
    why = {"explanations": [explanation_data(e) for e in found.explanations], "error": found.why_error or None}
    return RawLines(
        dumps(
            {
                "schema": SCHEMA_VERSION,
                "status": int(found.status),
                "comparison": comparison,
                "summary": summary,
                "why": why,
                "checks": checks,
                "report": report,
            }
        )
    )
