"""A node that dies, is restarted or stalls, as the evaluator's run handles it (#11 points 12, 7).

The first part drives episodes.SuiteRun in-process (support.in_process_graph's graph and
clock) with the launcher's events written by hand; the second launches the robofollow_sim graph
and breaks one of its node processes for real.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import graph_runs
from support.in_process_graph import TASK, InProcessGraph, kinds, make_run, results, run_json
from vla_bridge import contract as C
from vla_bridge.evaluation.episodes import GraphBroken
from vla_bridge.evaluation.node_watch import NodeWatch
from vla_bridge.ros.node_events import DIED, RESTARTED, STARTED, NodeEvents, write_event

SIGKILLED = "code -9 (SIGKILL)"


def with_events(run, graph, tmp_path) -> Path:
    """Give ``run`` the launcher's events file (returned, for the test to write into)."""
    path = tmp_path / "node_events.jsonl"
    path.touch()
    run.nodes = NodeWatch(graph, NodeEvents(path))
    graph.events = path
    return path


def round_of(ctl: dict) -> int:
    return int(ctl["episode"].split("@")[0].rsplit("/r", 1)[1])

# ------------------------------------------------------------------------ a final death


class SimDiesInEpisode2(InProcessGraph):
    def answer_begin(self, ctl):
        if round_of(ctl) == 2:  # no answer: the launcher reports the death
            write_event(self.events, DIED, "sim_node", how=SIGKILLED)
            return
        super().answer_begin(ctl)


def test_a_node_dying_for_good_closes_the_run_with_its_reason(session, tmp_path):
    run, graph, log, console = make_run(session, tmp_path, SimDiesInEpisode2, rounds=3)
    with_events(run, graph, tmp_path)
    assert run.run() == 3
    reason = f"node sim_node died with {SIGKILLED}"
    assert run_json(tmp_path)["status"] == f"stopped: {reason}"
    assert [r["round"] for r in results(tmp_path)] == [1]  # the finished episode is kept
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["all"]["n_episodes"] == 1
    assert kinds(graph) == ["begin", "start", "end", "begin", "end"]  # no third episode
    assert ("error", f"run stopped: {reason}") in log.lines
    assert console[-1] == f"results: {tmp_path / 'run'}"


def test_a_death_during_start_up_closes_the_run_too(session, tmp_path):
    run, graph, _, _ = make_run(session, tmp_path)
    graph.publishers[C.TOPIC_ACTION_CHUNK] = 0  # the policy never made it
    write_event(with_events(run, graph, tmp_path), DIED, "policy_node", how="code 1")
    with pytest.raises(GraphBroken, match="node policy_node died with code 1"):
        run.run()
    assert run_json(tmp_path)["status"] == "stopped: node policy_node died with code 1"
    assert (tmp_path / "run" / "summary.json").exists() and graph.sent == []

# ------------------------------------------------------------------------------ restarts


class PolicyRestartedInEpisode2(InProcessGraph):
    """The policy node dies in episode 2 and the launcher restarts it. DDS goes on counting
    the dead node's chunk publisher for a lease (10 s); the new node's appears 2 s after the
    restart, so for 8 s there are two."""

    restarted_at = None

    def answer_begin(self, ctl):
        self.begins = getattr(self, "begins", []) + [(round_of(ctl), self.clock.now)]
        if round_of(ctl) == 2 and self.restarted_at is None:
            self.restarted_at = self.clock.now
            write_event(self.events, RESTARTED, "policy_node", how=SIGKILLED, restart=1, of=2)
            self.sim_status(C.STATUS_READY, tick=0, stamp=self.now())  # the sim answers
            return
        super().answer_begin(ctl)

    def publisher_ids(self, topic):
        if topic != C.TOPIC_ACTION_CHUNK:
            return set()
        since = None if self.restarted_at is None else self.clock.now - self.restarted_at
        return ({b"dead"} if since is None or since < 10 else set()) | (
            {b"new"} if since is not None and since >= 2 else set())

    def count_publishers(self, topic):
        if topic == C.TOPIC_ACTION_CHUNK:
            return len(self.publisher_ids(topic))
        return super().count_publishers(topic)


@pytest.mark.graph
def test_a_restarted_policy_fails_only_the_episode_in_flight(session, tmp_path):
    run, graph, log, console = make_run(session, tmp_path, PolicyRestartedInEpisode2, rounds=3)
    with_events(run, graph, tmp_path)
    # no "another graph", though DDS counts two policy nodes for 8 s; the restart is an
    # infrastructure failure (test_infra_failures.py): not scored, the run is incomplete
    assert run.run() == 3
    reason = f"policy node restarted: it died with {SIGKILLED} (restart 1 of 2)"
    assert [(r["round"], r["status"], r["error"], r.get("failure"))
            for r in results(tmp_path)] == [
        (1, "ok", None, None), (2, "failed", reason, "infrastructure"), (3, "ok", None, None)]
    assert run_json(tmp_path)["status"].startswith("incomplete: 1 of 3 trials failed for "
                                                   "infrastructure reasons")
    assert ("error", reason) in log.lines and f"FAILED: {reason}" in console[1]
    # episode 3 began once the new node was on the graph (2 s) and discovery had settled (1 s)
    (_, began), = [b for b in graph.begins if b[0] == 3]
    assert began >= graph.restarted_at + 3.0

# ------------------------------------------------------------------------ stalled or gone


class NoPolicyOnTheGraph:
    def publisher_ids(self, topic):
        return set()


def test_a_policy_that_left_the_graph_is_stalled_while_its_process_lives(tmp_path):
    path = tmp_path / "events.jsonl"
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        write_event(path, STARTED, "policy_node", pid=child.pid)
        watch = NodeWatch(NoPolicyOnTheGraph(), NodeEvents(path))
        watch.news()
        assert watch.policies() == 0
        assert watch.policy_missing().startswith(
            f"the policy node stalled: its process (pid {child.pid}) is alive but left the graph")
        child.send_signal(signal.SIGSTOP)
        assert graph_runs.wait_until(lambda: watch.policy_missing().startswith(
            f"the policy node stalled: its process (pid {child.pid}) is alive, stopped (SIGSTOP, "
            "Ctrl-Z or a debugger), but left the graph"))
    finally:
        child.kill()
        child.wait()
    assert watch.policy_missing() == "the policy node is gone (nobody publishes action chunks)"
    without_launcher = NodeWatch(NoPolicyOnTheGraph(), None)
    assert without_launcher.policy_missing().startswith("the policy node is gone")


class SimNeverReady(InProcessGraph):
    def sim_status(self, kind, **fields):
        if kind != C.STATUS_READY:
            super().sim_status(kind, **fields)


class PolicyNeverReady(InProcessGraph):
    def policy_status(self, kind, **fields):
        if kind != C.STATUS_READY:
            super().policy_status(kind, **fields)


@pytest.mark.parametrize("graph_class, stalled", [(PolicyNeverReady, True),
                                                  (SimNeverReady, False)])
def test_a_silent_policy_still_in_the_graph_is_logged_as_stalled(session, tmp_path, graph_class,
                                                                 stalled):
    run, _, log, _ = make_run(session, tmp_path, graph_class, episode_timeout=5.0)
    assert run.run() == (0 if stalled else 3)  # a sim that never reset: infrastructure
    (row,) = results(tmp_path)
    assert row["error"] == "timed out after 5 s waiting for sim and policy reset"
    line = "the policy node stalled (still in the graph, but no answer for 5 s)"
    assert any(line in text for level, text in log.lines if level == "error") is stalled

# --------------------------------------------------------------------------- interrupted


class InterruptedInEpisode2(InProcessGraph):
    died = None  # a node whose death the launcher reports just before it stops the evaluator

    def answer_begin(self, ctl):
        if round_of(ctl) == 2:
            if self.died:
                write_event(self.events, DIED, self.died, how="code 1")
            raise KeyboardInterrupt
        super().answer_begin(ctl)


@pytest.mark.parametrize("died", [None, "sim_node"])
def test_an_interrupted_run_is_closed_not_left_running(session, tmp_path, died):
    run, graph, _, _ = make_run(session, tmp_path, InterruptedInEpisode2, rounds=3)
    with_events(run, graph, tmp_path)
    graph.died = died
    with pytest.raises(KeyboardInterrupt):
        run.run()
    run.interrupted()  # what evaluator_node.main does on Ctrl-C or the launcher's stop
    status = f"stopped: node {died} died with code 1" if died else "stopped: interrupted"
    assert run_json(tmp_path)["status"] == status
    assert [r["round"] for r in results(tmp_path)] == [1]
    assert (tmp_path / "run" / "summary.json").exists()
    run.interrupted()  # closed once: nothing left to do

# ------------------------------------------------------------------- real graph processes

needs_ros = pytest.mark.skipif(importlib.util.find_spec("rclpy") is None,
                               reason="rclpy is not installed")
GRAPH_ARGS = ("--tasks", TASK, "--levels", "", "--max_policy_calls", "2")


def launch_and(act, out: Path, *args: str, timeout: float = 90):
    """Launch the graph; ``act(proc, lines)`` is called for every line of its output until it
    returns True. (exit code, output)."""
    env = dict(os.environ, PYTHONPATH=graph_runs.child_pythonpath())
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", *GRAPH_ARGS,
           "--output", str(out), *args, "--timeout", str(timeout - 20)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if act(lines):
                break
        rest, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, "".join(lines) + rest


def kill_node(name: str, when: str):
    """An ``act`` that SIGKILLs node ``name`` at the first line starting with ``when``."""
    def act(lines):
        if not lines[-1].startswith(when):
            return False
        started = next(line for line in lines if line.startswith(f"[launcher] started {name} "))
        os.kill(int(started.split("(pid ")[1].split(")")[0]), signal.SIGKILL)
        return True
    return act


def evaluator_lines(out: str) -> str:
    return "\n".join(line for line in out.splitlines() if line.startswith("[evaluator_node]"))


@pytest.mark.graph
@pytest.mark.slow
@needs_ros
def test_a_killed_sim_closes_the_run_and_keeps_its_episodes(tmp_path):
    out = tmp_path / "run"
    code, text = launch_and(kill_node("sim_node", "[evaluator_node] [1/3]"), out,
                            "--rounds", "3")
    assert code == 1, text[-3000:]
    assert "node sim_node died with code -9 (SIGKILL); evaluator_node closes the run" in text
    status = json.loads((out / "run.json").read_text())["status"]
    assert status == "stopped: node sim_node died with code -9 (SIGKILL)", text[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["all"]["n_episodes"] == len(graph_runs.results(out)) >= 1
    assert "[launcher] evaluator_node exited with code 3" in text  # it closed by itself
    assert "Traceback" not in evaluator_lines(text) and "KeyboardInterrupt" not in text


@pytest.mark.graph
@pytest.mark.slow
@needs_ros
def test_a_sim_dying_during_start_up_gives_one_line_not_a_traceback(tmp_path):
    """The evaluator is still importing when the sim dies: it used to be interrupted there
    (a KeyboardInterrupt traceback); now it starts, hears why and closes the run."""
    out = tmp_path / "run"
    code, text = launch_and(kill_node("sim_node", "[launcher] started evaluator_node"), out)
    assert code == 1, text[-3000:]
    lines = evaluator_lines(text)
    assert "Traceback" not in lines and "KeyboardInterrupt" not in lines, lines
    assert "evaluator_node: error: node sim_node died with code -9 (SIGKILL)" in lines
    assert json.loads((out / "run.json").read_text())["status"] == \
        "stopped: node sim_node died with code -9 (SIGKILL)"
    assert (out / "summary.json").exists()


@pytest.mark.graph
@pytest.mark.slow
@needs_ros
def test_a_killed_policy_is_restarted_and_only_its_episode_fails(tmp_path):
    out = tmp_path / "run"
    policy = f"support.bad_policies:DiesOncePolicy?marker={tmp_path / 'died'}"
    code, text = launch_and(lambda lines: False, out, "--rounds", "3", "--policy", policy)
    assert code == 3, text[-3000:]  # round 1's failure is the infrastructure's: incomplete
    assert "node policy_node died with code -9 (SIGKILL); restarting it (restart 1 of 2)" in text
    reason = "policy node restarted: it died with code -9 (SIGKILL) (restart 1 of 2)"
    rows = graph_runs.results(out)
    assert [(r["round"], r["status"], r["error"], r.get("failure")) for r in rows] == [
        (1, "failed", reason, "infrastructure"), (2, "ok", None, None), (3, "ok", None, None)], \
        text[-3000:]
    assert rows[1]["complete"] and rows[2]["complete"]
    status = json.loads((out / "run.json").read_text())["status"]
    assert status.startswith("incomplete: 1 of 3 trials failed for infrastructure reasons")
    assert json.loads((out / "summary.json").read_text())["all"]["n_episodes"] == 2
    # the same command again: only round 1 runs again (the marker: the policy dies no more)
    code, text = launch_and(lambda lines: False, out, "--rounds", "3", "--policy", policy)
    assert code == 0, text[-3000:]
    rows = graph_runs.results(out)
    assert [(r["round"], r["status"]) for r in rows[3:]] == [(1, "ok")], text[-3000:]
    assert json.loads((out / "run.json").read_text())["status"] == "finished"
    assert json.loads((out / "summary.json").read_text())["all"]["n_episodes"] == 3


@pytest.mark.graph
@pytest.mark.slow
@needs_ros
# Missed once in four fresh-clone CI runs (2026-12-04: the stopped policy never left the graph
# within the launcher's 70 s; it passes in ~13 s otherwise, 3 of 3 again at once): one rerun
# while that is looked into. A stall detection that is broken fails both tries.
@pytest.mark.flaky(reruns=1)
def test_a_frozen_policy_is_reported_stalled_not_gone(tmp_path):
    """SIGSTOP: the process lives but even its DDS participant falls silent, so after the
    lease (10 s) the node leaves the graph; that used to read "the policy node is gone"."""
    out = tmp_path / "run"
    t0 = time.monotonic()
    code, text = launch_and(lambda lines: False, out, "--policy",
                            "support.bad_policies:FreezingPolicy")
    assert code == 3, text[-3000:]
    status = json.loads((out / "run.json").read_text())["status"]
    assert status.startswith("stopped: the policy node stalled: its process (pid ")
    assert "is alive, stopped (SIGSTOP, Ctrl-Z or a debugger), but left the graph" in status
    assert (out / "summary.json").exists() and "gone" not in status
    assert time.monotonic() - t0 < 60
