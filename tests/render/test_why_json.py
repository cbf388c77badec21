"""Explanations as strict JSON and as text: NaN never reaches JSON, names are escaped, and the
JSON block is never wrapped whatever the console width."""

from __future__ import annotations

import io
import json
import math

import numpy as np

from precision_tool.compare.pair_stats import compare
from precision_tool.explain.causes import Cause, ReplayCheck
from precision_tool.explain.diagnosis import Explanation
from precision_tool.render.json_out import dumps
from precision_tool.render.json_out import plain as clean
from precision_tool.render.lines import RawLines
from precision_tool.render.theme import make_console
from precision_tool.render.why import render_why, why_panel
from precision_tool.render.why_json import to_json_data


def _explanation(name="a/b", evidence="it differs"):
    golden = np.array([1.0, 2.0, 3.0])
    stats = compare(np.array([1.0, np.nan, 3.0]), golden)
    cause = Cause(
        "nan",
        evidence,
        {"count": np.int64(1), "first_index": [1], "golden_value": np.float64(2.0), "ratio": math.inf},
        1.0,
    )
    replay = ReplayCheck(True, "replayed Relu", ("epsilon assumed",), compare(golden, golden), compare(golden, golden))
    return Explanation(name, "Relu", 0, (cause,), replay, stats, "Relu.a_b.1.0.2")


def _text(renderable, width=60):
    buffer = io.StringIO()
    console = make_console(file=buffer, width=width)
    for item in renderable if isinstance(renderable, list) else [renderable]:
        console.print(item, crop=False)
    return buffer.getvalue()


def test_clean_makes_strict_json():
    data = clean({"a": np.float32(1.5), "b": [math.nan, (1, np.int64(2))], "c": -math.inf})
    assert data == {"a": 1.5, "b": [None, [1, 2]], "c": None}
    json.dumps(data, allow_nan=False)


def test_json_data_has_the_readme_schema():
    (entry,) = to_json_data([_explanation()])
    assert entry["op"] == "a/b" and entry["type"] == "Relu" and entry["cause"] == "nan"
    assert entry["causes"] == [
        {
            "cause": "nan",
            "evidence": "it differs",
            "score": 1.0,
            "numbers": {"count": 1, "first_index": [1], "golden_value": 2.0, "ratio": None},
        }
    ]
    assert entry["replay"] == {
        "supported": True,
        "detail": "replayed Relu",
        "notes": ["epsilon assumed"],
        "npu_vs_replay_cosine": 1.0,
        "npu_vs_replay_red": 0.0,
        "golden_vs_replay_cosine": 1.0,
    }
    assert entry["cosine"] == 1.0  # over the finite pairs; the NaN is counted in the cause


def test_json_block_is_never_wrapped():
    long = "x" * 300
    block = RawLines(dumps(to_json_data([_explanation(name=long)])))
    text = _text(block, width=40)
    assert json.loads(text) == json.loads(str(block))
    assert any(len(line) > 300 for line in text.splitlines())


def test_names_and_evidence_are_escaped_in_text():
    text = _text(render_why([_explanation(name="a\nb[red]", evidence="bad\x1b[31m")]), width=120)
    assert "a\\nb[red]" in text and "bad\\x1b[31m" in text and "\x1b" not in text


def test_text_shows_cause_replay_and_notes():
    text = _text(render_why([_explanation()]), width=120)
    assert "cause: nan" in text and "1. nan (explains 100%)  it differs" in text
    assert "replay: replayed Relu: NPU vs replay cosine 1.000000, golden vs replay cosine 1.000000" in text
    assert "note: epsilon assumed" in text and "1 non-finite mismatch(es)" in text


def test_nothing_to_explain_is_one_line():
    assert _text(render_why([])).strip() == "why: no operator introduces error in the newest result"
    assert _text(why_panel([])).strip() == "why: no operator introduces error in the newest result"
