"""LIBERO's own virtualenv for the tests (robosuite 1.4.0 needs mujoco 3.3.7): where it is, a
marker that skips a test without it, and a runner for code that must run inside it."""
from __future__ import annotations

import json
import os
import subprocess
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
