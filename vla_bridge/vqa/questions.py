"""The four Part I-A questions of one cue instance, about what the image shows.

``vqa_questions(cue, world, camera, seed, cue_free_detection)`` returns, in ``VQA_STAGES``
order, one multiple-choice question per stage (``{"stage", "question", "options", "answer",
"cue_shown"}``; ``answer`` indexes ``options``, which are shuffled with ``seed``):

* detection: is there a visual cue, and of which kind? Options: the cue's family, two other
  families and "There is no visual cue". With ``cue_free_detection`` the question is about
  the same render without the cue (``cue_shown`` False) and "There is no visual cue" is right,
  with the same options; the runner does this for half of the instances
  (``instances.VqaInstance.cue_free_detection``), so always seeing a cue scores about 50 %;
* semantics: which task the cue shows, as a sentence; the distractors change the object, the
  relation or target, or the action;
* grounding: which object the cue asks the robot to manipulate (look-alikes first, then the
  target, then the rest);
* decision: what to do with that object, which the question does not name: "pick it up and
  hold it", "put it behind the red cylinder"... (the action and where, not which object); for
  a state change (LIBERO's "open the middle drawer", "turn on the stove"): "open it",
  "close it", "turn it on"...

Objects are named as they look (``describe.describe_objects``: colour, size, kind and, among
look-alikes, position in the image), never by an internal name or index; ``looks`` gives
the look of objects whose name does not say it and ``names`` what a goal's region is called
("the top drawer of the wooden cabinet"). A distractor whose
text repeats another option's is dropped, so a question can have fewer than 4 options.
Pure logic (numpy).
"""
from __future__ import annotations

import numpy as np

from vla_bridge.benchmarks.vifo.families import FAMILIES, CueSpec, family
from vla_bridge.benchmarks.vifo.instructions.grounding import GroundedTask
from vla_bridge.vqa.describe import describe_objects, look

__all__ = ["QUESTIONS_VERSION", "NO_CUE", "HOLD", "vqa_questions"]

#: rows of another version (the earlier index-named templates) are not resumed into
QUESTIONS_VERSION = 2
NO_CUE = "There is no visual cue"
HOLD = "pick it up and hold it"
N_OPTIONS = 4
QUESTIONS = {
    "detection": "Does the image contain a visual cue? If it does, of which kind?",
    "semantics": "What task does the visual cue indicate?",
    "grounding": "Which object in the scene does the cue ask the robot to manipulate?",
    "decision": "What should the robot do with the object the visual cue is about?",
}
REL_WORDS = {"left_of": "to the left of", "right_of": "to the right of", "behind": "behind",
             "in_front_of": "in front of", "on": "on", "in": "in", "towards": "towards",
             "beside": "beside", "near": "near", "under": "under", "above": "above"}
_OPPOSITE = {"left_of": "right_of", "right_of": "left_of", "behind": "in_front_of",
             "in_front_of": "behind"}
_PLACES = ("behind", "in_front_of", "left_of", "right_of", "beside")
#: a state change's decision (step action -> what to do with the object)
STATE_CHANGES = {"open": "open it", "close": "close it", "turn_on": "turn it on",
                 "turn_off": "turn it off"}


def _pick(correct: str, tiers: list[list[str]], rng, stage: str, question: str,
          cue_shown: bool = True) -> dict:
    """A question with ``correct`` and up to N_OPTIONS - 1 distractors taken round-robin from
    ``tiers`` (in order within a tier); repeated texts are skipped; options shuffled."""
    chosen: list[str] = []
    queues = [[w for w in t if w != correct] for t in tiers]
    while len(chosen) < N_OPTIONS - 1 and any(queues):
        for q in queues:
            while q and q[0] in chosen:
                q.pop(0)
            if q and len(chosen) < N_OPTIONS - 1:
                chosen.append(q.pop(0))
    options = [correct] + chosen
    options = [options[i] for i in rng.permutation(len(options))]
    return {"stage": stage, "question": question, "options": options,
            "answer": options.index(correct), "cue_shown": cue_shown}


def _shuffled(items, rng) -> list:
    items = list(items)
    return [items[i] for i in rng.permutation(len(items))]


class _Scene:
    """The instance's objects as the image shows them: description per name, look-alikes."""

    def __init__(self, world, camera, keep: tuple[str | None, ...], looks=None, names=None):
        self.objects = getattr(world, "objects", world) or {}
        self.looks, self.names = looks or {}, names or {}
        self.desc = describe_objects(world, camera, looks=self.looks)
        for name in keep:  # the task's objects always get a name, even an ambiguous one
            if name is not None and name not in self.desc and name in self.objects:
                alike = self.look(name)
                self.desc = {n: d for n, d in self.desc.items() if self.look(n) != alike}
                self.desc[name] = f"the {alike}"

    def look(self, n: str) -> str:
        return self.looks.get(n) or look(n, self.objects[n])

    def name(self, n: str | None) -> str:
        if n is None:
            return "nothing"
        return (self.desc.get(n) or self.names.get(n)
                or (f"the {self.look(n)}" if n in self.objects
                    else "the " + n.replace("_", " ").rstrip("0123456789 ")))

    def others(self, *exclude: str | None) -> list[str]:
        return [n for n in self.desc if n not in exclude]

    def likeness(self, ref: str | None, names: list[str], rng) -> list[str]:
        """``names`` shuffled, then look-alikes of ``ref`` first, then same colour or kind."""
        if ref is None or ref not in self.objects:
            return _shuffled(names, rng)
        words = set(self.look(ref).split())

        def score(n):
            return len(words & set(self.look(n).split()))
        return sorted(_shuffled(names, rng), key=score, reverse=True)


def _phrase(scene: _Scene, action: str, source, relation, target) -> str:
    if action == "pick":
        return f"pick up {scene.name(source)}"
    if action in ("place", "push"):
        verb = "place" if action == "place" else "push"
        return (f"{verb} {scene.name(source)} {REL_WORDS.get(relation, relation)} "
                f"{scene.name(target)}")
    return f"{action.replace('_', ' ')} {scene.name(target)}"


def _other_relations(relation: str | None, rng) -> list[str]:
    first = [_OPPOSITE[relation]] if relation in _OPPOSITE else []
    rest = [r for r in _shuffled(_PLACES, rng) if r != relation and r not in first]
    return first + rest


def _detection(cue: CueSpec, rng, cue_free: bool) -> dict:
    fam = family(cue.family)
    others = _shuffled([f.title for f in FAMILIES.values() if f.code != fam.code], rng)
    correct = NO_CUE if cue_free else fam.title
    wrong = [fam.title, *others[:2]] if cue_free else [*others[:2], NO_CUE]
    return _pick(correct, [wrong], rng, "detection", QUESTIONS["detection"], not cue_free)


def _semantics(scene: _Scene, step, rng) -> dict:
    act, src, rel, tgt = step.action, step.source, step.relation, step.target
    correct = _phrase(scene, act, src, rel, tgt)
    if act in STATE_CHANGES and src is None:  # another change of it, or of something else
        other_acts = [_phrase(scene, a, None, None, tgt) for a in STATE_CHANGES if a != act]
        picks = [_phrase(scene, "pick", n, None, None) for n in scene.others(tgt)]
        return _pick(correct, [other_acts, _shuffled(picks, rng)], rng, "semantics",
                     QUESTIONS["semantics"])
    swap_src = [_phrase(scene, act, s, rel, tgt)
                for s in scene.likeness(src, scene.others(src, tgt), rng)]
    if act == "pick":  # picking this object vs another, or placing it somewhere
        places = [_phrase(scene, "place", src, str(rng.choice(_PLACES)), t)
                  for t in scene.others(src)]
        return _pick(correct, [swap_src, _shuffled(places, rng)], rng, "semantics",
                     QUESTIONS["semantics"])
    swap_rel = [_phrase(scene, act, src, r, tgt) for r in _other_relations(rel, rng)]
    swap_tgt = [_phrase(scene, act, src, rel, t)
                for t in scene.likeness(tgt, scene.others(src, tgt), rng)]
    return _pick(correct, [swap_src, swap_rel, swap_tgt + [_phrase(scene, "pick", src, None, None)]],
                 rng, "semantics", QUESTIONS["semantics"])


def _grounding(scene: _Scene, step, rng) -> dict:
    src = step.source or step.target
    alike = [scene.name(n) for n in scene.likeness(src, scene.others(src, step.target), rng)]
    target = [scene.name(step.target)] if step.target not in (None, src) else []
    return _pick(scene.name(src), [alike[:1], target, alike[1:]], rng, "grounding",
                 QUESTIONS["grounding"])


def _decision(scene: _Scene, step, rng) -> dict:
    act, src, rel, tgt = step.action, step.source, step.relation, step.target
    verb = "push" if act == "push" else "put"
    if act in STATE_CHANGES and src is None:
        others = [w for a, w in STATE_CHANGES.items() if a != act]
        return _pick(STATE_CHANGES[act], [others, [HOLD]], rng, "decision",
                     QUESTIONS["decision"])

    def where(r, t):
        return f"{verb} it {REL_WORDS.get(r, r)} {scene.name(t)}"
    if act == "pick" or tgt is None:
        spots = [where(r, t) for t in scene.others(src) for r in _PLACES[:4]]
        return _pick(HOLD, [_shuffled(spots, rng)], rng, "decision", QUESTIONS["decision"])
    other_rel = [where(r, tgt) for r in _other_relations(rel, rng)]
    other_tgt = [where(rel, t) for t in scene.likeness(tgt, scene.others(src, tgt), rng)]
    return _pick(where(rel, tgt), [other_rel, other_tgt, [HOLD]], rng, "decision",
                 QUESTIONS["decision"])


def vqa_questions(cue: CueSpec, world, camera, seed: int = 0,
                  cue_free_detection: bool = False, looks=None, names=None) -> list[dict]:
    """The four questions of one cue instance (see the module docstring); ``camera`` is the
    ``CameraModel`` of the image the questions are about (position words come from it);
    ``looks`` / ``names``: {object: look} and {region: what it is called}."""
    task = cue.task
    if not isinstance(task, GroundedTask):
        raise ValueError("vqa_questions needs a cue built from a GroundedTask (make_cue)")
    rng = np.random.default_rng(seed)
    step = task.steps[0]
    scene = _Scene(world, camera, (step.source, step.target), looks, names)
    return [_detection(cue, rng, cue_free_detection), _semantics(scene, step, rng),
            _grounding(scene, step, rng), _decision(scene, step, rng)]
