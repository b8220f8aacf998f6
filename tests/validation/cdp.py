"""A minimal Chrome DevTools Protocol client over --remote-debugging-pipe (no websocket library, no port):
headless Chromium reads NUL-terminated JSON commands on its fd 3 and writes replies and events on its fd 4."""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium; ``page(url)`` opens a tab and returns its session id."""

    def __init__(self, binary: str, profile: Path, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # the child's ends parked above 100, then placed on fds 3 and 4 (dup2 clears close-on-exec)
        child_in = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 100)
        child_out = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 100)
        os.close(to_browser_r)
        os.close(from_browser_w)

        def place_fds() -> None:
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", f"--user-data-dir={profile}",
             "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, close_fds=False,
            preexec_fn=place_fds)
        os.close(child_in)
        os.close(child_out)
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def close(self) -> str:
        """Stop the browser; returns its stderr."""
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        try:
            self.proc.terminate()
            _out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _out, err = self.proc.communicate()
        return err.decode(errors="replace")

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise CdpError("no answer from chromium in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise CdpError("chromium closed the debugging pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        for ev in self.events:
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method and ev.get("sessionId") == session:
                return ev

    def page(self, url: str, width: int, height: int) -> str:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", {}, session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        self.send("Page.navigate", {"url": url}, session)
        self.wait_event("Page.loadEventFired", session)
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, width: int) -> bytes:
        """The whole page at the given width, as PNG."""
        height = self.evaluate(session, "document.documentElement.scrollHeight")
        return base64.b64decode(self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, session)["data"])

    def pdf(self, session: str) -> bytes:
        """The page printed as Chromium prints it: the page size and margins of the CSS @page rule."""
        return base64.b64decode(self.send("Page.printToPDF", {"printBackground": True, "preferCSSPageSize": True},
                                          session)["data"])

    def session_events(self, session: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("sessionId") == session]
