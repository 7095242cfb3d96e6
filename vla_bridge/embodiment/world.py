"""World state: what the evaluator (and the privileged oracle) know about the scene.

Pure data, no rclpy. In sim it is read from the simulator; on real arms it comes from the
marker tracker and forward kinematics. `vla_bridge.ros.messages` converts it to and from the
contract's `visualization_msgs/MarkerArray`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class ObjectState:
    name: str
    pos: np.ndarray  # (3,) centre in the world frame, metres
    quat: np.ndarray  # (4,) w, x, y, z
    size: np.ndarray  # (3,) full extent x, y, z, metres
    rgba: np.ndarray = field(default_factory=lambda: np.array([0.5, 0.5, 0.5, 1.0]))
    shape: str = "box"  # box | sphere | cylinder | mesh


@dataclass
class TcpState:
    pos: np.ndarray  # (3,)
    quat: np.ndarray  # (4,) w, x, y, z; local +x is the approach axis


@dataclass
class CameraPose:
    """Where a camera is, when the sim knows it better than our kinematics (LIBERO's cameras):
    the frame of the published image, looking along its -z with y up (OpenGL / MuJoCo, as
    ``cameras.CameraModel``)."""
    pos: np.ndarray  # (3,)
    quat: np.ndarray  # (4,) w, x, y, z


@dataclass
class WorldState:
    stamp: float
    objects: dict[str, ObjectState]
    tcp: dict[str, TcpState]  # arm name -> tool centre point
    #: camera name -> pose, for sims whose cameras our kinematics cannot place (else empty:
    #: the cameras' poses follow from the contract's camera specs and the joint state)
    cameras: dict[str, CameraPose] = field(default_factory=dict)

    def object_positions(self) -> dict[str, np.ndarray]:
        return {name: o.pos for name, o in self.objects.items()}
