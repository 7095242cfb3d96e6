"""Task-variant compatibility (LIBERO-VIFO builds only cue instances compatible with the task).

Each variant declares what it can express (``CARRIES``: source, target, relation, arm, route,
orientation, sequence); each task needs some of them (``task_needs``, from what RoboFollow's
scorer checks: the arm always, since a wrong-arm grasp scores zero; the target of place,
push and stack tasks; the relation of Scene 1's directional placements; Scene 3's route and
final orientation; Scene 4's second step). A cue instance is built only when the variant
carries everything its task needs (``missing``); otherwise it is skipped with the reason.

Pure logic over ``TaskSpec`` (no drawing, no world).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from vla_bridge.benchmarks.robofollow.tasks import TaskSpec

__all__ = ["ASPECTS", "CARRIES", "task_needs", "carries", "missing", "skip_reason",
           "instance_counts", "filter_trials", "format_instance_counts"]

ASPECTS = ("source", "target", "relation", "arm", "route", "orientation", "sequence")
_EVERYTHING = frozenset(ASPECTS)
_PLACE = frozenset({"source", "target", "relation", "arm"})
_PICK = frozenset({"source", "arm"})
_NOTHING: frozenset = frozenset()

#: (family, variant) -> what its drawing expresses (docs/cues.md has the same table)
CARRIES: dict[tuple[str, str], frozenset] = {
    # F1 text: the task in words (the instruction, or the scored task where they differ)
    **{("F1", v): _EVERYTHING for v in ("banner", "sticky_note", "subtitle", "outlined", "caps")},
    ("F2", "arrow"): _PLACE,
    ("F2", "curved_path"): _PLACE | {"route", "orientation"},
    ("F2", "dashed_path"): _PLACE | {"route", "orientation"},
    ("F2", "target_region"): frozenset({"target", "relation"}),
    ("F2", "crosshair"): _PICK,
    ("F2", "bbox"): _PICK,
    ("F2", "numbered"): _PLACE | {"sequence"},
    # F3: future states of the planned episode (route and final yaw from the plan rollout)
    **{("F3", v): _PLACE | {"route", "orientation"} for v in ("uniform", "fade", "tinted",
                                                               "trail")},
    ("F3", "final"): _PLACE | {"orientation"},
    **{("F4", v): _PLACE for v in ("schematic", "storyboard", "before_after")},
    ("F4", "goal_image"): _PLACE | {"orientation"},
    ("F5", "point"): _PICK,
    ("F5", "grasp"): _PICK,
    ("F5", "point_target"): frozenset({"target", "relation"}),
    ("F5", "point_and_move"): _PLACE,
    **{("F6", v): _PLACE for v in ("mandatory", "permission", "target_zone")},
    **{("F6", v): _NOTHING for v in ("prohibition", "hazard", "hri", "maintenance",
                                     "system_state")},
    **{("F7", v): _PLACE for v in ("spotlight", "dim", "outline", "glow", "beam")},
    ("F8", "qr"): _EVERYTHING,  # the payload schema (content.task_payload)
    ("F8", "aruco"): _NOTHING,  # one hashed id: an index into nothing the policy knows
    ("F8", "aruco_tags"): _PLACE | {"sequence", "route"},  # content.ARUCO_MEANINGS
}
#: F3 without a simulator to roll the plan out (the real robot): a straight lifted line
_STRAIGHT_GHOSTS = {("F3", v): _PLACE for v in ("uniform", "fade", "tinted", "trail", "final")}
_DIRECTIONAL = ("place_behind", "place_in_front", "place_left_of", "place_right_of",
                "place_beside")


def task_needs(task: TaskSpec) -> frozenset:
    """What a cue must express for ``task`` to be completed as scored."""
    needs = {"source", "arm"}
    t = task.target or {}
    if task.action != "pickup" and (task.anchor or t.get("target_object")
                                    or t.get("target_label") or t.get("place_slot")):
        needs.add("target")
    if task.action in _DIRECTIONAL:
        needs.add("relation")
    if task.scene == "scene3":
        needs |= {"route", "orientation"}
    if t.get("second_source"):
        needs.add("sequence")
    return frozenset(needs)


def carries(fam: str, variant: str, plan_ghosts: bool = True) -> frozenset:
    """What a variant expresses (``plan_ghosts``: F3 ghosts from a plan rollout)."""
    if not plan_ghosts and (fam, variant) in _STRAIGHT_GHOSTS:
        return _STRAIGHT_GHOSTS[(fam, variant)]
    try:
        return CARRIES[(fam, variant)]
    except KeyError:
        raise ValueError(f"no compatibility entry for {fam} {variant!r}") from None


def missing(task: TaskSpec, fam: str, variant: str, plan_ghosts: bool = True) -> tuple:
    """The aspects ``task`` needs that the variant cannot express (in ASPECTS order)."""
    lacking = task_needs(task) - carries(fam, variant, plan_ghosts)
    return tuple(a for a in ASPECTS if a in lacking)


def skip_reason(task: TaskSpec, fam: str, variant: str, plan_ghosts: bool = True) -> str | None:
    """None when compatible, else e.g. "F2 crosshair cannot show the target, relation"."""
    lacking = missing(task, fam, variant, plan_ghosts)
    if not lacking:
        return None
    return f"{fam} {variant} cannot show the {', '.join(lacking)}"


def task_type(task: TaskSpec) -> str:
    """The task type the instance counts group by: scene and action."""
    return f"{task.scene}:{task.action}"


def instance_counts(tasks: Iterable[TaskSpec], variants: Iterable[tuple[str, str]],
                    plan_ghosts: bool = True) -> dict:
    """{"F2 arrow": {"instances": n, "skipped": m, "skipped_by_type": {type: count},
    "missing": {aspect: count}}} over ``tasks`` for each (family, variant)."""
    tasks = list(tasks)
    out = {}
    for fam, variant in variants:
        skipped, lacking = Counter(), Counter()
        for task in tasks:
            gap = missing(task, fam, variant, plan_ghosts)
            if gap:
                skipped[task_type(task)] += 1
                lacking.update(gap)
        out[f"{fam} {variant}"] = {"instances": len(tasks) - sum(skipped.values()),
                                   "skipped": sum(skipped.values()),
                                   "skipped_by_type": dict(sorted(skipped.items())),
                                   "missing": dict(sorted(lacking.items()))}
    return out


def filter_trials(trials, fam: str | None, variant: str | None, plan_ghosts: bool = True):
    """(kept trials, [(trial, reason)] skipped) of a cue protocol's trials (no family: all)."""
    if not fam:
        return list(trials), []
    kept, skipped = [], []
    for trial in trials:
        reason = skip_reason(trial.task, fam, variant, plan_ghosts)
        (skipped.append((trial, reason)) if reason else kept.append(trial))
    return kept, skipped


def format_instance_counts(counts: dict) -> str:
    """A table: variant, instances, skipped, what the skipped tasks lacked."""
    lines = [f"{'variant':26} {'instances':>9} {'skipped':>8}  lacking"]
    for name, c in counts.items():
        lacking = ", ".join(f"{a} {n}" for a, n in c["missing"].items()) or "-"
        lines.append(f"{name:26} {c['instances']:9d} {c['skipped']:8d}  {lacking}")
    total = sum(c["instances"] for c in counts.values())
    lines.append(f"{'total':26} {total:9d}")
    return "\n".join(lines)
