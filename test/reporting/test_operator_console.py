"""Operator console (`vla-bridge console`): scripted answers, pause/skip/quit, resume after interruption, the trial
sheet (JSONL + CSV), the graph's automatic scores, and the sheet -> pilot report."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
from pathlib import Path

import pytest
import yaml

from vla_bridge.cli import main as cli_main
from vla_bridge.reporting import operator_console as oc
from vla_bridge.reporting.pilot_report import wilson_interval

PICK = "Use your right arm to pick up the blue cube."
STACK = "Use your right arm to stack the blue cylinder onto the blue cube."


@pytest.fixture
def plan(tmp_path) -> Path:
    path = tmp_path / "pilot.yaml"
    path.write_text(yaml.safe_dump({
        "trials": 2, "stages": ["grasped", "lifted"],
        "instructions": [{"text": PICK, "group": "held_out"},
                         {"text": STACK, "group": "held_out",
                          "stages": ["grasped", "placed", "released"]}]}))
    return path


def console(*args: str) -> tuple[int, str]:
    """`vla-bridge console ARGS`: its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["console", *args])
    return code, out.getvalue()


def run(tmp_path, plan, answers: list[str], *extra) -> tuple[int, str]:
    script = tmp_path / "answers.txt"
    script.write_text("# scripted operator\n" + "\n".join(answers) + "\n")
    return console("--plan", str(plan), "--sheet", str(tmp_path / "pilot" / "sheet.jsonl"),
                   "--answers", str(script), "--operator", "tester", *extra)


def sheet(tmp_path) -> list[dict]:
    return [json.loads(line) for line in
            (tmp_path / "pilot" / "sheet.jsonl").read_text().splitlines()]


def test_scripted_trials_are_written_and_an_interrupted_pilot_resumes(tmp_path, plan):
    # trial-major order: PICK 1, STACK 1, PICK 2, STACK 2; the answers stop inside trial 3
    first = ["-", "y", "y", "clean lift",          # PICK 1: success
             "-", "y", "n", "n", "-",              # STACK 1: failure (dropped)
             "-", "y"]                             # PICK 2: interrupted after one stage
    code, out = run(tmp_path, plan, first)
    assert code == 130 and "Run the same command again to resume" in out
    rows = sheet(tmp_path)
    assert [(r["instruction"], r["trial"], r["success"]) for r in rows] == [
        (PICK, 1, True), (STACK, 1, False)]
    assert rows[0]["stages"] == {"grasped": True, "lifted": True}
    assert rows[0]["notes"] == "clean lift" and rows[0]["operator"] == "tester"
    assert rows[1]["stages"] == {"grasped": True, "placed": False, "released": False}

    code, out = run(tmp_path, plan, ["-", "n", "n", "missed", "-", "y", "y", "y", "-"],
                    "--report", str(tmp_path / "pilot" / "report.md"))
    assert code == 0 and "2 already in" in out and "pilot complete" in out
    rows = sheet(tmp_path)
    assert [(r["instruction"], r["trial"], r["success"]) for r in rows] == [
        (PICK, 1, True), (STACK, 1, False), (PICK, 2, False), (STACK, 2, True)]
    with open(tmp_path / "pilot" / "sheet.csv") as f:
        table = list(csv.DictReader(f))
    assert [t["success"] for t in table] == ["1", "0", "0", "1"]
    assert table[1]["stages"] == "grasped=y;placed=n;released=n"

    # the report: per instruction, pooled with Wilson intervals, per category, per stage
    assert not (tmp_path / "pilot" / "report.md").exists()  # that name is vla-bridge report's
    report = (tmp_path / "pilot" / "pilot_report.md").read_text()
    assert f"| 1 | {PICK} | pick | 1/2 |" in report
    assert f"| 2 | {STACK} | stack | 1/2 |" in report
    lo, hi = wilson_interval(2, 4)
    assert f"2/4 = 50.0% [{100 * lo:.1f}, {100 * hi:.1f}]" in report
    assert "| held_out | placed | 1/2 = 50.0%" in report
    data = json.loads((tmp_path / "pilot" / "pilot_report.json").read_text())
    assert data["trials"] == 4
    assert data["groups"]["held_out"]["per_category"]["stack"]["successes"] == 1
    # a third run has nothing to ask; the report alone needs only the sheet
    code, out = run(tmp_path, plan, [])
    assert code == 0 and "0 to go" in out
    code, report_only = console("--report-only", "--sheet", str(tmp_path / "pilot" / "sheet.jsonl"))
    assert code == 0
    assert f"| 1 | {PICK} | pick | 1/2 |" in report_only


def test_skip_quit_and_bad_answers(tmp_path, plan):
    code, out = run(tmp_path, plan, ["s", "-", "y", "y", "y", "-", "q"])
    assert code == 130 and "skipped (not recorded)" in out and "operator quit" in out
    assert [(r["instruction"], r["trial"]) for r in sheet(tmp_path)] == [(STACK, 1)]
    code, _ = run(tmp_path, plan, ["-", "maybe"])  # PICK 1 again: not a y/n answer
    assert code == 2
    assert len(sheet(tmp_path)) == 1


def test_a_line_cut_by_a_crash_is_ignored_on_resume(tmp_path, plan):
    run(tmp_path, plan, ["-", "y", "y", "-"])
    path = tmp_path / "pilot" / "sheet.jsonl"
    path.write_text(path.read_text() + '{"group": "held_out", "instr')  # torn write
    code, out = run(tmp_path, plan, ["-", "y", "n", "y", "-"])
    assert code == 130 and "1 already in" in out
    assert len(oc.TrialSheet(path).rows) == 2


def test_suite_tasks_run_command_and_automatic_scores(tmp_path):
    task = "L0_pickup_yellow_block_3"
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"task_id": task, "round": 1, "status": "ok",
                                   "intent_score": 0.8, "exec_score": 0.6, "complete": False,
                                   "stages": [{"name": "stage1"}]}) + "\n")
    marker = tmp_path / "ran_{task}_{trial}.txt"
    command = f"{sys.executable} -c \"open(r'{marker}', 'w').write('x')\""
    script = tmp_path / "answers.txt"
    script.write_text("-\ny\ny\ny\n-\n")
    code, out = console("--tasks", task, "--trials", "1", "--sheet", str(tmp_path / "s.jsonl"),
                        "--answers", str(script), "--run", command, "--results", str(results))
    assert code == 0, out
    (row,) = [json.loads(line) for line in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert (tmp_path / f"ran_{task}_1.txt").exists() and row["run_exit_code"] == 0
    assert row["task"] == task and row["group"] == "L0"
    assert row["instruction"].startswith("Use your right arm to pick up")
    assert list(row["stages"]) == list(oc.ACTION_STAGES["pickup"]) and row["success"]
    assert row["auto"]["intent_score"] == 0.8 and row["auto"]["complete"] is False
    assert "tracker: IS 0.80 ES 0.60 CR no (ok)" in out


def test_plan_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"instructions": [{"text": PICK}, {"text": PICK}]}))
    with pytest.raises(ValueError, match="twice"):
        oc.load_plan(bad)
    assert console("--tasks", "L0_nope", "--sheet", str(tmp_path / "s.jsonl"))[0] == 2


def test_console_needs_a_plan_or_tasks_and_says_so_in_one_line(tmp_path, capsys):
    assert console("--sheet", str(tmp_path / "s.jsonl"))[0] == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["vla-bridge console: one of --plan or --tasks is required (or --report-only)"]
    assert not (tmp_path / "s.jsonl").exists()
