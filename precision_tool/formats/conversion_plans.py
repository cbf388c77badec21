"""The copies a tiled layout conversion makes, kept to be made again without working them out.

A blocked or FRACTAL_NZ tensor comes to the host in one pass of strided copies
(:func:`.tile_copy.copy_tiles`), but finding those copies (the origin layout, the canonical
dims, the tiled view, the padded tails, the contiguous runs) is Python that costs 15-30 us a
tensor, ten times the copying itself at the sizes a network dumps (docs/performance.md). What
the copies are depends only on the shapes, the dtype and the names: a network's tensors share
few of those, so a :class:`ConversionPlans` keeps, per such key, each copy as offsets, shapes
and strides into the two buffers (a :class:`CopyPlan`), and the next tensor of the same key is
copied by replaying them. The replayed copies are the ones the conversion made, step for step;
a conversion that made no copies of its own (a view, a gather, a plain copy) is not kept, and
is worked out each time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class _Step(NamedTuple):
    """One strided copy: a view of the source buffer into a view of the target."""

    shape: tuple[int, ...]
    item: np.dtype
    source_offset: int
    source_strides: tuple[int, ...]
    target_offset: int
    target_strides: tuple[int, ...]


class CopyPlan(NamedTuple):
    """The copies of one conversion, relative to its source and target buffers."""

    steps: tuple[_Step, ...]

    def replay(self, source: np.ndarray, target: np.ndarray) -> None:
        """Make the copies from C-contiguous ``source`` into C-contiguous ``target`` (numpy
        refuses a view that would reach past either buffer)."""
        for step in self.steps:
            np.copyto(
                np.ndarray(step.shape, step.item, target, step.target_offset, step.target_strides),
                np.ndarray(step.shape, step.item, source, step.source_offset, step.source_strides),
            )


def _placed(view: np.ndarray, base: np.ndarray) -> int | None:
    """The byte offset of ``view`` in ``base``'s buffer, or None when it reaches outside it or
    steps backwards."""
    if any(stride < 0 for stride in view.strides):
        return None
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    last = offset + sum((n - 1) * stride for n, stride in zip(view.shape, view.strides)) + view.itemsize
    return offset if offset >= 0 and last <= base.nbytes and view.size else None


def plan_of(copies: list[tuple[np.ndarray, np.ndarray]], source: np.ndarray, target: np.ndarray) -> CopyPlan | None:
    """The plan of ``copies`` (``(target view, source view)`` pairs, in order) made from
    ``source`` into ``target``; None when there were none or one is not a view of its buffer."""
    if not copies:
        return None
    steps = []
    for into, out_of in copies:
        at, start = _placed(into, target), _placed(out_of, source)
        if at is None or start is None or into.shape != out_of.shape or into.dtype != out_of.dtype:
            return None
        steps.append(_Step(into.shape, into.dtype, start, out_of.strides, at, into.strides))
    return CopyPlan(tuple(steps))


Convert = Callable[[np.ndarray | None, list | None], np.ndarray]


class ConversionPlans:
    """Plans of conversions by key (see the module docstring), at most ``limit`` of them (the
    first kept is the first dropped); :attr:`replays` counts the conversions made by a plan."""

    def __init__(self, limit: int = 512) -> None:
        self.limit = limit
        self.replays = 0
        self._plans: dict[tuple, CopyPlan | None] = {}

    def __len__(self) -> int:
        """The keys kept (with a plan, or found to have none)."""
        return len(self._plans)

    def convert(
        self, source: np.ndarray, shape: tuple[int, ...], key: tuple, out: np.ndarray | None, convert: Convert
    ) -> np.ndarray:
        """``convert(out, copies)``: the host array of ``shape`` for ``source``, made by the plan
        kept for ``key`` (what decides the copies besides the shapes and the dtypes, which are
        added here) when there is one. ``convert`` appends each copy it makes to ``copies`` (a
        list, or None: not recorded); with ``out`` None it returns a new array or a view."""
        if not source.flags.c_contiguous or out is not None and not out.flags.c_contiguous:
            return convert(out, None)
        key = (*key, shape, source.shape, source.dtype, None if out is None else (out.shape, out.dtype))
        plan = self._plans.get(key, self)
        if plan is None:  # worked out each time
            return convert(out, None)
        if plan is not self:
            target = np.empty(shape, source.dtype) if out is None else out
            plan.replay(source, target)
            self.replays += 1
            return target
        copies: list = []
        host = convert(out, copies)
        self._keep(key, plan_of(copies, source, host) if host.flags.c_contiguous else None)
        return host

    def _keep(self, key: tuple, plan: CopyPlan | None) -> None:
        # list() and pop() with a default: never an error should another thread change them
        for old in list(self._plans)[: max(0, len(self._plans) - self.limit + 1)]:
            self._plans.pop(old, None)
        self._plans[key] = plan

    def clear(self) -> None:
        """Drop every plan."""
        self._plans.clear()
