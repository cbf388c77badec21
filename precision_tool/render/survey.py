"""The data-root survey as a rich renderable: the banner of the tool."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from ..formats.data_survey import DataSurvey
from .fit import FitTable
from .lines import visible


def _debug_rows(survey: DataSurvey) -> list[tuple[str, str, str]]:
    rows = []
    for debug in survey.debug:
        graphs = ", ".join(p.name for p in debug.graph_files) or "no Build graph"
        if debug.newest_run is None and not debug.runs:
            dumps = "no dump runs"
        else:
            dumps = (
                f"{len(debug.runs)} run(s), newest {debug.newest_run}: "
                f"{debug.step_dirs} step dir(s), {debug.dump_files} dump files"
            )
        rows.append((f"npu/{debug.name}", graphs, dumps))
    return rows


def render_survey(survey: DataSurvey, version: str) -> Group:
    """Version, data root and what was found there, one line per source."""
    title = Text.assemble(
        ("PrecisionTool ", "bold"), (version, "cyan"), "  data root: ", (visible(str(survey.root)), "bold")
    )
    table = FitTable(grid=True, show_header=False)
    for _ in range(3):
        table.add_column()
    for row in _debug_rows(survey):
        table.add_row(*row)
    for dump in survey.msprobe:  # an msprobe data root: its two dumps, no golden directory
        steps = ", ".join(str(s) for s in dump.steps) or "none"
        table.add_row(f"{dump.side}/", "msprobe dump", f"{dump.ranks} rank dir(s), step(s) {steps}")
    if survey.msprobe:
        return Group(title, table, *(Text(f"warning: {visible(p)}", style="yellow") for p in survey.problems))
    golden = f"{survey.golden_tensors} golden tensors"
    if survey.golden_invalid:
        golden += f" ({survey.golden_invalid} files skipped: names not comparable)"
    table.add_row("tf/dump", golden if survey.golden_tensors or survey.golden_invalid else "no golden dumps", "")
    parts = [title, table]
    parts += [Text(f"warning: {visible(problem)}", style="yellow") for problem in survey.problems]
    return Group(*parts)
