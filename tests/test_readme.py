"""Issue 12.14: what the README shows is what the tool prints: the shell's banner on the sample,
and every exit status."""

from __future__ import annotations

import re
import shutil
import sys

from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT
from tests.shell.test_pty import PROMPT, Terminal, tool_env

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def _banner_in_readme() -> list[str]:
    block = README[README.index("$ precision-tool                          # the shell") :]
    lines = block.splitlines()[1:]
    return [line for line in lines[: lines.index(next(line for line in lines if line.startswith(PROMPT)))]]


def test_the_readme_banner_is_the_banner_the_shell_prints(tmp_path):
    shutil.copytree(REPO_ROOT / "precision_data", tmp_path / "precision_data", ignore=shutil.ignore_patterns("temp"))
    term = Terminal([sys.executable, "-m", "precision_tool"], tool_env(tmp_path), cwd=tmp_path, cols=160)
    try:
        term.expect(PROMPT)
        term.send("exit\r")
        assert term.wait() == 0
    finally:
        term.close()
    shown = [" ".join(line.split()) for line in term.screen.splitlines()]
    for line in _banner_in_readme():
        assert " ".join(line.split()) in shown, (line, term.screen)
    assert any("15 dump files" in line for line in _banner_in_readme())


def test_every_exit_status_is_documented():
    sentence = README[README.index("Exit status: 0") :].split(". ", 1)[0]
    for status in ExitStatus:
        assert re.search(rf"\b{int(status)} ", sentence), (status, sentence)
    assert "130 interrupted" in " ".join(sentence.split())
