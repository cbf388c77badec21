"""A comparison's tasks, paired as they are taken.

Pairing a large network reads every dump file's header (on the 1.5 GB network of
docs/performance.md about 0.15 s for 2,006 files). A :class:`PairedTasks` runs the pairing only
as its tasks are taken, so the engine can start its workers on the first ops while the last
are still being paired (:func:`~.engine.compare_tasks`). What has been paired is kept: taking
the tasks again, or asking for their number, never pairs anything twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from .golden_pairing import PairTask


class PairedTasks(Sequence[PairTask]):
    """The tasks of ``pairing`` (an iterable that pairs as it goes), in its order.

    Iterating takes the tasks kept, then pairs on; ``len``, indexing and ``==`` pair whatever
    is left first. An exception of the pairing propagates to whoever takes the task it stopped
    at, and the tasks paired before it stay kept.
    """

    def __init__(self, pairing: Iterable[PairTask]) -> None:
        self._kept: list[PairTask] = []
        self._pairing: Iterator[PairTask] | None = iter(pairing)

    def __iter__(self) -> Iterator[PairTask]:
        taken = 0
        while True:
            if taken < len(self._kept):
                yield self._kept[taken]
                taken += 1
            elif not self._pair_one():
                return

    def _pair_one(self) -> bool:
        """Pair one more task; False when the pairing is done."""
        task = None if self._pairing is None else next(self._pairing, None)
        if task is None:
            self._pairing = None
            return False
        self._kept.append(task)
        return True

    def _all(self) -> list[PairTask]:
        while self._pair_one():
            pass
        return self._kept

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> PairTask: ...

    @overload
    def __getitem__(self, index: slice) -> list[PairTask]: ...

    def __getitem__(self, index):
        return self._all()[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (PairedTasks, list, tuple)):
            return self._all() == list(other)
        return NotImplemented

    __hash__ = None  # mutable as it pairs, like a list

    def __repr__(self) -> str:
        state = "paired" if self._pairing is None else "pairing"
        return f"PairedTasks({len(self._kept)} tasks, {state})"

    def __reduce__(self):
        return (list, (self._all(),))  # sent elsewhere as the list of all its tasks


__all__ = ["PairedTasks"]
