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
_UNKNOWN = object()  # not identified yet (None: found not to be identifiable)


def sample_digest(fetch: Fetch, size: int) -> str:
    """A digest of the whole file when it is small, else of the sampled blocks (see above);
    ``fetch(offset, count)`` reads the file (:func:`.files.descriptor_fetch`, or views of bytes a
    reader holds already: :func:`.files.held_fetch` without copies)."""
    if size <= SAMPLE_BLOCK * SAMPLE_BLOCKS:
        return hashlib.sha256(fetch(0, size)).hexdigest()
    last = size - SAMPLE_BLOCK
    digest = hashlib.sha256(fetch(0, SAMPLE_BLOCK))
    for k in range(1, SAMPLE_BLOCKS):  # fed block by block: the digest of the blocks joined
        digest.update(fetch(last * k // (SAMPLE_BLOCKS - 1), SAMPLE_BLOCK))
    return digest.hexdigest()


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
        # keyed by the path's text: a str hashes and compares for less than a Path
        self._files: dict[str, FileIdentity | None] = {}
        self._directories: dict[str, str] = {}  # a directory as named -> its links resolved

    def of(self, path: Path) -> FileIdentity | None:
        """The identity of ``path`` (see the module docstring); None when it cannot be opened
        or read, or is not a regular file (nothing is then cached for it)."""
        text = os.fspath(path)
        found = self._files.get(text, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._files[text] = self._identify(text)
        return found

    def _resolved(self, path: str) -> str:
        directory, name = os.path.split(path)
        if not os.path.isabs(directory):  # from the working directory of now
            directory = os.path.abspath(directory)
        resolved = self._directories.get(directory)
        if resolved is None:  # the directory's links resolved, "." and ".." too
            resolved = os.path.join(os.path.realpath(directory), "")  # ends with a separator
            self._directories[directory] = resolved
        return resolved + name

    def record(self, path: Path, info: os.stat_result, fetch: Fetch) -> FileIdentity:
        """The identity of ``path`` from a reader that has it open: ``info`` the ``fstat`` of
        its descriptor (the file it reads, whatever the path is now) and ``fetch`` reads of
        it; no second open. The first identity of a path found stays, as with :meth:`of`."""
        text = os.fspath(path)
        found = self._files.get(text)
        if found is None:
            found = self._files[text] = self._identity(text, info, sample_digest(fetch, info.st_size))
        return found

    def _identity(self, path: str, info: os.stat_result, sample: str) -> FileIdentity:
        return FileIdentity(
            self._resolved(path), info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, sample
        )

    def _identify(self, path: str) -> FileIdentity | None:
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
