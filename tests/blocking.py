"""Calling a reader on a FIFO without letting a test hang: the reader runs in a thread, and one
that still waits in ``open`` after :data:`BLOCKED_FOR` seconds fails the test (its FIFO is then
opened for writing, which lets the thread go)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BLOCKED_FOR = 10  # seconds: an open that waits for a FIFO's writer waits for ever


def without_blocking(fifo: Path, call: Callable[[], Any]) -> Any:
    """``call()``'s result, or the exception it raised, raised again here; the test fails when
    it is still blocked after :data:`BLOCKED_FOR` seconds (on ``fifo``)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 -- raised again in the test's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BLOCKED_FOR)
    if worker.is_alive():  # a reader waits for a writer: be one, so the thread ends
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(BLOCKED_FOR)
        pytest.fail(f"reading {fifo} blocked")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
