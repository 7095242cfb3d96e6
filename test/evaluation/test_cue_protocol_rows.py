"""Cue-protocol rows name both their tasks and score the episode against each (issue #11
point 5).

Under ``conflict`` the language names another task (the conflict partner, which the sim resets
for and the oracle follows) than the cue shows (the suite trial, the row's ``task_id``). The
row's own IS / ES / CR are the language task's, and INT-ACT used to be read against
``task_id``: "intention 0 %, success 100 %" for an oracle that did exactly what it was told.
Here one conflict episode runs through ``SuiteRun`` (in-process sim and oracle,
support.in_process_graph) and every metric is checked against the task it names.
"""
from __future__ import annotations

import json

import pytest

from support.in_process_graph import TASK, make_run, results
from vla_bridge.benchmarks.intact.metrics import (intact_metrics, row_intact,
                                                  summarize_intact_by_task)
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.tasks import load_suite
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS, row_scores, row_tasks
from vla_bridge.benchmarks.vifo.protocols import cue_metrics, episode_record
from vla_bridge.embodiment.episode_record import load_episode
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.reporting.tables import intact_tables, results_table, task_tables

SUITE = load_suite()
NEW_FIELDS = ("language_task", "cue_task", "scored_task", "scores")


@pytest.fixture(scope="module")
def conflict(session, tmp_path_factory):
    """(row, episode record, console lines, run dir) of one conflict episode of TASK whose
    oracle follows the language."""
    tmp = tmp_path_factory.mktemp("conflict")
    run, graph, _, console = make_run(session, tmp, cues=CueRun("conflict", "F1", "", "overlay"),
                                      cue_protocol="conflict", cue_family="F1")
    assert run.run() == 0
    (row,) = results(tmp)
    record, _ = load_episode(tmp / "run" / row["episode_file"])
    assert graph.sent[0]["task"]["id"] == row["scored_task"]  # what the sim reset for
    return row, record, console, tmp / "run"


def test_a_conflict_row_names_both_tasks_and_scores_each(conflict):
    row, record, console, _ = conflict
    partner = row["language_task"]
    assert partner != TASK and row["cue_task"] == TASK == row["task_id"]
    assert row["scored_task"] == partner and row["instruction"] == SUITE.get(partner).instruction
    assert f"{TASK} r1 seed {row['seed']}: language task {partner}: IS 1.00" in console[0]
    for role, task_id in (("language", partner), ("cue", TASK)):
        s, task = row["scores"][role], SUITE.get(task_id)
        expected = score_episode(task, record)  # the same frames, the existing scorer
        assert s["task"] == task_id
        assert (s["intent_score"], s["exec_score"], s["complete"]) == \
            (expected.intent_score, expected.exec_score, expected.complete)
        intact = intact_metrics(task, record, expected.complete)
        assert s["intact"] == {k: intact[k] for k in INTACT_FIELDS}
        assert s["intact"]["task_success"] is s["complete"]  # one task per metric
    # the oracle did the language task, not the cue's: both agree with that
    lang, cue = row["scores"]["language"], row["scores"]["cue"]
    assert lang["complete"] and lang["intact"]["intention_correct"]
    assert not cue["complete"] and not cue["intact"]["intention_correct"]
    # the row's own scores are the scored task's (as before)
    assert (row["intent_score"], row["complete"]) == (lang["intent_score"], lang["complete"])


def test_int_act_of_a_conflict_run_is_consistent_per_task(conflict):
    """No task reads "intention 0 %, success 100 %": the rates are per task."""
    row, record, _, _ = conflict
    legacy = intact_metrics(SUITE.get(row["task_id"]), record, bool(row["complete"]))
    assert not legacy["intention_correct"] and legacy["task_success"]  # the old contradiction
    rates = summarize_intact_by_task([row], [row_intact(row)])
    lang, cue = rates["language"]["groups"]["all"], rates["cue"]["groups"]["all"]
    assert rates["language"]["task"] == "followed language"
    assert rates["cue"]["task"] == "followed cue"
    assert (lang["intention_correct_rate"], lang["task_success_rate"]) == (1.0, 1.0)
    assert (cue["intention_correct_rate"], cue["task_success_rate"]) == (0.0, 0.0)


def test_the_report_rates_int_act_per_task(conflict):
    """The report's INT-ACT section: per task, from the row (new) or re-scored from the episode
    file against each task (a row of the older format)."""
    row, _, _, run_dir = conflict
    old = {k: v for k, v in row.items() if k not in NEW_FIELDS}
    for rows in ([row], [old]):
        table = intact_tables(run_dir, rows)
        assert table["errors"] == [] and table["n_episodes_scored"] == 1
        lang = table["by_task"]["language"]["groups"]["all"]
        cue = table["by_task"]["cue"]["groups"]["all"]
        assert (lang["intention_correct_rate"], lang["task_success_rate"]) == (100.0, 100.0)
        assert (cue["intention_correct_rate"], cue["task_success_rate"]) == (0.0, 0.0)
        assert table["by_task"]["cue"]["task"] == "followed cue"
        # the rows' own task's, where the report read them before
        assert table["task"] == "followed language"
        assert table["groups"] == table["by_task"]["language"]["groups"]


def test_every_metric_names_its_task(conflict):
    row, _, console, run_dir = conflict
    table = results_table([row], n_boot=10)
    assert table["all"]["task"] == "followed language" and table["all"]["CR"]["value"] == 100.0
    per_task = task_tables([row], n_boot=10)
    assert per_task["language"]["all"]["CR"]["value"] == 100.0
    assert per_task["cue"]["all"]["task"] == "followed cue"
    assert per_task["cue"]["all"]["CR"]["value"] == 0.0
    metrics = json.loads((run_dir / "cue_metrics.json").read_text())
    assert metrics["tasks"]["lfr"] == "followed language" and metrics["tasks"]["uvf"] == "followed cue"
    lang, cue = metrics["by_task"]["conflict"]["language"], metrics["by_task"]["conflict"]["cue"]
    assert (lang["CR"], lang["intention"], lang["success"]) == (100.0, 100.0, 100.0)
    assert (cue["CR"], cue["intention"], cue["success"]) == (0.0, 0.0, 0.0)
    lines = (run_dir / "cue_table.txt").read_text().splitlines()
    assert lines[-3] == "task: followed language: Orig. SR, LFR; followed cue: AVF, VTR, UVF, UVI"
    assert lines[-1].startswith("instances: ") and lines[-1].endswith(" 1")  # one cue instance
    task_table = (run_dir / "cue_task_table.txt").read_text().splitlines()
    assert task_table[2].split()[:4] == ["conflict", "followed", "language", "1"]
    assert any("followed cue" in line for line in console)  # printed at the end of the run


def test_an_old_format_row_reads_the_same(conflict):
    """A row as the evaluator wrote it before the per-task fields: the tasks and scores come
    from row["cue"]; INT-ACT is re-scored from the episode file against each task."""
    row, record, _, _ = conflict
    old = {k: v for k, v in row.items() if k not in NEW_FIELDS}
    assert row_tasks(old) == {"language": row["language_task"], "cue": TASK,
                              "scored": row["scored_task"]}
    for role, s in row_scores(old).items():
        new = row["scores"][role]
        assert (s["task"], s["intent_score"], s["exec_score"], s["complete"]) == \
            (new["task"], new["intent_score"], new["exec_score"], new["complete"])
    assert row_intact(old) == {"language": None, "cue": None}  # not in an older row
    assert row_intact(old, record, SUITE) == {r: s["intact"] for r, s in row["scores"].items()}
    assert episode_record(old) == episode_record(row)
    assert cue_metrics([old])["overall"] == cue_metrics([row])["overall"]
    assert task_tables([old], n_boot=10)["cue"]["all"]["CR"]["value"] == 0.0
    # an older row without a cue protocol: its own scores are its trial task's language task
    plain = {"task_id": TASK, "scene": "scene1", "level": "L0", "status": "ok",
             "intent_score": 1.0, "exec_score": 0.5, "complete": True}
    assert row_tasks(plain) == {"language": TASK, "cue": None, "scored": TASK}
    assert row_scores(plain)["language"]["exec_score"] == 0.5
    assert results_table([plain], n_boot=10)["all"]["task"] == "followed language"


# ------------------------------------------------------------------ CueRun.annotate, pure logic

def _trial(protocol: str = ""):
    from vla_bridge.benchmarks.robofollow.tasks import plan_trials
    cues = CueRun(protocol, "F2" if protocol not in ("", "original") else "")
    trial = plan_trials([SUITE.get(TASK)], 1, 42)[0]
    cues.prepare(trial, trial.task.instruction)
    return cues, trial


def _row(status: str = "ok") -> dict:
    return {"task_id": TASK, "status": status, "intent_score": 1.0, "exec_score": 1.0,
            "complete": status == "ok", "stages": []}


def _intact(task, complete):
    return {"intention_correct": True, "grasp_success": False, "task_success": complete,
            "wrong_object_attempt": False, "wrong_object": None, "per_source": []}


@pytest.mark.parametrize("protocol, language, cue", [
    ("", TASK, None), ("original", TASK, None), ("authorized", None, TASK),
    ("no_language", None, TASK)])
def test_rows_of_one_task_name_it(protocol, language, cue):
    cues, _ = _trial(protocol)
    row = _row()
    cues.annotate(row, lambda task: pytest.fail("only the begin task is scored"), _intact)
    assert (row["language_task"], row["cue_task"], row["scored_task"]) == (language, cue, TASK)
    (role,) = row["scores"]
    assert row["scores"][role]["complete"] is True
    assert row["scores"][role]["intact"]["task_success"] is True
    assert ("cue" in row) is bool(protocol)


def test_failed_episodes_and_failed_scorers_score_zero_with_the_reason():
    cues, _ = _trial("conflict")
    row = _row("failed")
    cues.annotate(row, lambda task: pytest.fail("a failed episode is not scored"), _intact)
    assert {s["complete"] for s in row["scores"].values()} == {False}
    assert {s["intact"] is None for s in row["scores"].values()} == {True}

    def no_intact(task, complete):
        raise ValueError("no source")

    row = _row()
    cues.annotate(row, lambda task: (_ for _ in ()).throw(KeyError("red_sphere")), no_intact)
    cue, lang = row["scores"]["cue"], row["scores"]["language"]
    assert cue["complete"] is False and "red_sphere" in cue["error"]
    assert row["cue"]["cue_error"] == cue["error"]  # the older field, for older readers
    assert lang["complete"] is True and "no source" in lang["intact_error"]


def test_the_report_names_each_metrics_task(conflict):
    """The report of a conflict run: IS / ES / CR and INT-ACT per task, each table naming it.
    (The old report read INT-ACT "intention 0 %, success 100 %" here.)"""
    from vla_bridge.reporting import build_report
    from vla_bridge.reporting.markdown import format_markdown
    _, _, _, run_dir = conflict
    report = build_report(run_dir, n_boot=10)
    lang = report["intact"]["by_task"]["language"]["groups"]["all"]
    cue = report["intact"]["by_task"]["cue"]["groups"]["all"]
    assert (lang["intention_correct_rate"], lang["task_success_rate"]) == (100.0, 100.0)
    assert (cue["intention_correct_rate"], cue["task_success_rate"]) == (0.0, 0.0)
    assert report["groups_by_task"]["cue"]["all"]["CR"]["value"] == 0.0
    md = format_markdown(report)
    assert "| followed cue | all | 1 | 0.0 | 0.0 | 0.0 | 100.0 |" in md
    assert "intervals (followed language task)" in md
