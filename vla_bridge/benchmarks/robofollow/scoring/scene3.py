"""RoboFollow Scene 3 scorer: routes and orientation (SCORING.md §5).

Every task is ``place_on_label_route``: stage 1 source select (0.3), stage 2 route (0.3),
stage 3 orientation (0.4); no finish stage and no bonus. ee is the task arm's TCP; the
candidates are every recorded object except the labels. The route pairs (red<->green,
yellow<->blue), the orientation modes and the label size come from
config/robofollow/scenes.json. Pure numpy, no rclpy.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (LIFT_THRESHOLD, ArmCloses,
                                                             EpisodeScore, StageScore,
                                                             adjust_totals, apply_gates, arm_closes,
                                                             build_episode_score, candidate_names,
                                                             dist_xy, first_after_lift_latch,
                                                             fixture_names, is_complete, lift_track,
                                                             require_objects, scene_spec,
                                                             select_source, stage_totals)

SCENE = "scene3"
ACTIONS = ("place_on_label_route",)

STAGE1 = "stage1_source_select"
STAGE2 = "stage2_route"
STAGE3 = "stage3_orientation"
WEIGHTS = {STAGE1: 0.3, STAGE2: 0.3, STAGE3: 0.4}

# §5.2 route test (all strict)
ROUTE_X_TOL = 0.01  # |src.x - correct.x| < 0.01
ROUTE_Y_CORRECT = 0.06  # |src.y - correct.y| < 0.06
ROUTE_Y_WRONG = 0.04  # |src.y - wrong.y| > 0.04
# §5.3 orientation (non-strict)
ORIENT_INTENT_DEG = 40.0
ORIENT_EXEC_DEG = 20.0

_BASE_ROUTE = re.compile(r"_(via|around)(\d+)_")


@dataclass(frozen=True)
class RouteSpec:
    mode: str  # "via" | "around" (base task)
    via: str  # the route object the base task names
    correct: str  # slab to pass over
    wrong: str  # slab not to pass over


def route_spec(task: TaskSpec) -> RouteSpec:
    """§5.2: the base task's route_mode and via; via -> (via, pair(via)), around -> (pair(via), via).

    The pairs come from scenes.json (scene3.pair_object). The task's stored route_correct /
    route_wrong and the base task name (``..._via4_...`` / ``..._around3_...``) must agree.
    """
    tgt = task.target or {}
    mode, via = tgt.get("route_mode"), tgt.get("route_reference")
    if mode not in ("via", "around") or not via:
        raise ValueError(f"task {task.id}: Scene 3 needs target.route_mode (via|around) and "
                         f"target.route_reference, got {mode!r}, {via!r}")
    pair = scene_spec(SCENE).extras["pair_object"]
    if via not in pair:
        raise ValueError(f"task {task.id}: route object {via!r} has no pair in scenes.json ({sorted(pair)})")
    correct, wrong = (via, pair[via]) if mode == "via" else (pair[via], via)
    m = _BASE_ROUTE.search(task.base_task or "")
    if m and (m.group(1) != mode or not via.endswith(f"_{m.group(2)}")):
        raise ValueError(f"task {task.id}: route {mode} {via} disagrees with base task {task.base_task}")
    for key, value in (("route_correct", correct), ("route_wrong", wrong)):
        if tgt.get(key) not in (None, value):
            raise ValueError(f"task {task.id}: target.{key} {tgt[key]!r} disagrees with the derived {value!r}")
    return RouteSpec(mode, via, correct, wrong)


def target_yaw(task: TaskSpec) -> float:
    """§5.3 target yaw psi of the base task's place mode (0 for short_front / long_right, pi/2 otherwise)."""
    tgt = task.target or {}
    modes = scene_spec(SCENE).extras["orientation_modes"]
    mode = tgt.get("place_mode")
    if mode not in modes:
        raise ValueError(f"task {task.id}: unknown place_mode {mode!r}; valid: {sorted(modes)}")
    psi = float(modes[mode]["target_yaw"])
    if tgt.get("target_yaw") is not None and not math.isclose(float(tgt["target_yaw"]), psi, abs_tol=1e-9):
        raise ValueError(f"task {task.id}: target_yaw {tgt['target_yaw']} disagrees with {mode} ({psi})")
    return psi


def label_edge(label: str) -> float:
    """§5.3 place tolerance: 2 * max(hx, hy) of the label's half sizes (0.0695 for 0.03475)."""
    fixture = scene_spec(SCENE).fixtures[label]
    hx, hy = fixture.half_extents[0], fixture.half_extents[1]
    return 2.0 * max(hx, hy)


def quat_yaw(q: np.ndarray) -> float:
    """yaw = atan2(2(wz + xy), 1 - 2(y^2 + z^2)) of a (w, x, y, z) quaternion."""
    w, x, y, z = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def wrap_angle(a: float) -> float:
    """Angle wrapped to [-pi, pi)."""
    return (a + math.pi) % (2.0 * math.pi) - math.pi


def yaw_error(yaw: float, psi: float) -> float:
    """§5.3: min over c in {psi, psi + pi, psi - pi} of |wrap(yaw - c)| (radians; the slab is symmetric under pi)."""
    return min(abs(wrap_angle(yaw - c)) for c in (psi, psi + math.pi, psi - math.pi))


@dataclass
class _Episode:
    task: TaskSpec
    n: int
    ee: np.ndarray
    pos: dict[str, np.ndarray]
    quat: np.ndarray  # source quaternions (n, 4)
    candidates: list[str]
    lift: np.ndarray
    closes: ArmCloses
    route: RouteSpec
    label: str
    psi: float


def _route_and_label(task: TaskSpec) -> tuple[RouteSpec, str]:
    """The task's route and target label; ValueError for a task this scorer cannot read."""
    if task.action not in ACTIONS:
        raise ValueError(f"task {task.id}: unsupported Scene 3 action {task.action!r} "
                         f"(supported: {', '.join(ACTIONS)})")
    route = route_spec(task)
    label = (task.target or {}).get("target_label")
    labels = fixture_names(scene_spec(SCENE), "label")
    if label not in labels:
        raise ValueError(f"task {task.id}: target_label {label!r} is not a Scene 3 label {labels}")
    return route, label


def needed_objects(task: TaskSpec) -> list[str]:
    """The objects this scorer reads: the source, both route objects and the target label."""
    return _needed(task, *_route_and_label(task))


def _needed(task: TaskSpec, route: RouteSpec, label: str) -> list[str]:
    return [task.source, route.correct, route.wrong, label]


def _prepare(task: TaskSpec, record: EpisodeRecord) -> _Episode:
    route, label = _route_and_label(task)
    require_objects(task.id, record.pos, _needed(task, route, label))
    if task.source not in record.quat:
        raise ValueError(f"task {task.id}: Scene 3 needs the source's quaternions (record.quat[{task.source!r}])")
    pos = {name: np.asarray(p, dtype=float) for name, p in record.pos.items()}
    grip = {arm: np.asarray(g, dtype=float) for arm, g in record.grip.items()}
    return _Episode(
        task=task, n=record.n, ee=np.asarray(record.tcp_pos[task.arm], dtype=float), pos=pos,
        quat=np.asarray(record.quat[task.source], dtype=float),
        candidates=candidate_names(pos, fixture_names(scene_spec(SCENE), "label")),
        lift=lift_track(pos[task.source]), closes=arm_closes(grip, task.arm), route=route,
        label=label, psi=target_yaw(task),
    )


def _score_source_select(ep: _Episode) -> tuple[StageScore, dict]:
    """§5.1 = §3.1: §2.3 at cE; exec needs the max lift over the WHOLE episode >= 0.01."""
    w = WEIGHTS[STAGE1]
    sel = select_source(ep.ee, ep.pos, ep.task.source, ep.closes.cE, candidates=ep.candidates)
    max_lift = float(ep.lift.max())
    lifted = max_lift >= LIFT_THRESHOLD
    reason = sel.reason
    if sel.ok:
        reason += (f"; lifted {max_lift:.4f} m" if lifted else
                   f"; but its max lift over the episode was {max_lift:.4f} m (needs >= {LIFT_THRESHOLD})")
    info = {"closest_at_grasp": sel.closest, "source_dxy_at_grasp": sel.source_dxy, "source_max_lift": max_lift}
    return StageScore(STAGE1, w, w if sel.ok else 0.0, w if sel.ok and lifted else 0.0, reason), info


def route_ok(src: np.ndarray, correct: np.ndarray, wrong: np.ndarray) -> bool:
    """§5.2 test on current positions."""
    dy_c, dy_w = abs(src[1] - correct[1]), abs(src[1] - wrong[1])
    return abs(src[0] - correct[0]) < ROUTE_X_TOL and dy_c < ROUTE_Y_CORRECT and dy_w > ROUTE_Y_WRONG and dy_c < dy_w


def _score_route(ep: _Episode) -> tuple[StageScore, int | None]:
    w, cE, r = WEIGHTS[STAGE2], ep.closes.cE, ep.route
    if cE is None:
        return StageScore(STAGE2, w, 0.0, 0.0, "task-arm gripper never closed"), None
    src = ep.pos[ep.task.source]
    t = first_after_lift_latch(
        ep.lift, cE + 1, lambda t: route_ok(src[t], ep.pos[r.correct][t], ep.pos[r.wrong][t]))
    desc = f"route {r.mode} {r.via}: pass over {r.correct}, not {r.wrong}"
    if t is None:
        return StageScore(STAGE2, w, 0.0, 0.0, f"{ep.task.source} never passed over {r.correct} ({desc})"), None
    return StageScore(STAGE2, w, w, w, f"{ep.task.source} over {r.correct} at frame {t} ({desc})"), t


def _score_orientation(ep: _Episode) -> tuple[StageScore, dict]:
    """§5.3 at the final frame: yaw error <= 40 / 20 deg and dxy(src, label) < label edge (strict)."""
    w = WEIGHTS[STAGE3]
    yaw = quat_yaw(ep.quat[-1])
    err_deg = math.degrees(yaw_error(yaw, ep.psi))
    edge = label_edge(ep.label)
    d = dist_xy(ep.pos[ep.task.source][-1], ep.pos[ep.label][-1])
    place_ok = d < edge
    info = {"final_yaw_deg": math.degrees(yaw), "yaw_error_deg": err_deg, "label_dxy": d,
            "label_edge": edge, "place_ok": place_ok}
    if ep.closes.cE is None:
        return StageScore(STAGE3, w, 0.0, 0.0, "task-arm gripper never closed"), info
    intent = place_ok and err_deg <= ORIENT_INTENT_DEG
    exec_ = place_ok and err_deg <= ORIENT_EXEC_DEG
    reason = (f"final yaw error {err_deg:.1f} deg (intent <= {ORIENT_INTENT_DEG:g}, exec <= {ORIENT_EXEC_DEG:g}); "
              f"{d:.4f} m from {ep.label} ({'on' if place_ok else 'off'} the label, needs < {edge:.4f})")
    return StageScore(STAGE3, w, w if intent else 0.0, w if exec_ else 0.0, reason), info


def score_scene3(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one Scene 3 episode (§5): three stages, gates, wrong-arm penalty on stage 3, CR."""
    if record.n == 0:
        raise ValueError(f"task {task.id}: empty episode record")
    ep = _prepare(task, record)
    stage1, info1 = _score_source_select(ep)
    stage2, route_t = _score_route(ep)
    stage3, info3 = _score_orientation(ep)
    stages = apply_gates([stage1, stage2, stage3])
    intent_sum, exec_sum = stage_totals(stages)
    wrong = ep.closes.wrong_arm_participated
    adj = adjust_totals(intent_sum, exec_sum, stages, None, wrong)  # no bonus; §2.7 on stage 3
    flags = {
        "cE": ep.closes.cE, "cO": ep.closes.cO, "first_close_arm": ep.closes.first_close_arm,
        "wrong_arm_participated": wrong, "stage2_intent_t": route_t,
        "route_mode": ep.route.mode, "route_via": ep.route.via, "route_correct": ep.route.correct,
        "route_wrong": ep.route.wrong, "target_label": ep.label, "target_yaw": ep.psi,
        **info1, **info3, "stage_intent_sum": intent_sum, "stage_exec_sum": exec_sum,
        "penalty_applied": {"intent": adj.penalty_intent, "exec": adj.penalty_exec},
    }
    complete = is_complete(task.action, adj.intent, adj.exec, stages)  # §7 rule 3: stage3 exec > 0
    return build_episode_score(task, stages, adj.intent, adj.exec, complete, flags)
