"""`vla-bridge serve` in another process for the tests: started on a free port, its log kept,
stopped on request (used by the openpi protocol and the serve security tests)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

from support.cli_process import spawn_cli
from support.graph_runs import child_pythonpath


class ServeProcess:
    """`vla-bridge serve --policy POLICY --port 0 ARGS` in another process; its log kept.
    $VLA_BRIDGE_API_KEY is not inherited (pass it in ``env_extra``). ``warm``: forked from the
    warm command-line process (support/cli_process: no interpreter start-up), for a test that
    talks to the server only; without it a real interpreter (a test of what the system sees of
    the process, its command line or environment)."""

    def __init__(self, *args: str, policy: str = "hold", env_extra: dict | None = None,
                 warm: bool = False):
        env = {k: v for k, v in os.environ.items() if k != "VLA_BRIDGE_API_KEY"}
        env.update({"PYTHONPATH": child_pythonpath(), **(env_extra or {})})
        argv = ["serve", "--policy", policy, "--port", "0", *args]
        if warm:
            self.proc = spawn_cli(*argv, env=env)
        else:
            self.proc = subprocess.Popen([sys.executable, "-m", "vla_bridge.cli", *argv],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, env=env)
        self.log: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            self.log.append(line)
            found = re.search(r"on ws://([^:]+):(\d+)", line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                threading.Thread(target=self._drain, daemon=True).start()
                return
            if not line and self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError("server did not start:\n" + "".join(self.log))

    def _drain(self) -> None:
        for line in self.proc.stdout:
            self.log.append(line)

    def client(self, api_key: str | None = None):
        from openpi_client.websocket_client_policy import WebsocketClientPolicy
        return WebsocketClientPolicy("127.0.0.1", self.port, api_key=api_key)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
