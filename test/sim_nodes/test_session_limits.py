"""The sim session applies the arm's limit and step rules to every target and counts one
policy call per answered observation (pure: a fake backend, no MuJoCo, no ROS)."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.limits import RULE_GRIPPER, RULE_JOINT_LIMIT, RULE_SPEED
from vla_bridge.embodiment.workcell import arm_slice, home_command
from vla_bridge.sim_nodes.session import Budget, SimSession, summarize_events

from support.fake_backend import FakeBackend


@pytest.fixture
def session() -> SimSession:
    s = SimSession(FakeBackend())
    s.begin("scene1", "layout", 0, Budget(10, 50))
    return s


def absurd_chunk() -> np.ndarray:
    chunk = np.tile(home_command(), (3, 1))
    left, right = arm_slice("left"), arm_slice("right")
    chunk[0, left.start] = 1e6  # left joint1
    chunk[1, C.GRIPPER_INDEX["left"]] = 5.0
    chunk[1, C.GRIPPER_INDEX["right"]] = -4.0
    chunk[2, right.start + 1] += 3.0  # a 3 rad jump on right joint2
    return chunk


def test_absurd_targets_are_clamped_logged_and_recorded_clamped(session):
    executed = [cmd.copy() for cmd in session.execute(absurd_chunk())]
    lim = session.limits.joints  # the PiPER pair's rule (embodiment.limits.PairLimits)
    max_tick = lim.max_joint_speed * session.backend.control_period  # 3 rad/s x 0.06 s
    steps = np.abs(np.diff([home_command(), *executed], axis=0))
    for arm in C.ARMS:
        assert np.all(steps[:, arm_slice(arm)][:, :6] <= max_tick + 1e-9)
    for cmd, applied in zip(executed, session.backend.applied):
        np.testing.assert_array_equal(cmd, applied)  # what ran is what is recorded
        assert all(lim.within(cmd[arm_slice(a)]) for a in C.ARMS)
    assert executed[1][C.GRIPPER_INDEX["left"]] == 1.0
    assert executed[1][C.GRIPPER_INDEX["right"]] == 0.0
    jump = executed[2][arm_slice("right").start + 1] - executed[1][arm_slice("right").start + 1]
    assert jump == pytest.approx(max_tick[1]) and max_tick[1] == pytest.approx(0.18)
    events = session.drain_events()
    rules = {(e.tick, e.arm, e.rule) for e in events}
    assert {(1, "left", RULE_JOINT_LIMIT), (1, "left", RULE_SPEED), (2, "left", RULE_GRIPPER),
            (2, "right", RULE_GRIPPER), (3, "right", RULE_SPEED)} <= rules
    line = summarize_events(events)
    assert "joint_limit x" in line and "tick 1 [left] joint_limit" in line
    assert session.drain_events() == []


def test_normal_targets_pass_unchanged(session):
    chunk = np.tile(home_command(), (5, 1))
    chunk[:, 0] += np.linspace(0.11, 0.55, 5)  # 0.11 rad per tick: the oracle's fastest
    chunk[:, C.GRIPPER_INDEX["right"]] = np.linspace(0.8, 0.0, 5)
    executed = [cmd.copy() for cmd in session.execute(chunk)]
    np.testing.assert_array_equal(executed, chunk)
    assert session.events == []


def test_a_flood_of_chunks_is_one_call_per_observation(session):
    obs = session.observation()
    counted = [session.count_call(obs.stamp) for _ in range(50)]
    assert counted == [True] + [False] * 49 and session.calls == 1
    session.step_action(session.command)
    assert not session.count_call(obs.stamp)  # a late answer to the old observation
    later = session.observation()
    assert session.count_call(later.stamp) and session.calls == 2


def test_lock_step_chunk_answers_its_observation(session):
    obs = session.observation()
    list(session.execute(np.tile(home_command(), (2, 1))))
    assert session.calls == 1 and not session.count_call(obs.stamp)


# ------------------------------------------------------------------ frames between ticks
def test_record_fps_must_divide_the_physics_rate():
    from vla_bridge.sim_nodes.session import FrameSampler
    with pytest.raises(ValueError, match=r"divide the 250 Hz physics rate, got 16.*valid: \[1, 2, 5, 10, 25, 50, 125, 250\]"):
        FrameSampler(16, 0.004, lambda: None)
    with pytest.raises(ValueError, match="cannot record frames between control ticks"):
        FrameSampler(10, None, lambda: None)
    assert FrameSampler(10, 0.004, lambda: None).period_steps == 25


@pytest.mark.graph
def test_frames_between_ticks_fall_on_the_fps_grid_and_change_no_state():
    """A 10 fps sampler stops the physics every 25th 4 ms step (0.1 s) inside the 0.06 s
    ticks; the state after the split ticks equals the state without frames, bit for bit."""
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.sim_nodes.session import SimSession
    from vla_bridge.embodiment.workcell import home_command

    target = home_command()
    target[0] += 0.3
    states = []
    for fps in (0, 10):
        session = SimSession(MujocoBackend())
        times = []
        session.record_frames(fps, lambda: times.append(session.backend.time))
        session.begin("scene1", "default", seed=5)
        for _ in range(20):  # 1.2 s of sim time
            session.step_action(target)
            session.backend.render("cam_high")  # rendering reads the state only
        states.append((session.backend.joint_positions(), session.backend.world_state()))
        session.backend.close()
    assert np.array_equal(states[0][0], states[1][0])
    for name, obj in states[0][1].objects.items():
        assert np.array_equal(obj.pos, states[1][1].objects[name].pos)
    assert np.allclose(times, [0.1 * k for k in range(1, 13)], atol=1e-9)
