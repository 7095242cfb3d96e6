"""The fake leader arm (robot_nodes/piper/fake_leader.py) on a fake follower's virtual CAN bus:
a linked follower obeys its frames, an unlinked one ignores them, and piper_sdk reads them back
(`PiperArm.read_leader`, `teleop.TeleopLeaders`) as what the leader commanded."""
from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

from vla_bridge.embodiment.workcell import HOME_ARM_Q
from vla_bridge.robot_nodes.piper.arm import GRIPPER_STROKE_MAX_M, PiperArm
from vla_bridge.robot_nodes.piper.fake_leader import FakeLeader, interpolate
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper
from vla_bridge.robot_nodes.piper.teleop import TeleopLeaders


@pytest.fixture
def pair():
    port = f"leader_test_{uuid.uuid4().hex[:8]}"
    fake = FakePiper(port, initial_joints=HOME_ARM_Q,
                     initial_gripper_m=GRIPPER_STROKE_MAX_M).start()
    arm = PiperArm(port, interface="virtual")
    arm.connect()
    leader = FakeLeader(port, initial=arm.read().vector())
    yield fake, arm, leader
    leader.stop()
    arm.close()
    fake.stop()


def wait(condition, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_interpolation_starts_at_the_current_target_and_holds_the_last():
    start, targets, times = np.zeros(7), np.array([[1.0] * 7, [3.0] * 7]), np.array([1.0, 2.0])
    assert np.allclose(interpolate(start, targets, times, 0.5), 0.5)
    assert np.allclose(interpolate(start, targets, times, 1.5), 2.0)
    assert np.allclose(interpolate(start, targets, times, 9.0), 3.0)


def test_a_linked_follower_obeys_the_leader_and_the_sdk_reads_its_commands(pair):
    fake, arm, leader = pair
    target = arm.read().vector() + np.r_[[0.2, 0.1, -0.1, 0.0, -0.2, -0.3], [0.0]]
    target[6] = 0.25
    leader.start()
    wait(lambda: arm.read_leader() is not None)
    leader.hold(target)
    time.sleep(0.5)
    assert np.abs(fake.state().joints - HOME_ARM_Q).max() < 1e-6  # not linked: standby, ignored
    fake.link()
    wait(lambda: np.abs(arm.read().vector() - target).max() < 2e-3)
    command = arm.read_leader()
    carried = leader.sent()[-1][1]
    assert np.abs(np.r_[command.joints, command.gripper] - carried).max() < 1e-12
    assert np.abs(carried - target).max() < np.radians(0.001)  # CAN quantisation
    # nothing but the leader's frames reached the follower: the driver only listened
    assert not fake.frames("motor_enable") and not fake.frames("motion_ctrl_1")


def test_a_silent_leader_gives_no_command(pair):
    fake, arm, leader = pair
    fake.link()
    leaders = TeleopLeaders(timeout_s=0.2)
    leaders.hw["right"] = arm
    measured = arm.read().vector()
    assert leaders.command("right", measured) is None  # never heard
    leader.start()
    wait(lambda: leaders.command("right", measured) is not None)
    assert leaders.heard(["right"])
    leader.silent = True
    time.sleep(0.3)
    assert leaders.command("right", measured) is None and not leaders.heard(["right"])
