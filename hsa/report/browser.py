"""A headless Chromium driven over its DevTools protocol, for checking and photographing report pages.

Chromium is started with ``--remote-debugging-pipe``: the protocol's JSON messages travel over two
pipes (file descriptors 3 and 4, each message ended by a NUL byte), so no port is opened and no
client library is needed. The protocol itself is documented at
https://chromedevtools.github.io/devtools-protocol/. Used by the page tests and by
``benchmarks/bench_report.py`` (render times and the screenshots of docs/report.md)::

    with Chromium() as browser:
        page = browser.open("report.html")
        page.evaluate("document.title"), page.console_errors, page.requests
        page.screenshot("view.png", width=1280, height=900)

No Playwright, no browser download: the Chromium of the system (Debian: ``apt-get install
chromium``; or the binary named by ``HSA_CHROMIUM``).
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Chromium", "Page", "BrowserError", "find_chromium", "CHROMIUM_FLAGS"]

#: Flags of a headless Chromium that runs as root in a container and talks to nothing.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
                  "--disable-extensions", "--mute-audio", "--hide-scrollbars")


class BrowserError(RuntimeError):
    """Chromium could not be found, started or driven; the message says which."""


def find_chromium() -> str | None:
    """The Chromium binary: ``HSA_CHROMIUM``, else ``chromium`` / ``chromium-browser`` / ``google-chrome`` on PATH."""
    named = os.environ.get("HSA_CHROMIUM")
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Chromium:
    """One headless Chromium process; :meth:`open` gives a :class:`Page` per tab. Use it as a context manager."""

    def __init__(self, binary: str | None = None, *, timeout: float = 60.0):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("no Chromium found: install it (Debian: apt-get install chromium) or set HSA_CHROMIUM")
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="hsa-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # move the child's ends above 4 first, so that the dup2 onto 3 and 4 cannot overwrite one another
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def wire() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        try:
            self._proc = subprocess.Popen(
                [self.binary, *CHROMIUM_FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile}",
                 "about:blank"], preexec_fn=wire, pass_fds=(3, 4, hi_r, hi_w), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.close(hi_r)
            os.close(hi_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict] = []
        self.version = self.call("Browser.getVersion")["product"]

    # -- the protocol
    def _read_message(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium did not answer within {self.timeout:.0f} s")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium ({self.binary}) exited (status {self._proc.poll()})")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result; events that arrive meanwhile are kept for :meth:`events`."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        try:
            os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        except BrokenPipeError:
            raise BrowserError(f"Chromium ({self.binary}) exited (status {self._proc.poll()})") from None
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error'].get('message')}")
                return reply.get("result", {})
            self._events.append(reply)

    def wait_for(self, method: str, session: str | None = None, timeout: float | None = None) -> dict:
        """The next event ``method`` (of ``session``), kept or read."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for k, e in enumerate(self._events):
                if e.get("method") == method and (session is None or e.get("sessionId") == session):
                    return self._events.pop(k)
            self._events.append(self._read_message(deadline))

    def events(self, session: str) -> list[dict]:
        """Every event of ``session`` received so far (taken off the queue)."""
        mine = [e for e in self._events if e.get("sessionId") == session]
        self._events = [e for e in self._events if e.get("sessionId") != session]
        return mine

    # -- pages
    def open(self, path: str | Path, *, fragment: str = "", width: int = 1280, height: int = 900,
             color_scheme: str | None = None, wait: str = "document.documentElement.dataset.ready === '1'") -> Page:
        """A new tab showing ``path`` (a file or URL; ``fragment``: what follows its ``#``), once ``wait``
        (JavaScript) is true."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, target, session)
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, session=session)
        if color_scheme:
            self.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme",
                                                                   "value": color_scheme}]}, session=session)
        url = (str(path) if "://" in str(path) else Path(path).resolve().as_uri()) + (f"#{fragment}" if fragment else "")
        started = time.perf_counter()
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired", session)
        page.wait_until(wait)
        page.load_seconds = time.perf_counter() - started
        return page

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Page:
    """One tab: JavaScript, keys, screenshots, and what it logged and requested."""

    def __init__(self, browser: Chromium, target: str, session: str):
        self.browser, self.target, self.session = browser, target, session
        self.load_seconds = 0.0
        self._console_errors: list[str] = []
        self._requests: list[str] = []

    def _drain(self) -> None:
        for e in self.browser.events(self.session):
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                self._console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                self._console_errors.append(d.get("exception", {}).get("description") or d.get("text", "exception"))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                self._console_errors.append(p["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                self._requests.append(p.get("request", {}).get("url", ""))

    @property
    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (a refused request among them) so far."""
        self._drain()
        return list(self._console_errors)

    @property
    def requests(self) -> list[str]:
        """The URL of every request the page started so far (the page itself first)."""
        self._drain()
        return list(self._requests)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise)."""
        out = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                      "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in out:
            d = out["exceptionDetails"]
            raise BrowserError(f"{expression[:80]}: {d.get('exception', {}).get('description') or d.get('text')}")
        return out.get("result", {}).get("value")

    def wait_until(self, condition: str, timeout: float = 30.0) -> None:
        """Poll the JavaScript ``condition`` until it is true."""
        deadline = time.monotonic() + timeout
        while not self.evaluate(f"!!({condition})"):
            if time.monotonic() > deadline:
                errors = self.console_errors
                raise BrowserError(f"timed out waiting for {condition}" + (f"; console errors: {errors}" if errors
                                                                            else ""))
            time.sleep(0.05)

    def press(self, key: str) -> None:
        """Type one printable key (as a person would: keydown, char, keyup)."""
        for kind in ("keyDown", "char", "keyUp"):
            params: dict[str, Any] = {"type": kind, "key": key}
            if kind != "keyUp":
                params["text"] = key
            if kind == "keyDown":
                params.pop("text")
                params["type"] = "rawKeyDown"
            self.browser.call("Input.dispatchKeyEvent", params, session=self.session)

    def screenshot(self, path: str | Path, *, clip_selector: str | None = None) -> Path:
        """A PNG of the viewport (or of the element ``clip_selector``) to ``path``."""
        params: dict[str, Any] = {"format": "png"}
        if clip_selector:
            box = self.evaluate(f"(() => {{ const r = document.querySelector({json.dumps(clip_selector)})"
                                ".getBoundingClientRect(); return [r.x + scrollX, r.y + scrollY, r.width, r.height]; })()")
            params["clip"] = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.browser.call("Page.captureScreenshot", params, session=self.session)["data"]
        out = Path(path)
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})
