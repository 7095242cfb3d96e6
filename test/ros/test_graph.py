"""The node graph as separate processes over real DDS: scoring, determinism, failure modes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import graph_runs
from support.graph_runs import results

pytestmark = pytest.mark.graph  # see setup.cfg's markers

REPO = Path(__file__).resolve().parents[2]
TASK = "L0_place_yellow_block_1_behind_red_sphere"


def launch(*graph_args: str, timeout: float = 240, env_extra: dict | None = None):
    return graph_runs.launch(*graph_args, timeout=timeout, env_extra=env_extra)




def test_graph_scores_an_episode_and_a_rerun_is_identical(tmp_path):
    runs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = launch("--tasks", TASK, "--levels", "", "--rounds", "1", "--output", str(out))
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        runs.append(results(out))
        assert "scene1/L0" in proc.stdout  # the per-level table is printed
    (row_a,), (row_b,) = runs
    assert row_a["status"] == "ok" and row_a["frames"] == 501 and row_a["policy_calls"] == 10
    assert row_a["intent_score"] == 1.0 and row_a["exec_score"] == 1.0 and row_a["complete"]
    keep = ("intent_score", "exec_score", "complete", "stages", "flags", "seed")
    assert {k: row_a[k] for k in keep} == {k: row_b[k] for k in keep}
    run_json = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run_json["status"] == "finished" and run_json["trials"][0]["seed"] == row_a["seed"]
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["scene1/L0"]["completion_rate"] == 1.0
    # per-call policy latency: in the row (one value per call) and summarised for the run
    lat = row_a["policy_latency_ms"]
    assert all(len(lat[k]) == 10 for k in ("inference", "overhead", "preprocess", "transport"))
    assert all(v >= 0 for values in lat.values() for v in values)
    run_latency = json.loads((tmp_path / "a" / "latency.json").read_text())
    assert run_latency["inference"]["calls"] == 10
    assert run_latency["inference"]["p50"] <= run_latency["inference"]["max"]
    assert "policy inference" in proc.stdout


def test_resume_skips_finished_episodes(tmp_path):
    out = tmp_path / "run"
    first = launch("--tasks", TASK, "--levels", "", "--rounds", "1", "--output", str(out))
    assert first.returncode == 0, first.stderr[-2000:]
    second = launch("--tasks", TASK, "--levels", "", "--rounds", "2", "--output", str(out))
    assert second.returncode == 0, second.stderr[-2000:]
    rows = results(out)
    assert [r["round"] for r in rows] == [1, 2]  # round 1 kept, only round 2 was run
    assert "1 already done" in second.stdout + second.stderr


def test_unknown_task_id_is_a_clear_error(tmp_path):
    proc = launch("--tasks", "L0_pickup_yellow_block_9", "--levels", "", "--output",
                  str(tmp_path / "x"), timeout=120)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "L0_pickup_yellow_block_9" in text and "L0_pickup_yellow_block_1" in text  # suggestion


@pytest.mark.parametrize("policy, message", [
    ("support.bad_policies:WrongWidthPolicy", "shape [H, 14]"),
    ("support.bad_policies:NaNPolicy", "NaN"),
])
def test_malformed_actions_fail_the_episode_and_the_run_continues(tmp_path, policy, message):
    out = tmp_path / "run"
    proc = launch("--tasks", TASK, "--levels", "", "--rounds", "2", "--output", str(out),
                  "--policy", policy, "--episode_timeout", "30")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = results(out)
    assert len(rows) == 2 and all(r["status"] == "failed" for r in rows)
    assert message in rows[0]["error"] and rows[0]["intent_score"] == 0.0


def _children(pid: int) -> dict[int, str]:
    out = subprocess.run(["ps", "-o", "pid=,args=", "--ppid", str(pid)], capture_output=True,
                         text=True).stdout
    return {int(line.split(None, 1)[0]): line.split(None, 1)[1] for line in out.strip().splitlines()}


def test_a_node_dying_mid_run_stops_the_graph_with_a_clear_error(tmp_path):
    """With restarts off (the policy node is restarted by default, see test_node_death)."""
    out = tmp_path / "run"
    env = dict(os.environ)
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", "--tasks", TASK,
           "--levels", "", "--rounds", "5", "--output", str(out), "--max-restarts", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 180
        while not (out / "results.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (out / "results.jsonl").exists(), "no episode finished"
        policy = [p for p, args in _children(proc.pid).items() if "policy_node" in args]
        assert policy, _children(proc.pid)
        os.kill(policy[0], signal.SIGKILL)
        text, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "policy_node" in text and "died" in text
    assert len(results(out)) >= 1  # finished episodes are kept
    assert not _children(proc.pid)  # nothing left behind


def test_real_time_mode_runs_on_the_wall_clock(tmp_path):
    """lock_step:=false: the sim ticks every control period whether or not actions arrived;
    the oracle (time-indexed plan) still grasps and lifts within 100 ticks (6 s)."""
    out = tmp_path / "rt"
    t0 = time.monotonic()
    proc = launch("--tasks", "L0_pickup_yellow_block_3", "--levels", "", "--output", str(out),
                  "--lock_step", "false", "--max_policy_calls", "2", "--max_actions_per_call", "50")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = results(out)
    assert row["status"] == "ok" and row["frames"] == 101
    assert row["wall_s"] >= 100 * 0.06 * 0.9  # paced by the wall clock, not as fast as possible
    assert time.monotonic() - t0 >= 6.0
    assert row["stages"][0]["intent"] == 0.8 and row["stages"][0]["exec"] == 0.8  # grasped, lifted


def test_a_hung_graph_times_out_with_every_nodes_stacks(tmp_path):
    """--timeout: a policy stuck in predict (episode_timeout far away) -> exit 124 and the
    Python stacks of every node, the policy's showing where it hangs."""
    proc = launch("--tasks", TASK, "--levels", "", "--output", str(tmp_path / "run"),
                  "--policy", "support.bad_policies:HangingPolicy", "--episode_timeout", "600",
                  timeout=40)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 124, out[-3000:]
    assert "graph timed out after 20 s" in out
    for node in ("sim_node", "policy_node", "evaluator_node"):
        assert f"[{node}] Thread" in out or f"[{node}] Current thread" in out, (node, out[-3000:])
    assert "bad_policies.py" in out and "in predict" in out
