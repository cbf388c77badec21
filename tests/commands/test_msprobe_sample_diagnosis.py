"""The msprobe sample's one-command diagnosis through the real command line: ``ac -c`` names
the planted API call as the first introducer, decided by its replay, with the cause; the modules
around it return its output and inherit; the calls after it inherit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PLANTED = {"pytorch": "Functional.linear.5.forward", "mindspore": "MintFunctional.linear.5.forward"}


def _tool(cwd, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", *args], capture_output=True, text=True, timeout=300, env=env, cwd=cwd
    )


@pytest.mark.parametrize("framework", ["pytorch", "mindspore"])
def test_ac_c_names_the_planted_call_by_replay_and_the_modules_inherit(tmp_path, framework):
    root = tmp_path / "msprobe_data"
    made = subprocess.run(
        [sys.executable, "-m", "precision_tool.sample", str(root), "--framework", framework],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert made.returncode == 0, made.stderr
    done = _tool(tmp_path, "--data", str(root), "ac", "-c", "--json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    (result,) = doc["summary"]["results"]
    first = result["first_introducer"]
    assert first["op"] == PLANTED[framework]
    flagged = {op["op"]: op for op in result["flagged"]}
    planted = flagged[PLANTED[framework]]
    assert planted["state"] == "introduces" and planted["decided_by"] == "replay"
    assert planted["replay"]["beyond"] is True
    modules = [op for op in result["flagged"] if op["type"].startswith(("Module.", "Cell."))]
    assert modules and all(op["state"] == "inherits" and op["decided_by"] == "replay" for op in modules)
    assert [op["op"] for op in result["flagged"] if op["state"] == "introduces"] == [PLANTED[framework]]
    text = _tool(tmp_path, "--data", str(root), "ac").stdout
    assert "cause: computation" in " ".join(text.split())
