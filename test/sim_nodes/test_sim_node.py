"""The sim node as its own process, driven over DDS by this test: lock-step protocol and
rejection of malformed action chunks (whoever publishes them)."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.benchmarks.robofollow.tasks import load_suite

pytestmark = pytest.mark.graph  # see setup.cfg's markers


class Driver:
    """Plays the evaluator and the policy against a real sim node process."""

    def __init__(self):
        self.node = rclpy.create_node("sim_node_test_driver")
        q = messages.qos_profile
        self.status: list[dict] = []
        self.images: dict[str, list] = {c: [] for c in C.ALOHA_PIPER.camera_names}
        self.joints: list = []
        self.pub_control = self.node.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_chunk = self.node.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK, q(C.QOS_COMMAND))
        self.node.create_subscription(String, C.TOPIC_EPISODE_STATUS,
                                      lambda m: self.status.append(messages.parse_json_msg(m)), q(C.QOS_EVENTS))
        self.node.create_subscription(JointState, C.TOPIC_JOINT_STATES,
                                      lambda m: self.joints.append(m), q(C.QOS_STATE))
        for cam in C.ALOHA_PIPER.camera_names:
            self.node.create_subscription(Image, C.image_topic(cam),
                                          lambda m, c=cam: self.images[c].append(m), q(C.QOS_IMAGES))

    def spin_until(self, condition, timeout=60.0):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            rclpy.spin_once(self.node, timeout_sec=0.05)

    def send(self, **payload):
        self.pub_control.publish(messages.json_msg({"episode": "e1", **payload}))

    def kinds(self):
        return [s["kind"] for s in self.status]


@pytest.fixture(scope="module")
def sim_process():
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "vla_bridge.sim_nodes.sim_node"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rclpy.init()
    driver = Driver()
    try:
        driver.spin_until(lambda: driver.node.count_subscribers(C.TOPIC_EPISODE_CONTROL) >= 1, 60)
        yield driver
    finally:
        driver.node.destroy_node()
        rclpy.shutdown()
        proc.terminate()
        proc.wait(timeout=10)


def test_lock_step_and_malformed_chunks(sim_process):
    d = sim_process
    task = load_suite().get("L0_pickup_yellow_block_3")
    d.send(kind=C.CONTROL_BEGIN, task=task.to_dict(), seed=5, max_policy_calls=2,
           max_actions_per_call=5)
    d.spin_until(lambda: C.STATUS_READY in d.kinds())
    d.send(kind=C.CONTROL_START)
    d.spin_until(lambda: all(d.images[c] for c in C.ALOHA_PIPER.camera_names))
    stamp = d.images["cam_high"][-1].header.stamp
    ticks_before = len(d.joints)

    def chunk_msg(chunk, names=C.ALOHA_PIPER.action_names):
        msg = JointTrajectory(joint_names=list(names))
        msg.header.stamp = stamp
        from trajectory_msgs.msg import JointTrajectoryPoint
        msg.points = [JointTrajectoryPoint(positions=[float(v) for v in row]) for row in chunk]
        return msg

    state = messages.joint_state_to_array(d.joints[-1], C.ALOHA_PIPER.action_names)
    # wrong width: 13 joints
    d.pub_chunk.publish(chunk_msg(np.tile(state[:13], (5, 1)), C.ALOHA_PIPER.action_names[:13]))
    d.spin_until(lambda: C.STATUS_ERROR in d.kinds())
    assert "[H, 14]" in d.status[-1]["message"]
    # NaN target
    bad = np.tile(state, (5, 1))
    bad[2, 4] = np.nan
    d.pub_chunk.publish(chunk_msg(bad))
    d.spin_until(lambda: d.kinds().count(C.STATUS_ERROR) >= 2)
    assert "non-finite" in d.status[-1]["message"] or "NaN" in d.status[-1]["message"]
    rclpy.spin_once(d.node, timeout_sec=0.3)
    assert len(d.joints) == ticks_before  # rejected chunks never advance the sim
    # a valid chunk runs: 5 ticks, then the next observation
    d.pub_chunk.publish(chunk_msg(np.tile(state, (8, 1))))  # 8 actions, budget 5 per call
    d.spin_until(lambda: C.STATUS_CHUNK_DONE in d.kinds())
    assert d.status[-1]["tick"] == 5
    d.spin_until(lambda: len(d.images["cam_high"]) >= 2)
    # a stale chunk (answering the old observation) is dropped, the current one completes
    d.pub_chunk.publish(chunk_msg(np.tile(state, (5, 1))))
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        rclpy.spin_once(d.node, timeout_sec=0.05)
    assert d.kinds().count(C.STATUS_CHUNK_DONE) == 1  # the stale chunk did not run
    stamp = d.images["cam_high"][-1].header.stamp
    d.pub_chunk.publish(chunk_msg(np.tile(state, (5, 1))))
    d.spin_until(lambda: C.STATUS_DONE in d.kinds())
    assert d.status[-1]["ticks"] == 10 and d.status[-1]["calls"] == 2
