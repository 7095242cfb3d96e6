"""LIBERO-VIFO parser + grounding: LIBERO locators, compound steps, and no silent misreads.

Pure logic on small hand-built world states (LIBERO-style object names, metres, the table
centre at the world origin). Issue #16, point 4: "the black bowl between the plate and the
ramekin" used to ground to the ramekin, "open the top drawer and put the bowl inside" lost the
drawer; ambiguous or garbled instructions must raise, naming the span and the cause.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from vla_bridge.benchmarks.robofollow.entropy import LIBERO_SUITES
from vla_bridge.benchmarks.robofollow.tasks import load_suite
from vla_bridge.benchmarks.vifo.instructions.grounding import GroundingError, ground, layout_world
from vla_bridge.benchmarks.vifo.instructions.parser import ParseError, parse
from vla_bridge.embodiment.world import ObjectState


def obj(name, xyz, size=(0.1, 0.1, 0.05), shape="mesh"):
    return ObjectState(name, np.asarray(xyz, float), np.array([1.0, 0, 0, 0]),
                       np.asarray(size, float), shape=shape)


def world(*objects):
    return {o.name: o for o in objects}


@pytest.fixture()
def spatial():
    """LIBERO-Spatial-like: four black bowls, each placed by a different locator."""
    return world(obj("plate_1", (-0.30, -0.15, 0.90), (0.2, 0.2, 0.02)),
                 obj("glazed_rim_porcelain_ramekin_1", (0.10, -0.15, 0.90), (0.08, 0.08, 0.04)),
                 obj("cookies_1", (0.25, 0.20, 0.90), (0.1, 0.15, 0.05)),
                 obj("akita_black_bowl_1", (-0.10, -0.14, 0.90)),   # between plate and ramekin
                 obj("akita_black_bowl_2", (0.00, 0.02, 0.90)),     # table centre
                 obj("akita_black_bowl_3", (0.25, 0.20, 0.95)),     # on the cookie box
                 obj("akita_black_bowl_4", (-0.38, -0.05, 0.90)))   # next to the plate


@pytest.mark.parametrize("text, source", [
    ("pick up the black bowl between the plate and the ramekin and place it on the plate",
     "akita_black_bowl_1"),
    ("pick up the black bowl from table center and place it on the plate", "akita_black_bowl_2"),
    ("pick up the black bowl from the center of the table and place it on the plate",
     "akita_black_bowl_2"),
    ("pick up the black bowl on the cookie box and place it on the plate", "akita_black_bowl_3"),
    ("pick up the black bowl next to the plate and place it on the plate", "akita_black_bowl_4"),
])
def test_parser_grounds_libero_spatial_locators(spatial, text, source):
    g = ground(parse(text), spatial)
    assert (g.action, g.source, g.relation, g.target) == ("place", source, "on", "plate_1")


def test_parser_between_locator_has_two_reference_entities():
    bowl = parse("pick up the black bowl between the plate and the ramekin").source
    rel, pair = bowl.locator
    assert (bowl.noun, bowl.colors, rel) == ("bowl", ("black",), "between")
    assert [m.noun for m in pair.members] == ["plate", "ramekin"]


def test_parser_between_needs_the_object_between_and_says_when_two_are():
    plate, ramekin = obj("plate_1", (-0.2, 0, 0.9)), obj("ramekin_1", (0.2, 0, 0.9))
    task = parse("pick up the black bowl between the plate and the ramekin")
    beside = world(plate, ramekin, obj("black_bowl_1", (0.0, 0.30, 0.9)))  # off the band
    with pytest.raises(GroundingError, match="no object matches 'the black bowl between"):
        ground(task, beside)
    twins = world(plate, ramekin, obj("black_bowl_1", (-0.02, 0.0, 0.9)),
                  obj("black_bowl_2", (0.02, 0.0, 0.9)))
    with pytest.raises(GroundingError, match="'the black bowl between the plate and the ramekin'"
                                             " is ambiguous: black_bowl_1, black_bowl_2"):
        ground(task, twins)


def drawers_world():
    objects = world(obj("akita_black_bowl_1", (0.10, 0.05, 0.90)), obj("plate_1", (0.3, 0, 0.9)))
    fixtures = {f"wooden_cabinet_1_{level}_drawer": obj(f"wooden_cabinet_1_{level}_drawer",
                                                        (-0.3, 0.2, z), (0.2, 0.2, 0.1))
                for level, z in (("top", 1.2), ("middle", 1.05), ("bottom", 0.9))}
    return objects, fixtures


def test_parser_open_the_drawer_and_put_the_bowl_inside_it():
    p = parse("open the top drawer and put the bowl inside")
    assert [(s.action, s.relation) for s in p.steps] == [("open", None), ("place", "in")]
    assert p.steps[1].target == p.steps[0].target  # "inside" refers back to the drawer
    g = ground(p, *drawers_world())
    assert [(s.action, s.source, s.target) for s in g.steps] == [
        ("open", None, "wooden_cabinet_1_top_drawer"),
        ("place", "akita_black_bowl_1", "wooden_cabinet_1_top_drawer")]
    with pytest.raises(ParseError, match="cannot tell what 'it' refers to in 'put the bowl "
                                         "inside'"):
        parse("put the bowl inside")


def test_parser_locates_an_object_in_a_drawer_of_the_cabinet():
    objects, fixtures = drawers_world()
    objects["akita_black_bowl_2"] = obj("akita_black_bowl_2", (-0.3, 0.2, 1.22))
    g = ground(parse("pick up the black bowl in the top drawer of the wooden cabinet and place "
                     "it on the plate"), objects, fixtures)
    assert (g.source, g.target) == ("akita_black_bowl_2", "plate_1")


def test_parser_reads_every_libero_instruction():
    """The 40 LIBERO task sentences (Spatial, Object, Goal, Long) parse into steps."""
    steps = {}
    for suite in LIBERO_SUITES.values():
        for name in suite:
            text = re.sub(r"^[A-Z_]+SCENE\d+_", "", name).replace("_", " ")
            steps[text] = [s.action for s in parse(text).steps]
    assert len(steps) == 40
    assert steps["put the black bowl in the bottom drawer of the cabinet and close it"] == \
        ["place", "close"]
    assert steps["turn on the stove and put the moka pot on it"] == ["turn_on", "place"]
    both = parse("put both moka pots on the stove").source
    assert (both.noun, both.count) == ("moka pot", 2)


def test_parser_grounds_both_and_packaging_nouns():
    w = world(obj("moka_pot_1", (0.0, 0.0, 0.9)), obj("moka_pot_2", (0.2, 0.0, 0.9)),
              obj("flat_stove_1", (-0.2, 0.2, 0.9)), obj("cream_cheese_1", (0.1, 0.3, 0.9)),
              obj("basket_1", (0.3, 0.3, 0.9)))
    g = ground(parse("put both moka pots on the stove"), w)
    assert g.steps[0].sources == ("moka_pot_1", "moka_pot_2") and g.target == "flat_stove_1"
    g = ground(parse("pick up the cream cheese box and place it in the basket"), w)
    assert (g.source, g.target) == ("cream_cheese_1", "basket_1")
    with pytest.raises(GroundingError, match="no object matches 'the wine bottle'"):
        ground(parse("put the wine bottle on the stove"), w)  # "bottle" alone names nothing


# --------------------------------------------------------------------------- RoboFollow forms

def test_parser_reads_the_added_clause_forms():
    p = parse("Among the cubes, use your left arm to pick up the one on the right.")
    assert (p.source.noun, p.source.attributes, p.steps[0].arm) == ("cube", ("right",), "left")
    p = parse("Start by picking up the red sphere with your left arm, then pick up the green "
              "cylinder with your right arm.")
    assert [(s.action, s.source.noun, s.arm) for s in p.steps] == [
        ("pick", "sphere", "left"), ("pick", "cylinder", "right")]
    p = parse("Pick up the cube with your left arm after picking up the ball with your right arm.")
    assert [(s.source.noun, s.arm) for s in p.steps] == [("ball", "right"), ("cube", "left")]
    p = parse("Pick up the red slab with your right arm, move above the yellow slab, then place "
              "it on the blue square label, short side facing front.")
    (s,) = p.steps
    assert (s.action, s.arm, s.relation, s.orientation) == ("place", "right", "on",
                                                            ("short", "front"))
    assert [(k, e.colors) for k, e in s.route] == [("pass_over", ("yellow",))]
    p = parse("Check whether the bowl is non-empty. If yes, pick up the blue sphere with your "
              "left arm; if not, pick up the red sphere with your right arm.")
    assert (p.condition.kind, p.condition.relation, p.condition.negated) == ("exists", "in", False)
    assert [s.arm for s in p.steps + p.otherwise] == ["left", "right"]


def test_parser_that_cylinder_refers_back_to_the_condition():
    objects, fixtures = layout_world("scene4", "scene4.1", 3)
    p = parse("When the right cube has an object on top, use your right arm to move that "
              "cylinder onto the yellow cylinder; otherwise pick up the blue sphere.")
    assert p.source.locator[0] == "on" and p.source.noun == "cylinder"
    g = ground(p, objects, fixtures)
    assert (g.branch, g.source, g.target) == ("then", "green_cylinder_top", "yellow_cylinder")


def test_parser_keeps_other_attachments_and_grounding_picks_the_one_that_exists():
    p = parse("Use your right arm to place the cylinder on the right cube on top of the yellow "
              "cylinder.")
    s = p.steps[0]
    assert (s.source.text, s.target.text) == ("the cylinder on the right cube",
                                              "the yellow cylinder")
    assert [(a.source.text, a.target.text) for a in s.alternatives] == [
        ("the cylinder", "the right cube on top of the yellow cylinder")]
    objects, fixtures = layout_world("scene4", "scene4.1", 3)
    assert ground(p, objects, fixtures).source == "green_cylinder_top"


# --------------------------------------------------------------------------- no silent misreads

@pytest.mark.parametrize("text, message", [
    ("pick up the block the red ball", "cannot read 'the red ball' in the object reference"),
    ("pick up the red or blue block", "cannot read 'or blue block'"),
    ("pick up the ball near the the cube", "cannot read 'the cube' in the object reference"),
    ("pick up the non-shiny ball", "cannot read 'non-shiny'"),
    ("pick up the leftmost", "no object named in 'the leftmost'"),
    ("Use your left arm to pick up the cube with your right arm.",
     "two different arms named in .*'use your left arm to' and 'with your right arm'"),
    ("place it on the plate", "cannot tell what 'it' refers to in 'place it on the plate'"),
    ("pick up that cylinder", "cannot tell what 'that cylinder' refers to"),
    ("Move the blue slab while avoiding passing over the red slab.",
     "'move the blue slab while avoiding passing over the red slab' says what to move but not "
     "where to"),
    ("pick up the slab, avoid passing over it, and place it on the label",
     "cannot tell what 'it' refers to in 'avoid passing over it'"),
    ("stack the cube on the cylinder with the long side up",
     "cannot parse the orientation 'the long side up'"),
    ("If the bowl is empty, pick up the cube.", "needs both branches"),
    ("When the bowl glows, pick up the cube; otherwise pick up the ball.",
     "cannot parse the condition 'the bowl glows'"),
])
def test_parser_raises_naming_the_span_and_the_cause(text, message):
    with pytest.raises(ParseError, match=message):
        parse(text)


def test_grounding_raises_when_two_objects_match_equally():
    w = world(obj("plate_1", (0.0, 0.0, 0.9)), obj("black_bowl_1", (-0.1, 0.0, 0.9)),
              obj("black_bowl_2", (0.1, 0.0, 0.9)), obj("basket_1", (0.3, 0.3, 0.9)))
    with pytest.raises(GroundingError, match="'the black bowl next to the plate' is ambiguous: "
                                             "black_bowl_1, black_bowl_2"):
        ground(parse("pick up the black bowl next to the plate and put it in the basket"), w)
    level = world(*(obj(f"cube_{k}", xyz, shape="box") for k, xyz in
                     (("a", (0.1, 0.0, 0.9)), ("b", (0.1, 0.2, 0.9)), ("c", (-0.2, 0.0, 0.9)))))
    with pytest.raises(GroundingError, match="'the right cube' is ambiguous: cube_a, cube_b"):
        ground(parse("pick up the right cube"), level)


def test_grounding_raises_when_two_readings_of_the_words_both_exist():
    w = world(obj("plate_1", (0.0, 0.0, 0.9), (0.2, 0.2, 0.02)),
              obj("bowl_1", (0.0, 0.0, 0.95)), obj("flat_stove_1", (0.1, 0.05, 0.9)))
    with pytest.raises(GroundingError, match="'put the bowl on the plate next to the stove' is "
                                             "ambiguous: 'the bowl on the plate' beside 'the "
                                             "stove' .* or 'the bowl' on 'the plate next to"):
        ground(parse("put the bowl on the plate next to the stove"), w)
    alone = world(obj("plate_1", (0.0, 0.0, 0.9), (0.2, 0.2, 0.02)),
                  obj("bowl_1", (0.5, 0.3, 0.9)), obj("flat_stove_1", (0.1, 0.05, 0.9)))
    g = ground(parse("put the bowl on the plate next to the stove"), alone)  # one reading exists
    assert (g.source, g.relation, g.target) == ("bowl_1", "on", "plate_1")


def test_parser_every_evaluation_instruction_still_parses():
    suite = load_suite()
    for task in suite.eval_tasks():
        parse(task.instruction)
