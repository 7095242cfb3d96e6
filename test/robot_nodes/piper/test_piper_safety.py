"""The PiPER safety filter: every rule on its own, then what reaches the CAN bus (real
piper_sdk -> fake firmware on a virtual bus), then the ROS node in-process."""
from __future__ import annotations

import math
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from support.piper_node_harness import shut_down
from support.graph_runs import wait_until
import yaml

from vla_bridge.embodiment.kinematics import PiperKinematics
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper
from vla_bridge.robot_nodes.piper.arm import PiperArm, rad_to_sdk_joints
from vla_bridge.robot_nodes.piper.safety import (RULE_ESTOP, RULE_ESTOP_LATCHED, RULE_GRIPPER,
                                           RULE_JOINT_LIMIT, RULE_LENGTH, RULE_NON_FINITE,
                                           RULE_RESUME, RULE_SPEED, RULE_STEP, RULE_WATCHDOG,
                                           RULE_WORKSPACE, SafetyFilter, SafetyParams,
                                           load_safety_params, read_safety_file)
from vla_bridge.embodiment.workcell import HOME_ARM_Q

pytestmark = pytest.mark.filterwarnings("ignore:The 'bustype' argument is deprecated")

HOME = np.concatenate([HOME_ARM_Q, [1.0]])
SAFETY_FILE = Path(__file__).resolve().parents[3] / "config" / "piper_safety.yaml"
DT = 0.01  # command period of these tests (100 Hz)


@pytest.fixture(scope="module")
def params() -> SafetyParams:
    return load_safety_params()  # the package's config/piper_safety.yaml


def make_filter(params, arm="right", **changes) -> SafetyFilter:
    return SafetyFilter(arm, params.replace(**changes) if changes else params)


def primed(params, at=HOME, arm="right", t=0.0, **changes) -> SafetyFilter:
    """A filter whose last command is `at` (sent at time t)."""
    f = make_filter(params, arm, **changes)
    out = f.step(at, at, t)
    assert np.allclose(out.command, at) and not out.events
    return f

# ------------------------------------------------------------------------ params file


def test_params_file_is_conservative_and_tightest(params):
    kin = PiperKinematics()
    assert np.all(params.joint_limits[:, 0] > kin.limits[:, 0])
    assert np.all(params.joint_limits[:, 1] < kin.limits[:, 1])
    # joint3/4/6: the model and the SDK disagree; the tighter one wins
    assert params.joint_limits[2, 0] == pytest.approx(-2.697 + 0.02)
    assert params.joint_limits[5, 1] == pytest.approx(2.0944 - 0.02)
    assert np.all(params.max_joint_speed <= 1.5) and params.max_step <= 0.1
    assert params.workspace_min[2] > 0.74  # above the table top
    raw = read_safety_file()
    assert raw["watchdog_timeout_s"] == params.watchdog_timeout_s


def test_params_file_can_only_tighten_and_rejects_typos(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"joint_limits_rad": [-1.0, 1.0, 0.0, 5.0] + [-9.0, 9.0] * 4,
                                    "joint_limit_margin_rad": 0.0, "max_joint_speed_rad_s": 0.5}))
    p = load_safety_params(path)
    assert p.joint_limits[0].tolist() == [-1.0, 1.0]
    assert p.joint_limits[1, 1] == pytest.approx(3.14)  # 5.0 would loosen: ignored
    assert p.max_joint_speed.tolist() == [0.5] * 6
    path.write_text(yaml.safe_dump({"piper_node": {"ros__parameters": {"safety": {"max_stp_rad": 1}}}}))
    with pytest.raises(ValueError, match="unknown safety parameters .*max_stp_rad"):
        load_safety_params(path)
    with pytest.raises(ValueError, match="min < max"):
        SafetyParams.from_dict({"workspace_min_m": [0, 0, 1], "workspace_max_m": [1, 1, 0.5]})

# --------------------------------------------------------------------- rules, one by one


def test_joint_limits_clip_and_log(params):
    f = primed(params, HOME, max_step=10.0, max_joint_speed=np.full(6, 1e3), workspace_check=False)
    target = HOME.copy()
    target[0], target[2] = 3.0, 0.5  # beyond joint1's and joint3's ranges
    out = f.step(target, HOME, 1.0)
    assert out.command[0] == pytest.approx(params.joint_limits[0, 1])
    assert out.command[2] == pytest.approx(params.joint_limits[2, 1])
    assert out.rules() == {RULE_JOINT_LIMIT}
    assert "joint1 +3.0000 -> +2.5979" in out.events[0].detail and out.events[0].arm == "right"


def test_gripper_range(params):
    f = primed(params)
    out = f.step(np.concatenate([HOME_ARM_Q, [1.4]]), HOME, DT)
    assert out.command[6] == 1.0 and out.rules() == {RULE_GRIPPER}


def test_speed_limit_scales_the_step(params):
    f = primed(params)
    target = HOME.copy()
    target[:6] += 0.05  # 5 rad/s over 10 ms
    out = f.step(target, HOME, DT)
    step = out.command[:6] - HOME[:6]
    assert np.all(np.abs(step) <= params.max_joint_speed * DT + 1e-12)
    assert np.allclose(step / np.linalg.norm(step), np.ones(6) / math.sqrt(6))  # direction kept
    assert out.rules() == {RULE_SPEED}
    # keeps converging at the speed limit, tick by tick
    for k in range(2, 200):
        out = f.step(target, HOME, k * DT)
    assert np.allclose(out.command, target)


def test_max_step_bounds_a_jump_after_a_pause(params):
    f = primed(params)
    target = HOME.copy()
    target[3] += 0.5
    out = f.step(target, HOME, 5.0)  # 5 s later: the speed allows 0.5 rad, the step does not
    assert out.command[3] - HOME[3] == pytest.approx(params.max_step)
    assert out.rules() == {RULE_STEP}


def test_workspace_box_rejects_leaving_and_allows_returning(params):
    inside = HOME.copy()
    inside[1] += 0.85  # TCP ~1 cm above the box floor
    outside = HOME.copy()
    outside[1] += 1.0  # TCP below the box floor (table top + 15 mm)
    f = primed(params, inside, max_step=1.0, max_joint_speed=np.full(6, 100.0))
    assert f.outside_distance(inside[:6]) == 0.0 < f.outside_distance(outside[:6])
    out = f.step(outside, inside, DT)
    assert np.allclose(out.command[:6], inside[:6]) and out.rules() == {RULE_WORKSPACE}
    assert "tcp at" in out.events[0].detail
    # an arm that starts outside may move back towards the box, not further out
    g = primed(params, outside, max_step=1.0, max_joint_speed=np.full(6, 100.0))
    worse = outside.copy()
    worse[1] += 0.1
    assert g.step(worse, outside, DT).rules() == {RULE_WORKSPACE}
    back = g.step(inside, outside, 2 * DT)
    assert np.allclose(back.command, inside) and not back.events


@pytest.mark.parametrize("bad, rule", [
    ([0.0] * 6, RULE_LENGTH),
    ([0.0] * 8, RULE_LENGTH),
    ([0.0, np.nan, 0, 0, 0, 0, 1.0], RULE_NON_FINITE),
    ([0.0, 0, np.inf, 0, 0, 0, 1.0], RULE_NON_FINITE),
    ("seven", RULE_NON_FINITE),
])
def test_malformed_targets_are_rejected_whole(params, bad, rule):
    f = primed(params)
    out = f.step(bad, HOME, DT)
    assert out.rules() == {rule} and np.allclose(out.command, HOME)  # keeps the last command
    # a rejected target doesn't feed the watchdog
    assert f.last_input_time == 0.0


def test_never_commanded_sends_nothing(params):
    f = make_filter(params)
    assert f.step(None, HOME, 0.0).command is None


def test_watchdog_holds_measured_joints_and_the_last_gripper(params):
    closed = np.concatenate([HOME_ARM_Q, [0.0]])  # gripping
    f = primed(params, closed)
    measured = closed.copy()
    measured[0] += 0.02  # the arm lags behind (or was pushed)
    measured[6] = 0.3  # the fingers stopped on an object
    out = f.step(None, measured, 0.3)  # before the timeout: keep sending the last command
    assert np.allclose(out.command, closed) and not out.events and not out.holding
    out = f.step(None, measured, 0.6)
    assert out.rules() == {RULE_WATCHDOG} and out.holding
    assert np.allclose(out.command[:6], measured[:6]) and out.command[6] == 0.0
    assert not f.step(None, measured, 0.7).events  # logged once per stall
    out = f.step(closed, measured, 0.8)  # a new target ends the hold
    assert not out.holding and not f.holding


def test_estop_latches_until_resume(params):
    f = primed(params)
    events = f.estop("operator", 0.1)
    assert events[0].rule == RULE_ESTOP and f.latched
    out = f.step(HOME, HOME, 0.2)
    assert out.command is None and out.rules() == {RULE_ESTOP_LATCHED}
    assert f.step(None, HOME, 0.3).command is None
    moved = HOME.copy()
    moved[0] += 0.3  # the arm was moved while stopped
    ev = f.resume(moved, 1.0)
    assert ev[0].rule == RULE_RESUME and "1 rejected" in ev[0].detail and not f.latched
    target = moved.copy()
    target[0] += 0.001
    out = f.step(target, moved, 1.01)
    assert np.allclose(out.command, target)  # starts from the measured position

# ------------------------------------------------------------------ what reaches the bus


@pytest.fixture
def rig():
    fake = FakePiper(f"test_safety_{uuid.uuid4().hex[:8]}", initial_joints=HOME_ARM_Q,
                     initial_gripper_m=0.07).start()
    arm = PiperArm(fake.channel, interface="virtual")
    arm.connect(timeout_s=2.0)
    arm.enable(timeout_s=2.0)
    yield fake, arm
    arm.close()
    fake.stop()


def drive(flt: SafetyFilter, arm: PiperArm, target, now: float):
    out = flt.step(target, arm.read().vector(), now)
    if out.command is not None:
        arm.command(out.command[:6], out.command[6])
    return out


def bus_commands(fake, since, expect: int | None = None):
    """Joint targets (rad) that reached the firmware after `since`, once all have landed:
    `expect` of them, or (unknown count) when no frame has arrived for 50 ms."""
    if expect is not None:
        wait_until(lambda: len(fake.joint_commands(since=since)) >= expect, timeout=3.0)
    else:
        seen = -1
        while len(fake.frames()) != seen:
            seen = len(fake.frames())
            time.sleep(0.05)
    return fake.joint_commands(since=since)


def test_bus_joint_limit(rig, params):
    fake, arm = rig
    f = make_filter(params, max_step=10.0, max_joint_speed=np.full(6, 1e3))
    t0 = time.time()
    target = HOME.copy()
    target[5] = 3.0
    out = drive(f, arm, target, 0.0)
    assert out.rules() == {RULE_JOINT_LIMIT}
    sent = bus_commands(fake, t0, expect=1)
    assert len(sent) == 1 and sent[0][5] == pytest.approx(params.joint_limits[5, 1], abs=1e-5)
    assert max(abs(u) for u in rad_to_sdk_joints(sent[0])) < 150_000  # never a 3 rad (172 deg) frame


def test_bus_speed_limit(rig, params):
    fake, arm = rig
    f = make_filter(params)
    t0 = time.time()
    target = HOME.copy()
    target[0] += 0.5
    for k in range(20):
        drive(f, arm, target, k * DT)
    sent = bus_commands(fake, t0, expect=20)
    assert len(sent) == 20
    steps = np.abs(np.diff(np.array(sent)[:, 0]))
    assert steps.max() <= params.max_joint_speed[0] * DT + math.radians(0.001)  # one SDK unit
    assert sent[-1][0] < HOME[0] + 0.5 - 0.2  # still on its way


def test_bus_workspace(rig, params):
    fake, arm = rig
    f = make_filter(params, max_step=2.0, max_joint_speed=np.full(6, 1e3))
    t0 = time.time()
    outside = HOME.copy()
    outside[1] += 1.0
    out = drive(f, arm, outside, 0.0)
    assert out.rules() == {RULE_WORKSPACE}
    sent = bus_commands(fake, t0)
    assert sent and all(f.outside_distance(q) == 0.0 for q in sent)
    assert np.allclose(sent[-1], HOME_ARM_Q, atol=1e-4)


@pytest.mark.parametrize("bad", [[0.1] * 6, [0.1, np.nan, 0, 0, 0, 0, 1]])
def test_bus_malformed_target_keeps_the_last_command(rig, params, bad):
    fake, arm = rig
    f = make_filter(params)
    drive(f, arm, HOME, 0.0)
    assert fake.wait_for_frame("joint_ctrl_56") is not None
    t0 = time.time()
    out = drive(f, arm, bad, DT)
    assert out.rules() & {RULE_LENGTH, RULE_NON_FINITE}
    sent = bus_commands(fake, t0, expect=1)
    assert len(sent) == 1 and np.allclose(sent[0], HOME_ARM_Q, atol=1e-5)


def test_bus_watchdog_holds_where_the_arm_is(rig, params):
    fake, arm = rig
    f = make_filter(params, watchdog_timeout_s=0.1)
    target = HOME.copy()
    target[0] += 0.3
    for k in range(10):  # 10 ticks towards the target, then the upstream goes quiet
        drive(f, arm, target, k * DT)
        time.sleep(DT)
    t_quiet = time.time()
    time.sleep(0.05)
    out = drive(f, arm, None, 0.3)  # 0.21 s after the last target
    assert out.rules() == {RULE_WATCHDOG}
    held = bus_commands(fake, t_quiet)[-1]
    measured = arm.read().joints
    assert np.allclose(held, measured, atol=0.01)  # where the arm was, not the target
    assert held[0] < target[0] - 0.1


def test_bus_emergency_stop_and_resume(rig, params):
    fake, arm = rig
    f = make_filter(params)
    target = HOME.copy()
    target[0] += 0.3
    for k in range(5):
        drive(f, arm, target, k * DT)
    assert wait_until(lambda: len(fake.joint_commands()) == 5)
    t_stop = time.time()
    f.estop("test", 0.05)
    arm.emergency_stop()
    for k in range(5, 15):
        assert drive(f, arm, target, k * DT).command is None
    assert fake.wait_for_frame("motion_ctrl_1", since=t_stop).fields["emergency_stop"] == 0x01
    assert bus_commands(fake, t_stop) == []  # nothing moved the arm after the stop
    assert fake.state().emergency_stopped

    t_resume = time.time()
    arm.resume(timeout_s=2.0)
    f.resume(arm.read().vector(), 1.0)
    drive(f, arm, target, 1.0 + DT)
    assert fake.wait_for_frame("motion_ctrl_1", since=t_resume).fields["emergency_stop"] == 0x02
    assert fake.wait_for_frame("motor_enable", since=t_resume).fields["enable_flag"] == 0x02
    assert len(bus_commands(fake, t_resume, expect=1)) == 1 and not fake.state().emergency_stopped

# ---------------------------------------------------------------------- the ROS node


@pytest.mark.graph
def test_node_executes_a_chunk_and_the_estop_service_stops_it(ros_context, capsys):
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger
    from trajectory_msgs.msg import JointTrajectory
    from vla_bridge.robot_nodes.piper.piper_node import PiperNode

    from vla_bridge import contract as C
    from vla_bridge.ros import messages

    # fake_feedback_timeout_s: other people's tests share this machine's CPUs; a starved process
    # must not latch a spurious "no feedback" stop here
    node = PiperNode(context=ros_context, parameter_overrides=[
        Parameter("arms", value="right"), Parameter("use_fake_hardware", value=True),
        Parameter("rate_hz", value=50.0), Parameter("command_rate_hz", value=100.0),
        Parameter("fake_feedback_timeout_s", value=2.0)])
    helper = rclpy.create_node("piper_node_test_helper", context=ros_context)
    names = C.arm_joint_names("right")
    latest: dict[str, JointState] = {}
    helper.create_subscription(JointState, C.TOPIC_JOINT_STATES,
                               lambda m: latest.__setitem__("state", m), messages.qos_profile(C.QOS_STATE))
    helper.create_subscription(JointState, C.TOPIC_JOINT_COMMANDS,
                               lambda m: latest.__setitem__("cmd", m), messages.qos_profile(C.QOS_STATE))
    pub = helper.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK, messages.qos_profile(C.QOS_COMMAND))
    estop = helper.create_client(Trigger, "/piper_node/emergency_stop")
    resume = helper.create_client(Trigger, "/piper_node/resume")
    executor = MultiThreadedExecutor(num_threads=4, context=ros_context)
    executor.add_node(node)
    executor.add_node(helper)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    fake = node.fakes["right"]

    def position():
        msg = latest.get("state")
        return None if msg is None else messages.joint_state_to_array(msg, names)

    def call(client):
        assert client.wait_for_service(timeout_sec=5.0)
        future = client.call_async(Trigger.Request())
        assert wait_until(future.done, timeout=5.0)
        return future.result()

    try:
        assert wait_until(lambda: position() is not None and pub.get_subscription_count() > 0, 5.0)
        assert list(latest["state"].name) == names  # one arm: its 7 contract names only
        start = position()
        assert np.allclose(start, HOME, atol=1e-3)  # the fake powers up at home, inside the limits
        target = HOME.copy()
        target[0] += 0.6
        chunk = np.linspace(start, target, 21)[1:]  # 20 points, 0.1 s apart
        pub.publish(messages.chunk_to_msg(chunk, names, 0.0, 0.1))
        # joint_states move towards the target (speed-limited, through the filter)
        assert wait_until(lambda: position()[0] > 0.15, timeout=5.0)
        d0 = np.linalg.norm(start[:6] - target[:6])
        assert np.linalg.norm(position()[:6] - target[:6]) < 0.9 * d0
        assert messages.joint_state_to_array(latest["cmd"], names)[0] > 0.15
        assert len(fake.joint_commands()) > 10

        assert estop.wait_for_service(timeout_sec=5.0)
        t_call = time.time()
        result = call(estop)
        assert result.success, result.message
        t_stop = time.time()
        assert wait_until(lambda: fake.state().emergency_stopped, 1.0)
        stop_frame = fake.wait_for_frame("motion_ctrl_1", since=t_call)
        with capsys.disabled():
            print(f"\n[piper_node] ~/emergency_stop call -> SDK stop frame at the firmware: "
                  f"{1000 * (stop_frame.received_at - t_call):.1f} ms; "
                  f"-> service response: {1000 * (t_stop - t_call):.1f} ms")

        def state_after(t):  # the first joint_states stamped after wall time t
            assert wait_until(lambda: messages.stamp_to_sec(latest["state"].header.stamp) > t, 5.0)
            return position()

        frozen = state_after(t_stop + 0.05)
        assert np.allclose(state_after(t_stop + 0.4), frozen, atol=1e-6)  # motion stopped
        assert np.linalg.norm(frozen[:6] - target[:6]) > 0.1  # stopped short of the target
        assert fake.joint_commands(since=t_stop + 0.02) == []  # and nothing more was sent
        pub.publish(messages.chunk_to_msg(chunk, names, 0.0, 0.06))  # ignored while latched
        time.sleep(0.2)
        assert fake.joint_commands(since=t_stop + 0.02) == []

        result = call(resume)
        assert result.success, result.message
        # moves again; re-sent like a policy would, so a slow machine can't starve it
        for _ in range(20):
            pub.publish(messages.chunk_to_msg(target[None, :], names, 0.0, 0.5))
            if wait_until(lambda: np.linalg.norm(position()[:6] - target[:6]) < 0.02, timeout=0.4):
                break
        assert np.linalg.norm(position()[:6] - target[:6]) < 0.02

        fake.silent = True  # the arm stops answering: the node latches its own stop
        assert wait_until(lambda: node.safety["right"].latched, timeout=5.0)
        assert "no feedback" in node.safety["right"].latch_reason
    finally:
        shut_down(node, helper, executor, spinner)
    assert not fake.running
    assert fake.frames("motor_enable")[-1].fields["enable_flag"] == 0x01  # disabled on close


def test_node_two_arms_speak_the_episode_protocol(ros_context, tmp_path):
    import json

    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray, String
    from trajectory_msgs.msg import JointTrajectory

    from vla_bridge import contract as C
    from vla_bridge.ros import messages
    from vla_bridge.robot_nodes.piper.piper_node import PiperNode

    # a slow watchdog: after the chunk the arms must reach its end, not hold where the
    # lagging fakes were when a loaded machine delayed the check (the hold has its own test)
    safety = yaml.safe_load(SAFETY_FILE.read_text())
    safety["piper_node"]["ros__parameters"]["safety"]["watchdog_timeout_s"] = 30.0
    (tmp_path / "safety.yaml").write_text(yaml.safe_dump(safety))
    node = PiperNode(context=ros_context, parameter_overrides=[
        Parameter("arms", value="right,left"), Parameter("use_fake_hardware", value=True),
        Parameter("fake_feedback_timeout_s", value=2.0),
        Parameter("safety_params_file", value=str(tmp_path / "safety.yaml"))])
    helper = rclpy.create_node("piper_node_episode_helper", context=ros_context)
    latest, statuses, frames = {}, [], []
    helper.create_subscription(JointState, C.TOPIC_JOINT_STATES,
                               lambda m: latest.__setitem__("state", m), messages.qos_profile(C.QOS_STATE))
    helper.create_subscription(String, C.TOPIC_EPISODE_STATUS,
                               lambda m: statuses.append(json.loads(m.data)), messages.qos_profile(C.QOS_EVENTS))
    helper.create_subscription(Float64MultiArray, C.TOPIC_FRAMES,
                               lambda m: frames.extend(messages.parse_frames(m)),
                               messages.qos_profile(C.QOS_STATE))
    # the tracker node's part (its latched status): a tracker without objects to track
    tracker = helper.create_publisher(String, C.TOPIC_TRACKER_STATUS,
                                      messages.qos_profile(C.QOS_LATCHED))
    tracker.publish(messages.json_msg({"calibrated": False, "calibration_required": False,
                                       "objects": [], "camera": "cam_high",
                                       "image_topic": "/cam_high/color/image_raw",
                                       "board": []}))
    control = helper.create_publisher(String, C.TOPIC_EPISODE_CONTROL, messages.qos_profile(C.QOS_EVENTS))
    chunks = helper.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK, messages.qos_profile(C.QOS_COMMAND))
    executor = MultiThreadedExecutor(num_threads=4, context=ros_context)
    executor.add_node(node)
    executor.add_node(helper)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()
    try:
        assert node.arms == ("left", "right")  # contract order whatever the parameter's
        # the node answers episodes once it has heard the tracker (its status publisher)
        assert wait_until(lambda: "state" in latest and control.get_subscription_count() > 0
                          and chunks.get_subscription_count() > 0
                          and helper.count_publishers(C.TOPIC_EPISODE_STATUS) > 0, 5.0)
        assert tuple(latest["state"].name) == C.ALOHA_PIPER.action_names  # the 14-D ALOHA vector
        control.publish(messages.json_msg({"kind": C.CONTROL_BEGIN, "episode": "ep1",
                                         "max_policy_calls": 1}))
        assert wait_until(lambda: any(s["kind"] == C.STATUS_READY for s in statuses), 5.0)
        start = messages.joint_state_to_array(latest["state"], C.ALOHA_PIPER.action_names)
        target = start.copy()
        target[1] += 0.1  # left joint2
        target[8] += 0.1  # right joint2
        chunks.publish(messages.chunk_to_msg(np.linspace(start, target, 6)[1:], C.ALOHA_PIPER.action_names, 0.0, 0.05))
        assert wait_until(lambda: [s["kind"] for s in statuses][-2:] == [C.STATUS_CHUNK_DONE,
                                                                       C.STATUS_DONE], 5.0)
        assert statuses[-1]["calls"] == 1 and statuses[-1]["episode"] == "ep1"
        # one frame per joint_commands message from the ready on: done's ticks count them
        assert wait_until(lambda: len(frames) >= statuses[-1]["ticks"] + 1, 5.0)
        time.sleep(0.3)  # a frame after the done would come within a flush period
        assert len(frames) == statuses[-1]["ticks"] + 1 >= 2
        ready = next(s for s in statuses if s["kind"] == C.STATUS_READY)
        assert frames[0][0] == ready["stamp"] and ready["tick"] == 0
        # the same begin again (an evaluator whose answer was late) is answered and resets
        # nothing: the spent call budget stays spent
        heard = len(statuses)
        control.publish(messages.json_msg({"kind": C.CONTROL_BEGIN, "episode": "ep1",
                                         "max_policy_calls": 1}))
        assert wait_until(lambda: len(statuses) > heard, 5.0)
        assert statuses[-1]["kind"] == C.STATUS_READY and node.calls == 1
        # whatever the chunk asks, the filter keeps the joints inside its ranges
        lim = node.safety["left"].params.joint_limits
        expected = target.copy()
        for s in (slice(0, 6), slice(7, 13)):
            expected[s] = np.clip(target[s], lim[:, 0], lim[:, 1])
        assert wait_until(lambda: np.allclose(messages.joint_state_to_array(
            latest["state"], C.ALOHA_PIPER.action_names), expected, atol=5e-3), 5.0)
        # both fakes were driven to the chunk's end, each with its own arm's slice (after the
        # chunk the node may hold the measured, still-lagging position: look at every command)
        for arm, j in (("left", 1), ("right", 8)):
            sent = [c[1] for c in node.fakes[arm].joint_commands()]
            assert min(abs(v - target[j]) for v in sent) < 1e-4, (arm, sent[-5:])
    finally:
        shut_down(node, helper, executor, spinner)
