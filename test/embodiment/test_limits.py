"""The joint-limit and step rules shared by the PiPER safety filter and the sim."""
from __future__ import annotations

import numpy as np
import pytest
import yaml

from vla_bridge.embodiment.kinematics import PiperKinematics
from vla_bridge.embodiment.limits import (RULE_GRIPPER, RULE_JOINT_LIMIT, RULE_SPEED, RULE_STEP,
                                          JointLimits, load_joint_limits, load_sim_limits,
                                          read_safety_file)
from vla_bridge.embodiment.workcell import HOME_ARM_Q
from vla_bridge.robot_nodes.piper.safety import SafetyFilter, load_safety_params

HOME = np.concatenate([HOME_ARM_Q, [1.0]])


@pytest.fixture(scope="module")
def limits() -> JointLimits:
    return load_joint_limits()


def test_one_file_for_the_arm_and_the_sim(limits):
    raw = read_safety_file()
    robot = load_safety_params().limits
    np.testing.assert_array_equal(robot.joint_limits, limits.joint_limits)
    np.testing.assert_array_equal(robot.max_joint_speed, raw["max_joint_speed_rad_s"])
    assert robot.max_step == limits.max_step == raw["max_step_rad"]
    sim = load_joint_limits(margin=False)  # the ranges without the hardware margin
    np.testing.assert_allclose(sim.joint_limits, PiperKinematics().limits)
    m = raw["joint_limit_margin_rad"]
    np.testing.assert_allclose(limits.joint_limits, sim.joint_limits + [m, -m])


def test_sim_rules_come_from_the_same_file():
    raw = read_safety_file()
    sim = load_sim_limits()
    np.testing.assert_allclose(sim.joint_limits, load_joint_limits(margin=False).joint_limits)
    assert sim.max_joint_speed.tolist() == [raw["arm_max_joint_speed_rad_s"]] * 6 == [3.0] * 6
    assert sim.max_step == np.inf and (sim.gripper_min, sim.gripper_max) == (0.0, 1.0)
    target = HOME.copy()
    target[1] += 3.0  # a 3 rad jump in one 0.06 s tick
    out, note = sim.limit_step(target, HOME, dt=0.06)
    assert note.rule == RULE_SPEED and out[1] - HOME[1] == pytest.approx(0.18)


def test_file_values_reach_the_rules(tmp_path):
    path = tmp_path / "safety.yaml"
    path.write_text(yaml.safe_dump({"piper_node": {"ros__parameters": {"safety": {
        "max_step_rad": 0.25, "gripper_max": 0.8, "joint_limits_rad": [-1, 1] * 6,
        "arm_max_joint_speed_rad_s": 2.0}}}}))
    lim = load_joint_limits(path, margin=False)
    assert lim.max_step == 0.25 and lim.gripper_max == 0.8
    assert lim.joint_limits[0].tolist() == [-1.0, 1.0]
    assert load_sim_limits(path).max_joint_speed.tolist() == [2.0] * 6
    assert load_safety_params(path).max_step == 0.25  # the robot accepts the sim's key


@pytest.mark.parametrize("joint, value", [(0, 1e6), (2, -1e6)])
def test_absurd_joint_is_clipped_to_its_range(limits, joint, value):
    target = HOME.copy()
    target[joint] = value
    out, notes = limits.clip(target)
    assert out[joint] == limits.joint_limits[joint, 0 if value < 0 else 1]
    assert [n.rule for n in notes] == [RULE_JOINT_LIMIT] and f"joint{joint + 1}" in notes[0].detail
    assert limits.within(out) and not limits.within(target)


@pytest.mark.parametrize("grip, expect", [(5.0, 1.0), (-4.0, 0.0)])
def test_gripper_is_clipped_to_its_range(limits, grip, expect):
    out, notes = limits.clip(np.concatenate([HOME_ARM_Q, [grip]]))
    assert out[6] == expect and [n.rule for n in notes] == [RULE_GRIPPER]


def test_step_rule_keeps_the_direction(limits):
    target = HOME.copy()
    target[0] += 3.0
    target[1] -= 0.15
    out, note = limits.limit_step(target, HOME, dt=None)
    assert note.rule == RULE_STEP
    step = out[:6] - HOME[:6]
    assert np.max(np.abs(step)) == pytest.approx(limits.max_step)
    np.testing.assert_allclose(step / np.linalg.norm(step), (target - HOME)[:6] /
                               np.linalg.norm((target - HOME)[:6]))


def test_speed_rule_over_dt(limits):
    target = HOME.copy()
    target[0] += 0.09
    out, note = limits.limit_step(target, HOME, dt=0.06)
    assert note.rule == RULE_SPEED
    assert out[0] - HOME[0] == pytest.approx(limits.max_joint_speed[0] * 0.06)
    same, none = limits.limit_step(target, HOME, dt=None)  # the step rule alone lets it pass
    assert none is None and same is target


def test_safety_filter_uses_the_shared_rules(limits):
    flt = SafetyFilter("right", load_safety_params())
    target = HOME.copy()
    target[0] = 1e6
    out = flt.step(target, HOME, 0.0)  # first command: measured HOME is the reference
    clipped, notes = limits.clip(target)
    expect, note = limits.limit_step(clipped, HOME, dt=None)
    np.testing.assert_array_equal(out.command, expect)
    assert [(e.rule, e.detail) for e in out.events] == [(n.rule, n.detail) for n in [*notes, note]]
