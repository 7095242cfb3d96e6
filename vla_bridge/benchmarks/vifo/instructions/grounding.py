"""Grounding: a ``ParsedTask`` + a world state -> ``GroundedTask`` (LIBERO-VIFO App. C).

Pure logic (numpy), no rclpy, no simulator. ``ground(parsed, world, fixtures=None)`` resolves
every referring expression against a ``WorldState`` (plus optional fixtures such as bowls,
labels and drawers) to object names, evaluates conditions to pick the branch, and turns the
relation into a world-frame placement direction. Nouns match name words ("cookie box" ->
cookies_1: a container word may be left out of the name); locators are relations to other
objects, "between A and B" (nearest the midpoint, inside the band between them) or regions of
the table ("from the table center": the table entity's centre, else the world origin).
``GroundingError`` when a reference matches nothing, or several equally well (directional
relations and position words within 1 cm, "next to" within 3 cm, the middle of an even
number), or when two readings of the words (``ParsedStep.alternatives``) ground differently;
the message names the phrase and the candidates.

RoboFollow helpers: ``layout_world`` (a scene layout's objects without a simulator) and
``coverage_report`` (how much of the task registry parses and grounds correctly;
``vla-bridge grounding`` prints it).

World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from vla_bridge.benchmarks.vifo.instructions.parser import (COLORS, NOUN_SHAPES, RELATION_VECTORS,
                                                            Condition, EntityRef, ParsedStep,
                                                            ParsedTask, ParseError, parse)

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
    return GroundedTask(parsed, tuple(_ground_step(s, ents) for s in steps), branch)


def _ground_step(step: ParsedStep, ents: list[_Ent]) -> GroundedStep:
    """The reading of ``step`` that the world supports (``ParsedStep.alternatives``: other
    attachments of the same words); two readings that ground differently are ambiguous."""
    done, errors = [], []
    for reading in (step,) + step.alternatives:
        try:
            done.append((reading, _ground_reading(reading, ents)))
        except GroundingError as exc:
            errors.append(exc)
    if not done:
        raise errors[0]
    (first, g), *others = done
    for other, h in others:
        if (h.action, h.sources, h.target, h.relation, h.route) != \
                (g.action, g.sources, g.target, g.relation, g.route):
            raise GroundingError(f"{step.text!r} is ambiguous: {_reading(first, g)}, or "
                                 f"{_reading(other, h)}")
    return g


def _reading(parsed: ParsedStep, g: GroundedStep) -> str:
    words = " + ".join(repr(e.text) for e in parsed.sources)
    if parsed.target is not None:
        words += f" {parsed.relation} {parsed.target.text!r}"
    route = "".join(f" ({k} {n})" for k, n in g.route)
    return f"{words} -> {', '.join(g.sources)} {g.relation or ''} {g.target or ''}{route}".strip()


def _ground_reading(s: ParsedStep, ents: list[_Ent]) -> GroundedStep:
    srcs = tuple(name for e in s.sources for name in _resolve_names(e, ents))
    tgt = _resolve(s.target, ents).name if s.target is not None else None
    route = tuple((k, _resolve(e, ents).name) for k, e in s.route)
    return GroundedStep(s.action, s.arm, srcs[0] if srcs else None, tgt, s.relation,
                        s.target_state, srcs, route, s.orientation)


def _resolve_names(ref: EntityRef, ents: list[_Ent]) -> list[str]:
    """Source names: one object, or ``ref.count`` of them ("both moka pots")."""
    if ref.count == 1:
        return [_resolve(ref, ents, movable=True).name]
    cands = _candidates(ref, ents, movable=True)
    if len(cands) != ref.count:
        found = ", ".join(sorted(c.name for c in cands)) or "none"
        raise GroundingError(f"{ref.text!r} names {ref.count} objects; matching: {found}")
    return sorted(c.name for c in cands)


def _resolve(ref: EntityRef, ents: list[_Ent], movable: bool = False) -> _Ent:
    cands = _candidates(ref, ents, movable)
    if not cands:
        raise GroundingError(f"no object matches {ref.text!r}")
    if len(cands) > 1:
        names = ", ".join(sorted(c.name for c in cands))
        raise GroundingError(f"{ref.text!r} is ambiguous: {names}")
    return cands[0]


#: container words a name may leave out: "the cookie box" is "cookies_1"
_PACKAGING = ("box", "carton", "bottle", "can", "jar", "package", "pack", "container")


def _noun_match(ref: EntityRef, e: _Ent, movable: bool) -> bool:
    words = (ref.noun or "object").split()
    head = words[-1]
    if head in NOUN_SHAPES:
        shape = NOUN_SHAPES[head]
        return e.kind == "object" and (shape is None or e.shape == shape)
    if movable and e.kind != "object" and head not in e.tokens:
        return False
    if all(_has_word(w, e.tokens) for w in words):
        return True
    content = [w for w in words if w not in _PACKAGING]
    if content and len(content) < len(words):
        return all(_has_word(w, e.tokens) for w in content)
    return len(words) == 1 and e.kind == head


def _has_word(word: str, tokens: frozenset) -> bool:
    """"cookie" in cookies_1, "pots" in moka_pot_1."""
    return word in tokens or f"{word}s" in tokens or f"{word}es" in tokens or \
        (word.endswith("s") and word[:-1] in tokens)


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
        cands = _locate(cands, ref, ents)
    return cands


def _locate(cands: list[_Ent], ref: EntityRef, ents: list[_Ent]) -> list[_Ent]:
    """Candidates that satisfy ``ref.locator`` (the best one for directional relations)."""
    rel, lm_ref = ref.locator
    if rel == "between":
        a, b = (_resolve(m, ents) for m in lm_ref.members)
        return _between(cands, a, b)
    if lm_ref.noun == "table":
        return _on_table(cands, lm_ref, ents)
    lms = _candidates(lm_ref, ents)
    if not lms:
        raise GroundingError(f"no object matches {lm_ref.text!r} (in {ref.text!r})")
    return _best_by_relation(cands, rel, lms)


def _unique_best(cands: list[_Ent], key, margin: float) -> list[_Ent]:
    """[the candidate with the smallest key], or the tied front runners (within ``margin``)."""
    ranked = sorted(cands, key=key)
    return [e for e in ranked if key(e) - key(ranked[0]) < margin] if ranked else []


def _between(cands: list[_Ent], a: _Ent, b: _Ent) -> list[_Ent]:
    """"X between A and B": inside the band between the two, nearest the midpoint."""
    ab = (b.pos - a.pos)[:2]
    length = float(np.linalg.norm(ab))
    inside = []
    for c in cands:
        d = (c.pos - a.pos)[:2]
        t = float(d @ ab) / max(length ** 2, 1e-9)
        off = abs(float(d[0] * ab[1] - d[1] * ab[0])) / max(length, 1e-9)
        if c is not a and c is not b and 0.1 < t < 0.9 and off < 0.4 * length:
            inside.append(c)
    mid = (a.pos + b.pos)[:2] / 2
    return _unique_best(inside, lambda e: float(np.linalg.norm(e.pos[:2] - mid)), _TIE)


def _on_table(cands: list[_Ent], table: EntityRef, ents: list[_Ent]) -> list[_Ent]:
    """"X from the table center" / "on the table": a region of the table, not an object. The
    centre is a world entity named "table" when there is one, else the world origin (LIBERO's
    table frame); objects resting on another object are not on the table."""
    free = [c for c in cands if "table" not in c.tokens
            and not any(o is not c and _relation_holds(c, "on", o) for o in ents)]
    for attr in table.attributes:
        if attr == "middle":
            centre = next((e.pos[:2] for e in ents if "table" in e.tokens), np.zeros(2))
            free = _unique_best(free, lambda e: float(np.linalg.norm(e.pos[:2] - centre)), _TIE)
        else:
            free = _apply_attribute(attr, free)
    return free


_TIE = 0.01  # metres: two candidates closer than this to the best are equally good


def _apply_attribute(attr: str, cands: list[_Ent]) -> list[_Ent]:
    if len(cands) <= 1:
        return cands
    named = [e for e in cands if attr in e.tokens]
    if named and len(named) < len(cands):
        return named
    axis = {"left": (0, 1), "right": (0, -1), "front": (1, 1), "back": (1, -1),
            "bottom": (2, 1), "top": (2, -1)}.get(attr)
    if axis is not None:
        return _unique_best(cands, lambda e: axis[1] * float(e.pos[axis[0]]), _TIE)
    if attr in ("smaller", "larger"):
        sign = 1 if attr == "smaller" else -1
        return _unique_best(cands, lambda e: sign * e.volume, 1e-9)
    xs = sorted(cands, key=lambda e: e.pos[0])
    if attr == "middle":  # of an even number: the two central ones tie
        return xs[(len(xs) - 1) // 2: len(xs) // 2 + 1]
    if attr in ("first", "second", "third"):
        i = ("first", "second", "third").index(attr)
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


_BESIDE_MARGIN = 0.03  # metres: "next to the plate" needs one clearly nearest candidate


def _best_by_relation(cands: list[_Ent], rel: str, lms: list[_Ent]) -> list[_Ent]:
    """Directional relations: the candidate best inside the 45-degree cone (ties: all of
    them); "next to" / "near": the clearly nearest; others: every candidate that holds."""
    vec = RELATION_VECTORS.get(rel)
    if vec is None:
        held = [c for c in cands if any(c is not lm and _relation_holds(c, rel, lm) for lm in lms)]
        if rel not in ("beside", "near"):
            return held
        return _unique_best(held, lambda c: min(float(np.linalg.norm((c.pos - lm.pos)[:2]))
                                                for lm in lms if lm is not c), _BESIDE_MARGIN)
    v = np.asarray(vec)
    scores = {}
    for c in cands:
        for lm in lms:
            d = (c.pos - lm.pos)[:2]
            along, perp = float(d @ v), abs(float(d[0] * v[1] - d[1] * v[0]))
            if c is not lm and along > 0.01 and perp < along:  # inside the 45-degree cone
                scores[c.name] = min(scores.get(c.name, np.inf), along + 2.0 * perp)
    inside = [c for c in cands if c.name in scores]
    return _unique_best(inside, lambda c: scores[c.name], _TIE)


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
