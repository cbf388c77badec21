"""Issue 12.8 through the real tool: a mistyped command is matched by its flags too, ``ls -t``
completes op types on a terminal, and ``pt`` takes the bare file names ``dc`` just wrote."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.shell.test_pty import PROMPT, Terminal, tool_env

CONV1_OUT = "Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074.output.0.4x12x12x24.npy"


def _run(sample_data, tmp_path, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=tool_env(tmp_path),
        cwd=tmp_path,
    )


def test_a_mistyped_command_is_matched_by_its_flags(sample_data, tmp_path):
    with_flags = _run(sample_data, tmp_path, "vsc", "-c", "0.98")
    assert with_flags.returncode == 2
    assert with_flags.stderr.strip() == "error: unknown command 'vsc'; did you mean 'vcs'?"
    vc_flags = _run(sample_data, tmp_path, "vsc", "-lt", "a", "-rt", "b")
    assert "did you mean 'vc'?" in vc_flags.stderr
    negative = _run(sample_data, tmp_path, "vsc", "-1")  # a number, not a flag
    assert "did you mean 'vc'?" in negative.stderr


def test_ls_t_completes_op_types_on_a_terminal(sample_data, tmp_path):
    term = Terminal(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data)], tool_env(tmp_path), cwd=tmp_path
    )
    try:
        term.expect(PROMPT)
        _complete(term, "ls -t Conv", "Conv2D  op type")  # the only op type starting with Conv
        term.expect("4 op(s)")  # two Conv2D in debug_0 and debug_1 each
        term.expect(PROMPT)
        _complete(term, "ls -t bni", "BNInfer  op type")  # case-insensitive, like ls -t itself
        term.expect("[BNInfer]")
        term.expect(PROMPT)
        term.send("exit\r")
        assert term.wait() == 0
    finally:
        term.close()
    history = (tmp_path / "xdg" / "precision_tool" / "history").read_text()
    assert "+ls -t Conv2D\n" in history and "+ls -t BNInfer\n" in history  # what ran: completed


def _complete(term: Terminal, typed: str, menu: str) -> None:
    """Type ``typed``, wait for the completion menu to offer ``menu``, take it with Tab, run."""
    term.send(typed)
    term.expect(menu)
    term.send("\t")
    time.sleep(0.5)  # the completion is applied before Enter arrives
    term.send("\r")


def test_pt_takes_the_file_names_dc_wrote(sample_data, tmp_path):
    done = _run(sample_data, tmp_path, stdin=f"dc resnet/conv1/Conv2D\npt {CONV1_OUT} -n 2\n")
    assert done.returncode == 0, done.stdout + done.stderr
    assert CONV1_OUT in done.stdout  # dc lists it ...
    assert "temp/decode/dump_convert/" + CONV1_OUT in done.stdout  # ... and pt found it there
    assert "first 2 of 13824 values" in done.stdout


def test_a_bare_name_dc_wrote_twice_is_ambiguous(sample_data, tmp_path):
    done = _run(
        sample_data,
        tmp_path,
        stdin=f"dc resnet/conv1/Conv2D\ndc resnet/conv1/Conv2D -o {sample_data}/temp/decode/again\npt {CONV1_OUT}\n",
    )
    assert done.returncode == 2
    assert f"error: '{CONV1_OUT}' is ambiguous; dc wrote it in several places" in done.stdout


def test_pt_completes_the_file_names_dc_wrote(sample_data, tmp_path):
    term = Terminal(
        [sys.executable, "-m", "precision_tool", "--data", str(sample_data)], tool_env(tmp_path), cwd=tmp_path
    )
    try:
        term.expect(PROMPT)
        term.send("dc resnet/conv1/Conv2D\r")
        term.expect("written to", timeout=30)
        term.expect(PROMPT)
        _complete(term, "pt Conv2D.resnet_conv1_Conv2D.12.0.1764417600000074.output.0.4", "4x12x12x24.npy")
        term.expect("all values written to", timeout=30)
        term.expect(PROMPT)
        term.send("exit\r")
        assert term.wait() == 0
    finally:
        term.close()
