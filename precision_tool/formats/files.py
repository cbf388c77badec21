"""Reading a user's file whole, with the one clear error every reader gives."""

from __future__ import annotations

from pathlib import Path

from ..errors import PrecisionToolError


def read_user_bytes(path: Path, kind: str) -> bytes:
    """All bytes of ``path``; PrecisionToolError naming it when it is missing, a directory, or
    unreadable. ``kind`` says what the file should be (``"graph file"``)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise PrecisionToolError(f"{kind} not found", path) from None
    except IsADirectoryError:
        raise PrecisionToolError(f"is a directory, not a {kind}", path) from None
    except OSError as exc:
        raise PrecisionToolError(f"cannot read {kind}: {exc.strerror or exc}", path) from None
