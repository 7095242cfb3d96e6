"""Part I-A questions that test understanding (vla_bridge.vqa.questions / describe).

Pure logic, no simulator: every RoboFollow task's layout (``grounding.layout_world``, bowls and
labels included) seen by the synthetic ``cam_high``. Objects are named as they look, with a
position word only among look-alikes, never by an internal name or index; no two options of a
question share a text; decision asks what to do and where, grounding which object; detection
has the same options with and without the cue; half of the instances ask detection about the
cue-free render; a directory of the earlier questions is not resumed into.
"""
import json
import re
from collections import Counter

import numpy as np
import pytest

from vla_bridge.perf.cues import cam_high_model
from vla_bridge.benchmarks.robofollow.tasks import episode_seed, load_suite
from vla_bridge.benchmarks.vifo.instructions.grounding import layout_world
from vla_bridge.benchmarks.vifo.insertion import VQA_STAGES
from vla_bridge.benchmarks.vifo.protocols import build_cue
from vla_bridge.embodiment.world import ObjectState
from vla_bridge.vqa import (NO_CUE, describe_objects, parse_cues, plan_instances,
                                       vqa_questions)
from vla_bridge.vqa.questions import HOLD, REL_WORDS

CAM = cam_high_model()
SUITE = load_suite()


def world_of(task, seed):
    objects, fixtures = layout_world(task.scene, task.layout, seed)
    return {**objects, **fixtures}


def questions_of(task, seed, fam="F2", variant="arrow", cue_free=False):
    """(questions, world, cue) of one instance; built once per module (the tests only read
    them: the every-task checks ask again about a third of the tasks)."""
    key = (task.id, seed, fam, variant, cue_free)
    if key not in _QUESTIONS:
        world = world_of(task, seed)
        cue = build_cue(task, fam, variant, seed)
        _QUESTIONS[key] = vqa_questions(cue, world, CAM, seed, cue_free), world, cue
    return _QUESTIONS[key]


_QUESTIONS: dict[tuple, tuple] = {}


def internal_names(world):
    """Names an option must never say (besides any digit): every name as it is, and with
    spaces where the name holds more than a look ("blue cube right", "red cube in bowl")."""
    spaced = [n.replace("_", " ") for n in world]
    return list(world) + [n for n in spaced if {"right", "left", "top", "in", "on"} & set(n.split())]


def check_options(q, world):
    opts = q["options"]
    assert 3 <= len(opts) <= 4 and len(set(opts)) == len(opts), q
    assert 0 <= q["answer"] < len(opts)
    for text in [q["question"], *opts]:
        assert not re.search(r"\d", text), (text, q)
        assert not any(n in text for n in internal_names(world)), (text, q)


# --------------------------------------------------------------------------- descriptions

def test_objects_are_named_by_look_and_position_among_look_alikes():
    d = describe_objects(world_of(SUITE.get("L0_pickup_yellow_block_2"), 1), CAM)
    assert d == {"yellow_block_2": "the yellow block on the left",
                 "yellow_block_3": "the yellow block on the right",
                 "yellow_block_1": "the yellow block at the top",
                 "red_sphere": "the red sphere", "red_cylinder": "the red cylinder",
                 "green_sphere": "the green sphere"}
    objects, fixtures = layout_world("scene4", "scene4.1", 1)
    d = describe_objects({**objects, **fixtures}, CAM)
    assert d["red_cube_in_bowl"] == "the red cube" and d["blue_cube_right"] == "the blue cube"
    assert d["green_cylinder_top"] == "the green cylinder" and d["green_bowl"] == "the green bowl"
    objects, fixtures = layout_world("scene2", "default", 1)
    d = describe_objects({**objects, **fixtures}, CAM)
    assert d["large_red_cylinder"] == "the large red cylinder"
    assert d["small_blue_cylinder"] == "the small blue cylinder"


def block(x, y):
    return ObjectState(name="b", pos=np.array([x, y, 0.76]), quat=np.array([1.0, 0, 0, 0]),
                       size=np.full(3, 0.04), rgba=np.array([1.0, 1.0, 0.0, 1.0]), shape="box")


def test_look_alikes_no_word_tells_apart_are_left_out_of_the_options():
    world = {"yellow_block_1": block(0.10, -0.10), "yellow_block_2": block(0.101, -0.10),
             "yellow_block_3": block(-0.15, -0.10), "yellow_block_4": block(-0.02, -0.02),
             "yellow_block_5": block(-0.02, -0.20)}
    d = describe_objects(world, CAM)
    assert d == {"yellow_block_3": "the yellow block on the left",
                 "yellow_block_4": "the yellow block at the top",
                 "yellow_block_5": "the yellow block at the bottom"}
    # three in a row, well apart: the middle one is the second from the left
    row = {"yellow_block_1": block(-0.12, -0.10), "yellow_block_2": block(0.0, -0.10),
           "yellow_block_3": block(0.12, -0.10)}
    assert describe_objects(row, CAM) == {"yellow_block_1": "the yellow block on the left",
                                          "yellow_block_2": "the yellow block second from the left",
                                          "yellow_block_3": "the yellow block on the right"}


def test_an_ambiguous_source_is_named_by_its_look_and_its_look_alikes_dropped():
    task = SUITE.get("L0_pickup_yellow_block_1_left")
    world = world_of(task, 1)
    cue = build_cue(task, "F2", "arrow", 1)
    src = cue.task.steps[0].source
    world[src] = block(0.30, -0.10)
    world["yellow_block_9"] = block(0.301, -0.10)  # a twin on top of it in the image
    for q in vqa_questions(cue, world, CAM, 3):
        check_options(q, world)
        if q["stage"] == "grounding":
            assert q["options"][q["answer"]] == "the yellow block"
            assert not any("yellow" in o for i, o in enumerate(q["options"]) if i != q["answer"])


# --------------------------------------------------------------------------- every task

@pytest.mark.parametrize("scene", ["scene1", "scene2", "scene3", "scene4"])
def test_options_are_distinct_and_never_name_an_internal_object(scene):
    sizes = Counter()
    for task in SUITE.eval_tasks(scene):
        seed = episode_seed(task.id, 1)
        qs, world, cue = questions_of(task, seed)
        assert [q["stage"] for q in qs] == list(VQA_STAGES)
        for q in qs:
            check_options(q, world)
            sizes[len(q["options"])] += 1
    assert sizes[3] <= 0.05 * sum(sizes.values())  # nearly every question has 4 options


@pytest.mark.parametrize("scene", ["scene1", "scene2", "scene3", "scene4"])
def test_decision_asks_what_to_do_and_where_grounding_which_object(scene):
    for task in SUITE.eval_tasks(scene)[::3]:
        seed = episode_seed(task.id, 1)
        (_det, sem, gnd, dec), world, cue = questions_of(task, seed)
        step = cue.task.steps[0]
        names = describe_objects(world, CAM)
        source = gnd["options"][gnd["answer"]]
        assert source == names[step.source] and set(gnd["options"]) <= set(names.values())
        assert not set(dec["options"]) & set(gnd["options"])  # other answers entirely
        assert not any(n in dec["question"] for n in names.values())  # the object is not named
        right = dec["options"][dec["answer"]]
        if step.action == "pick":
            assert right == HOLD
        else:
            verb = "push" if step.action == "push" else "put"
            assert right == f"{verb} it {REL_WORDS[step.relation]} {names[step.target]}"
        meaning = sem["options"][sem["answer"]]
        assert source in meaning and (step.action == "pick" or names[step.target] in meaning)


# --------------------------------------------------------------------------- detection

def test_detection_has_the_same_options_with_and_without_the_cue():
    task = SUITE.get("L0_place_yellow_block_1_behind_red_cylinder")
    cued, _, _ = questions_of(task, 5, "F7", "outline", cue_free=False)
    free, _, _ = questions_of(task, 5, "F7", "outline", cue_free=True)
    assert cued[0]["cue_shown"] and not free[0]["cue_shown"]
    assert sorted(cued[0]["options"]) == sorted(free[0]["options"])
    assert NO_CUE in cued[0]["options"] and "Visual Highlight" in free[0]["options"]
    assert cued[0]["options"][cued[0]["answer"]] == "Visual Highlight"
    assert free[0]["options"][free[0]["answer"]] == NO_CUE
    assert cued[1:] == free[1:] and all(q["cue_shown"] for q in free[1:])


def test_half_of_the_instances_ask_detection_about_the_cue_free_render():
    tasks = SUITE.eval_tasks("scene1")
    plan = plan_instances(tasks, parse_cues(), rounds=2)
    per_episode = Counter((i.task.id, i.seed) for i in plan if i.cue_free_detection)
    assert set(per_episode.values()) == {4}  # 4 of the 8 families of every (task, seed)
    by_family = Counter(i.family for i in plan if i.cue_free_detection)
    assert all(0.35 < by_family[f] / (2 * len(tasks)) < 0.65 for f in by_family)
    every = plan_instances(tasks[:20], parse_cues("", "all"))
    share = sum(i.cue_free_detection for i in every) / len(every)
    assert 0.45 < share < 0.55


def test_answers_to_the_earlier_questions_are_not_resumed_into(tmp_path):
    """A directory of version-1 rows (index-named options, no cue-free detection) is refused
    before anything is rendered, so old and new answers never mix in one metrics file."""
    from vla_bridge.vqa import RESULTS_FILE, run_vqa
    old = {"instance": "t|F1|banner|1|cam_high", "stage": "detection", "backend": "random",
           "camera": "cam_high", "placement": "overlay"}
    (tmp_path / RESULTS_FILE).write_text(json.dumps(old) + "\n")
    with pytest.raises(ValueError, match=r"questions of version \[1\], not 2"):
        run_vqa("random", SUITE.eval_tasks("scene1")[:1], output=tmp_path)
