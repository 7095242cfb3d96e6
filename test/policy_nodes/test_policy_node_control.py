"""The policy node (built in-process, oracle backend) against malformed episode control: each
bad message is logged once and changes nothing; a following valid begin still works."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("rclpy")

from std_msgs.msg import String  # noqa: E402

from support.junk_messages import JUNK_CONTROL, half_valid_begins, in_process  # noqa: E402
from vla_bridge import contract as C  # noqa: E402
from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: E402
from vla_bridge.policy_nodes import policy_node as P  # noqa: E402

TASK = load_suite().get("L0_pickup_yellow_block_3").to_dict()


@pytest.fixture
def node():
    # the heartbeat beats from a thread: its child process (0.7 s to start and stop, tested in
    # test_heartbeat_child and robot_nodes/piper/test_heartbeat_process) has no part in control
    with in_process(P, P.PolicyNode, {"heartbeat_process": False}) as policy:
        policy.sent = []
        policy.pub_status.publish = lambda msg: policy.sent.append(json.loads(msg.data))
        yield policy


def begin(episode: str) -> String:
    return String(data=json.dumps({"kind": "begin", "episode": episode, "task": TASK,
                                   "seed": 3, "instruction": TASK["instruction"],
                                   "max_policy_calls": 2, "max_actions_per_call": 5}))


def test_junk_control_is_logged_once_each_and_changes_nothing(node):
    node.on_control(begin("e1"))
    assert node.episode == "e1" and node.sent == [{"kind": "ready", "episode": "e1",
                                                  "embodiment": "aloha_piper"}]
    node.calls = 4
    junk = JUNK_CONTROL + half_valid_begins(TASK)
    for data in junk:
        node.on_control(String(data=data))  # must not raise
    errors = node.log.lines["error"]
    assert len(errors) == len(junk), errors
    assert all(line.startswith("ignored a malformed episode control message") for line in errors)
    assert max(len(line) for line in errors) < 600  # 1 MB of junk is cut short
    assert node.episode == "e1" and node.calls == 4 and node.chunking._episode == "e1"
    assert len(node.sent) == 1  # no status for junk

    node.on_control(begin("e2"))  # the node is still there and takes the next episode
    assert node.episode == "e2" and node.sent[-1] == {"kind": "ready", "episode": "e2",
                                                   "embodiment": "aloha_piper"}


def test_a_begin_that_fails_in_the_backend_is_reported_not_fatal(node):
    node.on_control(String(data=json.dumps({"kind": "begin", "episode": "e3", "task": {},
                                            "instruction": "x"})))
    assert node.sent[-1]["kind"] == C.STATUS_ERROR and node.sent[-1]["episode"] == "e3"
    assert "policy reset failed" in node.sent[-1]["message"]


def test_an_exception_in_a_subscription_callback_is_logged_not_fatal(node):
    handle = P.messages.guarded(node, lambda msg: 1 / 0, "a topic")
    handle(String(data="x"))
    assert node.log.lines["error"] == ["a topic: failed on a message: "
                                       "ZeroDivisionError('division by zero')"]


def test_a_repeated_begin_is_answered_again_without_a_second_reset(node, monkeypatch):
    """The evaluator sends a begin again when its answer is late (a lost begin or ready)."""
    resets = []
    reset = node.chunking.begin_episode
    monkeypatch.setattr(node.chunking, "begin_episode",
                        lambda *a, **k: (resets.append(a[0]), reset(*a, **k)))
    node.on_control(begin("e4"))
    node.on_control(begin("e4"))
    ready = {"kind": "ready", "episode": "e4", "embodiment": "aloha_piper"}
    assert node.sent == [ready, ready] and resets == ["e4"]
    node.on_control(begin("e5"))  # a new episode resets
    assert resets == ["e4", "e5"] and node.sent[-1]["episode"] == "e5"
