"""Rule-based task parser: instruction -> task-conditioned cue semantics (LIBERO-VIFO App. C).

Pure logic (regular expressions and numpy), no rclpy. Two stages:

``parse(instruction) -> ParsedTask``
    Language only. Extracts, per step, the action, the source entity (``e_src``), the target
    entity or region (``e_tgt``), the relation or target state (``r_task``), the arm, route
    constraints ("avoid passing over the green slab") and the final orientation. Entities are
    referring expressions (``EntityRef``: head noun, colours, size/position attributes, a
    locator such as "to the right of the red ball", negated constraints such as "that is not
    touching the table"). Conditionals ("If ..., ...; otherwise ...") and sequences
    ("First ..., then ...") keep their structure. Anything it cannot read raises ``ParseError``
    naming the part it could not parse.

``ground(parsed, world, fixtures=None) -> GroundedTask``
    Resolves every referring expression against a ``WorldState`` (plus optional fixtures such as
    bowls and labels) to object names, evaluates conditions to pick the branch, and turns the
    relation into a world-frame placement direction. ``GroundingError`` when a reference is
    missing or ambiguous.

World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

__all__ = [
    "ParseError", "GroundingError", "EntityRef", "ParsedStep", "Condition", "ParsedTask",
    "GroundedStep", "GroundedTask", "parse", "ground", "RELATION_VECTORS", "layout_world",
    "coverage_report",
]


class ParseError(ValueError):
    """The instruction (or a part of it, named in the message) is outside the grammar."""


class GroundingError(ValueError):
    """A parsed reference matches no object, or several, in the given world state."""


# --------------------------------------------------------------------------- vocabulary

#: canonical relation -> unit placement direction in the world xy plane (None: not planar)
RELATION_VECTORS: dict[str, tuple[float, float] | None] = {
    "left_of": (-1.0, 0.0), "right_of": (1.0, 0.0), "behind": (0.0, 1.0),
    "in_front_of": (0.0, -1.0), "on": None, "in": None, "under": None, "above": None,
    "beside": None, "near": None, "towards": None, "part_of": None,
}

# (regex alternation, canonical relation); longer phrases first so "in front of" beats "in"
_REL_TABLE = [
    (r"to the right of|on the right of|right of|to the right side of", "right_of"),
    (r"to the left of|on the left of|left of|to the left side of", "left_of"),
    (r"in front of|to the front of|at the front of|in the front of", "in_front_of"),
    (r"behind|to the back of|at the back of|in the back of|at the rear of", "behind"),
    (r"on top of|onto|on", "on"),
    (r"into|inside of|inside|in", "in"),
    (r"next to|beside|by", "beside"),
    (r"underneath|under|below|beneath", "under"),
    (r"above|over", "above"),
    (r"towards|toward", "towards"),
    (r"close to|near", "near"),
]
_REL_OF = {}
for _alts, _canon in _REL_TABLE:
    for _a in _alts.split("|"):
        _REL_OF[_a] = _canon
_REL_RE = "|".join(a for alts, _ in _REL_TABLE for a in alts.split("|"))

COLORS = ("red", "green", "blue", "yellow", "black", "white", "orange", "purple", "pink",
          "brown", "gray", "grey", "cyan", "silver", "gold", "wooden")
SIZE_WORDS = {"larger": "larger", "bigger": "larger", "largest": "larger", "biggest": "larger",
              "big": "larger", "large": "larger", "smaller": "smaller", "smallest": "smaller",
              "small": "smaller", "little": "smaller", "tiny": "smaller"}
POSITION_WORDS = {"left": "left", "leftmost": "left", "right": "right", "rightmost": "right",
                  "front": "front", "frontmost": "front", "back": "back", "rear": "back",
                  "backmost": "back", "middle": "middle", "center": "middle", "centre": "middle",
                  "top": "top", "upper": "top", "topmost": "top", "bottom": "bottom",
                  "lower": "bottom", "first": "first", "second": "second", "third": "third",
                  "far": "back", "near": "front", "nearest": "front", "farthest": "back"}
#: head nouns with a primitive shape (None: any movable object)
NOUN_SHAPES = {"block": "box", "cube": "box", "slab": "box", "bar": "box", "brick": "box",
               "ball": "sphere", "sphere": "sphere", "cylinder": "cylinder",
               "object": None, "thing": None, "item": None, "one": None}
_ARTICLES = re.compile(r"^(?:the|a|an|any|some)\s+")

_PICK = r"(?:pick up|pick|grasp|grab|lift up|lift|take|get|hold)"
_PUT = r"(?:place|put|set|drop|lay|move|stack|insert)"
_VERB_START = re.compile(
    r"^(?:pick|grasp|grab|lift|take|get|place|put|set|drop|move|stack|push|open|close|shut|"
    r"turn|switch|slide|rotate|insert|hold)\b")


# --------------------------------------------------------------------------- parsed structure

@dataclass(frozen=True)
class EntityRef:
    """A referring expression, e.g. "the block to the right of the red ball"."""
    text: str
    noun: str = ""  # head noun ("block", "alphabet soup"); "" for a bare "it"
    colors: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()  # canonical size/position words: "larger", "left", "top"
    locator: tuple[str, "EntityRef"] | None = None  # ("right_of", <the red ball>)
    exclusions: tuple[tuple[str, object], ...] = ()  # ("color","blue"), ("rel",("in",<bowl>))
    members: tuple["EntityRef", ...] = ()  # "both the X and the Y"

    @property
    def shape(self) -> str | None:
        return NOUN_SHAPES.get(self.noun.split()[-1]) if self.noun else None

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class ParsedStep:
    """One action: e_src, e_tgt, r_task (+ arm, route, orientation)."""
    text: str
    action: str  # pick | place | push | open | close | turn_on | turn_off
    arm: str | None = None
    sources: tuple[EntityRef, ...] = ()
    target: EntityRef | None = None
    relation: str | None = None  # canonical relation (keys of RELATION_VECTORS)
    target_state: str | None = None  # "lifted", "open", "closed", "on", "off"
    route: tuple[tuple[str, EntityRef], ...] = ()  # ("avoid_over" | "pass_over", entity)
    orientation: tuple[str, str] | None = None  # ("long" | "short", "right" | "front" | ...)

    @property
    def source(self) -> EntityRef | None:
        return self.sources[0] if self.sources else None


@dataclass(frozen=True)
class Condition:
    """"the blue sphere is to the right of the red sphere" / "there is (no) X on Y"."""
    text: str
    kind: str  # "relation" | "exists"
    subject: EntityRef
    relation: str
    landmark: EntityRef | None
    negated: bool = False


@dataclass(frozen=True)
class ParsedTask:
    instruction: str
    steps: tuple[ParsedStep, ...]
    condition: Condition | None = None
    otherwise: tuple[ParsedStep, ...] = ()

    # the paper's (e_src, e_tgt, r_task) of the first step of the main branch
    @property
    def source(self) -> EntityRef | None:
        return self.steps[0].source

    @property
    def target(self) -> EntityRef | None:
        return self.steps[0].target

    @property
    def relation(self) -> str | None:
        return self.steps[0].relation

    @property
    def action(self) -> str:
        return self.steps[0].action

    @property
    def kind(self) -> str:
        if self.condition is not None:
            return "conditional"
        return "sequence" if len(self.steps) > 1 else "single"


# --------------------------------------------------------------------------- parsing

def _normalise(text: str) -> str:
    t = text.strip().lower()
    t = t.replace("’", "'").replace("–", "-")
    t = re.sub(r"\s+", " ", t)
    t = re.sub(r"\s*([,;])\s*", r"\1 ", t)
    return t.rstrip(" .!").strip()


def parse(instruction: str) -> ParsedTask:
    """Parse one instruction; ``ParseError`` says which part is outside the grammar."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise ParseError("empty instruction: nothing to parse")
    text = _normalise(instruction)
    m = re.match(r"^if (?P<cond>.+?), (?P<then>.+?); (?:otherwise|else),? (?P<else>.+)$", text)
    if m:
        cond = _parse_condition(m["cond"])
        return ParsedTask(instruction, _parse_steps(m["then"]), cond, _parse_steps(m["else"]))
    return ParsedTask(instruction, _parse_steps(text))


def _parse_steps(text: str) -> tuple[ParsedStep, ...]:
    m = re.match(r"^first,? (?P<a>.+?),? (?:and )?then,? (?P<b>.+)$", text)
    if m:
        return _parse_steps(m["a"]) + _parse_steps(m["b"])
    m = re.match(r"^(?P<a>.+?)[,;]? (?:and )?then,? (?P<b>.+)$", text)
    if m and _VERB_START.match(_strip_arm(m["b"])[1]):
        return _parse_steps(m["a"]) + _parse_steps(m["b"])
    # "A and B" where B starts with a new verb ("put the bowl in the drawer and close it"),
    # except "pick up X and place it ...", which is one pick-and-place clause
    for part in re.finditer(r",? and (?=\S)", text):
        left, right = text[:part.start()], text[part.end():]
        right_body = _strip_arm(right)[1]
        if not _VERB_START.match(right_body):
            continue
        if re.match(rf"^{_PUT} (?:it|them)\b", right_body) and \
                re.match(rf"^{_PICK}\b", _strip_arm(left)[1]):
            continue
        try:
            a = _parse_steps(left)
            b = _parse_steps(right)
        except ParseError:
            continue
        return a + tuple(_resolve_pronoun(s, a[-1]) for s in b)
    return (_parse_clause(text),)


def _resolve_pronoun(step: ParsedStep, previous: ParsedStep) -> ParsedStep:
    """"it" / "them" in a later clause: as a target, the previous clause's target ("put the
    bowl in the drawer and close it" -> the drawer; "turn on the stove and put the pot on it"
    -> the stove); as a source, the previous clause's source ("... and place them in the tray").
    """
    ref = previous.target or previous.source
    if step.target is not None and step.target.text in ("it", "them"):
        step = replace(step, target=_pronoun_target(step.target, ref, previous))
    if step.sources and step.sources[0].text in ("it", "them"):
        src = previous.source or ref
        step = replace(step, sources=(src,) + step.sources[1:])
    return step


def _pronoun_target(pron: EntityRef, ref: EntityRef | None, previous: ParsedStep) -> EntityRef:
    if ref is None:
        raise ParseError(f"cannot tell what {pron.text!r} refers to in {previous.text!r}")
    return ref


def _strip_arm(text: str) -> tuple[str | None, str]:
    pats = [
        r"^use (?:your|the) (?P<arm>left|right) (?:arm|hand|gripper) to (?P<rest>.+)$",
        r"^with (?:your|the) (?P<arm>left|right) (?:arm|hand|gripper),? (?P<rest>.+)$",
        r"^(?P<rest>.+?),? (?:using|with) (?:your|the) (?P<arm>left|right) (?:arm|hand|gripper)$",
        r"^(?P<arm>left|right) (?:arm|hand|gripper):? (?P<rest>.+)$",
    ]
    for p in pats:
        m = re.match(p, text)
        if m:
            return m["arm"], m["rest"].strip()
    return None, text.strip()


def _rel(phrase: str) -> str:
    return _REL_OF[phrase.strip()]


def _parse_clause(text: str) -> ParsedStep:
    arm, body = _strip_arm(text)
    body = re.sub(r"^(?:please |now |then )", "", body)
    R = _REL_RE

    # 1. pick up X, <route>, and place it <rel> Y [with the long side facing right]
    m = re.match(rf"^{_PICK} (?P<src>.+?), (?P<route>.+?),? and {_PUT} (?:it|them) "
                 rf"(?P<rel>{R}) (?P<tgt>.+?)(?: with (?P<ori>.+))?$", body)
    if m:
        return ParsedStep(text, "place", arm, (_parse_entity(m["src"]),), _parse_entity(m["tgt"]),
                          _rel(m["rel"]), None, _parse_route(m["route"]),
                          _parse_orientation(m["ori"]) if m["ori"] else None)
    # 2. take X off Y and place it <rel> Z
    m = re.match(rf"^(?:take|remove|lift) (?P<src>.+?) (?:off|from) (?:the top of )?(?P<sup>.+?) "
                 rf"and {_PUT} (?:it|them) (?P<rel>{R}) (?P<tgt>.+)$", body)
    if m:
        src = _with_locator(_parse_entity(m["src"]), "on", _parse_entity(m["sup"]))
        return ParsedStep(text, "place", arm, (src,), _parse_entity(m["tgt"]), _rel(m["rel"]))
    # 3. pick up X and place it <rel> Y  [with ...]
    m = re.match(rf"^{_PICK} (?P<src>.+?) and {_PUT} (?:it|them) (?P<rel>{R}) "
                 rf"(?P<tgt>.+?)(?: with (?P<ori>the (?:long|short) .+))?$", body)
    if m:
        ori = _parse_orientation(m["ori"]) if m["ori"] else None
        return ParsedStep(text, "place", arm, _parse_sources(m["src"]), _parse_entity(m["tgt"]),
                          _rel(m["rel"]), orientation=ori)
    # 4. move / place X from (the top of) Y onto Z
    m = re.match(rf"^(?:move|place|put|transfer|stack|take) (?P<src>.+?) (?:from|off) "
                 rf"(?:the top of )?(?P<sup>.+?) (?P<rel>onto|on top of|on|into|inside|in|to) "
                 rf"(?P<tgt>.+)$", body)
    if m:
        src = _with_locator(_parse_entity(m["src"]), "on", _parse_entity(m["sup"]))
        rel = "on" if m["rel"] == "to" else _rel(m["rel"])
        return ParsedStep(text, "place", arm, (src,), _parse_entity(m["tgt"]), rel)
    # 5. push X towards / to / into Y
    m = re.match(rf"^(?:push|slide|shove|nudge) (?P<src>.+?) (?P<rel>{R}|to) (?P<tgt>.+)$", body)
    if m:
        rel = "towards" if m["rel"] == "to" else _rel(m["rel"])
        return ParsedStep(text, "push", arm, _parse_sources(m["src"]), _parse_entity(m["tgt"]),
                          rel)
    # 6. put / place / stack X <rel> Y
    m = re.match(rf"^{_PUT} (?P<src>.+?) (?P<rel>{R}) (?P<tgt>.+)$", body)
    if m:
        return ParsedStep(text, "place", arm, _parse_sources(m["src"]), _parse_entity(m["tgt"]),
                          _rel(m["rel"]))
    # 7. state changes
    m = re.match(r"^(?P<verb>open|close|shut) (?P<tgt>.+)$", body)
    if m:
        verb = "close" if m["verb"] == "shut" else m["verb"]
        return ParsedStep(text, verb, arm, (), _parse_entity(m["tgt"]), None,
                          "open" if verb == "open" else "closed")
    m = re.match(r"^(?:turn|switch) (?P<state>on|off) (?P<tgt>.+)$", body) or \
        re.match(r"^(?:turn|switch) (?P<tgt>.+) (?P<state>on|off)$", body)
    if m:
        return ParsedStep(text, f"turn_{m['state']}", arm, (), _parse_entity(m["tgt"]), None,
                          m["state"])
    # 8. pick up X
    m = re.match(rf"^{_PICK} (?P<src>.+)$", body)
    if m:
        return ParsedStep(text, "pick", arm, _parse_sources(m["src"]), None, None, "lifted")
    raise ParseError(f"cannot parse the action in {body!r}: expected pick up / place / put / "
                     f"stack / move / push / take ... off / open / close / turn on|off")


def _with_locator(e: EntityRef, rel: str, landmark: EntityRef) -> EntityRef:
    if e.locator is not None:
        return e
    return replace(e, text=f"{e.text} ({rel} {landmark.text})", locator=(rel, landmark))


def _parse_route(text: str) -> tuple[tuple[str, EntityRef], ...]:
    out = []
    for part in re.split(r",? and |, ", text):
        part = part.strip()
        m = (re.match(r"^(?:avoid passing over|avoid going over|do not pass over|don't pass over|"
                      r"avoid) (?P<e>.+?)(?: by detouring around it| on the way)?$", part)
             or re.match(r"^(?:go|move|detour) around (?P<e>.+?)(?: instead of passing over it)?"
                         r"(?: on the way)?$", part))
        if m:
            out.append(("avoid_over", _parse_entity(m["e"])))
            continue
        m = re.match(r"^(?:pass over|move above|go over|move over|pass above|go above) (?P<e>.+?)"
                     r"(?: on the way)?$", part)
        if m:
            out.append(("pass_over", _parse_entity(m["e"])))
            continue
        raise ParseError(f"cannot parse the route constraint {part!r}: expected 'avoid passing "
                         f"over X', 'go around X', 'pass over X' or 'move above X on the way'")
    return tuple(out)


def _parse_orientation(text: str) -> tuple[str, str]:
    m = re.match(r"^(?:the )?(?P<side>long|short)(?:er)? (?:side|face|edge)s? "
                 r"(?:facing|pointing|pointing to|pointing towards|towards|to) (?:the )?"
                 r"(?P<dir>right|left|front|back)$", text.strip())
    if not m:
        raise ParseError(f"cannot parse the orientation {text!r}: expected 'the long/short side "
                         f"facing right/left/front/back'")
    return m["side"], m["dir"]


def _parse_sources(text: str) -> tuple[EntityRef, ...]:
    t = text.strip()
    m = re.match(r"^both (?P<a>.+?) and (?P<b>.+)$", t)
    if m:
        return (_parse_entity(m["a"]), _parse_entity(m["b"]))
    return (_parse_entity(t),)


def _parse_entity(text: str) -> EntityRef:
    raw = text.strip().strip(",")
    if not raw:
        raise ParseError("empty object reference")
    t = raw
    if t in ("it", "them", "that", "this one"):
        return EntityRef(text=t)
    exclusions: list[tuple[str, object]] = []
    # relative clause: "that is (not) ..."
    m = re.match(r"^(?P<base>.+?) (?:that|which|who) (?:is|are) (?P<neg>not )?(?P<pred>.+)$", t)
    if m:
        t = m["base"]
        pred = _parse_predicate(m["pred"])
        # negated predicates exclude candidates; positive ones ("that is on the cube") must hold
        exclusions.append(pred if m["neg"] else ("must", pred))
    t = _ARTICLES.sub("", t)
    m = re.match(r"^(?P<head>.+?) (?:at|in|on|to) the (?P<pos>(?:far )?(?:front|back|middle|left|"
                 r"right|center|centre|top|bottom|rear))(?: side| one| position| end)?$", t)
    if m:  # "the black bowl at the front", "the ball on the left side"
        t = f"{m['pos'].split()[-1]} {m['head']}"
    locator = None
    m = re.match(rf"^(?P<head>.+?) (?P<rel>{_REL_RE}|from the top of|from|of|off) (?P<lm>.+)$", t)
    if m:
        lm = _ARTICLES.sub("", m["lm"])
        lm_words = lm.split()
        if lm_words and all(w in POSITION_WORDS or w in ("side", "position") for w in lm_words) \
                and m["rel"] not in ("of",):
            # "the bowl in the middle", "the ball on the left side" -> attribute
            t = m["head"] + " " + " ".join(w for w in lm_words if w in POSITION_WORDS)
        else:
            rel = m["rel"]
            canon = {"from": "on", "off": "on", "from the top of": "on",
                     "of": "part_of"}.get(rel) or _rel(rel)
            locator = (canon, _parse_entity(m["lm"]))
            t = m["head"]
    words = [w for w in re.split(r"[\s]+", t) if w]
    colors, attrs, noun = [], [], []
    for w in words:
        if w.startswith("non-") and w[4:] in COLORS:
            exclusions.append(("color", w[4:]))
        elif w in COLORS and not noun:
            colors.append("gray" if w == "grey" else w)
        elif w in SIZE_WORDS and not noun:
            attrs.append(SIZE_WORDS[w])
        elif w in POSITION_WORDS and (not noun or w in ("left", "right", "middle")):
            attrs.append(POSITION_WORDS[w])
        elif w in ("one", "position", "side") and (noun or attrs):
            continue
        elif w == "and" and colors and not noun:
            continue  # "yellow and white mug"
        else:
            noun.append(w)
    noun_text = " ".join(noun)
    if not noun_text and not colors and not attrs:
        raise ParseError(f"cannot find an object in {raw!r}")
    if noun_text.endswith("s") and noun_text[:-1] in NOUN_SHAPES:
        noun_text = noun_text[:-1]
    return EntityRef(text=raw, noun=noun_text or "object", colors=tuple(colors),
                     attributes=tuple(attrs), locator=locator, exclusions=tuple(exclusions))


def _parse_predicate(pred: str) -> tuple[str, object]:
    p = pred.strip()
    if re.match(r"^(?:touching|on|resting on|standing on) the table$", p):
        return ("touching", "table")
    m = re.match(r"^(?:a|an) (?P<n>\w+)$", p)
    if m and m["n"] in NOUN_SHAPES:
        return ("noun", m["n"])
    if p in COLORS:
        return ("color", p)
    m = re.match(r"^(?:the |in the |on the |at the )?(?P<w>\w+)(?: position| side| one)?$", p)
    if m and m["w"] in POSITION_WORDS:
        return ("position", POSITION_WORDS[m["w"]])
    if m and m["w"] in SIZE_WORDS:
        return ("size", SIZE_WORDS[m["w"]])
    m = re.match(rf"^(?P<rel>{_REL_RE}) (?P<lm>.+)$", p)
    if m:
        return ("rel", (_rel(m["rel"]), _parse_entity(m["lm"])))
    raise ParseError(f"cannot parse the relative clause {pred!r}")


def _parse_condition(text: str) -> Condition:
    t = text.strip()
    m = re.match(r"^there (?:is|are) (?P<no>no |not any |not an? )?(?P<e>.+)$", t)
    if m:
        ent = _parse_entity(m["e"])
        if ent.locator is None:
            raise ParseError(f"cannot parse the condition {text!r}: 'there is X' needs a place")
        rel, lm = ent.locator
        return Condition(t, "exists", replace(ent, locator=None), rel, lm, bool(m["no"]))
    m = re.match(rf"^(?P<s>.+?) (?:is|are) (?P<neg>not )?(?P<rel>{_REL_RE}) (?P<lm>.+)$", t)
    if m:
        return Condition(t, "relation", _parse_entity(m["s"]), _rel(m["rel"]),
                         _parse_entity(m["lm"]), bool(m["neg"]))
    raise ParseError(f"cannot parse the condition {text!r}: expected 'X is <relation> Y' or "
                     f"'there is (no) X <relation> Y'")


# --------------------------------------------------------------------------- grounding

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
    from vla_bridge.scenes import load_scene, sample_layout
    from vla_bridge.world import ObjectState

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
    from vla_bridge.tasks import episode_seed, load_suite

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


if __name__ == "__main__":  # python -m vla_bridge.cues.parser: coverage of the task registry
    _main()
