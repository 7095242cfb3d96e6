"""Motion primitives of the scripted expert: joint-space moves (cosine-eased), straight
Cartesian lines (IK per waypoint), gripper open/close with a dwell, hold; grasp selection
(approach tilt and wrist yaw) and free-spot search for placements.
"""
from __future__ import annotations

import numpy as np

from vla_bridge.embodiment.kinematics import PiperKinematics, transform
from vla_bridge.embodiment.workcell import MOUNTS

#: distances from the anchor's centre to the placed source's centre and angles off the asked
#: direction, in order of preference (RoboFollow accepts 1e-6 < d <= 0.12 within 45 degrees)
PLACE_DISTANCES = (0.075, 0.065, 0.085, 0.095, 0.105)
PLACE_ANGLES_DEG = (0, 15, -15, 30, -30)
PLACE_CLEARANCE = 0.012  # free gap kept between the placed source and any other object
HOVER = 0.10  # height above the grasp point for approach and retreat
TILTS_DEG = (0, 10, 20, 30, 40)  # approach tilt away from the base, tried in order


class PlanningError(RuntimeError):
    pass


def _ease(n: int) -> np.ndarray:
    """n fractions in (0, 1] following a cosine ease (zero velocity at both ends)."""
    s = np.arange(1, n + 1) / n
    return 0.5 - 0.5 * np.cos(np.pi * s)


class ArmPlanner:
    """Motion primitives for one arm, producing that arm's 7-D targets (joints + gripper)."""

    def __init__(self, arm: str, q_start: np.ndarray, kin: PiperKinematics | None = None):
        self.arm = arm
        self.kin = kin or PiperKinematics()
        self.world_from_base = MOUNTS[arm].world_from_base()
        self.base_from_world = np.linalg.inv(self.world_from_base)
        self.q = np.array(q_start[:6], dtype=float)
        self.grip = float(q_start[6])
        self.targets: list[np.ndarray] = []

    # ------------------------------------------------------------------ geometry
    def grasp_rotation(self, point_world: np.ndarray, tilt_deg: float, yaw: float) -> np.ndarray:
        """TCP rotation: approach mostly down, tilted outward from the base; fingers close along yaw."""
        base_xy = self.world_from_base[:2, 3]
        radial = point_world[:2] - base_xy
        radial /= max(np.linalg.norm(radial), 1e-9)
        t = np.deg2rad(tilt_deg)
        approach = np.array([np.sin(t) * radial[0], np.sin(t) * radial[1], -np.cos(t)])
        close_axis = np.array([np.cos(yaw), np.sin(yaw), 0.0])
        close_axis -= approach * (close_axis @ approach)
        close_axis /= np.linalg.norm(close_axis)
        return np.stack([approach, close_axis, np.cross(approach, close_axis)], axis=1)

    def ik(self, pos_world: np.ndarray, R_world: np.ndarray, q_seed: np.ndarray):
        T_base = self.base_from_world @ transform(pos_world, R_world)
        return self.kin.solve_ik(T_base, q_seed)

    def choose_grasp(self, point_world: np.ndarray, yaw_candidates) -> tuple[float, float]:
        """Smallest tilt, then smallest wrist twist, for which both the grasp point and the
        hover point above it are reachable."""
        for tilt in TILTS_DEG:
            best = None
            for yaw in yaw_candidates:
                R = self.grasp_rotation(point_world, tilt, yaw)
                q_hover, ok1, _ = self.ik(point_world + [0, 0, HOVER], R, self.q)
                q_grasp, ok2, _ = self.ik(point_world, R, q_hover)
                if ok1 and ok2 and (best is None or abs(q_grasp[5]) < best[0]):
                    best = (abs(q_grasp[5]), yaw)
            if best is not None:
                return tilt, best[1]
        raise PlanningError(f"{self.arm} arm cannot reach {np.round(point_world, 3).tolist()}")

    # ------------------------------------------------------------------ primitives
    def _emit(self, q: np.ndarray, grip: float) -> None:
        self.q, self.grip = np.asarray(q, float), float(grip)
        self.targets.append(np.concatenate([self.q, [self.grip]]))

    def move_joints(self, q_goal: np.ndarray, ticks: int) -> None:
        q0 = self.q.copy()
        for s in _ease(ticks):
            self._emit(q0 + s * (q_goal - q0), self.grip)

    def move_to_pose(self, pos_world: np.ndarray, R: np.ndarray, ticks: int) -> None:
        q_goal, ok, err = self.ik(pos_world, R, self.q)
        if not ok:
            raise PlanningError(f"{self.arm} arm: no IK for {np.round(pos_world, 3).tolist()} "
                                f"(residual {err * 1000:.1f} mm)")
        self.move_joints(q_goal, ticks)

    def line_to(self, pos_world: np.ndarray, R: np.ndarray, ticks: int) -> None:
        """Straight TCP line from the current pose (IK at every waypoint keeps it straight)."""
        start = (self.world_from_base @ self.kin.tcp(self.q))[:3, 3]
        for s in _ease(ticks):
            q, ok, err = self.ik(start + s * (pos_world - start), R, self.q)
            if not ok:
                raise PlanningError(f"{self.arm} arm: line leaves the workspace (residual "
                                    f"{err * 1000:.1f} mm)")
            self._emit(q, self.grip)

    def set_gripper(self, value: float, dwell: int) -> None:
        for _ in range(dwell):
            self._emit(self.q, value)

    def hold(self, ticks: int) -> None:
        for _ in range(ticks):
            self._emit(self.q, self.grip)


def grasp_yaws(obj_quat: np.ndarray, shape: str) -> list[float]:
    """Closing-axis yaws worth trying: the cube's face normals, or any 4 for round objects."""
    w, x, y, z = obj_quat
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    if shape in ("box", "cube"):
        return [yaw + k * np.pi / 2 for k in range(4)]
    return [k * np.pi / 4 for k in range(8)]


def footprint_radius(obj) -> float:
    """Radius of the object's footprint on the table (half its xy diagonal for boxes)."""
    half = np.asarray(obj.size[:2], float) / 2
    return float(np.linalg.norm(half)) if obj.shape == "box" else float(half.max())


def place_point(world, source: str, anchor: str, relation) -> np.ndarray:
    """Where to put the source's centre: in the asked direction from the anchor, clear of
    every other object (a neighbour in the way would leave the source tilted on top of it).
    When no candidate is clear, the one with the most room is used."""
    anchor_xy = world.objects[anchor].pos[:2]
    src_radius = footprint_radius(world.objects[source])
    others = [o for name, o in world.objects.items() if name != source]
    base = np.arctan2(relation[1], relation[0])
    best, best_room = None, -np.inf
    for dist in PLACE_DISTANCES:
        for angle in np.deg2rad(PLACE_ANGLES_DEG):
            xy = anchor_xy + dist * np.array([np.cos(base + angle), np.sin(base + angle)])
            room = min((np.linalg.norm(xy - o.pos[:2]) - src_radius - footprint_radius(o)
                        for o in others), default=np.inf)
            if room >= PLACE_CLEARANCE:
                return xy
            if room > best_room:
                best, best_room = xy, room
    return best
