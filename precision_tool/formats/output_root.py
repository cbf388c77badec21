"""Every file and directory the tool writes, through one door: :class:`OutputRoot`.

Result CSVs, ``pt`` exports, ``dc`` arrays, ``ni -s`` graphs, the HTML report, Model Explorer
node data and the graph cache are all written here, under one output root (``temp/`` of the data
root unless OUTPUT_ROOT or ``--out`` says otherwise), by these rules:

- **No symbolic link is followed** at the output root itself or below it. Each directory is
  opened relative to its parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY`` (``openat``), so a
  link planted at ``temp/``, ``temp/vector_compare`` or anywhere below is refused, and swapping a
  directory for a link after it was checked changes nothing: the descriptor already held is
  what is written through. The directories above the root (the data root, the user's home) are
  the user's own choice and are followed as given.
- **Files appear complete or not at all.** A file is created under a fresh hidden name
  (``O_CREAT | O_EXCL | O_NOFOLLOW``, so neither an existing file nor a link is ever opened), and
  renamed to its name only once the last byte is written and the file closed, replacing what was
  there (a link planted at the name is replaced, never followed). Ctrl-C, a full disk (seen at
  ``write`` or only at ``close``) or any error removes the temporary file. A set of files that
  belong together (the report's node data) is written into a directory under a hidden name,
  renamed into place whole (:class:`~.pending_dir.PendingDirectory`).
- **Nothing is left by a process that is gone.** A temporary name holds the writer's pid, so
  :meth:`OutputRoot.remove_stale_parts` (``vc`` calls it when it starts) removes those (files,
  and directories being filled) of processes that no longer exist (killed with SIGKILL, or by a power cut), and never a live
  process's file. Pids are of this machine: an output root shared over the network with a
  machine writing into it at the same moment is not supported.
- **Failures are one line.** A read-only file system, a full disk, a missing permission or a
  refused link raise :class:`~precision_tool.errors.PrecisionToolError` naming the directory or
  file, with the way to write elsewhere.

Where the operating system has no ``openat`` (Windows), each component is checked with ``lstat``
before use instead: the same refusals, without the guarantee against a concurrent swap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

from ..errors import PrecisionToolError
from .held_dir import (
    DIRECTORY_FLAGS,
    NOFOLLOW,
    HeldDir,
    OutputError,
    PendingFile,
    remove_entry,
    sweep,
    write_error,
)

STAMP = "%Y%m%d%H%M%S"
MAX_STAMP_TRIES = 1000  # seconds ahead a free directory name is looked for
# os.replace takes src_dir_fd/dst_dir_fd wherever os.rename does (supports_dir_fd lists rename)
_AT = all(f in os.supports_dir_fd for f in (os.open, os.mkdir, os.rename, os.unlink, os.rmdir, os.stat)) and bool(
    NOFOLLOW and getattr(os, "O_DIRECTORY", 0)
)
STALE_DEPTH = 3  # directory levels below the root swept for stale temporary files


def stamps(when: datetime, count: int = MAX_STAMP_TRIES) -> Iterator[str]:
    """``YYYYmmddHHMMSS`` of ``when``, then of each following second: the names of new result
    and report directories (:meth:`OutputRoot.new_directory` takes the first one free)."""
    when = when.replace(microsecond=0)
    return ((when + timedelta(seconds=k)).strftime(STAMP) for k in range(count))


def stamp_time(stamp: str) -> datetime:
    """The time a :func:`stamps` name gives: 14 ASCII digits, ``YYYYmmddHHMMSS``.

    Read here rather than by ``datetime.strptime``, whose first call imports ``_strptime`` and
    compiles its pattern (3-4 ms of a run's start); stricter too, where strptime takes one-digit
    fields (``2026111...``).

    Raises:
        ValueError: ``stamp`` is not 14 digits, or not a date and time.
    """
    if len(stamp) != len("YYYYmmddHHMMSS") or not (stamp.isascii() and stamp.isdigit()):
        raise ValueError(f"not a YYYYmmddHHMMSS stamp: {stamp!r}")
    fields = (stamp[:4], stamp[4:6], stamp[6:8], stamp[8:10], stamp[10:12], stamp[12:])
    return datetime(*map(int, fields))


class OutputRoot:
    """The one directory the tool writes under, and every way of writing there.

    ``path`` may name a directory that does not exist yet (it is created, with its parents, on
    the first write). Paths given to the methods are inside it: ``root.path / "pt" / "x.txt"``,
    or relative to it.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"OutputRoot({str(self.path)!r})"

    def parts(self, path: str | os.PathLike) -> tuple[str, ...]:
        """The components of ``path`` below the root; PrecisionToolError when it is outside."""
        path = Path(path)
        if not path.is_absolute() and not path.parts[: len(self.path.parts)] == self.path.parts:
            path = self.path / path  # relative to the root
        try:
            rel = path.relative_to(self.path)
        except ValueError:
            try:
                rel = Path(os.path.abspath(path)).relative_to(os.path.abspath(self.path))
            except ValueError:
                raise OutputError(f"outside the output root {self.path}", path) from None
        if any(p in ("..", ".") for p in rel.parts):
            raise OutputError(f"'..' would leave the output root {self.path}", path)
        return rel.parts

    def _split(self, path: str | os.PathLike) -> tuple[list[str], str]:
        *parent, name = self.parts(path) or ("",)
        if not name:
            raise OutputError("is the output root, not a file in it", path)
        return parent, name

    def _open_root(self, create: bool) -> HeldDir:
        absolute = Path(os.path.abspath(self.path))
        if not absolute.name:  # the file system's root
            return HeldDir(self.path, os.open(absolute, DIRECTORY_FLAGS) if _AT else None)
        try:
            if create:
                os.makedirs(absolute.parent, exist_ok=True)
            shown = self.path.parent if self.path.name == absolute.name else absolute.parent
            parent = HeldDir(shown, os.open(absolute.parent, DIRECTORY_FLAGS & ~NOFOLLOW) if _AT else None)
        except OSError as exc:
            raise write_error(exc, absolute.parent, "cannot create the output directory") from None
        try:
            found = parent.child(absolute.name, create)
        finally:
            parent.close()
        found.path = self.path
        return found

    @contextmanager
    def _directory(self, parts: Iterable[str], create: bool = True) -> Iterator[HeldDir]:
        here = self._open_root(create)
        try:
            for name in parts:
                below = here.child(name, create)
                here.close()
                here = below
            yield here
        finally:
            here.close()

    def directory(self, *parts: str) -> Path:
        """The directory ``parts`` below the root, created if need be; returns its path."""
        with self._directory(parts) as found:
            return found.path

    def new_directory(self, parent: Iterable[str], names: Iterable[str]) -> Path:
        """Create the first of ``names`` that does not exist yet in the directory ``parent``
        (exclusively: a directory another run made a moment ago is never shared)."""
        with self._directory(tuple(parent)) as here:
            for name in names:
                try:
                    os.mkdir(here.at(name), 0o777, **here.kw("dir_fd"))
                    return here.path / name
                except FileExistsError:
                    continue
                except OSError as exc:
                    raise write_error(exc, here.path / name, "cannot create the output directory") from None
        raise OutputError("every candidate name is taken", here.path)

    def begin(
        self,
        path: str | os.PathLike,
        *,
        binary: bool = False,
        encoding: str | None = "utf-8",
        newline: str | None = None,
    ) -> PendingFile:
        """Start writing ``path`` (its directory is created); see :class:`PendingFile`."""
        parent, name = self._split(path)
        with self._directory(parent) as here:
            directory = HeldDir(here.path, here.fd)
            here.fd = None  # the pending file owns the descriptor now
        return PendingFile(directory, name, binary, encoding, newline)

    @contextmanager
    def create(
        self,
        path: str | os.PathLike,
        *,
        binary: bool = False,
        encoding: str | None = "utf-8",
        newline: str | None = None,
    ) -> Iterator[IO]:
        """Write ``path`` inside the block; it appears, complete, when the block ends normally.

        An exception in the block (Ctrl-C included) leaves nothing under any name; an OSError
        there (a full disk) becomes PrecisionToolError naming ``path``.
        """
        pending = self.begin(path, binary=binary, encoding=encoding, newline=newline)
        try:
            yield pending.handle
        except OSError as exc:
            raise pending.failed(exc) from None
        except BaseException:
            pending.discard()
            raise
        pending.commit()

    def write_text(self, path: str | os.PathLike, text: str) -> Path:
        """Write ``text`` (UTF-8) to ``path``; returns the path written."""
        with self.create(path) as handle:
            handle.write(text)
        return self.path.joinpath(*self.parts(path))

    def write_bytes(self, path: str | os.PathLike, data: bytes) -> Path:
        """Write ``data`` to ``path``; returns the path written."""
        with self.create(path, binary=True) as handle:
            handle.write(data)
        return self.path.joinpath(*self.parts(path))

    def read_bytes(self, path: str | os.PathLike) -> bytes:
        """The bytes of a file under the root, read without following any link; OSError or
        PrecisionToolError when it cannot be."""
        parent, name = self._split(path)
        with self._directory(parent, create=False) as here:
            flags = os.O_RDONLY | NOFOLLOW | getattr(os, "O_BINARY", 0)
            with os.fdopen(os.open(here.at(name), flags, **here.kw("dir_fd")), "rb") as handle:
                return handle.read()

    def remove_stale_parts(self, *parts: str, depth: int = STALE_DEPTH) -> int:
        """Remove the temporary files (:func:`~.held_dir.temp_name`) of processes that no longer exist in
        the directory ``parts`` and up to ``depth`` levels below it; returns how many.

        Only regular files are removed; links are never followed nor removed, and a directory
        that cannot be opened (a link, no permission) is passed over. Never raises OSError.
        """
        try:
            with self._directory(parts, create=False) as here:
                return sweep(here, depth)
        except (OSError, PrecisionToolError):
            return 0

    def names(self, *parts: str) -> list[str]:
        """The entry names of the directory ``parts`` (empty when it does not exist)."""
        try:
            with self._directory(parts, create=False) as here:
                return os.listdir(here.fd if here.fd is not None else here.path)
        except (OSError, PrecisionToolError):
            return []

    def remove(self, path: str | os.PathLike) -> None:
        """Remove one file (a link itself, never its target); nothing when it is absent."""
        try:
            parent, name = self._split(path)
            with self._directory(parent, create=False) as here:
                os.unlink(here.at(name), **here.kw("dir_fd"))
        except (OSError, PrecisionToolError):
            pass

    def rename(self, path: str | os.PathLike, name: str) -> Path:
        """Give the file or directory ``path`` the name ``name`` in its directory, replacing a
        file or an empty directory of that name (``os.replace``: neither name is followed when
        it is a link); returns the new path. OSError as the system raises it."""
        parent, old = self._split(path)
        with self._directory(parent, create=False) as here:
            os.replace(here.at(old), here.at(name), **here.kw("src_dir_fd", "dst_dir_fd"))
        return self.path.joinpath(*parent, name)

    def remove_tree(self, path: str | os.PathLike) -> None:
        """Remove a file, or a directory with everything in it; a link is removed itself, never
        followed. Nothing when it is absent; never raises OSError."""
        try:
            parent, name = self._split(path)
            with self._directory(parent, create=False) as here:
                remove_entry(here, name)
        except (OSError, PrecisionToolError):
            pass

    def remove_empty_dir(self, path: str | os.PathLike) -> None:
        """Remove a directory if it is empty (complete files in it stay); the root itself too."""
        try:
            if not self.parts(path):
                os.rmdir(self.path)  # rmdir never follows a link: it fails on one
                return
            parent, name = self._split(path)
            with self._directory(parent, create=False) as here:
                os.rmdir(here.at(name), **here.kw("dir_fd"))
        except (OSError, PrecisionToolError):
            pass
