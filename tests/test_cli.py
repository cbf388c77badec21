"""The one-shot command line, driven as a user would: the installed ``precision-tool`` script,
``python -m precision_tool`` and ``python3 precision_tool/cli.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from precision_tool import __version__
from tests.conftest import REPO_ROOT


def _run(args, cwd, env=None, stdin=""):
    merged = {**os.environ, "HOME": str(cwd), "XDG_DATA_HOME": str(cwd / ".xdg"), **(env or {})}
    merged.pop("PRECISION_TOOL_CONFIG", None)
    return subprocess.run(args, cwd=cwd, env=merged, input=stdin, capture_output=True, text=True, timeout=120)


@pytest.fixture
def workdir(sample_data):
    return sample_data.parent  # holds precision_data/, the default data root


def _script():
    path = shutil.which("precision-tool")
    assert path, "the console script is missing: install the package (README test command)"
    return path


def test_console_script_runs_a_command_on_the_default_data_root(workdir):
    result = _run([_script(), "ls", "-t", "Relu"], workdir)
    assert result.returncode == 0, result.stderr
    assert "[Relu] resnet/relu2/Relu  (debug_0)" in result.stdout
    assert "\x1b[" not in result.stdout  # plain text when piped


def test_python_dash_m_and_the_script_path_invocation(workdir):
    for args in ([sys.executable, "-m", "precision_tool"], [sys.executable, str(REPO_ROOT / "precision_tool/cli.py")]):
        result = _run([*args, "--data", str(workdir / "precision_data"), "ls"], workdir.parent)
        assert result.returncode == 0, result.stderr
        assert "op types per NPU debug dir" in result.stdout


def test_version(workdir):
    result = _run([_script(), "--version"], workdir)
    assert result.stdout.strip() == f"precision-tool {__version__}"


def test_several_commands_with_dash_e_and_the_worst_status(workdir):
    result = _run([_script(), "-e", "ls -t Add; lss"], workdir)
    assert result.returncode == 2
    assert "[Add] resnet/add/add" in result.stdout
    assert "unknown command 'lss'; did you mean 'ls'?" in result.stderr


def test_bad_flag_prints_usage_and_exits_2(workdir):
    result = _run([_script(), "ls", "--bogus"], workdir)
    assert result.returncode == 2
    assert "unrecognized arguments: --bogus" in result.stderr and "usage: ls" in result.stderr


def test_help_for_a_command(workdir):
    result = _run([_script(), "help", "ls"], workdir)
    assert result.returncode == 0 and "usage: ls" in result.stdout


def test_config_file_from_the_environment(workdir, tmp_path):
    config = tmp_path / "cfg.py"
    config.write_text(f"DATA_ROOT_DIR = {str(workdir / 'precision_data')!r}\n")
    result = _run([_script(), "ls", "-t", "MaxPool"], tmp_path, env={"PRECISION_TOOL_CONFIG": str(config)})
    assert result.returncode == 0, result.stderr
    assert "resnet/pool/MaxPool" in result.stdout


def test_bad_config_is_one_line_and_exit_2(workdir):
    (workdir / "config.py").write_text("VCS_LIMIT = (\n")
    result = _run([_script(), "ls"], workdir)
    assert result.returncode == 2
    assert "config.py" in result.stderr and "Traceback" not in result.stderr


def test_piped_commands_run_line_by_line_until_eof(workdir):
    result = _run([_script()], workdir, stdin="ls -t Softmax\n\n# a comment\nhelp ls\n")
    assert result.returncode == 0, result.stderr
    assert "resnet/softmax/Softmax" in result.stdout and "usage: ls" in result.stdout


def test_top_level_help_lists_every_registered_command(workdir):
    from precision_tool.commands import build_registry

    out = _run([_script(), "--help"], workdir)
    assert out.returncode == 0
    listed = {
        line.split()[0]
        for line in out.stdout.split("commands:")[1].splitlines()
        if line.strip() and line.startswith("  ")
    }
    registry = build_registry()
    assert listed == {c.name for c in registry} | set(registry.exit_words)


def test_one_shot_commands_do_not_load_the_terminal_shell(workdir):
    code = (
        "import sys; from precision_tool.cli import main; status = main(['ls']); "
        "assert 'prompt_toolkit' not in sys.modules, 'one-shot loaded prompt_toolkit'; "
        "raise SystemExit(status)"
    )
    out = _run([sys.executable, "-c", code], workdir)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("words", [["--version"], ["--help"], ["help"], ["help", "vc"]])
def test_version_and_help_load_no_heavy_library(workdir, words):
    """The fixed cost of --version and help is Python alone: they load neither numpy, protobuf,
    pandas, graphviz, prompt_toolkit nor rich, the settings or the data (the commands import
    those when they run)."""
    code = (
        "import sys\nfrom precision_tool.cli import main\ntry:\n    main(%r)\nexcept SystemExit:\n"
        "    pass\nheavy = [m for m in ('numpy', 'google.protobuf', 'pandas', 'graphviz', "
        "'prompt_toolkit', 'numba', 'rich', 'precision_tool.config', 'precision_tool.context') "
        "if m in sys.modules]\nassert not heavy, heavy\n" % words
    )
    out = _run([sys.executable, "-c", code], workdir)
    assert out.returncode == 0, out.stderr


@pytest.mark.parametrize("words", [["--help"], ["help"], ["help", "vc"]])
def test_help_on_a_full_disk_is_one_line_and_status_2(workdir, words):
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "precision_tool", *words],
            cwd=workdir,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    assert out.returncode == 2
    assert out.stderr.strip() == "error: cannot write the output: No space left on device"


def test_help_of_an_unknown_command_names_close_ones(workdir):
    out = _run([_script(), "help", "vsc"], workdir)
    assert out.returncode == 2 and "unknown command 'vsc'; did you mean 'vc'?" in out.stderr
    listing = _run([_script(), "help"], workdir)
    assert listing.returncode == 0 and listing.stdout.startswith("commands (help CMD for details)")
    assert "  vc " in listing.stdout and "  exit " in listing.stdout


def _entry(code: str, *args: str) -> subprocess.CompletedProcess:
    """``code`` then :func:`precision_tool.cli.entry` in a fresh interpreter, with ``args``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    program = code + "\nfrom precision_tool.cli import entry\nentry()"
    return subprocess.run([sys.executable, "-c", program, *args], env=env, capture_output=True, text=True, timeout=600)


def test_the_program_ends_after_its_exit_handlers_with_its_status_and_all_its_output(sample_data, tmp_path):
    """entry() skips only the interpreter's teardown: the exit handlers run (the one registered
    first, last), the output is flushed, the CSV is complete, the status is main's. numba is on
    for the run and loaded in this process (the sample is compared inline)."""
    pytest.importorskip("numba")
    code = (
        "import atexit, sys\nfrom precision_tool.compare import kernels\n"
        "kernels.numba_pays_off = lambda *a: True\n"
        "atexit.register(lambda: print('handler ran; numba loaded:', 'numba' in sys.modules))"
    )
    out = tmp_path / "out"
    done = _entry(code, "--data", str(sample_data), "vc", "--fresh", "-o", str(out))
    assert done.returncode in (0, 1), done.stderr
    assert done.stdout.splitlines()[-1] == "handler ran; numba loaded: True"
    csvs = list(out.glob("result_*.csv"))
    assert len(csvs) == 1 and str(csvs[0]) in done.stdout
    lines = csvs[0].read_text().splitlines()
    assert len(lines) > 1 and lines[-1].count(",") == lines[0].count(",")
    assert _entry("", "--data", str(tmp_path / "none"), "vc").returncode == 2  # an input error's status


def test_with_another_thread_running_the_program_ends_as_usual(tmp_path):
    """A thread still running at the end is waited for (the interpreter's own exit)."""
    code = (
        "import threading, time\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread finished', flush=True))).start()"
    )
    done = _entry(code, "--data", str(tmp_path), "vc")
    assert done.returncode == 2 and done.stdout.splitlines()[-1] == "thread finished", done.stderr
