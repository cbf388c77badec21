"""End to end: the real ``python -m precision_tool`` on a pseudo-terminal, and with piped stdin.

The pty test types as a user would and reads the screen with a timeout on every read, so a hang
fails the test instead of stalling the suite. HOME and XDG_DATA_HOME point into tmp_path: no
history is written into the real home.
"""

from __future__ import annotations

import os
import re
import select
import struct
import subprocess
import sys
import time

import pytest

from tests.conftest import REPO_ROOT

pty = pytest.importorskip("pty")  # POSIX only
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

PROMPT = "PrecisionTool >"  # the trailing space is drawn by cursor moves, not a character
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]")


def tool_env(tmp_path) -> dict[str, str]:
    """The environment of the tool under test: private home and data dir, no config from ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.update(
        HOME=str(tmp_path / "home"),
        XDG_DATA_HOME=str(tmp_path / "xdg"),
        PYTHONPATH=str(REPO_ROOT),
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


def _take_terminal() -> None:  # in the child, after setsid: the pty becomes its terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """A child process on a pty: ``send`` keys, ``expect`` text on the screen (escapes removed)."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd, rows: int = 40, cols: int = 120) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.process = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        self.screen, self.seen = "", 0

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], max(timeout, 0))
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.screen += _ESCAPES.sub("", data.decode("utf-8", "replace")).replace("\r", "")
        return bool(data)

    def expect(self, text: str, timeout: float = 8.0) -> None:
        """Wait until ``text`` appears after what was already matched; fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        while (at := self.screen.find(text, self.seen)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(remaining) and self.process.poll() is not None:
                raise AssertionError(f"{text!r} not seen; screen ends with:\n{self.screen[-1500:]}")
        self.seen = at + len(text)

    def wait(self, timeout: float = 8.0) -> int:
        """The exit status, reading the screen meanwhile (a full pty would block the child)."""
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"still running; screen ends with:\n{self.screen[-1500:]}")
            self._read(0.1)
        while self._read(0.1):  # what it wrote just before it ended is still in the pty
            pass
        return self.process.returncode

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(5)
        os.close(self.master)


def test_the_terminal_keeps_what_a_child_wrote_just_before_it_ended(tmp_path):
    """The helper itself: a child's last lines may still sit in the pty when it has ended (the
    last screen of ``ac`` once lost its conclusion so). Here the child ends before anything is
    read, so all it wrote is still in the pty."""
    term = Terminal([sys.executable, "-c", "print('the end')"], tool_env(tmp_path), tmp_path)
    try:
        term.process.wait(timeout=30)
        assert term.wait() == 0
    finally:
        term.close()
    assert term.screen.strip() == "the end"


@pytest.fixture
def terminal(sample_data, tmp_path):
    term = Terminal(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data)], tool_env(tmp_path), cwd=tmp_path
    )
    yield term
    term.close()


def test_shell_on_a_terminal(terminal, tmp_path):
    terminal.expect("data root:")
    terminal.expect(PROMPT)
    terminal.send("ls\r")
    terminal.expect("op types per NPU debug dir")
    terminal.expect("TransData")
    terminal.expect(PROMPT)
    terminal.send("lss\r")
    terminal.expect("unknown command 'lss'; did you mean 'ls'")
    terminal.expect(PROMPT)
    terminal.send("ls -t Conv")
    terminal.send("\x03")  # Ctrl-C at the prompt: the line is dropped, the shell stays
    terminal.expect(PROMPT)
    terminal.send("help\r")
    terminal.expect("commands (help CMD")
    terminal.expect(PROMPT)
    terminal.send("exit\r")
    assert terminal.wait() == 0
    history = (tmp_path / "xdg" / "precision_tool" / "history").read_text()
    assert "+ls\n" in history and "+lss\n" in history and "+ls -t Conv\n" not in history
    assert not (tmp_path / "home" / ".precision_tool_history").exists()


def test_ctrl_d_leaves_the_terminal_shell(terminal):
    terminal.expect(PROMPT)
    terminal.send("\x04")
    assert terminal.wait() == 0


def _piped(sample_data, tmp_path, text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data)],
        input=text,
        capture_output=True,
        text=True,
        timeout=30,
        env=tool_env(tmp_path),
        cwd=tmp_path,
    )


def test_piped_stdin_runs_each_line_and_exits_with_the_worst_status(sample_data, tmp_path):
    done = _piped(sample_data, tmp_path, "ls\n# a comment\n\nlss\nls -t Conv\n")
    assert done.returncode == 2, done.stderr
    assert "op types per NPU debug dir" in done.stdout
    assert "unknown command 'lss'" in done.stdout
    assert "resnet/conv1/Conv2D" in done.stdout  # the line after the error ran too
    assert PROMPT not in done.stdout and "\x1b[" not in done.stdout  # no prompt_toolkit, no ANSI
    assert not (tmp_path / "xdg").exists()  # piped lines keep no history


def test_piped_stdin_all_fine_is_status_0_and_exit_stops_reading(sample_data, tmp_path):
    done = _piped(sample_data, tmp_path, "ls -t Relu\nexit\nlss\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resnet/relu2/Relu" in done.stdout and "unknown command" not in done.stdout


def test_a_whole_session_with_every_command(terminal, sample_data):
    """ls, ni with each flag, pt, dc, cp, a typo, a bad flag, Ctrl-C inside a running command:
    the prompt survives all of it."""
    import numpy as np

    big = sample_data / "big.npy"  # long enough to export that Ctrl-C lands mid-command
    np.save(big, np.random.default_rng(0).standard_normal(8_000_000).astype(np.float32))
    steps = [
        ("ls -t Conv2D -d debug_0", "2 op(s)"),
        ("ni resnet/conv2/Conv2D", "ConvBiasAddFusionPass"),
        ("ni -n resnet_add_add -a", "_ge_attr_op_kernel_lib_name"),
        ("ni -s 2 resnet/add/add", ".gv"),
        ("ni resnet/relu2/Relu -g ge_default_20261129120000_1", "te_relu"),
        ("pt resnet_softmax_Softmax.0", "temp/pt/"),
        ("dc resnet/conv1/Conv2D", "dump_convert"),
        ("cp tf:resnet_add_add.0 resnet/add/add", "cosine"),
        ("nii resnet/add/add", "did you mean 'ni'"),
        ("ni -s", "usage: ni"),
    ]
    terminal.expect(PROMPT)
    for line, seen in steps:
        terminal.send(line + "\r")
        terminal.expect(seen, timeout=30)
        terminal.expect(PROMPT, timeout=30)
    terminal.send(f"pt {big}\r")
    time.sleep(1.5)
    terminal.send("\x03")  # Ctrl-C while pt is exporting 8M values
    terminal.expect("cancelled", timeout=30)
    terminal.expect(PROMPT)
    terminal.send("ls -t Add\r")
    terminal.expect("[Add] resnet/add/add")
    terminal.expect(PROMPT)
    terminal.send("quit\r")
    assert terminal.wait() == 0
    assert list((sample_data / "temp/op_graph").glob("*.gv"))


def test_the_last_screen_of_ac_names_the_first_introducer(sample_data, tmp_path):
    """On an 80 x 24 terminal, whatever scrolled away, the conclusion is the last screen."""
    term = Terminal(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data), "ac", "-c"],
        tool_env(tmp_path),
        cwd=tmp_path,
        rows=24,
        cols=80,
    )
    try:
        status = term.wait(timeout=60)
    finally:
        term.close()
    lines = term.screen.rstrip("\n").split("\n")
    assert len(lines) > 60  # the details did scroll away
    last_screen = "\n".join(lines[-24:])
    assert "first operator that introduces the error" in last_screen
    assert "resnet/conv2/Conv2D" in last_screen and "conclusion" in last_screen
    assert status == 1
