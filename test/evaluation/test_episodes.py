"""The evaluator's episode state machine (episodes.SuiteRun) without DDS.

The sim and the policy answer in-process the way their nodes do: ``begin`` resets a real
MuJoCo session and the oracle, ``start`` plays the episode, and their statuses and frames
batches arrive one per ``spin()``, which moves a fake clock by 50 ms. Scoring, the run
directory and the cue protocol are the real ones.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.scoring import score_episode
from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials
from vla_bridge.embodiment.episode_record import load_episode
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.direct import run_episode_direct
from vla_bridge.evaluation.episodes import BEGIN_RESEND_S, SPIN_S, GraphBroken, Subscriber
from vla_bridge.policy_nodes.oracle import OraclePolicy

from support.in_process_graph import TASK, InProcessGraph, kinds, make_run, results, run_json


class Recorder(Subscriber):
    """Every hook call, and whether the row was already in results.jsonl at on_episode_end."""

    def __init__(self):
        self.calls: list = []

    def on_run_start(self):
        self.calls.append("run_start")

    def on_episode_start(self, trial, cue):
        self.calls.append(("episode_start", trial.task.id, trial.round, cue))

    def on_status(self, source, status):
        self.calls.append(("status", source, status["kind"]))

    def on_episode_end(self, trial, row, run_dir):
        self.calls.append(("episode_end", row["key"], row["key"] in run_dir.finished_keys()))


# ----------------------------------------------------------------------------- a good episode


@pytest.mark.graph
def test_an_episode_is_begun_started_scored_and_written(session, tmp_path):
    recorder = Recorder()
    run, graph, log, console = make_run(session, tmp_path, subscribers=[recorder])
    assert run.run() == 0
    trial = plan_trials([load_suite().get(TASK)], 1, 42)[0]

    # control: begin (task, seed, budget, language) -> start -> end, all of one episode
    assert kinds(graph) == ["begin", "start", "end"]
    begin = graph.sent[0]
    assert len({m["episode"] for m in graph.sent}) == 1
    assert begin["episode"].startswith(f"scene1/{TASK}/r1@")
    assert begin["task"]["id"] == TASK and begin["seed"] == trial.seed
    assert begin["instruction"] == trial.task.instruction == graph.instructions[0]
    assert (begin["max_policy_calls"], begin["max_actions_per_call"]) == (10, 50)

    # the row: the real scorer's verdict on exactly the frames the sim recorded
    (row,) = results(tmp_path)
    expected_record, expected = run_episode_direct(session, OraclePolicy(), trial.task, trial.seed,
                                                   images=False)
    assert row["status"] == "ok" and row["error"] is None
    assert row["frames"] == expected_record.n == 501 and row["policy_calls"] == 10
    assert row["intent_score"] == expected.intent_score == 1.0 and row["complete"]
    assert row["stages"] == json.loads(json.dumps(expected.to_dict()["stages"]))
    assert row["sim_timing_s"] == {"wait_s": 0.1, "step_s": 0.2, "publish_s": 0.0}
    assert row["policy_latency_ms"]["inference"] == [2.0] * 10
    assert row["policy_latency_ms"]["transport"] == [0.2] * 10
    record, meta = load_episode(tmp_path / "run" / row["episode_file"])
    assert record.n == 501 and meta["seed"] == trial.seed
    np.testing.assert_allclose(record.commands, expected_record.commands)

    # the run's files and console
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["status"] == "finished" and run_json["arguments"]["tasks"] == TASK
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["scene1/L0"]["completion_rate"] == 1.0
    latency = json.loads((tmp_path / "run" / "latency.json").read_text())
    assert latency["inference"] == {"calls": 10, "mean": 2.0, "p50": 2.0, "p95": 2.0, "max": 2.0}
    assert ("info", f"1 trials, 0 already done -> {tmp_path / 'run'}") in log.lines
    assert console[0].startswith(f"[1/1] {TASK} r1 seed {trial.seed}: IS 1.00 ES 1.00 CR yes (")
    assert console[0].endswith(f"({row['wall_s']:.1f} s, ETA 0.0 min)")
    assert "scene1/L0" in console[1] and console[2].startswith("policy inference")
    assert console[-1] == f"results: {tmp_path / 'run'}"

    # the subscribers heard the run in order, the row before it was appended
    statuses = [c for c in recorder.calls if c[0] == "status"]
    assert recorder.calls[:2] == ["run_start", ("episode_start", TASK, 1, None)]
    assert statuses[:2] == [("status", "sim", "ready"), ("status", "policy", "ready")]
    assert statuses[-1] == ("status", "sim", "done")
    assert recorder.calls[-1] == ("episode_end", row["key"], False)


def test_frames_from_before_the_ready_stamp_are_not_the_episodes(session, tmp_path):
    class LateFrames(InProcessGraph):
        def answer_begin(self, ctl):
            super().answer_begin(ctl)
            stale = (self.offset - 0.5, np.array(self.session.command), self.world())
            self.flush([stale])  # the previous episode's tail, arriving late

    run, graph, _, _ = make_run(session, tmp_path, LateFrames)
    assert run.run() == 0
    (row,) = results(tmp_path)
    assert row["frames"] == 501 and row["complete"]


# ----------------------------------------------------------------------------- failures


class PolicyNeverReady(InProcessGraph):
    def policy_status(self, kind, **fields):
        if kind != C.STATUS_READY:
            super().policy_status(kind, **fields)


class SimNeverDone(InProcessGraph):
    def answer_start(self):
        pass


class PolicyFails(InProcessGraph):
    def answer_start(self):
        self.policy_status(C.STATUS_ERROR, message="policy failed: NaN in the chunk")


@pytest.mark.parametrize("graph_class, error, sent", [
    (PolicyNeverReady, "timed out after 300 s waiting for sim and policy reset", ["begin", "end"]),
    (SimNeverDone, "timed out after 300 s waiting for the episode to finish",
     ["begin", "start", "end"]),
    (PolicyFails, "policy: policy failed: NaN in the chunk", ["begin", "start", "end"]),
])
def test_a_silent_or_failing_node_fails_the_episode_and_the_run_goes_on(
        session, tmp_path, graph_class, error, sent):
    run, graph, _, console = make_run(session, tmp_path, graph_class, rounds=2)
    t0 = graph.clock.now
    assert run.run() == 0
    rows = results(tmp_path)
    assert [(r["round"], r["status"], r["error"]) for r in rows] == [(1, "failed", error),
                                                                    (2, "failed", error)]
    assert rows[0]["intent_score"] == 0.0 and rows[0]["complete"] is False
    assert "policy_latency_ms" not in rows[0] and "episode_file" not in rows[0]
    assert kinds(graph) == sent * 2
    if "reset" in error:  # the begin went out again every 2 s of the 300 s wait
        resent = kinds(graph, repeats=True).count("begin") / 2 - 1  # per episode
        assert 300 / (BEGIN_RESEND_S + 2 * SPIN_S) <= resent <= 300 / BEGIN_RESEND_S
    assert console[0].startswith(f"[1/2] {TASK} r1 seed ") and f"FAILED: {error} (" in console[0]
    if "timed out" in error:  # 300 s without progress on the fake clock, then it gave up
        assert 300.0 < rows[0]["wall_s"] < 301.0 and graph.clock.now - t0 > 600
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "finished"


class FirstBeginLost(InProcessGraph):
    """Neither node hears the first begin (their readers were not matched to the evaluator's
    writer yet)."""
    lost = False

    def answer_begin(self, ctl):
        if not self.lost:
            self.lost = True
            return
        super().answer_begin(ctl)


class FirstReadyLost(InProcessGraph):
    """The policy's first ready never reaches the evaluator."""
    lost = False

    def policy_status(self, kind, **fields):
        if kind == C.STATUS_READY and not self.lost:
            self.lost = True
            return
        super().policy_status(kind, **fields)


@pytest.mark.parametrize("graph_class", [FirstBeginLost, FirstReadyLost])
def test_a_lost_begin_or_ready_is_asked_again_and_the_episode_runs(session, tmp_path,
                                                                   graph_class):
    run, graph, _, _ = make_run(session, tmp_path, graph_class)
    t0 = graph.clock.now
    assert run.run() == 0
    (row,) = results(tmp_path)
    assert row["status"] == "ok" and row["intent_score"] == 1.0 and row["complete"]
    assert kinds(graph, repeats=True) == ["begin", "begin", "start", "end"]
    assert graph.sent[0] == graph.sent[1]  # the same episode's begin, word for word
    assert graph.resets == 1  # the repeated begin was answered, not reset again
    assert graph.clock.now - t0 > BEGIN_RESEND_S


def test_an_interrupted_wait_says_what_it_waited_for(session, tmp_path):
    class StoppedWhileWaiting(PolicyNeverReady):
        def spin(self):
            super().spin()
            if self.clock.now > 1005.0:  # the launcher stops the graph 5 s into the wait
                raise KeyboardInterrupt

    run, graph, log, _ = make_run(session, tmp_path, StoppedWhileWaiting)
    with pytest.raises(KeyboardInterrupt):
        run.run()
    run.interrupted()
    (line,) = [text for level, text in log.lines if level == "warning"]
    episode = graph.sent[0]["episode"]
    assert line == (f"episode {episode} was waiting for sim and policy reset (sim ready: yes, "
                    f"policy ready: no, policy calls answered: 0, chunks run: 0, frames: 1, "
                    f"begin sent again: 2x)")
    assert run_json(tmp_path)["status"] == "stopped: interrupted"


def test_a_scorer_error_fails_the_episode_not_the_run(session, tmp_path):
    class BlockMissing(InProcessGraph):  # the sim reports no yellow_block_3
        def world(self):
            world = super().world()
            world.objects.pop("yellow_block_3")
            return world

    run, _, log, _ = make_run(session, tmp_path, BlockMissing)
    assert run.run() == 0
    (row,) = results(tmp_path)
    assert row["status"] == "failed" and row["error"].startswith("scoring failed: ValueError(")
    assert "yellow_block_3" in row["error"] and "not in the record" in row["error"]
    assert row["complete"] is False and row["frames"] == 501 and row["policy_calls"] == 10
    assert log.lines[-1][0] == "error" and log.lines[-1][1].startswith(f"scoring {TASK} failed")
    # nothing lost: the frames are on disk for re-scoring
    record, meta = load_episode(tmp_path / "run" / row["episode_file"])
    assert record.n == 501 and meta["task_id"] == TASK


# ----------------------------------------------------------------------------- the graph


def test_a_node_leaving_the_graph_stops_the_run(session, tmp_path):
    class PolicyDiesInEpisode2(InProcessGraph):
        def answer_begin(self, ctl):
            super().answer_begin(ctl)
            if ctl["episode"].startswith(f"scene1/{TASK}/r2@"):
                self.inbox.clear()
                self.publishers[C.TOPIC_ACTION_CHUNK] = 0

    run, graph, log, console = make_run(session, tmp_path, PolicyDiesInEpisode2, rounds=3)
    assert run.run() == 3
    gone = "the policy node is gone (nobody publishes action chunks)"
    assert [r["round"] for r in results(tmp_path)] == [1]  # the finished episode is kept
    assert kinds(graph) == ["begin", "start", "end", "begin", "end"]  # no third episode
    assert ("error", f"run stopped: {gone}") in log.lines
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["status"] == f"stopped: {gone}"
    assert console[-1] == f"results: {tmp_path / 'run'}"  # the summary is still written


def test_no_graph_or_two_graphs_refuse_to_run(session, tmp_path):
    run, graph, _, _ = make_run(session, tmp_path)
    graph.subscribers[C.TOPIC_EPISODE_CONTROL] = 1  # only the sim is up
    with pytest.raises(GraphBroken, match="no sim and policy node appeared within 60 s"):
        run.run()
    assert graph.clock.now >= 1060.0 and graph.sent == []

    run, graph, _, _ = make_run(session, tmp_path)
    graph.publishers[C.TOPIC_ACTION_CHUNK] = 2
    with pytest.raises(GraphBroken, match="another graph shares ROS_DOMAIN_ID .*2 policy nodes"):
        run.run()


# ----------------------------------------------------------------------------- resume


@pytest.mark.graph
def test_resume_skips_finished_episodes(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path, rounds=1)
    assert first.run() == 0
    second, graph, log, console = make_run(session, tmp_path, rounds=2)
    assert second.run() == 0
    assert [r["round"] for r in results(tmp_path)] == [1, 2]
    assert [m["episode"].split("@")[0] for m in graph.sent] == [f"scene1/{TASK}/r2"] * 3
    assert ("info", f"2 trials, 1 already done -> {tmp_path / 'run'}") in log.lines
    assert console[0].startswith(f"[1/1] {TASK} r2 ")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["scene1/L0"]["n_episodes"] == 2  # over the whole directory


def test_without_resume_a_filled_directory_is_refused(session, tmp_path):
    first, _, _, _ = make_run(session, tmp_path)
    assert first.run() == 0
    second, graph, _, _ = make_run(session, tmp_path, resume=False)
    with pytest.raises(FileExistsError, match="resume:=true"):
        second.run()
    assert graph.sent == []


# ----------------------------------------------------------------------------- cue protocol


@pytest.mark.graph
def test_a_cue_protocol_sets_the_begin_task_and_annotates_the_row(session, tmp_path):
    """conflict: the language names another task (the oracle follows it), the cue shows this
    one; the row scores the begin (language) task and, in row["cue"], the cue task too."""
    recorder = Recorder()
    cues = CueRun("conflict", "F1", "", "overlay")
    run, graph, _, console = make_run(session, tmp_path, cues=cues, subscribers=[recorder],
                                      cue_protocol="conflict", cue_family="F1")
    assert run.run() == 0
    begin = graph.sent[0]
    partner = begin["task"]["id"]
    assert partner != TASK and begin["cue_task"]["id"] == TASK
    assert (begin["cue_protocol"], begin["cue_family"], begin["cue_placement"]) == \
        ("conflict", "F1", "overlay")
    assert begin["instruction"] == load_suite().get(partner).instruction
    (_, _, _, cue), = [c for c in recorder.calls if c[0] == "episode_start"]
    assert cue is not None  # the CueSpec the overlay draws

    (row,) = results(tmp_path)
    assert row["complete"] and row["cue"]["begin_task"] == partner
    assert row["cue"]["language_complete"] is True and row["cue"]["cue_complete"] is False
    record, _ = load_episode(tmp_path / "run" / row["episode_file"])
    assert row["cue"]["cue_intent_score"] == score_episode(load_suite().get(TASK),
                                                           record).intent_score
    assert " | conflict F1/banner: language yes cue no (" in console[0]
    assert (tmp_path / "run" / "cue_metrics.json").exists()
