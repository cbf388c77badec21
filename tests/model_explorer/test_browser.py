"""What a user sees when ``explore`` opens Model Explorer: headless Chromium at the printed address
shows the first introducer selected (its node info, its verdict first), the overlays listed
verdict first and cosine last (the one shown), and the metric overlays show no sum or mean of a
layer. The DOM is read, not pixels."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.commands.test_explore import explore  # noqa: F401  (the fixture)
from tests.conftest import make_context, run_command
from tests.report.browser import CHROMIUM, Chromium

LOAD = 120.0  # seconds for the web app to load the graph and the node data on busy cores

NODE_INFO = """(() => { const text = document.body.innerText;
  const at = text.indexOf('NODE INFO'); return at < 0 ? '' : text.slice(at, at + 4000); })()"""
RUNS = """(() => Array.from(document.querySelectorAll('.run-name')).map(e => {
  const row = e.closest('.index-row'); return [e.textContent.trim(), !!row && row.classList.contains('selected')]; }))()"""
STATS = """(() => { const text = document.body.innerText; const at = text.indexOf('Aggregated stats');
  const end = text.indexOf('nodes stats', at); return at < 0 || end < 0 ? '' : text.slice(at, end); })()"""


def wait_for(browser: Chromium, expression: str, done, timeout: float = LOAD):
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = browser.evaluate(expression)
        if done(value):
            return value
        browser.drain(0.5)
    raise AssertionError(f"not seen within {timeout:.0f} s: {json.dumps(value)[:400]}")


def test_the_sample_opens_at_conv2_with_the_verdict_shown(sample_data, explore):  # noqa: F811
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is absent: Debian's chromium package")
    context, _ = make_context(sample_data)
    run_command(context, "vc")
    done = explore(sample_data)
    assert done.status == 0, done.text
    with Chromium(width=1400, height=1000) as browser:
        log = browser.open(done.url, settle=1.0)
        info = wait_for(browser, NODE_INFO, lambda v: "resnet/conv2/Conv2D" in (v or ""))
        words = [w.strip() for w in info.splitlines() if w.strip()]
        assert words[words.index("id") + 1] == "resnet/conv2/Conv2D"  # the introducer selected
        providers = info[info.index("NODE DATA PROVIDERS") :].splitlines()
        values = [w.strip() for w in providers if w.strip()][1:3]
        assert values[0].startswith("verdict (") and values[1] == "\u25b2 introduces", values  # first
        browser.drain(5.0)  # the selection stays once the overlays are laid out
        assert "resnet/conv2/Conv2D" in browser.evaluate(NODE_INFO)
        browser.click(60, 300)  # an empty spot of the canvas: nothing selected, the graph's panel
        runs = wait_for(browser, RUNS, lambda v: len(v or []) == 10)
        assert runs[0][0].startswith("verdict (") and runs[-1][0].startswith("CosineSimilarity (")
        assert [name for name, selected in runs if selected] == [runs[-1][0]]  # the last is shown
        stats = wait_for(browser, STATS, lambda v: "Avg" in (v or ""))
        rows = {}
        for line in stats.splitlines():
            cells = [c.strip() for c in line.split("\t") if c.strip()]
            if cells and cells[0] in ("Min", "Max", "Sum", "Avg"):
                rows[cells[0]] = cells[1:]
        assert len(rows["Sum"]) == len(rows["Avg"]) == 9, rows  # the metrics; the verdict has none
        assert set(rows["Sum"]) == {"-"} and set(rows["Avg"]) == {"-"}, rows
        assert "-" not in rows["Min"] + rows["Max"], rows
    assert not [e for e in log.exceptions], log.exceptions
