"""Opening a file of the user's data for reading: regular files only, never blocking, read with a
bound. Every reader of the data root opens its files here.

A FIFO at ``mapping.csv`` made ``open`` wait forever for a writer that never came, and
``/dev/zero`` there was read until the memory ran out. So a file is opened with ``O_NONBLOCK``
(an open never waits for a FIFO's writer, nor for a device), checked with ``fstat`` on the
descriptor itself (what was opened, not what the name pointed to a moment before), and refused
unless it is a regular file; only then is ``O_NONBLOCK`` cleared, so reads behave as always.
:func:`read_regular` reads whole files of a kind that has a sane size (``mapping.csv``,
``fusion_result.json``, a graph, ``config.py``) and refuses one past that kind's limit before
reading it, saying the limit. Files that are large by nature (dumps, golden ``.npy``) are
opened with :func:`open_regular` and read within their own ``fstat`` size.

Symbolic links in the user's data are followed: they are the user's to make, and nothing here
writes (writes go through :class:`~.output_root.OutputRoot`, which never follows one).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ..errors import PrecisionToolError

# what a file that is not a regular file is, in the words of the message
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_BLOCK = 1 << 20  # bytes read at a time past the size fstat gave
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # none on Windows, which has no FIFO to wait for


def size_text(count: int) -> str:
    """``count`` bytes for a reader: ``1.5 GiB``, ``12.0 KiB``; a whole number of units (a limit)
    without decimals, ``64 MiB``; ``300 bytes``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            return f"{count // size} {unit}" if count % size == 0 else f"{count / size:.1f} {unit}"
    return f"{count} bytes"


def child_prefix(directory: str | os.PathLike) -> str:
    """The text that a file name appended to spells the file's path as ``Path(directory) /
    name`` does: a listing of thousands of files names each by text, not by a ``Path`` each."""
    text = os.fspath(Path(directory))  # one Path a directory: its spelling made canonical
    return "" if text == os.curdir else os.path.join(text, "")


def _what(mode: int) -> str:
    return next((name for test, name in _NOT_REGULAR if test(mode)), "a file of another kind")


def _refused(path: str | os.PathLike, kind: str, mode: int) -> PrecisionToolError:
    return PrecisionToolError(f"{kind} is {_what(mode)}, not a regular file: not read", path)


def _open_problem(path: str | os.PathLike, kind: str, exc: OSError) -> PrecisionToolError:
    """The error for an open that failed: what the file is when that is the reason (a socket
    cannot be opened at all), else the system's words."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):
        return _refused(path, kind, mode)
    return PrecisionToolError(f"cannot read {kind}: {exc.strerror or exc}", path)


def _read_only_nonblocking(path: str, _flags: int) -> int:
    """The ``opener`` of :func:`open`: :func:`open_read_only`."""
    return open_read_only(path)


def open_read_only(path: str | os.PathLike) -> int:
    """A descriptor of ``path`` open for reading: the flags of ``"rb"``, spelt out at the call
    (the write checker of tests/test_security.py reads them there), and: never wait in open (a
    FIFO), never become a terminal's, never leak to a child process. What it opened is the
    caller's to check (``os.fstat``) and close."""
    return os.open(
        path,
        os.O_RDONLY
        | getattr(os, "O_NONBLOCK", 0)
        | getattr(os, "O_NOCTTY", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0),
    )


def open_regular(path: str | os.PathLike, kind: str, buffering: int = -1) -> BinaryIO:
    """``path`` open for reading in binary mode, when it is a regular file (a link to one is
    followed). ``kind`` says what the file should be (``"dump file"``); ``buffering`` is
    :func:`open`'s.

    Costs one ``fstat`` and two ``fcntl`` calls more than a plain :func:`open`.

    Raises:
        PrecisionToolError: naming ``path``: it is missing, a directory, a FIFO, a device or a
            socket, or cannot be opened.
    """
    try:
        handle = open(os.fspath(path), "rb", buffering=buffering, opener=_read_only_nonblocking)
    except OSError as exc:
        raise _open_failure(path, kind, exc) from None
    try:
        _checked_regular(handle.fileno(), path, kind)
    except BaseException:
        handle.close()
        raise
    return handle


def open_regular_descriptor(path: str | os.PathLike, kind: str) -> tuple[int, os.stat_result]:
    """:func:`open_regular` as a bare descriptor and its ``fstat``, for a reader that reads a
    small file whole with :func:`read_whole` (a ``.pt``: without the file object and a second
    ``fstat`` one took 49 microseconds instead of 61). The caller closes the descriptor.

    Raises:
        PrecisionToolError: as :func:`open_regular`.
    """
    try:
        descriptor = open_read_only(path)
    except OSError as exc:
        raise _open_failure(path, kind, exc) from None
    try:
        return descriptor, _checked_regular(descriptor, path, kind)
    except BaseException:
        os.close(descriptor)
        raise


def _open_failure(path: str | os.PathLike, kind: str, exc: OSError) -> PrecisionToolError:
    if isinstance(exc, FileNotFoundError):
        return PrecisionToolError(f"{kind} not found", path)
    if isinstance(exc, IsADirectoryError):
        return _refused(path, kind, stat.S_IFDIR)
    return _open_problem(path, kind, exc)


def _checked_regular(descriptor: int, path: str | os.PathLike, kind: str) -> os.stat_result:
    """The ``fstat`` of what was opened, refused unless a regular file; then blocking again."""
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        raise _refused(path, kind, info.st_mode)
    if _O_NONBLOCK:
        os.set_blocking(descriptor, True)
    return info


Fetch = Callable[[int, int], bytes]  # (offset, count) -> up to count bytes of a file


def descriptor_fetch(descriptor: int) -> Fetch:
    """Reads of an open file by offset: each one ``pread`` where the system has it (one call,
    the file position untouched), else a seek and a read (Windows)."""
    if _PREAD is not None:
        return lambda offset, count: _PREAD(descriptor, count, offset)

    def seek_and_read(offset: int, count: int) -> bytes:
        os.lseek(descriptor, offset, os.SEEK_SET)
        return os.read(descriptor, count)

    return seek_and_read


_PREAD = getattr(os, "pread", None)


def held_fetch(held, descriptor: int, copy: bool = True) -> Fetch:
    """Reads of the open file ``descriptor`` by offset, served from ``held`` (its first bytes,
    read already: ``bytes`` or a uint8 array) where they fall inside it, else from the file.
    ``copy`` False: a read inside ``held`` is a memoryview of it (no copy), for a reader that
    only looks at the bytes at once, such as a digest (:func:`.file_identity.sample_digest`)."""
    held = memoryview(held).cast("B")
    size, from_file = len(held), descriptor_fetch(descriptor)

    def fetch(offset: int, count: int) -> bytes:
        if offset + count <= size:
            part = held[offset : offset + count]
            return part.tobytes() if copy else part
        return from_file(offset, count)

    return fetch


class FetchReader:
    """``read`` and ``seek`` over a :data:`Fetch`, for a parser written for a file object that
    reads a file's first bytes: a header served from bytes read already
    (:func:`held_fetch`) costs no buffered file object (its ``isatty`` probe, two ``fstat``
    calls) and no read but the first."""

    def __init__(self, fetch: Fetch) -> None:
        self._fetch, self._at = fetch, 0

    def read(self, count: int) -> bytes:
        """Up to ``count`` bytes from the position (fewer at the file's end), which moves past them."""
        data = self._fetch(self._at, count)
        self._at += len(data)
        return data

    def seek(self, offset: int) -> int:
        """Move to ``offset`` from the start."""
        self._at = offset
        return offset


def read_whole(descriptor: int, size: int) -> bytes:
    """The ``size`` bytes an ``fstat`` gave for the open regular file ``descriptor``, from its
    position: one ``read`` as a rule, more if the system returns less; fewer bytes only when the
    file ends sooner (it shrank since)."""
    data = os.read(descriptor, size)
    if len(data) == size or not data:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.read(descriptor, size - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def read_regular(path: str | os.PathLike, kind: str, limit: int) -> bytes:
    """All bytes of the regular file ``path`` (see :func:`open_regular`), at most ``limit``.

    Raises:
        PrecisionToolError: naming ``path``: as :func:`open_regular`, or the file is larger
            than ``limit`` (checked before reading, and again while reading, should it grow).
    """
    with open_regular(path, kind) as handle:
        try:
            size = os.fstat(handle.fileno()).st_size
            data = _read_at_most(handle, size, limit + 1) if size <= limit else b""
        except OSError as exc:
            raise PrecisionToolError(f"cannot read {kind}: {exc.strerror or exc}", path) from None
    if size > limit or len(data) > limit:  # the size is known only when fstat told it
        known = f" ({size:,} bytes)" if size > limit else ""
        raise PrecisionToolError(f"{kind} is larger than {size_text(limit)}{known}: not read", path)
    return data


def read_text(path: str | os.PathLike, kind: str, limit: int) -> str:
    """The regular file ``path`` as UTF-8 text (a BOM is dropped), read as :func:`read_regular`.

    Raises:
        PrecisionToolError: naming ``path``: as :func:`read_regular`, or not UTF-8 text.
    """
    raw = read_regular(path, kind, limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PrecisionToolError(f"not UTF-8 text: byte {exc.start}", path) from None


def _read_at_most(handle: BinaryIO, size: int, most: int) -> bytes:
    """At most ``most`` bytes of ``handle``: the ``size`` fstat gave in one read (a read asks
    for memory for all it may return, so never for ``most`` up front), then a block at a time
    while there is more (the file grew, or is one whose size fstat does not know)."""
    parts, total, ask = [], 0, size + 1
    while total < most:
        part = handle.read(min(ask, most - total))
        if not part:
            break
        parts.append(part)
        total += len(part)
        ask = _BLOCK
    return b"".join(parts)


def bytes_under(paths, skip=(), enough: float = float("inf")) -> int:
    """The bytes of the regular files at and under ``paths`` (files or directories), leaving out
    the directories ``skip``; links to directories are not followed (no loop), a file that
    cannot be read is left out. Stops once ``enough`` is reached: an estimate of a data set's
    size before it is read, at a stat per file."""
    skipped = {os.path.realpath(p) for p in skip}
    total, stack = 0, [os.fspath(p) for p in paths]
    while stack and total < enough:
        path = stack.pop()
        try:
            if os.path.isfile(path):
                total += os.stat(path).st_size
                continue
            if os.path.realpath(path) in skipped:
                continue
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    elif entry.is_file():
                        total += entry.stat().st_size
                        if total >= enough:  # a dump's directory holds thousands of files
                            break
        except OSError:
            continue
    return total
