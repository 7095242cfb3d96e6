"""Shared building blocks of the RoboFollow scorer (SCORING.md sections 2, 7 and 8).

Pure numpy, no rclpy. Every threshold is compared exactly as SCORING.md writes it
(strict vs non-strict, quirk 8); "full" stage credit uses a 1e-6 tolerance.
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from vla_bridge.benchmarks.result_rows import counted

ARMS = ("left", "right")

CLOSE_THRESHOLD = 0.35  # §2.1 first_close / re-close
OPEN_THRESHOLD = 0.70  # §2.1 first_open_after
FULL_TOL = 1e-6  # §2.5 "full" means >= weight - 1e-6
FULL_RATE_FRACTION = 0.99  # §2.6 intent_ok / exec_ok
SELECT_MAX_DXY = 0.07  # §2.3 strict: dxy(ee, source) < 0.07
LIFT_THRESHOLD = 0.01  # lift(o, t) >= 0.01 counts as lifted
FINAL_LAYOUT_BONUS = 0.3  # §3.5 / §4.6
BONUS_BELOW = 0.5  # the bonus is added only to a total < 0.5
WRONG_ARM_PENALTY = 0.2  # §2.7
PICKUP_COMPLETE_MIN = 0.8  # §7 rule 1

# §2.4 check 1: operation box (x, y, z) ranges, bounds inclusive.
OPERATION_BOX: tuple[tuple[float, float], ...] = ((-0.20, 0.15), (-0.15, 0.15), (0.74, 1.00))


# --------------------------------------------------------------------------- results

@dataclass
class StageScore:
    """One stage's binary credits: intent and exec are each 0 or `weight`."""
    name: str
    weight: float
    intent: float
    exec: float
    reason: str

    @property
    def intent_full(self) -> bool:
        return is_full(self.intent, self.weight)

    @property
    def exec_full(self) -> bool:
        return is_full(self.exec, self.weight)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "weight": float(self.weight), "intent": float(self.intent),
                "exec": float(self.exec), "reason": self.reason}


@dataclass
class EpisodeScore:
    """Final scores of one episode; `flags` holds the frames and switches that decided them."""
    task_id: str
    scene: str
    level: str
    action: str
    arm: str
    stages: list[StageScore]
    intent_score: float
    exec_score: float
    intent_ok: bool
    exec_ok: bool
    complete: bool
    flags: dict[str, Any] = field(default_factory=dict)
    max_total: float = field(default=1.0, kw_only=True)

    def stage(self, name: str) -> StageScore:
        for s in self.stages:
            if s.name == name:
                return s
        raise KeyError(f"no stage {name!r} in {[s.name for s in self.stages]}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id, "scene": self.scene, "level": self.level,
            "action": self.action, "arm": self.arm,
            "stages": [s.to_dict() for s in self.stages],
            "intent_score": float(self.intent_score), "exec_score": float(self.exec_score),
            "max_total": float(self.max_total),
            "intent_ok": bool(self.intent_ok), "exec_ok": bool(self.exec_ok),
            "complete": bool(self.complete), "flags": to_jsonable(self.flags),
        }


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays and tuples nested in dicts/lists to plain JSON types."""
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def is_full(score: float, weight: float) -> bool:
    """§2.5: full credit means score >= weight - 1e-6."""
    return score >= weight - FULL_TOL


# --------------------------------------------------------------------------- arms

def other_arm(arm: str) -> str:
    if arm not in ARMS:
        raise ValueError(f"arm must be one of {ARMS}, got {arm!r}")
    return "right" if arm == "left" else "left"


# --------------------------------------------------------------------------- §2.1 gripper events

def _closing_edge(g: np.ndarray, t: int, thr: float) -> bool:
    return bool(g[t - 1] > thr and g[t] <= thr)


def first_close(g: Sequence[float] | np.ndarray, thr: float = CLOSE_THRESHOLD) -> int | None:
    """First closing edge (g[t-1] > thr >= g[t], t >= 1); else the first closed frame; else None."""
    g = np.asarray(g, dtype=float)
    for t in range(1, len(g)):
        if _closing_edge(g, t, thr):
            return t
    closed = np.flatnonzero(g <= thr)
    return int(closed[0]) if closed.size else None


def first_open_after(g: Sequence[float] | np.ndarray, tc: int | None,
                     thr: float = OPEN_THRESHOLD) -> int | None:
    """First opening edge at t >= s = clamp(tc+1, 1, n-1); else the first open frame >= s."""
    g = np.asarray(g, dtype=float)
    n = len(g)
    if tc is None or n == 0:
        return None
    s = max(1, min(tc + 1, n - 1))
    for t in range(s, n):
        if g[t - 1] < thr and g[t] >= thr:
            return t
    for t in range(s, n):
        if g[t] >= thr:
            return t
    return None


def close_events(g: Sequence[float] | np.ndarray, thr: float = CLOSE_THRESHOLD,
                 start: int = 0) -> list[int]:
    """Every closing edge at t in [max(1, start), n-1]; t = 0 goes first if start == 0 and g[0] <= thr."""
    g = np.asarray(g, dtype=float)
    events = [t for t in range(max(1, start), len(g)) if _closing_edge(g, t, thr)]
    if start == 0 and len(g) and g[0] <= thr:
        events.insert(0, 0)
    return events


@dataclass(frozen=True)
class ArmCloses:
    """§2.2: first closes of the task arm (cE) and the other arm (cO)."""
    task_arm: str
    cE: int | None
    cO: int | None

    @property
    def first_close_arm(self) -> str | None:
        if self.cE is None and self.cO is None:
            return None
        if self.cO is None or (self.cE is not None and self.cE <= self.cO):
            return self.task_arm
        return other_arm(self.task_arm)

    @property
    def wrong_arm_participated(self) -> bool:
        # Scenes 1-3: also true when neither gripper closes (quirk 6).
        return self.cO is not None or self.first_close_arm != self.task_arm


def arm_closes(grip: Mapping[str, np.ndarray], arm: str, thr: float = CLOSE_THRESHOLD) -> ArmCloses:
    return ArmCloses(arm, first_close(grip[arm], thr), first_close(grip[other_arm(arm)], thr))


# --------------------------------------------------------------------------- geometry helpers

def dist_xy(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(np.asarray(a, dtype=float)[:2] - np.asarray(b, dtype=float)[:2]))


def lift_track(pos_obj: np.ndarray) -> np.ndarray:
    """lift(o, t) = z(t) - z(0) for every frame."""
    z = np.asarray(pos_obj, dtype=float)[:, 2]
    return z - z[0]


def first_frame_at_least(values: np.ndarray, thr: float, start: int = 0) -> int | None:
    """First t >= start with values[t] >= thr."""
    for t in range(max(0, start), len(values)):
        if values[t] >= thr:
            return t
    return None


def first_after_lift_latch(lift: np.ndarray, start: int, accept: Callable[[int], bool],
                           thr: float = LIFT_THRESHOLD) -> int | None:
    """Walk t = start..n-1; the latch opens at the first lift >= thr and that frame is tested too (§3.2)."""
    latched = False
    for t in range(max(0, start), len(lift)):
        latched = latched or lift[t] >= thr
        if latched and accept(t):
            return t
    return None


def lift_completion_frame(lift: np.ndarray, cE: int | None, thr: float = LIFT_THRESHOLD) -> int:
    """§3.3 fallback completion frame: first t >= (cE, or 0 if none) with lift >= thr, else n-1."""
    t = first_frame_at_least(lift, thr, cE if cE is not None else 0)
    return t if t is not None else len(lift) - 1


def first_frame(start: int, stop: int, accept: Callable[[int], bool]) -> int | None:
    """First t in [max(0, start), stop) with accept(t)."""
    for t in range(max(0, start), stop):
        if accept(t):
            return t
    return None


# --------------------------------------------------------------------------- static scene facts

@functools.lru_cache(maxsize=None)
def scene_spec(name: str):
    """The scene's SceneSpec from config/robofollow/scenes.json (cached; treat it as read-only)."""
    from vla_bridge.benchmarks.robofollow.scenes import (load_scene)  # pure logic; imported lazily to keep this module light
    return load_scene(name)


def fixture_names(spec: Any, kind: str) -> tuple[str, ...]:
    """Names of the scene's fixtures of one kind ("bowl" | "label"), in config order."""
    return tuple(f.name for f in spec.fixtures.values() if f.kind == kind)


def replaced(task: Any, names: Iterable[str]) -> tuple[str, ...]:
    """``names`` with an INT-ACT probe's replacements in their place (``TaskSpec.edits``:
    the LIBERO bowl standing where a Scene 2 bowl would), in the same order."""
    replace = (getattr(task, "edits", None) or {}).get("replace") or {}
    out = []
    for name in names:
        new = replace.get(name, name)
        out.append(new if isinstance(new, str) else str(new[0]))
    return tuple(out)


def candidate_names(pos: Mapping[str, Any], excluded: Iterable[str]) -> list[str]:
    """§1 candidates: every recorded object except the excluded fixtures, in record order."""
    skip = set(excluded)
    return [name for name in pos if name not in skip]


def require_objects(task_id: str, pos: Mapping[str, Any], names: Iterable[str | None]) -> None:
    missing = [n for n in names if n is not None and n not in pos]
    if missing:
        raise ValueError(f"task {task_id}: object(s) {missing} not in the record ({sorted(pos)})")


# --------------------------------------------------------------------------- §2.3 source selection

@dataclass(frozen=True)
class SourceSelection:
    ok: bool
    frame: int | None
    closest: str | None
    source_dxy: float | None
    reason: str


def nearest_in_xy(point: np.ndarray, positions: Mapping[str, np.ndarray]) -> str | None:
    """Name of the position nearest to `point` in xy; ties go to the first in iteration order."""
    best_name, best_d = None, None
    for name, p in positions.items():
        d = dist_xy(point, p)
        if best_d is None or d < best_d:
            best_name, best_d = name, d
    return best_name


def find_support(pos: Mapping[str, np.ndarray], source: str, candidates: Iterable[str], t: int,
                 max_dxy: float = 0.02, min_gap: float = 0.005) -> str | None:
    """§6.1: the candidate right under the source (dxy <= 0.02, z gap >= 0.005, smallest gap)."""
    src = pos[source][t]
    best, best_gap = None, None
    for name in candidates:
        if name == source:
            continue
        gap = float(src[2] - pos[name][t][2])
        if dist_xy(src, pos[name][t]) <= max_dxy and gap >= min_gap and (best_gap is None or gap < best_gap):
            best, best_gap = name, gap
    return best


def select_source(ee: np.ndarray, pos: Mapping[str, np.ndarray], source: str, t: int | None,
                  candidates: Iterable[str] | None = None, exclude: Iterable[str] = (),
                  max_dxy: float = SELECT_MAX_DXY) -> SourceSelection:
    """§2.3 at frame t: nearest candidate in xy must be the source, and dxy(ee, source) < max_dxy.

    `exclude` is the hook for Scene 4's support removal (§6.1).
    """
    if t is None:
        return SourceSelection(False, None, None, None, "task-arm gripper never closed")
    excluded = set(exclude)
    names = [c for c in (pos if candidates is None else candidates) if c not in excluded]
    closest = nearest_in_xy(ee[t], {c: pos[c][t] for c in names})
    d = dist_xy(ee[t], pos[source][t])
    if closest != source:
        reason = f"closest object at grasp was {closest}, not {source} (frame {t})"
        return SourceSelection(False, t, closest, d, reason)
    if not d < max_dxy:
        reason = (f"{source} was the closest object at grasp (frame {t}) but {d:.4f} m away in xy "
                  f"(needs < {max_dxy})")
        return SourceSelection(False, t, closest, d, reason)
    return SourceSelection(True, t, closest, d, f"grasped {source} at frame {t} (dxy {d:.4f} m)")


# --------------------------------------------------------------------------- §2.4 finish stage

@dataclass(frozen=True)
class FinishParams:
    return_radius: float  # R
    leave_radius: float  # L
    stable_frames: int = 20  # K
    max_return_delay: int = 180
    reclose_threshold: float = CLOSE_THRESHOLD


@dataclass
class FinishResult:
    home_t: int | None
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def in_box(p: np.ndarray, box: Sequence[tuple[float, float]] = OPERATION_BOX) -> bool:
    return all(lo <= float(p[i]) <= hi for i, (lo, hi) in enumerate(box))


def frames_in_box(track: np.ndarray, box: Sequence[tuple[float, float]] = OPERATION_BOX) -> list[int]:
    return [t for t in range(len(track)) if in_box(track[t], box)]


def first_home_frame(ee: np.ndarray, tc: int, radius: float, stable_frames: int) -> int | None:
    """§2.4 check 2: first t >= tc whose window [t, min(n, t+k)) stays within `radius` of ee[0]."""
    n = len(ee)
    within = np.linalg.norm(ee - ee[0], axis=1) <= radius
    k = min(stable_frames, max(1, n - tc))
    for t in range(max(0, tc), n):
        if within[t:min(n, t + k)].all():
            return t
    return None


def finish_check(ee: np.ndarray, grip: np.ndarray, tc: int, params: FinishParams,
                 ee_other: np.ndarray | None = None,
                 box: Sequence[tuple[float, float]] = OPERATION_BOX) -> FinishResult:
    """§2.4 checks 1-5. `ee_other=None` skips the work-zone check (Scene 4 sequences, §6.6)."""
    problems: list[str] = []
    if ee_other is not None:
        inside = frames_in_box(ee_other, box)
        if inside:
            problems.append(f"other arm entered the operation box (first at frame {inside[0]})")
    h = first_home_frame(ee, tc, params.return_radius, params.stable_frames)
    dist = np.linalg.norm(ee - ee[0], axis=1)
    if h is None:
        problems.append(f"task arm never returned home (within {params.return_radius} m) after frame {tc}; "
                        f"final distance {dist[-1]:.3f} m")
    else:
        if h - tc > params.max_return_delay:
            problems.append(f"returned home too late: {h - tc} frames after frame {tc} "
                            f"(max {params.max_return_delay})")
        away = [t for t in range(h + 1, len(ee)) if dist[t] > params.leave_radius]
        if away:
            problems.append(f"left home again at frame {away[0]} ({dist[away[0]]:.3f} m > "
                            f"{params.leave_radius} m)")
    recloses = close_events(grip, params.reclose_threshold, start=max(1, tc + 1))
    if recloses:
        problems.append(f"task-arm gripper re-closed at frame {recloses[0]} after completion frame {tc}")
    return FinishResult(h, problems)


def finish_stage(ee: np.ndarray, grip: np.ndarray, tc: int, params: FinishParams,
                 ee_other: np.ndarray | None = None, weight: float = 0.2,
                 name: str = "stage3_finish") -> tuple[StageScore, FinishResult]:
    result = finish_check(ee, grip, tc, params, ee_other)
    credit = weight if result.ok else 0.0
    reason = (f"returned home at frame {result.home_t} (completion frame {tc}) and stayed"
              if result.ok else "; ".join(result.problems))
    return StageScore(name, weight, credit, credit, reason), result


# --------------------------------------------------------------------------- §2.5 gates, §2.6 totals

def apply_gates(stages: Sequence[StageScore]) -> list[StageScore]:
    """Strict gates (§2.5) for 2- and 3-stage tasks; returns new StageScores.

    A later stage's intent needs every earlier intent full; its exec needs every earlier
    intent and exec full plus its own intent. Stage 1 is never gated.
    """
    gated = [dataclasses.replace(stages[0])]
    for i in range(1, len(stages)):
        s, earlier = stages[i], stages[:i]
        intent_ok = all(p.intent_full for p in earlier)
        exec_ok = intent_ok and all(p.exec_full for p in earlier) and s.intent_full
        notes = []
        intent, exec_ = s.intent, s.exec
        if not intent_ok and intent > 0:
            intent = 0.0
            notes.append("intent gated: an earlier stage's intent is not full")
        if not exec_ok and exec_ > 0:
            exec_ = 0.0
            notes.append("exec gated: an earlier stage or this stage's intent is not full")
        reason = s.reason if not notes else f"{s.reason}; " + "; ".join(notes)
        gated.append(dataclasses.replace(s, intent=intent, exec=exec_, reason=reason))
    return gated


def stage_totals(stages: Sequence[StageScore]) -> tuple[float, float]:
    intent = 0.0
    exec_ = 0.0
    for s in stages:
        intent += s.intent
        exec_ += s.exec
    return intent, exec_


@dataclass(frozen=True)
class AdjustedTotals:
    intent: float
    exec: float
    bonus_intent: bool
    bonus_exec: bool
    penalty_intent: bool
    penalty_exec: bool


def adjust_totals(intent: float, exec_: float, stages: Sequence[StageScore],
                  final_target_ok: bool | None, wrong_arm: bool,
                  bonus_cap: float | None = None) -> AdjustedTotals:
    """Final-layout bonus (§3.5/§4.6) first, then the wrong-arm penalty on the last stage (§2.7)."""
    bonus_i = bool(final_target_ok) and intent < BONUS_BELOW
    bonus_e = bool(final_target_ok) and exec_ < BONUS_BELOW
    if bonus_i:
        intent += FINAL_LAYOUT_BONUS
    if bonus_e:
        exec_ += FINAL_LAYOUT_BONUS
    if bonus_cap is not None:
        intent, exec_ = min(intent, bonus_cap), min(exec_, bonus_cap)
    last = stages[-1]
    pen_i = wrong_arm and last.intent_full
    pen_e = wrong_arm and last.exec_full
    if pen_i:
        intent = max(0.0, intent - WRONG_ARM_PENALTY)
    if pen_e:
        exec_ = max(0.0, exec_ - WRONG_ARM_PENALTY)
    return AdjustedTotals(intent, exec_, bonus_i, bonus_e, pen_i, pen_e)


def full_rate_ok(total: float, max_total: float = 1.0) -> bool:
    """§2.6: intent_ok / exec_ok."""
    return total >= FULL_RATE_FRACTION * max_total


# --------------------------------------------------------------------------- §7 completion

_CR_STAGE_FALLBACK = ("stage2_stack", "stage2_unstack_slot", "stage2_place_bowl", "stage2_push")


def is_complete(action: str, intent_score: float, exec_score: float, stages: Sequence[StageScore],
                final_target_ok: bool | None = None,
                retry_final_target_ok: bool | None = None) -> bool:
    """§7 Completion Rate rule."""
    action = (action or "").strip().lower()
    if action in ("pickup", "sequence_pickups") or action.startswith("pickup"):
        return intent_score >= PICKUP_COMPLETE_MIN and exec_score >= PICKUP_COMPLETE_MIN
    if final_target_ok is not None:
        return bool(final_target_ok)
    if retry_final_target_ok is not None:
        return bool(retry_final_target_ok)
    execs = {s.name: s.exec for s in stages}
    if "stage3_orientation" in execs:
        return execs["stage3_orientation"] > 0.0
    for name in _CR_STAGE_FALLBACK:
        if name in execs:
            return execs[name] > 0.0
    return False


# --------------------------------------------------------------------------- §8 aggregation

def _field(row: Any, name: str, default: Any = None) -> Any:
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def _group_metrics(rows: list[Any]) -> dict[str, float | int]:
    n = len(rows)
    per_task: dict[tuple[str, str, str], list[bool]] = {}
    for r in rows:
        key = (str(_field(r, "scene")), str(_field(r, "level")), str(_field(r, "task_id")))
        per_task.setdefault(key, []).append(bool(_field(r, "complete")))
    task_rates = [sum(v) / len(v) for v in per_task.values()]
    macro = sum(task_rates) / len(task_rates)

    def full(name: str) -> float:
        return sum(full_rate_ok(float(_field(r, name)), float(_field(r, "max_total", 1.0) or 1.0))
                   for r in rows) / n

    return {
        "n_episodes": n,
        "n_tasks": len(per_task),
        "mean_intent_score": sum(float(_field(r, "intent_score")) for r in rows) / n,
        "mean_exec_score": sum(float(_field(r, "exec_score")) for r in rows) / n,
        "intent_full_rate": full("intent_score"),
        "exec_full_rate": full("exec_score"),
        "completion_rate": macro,
        "task_macro_completion_rate": macro,
        "episode_micro_completion_rate": sum(bool(_field(r, "complete")) for r in rows) / n,
    }


def summarize(rows: Iterable[Any]) -> dict[str, dict[str, float | int]]:
    """§8 metrics per "scene/level" group (sorted) plus an "all" group.

    Rows are dicts or objects (e.g. EpisodeScore) with task_id, scene, level, intent_score,
    exec_score, complete and optionally max_total (default 1.0). A task is keyed by
    (scene, level, task_id), so equal ids in different scenes stay separate. A row of an
    episode the infrastructure failed (``benchmarks.result_rows``) is left out.
    """
    rows = counted(rows)
    groups: dict[str, list[Any]] = {}
    for r in rows:
        groups.setdefault(f"{_field(r, 'scene')}/{_field(r, 'level')}", []).append(r)
    out = {name: _group_metrics(groups[name]) for name in sorted(groups)}
    if rows:
        out["all"] = _group_metrics(rows)
    return out


# --------------------------------------------------------------------------- result assembly

def build_episode_score(task: Any, stages: Sequence[StageScore], intent: float, exec_: float,
                        complete: bool, flags: dict[str, Any]) -> EpisodeScore:
    """EpisodeScore with §2.6 full rates; max_total is the sum of the stage weights (1.0)."""
    max_total = float(sum(s.weight for s in stages))
    return EpisodeScore(
        task_id=task.id, scene=task.scene, level=task.level, action=task.action, arm=task.arm,
        stages=list(stages), intent_score=float(intent), exec_score=float(exec_),
        intent_ok=full_rate_ok(intent, max_total), exec_ok=full_rate_ok(exec_, max_total),
        complete=bool(complete), flags=flags, max_total=max_total,
    )
