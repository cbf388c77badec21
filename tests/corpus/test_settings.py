"""Bad settings, from config.py, the environment or the command line: each is one line naming
the setting, what it wants and where the value came from; never a traceback, never accepted."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from precision_tool.config import Config, load_config
from precision_tool.errors import PrecisionToolError
from tests.conftest import REPO_ROOT

DEEP = 100_000

# (what config.py says, text the one error line must hold)
BAD_FILE = [
    ("VCS_LIMIT = 1e999", "VCS_LIMIT: inf is not a whole number >= 0"),
    ("VCS_LIMIT = -1", "VCS_LIMIT: -1 is not a whole number >= 0"),
    ("VCS_LIMIT = 2.5", "VCS_LIMIT: 2.5 is not a whole number"),
    ("VCS_LIMIT = True", "VCS_LIMIT: True is not a whole number"),
    ("VCS_LIMIT = [3]", "VCS_LIMIT: [3] is not a whole number"),
    ("VCS_LIMIT = 'three'", "VCS_LIMIT: 'three' is not a whole number"),
    ("TF_DUMP_STEP = {[1]: 2}", "TF_DUMP_STEP is not a valid literal (unhashable type: 'list')"),
    ("TF_DUMP_STEP = '5-'", "TF_DUMP_STEP: '5-' is not steps like"),
    ("TF_DUMP_STEP = 'a|b'", "TF_DUMP_STEP: 'a|b' is not steps like"),
    ("TF_DUMP_STEP = 0.5", "TF_DUMP_STEP: 0.5 is not steps as text"),
    ("TF_DUMP_STEP = True", "TF_DUMP_STEP: True is not steps"),
    ("COSINE_THRESHOLD = 1e999", "COSINE_THRESHOLD: inf is not a finite number"),
    ("COSINE_THRESHOLD = -1e999", "COSINE_THRESHOLD: -inf is not a finite number"),
    ("COSINE_THRESHOLD = True", "COSINE_THRESHOLD: True is not a number"),
    ("COSINE_THRESHOLD = 1.5", "COSINE_THRESHOLD: 1.5 is not a cosine between -1 and 1"),
    ("COSINE_THRESHOLD = 'nan'", "COSINE_THRESHOLD: 'nan' is not a finite number"),
    ("COSINE_THRESHOLD = None", "COSINE_THRESHOLD: None is not a number"),
    ("RED_THRESHOLD = -0.1", "RED_THRESHOLD: -0.1 is not a number >= 0, or None"),
    ("RED_THRESHOLD = 1e999", "RED_THRESHOLD: inf is not a finite number"),
    ("RED_THRESHOLD = False", "RED_THRESHOLD: False is not a number"),
    ("RED_THRESHOLD = 'x'", "RED_THRESHOLD: 'x' is not a number"),
    ("WORKERS = -3", "WORKERS: -3 is not a whole number >= 0 and <= 1024"),
    ("WORKERS = 10**9", "WORKERS must be a literal value"),
    ("WORKERS = 1000000000", "WORKERS: 1000000000 is not a whole number >= 0 and <= 1024"),
    ("DANGEROUS_CASTS = 'ab'", "DANGEROUS_CASTS: 'ab' is not a list of (source, target) pairs"),
    ("DANGEROUS_CASTS = [('DT_FLOAT',)]", "DANGEROUS_CASTS: [('DT_FLOAT',)] is not a list of"),
    ("DANGEROUS_CASTS = [('DT_FLOAT', 3)]", "is not a list of (source, target) pairs"),
    ("DANGEROUS_CASTS = [('float', 'int')]", "is not a list of (source, target) pairs"),
    ("DANGEROUS_CASTS = {'DT_FLOAT': 'DT_INT8'}", "is not a list of (source, target) pairs"),
    ("DATA_ROOT_DIR = 5", "DATA_ROOT_DIR: 5 is not a directory path"),
    ("DATA_ROOT_DIR = ''", "DATA_ROOT_DIR: '' is not a directory path"),
    ("OUTPUT_ROOT = ['temp']", "OUTPUT_ROOT: ['temp'] is not a directory path"),
    ("DEBUG = 'maybe'", "DEBUG: 'maybe' is not True or False"),
    ("DEBUG = 2", "DEBUG: 2 is not True or False"),
    ("CMD_ROOT_PATH = 7", "CMD_ROOT_PATH: 7 is not a string"),
    ("VCS_LIMIT = " + "-" * DEEP + "1", "nested too deeply"),
    ("VCS_LIMIT = " + "[" * DEEP + "]" * DEEP, "too many nested parentheses"),
    ("VCS_LIMIT = " + "(" * 300 + "1" + ")" * 300, "too many nested parentheses"),
    ("VCS_LIMIT = " + "{'a': " * 90 + "1" + "}" * 90, "VCS_LIMIT: {'a': {'a': {'a'"),
    ("VCS_LIMIT = 3\x00", "null byte"),
]

# (environment variable value, text)
BAD_ENV = [
    ("PRECISION_TOOL_VCS_LIMIT", "1e999", "VCS_LIMIT: '1e999' is not a whole number"),
    ("PRECISION_TOOL_COSINE_THRESHOLD", "inf", "COSINE_THRESHOLD: 'inf' is not a finite number"),
    ("PRECISION_TOOL_COSINE_THRESHOLD", "true", "COSINE_THRESHOLD: 'true' is not a number"),
    ("PRECISION_TOOL_WORKERS", "-1", "WORKERS: '-1' is not a whole number"),
    ("PRECISION_TOOL_DEBUG", "perhaps", "DEBUG: 'perhaps' is not True or False"),
    ("PRECISION_TOOL_TF_DUMP_STEP", "9-1", "TF_DUMP_STEP: '9-1' is not steps"),
]

GOOD = [
    ("VCS_LIMIT = 0", "vcs_limit", 0),
    ("COSINE_THRESHOLD = 1", "cosine_threshold", 1.0),
    ("COSINE_THRESHOLD = -1", "cosine_threshold", -1.0),
    ("RED_THRESHOLD = 0", "red_threshold", 0.0),
    ("RED_THRESHOLD = None", "red_threshold", None),
    ("WORKERS = 1024", "workers", 1024),
    ("TF_DUMP_STEP = 5", "tf_dump_step", "5"),
    ("TF_DUMP_STEP = ''", "tf_dump_step", ""),
    ("TF_DUMP_STEP = '0|3-5'", "tf_dump_step", "0|3-5"),
    ("DANGEROUS_CASTS = []", "dangerous_casts", ()),
    ("DANGEROUS_CASTS = [['DT_INT64', 'DT_INT32']]", "dangerous_casts", (("DT_INT64", "DT_INT32"),)),
    ("DEBUG = True", "debug", True),
    ("OUTPUT_ROOT = None", "output_root", None),
    ("CMD_ROOT_PATH = None", "cmd_root_path", ""),
]


def _one_line(text: str) -> str:
    return text.replace("\n", "\\n")[:80]


@pytest.mark.parametrize("line, expected", BAD_FILE, ids=[_one_line(b[0]) for b in BAD_FILE])
def test_a_bad_value_in_config_py_is_one_line(tmp_path, line, expected):
    (tmp_path / "config.py").write_text(line + "\n")
    with pytest.raises(PrecisionToolError) as info:
        load_config(environ={}, cwd=tmp_path)
    message = str(info.value)
    assert expected.lower() in message.lower() and str(tmp_path / "config.py") in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.parametrize("name, value, expected", BAD_ENV, ids=[b[0] for b in BAD_ENV])
def test_a_bad_value_in_the_environment_names_the_variable(tmp_path, name, value, expected):
    with pytest.raises(PrecisionToolError) as info:
        load_config(environ={name: value}, cwd=tmp_path)
    assert expected in str(info.value) and name in str(info.value)


@pytest.mark.parametrize("line, field, value", GOOD, ids=[g[0] for g in GOOD])
def test_good_values_at_the_edges_are_accepted(tmp_path, line, field, value):
    (tmp_path / "config.py").write_text(line + "\n")
    assert getattr(load_config(environ={}, cwd=tmp_path), field) == value


def test_a_bad_file_value_is_reported_even_when_a_flag_overrides_it(tmp_path):
    (tmp_path / "config.py").write_text("VCS_LIMIT = -5\n")
    with pytest.raises(PrecisionToolError, match="VCS_LIMIT: -5"):
        load_config({"VCS_LIMIT": 3}, environ={}, cwd=tmp_path)


def test_a_relative_output_root_in_config_py_is_taken_from_its_directory(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.py").write_text("OUTPUT_ROOT = 'out'\n")
    config = load_config(config_path=str(tmp_path / "cfg" / "config.py"), environ={}, cwd=tmp_path)
    assert config.temp_dir == tmp_path / "cfg" / "out"
    assert load_config(environ={}, cwd=tmp_path).temp_dir == Config().data_root_dir / "temp"


def test_a_huge_config_file_is_refused_unread(tmp_path):
    (tmp_path / "config.py").write_text("# " + "x" * (1 << 20) + "\nVCS_LIMIT = 3\n")
    with pytest.raises(PrecisionToolError, match="larger than 1 MiB"):
        load_config(environ={}, cwd=tmp_path)


@pytest.mark.parametrize(
    "line",
    [
        "VCS_LIMIT = 1e999",
        "TF_DUMP_STEP = {[1]: 2}",
        "VCS_LIMIT = " + "-" * DEEP + "1",
        "COSINE_THRESHOLD = True",
        "DANGEROUS_CASTS = 'ab'",
    ],
    ids=_one_line,
)
def test_through_the_real_binary_a_bad_setting_is_one_line_and_status_2(tmp_path, line):
    (tmp_path / "config.py").write_text(line + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path)}
    env.pop("PRECISION_TOOL_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "vcs"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "config.py" in lines[0], done.stderr
    assert done.stdout == ""
