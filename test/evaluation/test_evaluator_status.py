"""The evaluator node (built in-process) against malformed sim and policy statuses: each bad
message is logged once and dropped before it reaches the run; the run's episode is unchanged
and following valid statuses still work."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("rclpy")

from std_msgs.msg import String  # noqa: E402

from support.junk_messages import NOT_AN_OBJECT, in_process  # noqa: E402
from vla_bridge.evaluation import evaluator_node as E  # noqa: E402
from vla_bridge.evaluation.episodes import Episode  # noqa: E402

ID = "scene1/t/r1@1"
WRONG_STATUS = [json.dumps(p) for p in (
    {}, {"kind": "ready"}, {"kind": "ready", "episode": None, "stamp": 1.0},
    {"kind": "ready", "episode": 5, "stamp": 1.0}, {"kind": "bogus", "episode": ID},
    {"kind": 3, "episode": ID}, {"kind": "error", "episode": ID, "message": ["x"]},
)]
WRONG_SIM = [json.dumps({"episode": ID, **p}) for p in (
    {"kind": "ready"}, {"kind": "ready", "stamp": "1.0"}, {"kind": "ready", "stamp": True},
    {"kind": "done", "calls": 1}, {"kind": "done", "ticks": "9", "calls": 1},
    {"kind": "done", "ticks": 9, "calls": 1, "timing": 4}, {"kind": "predicted"},
)]
WRONG_POLICY = [json.dumps({"episode": ID, **p}) for p in (
    {"kind": "predicted", "call": 1, "latency_ms": "fast"},
    {"kind": "predicted", "call": 1, "inference_ms": "2"}, {"kind": "done", "ticks": 1},
)]


@pytest.fixture
def evaluator():
    with in_process(E, E.EvaluatorNode) as node:
        yield node


def send(callback, **status) -> None:
    callback(String(data=json.dumps({"episode": ID, **status})))


def test_junk_statuses_are_logged_once_each_and_dropped(evaluator):
    episode = evaluator.suite.episode = Episode(ID, last_progress=0.0)
    junk = [(evaluator.on_sim_status, d) for d in NOT_AN_OBJECT + WRONG_STATUS + WRONG_SIM]
    junk += [(evaluator.on_policy_status, d) for d in NOT_AN_OBJECT + WRONG_STATUS + WRONG_POLICY]
    for callback, data in junk:
        callback(String(data=data))  # must not raise
    lines = evaluator.log.lines["error"]
    assert len(lines) == len(junk), lines
    assert all(line.startswith("ignored a malformed") for line in lines)
    assert max(map(len, lines)) < 600
    assert episode == Episode(ID, last_progress=0.0)  # nothing reached the run

    send(evaluator.on_sim_status, kind="ready", tick=0, stamp=2.5)  # valid ones still work
    send(evaluator.on_policy_status, kind="ready")
    send(evaluator.on_sim_status, kind="done", ticks=9, calls=1, reason="budget")
    assert episode.sim_ready and episode.start_stamp == 2.5 and episode.policy_ready
    assert episode.done["ticks"] == 9 and episode.error is None


def test_a_status_the_run_fails_on_is_logged_not_fatal(evaluator):
    evaluator.suite.episode = Episode(ID, last_progress=0.0)
    send(evaluator.on_policy_status, kind="predicted", call=1, latency_ms={"preprocess": "x"})
    [line] = evaluator.log.lines["error"]
    assert line.startswith("policy status 'predicted' dropped: ValueError(")
    send(evaluator.on_policy_status, kind="predicted", call=2, inference_ms=2.0)
    assert evaluator.suite.subscribers[0].calls == [{"inference": 2.0}]
