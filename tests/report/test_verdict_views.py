"""Issue 21, one verdict everywhere: what the report and the Model Explorer node data show of
each op is what ``vcs --json`` says, for the shipped sample and every defect kind of
``precision_tool.sample``.

Each case is one sample data root, compared by ``vc`` and read twice through the real command
registry, each time in a session of its own (so the report cannot borrow ``vcs``' remembered
verdict): ``vcs --json``, then ``report --model-explorer``. The page's flagged ops, their states
in the table, the curve and the subgraph, the counts of its summary, its headline, and the node
data's verdict overlay must all equal the JSON's; an op the JSON does not flag nor call near is
clean or not compared wherever it is shown.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest

from precision_tool.compare.verdict import CLEAN, INTRODUCES, NEAR, NOT_COMPARED
from precision_tool.render.palette import css_class, marked, swatch
from precision_tool.sample import write_sample
from precision_tool.sample.defects import DEFECTS
from precision_tool.status import ExitStatus
from tests.conftest import REPO_ROOT, make_context, run_command
from tests.report.synthetic import write_chain
from tests.report.test_page import Page, lead_order, op_names, page_data, positions

KINDS = ("shipped", *sorted(DEFECTS))
QUIET = (CLEAN, NOT_COMPARED)  # what an op neither flagged nor near may be shown as


@dataclass
class Shown:
    """What one result's report and node data show, read back from the files."""

    vcs: dict  # the result's object of ``vcs --json``
    html: str
    page: Page
    node_data: dict[str, dict]  # file stem -> the graph's GraphNodeData object

    @property
    def table(self) -> list[tuple[str, str]]:
        """(op name, state) of each op of the flagged table, in execution order (the table
        leads with the introducers; :func:`lead_order`)."""
        data = page_data(self.page)
        names, states = op_names(data), self.states
        return [(names[p], states[p]) for p in sorted(lead_order(data))]

    @property
    def states(self) -> dict[int, str]:
        """Position -> the state the page's script shows."""
        data = page_data(self.page)
        return {p: data["states"][code] for p, code in zip(positions(data), data["state"])}

    @property
    def names(self) -> dict[int, str]:
        """Position in the page's data -> op name."""
        return op_names(page_data(self.page))

    @property
    def script_states(self) -> dict[str, str]:
        """Op name -> the verdict the page's script shows on hover (marker and state)."""
        data = page_data(self.page)
        names = op_names(data)
        return {names[p]: data["marked"][code] for p, code in zip(positions(data), data["state"])}

    def marks(self) -> list[tuple[str, str, str, str]]:
        """(op name, data-state, class, tag) of every mark of the curve."""
        names = self.names
        return [
            (names[int(a["data-pos"])], a["data-state"], a["class"], tag)
            for tag, a in self.page.tags
            if tag in ("circle", "path") and "pt" in a.get("class", "").split()
        ]

    def graph_nodes(self) -> dict[str, str]:
        """Op name -> data-state of each op drawn in the subgraph."""
        return {unescape(a["data-op"]): a["data-state"] for tag, a in self.page.tags if tag == "g" and "data-op" in a}

    def summary(self, label: str) -> str:
        found = re.search(rf"<dt>{label}</dt><dd>(.*?)</dd>", self.html)
        assert found, label
        return unescape(re.sub(r"<[^>]+>", "", found.group(1)))


def vcs_json(root: Path) -> dict:
    context, buffer = make_context(root)
    assert run_command(context, "vcs --json") in (ExitStatus.OK, ExitStatus.FLAGGED)
    (result,) = json.loads(buffer.getvalue())["results"]
    return result


def report(root: Path, out: Path) -> Shown:
    context, buffer = make_context(root)
    assert run_command(context, f"report --model-explorer -o {out}") == ExitStatus.OK, buffer.getvalue()
    html = (out / "index.html").read_text(encoding="utf-8")
    (directory,) = (out / "model_explorer").iterdir()
    node_data = {}
    opened = json.loads((directory / "explore.json").read_text(encoding="utf-8"))["node_data"]
    for path in map(Path, opened):  # what Model Explorer opens: the verdict first
        (graph,) = json.loads(path.read_text(encoding="utf-8")).values()
        node_data[path.stem] = graph
    return Shown(vcs_json(root), html, Page(html), node_data)


@pytest.fixture(scope="module", params=KINDS)
def shown(request, tmp_path_factory) -> Shown:
    kind = request.param
    root = write_sample(tmp_path_factory.mktemp(kind) / "precision_data", defect=None if kind == "shipped" else kind)
    context, buffer = make_context(root)
    assert run_command(context, "vc") in (ExitStatus.OK, ExitStatus.FLAGGED), buffer.getvalue()
    return report(root, root.parent / "report")


def _states(result: dict) -> dict[str, str]:
    return {op["op"]: op["state"] for op in result["flagged"]}


def test_the_table_lists_the_flagged_ops_in_their_states(shown):
    assert shown.table == [(op["op"], op["state"]) for op in shown.vcs["flagged"]]


def test_every_mark_of_the_curve_is_in_its_verdicts_state(shown):
    flagged, near = _states(shown.vcs), set(shown.vcs["near"])
    marks = shown.marks()
    assert {name for name, _, _, _ in marks} >= set(flagged)
    for name, state, css, tag in marks:
        want = flagged.get(name) or (NEAR if name in near else None)
        assert state == want if want else state in QUIET, (name, state)
        assert css_class(state) in css.split(), (name, css)
        if state in (INTRODUCES, NEAR) or "nan" in css.split():  # the shape is the second cue
            assert tag == "path", (name, state)
        else:
            assert tag == "circle", (name, state)
    script = shown.script_states
    for name, state in flagged.items():
        assert script[name] == marked(state)


def test_the_subgraph_fills_each_op_by_its_verdict(shown):
    flagged, near = _states(shown.vcs), set(shown.vcs["near"])
    nodes = shown.graph_nodes()
    first = shown.vcs["first_introducer"] or (shown.vcs["flagged"] or [None])[0]
    assert (first is None) == (not nodes)
    if first is not None:
        assert nodes[first["op"]] == first["state"]
    for name, state in nodes.items():
        want = flagged.get(name) or (NEAR if name in near else None)
        assert state == want if want else state in QUIET, (name, state)


def test_the_headline_and_the_counts_are_vcs_s(shown):
    result = shown.vcs
    first = result["first_introducer"]
    line = unescape(re.sub(r"<[^>]+>", "", re.search(r'<p class="verdict-line[^"]*">(.*?)</p>', shown.html).group(1)))
    if first is not None:
        assert line.startswith(
            f"first operator that introduces the error: {first['op']} ({first['type']}), Index {first['index']}, "
        )
        evidence = (
            f"replay of {first['replay']['replayed']}: "
            if first["decided_by"] == "replay"
            else "no replay: decided by its inputs"
        )
        assert evidence in line
    elif result["flagged"]:
        assert "none found" in line and result["flagged"][0]["op"] in line
    introduce = sum(op["state"] == INTRODUCES for op in result["flagged"])
    assert shown.summary("flagged").startswith(f"{len(result['flagged'])} of {result['ops_compared']} ops are flagged")
    assert f": {introduce} introduce(s) the error, {len(result['flagged']) - introduce} inherit(s) it" in shown.summary(
        "flagged"
    )
    assert shown.summary("non-finite").startswith(f"{len(result['nonfinite'])} op(s) with a NaN/Inf NPU output")
    assert shown.summary("near").startswith(f"{len(result['near'])} op(s) beyond rounding")
    assert shown.summary("not judged").startswith(f"{len(result['unjudged'])} op(s) with a NaN output cosine")


def test_model_explorers_verdict_overlay_is_vcs_s(shown):
    flagged, near = _states(shown.vcs), set(shown.vcs["near"])
    verdict = shown.node_data["verdict"]
    assert verdict["showExpandedSummaryOnGroupNode"] is True  # each layer's share per state
    by_value = {marked(state): state for state in (*flagged.values(), NEAR, *QUIET)}
    states = {name: by_value[result["value"]] for name, result in verdict["results"].items()}
    assert set(states) >= set(flagged)
    for name, state in states.items():
        want = flagged.get(name) or (NEAR if name in near else None)
        assert state == want if want else state in QUIET, (name, state)
    for stem, graph in shown.node_data.items():  # every overlay coloured by the verdict
        assert "thresholds" not in graph, stem
        for name, result in graph["results"].items():
            assert result["bgColor"] == swatch(states[name]).colour, (stem, name)


def test_the_page_takes_its_colours_from_the_palette_only(shown):
    style = shown.html[shown.html.index("<style>") : shown.html.index("</style>")]
    assert f"--introduces: {swatch(INTRODUCES).colour}" in style
    css = (REPO_ROOT / "precision_tool/report/assets/report.css").read_text(encoding="utf-8")
    for look in map(swatch, (INTRODUCES, NEAR, CLEAN)):
        assert look.colour.lower() not in css.lower()
    legends = [m for m in re.findall(r'<p class="legend">(.*?)</p>', shown.html)]
    assert legends and all(swatch(INTRODUCES).label in legend for legend in legends)


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> Shown:
    """A synthetic chain with ops of cosine 0.99 (healthy-looking, beyond float16 rounding) and
    ops of cosine 1 - 1e-6 (within rounding), a NaN op and a drop."""
    root = tmp_path_factory.mktemp("chain") / "precision_data"
    write_chain(root, 40, 30, nan_at=(12,), near_at=(5, 20))
    return report(root, root.parent / "report")


def test_near_means_beyond_rounding_not_a_cosine_band(chain):
    assert chain.vcs["near"] == ["net/block0/op5", "net/block2/op20"]
    states = {name: state for name, state, _, _ in chain.marks()}
    assert states["net/block0/op5"] == states["net/block2/op20"] == NEAR
    assert {states[f"net/block0/op{k}"] for k in (1, 2, 3, 4, 6, 7)} == {CLEAN}
    assert chain.summary("near").startswith("2 op(s) beyond rounding but not flagged: net/block0/op5")
    assert chain.summary("not judged").startswith("1 op(s) with a NaN output cosine, not judged: net/block1/op12")
    assert chain.node_data["verdict"]["results"]["net/block0/op5"]["value"] == marked(NEAR)


def test_the_scale_headline_says_what_flagged_it_and_why(tmp_path):
    """Through the command line, as the issue shows it: ``ac -c`` on the scale defect."""
    root = write_sample(tmp_path / "precision_data", defect="scale")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HOME": str(tmp_path)}
    env.pop("PRECISION_TOOL_CONFIG", None)
    done = subprocess.run(
        [sys.executable, "-m", "precision_tool", "--data", str(root), "ac", "-c"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == ExitStatus.FLAGGED, done.stderr
    page = Path(re.search(r"report: (\S+index\.html)", done.stdout).group(1)).read_text(encoding="utf-8")
    line = re.search(r'<p class="verdict-line[^"]*">(.*?)</p>', page).group(1)
    text = unescape(re.sub(r"<[^>]+>", "", line))
    assert text.startswith("first operator that introduces the error: resnet/pool/MaxPool (MaxPool), Index 16, ")
    assert "\u25b2 cosine 1.000000 -> 1.000000, RED 0.5;" in text  # what flagged it: the RED
    assert re.search(r"; replay of MaxPool: local RED 0\.5 > rounding 0\.000\d+;", text)
    assert "; cause: scale: npu ~ 0.4999 * golden" in text
    assert f'<span class="{css_class(INTRODUCES)}">\u25b2 cosine' in line  # in the verdict's colour
