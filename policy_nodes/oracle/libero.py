"""A privileged, scripted LIBERO policy: pick-and-place and knob turning over the objects'
poses, through the OSC controller's end-effector deltas (`contract.LIBERO_PANDA` actions). It
proves the tasks are solvable through the graph; it is not a learned policy.

It reads the task's BDDL goal (the begin message's `task["goal"]`, from the catalog; with
`follow="cue"` the `cue_task`'s under a LIBERO-VIFO protocol) and the privileged world state
(`LiberoBackend.world_state`: objects' bounding boxes, region sites, articulated parts, the end
effector). Placements come first, then knobs; each goal is a table of phases (`Phase`):

* `on` / `in` (`PICK_AND_PLACE`): 1. above the object, 2. down to the grasp point, 3. close,
  4. lift above what lies along the way, 5. over the target, 6. down until the object is just
  above it, 7. open, 8. up;
* `turnon` (`TURN_KNOB`): above the object's knob (its articulated part), down, close, turn the
  wrist by TWIST_RAD about the vertical (the knob's hinge), open, up.

Grasps are top-down with the fingers closing along world y (the Panda's home orientation):
bowls by the rim (the gripper centre on the wall, so each finger's 4 cm stroke reaches it;
on the side with more room), others at their centre, the gripper turned 90 degrees about z
when the object is narrower along x than along y. An elongated object (a flat box: the
cream cheese) whose centre grasp's descent is stuck STUCK_Z_M above it (the arm's top-down
reach ends there) is grasped again, once, NEAR_END_INSET_M inside its end toward the robot.
Each call returns `chunk_size` actions toward the current waypoint (a proportional step,
clipped to the controller's [-1, 1]); orientation is held to the episode's first one (plus
the grasp's yaw and a begun twist) the same way. A motion phase ends on a measured position (the first action of a call) within
REACHED_M of its waypoint, or within STALL_NEAR_M when it stopped moving; a gripper phase
after GRIP_STEPS actions, a twist after TWIST_STEPS. Goals it has no plan for (`open`,
`close`: a drawer handle leaves a 1.6 cm slot that a top-down Panda finger does not fit, and
the drawer above is in the way) are skipped (it holds still when none is left); `note` says
which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend

POS_SCALE = 0.05  # m per unit action (OSC_POSE output_max)
ROT_SCALE = 0.5  # rad per unit action
REACHED_M = 0.012
#: a motion phase that made under STALL_M of progress since the last call while within
#: STALL_NEAR_M of its waypoint is done (the OSC's steady-state error can exceed REACHED_M)
STALL_M, STALL_NEAR_M = 0.002, 0.03
GRIP_STEPS = 12  # steps the gripper is given to close or open
#: a centre grasp of an elongated object whose descent made under STALL_M of progress for
#: STUCK_CALLS calls in a row while still STUCK_Z_M or more above its grasp point is stuck (the
#: arm's top-down reach ends short of a long flat box's far-out centre; a stall that high is
#: not a done descent for it): the object is then grasped at its near end
STUCK_CALLS, STUCK_Z_M = 3, 0.02
ELONGATED = 1.5  # an object whose footprint is this many times longer than wide
NEAR_END_INSET_M = 0.02  # from the near end's edge to the fingers' centre
RIM_WALL_M = 0.007  # from a bowl's outer radius to its wall: the gripper centre goes there
PICKABLE_PREDICATES = ("on", "in")
TURN_PREDICATES = ("turnon",)
PLANNED_PREDICATES = PICKABLE_PREDICATES + TURN_PREDICATES
TWIST_RAD = 1.3  # a knob turned this far is on (LIBERO's flat stove: from 0.5 rad)
TWIST_STEPS = 25  # steps the wrist is given to turn it
TWIST_RATE = 0.3  # at most this much of the controller's rotation step per action
KNOB_GRIP_DEPTH_M = 0.015  # below the knob's top where the fingers close


@dataclass(frozen=True)
class Phase:
    """One step of a plan: move to (or hold at) the plan's point `point` with the gripper at
    `gripper` (1 = open); `kind` "move" ends within REACHED_M (or stalled), "loose" within
    twice that (moves through free space), "grip" after GRIP_STEPS, "twist" (turn the wrist
    by the plan's `twist`) after TWIST_STEPS."""
    name: str
    point: str
    gripper: float
    kind: str = "move"


PICK_AND_PLACE = (Phase("approach", "above", 1.0), Phase("descend", "grasp", 1.0),
                  Phase("close", "grasp", 0.0, "grip"), Phase("lift", "lift", 0.0, "loose"),
                  Phase("carry", "carry", 0.0, "loose"), Phase("lower", "place", 0.0),
                  Phase("release", "place", 1.0, "grip"), Phase("retreat", "retreat", 1.0, "loose"))
TURN_KNOB = (Phase("approach", "above", 1.0), Phase("descend", "grasp", 1.0),
             Phase("close", "grasp", 0.0, "grip"), Phase("twist", "grasp", 0.0, "twist"),
             Phase("release", "grasp", 1.0, "grip"), Phase("retreat", "above", 1.0, "loose"))


def axis_angle_to_matrix(v) -> np.ndarray:
    v = np.asarray(v, float)
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def matrix_to_axis_angle(r) -> np.ndarray:
    cos = max(-1.0, min(1.0, (np.trace(r) - 1) / 2))
    angle = math.acos(cos)
    if angle < 1e-9:
        return np.zeros(3)
    if math.pi - angle < 1e-6:  # 180 degrees: the axis from the symmetric part
        k = np.sqrt(np.maximum((np.diag(r) + 1) / 2, 0))
        k *= np.sign([1, r[0, 1] + 1e-12, r[0, 2] + 1e-12])
        return k / np.linalg.norm(k) * angle
    w = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]]) / (2 * math.sin(angle))
    return w * angle


def rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


class LiberoOracle(PolicyBackend):
    needs_world_state = True
    embodiment = C.LIBERO_PANDA.name

    FOLLOW = ("language", "cue")

    def __init__(self, chunk_size: int = 5, follow: str = "language", **_):
        if follow not in self.FOLLOW:
            raise ValueError(f"oracle follow must be one of {self.FOLLOW}, got {follow!r}")
        self.chunk_size = int(chunk_size)
        self.follow = follow
        self.reset()

    def reset(self) -> None:
        self.goals: list[list[str]] = []
        self.phase = "idle"
        self.note = ""
        self.plan: dict | None = None
        self.home_rot: np.ndarray | None = None
        self.home_pos: np.ndarray | None = None  # the hand's first position: toward the robot
        self.counter = 0
        self.twisted = False  # the plan's wrist turn has begun (it is kept from then on)
        self.last_measured: np.ndarray | None = None  # the previous call's position
        self.stuck = 0  # calls in a row the descent made no progress far above its grasp

    def set_instruction(self, instruction: str, task: dict | None = None,
                        cue_task: dict | None = None) -> None:
        """Plan the begin task's `goal` (the language task's; None under LIBERO-VIFO's
        authorized and no_language protocols, which name no task: it holds still), or with
        `follow="cue"` the `cue_task`'s goal when the episode shows a cue."""
        source = cue_task if self.follow == "cue" and cue_task is not None else (task or {})
        goals = list(source.get("goal") or [])
        # placements first (closing a drawer comes after putting something in it)
        self.goals = sorted((g for g in goals if g and g[0] in PLANNED_PREDICATES),
                            key=lambda g: g[0] not in PICKABLE_PREDICATES)
        skipped = [g for g in goals if not g or g[0] not in PLANNED_PREDICATES]
        self.note = (f"no plan for {' '.join(map(str, skipped[0]))!r}" if skipped else "")
        if not goals:
            self.note = ("the language names no task" if task and "goals" in task
                         else "the task carries no BDDL goal")
        self.phase = "approach" if self.goals else "hold"

    # ------------------------------------------------------------------ planning
    def _new_plan(self, world) -> dict:
        if self.goals[0][0] in TURN_PREDICATES:
            return self._knob_plan(world, self.goals[0][1])
        return self._pick_and_place_plan(world)

    def _knob_plan(self, world, owner: str) -> dict:
        """Grasp the knob of `owner` from above, turn the wrist by TWIST_RAD, let go."""
        parts = [o for name, o in world.objects.items() if name.startswith(owner + "/")]
        if not parts:
            raise ValueError(f"{owner} has no articulated part in the world state to turn")
        knob = min(parts, key=lambda o: float(np.prod(o.size)))
        top = knob.pos[2] + knob.size[2] / 2
        grasp = np.array([*knob.pos[:2], top - KNOB_GRIP_DEPTH_M])
        return {"phases": TURN_KNOB, "yaw": 0.0, "twist": TWIST_RAD,
                "above": np.array([*knob.pos[:2], top + 0.08]), "grasp": grasp}

    def _pick_and_place_plan(self, world, near_end_of: np.ndarray | None = None) -> dict:
        """The pick-and-place waypoints. With `near_end_of` (the hand's first position, toward
        the robot) an elongated object is grasped NEAR_END_INSET_M inside its end nearer it, not
        at its centre; the plan's `near_end` says which grasp it is (None: not elongated)."""
        pred, obj_name, target_name = self.goals[0][:3]
        # whole objects (an articulated part, "<object>/<joint>", is inside its object's box)
        objects = {n: o for n, o in world.objects.items() if "/" not in n}
        obj, target = objects[obj_name], objects[target_name]
        top = obj.pos[2] + obj.size[2] / 2
        bottom = obj.pos[2] - obj.size[2] / 2
        grasp = obj.pos.copy()
        yaw = 0.0
        near_end = None
        if "bowl" in obj_name:  # the rim on the side with more room for the outer finger
            reach = obj.size[1] / 2 - RIM_WALL_M
            sign = max((-1.0, 1.0), key=lambda sg: _clearance(
                obj.pos[:2] + [0, sg * (reach + 0.045)], objects, obj_name))
            grasp[1] += sign * reach
            grasp[2] = top - 0.02
        else:
            if obj.size[1] > obj.size[0] and obj.size[1] > 0.06:
                yaw = math.pi / 2
            grasp[2] = max(bottom + 0.012, top - 0.035)
            long_axis = int(np.argmax(obj.size[:2]))
            if obj.size[long_axis] >= ELONGATED * obj.size[1 - long_axis]:
                near_end = near_end_of is not None
            if near_end:  # along the long axis, toward the robot
                side = 1.0 if near_end_of[long_axis] > obj.pos[long_axis] else -1.0
                grasp[long_axis] += side * (obj.size[long_axis] / 2 - NEAR_END_INSET_M)
        if target.size.any():  # an object: on top of its box
            dest_xy, dest_top = target.pos[:2], target.pos[2] + target.size[2] / 2
        else:  # a region site: its point (a container's site sits inside it)
            dest_xy, dest_top = target.pos[:2], target.pos[2]
        if pred == "in" and target_name.endswith("contain_region"):
            container = objects.get(target_name.removesuffix("_contain_region"))
            if container is not None:
                dest_top = container.pos[2] + container.size[2] / 2 - 0.04
        hang = grasp[2] - bottom  # gripper point above the object's bottom
        clearance = max([top] + [o.pos[2] + o.size[2] / 2 for name, o in objects.items()
                                 if o.size.any() and name != obj_name
                                 and _near_path(o, grasp[:2], dest_xy, margin=0.08)])
        lift_z = min(max(clearance, dest_top) + hang + 0.05, clearance + 0.25)
        offset = grasp[:2] - obj.pos[:2]  # keep the object centred over the target
        place = np.array([*(dest_xy + offset), dest_top + hang + 0.02])
        return {"phases": PICK_AND_PLACE, "object": obj_name, "target": target_name,
                "grasp": grasp, "yaw": yaw, "twist": 0.0, "near_end": near_end,
                "above": np.array([*grasp[:2], top + 0.08]), "place": place,
                "lift": np.array([*grasp[:2], lift_z]), "carry": np.array([*place[:2], lift_z]),
                "retreat": np.array([*place[:2], lift_z])}

    def _waypoint(self, pos: np.ndarray, measured: bool) -> tuple[np.ndarray, float]:
        """The current phase's target position and gripper (1 = open), advancing phases
        that are done (`Phase.kind`): a motion phase only on a measured position (the chunk's
        first action), a gripper or twist phase after its number of actions."""
        p = self.plan
        phases = p["phases"]
        names = [ph.name for ph in phases]
        while True:
            if self.phase not in names:
                return pos, 1.0
            ph = phases[names.index(self.phase)]
            wp, g = p[ph.point], ph.gripper
            self.twisted = self.twisted or ph.kind == "twist"
            if not self._phase_done(ph, wp, pos, measured):
                return wp, g
            self.counter = 0
            nxt = names.index(ph.name) + 1
            if nxt == len(phases):  # this goal is done: the next one, or hold
                self.goals.pop(0)
                self.plan, self.twisted = None, False
                self.phase = "approach" if self.goals else "done"
                return pos, 1.0
            self.phase = phases[nxt].name

    def _phase_done(self, ph: Phase, wp: np.ndarray, pos: np.ndarray, measured: bool) -> bool:
        if ph.kind == "grip":
            return self.counter >= GRIP_STEPS
        if ph.kind == "twist":
            return self.counter >= TWIST_STEPS
        tolerance = REACHED_M * (2 if ph.kind == "loose" else 1)
        error = float(np.linalg.norm(wp - pos))
        stalled = (self.last_measured is not None and error < STALL_NEAR_M
                   and np.linalg.norm(pos - self.last_measured) < STALL_M
                   and not (ph.name == "descend" and self._centre_grasp_high(pos)))
        return measured and (error < tolerance or stalled)

    def predict(self, observation: Observation) -> np.ndarray:
        state = np.asarray(observation.state, float)
        pos, rot = state[:3], axis_angle_to_matrix(state[3:6])
        if self.home_rot is None:
            self.home_rot, self.home_pos = rot, pos.copy()
        if self.phase in ("hold", "done", "idle") or observation.world is None:
            return np.tile([0, 0, 0, 0, 0, 0, 1.0], (self.chunk_size, 1))
        if self.plan is None:  # the next goal (planned on this observation's world)
            self.plan = self._new_plan(observation.world)
        if self._descent_stuck(pos):  # once per goal: the near end, from above again
            self.plan = self._pick_and_place_plan(observation.world, near_end_of=self.home_pos)
            self.phase, self.stuck = "approach", 0
            self.note = f"descent stuck above {self.plan['object']}'s centre: its near end"
        def goal_rot():  # the grasp's yaw, plus the twist once it began
            return rot_z(self.plan["yaw"] + (self.plan["twist"] if self.twisted else 0.0)) \
                @ self.home_rot
        actions = []
        # open-loop inside a chunk: predict the end effector moving toward the waypoint
        sim_pos = pos.copy()
        measured_pos = pos.copy()
        for k in range(self.chunk_size):
            if k == 1:
                self.last_measured = measured_pos
            if self.plan is None:  # the last goal was placed in this chunk: hold, open
                actions.append([0, 0, 0, 0, 0, 0, 1.0])
                continue
            wp, g = self._waypoint(sim_pos, measured=k == 0)
            if self.plan is None:
                actions.append([0, 0, 0, 0, 0, 0, 1.0])
                continue
            step = np.clip((wp - sim_pos) / POS_SCALE, -1.0, 1.0)
            rot_err = matrix_to_axis_angle(goal_rot() @ rot.T)
            limit = TWIST_RATE if self.phase == "twist" else 1.0  # turn a gripped knob slowly
            actions.append([*step, *np.clip(rot_err / ROT_SCALE, -limit, limit), g])
            if self.phase in ("close", "release", "twist"):
                self.counter += 1
            sim_pos = sim_pos + step * POS_SCALE * 0.5  # the controller closes ~half the gap
        return np.array(actions, float)

    def _descent_stuck(self, pos: np.ndarray) -> bool:
        """Whether a centre grasp of an elongated object has been stuck for STUCK_CALLS calls
        (under STALL_M of progress per call, STUCK_Z_M or more above the grasp point)."""
        if self.phase != "descend" or self.last_measured is None:
            self.stuck = 0
            return False
        still = np.linalg.norm(pos - self.last_measured) < STALL_M
        self.stuck = self.stuck + 1 if still and self._centre_grasp_high(pos) else 0
        return self.stuck >= STUCK_CALLS

    def _centre_grasp_high(self, pos: np.ndarray) -> bool:
        """A centre grasp of an elongated object, the hand STUCK_Z_M or more above it."""
        return (self.plan.get("near_end") is False
                and pos[2] - self.plan["grasp"][2] >= STUCK_Z_M)


def _clearance(xy, objects, skip: str) -> tuple[float, float]:
    """Horizontal distance from `xy` to the nearest other object's bounding box (0 inside),
    then to the nearest other object's centre in 5 cm steps (the tie-break inside a cabinet's
    or a stove's box)."""
    box = centre = np.inf
    for name, o in objects.items():
        if name == skip or not o.size.any():
            continue
        gap = np.maximum(np.abs(np.asarray(xy) - o.pos[:2]) - o.size[:2] / 2, 0.0)
        box = min(box, float(np.linalg.norm(gap)))
        centre = min(centre, float(np.linalg.norm(np.asarray(xy) - o.pos[:2])))
    return box, round(centre / 0.05)  # centres within ~5 cm: a tie, the -y side wins


def _near_path(obj, a, b, margin: float) -> bool:
    """Whether `obj`'s footprint comes within `margin` of the straight carry from a to b."""
    a, b, p = np.asarray(a, float), np.asarray(b, float), obj.pos[:2]
    ab = b - a
    t = float(np.clip(np.dot(p - a, ab) / max(np.dot(ab, ab), 1e-12), 0.0, 1.0))
    gap = np.maximum(np.abs(p - (a + t * ab)) - obj.size[:2] / 2, 0.0)
    return float(np.linalg.norm(gap)) < margin
