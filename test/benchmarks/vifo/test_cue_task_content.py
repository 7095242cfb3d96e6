"""#16: cues say what the scored task needs (arm, target, route, orientation, second step),
only compatible cue instances are built, and F3 / F4 goal_image come from the plan."""
from __future__ import annotations

import math
import os

os.environ.setdefault("MUJOCO_GL", "egl")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from vla_bridge.benchmarks.robofollow.scoring.scene3 import (quat_yaw, route_spec,  # noqa: E402
                                                             target_yaw, yaw_error)
from vla_bridge.benchmarks.robofollow.tasks import load_suite, plan_trials  # noqa: E402
from vla_bridge.benchmarks.vifo import insert, project_point  # noqa: E402
from vla_bridge.benchmarks.vifo.compatibility import (CARRIES, filter_trials,  # noqa: E402
                                                      instance_counts, missing, task_needs)
from vla_bridge.benchmarks.vifo.content import read_payload, task_payload  # noqa: E402
from vla_bridge.benchmarks.vifo.families import FAMILIES  # noqa: E402
from vla_bridge.benchmarks.vifo.families.drawing import ARM_COLORS  # noqa: E402
from vla_bridge.benchmarks.vifo.instructions.grounding import layout_world  # noqa: E402
from vla_bridge.benchmarks.vifo.protocols import (_target_of, build_cue,  # noqa: E402
                                                  grounded_task, scored_facts)
from vla_bridge.evaluation.cues.run import CueRun, plan_params  # noqa: E402
from vla_bridge.evaluation.cues.plan_rollout import PlanRollouts, rollout  # noqa: E402

SUITE = load_suite()
TASKS = list(SUITE.eval_tasks())
S3 = "L3_scene3_4__l_pick4_around2_to1_long_right__rw_route1_ori1"
S1_PLACE = "L0_place_yellow_block_1_behind_red_cylinder"  # right arm
S1_LEFT = "L0_pickup_yellow_block_1_left"


def grounded(task, seed=42):
    objects, fixtures = layout_world(task.scene, task.layout, seed)
    return grounded_task(task, objects, fixtures)[0]


@pytest.mark.graph
def test_the_cue_shows_the_scored_task_in_all_554_tasks():
    """Source, target, arm and the second step are the registry's (what the scorer checks),
    also where the instruction words them otherwise; the QR payload says the same."""
    assert len(TASKS) == 554
    for task in TASKS:
        g = grounded(task)
        first = g.steps[0]
        where, action = _target_of(task)
        assert (first.source, first.arm) == (task.source, task.arm), task.id
        if action != "pickup" and where is not None:
            assert first.target == where, task.id
        second = (task.target or {}).get("second_source")
        if second:
            assert (g.steps[1].source, g.steps[1].arm) == (second, task.target["second_arm"])
        payload = read_payload(task_payload(g, scored_facts(task)))
        assert payload["steps"][0]["source"] == task.source and \
            payload["steps"][0]["arm"] == task.arm, task.id
        if (task.target or {}).get("place_slot") is not None:  # a Scene 4 slot: its position
            from vla_bridge.benchmarks.robofollow.scoring.scene4 import slot_xy
            slot = tuple(slot_xy(task.target["place_slot"]))
            assert payload["at"] == pytest.approx(slot, abs=1e-3)
            point = build_cue(task, "F2", "arrow", 42).anchors["target"].point
            assert point[:2] == pytest.approx(slot)  # the arrow ends at the slot
        if task.scene == "scene3":
            route = route_spec(task)
            assert (payload["via"], payload["avoid"]) == (route.correct, route.wrong)
            assert payload["yaw_deg"] == pytest.approx(math.degrees(target_yaw(task)) % 180)


def test_eight_scene2_instructions_name_another_bowl_and_the_cue_shows_the_scored_one():
    checked = [t for t in TASKS if "reference_check_derived" in (t.target or {})
               and t.action == "place_bowl"]
    reworded = []
    for task in checked:
        cue = build_cue(task, "F1", "banner", 42)
        assert cue.task.target == task.target["target_object"]
        if "text" in cue.params:  # the instruction's bowl is not the scored one
            reworded.append(task.id)
            assert task.target["target_object"].replace("_", " ") in cue.params["text"]
    assert len(reworded) == 8


def test_every_variant_declares_what_it_carries_and_the_filter_counts_instances():
    variants = [(f.code, v) for f in FAMILIES.values() for v in f.variants]
    assert set(variants) == set(CARRIES)
    counts = instance_counts(TASKS, variants)
    assert counts["F1 banner"]["instances"] == counts["F8 qr"]["instances"] == 554
    for name in ("F6 prohibition", "F6 hazard", "F6 hri", "F8 aruco", "F2 target_region"):
        assert counts[name]["instances"] == 0, name  # they name no source
    picks = sum(1 for t in TASKS if task_needs(t) == {"source", "arm"})
    assert counts["F2 crosshair"]["instances"] == picks == 126
    assert counts["F2 arrow"]["skipped_by_type"]["scene3:place_on_label_route"] == 216
    assert counts["F2 curved_path"]["instances"] == 554 - 18  # not the sequences
    assert missing(SUITE.get(S1_PLACE), "F5", "point") == ("target", "relation")


def test_instances_are_counted_per_family_and_variant_and_the_report_names_the_skipped():
    from vla_bridge.evaluation.cues.metrics import cue_instances
    from vla_bridge.reporting.markdown import _protocol_note
    rows = [{"seed": s, "cue": {"family": "F2", "variant": "arrow", "cue_task": t}}
            for t, s in (("a", 1), ("a", 1), ("a", 2), ("b", 1))]  # a repeated episode: once
    rows.append({"seed": 1, "cue": {"protocol": "original"}})  # no cue shown
    assert cue_instances(rows) == {"F2/arrow": 3}
    note = _protocol_note({"episodes": {"authorized": {"episodes": 4, "failed": 0}},
                           "instances": {"F2/arrow": 3},
                           "skipped_tasks": {S1_PLACE: "F2 crosshair cannot show the target"}})
    assert "F2/arrow 3" in note and "1 selected tasks were left out" in note


def test_the_evaluator_skips_incompatible_trials_with_the_reason():
    trials = plan_trials([SUITE.get(S1_PLACE), SUITE.get(S1_LEFT)], 2, 42)
    run = CueRun("authorized", "F2", "crosshair")
    kept = run.compatible(trials)
    assert [t.task.id for t in kept] == [S1_LEFT, S1_LEFT]
    assert run.skipped == {S1_PLACE: "F2 crosshair cannot show the target, relation"}
    assert filter_trials(trials, None, None) == (trials, [])
    assert CueRun("original").compatible(trials) == trials  # no cue: nothing to filter


@pytest.fixture(scope="module")
def sim():
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    backend = MujocoBackend()
    yield backend
    backend.close()


def render_cue(sim, task_id, fam, variant, seed=42, **params):
    task = SUITE.get(task_id)
    sim.reset(task.scene, task.layout, seed)
    world, raw, cam = sim.world_state(), sim.render("cam_high"), sim.camera_model("cam_high")
    cue = build_cue(task, fam, variant, seed, **params)
    return task, world, raw, cam, cue, insert(raw, cue, world, cam)


def colour_near(img, rgb, uv, radius, tol=12):
    ys, xs = np.nonzero(np.all(np.abs(img.astype(int) - rgb) <= tol, axis=2))
    return int(np.sum(np.hypot(xs - uv[0], ys - uv[1]) < radius))


@pytest.mark.parametrize("task_id, arm", [(S1_PLACE, "right"), (S1_LEFT, "left")])
def test_the_arm_tag_beside_the_source_has_the_tasks_arm(sim, task_id, arm):
    task, world, raw, cam, cue, out = render_cue(sim, task_id, "F2", "arrow")
    uv = project_point(cam, world.objects[task.source].pos)
    other = "left" if arm == "right" else "right"
    assert colour_near(out, ARM_COLORS[arm], uv, 30) > 15
    assert colour_near(out, ARM_COLORS[other], uv, 60) == 0


def test_f7_highlights_the_placement_point_too(sim):
    task, world, raw, cam, cue, out = render_cue(sim, S1_PLACE, "F7", "outline")
    from vla_bridge.benchmarks.vifo import project_anchors
    target = project_anchors(cue, world, cam)["target"].uv
    from vla_bridge.benchmarks.vifo.families.f7_highlight import TARGET_COLOR
    assert colour_near(out, TARGET_COLOR, target, 25) > 10


def test_f6_prohibitions_fall_on_distractors_never_on_the_source(sim):
    for task in SUITE.eval_tasks("scene1"):
        cue = build_cue(task, "F6", "prohibition", 42)
        roles = [role for role, _sign in cue.params["signs"]]
        assert roles and all(r.startswith("forbidden") for r in roles), task.id
        named = {cue.anchors[r].entity for r in roles}
        assert task.source not in named and task.anchor not in named, task.id
    task, world, raw, cam, cue, out = render_cue(sim, S1_PLACE, "F6", "prohibition")
    src = project_point(cam, world.objects[task.source].pos)
    red = (210, 30, 30)  # the prohibition ring
    assert colour_near(out, red, src, 12, tol=30) == 0
    for role, _sign in cue.params["signs"]:
        other = project_point(cam, world.objects[cue.anchors[role].entity].pos)
        assert colour_near(out, red, other, 60, tol=30) > 20


def test_f2_path_takes_the_route_and_shows_the_final_footprint(sim):
    task, world, raw, cam, cue, out = render_cue(sim, S3, "F2", "curved_path")
    route = route_spec(task)
    assert cue.anchors["via"].entity == route.correct
    assert cue.anchors["avoid"].entity == route.wrong
    final = cue.anchors["final"]
    assert final.box_quat == pytest.approx((1.0, 0.0, 0.0, 0.0))  # long_right: yaw 0
    from vla_bridge.benchmarks.vifo import project_anchors
    via = project_anchors(cue, world, cam)["via"].uv
    magenta = np.array([255, 0, 255])
    assert colour_near(out, magenta, via, 6, tol=40) > 3  # the path passes the waypoint


def test_f3_ghosts_are_the_planned_path_and_end_in_the_scored_pose(sim):
    """The oracle's plan rolled out: the last ghost is where the scorer wants the slab (on
    the label, at the target yaw), and the path passes over the right slab, not the wrong."""
    task = SUITE.get(S3)
    rollouts = PlanRollouts()
    path = plan_params(task, 42, "F3", "trail", plan_ghosts=True, rollouts=rollouts)["plan_path"]
    assert len(path) == 4
    objects, fixtures = layout_world(task.scene, task.layout, 42)
    label = fixtures[task.target["target_label"]]
    pos, quat = path[-1]
    assert np.hypot(*(np.asarray(pos[:2]) - label.pos[:2])) < 0.035
    assert math.degrees(yaw_error(quat_yaw(np.asarray(quat)), target_yaw(task))) < 20
    r = rollouts.rollout(task, 42)  # the one plan_params made, kept
    rollouts.close()
    route = route_spec(task)
    near = {name: np.min(np.hypot(*(r.positions[:, :2] - objects[name].pos[:2]).T))
            for name in (route.correct, route.wrong)}
    assert near[route.correct] < near[route.wrong]
    # the ghost layers in the evaluator come from these states (CueRun.prepare)
    run = CueRun("authorized", "F3", "trail")
    run.compatible(plan_trials([task], 1, 42), plan_ghosts=True)
    _lang, cue = run.prepare(plan_trials([task], 1, 42)[0], task.instruction)
    assert len(cue.params["plan_path"]) == 4


@pytest.mark.graph
def test_plan_rollouts_belong_to_their_owner():
    """Each owner (an evaluator's CueRun, a VQA scene) keeps its own rollouts: reused while
    it lives, never shared with another owner, freed by close(); the module's rollout()
    keeps nothing."""
    task = SUITE.get(S1_PLACE)
    assert CueRun().rollouts is not CueRun().rollouts
    with PlanRollouts() as a, PlanRollouts() as b:
        first = a.rollout(task, 42)
        assert a.rollout(task, 42) is first
        other = b.rollout(task, 42)
        assert other is not first and np.array_equal(other.positions, first.positions)
        a.close()
        assert not a._sims and not a._done and b._done
        assert a.rollout(task, 42) is not first  # a closed owner starts afresh
    assert not a._sims and not b._sims
    assert np.array_equal(rollout(task, 42).positions, first.positions)


@pytest.mark.graph
def test_f4_goal_image_is_the_rendered_end_of_the_plan(sim):
    task = SUITE.get(S1_PLACE)
    trial = plan_trials([task], 1, 42)[0]
    run = CueRun("authorized", "F4", "goal_image")
    run.compatible([trial])
    _lang, cue = run.prepare(trial, task.instruction)
    goal = cue.params["image"]
    sim.reset(task.scene, task.layout, trial.seed)
    start = sim.render("cam_high")
    assert goal.shape == start.shape and np.any(goal != start, axis=2).mean() > 0.005
    out = insert(start, cue)
    assert np.any(out != start, axis=2).sum() > 500


@pytest.mark.graph
def test_aruco_ids_never_collide_within_an_episode():
    from vla_bridge.benchmarks.vifo.content import ARUCO_MEANINGS, aruco_ids
    for task in TASKS:
        ids = aruco_ids(grounded(task), scored_facts(task))
        assert len(set(ids.values())) == len(ids) and set(ids.values()) <= set(ARUCO_MEANINGS)


@pytest.mark.graph
def test_a_sequence_shows_both_steps_with_their_arms(sim):
    seq = next(t for t in TASKS if t.action == "sequence_pickups" and t.level == "L0")
    second, arm2 = seq.target["second_source"], seq.target["second_arm"]
    task, world, raw, cam, cue, out = render_cue(sim, seq.id, "F2", "numbered")
    for source, arm in ((seq.source, seq.arm), (second, arm2)):
        uv = project_point(cam, world.objects[source].pos)
        assert colour_near(out, ARM_COLORS[arm], uv, 30) > 15, source
    import cv2
    big = cv2.resize(raw, (640, 480))
    from vla_bridge.embodiment.cameras import CameraModel
    cam2 = CameraModel(640, 480, cam.fovy_deg, cam.world_from_camera)
    tags = insert(big, build_cue(seq, "F8", "aruco_tags", 42), world, cam2)
    det = cv2.aruco.ArucoDetector(cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50),
                                  cv2.aruco.DetectorParameters())
    _corners, ids, _ = det.detectMarkers(cv2.cvtColor(tags, cv2.COLOR_RGB2GRAY))
    want = {1 if seq.arm == "left" else 2, 9 if arm2 == "left" else 10}
    assert set(ids.ravel().tolist()) == want
