"""Standard streams that are not there or go away, through the real binary: a closed stdin is
EOF, a full disk on stdout is one line, a reader that leaves a pipe early ends the run quietly
with the command's own status."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

TIMEOUT_S = 120


def _env(home: Path) -> dict:
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / ".xdg"),
        "PYTHONPATH": str(REPO_ROOT),
        "PRECISION_TOOL_WORKERS": "1",
    }
    env.pop("PRECISION_TOOL_CONFIG", None)
    return env


def _tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "precision_tool", *args]


def _closed_stdin():
    os.close(0)  # in the child, before exec: as `precision-tool <&-`


@pytest.mark.parametrize("stdin", ["devnull", "closed"])
def test_the_shell_on_an_empty_or_closed_stdin_ends_at_eof(sample_data, tmp_path, stdin):
    kwargs = {"stdin": subprocess.DEVNULL} if stdin == "devnull" else {"preexec_fn": _closed_stdin, "close_fds": True}
    done = subprocess.run(
        _tool("--data", str(sample_data)),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_env(tmp_path),
        cwd=tmp_path,
        **kwargs,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
@pytest.mark.parametrize("how", ["one-shot", "shell"])
def test_a_full_disk_on_stdout_is_one_line_and_status_2(sample_data, tmp_path, how):
    args, line = (
        (_tool("--data", str(sample_data), "ls"), None)
        if how == "one-shot"
        else (_tool("--data", str(sample_data)), "ls\nls -t Relu\n")
    )
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            args,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            input=line,
            timeout=TIMEOUT_S,
            env=_env(tmp_path),
            cwd=tmp_path,
        )
    assert done.returncode == 2
    assert done.stderr.splitlines() == ["error: cannot write the output: No space left on device"]


@pytest.mark.parametrize("words, status", [(["ls"], 0), (["vcs", "-l", "0"], 1), (["-e", "ls; ls -t Relu"], 0)])
def test_a_pipe_closed_early_ends_quietly_with_the_commands_status(sample_data, tmp_path, words, status):
    first = subprocess.run(
        _tool("--data", str(sample_data), "vc"),
        capture_output=True,
        timeout=TIMEOUT_S,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    assert first.returncode == 1  # the sample has a defect: vcs will be FLAGGED
    tool = subprocess.Popen(
        _tool("--data", str(sample_data), *words),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    # the reader leaves before the first line (as `| head -1` does before the rest): closing
    # our end at once makes every write of the tool meet a closed pipe, however fast it is
    tool.stdout.close()
    assert tool.wait(timeout=TIMEOUT_S) == status
    assert tool.stderr.read() == b""
    tool.stderr.close()


def test_head_reads_the_first_line(sample_data, tmp_path):
    """`precision-tool ls | head -1` as a shell runs it."""
    if shutil.which("sh") is None or shutil.which("head") is None:
        pytest.skip("no sh or head program")
    line = shlex.join(_tool("--data", str(sample_data), "-e", "ls; ls -t Relu; help"))
    done = subprocess.run(
        ["sh", "-c", f'{{ {line}; echo "status $?" >&2; }} | head -1'],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=_env(tmp_path),
    )
    assert done.stdout.splitlines() == ["op types per NPU debug dir"]
    assert done.stderr == "status 0\n"  # the tool's own status, nothing else on stderr


def test_pipes_from_the_shell_too(sample_data, tmp_path):
    tool = subprocess.Popen(
        _tool("--data", str(sample_data)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(tmp_path),
        cwd=tmp_path,
    )
    tool.stdout.close()  # nobody will read: the first output line meets a closed pipe
    tool.stdin.write(b"ls\nhelp\n")
    tool.stdin.close()
    assert tool.wait(timeout=TIMEOUT_S) == 0
    assert tool.stderr.read() == b""
    tool.stderr.close()
