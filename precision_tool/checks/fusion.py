"""The fusion check: which fusion rules took effect, per compiled graph (``fusion_result.json``).

Where the file is looked for, first match wins:

1. ``fusion_result.json`` in the working directory -- where GE writes it when the training
   script runs there, so it is the newest one;
2. ``<data root>/fusion/fusion_result.json`` -- where the user (or the sample) files it.

The file is read where it is; it is never copied or moved. A file that goes wrong part way keeps
the graphs read before the bad offset, and the result says what went wrong (``problem``); so
does one that is not a regular file (a FIFO, a directory), which is not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..context import Context
from ..errors import PrecisionToolError
from ..formats.fusion_result import FusionGraph, FusionResultError, read_fusion_result

FUSION_FILE_NAME = "fusion_result.json"


@dataclass(frozen=True)
class FusionCheckResult:
    """What the fusion check found.

    ``source`` is the file read (None: none found in ``looked_in``); ``graphs`` the objects read
    from it, in file order; ``problem`` a one-line description of a file that could not be read
    to the end (the graphs before the problem are kept).
    """

    looked_in: tuple[Path, ...]
    source: Path | None = None
    graphs: tuple[FusionGraph, ...] = ()
    problem: str | None = None

    @property
    def present(self) -> bool:
        """Whether a fusion_result.json was found."""
        return self.source is not None

    @property
    def found(self) -> bool:
        """Whether any graph has a rule with effect_times > 0."""
        return any(g.effective("graph_fusion") or g.effective("ub_fusion") for g in self.graphs)


def fusion_candidates(context: Context, cwd: Path | None = None) -> tuple[Path, ...]:
    """Where the fusion result is looked for, in order of preference (see the module doc)."""
    cwd = Path.cwd() if cwd is None else Path(cwd)
    return (cwd / FUSION_FILE_NAME, context.data.fusion_file)


def check_fusion(context: Context, cwd: Path | None = None) -> FusionCheckResult:
    """Read the first fusion_result.json of :func:`fusion_candidates` (``cwd`` defaults to the
    process's working directory). Problems with the file go into ``problem``, never raised."""
    candidates = fusion_candidates(context, cwd)
    # whatever is there counts, not only a regular file: a FIFO there is a problem to report
    source = next((path for path in candidates if path.exists()), None)
    if source is None:
        return FusionCheckResult(candidates)
    try:
        graphs = read_fusion_result(source)
    except FusionResultError as exc:
        return FusionCheckResult(candidates, source, tuple(exc.graphs), str(exc))
    except PrecisionToolError as exc:
        return FusionCheckResult(candidates, source, (), str(exc))
    return FusionCheckResult(candidates, source, tuple(graphs))
