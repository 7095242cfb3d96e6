"""LIBERO's protocol as openpi runs it (issue #29, point 14), without LIBERO: every initial state
of a task gets the task's seed (openpi seeds once per task; the sim replays the resets before
the initial state, test/sim_nodes/libero/test_libero_openpi_scene.py), and run.json records
the episode protocol (seeding, step budget, settle steps, replan steps) so that a resume under
another one is refused."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from support.libero_engine import Log, libero_settings
from vla_bridge.benchmarks.libero import protocol as P
from vla_bridge.evaluation.episodes import SuiteRun
from vla_bridge.evaluation.libero_run import LiberoRun
from vla_bridge.evaluation.run_dir import RunDirectory
from vla_bridge.sim_nodes.libero.backend import SETTLE_STEPS, STEP_BUDGET


def settings(tmp_path, **params):
    return libero_settings(tmp_path, **{"tasks": "3", "inits": "0-4", "resume": True, **params})


def test_every_initial_state_of_a_task_gets_the_tasks_seed():
    trials = P.plan_trials("libero_spatial,libero_goal", tasks="0,3", inits="0,1,49", seed=7)
    assert {t.seed for t in trials} == {7}  # openpi: env.seed(7) once per task
    assert [t.layout for t in trials[:3]] == ["0:0", "0:1", "0:49"]  # the init is the layout
    assert {t.seed for t in P.plan_trials("libero_goal", inits="0-49", seed=11)} == {11}


def test_run_json_records_the_episode_protocol(tmp_path):
    prov = LiberoRun(settings(tmp_path), Log()).provenance()
    assert prov["base_seed"] == 7
    assert prov["budget"] == {"max_steps": 0, "actions_per_call": 5, "step_budget": STEP_BUDGET,
                              "settle_steps": SETTLE_STEPS, "replan_steps": 5,
                              "seeding": P.SEEDING}
    assert prov["budget"]["step_budget"] == {"libero_spatial": 220, "libero_object": 280,
                                             "libero_goal": 300, "libero_10": 520,
                                             "libero_90": 400}
    assert SETTLE_STEPS == 10 and P.SEEDING == "openpi_per_task"
    # another suite selection keeps the protocol (a directory may hold several suites' rows)
    other = LiberoRun(settings(tmp_path, suites="libero_10"), Log()).provenance()
    assert other["budget"] == prov["budget"]


def old_run_dir(tmp_path, budget):
    """A run directory with one finished episode and run.json's provenance `budget`."""
    run = tmp_path / "run"
    run.mkdir()
    prov = LiberoRun(settings(tmp_path), Log()).provenance()
    prov["budget"] = budget
    (run / "run.json").write_text(json.dumps({"provenance": prov, "status": "finished"}))
    (run / "results.jsonl").write_text(json.dumps(
        {"key": "libero_goal/3/0", "episode": "libero_goal/3/0", "suite": "libero_goal",
         "task_index": 3, "init": 0, "seed": 7, "policy": "libero_oracle", "success": True,
         "status": "ok"}) + "\n")


def resume(tmp_path, **params):
    p = settings(tmp_path, **params)
    graph = SimpleNamespace()  # the resume check comes before anything is sent
    return SuiteRun(p, graph, benchmark=LiberoRun(p, Log()), log=Log(), echo=lambda line: None)


@pytest.mark.parametrize("budget, what", [
    ({"max_steps": 0, "actions_per_call": 5}, "seeding"),  # before the protocol was recorded
    ({"max_steps": 0, "actions_per_call": 5, "step_budget": STEP_BUDGET, "settle_steps": 0,
      "replan_steps": 5, "seeding": P.SEEDING}, "'settle_steps': 0"),
    ({"max_steps": 0, "actions_per_call": 5, "step_budget": STEP_BUDGET,
      "settle_steps": SETTLE_STEPS, "replan_steps": 5, "seeding": "seed_plus_init"},
     "seed_plus_init"),
])
def test_a_resume_under_another_protocol_is_refused(tmp_path, budget, what):
    old_run_dir(tmp_path, budget)
    with pytest.raises(ValueError, match="cannot resume.*budget") as err:
        resume(tmp_path).run()
    assert what in str(err.value)


def test_a_resume_under_the_same_protocol_is_not_refused_by_it(tmp_path):
    old_run_dir(tmp_path, LiberoRun(settings(tmp_path), Log()).provenance()["budget"])
    run = resume(tmp_path)
    run.check_resume(RunDirectory(tmp_path / "run"), run.benchmark.provenance())  # no error
