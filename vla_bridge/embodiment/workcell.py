"""The bimanual workcell: where the two PiPER arms stand and their home pose.

Pure data shared by the simulator (to build the scene) and by anything that reasons in the
world frame (the oracle, the real-arm tracker). RoboFollow's world frame: +x robot's right,
+y away from the robot, +z up, table top at z = 0.74.
"""
from __future__ import annotations

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import ArmMount

TABLE_TOP_Z = 0.74

#: Arms on the table's near edge, both facing +y (away from the robot); RoboFollow's left arm
#: works at x < 0.
MOUNTS = {
    "left": ArmMount(pos=(-0.30, -0.42, TABLE_TOP_Z), yaw=np.pi / 2),
    "right": ArmMount(pos=(0.30, -0.42, TABLE_TOP_Z), yaw=np.pi / 2),
}

#: Home joints per arm: TCP 20 cm ahead of and above its base, pointing 55 degrees down so the
#: wrist camera sees the table; both TCPs stay outside RoboFollow's finish-check work box.
HOME_ARM_Q = np.array([0.0, 0.75, -0.85, 0.0, 1.14, 0.0])


def home_command() -> np.ndarray:
    """Contract joint vector with both arms at home and grippers open."""
    per_arm = np.concatenate([HOME_ARM_Q, [contract.GRIPPER_OPEN]])
    return np.concatenate([per_arm for _ in contract.ARMS])


def arm_slice(arm: str) -> slice:
    """Slice of the contract joint vector that belongs to `arm` (6 joints + gripper)."""
    i = contract.ARMS.index(arm) * contract.JOINTS_PER_ARM
    return slice(i, i + contract.JOINTS_PER_ARM)
