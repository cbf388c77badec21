"""The curve of one result as inline SVG: output cosine along execution position, below it the
RelativeEuclideanDistance on a log axis, the threshold, the first introducer named, every
introducer marked, and an overview strip of the whole curve.

Written by hand rather than with a plotting library: a few bytes per pixel column, no
script needed to see it, nothing fetched, and every coordinate is a plain function of a CSV
value that a test can invert. Each point is a mark of class ``pt``
carrying ``data-pos`` (the op's place in the page's data), ``data-v`` (the value plotted, as the
CSV had it) and ``data-state`` (the op's verdict, :func:`.looks.op_state`), filled in that
state's colour; its shape is the second cue: a triangle for an introducer, a diamond for an op
beyond rounding, a circle otherwise (``<circle>``; the others are ``<path>`` with their centre in
``data-cx``/``data-cy``), a cross at the foot of the cosine panel for a NaN cosine. The page's
script turns hover and click on the plot into the op's name and metrics, and redraws the
series (``g.series``, ``g.xticks``) for the window chosen by wheel, drag or keys from the page's
data with the same axes. x is the op's execution position, so ops not compared (no output, or a
NaN value) leave a gap in the line rather than a segment across them. Past :data:`MAX_MARKERS`
ops only the ops not clean get a mark, past :data:`MAX_FLAGGED_MARKS` of those only the
introducers (each always has its triangle); a line keeps the lowest and highest value of each
pixel column, so a 100,000-op curve costs what a 1,000-op one does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..compare.result_view import RED, OpRecord, ResultView
from ..compare.verdict import CLEAN, INTRODUCES, NEAR, NOT_COMPARED
from ..render.palette import css_class, swatch
from .escape import esc
from .looks import op_state

WIDTH, LEFT, RIGHT = 960, 70, 20
COS_TOP, COS_HEIGHT = 30, 250
RED_TOP, RED_HEIGHT = 330, 150
OV_TOP, OV_HEIGHT = 530, 40  # the overview strip
HEIGHT = 580
MAX_MARKERS = 3000  # past this many ops only the ops not clean get a mark
MAX_FLAGGED_MARKS = 500  # past this many ops not clean only the introducers do (the script
MAX_LINE_POINTS = 900  # draws the rest once zoomed in); a line keeps ~2 points per pixel column
MAX_LABEL = 48


@dataclass(frozen=True)
class Axis:
    """A linear (or log10, when ``log``) map from values in [lo, hi] to pixels [bottom, top]."""

    lo: float
    hi: float
    top: float
    height: float
    log: bool = False

    def y(self, value: float) -> float:
        """The pixel row of ``value`` (clamped to the axis)."""
        if self.log:
            if value <= 0:  # a RelativeEuclideanDistance of 0 sits on the floor of the axis
                return self.bottom
            v = math.log10(value)
        else:
            v = value
        span = self.hi - self.lo
        return self.top + (1.0 - (min(max(v, self.lo), self.hi) - self.lo) / span) * self.height

    @property
    def bottom(self) -> float:
        return self.top + self.height


@dataclass(frozen=True)
class XAxis:
    """Execution position (the op's place among the result's ops) to pixel columns: an op
    without a compared output keeps its place, so the line shows a gap there."""

    lo: int
    hi: int

    def x(self, position: int) -> float:
        span = max(self.hi - self.lo, 1)
        return LEFT + (position - self.lo) / span * (WIDTH - LEFT - RIGHT)


def _fmt(value: float) -> str:
    return f"{value:.2f}"


def cosine_axis(values: list[float], threshold: float) -> Axis:
    """From just below the lowest cosine (or the threshold) up to 1."""
    lowest = min(values + [threshold])
    lo = max(math.floor((lowest - 0.02) * 20) / 20, -1.0)
    hi = max(values + [1.0])
    return Axis(lo, hi if hi > lo else lo + 1, COS_TOP, COS_HEIGHT)


def red_axis(values: list[float]) -> Axis:
    """Whole decades around the positive values (1e-6..1 when there are none)."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    lo = math.floor(math.log10(min(positive))) if positive else -6
    hi = math.ceil(math.log10(max(positive))) if positive else 0
    return Axis(lo, hi if hi > lo else lo + 1, RED_TOP, RED_HEIGHT, log=True)


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round tick values in [lo, hi], about ``count`` of them."""
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(m for m in (1, 2, 2.5, 5, 10) if step * m >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [round(k * step, 10) for k in range(first, int(math.floor(hi / step + 1e-9)) + 1)]


def _x_ticks(xs: XAxis) -> list[int]:
    return sorted({int(round(t)) for t in nice_ticks(xs.lo, max(xs.hi, xs.lo + 1), 8)})


def _grid(axis: Axis, ticks: list[float], labels: list[str], name: str) -> list[str]:
    out = []
    for value, label in zip(ticks, labels):
        y = _fmt(axis.y(10**value if axis.log else value))
        out.append(
            f'<g class="tick" data-axis="{name}" data-v="{value!r}" data-y="{y}">'
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"/>'
            f'<text x="{LEFT - 6}" y="{y}" dy="0.32em" text-anchor="end">{label}</text></g>'
        )
    return out


def _segments(points: list[tuple]) -> list[list[tuple]]:
    """The points cut where ops were not compared: a gap in the execution positions (an op
    without a compared output, or one whose value is NaN) ends a segment."""
    segments: list[list[tuple]] = []
    for point in points:
        if segments and point[0].position == segments[-1][-1][0].position + 1:
            segments[-1].append(point)
        else:
            segments.append([point])
    return segments


def thin(segment: list[tuple], columns: int = MAX_LINE_POINTS) -> list[tuple]:
    """At most about ``2 * columns`` points of ``segment`` that draw the same line at the
    plot's width: the lowest and highest value of each pixel column, in execution order."""
    kept, bucket, last = [], [], None
    for point in segment:
        column = int((point[2] - LEFT) * columns / (WIDTH - LEFT - RIGHT))
        if column != last and bucket:
            kept += _extremes(bucket)
            bucket = []
        bucket.append(point)
        last = column
    return kept + _extremes(bucket)


def _extremes(bucket: list[tuple]) -> list[tuple]:
    low, high = min(bucket, key=lambda p: p[3]), max(bucket, key=lambda p: p[3])
    return sorted({id(p): p for p in (bucket[0], low, high, bucket[-1])}.values(), key=lambda p: p[0].position)


def _points(records: list[OpRecord], values: list[float], xs: XAxis, axis: Axis) -> list[tuple]:
    return [(r, v, xs.x(r.position), axis.y(v)) for r, v in zip(records, values)]


def mark_shape(state: str) -> str:
    """The second cue of a state's mark: ``triangle`` for an introducer, ``diamond`` beyond
    rounding, else ``circle`` (the page's script draws zoomed marks by this too)."""
    return "triangle" if state == INTRODUCES else "diamond" if state == NEAR else "circle"


def quiet(state: str) -> bool:
    """True for the states that lose their marks first on a busy curve (clean, not compared)."""
    return state in (CLEAN, NOT_COMPARED)


def _mark(css: str, x: float, y: float, state: str, record: OpRecord, value: float) -> str:
    """One point: a triangle for an introducer, a diamond beyond rounding, else a circle."""
    data = f'data-pos="{record.position}" data-v="{value!r}" data-state="{esc(state)}"'
    cx, cy = _fmt(x), _fmt(y)
    shape = mark_shape(state)
    if shape == "triangle":
        shape = f"M{cx},{_fmt(y - 4.5)} l4.5,9 h-9 z"
    elif shape == "diamond":
        shape = f"M{cx},{_fmt(y - 4.5)} l4.5,4.5 l-4.5,4.5 l-4.5,-4.5 z"
    else:
        return f'<circle class="{css}" cx="{cx}" cy="{cy}" r="3" {data}/>'
    return f'<path class="{css}" d="{shape}" data-cx="{cx}" data-cy="{cy}" {data}/>'


def _series(points: list[tuple], name: str, marks: str) -> list[str]:
    """The line (one polyline per run of compared ops) and the marks: ``all``, ``flagged``
    (every op not clean) or ``introducers``."""
    out = [
        f'<polyline class="line {name}" points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for _, _, x, y in thin(s))}"/>'
        for s in _segments(points)
    ]
    for record, value, x, y in points:
        state = op_state(record.op)
        if marks == "all" or (marks == "flagged" and not quiet(state)) or state == INTRODUCES:
            css = f"pt {name} {css_class(state)}" + (" zero" if name == "red" and value <= 0 else "")
            out.append(_mark(css, x, y, state, record, value))
    return out


def _nan_marks(records: list[OpRecord], xs: XAxis) -> list[str]:
    """A cross (an introducer: its triangle) at the foot of the cosine panel per NaN cosine."""
    y = COS_TOP + COS_HEIGHT - 6
    out = []
    for r in records:
        state, x = op_state(r.op), xs.x(r.position)
        data = f'data-pos="{r.position}" data-v="NaN" data-state="{esc(state)}"'
        if state == INTRODUCES:
            shape, css = f"M{_fmt(x)},{_fmt(y - 4.5)} l4.5,9 h-9 z", "pt nan"
        else:
            shape, css = f"M{_fmt(x - 3.5)},{_fmt(y - 3.5)} l7,7 m0,-7 l-7,7", "pt nan cross"
        out.append(f'<path class="{css} {css_class(state)}" d="{shape}" {data}/>')
    return out


def _threshold(axis: Axis, threshold: float) -> str:
    """The threshold's dashed line, its label at the right end above it (an introducer's line
    passes behind the label's white halo, never through its text)."""
    y = _fmt(axis.y(threshold))
    return (
        f'<g class="threshold" data-v="{threshold!r}"><line x1="{LEFT}" x2="{WIDTH - RIGHT}" '
        f'y1="{y}" y2="{y}"/><text x="{WIDTH - RIGHT - 4}" y="{y}" dy="-0.4em" '
        f'text-anchor="end">threshold {threshold:g}</text></g>'
    )


def _introducer(record: OpRecord, xs: XAxis) -> str:
    x = _fmt(xs.x(record.position))
    name = record.op.name
    short = name if len(name) <= MAX_LABEL else name[: MAX_LABEL - 1] + "\u2026"
    anchor = "end" if xs.x(record.position) > WIDTH / 2 else "start"
    dx = "-4" if anchor == "end" else "4"
    return (
        f'<g class="introducer" data-pos="{record.position}"><title>{esc(name)}</title>'
        f'<line x1="{x}" x2="{x}" y1="{COS_TOP}" y2="{RED_TOP + RED_HEIGHT}"/>'
        f'<text x="{x}" y="{COS_TOP - 8}" dx="{dx}" text-anchor="{anchor}">'
        f"{swatch(INTRODUCES).marker} first introducer: {esc(short)}</text></g>"
    )


def _overview(records: list[OpRecord], xs: XAxis) -> list[str]:
    """The strip under the panels: the whole cosine line small, a tick per introducer, and the
    window the panels show (the page's script moves it)."""
    lo = min([r.cosine for r in records] + [1.0]) if records else 0.0
    axis = Axis(lo - 1e-9, 1.0, OV_TOP + 2, OV_HEIGHT - 4)
    points = _points(records, [r.cosine for r in records], xs, axis)
    out = [
        f'<g class="overview" data-top="{OV_TOP}" data-height="{OV_HEIGHT}">'
        f'<rect class="frame" x="{LEFT}" y="{OV_TOP}" width="{WIDTH - LEFT - RIGHT}" height="{OV_HEIGHT}"/>'
    ]
    out += [
        f'<polyline class="line ov" points="{" ".join(f"{_fmt(x)},{_fmt(y)}" for _, _, x, y in thin(s))}"/>'
        for s in _segments(points)
    ]
    out += [
        f'<line class="ov-intro {css_class(INTRODUCES)}" data-pos="{r.position}" x1="{_fmt(xs.x(r.position))}" '
        f'x2="{_fmt(xs.x(r.position))}" y1="{OV_TOP}" y2="{OV_TOP + OV_HEIGHT}"/>'
        for r in records
        if r.op.introduces
    ]
    out.append(
        f'<rect class="window" x="{LEFT}" y="{OV_TOP}" width="{WIDTH - LEFT - RIGHT}" height="{OV_HEIGHT}"/></g>'
    )
    return out


def _frame(xs: XAxis, cos: Axis, red: Axis) -> list[str]:
    out = [
        f'<rect class="frame" x="{LEFT}" y="{a.top}" width="{WIDTH - LEFT - RIGHT}" height="{a.height}"/>'
        for a in (cos, red)
    ]
    cos_ticks = nice_ticks(cos.lo, cos.hi)
    out += _grid(cos, cos_ticks, [f"{t:g}" for t in cos_ticks], "cos")
    decades = list(range(int(red.lo), int(red.hi) + 1))
    out += _grid(red, [float(d) for d in decades], [f"1e{d}" for d in decades], "red")
    bottom = RED_TOP + RED_HEIGHT
    ticks = [
        f'<text class="xtick" x="{_fmt(xs.x(p))}" y="{bottom + 16}" text-anchor="middle">{p}</text>'
        for p in _x_ticks(xs)
    ]
    out.append(f'<g class="xticks" data-y="{bottom + 16}">' + "".join(ticks) + "</g>")
    out += [
        f'<text class="axis-title" x="{LEFT + (WIDTH - LEFT) / 2:.0f}" y="{bottom + 36}" '
        f'text-anchor="middle">execution position (hover for the op\'s Index)</text>',
        f'<text class="axis-title" transform="translate(16,{COS_TOP + COS_HEIGHT / 2:.0f}) '
        f'rotate(-90)" text-anchor="middle">output cosine</text>',
        f'<text class="axis-title" transform="translate(16,{RED_TOP + RED_HEIGHT / 2:.0f}) '
        f'rotate(-90)" text-anchor="middle">RelativeEuclideanDistance</text>',
    ]
    return out


def x_axis(view: ResultView) -> XAxis:
    """The execution-position axis of ``view``: from its first op with a compared output to its
    last."""
    positions = [r.position for r in view.records if r.outputs] or [0]
    return XAxis(min(positions), max(positions))


def _marks(view: ResultView) -> str:
    """Which ops get a mark: ``all``, ``flagged`` (every op not clean) or ``introducers``."""
    if len(view.records) <= MAX_MARKERS:
        return "all"
    busy = sum(not quiet(op_state(r.op)) for r in view.records)
    return "flagged" if busy <= MAX_FLAGGED_MARKS else "introducers"


def plot_svg(view: ResultView, section: int) -> str:
    """The SVG of ``view``'s curve; ``section`` numbers the result in the page."""
    with_cos = [r for r in view.records if not math.isnan(r.cosine)]
    with_red = [r for r in view.records if not math.isnan(r.output(RED))]
    nan_ops = [r for r in view.records if r.outputs and math.isnan(r.cosine)]
    xs = x_axis(view)
    cos = cosine_axis([r.cosine for r in with_cos], view.threshold)
    red_values = [r.output(RED) for r in with_red]
    red = red_axis(red_values)
    marks = _marks(view)
    body = _frame(xs, cos, red)
    series = _series(_points(with_cos, [r.cosine for r in with_cos], xs, cos), "cos", marks)
    series += _series(_points(with_red, red_values, xs, red), "red", marks)
    series += _nan_marks(nan_ops, xs)
    body.append(f'<g class="series" data-marks="{marks}">' + "".join(series) + "</g>")
    body.append(_threshold(cos, view.threshold))  # over the marks: its label stays readable
    first = view.first_introducer
    if first is not None:
        body.append(_introducer(first, xs))
    body += _overview(with_cos, xs)
    body.append(
        f'<rect class="hover" x="{LEFT}" y="{COS_TOP}" width="{WIDTH - LEFT - RIGHT}" '
        f'height="{RED_TOP + RED_HEIGHT - COS_TOP}"/>'
    )
    return (
        f'<svg class="plot" id="plot-{section}" data-section="{section}" tabindex="0" '
        f'data-top="{COS_TOP}" data-bottom="{RED_TOP + RED_HEIGHT}" data-left="{LEFT}" '
        f'data-right="{WIDTH - RIGHT}" data-cos-top="{COS_TOP}" data-cos-height="{COS_HEIGHT}" '
        f'data-red-top="{RED_TOP}" data-red-height="{RED_HEIGHT}" data-lo="{xs.lo}" data-hi="{xs.hi}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="output cosine and RelativeEuclideanDistance along execution order; '
        f'wheel or drag the strip below to zoom, arrow keys step op by op" '
        f'xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>"
    )
