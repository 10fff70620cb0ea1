"""Headless Chromium (Debian's ``chromium``) driven over the Chrome DevTools Protocol, one page at a time: as
much of a browser as the end-to-end test needs, with the ``websockets`` client Airflow already brings.

Chromium is kept off the network: no background services, and every host name but 127.0.0.1 fails to
resolve, so a page that tried to load anything from elsewhere (a CDN) would fail visibly.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect

BINARY = shutil.which("chromium")
FLAGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-default-apps",
    "--disable-extensions", "--disable-sync", "--disable-breakpad", "--disable-domain-reliability",
    "--disable-client-side-phishing-detection", "--disable-features=Translate,MediaRouter,OptimizationHints",
    "--metrics-recording-only", "--no-first-run", "--no-default-browser-check", "--no-pings",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--remote-debugging-port=0",
)  # fmt: skip
# What DevTools answers an evaluation whose document went away under it.
NAVIGATING = ("Inspected target navigated or closed", "Cannot find context with specified id")
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class BrowserError(RuntimeError):
    """A DevTools command failed, or the page did not get where it was asked to in time."""


class Chromium:
    """One headless Chromium with one page. ``events`` keeps every protocol event received."""

    def __init__(self, profile: Path, width: int = 1400, height: int = 860):
        self.profile = profile
        self.process = subprocess.Popen(
            [BINARY, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=(profile / "chromium.log").open("wb"),
            start_new_session=True,
        )  # fmt: skip
        self._ids = itertools.count(1)
        self.events: list[dict] = []
        self._connection = contextlib.ExitStack()
        try:
            self._socket = self._connection.enter_context(
                connect(self._page_socket(), max_size=None, proxy=None, open_timeout=30)
            )
        except Exception:
            self.close()
            raise

    def _page_socket(self, timeout: float = 30.0) -> str:
        """The page's DevTools address, once Chromium has written its port."""
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise BrowserError(f"Chromium did not start; see {self.profile / 'chromium.log'}")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with DIRECT.open(f"http://127.0.0.1:{port}/json/list", timeout=10) as response:
            targets = json.load(response)
        return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

    def send(self, method: str, timeout: float = 30.0, **params: Any) -> dict:
        """Runs a command and returns its result; events arriving meanwhile go to ``events``."""
        command_id = next(self._ids)
        self._socket.send(json.dumps({"id": command_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self._socket.recv(timeout=max(0.0, deadline - time.monotonic())))
            if message.get("id") == command_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message["result"]
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if it is a promise)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Polls until the expression is truthy; returns its value. A poll that lands while the page is
        navigating (a form submitted, a redirect) counts as not yet: the next one asks the new document."""
        deadline = time.monotonic() + timeout
        while not (value := self._poll(expression)):
            if time.monotonic() > deadline:
                raise BrowserError(f"still false after {timeout:.0f} s: {expression}")
            time.sleep(0.1)
        return value

    def _poll(self, expression: str) -> Any:
        try:
            return self.evaluate(expression)
        except BrowserError as error:
            if any(phrase in str(error) for phrase in NAVIGATING):
                return None
            raise

    def navigate(self, url: str) -> None:
        self.send("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def click(self, selector: str) -> None:
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")

    def mouse_click(self, element: str) -> None:
        """Clicks the middle of the element ``element`` evaluates to with the mouse, for widgets that listen to
        pointer events rather than ``click()``."""
        self.evaluate(f"{element}.scrollIntoView({{block: 'center'}})")
        x, y = self.evaluate(
            f"(r => [r.x + r.width / 2, r.y + r.height / 2])({element}.getBoundingClientRect())"
        )
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def type_text(self, selector: str, text: str) -> None:
        """Focuses the element, selects what it holds and types over it (deletes it for ""), as a user would."""
        self.evaluate(f"(e => {{ e.focus(); e.select(); }})(document.querySelector({json.dumps(selector)}))")
        if text:
            self.send("Input.insertText", text=text)
        else:
            self.press("Backspace", 8)

    def press(self, key: str, code: int, text: str | None = None) -> None:
        self.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=key, windowsVirtualKeyCode=code,
                  **({"text": text} if text else {}))  # fmt: skip
        self.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=code)

    def press_enter(self) -> None:
        self.press("Enter", 13, "\r")

    def drag(self, start: tuple[float, float], end: tuple[float, float], steps: int = 10) -> None:
        """Drags the mouse with its left button from ``start`` to ``end`` (page pixels)."""
        mouse = "Input.dispatchMouseEvent"
        self.hover(start)
        self.send(mouse, type="mousePressed", x=start[0], y=start[1], button="left", clickCount=1)
        for i in range(1, steps + 1):
            x, y = (start[0] + (end[0] - start[0]) * i / steps, start[1] + (end[1] - start[1]) * i / steps)
            self.send(mouse, type="mouseMoved", x=x, y=y, button="left", buttons=1)
            time.sleep(0.02)
        time.sleep(0.2)  # held still before release: no fling (a map would glide on past the end)
        self.send(mouse, type="mouseMoved", x=end[0], y=end[1], button="left", buttons=1)
        self.send(mouse, type="mouseReleased", x=end[0], y=end[1], button="left", clickCount=1)

    def hover(self, at: tuple[float, float]) -> None:
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=at[0], y=at[1])

    def wheel(self, at: tuple[float, float], delta_y: float) -> None:
        """Turns the mouse wheel at a point (negative: away from the user, which zooms a map in)."""
        self.send("Input.dispatchMouseEvent", type="mouseWheel", x=at[0], y=at[1], deltaX=0, deltaY=delta_y)

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.send("Browser.close", timeout=5)
        with contextlib.suppress(Exception):
            self._connection.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
