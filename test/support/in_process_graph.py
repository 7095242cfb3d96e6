"""The evaluator's episode run (episodes.SuiteRun) against an in-process graph, without DDS
(test/evaluation/test_episodes.py and the tests of the run directory, provenance, node deaths,
cue protocol rows and charged latency).

The sim and the policy answer in-process the way their nodes do: ``begin`` resets a real
MuJoCo session and the oracle, ``start`` plays the episode, and their statuses and frames
batches arrive one per ``spin()``, which moves a fake clock by 50 ms. Scoring, the run
directory and the cue protocol are the real ones.

An episode is deterministic in what its ``begin`` fixes (task, seed, budget, charged latency,
instruction: the whole begin but its episode id), so the oracle's play of it is simulated once
per test session and kept (``PLAYED``): a later ``start`` of the same begin answers with the
same chunks, frames and statuses, in the same order, without stepping MuJoCo again. A graph
whose ``world``, ``now`` or ``record_frame`` a test overrides plays live.
``VLA_BRIDGE_TEST_CHECK_PLAYED=1`` plays every episode live and checks it against the kept one.
"""
from __future__ import annotations

import json
import os
from collections import deque
from dataclasses import dataclass

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import world_to_dict
from vla_bridge.evaluation.episodes import SPIN_S, EngineConfig, LatencyCollector, SuiteRun
from vla_bridge.evaluation.robofollow_run import RoboFollowConfig, RoboFollowRun
from vla_bridge.policy_nodes.oracle import OraclePolicy
from vla_bridge.ros.node_config import defaults
from vla_bridge.sim_nodes.session import Budget, SimSession

TASK = "L0_pickup_yellow_block_3"  # the oracle solves it: IS 1.0, ES 1.0, 501 frames


@dataclass(frozen=True)
class Played:
    """One episode as the in-process sim played it after its begin: per policy call (the
    call's number, its frames [(sim time, executed command, WorldState)], ticks and calls
    after it), then the episode's ticks, calls and sim time at its end."""
    chunks: tuple
    ticks: int
    calls: int
    end_time: float


#: begin key (``InProcessGraph.played_key``) -> the episode's Played, for the test session
PLAYED: dict[str, Played] = {}


class FakeClock:
    """monotonic() moves only when the graph spins; time_ns() counts episodes' ids up."""

    def __init__(self):
        self.now, self.ns = 1000.0, 0

    def monotonic(self) -> float:
        return self.now

    def time_ns(self) -> int:
        self.ns += 1
        return self.ns


class Log:
    def __init__(self):
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))

    def error(self, text: str) -> None:
        self.lines.append(("error", text))


class InProcessGraph:
    """The sim and policy nodes as the run hears them (see the module docstring). Tests
    override ``answer_begin`` / ``answer_start`` / ``world`` to script a misbehaving node;
    ``publishers`` says who is on the graph."""

    def __init__(self, session: SimSession, clock: FakeClock):
        self.session, self.clock = session, clock
        self.policy = OraclePolicy()
        self.run: SuiteRun | None = None
        self.sent: list[dict] = []  # control messages, in order
        self.instructions: list[str] = []
        self.inbox: deque = deque()
        self.publishers = {C.TOPIC_EPISODE_STATUS: 1, C.TOPIC_ACTION_CHUNK: 1,
                           C.TOPIC_EPISODE_CONTROL: 1}
        self.subscribers = {C.TOPIC_EPISODE_CONTROL: 2}
        self.offset, self.episode, self.rows = 0.0, None, []
        self.resets, self.ready_stamp = 0, 0.0  # begins that reset the scene; their ready stamp
        self.played_key: str | None = None  # what the last begin fixed (see PLAYED)
        self.frame: tuple | None = None  # the kept frame being answered (time, command, world)

    # the Graph protocol
    def send(self, message: dict) -> None:
        self.sent.append(message)
        if message["kind"] == C.CONTROL_BEGIN:
            self.answer_begin(message)
        elif message["kind"] == C.CONTROL_START:
            self.answer_start()

    def instruct(self, text: str) -> None:
        self.instructions.append(text)

    def spin(self) -> None:
        self.clock.now += SPIN_S
        if self.inbox:
            deliver, payload = self.inbox.popleft()
            deliver(payload)

    def count_publishers(self, topic: str) -> int:
        return self.publishers.get(topic, 0)

    def count_subscribers(self, topic: str) -> int:
        return self.subscribers.get(topic, 0)

    # the nodes
    def answer_begin(self, ctl: dict) -> None:
        if ctl["episode"] == self.episode:  # asked again: answer, do not reset (as the nodes)
            self.sim_status(C.STATUS_READY, tick=0, stamp=self.ready_stamp)
            self.policy_status(C.STATUS_READY)
            return
        self.resets += 1
        self.episode, task = ctl["episode"], ctl["task"]
        self.offset = self.now() + 1.0  # as the sim node: a gap between episodes
        budget = Budget(ctl["max_policy_calls"], ctl["max_actions_per_call"])
        self.session.begin(task["scene"], task["layout"], ctl["seed"], budget,
                           charged=ctl.get("charged_latency_ms"), task=task)  # as the sim node
        self.frame = None
        self.played_key = json.dumps(  # the whole begin but its episode id
            [type(self.session.backend).__name__, self.session.backend.control_period,
             type(self.policy).__name__, {k: v for k, v in ctl.items() if k != "episode"}],
            sort_keys=True, default=str)
        self.record_frame()
        self.flush()
        self.ready_stamp = self.now()
        self.sim_status(C.STATUS_READY, tick=0, stamp=self.ready_stamp)
        self.policy.reset()
        self.policy.set_instruction(ctl["instruction"], task)
        self.policy_status(C.STATUS_READY)

    def answer_start(self) -> None:
        if not self.keeps_played():
            return self.answer_start_live()
        played = PLAYED.get(self.played_key)
        if played is None or os.environ.get("VLA_BRIDGE_TEST_CHECK_PLAYED"):
            fresh = self.play()
            if played is not None:
                check_same_play(played, fresh)
            played = PLAYED[self.played_key] = fresh
        for call, frames, ticks, calls in played.chunks:
            self.policy_status(C.STATUS_PREDICTED, call=call, inference_ms=2.0,
                               overhead_ms=0.5, latency_ms={"preprocess": 0.1, "transport": 0.2})
            for self.frame in frames:
                self.record_frame()
            self.flush()
            self.sim_status(C.STATUS_CHUNK_DONE, tick=ticks, calls=calls)
        self.frame = (played.end_time, None, None)  # the sim's clock where the episode ended
        self.sim_status(C.STATUS_DONE, ticks=played.ticks, calls=played.calls,
                        timing={"wait_s": 0.1, "step_s": 0.2, "publish_s": 0.0})

    def answer_start_live(self) -> None:
        """The episode stepped in MuJoCo now, every frame recorded as it is executed."""
        session = self.session
        while not session.done:
            chunk = self.policy.predict(session.observation(images=False))
            self.policy_status(C.STATUS_PREDICTED, call=session.calls + 1, inference_ms=2.0,
                               overhead_ms=0.5, latency_ms={"preprocess": 0.1, "transport": 0.2})
            for _ in session.execute(chunk):
                self.record_frame()
            self.flush()
            self.sim_status(C.STATUS_CHUNK_DONE, tick=session.ticks, calls=session.calls)
        self.sim_status(C.STATUS_DONE, ticks=session.ticks, calls=session.calls,
                        timing={"wait_s": 0.1, "step_s": 0.2, "publish_s": 0.0})

    def keeps_played(self) -> bool:
        """Whether this graph's episodes may be answered from PLAYED: a test that scripts the
        frames themselves (``world``, ``now``, ``record_frame``) plays live."""
        cls = type(self)
        return self.played_key is not None and all(
            getattr(cls, name) is getattr(InProcessGraph, name)
            for name in ("world", "now", "record_frame", "answer_start_live", "play"))

    def play(self) -> Played:
        """Step the begun episode in MuJoCo with the oracle, as ``answer_start_live`` does."""
        session, chunks = self.session, []
        while not session.done:
            call = session.calls + 1
            chunk = self.policy.predict(session.observation(images=False))
            frames = tuple((session.backend.time, np.array(session.command),
                            session.backend.world_state()) for _ in session.execute(chunk))
            chunks.append((call, frames, session.ticks, session.calls))
        return Played(tuple(chunks), session.ticks, session.calls, session.backend.time)

    def now(self) -> float:
        time = self.session.backend.time if self.frame is None else self.frame[0]
        return self.offset + time

    def world(self):
        return self.session.backend.world_state() if self.frame is None else self.frame[2]

    def record_frame(self) -> None:
        command = self.session.command if self.frame is None else self.frame[1]
        self.rows.append((self.now(), np.array(command), self.world()))

    def flush(self, rows=None) -> None:
        rows, self.rows = (self.rows if rows is None else rows), []
        self.inbox.append((lambda batch: self.run.on_frames(len(batch), lambda: batch), rows))

    def sim_status(self, kind: str, **fields) -> None:
        status = {"kind": kind, "episode": self.episode, **fields}
        self.inbox.append((lambda s: self.run.on_sim_status(s), status))

    def policy_status(self, kind: str, **fields) -> None:
        status = {"kind": kind, "episode": self.episode, **fields}
        self.inbox.append((lambda s: self.run.on_policy_status(s), status))


def check_same_play(kept: Played, fresh: Played) -> None:
    """VLA_BRIDGE_TEST_CHECK_PLAYED: an episode played again is the kept one, frame for frame."""
    assert (kept.ticks, kept.calls, kept.end_time) == (fresh.ticks, fresh.calls, fresh.end_time)
    assert len(kept.chunks) == len(fresh.chunks)
    for (call, frames, ticks, calls), again in zip(kept.chunks, fresh.chunks):
        assert (call, ticks, calls, len(frames)) == (again[0], again[2], again[3], len(again[1]))
        for (t, command, world), (t2, command2, world2) in zip(frames, again[1]):
            assert t == t2 and np.array_equal(command, command2)
            assert world_to_dict(world) == world_to_dict(world2)


def make_run(session, tmp_path, graph_class=InProcessGraph, cues=None, subscribers=(), **params):
    """(SuiteRun, its graph, its log, its console lines) for a run into tmp_path / "run"."""
    clock = FakeClock()
    graph = graph_class(session, clock)
    log, console = Log(), []
    settings = {**defaults(EngineConfig), **defaults(RoboFollowConfig), "tasks": TASK, "levels": "",
                "output": str(tmp_path / "run"), **params}
    run = SuiteRun(settings, graph, benchmark=RoboFollowRun(settings, log, cues=cues), log=log,
                   echo=console.append, clock=clock, subscribers=[LatencyCollector(), *subscribers])
    graph.run = run
    return run, graph, log, console


def results(tmp_path) -> list[dict]:
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def run_json(tmp_path) -> dict:
    return json.loads((tmp_path / "run" / "run.json").read_text())


def kinds(graph, repeats: bool = False) -> list[str]:
    """The control kinds sent, in order; a begin sent again while the nodes had not answered
    (BEGIN_RESEND_S) is listed once unless ``repeats``."""
    sent = [m["kind"] for m in graph.sent]
    if repeats:
        return sent
    return [k for i, k in enumerate(sent) if not (k == "begin" and i and sent[i - 1] == "begin")]
