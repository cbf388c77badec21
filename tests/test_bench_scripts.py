"""The bench/ scripts are not run by the suite (they take minutes and measure speed), but each
must at least start: its arguments parse and its imports resolve. A syntax slip in a bench is
otherwise found only by the next person who wants a number."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_there_are_bench_scripts():
    assert {p.name for p in SCRIPTS} >= {"compare_bench.py", "scaling_bench.py", "graph_load_bench.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bench_script_starts_and_explains_itself(script):
    done = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:") and "--help" in done.stdout
