"""`vla-bridge bench libero-cost`: LIBERO episodes per hour per core through the graph, beside
vla-eval's figure (#24 point 4: "per core, vla_bridge should be no slower").

    vla-bridge bench libero-cost [--suite libero_object] [--tasks 0-3] [--inits 0-1]
                                 [--workers 1,2] [--cpu-inits 1,2] [--policy libero_oracle]

Two figures, oracle episodes by default:

(a) **Campaign throughput.** `vla-bridge campaign libero_sim --workers W` on the selection (a
    local Ray instance of its own, a fresh run directory), for each W: episodes / wall time /
    the cores it may use, min(W, os.cpu_count()). The wall time is the whole command (Ray's
    and every unit graph's start-up included) and, beside it, the campaign's own (from
    planning to the last merge, campaign.json). Also the CPU-seconds per episode the
    campaign's whole process tree used (Ray included), so a figure taken on a loaded or
    oversubscribed machine can be read by both measures.
(b) **CPU per episode, as a slope.** One graph (`vla-bridge launch libero_sim`, no Ray) on the
    same suite and tasks with the first N and the first M initial states of --inits (--cpu-inits
    N,M): the user+system CPU of its whole process tree (every node, the launcher, the sim's
    rendering threads) for both runs, and (CPU_M - CPU_N) / (episodes_M - episodes_N): start-up
    and each task's first environment drop out, as in `bench cpu`. As episodes per CPU-hour:
    3600 / slope. The long run's CPU per episode with its start-up is printed beside it.

A graph's process tree CPU is ``getrusage(RUSAGE_CHILDREN)`` around the command, this
process a child subreaper (PR_SET_CHILD_SUBREAPER) that reaps what the command leaves
orphaned. Ray's processes are not waited for by their parents (their CPU never reaches
``RUSAGE_CHILDREN``: a campaign read 0.5 CPU-s per episode that way), so a campaign's is
sampled from /proc every SAMPLE_S (`TreeSampler`: each process's CPU at its last sample, a
lower bound); (b) prints the sampled figure beside getrusage's as a check of the sampler.

The reference: vla-eval runs LIBERO's 2,000 episodes in about 18 minutes on one H100 host
with 50 CPU shards, 2000 / 0.3 h / 50 = 133 episodes per hour per shard. Printed beside ours
with which is faster; nothing is asserted.
A campaign is a few graphs at once, so run it on an idle machine for figures to quote; the
load average before and after each run is printed.
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from vla_bridge.benchmarks.libero.protocol import parse_ints
from vla_bridge.campaign.libero_plan import format_ints
from vla_bridge.evaluation.run_dir import read_jsonl
from vla_bridge.paths import LIBERO_PYTHON

REPO = Path(__file__).resolve().parents[2]
#: vla-eval: 2,000 LIBERO episodes in ~18 min on one H100 host with 50 CPU shards
REFERENCE_EPISODES, REFERENCE_MINUTES, REFERENCE_SHARDS = 2000, 18.0, 50
REFERENCE = REFERENCE_EPISODES / (REFERENCE_MINUTES / 60.0) / REFERENCE_SHARDS  # 133.3
PR_SET_CHILD_SUBREAPER = 36
REAP_S = 30.0  # how long orphans the command left are waited for
SAMPLE_S = 0.5  # TreeSampler's period
TICKS = os.sysconf("SC_CLK_TCK")


def _subreaper() -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _reap_orphans(deadline_s: float = REAP_S) -> int:
    """Wait for the processes the command left behind (reparented to us); how many were still
    running at the deadline (their CPU is not counted)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return 0
        if pid:
            continue
        if time.monotonic() > deadline:
            return sum(1 for p in Path("/proc").iterdir()
                       if p.name.isdigit() and _parent(p) == os.getpid())
        time.sleep(0.2)


def _parent(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


class TreeSampler(threading.Thread):
    """The CPU of a process and its descendants (and of the orphans reparented to this
    process), from /proc every `period` s: each process's utime + stime at its last sample,
    so a process loses at most its last period's CPU. For trees whose processes are not
    waited for by their parents (Ray's), where ``RUSAGE_CHILDREN`` never sees them."""

    def __init__(self, root: int, period: float = SAMPLE_S):
        super().__init__(daemon=True)
        self.root, self.period = root, period
        self.cpu: dict[tuple[int, int], float] = {}  # (pid, start time) -> CPU-s
        self.done = threading.Event()

    def sample(self) -> None:
        me, parents, stats = os.getpid(), {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            pid = int(entry.name)
            parents[pid] = int(fields[1])
            stats[pid] = (int(fields[19]), (int(fields[11]) + int(fields[12])) / TICKS)
        children: dict[int, list[int]] = {}
        for pid, parent in parents.items():
            children.setdefault(parent, []).append(pid)
        todo = [self.root] + [pid for pid in children.get(me, []) if pid != self.root]
        seen = set()
        while todo:
            pid = todo.pop()
            if pid in seen or pid not in stats:
                continue
            seen.add(pid)
            start, cpu = stats[pid]
            self.cpu[(pid, start)] = max(cpu, self.cpu.get((pid, start), 0.0))
            todo += children.get(pid, [])

    def run(self) -> None:
        while not self.done.wait(self.period):
            self.sample()

    def total(self) -> float:
        return sum(self.cpu.values())


def run_measured(cmd: list[str], echo_line) -> dict:
    """Run `cmd` (stdout and stderr merged, each line to `echo_line`); its exit code, wall
    time, the CPU-seconds of its process tree by ``RUSAGE_CHILDREN`` (``cpu_s``) and sampled
    (``sampled_cpu_s``, TreeSampler), and the orphans left uncounted."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    tail: list[str] = []
    for line in proc.stdout:
        tail = (tail + [line])[-60:]
        echo_line(line.rstrip("\n"))
    code = proc.wait()
    wall = time.perf_counter() - t0
    left = _reap_orphans()
    sampler.done.set()
    sampler.join()
    return {"returncode": code, "wall_s": wall, "cpu_s": _children_cpu() - cpu0,
            "sampled_cpu_s": sampler.total(), "orphans_left": left, "tail": "".join(tail)}


def _load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


_EPISODE = re.compile(r"\[evaluator_node\] (\[\d+/\d+\] \S+) .*?: (success|failure) after "
                      r"(\S+) steps \(([\d.]+) s")


def _echo_campaign(line: str) -> None:
    if line.startswith("campaign"):
        print(f"    {line}", flush=True)


def _echo_graph(line: str) -> None:
    match = _EPISODE.search(line)
    if match:
        print(f"    {match.group(1)} {match.group(2)} after {match.group(3)} steps "
              f"({match.group(4)} s)", flush=True)


def _compare(ours: float) -> str:
    ratio = ours / REFERENCE
    word = "faster" if ratio >= 1.0 else "slower"
    return f"{ours:7.1f} episodes/h per core: {ratio:.2f}x vla-eval's {REFERENCE:.0f} ({word})"


# ---------------------------------------------------------------------------- (a)
def campaign_throughput(suite: str, tasks: str, inits: str, workers: int, policy: str,
                        domain_base: int, tmp: Path) -> dict:
    out = tmp / f"campaign_w{workers}"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "campaign", "libero_sim", "--workers",
           str(workers), "--domain-base", str(domain_base), "--suite", suite, "--tasks", tasks,
           "--inits", inits, "--policy", policy, "--output", str(out), "--resume", "false"]
    load = _load()
    run = run_measured(cmd, _echo_campaign)
    if run["returncode"] != 0:
        raise RuntimeError(f"campaign with {workers} workers exited {run['returncode']}:\n"
                           f"{run['tail'][-3000:]}")
    session = json.loads((out / "campaign.json").read_text())["sessions"][-1]
    rows = read_jsonl(out / "results.jsonl")
    cores = min(workers, os.cpu_count() or 1)
    episodes = session["trials_run"]
    return {"workers": workers, "cores": cores, "episodes": episodes,
            "successes": sum(bool(r.get("success")) for r in rows),
            "wall_s": run["wall_s"], "campaign_wall_s": session["wall_s"],
            "per_core_h": episodes / (run["wall_s"] / 3600.0) / cores,
            "campaign_per_core_h": episodes / (session["wall_s"] / 3600.0) / cores,
            # Ray's processes are not waited for by their parents: sampled (a lower bound)
            "cpu_s_per_episode": max(run["cpu_s"], run["sampled_cpu_s"]) / max(1, episodes),
            "unit_trials": session["unit_trials"], "units": len(json.loads(
                (out / "campaign.json").read_text())["units"]),
            "orphans_left": run["orphans_left"], "load_before": load, "load_after": _load()}


# ---------------------------------------------------------------------------- (b)
def graph_cpu(suite: str, tasks: str, inits: str, policy: str, tmp: Path, name: str) -> dict:
    out = tmp / name
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "libero_sim", "--suite", suite,
           "--tasks", tasks, "--inits", inits, "--policy", policy, "--output", str(out),
           "--resume", "false"]
    load = _load()
    run = run_measured(cmd, _echo_graph)
    if run["returncode"] != 0:
        raise RuntimeError(f"libero_sim graph ({inits}) exited {run['returncode']}:\n"
                           f"{run['tail'][-3000:]}")
    rows = read_jsonl(out / "results.jsonl")
    return {"episodes": len(rows), "ok": sum(r.get("status") == "ok" for r in rows),
            "cpu_s": run["cpu_s"], "sampled_cpu_s": run["sampled_cpu_s"], "wall_s": run["wall_s"],
            "orphans_left": run["orphans_left"],
            "load_before": load, "load_after": _load()}


def cpu_slope(short: dict, long: dict) -> dict:
    """CPU-seconds and wall seconds per episode between the two runs, episodes per CPU-hour."""
    n = long["episodes"] - short["episodes"]
    cpu = (long["cpu_s"] - short["cpu_s"]) / n
    return {"cpu_s_per_episode": cpu, "wall_s_per_episode": (long["wall_s"] - short["wall_s"]) / n,
            "per_cpu_h": 3600.0 / cpu if cpu > 0 else float("inf"),
            "with_startup_per_cpu_h": 3600.0 * long["episodes"] / long["cpu_s"]}


# ---------------------------------------------------------------------------- the bench
def cost(suite: str, tasks: str, inits: str, workers: list[int], cpu_inits: tuple[int, int],
         policy: str = "libero_oracle", domain_base: int = 100) -> int:
    if not LIBERO_PYTHON.exists():
        print(f"{LIBERO_PYTHON} absent: `bash scripts/setup.sh libero` builds it", file=sys.stderr)
        return 2
    try:
        init_list = parse_ints(inits, 50, "inits")
    except ValueError as exc:
        print(f"vla-bridge bench libero-cost: error: {exc}", file=sys.stderr)
        return 2
    n_short, n_long = cpu_inits
    if not 1 <= n_short < n_long <= len(init_list):
        print(f"vla-bridge bench libero-cost: error: --cpu-inits N,M needs 1 <= N < M <= "
              f"{len(init_list)} (the initial states of --inits {inits})", file=sys.stderr)
        return 2
    if any(w < 1 for w in workers):
        print("vla-bridge bench libero-cost: error: --workers must be >= 1", file=sys.stderr)
        return 2
    reaper = _subreaper()
    print(f"LIBERO cost: {suite} tasks {tasks or 'all'} initial states {inits}, policy {policy}; "
          f"{os.cpu_count()} CPUs here, load average {_load()}"
          + ("" if reaper else " (no subreaper: orphaned processes' CPU is not counted)"),
          flush=True)
    campaigns, slope = [], None
    with tempfile.TemporaryDirectory(prefix="vla_bridge_bench_libero_cost_") as tmp_name:
        tmp = Path(tmp_name)
        for w in workers:
            print(f"\n(a) campaign with {w} worker{'s' if w > 1 else ''}:", flush=True)
            campaigns.append(campaign_throughput(suite, tasks, inits, w, policy, domain_base, tmp))
        runs = []
        for n in (n_short, n_long):
            chosen = format_ints(init_list[:n])
            print(f"\n(b) one graph, initial states {chosen} (CPU of the process tree):",
                  flush=True)
            runs.append(graph_cpu(suite, tasks, chosen, policy, tmp, f"graph_{n}"))
        slope = cpu_slope(*runs)
    print_figures(campaigns, runs, slope)
    return 0


def print_figures(campaigns: list[dict], runs: list[dict], slope: dict) -> None:
    print(f"\nvla-eval reference: {REFERENCE_EPISODES} LIBERO episodes in {REFERENCE_MINUTES:.0f} "
          f"min on {REFERENCE_SHARDS} CPU shards (one H100 host) = {REFERENCE:.0f} episodes/h "
          "per shard")
    print("\n(a) campaign throughput per core (episodes / wall hour / min(workers, CPUs)):")
    for c in campaigns:
        print(f"  {c['workers']} worker(s) on {c['cores']} core(s): {c['episodes']} episodes "
              f"({c['successes']} successes) in {c['wall_s']:.0f} s wall with Ray start-up "
              f"({c['campaign_wall_s']:.0f} s campaign), {c['units']} units of <= "
              f"{c['unit_trials']}; load {c['load_before']} -> {c['load_after']}")
        print(f"    command wall:  {_compare(c['per_core_h'])}")
        print(f"    campaign wall: {_compare(c['campaign_per_core_h'])}")
        print(f"    CPU of the whole tree (Ray included, sampled every {SAMPLE_S} s): "
              f"{c['cpu_s_per_episode']:.1f} CPU-s per "
              f"episode = {_compare(3600.0 / max(1e-9, c['cpu_s_per_episode']))} (CPU-hour)"
              + (f"; {c['orphans_left']} processes still running, not counted"
                 if c["orphans_left"] else ""))
    short, long = runs
    print(f"\n(b) one graph: {short['episodes']} episodes: {short['cpu_s']:.1f} CPU-s in "
          f"{short['wall_s']:.0f} s (load {short['load_before']}); {long['episodes']} episodes: "
          f"{long['cpu_s']:.1f} CPU-s in {long['wall_s']:.0f} s (load {long['load_before']}); "
          f"sampled from /proc: {short['sampled_cpu_s']:.1f} and {long['sampled_cpu_s']:.1f}")
    print(f"  slope: {slope['cpu_s_per_episode']:.1f} CPU-s per episode "
          f"({slope['wall_s_per_episode']:.1f} s wall) = {_compare(slope['per_cpu_h'])} "
          "(CPU-hour)")
    print(f"  the long run with its start-up: {_compare(slope['with_startup_per_cpu_h'])} "
          "(CPU-hour)")
