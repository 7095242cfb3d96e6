"""What the package's launcher tells the graph's end node (the evaluator) about node processes.

DDS cannot say *why* a node left the graph, and forgets a dead node only when its lease runs
out (10 s with config/fastdds_profile.xml). The launcher sees its processes directly, so it
writes one JSON line per event to a file whose path the nodes find in ``$VLA_BRIDGE_NODE_EVENTS``:

    {"event": "started",   "node": "policy_node", "pid": 123}
    {"event": "restarted", "node": "policy_node", "how": "code -9 (SIGKILL)", "restart": 1, "of": 2}
    {"event": "died",      "node": "sim_node",    "how": "code 1"}   (for good: the run ends)

A ``restarted`` line is written before the new process starts (its own ``started`` line
follows), so a reader that meets the new node on the graph has the restart line to read.
Pure: no rclpy, no evaluation code.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

ENV = "VLA_BRIDGE_NODE_EVENTS"
STARTED, RESTARTED, DIED = "started", "restarted", "died"


def write_event(path: Path, event: str, node: str, **fields) -> None:
    """Append one event line (flushed at once: the reader polls the file)."""
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"event": event, "node": node, **fields}) + "\n")


class NodeEvents:
    """Reads the launcher's events as they are appended; knows every node's current pid."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offset = 0
        self.pids: dict[str, int] = {}

    @classmethod
    def from_env(cls, env=None) -> NodeEvents | None:
        """The launcher's events, or None when the graph runs without it (ros2 launch)."""
        path = (os.environ if env is None else env).get(ENV)
        return cls(path) if path else None

    def poll(self) -> list[dict]:
        """The complete lines appended since the last call."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        complete = data[:data.rfind(b"\n") + 1]  # a line being written waits for the next call
        self.offset += len(complete)
        events = [json.loads(line) for line in complete.splitlines() if line.strip()]
        for event in events:
            if event["event"] == STARTED:
                self.pids[event["node"]] = int(event["pid"])
        return events

    def process_state(self, node: str) -> str | None:
        """"running" or "stopped" (SIGSTOP, Ctrl-Z, a debugger) while the node's process
        lives, None when it is gone or unknown."""
        pid = self.pids.get(node)
        return None if pid is None else process_state(pid)


def process_state(pid: int) -> str | None:
    """"running", "stopped" or None (no such process, or a zombie) for a local pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)  # no /proc (not Linux): alive or not is all we can tell
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return "running"
    state = stat.rsplit(")", 1)[1].split()[0]  # the name in parentheses may hold spaces
    return {"T": "stopped", "t": "stopped", "Z": None, "X": None}.get(state, "running")
