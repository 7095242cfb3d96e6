"""INT-ACT episode metrics (Fang et al., "From Intention to Execution", §4.1 and appendix A),
computed from the same EpisodeRecord the RoboFollow scorer reads. Pure numpy, no rclpy.

The paper's metrics and the reading chosen here (the record has no contacts, so "grasped" is
inferred from the gripper command and heights, as RoboFollow's scorer does):

* ``intention_correct`` -- "the gripper moves to within a small radius of the correct source
  object at any frame", radius 5 cm (appendix A). Here: at some frame t the task arm's TCP
  (gripper centre point, the same for every scene) is within 0.05 m (3-D Euclidean, inclusive)
  of the source's centre. Gripper state does not matter.
* ``grasp_success`` -- "the gripper successfully grasps the correct source object at any point"
  (SimplerEnv's contact test). Here: at some frame t the task arm's gripper is closed
  (command <= 0.35, the scorer's close threshold), the source is lifted >= 0.01 m above its
  frame-0 height and the TCP is within 0.05 m of the source's centre (holding it up).
  Push tasks never lift the source, so their grasp_success is normally false.
* ``task_success`` -- the benchmark's own success; here the RoboFollow CR result passed in.
* ``wrong_object_attempt`` -- "any non-source object is moved during the episode" (SimplerEnv's
  ``moved_wrong_obj``: another object moved more than 3 cm and more than the source). Here: at
  some frame t a candidate object that is not a task source is displaced more than 0.03 m from
  its frame-0 position AND more than the (largest) source displacement at t. Displacement is
  3-D, not SimplerEnv's xy, so that lifting a wrong object straight up counts. Fixtures (bowls,
  labels) are never counted.

Sequence tasks (Scene 4 ``sequence_pickups``) have two (arm, source) pairs: intention and grasp
must hold for both pairs (each arm to its own source), and both sources are "sources" for the
wrong-object test.

Every metric is w.r.t. one task, and ``task_success`` must be that same task's completion.
Under the ``conflict`` cue protocol an episode has two (``benchmarks.task_roles``): the
evaluator stores the metrics against each in the row (``scores[role]["intact"]``);
``row_intact`` reads them, or re-scores an older row's episode against each of its tasks, and
``summarize_intact_by_task`` gives the rates per task ("followed language" / "followed cue").
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import numpy as np

from vla_bridge.embodiment.episode_record import EpisodeRecord
from vla_bridge.benchmarks.task_roles import INTACT_FIELDS, ROLE_LABELS, ROLES, row_scores
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.robofollow.scoring.common import (CLOSE_THRESHOLD, LIFT_THRESHOLD,
                                                             fixture_names, replaced,
                                                             scene_spec)

INTENTION_RADIUS = 0.05  # 5 cm (INT-ACT appendix A)
GRASP_RADIUS = 0.05
GRASP_CLOSE_THRESHOLD = CLOSE_THRESHOLD
GRASP_MIN_LIFT = LIFT_THRESHOLD
WRONG_OBJECT_MOVE = 0.03  # SimplerEnv's 3 cm
METRICS = ("intention_correct", "grasp_success", "task_success", "wrong_object_attempt")


def task_sources(task: TaskSpec) -> list[tuple[str, str]]:
    """(arm, source) pairs the task asks for: one, or two for sequence_pickups."""
    pairs = [(task.arm, task.source)]
    tgt = task.target or {}
    if task.action == "sequence_pickups":
        if not tgt.get("second_arm") or not tgt.get("second_source"):
            raise ValueError(f"task {task.id}: sequence_pickups needs target.second_arm / second_source")
        pairs.append((tgt["second_arm"], tgt["second_source"]))
    return pairs


def _fixtures(task: TaskSpec) -> set[str]:
    """The scene's bowls and labels (a probe's LIBERO bowl in a bowl's place among them)."""
    try:
        spec = scene_spec(task.scene)
    except ValueError:
        return set()
    return set(replaced(task, fixture_names(spec, "bowl") + fixture_names(spec, "label")))


def _first(mask: np.ndarray) -> int | None:
    idx = np.flatnonzero(mask)
    return int(idx[0]) if idx.size else None


def intact_metrics(task: TaskSpec, record: EpisodeRecord, complete: bool) -> dict[str, Any]:
    """INT-ACT metrics of one episode; ``complete`` is the RoboFollow CR result (EpisodeScore.complete)."""
    if record.n == 0:
        raise ValueError(f"task {task.id}: empty episode record")
    pairs = task_sources(task)
    fixtures = _fixtures(task)
    return episode_metrics(task.id, pairs, record, complete,
                           lambda name: name not in fixtures)


def libero_metrics(probe, record: EpisodeRecord, success: bool) -> dict[str, Any]:
    """INT-ACT metrics of a LIBERO episode of a ``libero_probes.LiberoProbe`` (the one arm is
    the contract's left slot), from the world state the LIBERO sim publishes: the source is
    the probe's ``source_object``; the wrong-object rule watches the probe's movable
    objects but the source and the container (``watched``: never the floor, the regions or
    the articulated parts); ``success`` is LIBERO's goal predicates' verdict."""
    if record.n == 0:
        raise ValueError(f"task {probe.id}: empty episode record")
    arm = next(iter(record.tcp_pos))
    watched = set(probe.watched())
    return episode_metrics(probe.id, [(arm, probe.source_object)], record, success,
                           lambda name: name in watched)


def episode_metrics(task_id: str, pairs: list[tuple[str, str]], record: EpisodeRecord,
                    complete: bool, watched) -> dict[str, Any]:
    """The four metrics for (arm, source) ``pairs``; ``watched(name)``: whether a non-source
    object counts for the wrong-object rule."""
    missing = [src for _, src in pairs if src not in record.pos]
    if missing:
        raise ValueError(f"task {task_id}: object(s) {missing} not in the record ({sorted(record.pos)})")
    pos = {name: np.asarray(p, dtype=float) for name, p in record.pos.items()}
    per_source = []
    for arm, src in pairs:
        ee = np.asarray(record.tcp_pos[arm], dtype=float)
        grip = np.asarray(record.grip[arm], dtype=float)
        dist = np.linalg.norm(ee - pos[src], axis=1)
        lift = pos[src][:, 2] - pos[src][0, 2]
        near = dist <= INTENTION_RADIUS
        holding = (grip <= GRASP_CLOSE_THRESHOLD) & (lift >= GRASP_MIN_LIFT) & (dist <= GRASP_RADIUS)
        per_source.append({"arm": arm, "source": src, "min_distance": float(dist.min()),
                           "intention_t": _first(near), "grasp_t": _first(holding)})

    sources = {src for _, src in pairs}
    moved = {name: np.linalg.norm(p - p[0], axis=1) for name, p in pos.items()}
    src_move = np.max([moved[s] for s in sources], axis=0)
    wrong_t, wrong_obj = None, None
    for name, disp in moved.items():
        if name in sources or not watched(name):
            continue
        t = _first((disp > WRONG_OBJECT_MOVE) & (disp > src_move))
        if t is not None and (wrong_t is None or t < wrong_t):
            wrong_t, wrong_obj = t, name
    return {
        "intention_correct": all(p["intention_t"] is not None for p in per_source),
        "grasp_success": all(p["grasp_t"] is not None for p in per_source),
        "task_success": bool(complete),
        "wrong_object_attempt": wrong_t is not None,
        "wrong_object": wrong_obj, "wrong_object_t": wrong_t,
        "per_source": per_source,
    }


def _get(row: Any, name: str) -> Any:
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name)


def _rates(rows: list[Any]) -> dict[str, float | int]:
    n = len(rows)
    out: dict[str, float | int] = {"n_episodes": n}
    for m in METRICS:
        out[f"{m}_rate"] = sum(bool(_get(r, m)) for r in rows) / n
    out["intention_action_gap"] = out["intention_correct_rate"] - out["task_success_rate"]
    return out


def summarize_intact(rows: Iterable[Any]) -> dict[str, dict[str, float | int]]:
    """Episode rates of the four metrics per "scene/level" group (sorted) plus "all".

    Rows are dicts (or objects) with scene, level and the four metric keys, e.g.
    ``{"scene": s.scene, "level": s.level, **intact_metrics(task, record, s.complete)}``.
    ``intention_action_gap`` = intention rate - task success rate (the paper's headline gap).
    """
    rows = list(rows)
    groups: dict[str, list[Any]] = {}
    for r in rows:
        groups.setdefault(f"{_get(r, 'scene')}/{_get(r, 'level')}", []).append(r)
    out = {name: _rates(groups[name]) for name in sorted(groups)}
    if rows:
        out["all"] = _rates(rows)
    return out


# ----------------------------------------------------------------------------- per task of a row

def row_intact(row: Mapping, record: EpisodeRecord | None = None,
               suite=None) -> dict[str, dict | None]:
    """role -> INT-ACT metrics (INTACT_FIELDS) of a results row against that role's task.

    The row's own when the evaluator scored them; for an older row, re-scored from its episode
    ``record`` against the role's task (``suite.get(id)``) with that task's completion. (Older
    reports paired the trial's task with the row's completion, which under ``conflict`` is the
    other task's: "intention 0 %, success 100 %".) None: not scored (a failed episode, or an
    older row without its record).
    """
    ok = row.get("status", "ok") == "ok"
    out: dict[str, dict | None] = {}
    for role, s in row_scores(row).items():
        metrics = s.get("intact")
        if metrics is None and ok and record is not None and s.get("task"):
            full = intact_metrics(suite.get(s["task"]), record, bool(s["complete"]))
            metrics = {k: full[k] for k in INTACT_FIELDS}
        out[role] = metrics
    return out


def summarize_intact_by_task(rows: Iterable[Mapping],
                             per_row: Iterable[Mapping[str, dict | None]]) -> dict[str, dict]:
    """Per role that has metrics: {"task": "followed language" / "followed cue", "groups":
    ``summarize_intact`` of the rows scored against that role's task}. ``per_row``: each
    row's ``row_intact``, in the same order."""
    pairs = list(zip(rows, per_row))
    out = {}
    for role in ROLES:
        scored = [{"scene": r.get("scene"), "level": r.get("level"), **m[role]}
                  for r, m in pairs if m.get(role) is not None]
        if scored:
            out[role] = {"task": ROLE_LABELS[role], "groups": summarize_intact(scored)}
    return out
