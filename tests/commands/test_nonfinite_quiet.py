"""No raw numpy warning reaches the user on NaN or inf data: every command that reads tensors
runs through the real CLI, with every RuntimeWarning shown (``PYTHONWARNINGS=always``, which
the worker processes inherit), on the sample with NaN planted (``--defect nan``: the first
image of ``resnet/pool/Mean``) and with +-inf (``--defect overflow``: ``resnet/dense/MatMul``)."""

from __future__ import annotations

import pytest

from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS
from tests.commands.test_why import cli

COMMANDS = ["ac -c", "vcs", "why", "why {op}", "cp {op} tf:{op}:0", "pt {op}", "pt tf:{op}:0", "report"]


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    made = {}

    def root_of(kind):
        if kind not in made:
            made[kind] = write_sample(tmp_path_factory.mktemp(kind) / "precision_data", defect=kind)
        return made[kind]

    return root_of


@pytest.mark.parametrize("kind", ["nan", "overflow"])
def test_commands_on_nonfinite_data_print_no_runtime_warning(roots, kind, monkeypatch):
    monkeypatch.setenv("PYTHONWARNINGS", "always::RuntimeWarning")
    root, op = roots(kind), DEFECTS[kind].op
    lines = "; ".join(command.format(op=op) for command in COMMANDS)
    done = cli("--data", str(root), "-e", lines)
    assert done.returncode in (0, 1), done.stderr
    assert "cause: " in done.stdout and "first operator that introduces the error" in done.stdout
    for text in (done.stdout, done.stderr):
        assert "RuntimeWarning" not in text and "Warning:" not in text, text[-3000:]
