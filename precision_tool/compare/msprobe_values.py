"""The lines msprobe's compare CSV gives a call besides its tensors, and the order of them all.

``msprobe compare`` (mindstudio-probe 26.2.0) lists every leaf of a call: tensors and the other
arguments (an ``int``, a ``str``, ``None``, a ``torch.Size``, a ``slice``...), inputs first, then
the module's parameters, then the outputs, then the parameter gradients, each in file order
(:func:`msprobe_order`; an empty list or dict is no leaf). A non-tensor leaf's line
(:func:`value_pair`) shows, as msprobe's reader describes it:

* ``torch.Size``: dtype ``torch.Size``, shape the value (``[2, 3]``), no statistics;
* ``slice``: dtype ``slice``, shape numpy's shape of the value (``(3,)``), no statistics;
* ``ellipsis``: dtype ``ellipsis``, shape ``[]``, the value as each statistic;
* an argument named ``src``, ``dst``, ``group_src`` or ``group_dst``: its type, ``[]``, the value
  as text as each statistic and as the checksum; a ``torch.ProcessGroup`` the same with its
  ranks;
* any other: dtype the Python type of the value as written (``<class 'int'>``), shape ``[]``,
  the value as each statistic;
* ``null``: ``N/A`` dtype and shape, ``None`` statistics.

The checksum of a value is msprobe's: the CRC-32 of its text, as 8 hex digits. The metric cells
are ``unsupported`` (``N/A`` without a bench), and the judge of :mod:`.msprobe_result` sees the
line as msprobe's does (a ``<class ...>`` input of shape ``[]`` whose values differ is an
error).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from ..formats.msprobe_leaves import Tensor, Value
from .msprobe_stats import NA

_SECTION_ORDER = {"parameters": 1, "output": 2, "parameters_grad": 3}  # inputs (0) first
_PEER_NAMES = frozenset({"src", "dst", "group_src", "group_dst"})
_NO_STATS = (None, None, None, None)


@dataclass(frozen=True)
class ValueSide:
    """One side of a non-tensor line, read as msprobe reads it: what a tensor's line shows
    (``dtype``, ``shape`` as msprobe's text, ``requires_grad``, ``md5``, the statistics)."""

    dtype: str | None
    shape: str
    max: Any = None
    min: Any = None
    mean: Any = None
    norm: Any = None
    md5: str | None = None
    requires_grad: bool | None = None


@dataclass(frozen=True)
class ValuePair:
    """A non-tensor leaf of an NPU call and the bench call's leaf at the same place (None:
    none there), with msprobe's names for both."""

    npu_name: str
    bench_name: str | None
    npu: ValueSide
    bench: ValueSide | None


def msprobe_order(leaves) -> list:
    """``leaves`` in msprobe's line order: inputs, parameters, outputs, parameter gradients."""
    return sorted(leaves, key=lambda leaf: _SECTION_ORDER.get(str(leaf.path[0]), 0))


def listed(leaf) -> bool:
    """Whether msprobe gives the leaf a line of its own: a tensor, or a value that is not an
    empty list or dict."""
    return isinstance(leaf, Tensor) or not (leaf.type in ("list", "dict") and leaf.value == ())


def value_pair(npu_call, leaf: Value, bench_call) -> ValuePair:
    """The line of the non-tensor ``leaf`` of ``npu_call`` with the bench's leaf at the same path."""
    bench = None
    if bench_call is not None:
        bench = next((b for b in bench_call.leaves if b.path == leaf.path and isinstance(b, Value)), None)
    name = npu_call.msprobe_name(leaf)
    return ValuePair(
        name,
        bench_call.msprobe_name(bench) if bench is not None else None,
        value_side(leaf, name),
        value_side(bench, name) if bench is not None else None,
    )


def value_side(leaf: Value, name: str) -> ValueSide:
    """How msprobe's reader describes a non-tensor leaf (module docstring)."""
    if leaf.type == "None" and leaf.value is None and not leaf.fields:  # a null in the file
        return ValueSide(None, NA, *_NO_STATS)
    value, fields = _unfrozen(leaf.value), dict(leaf.fields)
    checksum = f"{zlib.crc32(str(value).encode()):08x}"
    if leaf.type == "torch.Size":
        return ValueSide(leaf.type, str(value), md5=checksum)
    if leaf.type == "slice":
        return ValueSide(leaf.type, str((len(value),) if isinstance(value, list) else ()), md5=checksum)
    if leaf.type == "ellipsis":
        return ValueSide(leaf.type, "[]", *(value,) * 4, md5=checksum)
    if name.rsplit(".", 1)[-1] in _PEER_NAMES:
        return ValueSide(leaf.type, "[]", *(str(value),) * 4, md5=str(value))
    if leaf.type == "torch.ProcessGroup":
        ranks = str(_unfrozen(fields.get("group_ranks")))
        return ValueSide(leaf.type, "[]", *(ranks,) * 4, md5=ranks)
    return ValueSide(str(type(value)), "[]", *(value,) * 4, md5=checksum)


def _unfrozen(value: Any) -> Any:
    """A leaf's value as json gave it (the reader keeps lists as tuples)."""
    if isinstance(value, tuple):
        return [_unfrozen(v) for v in value]
    return value


__all__ = ["ValuePair", "ValueSide", "listed", "msprobe_order", "value_pair", "value_side"]
