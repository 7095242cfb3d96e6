"""LIBERO-VIFO on LIBERO's tasks (#13 point 5), the pure part: cue semantics from the BDDL
goals, the compatibility filter, conflict partners, the trial plan and the cues themselves
(every compatible instance draws in both cameras of a LIBERO-like world)."""
from __future__ import annotations

import numpy as np
import pytest

from vla_bridge.benchmarks.libero import vifo as LV
from vla_bridge.benchmarks.libero.protocol import load_catalog, plan_trials
from vla_bridge.benchmarks.vifo.families import FAMILIES
from vla_bridge.benchmarks.vifo.insertion import AUTHORIZED_PROMPT
from vla_bridge.benchmarks.vifo.replay import CueConditioner
from vla_bridge.embodiment.cameras import look_at_xyaxes, xyaxes_matrix
from vla_bridge.embodiment.kinematics import mat_to_quat
from vla_bridge.embodiment.world import CameraPose, ObjectState, TcpState, WorldState

CATALOG = load_catalog()
VARIANTS = [(f.code, v) for f in FAMILIES.values() for v in f.variants]


def entry(suite, index):
    return CATALOG[suite][index]


def test_the_setting_is_the_papers_forty_tasks():
    assert [len(CATALOG[s]) for s in LV.VIFO_SUITES] == [10, 10, 10, 10]
    assert sum(len(CATALOG[s]) for s in LV.VIFO_SUITES) == 40


def test_goal_steps_put_placements_before_state_changes():
    close_after = LV.goal_steps(entry("libero_10", 3)["goal"])  # BDDL lists close first
    assert [s.action for s in close_after] == ["place", "close"]
    assert close_after[0].source == "akita_black_bowl_1"
    assert close_after[1].target == "white_cabinet_1_bottom_region"
    stove = LV.goal_steps(entry("libero_goal", 7)["goal"])
    assert [(s.action, s.source, s.target, s.target_state) for s in stove] == \
        [("turn_on", None, "flat_stove_1", "on")]
    with pytest.raises(ValueError, match="is not one of"):
        LV.goal_steps([["under", "a_1", "b_1"]])


def test_compatibility_matches_the_papers_ghost_coverage_and_names_why():
    ghosts = [(s, i) for s in LV.VIFO_SUITES for i in range(10)
              if LV.skip_reason(entry(s, i), "F3", "trail") is None]
    assert len(ghosts) == 38  # the paper: ghost trajectories cover 38 of the 40 tasks
    assert {(s, i) for s in LV.VIFO_SUITES for i in range(10)} - set(ghosts) == \
        {("libero_goal", 0), ("libero_goal", 7)}  # open the drawer, turn on the stove
    assert "state change moves no object" in LV.skip_reason(entry("libero_goal", 7), "F2",
                                                             "arrow")
    two_objects = entry("libero_10", 0)
    assert "sequence" in LV.skip_reason(two_objects, "F2", "arrow")
    assert LV.skip_reason(two_objects, "F7", "outline") is None  # F7 lights both objects
    assert LV.skip_reason(entry("libero_object", 0), "F4", "goal_image").startswith("F4 goal")
    counts = LV.instance_counts(CATALOG, VARIANTS)
    covering = {f for (f, v), n in counts.items() if n == 40}
    assert covering == {"F1", "F2", "F7", "F8"}  # variants that specify every task
    ghost_steps = LV.build_cue(two_objects, "F3", "trail").params["ghost_steps"]
    assert ghost_steps == [("step1", "step1_target"), ("step2", "step2_target")]
    assert sum(counts.values()) == 1016


def test_conflict_partners_fit_the_scene_and_differ_from_the_cue_task():
    for suite in LV.VIFO_SUITES:
        for i in range(10):
            e = entry(suite, i)
            partner = LV.conflict_partner(CATALOG, suite, i, seed=7)
            if partner is None:
                assert (suite, i) in {("libero_10", 4), ("libero_10", 8)}
                continue
            p = CATALOG[partner[0]][partner[1]]
            assert LV.fits_scene(p, e) and p["instruction"] != e["instruction"]
            assert not {tuple(g) for g in p["goal"]} <= {tuple(g) for g in e["goal"]}
    # same suite first: the object suite's partners are object tasks; the spatial scenes
    # have none of their own (every spatial goal is the same), so the goal suite's
    assert LV.conflict_partner(CATALOG, "libero_object", 0, 7)[0] == "libero_object"
    spatial = {LV.conflict_partner(CATALOG, "libero_spatial", 0, k) for k in range(20)}
    assert spatial == {("libero_goal", 0), ("libero_goal", 7)}
    # a partner that undoes the cue task (turn off what it turns on) is not one
    assert LV.conflict_partner(CATALOG, "libero_10", 8, 7) is None


def test_trial_plan_per_protocol():
    trials = plan_trials("libero_goal", "1", "0", 7, CATALOG)
    [plain] = LV.plan_cue_trials(trials, "", None, None, CATALOG)
    assert plain.goals() == {} and plain.end_role is None and "goals" not in plain.begin_task()
    [orig] = LV.plan_cue_trials(trials, "original", None, None, CATALOG)
    assert (orig.language, orig.cue_task, orig.end_role) == \
        ("put the bowl on the stove", None, "language")
    assert orig.goals() == {"language": [["on", "akita_black_bowl_1", "flat_stove_1_cook_region"]]}
    [auth] = LV.plan_cue_trials(trials, "authorized", "F1", "banner", CATALOG)
    assert auth.language == AUTHORIZED_PROMPT and auth.language_task is None
    assert auth.end_role == "cue" and auth.begin_task()["goal"] is None
    assert auth.cue_task_spec()["goal"] == entry("libero_goal", 1)["goal"]
    [conflict] = LV.plan_cue_trials(trials, "conflict", "F1", "banner", CATALOG)
    assert conflict.language_task != conflict.cue_task == "libero_goal/1"
    begin = conflict.begin_task()
    assert begin["layout"] == "1:0" and begin["end_on"] == "language"
    assert set(begin["goals"]) == {"language", "cue"}
    assert begin["goal"] == begin["goals"]["language"]
    [quiet] = LV.plan_cue_trials(trials, "no_language", "F1", "banner", CATALOG)
    assert quiet.language == "" and quiet.end_role == "cue"
    skipped = LV.plan_cue_trials(plan_trials("libero_10", "4", "0", 7, CATALOG), "conflict",
                                 "F1", "banner", CATALOG)
    assert skipped[0].skip == "no other LIBERO task can be done in this task's scene"
    with pytest.raises(ValueError, match="unknown cue protocol"):
        LV.plan_cue_trials(trials, "hijack", "F1", "banner", CATALOG)


def _libero_like_world(e, rng) -> WorldState:
    """Every object, fixture and region of the task on a table in front of an agentview-like
    camera (opposite the robot, looking back at it) and a wrist camera above the table."""
    names = [*e["objects"], *e["fixtures"], *e["regions"],
             *(a for pred in e["goal"] for a in pred[1:])]
    objects = {n: ObjectState(n, np.array([rng.uniform(-0.15, 0.15), rng.uniform(-0.25, 0.25),
                                           0.9]), np.array([1.0, 0, 0, 0]),
                              np.array([0.06, 0.06, 0.08]), shape="mesh") for n in names}
    cameras = {}
    for cam, eye, at in (("cam_high", (0.66, 0.0, 1.6), (0.0, 0.0, 0.9)),
                         ("cam_left_wrist", (-0.1, 0.0, 1.3), (0.0, 0.0, 0.9))):
        cameras[cam] = CameraPose(np.array(eye), mat_to_quat(xyaxes_matrix(look_at_xyaxes(eye,
                                                                                         at))))
    tcp = {"left": TcpState(np.array([-0.2, 0.0, 1.2]), np.array([1.0, 0, 0, 0]))}
    return WorldState(0.0, objects, tcp, cameras)


@pytest.mark.graph
def test_every_compatible_instance_draws_in_both_cameras():
    rng = np.random.default_rng(3)
    drawn = 0
    for suite in LV.VIFO_SUITES:
        for e in CATALOG[suite]:
            world = _libero_like_world(e, rng)
            for fam, variant in VARIANTS:
                if LV.skip_reason(e, fam, variant):
                    continue
                cue = LV.build_cue(e, fam, variant)
                images = {c: np.full((256, 256, 3), 110, np.uint8) for c in world.cameras}
                out = CueConditioner(cue, mirrored=True)(images, world, None,
                                                         {c: 300.0 for c in images})
                assert any((out[c] != images[c]).any() for c in images), (suite, e["index"],
                                                                          fam, variant)
                drawn += 1
    assert drawn == 1016


def test_a_region_target_is_outlined_by_its_owner_and_a_table_region_not_at_all():
    basket = LV.build_cue(entry("libero_object", 0), "F7", "outline")
    assert basket.anchors["target_object"].entity == "basket_1"
    assert basket.anchors["target"].entity == "basket_1_contain_region"
    table_region = LV.build_cue(entry("libero_goal", 5), "F7", "outline")
    assert "target_object" not in table_region.anchors  # main_table's stove-front region
    both = LV.build_cue(entry("libero_10", 0), "F7", "outline")
    assert both.params["roles"] == ["step1", "step2", "target"]
    assert {both.anchors["step1"].entity, both.anchors["step2"].entity} == \
        {"alphabet_soup_1", "tomato_sauce_1"}
