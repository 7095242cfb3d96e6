"""INT-ACT's probing suite on LIBERO (Fang et al., "From Intention to Execution", §3): 55
probes as BDDL tasks on LIBERO-Object's floor scene, the suite ``libero_intact``.

LIBERO-Object's ten tasks are "pick up the X and place it in the basket", X one of ten grocery
items, with five other items on the floor. A policy trained on that suite is probed here as
the paper probes its models: five original tasks (the training scene, as LIBERO-Object lays
it out) and five probes in each of the paper's ten subcategories:

* object: ``ood_source`` (an item of LIBERO's library that no LIBERO-Object task has: the
  cookies, popcorn, macaroni and cheese, the new salad dressing, a black bowl),
  ``ood_target`` (a plate, a tray or a bowl instead of the basket), ``ood_source_target``
  (both), ``ood_relation`` (one seen item on another: the cream cheese on the butter);
* language: ``language_action`` (other verbs), ``language_negation`` (a "not" on another
  item), ``language_appearance`` (the item by its shape, not its name);
* vision_language: ``object_distractor`` (two unseen items added to the floor),
  ``commonsense`` (the item by its use: "what you would put on fries"),
  ``commonsense_distractor`` (the same words beside an item they fit too: the tomato sauce
  beside the ketchup for "the red sauce for fries").

Each probe is a ``LiberoProbe``: its BDDL problem (``bddl``: written by this module, read by
LIBERO's own parser in the sim), the goal LIBERO's predicates check (``In`` the basket's
contain region, or ``On`` the target), the one object that counts as the source (``note``:
which, where the words fit another), and the movable objects the wrong-object rule watches.
``catalog()`` gives the suite as the LIBERO catalog's entries (the evaluator plans from them
without LIBERO installed). The initial states are not shipped files: initial state k is the
scene LIBERO's own placement draws at openpi's k-th reset (``sim_nodes.libero.backend``).
Pure logic, no rclpy, no LIBERO.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

SUITE = "libero_intact"
SCENE_SUITE = "libero_object"  # the scene, step budget and training suite the probes vary
INIT_STATES = 50  # initial states per probe, as LIBERO's tasks have
PROBLEM = "LIBERO_Floor_Manipulation"

#: the floor regions (x0, y0, x1, y1 in the floor's frame, m) of LIBERO-Object's first layout
#: (its alphabet-soup task): the source, the container, and the five other items; plus two
#: free places for the probes' added objects
REGIONS = {
    "target_object_region": (-0.145, -0.265, -0.095, -0.215),
    "bin_region": (-0.01, 0.25, 0.01, 0.27),
    "other_object_region_0": (0.025, -0.125, 0.075, -0.075),
    "other_object_region_1": (-0.175, 0.035, -0.125, 0.085),
    "other_object_region_2": (0.075, -0.225, 0.125, -0.175),
    "other_object_region_3": (0.125, 0.005, 0.175, 0.055),
    "other_object_region_4": (-0.225, -0.105, -0.175, -0.055),
    "extra_object_region_0": (-0.055, -0.035, -0.025, -0.005),
    "extra_object_region_1": (0.14, -0.14, 0.17, -0.11),
}
OTHER_REGIONS = tuple(f"other_object_region_{i}" for i in range(5))
EXTRA_REGIONS = ("extra_object_region_0", "extra_object_region_1")
#: LIBERO-Object's ten items (the training suite's sources)
SEEN = ("alphabet_soup", "bbq_sauce", "butter", "chocolate_pudding", "cream_cheese",
        "ketchup", "milk", "orange_juice", "salad_dressing", "tomato_sauce")
#: the containers: the basket's goal is LIBERO's ``In`` its contain region; the others' ``On``
CONTAINED = ("basket",)
WORDS = {"alphabet_soup": "alphabet soup", "bbq_sauce": "bbq sauce", "butter": "butter",
         "chocolate_pudding": "chocolate pudding", "cream_cheese": "cream cheese",
         "ketchup": "ketchup", "milk": "milk", "orange_juice": "orange juice",
         "salad_dressing": "salad dressing", "tomato_sauce": "tomato sauce",
         "cookies": "cookies", "popcorn": "popcorn", "macaroni_and_cheese": "macaroni and cheese",
         "new_salad_dressing": "new salad dressing", "akita_black_bowl": "black bowl",
         "basket": "basket", "plate": "plate", "wooden_tray": "wooden tray",
         "white_bowl": "white bowl", "glazed_rim_porcelain_ramekin": "ramekin"}
# the originals: LIBERO-Object's own tasks of the layout above, by source, with their five
# other items in regions 0..4 (LIBERO-Object's order)
_ORIGINAL_OTHERS = {
    "alphabet_soup": ("salad_dressing", "cream_cheese", "milk", "tomato_sauce", "butter"),
    "cream_cheese": ("alphabet_soup", "butter", "milk", "orange_juice", "tomato_sauce"),
    "ketchup": ("alphabet_soup", "bbq_sauce", "cream_cheese", "milk", "salad_dressing"),
    "butter": ("bbq_sauce", "chocolate_pudding", "ketchup", "orange_juice", "tomato_sauce"),
    "milk": ("butter", "chocolate_pudding", "cream_cheese", "orange_juice", "tomato_sauce"),
}


def instance(category: str) -> str:
    """A category's one BDDL instance in a probe's scene (LIBERO's naming: ``butter_1``)."""
    return f"{category}_1"


@dataclass(frozen=True)
class LiberoProbe:
    """One probe on LIBERO-Object's scene: the source in the target-object region, the
    container (or, for a relation, the seen item the source goes on) in the bin region, the
    other items in regions 0..4 and the added ones in the extra regions."""
    subcategory: str
    short: str
    base: str  # the original probe's short name it varies (Table 2's deltas)
    instruction: str
    source: str  # the source's category (its instance is ``<category>_1``)
    target: str  # the container's (or the relation's target item's) category
    others: tuple[str, ...]  # the items in regions 0..4
    added: tuple[str, ...] = ()  # the items in the extra regions
    note: str = ""
    relation: bool = False  # the target is an item (``On``), not a container
    index: int = field(default=-1, compare=False)  # the task number in the suite

    @property
    def id(self) -> str:
        return f"{SUITE}_{self.subcategory}_{self.short}"

    @property
    def base_id(self) -> str:
        return f"{SUITE}_original_{self.base}"

    @property
    def category(self) -> str:
        from vla_bridge.benchmarks.intact.probes import CATEGORY_OF
        return CATEGORY_OF[self.subcategory]

    @property
    def source_object(self) -> str:
        """The object that counts as the source (its BDDL instance, its name in the world
        state)."""
        return instance(self.source)

    @property
    def target_instance(self) -> str:
        return instance(self.target)

    @property
    def name(self) -> str:
        """The BDDL file's stem (LIBERO's task name)."""
        return self.id

    def objects(self) -> dict[str, str]:
        """{instance: category} of every movable object, in the BDDL's order."""
        cats = (self.source, self.target, *self.others, *self.added)
        return {instance(c): c for c in cats}

    def placement(self) -> dict[str, str]:
        """{instance: floor region} of the BDDL's ``:init``."""
        out = {self.source_object: "target_object_region",
               self.target_instance: "bin_region"}
        out.update({instance(c): r for c, r in zip(self.others, OTHER_REGIONS)})
        out.update({instance(c): r for c, r in zip(self.added, EXTRA_REGIONS)})
        return out

    def goal(self) -> list[list[str]]:
        """The BDDL goal as the catalog writes it (lower-case predicates)."""
        if self.target in CONTAINED and not self.relation:
            return [["in", self.source_object, f"{self.target_instance}_contain_region"]]
        return [["on", self.source_object, self.target_instance]]

    def watched(self) -> list[str]:
        """The objects the wrong-object rule watches: every movable one but the source and
        the container (a relation's target item is watched: knocking it aside is a move)."""
        return [i for i in self.objects() if i != self.source_object
                and (self.relation or i != self.target_instance)]

    def bddl(self) -> str:
        """The BDDL problem LIBERO parses (``robosuite_parse_problem``)."""
        regions = []
        for name, (x0, y0, x1, y1) in REGIONS.items():
            regions.append(f"      ({name}\n          (:target floor)\n"
                           f"          (:ranges (\n              ({x0} {y0} {x1} {y1})\n"
                           "            )\n          )\n      )")
        if self.target in CONTAINED:
            regions.append("      (contain_region\n          (:target "
                           f"{self.target_instance})\n      )")
        objects = "\n".join(f"    {i} - {c}" for i, c in self.objects().items())
        init = "\n".join(f"    (On {i} floor_{r})" for i, r in self.placement().items())
        (pred, a, b), = self.goal()
        goal = f"({pred.capitalize()} {a} {b})"
        language = "".join(c for c in self.instruction if c.isalnum() or c in " -'")
        return (f"(define (problem {PROBLEM})\n  (:domain robosuite)\n"
                f"  (:language {language})\n    (:regions\n" + "\n".join(regions)
                + "\n    )\n\n  (:fixtures\n    floor - floor\n  )\n\n"
                f"  (:objects\n{objects}\n  )\n\n"
                f"  (:obj_of_interest\n    {self.source_object}\n    {self.target_instance}\n  )\n\n"
                f"  (:init\n{init}\n  )\n\n  (:goal\n    (And {goal})\n  )\n\n)\n")

    def catalog_entry(self) -> dict:
        """The suite's catalog entry (``benchmarks.libero.protocol``'s format)."""
        regions = {f"floor_{r}": "floor" for r in REGIONS}
        if self.target in CONTAINED:
            regions[f"{self.target_instance}_contain_region"] = self.target_instance
        return {"index": self.index, "name": self.name, "instruction": self.instruction,
                "goal": self.goal(), "objects": dict(sorted(self.objects().items())),
                "fixtures": {"floor": "floor"}, "regions": dict(sorted(regions.items())),
                "init_states": INIT_STATES, "probe": self.to_dict()}

    def to_dict(self) -> dict:
        return {"id": self.id, "category": self.category, "subcategory": self.subcategory,
                "base": self.base_id, "source": self.source_object,
                "target": self.target_instance, "note": self.note,
                "watched": self.watched()}


def _words(category: str) -> str:
    return WORDS[category]


def _put(source: str, target: str = "basket") -> str:
    prep = "in" if target in CONTAINED else "on"
    return f"pick up the {_words(source)} and place it {prep} the {_words(target)}"


def _original(source: str) -> tuple:
    return ("original", source, source, _put(source), source, "basket",
            _ORIGINAL_OTHERS[source])


# (subcategory, short, base, instruction, source, target, others[, added, note, relation])
_PROBES = (
    *(_original(s) for s in _ORIGINAL_OTHERS),
    # ----------------------------------------------------------------- OOD source
    ("ood_source", "cookies", "alphabet_soup", _put("cookies"), "cookies", "basket",
     _ORIGINAL_OTHERS["alphabet_soup"]),
    ("ood_source", "popcorn", "cream_cheese", _put("popcorn"), "popcorn", "basket",
     _ORIGINAL_OTHERS["cream_cheese"]),
    ("ood_source", "macaroni", "ketchup", _put("macaroni_and_cheese"), "macaroni_and_cheese",
     "basket", _ORIGINAL_OTHERS["ketchup"]),
    ("ood_source", "new_dressing", "butter", _put("new_salad_dressing"), "new_salad_dressing",
     "basket", _ORIGINAL_OTHERS["butter"]),
    ("ood_source", "black_bowl", "milk", _put("akita_black_bowl"), "akita_black_bowl", "basket",
     _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- OOD target
    ("ood_target", "soup_plate", "alphabet_soup", _put("alphabet_soup", "plate"),
     "alphabet_soup", "plate", _ORIGINAL_OTHERS["alphabet_soup"]),
    ("ood_target", "cheese_tray", "cream_cheese", _put("cream_cheese", "wooden_tray"),
     "cream_cheese", "wooden_tray", _ORIGINAL_OTHERS["cream_cheese"]),
    ("ood_target", "ketchup_plate", "ketchup", _put("ketchup", "plate"), "ketchup", "plate",
     _ORIGINAL_OTHERS["ketchup"]),
    ("ood_target", "butter_bowl", "butter", _put("butter", "white_bowl"), "butter",
     "white_bowl", _ORIGINAL_OTHERS["butter"]),
    ("ood_target", "milk_tray", "milk", _put("milk", "wooden_tray"), "milk", "wooden_tray",
     _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- OOD source + target
    ("ood_source_target", "cookies_plate", "alphabet_soup", _put("cookies", "plate"), "cookies",
     "plate", _ORIGINAL_OTHERS["alphabet_soup"]),
    ("ood_source_target", "popcorn_tray", "cream_cheese", _put("popcorn", "wooden_tray"),
     "popcorn", "wooden_tray", _ORIGINAL_OTHERS["cream_cheese"]),
    ("ood_source_target", "macaroni_tray", "ketchup", _put("macaroni_and_cheese", "wooden_tray"),
     "macaroni_and_cheese", "wooden_tray", _ORIGINAL_OTHERS["ketchup"]),
    ("ood_source_target", "dressing_plate", "butter", _put("new_salad_dressing", "plate"),
     "new_salad_dressing", "plate", _ORIGINAL_OTHERS["butter"]),
    ("ood_source_target", "popcorn_bowl", "milk", _put("popcorn", "white_bowl"), "popcorn",
     "white_bowl", _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- OOD relation: one seen
    # item on another (the target item in the bin region, where the basket stood)
    ("ood_relation", "cheese_on_butter", "cream_cheese", _put("cream_cheese", "butter"),
     "cream_cheese", "butter", ("alphabet_soup", "bbq_sauce", "milk", "orange_juice",
                                "tomato_sauce"), (), "", True),
    ("ood_relation", "butter_on_cheese", "butter", _put("butter", "cream_cheese"), "butter",
     "cream_cheese", ("bbq_sauce", "chocolate_pudding", "ketchup", "orange_juice",
                      "tomato_sauce"), (), "", True),
    ("ood_relation", "pudding_on_butter", "butter", _put("chocolate_pudding", "butter"),
     "chocolate_pudding", "butter", ("bbq_sauce", "ketchup", "milk", "orange_juice",
                                     "tomato_sauce"), (), "", True),
    ("ood_relation", "cheese_on_pudding", "cream_cheese", _put("cream_cheese",
                                                               "chocolate_pudding"),
     "cream_cheese", "chocolate_pudding", ("alphabet_soup", "butter", "milk", "orange_juice",
                                           "tomato_sauce"), (), "", True),
    ("ood_relation", "soup_on_butter", "alphabet_soup", _put("alphabet_soup", "butter"),
     "alphabet_soup", "butter", ("salad_dressing", "cream_cheese", "milk", "tomato_sauce",
                                 "ketchup"), (), "", True),
    # ----------------------------------------------------------------- language: action verbs
    ("language_action", "grab_drop", "alphabet_soup",
     "grab the alphabet soup and drop it into the basket", "alphabet_soup", "basket",
     _ORIGINAL_OTHERS["alphabet_soup"]),
    ("language_action", "move_into", "cream_cheese", "move the cream cheese into the basket",
     "cream_cheese", "basket", _ORIGINAL_OTHERS["cream_cheese"]),
    ("language_action", "take_put", "ketchup", "take the ketchup and put it in the basket",
     "ketchup", "basket", _ORIGINAL_OTHERS["ketchup"]),
    ("language_action", "lift_set", "butter", "lift the butter and set it down in the basket",
     "butter", "basket", _ORIGINAL_OTHERS["butter"]),
    ("language_action", "store", "milk", "store the milk in the basket", "milk", "basket",
     _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- language: negation
    ("language_negation", "not_dressing", "alphabet_soup",
     "pick up the alphabet soup, not the salad dressing, and place it in the basket",
     "alphabet_soup", "basket", _ORIGINAL_OTHERS["alphabet_soup"]),
    ("language_negation", "not_butter", "cream_cheese",
     "leave the butter alone and pick up the cream cheese and place it in the basket",
     "cream_cheese", "basket", _ORIGINAL_OTHERS["cream_cheese"]),
    ("language_negation", "not_bbq", "ketchup",
     "pick up the sauce that is not the bbq sauce and place it in the basket", "ketchup",
     "basket", _ORIGINAL_OTHERS["ketchup"],
     (), "ketchup counts: the scene's only other sauce; salad dressing is no sauce"),
    ("language_negation", "not_pudding", "butter",
     "pick up the butter and not the chocolate pudding and place it in the basket", "butter",
     "basket", _ORIGINAL_OTHERS["butter"]),
    ("language_negation", "not_juice", "milk",
     "place the milk in the basket, not the orange juice", "milk", "basket",
     _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- language: appearance
    ("language_appearance", "round_can", "alphabet_soup",
     "pick up the short round can with the red label and place it in the basket",
     "alphabet_soup", "basket", ("salad_dressing", "cream_cheese", "milk", "ketchup", "butter"),
     (), "alphabet soup counts: the scene's only can (tomato sauce left out)"),
    ("language_appearance", "flat_box", "cream_cheese",
     "pick up the flat rectangular box and place it in the basket", "cream_cheese", "basket",
     ("alphabet_soup", "milk", "orange_juice", "tomato_sauce", "ketchup"),
     (), "cream cheese counts: the scene's only flat box (butter and pudding left out)"),
    ("language_appearance", "tall_red_bottle", "ketchup",
     "pick up the tall red bottle and place it in the basket", "ketchup", "basket",
     ("alphabet_soup", "bbq_sauce", "cream_cheese", "milk", "butter"),
     (), "ketchup counts: the only red bottle (salad dressing left out)"),
    ("language_appearance", "yellow_box", "butter",
     "pick up the small yellow box and place it in the basket", "butter", "basket",
     ("bbq_sauce", "ketchup", "milk", "orange_juice", "tomato_sauce"),
     (), "butter counts: the scene's only box"),
    ("language_appearance", "white_carton", "milk",
     "pick up the white carton and place it in the basket", "milk", "basket",
     ("butter", "chocolate_pudding", "cream_cheese", "ketchup", "tomato_sauce"),
     (), "milk counts: the only carton (orange juice left out)"),
    # ----------------------------------------------------------------- object distractors
    ("object_distractor", "soup_plus2", "alphabet_soup", _put("alphabet_soup"), "alphabet_soup",
     "basket", _ORIGINAL_OTHERS["alphabet_soup"], ("cookies", "popcorn")),
    ("object_distractor", "cheese_plus2", "cream_cheese", _put("cream_cheese"), "cream_cheese",
     "basket", _ORIGINAL_OTHERS["cream_cheese"], ("macaroni_and_cheese", "cookies")),
    ("object_distractor", "ketchup_plus2", "ketchup", _put("ketchup"), "ketchup", "basket",
     _ORIGINAL_OTHERS["ketchup"], ("new_salad_dressing", "popcorn")),
    ("object_distractor", "butter_plus2", "butter", _put("butter"), "butter", "basket",
     _ORIGINAL_OTHERS["butter"], ("popcorn", "cookies")),
    ("object_distractor", "milk_plus2", "milk", _put("milk"), "milk", "basket",
     _ORIGINAL_OTHERS["milk"], ("macaroni_and_cheese", "new_salad_dressing")),
    # ----------------------------------------------------------------- commonsense
    ("commonsense", "alphabet", "alphabet_soup",
     "pick up the soup with letters in it and place it in the basket", "alphabet_soup",
     "basket", _ORIGINAL_OTHERS["alphabet_soup"]),
    ("commonsense", "bagel", "cream_cheese",
     "pick up what you would spread on a bagel and place it in the basket", "cream_cheese",
     "basket", ("alphabet_soup", "milk", "orange_juice", "tomato_sauce", "ketchup"),
     (), "cream cheese counts: butter, which fits too, is left out of this scene"),
    ("commonsense", "fries", "ketchup",
     "pick up what you would put on fries and place it in the basket", "ketchup", "basket",
     ("alphabet_soup", "bbq_sauce", "cream_cheese", "milk", "butter"),
     (), "ketchup counts: bbq sauce fits fries less; salad dressing is left out"),
    ("commonsense", "toast", "butter",
     "pick up what you would melt on warm toast and place it in the basket", "butter",
     "basket", _ORIGINAL_OTHERS["butter"]),
    ("commonsense", "cereal", "milk",
     "pick up what you would pour on cereal and place it in the basket", "milk", "basket",
     _ORIGINAL_OTHERS["milk"]),
    # ----------------------------------------------------------------- commonsense + look-alike
    ("commonsense_distractor", "alphabet_tomato", "alphabet_soup",
     "pick up the soup with letters in it and place it in the basket", "alphabet_soup",
     "basket", ("salad_dressing", "cream_cheese", "milk", "butter", "ketchup"),
     ("tomato_sauce",), "alphabet soup counts; the tomato sauce beside it is the same can"),
    ("commonsense_distractor", "bagel_butter", "cream_cheese",
     "pick up what you would spread on a bagel and place it in the basket", "cream_cheese",
     "basket", _ORIGINAL_OTHERS["cream_cheese"], (),
     "cream cheese counts; the butter beside it spreads on a bagel too and looks alike"),
    ("commonsense_distractor", "fries_tomato", "ketchup",
     "pick up the red sauce you would put on fries and place it in the basket", "ketchup",
     "basket", ("alphabet_soup", "bbq_sauce", "cream_cheese", "milk", "butter"),
     ("tomato_sauce",), "ketchup counts; the tomato sauce is red sauce too"),
    ("commonsense_distractor", "toast_cheese", "butter",
     "pick up what you would melt on warm toast and place it in the basket", "butter",
     "basket", ("bbq_sauce", "chocolate_pudding", "ketchup", "orange_juice", "tomato_sauce"),
     ("cream_cheese",), "butter counts; the cream cheese beside it is a look-alike box"),
    ("commonsense_distractor", "cereal_juice", "milk",
     "pick up the drink you would pour on cereal and place it in the basket", "milk", "basket",
     ("butter", "chocolate_pudding", "cream_cheese", "tomato_sauce", "ketchup"),
     ("orange_juice",), "milk counts; the orange juice beside it is the same carton"),
)


@cache
def probes() -> tuple[LiberoProbe, ...]:
    """Every probe, in Table 1's column order; ``index`` is its task number in the suite."""
    out = []
    for i, entry in enumerate(_PROBES):
        sub, short, base, instruction, source, target, others, *rest = entry
        added, note, relation = (*rest, *((), "", False)[len(rest):])
        out.append(LiberoProbe(sub, short, base, instruction, source, target, tuple(others),
                               tuple(added), note, relation, i))
    _check(out)
    return tuple(out)


def _check(out: list[LiberoProbe]) -> None:
    ids = [p.id for p in out]
    if len(set(ids)) != len(ids):
        raise ValueError("duplicate LIBERO INT-ACT probe ids")
    originals = {p.id for p in out if p.subcategory == "original"}
    for p in out:
        cats = [p.source, p.target, *p.others, *p.added]
        if len(set(cats)) != len(cats):
            raise ValueError(f"{p.id}: an object twice in its scene: {cats}")
        if len(p.others) != len(OTHER_REGIONS) or len(p.added) > len(EXTRA_REGIONS):
            raise ValueError(f"{p.id}: {len(p.others)} others (5 wanted), {len(p.added)} added")
        if p.base_id not in originals:
            raise ValueError(f"{p.id}: base {p.base_id} is no original probe")
        unknown = set(cats) - set(WORDS)
        if unknown:
            raise ValueError(f"{p.id}: objects without words {sorted(unknown)}")


def probe(probe_id: str) -> LiberoProbe:
    for p in probes():
        if p.id == probe_id:
            return p
    raise ValueError(f"unknown LIBERO INT-ACT probe {probe_id!r}; `vla-bridge tasks --intact "
                     "--benchmark libero` lists them")


def by_index(index: int) -> LiberoProbe:
    all_ = probes()
    if not 0 <= index < len(all_):
        raise ValueError(f"{SUITE} has tasks 0..{len(all_) - 1}, got {index}")
    return all_[index]


def catalog() -> list[dict]:
    """The suite's catalog entries, in task order."""
    return [p.catalog_entry() for p in probes()]
