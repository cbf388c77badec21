"""The plot's SVG: each marker carries the CSV's value and sits where the axis puts that value;
the threshold and the first introducer are marked."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from precision_tool.compare.result_view import read_view
from precision_tool.render.palette import css_class
from precision_tool.report import plot
from tests.report.synthetic import csv_ops, write_chain, write_many

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(view) -> ET.Element:
    return ET.fromstring(plot.plot_svg(view, 0))


def tick_map(svg: ET.Element, axis: str, log: bool = False):
    """value -> pixel from two of the axis' tick marks (linear in the value, or its log10)."""
    ticks = [
        (float(g.get("data-v")), float(g.get("data-y")))
        for g in svg.iterfind("s:g[@class='tick']", NS)
        if g.get("data-axis") == axis
    ]
    (v0, y0), (v1, y1) = ticks[0], ticks[-1]
    return lambda v: y0 + ((math.log10(v) if log else v) - v0) * (y1 - y0) / (v1 - v0)


def markers(svg: ET.Element, series: str) -> list[ET.Element]:
    """The marks of ``series`` in drawing order: circles, and the introducers' triangles and
    the diamonds of ops beyond rounding."""
    group = svg.find("s:g[@class='series']", NS)
    return [
        m
        for m in group
        if m.tag.rsplit("}", 1)[-1] in ("circle", "path") and {"pt", series} <= set(m.get("class").split())
    ]


def lines(svg: ET.Element, series: str) -> list[list[str]]:
    """The points of each polyline of ``series`` (one per run of compared ops)."""
    return [p.get("points").split() for p in svg.iter(f"{{{NS['s']}}}polyline") if p.get("class") == f"line {series}"]


def centre(mark: ET.Element) -> tuple[str, str]:
    """(x, y) of a mark as written: a circle's cx/cy, a path's data-cx/data-cy."""
    return mark.get("cx", mark.get("data-cx")), mark.get("cy", mark.get("data-cy"))


@pytest.fixture
def chain(data_root):
    return write_chain(data_root, 60, 25, nan_at=(40,))


def test_each_cosine_marker_holds_the_csv_value_at_the_axis_position(chain):
    view = read_view(chain, 0.98)
    svg = parse(view)
    expected = csv_ops(chain)
    at = tick_map(svg, "cos")
    points = markers(svg, "cos")
    assert len(points) == 59  # every op but the NaN one
    for circle in points:
        record = view.records[int(circle.get("data-pos"))]
        want = expected[(record.op.index, record.op.name)]["output"]["CosineSimilarity"]
        assert float(circle.get("data-v")) == want
        assert float(centre(circle)[1]) == pytest.approx(at(want), abs=0.011)
        # no replay in the chain: the input rule decides; op 41's only input (op 40) has no cosine
        state = circle.get("data-state")
        assert state == ("clean" if want > 0.98 else "introduces" if record.op.index in (25, 41) else "inherits")
        assert css_class(state) in circle.get("class").split()
        assert (circle.tag.endswith("path")) == (state == "introduces")  # the second cue: a triangle
    # op 40 has no cosine: the line stops before it and starts again after it
    assert [len(run) for run in lines(svg, "cos")] == [40, 19]
    assert sum(lines(svg, "cos"), []) == [",".join(centre(c)) for c in points]


def test_red_markers_use_a_log_axis_and_zero_sits_on_the_floor(chain):
    view = read_view(chain, 0.98)
    svg = parse(view)
    expected = csv_ops(chain)
    at = tick_map(svg, "red", log=True)
    floor = max(float(g.get("data-y")) for g in svg.iterfind("s:g[@class='tick']", NS) if g.get("data-axis") == "red")
    for circle in markers(svg, "red"):
        record = view.records[int(circle.get("data-pos"))]
        want = expected[(record.op.index, record.op.name)]["output"]["RelativeEuclideanDistance"]
        assert float(circle.get("data-v")) == want
        if want == 0:
            assert "zero" in circle.get("class") and float(centre(circle)[1]) == pytest.approx(floor, abs=0.011)
        else:
            assert float(centre(circle)[1]) == pytest.approx(at(want), abs=0.011)


def test_threshold_introducer_and_nan_are_marked(chain):
    view = read_view(chain, 0.9)
    svg = parse(view)
    at = tick_map(svg, "cos")
    threshold = svg.find("s:g[@class='threshold']", NS)
    assert float(threshold.find("s:line", NS).get("y1")) == pytest.approx(at(0.9), abs=0.011)
    assert "threshold 0.9" in "".join(threshold.itertext())
    intro = svg.find("s:g[@class='introducer']", NS)
    first = view.first_introducer
    assert intro.get("data-pos") == str(first.position) and first.op.name == "net/block2/op25"
    marker = next(c for c in markers(svg, "cos") if c.get("data-pos") == str(first.position))
    assert intro.find("s:line", NS).get("x1") == centre(marker)[0]
    assert "\u25b2 first introducer: net/block2/op25" in "".join(intro.itertext())
    nan = [p for p in svg.iter(f"{{{NS['s']}}}path") if "nan" in p.get("class", "").split()]
    assert [view.records[int(p.get("data-pos"))].op.name for p in nan] == ["net/block4/op40"]
    assert nan[0].get("data-state") == "not compared" and "cross" in nan[0].get("class")


def test_past_max_markers_only_ops_not_clean_get_a_marker(chain, monkeypatch):
    monkeypatch.setattr(plot, "MAX_MARKERS", 10)
    view = read_view(chain, 0.98)
    svg = parse(view)
    flagged = {str(r.position) for r in view.flagged}
    assert {c.get("data-pos") for c in markers(svg, "cos")} == flagged
    assert sum(len(run) for run in lines(svg, "cos")) == 59


def test_x_is_the_execution_position_and_every_introducer_is_marked(data_root, monkeypatch):
    """Past MAX_FLAGGED_MARKS ops not clean only the introducers keep a mark, each a triangle
    at its position; the overview strip has a tick per introducer."""
    csv_path = write_many(data_root, 400, introducers=(30, 150, 390), tail=40)
    monkeypatch.setattr(plot, "MAX_MARKERS", 10)
    monkeypatch.setattr(plot, "MAX_FLAGGED_MARKS", 10)
    view = read_view(csv_path, 0.98)
    svg = parse(view)
    introducers = [r for r in view.records if r.op.introduces]
    assert [r.op.name for r in introducers] == [f"net/block{k // 10}/op{k}" for k in (30, 150, 390)]
    marks = markers(svg, "cos")
    assert [int(m.get("data-pos")) for m in marks] == [r.position for r in introducers]
    assert all(m.tag.endswith("path") and m.get("data-state") == "introduces" for m in marks)
    xs = [float(centre(m)[0]) for m in marks]
    width = plot.WIDTH - plot.LEFT - plot.RIGHT
    assert xs == [pytest.approx(plot.LEFT + r.position / 399 * width, abs=0.01) for r in introducers]
    ticks = [t for t in svg.iter(f"{{{NS['s']}}}line") if "ov-intro" in t.get("class", "")]
    assert [int(t.get("data-pos")) for t in ticks] == [r.position for r in introducers]


def test_a_long_line_keeps_each_columns_lowest_and_highest_value(data_root):
    csv_path = write_many(data_root, 12000, introducers=(5000,))
    view = read_view(csv_path, 0.98)
    svg = parse(view)
    (run,) = lines(svg, "cos")
    assert len(run) <= 4 * plot.MAX_LINE_POINTS
    ys = [float(p.split(",")[1]) for p in run]
    at = tick_map(svg, "cos")
    lowest = min(r.cosine for r in view.records)
    assert max(ys) == pytest.approx(at(lowest), abs=0.011)  # the dip survives the thinning
    xs = [float(p.split(",")[0]) for p in run]
    assert xs == sorted(xs)


@pytest.mark.parametrize("lo, hi", [(0.3, 1.0), (-1.0, 1.0), (0.95, 1.0), (-3.0, 2.0), (0.0, 1e-3)])
def test_nice_ticks_are_round_and_inside_the_range(lo, hi):
    ticks = plot.nice_ticks(lo, hi)
    assert 3 <= len(ticks) <= 11
    assert all(lo - 1e-9 <= t <= hi + 1e-9 for t in ticks)
    steps = {round(b - a, 9) for a, b in zip(ticks, ticks[1:])}
    assert len(steps) == 1
