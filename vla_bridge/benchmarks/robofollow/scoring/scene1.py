"""RoboFollow Scene 1 scorer: pickups and spatial-relation placements (SCORING.md §3).

Pure numpy, no rclpy. Input: a TaskSpec and the per-frame EpisodeRecord.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (LIFT_THRESHOLD, ArmCloses,
                                                             EpisodeScore, FinishParams, StageScore,
                                                             adjust_totals, apply_gates, arm_closes,
                                                             finish_stage, first_after_lift_latch,
                                                             first_frame_at_least, first_open_after,
                                                             full_rate_ok, is_complete, lift_track,
                                                             other_arm, require_objects,
                                                             select_source, stage_totals)

FINGERTIP_OFFSET = 0.04  # §1: proxy = TCP + R_tcp @ (0.04, 0, 0)

# §3.2 desired unit vector (source - anchor) in xy, per action; the original derives it from the action.
RELATION_UNITS: dict[str, tuple[float, float]] = {
    "place_left_of": (-1.0, 0.0),
    "place_beside": (1.0, 0.0),
    "place_behind": (0.0, 1.0),
    "place_in_front": (0.0, -1.0),
}
RELATION_WORDS = {"place_left_of": "left of", "place_beside": "right of (beside)",
                  "place_behind": "behind", "place_in_front": "in front of"}
RELATION_MAX_DIST = 0.12  # fails if d > 0.12
RELATION_MIN_DIST = 1e-6  # fails if d < 1e-6
RELATION_COS_MIN = float(np.cos(np.deg2rad(45.0)))  # cos(v, u) >= cos 45 deg
ON_TABLE_TOL = 0.02  # |dz| <= 0.02
FINAL_WINDOW = 10  # §3.5 last 10 frames

FINISH_PARAMS = FinishParams(return_radius=0.12, leave_radius=0.16, stable_frames=20, max_return_delay=180)

STAGE1 = "stage1_source_select"
STAGE2 = "stage2_relative_place"
STAGE3 = "stage3_finish"
PICKUP_WEIGHTS = {STAGE1: 0.8, STAGE3: 0.2}
PLACEMENT_WEIGHTS = {STAGE1: 0.4, STAGE2: 0.4, STAGE3: 0.2}


# --------------------------------------------------------------------------- signals

def fingertip_track(record: EpisodeRecord, arm: str) -> np.ndarray:
    """§1 Scene 1 ee: TCP pushed 4 cm along the approach axis (rotation column 0)."""
    tcp = np.asarray(record.tcp_pos[arm], dtype=float)
    rot = np.asarray(record.tcp_rot[arm], dtype=float)
    return tcp + rot[:, :, 0] * FINGERTIP_OFFSET


def on_table(dz: float) -> bool:
    """§3.2: the source is back at its initial height, |z - z0| <= 0.02."""
    return abs(float(dz)) <= ON_TABLE_TOL


def cos_similarity(v: np.ndarray, u: np.ndarray) -> float:
    nv, nu = float(np.linalg.norm(v)), float(np.linalg.norm(u))
    if nv < 1e-8 or nu < 1e-8:
        return 0.0
    return float(np.dot(v, u) / (nv * nu))


def relation_check(v: np.ndarray, u: np.ndarray) -> tuple[bool, str]:
    """§3.2 relation_ok for v = source.xy - anchor.xy and desired direction u; returns (ok, detail)."""
    v = np.asarray(v, dtype=float)[:2]
    d = float(np.linalg.norm(v))
    if d > RELATION_MAX_DIST:
        return False, f"source is {d:.4f} m from the anchor (> {RELATION_MAX_DIST} m)"
    if d < RELATION_MIN_DIST:
        return False, "source and anchor overlap in xy"
    cos = cos_similarity(v, np.asarray(u, dtype=float))
    if cos < RELATION_COS_MIN:
        return False, f"direction more than 45 deg off (cos {cos:.4f} < {RELATION_COS_MIN:.4f})"
    return True, f"d {d:.4f} m, cos {cos:.4f}"


def relation_ok(v: np.ndarray, u: np.ndarray) -> bool:
    return relation_check(v, u)[0]


def relation_unit(task: TaskSpec) -> np.ndarray:
    """Desired direction from the action (as the original does); task.relation must agree if given."""
    u = np.asarray(RELATION_UNITS[task.action], dtype=float)
    if task.relation is not None and not np.allclose(np.asarray(task.relation, dtype=float), u):
        raise ValueError(f"task {task.id}: relation {task.relation} disagrees with "
                         f"action {task.action} ({tuple(u)})")
    return u


@dataclass
class _Episode:
    """Scene 1 signals of one episode, seen from the task arm."""
    task: TaskSpec
    n: int
    ee: np.ndarray  # task-arm fingertip proxy (n, 3)
    ee_other: np.ndarray  # other-arm fingertip proxy (n, 3)
    grip: np.ndarray  # task-arm gripper (n,)
    pos: dict[str, np.ndarray]
    lift: np.ndarray  # source lift(t)
    closes: ArmCloses
    u: np.ndarray | None  # desired relation direction, placements only

    @property
    def is_placement(self) -> bool:
        return self.u is not None

    def relation_at(self, t: int) -> tuple[bool, str]:
        """relation_ok(t) from both objects' current positions."""
        v = self.pos[self.task.source][t, :2] - self.pos[self.task.anchor][t, :2]
        return relation_check(v, self.u)

    def placed_at(self, t: int) -> bool:
        return on_table(self.lift[t]) and self.relation_at(t)[0]


def needed_objects(task: TaskSpec) -> list[str]:
    """The objects this scorer reads: the source, and a placement's anchor."""
    placement = task.action in RELATION_UNITS
    if task.action != "pickup" and not placement:
        raise ValueError(f"task {task.id}: unsupported Scene 1 action {task.action!r}")
    return [task.source] + ([task.anchor] if placement else [])


def _prepare(task: TaskSpec, record: EpisodeRecord) -> _Episode:
    require_objects(task.id, record.pos, needed_objects(task))
    pos = {name: np.asarray(p, dtype=float) for name, p in record.pos.items()}
    grip = {arm: np.asarray(g, dtype=float) for arm, g in record.grip.items()}
    return _Episode(
        task=task, n=record.n,
        ee=fingertip_track(record, task.arm), ee_other=fingertip_track(record, other_arm(task.arm)),
        grip=grip[task.arm], pos=pos, lift=lift_track(pos[task.source]),
        closes=arm_closes(grip, task.arm),
        u=relation_unit(task) if task.action in RELATION_UNITS else None,
    )


# --------------------------------------------------------------------------- stages

def _wrong_arm_note(closes: ArmCloses) -> str:
    if closes.cE is None and closes.cO is None:
        return "wrong arm participated (neither gripper closed)"
    if closes.cO is not None:
        return f"wrong arm participated (other arm closed at frame {closes.cO})"
    return "wrong arm participated"


def _score_source_select(ep: _Episode, weight: float) -> tuple[StageScore, dict]:
    """§3.1: §2.3 at cE; exec also needs the source's max lift over the WHOLE episode >= 0.01 (quirk 7)."""
    sel = select_source(ep.ee, ep.pos, ep.task.source, ep.closes.cE)
    max_lift = float(ep.lift.max())
    lifted = max_lift >= LIFT_THRESHOLD
    intent = weight if sel.ok else 0.0
    exec_ = weight if sel.ok and lifted else 0.0
    reason = sel.reason
    if sel.ok:
        reason += (f"; lifted {max_lift:.4f} m" if lifted else
                   f"; but its max lift over the episode was {max_lift:.4f} m (needs >= {LIFT_THRESHOLD})")
    if ep.closes.wrong_arm_participated:
        reason += "; " + _wrong_arm_note(ep.closes)
    info = {"closest_at_grasp": sel.closest, "source_dxy_at_grasp": sel.source_dxy,
            "source_max_lift": max_lift}
    return StageScore(STAGE1, weight, intent, exec_, reason), info


def _exec_problems_at_open(ep: _Episode, tc: int, to: int | None) -> list[str]:
    """§3.2 exec: lift in [tc, to], on_table(to) and relation_ok(to); the relation is judged at release."""
    if to is None:
        return ["task-arm gripper never reopened after the grasp"]
    problems = []
    if first_frame_at_least(ep.lift[: to + 1], LIFT_THRESHOLD, tc) is None:
        problems.append(f"source not lifted >= {LIFT_THRESHOLD} m between grasp (frame {tc}) "
                        f"and release (frame {to})")
    if not on_table(ep.lift[to]):
        problems.append(f"source not on the table at release (frame {to}, dz {ep.lift[to]:+.4f} m)")
    rel_ok, detail = ep.relation_at(to)
    if not rel_ok:
        problems.append(f"relation failed at release (frame {to}): {detail}")
    return problems


def _score_relative_place(ep: _Episode, to: int | None, weight: float) -> tuple[StageScore, int | None]:
    """§3.2: intent = first on-table + relation frame after the lift latch; exec judged at the open frame."""
    task, tc = ep.task, ep.closes.cE
    if tc is None:
        return StageScore(STAGE2, weight, 0.0, 0.0, "task-arm gripper never closed"), None
    relation = f"{RELATION_WORDS[task.action]} {task.anchor}"
    intent_t = first_after_lift_latch(ep.lift, tc + 1, ep.placed_at)
    if intent_t is None:
        if first_frame_at_least(ep.lift, LIFT_THRESHOLD, tc + 1) is None:
            reason = f"{task.source} never lifted >= {LIFT_THRESHOLD} m after the grasp (frame {tc})"
        else:
            final_ok, detail = ep.relation_at(ep.n - 1)
            reason = (f"after lifting, {task.source} was never on the table {relation} "
                      f"(last frame: {'relation ok' if final_ok else detail}, dz {ep.lift[-1]:+.4f} m)")
        return StageScore(STAGE2, weight, 0.0, 0.0, reason), None
    reason = f"{task.source} on the table {relation} at frame {intent_t}"
    problems = _exec_problems_at_open(ep, tc, to)
    if problems:
        return StageScore(STAGE2, weight, weight, 0.0, reason + "; exec: " + "; ".join(problems)), intent_t
    reason += f"; released in relation at frame {to}"
    return StageScore(STAGE2, weight, weight, weight, reason), intent_t


def _completion_frame(ep: _Episode, to: int | None, intent_t: int | None) -> int:
    """§3.3: to, else stage2_intent_t (placements); else first lift >= 0.01 from cE (or 0); else n-1."""
    if ep.is_placement and to is not None:
        return to
    if ep.is_placement and intent_t is not None:
        return intent_t
    start = ep.closes.cE if ep.closes.cE is not None else 0
    t = first_frame_at_least(ep.lift, LIFT_THRESHOLD, start)
    return t if t is not None else ep.n - 1


def _final_target(ep: _Episode) -> tuple[bool, str]:
    """§3.5 final_target_ok: relation_ok and on_table on every one of the last 10 frames (n >= 10)."""
    if ep.n < FINAL_WINDOW:
        return False, f"episode has {ep.n} frames (< {FINAL_WINDOW}) for the final-layout check"
    for t in range(ep.n - FINAL_WINDOW, ep.n):
        rel_ok, detail = ep.relation_at(t)
        if not rel_ok:
            return False, f"final layout fails at frame {t}: {detail}"
        if not on_table(ep.lift[t]):
            return False, f"final layout fails at frame {t}: source not on the table (dz {ep.lift[t]:+.4f} m)"
    return True, f"relation and on-table hold over the last {FINAL_WINDOW} frames"


# --------------------------------------------------------------------------- episode

def score_scene1(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one Scene 1 episode (§3): stages, gates, bonus, wrong-arm penalty, CR."""
    if record.n == 0:
        raise ValueError(f"task {task.id}: empty episode record")
    ep = _prepare(task, record)
    weights = PLACEMENT_WEIGHTS if ep.is_placement else PICKUP_WEIGHTS
    stage1, info = _score_source_select(ep, weights[STAGE1])
    raw = [stage1]
    to = intent_t = None
    if ep.is_placement:
        to = first_open_after(ep.grip, ep.closes.cE) if ep.closes.cE is not None else None
        stage2, intent_t = _score_relative_place(ep, to, weights[STAGE2])
        raw.append(stage2)
    tc = _completion_frame(ep, to, intent_t)
    finish, fin = finish_stage(ep.ee, ep.grip, tc, FINISH_PARAMS, ep.ee_other, weights[STAGE3], STAGE3)
    raw.append(finish)

    stages = apply_gates(raw)  # §2.5
    intent_sum, exec_sum = stage_totals(stages)
    final_ok, final_reason = _final_target(ep) if ep.is_placement else (None, "n/a (pickup)")
    wrong = ep.closes.wrong_arm_participated
    adj = adjust_totals(intent_sum, exec_sum, stages, final_ok, wrong)  # §3.5 bonus, then §2.7 penalty
    max_total = sum(weights.values())
    flags = {
        "cE": ep.closes.cE, "cO": ep.closes.cO, "first_close_arm": ep.closes.first_close_arm,
        "wrong_arm_participated": wrong, "to": to, "stage2_intent_t": intent_t, "tc": tc,
        "home_t": fin.home_t, "finish_problems": list(fin.problems), **info,
        "final_target_ok": final_ok, "final_target_reason": final_reason,
        "stage_intent_sum": intent_sum, "stage_exec_sum": exec_sum,
        "bonus_applied": {"intent": adj.bonus_intent, "exec": adj.bonus_exec},
        "penalty_applied": {"intent": adj.penalty_intent, "exec": adj.penalty_exec},
    }
    return EpisodeScore(
        task_id=task.id, scene=task.scene, level=task.level, action=task.action, arm=task.arm,
        stages=stages, intent_score=adj.intent, exec_score=adj.exec,
        intent_ok=full_rate_ok(adj.intent, max_total), exec_ok=full_rate_ok(adj.exec, max_total),
        complete=is_complete(task.action, adj.intent, adj.exec, stages, final_target_ok=final_ok),
        flags=flags, max_total=max_total,
    )
