"""Headless Chromium driven over the DevTools protocol on a pipe: no driver, no extra package.

Chromium's ``--remote-debugging-pipe`` reads protocol commands from file descriptor 3 and
writes replies and events to descriptor 4, each a JSON message ended by a NUL byte. That is all
a test needs to open a page, collect its console messages, exceptions and network requests,
evaluate script in it and take a screenshot; Debian's ``chromium`` package is the whole setup.

Chosen over Playwright (a 40 MB driver whose protocol version must match the browser) and
Selenium (a second package, chromedriver, and no view of network requests without CDP anyway).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--remote-debugging-pipe",
)
TIMEOUT = 30.0


class BrowserError(RuntimeError):
    """The browser did not answer, or answered with an error."""


@dataclass
class PageLog:
    """What a page did while loaded: console messages by level, exceptions, requests."""

    console: list[tuple[str, str]] = field(default_factory=list)  # (level, text)
    exceptions: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)  # every URL requested
    log_entries: list[tuple[str, str]] = field(default_factory=list)  # Log domain (level, text)
    dialogs: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (CSP violations included)."""
        return (
            [text for level, text in self.console if level in ("error", "assert")]
            + self.exceptions
            + [text for level, text in self.log_entries if level == "error"]
        )


class Chromium:
    """One headless Chromium with a fresh profile; use as a context manager."""

    def __init__(self, executable: str = CHROMIUM, width: int = 1280, height: int = 900) -> None:
        self.executable, self.width, self.height = executable, width, height
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        self.session: str | None = None

    def __enter__(self) -> Chromium:
        self.profile = tempfile.mkdtemp(prefix="pt-chromium-")
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def wire() -> None:  # in the child, before exec: the protocol's fixed descriptors
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        args = [
            self.executable,
            *FLAGS,
            f"--user-data-dir={self.profile}",
            f"--window-size={self.width},{self.height}",
            "about:blank",
        ]
        self.process = subprocess.Popen(
            args,
            pass_fds=(3, 4),
            preexec_fn=wire,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close", wait=False)
            self.process.wait(timeout=10)
        except (OSError, BrowserError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
        finally:
            os.close(self._write)
            os.close(self._read)
            shutil.rmtree(self.profile, ignore_errors=True)

    # --- the protocol ---------------------------------------------------------------------

    def send(
        self,
        method: str,
        params: dict | None = None,
        *,
        session: bool = True,
        wait: bool = True,
        timeout: float = TIMEOUT,
    ) -> dict:
        """Send one command (to the page's session unless ``session`` is False); its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        os.write(self._write, json.dumps(message).encode("utf-8") + b"\0")
        if not wait:
            return {}
        reply = self._wait_for(lambda m: m.get("id") == message["id"], timeout)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def _messages(self, timeout: float):
        """Messages as they arrive, until ``timeout`` seconds pass without a complete one."""
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                yield json.loads(raw)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                return
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the pipe")
            self._buffer += chunk

    def _wait_for(self, matches, timeout: float) -> dict:
        for message in self._messages(timeout):
            if matches(message):
                return message
            self._events.append(message)
        raise BrowserError(f"no answer within {timeout} s")

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive within ``seconds``."""
        self._events.extend(self._messages(seconds))

    # --- pages ----------------------------------------------------------------------------

    def open(self, url: str, settle: float = 0.5) -> PageLog:
        """Open ``url`` in a new tab, wait for its load event and ``settle`` seconds more;
        what it logged and requested meanwhile."""
        target = self.send("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, session=False)
        self.session = attached["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        self._events.clear()
        self.send("Page.navigate", {"url": url})
        self._wait_for(
            lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == self.session, TIMEOUT
        )
        self.drain(settle)
        return self.page_log()

    def page_log(self) -> PageLog:
        """What the current page did so far (from the events collected)."""
        log = PageLog()
        for event in self._events:
            if event.get("sessionId") != self.session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled":
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in params["args"])
                log.console.append((params["type"], text))
            elif method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                log.exceptions.append(details.get("exception", {}).get("description", details["text"]))
            elif method == "Network.requestWillBeSent":
                log.requests.append(params["request"]["url"])
            elif method == "Log.entryAdded":
                log.log_entries.append((params["entry"]["level"], params["entry"]["text"]))
            elif method == "Page.javascriptDialogOpening":
                log.dialogs.append(params.get("message", ""))
        return log

    def evaluate(self, expression: str) -> Any:
        """The JSON value of ``expression`` in the page (promises awaited)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path | None = None, full_page: bool = True) -> bytes:
        """A PNG of the page (the whole page when ``full_page``), saved to ``path`` if given."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        png = base64.b64decode(self.send("Page.captureScreenshot", params)["data"])
        if path is not None:
            Path(path).write_bytes(png)
        return png

    def click(self, x: float, y: float) -> None:
        """A real mouse click at viewport coordinates."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def hover(self, x: float, y: float) -> None:
        """Move the mouse to viewport coordinates."""
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
