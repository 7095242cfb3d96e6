"""RoboFollow Scene 2 scorer: attributes and actions (SCORING.md §4).

Actions: ``pickup``, ``stack``, ``push`` and ``place_bowl``. ee is the task arm's TCP; the
candidates for the nearest-object test are every recorded object except the scene's bowls
(bowl names come from config/robofollow/scenes.json). Pure numpy, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (LIFT_THRESHOLD, ArmCloses,
                                                             EpisodeScore, FinishParams, StageScore,
                                                             adjust_totals, apply_gates, arm_closes,
                                                             build_episode_score, candidate_names,
                                                             dist_xy, finish_stage,
                                                             first_after_lift_latch, first_frame,
                                                             first_open_after, fixture_names,
                                                             is_complete, lift_completion_frame,
                                                             lift_track, nearest_in_xy, other_arm,
                                                             replaced,
                                                             require_objects, scene_spec,
                                                             select_source, stage_totals)

SCENE = "scene2"
ACTIONS = ("pickup", "stack", "push", "place_bowl")

STAGE1 = "stage1_source_select"
STAGE1_PUSH = "stage1_push_setup"
STAGE2 = {"stack": "stage2_stack", "push": "stage2_push", "place_bowl": "stage2_place_bowl"}
STAGE3 = "stage3_finish"

CLOSE_THRESHOLD = 0.35  # §2.1 default
PUSH_CLOSE_THRESHOLD = 0.25  # §4.2: both arms, first_close and the wrong-arm logic
PICKUP_EXEC_LIFT = 0.03  # §4.1: pickup exec needs max lift >= 0.03 (stack / place_bowl: 0.01)

# §4.2 push setup
PUSH_MAX_LIFT = 0.02  # lift+ <= 0.02: still on the table
PUSH_MIN_MOVE = 0.005  # |src.xy(t) - s_ref| >= 0.005
TCP_Z_OFFSET = 0.12  # the near-table test subtracts a further 0.12 m from ee.z (quirk 1)
NEAR_TABLE_TOL = 0.12  # |(ee.z - 0.12) - z0(src)| <= 0.12
PUSH_INTENT_DXY = 0.07  # strict
PUSH_EXEC_DXY = 0.08  # strict
# §4.4 push
PUSH_COS_MIN = float(np.cos(np.deg2rad(45.0)))
PUSH_MIN_DELTA = 1e-6
PUSH_MIN_DIRECTION = 1e-8
PUSH_INTENT_PROJ = 0.01
PUSH_EXEC_PROJ = 0.02
PUSH_BONUS_PROJ = 0.005  # §4.6
# §4.3 stack
STACK_ABOVE = 0.005  # src.z - tgt.z > 0.005 (strict)
STACK_EE_DXY = 0.07  # dxy(ee, src) <= 0.07
STACK_XY = 0.03  # stacked: dxy(src, tgt) <= 0.03
DROP_MARGIN = 0.002  # dropped: src.z <= tgt.z + 0.002
# §4.5 place_bowl
BOWL_XY = 0.04  # dxy(src, bowl) <= 0.04
BOWL_Z_ABOVE = 0.06  # src.z <= bowl.z + 0.06
BOWL_MAX_LIFT = 0.06  # intent frame: lift < 0.06 (strict)

FINISH_PARAMS = FinishParams(return_radius=0.10, leave_radius=0.14, stable_frames=20, max_return_delay=180)
BONUS_CAP = 1.0  # §4.6: both totals capped at 1.0 after the bonus

WEIGHTS = {
    "pickup": {STAGE1: 0.8, STAGE3: 0.2},
    "stack": {STAGE1: 0.4, STAGE2["stack"]: 0.4, STAGE3: 0.2},
    "push": {STAGE1_PUSH: 0.4, STAGE2["push"]: 0.4, STAGE3: 0.2},
    "place_bowl": {STAGE1: 0.4, STAGE2["place_bowl"]: 0.4, STAGE3: 0.2},
}


def bowl_names() -> tuple[str, ...]:
    """Scene 2 bowls (static set, §1), from the project's scene config."""
    return fixture_names(scene_spec(SCENE), "bowl")


@dataclass
class _Episode:
    task: TaskSpec
    n: int
    ee: np.ndarray  # task-arm TCP (n, 3)
    ee_other: np.ndarray
    grip: np.ndarray  # task-arm gripper (n,)
    pos: dict[str, np.ndarray]
    candidates: list[str]  # every object but the bowls
    bowls: tuple[str, ...]
    lift: np.ndarray  # source lift
    closes: ArmCloses
    target: str | None  # stack / push target object, or the target bowl

    def src(self, t: int) -> np.ndarray:
        return self.pos[self.task.source][t]

    def tgt(self, t: int) -> np.ndarray:
        return self.pos[self.target][t]

    # §4.3
    def stacked(self, t: int) -> bool:
        return (dist_xy(self.src(t), self.tgt(t)) <= STACK_XY
                and self.src(t)[2] - self.tgt(t)[2] > STACK_ABOVE)

    # §4.5
    def in_bowl(self, t: int) -> bool:
        return (dist_xy(self.src(t), self.tgt(t)) <= BOWL_XY
                and self.src(t)[2] <= self.tgt(t)[2] + BOWL_Z_ABOVE)

    def nearest_ok(self, t: int) -> bool:
        """The target bowl is the nearer bowl to the source in xy (a tie goes to the first bowl in config order)."""
        return nearest_in_xy(self.src(t), {b: self.pos[b][t] for b in self.bowls}) == self.target

    # §4.4
    def push_direction(self) -> np.ndarray | None:
        d = self.tgt(0)[:2] - self.src(0)[:2]
        norm = float(np.linalg.norm(d))
        return None if norm < PUSH_MIN_DIRECTION else d / norm


def _target_and_bowls(task: TaskSpec) -> tuple[str | None, tuple[str, ...]]:
    """The task's target object (None for a pickup) and the scene's bowls (a probe's LIBERO
    bowl in its Scene 2 bowl's place); ValueError for a task this scorer cannot read."""
    if task.action not in ACTIONS:
        raise ValueError(f"task {task.id}: unsupported Scene 2 action {task.action!r} "
                         f"(supported: {', '.join(ACTIONS)})")
    target = None
    if task.action != "pickup":
        target = (task.target or {}).get("target_object")
        if not target:
            raise ValueError(f"task {task.id}: Scene 2 {task.action} needs target.target_object")
    bowls = replaced(task, bowl_names())  # a probe's LIBERO bowl counts as a bowl
    if task.action == "place_bowl" and target not in bowls:
        raise ValueError(f"task {task.id}: place_bowl target {target!r} is not a Scene 2 bowl {bowls}")
    return target, bowls


def needed_objects(task: TaskSpec) -> list[str]:
    """The objects this scorer reads: the source, the target, and every bowl for place_bowl
    (the nearest bowl decides where the source went)."""
    return _needed(task, *_target_and_bowls(task))


def _needed(task: TaskSpec, target: str | None, bowls: tuple[str, ...]) -> list[str]:
    needed = [task.source] + ([target] if target else [])
    return list(dict.fromkeys(needed + (list(bowls) if task.action == "place_bowl" else [])))


def _prepare(task: TaskSpec, record: EpisodeRecord) -> _Episode:
    target, bowls = _target_and_bowls(task)
    require_objects(task.id, record.pos, _needed(task, target, bowls))
    pos = {name: np.asarray(p, dtype=float) for name, p in record.pos.items()}
    grip = {arm: np.asarray(g, dtype=float) for arm, g in record.grip.items()}
    thr = PUSH_CLOSE_THRESHOLD if task.action == "push" else CLOSE_THRESHOLD
    return _Episode(
        task=task, n=record.n,
        ee=np.asarray(record.tcp_pos[task.arm], dtype=float),
        ee_other=np.asarray(record.tcp_pos[other_arm(task.arm)], dtype=float),
        grip=grip[task.arm], pos=pos, candidates=candidate_names(pos, bowls), bowls=bowls,
        lift=lift_track(pos[task.source]), closes=arm_closes(grip, task.arm, thr), target=target,
    )


# --------------------------------------------------------------------------- stage 1

def _score_source_select(ep: _Episode, weight: float) -> tuple[StageScore, dict]:
    """§4.1: §2.3 at cE; exec needs the max lift over the whole episode >= 0.03 (pickup) or 0.01."""
    sel = select_source(ep.ee, ep.pos, ep.task.source, ep.closes.cE, candidates=ep.candidates)
    lift_thr = PICKUP_EXEC_LIFT if ep.task.action == "pickup" else LIFT_THRESHOLD
    max_lift = float(ep.lift.max())
    lifted = max_lift >= lift_thr
    reason = sel.reason
    if sel.ok:
        reason += (f"; lifted {max_lift:.4f} m" if lifted else
                   f"; but its max lift over the episode was {max_lift:.4f} m (needs >= {lift_thr})")
    info = {"closest_at_grasp": sel.closest, "source_dxy_at_grasp": sel.source_dxy,
            "source_max_lift": max_lift}
    return StageScore(STAGE1, weight, weight if sel.ok else 0.0,
                      weight if sel.ok and lifted else 0.0, reason), info


def _score_push_setup(ep: _Episode, weight: float) -> tuple[StageScore, dict]:
    """§4.2: qualifying frames after cE (source still on the table, moved >= 5 mm from its xy at cE)."""
    src, cE = ep.task.source, ep.closes.cE
    info: dict = {"push_near_table": None, "push_setup_intent_t": None, "push_setup_exec_t": None}
    if cE is None:
        return StageScore(STAGE1_PUSH, weight, 0.0, 0.0,
                          f"task-arm gripper never closed (threshold {PUSH_CLOSE_THRESHOLD})"), info
    s_ref = ep.src(cE)[:2]
    z0 = ep.pos[src][0, 2]
    near_table: bool | None = None
    intent_t = exec_t = None
    qualifying = 0
    for t in range(cE + 1, ep.n):
        if not (max(0.0, ep.lift[t]) <= PUSH_MAX_LIFT
                and np.linalg.norm(ep.src(t)[:2] - s_ref) >= PUSH_MIN_MOVE):
            continue
        qualifying += 1
        if near_table is None:  # frozen at the first qualifying frame
            near_table = bool(abs((ep.ee[t, 2] - TCP_Z_OFFSET) - z0) <= NEAR_TABLE_TOL)
        closest = nearest_in_xy(ep.ee[t], {c: ep.pos[c][t] for c in ep.candidates})
        d = dist_xy(ep.ee[t], ep.src(t))
        if closest == src and d < PUSH_INTENT_DXY and intent_t is None:
            intent_t = t
        if near_table and closest == src and d < PUSH_EXEC_DXY and exec_t is None:
            exec_t = t
        if intent_t is not None and (exec_t is not None or not near_table):
            break
    info.update(push_near_table=near_table, push_setup_intent_t=intent_t, push_setup_exec_t=exec_t)
    if qualifying == 0:
        reason = (f"{src} never slid >= {PUSH_MIN_MOVE} m on the table after the close at frame {cE}")
    else:
        parts = [f"intent at frame {intent_t}" if intent_t is not None else
                 f"the ee was never the nearest within {PUSH_INTENT_DXY} m of {src} while it slid",
                 f"exec at frame {exec_t}" if exec_t is not None else
                 ("exec failed: ee not near the table at the first slide" if near_table is False else
                  f"exec failed: ee never nearest within {PUSH_EXEC_DXY} m while {src} slid")]
        reason = f"closed at frame {cE}; " + "; ".join(parts)
    return StageScore(STAGE1_PUSH, weight, weight if intent_t is not None else 0.0,
                      weight if exec_t is not None else 0.0, reason), info


# --------------------------------------------------------------------------- stage 2

def _score_stack(ep: _Episode, to: int | None, weight: float) -> tuple[StageScore, int | None]:
    """§4.3: intent = source above the target's centre with the ee at it (after the lift latch); exec at release."""
    name, cE, src, tgt = STAGE2["stack"], ep.closes.cE, ep.task.source, ep.target
    if cE is None:
        return StageScore(name, weight, 0.0, 0.0, "task-arm gripper never closed"), None

    def above(t: int) -> bool:
        return ep.src(t)[2] > ep.tgt(t)[2] + STACK_ABOVE and dist_xy(ep.ee[t], ep.src(t)) <= STACK_EE_DXY

    intent_t = first_after_lift_latch(ep.lift, cE + 1, above)
    if intent_t is None:
        return StageScore(name, weight, 0.0, 0.0,
                          f"{src} was never lifted above {tgt}'s centre with the ee at it"), None
    reason = f"{src} above {tgt} at frame {intent_t}"
    problems = []
    if to is None:
        problems.append("gripper never reopened")
    else:
        if not ep.stacked(to):
            problems.append(f"not stacked at release (frame {to}, dxy {dist_xy(ep.src(to), ep.tgt(to)):.4f} m)")
        if not ep.stacked(ep.n - 1):
            problems.append(f"not stacked at the last frame (dxy {dist_xy(ep.src(-1), ep.tgt(-1)):.4f} m, "
                            f"dz {ep.src(-1)[2] - ep.tgt(-1)[2]:+.4f} m)")
        dropped = first_frame(to, ep.n, lambda t: ep.src(t)[2] <= ep.tgt(t)[2] + DROP_MARGIN)
        if dropped is not None:
            problems.append(f"dropped at frame {dropped}")
    if problems:
        return StageScore(name, weight, weight, 0.0, reason + "; exec: " + "; ".join(problems)), intent_t
    reason += f"; stacked from release (frame {to}) to the end"
    return StageScore(name, weight, weight, weight, reason), intent_t


def _push_projections(ep: _Episode, u: np.ndarray, start: int, s_ref: np.ndarray) -> tuple[float, int | None]:
    """§4.4: best Δ·û over counted frames (direction within 45 deg, ee behind the source)."""
    best, best_t = 0.0, None
    for t in range(start, ep.n):
        delta = ep.src(t)[:2] - s_ref
        nd = float(np.linalg.norm(delta))
        if nd < PUSH_MIN_DELTA or float(np.dot(delta, u)) / nd < PUSH_COS_MIN:
            continue
        if float(np.dot(ep.ee[t, :2] - ep.src(t)[:2], u)) > 0.0:  # backside test: b <= 0 counts
            continue
        proj = float(np.dot(delta, u))
        if proj > best:
            best, best_t = proj, t
    return best, best_t


def _score_push(ep: _Episode, weight: float) -> tuple[StageScore, int | None, float]:
    """§4.4: intent if the best counted projection >= 0.01, exec if >= 0.02."""
    name, cE = STAGE2["push"], ep.closes.cE
    u = ep.push_direction()
    if u is None:
        return StageScore(name, weight, 0.0, 0.0, "source and target start at the same xy"), None, 0.0
    if cE is None:
        return StageScore(name, weight, 0.0, 0.0, "task-arm gripper never closed"), None, 0.0
    best, best_t = _push_projections(ep, u, cE + 1, ep.src(cE)[:2])
    intent = best >= PUSH_INTENT_PROJ
    exec_ = best >= PUSH_EXEC_PROJ
    reason = (f"pushed {best:.4f} m towards {ep.target} from behind (best at frame {best_t}; "
              f"intent needs >= {PUSH_INTENT_PROJ}, exec >= {PUSH_EXEC_PROJ})")
    return (StageScore(name, weight, weight if intent else 0.0, weight if exec_ else 0.0, reason),
            best_t if intent else None, best)


def _score_place_bowl(ep: _Episode, to: int | None, weight: float) -> tuple[StageScore, int | None]:
    """§4.5: intent = first frame after cE with lift < 0.06, the target bowl nearest and the source in it;
    exec = in the bowl at release and at the last frame."""
    name, cE, src, bowl = STAGE2["place_bowl"], ep.closes.cE, ep.task.source, ep.target
    if cE is None:
        return StageScore(name, weight, 0.0, 0.0, "task-arm gripper never closed"), None
    intent_t = first_frame(cE + 1, ep.n, lambda t: ep.lift[t] < BOWL_MAX_LIFT and ep.nearest_ok(t)
                           and ep.in_bowl(t))
    if intent_t is None:
        return StageScore(name, weight, 0.0, 0.0, f"{src} was never in {bowl} after the grasp"), None
    reason = f"{src} in {bowl} at frame {intent_t}"
    problems = []
    if to is None:
        problems.append("gripper never reopened")
    else:
        if not ep.in_bowl(to):
            problems.append(f"not in the bowl at release (frame {to})")
        if not ep.in_bowl(ep.n - 1):
            problems.append("not in the bowl at the last frame")
    if problems:
        return StageScore(name, weight, weight, 0.0, reason + "; exec: " + "; ".join(problems)), intent_t
    reason += f"; released in it at frame {to}, still in at the end"
    return StageScore(name, weight, weight, weight, reason), intent_t


# --------------------------------------------------------------------------- bonus

def _retry_bonus(ep: _Episode) -> tuple[bool, str]:
    """§4.6 retry_bonus.final_target_ok."""
    action, n = ep.task.action, ep.n
    if action == "pickup":
        return False, "n/a (pickup)"
    if action == "push":
        u = ep.push_direction()
        if u is None:
            return False, "source and target start at the same xy"
        proj = (ep.pos[ep.task.source][:, :2] - ep.src(0)[:2]) @ u
        best = float(proj.max())
        return best >= PUSH_BONUS_PROJ, f"max drift towards the target {best:.4f} m (needs >= {PUSH_BONUS_PROJ})"
    if action == "stack":
        ok = ep.stacked(n - 1)
        return ok, f"final frame {'stacked' if ok else 'not stacked'}"
    ok_in, ok_near = ep.in_bowl(n - 1), ep.nearest_ok(n - 1)
    return ok_in and ok_near, f"final frame: in bowl {ok_in}, target bowl nearest {ok_near}"


# --------------------------------------------------------------------------- episode

def score_scene2(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one Scene 2 episode (§4): stages, gates, retry bonus (cap 1.0), wrong-arm penalty, CR."""
    if record.n == 0:
        raise ValueError(f"task {task.id}: empty episode record")
    ep = _prepare(task, record)
    action, cE = task.action, ep.closes.cE
    weights = WEIGHTS[action]
    flags: dict = {}
    to = intent_t = None
    if action == "push":
        stage1, info = _score_push_setup(ep, weights[STAGE1_PUSH])
        stage2, intent_t, best = _score_push(ep, weights[STAGE2["push"]])
        raw = [stage1, stage2]
        flags["push_best_projection"] = best
        tc = intent_t if intent_t is not None else (cE if cE is not None else lift_completion_frame(ep.lift, cE))
    else:
        stage1, info = _score_source_select(ep, weights[STAGE1])
        raw = [stage1]
        if action in ("stack", "place_bowl"):
            to = first_open_after(ep.grip, cE) if cE is not None else None
            scorer = _score_stack if action == "stack" else _score_place_bowl
            stage2, intent_t = scorer(ep, to, weights[STAGE2[action]])
            raw.append(stage2)
            tc = to if to is not None else (intent_t if intent_t is not None
                                            else lift_completion_frame(ep.lift, cE))
        else:
            tc = lift_completion_frame(ep.lift, cE)
    finish, fin = finish_stage(ep.ee, ep.grip, tc, FINISH_PARAMS, ep.ee_other, weights[STAGE3], STAGE3)
    raw.append(finish)

    stages = apply_gates(raw)  # §2.5
    intent_sum, exec_sum = stage_totals(stages)
    bonus_ok, bonus_reason = _retry_bonus(ep)
    wrong = ep.closes.wrong_arm_participated
    adj = adjust_totals(intent_sum, exec_sum, stages, bonus_ok, wrong, bonus_cap=BONUS_CAP)  # §4.6, §2.7
    flags.update({
        "cE": cE, "cO": ep.closes.cO, "first_close_arm": ep.closes.first_close_arm,
        "close_threshold": PUSH_CLOSE_THRESHOLD if action == "push" else CLOSE_THRESHOLD,
        "wrong_arm_participated": wrong, "to": to, "stage2_intent_t": intent_t, "tc": tc,
        "home_t": fin.home_t, "finish_problems": list(fin.problems), **info,
        "retry_final_target_ok": bonus_ok, "retry_final_target_reason": bonus_reason,
        "stage_intent_sum": intent_sum, "stage_exec_sum": exec_sum,
        "bonus_applied": {"intent": adj.bonus_intent, "exec": adj.bonus_exec},
        "penalty_applied": {"intent": adj.penalty_intent, "exec": adj.penalty_exec},
    })
    complete = is_complete(action, adj.intent, adj.exec, stages, retry_final_target_ok=bonus_ok)
    return build_episode_score(task, stages, adj.intent, adj.exec, complete, flags)
