"""Infrastructure failures are not policy failures (#29 point 12): an episode failed by a
policy-node restart, a sim that stopped answering or frames lost on the way has its row marked
``"failure": "infrastructure"``; the scores leave it out, the run ends incomplete, and a resume
runs the trial again, once: a second such failure of the same trial is counted
(``benchmarks.result_rows``). A policy that answered garbage, or went silent on its turn, is
the policy's failure as before. SuiteRun over the in-process graph (support/in_process_graph.py)."""
from __future__ import annotations

import json

import pytest

from support.in_process_graph import TASK, InProcessGraph, make_run, results, run_json
from vla_bridge import contract as C
from vla_bridge.benchmarks.libero.protocol import summarize as libero_summarize
from vla_bridge.benchmarks.result_rows import counted, excluded
from vla_bridge.benchmarks.robofollow.scoring import summarize
from vla_bridge.evaluation.node_watch import NodeWatch
from vla_bridge.evaluation.run_dir import completion_status
from vla_bridge.reporting.common import load_rows

RESTART = "policy node restarted: it died with code -9 (SIGKILL) (restart 1 of 2)"


def round_of(ctl: dict) -> int:
    return int(ctl["episode"].split("@")[0].rsplit("/r", 1)[1])


class Events:
    """The launcher's news of the node processes, as NodeWatch reads them."""

    def __init__(self):
        self.pending: list[dict] = []

    def poll(self):
        out, self.pending = self.pending, []
        return out

    def process_state(self, name):
        return None


class PolicyRestartsIn(InProcessGraph):
    """The policy node dies as the begin of ``rounds`` arrives and the launcher restarts it."""
    rounds: set = {2}

    def answer_begin(self, ctl):
        if round_of(ctl) in self.rounds:
            self.rounds = self.rounds - {round_of(ctl)}
            self.events.pending.append({"event": "restarted", "node": "policy_node",
                                        "how": "code -9 (SIGKILL)", "restart": 1, "of": 2})
            return
        super().answer_begin(ctl)


def restarting_run(session, tmp_path, rounds=3, restart_in=(2,)):
    cls = type("Restarts", (PolicyRestartsIn,), {"rounds": set(restart_in)})
    run, graph, log, console = make_run(session, tmp_path, cls, rounds=rounds)
    graph.events = Events()
    run.nodes = NodeWatch(graph, graph.events)
    return run, graph, log, console


def begun(graph) -> list[int]:
    return sorted({round_of(m) for m in graph.sent if m["kind"] == C.CONTROL_BEGIN})


def summary(tmp_path) -> dict:
    return json.loads((tmp_path / "run" / "summary.json").read_text())


def test_a_restart_is_left_out_of_the_scores_and_run_again_on_resume(session, tmp_path):
    run, graph, _, console = restarting_run(session, tmp_path)
    assert run.run() == 3
    rows = results(tmp_path)
    assert [(r["round"], r["status"], r.get("failure"), r.get("counted")) for r in rows] == [
        (1, "ok", None, None), (2, "failed", "infrastructure", None), (3, "ok", None, None)]
    assert rows[1]["error"] == RESTART
    # the scores are the two episodes the policy played, not 2 of 3 completed
    assert summary(tmp_path)["all"]["n_episodes"] == 2
    assert summary(tmp_path)["all"]["completion_rate"] == 1.0
    assert run_json(tmp_path)["status"] == (
        f"incomplete: 1 of 3 trials failed for infrastructure reasons, not scored "
        f"(scene1/{TASK}/r2: {RESTART}); resume to run them")
    assert console[1].endswith("[infrastructure failure: not scored, a resume runs it again]")

    again, graph, log, _ = restarting_run(session, tmp_path, restart_in=())
    assert again.run() == 0
    assert begun(graph) == [2]  # only the trial the infrastructure failed
    assert ("info", f"3 trials, 2 already done (1 to run again after an infrastructure "
                    f"failure) -> {tmp_path / 'run'}") in log.lines
    rows = results(tmp_path)
    assert [(r["round"], r["status"]) for r in rows[3:]] == [(2, "ok")]
    assert run_json(tmp_path)["status"] == "finished"
    assert summary(tmp_path)["all"]["n_episodes"] == 3
    # the report reads the rows that count: one per trial, all played
    assert sorted((r["round"], r["status"]) for r in load_rows(tmp_path / "run")) == [
        (1, "ok"), (2, "ok"), (3, "ok")]

    third, graph, _, _ = restarting_run(session, tmp_path, restart_in=())
    assert third.run() == 0 and graph.sent == []  # nothing left to run


def test_a_second_infrastructure_failure_of_the_same_trial_counts(session, tmp_path):
    first, _, _, _ = restarting_run(session, tmp_path, rounds=2)
    assert first.run() == 3
    second, graph, log, console = restarting_run(session, tmp_path, rounds=2)
    assert second.run() == 0  # the failure repeated: it is the trial's, kept and counted
    assert begun(graph) == [2]
    rows = results(tmp_path)
    assert [(r["round"], r.get("failure"), r.get("counted")) for r in rows] == [
        (1, None, None), (2, "infrastructure", None), (2, "infrastructure", True)]
    assert run_json(tmp_path)["status"] == "finished"
    assert summary(tmp_path)["all"]["n_episodes"] == 2
    assert summary(tmp_path)["all"]["completion_rate"] == 0.5
    assert any(level == "error" and "failed for infrastructure reasons again" in text
               and "this time it counts" in text for level, text in log.lines)
    assert console[0].endswith("[second infrastructure failure of this trial: counted]")
    third, graph, _, _ = restarting_run(session, tmp_path, rounds=2)
    assert third.run() == 0 and graph.sent == []


class SimNeverReady(InProcessGraph):
    def sim_status(self, kind, **fields):
        if kind != C.STATUS_READY:
            super().sim_status(kind, **fields)


class PolicyNeverReady(InProcessGraph):
    def policy_status(self, kind, **fields):
        if kind != C.STATUS_READY:
            super().policy_status(kind, **fields)


class FramesLost(InProcessGraph):
    """The episode runs, but its frames never arrive after the sim's done."""

    def answer_start(self):
        self.flush = lambda rows=None: setattr(self, "rows", [])
        super().answer_start()
        del self.flush


class PolicyAnswersGarbage(InProcessGraph):
    def answer_start(self):
        self.policy_status(C.STATUS_ERROR, message="policy failed: NaN in the chunk")


@pytest.mark.parametrize("graph_class, error, infrastructure", [
    (SimNeverReady, "timed out after 5 s waiting for sim and policy reset", True),
    (FramesLost, "timed out after 10 s waiting for all 501 recorded frames", True),
    (PolicyNeverReady, "timed out after 5 s waiting for sim and policy reset", False),
    (PolicyAnswersGarbage, "policy: policy failed: NaN in the chunk", False),
])
def test_which_failures_are_the_infrastructures(session, tmp_path, graph_class, error,
                                                infrastructure):
    run, _, _, _ = make_run(session, tmp_path, graph_class, episode_timeout=5.0)
    assert run.run() == (3 if infrastructure else 0)
    (row,) = results(tmp_path)
    assert row["status"] == "failed" and row["error"] == error
    assert (row.get("failure") == "infrastructure") is infrastructure
    assert summary(tmp_path).get("all", {}).get("n_episodes", 0) == (0 if infrastructure else 1)


def test_the_benchmarks_summaries_leave_uncounted_infrastructure_rows_out():
    def robofollow(round_, complete, **extra):
        return {"key": f"scene1/{TASK}/r{round_}", "task_id": TASK, "scene": "scene1",
                "level": "L0", "round": round_, "intent_score": float(complete),
                "exec_score": float(complete), "complete": complete, **extra}

    rows = [robofollow(1, True), robofollow(2, False, failure="infrastructure"),
            robofollow(3, False, failure="infrastructure", counted=True)]
    assert [excluded(r) for r in rows] == [False, True, False]
    assert counted(rows) == [rows[0], rows[2]]
    assert summarize(rows)["all"]["n_episodes"] == 2
    assert summarize(rows)["all"]["completion_rate"] == 0.5

    def libero(init, success, **extra):
        return {"key": f"libero_goal/0/{init}", "episode": f"libero_goal/0/{init}",
                "suite": "libero_goal", "task_index": 0, "success": success, "wall_s": 1.0,
                "reason": "success" if success else "episode failed: policy node restarted",
                **extra}

    libero_rows = [libero(0, True), libero(1, False, failure="infrastructure")]
    stats = libero_summarize(libero_rows)
    assert stats["overall"]["episodes"] == 1 and stats["overall"]["success_rate"] == 1.0
    assert stats["failures"] == {}
    planned = [type("T", (), {"key": r["key"]})() for r in libero_rows]
    assert completion_status("finished", planned, libero_rows) == (
        "incomplete: 1 of 2 trials failed for infrastructure reasons, not scored "
        "(libero_goal/0/1: episode failed: policy node restarted); resume to run them")
