"""The bring-up faults the PiPER firmware emulator (`fake_piper.FakePiper`) can inject, by name.

Each one reproduces a problem PiPER users report, so `vla-bridge doctor` can be shown (and
tested) to name it: ``FakePiper(..., faults=("leader",))``, ``fake.inject("silent")``,
piper_node's ``fake_faults`` parameter, or ``vla-bridge doctor --fake --inject NAME``.
No rclpy, no CAN: names, descriptions and the settings they make.
"""
from __future__ import annotations

import numpy as np

#: fault name -> what the fake then does
FAULTS = {
    "silent": "no frames at all, queries unanswered (a powered-off arm, a pulled cable)",
    "feedback_offset": "feedback on 0x2B1..0x2B8 instead of 0x2A1..0x2A8 (a MasterSlaveConfig "
                       "feedback offset left over from leader/follower use)",
    "refuse_enable": "the drivers never report enabled (piper_sdk #72)",
    "zero_joints": "joint feedback 0x2A5..0x2A7 reads exactly 0 while the motors are off, "
                   "wherever the arm is (piper_sdk #101)",
    "gripper_lag": "gripper feedback 0x2A8 only every 10th tick (20 Hz; piper_sdk #85, #34)",
    "corrupt_limits": "0x473 reports (and the firmware applies) corrupted joint limits: joint2 "
                      "collapsed to [0, 0], joint6 +-360 deg (pyAgxArm #55)",
    "leader": "leader (teaching input) mode: ctrl mode 0x06, motion commands ignored, its own "
              "JointCtrl/GripperCtrl frames sent every tick for a follower",
    "drop_estop": "the emergency stop 0x150 is ignored",
    "low_rate": "every feedback frame only every 4th tick (50 Hz instead of 200 Hz)",
}
CORRUPT_LIMITS_DEG = {2: (0.0, 0.0), 6: (-360.0, 360.0)}  # joint -> (min, max)
FEEDBACK_OFFSET = 0x10  # MasterSlaveConfig's feedback offset 0x10: 0x2Ax -> 0x2Bx
SLOW_GRIPPER_EVERY = 10  # ticks
SLOW_FEEDBACK_EVERY = 4  # ticks

#: fault -> (FakePiper attribute, value); corrupt_limits replaces the limit table instead
FAULT_SETTINGS = {
    "silent": ("silent", True),
    "feedback_offset": ("feedback_id_offset", FEEDBACK_OFFSET),
    "refuse_enable": ("refuse_enable", True),
    "zero_joints": ("zero_joints_in_standby", True),
    "gripper_lag": ("gripper_feedback_every", SLOW_GRIPPER_EVERY),
    "leader": ("leader_mode", True),
    "drop_estop": ("drop_estop", True),
    "low_rate": ("feedback_every", SLOW_FEEDBACK_EVERY),
}


def parse_faults(faults) -> tuple[str, ...]:
    """"a,b" or an iterable of names -> the names, once each (ValueError naming unknown ones)."""
    names = [f.strip() for f in (faults.split(",") if isinstance(faults, str) else faults)]
    names = [n for n in names if n]
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown fake_piper fault(s) {', '.join(unknown)}; known: "
                         f"{', '.join(FAULTS)}")
    return tuple(dict.fromkeys(names))


def corrupted_limits(limits: np.ndarray) -> np.ndarray:
    """The (6, 2) limit table (rad) with CORRUPT_LIMITS_DEG's joints replaced."""
    out = np.array(limits, dtype=float)
    for joint, lo_hi in CORRUPT_LIMITS_DEG.items():
        out[joint - 1] = np.radians(lo_hi)
    return out
