"""Scene entropy of a training suite (RoboFollow paper, Eq. 1 and appendix A.1).

Pure logic, no rclpy. ``vla-bridge entropy [--summary]`` prints both suites' values.

Definition (Eq. 1). Let T be a training task label (shared by all paraphrases of one task) and
S the task-independent initial scene specification (fixtures, visible objects and attributes,
placement distributions, observable initial-state predicates; no task names, language or
goals). Then

    H_scene = H_train(T | S) = - sum_s p(s) sum_t p(t|s) log2 p(t|s)

where p(s) is the fraction of training demonstrations whose scene specification is s and p(t|s)
the fraction of the demonstrations of scene group s labelled t. Random jitter drawn from a
shared distribution and paraphrases create neither new groups nor new labels. With the same
number of demonstrations per task this reduces to

    H_scene = sum_s (K_s / K) log2 K_s,   K = sum_s K_s,

K_s being the number of task labels in group s.

RoboFollow (computed here from config/robofollow, never typed in): the 75 training tasks of
tasks.json are grouped by their scene specification, i.e. the scene plus the placements of
its training layout in scenes.json (objects, fixtures, nominal xy, slots, supports, containers;
jitter rules are shared per scene and so do not split groups). Scenes 1, 2 and 3 train in one
layout each (16 tasks each); Scene 4 trains in three layouts with 16, 7 and 4 tasks. With 50
demonstrations per task:

    H = (64/75) log2 16 + (7/75) log2 7 + (4/75) log2 4
      = 3.41333 + 0.26199 + 0.10667 = 3.782 bits.

LIBERO: the paper gives per-suite values 0 / 0 / 3.322 / 0.200 bits for Spatial / Object /
Goal / Long under the same task-label definition and their equally weighted mean, 0.880 bits.
``LIBERO_SUITES`` below encodes each suite's 10 task labels with the initial-scene group each
belongs to (our reading of LIBERO's task definitions, reproducing the paper's numbers):

* Spatial: every task has its own placement of the same objects -> 10 groups of 1 -> 0 bits;
* Object: every task has its own object set and layout -> 10 groups of 1 -> 0 bits;
* Goal: all 10 tasks share one scene -> log2 10 = 3.322 bits;
* Long (LIBERO-10): LIVING_ROOM_SCENE2 holds two tasks, the other 8 scenes one each
  -> (2/10) log2 2 = 0.200 bits.

Equally weighted mean: (0 + 0 + 3.32193 + 0.2) / 4 = 0.88048 -> 0.880 bits. (Because each
suite has 10 tasks, pooling the 40 tasks into one suite gives the same value.)
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Hashable, Iterable, Mapping, Sequence

from vla_bridge.benchmarks.robofollow.scenes import SceneSpec, load_scenes
from vla_bridge.benchmarks.robofollow.tasks import SCENES, Suite, load_suite

# Per-suite task labels -> initial-scene group (LIBERO task definitions).
_SPATIAL = [
    "pick_up_the_black_bowl_between_the_plate_and_the_ramekin_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_next_to_the_ramekin_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_from_table_center_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_on_the_cookie_box_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_in_the_top_drawer_of_the_wooden_cabinet_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_on_the_ramekin_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_next_to_the_cookie_box_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_on_the_stove_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_next_to_the_plate_and_place_it_on_the_plate",
    "pick_up_the_black_bowl_on_the_wooden_cabinet_and_place_it_on_the_plate",
]
_OBJECT = [
    f"pick_up_the_{name}_and_place_it_in_the_basket"
    for name in ("alphabet_soup", "cream_cheese", "salad_dressing", "bbq_sauce", "ketchup",
                 "tomato_sauce", "butter", "milk", "chocolate_pudding", "orange_juice")
]
_GOAL = [
    "open_the_middle_drawer_of_the_cabinet", "put_the_bowl_on_the_stove",
    "put_the_wine_bottle_on_top_of_the_cabinet", "open_the_top_drawer_and_put_the_bowl_inside",
    "put_the_bowl_on_top_of_the_cabinet", "push_the_plate_to_the_front_of_the_stove",
    "put_the_cream_cheese_in_the_bowl", "turn_on_the_stove", "put_the_bowl_on_the_plate",
    "put_the_wine_bottle_on_the_rack",
]
_LONG = [
    "LIVING_ROOM_SCENE2_put_both_the_alphabet_soup_and_the_tomato_sauce_in_the_basket",
    "LIVING_ROOM_SCENE2_put_both_the_cream_cheese_box_and_the_butter_in_the_basket",
    "KITCHEN_SCENE3_turn_on_the_stove_and_put_the_moka_pot_on_it",
    "KITCHEN_SCENE4_put_the_black_bowl_in_the_bottom_drawer_of_the_cabinet_and_close_it",
    "LIVING_ROOM_SCENE5_put_the_white_mug_on_the_left_plate_and_put_the_yellow_and_white_mug_on_the_right_plate",
    "STUDY_SCENE1_pick_up_the_book_and_place_it_in_the_back_compartment_of_the_caddy",
    "LIVING_ROOM_SCENE6_put_the_white_mug_on_the_plate_and_put_the_chocolate_pudding_to_the_right_of_the_plate",
    "LIVING_ROOM_SCENE1_put_both_the_alphabet_soup_and_the_cream_cheese_box_in_the_basket",
    "KITCHEN_SCENE8_put_both_moka_pots_on_the_stove",
    "KITCHEN_SCENE6_put_the_yellow_and_white_mug_in_the_microwave_and_close_it",
]


def _long_scene(task: str) -> str:
    """LIBERO-10 task names start with their scene, e.g. LIVING_ROOM_SCENE2_..."""
    head, _, _ = task.partition("_SCENE")
    number = task[len(head) + len("_SCENE"):].split("_", 1)[0]
    return f"{head}_SCENE{number}"


#: suite -> {task label: initial-scene group}
LIBERO_SUITES: dict[str, dict[str, str]] = {
    "spatial": {t: f"spatial/{t}" for t in _SPATIAL},
    "object": {t: f"object/{t}" for t in _OBJECT},
    "goal": {t: "goal/shared_kitchen_scene" for t in _GOAL},
    "long": {t: f"long/{_long_scene(t)}" for t in _LONG},
}
#: the values the paper states (appendix A.1), for cross-checks
LIBERO_PAPER_BITS = {"spatial": 0.0, "object": 0.0, "goal": 3.322, "long": 0.200, "mean": 0.880}
ROBOFOLLOW_PAPER_BITS = 3.782
ROBOFOLLOW_PAPER_GROUP_SIZES = (16, 16, 16, 16, 7, 4)


# --------------------------------------------------------------------------- Eq. 1

def conditional_entropy(demos: Mapping[Hashable, Mapping[Hashable, float]]) -> float:
    """Eq. 1 from demonstration counts: {scene group: {task label: n_demos}} -> H(T|S) in bits."""
    total = sum(n for tasks in demos.values() for n in tasks.values())
    if total <= 0:
        raise ValueError("no demonstrations")
    h = 0.0
    for tasks in demos.values():
        n_s = sum(tasks.values())
        if n_s <= 0:
            continue
        p_s = n_s / total
        for n in tasks.values():
            if n < 0:
                raise ValueError("negative demonstration count")
            if n > 0:
                p = n / n_s
                h -= p_s * p * math.log2(p)
    return h


def scene_entropy(task_groups: Mapping[Hashable, Hashable] | Iterable[tuple[Hashable, Hashable]],
                  demos_per_task: int | Mapping[Hashable, int] = 50) -> float:
    """H_scene from {task label: scene group} (or (label, group) pairs) and demos per task.

    Equal demos per task gives sum_s (K_s/K) log2 K_s; the count itself then cancels out.
    """
    pairs = list(task_groups.items()) if isinstance(task_groups, Mapping) else list(task_groups)
    labels = [label for label, _ in pairs]
    if len(set(labels)) != len(labels):
        raise ValueError("a task label appears twice")
    demos: dict[Hashable, dict[Hashable, float]] = defaultdict(dict)
    for label, group in pairs:
        n = demos_per_task[label] if isinstance(demos_per_task, Mapping) else demos_per_task
        demos[group][label] = n
    return conditional_entropy(demos)


def entropy_from_group_sizes(sizes: Sequence[int]) -> float:
    """sum_s (K_s/K) log2 K_s for equal demonstrations per task."""
    k = sum(sizes)
    return sum(ks / k * math.log2(ks) for ks in sizes if ks > 0)


def group_sizes(task_groups: Mapping[Hashable, Hashable]) -> list[int]:
    """K_s per group, largest first."""
    return sorted(Counter(task_groups.values()).values(), reverse=True)


# --------------------------------------------------------------------------- RoboFollow

def scene_specification(scene: SceneSpec, layout: str) -> tuple:
    """Task-independent initial scene specification of one layout (hashable).

    The scene, every placed body with its shape and colour, nominal xy, slot, support and
    container. Jitter rules are per scene (a shared placement distribution), so two layouts
    with the same placements fall into the same group whatever their keys are.
    """
    lay = scene.layout(layout)
    bodies = []
    for p in lay.placements:
        body = scene.body(p.name)
        bodies.append((p.name, getattr(body, "shape", None), tuple(getattr(body, "rgb", None) or ()),
                       tuple(round(v, 6) for v in p.xy), p.slot, p.support, p.container))
    return (scene.name, tuple(sorted(bodies, key=lambda b: b[0])))


def robofollow_task_groups(suite: Suite | None = None,
                           scenes: Mapping[str, SceneSpec] | None = None) -> dict[str, tuple]:
    """{training task id: scene specification} for the suite's 75 training tasks."""
    suite = suite or load_suite()
    scenes = scenes or load_scenes()
    groups: dict[str, tuple] = {}
    for scene in SCENES:
        for task in suite.training_tasks(scene):
            groups[f"{scene}/{task.id}"] = scene_specification(scenes[scene], task.layout)
    return groups


def robofollow_entropy(suite: Suite | None = None, scenes: Mapping[str, SceneSpec] | None = None,
                       demos_per_task: int | Mapping[str, int] = 50) -> float:
    """H_scene of RoboFollow's training suite from config/robofollow (3.782 bits)."""
    return scene_entropy(robofollow_task_groups(suite, scenes), demos_per_task)


# --------------------------------------------------------------------------- LIBERO

def libero_suite_entropies(suites: Mapping[str, Mapping[str, str]] = LIBERO_SUITES) -> dict[str, float]:
    """Per-suite H_scene (equal demos per task): spatial 0, object 0, goal 3.322, long 0.200."""
    return {name: scene_entropy(groups) for name, groups in suites.items()}


def libero_entropy(suites: Mapping[str, Mapping[str, str]] = LIBERO_SUITES) -> float:
    """Equally weighted mean over the LIBERO suites (0.880 bits)."""
    values = libero_suite_entropies(suites)
    return sum(values.values()) / len(values)


def report() -> dict:
    """Both computations with their group sizes, for the CLI / docs."""
    rf_groups = robofollow_task_groups()
    return {
        "robofollow": {"bits": robofollow_entropy(), "group_sizes": group_sizes(rf_groups),
                       "n_tasks": len(rf_groups), "paper_bits": ROBOFOLLOW_PAPER_BITS},
        "libero": {"bits": libero_entropy(), "per_suite": libero_suite_entropies(),
                   "group_sizes": {k: group_sizes(v) for k, v in LIBERO_SUITES.items()},
                   "paper_bits": LIBERO_PAPER_BITS},
    }
