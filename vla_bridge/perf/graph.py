"""Benchmarks that print figures (never asserted in unit tests).

`overhead()` (`vla-bridge bench overhead`): wall time of the same episodes through the full node graph
(separate processes over DDS) versus run directly in one process (same MuJoCo backend, same
oracle, same scorer, images rendered at every policy call in both). The ratio is what the
bridge costs.

`recording()` (`vla-bridge bench recording`): the same episodes with and without record:=true
(the recorder node writing one MCAP bag per episode): wall-time overhead, bag size, scores.

`throughput()` (`vla-bridge bench throughput`): oracle trials per minute through the node graph on a sample
of every scene and level the oracle can plan, and the projected wall time of the full
5,540-trial RoboFollow protocol.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run_direct(task_id: str, episodes: int) -> list[dict]:
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.sim_nodes.session import SimSession
    from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials

    task = load_suite().get(task_id)
    session, policy = SimSession(MujocoBackend()), OraclePolicy()
    rows = []
    for trial in plan_trials([task], episodes):
        t0 = time.perf_counter()
        _, score = run_episode_direct(session, policy, task, trial.seed, images=True)
        rows.append({"wall_s": time.perf_counter() - t0, "intent_score": score.intent_score,
                     "exec_score": score.exec_score, "complete": score.complete})
    session.backend.close()
    return rows


def run_graph(task_id: str, episodes: int, *extra: str, bag_sizes: list | None = None) -> list[dict]:
    """The rows of one graph run; `extra` launch arguments; `bag_sizes` collects the bytes of
    each recorded bag (record:=true)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim",
               "--tasks", task_id, "--rounds", str(episodes),
               "--output", str(out), "--resume", "false", *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"graph run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                               f"{proc.stderr[-3000:]}")
        if bag_sizes is not None:
            bag_sizes += [sum(f.stat().st_size for f in bag.iterdir())
                          for bag in sorted((out / "bags").glob("[!.]*"))]
        return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _times(rows: list[dict]) -> str:
    return ", ".join(f"{r['wall_s']:.2f}" for r in rows)


def overhead(task_id: str, episodes: int) -> int:
    if episodes < 2:
        raise SystemExit("--episodes must be >= 2 (the first episode of each side is a warm-up)")
    print(f"bridge overhead: task {task_id}, {episodes} episodes per side (first = warm-up)")
    direct = run_direct(task_id, episodes)
    graph = run_graph(task_id, episodes)
    d = statistics.mean(r["wall_s"] for r in direct[1:])
    g = statistics.mean(r["wall_s"] for r in graph[1:])
    same = all(abs(a["intent_score"] - b["intent_score"]) < 1e-9 and
               abs(a["exec_score"] - b["exec_score"]) < 1e-9 and a["complete"] == b["complete"]
               for a, b in zip(direct, graph))
    print(f"direct, one process : {d:.3f} s/episode  ({_times(direct)})")
    print(f"node graph over DDS : {g:.3f} s/episode  ({_times(graph)})")
    print(f"ratio graph/direct  : {g / d:.3f}   (target <= 1.05)")
    print(f"identical scores    : {same}")
    timing = [r.get("sim_timing_s", {}) for r in graph[1:]]
    if all(timing):
        parts = {k: statistics.mean(t[k] for t in timing) for k in timing[0]}
        print("graph episode, sim node's view: " + ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
              + "  (wait = observation published -> chunk received)")
    return 0


def recording(task_id: str, episodes: int) -> int:
    """What record:=true costs: episode wall time with and without the recorder node."""
    if episodes < 2:
        raise SystemExit("--episodes must be >= 2 (the first episode of each side is a warm-up)")
    print(f"recording overhead: task {task_id}, {episodes} episodes per side (first = warm-up)")
    sizes: list[int] = []
    plain = run_graph(task_id, episodes)
    recorded = run_graph(task_id, episodes, "--record", "true", bag_sizes=sizes)
    p = statistics.mean(r["wall_s"] for r in plain[1:])
    r = statistics.mean(r["wall_s"] for r in recorded[1:])
    keys = ("intent_score", "exec_score", "complete", "frames", "policy_calls")
    same = [{k: a[k] for k in keys} for a in plain] == [{k: b[k] for k in keys} for b in recorded]
    print(f"without recording   : {p:.3f} s/episode  ({_times(plain)})")
    print(f"record:=true        : {r:.3f} s/episode  ({_times(recorded)})")
    print(f"overhead            : {100 * (r / p - 1):+.1f} %   (target < 15 %)")
    print(f"bag size            : {statistics.mean(sizes) / 1e6:.2f} MB/episode (MCAP, "
          f"{len(sizes)} bags)")
    print(f"identical scores    : {same}")
    return 0


def sample_tasks(per_level: int) -> list[str]:
    """`per_level` tasks of every scene and level the oracle plans, spread over each list."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.policy_nodes.oracle import PLANNERS
    suite = load_suite()
    ids = []
    for scene in sorted(PLANNERS):
        for level in ("L0", "L1", "L2", "L3"):
            tasks = suite.eval_tasks(scenes=[scene], levels=[level])
            step = max(1, len(tasks) // per_level)
            ids += [t.id for t in tasks[::step][:per_level]]
    return ids


def throughput(per_level: int) -> int:
    from vla_bridge.policy_nodes.oracle import PLANNERS
    sample = sample_tasks(per_level)
    print(f"throughput: {len(sample)} oracle trials through the node graph "
          f"(scenes {', '.join(sorted(PLANNERS))})")
    t0 = time.perf_counter()
    rows = run_graph(",".join(sample), 1)
    wall = time.perf_counter() - t0
    per_trial = statistics.mean(r["wall_s"] for r in rows)
    ok = sum(r["status"] == "ok" for r in rows)
    print(f"episodes            : {len(rows)} ({ok} ok), {per_trial:.2f} s each in the evaluator, "
          f"{wall:.1f} s wall incl. start-up")
    print(f"trials per minute   : {60 / per_trial:.1f}")
    full = 5540 * per_trial
    print(f"full protocol       : 5,540 trials -> {full / 3600:.2f} h projected (target <= 2 h)")
    return 0
