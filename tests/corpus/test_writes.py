"""Hostile surroundings for what the tool writes: links planted in the output root, a read-only
data root, a full disk, and several runs at once. Nothing is ever written outside the output
root, no partial file is left under any name, and every refusal is one line."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from precision_tool.formats import held_dir, output_root
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context, run_command

from .harness import error_lines

CONV2 = "resnet/conv2/Conv2D"
GV_STEM = "debug_0.ge_default_20261129120000_1.Conv2D.resnet_conv2_Conv2D.1"
CONV1_DUMP = "Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074"
# every command that writes, and the directory of the output root it writes into
WRITERS = [
    ("vc", "vector_compare"),
    (f"ni {CONV2} -s 1", "op_graph"),
    ("pt resnet_conv2_BiasAdd.0 -n 0", "pt"),
    (f"dc {CONV1_DUMP}", "decode"),
    ("report -f {csv}", "report"),
]


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("precious")
    return outside


def _untouched(outside: Path) -> None:
    assert sorted(os.listdir(outside)) == ["victim"]
    assert (outside / "victim").read_text() == "precious"


def _csv(sample_data: Path) -> Path:
    """A result CSV outside the output root (for ``report -f``), made by a first ``vc``."""
    context, out = make_context(sample_data, WORKERS=1)
    assert run_command(context, "vc") == ExitStatus.FLAGGED, out.getvalue()
    (made,) = (sample_data / "temp" / "vector_compare").glob("*/*.csv")
    kept = sample_data.parent / "result.csv"
    shutil.move(made, kept)
    shutil.rmtree(sample_data / "temp")
    return kept


def _run(root: Path, line: str, **settings) -> tuple[ExitStatus, str]:
    context, out = make_context(root, width=400, WORKERS=1, **settings)
    return run_command(context, line), out.getvalue()


def _one_error(status: ExitStatus, output: str, *texts: str) -> str:
    assert status == ExitStatus.ERROR, output
    assert "Traceback" not in output and "internal error" not in output, output
    (line,) = error_lines(output)
    assert all(text in line for text in texts), line
    return line


# --- 1. planted links -----------------------------------------------------------------------


@pytest.mark.parametrize("line, sub", WRITERS, ids=[w[1] for w in WRITERS])
@pytest.mark.parametrize("where", ["temp", "sub"])
def test_a_linked_output_directory_is_refused_in_one_line(sample_data, tmp_path, line, sub, where):
    line = line.format(csv=_csv(sample_data))
    outside = _outside(tmp_path)
    link = sample_data / "temp" / sub if where == "sub" else sample_data / "temp"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    status, output = _run(sample_data, line)
    _one_error(status, output, str(link), "is a symbolic link")
    _untouched(outside)


@pytest.mark.parametrize("suffix", [".gv", ".svg"])
def test_a_link_at_the_graph_file_name_is_replaced_not_followed(sample_data, tmp_path, suffix):
    outside = _outside(tmp_path)
    graphs = sample_data / "temp" / "op_graph"
    graphs.mkdir(parents=True)
    (graphs / f"{GV_STEM}{suffix}").symlink_to(outside / "victim")
    status, output = _run(sample_data, f"ni {CONV2} -s 1")
    assert status == ExitStatus.OK, output
    _untouched(outside)
    written = graphs / f"{GV_STEM}{suffix}"
    assert not written.is_symlink() and written.stat().st_size > 0
    if suffix == ".gv":
        assert written.read_text().startswith("//") or "digraph" in written.read_text()


def test_a_result_directory_swapped_for_a_link_mid_run_is_refused(sample_data, tmp_path, monkeypatch):
    """vc made its directory; someone replaces it by a link before the CSV is created: the CSV
    is refused in one line, not written through the link."""
    from precision_tool.commands import vc_run

    outside = _outside(tmp_path)
    real_write = vc_run.write_all

    def swap_then_write(plans, root, paths, *args):
        os.rename(paths[0].parent, tmp_path / "moved")
        paths[0].parent.symlink_to(outside, target_is_directory=True)
        return real_write(plans, root, paths, *args)

    monkeypatch.setattr(vc_run, "write_all", swap_then_write)
    status, output = _run(sample_data, "vc")
    _one_error(status, output, "is a symbolic link", "vector_compare")
    _untouched(outside)
    assert [p.name for p in (tmp_path / "moved").iterdir()] == ["run.json"]  # what vc wrote first


# --- 2. a read-only data root, and --out ------------------------------------------------------


def _read_only(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(output_root.os, "mkdir", refuse)  # os.makedirs meets it too


@pytest.mark.parametrize("line, sub", WRITERS, ids=[w[1] for w in WRITERS])
def test_a_read_only_data_root_is_one_line_naming_the_directory(sample_data, monkeypatch, line, sub):
    line = line.format(csv=_csv(sample_data))
    _read_only(monkeypatch)
    status, output = _run(sample_data, line)
    _one_error(status, output, str(sample_data / "temp"), "Read-only file system", "--out DIR")


@pytest.mark.parametrize("line, sub", WRITERS, ids=[w[1] for w in WRITERS])
def test_out_moves_every_write(sample_data, tmp_path, line, sub):
    line = line.format(csv=_csv(sample_data))
    out = tmp_path / "elsewhere"
    status, output = _run(sample_data, line, OUTPUT_ROOT=str(out))
    assert status in (ExitStatus.OK, ExitStatus.FLAGGED), output
    assert not (sample_data / "temp").exists()
    assert [p for p in (out / sub).rglob("*") if p.is_file()], output


def test_vcs_and_report_read_results_from_the_output_root(sample_data, tmp_path):
    out = tmp_path / "elsewhere"
    assert _run(sample_data, "vc", OUTPUT_ROOT=str(out))[0] == ExitStatus.FLAGGED
    status, output = _run(sample_data, "vcs -l 1", OUTPUT_ROOT=str(out))
    assert status == ExitStatus.FLAGGED and str(out / "vector_compare") in output


def test_the_out_flag_of_the_real_binary(sample_data, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PRECISION_TOOL_WORKERS": "1"}
    env.pop("PRECISION_TOOL_CONFIG", None)
    out = tmp_path / "out dir"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "precision_tool",
            "--data",
            str(sample_data),
            "--out",
            str(out),
            "-e",
            f"vc; ni {CONV2} -s 1; vcs -l 1",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert len(list(out.glob("vector_compare/*/*.csv"))) == 1
    assert list(out.glob(f"op_graph/{GV_STEM}.gv"))
    assert not (sample_data / "temp").exists()


def test_an_output_root_inside_the_dumps_is_refused(sample_data):
    status, output = _run(sample_data, "vc", OUTPUT_ROOT=str(sample_data / "npu" / "out"))
    _one_error(status, output, "refusing to write into the input data")
    assert not (sample_data / "npu" / "out").exists()


# --- 3. a full disk ---------------------------------------------------------------------------


class _FullAfter:
    """A file whose writes fail as on a full disk once ``room`` bytes are in (or only at close)."""

    def __init__(self, handle, room: int, at_close: bool):
        self._handle, self._room, self._at_close = handle, room, at_close

    def write(self, data):
        if not self._at_close and self._room < len(data):
            raise OSError(errno.ENOSPC, "No space left on device")
        self._room -= len(data)
        return self._handle.write(data)

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def close(self):
        self._handle.close()
        if self._at_close:
            raise OSError(errno.ENOSPC, "No space left on device")


def _disk_fills(monkeypatch, at_close: bool, room: int = 0) -> None:
    real_init = held_dir.PendingFile.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        self.handle = _FullAfter(self.handle, room, at_close)

    monkeypatch.setattr(held_dir.PendingFile, "__init__", init)


def _files_under(directory: Path) -> list[Path]:
    """The files left under ``directory``, but for vc's row cache: a database SQLite keeps whole,
    not a partial result (what it holds is only ever reused by key)."""
    if not directory.exists():
        return []
    return sorted(p for p in directory.rglob("*") if p.is_file() and "row_cache" not in p.parts)


# pt's export writes through the descriptor (ndarray.tofile), past the injected handle: only
# its close is injected here; the real full file system below covers its writes
FULL_DISK = [(line, sub, at_close) for line, sub in WRITERS for at_close in (False, True) if sub != "pt" or at_close]


@pytest.mark.parametrize(
    "line, sub, at_close", FULL_DISK, ids=[f"{f[1]}-{'at-close' if f[2] else 'at-write'}" for f in FULL_DISK]
)
def test_a_full_disk_is_one_line_and_leaves_no_file(sample_data, monkeypatch, line, sub, at_close):
    line = line.format(csv=_csv(sample_data))
    _disk_fills(monkeypatch, at_close, room=100)
    status, output = _run(sample_data, line)
    _one_error(status, output, "No space left on device", str(sample_data / "temp" / sub))
    assert _files_under(sample_data / "temp") == []
    if sub in ("vector_compare", "report"):  # no empty result directory either
        assert not list((sample_data / "temp" / sub).iterdir())


@contextmanager
def _tmpfs(directory: Path, size: str):
    """A real small file system at ``directory`` (root only; skips where mounting is refused)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("needs root to mount a small tmpfs")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", str(directory)], check=True)


def _fill(directory: Path) -> None:
    """Take every free byte of the file system of ``directory``."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(fd, b"\0" * 512):
            pass
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.parametrize("line, sub", WRITERS, ids=[w[1] for w in WRITERS])
def test_a_really_full_file_system(sample_data, tmp_path, line, sub):
    line = line.format(csv=_csv(sample_data))
    with _tmpfs(tmp_path / "small", "64k") as out:
        _fill(out)
        status, output = _run(sample_data, line, OUTPUT_ROOT=str(out))
        _one_error(status, output, "No space left on device", str(out / sub))
        left = [p.name for p in out.rglob("*") if p.is_file() and p.name != "filler" and "row_cache" not in p.parts]
        assert left == [], left
        if sub in ("vector_compare", "report"):  # no empty result directory either
            assert not (out / sub).exists() or list((out / sub).iterdir()) == []


def test_a_really_read_only_file_system(sample_data, tmp_path):
    with _tmpfs(tmp_path / "ro", "4m") as mounted:
        root = mounted / "precision_data"
        shutil.copytree(sample_data, root)
        subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
        for line, _ in WRITERS[:4]:
            status, output = _run(root, line)
            _one_error(status, output, str(root / "temp"), "Read-only file system", "--out DIR")
        subprocess.run(["mount", "-o", "remount,rw", str(mounted)], check=True)


# --- 4. runs at once ----------------------------------------------------------------------------

RUNS = 4


def test_runs_started_together_never_share_a_result(sample_data, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PRECISION_TOOL_WORKERS": "1"}
    env.pop("PRECISION_TOOL_CONFIG", None)
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "precision_tool", "--data", str(sample_data), "vc"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        for _ in range(RUNS)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [ExitStatus.FLAGGED] * RUNS, outputs
    csvs = sorted((sample_data / "temp" / "vector_compare").glob("*/*.csv"))
    assert len(csvs) == RUNS and len({p.parent for p in csvs}) == RUNS, csvs
    said = {line.rsplit(" -> ", 1)[1] for out, _ in outputs for line in out.splitlines() if " -> " in line}
    assert {str(p) for p in csvs} == {
        str(Path(s)) if Path(s).is_absolute() else str(tmp_path / s) for s in said
    } or len(said) == RUNS
    lengths = {len(p.read_text().splitlines()) for p in csvs}
    assert len(lengths) == 1, lengths  # each CSV complete, none a mix of two runs


def test_two_runs_in_the_same_second_choose_different_directories(sample_data, monkeypatch):
    """Deterministic: a frozen clock, and both runs pick their directory before either writes
    (a barrier where the writing starts)."""
    import datetime as real_datetime
    import threading

    from precision_tool.commands import vc_run
    from precision_tool.compare import result_dir

    class Frozen(real_datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return cls(2026, 1, 1, 12, 0, 0)

    monkeypatch.setattr(result_dir, "datetime", Frozen)
    barrier = threading.Barrier(2, timeout=60)
    real_enter = vc_run.CompareProgress.__enter__

    def enter(self):
        barrier.wait()  # both have chosen where to write; neither has written
        return real_enter(self)

    monkeypatch.setattr(vc_run.CompareProgress, "__enter__", enter)
    statuses = []
    threads = [threading.Thread(target=lambda: statuses.append(_run(sample_data, "vc")[0])) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert statuses == [ExitStatus.FLAGGED] * 2
    dirs = sorted(p.name for p in (sample_data / "temp" / "vector_compare").iterdir())
    assert dirs == ["20260101120000", "20260101120001"]
    assert all(len(list((sample_data / "temp/vector_compare" / d).glob("*.csv"))) == 1 for d in dirs)
