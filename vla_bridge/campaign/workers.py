"""Ray actors of a campaign. Importing this module needs Ray; the classes are wrapped with
``ray.remote`` by the driver (so resources are chosen per campaign).

A `GraphWorker` runs units one at a time: `vla-bridge launch GRAPH ...` in a subprocess with
the worker's own ``ROS_DOMAIN_ID`` (graphs of two workers never hear each other) and its own
temporary directory for the launcher's parameter and event files (the launcher makes one per
graph). The subprocess gets SIGTERM when the actor dies (PR_SET_PDEATHSIG), so a killed
worker or node leaves no graph behind to write into a unit directory that is being retried.

A `PolicyServerActor` runs `vla-bridge serve` for policies that need a GPU: Ray gives it
``num_gpus`` and sets ``CUDA_VISIBLE_DEVICES``; the graph workers reach it as an openpi
client.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from vla_bridge.ros.launcher import _die_with_parent


def _node_name() -> str:
    try:
        import ray
        return ray.get_runtime_context().get_node_id()[:12]
    except Exception:  # noqa: BLE001 - only a label in campaign.json
        return socket.gethostname()


class GraphWorker:
    def __init__(self, index: int, domain_id: int, log_path: str):
        self.index = index
        self.domain_id = domain_id
        self.log_path = Path(log_path)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)

    def describe(self) -> dict:
        return {"index": self.index, "pid": os.getpid(), "node": _node_name(),
                "domain_id": self.domain_id}

    def run_unit(self, name: str, graph: str, tokens: list[str], timeout_s: float | None) -> dict:
        """Run one unit's graph to its end; its exit code and wall time (never raises for a
        failed graph: the driver decides about retries)."""
        env = dict(os.environ, ROS_DOMAIN_ID=str(self.domain_id), PYTHONUNBUFFERED="1")
        command = [sys.executable, "-m", "vla_bridge.cli", "launch", graph, *tokens]
        t0 = time.monotonic()
        with open(self.log_path, "a") as log:
            log.write(f"\n===== unit {name} on worker {self.index} (pid {os.getpid()}, ROS domain "
                      f"{self.domain_id}) {time.strftime('%H:%M:%S')}\n$ {' '.join(command)}\n")
            log.flush()
            try:
                code = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                      preexec_fn=_die_with_parent, timeout=timeout_s).returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
            log.write(f"===== unit {name} exited with {code} after "
                      f"{time.monotonic() - t0:.1f} s\n")
        return {"returncode": code, "wall_s": time.monotonic() - t0, "node": _node_name()}


class PolicyServerActor:
    """`vla-bridge serve --policy SPEC` on this actor's node, listening on `host` (a free
    port); `address()` is what graph workers pass to the openpi backend."""

    def __init__(self, policy: str, host: str, log_path: str, extra: list[str] | None = None):
        self.host = host
        with socket.socket() as s:  # a free port on this node
            s.bind((host, 0))
            self.port = s.getsockname()[1]
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        self.log = open(log_path, "a")
        command = [sys.executable, "-m", "vla_bridge.cli", "serve", "--policy", policy,
                   "--host", host, "--port", str(self.port), *(extra or [])]
        self.log.write(f"$ {' '.join(command)} (CUDA_VISIBLE_DEVICES="
                       f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')})\n")
        self.log.flush()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        preexec_fn=_die_with_parent)

    def address(self, wait_s: float = 60.0) -> tuple[str, int]:
        """(host, port) once the server accepts connections; RuntimeError if it died."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"policy server exited with code {self.process.returncode}; "
                                   f"see {self.log.name}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1.0):
                    return self.host, self.port
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"policy server not listening on {self.host}:{self.port} after "
                           f"{wait_s:.0f} s; see {self.log.name}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
