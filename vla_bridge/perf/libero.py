"""`vla-bridge bench libero`: LIBERO control steps per second, and per-episode wall time and
oracle success per suite through the graph.

    vla-bridge bench libero [--suite libero_spatial,libero_object,libero_goal,libero_10]
                            [--tasks 0-9] [--inits 0] [--no-graph]

1. **Cameras** (in .venv-libero, one process, libero_spatial task 0, LIBERO's 20 Hz control
   and timestep unchanged): steps/s with no camera read, with both 256x256 cameras rendered
   every step (plain robosuite), and rendered only on the steps before an observation (every
   5th, as openpi's LIBERO client replans): what the LIBERO backend does.
2. **Through the graph** (unless --no-graph): `vla-bridge launch libero_sim` with the LIBERO
   oracle over the suites, tasks and initial states asked for; per suite: episodes, success
   (LIBERO's predicates), mean wall time per episode (start to done) and control steps per
   second (steps / wall time, both cameras on every observation).

It prints figures and asserts nothing; run it on an idle machine for numbers to quote.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vla_bridge.benchmarks.libero.protocol import failure_reason
from vla_bridge.paths import LIBERO_PYTHON

REPO = Path(__file__).resolve().parents[2]


def camera_rates(steps: int = 60) -> dict:
    """Steps/s on libero_spatial task 0 (run inside .venv-libero)."""
    import numpy as np

    from vla_bridge.sim_nodes.libero.backend import LiberoBackend
    out = {}
    for mode in ("no cameras read", "every step", "every 5th step"):
        backend = LiberoBackend(render_every_step=mode == "every step")
        backend.reset("libero_spatial", "0:0", 7)
        idle = np.array([0, 0, 0, 0, 0, 0, 1.0])
        for _ in range(5):  # warm-up (numba compiles robosuite's controller)
            backend.apply(idle)
            backend.step()
        n = steps if mode != "every step" else max(10, steps // 4)
        t0 = time.perf_counter()
        for k in range(n):
            if mode == "every 5th step" and k % 5 == 4:
                backend.observe_next()
            backend.apply(idle)
            backend.step()
        out[mode] = n / (time.perf_counter() - t0)
        backend.close()
    return out


def graph_rows(suites: str, tasks: str, inits: str, timeout: float) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="vla_bridge_bench_libero_") as tmp:
        cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "libero_sim", "--suite", suites,
               "--tasks", tasks, "--inits", inits, "--output", tmp, "--resume", "false",
               "--timeout", str(int(timeout))]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                              timeout=timeout + 60)
        if proc.returncode != 0:
            print((proc.stdout + proc.stderr)[-3000:], file=sys.stderr)
            raise RuntimeError(f"libero_sim graph exited {proc.returncode}")
        return [json.loads(line) for line in (Path(tmp) / "results.jsonl").read_text().splitlines()]


def speed(suites: str, tasks: str, inits: str, graph: bool = True) -> int:
    if not LIBERO_PYTHON.exists():
        print(f"{LIBERO_PYTHON} absent: `bash scripts/setup.sh libero` builds it", file=sys.stderr)
        return 2
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    proc = subprocess.run([str(LIBERO_PYTHON), "-m", "vla_bridge.perf.libero", "--cameras"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    rates = json.loads(proc.stdout.strip().splitlines()[-1])
    print("LIBERO steps/s in one process (libero_spatial task 0, two 256x256 cameras):")
    for mode, rate in rates.items():
        print(f"  cameras {mode:16} {rate:7.1f} steps/s")
    if not graph:
        return 0
    t0 = time.perf_counter()
    rows = graph_rows(suites, tasks, inits, timeout=3600)
    print(f"\nthrough the graph (LIBERO oracle, {len(rows)} episodes in "
          f"{time.perf_counter() - t0:.0f} s wall, graph start included):")
    print(f"  {'suite':16} {'episodes':>8} {'success':>8} {'s/episode':>10} {'steps/s':>8}")
    for suite in dict.fromkeys(r["suite"] for r in rows):
        mine = [r for r in rows if r["suite"] == suite]
        ok = sum(bool(r.get("success")) for r in mine)
        wall = sum(r["wall_s"] for r in mine)
        steps = sum(r.get("steps") or 0 for r in mine)
        print(f"  {suite:16} {len(mine):8d} {ok:4d}/{len(mine):<3d} {wall / len(mine):10.1f} "
              f"{steps / wall:8.1f}")
    for r in rows:
        if not r.get("success"):
            print(f"  failed {r['episode']} ({r['instruction']}): {failure_reason(r)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--cameras"]:
        print(json.dumps(camera_rates()))
    else:
        print("usage: vla-bridge bench libero [--suite ...] (this module: --cameras)",
              file=sys.stderr)
        sys.exit(2)
