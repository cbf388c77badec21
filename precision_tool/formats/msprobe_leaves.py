"""The leaves of one msprobe call: its tensors and other values, flattened with their paths.

A section of a ``dump.json`` entry (``input_args``, ``output``, ...) is a leaf or lists and
dicts of them, nested; msprobe's test for a leaf is a dict with a string ``type``. A leaf with
``dtype`` and ``shape`` (or a ``type`` ending in ``Tensor``, or ``numpy.ndarray``) is a
:class:`Tensor`; any other is a :class:`Value`, as is ``null``, an empty list or dict (kept so
:func:`nest` rebuilds a section exactly) and a bare number or string. A ``torch.distributed.P2POp``
(a dict with that ``class_type``) is one leaf, its tensor at the P2POp's place, as msprobe's
compare takes it (its op, peer, tag and group are dropped; :func:`nest` gives the tensor there).
Paths are the section, then list indices (ints) and dict keys (strings): ``input_args.1.0``,
``input_kwargs.weight``, ``parameters.weight``, ``parameters_grad.weight``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

_STATS = ("Max", "Min", "Mean", "Norm")

Step = str | int


@dataclass(frozen=True)
class Tensor:
    """One tensor of a call: its path (``("input_args", 0)``), its description and statistics.

    ``max``/``min``/``mean``/``norm`` are floats or None (absent, null, or text that is no
    number); a bool tensor's true/false become 1.0/0.0, ``"inf"`` and ``"nan"`` become floats.
    ``written`` keeps the four as the file has them (an int stays an int, text stays text), which
    msprobe's own table shows. ``md5`` is the checksum text, ``data_name`` the file under
    ``dump_tensor_data`` (None when msprobe saved none).
    """

    path: tuple[Step, ...]
    type: str
    dtype: str | None
    shape: tuple[int, ...] | None
    max: float | None
    min: float | None
    mean: float | None
    norm: float | None
    md5: str | None = None
    requires_grad: bool | None = None
    data_name: str | None = None
    written: tuple[Any, Any, Any, Any] | None = None  # Max, Min, Mean, Norm as the file has them

    @property
    def name(self) -> str:
        """The path spelt with dots: ``input_args.1.0``."""
        return path_name(self.path)

    @property
    def section(self) -> str:
        """``input_args``, ``input_kwargs``, ``input``, ``output``, ``parameters`` or
        ``parameters_grad``."""
        return str(self.path[0])


@dataclass(frozen=True)
class Value:
    """A non-tensor leaf of a call, kept for replaying it: ``type`` as msprobe wrote it
    (``int``, ``float``, ``bool``, ``str``, ``slice``, ``torch.Size``, ``torch.dtype``, ...;
    ``None`` for null; ``list`` or ``dict`` for an empty one, with ``value`` ``()``: msprobe
    writes ``{}`` too for an object it cannot describe), ``value`` its value (lists become
    tuples, dicts tuples of pairs), ``fields`` the other members (``group_ranks`` and
    ``group_id`` of a process group, ``format`` of a memory format)."""

    path: tuple[Step, ...]
    type: str
    value: Any = None
    fields: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        """The path spelt with dots."""
        return path_name(self.path)

    @property
    def section(self) -> str:
        """The section the value is in (see :attr:`Tensor.section`)."""
        return str(self.path[0])


Leaf = Tensor | Value


def path_name(path: tuple[Step, ...]) -> str:
    """``("input_args", 1, 0)`` -> ``input_args.1.0``."""
    return ".".join(str(step) for step in path)


P2POP = "torch.distributed.P2POp"  # msprobe's class_type of a point-to-point op argument


def flatten(value: Any, path: tuple[Step, ...], out: list[Leaf]) -> None:
    """Append the leaves of ``value`` at ``path`` to ``out``, depth first in file order (with a
    stack of its own: ``json`` has already read whatever depth the file has)."""
    stack: list[tuple[Any, tuple[Step, ...]]] = [(value, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict) and value.get("class_type") == P2POP:
            out.append(_leaf(_p2p_tensor(value), where))  # one leaf: its tensor, at its place
        elif isinstance(value, dict) and value and not _is_leaf(value):
            stack.extend((item, (*where, str(k))) for k, item in reversed(value.items()))
        elif isinstance(value, list) and value:
            stack.extend((item, (*where, i)) for i, item in reversed(list(enumerate(value))))
        else:
            out.append(_leaf(value, where))


def _p2p_tensor(value: dict[str, Any]) -> dict[str, Any] | None:
    """What a P2POp leaf holds, as msprobe's compare takes it: its tensor's record, named by
    the P2POp's own place (not ``....tensor``); none (a None line) when it has no record. Its
    op, peer, tag and group are no column of the comparison."""
    tensor = value.get("tensor")
    return tensor if isinstance(tensor, dict) and tensor else None


def _is_leaf(value: dict[str, Any]) -> bool:
    return isinstance(value.get("type"), str)


def _leaf(value: Any, path: tuple[Step, ...]) -> Leaf:
    if isinstance(value, dict) and value:
        if _is_tensor(value):
            return _tensor(value, path)
        rest = tuple((k, _freeze(v)) for k, v in value.items() if k not in ("type", "value"))
        return Value(path, value["type"], _freeze(value.get("value")), rest)
    if value is None:
        return Value(path, "None")
    if isinstance(value, (list, dict)):
        return Value(path, type(value).__name__, ())
    return Value(path, type(value).__name__, value)  # a bare number or string


def _is_tensor(value: dict[str, Any]) -> bool:
    kind = value["type"]
    described = "dtype" in value and "shape" in value
    return described or kind.endswith("Tensor") or kind == "numpy.ndarray"


def _tensor(value: dict[str, Any], path: tuple[Step, ...]) -> Tensor:
    get = value.get  # a dump.json holds thousands of tensors: no generator a field
    dtype, md5, data_name, grad = get("dtype"), get("md5"), get("data_name"), get("requires_grad")
    written = tuple(map(get, _STATS))
    return Tensor(
        path,
        value["type"],
        dtype if isinstance(dtype, str) else None,
        _shape(get("shape")),
        *map(_stat, written),
        md5 if isinstance(md5, str) and md5 else None,
        grad if isinstance(grad, bool) else None,
        data_name if isinstance(data_name, str) and data_name else None,
        tuple(map(_freeze, written)),
    )


def _shape(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, list) and all(type(d) is int for d in value):  # no bools
        return tuple(value)
    return None


def _stat(value: Any) -> float | None:
    """A statistic as a float: numbers and bools as they are, numeric text parsed
    (``"inf"``, ``"-inf"``, ``"nan"``, ``"1.5"``), anything else None."""
    if isinstance(value, (bool, int, float)):
        try:
            return float(value)
        except OverflowError:  # an int too large for a float
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _freeze(value: Any) -> Any:
    """``value`` with lists made tuples and dicts tuples of pairs (the dataclasses are frozen)."""
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    return value


def nest(leaves: tuple[Leaf, ...] | list[Leaf], section: str) -> Any:
    """The structure of ``section`` rebuilt from its leaves: lists where the path steps are ints,
    dicts where they are names, the :class:`Tensor` and :class:`Value` objects at their places
    (``null`` as None, an empty list or dict as one); None when the section has no leaf."""
    root: dict[str, Any] = {}
    for leaf in leaves:
        if leaf.section != section:
            continue
        here: Any = root
        steps = (section, *leaf.path[1:])
        for step, following in zip(steps, steps[1:]):
            here = _child(here, step, [] if isinstance(following, int) else {})
        _put(here, steps[-1], _placed(leaf))
    return root.get(section)


def _child(container: Any, step: Step, empty: Any) -> Any:
    if isinstance(container, list):
        while len(container) <= int(step):
            container.append(None)
        if container[int(step)] is None:
            container[int(step)] = empty
        return container[int(step)]
    return container.setdefault(step, empty)


def _put(container: Any, step: Step, value: Any) -> None:
    if isinstance(container, list):
        while len(container) <= int(step):
            container.append(None)
        container[int(step)] = value
    else:
        container[step] = value


def _placed(leaf: Leaf) -> Any:
    """What stands at the leaf's place: the leaf, or None, [] or {} for the markers."""
    if isinstance(leaf, Tensor) or leaf.fields:
        return leaf
    if leaf.type == "None" and leaf.value is None:
        return None
    if leaf.type in ("list", "dict") and leaf.value == ():
        return [] if leaf.type == "list" else {}
    return leaf
