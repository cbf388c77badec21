"""``vc``'s cluster options and a resume's options beside the run's own: the Dask cluster a run
uses (:class:`~precision_tool.compare.cluster.ClusterSpec`), what a resume applies of what it is
given (where rows are computed, ``--fresh``), and the line for rows a worker could not read."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import PrecisionToolError

if TYPE_CHECKING:
    from ..context import Context


def cluster_spec(config, context: Context, allow_partial: bool):
    """The Dask cluster of the run (its log under the output root), or None for local workers."""
    if not config.scheduler:
        if allow_partial:
            raise PrecisionToolError(
                "vc --allow-partial: there is no Dask scheduler to go on with "
                "part of (--scheduler or the SCHEDULER setting)"
            )
        return None
    from ..compare.cluster import ClusterSpec

    return ClusterSpec(config.scheduler, allow_partial, config.cluster_timeout, context.output)


def resumed_options(directory, reuse: bool, scheduler: str | None, allow_partial: bool):
    """A resume's options that are not the run's -lt/-rt/... (those are refused when they
    differ): they say how rows are computed, not which, so they apply, and a line says so.
    ``--fresh`` makes the resume reuse only rows computed since the run started (a fresh
    run's resume does that anyway)."""
    lines = []
    if not reuse and directory.fresh_since is None:
        directory = replace(directory, fresh_since=int(directory.when.timestamp() * 1e9))
        lines.append(
            f"vc --resume --fresh: reusing only the rows computed since the run started "
            f"({directory.when:%Y-%m-%d %H:%M:%S})"
        )
    elif directory.fresh_since is not None:
        lines.append("resuming a vc --fresh: reusing only the rows it computed")
    given = [f"--scheduler {scheduler}" if scheduler is not None else "", "--allow-partial" if allow_partial else ""]
    if any(given):
        lines.append(
            f"vc --resume: {' and '.join(g for g in given if g)} applied (where the rows "
            "are computed, not what they are)"
        )
    return directory, lines


def unreadable_line(count: int):
    from ..render.lines import OneLine

    return OneLine(
        f"{count} row(s) not compared: a Dask worker could not read their files (the "
        "CSV's CompareFailReason names the worker and the file); every worker must see "
        "the data at the same paths, and vc run again computes only these",
        "warn",
    )


__all__ = ["cluster_spec", "resumed_options", "unreadable_line"]
