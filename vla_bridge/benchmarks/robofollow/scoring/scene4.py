"""RoboFollow Scene 4 scorer: logic, negation, sequences (SCORING.md §6).

Actions: ``pickup``, ``stack_on_target``, ``unstack_to_slot`` (three-stage evaluator with
support removal and wrong-arm zeroing) and ``sequence_pickups`` (its own evaluator, no gates).
ee is the TCP; the candidates are every recorded object except the bowl. Half-heights, the
nominal slot table, the table height and the bowl name come from config/robofollow/scenes.json.
No bonus and no wrong-arm -0.2 penalty; pickups get the support-lift penalty (§6.5).
Pure numpy, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (LIFT_THRESHOLD, ArmCloses,
                                                             EpisodeScore, FinishParams, StageScore,
                                                             apply_gates, arm_closes,
                                                             build_episode_score, candidate_names,
                                                             close_events, dist_xy, finish_check,
                                                             finish_stage, find_support,
                                                             first_frame, first_frame_at_least,
                                                             first_open_after, fixture_names,
                                                             is_complete, is_full, lift_track,
                                                             nearest_in_xy, other_arm,
                                                             require_objects, scene_spec,
                                                             select_source, stage_totals)

SCENE = "scene4"
ACTIONS = ("pickup", "stack_on_target", "unstack_to_slot", "sequence_pickups")

STAGE1 = "stage1_source_select"
STAGE2 = {"stack_on_target": "stage2_stack", "unstack_to_slot": "stage2_unstack_slot"}
STAGE_A = "stage1_action_a"
STAGE_B = "stage2_action_b"
STAGE3 = "stage3_finish"
WEIGHTS = {
    "pickup": {STAGE1: 0.8, STAGE3: 0.2},
    "stack_on_target": {STAGE1: 0.4, STAGE2["stack_on_target"]: 0.4, STAGE3: 0.2},
    "unstack_to_slot": {STAGE1: 0.4, STAGE2["unstack_to_slot"]: 0.4, STAGE3: 0.2},
    "sequence_pickups": {STAGE_A: 0.4, STAGE_B: 0.4, STAGE3: 0.2},
}

DEFAULT_HALF_HEIGHT = 0.025  # §1: 0.025 if the object is unknown
SUPPORT_LIFT_PENALTY = 0.3  # §6.5
# §6.3 stack
STACK_GAP = 0.002  # expected z = tgt.z + h_src + h_tgt + 0.002
STACK_INTENT_XY, STACK_INTENT_Z = 0.07, 0.06
STACK_EXEC_XY, STACK_EXEC_Z = 0.05, 0.05
# §6.3 unstack to slot
SLOT_GAP = 0.001  # expected z = table_z + h_src + 0.001
SLOT_INTENT_XY, SLOT_INTENT_Z = 0.07, 0.07
SLOT_EXEC_XY, SLOT_EXEC_Z = 0.05, 0.05
# §6.6 sequence match: nearest candidate and dxy <= 0.07 (non-strict, unlike §2.3)
SEQUENCE_MATCH_DXY = 0.07

FINISH_PARAMS = FinishParams(return_radius=0.10, leave_radius=0.14, stable_frames=20, max_return_delay=180)


# --------------------------------------------------------------------------- static facts

def bowl_names() -> tuple[str, ...]:
    return fixture_names(scene_spec(SCENE), "bowl")


def half_height(name: str) -> float:
    """§6.3 half-height from the scene config (cube 0.024, sphere 0.024, cylinder 0.025); 0.025 if unknown."""
    obj = scene_spec(SCENE).objects.get(name)
    return DEFAULT_HALF_HEIGHT if obj is None else obj.half_z


def slot_xy(slot: int | str) -> np.ndarray:
    """Nominal (unjittered) slot xy from scenes.json scene4.slots."""
    slots = scene_spec(SCENE).extras["slots"]
    key = str(int(slot))
    if key not in slots:
        raise ValueError(f"unknown Scene 4 slot {slot!r}; valid: {sorted(slots)}")
    return np.asarray(slots[key], dtype=float)


def table_z() -> float:
    return float(scene_spec(SCENE).table_z)


def is_conditional(task: TaskSpec) -> bool:
    """§6.7: base task contains "_if_" or starts with "if_", or the instruction starts with "if "."""
    base = (task.base_task or "").lower()
    return "_if_" in base or base.startswith("if_") or task.instruction.strip().lower().startswith("if ")


# --------------------------------------------------------------------------- episode signals

@dataclass
class _Episode:
    task: TaskSpec
    n: int
    ee: dict[str, np.ndarray]  # TCP per arm
    grip: dict[str, np.ndarray]
    pos: dict[str, np.ndarray]
    candidates: list[str]

    def lift(self, name: str) -> np.ndarray:
        return lift_track(self.pos[name])

    def support(self, name: str, t: int) -> str | None:
        """§6.1 the object right under `name` at frame t (among the candidates)."""
        return find_support(self.pos, name, self.candidates, t)

    def selection(self, arm: str, name: str, t: int | None):
        """§2.3 with support removal at frame t."""
        exclude = [] if t is None else [s for s in [self.support(name, t)] if s is not None]
        return select_source(self.ee[arm], self.pos, name, t, candidates=self.candidates, exclude=exclude)


def needed_objects(task: TaskSpec) -> list[str]:
    """The objects this scorer reads: the source, a stack's target object, a sequence's
    second source; ValueError for a task this scorer cannot read."""
    tgt = task.target or {}
    if task.action == "stack_on_target":
        if not tgt.get("target_object"):
            raise ValueError(f"task {task.id}: stack_on_target needs target.target_object")
        return [task.source, tgt["target_object"]]
    if task.action == "unstack_to_slot" and tgt.get("place_slot") is None:
        raise ValueError(f"task {task.id}: unstack_to_slot needs target.place_slot")
    if task.action == "sequence_pickups":
        if tgt.get("second_arm") not in ("left", "right") or not tgt.get("second_source"):
            raise ValueError(f"task {task.id}: sequence_pickups needs target.second_arm and "
                             f"target.second_source")
        return [task.source, tgt["second_source"]]
    return [task.source]


def _prepare(task: TaskSpec, record: EpisodeRecord) -> _Episode:
    require_objects(task.id, record.pos, needed_objects(task))
    pos = {name: np.asarray(p, dtype=float) for name, p in record.pos.items()}
    return _Episode(
        task=task, n=record.n,
        ee={arm: np.asarray(p, dtype=float) for arm, p in record.tcp_pos.items()},
        grip={arm: np.asarray(g, dtype=float) for arm, g in record.grip.items()},
        pos=pos, candidates=candidate_names(pos, bowl_names()),
    )


# --------------------------------------------------------------------------- three-stage evaluator

def _wrong_arm_closed(action: str, closes: ArmCloses) -> bool:
    """§6.2: pickup -> cO and cE exist and cO <= cE; stack / unstack -> cO exists at any time."""
    if action == "pickup":
        return closes.cO is not None and closes.cE is not None and closes.cO <= closes.cE
    return closes.cO is not None


def _arm_block(closes: ArmCloses, wrong_closed: bool) -> str | None:
    """Why stages 1 and 2 score 0 outright, or None."""
    if closes.cE is None:
        return "task-arm gripper never closed"
    if closes.first_close_arm != closes.task_arm:
        return f"the other arm closed first (frame {closes.cO}, task arm at {closes.cE})"
    if wrong_closed:
        return f"the other arm closed its gripper (frame {closes.cO})"
    return None


def _score_source_select(ep: _Episode, closes: ArmCloses, block: str | None,
                         weight: float) -> tuple[StageScore, dict]:
    """§6.2: §2.3 with support removal at cE; exec needs lift >= 0.01 at some t in [cE, n-1]."""
    task, cE = ep.task, closes.cE
    info: dict = {"support_at_grasp": None, "support_max_lift": None, "pickup_completion_t": None,
                  "closest_at_grasp": None, "source_dxy_at_grasp": None}
    if cE is not None:
        lift = ep.lift(task.source)
        t = first_frame_at_least(lift, LIFT_THRESHOLD, cE)
        info["pickup_completion_t"] = t if t is not None else cE
    if block is not None:
        return StageScore(STAGE1, weight, 0.0, 0.0, block), info
    support = ep.support(task.source, cE)
    if support is not None:
        info["support_at_grasp"] = support
        info["support_max_lift"] = float((ep.pos[support][cE:, 2] - ep.pos[support][0, 2]).max())
    sel = ep.selection(task.arm, task.source, cE)
    info.update(closest_at_grasp=sel.closest, source_dxy_at_grasp=sel.source_dxy)
    lift = ep.lift(task.source)
    lift_t = first_frame_at_least(lift, LIFT_THRESHOLD, cE)
    reason = sel.reason + (f" (support {support} ignored)" if support else "")
    if sel.ok:
        reason += (f"; lifted >= {LIFT_THRESHOLD} m at frame {lift_t}" if lift_t is not None else
                   f"; but not lifted >= {LIFT_THRESHOLD} m after the grasp")
    return StageScore(STAGE1, weight, weight if sel.ok else 0.0,
                      weight if sel.ok and lift_t is not None else 0.0, reason), info


def _place_stage(ep: _Episode, name: str, weight: float, cE: int, to: int | None, goal_xy, goal_z,
                 intent_tol: tuple[float, float], exec_tol: tuple[float, float],
                 what: str) -> tuple[StageScore, int | None]:
    """§6.3 shared shape: intent at the first t > cE within intent_tol; exec at both `to` and n-1 within exec_tol."""
    src = ep.pos[ep.task.source]

    def errors(t: int) -> tuple[float, float]:
        return dist_xy(src[t], goal_xy(t)), abs(float(src[t][2]) - goal_z(t))

    def within(t: int, tol: tuple[float, float]) -> bool:
        exy, ez = errors(t)
        return exy <= tol[0] and ez <= tol[1]

    intent_t = first_frame(cE + 1, ep.n, lambda t: within(t, intent_tol))
    if intent_t is None:
        exy, ez = errors(ep.n - 1)
        return StageScore(name, weight, 0.0, 0.0, f"{ep.task.source} never reached {what} "
                          f"(last frame: xy error {exy:.4f} m, z error {ez:.4f} m)"), None
    reason = f"{ep.task.source} at {what} at frame {intent_t}"
    problems = []
    if to is None:
        problems.append("gripper never reopened")
    else:
        for label, t in (("release", to), ("the last frame", ep.n - 1)):
            if not within(t, exec_tol):
                exy, ez = errors(t)
                problems.append(f"off {what} at {label} (frame {t}: xy {exy:.4f} m, z {ez:.4f} m)")
    if problems:
        return StageScore(name, weight, weight, 0.0, reason + "; exec: " + "; ".join(problems)), intent_t
    return StageScore(name, weight, weight, weight, reason + f"; released there at frame {to}"), intent_t


def _score_stage2(ep: _Episode, closes: ArmCloses, block: str | None, to: int | None,
                  weight: float) -> tuple[StageScore, int | None, dict]:
    task, cE = ep.task, closes.cE
    name = STAGE2[task.action]
    h_src = half_height(task.source)
    if task.action == "stack_on_target":
        tgt = task.target["target_object"]
        offset = h_src + half_height(tgt) + STACK_GAP
        info = {"stack_target": tgt, "expected_z_offset": offset}
        if block is not None:
            return StageScore(name, weight, 0.0, 0.0, block), None, info
        tgt_pos = ep.pos[tgt]
        stage, t = _place_stage(ep, name, weight, cE, to, lambda t: tgt_pos[t], lambda t: float(tgt_pos[t][2]) + offset,
                                (STACK_INTENT_XY, STACK_INTENT_Z), (STACK_EXEC_XY, STACK_EXEC_Z), f"the top of {tgt}")
        return stage, t, info
    slot = task.target["place_slot"]
    goal = slot_xy(slot)
    z_goal = table_z() + h_src + SLOT_GAP
    info = {"place_slot": slot, "slot_xy": goal.tolist(), "slot_z": z_goal}
    if block is not None:
        return StageScore(name, weight, 0.0, 0.0, block), None, info
    stage, t = _place_stage(ep, name, weight, cE, to, lambda t: goal, lambda t: z_goal,
                            (SLOT_INTENT_XY, SLOT_INTENT_Z), (SLOT_EXEC_XY, SLOT_EXEC_Z), f"slot {slot}")
    return stage, t, info


def _score_three_stage(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    action = task.action
    ep = _prepare(task, record)
    weights = WEIGHTS[action]
    closes = arm_closes(ep.grip, task.arm)
    wrong_closed = _wrong_arm_closed(action, closes)
    block = _arm_block(closes, wrong_closed)
    cE = closes.cE

    stage1, info = _score_source_select(ep, closes, block, weights[STAGE1])
    raw = [stage1]
    to = intent_t = None
    if action != "pickup":
        to = first_open_after(ep.grip[task.arm], cE) if cE is not None else None
        stage2, intent_t, info2 = _score_stage2(ep, closes, block, to, weights[STAGE2[action]])
        raw.append(stage2)
        info.update(info2)
    # §6.4 completion frame: to, stage2_intent_t, pickup_completion_t, cE, n-1
    tc = next(t for t in (to, intent_t, info["pickup_completion_t"], cE, ep.n - 1) if t is not None)
    finish, fin = finish_stage(ep.ee[task.arm], ep.grip[task.arm], tc, FINISH_PARAMS,
                               ep.ee[other_arm(task.arm)], weights[STAGE3], STAGE3)
    raw.append(finish)
    stages = apply_gates(raw)

    penalty = False
    if action == "pickup" and info["support_max_lift"] is not None and info["support_max_lift"] >= LIFT_THRESHOLD:
        s1 = stages[0]  # §6.5, after gating and before summing
        penalty = True
        stages[0] = StageScore(s1.name, s1.weight, s1.intent, max(0.0, s1.exec - SUPPORT_LIFT_PENALTY),
                               s1.reason + f"; support {info['support_at_grasp']} lifted "
                               f"{info['support_max_lift']:.4f} m with it (exec -{SUPPORT_LIFT_PENALTY})")
    intent, exec_ = stage_totals(stages)
    flags = {
        "cE": cE, "cO": closes.cO, "first_close_arm": closes.first_close_arm,
        "wrong_arm_closed": wrong_closed, "to": to, "stage2_intent_t": intent_t, "tc": tc,
        "home_t": fin.home_t, "finish_problems": list(fin.problems), **info,
        "support_lift_penalty": penalty,
    }
    return _finish_episode(task, stages, intent, exec_, flags)


# --------------------------------------------------------------------------- sequence evaluator

def _match(ep: _Episode, arm: str, obj: str, start: int) -> int | None:
    """§6.6 first close event of `arm` from `start` where `obj` (support removed) is nearest and dxy <= 0.07."""
    for t in close_events(ep.grip[arm], start=start):
        support = ep.support(obj, t)
        names = {c: ep.pos[c][t] for c in ep.candidates if c != support}
        if nearest_in_xy(ep.ee[arm][t], names) == obj and dist_xy(ep.ee[arm][t], ep.pos[obj][t]) <= SEQUENCE_MATCH_DXY:
            return t
    return None


def _score_sequence(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    tgt = task.target or {}
    arm_b, src_b = tgt.get("second_arm"), tgt.get("second_source")
    ep = _prepare(task, record)  # checks second_arm and second_source
    w = WEIGHTS["sequence_pickups"]
    arm_a, src_a = task.arm, task.source
    a = _match(ep, arm_a, src_a, 0)
    b_any = _match(ep, arm_b, src_b, 0)
    flags: dict = {"a": a, "b_any": b_any, "b": None, "a_completion_t": None, "b_completion_t": None,
                   "tc": None, "second_arm": arm_b, "second_source": src_b, "finish_problems": {}}

    def zero(reason: str) -> EpisodeScore:
        stages = [StageScore(name, weight, 0.0, 0.0, reason) for name, weight in w.items()]
        return _finish_episode(task, stages, 0.0, 0.0, flags)

    if a is None:
        return zero(f"{arm_a} arm never closed on {src_a}")
    if b_any is not None and b_any < a:
        return zero(f"reverse order: {arm_b} arm closed on {src_b} (frame {b_any}) before "
                    f"{arm_a} arm on {src_a} (frame {a})")
    a_done = first_frame_at_least(ep.lift(src_a), LIFT_THRESHOLD, a)
    stage_a = StageScore(STAGE_A, w[STAGE_A], w[STAGE_A], w[STAGE_A] if a_done is not None else 0.0,
                         f"{arm_a} arm closed on {src_a} at frame {a}; " +
                         (f"lifted at frame {a_done}" if a_done is not None else "never lifted"))
    a_anchor = a_done if a_done is not None else a
    b = _match(ep, arm_b, src_b, a_anchor)
    if b is None:
        stage_b = StageScore(STAGE_B, w[STAGE_B], 0.0, 0.0,
                             f"{arm_b} arm never closed on {src_b} after frame {a_anchor}")
        anchor, b_done = a_anchor, None
    else:
        b_done = first_frame_at_least(ep.lift(src_b), LIFT_THRESHOLD, b)
        stage_b = StageScore(STAGE_B, w[STAGE_B], w[STAGE_B], w[STAGE_B] if b_done is not None else 0.0,
                             f"{arm_b} arm closed on {src_b} at frame {b}; " +
                             (f"lifted at frame {b_done}" if b_done is not None else "never lifted"))
        anchor = b_done if b_done is not None else a_anchor
    problems = {}
    for arm in (arm_a, arm_b):  # §6.6: both arms, no operation-area check
        res = finish_check(ep.ee[arm], ep.grip[arm], anchor, FINISH_PARAMS, ee_other=None)
        if res.problems:
            problems[arm] = list(res.problems)
    fw = w[STAGE3]
    finish = StageScore(STAGE3, fw, 0.0 if problems else fw, 0.0 if problems else fw,
                        f"both arms home and settled after frame {anchor}" if not problems else
                        "; ".join(f"{arm}: {'; '.join(p)}" for arm, p in problems.items()))
    stages = [stage_a, stage_b, finish]  # no gates (§6.6)
    intent, exec_ = stage_totals(stages)
    flags.update(b=b, a_completion_t=a_done, b_completion_t=b_done, tc=anchor, finish_problems=problems)
    return _finish_episode(task, stages, intent, exec_, flags)


# --------------------------------------------------------------------------- episode

def _finish_episode(task: TaskSpec, stages: list[StageScore], intent: float, exec_: float,
                    flags: dict) -> EpisodeScore:
    max_total = sum(s.weight for s in stages)
    conditional = is_conditional(task)
    full = (all(s.intent_full and s.exec_full for s in stages)
            and is_full(intent, max_total) and is_full(exec_, max_total))
    flags = {**flags, "stage_intent_sum": intent, "stage_exec_sum": exec_, "conditional": conditional,
             "conditional_full_success": full if conditional else None}
    complete = is_complete(task.action, intent, exec_, stages)  # §6.8
    return build_episode_score(task, stages, intent, exec_, complete, flags)


def score_scene4(task: TaskSpec, record: EpisodeRecord) -> EpisodeScore:
    """Score one Scene 4 episode (§6)."""
    if record.n == 0:
        raise ValueError(f"task {task.id}: empty episode record")
    if task.action not in ACTIONS:
        raise ValueError(f"task {task.id}: unsupported Scene 4 action {task.action!r} "
                         f"(supported: {', '.join(ACTIONS)})")
    if task.action == "sequence_pickups":
        return _score_sequence(task, record)
    return _score_three_stage(task, record)


__all__ = ["score_scene4", "is_conditional", "half_height", "slot_xy", "ACTIONS"]
