"""A directory that appears whole or not at all: filled under a hidden name, renamed into place.

A file appears complete or not at all (:class:`~.held_dir.PendingFile`); files that only make
sense together (the report's Model Explorer node data, which its ``index.html`` lists) need the
same for the set. :class:`PendingDirectory` makes a directory under a hidden temporary name
beside the one wanted (:func:`~.held_dir.temp_name`, so a dead writer's is swept like its files),
the caller writes into :attr:`~PendingDirectory.path` through the output root as usual, and
:meth:`~PendingDirectory.commit` renames it to its name in one step; :meth:`~PendingDirectory.discard`
removes it with everything in it. Nothing is followed through a link on the way (the output
root's rules).
"""

from __future__ import annotations

import os
from pathlib import Path

from .held_dir import temp_name, write_error
from .output_root import OutputRoot


class PendingDirectory:
    """The directory ``path`` under ``root``, being filled at :attr:`path` (a hidden sibling).

    Raises:
        PrecisionToolError: the hidden directory cannot be made (a full disk, no permission).
    """

    def __init__(self, root: OutputRoot, path: str | os.PathLike) -> None:
        self.root = root
        self.target = root.path.joinpath(*root.parts(path))
        self.path = root.new_directory(root.parts(self.target.parent), [temp_name(self.target).name])

    def final(self, path: str | os.PathLike) -> Path:
        """Where ``path`` (inside :attr:`path`) will be once committed."""
        return self.target / Path(path).relative_to(self.path)

    def commit(self) -> Path:
        """Rename the directory to its name, replacing one already there (an earlier report's,
        moved aside first and removed after); returns its path.

        Raises:
            PrecisionToolError: it cannot be renamed (the filled directory is removed).
        """
        try:
            self._rename_into_place()
        except OSError as exc:
            self.discard()
            raise write_error(exc, self.target) from None
        return self.target

    def _rename_into_place(self) -> None:
        name = self.target.name
        try:
            self.root.rename(self.path, name)  # nothing there, or an empty directory
            return
        except OSError as exc:
            first = exc
        aside = temp_name(self.target).name
        try:
            self.root.rename(self.target, aside)
        except FileNotFoundError:
            raise first from None  # nothing was in the way: the first error is the story
        try:
            self.root.rename(self.path, name)
        except OSError:
            self.root.rename(self.target.with_name(aside), name)  # the old one back
            raise
        self.root.remove_tree(self.target.with_name(aside))

    def discard(self) -> None:
        """Remove the directory being filled and everything in it (never raises OSError)."""
        self.root.remove_tree(self.path)
