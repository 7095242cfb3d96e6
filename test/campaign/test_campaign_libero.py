"""`vla-bridge campaign libero_sim`: units of (suite, task) pairs split by initial-state
ranges, each unit's graph planning exactly its keys, one-line refusals, and a real campaign on
Ray through the LIBERO graph whose rerun runs nothing."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from support.cli_process import run_cli
from support.domains import claim_domain
from support.graph_runs import child_pythonpath, results
from support.libero_venv import needs_libero_venv
from vla_bridge.campaign import libero_plan as L
from vla_bridge.campaign import plan as P
from vla_bridge.campaign.driver import graph_plan, parse_graph
from vla_bridge.campaign.ledger import Ledger
from vla_bridge.evaluation.run_dir import RunDirectory, trial_key


def _plan(*args: str):
    values = parse_graph("libero_sim", list(args))[1]
    return values, L.planned_trials(values)


def _unit_keys(unit: L.LiberoUnit) -> list[str]:
    """The keys the unit's own graph plans from its launch tokens."""
    tokens = L.unit_tokens({"policy": "libero_oracle"}, unit, "/tmp/unused")
    return [t.key for t in L.planned_trials(parse_graph("libero_sim", tokens)[1])]


# ------------------------------------------------------------------------ pure parts
def test_the_libero_graph_has_its_own_plan_and_robofollow_keeps_its():
    assert P.GRAPHS == ("robofollow_sim", "libero_sim")
    assert graph_plan("robofollow_sim") is P.ROBOFOLLOW
    assert P.ROBOFOLLOW.unit_tokens is P.unit_tokens
    assert P.ROBOFOLLOW.selection_args == P.SELECTION_ARGS
    assert graph_plan("libero_sim").selection_args == ("suite", "tasks", "inits")


@pytest.mark.parametrize("workers", [1, 2, 16, 50])
def test_units_cover_every_planned_key_once_and_each_graph_plans_its_keys(workers):
    values, trials = _plan("--suite", "libero_object,libero_goal", "--tasks", "0-3",
                           "--inits", "0-49")
    size, units = L.cut(trials, values, workers, None, "s1u")
    keys = [k for u in units for k in u.keys]
    assert sorted(keys) == sorted(trial_key(t) for t in trials) and len(set(keys)) == len(keys)
    assert size == max(len(u.keys) for u in units) <= P.MAX_UNIT_TRIALS
    for unit in units:
        assert _unit_keys(unit) == list(unit.keys)  # the graph's cross product is the unit
        assert all(k.startswith(f"{unit.suite}/") for k in unit.keys)
    assert units[0].name == "s1u0000" and units[0].task_ids[0] == "libero_object/0"


def test_units_are_whole_tasks_until_workers_need_initial_state_ranges():
    values, trials = _plan("--suite", "libero_object", "--tasks", "0-9", "--inits", "0-49")
    _, units = L.cut(trials, values, 2, None, "u")  # 500 trials, 2 workers: whole tasks
    assert [(u.tasks, u.inits) for u in units] == [(str(t), "0-49") for t in range(10)]
    values, trials = _plan("--suite", "", "--tasks", "", "--inits", "0-49")
    _, units = L.cut(trials, values, 50, None, "u")  # vla-eval's 2,000 on 50 shards
    assert len(units) == 200 and {len(u.keys) for u in units} == {10}
    assert [u.inits for u in units[:5]] == ["0-9", "10-19", "20-29", "30-39", "40-49"]
    values, trials = _plan("--suite", "libero_object,libero_goal", "--tasks", "0-3",
                           "--inits", "0-49")
    _, units = L.cut(trials, values, 50, None, "u")  # 400 on 50: one round, not two
    assert len(units) == 48 and {len(u.keys) for u in units} == {8, 9}
    # few trials: tasks sharing initial states packed, one unit per worker
    values, trials = _plan("--suite", "libero_object", "--tasks", "0-3", "--inits", "0-1")
    _, units = L.cut(trials, values, 2, None, "u")
    assert [(u.tasks, u.inits) for u in units] == [("0-1", "0-1"), ("2-3", "0-1")]
    _, units = L.cut(trials, values, 2, 3, "u")  # --unit-trials 3: a task of 2 each
    assert [(u.tasks, u.inits) for u in units] == [(str(t), "0-1") for t in range(4)]


def test_a_resume_cuts_only_the_missing_initial_states():
    values, trials = _plan("--suite", "libero_object", "--tasks", "0-1", "--inits", "0-4")
    todo = [t for t in trials if t.trial.init not in (0, 3)]
    _, units = L.cut(todo, values, 1, None, "s2u")
    assert [(u.tasks, u.inits) for u in units] == [("0-1", "1-2,4")]
    assert _unit_keys(units[0]) == list(units[0].keys)
    assert L.format_ints([7, 0, 1, 2, 5, 8]) == "0-2,5,7-8"


def test_unit_tokens_override_suite_tasks_inits_output_and_resume():
    unit = L.LiberoUnit("s1u0000", ("libero_goal/3",), ("libero_goal/3/0",),
                        suite="libero_goal", tasks="3", inits="0-9")
    tokens = L.unit_tokens({"suite": "libero_goal,libero_10", "tasks": "", "inits": "0-49",
                            "policy": "libero_oracle", "output": "o", "resume": "false"},
                           unit, "/runs/c/campaign/units/s1u0000")
    assert tokens == ["policy:=libero_oracle", "suite:=libero_goal", "tasks:=3", "inits:=0-9",
                      "output:=/runs/c/campaign/units/s1u0000", "resume:=true"]


def test_a_libero_unit_is_seeded_with_the_rows_of_its_keys(tmp_path):
    values, trials = _plan("--suite", "libero_object", "--tasks", "0", "--inits", "0-3")
    keys = [trial_key(t) for t in trials]
    run = RunDirectory(tmp_path / "run")
    (tmp_path / "run").mkdir()
    infra = {"key": keys[1], "suite": "libero_object", "task_index": 0, "status": "error",
             "failure": "infrastructure"}  # not done: its unit runs it again, knowing
    for row in ({"key": keys[0], "suite": "libero_object", "task_index": 0, "success": True},
                infra):
        run.append(row)
    ledger = Ledger(run, keys)
    assert ledger.done == {keys[0]}
    (unit,) = L.make_units([t for t in trials if trial_key(t) not in ledger.done], 50, "s2u")
    assert unit.inits == "1-3"
    ledger.seed_unit(unit)
    assert results(ledger.unit_dir(unit)) == [infra]  # no LIBERO row has a task_id


@contextmanager
def _domains(count: int):
    """`count` consecutive ROS domains in 91..99 claimed with the test sessions' lock files
    (test/conftest.py), so no other session picks them while the campaign runs."""
    for base in range(91, 100 - count + 1):
        handles = []
        for domain in range(base, base + count):
            fh = claim_domain(domain)
            if fh is None:
                break
            handles.append(fh)
        if len(handles) == count:
            try:
                yield base
            finally:
                for fh in handles:
                    fh.close()
            return
        for fh in handles:
            fh.close()
    pytest.skip("ROS domains 91-99 are all taken by other test sessions")


@pytest.mark.parametrize("args, expected", [
    (("--suite", "libero_nope"), "unknown name(s) ['libero_nope']"),
    (("--suite", "libero_object", "--inits", "0-60"), "inits '0-60' out of range 0..49"),
    (("--suite", "libero_object", "--rounds", "3"), "unknown launch argument(s) ['--rounds']"),
    (("--suite", "libero_object", "--workers", "0"), "--workers must be >= 1"),
    (("--suite", "libero_object", "--policy-servers", "1"), "--policy-servers serves RoboFollow"),
])
def test_the_cli_refuses_bad_libero_campaigns_in_one_line(tmp_path, args, expected):
    out = tmp_path / "run"
    result = run_cli("campaign", "libero_sim", *args, "--output", str(out), timeout=60)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vla-bridge campaign: error:"), result.stderr
    assert expected in lines[0] and not out.exists()


# ------------------------------------------------------------------------ a real campaign
def _campaign(out: Path, domain_base: int, timeout: float = 500):
    env = dict(os.environ, PYTHONPATH=child_pythonpath(), MUJOCO_GL="egl")
    cmd = [sys.executable, "-m", "vla_bridge.cli", "campaign", "libero_sim", "--workers", "2",
           "--domain-base", str(domain_base), "--suite", "libero_object", "--tasks", "0-1",
           "--inits", "0", "--output", str(out), "--unit-timeout", str(timeout - 60)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@needs_libero_venv
@pytest.mark.graph
def test_a_libero_campaign_on_two_workers_merges_each_key_once_and_a_rerun_runs_nothing(tmp_path):
    out = tmp_path / "run"
    with _domains(2) as base:
        first = _campaign(out, base)
        assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
        assert "2 trials, 0 already done; 2 units of <= 1 trials over 2 workers" in first.stdout
        rows = results(out)
        assert Counter(r["key"] for r in rows) == {"libero_object/0/0": 1, "libero_object/1/0": 1}
        assert all(r["status"] == "ok" and r["policy"] == "libero_oracle" for r in rows)
        run = json.loads((out / "run.json").read_text())
        assert run["status"] == "finished" and run["arguments"]["graph"] == "libero_sim"
        assert run["arguments"]["suites"] == "libero_object"  # the evaluator's, as report reads
        assert run["provenance"]["budget"]["seeding"] == "openpi_per_task"
        summary = json.loads((out / "summary.json").read_text())
        assert summary and (out / "report.md").read_text().startswith("# LIBERO run")
        state = json.loads((out / "campaign.json").read_text())
        domains = {w["domain_id"] for w in state["sessions"][0]["worker_processes"]}
        assert domains == {base, base + 1}
        assert sorted(u["tasks"][0] for u in state["units"].values()) == \
            ["libero_object/0", "libero_object/1"]
        # the same command again: every key is there, nothing runs (no Ray, no graph)
        again = _campaign(out, base)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
        assert "2 trials, 2 already done; 0 units" in again.stdout
        assert "starting a local Ray" not in again.stdout
        assert results(out) == rows
        assert len(json.loads((out / "campaign.json").read_text())["units"]) == 2
