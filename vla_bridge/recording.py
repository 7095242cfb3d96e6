"""Per-frame episode record: the signals RoboFollow's scorer reads (SCORING.md section 1).

One frame is recorded before the first action and one after every executed action.
Pure data, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class EpisodeRecord:
    """Arrays over frames t = 0..n-1.

    tcp_pos[arm]  (n, 3)    tool centre point position (world frame)
    tcp_rot[arm]  (n, 3, 3) tool rotation; column 0 is the approach axis (local +x)
    grip[arm]     (n,)      commanded normalised gripper, 1 = open, 0 = closed
    pos[obj]      (n, 3)    object centre positions
    quat[obj]     (n, 4)    object orientations (w, x, y, z)
    """
    tcp_pos: dict[str, np.ndarray]
    tcp_rot: dict[str, np.ndarray]
    grip: dict[str, np.ndarray]
    pos: dict[str, np.ndarray]
    quat: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(next(iter(self.grip.values())))


class FrameRecorder:
    """Collects one frame per tick (world state + executed command) into an EpisodeRecord."""

    def __init__(self):
        self._tcp_pos: dict[str, list] = {}
        self._tcp_rot: dict[str, list] = {}
        self._grip: dict[str, list] = {}
        self._pos: dict[str, list] = {}
        self._quat: dict[str, list] = {}
        self.frames = 0

    def add(self, world, command: np.ndarray) -> None:
        """`world` is a WorldState; `command` the contract joint vector executed at this tick."""
        from vla_bridge import contract
        from vla_bridge.kinematics import quat_to_mat
        for arm, tcp in world.tcp.items():
            self._tcp_pos.setdefault(arm, []).append(np.asarray(tcp.pos, float))
            self._tcp_rot.setdefault(arm, []).append(quat_to_mat(tcp.quat))
            self._grip.setdefault(arm, []).append(float(command[contract.GRIPPER_INDEX[arm]]))
        for name, obj in world.objects.items():
            self._pos.setdefault(name, []).append(np.asarray(obj.pos, float))
            self._quat.setdefault(name, []).append(np.asarray(obj.quat, float))
        self.frames += 1

    def record(self) -> EpisodeRecord:
        stack = lambda d: {k: np.array(v) for k, v in d.items()}  # noqa: E731
        return EpisodeRecord(tcp_pos=stack(self._tcp_pos), tcp_rot=stack(self._tcp_rot),
                             grip=stack(self._grip), pos=stack(self._pos), quat=stack(self._quat))
