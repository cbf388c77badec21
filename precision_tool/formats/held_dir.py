"""What :class:`~.output_root.OutputRoot` writes with: a directory held open by its descriptor
and never reached through a link (:class:`HeldDir`), a file written under a hidden temporary
name and renamed into place (:class:`PendingFile`), the sweep of temporary names whose writer is
gone, and the one-line errors (:class:`OutputError`). The rules they keep are the output
root's (:mod:`.output_root`): a directory or file is only ever opened through an
:class:`~.output_root.OutputRoot`, and other modules import from here the types and errors only.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import IO

from ..errors import PrecisionToolError

NAME_MAX = 255  # bytes in one file name on the usual file systems
_SUFFIX_ROOM = 40  # ".{pid}.{8 hex}.part" and the leading dot
ELSEWHERE = "--out DIR or OUTPUT_ROOT writes elsewhere"
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
DIRECTORY_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOT_THERE = (errno.EROFS, errno.EACCES, errno.EPERM)
_PART_NAME = re.compile(r"\..*\.([0-9]{1,10})\.[0-9a-f]{8}\.part", re.DOTALL)  # temp_name's


def temp_name(path: str | os.PathLike) -> Path:
    """A fresh hidden name beside ``path``: ``.{name}.{pid}.{random}.part``, within NAME_MAX."""
    path = Path(path)
    stem = path.name.encode("utf-8", "surrogateescape")[: NAME_MAX - _SUFFIX_ROOM]
    stem_text = stem.decode("utf-8", "ignore")  # never cut a character in half
    return path.with_name(f".{stem_text}.{os.getpid()}.{os.urandom(4).hex()}.part")


def temp_name_pid(name: str) -> int | None:
    """The pid in a name :func:`temp_name` made, or None when ``name`` is not one."""
    match = _PART_NAME.fullmatch(name)
    return int(match.group(1)) if match else None


def process_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine; True whenever that cannot be told
    (Windows, where probing a pid with ``os.kill`` would end the process), so nothing of a live
    process is ever taken for stale."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):  # EPERM: another user's live process
        return True
    return True


def _reason(exc: OSError) -> str:
    why = exc.strerror or str(exc)
    return f"{why}; {ELSEWHERE}" if exc.errno in _NOT_THERE else why


class OutputError(PrecisionToolError):
    """The output cannot be written (a full disk, a read-only file system, a refused link): the
    command cannot go on, unlike a problem with one input."""


def write_error(exc: OSError, path: Path, what: str = "cannot write") -> OutputError:
    """The one-line error for an OSError met while writing ``path``."""
    return OutputError(f"{what} ({_reason(exc)})", path)


class HeldDir:
    """One checked directory under the output root: an open descriptor where the OS has
    ``openat``, else its path (checked with ``lstat`` on the way down)."""

    def __init__(self, path: Path, fd: int | None) -> None:
        self.path, self.fd = path, fd

    def at(self, name: str):
        """``name`` as the ``os`` functions take it here."""
        return name if self.fd is not None else os.path.join(self.path, name)

    def kw(self, *keys: str) -> dict:
        return {key: self.fd for key in keys} if self.fd is not None else {}

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _refuse(self, name: str, exc: OSError) -> OutputError:
        where = self.path / name
        try:
            mode = os.stat(self.at(name), follow_symlinks=False, **self.kw("dir_fd")).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISLNK(mode):
            return OutputError(
                "is a symbolic link, and nothing is written through links under "
                f"the output root (remove it; {ELSEWHERE})",
                where,
            )
        if mode is not None and not stat.S_ISDIR(mode):
            return OutputError("is not a directory, so nothing can be written into it", where)
        return write_error(exc, where, "cannot create the output directory")

    def child(self, name: str, create: bool) -> HeldDir:
        """The directory ``name`` in this one (made when ``create``), never through a link."""
        if name in ("", ".", "..") or os.sep in name or "/" in name:
            raise OutputError(f"not a plain directory name: {name!r}", self.path)
        try:
            return self._open(name, create)
        except OSError as exc:
            raise self._refuse(name, exc) from None

    def _open(self, name: str, create: bool) -> HeldDir:
        path = self.path / name
        if self.fd is None:
            return self._open_by_path(path, create)
        try:
            return HeldDir(path, os.open(name, DIRECTORY_FLAGS, dir_fd=self.fd))
        except FileNotFoundError:
            if not create:
                raise
        try:
            os.mkdir(name, 0o777, dir_fd=self.fd)
        except FileExistsError:
            pass  # made meanwhile by someone else: opened and checked like any other
        return HeldDir(path, os.open(name, DIRECTORY_FLAGS, dir_fd=self.fd))

    @staticmethod
    def _open_by_path(path: Path, create: bool) -> HeldDir:
        if create and not os.path.lexists(path):
            try:
                os.mkdir(path, 0o777)
            except FileExistsError:
                pass
        mode = os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):  # a link, or a file
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", str(path))
        return HeldDir(path, None)


class PendingFile:
    """A file being written under a hidden temporary name in a checked directory.

    :meth:`commit` closes it and renames it to its name; :meth:`discard` removes it. Both
    release the directory. ``handle`` is the open file (text or binary).
    """

    def __init__(self, directory: HeldDir, name: str, binary: bool, encoding: str | None, newline: str | None) -> None:
        self._dir, self.name = directory, name
        self.path = directory.path / name
        self._temp = temp_name(self.path).name
        try:
            fd = os.open(directory.at(self._temp), _FILE_FLAGS, 0o666, **directory.kw("dir_fd"))
        except OSError as exc:
            directory.close()
            raise write_error(exc, self.path) from None
        self.handle: IO = os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding=encoding, newline=newline)

    def commit(self) -> Path:
        """Finish the file and give it its name; PrecisionToolError (and nothing left behind)
        when the disk fills up or the rename fails."""
        try:
            self.handle.close()  # the last buffered bytes: a full disk may only show here
            os.replace(
                self._dir.at(self._temp),
                self._dir.at(self.name),  # over what was there
                **self._dir.kw("src_dir_fd", "dst_dir_fd"),
            )
        except OSError as exc:
            self.discard()
            raise write_error(exc, self.path) from None
        self._dir.close()
        return self.path

    def discard(self) -> None:
        """Remove the temporary file; nothing appears under the name. Never raises OSError."""
        try:
            self.handle.close()
        except OSError:
            pass  # the bytes that did not fit are dropped with the file
        try:
            os.unlink(self._dir.at(self._temp), **self._dir.kw("dir_fd"))
        except OSError:
            pass
        self._dir.close()

    def failed(self, exc: OSError) -> OutputError:
        """Discard the file after ``exc`` and return the one-line error to raise."""
        self.discard()
        return write_error(exc, self.path)


def sweep(here: HeldDir, depth: int) -> int:
    """Remove the temporary files (:func:`temp_name`) of processes that no longer exist in
    ``here`` and up to ``depth`` levels below it (:meth:`.output_root.OutputRoot.remove_stale_parts`);
    returns how many."""
    removed = 0
    with os.scandir(here.fd if here.fd is not None else here.path) as entries:
        listed = [(e.name, e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)) for e in entries]
    for name, is_dir, is_file in listed:
        pid = temp_name_pid(name)
        if (is_file or is_dir) and pid is not None and not process_exists(pid):
            try:  # a file, or a directory being filled (formats/pending_dir.py), of a dead writer
                remove_entry(here, name)
                removed += 1
            except (OSError, PrecisionToolError):
                pass  # removed meanwhile, or not ours to remove
        elif is_dir and depth > 0:
            removed += _sweep_below(here, name, depth - 1)
    return removed


def _sweep_below(here: HeldDir, name: str, depth: int) -> int:
    try:
        below = here.child(name, create=False)
    except (OSError, PrecisionToolError):
        return 0
    try:
        return sweep(below, depth)
    except OSError:
        return 0
    finally:
        below.close()


def remove_entry(here: HeldDir, name: str) -> None:
    """Remove ``name`` in ``here``: a file or link by unlinking it, a directory with all below
    it (opened without following links, so one swapped for a link meanwhile is refused)."""
    info = os.stat(here.at(name), follow_symlinks=False, **here.kw("dir_fd"))
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(here.at(name), **here.kw("dir_fd"))
        return
    below = here.child(name, create=False)
    try:
        for entry in os.listdir(below.fd if below.fd is not None else below.path):
            remove_entry(below, entry)
    finally:
        below.close()
    os.rmdir(here.at(name), **here.kw("dir_fd"))


__all__ = [
    "DIRECTORY_FLAGS",
    "ELSEWHERE",
    "NAME_MAX",
    "NOFOLLOW",
    "HeldDir",
    "OutputError",
    "PendingFile",
    "process_exists",
    "remove_entry",
    "sweep",
    "temp_name",
    "temp_name_pid",
    "write_error",
]
