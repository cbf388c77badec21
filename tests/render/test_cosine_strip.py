"""The cosine strip in ``vcs``: heights, colours, buckets and the first-introducer caret,
checked against a naive computation written here."""

from __future__ import annotations

import io
import math

from rich.console import Console

from precision_tool.compare.divergence import analyse
from precision_tool.compare.result import CompareRow
from precision_tool.render.cosine_strip import LEVELS, CosineStrip
from precision_tool.render.palette import swatch
from precision_tool.render.summary import render_summary
from precision_tool.render.theme import THEME
from tests.conftest import make_context, run_command

BLOCKS = "\u2581\u2582\u2583\u2584\u2585\u2586\u2587\u2588"


def chain(cosines: list[float], threshold: float = 0.98):
    """A chain of ops: op k reads op k-1's output (cosine of the previous op) and writes cosines[k]."""
    rows = []
    for k, cos in enumerate(cosines):
        name = f"net/op{k}"
        metrics = {} if math.isnan(cos) else {"CosineSimilarity": cos}
        if k:
            previous = cosines[k - 1]
            rows.append(
                CompareRow(
                    k,
                    "Add",
                    name,
                    "float16",
                    None,
                    name,
                    "float32",
                    f"{name}:input:0",
                    (4,),
                    {} if math.isnan(previous) else {"CosineSimilarity": previous},
                )
            )
        rows.append(CompareRow(k, "Add", name, "float16", None, name, "float32", f"{name}:output:0", (4,), metrics))
    return analyse(rows, threshold)


def styles(text) -> list[str]:
    """The style of each character of a rich Text."""
    out = [""] * len(text.plain)
    for span in text.spans:
        for i in range(span.start, span.end):
            out[i] = str(span.style)
    return out


def test_one_character_per_op_with_heights_and_colours_from_a_naive_scale():
    cosines = [1.0, 0.999, 0.99, 0.5, 0.7, 0.9, 0.981, 1.0]
    text, marked = CosineStrip(chain(cosines)).strip(80)
    low = min(cosines + [0.98])
    expected = [BLOCKS[max(0, min(7, round((c - low) / (1 - low) * 7)))] for c in cosines]
    assert text.plain == "".join(expected)
    # the first at or below 0.98 introduces, the next two inherit; below 1 but above 0.98 is far
    # beyond float16 rounding (RED 0.045 at 0.999), so near; 1.0 is clean
    states = ["clean", "near", "near", "introduces", "inherits", "inherits", "near", "clean"]
    assert styles(text) == [swatch(s).style for s in states]
    assert marked == 3  # op3 is the first whose input is fine and output is not
    assert LEVELS == BLOCKS


def test_buckets_keep_the_lowest_cosine_so_one_bad_op_among_a_thousand_shows():
    cosines = [1.0] * 1000
    cosines[600] = 0.2
    text, marked = CosineStrip(chain(cosines)).strip(50)
    assert len(text.plain) == 50
    bad = [i for i, s in enumerate(styles(text)) if s == swatch("introduces").style]
    assert bad == [600 * 50 // 1000] == [marked]
    assert text.plain[marked] == BLOCKS[0]
    assert set(text.plain) == {BLOCKS[0], BLOCKS[7]}


def test_an_all_nan_bucket_is_a_question_mark_and_never_flags():
    text, marked = CosineStrip(chain([1.0, math.nan, 1.0])).strip(10)
    assert text.plain == BLOCKS[7] + "?" + BLOCKS[7]
    assert styles(text)[1] == swatch("not compared").style
    assert marked is None


def render(renderable, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, theme=THEME, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_the_caret_sits_under_the_first_introducer_inside_the_vcs_panel():
    divergence = chain([1.0] * 20 + [0.3] + [0.5] * 9)
    lines = render(render_summary("r.csv", divergence, 3), 100).splitlines()
    strip_line = next(line for line in lines if "cosine " in line and BLOCKS[0] in line)
    caret_line = next(line for line in lines if "^ first introducer" in line)
    assert caret_line.index("^") == strip_line.index(BLOCKS[0])
    assert "net/op20 (Index 20)" in caret_line
    assert "30 ops, 0.30..1, threshold 0.98" in strip_line


def test_a_narrow_console_drops_the_legend_before_the_strip_and_stays_one_line():
    divergence = chain([1.0] * 200 + [0.1] + [1.0] * 99)
    out = render(CosineStrip(divergence), 40)
    first, second = out.splitlines()[:2]
    assert len(first) <= 40 and "threshold" not in first
    assert second.index("^") == first.index(BLOCKS[0])


def test_vcs_on_the_sample_shows_the_strip_with_the_conv2_caret(sample_data):
    context, out = make_context(sample_data)
    run_command(context, "vc")
    out.truncate(0)
    run_command(context, "vcs")
    text = out.getvalue()
    assert "^ first introducer: resnet/conv2/Conv2D (Index 13)" in text
    assert "15 ops, 0.36..1, threshold 0.98" in text
