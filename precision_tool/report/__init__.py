"""The HTML report: one self-contained page of a comparison result (``report``, ``ac -c``).

:func:`write_report` is the entry point; :mod:`.write` assembles the page from
:mod:`precision_tool.compare.result_view` (the CSV's ops and metrics), :mod:`.plot` (the cosine curve), :mod:`.table` (flagged ops),
:mod:`.subgraph` (the graph around the first introducer) and :mod:`.checks_html` (``ac``'s checks).
"""

from __future__ import annotations

DEFAULT_DEPTH = 2  # of the subgraph around the first introducer


def write_report(context, csv_paths, **options):
    """See :func:`precision_tool.report.write.write_report` (imported on first use)."""
    from .write import write_report as write

    return write(context, csv_paths, **options)


__all__ = ["DEFAULT_DEPTH", "write_report"]
