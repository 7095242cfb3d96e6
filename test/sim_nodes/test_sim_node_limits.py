"""The sim node (built in-process) logs the targets its session clamps to the arm's limits,
logs rejected chunks in real time too, and counts one policy call per observation however
many chunks answer it."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rclpy")

from std_msgs.msg import String  # noqa: E402

from vla_bridge import contract as C  # noqa: E402
from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: E402
from vla_bridge.embodiment.workcell import arm_slice, home_command  # noqa: E402
from vla_bridge.ros import messages  # noqa: E402

TASK = load_suite().get("L0_pickup_yellow_block_3").to_dict()


@pytest.fixture(scope="module")
def node(sim_node_in_process):
    return sim_node_in_process


def start(node, episode: str, lock_step: bool) -> None:
    node.lock_step = lock_step
    for kind, extra in (("begin", {"task": TASK, "seed": 3, "max_policy_calls": 10,
                                   "max_actions_per_call": 5}), ("start", {})):
        node.on_control(String(data=json.dumps({"kind": kind, "episode": episode, **extra})))
    assert node.pending_stamp_ns is not None


def chunk_msg(node, chunk):
    ns = node.pending_stamp_ns
    return messages.chunk_to_msg(chunk, C.ALOHA_PIPER.action_names, ns / 1e9, node.dt)


def absurd_chunk(n: int = 5) -> np.ndarray:
    chunk = np.tile(home_command(), (n, 1))
    chunk[:, 0] = 1e6
    chunk[:, C.GRIPPER_INDEX["right"]] = 5.0
    return chunk


def test_lock_step_clamps_and_logs(node):
    start(node, "e1", lock_step=True)
    warnings = len(node.log.lines["warning"])
    node.on_chunk(chunk_msg(node, absurd_chunk()))
    lines = node.log.lines["warning"][warnings:]
    assert len(lines) == 1 and "clamped action targets" in lines[0] and "joint_limit" in lines[0]
    command = node.session.command
    assert all(node.session.limits.joints.within(command[arm_slice(a)]) for a in C.ARMS)
    done = [m for m in node.sent if m["episode"] == "e1" and m["kind"] == C.STATUS_CHUNK_DONE]
    assert [m["calls"] for m in done] == [1]


def test_real_time_counts_one_call_per_observation_and_logs(node):
    start(node, "e2", lock_step=False)
    msg = chunk_msg(node, absurd_chunk())
    for _ in range(50):
        node.on_chunk(msg)
    assert node.session.calls == 1
    errors, warnings = len(node.log.lines["error"]), len(node.log.lines["warning"])
    bad = chunk_msg(node, absurd_chunk())
    bad.points[1].positions[3] = float("nan")
    node.on_chunk(bad)
    assert "rejected action chunk" in node.log.lines["error"][errors]
    for _ in range(node.observation_period):  # then the next observation goes out
        node.real_time_tick()
    assert node.running and node.session.ticks == node.observation_period
    assert any("clamped action targets" in ln for ln in node.log.lines["warning"][warnings:])
    node.on_chunk(chunk_msg(node, np.tile(node.session.command, (5, 1))))  # the new observation
    assert node.session.calls == 2
