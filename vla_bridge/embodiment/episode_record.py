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
    commands      (n, D)    the executed joint targets (frame 0: the command at reset)
    """
    tcp_pos: dict[str, np.ndarray]
    tcp_rot: dict[str, np.ndarray]
    grip: dict[str, np.ndarray]
    pos: dict[str, np.ndarray]
    quat: dict[str, np.ndarray] = field(default_factory=dict)
    commands: np.ndarray | None = None

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
        self._commands: list[np.ndarray] = []
        self.frames = 0

    def add(self, world, command: np.ndarray) -> None:
        """`world` is a WorldState; `command` the contract joint vector executed at this tick."""
        from vla_bridge import contract
        from vla_bridge.embodiment.kinematics import quat_to_mat
        for arm, tcp in world.tcp.items():
            self._tcp_pos.setdefault(arm, []).append(np.asarray(tcp.pos, float))
            self._tcp_rot.setdefault(arm, []).append(quat_to_mat(tcp.quat))
            self._grip.setdefault(arm, []).append(float(command[contract.GRIPPER_INDEX[arm]]))
        for name, obj in world.objects.items():
            self._pos.setdefault(name, []).append(np.asarray(obj.pos, float))
            self._quat.setdefault(name, []).append(np.asarray(obj.quat, float))
        self._commands.append(np.asarray(command, float))
        self.frames += 1

    def record(self) -> EpisodeRecord:
        stack = lambda d: {k: np.array(v) for k, v in d.items()}  # noqa: E731
        return EpisodeRecord(tcp_pos=stack(self._tcp_pos), tcp_rot=stack(self._tcp_rot),
                             grip=stack(self._grip), pos=stack(self._pos), quat=stack(self._quat),
                             commands=np.array(self._commands))


def save_episode(path, record: EpisodeRecord, meta: dict) -> None:
    """Write a record (and JSON-able `meta`: task, seed, scores...) as one compressed .npz, so
    an episode can be re-scored or replayed in the simulator to render a video later."""
    import json
    arrays = {"commands": record.commands if record.commands is not None else np.zeros((0, 0)),
              "meta": np.array(json.dumps(meta))}
    for field_name in ("tcp_pos", "tcp_rot", "grip", "pos", "quat"):
        for key, value in getattr(record, field_name).items():
            arrays[f"{field_name}/{key}"] = value
    np.savez_compressed(path, **arrays)


def load_episode(path) -> tuple[EpisodeRecord, dict]:
    """Inverse of save_episode: (record, meta)."""
    import json
    parts: dict[str, dict] = {k: {} for k in ("tcp_pos", "tcp_rot", "grip", "pos", "quat")}
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        commands = data["commands"]
        for key in data.files:
            if "/" in key:
                field_name, name = key.split("/", 1)
                parts[field_name][name] = data[key]
    return EpisodeRecord(**parts, commands=commands if commands.size else None), meta
