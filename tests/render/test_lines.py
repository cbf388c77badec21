"""Error lines stay one line whatever the console width or the characters in them."""

from __future__ import annotations

import io

from precision_tool.render.lines import OneLine, one_line
from precision_tool.render.theme import make_console
from precision_tool.status import ExitStatus
from tests.conftest import make_context, run_command


def _printed(renderable, width: int = 30, terminal: bool = False) -> str:
    buffer = io.StringIO()
    make_console(file=buffer, width=width, force_terminal=terminal).print(renderable, crop=False)
    return buffer.getvalue()


def test_a_long_line_is_neither_wrapped_nor_cropped():
    text = "error: /data/" + "x" * 200 + ": header length 9 does not fit"
    assert _printed(OneLine(text)) == text + "\n"


def test_control_characters_are_escaped():
    assert one_line("a\nb\tc\x1b[31md\x7f") == "a\\nb\\tc\\x1b[31md\\x7f"
    assert _printed(OneLine("bad\nname")) == "bad\\nname\n"


def test_the_style_applies_on_a_terminal():
    printed = _printed(OneLine("error: x"), terminal=True)
    assert printed.startswith("\x1b[") and "error: x" in printed


def test_an_error_at_the_prompt_is_one_line_at_any_width(sample_data, tmp_path):
    context, out = make_context(sample_data, width=40)
    deep = tmp_path / ("d" * 120) / "file\nwith newline.npy"
    deep.parent.mkdir()
    deep.write_bytes(b"not an npy file")
    status = run_command(context, f"pt '{deep}'")
    lines = out.getvalue().splitlines()
    assert status == ExitStatus.ERROR and len(lines) == 1
    assert lines[0].startswith("error: ") and "file\\nwith newline.npy" in lines[0]


def test_styled_summary_line_is_not_wrapped():
    import io

    from rich.text import Text

    from precision_tool.render.lines import OneLineText
    from precision_tool.render.theme import make_console

    console = make_console(file=io.StringIO(), width=40)
    line = Text.assemble(("label", "title"), ": a summary longer than forty columns -> ", ("/a/b/result.csv", "path"))
    console.print(OneLineText(line), crop=False)  # as the shell prints results
    assert console.file.getvalue() == "label: a summary longer than forty columns -> /a/b/result.csv\n"
