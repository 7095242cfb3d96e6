"""The real piper_sdk against the PiPER firmware emulator on an in-process virtual CAN bus,
and our driver (robot_nodes.piper_arm) on top of it."""
from __future__ import annotations

import math
import statistics
import time
import uuid

import numpy as np
import pytest
from support.graph_runs import wait_until

from vla_bridge.embodiment.kinematics import PiperKinematics
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper, decode_frame, zyx_euler_deg
from vla_bridge.robot_nodes.piper.arm import (PiperArm, PiperArmError, effort_to_sdk,
                                              gripper_to_sdk_stroke, rad_to_sdk_joints,
                                              sdk_joints_to_rad, sdk_stroke_to_gripper)

pytestmark = pytest.mark.filterwarnings("ignore:The 'bustype' argument is deprecated")


@pytest.fixture
def fake():
    f = FakePiper(f"test_fake_{uuid.uuid4().hex[:8]}").start()
    yield f
    f.stop()


@pytest.fixture
def arm(fake):
    a = PiperArm(fake.channel, interface="virtual")
    a.connect(timeout_s=2.0)
    a.enable(timeout_s=2.0)
    yield a
    a.close()


# ----------------------------------------------------------------------------- units

def test_unit_conversions_round_trip():
    q = np.array([0.1, -1.2, 2.5, 0.0, -0.00001, 3.0])
    units = rad_to_sdk_joints(q)
    assert units[0] == round(math.degrees(0.1) * 1000) and all(isinstance(u, int) for u in units)
    assert np.allclose(sdk_joints_to_rad(units), q, atol=math.radians(0.0005) + 1e-12)
    assert gripper_to_sdk_stroke(1.0) == 70000 and gripper_to_sdk_stroke(0.0) == 0
    assert gripper_to_sdk_stroke(0.5) == 35000
    assert gripper_to_sdk_stroke(1.7) == 70000 and gripper_to_sdk_stroke(-1) == 0  # clipped
    assert sdk_stroke_to_gripper(35000) == pytest.approx(0.5)
    assert effort_to_sdk(1.0) == 1000 and effort_to_sdk(9.0) == 5000 and effort_to_sdk(-1) == 0


def test_frame_decoding_matches_the_sdk_encoder():
    from can import Message
    from piper_sdk.piper_msgs.msg_v2 import ArmMsgType, PiperMessage
    from piper_sdk.piper_msgs.msg_v2.transmit.arm_gripper_ctrl import ArmMsgGripperCtrl
    from piper_sdk.protocol.protocol_v2 import C_PiperParserV2

    parser, msg, frame = C_PiperParserV2(), PiperMessage(), Message()
    msg.type_ = ArmMsgType.PiperMsgGripperCtrl
    msg.arm_gripper_ctrl = ArmMsgGripperCtrl(-1234, 4321, 0x03, 0xAE)
    parser.EncodeMessage(msg, frame)
    name, fields = decode_frame(frame.arbitration_id, bytes(frame.data))
    assert name == "gripper_ctrl"
    assert fields == {"stroke": -1234, "effort": 4321, "code": 0x03, "set_zero": 0xAE}


# ------------------------------------------------------------- the SDK itself, unwrapped

def test_raw_sdk_enables_commands_and_reads_the_fake(fake):
    """The SDK calls the driver relies on, straight against the emulated firmware."""
    from piper_sdk import C_PiperInterface_V2

    sdk = C_PiperInterface_V2(fake.channel, judge_flag=False, can_auto_init=False)
    sdk.CreateCanBus(fake.channel, bustype="virtual")
    sdk.ConnectPort()  # also queries motor limits and the firmware version
    try:
        assert wait_until(lambda: sdk.EnablePiper(), timeout=2.0)
        assert sdk.GetArmEnableStatus() == [True] * 6
        sdk.GripperCtrl(0, 1000, 0x01, 0)
        sdk.MotionCtrl_2(0x01, 0x01, 100, 0x00)
        target = [20000, 30000, -40000, 5000, 10000, -15000]  # 0.001 deg
        sdk.JointCtrl(*target)
        sdk.GripperCtrl(50000, 1500, 0x01, 0)
        assert wait_until(lambda: max(abs(a - b) for a, b in zip(
            _joint_units(sdk), target)) <= 5, timeout=2.0)
        grip = sdk.GetArmGripperMsgs().gripper_state
        assert wait_until(lambda: abs(sdk.GetArmGripperMsgs().gripper_state.grippers_angle - 50000) < 50)
        assert grip.foc_status.driver_enable_status and grip.foc_status.homing_status
        status = sdk.GetArmStatus().arm_status
        assert (status.ctrl_mode, status.arm_status, status.mode_feed) == (0x01, 0x00, 0x01)
        # end pose = the SDK's modified-DH FK of the fed-back joints (0.001 mm, 0.001 deg)
        q = sdk_joints_to_rad(_joint_units(sdk))
        T = PiperKinematics().dh_flange(q)
        pose = sdk.GetArmEndPoseMsgs().end_pose
        assert wait_until(lambda: abs(sdk.GetArmEndPoseMsgs().end_pose.X_axis - T[0, 3] * 1e6) < 200)
        assert abs(pose.Z_axis - T[2, 3] * 1e6) < 200
        assert abs(pose.RY_axis - zyx_euler_deg(T[:3, :3])[1] * 1000) < 200
        # answers to the queries ConnectPort sent
        assert sdk.GetPiperFirmwareVersion() == "S-V1.6-3"
        # (piper_sdk 0.6.2 stores the parser's one reusable message object for every motor,
        # so all six entries show the last answer: motor 6's 0.1-degree limits)
        limits = sdk.GetAllMotorAngleLimitMaxSpd().all_motor_angle_limit_max_spd.motor
        assert (limits[6].motor_num, limits[6].max_angle_limit, limits[6].min_angle_limit,
                limits[6].max_joint_spd) == (6, 1200, -1200, 3000)
        answers = fake.frames("query_motor_limits")
        assert sorted((f.fields["motor_num"], f.fields["search_content"]) for f in answers) == \
            sorted((m, c) for m in range(1, 7) for c in (1, 2))
        assert sdk.isOk() and sdk.GetArmJointMsgs().Hz > 100
        # emergency stop freezes; disable drops the drivers
        sdk.EmergencyStop(0x01)
        assert wait_until(lambda: sdk.GetArmStatus().arm_status.arm_status == 0x01)
        sdk.DisablePiper()
        assert wait_until(lambda: not any(sdk.GetArmEnableStatus()))
    finally:
        sdk.DisconnectPort()
    names = [f.name for f in fake.frames()]
    for expected in ("query_motor_limits", "firmware_read", "motor_enable", "motion_ctrl_2",
                     "joint_ctrl_12", "joint_ctrl_34", "joint_ctrl_56", "gripper_ctrl",
                     "motion_ctrl_1"):
        assert expected in names
    assert fake.joint_commands()[-1] == pytest.approx(sdk_joints_to_rad(target))


def _joint_units(sdk):
    j = sdk.GetArmJointMsgs().joint_state
    return [j.joint_1, j.joint_2, j.joint_3, j.joint_4, j.joint_5, j.joint_6]


# ------------------------------------------------------------------------- the driver

def test_driver_enables_and_enters_can_joint_mode(arm, fake):
    enable = fake.frames("motor_enable")
    assert enable and enable[0].fields == {"motor_num": 7, "enable_flag": 0x02}
    mode = fake.wait_for_frame("motion_ctrl_2").fields
    assert (mode["ctrl_mode"], mode["move_mode"], mode["speed_percent"], mode["mit_mode"]) == \
        (0x01, 0x01, 50, 0x00)
    state = fake.state()
    assert all(state.joints_enabled) and state.gripper_enabled and state.ctrl_mode == 0x01
    fb = arm.read()
    assert fb.enabled == (True,) * 6 and fb.gripper_enabled and not fb.emergency_stopped
    assert np.allclose(fb.vector(), np.zeros(7), atol=1e-6)
    assert arm.firmware_version() == "S-V1.6-3"


def test_feedback_follows_commands_with_a_lag(arm, fake):
    target = np.array([0.3, 0.6, -0.5, 0.2, -0.4, 0.1])
    t0 = time.time()
    arm.command(target, gripper=0.5, effort_nm=1.5)
    assert np.allclose(fake.wait_for_frame("joint_ctrl_56", since=t0) and fake.joint_commands(since=t0)[-1],
                       target, atol=math.radians(0.001))
    grip = fake.wait_for_frame("gripper_ctrl", since=t0).fields
    assert grip == {"stroke": 35000, "effort": 1500, "code": 0x01, "set_zero": 0}
    # first-order lag under the speed cap (3 rad/s x 50 %): joint2's 0.6 rad take >= 0.4 s of
    # firmware ticks (a starved machine only makes it slower)
    assert wait_until(lambda: np.allclose(arm.read().joints, target, atol=2e-3), timeout=3.0)
    assert time.time() - t0 > 0.35
    assert wait_until(lambda: abs(arm.read().gripper - 0.5) < 0.01, timeout=2.0)
    assert arm.read().gripper_effort_nm == pytest.approx(1.5)


def test_command_latency_through_the_virtual_bus(arm, fake, capsys):
    """Figures for the report: SDK call -> frame at the firmware, and command -> the first
    joint feedback the driver reads that the firmware sent after obeying the command."""
    bus_ms, feedback_ms = [], []
    q = np.zeros(6)
    for k in range(30):
        q = q.copy()
        q[0] = 0.01 * (k + 1)
        t0 = time.time()
        arm.command(q)
        frame = fake.wait_for_frame("joint_ctrl_56", since=t0, timeout=1.0)
        bus_ms.append(1000 * (frame.received_at - t0))
        assert wait_until(lambda f=frame: arm.read().joint_stamp > f.received_at, timeout=1.0,
                          poll=0.0002)
        feedback_ms.append(1000 * (time.time() - t0))
        assert fake.state().joint_targets[0] == pytest.approx(q[0], abs=1e-5)
        time.sleep(0.005)
    with capsys.disabled():
        print(f"\n[piper virtual bus] JointCtrl -> firmware: median {statistics.median(bus_ms):.2f} ms, "
              f"max {max(bus_ms):.2f} ms; command -> first feedback after it: median "
              f"{statistics.median(feedback_ms):.2f} ms, max {max(feedback_ms):.2f} ms")
    assert statistics.median(bus_ms) < 50 and statistics.median(feedback_ms) < 100


def test_enable_timeout_is_a_clear_error(fake):
    fake.refuse_enable = True
    arm = PiperArm(fake.channel, interface="virtual")
    arm.connect(timeout_s=2.0)
    try:
        with pytest.raises(PiperArmError, match=r"joint1, .*joint6 did not report enabled "
                                                r"within 0\.3 s"):
            arm.enable(timeout_s=0.3)
        assert not arm.enabled
        with pytest.raises(PiperArmError, match="is not connected"):
            PiperArm("nowhere", interface="virtual").read()
    finally:
        arm.close()


def test_silent_arm_is_a_clear_connect_error():
    arm = PiperArm(f"test_silent_{uuid.uuid4().hex[:8]}", interface="virtual")
    t0 = time.monotonic()
    with pytest.raises(PiperArmError, match=r"no joint feedback within 0\.3 s"):
        arm.connect(timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5 and not arm.connected


def test_feedback_age_shows_a_silent_arm(arm, fake):
    assert arm.feedback_age() < 0.5
    fake.silent = True  # like a pulled CAN cable
    assert wait_until(lambda: arm.feedback_age() > 0.2, timeout=2.0)
    fake.silent = False
    assert wait_until(lambda: arm.feedback_age() < 0.1, timeout=2.0)


def test_missing_socketcan_port_is_a_clear_error():
    with pytest.raises(PiperArmError, match="does not exist"):
        PiperArm("can_nonexistent9").connect()


def test_emergency_stop_freezes_and_resume_reenables(arm, fake):
    arm.command(np.array([0.8, 0.8, -0.8, 0.0, 0.0, 0.0]))
    assert wait_until(lambda: arm.read().joints[0] > 0.1)
    t_stop = time.time()
    arm.emergency_stop()
    stop = fake.wait_for_frame("motion_ctrl_1", since=t_stop)
    assert stop.fields["emergency_stop"] == 0x01
    assert wait_until(lambda: arm.read().emergency_stopped)
    # joints fed back from the tick after the stop was obeyed
    assert wait_until(lambda: arm.read().joint_stamp > stop.received_at + 2 * fake.period)
    frozen = arm.read().joints
    arm.command(np.zeros(6))  # reaches the bus, but the firmware ignores it
    time.sleep(0.1)
    assert np.allclose(arm.read().joints, frozen, atol=1e-6)
    assert fake.state().emergency_stopped

    t_resume = time.time()
    arm.resume(timeout_s=2.0)
    assert fake.wait_for_frame("motion_ctrl_2", since=t_resume) is not None
    names = [f.name for f in fake.frames(since=t_resume)]
    assert names[0] == "motion_ctrl_1" and fake.frames("motion_ctrl_1")[-1].fields["emergency_stop"] == 0x02
    assert names.index("motor_enable") < names.index("motion_ctrl_2")
    assert not arm.read().emergency_stopped and arm.enabled
    arm.command(np.array([0.0, 0.3, -0.3, 0.0, 0.0, 0.0]))
    assert wait_until(lambda: abs(arm.read().joints[1] - 0.3) < 2e-3, timeout=2.0)


def test_firmware_clamps_and_flags_out_of_range_targets(arm, fake):
    arm.command(np.array([0.0, 0.2, -3.2, 0.0, 0.0, 0.0]))  # joint3 beyond the SDK's -2.967
    assert wait_until(lambda: arm.read().arm_status == 0x04)
    assert arm.read().err_code & (1 << 10)  # joint 3 angle-limit bit
    assert fake.state().joint_targets[2] == pytest.approx(-2.967)


def test_close_disables_motors_and_gripper(arm, fake):
    t0 = time.time()
    arm.close()
    assert fake.wait_for_frame("motor_enable", since=t0).fields == {"motor_num": 7, "enable_flag": 0x01}
    assert fake.frames("gripper_ctrl", since=t0)[-1].fields["code"] == 0x00
    assert wait_until(lambda: not any(fake.state().joints_enabled) and not fake.state().gripper_enabled)
    assert not arm.connected
    arm.close()  # twice is fine
