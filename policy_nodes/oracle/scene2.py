"""Oracle plans for RoboFollow Scene 2: pickup, stack, push and place in a bowl (one arm; the
other arm holds at home, outside the scorer's work box).

The module also holds the motion helpers Scene 4 shares (`Arm`, `Clearance`, `pick`, `place`):
* a straight line with IK at a few keypoints (joints interpolated between them) that may also
  turn the wrist on the way, and a grasp chooser that tries the wrist yaw needing the least
  twist first (one IK per candidate, with a small iteration budget for probes);
* grasp heights that keep the finger pads clear of whatever the source stands on (table,
  another object, a bowl rim) and a gripper command that squeezes without saturating either
  finger (the sim's fingers are independent servos: both saturated, the source floats);
* transit poses high enough that the open fingers, or the held source, pass every object;
  placements that keep the grasp's tilt so the source lands upright; and moves with a held
  source paced under HELD_SPEED (faster, the sim's grasp creeps and the source slides out).
"""
from __future__ import annotations

from functools import cache

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import rotation_error, transform
from vla_bridge.policy_nodes.oracle.primitives import (HOVER, TILTS_DEG, ArmPlanner,
                                                       PlanningError, _ease, footprint_radius)
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.embodiment.workcell import TABLE_TOP_Z, arm_slice

#: half length of a finger pad along the approach axis; the pad is centred on the TCP
PAD_HALF_LEN = 0.026
#: the closed fingers: each pad is this thick along the closing axis
PAD_THICKNESS = 0.010
#: lowest the pad tips go above whatever the source stands on
PAD_CLEARANCE = 0.004
#: extra height of the source's bottom over its landing surface when it is released
RELEASE_GAP = 0.003
#: push: TCP height above the source's initial centre (the scorer wants ee.z >= z0), the gap
#: kept to the source before the push starts, and how far the source is pushed
PUSH_TCP_ABOVE_CENTRE = 0.012
PUSH_TCP_DESCENT = 0.008  # the TCP sinks this much along the push (the arm rides up under load)
PUSH_START_GAP = 0.025
PUSH_DISTANCE = 0.045
GRIP_DWELL = 8
#: fallback approach / lift heights above a grasp or release point where the transit height
#: is out of reach, highest first; MIN_HOVER is the least approach height
HOVERS = (HOVER, 0.07, 0.05)
MIN_HOVER = 0.05
#: free height kept above every object (and bowl rim) while moving between poses
TRANSIT_CLEARANCE = 0.03
LINE_STEP = 0.0065  # TCP advance per tick on approach and retreat lines
#: the sim's grasp creeps (the source slides out between the pads) when the TCP moves faster
#: than about 0.2 m/s, far below the pads' friction limit, so moves with a held source are
#: paced: peak TCP speed HELD_SPEED, and lines at LINE_STEP_HELD per tick
HELD_SPEED = 0.12
LINE_STEP_HELD = 0.004
CONTROL_PERIOD = 0.06  # seconds per plan row (the oracle's control period)
PROBE_ITERATIONS = 40  # IK iterations when probing whether a pose is reachable
SOLVE_TOL = 0.002  # position residual accepted from an IK that ran out of iterations
#: open fingers: pad centre offset from the TCP along the closing axis, pad half width, and
#: the gap wanted between a pad and a neighbouring object while grasping
OPEN_FINGER_OFFSET = 0.045
PAD_HALF_WIDTH = 0.012
FINGER_GAP = 0.006
#: how far the fingers are commanded past the source's sides when closing on it
SQUEEZE = 0.02
GRIPPER_TRAVEL = 0.04  # finger travel from closed to fully open (sim: half the opening)
#: the widest span the open fingers close on with room to spare (the opening is 8 cm)
MAX_GRASP_WIDTH = 0.07


@cache
def fixture_kinds(scene: str) -> dict[str, str]:
    from vla_bridge.benchmarks.robofollow.scenes import load_scene
    return {name: f.kind for name, f in load_scene(scene).fixtures.items()}


def bowls_of(world, scene: str) -> list[str]:
    kinds = fixture_kinds(scene)
    return [name for name in world.objects if kinds.get(name) == "bowl"]


def yaw_of(quat) -> float:
    w, x, y, z = quat
    return float(np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z)))


def _rodrigues(v: np.ndarray) -> np.ndarray:
    """Rotation matrix of the rotation vector v."""
    angle = float(np.linalg.norm(v))
    if angle < 1e-12:
        return np.eye(3)
    k = v / angle
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def wrap(a: float) -> float:
    return float((a + np.pi) % (2 * np.pi) - np.pi)


def half_z(obj) -> float:
    return float(obj.size[2]) / 2


def extent_along(obj, direction) -> float:
    """Distance from the object's centre to its side along a horizontal unit vector."""
    if obj.shape in ("box", "cube"):
        yaw = yaw_of(obj.quat)
        c, s = np.cos(yaw), np.sin(yaw)
        local = np.array([c * direction[0] + s * direction[1], -s * direction[0] + c * direction[1]])
        return float(abs(local[0]) * obj.size[0] / 2 + abs(local[1]) * obj.size[1] / 2)
    return float(obj.size[0]) / 2


def container_bowl(world, scene: str, name: str) -> str | None:
    """The bowl the object sits in (its centre inside the rim, its bottom below the rim)."""
    obj = world.objects[name]
    for bowl in bowls_of(world, scene):
        b = world.objects[bowl]
        rim_z = TABLE_TOP_Z + float(b.size[2])
        if (np.linalg.norm(obj.pos[:2] - b.pos[:2]) < float(b.size[0]) / 2
                and obj.pos[2] - half_z(obj) < rim_z):
            return bowl
    return None


def grasp_tcp_z(world, scene: str, name: str) -> float:
    """TCP height for a grasp: at the centre, but high enough that the pad tips stay clear of
    what the source stands on and of a bowl rim around it (the palm does not collide)."""
    obj = world.objects[name]
    centre, bottom = float(obj.pos[2]), float(obj.pos[2]) - half_z(obj)
    z = max(centre, bottom + PAD_CLEARANCE + PAD_HALF_LEN)
    bowl = container_bowl(world, scene, name)
    if bowl is not None:
        rim_z = TABLE_TOP_Z + float(world.objects[bowl].size[2])
        z = max(z, rim_z + PAD_CLEARANCE + PAD_HALF_LEN)
    return z


def round_yaws(obj) -> list[float]:
    """Closing-axis yaws worth trying, modulo pi (the gripper is symmetric under a half turn)."""
    if obj.shape in ("box", "cube"):
        yaw = yaw_of(obj.quat)
        return [wrap(yaw), wrap(yaw + np.pi / 2)]
    return [k * np.pi / 4 for k in range(4)]


def fitting_yaws(obj) -> list[float]:
    """``round_yaws`` whose closing axis spans at most MAX_GRASP_WIDTH of the object (a LIBERO
    box 8 cm long is taken across its 4.6 cm); all of them when none does."""
    yaws = round_yaws(obj)
    fit = [y for y in yaws
           if 2 * extent_along(obj, np.array([np.cos(y), np.sin(y)])) <= MAX_GRASP_WIDTH]
    return fit or yaws


def require(world, task: TaskSpec, *names) -> None:
    """PlanningError (not a KeyError deep inside) when the task names an object the scene lacks,
    e.g. a task spec planned in another layout."""
    missing = [n for n in names if n and n not in world.objects]
    if missing:
        raise PlanningError(f"{task.id}: {missing} not in the scene ({task.layout})")


def finger_clearance(world, clear: "Clearance", name: str, point, yaw: float) -> float:
    """Smallest horizontal gap between the open fingers of a grasp of `name` at `point` (closing
    axis at `yaw`) and any other object or bowl that reaches above the pad tips."""
    axis = np.array([np.cos(yaw), np.sin(yaw)])
    tip_z = point[2] - PAD_HALF_LEN
    gap = np.inf
    for other, obj in world.objects.items():
        if other == name or clear.tops.get(other, -np.inf) <= tip_z:
            continue
        for side in (1, -1):
            finger = point[:2] + side * OPEN_FINGER_OFFSET * axis
            gap = min(gap, float(np.linalg.norm(finger - obj.pos[:2])) - footprint_radius(obj)
                      - PAD_HALF_WIDTH)
    return gap


def clear_yaws(world, clear: "Clearance", name: str, point, yaws) -> list[float]:
    """The yaws whose open fingers keep FINGER_GAP from the neighbours (the roomiest if none)."""
    gaps = {y: finger_clearance(world, clear, name, point, y) for y in yaws}
    ok = [y for y in yaws if gaps[y] >= FINGER_GAP]
    return ok or [max(yaws, key=gaps.get)]


class Arm(ArmPlanner):
    """ArmPlanner with a cheaper straight line and grasp chooser."""

    def ik(self, pos_world, R_world, q_seed, iterations: int = PROBE_ITERATIONS):
        """IK with a small iteration budget: every reachable pose the planner asks for converges
        in under 20 iterations from the seeds it uses, and an unreachable one then costs 40."""
        T_base = self.base_from_world @ transform(np.asarray(pos_world, float), R_world)
        return self.kin.solve_ik(T_base, q_seed, iterations=iterations)

    def solve(self, pos, R, seed=None) -> np.ndarray:
        pos = np.asarray(pos, float)
        q, ok, err = self.ik(pos, R, self.q if seed is None else seed)
        if not ok:  # a slow damped-least-squares run: give it the full budget
            q, ok, err = self.ik(pos, R, q, iterations=200)
        if not ok and err < SOLVE_TOL:  # a slow finish near a joint limit: close enough?
            T = self.world_from_base @ self.kin.tcp(q)
            ok = np.linalg.norm(rotation_error(T[:3, :3], R)) < 0.02
        if not ok:
            raise PlanningError(f"{self.arm} arm: no IK for {np.round(pos, 3).tolist()} "
                                f"(residual {err * 1000:.1f} mm)")
        return q

    def line(self, pos, R, ticks: int, keypoints: int = 3) -> None:
        """Straight TCP line (cosine-eased) with IK at `keypoints` evenly spaced points and the
        joints interpolated linearly between them (mm-level deviation for short lines). The
        orientation turns evenly from the current one to R along the way."""
        T0 = self.world_from_base @ self.kin.tcp(self.q)
        start, R0 = T0[:3, 3], T0[:3, :3]
        turn = -rotation_error(R0.T @ R, np.eye(3))  # rotation vector of R0^T R
        pos = np.asarray(pos, float)
        qs = [self.q.copy()]
        for k in range(1, keypoints + 1):
            Rk = R if k == keypoints else R0 @ _rodrigues(turn * k / keypoints)
            qs.append(self.solve(start + k / keypoints * (pos - start), Rk, qs[-1]))
        qs = np.array(qs)
        for s in _ease(ticks):
            x = s * keypoints
            i = min(int(x), keypoints - 1)
            f = x - i
            self._emit(qs[i] + f * (qs[i + 1] - qs[i]), self.grip)

    def above(self, point, R, q_seed, z_min: float):
        """A reachable pose straight above `point`, for approaching or leaving it: at height z_min
        (at least MIN_HOVER above the point) with rotation R, or with R tilted further (same
        closing-axis yaw) where R cannot reach that high; failing that, the highest reachable of
        HOVERS. Returns (q, R, height) or None."""
        need = max(z_min - point[2], MIN_HOVER)
        yaw = np.arctan2(R[1, 1], R[0, 1])
        tilt_now = np.degrees(np.arccos(np.clip(-R[2, 0], -1.0, 1.0)))
        rotations = [R] + [self.grasp_rotation(point, t, yaw) for t in TILTS_DEG if t > tilt_now + 1]
        for h in [need] + [h for h in HOVERS if h < need]:
            for R_h in rotations:
                q, ok, _ = self.ik(point + [0, 0, h], R_h, q_seed)
                if ok:
                    return q, R_h, h
        return None

    def grasp_pose(self, point, yaws, z_min: float) -> np.ndarray:
        """TCP rotation for a grasp at `point`: smallest tilt, then the least wrist twist, with
        a reachable approach pose above it (see `above`; left in self.approach). `yaws` are
        closing-axis yaws modulo pi (the gripper is symmetric under a half turn). With the
        approach nearly vertical the wrist twist is about wrap(radial + pi/2 - yaw), so the
        candidates are tried in that order and the first IK usually succeeds."""
        radial = np.arctan2(*(point[:2] - self.world_from_base[:2, 3])[::-1])
        neutral = radial + np.pi / 2
        candidates = sorted({wrap(y + k * np.pi) for y in yaws for k in (0, 1)},
                            key=lambda y: abs(wrap(neutral - y)))
        lo, hi = self.kin.limits[5]
        candidates = [y for y in candidates if lo + 0.2 < wrap(neutral - y) < hi - 0.2] or candidates
        # first pass: the least-twist yaw at every tilt; then the others
        for chosen in (candidates[:1], candidates[1:3]):
            for tilt in TILTS_DEG:
                for yaw in chosen:
                    R = self.grasp_rotation(point, tilt, yaw)
                    q, ok, _ = self.ik(point, R, self.q)
                    if ok and (approach := self.above(point, R, q, z_min)) is not None:
                        self.approach = approach
                        return R
        raise PlanningError(f"{self.arm} arm cannot reach {np.round(point, 3).tolist()}")

    def descend(self, point, R, step: float = LINE_STEP) -> None:
        """From the current pose straight down (or up) to `point`, arriving with rotation R;
        `step` is the mean TCP advance per tick."""
        d = float(np.linalg.norm(point - self.tcp_now()))
        self.line(point, R, ticks=int(np.clip(round(d / step), 10, 45)),
                  keypoints=3 if d < 0.11 else 4)

    def tcp_now(self) -> np.ndarray:
        return (self.world_from_base @ self.kin.tcp(self.q))[:3, 3]

    def move_joints_paced(self, q_goal, min_ticks: int = 25, v_max: float | None = None) -> None:
        """Joint-space move; with v_max (m/s) slow enough that the TCP's peak speed stays under
        it (cosine ease: peak = pi/2 x mean speed)."""
        ticks = min_ticks
        if v_max is not None:
            q0 = self.q.copy()
            pts = [(self.kin.tcp(q0 + f * (q_goal - q0)))[:3, 3] for f in np.linspace(0, 1, 9)]
            length = float(sum(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:])))
            ticks = max(min_ticks, int(np.ceil(np.pi / 2 * length / (v_max * CONTROL_PERIOD))))
        self.move_joints(q_goal, ticks)


class Clearance:
    """Heights that keep the fingers, or a held source, TRANSIT_CLEARANCE above every object
    (and bowl rim) while the arm moves between poses."""

    def __init__(self, world, scene: str):
        kinds = fixture_kinds(scene)
        self.tops = {name: (TABLE_TOP_Z + float(o.size[2]) if kinds.get(name) == "bowl"
                            else float(o.pos[2]) + half_z(o))
                     for name, o in world.objects.items()}

    def top(self, exclude=()) -> float:
        return max((z for name, z in self.tops.items() if name not in exclude), default=TABLE_TOP_Z)

    def empty(self) -> float:
        """Lowest TCP height of an empty gripper in transit."""
        return self.top() + TRANSIT_CLEARANCE + PAD_HALF_LEN

    def holding(self, grasp: "Grasp", half: float) -> float:
        """Lowest TCP height in transit while holding grasp.name (half its height)."""
        top = self.top(exclude=(grasp.name,)) + TRANSIT_CLEARANCE
        return max(top + grasp.offset + half, top + PAD_HALF_LEN)


def grip_command(obj, close_axis) -> float:
    """Gripper command that squeezes the source by SQUEEZE with neither finger at its force
    limit: the sim's two fingers are independent position servos, and with both saturated
    the held object floats along the closing axis (gravity walks it off centre)."""
    w = extent_along(obj, close_axis[:2] / max(np.linalg.norm(close_axis[:2]), 1e-9))
    return float(np.clip((w - SQUEEZE) / GRIPPER_TRAVEL, 0.0, 0.25))


class Grasp:
    """A held source: the grasp pose, and the TCP height above the source's centre."""

    def __init__(self, name: str, point: np.ndarray, R: np.ndarray, offset: float):
        self.name, self.point, self.R, self.offset = name, point, R, offset


def _up(arm: Arm, point, R, z_min: float, step: float = LINE_STEP) -> None:
    """Leave `point` straight up to z_min (or as high as the arm reaches)."""
    up = arm.above(point, R, arm.q, z_min)
    if up is None:
        raise PlanningError(f"{arm.arm} arm cannot leave {np.round(point, 3).tolist()} upwards")
    q, R_up, h = up
    arm.descend(point + [0, 0, h], R_up, step)


def pick(arm: Arm, world, scene: str, name: str, clear: Clearance) -> Grasp:
    """Approach from above (fingers clear of every object), grasp, lift until the source clears
    every other object."""
    obj = world.objects[name]
    point = np.array([obj.pos[0], obj.pos[1], grasp_tcp_z(world, scene, name)])
    R = arm.grasp_pose(point, clear_yaws(world, clear, name, point, fitting_yaws(obj)), clear.empty())
    arm.move_joints(arm.approach[0], ticks=25)
    arm.descend(point, R)
    arm.set_gripper(grip_command(obj, R[:, 1]), dwell=GRIP_DWELL)
    grasp = Grasp(name, point, R, float(point[2] - obj.pos[2]))
    _up(arm, point, R, clear.holding(grasp, half_z(obj)), step=LINE_STEP_HELD)
    return grasp


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def place_rotation(arm: Arm, grasp: Grasp, point: np.ndarray, z_min: float) -> np.ndarray:
    """TCP rotation for a placement: the grasp rotation turned about the vertical only, so the
    source lands as upright as it was picked; the turn follows the arm's radial direction, then
    the nearest turns that keep the point reachable. The approach pose above it is left in
    arm.approach."""
    base = arm.world_from_base[:2, 3]
    turn = (np.arctan2(*(point[:2] - base)[::-1])
            - np.arctan2(*(grasp.point[:2] - base)[::-1]))
    lo, hi = arm.kin.limits[5]
    for extra in (0.0, 0.4, -0.4, 0.8, -0.8):
        R = _rot_z(turn + extra) @ grasp.R
        q, ok, _ = arm.ik(point, R, arm.q)
        if ok and lo <= q[5] <= hi and (approach := arm.above(point, R, q, z_min)) is not None:
            arm.approach = approach
            return R
    # out of reach with the grasp's tilt: take any reachable tilt (the source lands tilted)
    return arm.grasp_pose(point, [np.arctan2(grasp.R[1, 1], grasp.R[0, 1])], z_min)


def place(arm: Arm, grasp: Grasp, world, centre: np.ndarray, clear: Clearance) -> None:
    """Carry the held source so its centre is at `centre`, release, and leave straight up."""
    half = half_z(world.objects[grasp.name])
    point = np.array([centre[0], centre[1], centre[2] + grasp.offset])
    R = place_rotation(arm, grasp, point, clear.holding(grasp, half))
    arm.move_joints_paced(arm.approach[0], v_max=HELD_SPEED)
    arm.descend(point, R, step=LINE_STEP_HELD)
    arm.set_gripper(contract.GRIPPER_OPEN, dwell=GRIP_DWELL)
    clear.tops[grasp.name] = float(centre[2]) + half  # where it stands now
    _up(arm, point, R, clear.empty())


def assemble(state: np.ndarray, arms: list[Arm]) -> np.ndarray:
    """[T, 14] plan: each arm's targets, padded with its last target; idle arms hold `state`."""
    T = max(len(a.targets) for a in arms)
    plan = np.tile(state, (T, 1))
    for a in arms:
        rows = np.array(a.targets)
        if len(rows) < T:
            rows = np.vstack([rows, np.tile(rows[-1], (T - len(rows), 1))])
        plan[:, arm_slice(a.arm)] = rows
    return plan


def _push(arm: Arm, world, src_name: str, tgt_name: str, clear: Clearance) -> None:
    """Close the gripper away from everything, come down behind the source (relative to the
    target's position), slide it towards the target with the closed fingers, back off."""
    src, tgt = world.objects[src_name], world.objects[tgt_name]
    d = tgt.pos[:2] - src.pos[:2]
    u = d / max(np.linalg.norm(d), 1e-9)
    contact = extent_along(src, -u) + PAD_THICKNESS
    z = float(src.pos[2]) + PUSH_TCP_ABOVE_CENTRE
    start = np.array([*(src.pos[:2] - u * (contact + PUSH_START_GAP)), z])
    end = np.array([*(src.pos[:2] - u * (contact - PUSH_DISTANCE)), z - PUSH_TCP_DESCENT])
    # closing axis along the push: the outer face of one pad meets the source flat
    R = arm.grasp_pose(start, [float(np.arctan2(u[1], u[0]))], clear.empty())
    arm.set_gripper(contract.GRIPPER_CLOSED, dwell=GRIP_DWELL)
    arm.move_joints(arm.approach[0], ticks=25)
    arm.descend(start, R)
    arm.line(end, R, ticks=35, keypoints=4)
    back = np.array([*(end[:2] - u * 0.012), end[2]])
    arm.line(back, R, ticks=6, keypoints=1)
    _up(arm, back, R, clear.empty())


def plan_scene2(task: TaskSpec, world, state: np.ndarray) -> np.ndarray:
    """Whole-episode plan [T, 14] for a Scene 2 pickup, stack, push or place_bowl."""
    arm = Arm(task.arm, state[arm_slice(task.arm)])
    home_q = arm.q.copy()
    clear = Clearance(world, task.scene)
    target = (task.target or {}).get("target_object")
    require(world, task, task.source, target)
    if task.action == "push":
        _push(arm, world, task.source, target, clear)
    else:
        grasp = pick(arm, world, task.scene, task.source, clear)
        src = world.objects[task.source]
        if task.action == "stack":
            tgt = world.objects[target]
            top = float(tgt.pos[2]) + half_z(tgt)
            place(arm, grasp, world, np.array([tgt.pos[0], tgt.pos[1], top + half_z(src) + RELEASE_GAP]),
                  clear)
        elif task.action == "place_bowl":
            bowl = world.objects[target]
            rim_z = TABLE_TOP_Z + float(bowl.size[2])
            # release with the pad tips just above the rim; the source drops onto the bowl floor
            tcp_z = rim_z + PAD_CLEARANCE + PAD_HALF_LEN
            place(arm, grasp, world, np.array([bowl.pos[0], bowl.pos[1], tcp_z - grasp.offset]), clear)
        elif task.action != "pickup":
            raise PlanningError(f"no Scene 2 plan for action {task.action!r}")
    # a picked-up source rides home in the hand
    arm.move_joints_paced(home_q, min_ticks=30, v_max=HELD_SPEED if task.action == "pickup" else None)
    return assemble(state, [arm])
