"""INT-ACT of a results row against each of its tasks (issue #11 point 5).

Under the ``conflict`` cue protocol a row has two tasks: the language task (which the episode's
scores are against) and the cue task (the row's ``task_id``). The report used to pair the
row's ``task_id`` with its ``complete``, i.e. the cue task's intention with the language
task's success: "intention 0 %, success 100 %". Each metric must be against one task.
"""
from __future__ import annotations

from support import scoring_fixtures as fx  # first: puts the repo root on sys.path
from vla_bridge.benchmarks.intact.metrics import (intact_metrics, row_intact,
                                                  summarize_intact_by_task)
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.tasks import load_suite
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS

SUITE = load_suite()
BASE2 = fx.nominal_layout("scene2", "default")
LANGUAGE = SUITE.get("L0_pickup_red_cylinder")  # what the language said, and the policy did
CUE = SUITE.get("L0_pickup_left_cube")  # what the cue showed (the suite trial)
RECORD = fx.TcpPickPlace(BASE2, arm="left", obj="large_red_cylinder").record()


def old_conflict_row(status: str = "ok") -> dict:
    """A conflict row as the evaluator wrote it before the per-task fields: task_id the cue
    task, its own scores the language task's, both completions in row["cue"]."""
    lang = score_episode(LANGUAGE, RECORD)
    return {"task_id": CUE.id, "scene": "scene2", "level": "L0", "status": status,
            "intent_score": lang.intent_score, "exec_score": lang.exec_score,
            "complete": lang.complete, "stages": [],
            "cue": {"protocol": "conflict", "family": "F2", "variant": "arrow",
                    "language_task": LANGUAGE.id, "cue_task": CUE.id, "begin_task": LANGUAGE.id,
                    "language_complete": lang.complete, "language_intent_score": 1.0,
                    "language_exec_score": 1.0, "cue_complete": False,
                    "cue_intent_score": 0.0, "cue_exec_score": 0.0}}


def test_the_old_pairing_mixed_two_tasks():
    """The contradiction, reproduced: the cue task's intention with the language task's
    success."""
    row = old_conflict_row()
    legacy = intact_metrics(SUITE.get(row["task_id"]), RECORD, bool(row["complete"]))
    assert legacy["intention_correct"] is False and legacy["task_success"] is True


def test_an_old_row_is_rescored_against_each_of_its_tasks():
    per_task = row_intact(old_conflict_row(), RECORD, SUITE)
    assert per_task["language"] == {"intention_correct": True, "grasp_success": True,
                                    "task_success": True, "wrong_object_attempt": False,
                                    "wrong_object": None}
    cue = per_task["cue"]  # the policy went for another object than the cue's
    assert (cue["intention_correct"], cue["task_success"], cue["wrong_object_attempt"]) == \
        (False, False, True)
    # without the episode file an older row has no INT-ACT; a failed episode gets none
    assert row_intact(old_conflict_row()) == {"language": None, "cue": None}
    assert row_intact(old_conflict_row("failed"), RECORD, SUITE) == {"language": None,
                                                                      "cue": None}


def test_a_new_row_keeps_its_own_metrics_and_rates_are_per_task():
    stored = {role: {k: intact_metrics(task, RECORD, score_episode(task, RECORD).complete)[k]
                     for k in INTACT_FIELDS} for role, task in (("language", LANGUAGE),
                                                                  ("cue", CUE))}
    row = {**old_conflict_row(), "language_task": LANGUAGE.id, "cue_task": CUE.id,
           "scored_task": LANGUAGE.id,
           "scores": {role: {"task": t.id, "complete": stored[role]["task_success"],
                             "intent_score": 0.0, "exec_score": 0.0, "intact": stored[role]}
                      for role, t in (("language", LANGUAGE), ("cue", CUE))}}
    per_task = row_intact(row)  # no record needed: the evaluator scored them
    assert per_task == stored
    rates = summarize_intact_by_task([row], [per_task])
    assert rates["language"]["task"] == "followed language"
    lang, cue = rates["language"]["groups"]["all"], rates["cue"]["groups"]["all"]
    assert (lang["intention_correct_rate"], lang["task_success_rate"]) == (1.0, 1.0)
    assert (cue["intention_correct_rate"], cue["task_success_rate"]) == (0.0, 0.0)
