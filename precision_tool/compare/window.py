"""The in-order window: units of work through any executor, their rows back in order.

The local pool (a ``ProcessPoolExecutor``) and a Dask cluster (:mod:`.cluster`) run the same
loop, :func:`stream_units`: at most ``window`` calls in flight, so memory stays bounded by the
results of a few jobs whatever the run's size, and each unit's rows are yielded as soon as it
and every unit before it are done, so the CSVs can be written while the comparison runs.

A :class:`Unit` is a job of the engine (one call) or a tensor compared in ranges (rounds of
calls, :mod:`.split`); the loop only knows the protocol.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from .result import CompareRow


@dataclass(frozen=True)
class JobResult:
    """What a unit hands back: its rows and the file bytes of the tensors it compared."""

    rows: list[CompareRow]
    nbytes: int


class LostWork(Exception):
    """A call's worker was lost for good (a cluster gave up retrying it): its tensors become
    rows with ``reason`` instead of stopping the run."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def wait(future):
    """The result of a ``concurrent.futures`` future (the local pool's ``result``)."""
    return future.result()


class Unit:
    """Work that runs as one or more rounds of calls and ends in a :class:`JobResult`.

    ``submit(fn, *args)`` returns a future (with ``done()``); ``result(future)`` waits for one
    and may raise :class:`LostWork`.
    """

    in_flight = 0  # calls submitted and not yet collected

    def start(self, submit: Callable) -> int:
        """Submit the first round (or do the work here); returns the calls submitted."""
        raise NotImplementedError

    def advance(self, submit: Callable, result: Callable) -> int:
        """Without waiting: if a round is done, collect it and submit the next; returns the
        change in calls in flight."""
        return 0

    def finish(self, submit: Callable, result: Callable) -> JobResult:
        """Wait for every round and return the rows."""
        raise NotImplementedError


def stream_units(
    units: Iterable[Unit],
    submit: Callable,
    window: int,
    emit: Callable[[JobResult], Iterator[CompareRow]],
    result: Callable = wait,
) -> Iterator[CompareRow]:
    """Start units while fewer than ``window`` calls are in flight (and fewer than ``8 *
    window`` units wait), and yield ``emit(unit's result)`` unit after unit, in order.

    A unit behind the head whose round is done gets its next round submitted at once (a split
    tensor's second pass), so the workers are not left idle while the head is waited for.
    """
    queue: deque[Unit] = deque()
    in_flight = 0
    remaining = iter(units)
    while True:
        while in_flight < window and len(queue) < 8 * window:
            unit = next(remaining, None)
            if unit is None:
                break
            in_flight += unit.start(submit)
            queue.append(unit)
        in_flight += sum(unit.advance(submit, result) for unit in queue)
        if not queue:
            break
        head = queue.popleft()
        in_flight -= head.in_flight
        yield from emit(head.finish(submit, result))


__all__ = ["JobResult", "LostWork", "Unit", "stream_units", "wait"]
