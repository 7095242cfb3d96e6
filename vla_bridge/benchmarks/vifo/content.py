"""What a cue says about its task beyond source and target: the arm, the route, the final
orientation, the second step, sign sets, the QR payload and the ArUco dictionary.

Pure logic. ``ScoredFacts`` carries what RoboFollow's scorer checks that an instruction may
word differently (Scene 3's route and final yaw, from the task registry); ``task_anchors`` and
``task_params`` add the matching anchors and drawing parameters to a cue
(``insertion.make_cue``).

The QR payload is a versioned, documented schema (``PAYLOAD_VERSION``; ``task_payload`` writes
it, ``read_payload`` reads it back)::

    v=vifo-task/1;s1=left,place,yellow_bar_4,on,green_label_1;via=green_bar_3;avoid=red_bar_2;yaw=0

``s1``, ``s2`` are the steps (arm, action, source[, relation, target]); ``via`` the object to
pass over, ``avoid`` the one not to pass over, ``yaw`` the final yaw of the source in degrees
(world frame, modulo 180 for a symmetric slab), ``at`` the x,y (m, world frame) where the
source must end when the scorer fixes it (Scene 4's slots). ArUco tags (F8 ``aruco_tags``) take their ids
from ``ARUCO_MEANINGS``: one id per meaning, so no two roles of an episode share one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vla_bridge.benchmarks.vifo.families import AnchorRef, SignSpec

__all__ = ["ScoredFacts", "task_anchors", "task_params", "task_arms", "sign_set",
           "PAYLOAD_VERSION", "task_payload", "read_payload", "ARUCO_MEANINGS", "aruco_ids",
           "confusable_distractors"]

PAYLOAD_VERSION = "vifo-task/1"
ROUTE_LIFT_M = 0.08  # the path's waypoint above the object to pass over

#: ArUco 4x4_50 id -> meaning, the dictionary of F8 ``aruco_tags`` (docs/cues.md)
ARUCO_MEANINGS = {
    1: "source, left arm", 2: "source, right arm",
    3: "target: on / in", 4: "target: left of", 5: "target: right of",
    6: "target: in front of", 7: "target: behind", 8: "target: beside",
    9: "second step's source, left arm", 10: "second step's source, right arm",
    11: "route: pass over", 12: "route: do not pass over",
}
_TARGET_IDS = {"on": 3, "in": 3, "above": 3, "left_of": 4, "right_of": 5, "in_front_of": 6,
               "behind": 7, "beside": 8, "near": 8, "towards": 3}
_SIGN_DIRECTION = {"left_of": "left", "right_of": "right", "in_front_of": "front",
                   "behind": "back"}
_PREDICATE = {"pick": "grasp", "place": "place", "push": "push", "open": "move", "close": "move",
              "turn_on": "calibrate", "turn_off": "stop"}


@dataclass(frozen=True)
class ScoredFacts:
    """What the scorer checks beyond the steps (None: the task has no such requirement)."""
    route_over: str | None = None  # object the source must pass over (Scene 3)
    route_avoid: str | None = None  # object it must not pass over
    final_yaw: float | None = None  # radians, world frame (Scene 3's place mode)
    place_xy: tuple[float, float] | None = None  # where the source must end (Scene 4's slots)


def task_arms(task) -> list[tuple[str, str | None, int | None]]:
    """[(anchor role, arm, step number)] of the arms a cue shows: the source's for one step,
    each step's source for a sequence."""
    steps = task.steps
    if len(steps) == 1:
        return [("source", steps[0].arm, None)]
    return [(f"step{i}", s.arm, i) for i, s in enumerate(steps, 1)]


def _yaw_quat(yaw: float) -> tuple[float, float, float, float]:
    return (math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2))


def task_anchors(task, world, facts: ScoredFacts | None, target_ref: AnchorRef | None) -> dict:
    """Anchors beyond source / target: "via" (above the object to pass over), "avoid", and
    "final" (the source's box at the placement point, turned to the final yaw); "target"
    itself when the scorer fixes the placement point (a Scene 4 slot)."""
    objs = getattr(world, "objects", world) or {}
    out: dict[str, AnchorRef] = {}
    if facts is None:
        return out
    src = objs.get(task.source)
    if facts.place_xy is not None and src is not None:
        from vla_bridge.embodiment.workcell import TABLE_TOP_Z
        z = TABLE_TOP_Z + float(src.size[2]) / 2
        out["target"] = AnchorRef(point=(float(facts.place_xy[0]), float(facts.place_xy[1]), z),
                                  radius_m=0.01, ground_radius_m=0.035)
    if facts.route_over in objs:
        top = float(objs[facts.route_over].size[2]) / 2 + ROUTE_LIFT_M
        out["via"] = AnchorRef(entity=facts.route_over, offset=(0.0, 0.0, top), radius_m=0.01)
    if facts.route_avoid in objs:
        out["avoid"] = AnchorRef(entity=facts.route_avoid, outline=True)
    if facts.final_yaw is not None and target_ref is not None and src is not None:
        size = tuple(float(v) for v in src.size)
        out["final"] = AnchorRef(entity=target_ref.entity, offset=target_ref.offset,
                                 radius_m=0.01, outline=True, box_size=size,
                                 box_quat=_yaw_quat(facts.final_yaw))
    return out


def confusable_distractors(task, world, n: int = 2) -> list[str]:
    """Up to ``n`` objects a policy could take for the source: same colour or shape first,
    then the nearest; never the source, the target or a fixture the task names."""
    objs = getattr(world, "objects", world) or {}
    src = objs.get(task.source)
    if src is None:
        return []
    named = {s.source for s in task.steps} | {s.target for s in task.steps}
    others = [k for k, o in objs.items() if k not in named and o.shape in ("box", "sphere",
                                                                          "cylinder")]

    def key(name):
        o = objs[name]
        same_colour = np.allclose(np.asarray(o.rgba[:3]), np.asarray(src.rgba[:3]), atol=0.05)
        same_shape = o.shape == src.shape
        dist = float(np.linalg.norm(np.asarray(o.pos[:2]) - np.asarray(src.pos[:2])))
        return (-(same_colour + same_shape), dist, name)
    return sorted(others, key=key)[:n]


def sign_set(task, variant: str, glyphs: dict, world) -> list[tuple[str, SignSpec]]:
    """[(anchor role, sign)] of an F6 cue, taken from the task (``glyphs``: role -> glyph).

    mandatory / permission: the action on the source, "place" (with the relation's
    direction) at the placement point; target_zone: one sign at the placement point showing
    the source object; prohibition: "do not grasp" on confusable distractors (never the
    source); hazard: "avoid" on the object not to pass over, else on the nearest distractor;
    hri / maintenance / system_state: their service predicate on the source (they encode
    nothing about the task, so the compatibility filter never shows them in a protocol)."""
    step = task.steps[0]
    shape, rgb = glyphs["source"]["shape"], tuple(glyphs["source"]["rgb"])
    direction = _SIGN_DIRECTION.get(step.relation or "")
    places = step.target is not None and step.action != "pick"
    if variant in ("mandatory", "permission"):
        signs = [("source", SignSpec(variant, _PREDICATE.get(step.action, "grasp"), shape, rgb))]
        if places:
            signs.append(("target", SignSpec(variant, "place", shape, rgb, "gripper", direction)))
        return signs
    if variant == "target_zone":
        role = "target" if places else "source"
        return [(role, SignSpec("target_zone", "place" if places else "grasp", shape, rgb,
                                "gripper", direction))]
    if variant == "prohibition":
        return [(f"forbidden{i}", SignSpec("prohibition", "grasp", g["shape"], tuple(g["rgb"])))
                for i, g in enumerate(glyphs.get("forbidden", []), 1)]
    if variant == "hazard":
        role = "avoid" if "avoid" in glyphs else "forbidden1"
        g = glyphs.get(role) or (glyphs.get("forbidden") or [None])[0]
        if g is None:
            return []
        return [(role, SignSpec("hazard", "avoid", g["shape"], tuple(g["rgb"]), "gripper",
                                "caution"))]
    service = {"hri": ("handover", "human"), "maintenance": ("inspect", "tool"),
               "system_state": ("charge", shape)}[variant]
    return [("source", SignSpec(variant, service[0], service[1], rgb))]


def task_payload(task, facts: ScoredFacts | None = None) -> str:
    """The QR payload of a task (schema in the module docstring)."""
    fields = [f"v={PAYLOAD_VERSION}"]
    for i, s in enumerate(task.steps, 1):
        parts = [s.arm or "", s.action, s.source or ""]
        if s.target is not None and s.action != "pick":
            parts += [s.relation or "", s.target]
        fields.append(f"s{i}=" + ",".join(parts))
    if facts is not None:
        if facts.route_over:
            fields.append(f"via={facts.route_over}")
        if facts.route_avoid:
            fields.append(f"avoid={facts.route_avoid}")
        if facts.final_yaw is not None:
            fields.append(f"yaw={math.degrees(facts.final_yaw) % 180:.0f}")
        if facts.place_xy is not None:
            fields.append("at={:.3f},{:.3f}".format(*facts.place_xy))
    return ";".join(fields)


def read_payload(text: str) -> dict:
    """A QR payload back as {"version", "steps": [{arm, action, source, relation, target}],
    "via", "avoid", "yaw_deg"}; ValueError names what is wrong."""
    fields = dict(f.split("=", 1) for f in text.split(";") if "=" in f)
    if fields.get("v") != PAYLOAD_VERSION:
        raise ValueError(f"not a {PAYLOAD_VERSION} payload: {text[:60]!r}")
    steps = []
    for i in range(1, 10):
        raw = fields.get(f"s{i}")
        if raw is None:
            break
        parts = raw.split(",")
        if len(parts) not in (3, 5):
            raise ValueError(f"step s{i} {raw!r} needs arm,action,source[,relation,target]")
        parts += [None, None] if len(parts) == 3 else []
        steps.append(dict(zip(("arm", "action", "source", "relation", "target"), parts)))
    yaw, at = fields.get("yaw"), fields.get("at")
    return {"version": fields["v"], "steps": steps, "via": fields.get("via"),
            "avoid": fields.get("avoid"), "yaw_deg": float(yaw) if yaw is not None else None,
            "at": tuple(float(v) for v in at.split(",")) if at else None}


def aruco_ids(task, facts: ScoredFacts | None = None) -> dict[str, int]:
    """Anchor role -> ArUco id of every tag an ``aruco_tags`` cue shows (``ARUCO_MEANINGS``)."""
    first = task.steps[0]
    ids = {"source": 1 if first.arm == "left" else 2} if len(task.steps) == 1 else {
        "step1": 1 if first.arm == "left" else 2}
    if first.target is not None and first.action != "pick":
        ids["target_object"] = _TARGET_IDS.get(first.relation or "on", 3)
    if len(task.steps) > 1:
        ids["step2"] = 9 if task.steps[1].arm == "left" else 10
    if facts is not None and facts.route_over:
        ids["via"] = 11
    if facts is not None and facts.route_avoid:
        ids["avoid"] = 12
    return ids


def task_params(task, variant_family: str, variant: str, world, facts: ScoredFacts | None,
                glyph_of) -> dict:
    """Drawing parameters from the task: arms, the QR payload, ArUco ids, F6 signs."""
    params: dict = {"arms": task_arms(task)}
    if variant_family == "F8":
        params["payload"] = task_payload(task, facts)
        params["marker_ids"] = aruco_ids(task, facts)
    if variant_family == "F6":
        glyphs = {"source": glyph_of(task.source) or {"shape": "box", "rgb": (150, 150, 150)}}
        forbidden = confusable_distractors(task, world)
        glyphs["forbidden"] = [glyph_of(n) for n in forbidden]
        if facts is not None and facts.route_avoid:
            glyphs["avoid"] = glyph_of(facts.route_avoid)
        params["signs"] = sign_set(task, variant, glyphs, world)
        params["forbidden"] = forbidden
    return params
