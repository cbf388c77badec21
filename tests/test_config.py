"""Settings: defaults < config.py < environment < flags; config.py is data, never code."""

from __future__ import annotations

from pathlib import Path

import pytest

from precision_tool.config import Config, load_config, read_config_file
from precision_tool.errors import PrecisionToolError
from tests.conftest import REPO_ROOT


def test_defaults_without_any_source(tmp_path):
    config = load_config(environ={}, cwd=tmp_path)
    assert config == Config()
    assert config.data_root_dir == Path("precision_data")
    assert (config.tf_dump_step, config.cosine_threshold, config.vcs_limit) == ("0", 0.98, 3)
    assert config.source is None


def test_config_py_in_the_working_directory_is_read(tmp_path):
    (tmp_path / "config.py").write_text("TF_DUMP_STEP = '0|5'\nVCS_LIMIT = 7\nUNKNOWN = 1\n")
    config = load_config(environ={}, cwd=tmp_path)
    assert (config.tf_dump_step, config.vcs_limit) == ("0|5", 7)
    assert config.source == tmp_path / "config.py"


def test_relative_data_root_is_taken_from_the_config_files_directory(tmp_path):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg/config.py").write_text("DATA_ROOT_DIR = 'mydata'\n")
    config = load_config(config_path=str(tmp_path / "cfg/config.py"), environ={}, cwd=tmp_path)
    assert config.data_root_dir == tmp_path / "cfg/mydata"


def test_precedence_flags_over_environment_over_file(tmp_path):
    (tmp_path / "config.py").write_text("VCS_LIMIT = 7\nCOSINE_THRESHOLD = 0.9\nTF_DUMP_STEP = '1'\n")
    environ = {"PRECISION_TOOL_VCS_LIMIT": "9", "PRECISION_TOOL_COSINE_THRESHOLD": "0.95"}
    config = load_config({"VCS_LIMIT": 11, "COSINE_THRESHOLD": None}, environ=environ, cwd=tmp_path)
    assert config.vcs_limit == 11  # flag beats environment
    assert config.cosine_threshold == 0.95  # environment beats file (flag not given)
    assert config.tf_dump_step == "1"  # file beats default


def test_config_environment_variable_names_the_file(tmp_path):
    path = tmp_path / "elsewhere.py"
    path.write_text("VCS_LIMIT = 4\n")
    config = load_config(environ={"PRECISION_TOOL_CONFIG": str(path)}, cwd=tmp_path)
    assert config.vcs_limit == 4


def test_config_file_is_never_executed(tmp_path):
    marker = tmp_path / "executed"
    (tmp_path / "config.py").write_text(f"open({str(marker)!r}, 'w')\nVCS_LIMIT = 5\n")
    assert load_config(environ={}, cwd=tmp_path).vcs_limit == 5
    assert not marker.exists()


def test_non_literal_setting_is_a_clear_error(tmp_path):
    (tmp_path / "config.py").write_text("VCS_LIMIT = __import__('os').getpid()\n")
    with pytest.raises(PrecisionToolError, match="line 1: VCS_LIMIT must be a literal"):
        load_config(environ={}, cwd=tmp_path)


def test_syntax_error_names_the_file_and_line(tmp_path):
    (tmp_path / "config.py").write_text("VCS_LIMIT = 3\nTF_DUMP_STEP = '0\n")
    with pytest.raises(PrecisionToolError) as info:
        load_config(environ={}, cwd=tmp_path)
    assert "config.py" in str(info.value) and "line 2" in str(info.value)


def test_bad_value_names_the_setting_and_origin(tmp_path):
    with pytest.raises(PrecisionToolError, match="VCS_LIMIT.*'many'"):
        load_config(environ={"PRECISION_TOOL_VCS_LIMIT": "many"}, cwd=tmp_path)


def test_missing_explicit_config_file(tmp_path):
    with pytest.raises(PrecisionToolError, match="config file not found"):
        load_config(config_path=str(tmp_path / "nope.py"), environ={}, cwd=tmp_path)


def test_example_config_documents_every_setting():
    values = read_config_file(REPO_ROOT / "config.example.py")
    names = {f.upper() for f in Config.__dataclass_fields__ if f != "source"}
    assert names <= set(values)
    config = load_config(config_path=str(REPO_ROOT / "config.example.py"), environ={}, cwd=REPO_ROOT)
    assert config.dangerous_casts == Config().dangerous_casts  # the example shows the defaults


@pytest.mark.parametrize(
    "value, expected",
    [
        ("tcp://10.1.2.3:8786", "tcp://10.1.2.3:8786"),
        (" tls://sched.example:8786 ", "tls://sched.example:8786"),
        ("local:2", "local:2"),
        ("local:007", "local:7"),
        ("", ""),
        (None, ""),
    ],
)
def test_scheduler_takes_dask_addresses_and_local_n(tmp_path, value, expected):
    assert load_config({"SCHEDULER": value}, environ={}, cwd=tmp_path).scheduler == expected


@pytest.mark.parametrize(
    "value",
    ["localhost:8786", "local:0", "local:1025", "local:x", "tcp://a b:1", "tcp://host/path", 8786, ["tcp://h:1"]],
)
def test_a_bad_scheduler_is_one_line_naming_the_setting(tmp_path, value):
    (tmp_path / "config.py").write_text(f"SCHEDULER = {value!r}\n")
    with pytest.raises(PrecisionToolError) as bad:
        load_config(environ={}, cwd=tmp_path)
    assert str(bad.value).startswith(f"{tmp_path / 'config.py'}: setting SCHEDULER: {value!r} is not a Dask")


def test_split_bytes_is_a_whole_number_of_bytes(tmp_path):
    environ = {"PRECISION_TOOL_SPLIT_BYTES": "268435456"}
    assert load_config(environ=environ, cwd=tmp_path).split_bytes == 1 << 28
    with pytest.raises(PrecisionToolError, match="setting SPLIT_BYTES: -1 is not a whole number >= 0"):
        load_config({"SPLIT_BYTES": -1}, environ={}, cwd=tmp_path)


# --- issue 25.7: a flag standing for a setting accepts what the setting accepts ------------------

# (setting, command, flag, the field the flag stands for): each flag and its setting
FLAGS = [
    ("COSINE_THRESHOLD", "vcs", "-c", "cosine"),
    ("COSINE_THRESHOLD", "report", "-c", "cosine"),
    ("RED_THRESHOLD", "vcs", "--red", "red"),
    ("VCS_LIMIT", "vcs", "-l", "limit"),
    ("VCS_LIMIT", "ac", "-l", "limit"),
    ("VCS_LIMIT", "why", "-l", "limit"),
]
VALUES = {
    "COSINE_THRESHOLD": ["0.5", "-1", "1", " 0.9 ", "1.5", "-1.01", "nan", "inf", "-inf", "abc", "1e999"],
    "RED_THRESHOLD": ["0", "0.3", "12", "inf", "-inf", "nan", "-0.1", "x", "1e999"],
    "VCS_LIMIT": ["0", "3", "+3", " 7 ", "-1", "1_000", "2.5", "1e3", "three", "inf"],
}
CASES = [
    pytest.param(setting, command, flag, dest, value, id=f"{command} {flag} {value!r}")
    for setting, command, flag, dest in FLAGS
    for value in VALUES[setting]
]


def _from_the_environment(setting: str, value: str, tmp_path):
    """What ``PRECISION_TOOL_<setting>=value`` gives, or the PrecisionToolError's text."""
    try:
        return getattr(load_config(environ={f"PRECISION_TOOL_{setting}": value}, cwd=tmp_path), setting.lower())
    except PrecisionToolError as bad:
        return ("refused", str(bad))


def _from_the_flag(command: str, flag: str, dest: str, value: str):
    """What the command's parser makes of ``flag value``, or the usage error's text."""
    import argparse

    from precision_tool.commands import build_registry
    from precision_tool.commands.registry import UsageError

    try:
        return getattr(build_registry().get(command).parser().parse_args([f"{flag}={value}"]), dest)
    except (UsageError, argparse.ArgumentError) as bad:  # the dispatcher shows either as one line
        return ("refused", str(bad))


@pytest.mark.parametrize("setting, command, flag, dest, value", CASES)
def test_a_flag_and_its_setting_accept_and_refuse_the_same_values(tmp_path, setting, command, flag, dest, value):
    configured = _from_the_environment(setting, value, tmp_path)
    given = _from_the_flag(command, flag, dest, value)
    if isinstance(configured, tuple) or isinstance(given, tuple):
        assert isinstance(configured, tuple) and isinstance(given, tuple), (configured, given)
        # the flag says what the setting says it wants, after "is not"
        assert configured[1].split(" is not ", 1)[1].startswith(given[1].split(" is not ", 1)[1]), (configured, given)
    else:
        assert configured == given


def test_an_infinite_red_is_refused_by_the_flag_and_the_setting_alike(tmp_path):
    assert _from_the_flag("vcs", "--red", "red", "inf") == ("refused", "argument --red: 'inf' is not a finite number")
    with pytest.raises(PrecisionToolError, match="setting RED_THRESHOLD: 'inf' is not a finite number"):
        load_config(environ={"PRECISION_TOOL_RED_THRESHOLD": "inf"}, cwd=tmp_path)
    (tmp_path / "config.py").write_text("RED_THRESHOLD = 1e999\n")
    with pytest.raises(PrecisionToolError, match="setting RED_THRESHOLD: inf is not a finite number"):
        load_config(environ={}, cwd=tmp_path)


def test_none_is_the_settings_alone(tmp_path):
    """RED_THRESHOLD = None means the RED that goes with the cosine; a flag leaves it out for that."""
    assert _from_the_environment("RED_THRESHOLD", "none", tmp_path) is None
    assert _from_the_flag("vcs", "--red", "red", "none") == ("refused", "argument --red: 'none' is not a number")
    assert _from_the_flag("vcs", "--red", "red", "-1") == ("refused", "argument --red: '-1' is not a number >= 0")


def test_the_real_binary_refuses_vcs_red_inf_in_one_line(tmp_path):
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(tmp_path), "vcs", "--red", "inf"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 2
    assert "argument --red: 'inf' is not a finite number" in done.stderr.splitlines()[0]
