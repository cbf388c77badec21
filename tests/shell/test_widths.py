"""Issues 12.5 and 12.6: at any width, piped or on a terminal, no op name, file name or number
is broken or cut with an ellipsis; piped output honours COLUMNS.

The network has names longer than a table column can be at 100 columns (a nested Keras scope)
and a planted error, so ``ni``, ``ls``, ``vcs``, ``pt`` and ``cp`` all show long names; every name
must be found whole in the output, and no "…" anywhere.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.netdata import MODEL, NetOp, write_net
from tests.shell.test_pty import Terminal, tool_env

SCOPE = "model/transformer_block_from_nested_keras_layers/multi_head_attention_projection"
LONG = f"{SCOPE}/dense_kernel_matmul"
GELU = "model/mlp/gelu/Gelu"
GELU_PARTS = [f"model/mlp/gelu/{p}" for p in ("mul", "Pow", "mul_1", "add", "mul_2", "Tanh", "add_1", "mul_3")]
FC1 = "model/mlp/fc1/BiasAdd"


@pytest.fixture(scope="module")
def long_names(tmp_path_factory):
    root = tmp_path_factory.mktemp("wide") / "precision_data"
    write_net(
        root,
        [
            NetOp(FC1, "MatMulV2", original_op_names=["model/mlp/fc1/MatMul", FC1]),
            NetOp(GELU, "Gelu", tf_name="model/mlp/gelu/mul_3", original_op_names=GELU_PARTS, broken=True),
            NetOp(LONG, "MatMulV2"),
            NetOp(f"{SCOPE}/output_projection_bias_add_from_the_fused_kernel", "Add"),
        ],
    )
    done = _piped(root, {}, "vc")
    assert done.returncode == 1, done.stdout + done.stderr
    return root


def _piped(root, env_extra: dict, *args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.pop("COLUMNS", None)
    env.update(PYTHONPATH=str(REPO_ROOT), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=root.parent,
    )


OUT = f"{SCOPE}/output_projection_bias_add_from_the_fused_kernel"


def _file(root, op_name: str, golden: bool = False) -> str:
    """The dump (or golden) file name of ``op_name``."""
    key = op_name.replace("/", "_")
    if golden:
        return next(p.name for p in (root / "tf" / "dump").glob(f"{key}.0.*.npy"))
    return next(p.name for p in (root / "npu").rglob(f"*.{key}.*") if p.is_file())


def expected(root, command: str) -> list[str]:
    """The names ``command``'s output must hold, each whole."""
    return {
        "ni long": [LONG, GELU, OUT, _file(root, LONG), _file(root, LONG, golden=True)],
        "ni gelu": [GELU, FC1, LONG, *GELU_PARTS, _file(root, GELU)],
        "ni out": [OUT, LONG, _file(root, OUT), _file(root, OUT, golden=True)],
        "ls -n": [FC1, GELU, LONG, OUT],
        "ls": [MODEL, "ge_proto_00000001_Build.txt"],
        "vcs": [GELU, ",".join(GELU_PARTS)],
        "pt": [_file(root, LONG)],
        "cp": [_file(root, LONG), _file(root, LONG, golden=True)],
    }[command]


COMMANDS = {
    "ni long": ("ni", LONG),
    "ni gelu": ("ni", GELU),
    "ni out": ("ni", OUT, "-a", "-s", "1"),
    "ls -n": ("ls", "-n", "model"),
    "ls": ("ls",),
    "vcs": ("vcs", "-l", "0"),
    "pt": ("pt", LONG),
    "cp": ("cp", LONG, "tf:" + LONG.replace("/", "_") + ".0"),
}


def _check_whole(text: str, names: list[str]) -> None:
    assert "…" not in text, text
    for name in names:
        assert name in text, f"{name!r} is not whole in:\n{text}"


@pytest.mark.parametrize("columns", ["100", "80", None])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_piped_output_never_breaks_a_name(long_names, command, columns):
    done = _piped(long_names, {"COLUMNS": columns} if columns else {}, *COMMANDS[command])
    assert done.returncode in (0, 1), done.stdout + done.stderr
    names = expected(long_names, command)
    _check_whole(done.stdout, names)
    width = int(columns) if columns else 160
    files = [_file(long_names, op, golden) for op in (LONG, OUT) for golden in (False, True)]
    too_wide = [n for n in [*names, *files, LONG, OUT] if len(n) > width // 2]
    for line in done.stdout.splitlines():
        # a line is only wider than COLUMNS when it holds a name too long for the page
        assert len(line) <= width or any(n in line for n in too_wide) or str(long_names) in line, line


def test_piped_output_takes_its_width_from_columns(long_names):
    narrow = _piped(long_names, {"COLUMNS": "100"}, "ni", FC1).stdout
    wide = _piped(long_names, {}, "ni", FC1).stdout
    assert max(len(line) for line in narrow.splitlines()) <= 100
    assert "┏" in narrow and narrow != wide  # a table still, laid out for 100 columns


def test_empty_columns_are_dropped_rather_than_names_cut(long_names):
    text = _piped(long_names, {"COLUMNS": "100"}, "ni", FC1).stdout
    assert " note " not in text  # no tensor has a note: the column takes no width
    assert f"{MODEL}  [debug_0]" in text


@pytest.mark.parametrize("command", ["ni long", "ni gelu", "vcs", "ls -n", "cp"])
def test_a_100_column_terminal_cuts_no_name_or_number(long_names, tmp_path, command):
    term = Terminal(
        [sys.executable, "-m", "precision_tool", "--data", str(long_names), *COMMANDS[command]],
        tool_env(tmp_path),
        cwd=long_names.parent,
        rows=50,
        cols=100,
    )
    try:
        status = term.wait(timeout=60)
    finally:
        term.close()
    assert status in (0, 1), term.screen
    _check_whole(term.screen, expected(long_names, command))
    if command != "ls -n":
        assert re.findall(r"-?\d+\.\d+", term.screen)  # numbers shown, none cut (no "…" at all)
