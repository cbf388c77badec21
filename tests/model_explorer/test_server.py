"""The command ``report --model-explorer`` prints, run as printed: the real Model Explorer server
with this project's extension on the report's ``explore.json``, asked through its HTTP API on
127.0.0.1 what the web app would ask (no browser, nothing else)."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from precision_tool.render.palette import swatch
from tests.conftest import make_context, run_command
from tests.model_explorer.explorer import serving

INTRODUCER_FILL = swatch("introduces").colour  # conv2 introduces the error in the sample


def get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.load(answer)


def post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The sample compared and reported, and the server its printed command starts."""
    import shutil

    from tests.conftest import REPO_ROOT

    root = tmp_path_factory.mktemp("sample") / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", root, ignore=shutil.ignore_patterns("temp"))
    context, out = make_context(root, width=10_000)
    run_command(context, "vc")
    run_command(context, "report --model-explorer")
    line = next(text for text in out.getvalue().splitlines() if text.startswith("model explorer: "))
    command = line.removeprefix("model explorer: ")
    assert command.startswith("python3 -m precision_tool.model_explorer.serve ") and len(command) < 250
    launch = json.loads(open(command.split()[-1], encoding="utf-8").read())
    with serving(command) as base:
        yield base, launch


def test_model_explorer_shows_the_build_graph_and_reads_the_node_data(server):
    base, launch = server
    graph_file = launch["graph"]
    extensions = get(base, "/api/v1/get_extensions")
    ours = next(e for e in extensions if e["id"] == "precision_tool_ge_graph")
    assert ours["fileExts"] == ["txt", "json"]
    answer = post(
        base,
        "/apipost/v1/send_command",
        {
            "extensionId": "precision_tool_ge_graph",
            "cmdId": "convert",
            "modelPath": graph_file,
            "settings": {},
            "deleteAfterConversion": False,
        },
    )
    (graph,) = answer["graphs"]
    ids = {node["id"] for node in graph["nodes"]}
    assert len(ids) == 28 and "resnet/conv2/Conv2D" in ids
    assert launch["graph_id"] == graph["id"] and launch["focus"] == "resnet/conv2/Conv2D"
    paths = launch["node_data"]
    assert paths[-1].endswith("CosineSimilarity.json")  # the last one added is the one shown
    cosine = get(base, "/api/v1/read_text_file?path=" + urllib.parse.quote(paths[-1]))
    data = json.loads(cosine["content"])
    results = data[graph["id"]]["results"]
    assert set(results) <= ids and results["resnet/conv2/Conv2D"] == {"value": 0.363075, "bgColor": INTRODUCER_FILL}
    assert paths[0].endswith("verdict.json")  # listed first, as explore lists it
    verdict = json.loads(get(base, "/api/v1/read_text_file?path=" + urllib.parse.quote(paths[0]))["content"])
    assert verdict[graph["id"]]["results"]["resnet/conv2/Conv2D"] == {
        "value": "\u25b2 introduces",
        "bgColor": INTRODUCER_FILL,
    }


def test_a_broken_graph_comes_back_as_the_one_line_error(server, tmp_path):
    base, _ = server
    broken = tmp_path / "ge_proto_00000009_Build.txt"
    broken.write_text("graph { op { name: \n", encoding="utf-8")
    answer = post(
        base,
        "/apipost/v1/send_command",
        {
            "extensionId": "precision_tool_ge_graph",
            "cmdId": "convert",
            "modelPath": str(broken),
            "settings": {},
            "deleteAfterConversion": False,
        },
    )
    assert answer["error"].startswith(f"PrecisionToolError: {broken}: ")
