"""Rule-based task parser: instruction -> task-conditioned cue semantics (LIBERO-VIFO App. C).

Language only, pure logic (regular expressions). ``parse(instruction) -> ParsedTask`` extracts,
per step, the action, the source entity (``e_src``), the target entity or region (``e_tgt``), the
relation or target state (``r_task``), the arm, route constraints ("avoid passing over the green
slab") and the final orientation. Entities are referring expressions (``EntityRef``, read by
``referring.parse_entity``: head noun, colours, size/position attributes, a locator such as "to
the right of the red ball" or "between the plate and the ramekin", negated constraints such as
"that is not touching the table").

Structure it reads:

* conditionals: "If/When C, A; otherwise B" and "Check whether C. If yes, A; if not, B", with
  C one of "X is <relation> Y", "there is (no) X <relation> Y", "Y contains X", "Y has X on
  top", "Y is (non-)empty"; "that cylinder" in A refers back to the object C talks about;
* sequences: "First A, then B", "A, then B", "A. B", "Start by A-ing, then B", "A before
  B-ing", "A after B-ing", "A and B" (B starting with a verb); "it" / "inside" in B refers back to A;
  "pick up X[, <route>] ... then place it <relation> Y" is one pick-and-place step;
* arms anywhere in a clause: "Use your left arm to", "Using your left arm,", "... with your
  left arm", "... using the right hand"; "Among the cubes, ..." restricts "the one ...";
* clauses: pick up / grasp / take ... off / remove ... from, place / put / stack / move X
  <relation> Y (also "put X inside", the landmark left to the previous step), push X towards Y,
  "move X over|around Y to Z" (a route), open / close / turn on|off, "move X while avoiding
  passing over Y"; routes "pass over / move above / avoid passing over / go around / do not
  pass over Y"; orientation "with the long side facing right" / ", short side facing front".

Where the words allow several attachments ("place the cylinder on the right cube on top of
the yellow cylinder"), the step keeps the other readings in ``alternatives`` and ``grounding``
takes the one the world state supports (two that both ground differently: an ambiguity
error). Anything it cannot read raises ``ParseError`` naming the span and the cause
(unconsumed words, two different arms, a pronoun with nothing to refer to, a "move" without
a destination). Referring expressions, conditions and the vocabulary live in ``referring``;
their names are re-exported here.

World frame (RoboFollow): +x is the robot's right, +y away from the robot ("behind"), +z up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from vla_bridge.benchmarks.vifo.instructions.referring import (  # noqa: F401
    COLORS, NOUN_SHAPES, POSITION_WORDS, PRONOUNS, REL_RE, RELATION_VECTORS, SIZE_WORDS, Condition,
    EntityRef, ParseError, parse_condition, parse_entity, parse_sources, relation)

__all__ = ["ParseError", "EntityRef", "ParsedStep", "Condition", "ParsedTask", "parse",
           "RELATION_VECTORS"]


# --------------------------------------------------------------------------- verbs

_PICK_VERBS = ("pick up", "pick", "grasp", "grab", "lift up", "lift", "take", "get", "hold",
               "remove")
_CARRY_VERBS = ("move", "carry", "bring", "transfer")  # need a destination ("then place it")
_PUT_VERBS = ("place", "put", "set", "drop", "lay", "stack", "insert") + _CARRY_VERBS
_PUSH_VERBS = ("push", "slide", "shove", "nudge")
_STATE_VERBS = ("open", "close", "shut", "turn", "switch")
_ALL_VERBS = _PICK_VERBS + _PUT_VERBS + _PUSH_VERBS + _STATE_VERBS
_PICK = "(?:" + "|".join(_PICK_VERBS) + ")"
_PUT = "(?:" + "|".join(_PUT_VERBS) + ")"
_VERB_START = re.compile(r"^(?:" + "|".join(_ALL_VERBS) + r")\b")


def _gerund(verb: str) -> str:
    if verb in ("put", "set", "get", "grab", "drop", "shut", "transfer"):
        return verb + verb[-1] + "ing"
    return (verb[:-1] if verb.endswith("e") else verb) + "ing"


_GERUNDS = {_gerund(v.split()[0]): v.split()[0] for v in _ALL_VERBS}


def _degerund(text: str) -> str:
    """"picking up the cube" -> "pick up the cube"."""
    first, _, rest = text.partition(" ")
    return f"{_GERUNDS[first]} {rest}".strip() if first in _GERUNDS else text


# --------------------------------------------------------------------------- parsed structure

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
    # other attachments of the same words; grounding keeps the one the world supports
    alternatives: tuple["ParsedStep", ...] = field(default=(), compare=False, repr=False)

    @property
    def source(self) -> EntityRef | None:
        return self.sources[0] if self.sources else None


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


# --------------------------------------------------------------------------- tasks

def _normalise(text: str) -> str:
    t = text.strip().lower()
    t = t.replace("’", "'").replace("–", "-")
    t = re.sub(r"\s+", " ", t)
    t = re.sub(r"\s*([,;])\s*", r"\1 ", t)
    return t.rstrip(" .!").strip()


_CONDITIONALS = (
    re.compile(r"^(?:if|when|whenever) (?P<cond>.+?), (?P<then>.+?); (?:otherwise|else|if not),? "
               r"(?P<else>.+)$"),
    re.compile(r"^check (?:whether|if) (?P<cond>.+?)\. if (?:yes|so),? (?P<then>.+?); "
               r"(?:if not|otherwise|else),? (?P<else>.+)$"),
)


def parse(instruction: str) -> ParsedTask:
    """Parse one instruction; ``ParseError`` says which part is outside the grammar and why."""
    if not isinstance(instruction, str) or not instruction.strip():
        raise ParseError("empty instruction: nothing to parse")
    text = _normalise(instruction)
    for form in _CONDITIONALS:
        m = form.match(text)
        if m:
            cond = parse_condition(m["cond"])
            return ParsedTask(instruction, _finish(_parse_steps(m["then"]), cond), cond,
                              _finish(_parse_steps(m["else"])))
    if re.match(r"^(?:if|when|whenever|check (?:whether|if)) ", text):
        raise ParseError(f"the conditional {text!r} needs both branches: 'If C, A; otherwise "
                         f"B' or 'Check whether C. If yes, A; if not, B'")
    return ParsedTask(instruction, _finish(_parse_steps(text)))


def _finish(steps: tuple[ParsedStep, ...], cond: Condition | None = None):
    """Resolve "that X" against the condition / earlier steps; reject what stays unresolved."""
    out: list[ParsedStep] = []
    for step in steps:
        antecedents = _antecedents(cond, out)
        step = _each_reading(step, lambda s: _check_complete(_resolve_anaphors(s, antecedents)))
        out.append(step)
    return tuple(out)


def _check_complete(step: ParsedStep) -> ParsedStep:
    if step.action == "carry":
        raise ParseError(f"{step.text!r} says what to move but not where to: expected "
                         f"'..., then place it <relation> X'")
    for ref in step.sources + ((step.target,) if step.target else ()):
        if ref.text in PRONOUNS or ref.anaphoric:
            raise ParseError(f"cannot tell what {ref.text!r} refers to in {step.text!r}")
    return step


def _antecedents(cond: Condition | None, previous: list[ParsedStep]) -> list[EntityRef]:
    """Entities a later "that X" may mean, most recent first."""
    out = [e for s in reversed(previous) for e in ((s.target,) if s.target else ()) + s.sources]
    if cond is not None and cond.kind == "exists" and not cond.negated:
        out.append(replace(cond.subject, locator=(cond.relation, cond.landmark)))
    elif cond is not None:
        out.append(cond.subject)
    return out


def _resolve_anaphors(step: ParsedStep, antecedents: list[EntityRef]) -> ParsedStep:
    def resolve(ref: EntityRef) -> EntityRef:
        if not ref.anaphoric:
            return ref
        for ante in antecedents:
            if ante.text in PRONOUNS:
                continue
            if ante.generic or ref.generic or ante.noun == ref.noun:
                noun = ante.noun if ref.generic else ref.noun
                return replace(ante, text=f"{ref.text} ({ante.text})", noun=noun,
                               colors=tuple(dict.fromkeys(ante.colors + ref.colors)))
        return ref
    target = resolve(step.target) if step.target else None
    return replace(step, sources=tuple(resolve(e) for e in step.sources), target=target)


def _each_reading(step: ParsedStep, fn) -> ParsedStep:
    """Apply ``fn`` to a step and to each of its alternative readings."""
    alternatives = []
    for alt in step.alternatives:
        try:
            alternatives.append(fn(alt))
        except ParseError:
            continue
    return replace(fn(step), alternatives=tuple(alternatives))


# --------------------------------------------------------------------------- sequences

_SEQUENCES = (
    re.compile(r"^first,? (?P<a>.+?),? (?:and )?then,? (?P<b>.+)$"),
    re.compile(r"^(?P<a>.+?)[,;]? (?:and )?then,? (?P<b>.+)$"),
    re.compile(r"^(?P<a>.+?)\. (?P<b>.+)$"),
)
_BEFORE_AFTER = re.compile(r"^(?P<a>.+?),? (?P<order>before|after) (?P<b>\w+ing\b.*)$")


def _parse_steps(text: str) -> tuple[ParsedStep, ...]:
    for form in _SEQUENCES:
        m = form.match(text)
        if m and _starts_with_verb(m["b"]):
            return _sequence(_parse_steps(m["a"]), _parse_steps(m["b"]), text)
    m = _BEFORE_AFTER.match(text)
    if m and m["b"].split()[0] in _GERUNDS:
        a, b = _parse_steps(m["a"]), _parse_steps(_degerund(m["b"]))
        return _sequence(a, b, text) if m["order"] == "before" else _sequence(b, a, text)
    return _split_and(text) or (_parse_clause(text),)


def _split_and(text: str) -> tuple[ParsedStep, ...] | None:
    """"A and B" where B starts with a verb; None when no "and" starts a new clause."""
    error = None
    for part in re.finditer(r",? and (?=\S)", text):
        left, right = text[:part.start()], text[part.end():]
        if not _starts_with_verb(right):
            continue
        try:
            return _sequence(_parse_steps(left), _parse_steps(right), text)
        except ParseError as exc:
            error = error or exc
    if error is None:
        return None
    try:  # no split reads; maybe the "and" belongs to one clause
        return (_parse_clause(text),)
    except ParseError:
        raise error from None


def _starts_with_verb(text: str) -> bool:
    try:
        body = _clause_body(text)[1]
    except ParseError:
        return False
    return bool(_VERB_START.match(body))


def _sequence(a: tuple[ParsedStep, ...], b: tuple[ParsedStep, ...], text: str):
    """a then b: "it" in b refers back to a; pick X + "place it ..." is one step."""
    prev = a[-1]
    first, *rest = (_each_reading(s, lambda r: replace(r, arm=r.arm or prev.arm)) for s in b)
    if prev.action in ("pick", "carry") and first.action in ("place", "push") and \
            first.source is not None and first.source.text in ("it", "them"):
        merged = _merge(prev, first, text if len(a) == len(b) == 1 else None)
        return a[:-1] + (merged,) + tuple(_resolve_pronoun(s, merged) for s in rest)
    return a + tuple(_resolve_pronoun(s, prev) for s in (first, *rest))


def _merge(pick: ParsedStep, place: ParsedStep, text: str | None) -> ParsedStep:
    if pick.arm and place.arm and pick.arm != place.arm:
        raise ParseError(f"two arms named for one object: {pick.arm} in {pick.text!r}, "
                         f"{place.arm} in {place.text!r}")

    def merge(p: ParsedStep) -> ParsedStep:
        return replace(p, text=text or f"{pick.text}, {p.text}", arm=pick.arm or p.arm,
                       sources=pick.sources, route=pick.route + p.route)
    return _each_reading(place, merge)


def _resolve_pronoun(step: ParsedStep, previous: ParsedStep) -> ParsedStep:
    """"it" / "them" in a later clause: as a target, the previous clause's target ("put the
    bowl in the drawer and close it" -> the drawer; "open the drawer and put the bowl inside"
    -> the drawer; "turn on the stove and put the pot on it" -> the stove); as a source, the
    previous clause's source."""
    ref = previous.target or previous.source

    def resolve(s: ParsedStep) -> ParsedStep:
        if s.target is not None and s.target.text in ("it", "them") and ref is not None:
            s = replace(s, target=ref)
        if s.sources and s.sources[0].text in ("it", "them"):
            s = replace(s, sources=(previous.source or ref,) + s.sources[1:])
        return s
    return _each_reading(step, resolve)


# --------------------------------------------------------------------------- clauses

_ARM = r"(?:your|the) (?P<arm>left|right) (?:arm|hand|gripper)"
_ARM_PREFIX = re.compile(rf"^(?:(?:use|using|with) {_ARM}(?: to|,)?|(?P<arm2>left|right) "
                         r"(?:arm|hand|gripper):?) ")
_ARM_ANYWHERE = re.compile(rf",? (?:using|with) {_ARM}\b")
_LEAD = re.compile(r"^(?:please|now|then|next|finally),? ")
_AMONG = re.compile(r"^among (?P<group>[^,]+), ")
_START_BY = re.compile(r"^(?:start|begin) by (?=\w+ing\b)")


def _clause_body(text: str) -> tuple[str | None, str, EntityRef | None]:
    """(arm, body, group): the arm phrases and lead-ins taken out of one clause."""
    arms, group, body = [], None, text.strip()
    while True:
        m = _ARM_PREFIX.match(body)
        if m:
            arms.append((m["arm"] or m["arm2"], m.group(0).strip()))
        elif (m := _AMONG.match(body)) is not None:
            group = parse_entity(m["group"])
        elif (m := _LEAD.match(body) or _START_BY.match(body)) is not None:
            pass
        else:
            break
        body = _degerund(body[m.end():])
    arms += [(m["arm"], m.group(0).strip(" ,")) for m in _ARM_ANYWHERE.finditer(body)]
    body = _ARM_ANYWHERE.sub("", body).strip(" ,")
    if len({arm for arm, _ in arms}) > 1:
        said = " and ".join(repr(phrase) for _, phrase in arms)
        raise ParseError(f"two different arms named in {text!r}: {said}")
    return (arms[0][0] if arms else None), body, group


_EXPECTED = ("expected pick up / place / put / stack / move / push / take ... off / open / "
             "close / turn on|off")


def _parse_clause(text: str) -> ParsedStep:
    arm, body, group = _clause_body(text)
    body, orientation = _split_orientation(body)
    readings = _route_moves(body) + _placements(body) + _state_changes(body) or _pickups(body)
    if not readings:
        raise ParseError(f"cannot parse the action in {body!r}: {_EXPECTED}")
    if orientation and readings[0].action != "place":
        raise ParseError(f"the orientation in {text!r} needs a placement")
    step = replace(readings[0], alternatives=tuple(readings[1:]))
    return _each_reading(step, lambda s: _restrict(
        replace(s, text=text, arm=arm, orientation=orientation or s.orientation), group))


def _restrict(step: ParsedStep, group: EntityRef | None) -> ParsedStep:
    """"Among the cubes, pick up the one on the left": "one" is a cube."""
    if group is None:
        return step

    def narrow(ref: EntityRef) -> EntityRef:
        if not ref.generic or ref.text in PRONOUNS:
            return ref
        return replace(ref, noun=group.noun, colors=tuple(dict.fromkeys(ref.colors
                                                                         + group.colors)))
    target = narrow(step.target) if step.target else None
    return replace(step, sources=tuple(narrow(e) for e in step.sources), target=target)


def _split_orientation(body: str) -> tuple[str, tuple[str, str] | None]:
    m = re.search(r"(?:,? with|,) (?P<ori>(?:the )?(?:long|short)(?:er)? (?:side|face|edge)s? "
                  r".+)$", body)
    if not m:
        return body, None
    return body[:m.start()], _parse_orientation(m["ori"])


def _parse_orientation(text: str) -> tuple[str, str]:
    m = re.match(r"^(?:the )?(?P<side>long|short)(?:er)? (?:side|face|edge)s? "
                 r"(?:facing|pointing|pointing to|pointing towards|towards|to) (?:the )?"
                 r"(?P<dir>right|left|front|back)$", text.strip())
    if not m:
        raise ParseError(f"cannot parse the orientation {text!r}: expected 'the long/short side "
                         f"facing right/left/front/back'")
    return m["side"], m["dir"]


def _readings(make, *texts) -> list[ParsedStep]:
    """[make(*parsed)] when every text parses as a referring expression, else []."""
    try:
        return [make(*(parse_entity(t) for t in texts))]
    except ParseError:
        return []


def _route_moves(body: str) -> list[ParsedStep]:
    """"move X over|via|around Y to Z": a placement with a route constraint."""
    m = re.match(rf"^(?:{'|'.join(_PUT_VERBS)}) (?P<src>.+?) (?P<via>over|across|via|around) "
                 r"(?P<mid>.+?) (?P<rel>to|onto|into|on|in) (?P<tgt>.+)$", body)
    if not m:
        return []
    kind = "avoid_over" if m["via"] == "around" else "pass_over"
    rel = "in" if m["rel"] in ("in", "into") else "on"
    return _readings(lambda s, r, t: ParsedStep(body, "place", None, (s,), t, rel,
                                                 route=((kind, r),)),
                     m["src"], m["mid"], m["tgt"])


_PLACE_REL = re.compile(rf"(?<= )(?:{REL_RE}|to)(?= )")
_ELIDED = {"inside": "in", "in": "in", "into": "in", "in there": "in", "on top": "on",
           "onto": "on", "on": "on"}


def _placements(body: str) -> list[ParsedStep]:
    """"put X <relation> Y" / "push X towards Y" at every relation phrase that leaves a
    well-formed X and Y, the last split first; "put X inside" leaves Y to the previous step."""
    m = re.match(rf"^(?P<verb>{_PUT}|{'|'.join(_PUSH_VERBS)}) (?P<rest>.+)$", body)
    if not m:
        return []
    action = "push" if m["verb"] in _PUSH_VERBS else "place"
    rest, out = m["rest"], []
    for r in reversed(list(_PLACE_REL.finditer(rest))):
        src, tgt = rest[:r.start()].strip(), rest[r.end():].strip()
        rel = ("towards" if action == "push" else "on") if r[0] == "to" else relation(r[0])
        try:
            sources = _sources(src)
        except ParseError:
            continue
        out += _readings(lambda t: ParsedStep(body, action, None, sources, t, rel), tgt)
    e = re.match(rf"^(?P<src>.+) (?P<rel>{'|'.join(_ELIDED)})$", rest)
    if e and action == "place" and not out:
        out += _readings(lambda s: ParsedStep(body, action, None, (s,), EntityRef("it"),
                                              _ELIDED[e["rel"]]), e["src"])
    return out


def _sources(text: str) -> tuple[EntityRef, ...]:
    return parse_sources(text) if text not in ("it", "them") else (EntityRef(text=text),)


def _state_changes(body: str) -> list[ParsedStep]:
    m = re.match(r"^(?P<verb>open|close|shut) (?P<tgt>.+)$", body)
    if m:
        verb = "close" if m["verb"] == "shut" else m["verb"]
        return _readings(lambda t: ParsedStep(body, verb, None, (), t, None,
                                              "open" if verb == "open" else "closed"), m["tgt"])
    m = re.match(r"^(?:turn|switch) (?P<state>on|off) (?P<tgt>.+)$", body) or \
        re.match(r"^(?:turn|switch) (?P<tgt>.+) (?P<state>on|off)$", body)
    if m:
        state = m["state"]
        return _readings(lambda t: ParsedStep(body, f"turn_{state}", None, (), t, None, state),
                         m["tgt"])
    return []


def _pickups(body: str) -> list[ParsedStep]:
    """"pick up X[, <route>...]" / "move X while <route>" (a carry: "then place it" follows)."""
    m = re.match(rf"^(?P<verb>{_PICK}|{'|'.join(_CARRY_VERBS)}) (?P<src>[^,]+?)"
                 r"(?:(?:,|,? while) (?P<route>.+))?$", body)
    if not m:
        return []
    carry = m["verb"] in _CARRY_VERBS
    src = parse_sources(m["src"])  # a bad object reference is the error to report
    route = _parse_route(m["route"]) if m["route"] else ()
    return [ParsedStep(body, "carry" if carry else "pick", None, src, None, None,
                       None if carry else "lifted", route)]


_AVOID = (r"(?:detour (?:to )?)?(?:avoid|avoiding|do not|don't|never) (?:(?:pass|passing|go|"
          r"going|move|moving) (?:over|above|across) )?(?P<e>.+?)(?: by detouring around it)?",
          r"(?:go|going|move|moving|detour|detouring) around (?P<e>.+?)"
          r"(?: instead of passing over it)?")
_PASS = (r"(?:pass|passing|go|going|move|moving) (?:over|above|across|via) (?P<e>.+?)",)
_ROUTE_FORMS = [(kind, re.compile(f"^{p}(?: on the way)?$"))
                for kind, pats in (("avoid_over", _AVOID), ("pass_over", _PASS)) for p in pats]


def _parse_route(text: str) -> tuple[tuple[str, EntityRef], ...]:
    """Route segments ("pass over X", "do not pass over X, detour to avoid passing over it");
    "it" is the entity of the previous segment; repeats of one constraint count once."""
    out: list[tuple[str, EntityRef]] = []
    for part in re.split(r",? and |, ", text):
        part = part.strip()
        kind, m = next(((k, m) for k, p in _ROUTE_FORMS if (m := p.match(part))), (None, None))
        if m is None:
            raise ParseError(f"cannot parse the route constraint {part!r}: expected 'avoid "
                             f"passing over X', 'go around X', 'pass over X' or 'move above X "
                             f"on the way'")
        ent = parse_entity(m["e"])
        if ent.text in PRONOUNS:
            if not out:
                raise ParseError(f"cannot tell what {ent.text!r} refers to in {part!r}")
            ent = out[-1][1]
        if any(e == ent and k != kind for k, e in out):
            raise ParseError(f"the route both avoids and passes over {ent.text!r} in {text!r}")
        if (kind, ent) not in out:
            out.append((kind, ent))
    return tuple(out)
