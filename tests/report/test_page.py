"""The page as a whole: self-contained, inert with hostile names, the table and the summary
holding the CSV's values, causes as an optional column."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from precision_tool.compare.result_csv import NUMERIC_METRICS
from precision_tool.report.escape import visible
from precision_tool.report.write import make_report
from tests.conftest import make_context
from tests.report.synthetic import HOSTILE_NAMES, csv_ops, write_chain


class Page(HTMLParser):
    """Every start tag with its attributes, each table row's cell texts, script contents."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.rows: list[list[str]] = []
        self._script: dict | None = None
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "script":
            self._script, self._text = attrs, []
        elif tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "script" and self._script is not None:
            self.scripts.append((self._script, "".join(self._text)))
            self._script = None
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._script is not None:
            self._text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def page_data(page: Page, k: int = 0) -> dict:
    """The JSON object of result ``k`` the page's script reads."""
    return json.loads([body for attrs, body in page.scripts if attrs.get("type") == "application/json"][k])


def positions(data: dict, column: str = "pos") -> list[int]:
    """The positions (or, ``column="index"``, the Indexes) of the ops in the page's data,
    undoing the steps they are written as."""
    out, total = [], 0
    for step in data[column]:
        total += step
        out.append(total)
    return out


def op_names(data: dict) -> dict[int, str]:
    """Position -> name, undoing the front coding (each name: characters kept from the
    previous name, then the rest)."""
    names, previous = {}, ""
    for pos, shared, rest in zip(positions(data), data["shared"], data["rest"]):
        previous = previous[:shared] + rest
        names[pos] = previous
    return names


def lead_order(data: dict) -> list[int]:
    """The positions of the flagged ops in the order the table leads with them."""
    return [p for first, rest in data["groups"] for p in ([first] if first is not None else []) + rest]


def table_names(page: Page) -> list[str]:
    data = page_data(page)
    names = op_names(data)
    return [names[p] for p in lead_order(data)]


@pytest.fixture
def hostile(data_root):
    csv_path = write_chain(data_root, 24, 4, hostile=True, nan_at=(12,))
    context, _ = make_context(data_root)
    written = make_report(context, [csv_path], output=data_root / "out")
    return csv_path, written, written.index.read_text(encoding="utf-8")


def test_the_page_fetches_nothing_and_runs_only_its_own_script(hostile):
    _, _, text = hostile
    page = Page(text)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//|data:|file:)""", text, re.I)
    assert all(attrs.get("href", "#").startswith("#") for tag, attrs in page.tags if tag == "a")
    assert not any(key.startswith("on") for _, attrs in page.tags for key in attrs)
    assert {tag for tag, _ in page.tags}.isdisjoint({"img", "iframe", "object", "embed", "link", "base"})
    code = [body for attrs, body in page.scripts if "type" not in attrs]
    assert len(code) == 1
    data = [body for attrs, body in page.scripts if attrs.get("type") == "application/json"]
    assert len(data) == 1 and len(page.scripts) == 2
    csp = next(attrs["content"] for tag, attrs in page.tags if attrs.get("http-equiv") == "Content-Security-Policy")
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    assert csp == f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"


def test_hostile_names_are_text_everywhere(hostile):
    csv_path, _, text = hostile
    assert "\u202e" not in text and "\x1b" not in text and "\t" not in text
    assert "alert(1)</script>" not in text and "<script>alert" not in text
    page = Page(text)
    shown = {visible(name) for name in HOSTILE_NAMES}
    flagged_hostile = shown & set(table_names(page))
    assert len(flagged_hostile) >= 4  # the ones after the drop (ops 4, 7, 10, 13, 16, 19)
    names = set(op_names(page_data(page)).values())
    assert {visible(n) for n in HOSTILE_NAMES} <= names


def test_the_table_holds_every_flagged_op_with_the_csv_values(hostile):
    """The table's data: every flagged op once, each introducer leading the inheritors after it,
    and every metric the CSV's value."""
    csv_path, written, text = hostile
    expected = csv_ops(csv_path)
    data = page_data(Page(text))
    view = written.parts[0].view
    assert sorted(lead_order(data)) == [r.position for r in view.flagged]
    for first, rest in data["groups"]:
        if first is not None:
            assert view.records[first].op.introduces and all(p > first for p in rest)
        assert not any(view.records[p].op.introduces for p in rest)
    names = op_names(data)
    by_name = {visible(name): tensors for (_, name), tensors in expected.items()}
    for pos in lead_order(data):
        want = by_name[names[pos]]["output"]
        ground_truth, ins, outs, _, _, metrics, _, _ = data["full"][str(pos)]
        assert ground_truth == -1  # the golden op has the NPU op's name
        assert outs == [[0, want["CosineSimilarity"]]]
        assert metrics == [want[m] for m in NUMERIC_METRICS]


def test_summary_names_the_first_introducer_and_counts(hostile):
    _, written, text = hostile
    view = written.parts[0].view
    assert view.first_introducer.op.name == HOSTILE_NAMES[1]
    assert (
        'first operator that introduces the error: <b class="name">'
        "net/&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;</b> (Mul), Index 4"
    ) in text
    flagged = len(view.flagged)
    assert f"{flagged} of 24 ops are flagged (output cosine &lt;= 0.98, RED &gt;= 0.2 or NaN/Inf)" in text
    assert "1 op(s) with a NaN output cosine" in text


def test_causes_add_a_column_with_escaped_text(data_root):
    csv_path = write_chain(data_root, 20, 5)
    context, _ = make_context(data_root)
    causes = {"net/block0/op5": "scale: output x2 <b>not bold</b>"}
    text = make_report(context, [csv_path], output=data_root / "c", causes=causes).index.read_text()
    data = page_data(Page(text))
    order = lead_order(data)
    assert table_names(Page(text))[0] == "net/block0/op5"
    cause = lambda pos: data["texts"][data["full"][str(pos)][-1]]  # noqa: E731
    assert cause(order[0]) == "scale: output x2 <b>not bold</b>" and data["causes"]
    assert all(cause(p) == "" for p in order[1:])
    assert "<b>not bold" not in text and "\\u003cb\\u003enot bold" in text
    plain = make_report(context, [csv_path], output=data_root / "p").index.read_text()
    assert ">cause<" not in plain and ">cause<" in text


def test_msaccucmp_csv_without_a_graph_still_reports_with_a_note(data_root, reference):
    context, _ = make_context(data_root)
    written = make_report(context, [reference], output=data_root / "m")
    text = written.index.read_text(encoding="utf-8")
    assert 'first operator that introduces the error: <b class="name">model/add/add</b> (Add), Index 14' in text
    assert "no Build graph under npu/*/graph holds this op" in text
    assert len(table_names(Page(text))) == 8  # the eight flagged ops


@pytest.mark.parametrize("case", ["nothing flagged", "nothing compared", "header only"])
def test_results_with_little_in_them_still_make_a_page(data_root, case):
    from precision_tool.compare.result_csv import columns, write_result_csv
    from precision_tool.compare.result_read import read_result_csv

    csv_path = write_chain(data_root, 12, 20)  # the drop is past the end: nothing flagged
    if case == "nothing compared":
        rows = [r.with_metrics({}) for r in read_result_csv(csv_path)]
        csv_path = write_result_csv(data_root / "none.csv", rows)
    elif case == "header only":
        csv_path = data_root / "empty.csv"
        csv_path.write_text(",".join(columns()) + "\r\n", encoding="utf-8")
    context, _ = make_context(data_root)
    text = make_report(context, [csv_path], output=data_root / case.replace(" ", "_")).index.read_text()
    expected = {
        "nothing flagged": "no op is flagged (output cosine &lt;= 0.98, RED &gt;= 0.2 or NaN/Inf)",
        "nothing compared": "12 op(s) with a NaN output cosine",  # vcs's reading too
        "header only": "no compared tensors in this result",
    }[case]
    assert expected in text and "nothing flagged: no subgraph to show" in text
    assert '<svg class="plot"' in text


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30),
        min_size=1,
        max_size=6,
        unique=True,
    )
)
@example(["\x1f", "\x1f0"])  # a prefix shared by the raw names cuts the escape of the first
def test_any_op_names_stay_text_in_the_page(names):
    """Whatever the names, the page parses to the same elements and shows each name as its
    visible text, in the table, the summary and the script's data."""
    from pathlib import Path

    from precision_tool.compare.result import CompareRow
    from precision_tool.compare.result_view import build_view
    from precision_tool.report.page import PageInput, ResultPart, render_page

    rows = [
        CompareRow(
            k, "Add", name, "float16", None, name, "float32", f"{name}:output:0", (2,), {"CosineSimilarity": 0.5}
        )
        for k, name in enumerate(names)
    ]
    view = build_view(Path("r.csv"), rows, 0.98)
    page = Page(render_page(PageInput(Path("root"), [ResultPart(Path("r.csv"), view)], "")))
    assert len(page.scripts) == 2
    assert not any(key.startswith("on") for _, attrs in page.tags for key in attrs)
    assert table_names(page) == [visible(n) for n in names]  # each its own introducer
    assert list(op_names(page_data(page)).values()) == [visible(n) for n in names]
