"""``explore`` end to end: the real command starts the real Model Explorer server on a free port;
the test asks that server (over HTTP, as the web app does) for what the printed address names, and
checks it against the result CSV read by hand: the graph, the node data (the verdict first, the
cosine last: shown), the op it opens at, the layers the trans ops sit in. Bad input is one line, and no
server is left running."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from precision_tool.compare.result_csv import NUMERIC_METRICS
from tests.conftest import make_context, run_command
from tests.model_explorer.explorer import require_explorer
from tests.report.synthetic import HOSTILE_NAMES, csv_ops, write_chain

WIDE = 10_000  # the console is wide enough that no line wraps
REAPED = 60.0  # seconds a killed server may take to exit and be reaped on busy shared cores


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return answer.read()


def post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        base + path, data=json.dumps(body).encode("utf-8"), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.load(answer)


def stop(pid: int) -> None:
    """Stop the server explore started (this test's child) and reap it."""
    try:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


class Explored:
    """What one ``explore`` printed, and the server it started."""

    def __init__(self, context, out, status):
        self.context, self.status = context, status
        self.text = out.getvalue()
        self.lines = dict(line.split(": ", 1) for line in self.text.splitlines() if ": " in line)
        match = re.search(r"running as process (\d+); stop it with: kill \1", self.text)
        self.pid = int(match.group(1)) if match else None
        self.url = self.lines.get("model explorer")
        parts = urllib.parse.urlsplit(self.url or "")
        self.base = f"{parts.scheme}://{parts.netloc}"
        query = urllib.parse.parse_qs(parts.query)
        self.data = json.loads(query["data"][0]) if "data" in query else None


@pytest.fixture
def explore():
    require_explorer()
    started = []

    def run(data_root, words: str = "") -> Explored:
        context, out = make_context(data_root, width=WIDE)
        status = run_command(context, f"explore --no-browser --port {free_port()} {words}")
        done = Explored(context, out, status)
        if done.pid:
            started.append(done.pid)
        return done

    yield run
    for pid in started:
        stop(pid)


def first_introducer_from_csv(path) -> str:
    """By hand: the first op (in Index order) whose output cosine is <= 0.98 while every input
    it has is above it."""
    for (_, name), tensors in sorted(csv_ops(path).items()):
        out, inp = tensors["output"], tensors["input"]
        if out.get("CosineSimilarity", 1.0) <= 0.98 and inp.get("CosineSimilarity", 1.0) > 0.98:
            return name
    raise AssertionError("no introducer in the CSV")


def test_explore_serves_the_sample_at_its_first_introducer(sample_data, explore):
    context, _ = make_context(sample_data)
    assert run_command(context, "vc") == 1
    (csv_path,) = (sample_data / "temp" / "vector_compare").glob("*/*.csv")
    done = explore(sample_data)
    assert done.status == 0, done.text
    assert get(done.base + "/check_health") == b"model_explorer_ok"
    assert b"<html" in get(done.url).lower()  # the web app itself, at the printed address
    graph = sample_data / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt"
    assert done.data["models"] == [{"url": str(graph.resolve()), "adapterId": "precision_tool_ge_graph"}]
    focus = first_introducer_from_csv(csv_path)
    (pane,) = done.data["uiState"]["paneStates"]
    assert focus == "resnet/conv2/Conv2D" == pane["selectedNodeId"]
    assert pane["deepestExpandedGroupNodeIds"] == ["resnet___group___", "resnet/conv2___group___"]
    assert done.lines["opened at"] == "resnet/conv2/Conv2D  \u25b2 introduces"
    paths = done.data["nodeData"]
    others = [m for m in NUMERIC_METRICS if m != "CosineSimilarity"]
    assert [os.path.basename(p) for p in paths] == [
        "verdict.json",
        *[f"{m}.json" for m in others],
        "CosineSimilarity.json",
    ]  # the last one is shown
    again = done.lines["start it again"]
    assert len(again) < 200 and again.endswith("explore.json") and os.path.isfile(again.split()[-1])
    (converted,) = post(
        done.base,
        "/apipost/v1/send_command",
        {
            "extensionId": "precision_tool_ge_graph",
            "cmdId": "convert",
            "modelPath": str(graph),
            "settings": {},
            "deleteAfterConversion": False,
        },
    )["graphs"]
    assert pane["selectedGraphId"] == converted["id"]
    layers = {n["id"]: n["namespace"] for n in converted["nodes"]}
    assert layers["trans_TransData_1"] == "resnet/conv1" and layers[focus] == "resnet/conv2"
    check_node_data(done, paths, csv_path, set(layers))


def read_served(done: Explored, path: str) -> dict:
    answer = json.loads(get(done.base + "/api/v1/read_text_file?path=" + urllib.parse.quote(path)))
    return json.loads(answer["content"])


def check_node_data(done: Explored, paths: list[str], csv_path, node_ids: set[str]) -> None:
    """Each overlay, as the server hands it to the web app, against the CSV read by hand."""
    expected = {name: tensors["output"] for (_, name), tensors in csv_ops(csv_path).items()}
    for path in paths[1:]:
        (graph,) = read_served(done, path).values()
        metric = os.path.basename(path)[: -len(".json")]
        assert graph["hideAggregatedStats"] == ["sum", "avg"] and graph["hideInChildrenStatsTable"]
        assert set(graph["results"]) <= node_ids
        assert {n: r["value"] for n, r in graph["results"].items()} == {
            n: out[metric] for n, out in expected.items() if metric in out
        }
    (verdict,) = read_served(done, paths[0]).values()
    assert verdict["results"]["resnet/conv2/Conv2D"]["value"] == "\u25b2 introduces"
    assert verdict["hideInAggregatedStatsTable"] and verdict["showLabelCountColumnsInChildrenStatsTable"]


def test_hostile_names_are_escaped_on_screen_and_exact_in_the_address(data_root, explore):
    csv_path = write_chain(data_root, 40, 1, hostile=True)  # op 1, a hostile name, introduces
    done = explore(data_root, str(csv_path))
    assert done.status == 0, done.text
    (pane,) = done.data["uiState"]["paneStates"]
    assert pane["selectedNodeId"] == HOSTILE_NAMES[0] == first_introducer_from_csv(csv_path)
    assert "\x1b" not in done.text and "\u202e" not in done.text
    assert all(c.isprintable() and ord(c) < 128 for c in done.url)


def test_a_result_no_graph_holds_is_one_line_and_starts_nothing(data_root, explore):
    csv_path = write_chain(data_root, 10, 5)
    (data_root / "npu" / "debug_0" / "graph" / "ge_proto_00000001_Build.txt").unlink()
    done = explore(data_root)
    assert done.status == 2 and done.pid is None
    assert done.text.strip() == (
        f"error: {csv_path}: no Build graph (npu/*/graph) holds this result's ops: nothing to show"
    )


def test_an_unreadable_csv_and_a_taken_port_are_one_line(data_root, explore):
    bad = data_root / "broken.csv"
    bad.write_bytes(b"\x00\x01 not a csv")
    done = explore(data_root, str(bad))
    assert done.status == 2 and done.pid is None
    assert done.text.strip() == f"error: {bad}: not a comparison result: no Index column"
    write_chain(data_root, 10, 5)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        context, out = make_context(data_root, width=WIDE)
        assert run_command(context, f"explore --no-browser --port {port}") == 2
    assert out.getvalue().strip() == (
        f"error: explore: port {port} is in use on 127.0.0.1: give a free one with --port"
    )


def test_an_msprobe_result_opens_its_dump_json_with_only_the_metrics_it_computed(tmp_path, explore):
    from precision_tool.sample.msprobe import write_msprobe_sample

    root = tmp_path / "msprobe_data"
    write_msprobe_sample(root, "pytorch")
    context, _ = make_context(root)
    assert run_command(context, "vc") == 1
    (csv_path,) = (root / "temp" / "vector_compare").glob("*/result_*.csv")
    done = explore(root)
    assert done.status == 0, done.text
    (model,) = done.data["models"]
    assert model["url"].endswith("/npu/step0/rank0/dump.json")
    with open(csv_path, newline="", encoding="utf-8") as handle:  # by hand: the columns with a number
        rows = list(csv.DictReader(handle))
    computed = {m for m in NUMERIC_METRICS if any(r.get(m) not in (None, "", "NaN") for r in rows)}
    assert computed == {"CosineSimilarity", "RelativeEuclideanDistance", "MaxAbsoluteError"}
    names = [os.path.basename(p)[: -len(".json")] for p in done.data["nodeData"]]
    assert names[0] == "verdict" and set(names[1:]) == computed and names[-1] == "CosineSimilarity"
    (converted,) = post(
        done.base,
        "/apipost/v1/send_command",
        {
            "extensionId": "precision_tool_ge_graph",
            "cmdId": "convert",
            "modelPath": model["url"],
            "settings": {},
            "deleteAfterConversion": False,
        },
    )["graphs"]
    (pane,) = done.data["uiState"]["paneStates"]
    assert pane["selectedGraphId"] == converted["id"]
    assert list(read_served(done, done.data["nodeData"][0])) == [converted["id"]]  # overlaid
    focus = next(n for n in converted["nodes"] if n["id"] == pane["selectedNodeId"])
    layers = focus["namespace"].split("/")
    assert pane["deepestExpandedGroupNodeIds"] == [
        "/".join(layers[:k]) + "___group___" for k in range(1, len(layers) + 1)
    ]


def _state(pid: int) -> str | None:
    """The process state letter in /proc (``Z`` a zombie), None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_a_server_that_exits_under_the_shell_is_reaped_while_the_shell_runs(sample_data):
    """The shell started from a terminal, ``explore`` in it, the server killed: it does not stay
    a zombie of the shell (which runs for hours); the shell goes on answering."""
    require_explorer()
    context, _ = make_context(sample_data)
    assert run_command(context, "vc") == 1
    script = shutil.which("precision-tool")
    assert script, "the console script is missing: install the package (README test command)"
    env = {**os.environ, "HOME": str(sample_data.parent), "PYTHONUNBUFFERED": "1", "COLUMNS": str(WIDE)}
    shell = subprocess.Popen(
        [script, "--data", str(sample_data)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=sample_data.parent,
        env=env,
    )
    pid = None
    try:
        shell.stdin.write(f"explore --no-browser --port {free_port()}\n")
        shell.stdin.flush()
        for line in shell.stdout:  # until explore says which process it started
            match = re.search(r"running as process (\d+); stop it with: kill \1", line)
            if match:
                pid = int(match.group(1))
                break
        assert pid is not None, "explore printed no process"
        assert _state(pid) not in (None, "Z")
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + REAPED  # a bound to give up at, not a speed asserted
        while _state(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert shell.poll() is None  # the shell still runs
        assert _state(pid) is None, f"process {pid} is a zombie of the shell"
        shell.stdin.write("ls\nexit\n")
        shell.stdin.flush()
        rest = shell.stdout.read()
        assert shell.wait(timeout=120) == 0 and "Traceback" not in rest
    finally:
        if pid is not None and _state(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)
        if shell.poll() is None:
            shell.kill()
            shell.wait()
