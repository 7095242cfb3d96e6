"""`vla-bridge campaign`: units of whole tasks, rows merged exactly once, resume, a killed
worker's unit retried elsewhere, and the same per-trial scores as one worker (real Ray, real
graphs)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from support.graph_runs import child_pythonpath, results, wait_until
from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials
from vla_bridge.campaign import plan as P
from vla_bridge.campaign.driver import CampaignError, parse_graph, resume_differences
from vla_bridge.campaign.ledger import Ledger
from vla_bridge.evaluation.run_dir import RunDirectory, trial_key

TASKS = "L0_pickup_red_cylinder,L0_place_blue_cylinder_in_yellow_bowl,L0_place_right_cube_in_green_bowl"
SHORT = ("--scene", "scene2", "--max_policy_calls", "2")  # two 3-s calls: quick episodes


# ------------------------------------------------------------------------ pure parts
def _trials(ids: str, rounds: int):
    suite = load_suite()
    return plan_trials([suite.get(i) for i in ids.split(",")], rounds, 42)


def test_units_hold_whole_tasks_and_every_trial_once():
    trials = _trials(TASKS, 3)
    units = P.make_units(trials, size=4, prefix="s1u")
    assert [u.task_ids for u in units] == [(t,) for t in TASKS.split(",")]  # 3 rounds: one task each
    assert sorted(k for u in units for k in u.keys) == sorted(trial_key(t) for t in trials)
    packed = P.make_units(_trials(TASKS, 1), size=2)
    assert [len(u.task_ids) for u in packed] == [2, 1] and packed[0].name == "u0000"
    assert P.unit_size(trials=300, workers=2, rounds=10) == 38  # ~4 units per worker
    assert P.unit_size(trials=6000, workers=2, rounds=10) == P.MAX_UNIT_TRIALS
    assert P.unit_size(trials=6, workers=2, rounds=10) == 10  # never less than a task


def test_unit_tokens_override_selection_output_and_resume():
    unit = P.Unit("s1u0000", ("L0_a", "L0_b"), ())
    tokens = P.unit_tokens({"scene": "scene2", "tasks": "x", "output": "o", "resume": "false",
                            "policy": "oracle"}, unit, "/runs/c/campaign/units/s1u0000")
    assert tokens == ["scene:=scene2", "policy:=oracle", "tasks:=L0_a,L0_b",
                      "output:=/runs/c/campaign/units/s1u0000", "resume:=true"]


def test_the_ledger_merges_each_row_once_and_seeds_retries(tmp_path):
    trials = _trials(TASKS, 2)
    keys = [trial_key(t) for t in trials]
    ledger = Ledger(RunDirectory(tmp_path / "run"), keys)
    (tmp_path / "run").mkdir()
    unit = P.make_units(trials, size=2)[0]
    unit_dir = ledger.unit_dir(unit)
    unit_dir.mkdir(parents=True)
    row = {"key": keys[0], "task_id": trials[0].task.id, "complete": True}
    stranger = {"key": "scene9/L0_x/r1", "task_id": "L0_x"}  # not planned: never merged
    (unit_dir / "results.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(stranger) + "\n")
    assert ledger.merge_dir(unit_dir) == 1 and ledger.merge_dir(unit_dir) == 0
    assert ledger.merge_all() == 0 and [r["key"] for r in results(tmp_path / "run")] == [keys[0]]
    assert ledger.missing(unit) == [keys[1]]
    # a retry in a fresh directory starts with the finished row, so its graph skips it
    fresh = Ledger(RunDirectory(tmp_path / "run"), keys)
    moved = P.Unit("s2u0000", unit.task_ids, unit.keys)
    fresh.seed_unit(moved)
    assert [r["key"] for r in results(fresh.unit_dir(moved))] == [keys[0]]


def test_arguments_are_checked_before_anything_starts():
    with pytest.raises(CampaignError, match="unknown launch argument"):
        parse_graph("robofollow_sim", ["--no_such_arg", "1"])
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        P.planned_trials(parse_graph("robofollow_sim", ["--rounds", "0"])[1])
    with pytest.raises(CampaignError, match="not 'piper_real'"):
        parse_graph("piper_real", [])
    assert resume_differences({"policy": "oracle", "levels": "L0"},
                              {"policy": "hold", "levels": "L1"}) == ["policy: 'oracle' -> 'hold'"]


# ------------------------------------------------------------------------ real campaigns
def campaign(out: Path, *args: str, workers: int = 2, domain_base: int = 180,
             timeout: float = 400, wait: bool = True):
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    cmd = [sys.executable, "-m", "vla_bridge.cli", "campaign", "robofollow_sim",
           "--workers", str(workers), "--domain-base", str(domain_base), *SHORT,
           "--output", str(out), *args]
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=env, start_new_session=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def scores(rows):
    return {r["key"]: (r["seed"], r["intent_score"], r["exec_score"], r["complete"]) for r in rows}


@pytest.mark.graph
def test_two_workers_give_the_scores_of_one_and_a_resume_skips_finished_trials(tmp_path):
    two = campaign(tmp_path / "two", "--tasks", TASKS, "--rounds", "2")
    assert two.returncode == 0, two.stdout[-3000:] + two.stderr[-2000:]
    one = campaign(tmp_path / "one", "--tasks", TASKS, "--rounds", "2", workers=1)
    assert one.returncode == 0, one.stdout[-3000:] + one.stderr[-2000:]
    rows_two, rows_one = results(tmp_path / "two"), results(tmp_path / "one")
    assert len(rows_two) == 6 and scores(rows_two) == scores(rows_one)
    run = json.loads((tmp_path / "two" / "run.json").read_text())
    assert run["status"] == "finished" and run["provenance"]["policy"] == "oracle"
    assert run["arguments"]["policy"] == "oracle" and run["arguments"]["rounds"] == 2  # as report reads them
    sessions = json.loads((tmp_path / "two" / "campaign.json").read_text())["sessions"]
    assert len({w["domain_id"] for w in sessions[0]["worker_processes"]}) == 2  # a ROS domain each
    # resume with one more round: only the three new trials run, nothing is duplicated
    more = campaign(tmp_path / "two", "--tasks", TASKS, "--rounds", "3")
    assert more.returncode == 0, more.stdout[-3000:] + more.stderr[-2000:]
    assert "9 trials, 6 already done" in more.stdout
    rows = results(tmp_path / "two")
    assert len(rows) == 9 and rows[:6] == rows_two
    assert Counter(r["key"] for r in rows).most_common(1)[0][1] == 1
    # another policy into the same directory would mix two setups: refused, nothing run
    other = campaign(tmp_path / "two", "--tasks", TASKS, "--policy", "hold")
    assert other.returncode == 2 and "cannot resume" in other.stderr
    assert len(results(tmp_path / "two")) == 9


@pytest.mark.graph
def test_a_worker_killed_mid_trial_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "run"
    proc = campaign(out, "--tasks", TASKS, "--rounds", "2", "--unit-trials", "2", wait=False)
    try:
        state = out / "campaign.json"

        def victim():  # a worker whose graph is inside a unit's first episode
            if not state.exists():
                return None
            try:
                workers = json.loads(state.read_text())["sessions"][-1].get("worker_processes", [])
            except json.JSONDecodeError:
                return None
            for w in workers:
                log = out / "campaign" / "logs" / f"worker-{w['index']}.log"
                if log.exists() and "[evaluator_node] [1/" in log.read_text():
                    return w
            return None

        assert wait_until(lambda: victim() is not None, timeout=240, poll=0.2), \
            proc.stdout.read() if proc.poll() is not None else "no worker started an episode"
        os.kill(victim()["pid"], signal.SIGKILL)
        output, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, output[-4000:]
    assert "died" in output
    rows = results(out)
    keys = [r["key"] for r in rows]
    assert sorted(keys) == sorted(trial_key(t) for t in _trials(TASKS, 2))  # all, each once
    attempts = [a for u in json.loads((out / "campaign.json").read_text())["units"].values()
                for a in u["attempts"]]
    assert any(a["outcome"].startswith("worker died") for a in attempts)
    assert json.loads((out / "run.json").read_text())["status"] == "finished"
    assert wait_until(lambda: not subprocess.run(["pgrep", "-f", f"output:={out}/campaign"],
                                                 capture_output=True).stdout, timeout=20)
    # no orphaned graph is left (the killed worker's got SIGTERM with its parent)


@pytest.mark.graph
def test_policy_server_actors_serve_the_policy_to_the_workers(tmp_path):
    from vla_bridge.policy_nodes.torch_policy import init_checkpoint
    spec = f"torch?checkpoint={init_checkpoint(tmp_path / 'ckpt', seed=1)}"
    out = tmp_path / "run"
    proc = campaign(out, "--tasks", TASKS.split(",")[0], "--policy", spec, "--policy-servers", "1",
                    "--server-gpus", "1", workers=1)  # a logical GPU: Ray schedules it here too
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (row,) = results(out)
    assert row["status"] == "ok" and row["policy_calls"] == 2
    assert row["policy"] == spec and row["policy_server"].startswith("openpi?host=127.0.0.1&port=")
    log = (out / "campaign" / "logs" / "policy-server-0.log").read_text()
    assert "CUDA_VISIBLE_DEVICES=0" in log and "connection closed" in log  # Ray gave it the GPU
    assert json.loads((out / "run.json").read_text())["provenance"]["policy"] == spec
