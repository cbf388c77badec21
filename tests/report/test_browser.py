"""The report in a real browser: headless Chromium opens it from file://.

No console error, no request but the page itself, the plot and the table drawn (screenshots
that are not blank, the markers' colours on screen), the values on screen equal to the CSV's,
hover, click and sorting working, and hostile op names inert.
"""

from __future__ import annotations

import base64
import json
import math
import os
from pathlib import Path

import pytest

from precision_tool.render.palette import LEGEND_ORDER, swatch
from precision_tool.report.escape import visible
from precision_tool.report.write import make_report
from tests.conftest import REPO_ROOT, make_context, run_command
from tests.report.browser import CHROMIUM, Chromium
from tests.report.synthetic import HOSTILE_NAMES, csv_ops, write_chain


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))


# the palette's clean and introducer colours, and the introducer's shade for text
GOOD, BAD = _rgb(swatch("clean").colour), _rgb(swatch("introduces").colour)
BAD_TEXT = _rgb(swatch("introduces").text_colour)


@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        message = f"{CHROMIUM} is absent: Debian's chromium package (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)  # CI installs it (.ci/run): nothing skips there
        pytest.skip(message)
    with Chromium() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    import shutil

    root = tmp_path_factory.mktemp("browser") / "precision_data"
    shutil.copytree(REPO_ROOT / "precision_data", root, ignore=shutil.ignore_patterns("temp"))
    context, _ = make_context(root)
    run_command(context, "vc")
    csv_path = next((root / "temp" / "vector_compare").glob("*/*.csv"))
    return csv_path, make_report(context, [csv_path], output=root / "temp" / "report" / "t")


@pytest.fixture(scope="module")
def sample_page(browser, sample_report):
    csv_path, written = sample_report
    log = browser.open(written.index.as_uri())
    return csv_path, written, log


def pixel_stats(browser: Chromium, png: bytes, good=GOOD, bad=BAD) -> dict:
    """Distinct colours, the share of non-white pixels and how many pixels are near ``good``
    and ``bad``, decoded by the browser itself in a blank tab (drawn on a canvas)."""
    session = browser.session
    target = browser.send("Target.createTarget", {"url": "about:blank"}, session=False)
    browser.session = browser.send(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False
    )["sessionId"]
    try:
        script = """new Promise(resolve => { const img = new Image(); img.onload = () => {
            const c = document.createElement('canvas'); c.width = img.width; c.height = img.height;
            const g = c.getContext('2d'); g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, c.width, c.height).data; const seen = new Set();
            let ink = 0, good = 0, bad = 0; const near = (i, p) => Math.abs(d[i] - p[0]) + Math.abs(d[i+1] - p[1]) + Math.abs(d[i+2] - p[2]) < 40;
            for (let i = 0; i < d.length; i += 4) { seen.add((d[i] << 16) | (d[i+1] << 8) | d[i+2]);
              if (d[i] + d[i+1] + d[i+2] < 720) ink++; if (near(i, GOOD)) good++; if (near(i, BAD)) bad++; }
            resolve({colours: seen.size, ink: ink / (d.length / 4), good: good, bad: bad,
                     width: c.width, height: c.height}); };
          img.src = 'data:image/png;base64,PNG'; })"""
        script = script.replace("GOOD", json.dumps(good)).replace("BAD", json.dumps(bad))
        return browser.evaluate(script.replace("PNG", base64.b64encode(png).decode()))
    finally:
        browser.send("Target.closeTarget", {"targetId": target["targetId"]}, session=False)
        browser.session = session


def clip(browser: Chromium, selector: str) -> bytes:
    box = browser.evaluate(f"""(() => {{ const r = document.querySelector({json.dumps(selector)})
        .getBoundingClientRect(); return {{x: r.x + scrollX, y: r.y + scrollY, width: r.width,
        height: r.height, scale: 1}}; }})()""")
    shot = browser.send("Page.captureScreenshot", {"format": "png", "clip": box, "captureBeyondViewport": True})
    return base64.b64decode(shot["data"])


def test_opens_offline_without_errors_or_requests(sample_page):
    _, written, log = sample_page
    assert log.errors == [] and log.dialogs == []
    assert log.requests == [written.index.as_uri()]  # the page itself, nothing else


def test_the_page_and_the_plot_are_drawn(browser, sample_page, tmp_path):
    _, written, _ = sample_page
    page = pixel_stats(browser, browser.screenshot(tmp_path / "page.png"))
    assert page["colours"] > 100 and page["ink"] > 0.03, page
    plot = pixel_stats(browser, clip(browser, "svg.plot"))
    assert plot["width"] >= 900 and plot["good"] > 50 and plot["bad"] > 50, plot
    table = pixel_stats(browser, clip(browser, "table.flagged"), bad=BAD_TEXT)
    assert table["bad"] > 20 and table["ink"] > 0.05, table
    graph = pixel_stats(browser, clip(browser, ".subgraph-wrap svg"))
    assert graph["colours"] > 20, graph
    rows = browser.evaluate("document.querySelectorAll('table.flagged tbody tr[data-pos]').length")
    assert rows == 1  # the introducer, its four inheritors folded under it
    unfolded = browser.evaluate("""(() => { document.querySelector('table.flagged button.fold').click();
        return document.querySelectorAll('table.flagged tbody tr[data-pos]').length; })()""")
    assert unfolded == len(written.parts[0].view.flagged) == 5


def test_legends_and_marks_show_the_palette_on_screen(browser, sample_page):
    """The colours reach the page only as CSS variables: what the browser computes for each
    legend swatch, the introducer's mark and its table cell is the palette's."""
    shown = browser.evaluate("""(() => {
        const rgb = el => getComputedStyle(el).backgroundColor;
        const legends = [...document.querySelectorAll('p.legend')].map(p =>
            [...p.querySelectorAll('span[data-state]')].map(s => [s.dataset.state, rgb(s.querySelector('i'))]));
        const mark = document.querySelector('svg.plot path.pt.cos[data-state=introduces]');
        const cell = document.querySelector('table.flagged td.verdict[data-state=introduces]');
        return {legends, mark: getComputedStyle(mark).fill, cell: getComputedStyle(cell).color,
                cellText: cell.textContent}; })()""")
    css = lambda colour: "rgb(%d, %d, %d)" % _rgb(colour)  # noqa: E731
    assert len(shown["legends"]) == 2  # the curve's and the subgraph's
    for legend in shown["legends"]:
        assert legend == [[state, css(swatch(state).colour)] for state in LEGEND_ORDER]
    assert shown["mark"] == css(swatch("introduces").colour)
    assert shown["cell"] == css(swatch("introduces").text_colour)
    assert shown["cellText"].startswith("\u25b2 introduces")


def test_the_values_on_screen_are_the_csv_values(browser, sample_page):
    csv_path, written, _ = sample_page
    expected = csv_ops(csv_path)
    view = written.parts[0].view
    drawn = browser.evaluate("""(() => {
        const svg = document.querySelector('svg.plot'), m = svg.getScreenCTM();
        const screenY = el => { const r = el.getBoundingClientRect(); return r.y + r.height / 2; };
        const ticks = [...svg.querySelectorAll('g.tick[data-axis=cos] line')].map(l =>
            [parseFloat(l.parentNode.dataset.v), screenY(l)]);
        const points = [...svg.querySelectorAll('.pt.cos')].map(c =>
            [parseInt(c.dataset.pos), parseFloat(c.dataset.v), screenY(c)]);
        return {ticks, points}; })()""")
    (v0, y0), (v1, y1) = drawn["ticks"][0], drawn["ticks"][-1]
    per_pixel = abs((v1 - v0) / (y1 - y0))
    assert len(drawn["points"]) == 15
    for pos, value, y in drawn["points"]:
        record = view.records[pos]
        want = expected[(record.op.index, record.op.name)]["output"]["CosineSimilarity"]
        assert value == want, record.op.name
        on_screen = v0 + (y - y0) * (v1 - v0) / (y1 - y0)
        assert math.isclose(on_screen, want, abs_tol=per_pixel), (record.op.name, on_screen, want)


def test_hover_names_the_op_and_click_pins_it_in_the_table(browser, sample_page):
    _, written, _ = sample_page
    first = written.parts[0].view.first_introducer
    x, y = browser.evaluate(f"""(() => {{ const c = document.querySelector(
        '.pt.cos[data-pos="{first.position}"]'); c.scrollIntoView({{block: 'center'}});
        const r = c.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
    browser.hover(x, y)
    tip = browser.evaluate(
        "(() => { const t = document.getElementById('tip-0'); return [t.hidden, t.textContent]; })()"
    )
    assert tip[0] is False and tip[1].startswith("resnet/conv2/Conv2D[Conv2D] Index 13")
    browser.click(x, y)
    selected = browser.evaluate("""[document.getElementById('sel-0').textContent,
        document.querySelector('table.flagged tr.sel').dataset.pos]""")
    assert "resnet/conv2/Conv2D" in selected[0] and "output cosines: 0: 0.363075" in selected[0]
    assert selected[1] == str(first.position)


def test_clicking_a_header_sorts_by_number_both_ways(browser, sample_page):
    def order():
        return browser.evaluate("""[...document.querySelectorAll('table.flagged tbody tr[data-pos]')]
            .map(tr => tr.cells[4].textContent.split(': ')[1])""")

    header = """(() => { const b = [...document.querySelectorAll('table.flagged th button')]
        .find(b => b.textContent === 'output cosines'); b.scrollIntoView({block: 'center'});
        const r = b.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"""
    x, y = browser.evaluate(header)
    browser.click(x, y)
    ascending = [float(v) for v in order()]
    assert ascending == sorted(ascending) and ascending[0] == 0.363075 and len(ascending) == 5
    browser.click(x, y)
    assert [float(v) for v in order()] == sorted(ascending, reverse=True)


def test_hostile_names_are_inert_in_the_browser(browser, tmp_path):
    root = tmp_path / "precision_data"
    csv_path = write_chain(root, 24, 4, hostile=True, nan_at=(12,))
    context, _ = make_context(root)
    written = make_report(context, [csv_path], output=tmp_path / "out")
    log = browser.open(written.index.as_uri())
    assert log.errors == [] and log.dialogs == [] and log.requests == [written.index.as_uri()]
    state = browser.evaluate("""(() => { let fold;
        while ((fold = document.querySelector('table.flagged button.fold[aria-expanded=false]'))) { fold.click(); }
        return {scripts: document.scripts.length,
        names: [...document.querySelectorAll('table.flagged td.name:first-child')].map(td => td.textContent),
        title: document.querySelector('.verdict-line b').textContent}; })()""")
    assert state["scripts"] == 2
    flagged = [visible(r.op.name) for r in written.parts[0].view.flagged]
    assert state["names"] == flagged
    assert set(visible(n) for n in HOSTILE_NAMES[1:]) & set(state["names"])
    assert state["title"] == visible(HOSTILE_NAMES[1]) == "net/</script><script>alert(2)</script>"
    assert csv_ops(csv_path)  # the CSV the page was made from


def test_a_page_that_breaks_the_rules_is_caught(browser, tmp_path):
    """The harness is not blind: a request, a console error and a CSP violation are all seen."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><meta http-equiv='Content-Security-Policy' content=\"default-src "
        "'none'; script-src 'unsafe-inline'\"><img src='http://127.0.0.1:9/x.png'>"
        "<script>console.error('boom')</script>",
        encoding="utf-8",
    )
    log = browser.open(page.as_uri())
    assert "boom" in log.errors
    assert any("Content Security Policy" in e or "Refused" in e for e in log.errors), log.errors
    assert [u for u in log.requests if not u.startswith("file:")] in ([], ["http://127.0.0.1:9/x.png"])
    fetched = tmp_path / "fetch.html"
    fetched.write_text("<script>fetch('http://127.0.0.1:9/').catch(() => {})</script>", encoding="utf-8")
    assert "http://127.0.0.1:9/" in browser.open(fetched.as_uri()).requests
    Path(page).unlink()
