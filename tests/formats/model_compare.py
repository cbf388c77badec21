"""A graph model as nested plain data for comparing two readers: stricter than ``==``.

``Model.__eq__`` (dataclasses) leaves out what is declared ``compare=False`` -- the input slot
of an :class:`InputRef` matters (it indexes ``input_descs``), the source path does not -- and
Python's ``==`` takes ``True == 1 == 1.0``, ``(1,) != [1]`` only sometimes, and ``nan != nan``.
Here every dataclass field but ``Model.source_path`` and the lookup tables counts, every scalar
carries its type, floats are compared by ``repr`` (so ``-0.0``, ``nan`` and ``inf`` are exact),
and dict order counts (attributes are sorted by name by both readers).
"""

from __future__ import annotations

import dataclasses
from typing import Any

_LEFT_OUT = {"source_path", "_by_name", "_by_key"}


def canonical(value: Any) -> Any:
    """``value`` (a model, or any part of one) as nested tuples of type-tagged values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,) + tuple(
            (f.name, canonical(getattr(value, f.name))) for f in dataclasses.fields(value) if f.name not in _LEFT_OUT
        )
    if isinstance(value, dict):
        return ("dict",) + tuple((canonical(k), canonical(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__,) + tuple(canonical(item) for item in value)
    if isinstance(value, float):
        return ("float", repr(value))
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    raise TypeError(f"no canonical form for {type(value).__name__}")
