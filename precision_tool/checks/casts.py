"""The cast check: Cast ops of the debug_0 Build graph(s) that convert to a dangerous dtype.

A cast's types come from its first input and first output tensor descriptors (FORMATS.md
section 9): the ``SrcT``/``DstT``/``dst_type`` attributes use GE's internal dtype numbering and
are ignored. A Cast without an input or output descriptor cannot be judged and is skipped.
What counts as dangerous is ``config.dangerous_casts`` (``DANGEROUS_CASTS`` in config.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..context import Context

CAST_TYPES = frozenset({"Cast"})
DEBUG = "debug_0"


@dataclass(frozen=True)
class CastOp:
    """One dangerous Cast op and the graph it is in."""

    graph: str
    name: str


@dataclass(frozen=True)
class CastGroup:
    """The dangerous casts of one (source, destination) dtype pair, in execution order."""

    src: str
    dst: str
    ops: tuple[CastOp, ...]


@dataclass(frozen=True)
class CastCheckResult:
    """What the cast check found.

    ``graph_dir`` is where the Build graphs were looked for; ``graph_files`` the ones read
    (none: data absent). ``groups`` are ordered by the first dangerous cast of each pair in
    execution order; ``casts`` counts every Cast op seen, dangerous or not.
    """

    graph_dir: Path
    graph_files: tuple[Path, ...] = ()
    groups: tuple[CastGroup, ...] = ()
    casts: int = 0

    @property
    def present(self) -> bool:
        """Whether a Build graph was found."""
        return bool(self.graph_files)

    @property
    def found(self) -> bool:
        """Whether any dangerous cast was found."""
        return bool(self.groups)


def cast_dtypes(op) -> tuple[str, str] | None:
    """``(input dtype, output dtype)`` of a Cast op from its descriptors, or None without them."""
    if not op.input_descs or not op.output_descs:
        return None
    return op.input_descs[0].dtype, op.output_descs[0].dtype


def check_casts(context: Context, debug: str = DEBUG) -> CastCheckResult:
    """Find the Cast ops of ``debug``'s Build graphs whose dtype pair is in
    ``context.config.dangerous_casts``. Unreadable graph files raise PrecisionToolError."""
    graph_dir = context.data.graph_dir(debug)
    models = context.models(debug)
    dangerous = {tuple(pair) for pair in context.config.dangerous_casts}
    groups: dict[tuple[str, str], list[CastOp]] = {}
    casts = 0
    for model in models:
        for graph in model.graphs:
            for op in graph.ops:
                if op.type not in CAST_TYPES:
                    continue
                casts += 1
                pair = cast_dtypes(op)
                if pair in dangerous:
                    groups.setdefault(pair, []).append(CastOp(graph.name, op.name))
    files = tuple(m.source_path for m in models if m.source_path is not None)
    return CastCheckResult(
        graph_dir, files, tuple(CastGroup(s, d, tuple(ops)) for (s, d), ops in groups.items()), casts
    )
