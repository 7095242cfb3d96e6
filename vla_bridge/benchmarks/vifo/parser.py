"""Rule-based task parser: instruction -> task-conditioned cue semantics (LIBERO-VIFO App. C).

Language only, pure logic (regular expressions). ``parse(instruction) -> ParsedTask`` extracts,
per step, the action, the source entity (``e_src``), the target entity or region (``e_tgt``), the
relation or target state (``r_task``), the arm, route constraints ("avoid passing over the green
slab") and the final orientation. Entities are referring expressions (``EntityRef``: head noun,
colours, size/position attributes, a locator such as "to the right of the red ball", negated
constraints such as "that is not touching the table"). Conditionals ("If ..., ...; otherwise
...") and sequences ("First ..., then ...") keep their structure. Anything it cannot read raises
``ParseError`` naming the part. The vocabulary (``RELATION_VECTORS``, colours, nouns) is shared
with ``grounding``, which resolves a ``ParsedTask`` against a world state.

World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["ParseError", "EntityRef", "ParsedStep", "Condition", "ParsedTask", "parse",
           "RELATION_VECTORS"]


class ParseError(ValueError):
    """The instruction (or a part of it, named in the message) is outside the grammar."""


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
