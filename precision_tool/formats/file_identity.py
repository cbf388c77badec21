"""What a file is, for a cache that keeps results computed from files.

A path names a file only for a moment and only from one working directory: ``pd/x`` from two
directories is two files, and a file rewritten in place with its size and modification time
restored (``cp -p``, a copy tool, a re-dump that keeps times) is another file at the same path.
So a file's identity is:

- its absolute path, each directory's links resolved (from any working directory, one path);
- its device and inode (the file the path reached, not a file once there);
- its size, and its modification and status-change times in nanoseconds: the status-change
  time (ctime) cannot be set back by a user, and every write, ``touch -d`` or ``cp -p`` moves it;
- a digest of a sample of its bytes: the whole file up to 5 KiB, else the first 1 KiB (where
  the header starts) and 1 KiB blocks at a quarter, half, three quarters and the end. This
  covers file systems and copy tools that do not keep ctime honest (on Windows it is the
  creation time), for changes that touch a sampled block; ctime is the main guard, so the
  sample is kept small (its digest is most of the cost).

What is trusted: a file whose device, inode, size, both times and sampled bytes are all as they
were holds what it held. A change inside an unsampled block on a file system that leaves ctime
untouched is the one change that goes unseen. The cost is a stat, an open, an fstat, at most
five 1 KiB reads and a SHA-256 of at most 5 KiB a file, found once a run; a reader that has the
file open already (a ``.pt`` read whole) records it instead (:meth:`FileIdentities.record`): the
``fstat`` of its descriptor and the sampled blocks of the bytes it read, for the SHA-256 alone.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from .files import Fetch, descriptor_fetch, open_read_only

SAMPLE_BLOCK = 1024
SAMPLE_BLOCKS = 5  # the first block, three spread through the file and the last


def sample_digest(fetch: Fetch, size: int) -> str:
    """A digest of the whole file when it is small, else of the sampled blocks (see above);
    ``fetch(offset, count)`` reads the file (:func:`.files.descriptor_fetch`, or slices of bytes a
    reader holds already)."""
    if size <= SAMPLE_BLOCK * SAMPLE_BLOCKS:
        return hashlib.sha256(fetch(0, size)).hexdigest()
    last = size - SAMPLE_BLOCK
    blocks = [fetch(last * k // (SAMPLE_BLOCKS - 1), SAMPLE_BLOCK) for k in range(SAMPLE_BLOCKS)]
    return hashlib.sha256(b"".join(blocks)).hexdigest()


class FileIdentity(NamedTuple):
    """What a file is (see the module docstring); a tuple, so it serialises as a JSON list."""

    path: str  # absolute, the directories' links resolved
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int
    sample: str  # SHA-256 of the sampled bytes, in hex


class FileIdentities:
    """File identities, each found once: a run's tensors share files (a dump file holds an
    op's inputs and outputs, a golden file is one op's output and the next op's input), and
    the files' directories are resolved once each."""

    def __init__(self) -> None:
        self._files: dict[Path, FileIdentity | None] = {}
        self._directories: dict[str, str] = {}

    def of(self, path: Path) -> FileIdentity | None:
        """The identity of ``path`` (see the module docstring); None when it cannot be opened
        or read, or is not a regular file (nothing is then cached for it)."""
        if path not in self._files:
            self._files[path] = self._identify(path)
        return self._files[path]

    def _resolved(self, path: Path) -> str:
        directory, name = os.path.split(os.path.abspath(path))
        if directory not in self._directories:
            self._directories[directory] = os.path.realpath(directory)
        return os.path.join(self._directories[directory], name)

    def record(self, path: Path, info: os.stat_result, fetch: Fetch) -> FileIdentity:
        """The identity of ``path`` from a reader that has it open: ``info`` the ``fstat`` of
        its descriptor (the file it reads, whatever the path is now) and ``fetch`` reads of
        it; no second open. The first identity of a path found stays, as with :meth:`of`."""
        if path not in self._files:
            self._files[path] = self._identity(path, info, sample_digest(fetch, info.st_size))
        return self._files[path]

    def _identity(self, path: Path, info: os.stat_result, sample: str) -> FileIdentity:
        return FileIdentity(
            self._resolved(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, sample
        )

    def _identify(self, path: Path) -> FileIdentity | None:
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):  # a device or FIFO is never opened
                return None
            descriptor = open_read_only(path)  # a FIFO put in its place meanwhile: no wait
        except OSError:
            return None
        try:
            info = os.fstat(descriptor)  # of the file opened, whatever the path is now
            if not stat.S_ISREG(info.st_mode):
                return None
            sample = sample_digest(descriptor_fetch(descriptor), info.st_size)
        except OSError:
            return None
        finally:
            os.close(descriptor)
        return self._identity(path, info, sample)
