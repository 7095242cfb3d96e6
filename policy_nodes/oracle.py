"""Scripted expert ("oracle") for RoboFollow Scene 1: reads the privileged world state and the
task spec, plans the whole episode with inverse kinematics and simple motion primitives, and
serves the plan chunk by chunk.

Primitives: joint-space move (cosine-eased), straight Cartesian line (IK per waypoint),
gripper open/close with a short dwell, hold.
"""
from __future__ import annotations

import numpy as np

from vla_bridge import contract
from vla_bridge.kinematics import PiperKinematics, transform
from vla_bridge.policy_nodes.backend import Observation, PolicyBackend
from vla_bridge.tasks import TaskSpec
from vla_bridge.workcell import MOUNTS, TABLE_TOP_Z, arm_slice

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
    every other object (a neighbour in the way would leave the source tilted on top of it)."""
    anchor_xy = world.objects[anchor].pos[:2]
    src_radius = footprint_radius(world.objects[source])
    others = [o for name, o in world.objects.items() if name != source]
    base = np.arctan2(relation[1], relation[0])
    for dist in PLACE_DISTANCES:
        for angle in np.deg2rad(PLACE_ANGLES_DEG):
            xy = anchor_xy + dist * np.array([np.cos(base + angle), np.sin(base + angle)])
            if all(np.linalg.norm(xy - o.pos[:2]) >= src_radius + footprint_radius(o) + PLACE_CLEARANCE
                   for o in others):
                return xy
    raise PlanningError(f"no free spot {relation} of {anchor} for {source}")


def plan_scene1(task: TaskSpec, world, state: np.ndarray) -> np.ndarray:
    """Whole-episode plan [T, 14] for a Scene 1 pickup or relation placement."""
    arm = task.arm
    planner = ArmPlanner(arm, state[arm_slice(arm)])
    home_q = planner.q.copy()
    src = world.objects[task.source]
    grasp_point = src.pos.copy()
    tilt, yaw = planner.choose_grasp(grasp_point, grasp_yaws(src.quat, src.shape))
    R = planner.grasp_rotation(grasp_point, tilt, yaw)

    planner.move_to_pose(grasp_point + [0, 0, HOVER], R, ticks=25)
    planner.line_to(grasp_point, R, ticks=15)
    planner.set_gripper(contract.GRIPPER_CLOSED, dwell=8)
    planner.line_to(grasp_point + [0, 0, HOVER], R, ticks=15)

    if task.anchor is not None:
        place_xy = place_point(world, task.source, task.anchor, task.relation)
        place = np.array([*place_xy, grasp_point[2] + 0.004])
        tilt_p, _ = planner.choose_grasp(place, [yaw])
        R_place = planner.grasp_rotation(place, tilt_p, yaw)
        planner.move_to_pose(place + [0, 0, HOVER], R_place, ticks=25)
        planner.line_to(place, R_place, ticks=15)
        planner.set_gripper(contract.GRIPPER_OPEN, dwell=8)
        planner.line_to(place + [0, 0, HOVER], R_place, ticks=12)

    planner.move_joints(home_q, ticks=30)
    plan = np.tile(state, (len(planner.targets), 1))
    plan[:, arm_slice(arm)] = np.array(planner.targets)
    return plan


class OraclePolicy(PolicyBackend):
    """Privileged scripted expert; knows every Scene 1 task type."""

    needs_world_state = True

    def __init__(self, chunk_size: int = 50, control_period: float = 0.06):
        self.chunk_size = chunk_size
        self.control_period = control_period
        self.task: TaskSpec | None = None
        self.plan: np.ndarray | None = None
        self.plan_start = 0.0  # observation stamp the plan starts from

    def reset(self) -> None:
        self.plan = None

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        if task is None:
            raise ValueError("the oracle needs the privileged task spec, not only the instruction")
        self.task = TaskSpec.from_dict(task)
        self.reset()

    def predict(self, observation: Observation) -> np.ndarray:
        if self.task is None:
            raise RuntimeError("set_instruction() must be called before predict()")
        if observation.world is None:
            raise ValueError("the oracle needs the privileged world state in the observation")
        if self.plan is None:
            self.plan, self.plan_start = self._plan(observation), observation.stamp
        # index the plan by time, so it also holds when the sim runs in real time and
        # observations come more often than once per chunk
        cursor = int(round((observation.stamp - self.plan_start) / self.control_period))
        chunk = self.plan[cursor:cursor + self.chunk_size]
        if len(chunk) < self.chunk_size:  # plan finished: hold the last pose
            last = self.plan[-1] if len(self.plan) else observation.state
            chunk = np.vstack([chunk, np.tile(last, (self.chunk_size - len(chunk), 1))])
        return chunk

    def _plan(self, observation: Observation) -> np.ndarray:
        if self.task.scene != "scene1":
            raise NotImplementedError(f"the oracle does not know {self.task.scene} yet")
        state = np.asarray(observation.state, float).copy()
        for arm in contract.ARMS:  # command what the arm is at; grippers start open
            state[contract.GRIPPER_INDEX[arm]] = contract.GRIPPER_OPEN
        return plan_scene1(self.task, observation.world, state)
