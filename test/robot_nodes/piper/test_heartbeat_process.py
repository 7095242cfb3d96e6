"""The heartbeat watchdog (issue #29, point 5): the policy node's heartbeat comes from a child
process, so a predict that holds the policy's GIL causes no hold, a SIGKILLed policy process
does, within a bound; and a heartbeat hold keeps the last commanded target rather than
stepping back to the measured position that trails it. On the fake firmware (real piper_sdk,
virtual CAN bus); the policy node runs as its own process (vla_bridge.perf.heartbeat)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.workcell import HOME_ARM_Q

pytestmark = pytest.mark.filterwarnings("ignore:The 'bustype' argument is deprecated")

HOME = np.concatenate([HOME_ARM_Q, [1.0]])
NAMES = C.arm_joint_names("right")


def fake_joint_targets(fake, since: float) -> np.ndarray:
    """Joint targets (n, 6) rad of every complete JointCtrl the fake firmware got."""
    joints, current = [], [None] * 6
    for f in fake.frames(since=since):
        if f.name.startswith("joint_ctrl_"):
            for key, value in f.fields.items():
                current[int(key.split("_")[1]) - 1] = value
            if f.name == "joint_ctrl_56" and None not in current:
                joints.append(np.radians(np.array(current, float) / 1000.0))
    return np.array(joints).reshape(-1, 6)


def test_heartbeat_hold_keeps_the_last_commanded_target_not_the_measured_position(ros_context):
    from rclpy.parameter import Parameter

    from vla_bridge.robot_nodes.piper.piper_node import PiperNode
    from vla_bridge.ros import messages

    node = PiperNode(context=ros_context, parameter_overrides=[
        Parameter("arms", value="right"), Parameter("use_fake_hardware", value=True),
        Parameter("fake_feedback_timeout_s", value=2.0)])
    fake = node.fakes["right"]
    try:
        target = HOME.copy()
        target[0] += 1.0  # fast: the speed cap paces the commands, the arm trails them
        node.on_heartbeat(None)
        node.on_chunk(messages.chunk_to_msg(np.linspace(HOME, target, 11)[1:], NAMES, 0.0, 0.1))
        t0 = time.time()
        before_hold, measured_at_hold, hold_tick = None, None, None
        for k in range(120):  # 100 Hz for up to 1.2 s; the heartbeat stops after 0.4 s
            if k < 40:
                node.on_heartbeat(None)
            last = node.commanded["right"].copy() if node.commanded["right"] is not None else None
            node.command_tick()
            if hold_tick is None and node.safety["right"].holding:
                hold_tick, before_hold = k, last
                measured_at_hold = node.feedback["right"].copy()
            time.sleep(0.01)
        assert hold_tick is not None and hold_tick >= 40 and node.player is None
        # the chunk was cut mid-way, the arm was moving and trailing its command
        assert before_hold[0] < target[0] - 0.3
        trail = before_hold[:6] - measured_at_hold[:6]
        assert np.abs(trail).max() > 0.005, trail
        # every command from the hold on is the last commanded target, not the measured joints
        np.testing.assert_allclose(node.commanded["right"], before_hold, atol=1e-9)
        sent = fake_joint_targets(fake, t0)
        tail = sent[-(120 - hold_tick - 5):]  # the holding commands on the bus
        np.testing.assert_allclose(tail, np.tile(before_hold[:6], (len(tail), 1)), atol=2e-5)
        assert np.abs(tail[-1] - measured_at_hold[:6]).max() > 0.005
    finally:
        node.close()
        node.destroy_node()


@pytest.fixture
def rig(ros_context):
    from vla_bridge.perf.heartbeat import PiperRig

    r = PiperRig(ros_context)
    yield r
    r.close()


@pytest.mark.graph
@pytest.mark.parametrize("mode, expect_holds", [("process", False), ("thread", True)])
def test_a_predict_holding_the_gil_for_1_s_causes_no_false_hold(rig, capsys, mode, expect_holds):
    """The policy process's predict holds its GIL 1 s at a time (a C call that does not
    release it) for 4 s: with the heartbeat from the child process the chunk plays on, no
    hold. The thread heartbeat (the old way, heartbeat_process:=false) goes silent under the
    same predict and the node holds: the GIL hold is real."""
    from vla_bridge.perf.heartbeat import PolicyProcess

    policy = PolicyProcess(mode, gil_hold_s=1.0, gap_s=0.1)
    try:
        assert policy.info["heartbeat"] == mode
        assert rig.wait_for_heartbeat(60.0)
        holds = rig.keep_playing(4.0)
        with capsys.disabled():
            print(f"\n[heartbeat] {mode}: {holds} heartbeat holds in 4 s of a predict holding "
                  "the GIL 1 s at a time")
        assert (holds > 0) == expect_holds
    finally:
        policy.stop()


@pytest.mark.graph
def test_a_sigkilled_policy_process_holds_the_arm_within_1_s(rig, capsys):
    from vla_bridge.perf.heartbeat import PolicyProcess, pid_alive

    policy = PolicyProcess("process", gil_hold_s=0.0, gap_s=0.1)
    try:
        child = policy.heartbeat_pid
        assert pid_alive(child)
        assert rig.wait_for_heartbeat(60.0)
        rig.play(30.0)
        time.sleep(0.5)
        assert rig.node.player is not None and not rig.holds
        t_kill = policy.kill()
        latency = rig.wait_for_hold(t_kill, 3.0)
        with capsys.disabled():
            print(f"\n[heartbeat] SIGKILL -> hold after "
                  f"{'none' if latency is None else f'{1000 * latency:.0f} ms'}")
        assert latency is not None and latency < 1.0
        assert rig.node.player is None and rig.node.safety["right"].holding
        deadline = time.monotonic() + 2.0  # the orphaned heartbeat child is gone too
        while pid_alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not pid_alive(child)
    finally:
        policy.stop()
