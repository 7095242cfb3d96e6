"""Campaign benchmarks (`vla-bridge bench campaign|multinode`): figures, never asserted.

`scale()`: the same oracle trials as a campaign with 1 and with 2 workers (each its own local
Ray instance): trials per minute, the speed-up, and the time per trial spent outside
episodes (graph start-up, scheduling, merging).

`multinode()`: a Ray cluster of two nodes started locally with `ray start` (one CPU each, so
one graph worker per node), a campaign joining it with ``--ray-address``, and the second
node's raylet killed once its worker is inside a unit: the units it held finish on the other
node. Prints where each unit ran and that every trial is there once.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from vla_bridge.perf.graph import sample_tasks
from vla_bridge.evaluation.run_dir import read_jsonl


def run_campaign_cli(out: Path, tasks: list[str], rounds: int, workers: int, *extra: str,
                     env: dict | None = None, wait: bool = True):
    cmd = [sys.executable, "-m", "vla_bridge.cli", "campaign", "robofollow_sim",
           "--workers", str(workers), "--tasks", ",".join(tasks), "--rounds", str(rounds),
           "--output", str(out), "--resume", "false", *extra]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"campaign failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n"
                           f"{proc.stderr[-2000:]}")
    return proc


def session_figures(out: Path) -> dict:
    return json.loads((out / "campaign.json").read_text())["sessions"][-1]


def scale(per_level: int, rounds: int) -> int:
    tasks = sample_tasks(per_level)
    print(f"campaign scale: {len(tasks)} tasks x {rounds} rounds of oracle trials "
          f"({os.cpu_count()} CPUs here)")
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            out = Path(tmp) / f"w{workers}"
            t0 = time.perf_counter()
            run_campaign_cli(out, tasks, rounds, workers)
            wall = time.perf_counter() - t0
            f = figures[workers] = session_figures(out)
            rows = read_jsonl(out / "results.jsonl")
            ok = sum(r["status"] == "ok" for r in rows)
            print(f"{workers} worker{'s' if workers > 1 else ' '}: {f['trials_run']} trials "
                  f"({ok} ok) in {f['wall_s']:.0f} s -> {f['trials_per_min']:.1f} trials/min; "
                  f"{f['overhead_s_per_trial']:.2f} s per trial outside episodes "
                  f"({f['unit_trials']} trials per unit); {wall:.0f} s with Ray start-up")
    speedup = figures[2]["trials_per_min"] / figures[1]["trials_per_min"]
    print(f"speed-up with 2 workers: {speedup:.2f}x (target >= 1.7x)")
    return 0


# ---------------------------------------------------------------------------- multinode
def _ray(*args: str, env: dict) -> None:
    ray_bin = Path(sys.executable).with_name("ray")
    subprocess.run([str(ray_bin), *args], check=True, capture_output=True, text=True, env=env)


def _raylet_pid(resource: str) -> int | None:
    out = subprocess.run(["pgrep", "-f", f"raylet.*static_resource_list={resource},"],
                         capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def multinode(per_level: int, rounds: int, port: int = 6391) -> int:
    env = dict(os.environ, RAY_AUTH_MODE="token")  # `ray start` clusters use token auth
    address = f"127.0.0.1:{port}"
    tasks = sample_tasks(per_level)
    print(f"multinode: a local Ray cluster of 2 nodes (1 CPU each) at {address}; "
          f"{len(tasks)} tasks x {rounds} rounds")
    _ray("start", "--head", f"--port={port}", "--num-cpus=1", "--include-dashboard=false",
         "--disable-usage-stats", '--resources={"bench_node_a": 1}', env=env)
    try:
        _ray("start", f"--address={address}", "--num-cpus=1", "--disable-usage-stats",
             '--resources={"bench_node_b": 1}', env=env)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "run"
            proc = run_campaign_cli(out, tasks, rounds, 2, "--ray-address", address,
                                    "--unit-trials", str(rounds), env=env, wait=False)
            killed = _kill_node_b_when_busy(out, proc)
            output, _ = proc.communicate()
            print("\n".join(line for line in output.splitlines() if line.startswith("campaign:")))
            _print_placement(out, killed)
            return proc.returncode
    finally:
        _ray("stop", "--force", env=env)


def _kill_node_b_when_busy(out: Path, proc) -> bool:
    """SIGKILL node b's raylet once a unit has run there for a few seconds."""
    deadline = time.monotonic() + 600
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            state = json.loads((out / "campaign.json").read_text())
        except (OSError, json.JSONDecodeError):
            time.sleep(0.5)
            continue
        workers = state["sessions"][-1].get("worker_processes", [])
        nodes = {w["node"] for w in workers}
        done_units = sum(1 for u in state["units"].values() for a in u["attempts"])
        if len(nodes) == 2 and done_units >= 2:
            pid = _raylet_pid("bench_node_b")
            if pid:
                time.sleep(3.0)  # inside its next unit
                os.kill(pid, signal.SIGKILL)
                print(f"multinode: killed node b's raylet (pid {pid}) with units running")
                return True
        time.sleep(0.5)
    return False


def _print_placement(out: Path, killed: bool) -> None:
    state = json.loads((out / "campaign.json").read_text())
    per_node = Counter()
    for name, unit in sorted(state["units"].items()):
        outcomes = [f"{a['outcome']} (worker {a['worker']}, node {a['node']})"
                    for a in unit["attempts"]]
        per_node[unit["attempts"][-1]["node"]] += unit["trials"]
        print(f"  {name} {', '.join(unit['tasks'])}: {' -> '.join(outcomes)}")
    rows = read_jsonl(out / "results.jsonl")
    counts = Counter(r["key"] for r in rows)
    print(f"trials finished per node: {dict(per_node)}")
    print(f"results: {len(rows)} rows, {len(counts)} distinct trials, max copies of one trial "
          f"{max(counts.values()) if counts else 0}; node b killed: {killed}; run status "
          f"{json.loads((out / 'run.json').read_text())['status']}")
