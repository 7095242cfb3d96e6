"""Synthetic EpisodeRecords for the RoboFollow scorer tests, built from a few keyframes.

Tracks are given as keyframes [(frame, value), ...]: positions are piecewise linear between
keys (held before the first and after the last key), grippers are step functions. Arms not
mentioned stay parked at a home outside the operation box with the gripper open; objects not
mentioned stay at the Scene 1 default layout (shared/robofollow/scenes.json).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

_REPO = Path(__file__).resolve().parents[2]
if str(_REPO) not in sys.path:  # the package is not installed in the test venv
    sys.path.insert(0, str(_REPO))

from vla_bridge.embodiment.episode_record import EpisodeRecord  # noqa: E402
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec  # noqa: E402

Vec = Sequence[float]
Keys = Sequence[tuple[int, Vec]]

# Scene 1 default layout; z = table 0.74 + spawn height
# (cube half size 0.02 + 0.001, sphere radius 0.02, cylinder half height 0.025).
SCENE1_OBJECTS: dict[str, tuple[float, float, float]] = {
    "red_sphere": (-0.14, -0.04, 0.76),
    "yellow_block_1": (-0.02, -0.04, 0.761),
    "red_cylinder": (0.10, -0.04, 0.765),
    "yellow_block_2": (-0.14, -0.18, 0.761),
    "green_sphere": (-0.02, -0.18, 0.76),
    "yellow_block_3": (0.10, -0.18, 0.761),
}
# Fingertip homes, both outside the operation box x[-0.20, 0.15] y[-0.15, 0.15] z[0.74, 1.00].
HOME: dict[str, tuple[float, float, float]] = {"left": (-0.30, -0.10, 0.95), "right": (0.30, -0.10, 0.95)}
# Approach axis (rotation column 0) straight down: fingertip x, y equal TCP x, y exactly.
APPROACH_DOWN = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
RELATION_UNITS = {"place_left_of": (-1.0, 0.0), "place_beside": (1.0, 0.0),
                  "place_behind": (0.0, 1.0), "place_in_front": (0.0, -1.0)}
FINGERTIP_OFFSET = 0.04


def _sorted_keys(keys: Keys) -> tuple[list[int], list[Vec]]:
    by_frame = dict(keys)  # a later key at the same frame overrides an earlier one
    frames = sorted(by_frame)
    return frames, [by_frame[f] for f in frames]


def linear_track(keys: Keys, n: int) -> np.ndarray:
    """(n, d) piecewise-linear track through the keyframes (exact at key frames)."""
    frames, values = _sorted_keys(keys)
    vals = np.atleast_2d(np.asarray(values, dtype=float).reshape(len(values), -1))
    t = np.arange(n, dtype=float)
    return np.stack([np.interp(t, frames, vals[:, d]) for d in range(vals.shape[1])], axis=1)


def step_track(keys: Keys, n: int) -> np.ndarray:
    """(n,) track holding each key's value from its frame until the next key."""
    frames, values = _sorted_keys(keys)
    out = np.full(n, float(values[0]))
    for f, v in zip(frames, values):
        out[f:] = float(v)
    return out


def build_record(n: int, ee: Mapping[str, Keys] | None = None, grip: Mapping[str, Keys] | None = None,
                 objects: Mapping[str, Keys] | None = None, rot: np.ndarray = APPROACH_DOWN) -> EpisodeRecord:
    """EpisodeRecord whose Scene 1 fingertip proxy follows the `ee` keys.

    TCP = fingertip - R[:, 0] * 0.04, so the scorer's proxy reproduces the keys.
    """
    ee, grip, objects = dict(ee or {}), dict(grip or {}), dict(objects or {})
    tcp_pos, tcp_rot, grips = {}, {}, {}
    for arm in ("left", "right"):
        tip = linear_track(ee.get(arm, [(0, HOME[arm])]), n)
        tcp_pos[arm] = tip - rot[:, 0] * FINGERTIP_OFFSET
        tcp_rot[arm] = np.repeat(rot[None, :, :], n, axis=0)
        grips[arm] = step_track(grip.get(arm, [(0, 1.0)]), n)
    pos = {name: linear_track(objects.get(name, [(0, p0)]), n) for name, p0 in SCENE1_OBJECTS.items()}
    for name, keys in objects.items():
        pos.setdefault(name, linear_track(keys, n))
    return EpisodeRecord(tcp_pos=tcp_pos, tcp_rot=tcp_rot, grip=grips, pos=pos)


def make_task(action: str = "pickup", source: str = "yellow_block_1", arm: str = "left",
              anchor: str | None = None, level: str = "L0", scene: str = "scene1",
              task_id: str | None = None) -> TaskSpec:
    if action in RELATION_UNITS and anchor is None:
        anchor = "red_cylinder"
    return TaskSpec(
        id=task_id or f"{level}_{action}_{source}_{arm}", scene=scene, level=level, layout="default",
        instruction=f"test: {action} {source}", arm=arm, action=action, source=source, anchor=anchor,
        relation=RELATION_UNITS.get(action),
    )


def add(p: Vec, d: Vec) -> tuple[float, ...]:
    return tuple(float(a) + float(b) for a, b in zip(p, d))


def place_point(anchor: str, action: str, dist: float = 0.08, angle_deg: float = 0.0) -> tuple[float, float]:
    """xy at `dist` from the anchor, rotated `angle_deg` away from the action's desired direction."""
    ux, uy = RELATION_UNITS[action]
    a = np.deg2rad(angle_deg)
    vx, vy = ux * np.cos(a) - uy * np.sin(a), ux * np.sin(a) + uy * np.cos(a)
    ax, ay, _ = SCENE1_OBJECTS[anchor]
    return ax + dist * vx, ay + dist * vy


@dataclass
class PickPlace:
    """A scripted grasp: reach, close, lift, then (pickup) hold or (placement) move, lower, open; then home.

    Frames with the defaults: reach 20, close 22 (cE), lift done 32 (lift >= 0.01 first at 24);
    placement: above the place point 52, lowered 62 (on table first at 60), open 64, retreat 68;
    home reached at 90 (within 0.12 m a few frames earlier).
    """
    arm: str = "left"
    obj: str = "yellow_block_1"  # the object the arm actually grasps and moves
    n: int = 150
    grasp_offset: tuple[float, float] = (0.0, 0.0)  # ee xy minus object xy at the grasp
    reach_t: int = 20
    close_t: int = 22
    lift_t: int = 32
    lift_dz: float = 0.08
    place_xy: tuple[float, float] | None = None  # None: pickup, the object stays lifted
    place_dz: float = 0.0  # object height above its start when lowered/released
    move_t: int = 52
    lower_t: int = 62
    open_t: int | None = 64  # placements only; a pickup keeps holding the object
    home_t: int | None = 90  # None: the arm never returns home

    def keys(self) -> dict[str, dict[str, list[tuple[int, Vec]]]]:
        p0 = SCENE1_OBJECTS[self.obj]
        grasp = add(p0, (*self.grasp_offset, 0.01))
        up = (0.0, 0.0, self.lift_dz)
        ee = [(0, HOME[self.arm]), (self.reach_t, grasp), (self.close_t, grasp),
              (self.lift_t, add(grasp, up))]
        obj = [(0, p0), (self.close_t, p0), (self.lift_t, add(p0, up))]
        grip = [(0, 1.0), (self.close_t, 0.0)]
        last_t = self.lift_t
        if self.place_xy is not None:
            place = (*self.place_xy, p0[2] + self.place_dz)
            ee_place = add(place, (*self.grasp_offset, 0.01))
            ee += [(self.move_t, add(ee_place, up)), (self.lower_t, ee_place)]
            obj += [(self.move_t, add(place, up)), (self.lower_t, place)]
            last_t = self.lower_t
            if self.open_t is not None:
                ee += [(self.open_t, ee_place), (self.open_t + 4, add(ee_place, (0, 0, 0.05)))]
                grip.append((self.open_t, 1.0))
                last_t = self.open_t + 4
        if self.home_t is not None:
            assert self.home_t > last_t, "home_t must come after the scripted motion"
            ee.append((self.home_t, HOME[self.arm]))
        return {"ee": {self.arm: ee}, "grip": {self.arm: grip}, "objects": {self.obj: obj}}

    def record(self, ee: Mapping[str, Keys] | None = None, grip: Mapping[str, Keys] | None = None,
               objects: Mapping[str, Keys] | None = None, n: int | None = None) -> EpisodeRecord:
        """Build the record; extra keys are appended per arm/object (same frame overrides).

        An arm or object not scripted here gets only the extra keys, so give its full track.
        """
        k = self.keys()
        for part, extra in (("ee", ee), ("grip", grip), ("objects", objects)):
            for name, keys in (extra or {}).items():
                k[part].setdefault(name, []).extend(keys)
        return build_record(n or self.n, **k)


# =========================================================================== Scenes 2-4: TCP records
# Scenes 2, 3 and 4 score the TCP itself (no fingertip proxy): these helpers key the TCP directly.

import dataclasses as _dataclasses  # noqa: E402
import math as _math  # noqa: E402

from vla_bridge.benchmarks.robofollow.scenes import (load_scene as _load_scene,  # noqa: E402
                                                     sample_layout as _sample_layout)

TCP_ROT = np.eye(3)  # any rotation: Scenes 2-4 do not use it


def nominal_layout(scene: str, layout: str = "default") -> dict[str, tuple[float, float, float]]:
    """Unjittered spawn centre of every body the layout places (objects, bowls, labels), config order."""
    spec = _load_scene(scene)
    centres = _sample_layout(_dataclasses.replace(spec, jitter={}), layout, 0)
    return {name: tuple(float(v) for v in p) for name, p in centres.items()}


def yaw_quat(yaw_deg: float) -> tuple[float, float, float, float]:
    """(w, x, y, z) of a rotation by yaw_deg about +z."""
    h = _math.radians(yaw_deg) / 2.0
    return (_math.cos(h), 0.0, 0.0, _math.sin(h))


def build_tcp_record(n: int, base: Mapping[str, Vec], ee: Mapping[str, Keys] | None = None,
                     grip: Mapping[str, Keys] | None = None, objects: Mapping[str, Keys] | None = None,
                     quats: Mapping[str, Keys] | None = None) -> EpisodeRecord:
    """EpisodeRecord with TCP = the `ee` keys; objects not keyed rest at `base`.

    Quaternions default to identity; keyed ones are interpolated component-wise and normalised.
    """
    ee, grip, objects, quats = dict(ee or {}), dict(grip or {}), dict(objects or {}), dict(quats or {})
    tcp_pos, tcp_rot, grips = {}, {}, {}
    for arm in ("left", "right"):
        tcp_pos[arm] = linear_track(ee.get(arm, [(0, HOME[arm])]), n)
        tcp_rot[arm] = np.repeat(TCP_ROT[None, :, :], n, axis=0)
        grips[arm] = step_track(grip.get(arm, [(0, 1.0)]), n)
    names = list(base) + [k for k in objects if k not in base]
    pos = {name: linear_track(objects.get(name, [(0, base.get(name))]), n) for name in names}
    quat = {}
    for name in names:
        q = linear_track(quats.get(name, [(0, (1.0, 0.0, 0.0, 0.0))]), n)
        quat[name] = q / np.linalg.norm(q, axis=1, keepdims=True)
    return EpisodeRecord(tcp_pos=tcp_pos, tcp_rot=tcp_rot, grip=grips, pos=pos, quat=quat)


def parked_record(scene: str, layout: str, n: int = 40) -> EpisodeRecord:
    """Do-nothing episode: both arms parked at HOME with open grippers, every body at rest."""
    return build_tcp_record(n, nominal_layout(scene, layout))


@dataclass
class TcpPickPlace:
    """PickPlace for the TCP scenes: reach, close, lift; then (if `place`) move, lower, open; then home.

    `place` is the object's absolute centre when lowered. Frames as PickPlace: reach 20, close 22
    (cE), lift done 32 (lift >= 0.01 first at 24, >= 0.03 at 25); move 52, lowered 62, open 64,
    retreat 68, home 90. The TCP sits 0.01 m above the object's centre while holding it.
    """
    base: Mapping[str, Vec]
    arm: str = "left"
    obj: str = ""
    n: int = 150
    grasp_offset: tuple[float, float] = (0.0, 0.0)
    reach_t: int = 20
    close_t: int = 22
    lift_t: int = 32
    lift_dz: float = 0.08
    via: tuple[int, Vec] | None = None  # optional (frame, object centre) waypoint between lift and move
    place: Vec | None = None
    move_t: int = 52
    lower_t: int = 62
    open_t: int | None = 64
    home_t: int | None = 90

    def keys(self) -> dict[str, dict[str, list[tuple[int, Vec]]]]:
        p0 = tuple(self.base[self.obj])
        hold = (*self.grasp_offset, 0.01)
        grasp = add(p0, hold)
        up = (0.0, 0.0, self.lift_dz)
        ee = [(0, HOME[self.arm]), (self.reach_t, grasp), (self.close_t, grasp), (self.lift_t, add(grasp, up))]
        obj = [(0, p0), (self.close_t, p0), (self.lift_t, add(p0, up))]
        grip = [(0, 1.0), (self.close_t, 0.0)]
        last_t = self.lift_t
        if self.via is not None:
            vt, vp = self.via
            ee.append((vt, add(vp, hold)))
            obj.append((vt, tuple(vp)))
            last_t = vt
        if self.place is not None:
            place = tuple(self.place)
            ee += [(self.move_t, add(add(place, hold), up)), (self.lower_t, add(place, hold))]
            obj += [(self.move_t, add(place, up)), (self.lower_t, place)]
            last_t = self.lower_t
            if self.open_t is not None:
                ee += [(self.open_t, add(place, hold)), (self.open_t + 4, add(place, (0, 0, 0.06)))]
                grip.append((self.open_t, 1.0))
                last_t = self.open_t + 4
        if self.home_t is not None:
            assert self.home_t > last_t, "home_t must come after the scripted motion"
            ee.append((self.home_t, HOME[self.arm]))
        return {"ee": {self.arm: ee}, "grip": {self.arm: grip}, "objects": {self.obj: obj}}

    def record(self, ee: Mapping[str, Keys] | None = None, grip: Mapping[str, Keys] | None = None,
               objects: Mapping[str, Keys] | None = None, quats: Mapping[str, Keys] | None = None,
               n: int | None = None) -> EpisodeRecord:
        """Build the record; extra keys are appended per arm/object (a key at the same frame overrides)."""
        k = self.keys()
        for part, extra in (("ee", ee), ("grip", grip), ("objects", objects)):
            for name, keys in (extra or {}).items():
                k[part].setdefault(name, []).extend(keys)
        return build_tcp_record(n or self.n, self.base, quats=quats, **k)
