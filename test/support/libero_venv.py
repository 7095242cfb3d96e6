"""LIBERO's own virtualenv for the tests (robosuite 1.4.0 needs mujoco 3.3.7): where it is, a
marker that skips a test without it, a runner for code that must run inside it, and the
launched LIBERO graph."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LIBERO_PYTHON = REPO / ".venv-libero" / "bin" / "python"
needs_libero_venv = pytest.mark.skipif(
    not LIBERO_PYTHON.exists(),
    reason=f"{LIBERO_PYTHON} absent: `bash scripts/setup.sh libero` builds it (setup.sh test does)")


def run_in_libero_venv(code: str, timeout: float = 300) -> dict:
    """Run `code` with the LIBERO venv's Python; its last stdout line is JSON, returned."""
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run([str(LIBERO_PYTHON), "-c", textwrap.dedent(code)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def launch_libero_graph(out: Path, *args: str, timeout_s: int = 240) -> list[dict]:
    """`vla-bridge launch libero_sim ARGS --output OUT` (the test helpers on PYTHONPATH); it
    must exit 0. Returns the run's results.jsonl rows."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "test"),
                                                         os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "vla_bridge.cli", "launch", "libero_sim", *args,
                           "--output", str(out), "--timeout", str(timeout_s)],
                          cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout_s + 40)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
