"""The run directory under damage (issue #11, points 8 and 15): a torn last line of
results.jsonl is cut off (and kept in results.jsonl.torn) before the next append, a run never
says "finished" with a planned trial missing from results.jsonl, and an output directory that
cannot be created or written is one clear error line, not a traceback.

The runs are the evaluator's real SuiteRun over the in-process graph of
support/in_process_graph.py."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.in_process_graph import TASK, Log, make_run, results, run_json
from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials
from vla_bridge.evaluation.episodes import Subscriber
from vla_bridge.evaluation.run_dir import (RunDirectory, RunDirError, completion_status,
                                           read_jsonl)

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- a torn line


def test_an_append_after_a_torn_line_is_not_glued_onto_it(tmp_path):
    log = Log()
    run_dir = RunDirectory(tmp_path, log=log)
    run_dir.append({"key": "a"})
    with open(run_dir.results_path, "a") as f:
        f.write('{"key":"b","intent_sc')  # the disk filled up mid-line
    run_dir.append({"key": "c"})
    assert read_jsonl(run_dir.results_path) == [{"key": "a"}, {"key": "c"}]
    assert run_dir.results_path.read_text() == '{"key":"a"}\n{"key":"c"}\n'
    assert run_dir.torn_path.read_text() == '{"key":"b","intent_sc\n'  # nothing silently lost
    assert log.lines == [("error", f"{run_dir.results_path}: its last line was torn (a cut "
                                   "write); moved its 21 bytes to results.jsonl.torn")]
    run_dir.append({"key": "d"})  # a whole last line: nothing to cut
    assert len(read_jsonl(run_dir.results_path)) == 3 and len(log.lines) == 1


def test_a_torn_only_line_is_cut_to_an_empty_file(tmp_path):
    run_dir = RunDirectory(tmp_path, log=Log())
    run_dir.results_path.write_text('{"key":')
    assert run_dir.cut_torn_line() == 7
    assert run_dir.results_path.read_text() == "" and run_dir.torn_path.read_text() == '{"key":\n'


@pytest.mark.graph
def test_a_resume_after_a_torn_write_reruns_that_episode_and_keeps_every_one(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path, rounds=2)
    assert first.run() == 0
    path = tmp_path / "run" / "results.jsonl"
    text = path.read_text()
    cut = text[:text.rindex("\n", 0, len(text) - 1) + 1 + 40]  # round 2's line, 40 bytes of it
    path.write_text(cut)

    second, graph, log, _ = make_run(session, tmp_path, rounds=2)
    assert second.run() == 0
    assert [(r["round"], r["status"]) for r in results(tmp_path)] == [(1, "ok"), (2, "ok")]
    assert [m["episode"].split("@")[0] for m in graph.sent] == [f"scene1/{TASK}/r2"] * 3
    assert (tmp_path / "run" / "results.jsonl.torn").read_text() == cut.splitlines()[-1] + "\n"
    assert any(kind == "error" and "its last line was torn" in text for kind, text in log.lines)
    assert run_json(tmp_path)["status"] == "finished"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["all"]["n_episodes"] == 2


# ----------------------------------------------------------------------------- "finished"


class LosesRound1(Subscriber):
    """Something outside the run (a disk error, a hand edit) drops round 1's line."""

    def on_episode_end(self, trial, row, run_dir):
        if trial.round == 2:
            lines = run_dir.results_path.read_text().splitlines(keepends=True)
            run_dir.results_path.write_text("".join(lines[1:]))


@pytest.mark.graph
def test_a_run_missing_a_planned_trial_is_incomplete_not_finished(session, tmp_path):
    run, _, log, _ = make_run(session, tmp_path, subscribers=[LosesRound1()], rounds=2)
    assert run.run() == 3
    status = (f"incomplete: 1 of 2 trials missing from results.jsonl (scene1/{TASK}/r1); "
              "resume to run them")
    assert run_json(tmp_path)["status"] == status
    assert ("error", f"run {status}") in log.lines


def test_completion_status():
    trials = plan_trials([load_suite().get(TASK)], 5, 42)
    rows = [{"key": f"scene1/{TASK}/r2"}]
    assert completion_status("finished", trials, rows) == (
        f"incomplete: 4 of 5 trials missing from results.jsonl (scene1/{TASK}/r1, "
        f"scene1/{TASK}/r3, scene1/{TASK}/r4, ...); resume to run them")
    assert completion_status("stopped: the sim is gone", trials, rows) == "stopped: the sim is gone"
    all_rows = [{"key": f"scene1/{TASK}/r{i}"} for i in range(1, 6)]
    assert completion_status("finished", trials, all_rows) == "finished"


# ----------------------------------------------------------------------------- bad outputs


def test_a_missing_parent_directory_is_created(session, tmp_path):
    out = tmp_path / "a" / "b" / "run"
    run, _, _, _ = make_run(session, tmp_path, output=str(out))
    assert run.run() == 0
    assert len(read_jsonl(out / "results.jsonl")) == 1


def test_an_output_under_a_file_is_one_clear_error(session, tmp_path):
    (tmp_path / "file").write_text("not a directory")
    run, graph, _, _ = make_run(session, tmp_path, output=str(tmp_path / "file" / "run"))
    with pytest.raises(RunDirError) as error:
        run.run()
    assert str(error.value) == (f"run directory {tmp_path / 'file' / 'run'}: "
                                f"{tmp_path / 'file'} is a file, not a directory")
    assert graph.sent == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_output_is_one_clear_error(session, tmp_path):
    parent = tmp_path / "ro"
    parent.mkdir(mode=0o555)
    try:
        run, graph, _, _ = make_run(session, tmp_path, output=str(parent / "run"))
        with pytest.raises(RunDirError, match=r"^run directory .*/ro/run: cannot create it: "
                                              r"Permission denied"):
            run.run()
        assert graph.sent == []
    finally:
        parent.chmod(0o755)


class FullDisk(Subscriber):
    """From the first row on, results.jsonl is /dev/full: every write fails with ENOSPC."""

    def on_episode_end(self, trial, row, run_dir):
        run_dir.results_path.symlink_to("/dev/full")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_one_clear_error(session, tmp_path):
    run, _, _, _ = make_run(session, tmp_path, subscribers=[FullDisk()])
    try:
        with pytest.raises(RunDirError) as error:
            run.run()
    finally:
        (tmp_path / "run" / "results.jsonl").unlink()  # never read /dev/full: it has no end
    assert str(error.value) == (f"run directory {tmp_path / 'run'}: cannot append to "
                                "results.jsonl: No space left on device")


@pytest.mark.graph
def test_the_node_exits_with_one_error_line_for_an_unusable_output(tmp_path):
    pytest.importorskip("rclpy")
    (tmp_path / "file").write_text("not a directory")
    proc = subprocess.run(
        [sys.executable, "-m", "vla_bridge.evaluation.evaluator_node", "--ros-args",
         "-p", f"output:={tmp_path / 'file' / 'run'}", "-p", f"tasks:={TASK}"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=dict(os.environ))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"evaluator_node: error: run directory {tmp_path / 'file' / 'run'}: "
        f"{tmp_path / 'file'} is a file, not a directory"]
