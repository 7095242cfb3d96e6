"""Referring expressions and conditions for the LIBERO-VIFO parser (vocabulary and grammar).

Language only, pure logic (regular expressions). ``parse_entity(text) -> EntityRef`` reads one
referring expression: a determiner ("the", "a"; "both" -> two objects; "that" -> refers back to
something already mentioned), colours, size and position words ("larger", "leftmost", "at the
front", "the center of the table"), the head noun, one locator ("to the right of the red ball",
"between the plate and the ramekin", "from the table center", "on the cookie box", "in the top
drawer of the cabinet") and constraints ("that is not touching the table", "non-leftmost").
Every word must be accounted for: a word that is neither vocabulary nor a plausible noun word
(an article, preposition, verb or conjunction inside the noun) raises ``ParseError`` naming
the unread span, so a garbled phrase never grounds silently to whatever its last word names.
``parse_condition(text) -> Condition`` reads the condition of a conditional ("X is <relation>
Y", "there is (no) X <relation> Y", "Y contains X", "Y has X on top", "Y is (non-)empty").

The vocabulary (``RELATION_VECTORS``, ``COLORS``, ``NOUN_SHAPES``, ...) is shared with
``parser`` (clauses, steps, conditionals; it re-exports these names) and ``grounding`` (world
state -> object names).
World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = ["ParseError", "EntityRef", "RELATION_VECTORS", "COLORS", "SIZE_WORDS",
           "POSITION_WORDS", "NOUN_SHAPES", "GENERIC_NOUNS", "PRONOUNS", "REL_RE", "relation",
           "Condition", "parse_entity", "parse_sources", "parse_predicate", "parse_condition"]


class ParseError(ValueError):
    """The instruction (or a part of it, named in the message) is outside the grammar."""


# --------------------------------------------------------------------------- vocabulary

#: canonical relation -> unit placement direction in the world xy plane (None: not planar)
RELATION_VECTORS: dict[str, tuple[float, float] | None] = {
    "left_of": (-1.0, 0.0), "right_of": (1.0, 0.0), "behind": (0.0, 1.0),
    "in_front_of": (0.0, -1.0), "on": None, "in": None, "under": None, "above": None,
    "beside": None, "near": None, "towards": None, "part_of": None, "between": None,
}

_REL_TABLE = {
    "right_of": "to the right of|on the right of|right of|to the right side of|"
                "on the right side of|at the right of",
    "left_of": "to the left of|on the left of|left of|to the left side of|on the left side of|"
               "at the left of",
    "in_front_of": "in front of|to the front of|at the front of|in the front of",
    "behind": "behind|to the back of|at the back of|in the back of|at the rear of",
    "on": "on top of|onto|on",
    "in": "into|inside of|inside|in",
    "beside": "next to|beside|by",
    "under": "underneath|under|below|beneath",
    "above": "above|over",
    "towards": "towards|toward|in the direction of",
    "near": "close to|near",
}
_REL_OF = {alt: canon for canon, alts in _REL_TABLE.items() for alt in alts.split("|")}
# "at the position right of X", "in the spot to the left of X"
_SPOT = r"(?:(?:at|in|to|into|on) (?:the|a) (?:position|spot|place|location|area) )"
#: any relation phrase; longer phrases first so "in front of" beats "in"
REL_RE = _SPOT + "?(?:" + "|".join(sorted(_REL_OF, key=len, reverse=True)) + ")"


def relation(phrase: str) -> str:
    """Canonical relation of a phrase matched by ``REL_RE`` ("on the right side of" -> right_of)."""
    return _REL_OF[re.sub(f"^{_SPOT}", "", phrase.strip())]


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
GENERIC_NOUNS = ("object", "thing", "item", "one", "something", "anything")
_SHAPE_ADJECTIVES = ("square", "round", "rectangular", "circular")
PRONOUNS = ("it", "them", "that", "this", "this one", "that one")
_VERBS = ("pick", "place", "put", "set", "drop", "lay", "move", "stack", "insert", "push",
          "slide", "open", "close", "shut", "turn", "switch", "grasp", "grab", "take", "lift",
          "hold", "remove", "carry", "bring", "transfer", "use", "using", "avoid", "pass", "go")
#: words that never belong inside a noun: a referring expression containing one is garbled
_FUNCTION_WORDS = frozenset((
    "the", "a", "an", "and", "or", "but", "nor", "either", "neither", "with", "without", "to",
    "of", "in", "on", "at", "by", "from", "into", "onto", "over", "under", "between", "while",
    "then", "before", "after", "your", "my", "it", "them", "its", "that", "which", "who", "is",
    "are", "not", "no", "if", "when", "otherwise", "else", "please", "up", "off", "so", "yes",
    "both", "each", "all", "any", "some", "this", "these", "those", "there", "here") + _VERBS)
_DETERMINERS = re.compile(r"^(?P<det>the|a|an|any|some|both|that|this|those|these) ")


# --------------------------------------------------------------------------- EntityRef

@dataclass(frozen=True)
class EntityRef:
    """A referring expression, e.g. "the block to the right of the red ball"."""
    text: str
    noun: str = ""  # head noun ("block", "alphabet soup"); "" for a bare "it"
    colors: tuple[str, ...] = ()
    attributes: tuple[str, ...] = ()  # canonical size/position words: "larger", "left", "top"
    # ("right_of", <the red ball>); ("between", EntityRef(members=(<plate>, <ramekin>)))
    locator: tuple[str, "EntityRef"] | None = None
    exclusions: tuple[tuple[str, object], ...] = ()  # ("color","blue"), ("rel",("in",<bowl>))
    members: tuple["EntityRef", ...] = ()  # "the plate and the ramekin"
    count: int = 1  # "both moka pots": 2
    anaphoric: bool = False  # "that cylinder": the parser replaces it by its antecedent

    @property
    def shape(self) -> str | None:
        return NOUN_SHAPES.get(self.noun.split()[-1]) if self.noun else None

    @property
    def generic(self) -> bool:
        """"the object", "the one on the left": any movable object."""
        return self.noun in ("", "object")

    def describe(self) -> str:
        return self.text


# --------------------------------------------------------------------------- grammar

def parse_sources(text: str) -> tuple[EntityRef, ...]:
    """"both the X and the Y" -> two references; anything else -> one."""
    m = re.match(r"^both (?P<a>.+?) and (?P<b>.+)$", text.strip())
    if m:
        return (parse_entity(m["a"]), parse_entity(m["b"]))
    return (parse_entity(text),)


def parse_entity(text: str) -> EntityRef:
    """One referring expression; ``ParseError`` names the words it cannot read."""
    raw = text.strip().strip(",").strip()
    if not raw:
        raise ParseError("empty object reference")
    if raw in PRONOUNS:
        return EntityRef(text=raw)
    if raw in ("something", "anything"):
        return EntityRef(text=raw, noun="object")
    body, exclusions = _relative_clause(raw)
    m = _DETERMINERS.match(body)
    det = m["det"] if m else ""
    body = body[m.end():] if m else body
    m = re.match(r"^(?P<pos>\w+)(?: side| part| end)? of (?P<whole>.+)$", body)
    if m and m["pos"] in POSITION_WORDS:  # "the center of the table": a part of the table
        whole = parse_entity(m["whole"])
        return replace(whole, text=raw, attributes=whole.attributes + (POSITION_WORDS[m["pos"]],))
    body, locator = _locator(_trailing_position(body))
    ref = _noun_phrase(body, raw, plural=det in ("both", "those", "these"))
    return replace(ref, locator=locator, exclusions=ref.exclusions + exclusions,
                   count=2 if det == "both" else 1, anaphoric=det in ("that", "this"))


def _relative_clause(raw: str) -> tuple[str, tuple[tuple[str, object], ...]]:
    """"X that is (not) P": negated predicates exclude candidates, positive ones must hold."""
    m = re.match(r"^(?P<base>.+?) (?:that|which|who) (?:is|are) (?P<neg>not )?(?P<pred>.+)$", raw)
    if not m:
        return raw, ()
    pred = parse_predicate(m["pred"])
    return m["base"], (pred if m["neg"] else ("must", pred),)


def _trailing_position(body: str) -> str:
    """"black bowl at the front", "ball on the left side", "one in the middle" -> "front ..."."""
    m = re.match(r"^(?P<head>.+?) (?:at|in|on|to) the (?P<pos>(?:far )?(?:front|back|middle|left|"
                 r"right|center|centre|top|bottom|rear))(?: side| one| position| end)?$", body)
    return f"{m['pos'].split()[-1]} {m['head']}" if m else body


_LOCATOR = re.compile(rf"^(?P<head>.+?) (?P<rel>{REL_RE}|from the top of|from|off of|off|of) "
                      r"(?P<lm>.+)$")
_LOCATOR_WORDS = {"from": "on", "off": "on", "off of": "on", "from the top of": "on",
                  "of": "part_of"}


def _locator(body: str) -> tuple[str, tuple[str, EntityRef] | None]:
    m = re.match(r"^(?P<head>.+?) between (?P<a>.+?) and (?P<b>.+)$", body)
    if m:
        pair = EntityRef(text=f"{m['a']} and {m['b']}",
                         members=(parse_entity(m["a"]), parse_entity(m["b"])))
        return m["head"], ("between", pair)
    m = _LOCATOR.match(body)
    if not m:
        return body, None
    canon = _LOCATOR_WORDS.get(m["rel"]) or relation(m["rel"])
    return m["head"], (canon, parse_entity(m["lm"]))


def _noun_phrase(body: str, raw: str, plural: bool = False) -> EntityRef:
    roles = {"color": [], "attribute": [], "noun": [], "exclusion": []}
    words = body.split()
    for i, w in enumerate(words):
        role, value = _word_role(w, roles, last=i == len(words) - 1, raw=raw)
        if role == "unread":
            raise ParseError(f"cannot read {' '.join(words[i:])!r} in the object reference "
                             f"{raw!r}: not a colour, size, position or noun word")
        if role != "skip":
            roles[role].append(value)
    if not roles["noun"] and not roles["color"]:
        raise ParseError(f"no object named in {raw!r}: expected a noun such as 'block', "
                         f"'bowl' or 'one'")
    noun = _singular(" ".join(roles["noun"]), plural)
    return EntityRef(text=raw, noun="object" if noun in GENERIC_NOUNS or not noun else noun,
                     colors=tuple(roles["color"]), attributes=tuple(roles["attribute"]),
                     exclusions=tuple(roles["exclusion"]))


def _word_role(w: str, roles: dict, last: bool, raw: str) -> tuple[str, object]:
    """What one word of a noun phrase is, given the words before it (``roles``)."""
    before_noun = not roles["noun"]
    if w.startswith("non-"):
        return "exclusion", _negated_word(w[4:], raw)
    if w in COLORS and before_noun:
        return "color", "gray" if w == "grey" else w
    if w in SIZE_WORDS and before_noun:
        return "attribute", SIZE_WORDS[w]
    if w in POSITION_WORDS and (before_noun or (last and POSITION_WORDS[w] == "middle")):
        return "attribute", POSITION_WORDS[w]  # "left cube", "table center"
    if w in _SHAPE_ADJECTIVES and before_noun:
        return "attribute", w  # "square label"
    if (w in ("position", "side") and roles["attribute"] and before_noun) or \
            (w == "and" and roles["color"] and before_noun and not last):
        return "skip", None  # "left side", "yellow and white mug"
    if w in _FUNCTION_WORDS or not re.fullmatch(r"[a-z][a-z0-9'\-]*", w):
        return "unread", None
    return "noun", w


def _singular(noun: str, plural: bool) -> str:
    """"cubes" -> "cube" (shape nouns always; any noun after "both"): "moka pots" -> "moka pot"."""
    if not noun.endswith("s"):
        return noun
    head, _, last = noun.rpartition(" ")
    if last[:-1] in NOUN_SHAPES or plural:
        single = last[:-2] if re.search(r"(?:x|ch|sh|ss)es$", last) else last[:-1]
        return f"{head} {single}".strip()
    return noun


def _negated_word(word: str, raw: str) -> tuple[str, object]:
    """"non-blue" / "non-leftmost" / "non-larger" / "non-cube" -> an exclusion."""
    if word in COLORS:
        return ("color", "gray" if word == "grey" else word)
    if word in POSITION_WORDS:
        return ("position", POSITION_WORDS[word])
    if word in SIZE_WORDS:
        return ("size", SIZE_WORDS[word])
    if word in NOUN_SHAPES:
        return ("noun", word)
    raise ParseError(f"cannot read 'non-{word}' in {raw!r}: expected non-<colour>, "
                     f"non-<position>, non-<size> or non-<shape>")


def parse_predicate(pred: str) -> tuple[str, object]:
    """The predicate of a relative clause: "touching the table", "a cube", "blue",
    "leftmost", "in the bowl"."""
    p = pred.strip()
    if re.match(r"^(?:touching|on|resting on|standing on) the table$", p):
        return ("touching", "table")
    m = re.match(r"^(?:a|an) (?P<n>\w+)$", p)
    if m and m["n"] in NOUN_SHAPES:
        return ("noun", m["n"])
    if p in COLORS:
        return ("color", "gray" if p == "grey" else p)
    m = re.match(r"^(?:the |in the |on the |at the )?(?P<w>\w+)(?: position| side| one)?$", p)
    if m and m["w"] in POSITION_WORDS:
        return ("position", POSITION_WORDS[m["w"]])
    if m and m["w"] in SIZE_WORDS:
        return ("size", SIZE_WORDS[m["w"]])
    m = re.match(rf"^(?P<rel>{REL_RE}) (?P<lm>.+)$", p)
    if m:
        return ("rel", (relation(m["rel"]), parse_entity(m["lm"])))
    raise ParseError(f"cannot parse the relative clause {pred!r}")


# --------------------------------------------------------------------------- conditions

@dataclass(frozen=True)
class Condition:
    """"the blue sphere is to the right of the red sphere" / "there is (no) X on Y"."""
    text: str
    kind: str  # "relation" | "exists"
    subject: EntityRef
    relation: str
    landmark: EntityRef | None
    negated: bool = False


def parse_condition(text: str) -> Condition:
    """"the blue sphere is right of the red sphere", "there is an object in the bowl", "the
    bowl contains an object", "the right cube has an object on top", "the bowl is non-empty"."""
    t = text.strip()
    for form in (_there_is, _contains, _has_on_top, _emptiness, _relation_condition):
        cond = form(t)
        if cond is not None:
            return cond
    raise ParseError(f"cannot parse the condition {text!r}: expected 'X is <relation> Y', "
                     f"'there is (no) X <relation> Y', 'Y contains X', 'Y has X on top' or "
                     f"'Y is (non-)empty'")


def _there_is(t: str) -> Condition | None:
    m = re.match(r"^there (?:is|are) (?P<no>no |not any |not an? )?(?P<e>.+)$", t)
    if not m:
        return None
    ent = parse_entity(m["e"])
    if ent.locator is None:
        raise ParseError(f"cannot parse the condition {t!r}: 'there is X' needs a place")
    rel, lm = ent.locator
    return Condition(t, "exists", replace(ent, locator=None), rel, lm, bool(m["no"]))


def _contains(t: str) -> Condition | None:
    m = re.match(r"^(?P<lm>.+?) (?:contains|holds) (?P<no>no |nothing)?(?P<e>.*)$", t)
    if not m:
        return None
    subject = parse_entity(m["e"] or "object")
    return Condition(t, "exists", subject, "in", parse_entity(m["lm"]), bool(m["no"]))


def _has_on_top(t: str) -> Condition | None:
    m = re.match(r"^(?P<lm>.+?) (?:has|have) (?P<no>no )?(?P<e>.+?) (?P<rel>on top(?: of it)?|"
                 r"on it|in it|inside(?: it)?|under it|beneath it)$", t)
    if not m:
        return None
    rel = {"on": "on", "in": "in", "inside": "in"}.get(m["rel"].split()[0], "under")
    return Condition(t, "exists", parse_entity(m["e"]), rel, parse_entity(m["lm"]),
                     bool(m["no"]))


def _emptiness(t: str) -> Condition | None:
    m = re.match(r"^(?P<lm>.+?) (?:is|are) (?P<state>non-empty|not empty|empty|occupied)$", t)
    if not m:
        return None
    return Condition(t, "exists", EntityRef("an object", "object"), "in",
                     parse_entity(m["lm"]), m["state"] == "empty")


def _relation_condition(t: str) -> Condition | None:
    m = re.match(rf"^(?P<s>.+?) (?:is|are) (?P<neg>not )?(?P<rel>{REL_RE}) (?P<lm>.+)$", t)
    if not m:
        return None
    return Condition(t, "relation", parse_entity(m["s"]), relation(m["rel"]),
                     parse_entity(m["lm"]), bool(m["neg"]))
