"""Issue 11.7: names read from the data never reach the terminal as something it would obey.

A dump tree whose op names, dump file names and attribute values hold ESC sequences (retitle
the window, clear the screen), C0 and C1 controls and Unicode bidi overrides goes through the
real ``precision-tool`` (``ls``, ``ni``, ``vc``, ``vcs``, ``ac``), piped (plain text) and with
colours forced (rich's styles): apart from the colour codes rich writes itself, no control
character and no bidi control is in the output, and each hostile name is shown escaped.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from tests.netdata import NetOp, write_net

HOSTILE = (
    "net/\x1b]0;pwned\x07/retitle",
    "net/\x1b[2J\x1b[3J/clear",
    "net/\x9b6n/c1csi",
    "net/evil\u202etxt.exe/bidi",
    "net/\u2066iso\u2069/isolate",
    "net/back\x08space\rcr/ctl",
    "net/new\nline/nl",
)
SHOWN = (
    "net/\\x1b]0;pwned\\x07/retitle",
    "net/\\x1b[2J\\x1b[3J/clear",
    "net/\\x9b6n/c1csi",
    "net/evil\\u202etxt.exe/bidi",
    "net/\\u2066iso\\u2069/isolate",
    "net/back\\x08space\\rcr/ctl",
    "net/new\\nline/nl",
)
EVIL_ATTR = "\x1b]2;owned\x07\u202e"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # the colour codes rich writes itself
FORBIDDEN = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture(scope="module")
def hostile_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile") / "precision_data"
    ops = [
        NetOp(name, "Relu", tf_name=f"net/op{k}", broken=(k == 2), attrs={"evil_attr": EVIL_ATTR})
        for k, name in enumerate(HOSTILE)
    ]
    write_net(root, ops)
    done = _tool(root, "vc", colour=False)
    assert done.returncode == 1, done.stdout + done.stderr
    return root


def _tool(root, *args, colour: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECISION_TOOL_")}
    env.pop("FORCE_COLOR", None)
    env.update(PYTHONPATH=str(REPO_ROOT), COLUMNS="100")
    if colour:
        env["FORCE_COLOR"] = "1"  # rich then writes styles as it does on a terminal
    return subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=root.parent,
    )


def _assert_clean(output: str, colour: bool) -> None:
    if colour:
        assert SGR.search(output), "colours were not forced: the test would not see rich's styles"
        output = SGR.sub("", output)
    raw = sorted({repr(c) for c in FORBIDDEN.findall(output)})
    assert not raw, f"raw control characters {raw} in:\n{output}"


COMMANDS = [
    ("ls",),
    ("ls", "-n", "net"),
    ("ni", "retitle", "-a", "-s", "1"),
    ("ni", "clear"),
    ("ni", "c1csi"),
    ("ni", "bidi", "-s", "2"),
    ("ni", "isolate"),
    ("ni", "space"),
    ("ni", "line"),
    ("vcs", "-l", "0"),
    ("ac",),
]


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "rich"])
@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_no_raw_control_character_reaches_the_output(hostile_root, args, colour):
    done = _tool(hostile_root, *args, colour=colour)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    _assert_clean(done.stdout + done.stderr, colour)


def test_every_hostile_name_is_shown_escaped(hostile_root):
    listing = _tool(hostile_root, "ls", "-n", "net", colour=False).stdout
    for shown in SHOWN:
        assert shown in listing, (shown, listing)
    summary = _tool(hostile_root, "vcs", "-l", "0", colour=False).stdout
    assert SHOWN[2] in summary and "introduces the error" in summary
    info = _tool(hostile_root, "ni", "retitle", "-a", colour=False).stdout
    assert SHOWN[0] in info and "\\x1b]2;owned\\x07\\u202e" in info


def test_an_error_naming_a_hostile_name_is_escaped(hostile_root):
    done = _tool(hostile_root, "ni", "net", colour=True)  # ambiguous: the error lists the names
    assert done.returncode == 2
    _assert_clean(done.stdout + done.stderr, True)
    assert SHOWN[1] in done.stderr


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "rich"])
@pytest.mark.parametrize("command", ["pt", "cp", "dc"])
def test_tensor_commands_on_a_hostile_dump_file_print_it_escaped(hostile_root, command, colour):
    dump = next(p for p in (hostile_root / "npu").rglob("*") if p.is_file() and "pwned" in p.name)
    args = {"pt": ("pt", str(dump)), "cp": ("cp", str(dump), "tf:net_op0.0"), "dc": ("dc", str(dump))}[command]
    done = _tool(hostile_root, *args, colour=colour)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    _assert_clean(done.stdout + done.stderr, colour)
    # pt and cp name the dump file as it is (escaped); dc names the files it wrote (sanitised)
    assert ("\\x1b]0;pwned\\x07" if command != "dc" else "net___0_pwned__retitle") in done.stdout
