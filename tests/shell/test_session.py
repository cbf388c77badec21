"""The real interactive loop, driven by prompt_toolkit's pipe input, and its completer and history."""

from __future__ import annotations

import io
import os
import signal
import time

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from precision_tool.commands import build_registry
from precision_tool.commands.registry import Command
from precision_tool.shell.app import run_shell
from precision_tool.shell.completer import ShellCompleter
from precision_tool.shell.history import SafeFileHistory, history_path, open_history
from precision_tool.shell.session import interactive_loop
from precision_tool.status import ExitStatus
from tests.conftest import make_context

CTRL_C, CTRL_D = "\x03", "\x04"


def drive(context, keys: str, registry=None, history=None) -> ExitStatus:
    """Type ``keys`` into the real loop (no terminal); they must end the session."""
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        return interactive_loop(
            registry or build_registry(),
            context,
            input=pipe,
            output=DummyOutput(),
            history=history if history is not None else InMemoryHistory(),
        )


def test_a_session_runs_commands_reports_errors_and_leaves_on_ctrl_d(sample_data):
    context, out = make_context(sample_data)
    status = drive(context, f"ls\rlss\rls --bogus\rhelp\r{CTRL_D}")
    text = out.getvalue()
    assert status == ExitStatus.OK
    assert "data root:" in text and str(sample_data) in text  # the banner
    assert "op types per NPU debug dir" in text and "TransData" in text
    assert "unknown command 'lss'; did you mean 'ls'?" in text
    assert "unrecognized arguments: --bogus" in text and "usage: ls" in text
    assert "commands (help CMD for details)" in text
    assert text.index("op types") < text.index("unknown command") < text.index("usage: ls") < text.index("commands (")
    assert "Traceback" not in text


def test_ctrl_c_at_the_prompt_drops_the_line_and_the_loop_goes_on(sample_data):
    context, out = make_context(sample_data)
    assert drive(context, f"ls -t Conv{CTRL_C}{CTRL_C}help\r{CTRL_D}") == ExitStatus.OK
    text = out.getvalue()
    assert "resnet/conv1/Conv2D" not in text  # the dropped line never ran
    assert "commands (help CMD for details)" in text


@pytest.mark.parametrize("word", ["exit", "quit", "help; exit"])
def test_exit_and_quit_leave_before_the_rest(sample_data, word):
    context, out = make_context(sample_data)
    assert drive(context, f"{word}\rls\r") == ExitStatus.OK  # no Ctrl-D needed
    assert "op types per NPU debug dir" not in out.getvalue()


def _registry_with(name: str, run) -> object:
    registry = build_registry()
    registry.add(Command(name, "a test command", lambda parser: None, run))
    return registry


def test_ctrl_c_during_a_command_cancels_it_and_the_prompt_returns(sample_data):
    def slow(args, context):  # a real SIGINT, as the terminal sends on Ctrl-C
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        return "finished"

    context, out = make_context(sample_data)
    assert drive(context, f"slow\rls\r{CTRL_D}", _registry_with("slow", slow)) == ExitStatus.OK
    text = out.getvalue()
    # the command was cut short (it never finished its 5 s) and the next line ran
    assert "cancelled" in text and "finished" not in text and "op types per NPU debug dir" in text


def test_a_crashing_command_prints_one_line_and_the_prompt_returns(sample_data):
    def broken(args, context):
        raise ZeroDivisionError("oops")

    context, out = make_context(sample_data)
    assert drive(context, f"broken\rls\r{CTRL_D}", _registry_with("broken", broken)) == ExitStatus.OK
    text = out.getvalue()
    assert "internal error in 'broken': ZeroDivisionError: oops" in text
    assert "Traceback" not in text and "op types per NPU debug dir" in text


def test_a_missing_data_root_is_one_warning_and_the_shell_starts(tmp_path):
    context, out = make_context(tmp_path / "nowhere", width=400)  # the tmp path is long
    assert drive(context, f"ls\rhelp\r{CTRL_D}") == ExitStatus.OK
    text = out.getvalue()
    assert "warning:" in text and "no such data root" in text
    assert "commands (help CMD for details)" in text and "Traceback" not in text


def test_lines_go_into_the_history_file(sample_data, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    context, _ = make_context(sample_data)
    with create_pipe_input() as pipe:
        pipe.send_text(f"ls -t Relu\rlss\r{CTRL_D}")
        interactive_loop(build_registry(), context, input=pipe, output=DummyOutput())
    saved = (tmp_path / "xdg" / "precision_tool" / "history").read_text()
    assert "+ls -t Relu\n" in saved and "+lss\n" in saved


def test_history_path_follows_xdg_else_home(tmp_path):
    assert history_path({"XDG_DATA_HOME": "/x", "HOME": "/h"}) == tmp_path.joinpath("/x/precision_tool/history")
    assert history_path({"HOME": "/h"}) == tmp_path.joinpath("/h/.precision_tool_history")
    assert history_path({"XDG_DATA_HOME": "", "HOME": "/h"}) == tmp_path.joinpath("/h/.precision_tool_history")


def test_an_unwritable_history_location_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    history = open_history(blocker / "precision_tool" / "history")  # a file where a dir should be
    assert not isinstance(history, SafeFileHistory)
    history.append_string("ls")
    assert list(history.get_strings()) == ["ls"]


def test_a_history_file_that_goes_away_does_not_crash(tmp_path):
    path = tmp_path / "dir" / "history"
    history = open_history(path)
    assert isinstance(history, SafeFileHistory) and path.exists()
    path.unlink()
    path.parent.rmdir()
    history.append_string("ls")  # the write fails quietly
    assert list(history.load_history_strings()) == []


def test_run_shell_reads_a_non_terminal_stdin_line_by_line(sample_data):
    context, out = make_context(sample_data)
    status = run_shell(context, io.StringIO("ls -t Relu\nlss\nexit\nls\n"))
    text = out.getvalue()
    assert status == ExitStatus.ERROR  # the worst status of the lines run
    assert "resnet/relu2/Relu" in text and "unknown command 'lss'" in text
    assert "op types per NPU debug dir" not in text  # nothing after exit


def _completions(completer, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))]


def test_the_completer_completes_commands_flags_and_op_names(sample_data):
    context, _ = make_context(sample_data)
    completer = ShellCompleter(build_registry(), context)
    assert "ls" in _completions(completer, "l")
    assert _completions(completer, "ls --na") == ["--name"]
    ops = _completions(completer, "ls -n resnet/conv")
    assert ops[:2] == ["resnet/conv1/kernel", "resnet/conv1/bias"] and "resnet/conv2/Conv2D" in ops
    assert "resnet/conv1/Conv2D" in _completions(completer, "ls -t Relu; ls -n resnet_conv1_Conv")
    completion = next(iter(completer.get_completions(Document("ls -n resnet/dense/Mat"), CompleteEvent())))
    assert completion.start_position == -len("resnet/dense/Mat") and completion.text == "resnet/dense/MatMul"
    assert _completions(completer, "help l") == ["ls"]


def test_op_names_are_loaded_once_per_session(sample_data, monkeypatch):
    context, _ = make_context(sample_data)
    calls = []
    real_ops = context.ops
    monkeypatch.setattr(context, "ops", lambda debug=None: calls.append(debug) or real_ops(debug))
    completer = ShellCompleter(build_registry(), context)
    _completions(completer, "l")
    assert calls == []  # not at start-up, not for command names
    for text in ("ls -n r", "ls -n re", "ls -n res"):
        assert _completions(completer, text)
    assert calls == ["debug_0", "debug_1"]  # each debug dir's ops, once


def test_completion_on_a_missing_data_root_offers_nothing_and_does_not_raise(tmp_path):
    context, _ = make_context(tmp_path / "nowhere")
    completer = ShellCompleter(build_registry(), context)
    assert _completions(completer, "ls -n res") == []
    assert _completions(completer, "ls --ty") == ["--type"]


def test_the_session_prompts_and_completes_with_the_shell_completer(sample_data):
    from precision_tool.shell.session import PROMPT, make_session

    context, _ = make_context(sample_data)
    with create_pipe_input() as pipe:
        session = make_session(build_registry(), context, pipe, DummyOutput(), InMemoryHistory())
    assert PROMPT == "PrecisionTool > " and session.message == PROMPT
    assert isinstance(session.completer, ShellCompleter)
