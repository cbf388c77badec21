"""explore.json and the address that opens Model Explorer at the focus op: the web app's ``data``
parameter decoded by hand (the standard library's URL parser, as URLSearchParams reads it), hostile
names kept exactly, and every bad file the one-line error."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precision_tool.errors import PrecisionToolError
from precision_tool.model_explorer.launch import Launch, read_launch
from tests.report.synthetic import HOSTILE_NAMES


def decoded(url: str) -> dict:
    query = urllib.parse.urlsplit(url).query
    (value,) = urllib.parse.parse_qs(query, strict_parsing=True)["data"]
    return json.loads(value)


def launch(focus: str = "resnet/conv2/Conv2D") -> Launch:
    return Launch(
        Path("/d/graph/ge_proto_00000001_Build.txt"),
        (Path("/o/CosineSimilarity.json"), Path("/o/verdict.json")),
        "g1",
        focus,
        ("resnet___group___", "resnet/conv2___group___"),
        "introduces",
        Path("/o/r.csv"),
    )


def test_the_address_selects_the_focus_and_shows_the_verdict_last():
    data = decoded(launch().url("127.0.0.1", 8081))
    assert data == {
        "models": [{"url": "/d/graph/ge_proto_00000001_Build.txt", "adapterId": "precision_tool_ge_graph"}],
        "nodeData": ["/o/CosineSimilarity.json", "/o/verdict.json"],
        "nodeDataTargets": ["", ""],
        "uiState": {
            "paneStates": [
                {
                    "deepestExpandedGroupNodeIds": ["resnet___group___", "resnet/conv2___group___"],
                    "selectedNodeId": "resnet/conv2/Conv2D",
                    "selectedGraphId": "g1",
                    "selectedCollectionLabel": "",
                    "widthFraction": 1,
                }
            ]
        },
    }
    assert launch().url("127.0.0.1", 8081).startswith("http://127.0.0.1:8081/?data=%7B")
    assert launch().url("::1", 8081).startswith("http://[::1]:8081/?data=")


def test_the_address_has_no_character_a_terminal_or_url_would_misread():
    url = launch().url("127.0.0.1", 8081)
    assert all(c.isalnum() or c in "%/:,?=._-" for c in url), url


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.sampled_from(HOSTILE_NAMES), st.text(min_size=1, max_size=40)))
def test_any_name_comes_back_exactly(name):
    url = launch(name).url("localhost", 8080)
    assert all(ord(c) < 128 and c.isprintable() and c not in " \"'<>&#+" for c in url)
    assert decoded(url)["uiState"]["paneStates"][0]["selectedNodeId"] == name


def test_explore_json_round_trips(tmp_path):
    path = tmp_path / "explore.json"
    path.write_text(launch("a\u202eb\n").to_json(), encoding="utf-8")
    assert read_launch(path) == launch("a\u202eb\n")


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{", r"not JSON: .* at line 1"),
        ("[]", "not a JSON object"),
        ('{"node_data": []}', "'graph' is missing"),
        ('{"graph": 3}', "'graph' is not a string"),
        ('{"graph": "g", "node_data": "a.json"}', "'node_data' is not a list of strings"),
        ('{"graph": "g", "expanded": [1]}', "'expanded' is not a list of strings"),
        (b"\xff\xfe{", "not UTF-8"),
    ],
)
def test_a_bad_explore_json_is_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "explore.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(PrecisionToolError, match=problem) as caught:
        read_launch(path)
    assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_a_missing_explore_json_or_a_directory_is_one_line(tmp_path):
    for path in (tmp_path / "explore.json", tmp_path):
        with pytest.raises(PrecisionToolError) as caught:
            read_launch(path)
        assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)
