"""Issue 27.8: a report is written whole or not at all, on a really full disk.

``report --model-explorer`` writes node data (one JSON per metric) and the page that lists
them; a disk that filled up after the node data left them without ``index.html``. Here the
output root is a real 2 MiB tmpfs mounted for the test (and unmounted after it), filled to
leave exactly the room each case needs. Where mounting is refused (not root, or a container
without the capability), the same cases run with the tool's lowest-level writes (the handles
of :class:`~precision_tool.formats.held_dir.PendingFile`) raising OSError(ENOSPC) once the room
is used up: nothing is skipped.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from precision_tool.formats import held_dir
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command

PAGE = 4096  # tmpfs counts whole pages
NODE_DATA = 10  # one node-data file per metric of the sample's CSV, and the verdict overlay
JSON_FILES = NODE_DATA + 1  # and explore.json, which lists them for Model Explorer


class SmallDisk:
    """An output directory whose free bytes the test sets with :meth:`leave`."""

    def __init__(self, path: Path, real: bool, monkeypatch) -> None:
        self.path, self.real = path, real
        self._room: list[int | None] = [None]  # the injected disk's free bytes (None: no limit)
        if not real:
            self._inject(monkeypatch)

    @property
    def unit(self) -> int:
        """What the disk allocates at a time: tmpfs's pages, the injected disk's bytes."""
        return PAGE if self.real else 1

    def leave(self, room: int | None) -> None:
        """Make ``room`` bytes free (a multiple of :attr:`unit`; None: all the disk)."""
        if not self.real:
            self._room[0] = room
            return
        filler = self.path / "filler"
        filler.unlink(missing_ok=True)
        if room is None:
            return
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * PAGE) == PAGE:  # every page, to the last
                pass
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
        os.ftruncate(fd, max(os.fstat(fd).st_size - room, 0))  # hands back exactly ``room``
        os.close(fd)

    def _inject(self, monkeypatch) -> None:
        room, real_init = self._room, held_dir.PendingFile.__init__

        def init(pending, *args, **kwargs):
            real_init(pending, *args, **kwargs)
            pending.handle = _Budgeted(pending.handle, room)

        monkeypatch.setattr(held_dir.PendingFile, "__init__", init)

    def files(self) -> list[str]:
        """Every file and directory left under the disk (but the filler), relative."""
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*") if p.name != "filler")


class _Budgeted:
    """A file handle on a disk of ``room[0]`` free bytes, shared by every file."""

    def __init__(self, handle, room: list) -> None:
        self._handle, self._room = handle, room

    def write(self, data):
        if self._room[0] is not None:
            if len(data) > self._room[0]:
                raise OSError(errno.ENOSPC, "No space left on device")
            self._room[0] -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    directory = tmp_path / "small"
    directory.mkdir()
    mounted = (
        shutil.which("mount") is not None
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(directory)], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield SmallDisk(directory, mounted, monkeypatch)
    finally:
        if mounted:
            subprocess.run(["umount", str(directory)], check=True)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """A copy of the sample compared by ``vc``, and its result CSV."""
    root = tmp_path_factory.mktemp("sample") / "precision_data"
    shutil.copytree(Path(__file__).resolve().parents[2] / "precision_data", root, ignore=shutil.ignore_patterns("temp"))
    context, out = make_context(root, WORKERS=1)
    assert run_command(context, "vc") == ExitStatus.FLAGGED, out.getvalue()
    (csv,) = (root / "temp" / "vector_compare").glob("*/*.csv")
    return root, csv


def _report(compared, disk: SmallDisk, *options: str) -> tuple[ExitStatus, str]:
    root, csv = compared
    context, out = make_context(root, width=2000, WORKERS=1, OUTPUT_ROOT=str(disk.path))
    return run_command(context, " ".join(["report", "-f", str(csv), "--model-explorer", *options])), out.getvalue()


def _sizes(disk: SmallDisk, compared, *options: str) -> tuple[int, int]:
    """(the node data's bytes, the page's bytes) as this disk allocates them, from a report
    written whole with ``options`` (then removed: the page holds its paths, so the case at hand
    is measured where it writes)."""
    disk.leave(None)
    status, output = _report(compared, disk, *options)
    assert status == ExitStatus.OK, output
    index = Path(output.split("report: ", 1)[1].split("  (", 1)[0])
    nodes = sorted((index.parent / "model_explorer").rglob("*.json"))
    assert len(nodes) == JSON_FILES

    def allocated(path: Path) -> int:
        return math.ceil(path.stat().st_size / disk.unit) * disk.unit

    sizes = sum(allocated(p) for p in nodes), allocated(index)
    shutil.rmtree(index.parent)
    assert sizes[1] > 2 * disk.unit  # the cases below leave room for the page but one unit
    return sizes


def _one_error(status, output: str, *texts: str) -> None:
    assert status == ExitStatus.ERROR, output
    (line,) = [line for line in output.splitlines() if line.startswith("error:")]
    assert "Traceback" not in output and all(text in line for text in texts), line


def test_node_data_without_room_for_the_page_leave_nothing(compared, small_disk):
    """The case of the issue: the node data fit, the page does not."""
    nodes, page = _sizes(small_disk, compared)
    small_disk.leave(nodes + page - small_disk.unit)
    status, output = _report(compared, small_disk)
    _one_error(status, output, "No space left on device", "index.html")
    assert small_disk.files() in ([], ["report"])  # no node data, no page, no hidden directory


def test_a_disk_full_among_the_node_data_leaves_nothing(compared, small_disk):
    nodes, _ = _sizes(small_disk, compared)
    small_disk.leave(nodes // 3 // small_disk.unit * small_disk.unit)
    status, output = _report(compared, small_disk)
    _one_error(status, output, "No space left on device", ".json")
    assert small_disk.files() in ([], ["report"])


def test_a_failed_report_into_a_directory_keeps_the_earlier_report_there(compared, small_disk):
    """``-o DIR`` over an earlier report: a full disk leaves that one as it was (the new one,
    of another threshold, would colour the node data otherwise)."""
    out = small_disk.path / "mine"
    other = ("-o", str(out), "-c", "0.5")
    nodes, page = _sizes(small_disk, compared, *other)
    assert _report(compared, small_disk, "-o", str(out))[0] == ExitStatus.OK
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(before) == JSON_FILES + 1
    small_disk.leave(nodes + page - small_disk.unit)
    status, output = _report(compared, small_disk, *other)
    _one_error(status, output, "No space left on device", str(out / "index.html"))
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "model_explorer"]  # no hidden leftovers


def test_with_room_the_report_is_whole_and_names_its_node_data(compared, small_disk):
    nodes, page = _sizes(small_disk, compared)
    small_disk.leave(nodes + page + small_disk.unit)
    status, output = _report(compared, small_disk)
    assert status == ExitStatus.OK, output
    (index,) = (small_disk.path / "report").glob("*/index.html")
    line = next(line for line in output.splitlines() if line.startswith("model explorer: "))
    config = line.split()[-1]
    listed = [*json.loads(Path(config).read_text(encoding="utf-8"))["node_data"], config]
    assert sorted(listed) == sorted(str(p) for p in (index.parent / "model_explorer").rglob("*.json"))
    assert len(listed) == JSON_FILES and all(os.path.isfile(p) for p in listed)
    assert all(".part" not in name for name in small_disk.files())


def test_a_page_that_fails_only_at_its_close_takes_its_node_data_away(compared, small_disk, monkeypatch):
    """A disk that says it is full only when the page is closed (as NFS may), after the node
    data took their name: they are removed again. tmpfs refuses at write, so this close is
    injected (the real disk above stays unlimited)."""
    small_disk.leave(None)
    real_commit = held_dir.PendingFile.commit

    def commit(pending):
        if pending.name == "index.html":
            pending.handle.close()
            raise pending.failed(OSError(errno.ENOSPC, "No space left on device"))
        return real_commit(pending)

    monkeypatch.setattr(held_dir.PendingFile, "commit", commit)
    status, output = _report(compared, small_disk)
    _one_error(status, output, "No space left on device", "index.html")
    assert small_disk.files() in ([], ["report"])
