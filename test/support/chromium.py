"""Headless Chromium for browser tests, driven over the DevTools protocol (CDP) with the
`websockets` client the project already has: open a local page, collect every resource that
failed to load, and evaluate JavaScript in it.

`chromium_or_skip()` gives the binary (Debian's `chromium`; `scripts/setup.sh test` installs
it) or skips the test saying how to get it."""
from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

START_S = 30.0


def chromium_or_skip() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("no Chromium (apt-get install chromium; scripts/setup.sh test installs it)")


class Page:
    """One browser tab on a page; `evaluate` runs JavaScript in it (promises awaited)."""

    def __init__(self, ws):
        self.ws = ws
        self._ids = itertools.count(1)
        self.events: list[dict] = []

    def call(self, method: str, timeout: float = 30.0, **params) -> dict:
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == msg_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            self.events.append(message)
            if message.get("method") == method:
                return message

    def evaluate(self, expression: str, timeout: float = 30.0):
        result = self.call("Runtime.evaluate", timeout=timeout, expression=expression,
                           awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def failed_loads(self) -> list[dict]:
        """Every resource the page could not load (CDP Network.loadingFailed)."""
        return [e["params"] for e in self.events if e.get("method") == "Network.loadingFailed"]


@contextlib.contextmanager
def open_page(path: Path):
    """A Page with `path` loaded (its load event fired), in a headless Chromium of its own."""
    from websockets.sync.client import connect

    binary = chromium_or_skip()
    # the browser's helper processes may still be writing the profile as it is removed
    with tempfile.TemporaryDirectory(prefix="chromium-profile-",
                                     ignore_cleanup_errors=True) as profile:
        process = subprocess.Popen(
            [binary, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--autoplay-policy=no-user-gesture-required", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True)  # its own process group: stopped with all its helpers
        try:
            browser_url = _devtools_url(process)
            port = re.match(r"ws://[^:]+:(\d+)/", browser_url).group(1)
            with connect(browser_url, max_size=None, open_timeout=10) as browser:
                target = Page(browser).call("Target.createTarget", url="about:blank")
            page_url = f"ws://127.0.0.1:{port}/devtools/page/{target['targetId']}"
            with connect(page_url, max_size=None, open_timeout=10) as ws:
                page = Page(ws)
                page.call("Network.enable")
                page.call("Page.enable")
                page.call("Page.navigate", url=path.resolve().as_uri())
                page.wait_event("Page.loadEventFired", timeout=60)
                yield page
        finally:
            _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """End the browser and its renderer / GPU / utility processes (one process group)."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + wait  # the helpers go after the browser
        while time.monotonic() < deadline:
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def _devtools_url(process: subprocess.Popen) -> str:
    deadline = time.monotonic() + START_S
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            if process.poll() is not None:
                break
            continue
        seen.append(line.rstrip())
        if m := re.search(r"DevTools listening on (ws://\S+)", line):
            # keep reading its stderr, so a chatty browser never blocks on a full pipe
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return m.group(1)
    raise RuntimeError("Chromium did not start its DevTools endpoint: " + " | ".join(seen[-5:]))
