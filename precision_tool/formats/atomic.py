"""Files that appear under their final name only when complete.

Everything the tool writes (result CSVs, ``pt`` exports, ``dc`` arrays, graph caches) is written
under a hidden temporary name beside the target and renamed over it once the last byte is
written, so Ctrl-C, a full disk or a crash never leaves a half-written file under the name a
user or a later command would read.
"""

from __future__ import annotations

import os
import secrets
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

NAME_MAX = 255  # bytes in one file name on the usual file systems
_SUFFIX_ROOM = 40  # ".{pid}.{8 hex}.part" and the leading dot


def temp_name(path: str | os.PathLike) -> Path:
    """A fresh hidden name beside ``path``: ``.{name}.{pid}.{random}.part``, within NAME_MAX."""
    path = Path(path)
    stem = path.name.encode("utf-8", "surrogateescape")[:NAME_MAX - _SUFFIX_ROOM]
    stem_text = stem.decode("utf-8", "ignore")  # never cut a character in half
    return path.with_name(f".{stem_text}.{os.getpid()}.{secrets.token_hex(4)}.part")


def create_exclusive(path: Path, binary: bool, encoding: str | None = "utf-8",
                     newline: str | None = None) -> IO:
    """Open a new file for writing; it must not exist. Mode 0o666 less the umask, like open()."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    if binary:
        return os.fdopen(fd, "wb")
    return os.fdopen(fd, "w", encoding=encoding, newline=newline)


@contextmanager
def atomic_write(path: str | os.PathLike, binary: bool = False, encoding: str | None = "utf-8",
                 newline: str | None = None) -> Iterator[IO]:
    """Write ``path`` through a temporary file renamed over it when the block ends normally.

    On any exception (KeyboardInterrupt included) the temporary file is removed and nothing
    appears under ``path``; an existing ``path`` is left as it was. Raises OSError when the
    temporary file cannot be created.
    """
    path = Path(path)
    temp = temp_name(path)
    handle = create_exclusive(temp, binary, encoding, newline)
    try:
        with handle:
            yield handle
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
