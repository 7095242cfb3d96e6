"""INT-ACT's probing suite on RoboFollow's Scene 2 (Fang et al., "From Intention to
Execution", §3): 56 probes, six original tasks (four "put X in Y", two pickups) and five in
each of the paper's ten subcategories, varying the Scene 2 training tasks a policy learned.

The paper's suite runs on SimplerEnv's WidowX scenes, whose assets cannot be installed here; it
drew its OOD objects from LIBERO's object set, and so does this one (``scene_edits``: LIBERO
objects replacing a Scene 2 body or joining the scene, at LIBERO's sizes). The categories:

* object: ``ood_source`` (a LIBERO object in place of the cube or cylinder to move),
  ``ood_target`` (a LIBERO bowl in place of a Scene 2 bowl), ``ood_source_target`` (both),
  ``ood_relation`` (seen objects in pairings no training task has);
* language: ``language_action`` (other verbs), ``language_negation`` (a "not" on an
  irrelevant object), ``language_appearance`` (the object by its looks, not its place);
* vision_language: ``object_distractor`` (LIBERO objects added to the table),
  ``commonsense`` (the object by what it resembles: "the colour of a ripe tomato"),
  ``commonsense_distractor`` (the same, beside a LIBERO object the words fit better: a soup
  can beside "the object shaped like a soup can").

Every probe names the one object that counts as its source (``TaskSpec.source``); where the
words fit another object too, ``note`` says which counts and why. ``base`` is the L0 task the
probe varies (Table 2's deltas subtract its result). Task success is RoboFollow's completion of
the probe's action; the INT-ACT metrics are ``intact.metrics``'s. Pure logic, no rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from vla_bridge.benchmarks.robofollow.tasks import TaskSpec, load_suite

SCENE = "scene2"
LAYOUT = "default"
LEVEL = "intact"  # the rows' level: the probes are no RoboFollow instruction level
#: Table 1's columns, in the paper's order: (category, subcategory, column title)
SUBCATEGORIES = (
    ("original", "original", "Original"),
    ("object", "ood_source", "OOD Source"),
    ("object", "ood_target", "OOD Target"),
    ("object", "ood_source_target", "OOD Src + Tgt"),
    ("object", "ood_relation", "OOD Relation"),
    ("language", "language_action", "Lang. Action"),
    ("language", "language_negation", "Lang. Negation"),
    ("language", "language_appearance", "Lang. Appear."),
    ("vision_language", "object_distractor", "Obj. Distract"),
    ("vision_language", "commonsense", "Commons."),
    ("vision_language", "commonsense_distractor", "Commons.+Distr."),
)
SUBCATEGORY_NAMES = tuple(s for _, s, _ in SUBCATEGORIES)
CATEGORY_OF = {s: c for c, s, _ in SUBCATEGORIES}
#: the language and commonsense variants against the task they rephrase (Table 2)
VARIANT_SUBCATEGORIES = ("language_action", "language_negation", "language_appearance",
                         "commonsense", "commonsense_distractor")
#: free spots on Scene 2's table (table frame, m) for added objects: behind the layout's
#: rows and beside it, clear of every body's jittered footprint (a test checks it)
SPOT = {"back_left": (-0.15, 0.07), "back_mid": (-0.03, 0.075), "back_right": (0.09, 0.075),
        "far_left": (-0.27, -0.09), "far_right": (0.28, -0.08)}


@dataclass(frozen=True)
class Probe:
    """One probe: its subcategory, the L0 task it varies and the task it runs."""
    subcategory: str
    base: str  # the Scene 2 L0 task id it varies
    task: TaskSpec
    note: str = ""  # which object counts, where the words fit another too

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def category(self) -> str:
        return CATEGORY_OF[self.subcategory]

    @property
    def instruction(self) -> str:
        return self.task.instruction

    @property
    def source_object(self) -> str:
        """The object that counts as the source (its name in the world state)."""
        return self.task.source

    def to_dict(self) -> dict:
        return {"id": self.id, "category": self.category, "subcategory": self.subcategory,
                "base": self.base, "note": self.note, "task": self.task.to_dict()}


# the L0 tasks the probes vary: (base id, arm, action, source, target)
_BASES = {
    "red_cube_green": "L0_place_right_cube_in_green_bowl",
    "red_cube_yellow": "L0_place_right_cube_in_yellow_bowl",
    "blue_cyl_green": "L0_place_blue_cylinder_in_green_bowl",
    "blue_cyl_yellow": "L0_place_blue_cylinder_in_yellow_bowl",
    "pick_red_cyl": "L0_pickup_red_cylinder",
    "pick_left_cube": "L0_pickup_left_cube",
}

# (subcategory, short name, base key, instruction, source, target, edits, note)
# source / target None: the base task's; a target is a place's bowl or a stack's / push's object
_PROBES = (
    # ----------------------------------------------------------------- original
    ("original", "red_cube_green", "red_cube_green", None, None, None, {}, ""),
    ("original", "red_cube_yellow", "red_cube_yellow", None, None, None, {}, ""),
    ("original", "blue_cyl_green", "blue_cyl_green", None, None, None, {}, ""),
    ("original", "blue_cyl_yellow", "blue_cyl_yellow", None, None, None, {}, ""),
    ("original", "pick_red_cyl", "pick_red_cyl", None, None, None, {}, ""),
    ("original", "pick_left_cube", "pick_left_cube", None, None, None, {}, ""),
    # ----------------------------------------------------------------- OOD source
    ("ood_source", "pudding_green", "red_cube_green",
     "Use your right arm to pick up the chocolate pudding and place it in the green bowl.",
     "chocolate_pudding", None, {"replace": {"small_red_cube": "chocolate_pudding"}}, ""),
    ("ood_source", "popcorn_yellow", "red_cube_yellow",
     "Use your right arm to pick up the popcorn and place it in the yellow bowl.",
     "popcorn", None, {"replace": {"small_red_cube": "popcorn"}}, ""),
    ("ood_source", "cream_cheese_green", "red_cube_green",
     "Use your right arm to pick up the cream cheese and place it in the green bowl.",
     "cream_cheese", None, {"replace": {"small_red_cube": "cream_cheese"}}, ""),
    ("ood_source", "butter_yellow", "blue_cyl_yellow",
     "Use your right arm to pick up the butter and place it in the yellow bowl.",
     "butter", None, {"replace": {"small_blue_cylinder": "butter"}}, ""),
    ("ood_source", "soup_green", "blue_cyl_green",
     "Use your right arm to pick up the alphabet soup and place it in the green bowl.",
     "alphabet_soup", None, {"replace": {"small_blue_cylinder": "alphabet_soup"}}, ""),
    # ----------------------------------------------------------------- OOD target
    ("ood_target", "red_cube_white_bowl", "red_cube_green",
     "Use your right arm to pick up the rightmost cube and place it in the white bowl.",
     None, "white_bowl", {"replace": {"green_bowl": ["white_bowl", -0.012, 0.0]}}, ""),
    ("ood_target", "blue_cyl_white_bowl", "blue_cyl_green",
     "Use your right arm to pick up the smaller blue object and place it in the white bowl.",
     None, "white_bowl", {"replace": {"green_bowl": ["white_bowl", -0.012, 0.0]}}, ""),
    ("ood_target", "red_cube_black_bowl", "red_cube_yellow",
     "Use your right arm to pick up the rightmost cube and place it in the black bowl.",
     None, "akita_black_bowl", {"replace": {"yellow_bowl": ["akita_black_bowl", 0.02, 0.0]}}, ""),
    ("ood_target", "blue_cyl_black_bowl", "blue_cyl_yellow",
     "Use your right arm to pick up the smaller blue object and place it in the black bowl.",
     None, "akita_black_bowl", {"replace": {"yellow_bowl": ["akita_black_bowl", 0.02, 0.0]}}, ""),
    ("ood_target", "red_cube_ramekin", "red_cube_yellow",
     "Use your right arm to pick up the rightmost cube and place it in the ramekin.",
     None, "glazed_rim_porcelain_ramekin",
     {"replace": {"yellow_bowl": ["glazed_rim_porcelain_ramekin", 0.01, 0.0]}}, ""),
    # ----------------------------------------------------------------- OOD source + target
    ("ood_source_target", "pudding_white_bowl", "red_cube_green",
     "Use your right arm to pick up the chocolate pudding and place it in the white bowl.",
     "chocolate_pudding", "white_bowl",
     {"replace": {"small_red_cube": ["chocolate_pudding", -0.01, 0.0],
                  "green_bowl": ["white_bowl", -0.012, 0.0]}}, ""),
    ("ood_source_target", "popcorn_black_bowl", "red_cube_yellow",
     "Use your right arm to pick up the popcorn and place it in the black bowl.",
     "popcorn", "akita_black_bowl",
     {"replace": {"small_red_cube": "popcorn",
                  "yellow_bowl": ["akita_black_bowl", 0.02, 0.0]}}, ""),
    ("ood_source_target", "cream_cheese_ramekin", "red_cube_yellow",
     "Use your right arm to pick up the cream cheese and place it in the ramekin.",
     "cream_cheese", "glazed_rim_porcelain_ramekin",
     {"replace": {"small_red_cube": "cream_cheese",
                  "yellow_bowl": ["glazed_rim_porcelain_ramekin", 0.01, 0.0]}}, ""),
    ("ood_source_target", "butter_black_bowl", "blue_cyl_yellow",
     "Use your right arm to pick up the butter and place it in the black bowl.",
     "butter", "akita_black_bowl",
     {"replace": {"small_blue_cylinder": "butter",
                  "yellow_bowl": ["akita_black_bowl", 0.02, 0.0]}}, ""),
    ("ood_source_target", "soup_white_bowl", "blue_cyl_green",
     "Use your right arm to pick up the alphabet soup and place it in the white bowl.",
     "alphabet_soup", "white_bowl",
     {"replace": {"small_blue_cylinder": "alphabet_soup",
                  "green_bowl": ["white_bowl", -0.012, 0.0]}}, ""),
    # ----------------------------------------------------------------- OOD relation
    ("ood_relation", "left_cube_in_yellow", "red_cube_yellow",
     "Use your right arm to pick up the leftmost cube and place it in the yellow bowl.",
     "large_blue_cube", "yellow_bowl", {}, "no training task puts the leftmost cube in a bowl"),
    ("ood_relation", "red_cyl_in_green", "red_cube_green",
     "Use your right arm to pick up the larger red object and place it in the green bowl.",
     "large_red_cylinder", "green_bowl", {}, "no training task puts the red cylinder in a bowl"),
    ("ood_relation", "right_cube_on_red_cyl", "pick_red_cyl",
     "Use your left arm to stack the rightmost cube onto the larger red object.",
     "small_red_cube", "large_red_cylinder", {}, "training stacks only the leftmost cube and "
     "the blue cylinder"),
    ("ood_relation", "right_cube_on_left_cube", "pick_left_cube",
     "Use your left arm to stack the rightmost cube onto the leftmost cube.",
     "small_red_cube", "large_blue_cube", {}, ""),
    ("ood_relation", "right_cube_on_blue_cyl", "pick_left_cube",
     "Use your left arm to stack the rightmost cube onto the smaller blue object.",
     "small_red_cube", "small_blue_cylinder", {}, "training stacks the blue cylinder onto the "
     "rightmost cube, never the other way round"),
    # ----------------------------------------------------------------- language: verbs
    ("language_action", "grab_drop", "red_cube_green",
     "Use your right arm to grab the rightmost cube and drop it into the green bowl.",
     None, None, {}, ""),
    ("language_action", "move_into", "red_cube_yellow",
     "With your right arm, move the rightmost cube into the yellow bowl.", None, None, {}, ""),
    ("language_action", "take_put", "blue_cyl_green",
     "Use your right arm to take the smaller blue object and put it in the green bowl.",
     None, None, {}, ""),
    ("language_action", "lift_set", "blue_cyl_yellow",
     "Use your right arm to lift the smaller blue object and set it down in the yellow bowl.",
     None, None, {}, ""),
    ("language_action", "grab_red", "pick_red_cyl",
     "Use your left arm to grab the larger red object.", None, None, {}, ""),
    # ----------------------------------------------------------------- language: negation
    ("language_negation", "not_blue", "red_cube_green",
     "Use your right arm to pick up the rightmost cube, not the blue cylinder, and place it in "
     "the green bowl.", None, None, {}, ""),
    ("language_negation", "not_green_bowl", "red_cube_yellow",
     "Use your right arm to pick up the rightmost cube and place it in the yellow bowl, not the "
     "green one.", None, None, {}, ""),
    ("language_negation", "no_red", "blue_cyl_green",
     "Do not touch the red objects; use your right arm to pick up the smaller blue object and "
     "place it in the green bowl.", None, None, {}, ""),
    ("language_negation", "bowl_not_green", "blue_cyl_yellow",
     "Use your right arm to pick up the smaller blue object and place it in the bowl that is "
     "not green.", None, None, {}, ""),
    ("language_negation", "not_left_cube", "pick_red_cyl",
     "Use your left arm to pick up the larger red object, not the leftmost cube.",
     None, None, {}, ""),
    # ----------------------------------------------------------------- language: appearance
    ("language_appearance", "small_red_block", "red_cube_green",
     "Use your right arm to pick up the small red block and place it in the green bowl.",
     None, None, {}, ""),
    ("language_appearance", "red_square", "red_cube_yellow",
     "Use your right arm to pick up the little red object with square sides and place it in "
     "the yellow bowl.", None, None, {}, ""),
    ("language_appearance", "short_blue_cyl", "blue_cyl_green",
     "Use your right arm to pick up the short blue cylinder and place it in the green bowl.",
     None, None, {}, ""),
    ("language_appearance", "round_blue", "blue_cyl_yellow",
     "Use your right arm to pick up the narrow round blue object and place it in the yellow "
     "bowl.", None, None, {}, ""),
    ("language_appearance", "big_blue_cube", "pick_left_cube",
     "Use your left arm to pick up the big blue cube.", None, None, {}, ""),
    # ----------------------------------------------------------------- object distractors
    ("object_distractor", "milk_popcorn", "red_cube_green", None, None, None,
     {"add": [["milk", *SPOT["back_left"]], ["popcorn", *SPOT["far_right"]]]}, ""),
    ("object_distractor", "ketchup", "red_cube_yellow", None, None, None,
     {"add": [["ketchup", *SPOT["back_mid"]]]}, ""),
    ("object_distractor", "three_groceries", "blue_cyl_green", None, None, None,
     {"add": [["cookies", *SPOT["back_left"]], ["bbq_sauce", *SPOT["back_right"]],
              ["salad_dressing", *SPOT["far_left"]]]}, ""),
    ("object_distractor", "red_mug", "blue_cyl_yellow", None, None, None,
     {"add": [["red_coffee_mug", *SPOT["back_right"]]]}, ""),
    ("object_distractor", "macaroni_mug", "pick_left_cube", None, None, None,
     {"add": [["macaroni_and_cheese", *SPOT["back_mid"]],
              ["white_yellow_mug", *SPOT["back_left"]]]}, ""),
    # ----------------------------------------------------------------- commonsense
    ("commonsense", "tomato_grass", "red_cube_green",
     "Use your right arm to pick up the cube the colour of a ripe tomato and place it in the "
     "bowl the colour of fresh grass.", None, None, {}, ""),
    ("commonsense", "tomato_banana", "red_cube_yellow",
     "Use your right arm to pick up the cube the colour of a ripe tomato and place it in the "
     "bowl the colour of a banana.", None, None, {}, ""),
    ("commonsense", "sky_can_grass", "blue_cyl_green",
     "Use your right arm to pick up the object shaped like a soup can that is the colour of the "
     "sky and place it in the bowl the colour of fresh grass.", None, None, {}, ""),
    ("commonsense", "sky_can_lemon", "blue_cyl_yellow",
     "Use your right arm to pick up the object shaped like a soup can that is the colour of the "
     "sky and place it in the bowl the colour of lemons.", None, None, {}, ""),
    ("commonsense", "fire_truck", "pick_red_cyl",
     "Use your left arm to pick up the larger object the colour of a fire truck.",
     None, None, {}, ""),
    # ----------------------------------------------------------------- commonsense + look-alike
    ("commonsense_distractor", "tomato_sauce", "red_cube_green",
     "Use your right arm to pick up the cube the colour of a ripe tomato and place it in the "
     "bowl the colour of fresh grass.", None, None,
     {"add": [["tomato_sauce", *SPOT["back_mid"]]]},
     "the red cube counts; the tomato sauce can is the look-alike (a tomato, but no cube)"),
    ("commonsense_distractor", "tomato_sauce_banana", "red_cube_yellow",
     "Use your right arm to pick up the cube the colour of a ripe tomato and place it in the "
     "bowl the colour of a banana.", None, None,
     {"add": [["tomato_sauce", *SPOT["back_right"]], ["white_yellow_mug", *SPOT["back_left"]]]},
     "the red cube counts, the yellow bowl is the target; the tomato sauce can and the "
     "yellow mug are the look-alikes"),
    ("commonsense_distractor", "soup_can", "blue_cyl_green",
     "Use your right arm to pick up the object shaped like a soup can that is the colour of the "
     "sky and place it in the bowl the colour of fresh grass.", None, None,
     {"add": [["alphabet_soup", *SPOT["back_mid"]]]},
     "the blue cylinder counts; the alphabet soup can is the look-alike (a soup can, not blue)"),
    ("commonsense_distractor", "soup_can_lemon", "blue_cyl_yellow",
     "Use your right arm to pick up the object shaped like a soup can that is the colour of the "
     "sky and place it in the bowl the colour of lemons.", None, None,
     {"add": [["alphabet_soup", *SPOT["back_right"]]]},
     "the blue cylinder counts; the alphabet soup can is the look-alike"),
    ("commonsense_distractor", "ketchup_fire_truck", "pick_red_cyl",
     "Use your left arm to pick up the larger object the colour of a fire truck.", None, None,
     {"add": [["ketchup", *SPOT["back_left"]]]},
     "the red cylinder counts; the ketchup bottle is the look-alike (red and larger)"),
)
#: the OOD relations' actions (the other probes keep their base task's)
_RELATION_ACTIONS = {"right_cube_on_red_cyl": "stack", "right_cube_on_left_cube": "stack",
                     "right_cube_on_blue_cyl": "stack"}


def _probe(entry, suite) -> Probe:
    sub, short, base_key, instruction, source, target, edits, note = entry
    if sub not in CATEGORY_OF:
        raise ValueError(f"unknown INT-ACT subcategory {sub!r}")
    base = suite.get(_BASES[base_key])
    action = _RELATION_ACTIONS.get(short, base.action)
    arm = base.arm
    tgt = dict(base.target)
    if target is not None:
        tgt = {"target_object": target}
    task = TaskSpec(id=f"intact_{sub}_{short}", scene=SCENE, level=LEVEL, layout=LAYOUT,
                    instruction=instruction or base.instruction, arm=arm, action=action,
                    source=source or base.source, target=tgt,
                    training_task=base.training_task, base_task=base.base_task,
                    variant=sub, edits=dict(edits))
    return Probe(sub, base.id, task, note)


@cache
def probes() -> tuple[Probe, ...]:
    """Every probe, in Table 1's column order."""
    suite = load_suite()
    out = tuple(_probe(entry, suite) for entry in _PROBES)
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate INT-ACT probe ids")
    return out


def probe(probe_id: str) -> Probe:
    for p in probes():
        if p.id == probe_id:
            return p
    raise ValueError(f"unknown INT-ACT probe {probe_id!r}; `vla-bridge tasks --intact` lists them")


def select(subcategories: str = "", ids: str = "") -> list[Probe]:
    """Probes by comma-separated subcategories (or categories) and ids ('' = all)."""
    wanted = [s.strip() for s in subcategories.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SUBCATEGORY_NAMES) - set(CATEGORY_OF.values()))
    if unknown:
        raise ValueError(f"unknown INT-ACT subcategories {unknown}; known: "
                         + ", ".join(SUBCATEGORY_NAMES))
    chosen = [probe(i.strip()) for i in ids.split(",") if i.strip()] or list(probes())
    return [p for p in chosen if not wanted or p.subcategory in wanted or p.category in wanted]


def select_spec(spec: str) -> list[Probe]:
    """The probes of a ``--intact`` value: "all", or comma-separated subcategories, categories
    and probe ids (a probe is in when any of them names it)."""
    names = [s.strip() for s in ("" if spec.strip() == "all" else spec).split(",") if s.strip()]
    known = set(SUBCATEGORY_NAMES) | set(CATEGORY_OF.values())
    groups = [n for n in names if n in known]
    ids = [n for n in names if n not in known]
    if not names:
        return list(probes())
    chosen = select(",".join(groups)) if groups else []
    chosen += [probe(i) for i in ids if all(p.id != i for p in chosen)]
    return [p for p in probes() if p in chosen]


def edited_bodies(task: TaskSpec) -> dict[str, str]:
    """LIBERO body name -> the layout body it replaces ('' when added) of a probe's task."""
    out = {}
    for old, new in (task.edits.get("replace") or {}).items():
        out[new if isinstance(new, str) else new[0]] = old
    for name, *_ in task.edits.get("add") or []:
        out[name] = ""
    return out
