"""Issue 25.1: the answer keys travel with the code, and under the no-skip rule a skip fails.

The fixture case and the real CANN files are in tests/data (its README says where each came
from), so no test looks for ``../shared`` beside the clone; ``.ci/run`` runs the README's test
command with ``PRECISION_TOOL_NO_SKIPS=1``, under which one skipped test fails the run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, FIXTURES, NO_SKIPS, REAL, REPO_ROOT

TESTS = Path(__file__).resolve().parent
# ``parent / "shared"`` or a "../shared" path: where the data lived before it moved into tests/data.
SIBLING = re.compile(r"""parent\s*/\s*["']shared["']|\.\./shared""")


def test_the_data_is_inside_the_repository():
    assert FIXTURES.is_relative_to(DATA) and REAL.is_relative_to(DATA) and DATA.is_relative_to(REPO_ROOT)
    assert (FIXTURES / "small" / "reference_result.csv").is_file()
    assert (REAL / "SOURCES.md").is_file() and (REAL / "atc_model.json").is_file()


def test_no_test_looks_beside_the_clone():
    found = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SIBLING.search(line)
    ]
    assert found == []


def test_the_checker_finds_the_old_paths():
    assert SIBLING.search('SHARED = REPO.parent / "shared"') and SIBLING.search("needs ../shared/real")
    assert not SIBLING.search('shared = tmp_path / "cache"') and not SIBLING.search('tmp_path / "shared"')


def test_the_readme_command_is_what_ci_runs():
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = next(line for line in ci.splitlines() if "pytest" in line and not line.startswith("#"))
    assert f"{NO_SKIPS}=1" in command and command.strip() in readme


def _run_pytest(tmp_path: Path, env_value: str | None) -> subprocess.CompletedProcess:
    (tmp_path / "test_one_skip.py").write_text(
        "import pytest\n\ndef test_runs():\n    pass\n\ndef test_skips():\n    pytest.skip('no such tool here')\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != NO_SKIPS}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if env_value is not None:
        env[NO_SKIPS] = env_value
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("env_value, status", [(None, 0), ("0", 0), ("1", 1)])
def test_a_skip_fails_the_run_only_under_the_rule(tmp_path, env_value, status):
    done = _run_pytest(tmp_path, env_value)
    assert done.returncode == status, done.stdout + done.stderr
    named = "test_one_skip.py::test_skips: no such tool here" in done.stdout
    assert named == (status == 1), done.stdout
