"""World state: what the evaluator (and the privileged oracle) know about the scene.

Pure data, no rclpy. ``Observation`` (what a policy sees each step) sits beside it. In sim it is read from the simulator; on real arms it comes from the
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


def world_to_dict(world: WorldState) -> dict:
    """A JSON-ready dict of ``world`` (``world_from_dict`` reads it back)."""
    def arr(a) -> list:
        return [float(v) for v in np.asarray(a, float).ravel()]
    return {"stamp": float(world.stamp),
            "objects": {n: {"pos": arr(o.pos), "quat": arr(o.quat), "size": arr(o.size),
                            "rgba": arr(o.rgba), "shape": o.shape}
                        for n, o in world.objects.items()},
            "tcp": {n: {"pos": arr(t.pos), "quat": arr(t.quat)} for n, t in world.tcp.items()},
            "cameras": {n: {"pos": arr(c.pos), "quat": arr(c.quat)}
                        for n, c in world.cameras.items()}}


def world_from_dict(data: dict) -> WorldState:
    """The WorldState of ``world_to_dict``'s dict; KeyError / ValueError when malformed."""
    def vec(values, n: int) -> np.ndarray:
        a = np.asarray(values, float)
        if a.shape != (n,) or not np.all(np.isfinite(a)):
            raise ValueError(f"expected {n} finite numbers, got {values!r}")
        return a
    objects = {str(n): ObjectState(str(n), vec(o["pos"], 3), vec(o["quat"], 4),
                                   vec(o["size"], 3), vec(o["rgba"], 4), str(o["shape"]))
               for n, o in data["objects"].items()}
    tcp = {str(n): TcpState(vec(t["pos"], 3), vec(t["quat"], 4)) for n, t in data["tcp"].items()}
    cameras = {str(n): CameraPose(vec(c["pos"], 3), vec(c["quat"], 4))
               for n, c in data.get("cameras", {}).items()}
    return WorldState(float(data["stamp"]), objects, tcp, cameras)


@dataclass
class Observation:
    """What a policy gets each step: measured joints, images and, for the oracle only, the world."""
    state: np.ndarray  # (D,) measured joints, contract order
    images: dict[str, np.ndarray] = field(default_factory=dict)  # camera -> (H, W, 3) uint8
    stamp: float = 0.0
    world: WorldState | None = None  # privileged; only the oracle may look
