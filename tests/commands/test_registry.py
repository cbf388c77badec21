"""The command registry: one place for names, parsing, help and dispatch."""

from __future__ import annotations

import pytest

from precision_tool.commands import COMMAND_MODULES, build_registry
from precision_tool.commands.registry import Command, Registry, UsageError, run_words, split_commands
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context, run_command


def test_split_commands_honours_quotes_and_semicolons():
    assert split_commands("ls -t Conv; ni 'a b;c' -s 2") == [["ls", "-t", "Conv"], ["ni", "a b;c", "-s", "2"]]
    assert split_commands(" ;; ls ;") == [["ls"]]
    assert split_commands("") == []


def test_unclosed_quote_is_a_usage_error():
    with pytest.raises(UsageError, match="cannot parse"):
        split_commands("ni 'model/conv")


def test_unknown_command_suggests_the_nearest_name():
    registry = build_registry()
    with pytest.raises(UsageError, match="unknown command 'lss'; did you mean 'ls'"):
        registry.get("lss")
    with pytest.raises(UsageError, match="type 'help'"):
        registry.get("zzzzzz")


def test_a_name_registered_twice_is_a_bug():
    registry = Registry()
    command = Command("x", "x", lambda p: None, lambda a, c: None, aliases=("y",))
    registry.add(command)
    with pytest.raises(ValueError):
        registry.add(Command("y", "clash", lambda p: None, lambda a, c: None))


def test_every_module_command_is_registered_with_help_and_a_test():
    registry = build_registry()
    names = {c.name for c in registry}
    assert set(COMMAND_MODULES) | {"help"} <= names
    for command in registry:
        assert command.summary, command.name
        assert command.parser().format_help().startswith(f"usage: {command.name}")
        if command.name != "help":
            test_file = REPO_ROOT / "tests" / "commands" / f"test_{command.name}.py"
            assert test_file.exists(), f"{command.name} has no {test_file.name}"


def test_each_command_module_holds_the_command_of_its_name():
    """build_registry(needed) imports a module by the command's name: they must agree."""
    import importlib

    for name in COMMAND_MODULES:
        command = importlib.import_module(f"precision_tool.commands.{name}").COMMAND
        assert command.name == name and not command.aliases, name


def test_a_one_shot_line_imports_only_its_commands_modules():
    """A fresh interpreter: ``vc`` alone leaves explore's web client and report's modules out;
    a mistyped name, help or an exit word gets the whole registry, so the nearest name is found."""
    import subprocess
    import sys

    probe = (
        "import sys; from precision_tool.commands import build_registry;"
        "r = build_registry(['vc', 'vcs']); print(sorted(c.name for c in r));"
        "print(sorted(m for m in ('precision_tool.commands.explore', 'precision_tool.commands.report',"
        " 'urllib.request') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, check=True)
    assert done.stdout.splitlines() == ["['vc', 'vcs']", "[]"]
    for needed in (["vsc"], ["help"], ["vc", "exit"], None):
        assert {c.name for c in build_registry(needed)} == set(COMMAND_MODULES) | {"help"}, needed
    with pytest.raises(UsageError, match="did you mean 'vcs'"):
        build_registry(["vsc"]).get("vsc", ["-c", "0.9"])


def test_help_flag_returns_the_usage_without_running(sample_data):
    context, _ = make_context(sample_data)
    result = run_words(build_registry(), ["ls", "--help"], context)
    assert "usage: ls" in result.renderables[0] and "--type" in result.renderables[0]


def test_bad_flag_prints_usage_and_status_2(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "ls --bogus") == ExitStatus.ERROR
    text = out.getvalue()
    assert "unrecognized arguments: --bogus" in text and "usage: ls" in text


def test_help_lists_commands_and_explains_one(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "help; help ls; help exit") == ExitStatus.OK
    text = out.getvalue()
    assert "ls" in text and "help CMD" in text and "exit" in text
    assert "usage: ls" in text
    assert "leave the shell" in text


def test_worst_status_of_several_commands_wins(sample_data):
    context, out = make_context(sample_data)
    assert run_command(context, "ls; nope; ls") == ExitStatus.ERROR
    assert out.getvalue().count("op types per NPU debug dir") == 2


def test_internal_errors_are_one_line_unless_debug(sample_data, monkeypatch):
    registry = build_registry()
    boom = Command("boom", "raises", lambda p: None, lambda a, c: 1 / 0)
    registry.add(boom)
    from precision_tool.commands.dispatch import execute_line

    context, out = make_context(sample_data)
    assert execute_line("boom", registry, context) == ExitStatus.ERROR
    assert "internal error in 'boom': ZeroDivisionError" in out.getvalue()
    assert "Traceback" not in out.getvalue()
    context, out = make_context(sample_data, DEBUG=True)
    execute_line("boom", registry, context)
    assert "Traceback" in out.getvalue()


def test_keyboard_interrupt_cancels_the_command_only(sample_data):
    registry = build_registry()

    def interrupted(args, context):
        raise KeyboardInterrupt

    registry.add(Command("slow", "interrupted", lambda p: None, interrupted))
    from precision_tool.commands.dispatch import execute_line

    context, out = make_context(sample_data)
    assert execute_line("slow; ls -t Relu", registry, context) == ExitStatus.INTERRUPTED
    assert "cancelled" in out.getvalue() and "resnet/relu2/Relu" in out.getvalue()
