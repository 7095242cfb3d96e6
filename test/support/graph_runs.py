"""Test helpers shared by several files: running the robofollow_sim graph, its results rows,
and polling for a condition."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent.parent  # the test root: ``support`` imports


def child_pythonpath() -> str:
    """PYTHONPATH for child processes: the test root (``support`` is a package there) and
    every test folder, so a node loads a test policy by name: one of ``support``
    ("support.bad_policies:NaNPolicy") or one a test module defines for itself
    ("test_policy_backends:OffsetRampPolicy")."""
    folders = [TEST_DIR] + sorted({p.parent for p in TEST_DIR.rglob("test_*.py")})
    unique = list(dict.fromkeys(str(f) for f in folders))
    return os.pathsep.join(unique + [os.environ.get("PYTHONPATH", "")])


def launch(*graph_args: str, timeout: float = 180, env_extra: dict | None = None):
    """`vla-bridge launch robofollow_sim ARGS` as a subprocess (test/ importable, so policies
    such as "support.bad_policies:NaNPolicy" load). The launcher's own limit comes first: a
    hung graph prints every node's stacks and exits 124 instead of being killed by the
    timeout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = child_pythonpath()
    env.update(env_extra or {})
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", *graph_args,
           "--timeout", str(timeout - 20)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def results(out: Path) -> list[dict]:
    """The rows of a run directory's results.jsonl."""
    return [json.loads(line) for line in (Path(out) / "results.jsonl").read_text().splitlines()]


def wait_until(condition, timeout: float = 2.0, poll: float = 0.005) -> bool:
    """Poll ``condition`` until it holds or ``timeout`` seconds pass; its last value."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(poll)
    return condition()
