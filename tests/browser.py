"""Headless Chromium for the report's browser tests and its screenshot in docs/.

Two ways in. The command line (``--dump-dom``, ``--screenshot``, ``--force-dark-mode``) for the page as
Chromium parses it. And the DevTools protocol over ``--remote-debugging-pipe`` (JSON messages ending in
a NUL byte, on file descriptors 3 and 4) for what the command line can't do: headless Chromium will not
make a window narrower than 500 px, so a phone's 375 px comes from device-metrics emulation, and the
layout is measured with ``Runtime.evaluate``.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["chromium", "dump_dom", "screenshot", "Browser"]

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run"]


def chromium() -> str | None:
    """The Chromium binary on PATH (Debian's package is ``chromium``), or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def dump_dom(binary: str, url: str, *, width: int = 1280, height: int = 900, dark: bool = False) -> str:
    """The DOM after Chromium has parsed and laid out ``url``, serialised, from the command line."""
    profile = tempfile.mkdtemp(prefix="expertise-chromium-")
    try:
        done = subprocess.run(
            [binary, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             *(["--force-dark-mode"] if dark else []), "--dump-dom", url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0 and done.stdout, done.stderr[-2000:]
    return done.stdout


class Browser:
    """One headless Chromium driven over the DevTools pipe; a context manager."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._id = 0
        self._buffer = b""
        self.session = ""

    def __enter__(self) -> Browser:
        self._profile = tempfile.mkdtemp(prefix="expertise-chromium-")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()

        def _wire() -> None:  # in the child: Chromium reads fd 3 and writes fd 4
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self._process = subprocess.Popen(
            [self.binary, *_FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=_wire, close_fds=False,
        )  # fmt: skip
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._out = os.fdopen(to_chrome_w, "wb")
        self._in = os.fdopen(from_chrome_r, "rb")
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError, RuntimeError):
            self.call("Browser.close", session=False)
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._out.close()
        self._in.close()
        shutil.rmtree(self._profile, ignore_errors=True)

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = True) -> Any:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            message["sessionId"] = self.session
        self._out.write(json.dumps(message).encode() + b"\0")
        self._out.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            while b"\0" not in self._buffer:
                chunk = self._in.read1(1 << 16)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe during {method}")
                self._buffer += chunk
            raw, _, self._buffer = self._buffer.partition(b"\0")
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
        raise RuntimeError(f"no answer to {method} within 60 s")

    def open(self, url: str, *, width: int, height: int = 900, dark: bool = False) -> None:
        """Load ``url`` in a viewport ``width`` CSS pixels wide (a phone's, touch and all, below 500)."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 500},
        )
        scheme = "dark" if dark else "light"
        self.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        self.call("Page.navigate", {"url": url})
        deadline = time.monotonic() + 30
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not finish loading")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (DevTools runs it whatever the page's CSP)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(
                captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
            )
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", params)["data"]))


def screenshot(binary: str, url: str, path: Path, *, width: int, height: int, dark: bool = False) -> None:
    """A screenshot of ``url``'s first ``height`` pixels, from the command line (``--force-dark-mode``
    makes the page see ``prefers-color-scheme: dark``)."""
    profile = tempfile.mkdtemp(prefix="expertise-chromium-")
    try:
        done = subprocess.run(
            [binary, *_FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
             *(["--force-dark-mode"] if dark else []), f"--screenshot={path}", url],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0 and path.is_file(), done.stderr[-2000:]
