"""Finding an op by the name a user types: exact, then ``/``-``_`` equivalent, then substring."""

from __future__ import annotations

from ..context import Context, OpRef
from ..errors import PrecisionToolError
from ..formats.tree import normalise_op_name

MAX_CANDIDATES = 10


def _matches(refs: list[OpRef], name: str) -> list[OpRef]:
    exact = [r for r in refs if r.op.name == name]
    if exact:
        return exact
    key = normalise_op_name(name)
    same = [r for r in refs if normalise_op_name(r.op.name) == key]
    if same:
        return same
    lowered = key.lower()
    return [r for r in refs if lowered in normalise_op_name(r.op.name).lower()]


def find_op(context: Context, name: str, graph: str | None = None, debug: str | None = None) -> OpRef:
    """The one op ``name`` designates, or PrecisionToolError listing the possible operators."""
    refs = context.ops(debug)
    if graph:
        refs = [r for r in refs if r.graph.name == graph or r.model.name == graph]
        if not refs:
            raise PrecisionToolError(f"no graph named '{graph}'")
    if not refs:
        raise PrecisionToolError(f"no Build graph under {context.data.npu} to look '{name}' up in")
    found = _matches(refs, name)
    distinct = {(r.debug, r.graph.name, r.op.name): r for r in found}
    if len(distinct) == 1:
        return found[0]
    if not distinct:
        raise PrecisionToolError(f"no operator matches '{name}'")
    shown = sorted({r.op.name for r in found})
    more = f" (and {len(shown) - MAX_CANDIDATES} more)" if len(shown) > MAX_CANDIDATES else ""
    if len(shown) == 1:  # same op in several graphs or debug dirs: take the first in order
        return found[0]
    raise PrecisionToolError(
        f"'{name}' is ambiguous; possible operators: {', '.join(shown[:MAX_CANDIDATES])}{more}")
