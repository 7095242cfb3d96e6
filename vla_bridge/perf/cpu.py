"""`vla-bridge bench cpu`: CPU-seconds per episode of every node, split by what it was spent on.

Each node of the graph runs with ``VLA_BRIDGE_CPU_PROFILE`` set (ros/cpu_profile.py: the
executor thread's CPU by category, the other threads', the process total) and writes its
figures when it stops. Start-up (imports, building the model, discovery) is no per-episode
cost, so the graph runs twice, with `short` and `long` episodes of the same task, and every
figure is the slope: (long run - short run) / (long - short). The wall time per episode is the
same slope of the launcher's wall time.

Printed per node: physics, rendering, world state, inference, scoring, messages,
serialisation, DDS, glue (the executor thread), Mesa's llvmpipe threads (the CPU rasterising
camera images: rendering too), the other threads, their sum, and the process's own total (from
``getrusage``, less the executor thread's CPU before the node was built, which no episode
pays); `adds up` is sum / total (the split must explain the measured CPU, within 10 %).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vla_bridge.ros.cpu_profile import CATEGORIES, ENV

COLUMNS = CATEGORIES + ("render_threads", "other_threads")
SHORT = {"physics": "physics", "rendering": "render", "world_state": "world", "inference": "infer", "scoring": "score",
         "messages": "msgs", "serialisation": "serial", "dds": "dds", "glue": "glue",
         "render_threads": "llvmpipe", "other_threads": "threads"}


def profile_run(task: str, episodes: int, policy: str, extra: tuple[str, ...],
                out: Path) -> tuple[dict[str, dict], float, list[dict]]:
    """One graph run with profiling: node -> its figures, the wall time, the result rows."""
    run_dir, profiles = out / "run", out / "profiles"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", "--tasks", task,
           "--rounds", str(episodes), "--policy", policy, "--output", str(run_dir),
           "--resume", "false", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          env={**os.environ, ENV: str(profiles)})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"graph run failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n"
                           f"{proc.stderr[-2000:]}")
    nodes = {}
    for path in sorted(profiles.glob("*.json")):
        figures = json.loads(path.read_text())
        nodes[figures["node"]] = figures
    rows = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    return nodes, wall, rows


def _flat(figures: dict) -> dict[str, float]:
    flat = dict(figures["categories"])
    flat["render_threads"] = figures.get("render_threads", 0.0)
    flat["other_threads"] = figures["other_threads"]
    # the process's own total less the executor thread's CPU before the node was built (its
    # imports, model loading): the same span the categories cover
    flat["total"] = figures["total"] - figures["before_install"]
    return flat


def per_episode(short: dict, long: dict, n_short: int, n_long: int) -> dict[str, dict]:
    """node -> figure -> CPU-s per episode (the slope between the two runs)."""
    out = {}
    for node in sorted(set(short) & set(long)):
        a, b = _flat(short[node]), _flat(long[node])
        out[node] = {k: (b[k] - a[k]) / (n_long - n_short) for k in b}
    return out


def format_table(slopes: dict[str, dict], wall: float) -> list[str]:
    head = f"{'node':<16}" + "".join(f"{SHORT[c]:>9}" for c in COLUMNS) + \
        f"{'sum':>8}{'total':>8}{'adds up':>9}"
    lines = [head, "-" * len(head)]
    sums = dict.fromkeys(COLUMNS + ("sum", "total"), 0.0)
    for node, f in slopes.items():
        split = sum(f[c] for c in COLUMNS)
        check = f"{100 * split / f['total']:.0f} %" if f["total"] > 0.005 else "-"
        lines.append(f"{node:<16}" + "".join(f"{f[c]:>9.3f}" for c in COLUMNS) +
                     f"{split:>8.3f}{f['total']:>8.3f}{check:>9}")
        for c in COLUMNS:
            sums[c] += f[c]
        sums["sum"] += split
        sums["total"] += f["total"]
    check = f"{100 * sums['sum'] / sums['total']:.0f} %" if sums["total"] > 0 else "-"
    lines.append("-" * len(head))
    lines.append(f"{'all nodes':<16}" + "".join(f"{sums[c]:>9.3f}" for c in COLUMNS) +
                 f"{sums['sum']:>8.3f}{sums['total']:>8.3f}{check:>9}")
    lines.append(f"wall time per episode: {wall:.3f} s; CPU per episode, all nodes: "
                 f"{sums['total']:.3f} s ({sums['total'] / wall:.2f} cores busy)")
    return lines


def cpu(task: str, short: int, long: int, policies: list[str], extra: tuple[str, ...] = ()) -> int:
    if not 1 <= short < long:
        raise SystemExit("need 1 <= --short < --long episodes")
    print(f"CPU per episode by node: task {task}, slope between {short} and {long} episodes "
          f"(CPU-seconds; {' '.join(extra) or 'default launch arguments'})")
    for policy in policies:
        with tempfile.TemporaryDirectory() as tmp:
            a, wall_a, rows_a = profile_run(task, short, policy, extra, Path(tmp) / "short")
            b, wall_b, rows_b = profile_run(task, long, policy, extra, Path(tmp) / "long")
        missing = sorted(set(a) ^ set(b))
        print(f"\npolicy {policy}: {len(rows_b)} episodes, "
              f"{sum(r['status'] == 'ok' for r in rows_b)} ok"
              + (f"; nodes without figures in one run: {', '.join(missing)}" if missing else ""))
        for line in format_table(per_episode(a, b, short, long), (wall_b - wall_a) / (long - short)):
            print(line)
    return 0
