"""Grounding: a ``ParsedTask`` + a world state -> ``GroundedTask`` (LIBERO-VIFO App. C).

Pure logic (numpy), no rclpy, no simulator. ``ground(parsed, world, fixtures=None)`` resolves
every referring expression against a ``WorldState`` (plus optional fixtures such as bowls and
labels) to object names, evaluates conditions to pick the branch, and turns the relation into a
world-frame placement direction. ``GroundingError`` when a reference is missing or ambiguous.

RoboFollow helpers: ``layout_world`` (a scene layout's objects without a simulator) and
``coverage_report`` (how much of the task registry parses and grounds correctly;
``python -m vla_bridge.benchmarks.vifo.grounding`` prints it).

World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vla_bridge.benchmarks.vifo.parser import (COLORS, NOUN_SHAPES, RELATION_VECTORS, Condition,
                                               EntityRef, ParsedTask, ParseError, parse)

__all__ = [
    "GroundingError", "GroundedStep", "GroundedTask", "ground", "layout_world", "coverage_report",
]


class GroundingError(ValueError):
    """A parsed reference matches no object, or several, in the given world state."""


# --------------------------------------------------------------------------- world entities

_PALETTE = {
    "red": (0.9, 0.1, 0.1), "green": (0.1, 0.8, 0.2), "blue": (0.1, 0.25, 0.95),
    "yellow": (1.0, 0.9, 0.1), "black": (0.05, 0.05, 0.05), "white": (0.95, 0.95, 0.95),
    "orange": (1.0, 0.55, 0.0), "purple": (0.55, 0.2, 0.75), "gray": (0.5, 0.5, 0.5),
    "brown": (0.5, 0.3, 0.15), "pink": (1.0, 0.6, 0.75), "cyan": (0.1, 0.85, 0.85),
}
TABLE_Z = 0.74
_ON_Z_GAP = 0.005  # above the support's centre (metres)
_IN_RADIUS = 0.07  # default container radius when its size is unknown (bowl meshes)


def color_name(rgb) -> str:
    rgb = np.asarray(rgb, float)[:3]
    return min(_PALETTE, key=lambda k: float(np.sum((np.asarray(_PALETTE[k]) - rgb) ** 2)))


@dataclass(frozen=True)
class _Ent:
    name: str
    pos: np.ndarray
    size: np.ndarray
    shape: str
    color: str | None
    kind: str  # "object" or a fixture kind ("bowl", "label", ...)
    tokens: frozenset

    @property
    def volume(self) -> float:
        return float(np.prod(self.size))

    @property
    def bottom(self) -> float:
        return float(self.pos[2] - self.size[2] / 2)


def _entities(world, fixtures) -> list[_Ent]:
    out = []
    objects = getattr(world, "objects", world) or {}
    for kind, table in (("object", objects), ("fixture", fixtures or {})):
        for name, o in table.items():
            tokens = _name_tokens(name)
            rgba = getattr(o, "rgba", None)
            col = next((c for c in COLORS if c in tokens), None)
            if col is None and rgba is not None and kind == "object":
                col = color_name(rgba)
            size = np.asarray(getattr(o, "size", None) if getattr(o, "size", None) is not None
                              else (2 * _IN_RADIUS, 2 * _IN_RADIUS, 0.05), float)
            fkind = kind
            if kind == "fixture":
                fkind = next((k for k in ("bowl", "label", "plate", "basket", "tray", "drawer")
                              if k in tokens), "fixture")
            out.append(_Ent(name, np.asarray(o.pos, float), size, getattr(o, "shape", "mesh"),
                            col, fkind, tokens))
    return out


def _name_tokens(name: str) -> frozenset:
    """Words of an object name up to a relation word: "red_cube_in_bowl" -> {red, cube}."""
    words = [w for w in re.split(r"[_\-\s\d]+", name.lower()) if w]
    for i, w in enumerate(words):
        if i and w in ("in", "on", "inside", "under", "of"):
            words = words[:i]
            break
    return frozenset(words)


# --------------------------------------------------------------------------- grounding

@dataclass(frozen=True)
class GroundedStep:
    action: str
    arm: str | None
    source: str | None
    target: str | None
    relation: str | None
    target_state: str | None
    sources: tuple[str, ...] = ()
    route: tuple[tuple[str, str], ...] = ()
    orientation: tuple[str, str] | None = None

    @property
    def relation_vector(self) -> tuple[float, float] | None:
        return RELATION_VECTORS.get(self.relation) if self.relation else None


@dataclass(frozen=True)
class GroundedTask:
    """The paper's (e_src, e_tgt, r_task) resolved to world names, for every step."""
    parsed: ParsedTask
    steps: tuple[GroundedStep, ...]
    branch: str | None = None  # "then" | "else" for conditionals

    @property
    def source(self) -> str | None:
        return self.steps[0].source

    @property
    def target(self) -> str | None:
        return self.steps[0].target

    @property
    def relation(self) -> str | None:
        return self.steps[0].relation

    @property
    def action(self) -> str:
        return self.steps[0].action

    @property
    def arm(self) -> str | None:
        return self.steps[0].arm

    def summary(self) -> str:
        """Short machine-and-human readable description (QR payloads, captions)."""
        parts = []
        for s in self.steps:
            if s.action == "pick":
                parts.append(f"pick {s.source}")
            elif s.action in ("place", "push"):
                parts.append(f"{s.action} {s.source} {s.relation} {s.target}")
            else:
                parts.append(f"{s.action} {s.target}")
        return "; ".join(parts)


def ground(parsed: ParsedTask, world, fixtures: dict | None = None) -> GroundedTask:
    """Resolve ``parsed`` against ``world`` (a WorldState or {name: ObjectState})."""
    ents = _entities(world, fixtures)
    branch, steps = None, parsed.steps
    if parsed.condition is not None:
        holds = _condition_holds(parsed.condition, ents)
        branch, steps = ("then", parsed.steps) if holds else ("else", parsed.otherwise)
    out = []
    for s in steps:
        srcs = tuple(_resolve(e, ents, movable=True).name for e in s.sources)
        tgt = _resolve(s.target, ents).name if s.target is not None else None
        route = tuple((k, _resolve(e, ents).name) for k, e in s.route)
        out.append(GroundedStep(s.action, s.arm, srcs[0] if srcs else None, tgt, s.relation,
                                s.target_state, srcs, route, s.orientation))
    return GroundedTask(parsed, tuple(out), branch)


def _resolve(ref: EntityRef, ents: list[_Ent], movable: bool = False) -> _Ent:
    cands = _candidates(ref, ents, movable)
    if not cands:
        raise GroundingError(f"no object matches {ref.text!r}")
    if len(cands) > 1:
        names = ", ".join(sorted(c.name for c in cands))
        raise GroundingError(f"{ref.text!r} is ambiguous: {names}")
    return cands[0]


def _noun_match(ref: EntityRef, e: _Ent, movable: bool) -> bool:
    noun = ref.noun or "object"
    head = noun.split()[-1]
    if head in NOUN_SHAPES:
        shape = NOUN_SHAPES[head]
        if e.kind != "object":
            return False
        return shape is None or e.shape == shape
    if movable and e.kind not in ("object",) and head not in e.tokens:
        return False
    words = [w for w in noun.split() if w not in ("of",)]
    return all(w in e.tokens or (w.endswith("s") and w[:-1] in e.tokens) for w in words) or \
        (head in e.tokens) or (e.kind == head)


def _candidates(ref: EntityRef, ents: list[_Ent], movable: bool = False) -> list[_Ent]:
    if ref.members:
        raise GroundingError(f"{ref.text!r} names several objects")
    base = [e for e in ents if _noun_match(ref, e, movable)
            and all(e.color == c or c in e.tokens for c in ref.colors)]
    cands = list(base)
    for ex in ref.exclusions:
        if ex[0] == "must":
            cands = [e for e in cands if _predicate(ex[1], e, base, ents)]
        else:
            cands = [e for e in cands if not _predicate(ex, e, base, ents)]
    for attr in ref.attributes:
        cands = _apply_attribute(attr, cands)
    if ref.locator is not None and cands:
        rel, lm_ref = ref.locator
        lms = _candidates(lm_ref, ents)
        if not lms:
            raise GroundingError(f"no object matches {lm_ref.text!r} (in {ref.text!r})")
        cands = _best_by_relation(cands, rel, lms)
    return cands


def _apply_attribute(attr: str, cands: list[_Ent]) -> list[_Ent]:
    if len(cands) <= 1:
        return cands
    named = [e for e in cands if attr in e.tokens]
    if named and len(named) < len(cands):
        return named
    key = {"left": lambda e: e.pos[0], "right": lambda e: -e.pos[0],
           "front": lambda e: e.pos[1], "back": lambda e: -e.pos[1],
           "bottom": lambda e: e.pos[2], "top": lambda e: -e.pos[2],
           "smaller": lambda e: e.volume, "larger": lambda e: -e.volume}.get(attr)
    if key is not None:
        return [min(cands, key=key)]
    if attr == "middle":
        xs = sorted(cands, key=lambda e: e.pos[0])
        return [xs[len(xs) // 2]]
    if attr in ("first", "second", "third"):
        i = ("first", "second", "third").index(attr)
        xs = sorted(cands, key=lambda e: e.pos[0])
        return [xs[i]] if i < len(xs) else []
    return cands


def _predicate(pred: tuple[str, object], e: _Ent, base: list[_Ent], ents: list[_Ent]) -> bool:
    kind, val = pred
    if kind == "color":
        return e.color == val or val in e.tokens
    if kind == "noun":
        return NOUN_SHAPES.get(val) == e.shape
    if kind == "touching":
        return e.bottom <= TABLE_Z + 0.005
    if kind == "position":
        return e in _apply_attribute(val, base) if len(base) > 1 else True
    if kind == "size":
        return e in _apply_attribute(val, base)
    if kind == "rel":
        rel, lm_ref = val
        return any(_relation_holds(e, rel, lm) for lm in _candidates(lm_ref, ents) if lm is not e)
    raise GroundingError(f"unsupported predicate {pred!r}")


def _relation_holds(a: _Ent, rel: str, b: _Ent) -> bool:
    d = a.pos - b.pos
    horiz = float(np.hypot(d[0], d[1]))
    if rel in ("on", "above"):
        reach = max(b.size[0], b.size[1]) / 2 + 0.01
        return horiz < reach and d[2] > _ON_Z_GAP
    if rel == "under":
        reach = max(a.size[0], a.size[1]) / 2 + 0.01
        return horiz < reach and d[2] < -_ON_Z_GAP
    if rel == "in":
        radius = max(b.size[0], b.size[1]) / 2 if b.kind == "object" else _IN_RADIUS
        return horiz < radius and -0.03 < d[2] < 0.15
    if rel in ("beside", "near"):
        return horiz < 0.15
    if rel == "part_of":
        return bool(b.tokens & a.tokens)
    vec = RELATION_VECTORS.get(rel)
    if vec is not None:
        return float(d[0] * vec[0] + d[1] * vec[1]) > 0.01
    raise GroundingError(f"cannot evaluate the relation {rel!r}")


def _best_by_relation(cands: list[_Ent], rel: str, lms: list[_Ent]) -> list[_Ent]:
    vec = RELATION_VECTORS.get(rel)
    if vec is None:
        return [c for c in cands if any(c is not lm and _relation_holds(c, rel, lm) for lm in lms)]
    v = np.asarray(vec)
    scored = []
    for c in cands:
        for lm in lms:
            if c is lm:
                continue
            d = (c.pos - lm.pos)[:2]
            along, perp = float(d @ v), abs(float(d[0] * v[1] - d[1] * v[0]))
            if along > 0.01 and perp < along:  # inside the 45-degree cone
                scored.append((along + 2.0 * perp, c))
    if not scored:
        return []
    scored.sort(key=lambda s: s[0])
    best = scored[0][1]
    return [best]


def _condition_holds(cond: Condition, ents: list[_Ent]) -> bool:
    if cond.kind == "exists":
        subjects = _candidates(cond.subject, ents)
        lms = _candidates(cond.landmark, ents)
        if not lms:
            raise GroundingError(f"no object matches {cond.landmark.text!r} in {cond.text!r}")
        found = any(_relation_holds(s, cond.relation, lm) for s in subjects for lm in lms
                    if s is not lm)
    else:
        a = _resolve(cond.subject, ents)
        b = _resolve(cond.landmark, ents)
        found = _relation_holds(a, cond.relation, b)
    return found != cond.negated


# --------------------------------------------------------------------------- RoboFollow helpers

def layout_world(scene: str, layout: str, seed: int = 0):
    """(objects, fixtures) as {name: ObjectState} from the scene file, without a simulator.

    Positions are the jittered spawn positions (``scenes.sample_layout``); good enough to
    ground referring expressions, which only compare positions and sizes.
    """
    from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
    from vla_bridge.embodiment.world import ObjectState

    spec = load_scene(scene)
    spawn = sample_layout(spec, layout, seed)
    objects, fixtures = {}, {}
    for name, pos in spawn.items():
        body = spec.body(name)
        rgb = getattr(body, "rgb", None)
        rgba = np.append(np.asarray(rgb if rgb is not None else (0.5, 0.5, 0.5), float), 1.0)
        size = body.full_size
        if size is None:  # bowl meshes: no metric size known
            size = np.array([2 * _IN_RADIUS, 2 * _IN_RADIUS, 0.05])
        state = ObjectState(name=name, pos=np.asarray(pos, float), quat=np.array([1.0, 0, 0, 0]),
                            size=np.asarray(size, float), rgba=rgba,
                            shape=getattr(body, "shape", "mesh"))
        (objects if name in spec.objects else fixtures)[name] = state
    return objects, fixtures


def coverage_report(scenes=("scene1", "scene2", "scene3", "scene4"), suite=None) -> dict:
    """Per scene: tasks, parsed, grounded source / target correct (vs the task registry)."""
    from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite

    suite = suite or load_suite()
    report = {}
    for scene in scenes:
        row = {"tasks": 0, "parsed": 0, "source_ok": 0, "target_checked": 0, "target_ok": 0,
               "errors": []}
        for task in suite.eval_tasks(scene):
            row["tasks"] += 1
            try:
                parsed = parse(task.instruction)
            except ParseError as exc:
                row["errors"].append(f"{task.id}: {exc}")
                continue
            row["parsed"] += 1
            objects, fixtures = layout_world(scene, task.layout, episode_seed(task.id, 1))
            try:
                g = ground(parsed, objects, fixtures)
            except GroundingError as exc:
                row["errors"].append(f"{task.id}: {exc}")
                continue
            row["source_ok"] += int(g.source == task.source)
            want = (task.anchor or task.target.get("target_object")
                    or task.target.get("target_label"))
            if want:
                row["target_checked"] += 1
                row["target_ok"] += int(g.target == want)
            if "route_mode" in task.target:  # Scene 3: route and final orientation, as worded
                said = {**task.target, **(task.target.get("wording") or {})}
                route_obj = said.get("route_object", said.get("route_reference"))
                kinds = {"avoid_over": "around", "pass_over": "via"}
                row.setdefault("route_ok", 0)
                row.setdefault("orientation_ok", 0)
                row["route_ok"] += int([(kinds[k], n) for k, n in g.steps[0].route]
                                       == [(said["route_mode"], route_obj)])
                ori = g.steps[0].orientation
                row["orientation_ok"] += int(ori is not None
                                             and f"{ori[0]}_{ori[1]}" == said["place_mode"])
        report[scene] = row
    return report


def _main() -> None:
    for scene, row in coverage_report().items():
        extra = "".join(f", {k.replace('_ok', '')} {row[k]}/{row['tasks']}"
                        for k in ("route_ok", "orientation_ok") if k in row)
        print(f"{scene}: {row['parsed']}/{row['tasks']} parsed, source grounded "
              f"{row['source_ok']}/{row['tasks']}, target {row['target_ok']}/"
              f"{row['target_checked']}{extra}")
        for e in row["errors"][:8]:
            print("   ", e)


# python -m vla_bridge.benchmarks.vifo.grounding: coverage of the task registry
if __name__ == "__main__":
    _main()
