"""The documented invocation end to end: the real ``model-explorer`` command with
``--extensions=precision_tool.model_explorer`` and the report's ``--node_data_paths``, asked
through its HTTP API on 127.0.0.1 what the web app would ask (no browser, nothing else)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from precision_tool.render.palette import swatch
from tests.conftest import REPO_ROOT, make_context, run_command
from tests.model_explorer.explorer import require_explorer

STARTUP = 90.0  # seconds: the server imports flask and ipython on 2 shared cores
INTRODUCER_FILL = swatch("introduces").colour  # conv2 introduces the error in the sample


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(base: str, path: str) -> dict:
    with urllib.request.urlopen(base + path, timeout=30) as answer:
        return json.load(answer)


def post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.load(answer)


@pytest.fixture
def server(sample_data):
    require_explorer()
    executable = shutil.which("model-explorer")
    assert executable, "ai-edge-model-explorer installs the model-explorer command"
    context, out = make_context(sample_data)
    run_command(context, "vc")
    run_command(context, "report --model-explorer")
    line = next(l for l in out.getvalue().splitlines() if l.startswith("model explorer: "))
    words = shlex.split(line.removeprefix("model explorer: "))
    assert words[0] == "model-explorer" and words[2] == "--extensions=precision_tool.model_explorer"
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([executable, *words[1:], "--no_open_in_browser", "--host=127.0.0.1",
                                f"--port={port}", "--skip_health_check"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                get(base, "/api/v1/get_extensions")
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("model-explorer did not start: " + (process.stdout.read() or ""))
                time.sleep(0.3)
        yield base, words
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def test_model_explorer_shows_the_build_graph_and_reads_the_node_data(server):
    base, words = server
    graph_file = words[1]
    extensions = get(base, "/api/v1/get_extensions")
    ours = next(e for e in extensions if e["id"] == "precision_tool_ge_graph")
    assert ours["fileExts"] == ["txt", "json"]
    answer = post(base, "/apipost/v1/send_command", {
        "extensionId": "precision_tool_ge_graph", "cmdId": "convert", "modelPath": graph_file,
        "settings": {}, "deleteAfterConversion": False})
    (graph,) = answer["graphs"]
    ids = {node["id"] for node in graph["nodes"]}
    assert len(ids) == 28 and "resnet/conv2/Conv2D" in ids
    paths = words[3].removeprefix("--node_data_paths=").split(",")
    cosine = get(base, "/api/v1/read_text_file?path=" + urllib.parse.quote(paths[0]))
    data = json.loads(cosine["content"])
    results = data[graph["id"]]["results"]
    assert set(results) <= ids and results["resnet/conv2/Conv2D"] == {"value": 0.363075, "bgColor": INTRODUCER_FILL}
    assert paths[-1].endswith("verdict.json")  # the last one added is the one shown first
    verdict = json.loads(get(base, "/api/v1/read_text_file?path=" + urllib.parse.quote(paths[-1]))["content"])
    assert verdict[graph["id"]]["results"]["resnet/conv2/Conv2D"] == {"value": "\u25b2 introduces",
                                                                     "bgColor": INTRODUCER_FILL}


def test_a_broken_graph_comes_back_as_the_one_line_error(server, tmp_path):
    base, _ = server
    broken = tmp_path / "ge_proto_00000009_Build.txt"
    broken.write_text("graph { op { name: \n", encoding="utf-8")
    answer = post(base, "/apipost/v1/send_command", {
        "extensionId": "precision_tool_ge_graph", "cmdId": "convert", "modelPath": str(broken),
        "settings": {}, "deleteAfterConversion": False})
    assert answer["error"].startswith(f"PrecisionToolError: {broken}: ")
