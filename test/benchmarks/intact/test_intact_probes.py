"""INT-ACT's probing suite on Scene 2 (benchmarks.intact.probes, scene_edits, tables): the
suite's shape, the scene edits' refusals and footprints, the sim's refusal where a backend
cannot edit a scene, real MuJoCo probe episodes (the oracle solves one probe of each object
subcategory; a look-alike grasped instead is a wrong-object attempt), and the tables."""
from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest

from support.fake_backend import FakeBackend
from vla_bridge.benchmarks.intact import probes as P
from vla_bridge.benchmarks.intact import scene_edits, tables
from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec, load_suite
from vla_bridge.embodiment import libero_assets
from vla_bridge.sim_nodes.session import SimSession

needs_assets = pytest.mark.skipif(not libero_assets.available(),
                                  reason="LIBERO's assets are not installed "
                                         "(bash scripts/setup.sh libero)")
SPEC = load_scene(P.SCENE)


def scene_bodies(task: TaskSpec) -> set[str]:
    """The bodies on the table in a probe's scene: the layout's, less the replaced, plus the
    LIBERO objects."""
    layout = set(sample_layout(SPEC, P.LAYOUT, 0))
    edited = P.edited_bodies(task)
    return (layout - set(edited.values())) | set(edited)


# =========================================================================== the suite

def test_every_subcategory_has_five_probes_and_the_originals_six():
    count = Counter(p.subcategory for p in P.probes())
    assert count.pop("original") == 6
    assert count == {s: 5 for s in P.SUBCATEGORY_NAMES if s != "original"}
    assert len({p.id for p in P.probes()}) == len(P.probes()) == 56
    assert all(p.id.startswith(f"intact_{p.subcategory}_") for p in P.probes())


def test_every_probe_varies_a_training_task_and_names_bodies_its_scene_holds():
    suite = load_suite()
    for p in P.probes():
        base = suite.get(p.base)
        assert base.scene == P.SCENE and base.level == "L0", p.id
        bodies = scene_bodies(p.task)
        assert p.task.source in bodies, p.id
        target = p.task.target.get("target_object") or p.task.target.get("bowl")
        if target is not None:
            assert target in bodies and target != p.task.source, p.id


def test_the_object_probes_bring_libero_objects_and_the_language_probes_only_words():
    suite = load_suite()
    for p in P.probes():
        edited = P.edited_bodies(p.task)
        if p.subcategory in ("ood_source", "ood_source_target"):
            assert p.task.source in edited and edited[p.task.source], p.id  # replaces a body
        if p.subcategory in ("ood_target", "ood_source_target"):
            assert p.task.target["target_object"] in edited, p.id
        if p.subcategory in ("object_distractor", "commonsense_distractor"):
            added = [name for name, old in edited.items() if not old]
            assert added and p.task.source not in added, p.id
        if p.subcategory in P.VARIANT_SUBCATEGORIES:  # Table 2: the base task, other words
            base = suite.get(p.base)
            assert p.task.instruction != base.instruction, p.id
            assert (p.task.source, p.task.action) == (base.source, base.action), p.id
        if p.subcategory == "commonsense_distractor":
            assert p.note, p.id  # says which object counts


def test_select_spec_takes_all_categories_subcategories_and_ids():
    assert len(P.select_spec("all")) == 56
    assert {p.subcategory for p in P.select_spec("language")} == {
        "language_action", "language_negation", "language_appearance"}
    chosen = P.select_spec("ood_target,intact_commonsense_fire_truck")
    assert len(chosen) == 6 and chosen[-1].id == "intact_commonsense_fire_truck"
    with pytest.raises(ValueError, match="unknown INT-ACT probe 'nope'"):
        P.select_spec("ood_target,nope")


def test_a_probe_task_round_trips_with_its_edits():
    task = P.probe("intact_ood_source_target_pudding_white_bowl").task
    again = TaskSpec.from_dict(task.to_dict())
    assert again == task and again.edits["replace"]["green_bowl"][0] == "white_bowl"
    plain = load_suite().get("L0_pickup_red_cylinder")
    assert "edits" not in plain.to_dict()


# =========================================================================== scene edits

@pytest.mark.parametrize("edits, match", [
    ({"move": {}}, "scene edits must be"),
    ({"add": [["milk", 0.1]]}, "must be \\[LIBERO object, x, y\\]"),
    ({"add": [["milk", float("nan"), 0.0]]}, "finite metres"),
    ({"add": [["milk", 5.0, 0.0]]}, "within 1 m"),
    ({"add": [["dragon", 0.1, 0.0]]}, "unknown LIBERO objects \\['dragon'\\]"),
    ({"replace": {"small_red_cube": "milk"}, "add": [["milk", 0.1, 0.0]]}, "twice"),
    ({"replace": "milk"}, "replace must map a body to a LIBERO object"),
    ({"add": "milk"}, "add must be a list of \\[LIBERO object, x, y\\]"),
])
def test_malformed_edits_are_refused_in_one_line(edits, match):
    with pytest.raises(ValueError, match=match) as err:
        scene_edits.check(edits, libero_assets.NAMES)
    assert "\n" not in str(err.value)


def test_resolve_places_a_replacement_where_the_body_stood():
    spawn = sample_layout(SPEC, P.LAYOUT, 3)
    bodies, removed = scene_edits.resolve(
        {"replace": {"green_bowl": ["white_bowl", -0.01, 0.0]}, "add": [["milk", 0.2, 0.05]]}, spawn)
    assert removed == {"green_bowl"}
    white, milk = bodies
    assert white.replaces == "green_bowl" and milk.replaces is None
    np.testing.assert_allclose(white.xy, np.asarray(spawn["green_bowl"])[:2] + (-0.01, 0.0))
    with pytest.raises(ValueError, match="does not hold"):
        scene_edits.resolve({"replace": {"purple_bowl": "white_bowl"}}, spawn)


@needs_assets
def test_no_probe_object_can_touch_another_body_for_any_seed():
    halves = libero_assets.footprints(libero_assets.NAMES)
    for p in P.probes():
        if p.task.edits:
            prints = scene_edits.footprints(SPEC, P.LAYOUT, p.task.edits, halves)
            assert not scene_edits.overlaps(prints, 0.0, among=set(P.edited_bodies(p.task))), p.id


def test_a_backend_that_cannot_edit_a_scene_refuses_the_probe():
    session = SimSession(FakeBackend())
    task = P.probe("intact_object_distractor_ketchup").task
    with pytest.raises(ValueError, match="cannot add LIBERO objects") as err:
        session.begin(task.scene, task.layout, 1, task=task.to_dict())
    assert "\n" not in str(err.value)
    plain = P.probe("intact_original_pick_red_cyl").task  # no edits: runs anywhere
    session.begin(plain.scene, plain.layout, 1, task=plain.to_dict())


# =========================================================================== real episodes

@pytest.fixture(scope="module")
def mujoco_session():
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    s = SimSession(MujocoBackend())
    yield s
    s.backend.close()


def oracle_episode(session, task: TaskSpec, seed: int = 5):
    from vla_bridge.evaluation.direct import run_episode_direct
    from vla_bridge.policy_nodes.oracle import OraclePolicy
    return run_episode_direct(session, OraclePolicy(), task, seed, images=False)


@needs_assets
def test_the_sim_builds_a_probe_scene_with_libero_objects_at_their_size(mujoco_session):
    task = P.probe("intact_ood_source_target_soup_white_bowl").task
    mujoco_session.begin(task.scene, task.layout, 2, task=task.to_dict())
    objects = mujoco_session.backend.world_state().objects
    assert {"alphabet_soup", "white_bowl"} <= set(objects)
    assert not {"small_blue_cylinder", "green_bowl"} & set(objects)
    np.testing.assert_allclose(objects["alphabet_soup"].size,
                               libero_assets.load_asset("alphabet_soup").size)


@needs_assets
@pytest.mark.graph
@pytest.mark.parametrize("probe_id", ["intact_ood_source_popcorn_yellow",
                                      "intact_ood_target_red_cube_ramekin",
                                      "intact_ood_source_target_butter_black_bowl",
                                      "intact_object_distractor_three_groceries"])
def test_the_oracle_solves_a_probe_of_each_object_subcategory(mujoco_session, probe_id):
    from vla_bridge.benchmarks.intact.metrics import intact_metrics
    task = P.probe(probe_id).task
    record, score = oracle_episode(mujoco_session, task)
    metrics = intact_metrics(task, record, score.complete)
    assert score.complete, probe_id
    assert metrics["intention_correct"] and metrics["grasp_success"], probe_id
    assert not metrics["wrong_object_attempt"], metrics["wrong_object"]


@needs_assets
@pytest.mark.graph
def test_grasping_the_look_alike_is_a_wrong_object_attempt(mujoco_session):
    """The oracle, told the tomato sauce can is the source, puts it in the green bowl: against
    the probe (the red cube counts) that is no intention, no success, a wrong object."""
    from vla_bridge.benchmarks.intact.metrics import intact_metrics
    from vla_bridge.benchmarks.robofollow.scoring import score_episode
    probe = P.probe("intact_commonsense_distractor_tomato_sauce")
    fooled = dataclasses.replace(probe.task, source="tomato_sauce")
    record, fooled_score = oracle_episode(mujoco_session, fooled)
    assert fooled_score.complete  # it did put the can in the bowl
    metrics = intact_metrics(probe.task, record, score_episode(probe.task, record).complete)
    assert not metrics["intention_correct"] and not metrics["task_success"]
    assert metrics["wrong_object_attempt"] and metrics["wrong_object"] == "tomato_sauce"


# =========================================================================== tables

def row(probe: P.Probe, k: int, intention=True, grasp=True, success=True, wrong=None,
        status="ok") -> dict:
    return {"task_id": probe.id, "round": k, "status": status,
            "intact": {"intention_correct": intention, "grasp_success": grasp,
                       "task_success": success, "wrong_object_attempt": wrong is not None,
                       "wrong_object": wrong}}


def test_tables_give_table1_the_deltas_and_the_wrong_objects():
    chosen = [P.probe("intact_original_red_cube_green"),
              P.probe("intact_commonsense_distractor_tomato_sauce"),
              P.probe("intact_ood_source_pudding_green")]
    original, common, ood = chosen
    rows = [row(original, k) for k in range(4)]
    rows += [row(common, 0), row(common, 1, intention=False, grasp=False, success=False,
                                 wrong="tomato_sauce"),
             row(common, 2, success=False), row(common, 3, intention=False, grasp=False,
                                               success=False, wrong="tomato_sauce")]
    rows += [row(ood, k, grasp=k < 1, success=False) for k in range(4)]
    rows.append({"task_id": ood.id, "round": 9, "status": "failed", "error": "sim died"})
    summary = tables.summarize(rows, chosen)
    subs = summary["subcategories"]
    assert list(subs) == ["original", "ood_source", "commonsense_distractor"]  # Table 1's order
    cs = subs["commonsense_distractor"]
    assert (cs["intention"]["k"], cs["success"]["k"], cs["wrong object"]["k"]) == (2, 1, 2)
    assert cs["episodes"] == 4 and 0 < cs["success"]["ci95"][0] < 0.25 < cs["success"]["ci95"][1]
    assert subs["ood_source"]["grasp"]["k"] == 1 and summary["failed_episodes"] == 1
    (delta,) = summary["table2_deltas"]  # only the variant has an original to subtract
    assert delta["probe"] == common.id and delta["original"] == original.id
    assert delta["success"]["delta_points"] == pytest.approx(-75)
    lo, hi = delta["success"]["ci95_points"]
    assert lo < -75 < hi < 0
    assert summary["probes"][common.id]["wrong_objects"] == ["tomato_sauce"]
    text = tables.markdown(summary)
    assert "| success | 100 [51-100] | 0 [0-49] | 25 [5-70] |" in text
    assert "| intention - success (points) | +0 | +100 | +25 |" in text
    assert "Commons.+Distr. 50 [15-85] %" in text and "1 failed episode(s) left out" in text
    assert "another simulator" in text and "-0" not in text


def test_the_published_rows_cover_every_column_and_metric():
    paper = tables.paper_rows()
    assert paper["columns"] == list(P.SUBCATEGORY_NAMES)
    for model, metrics in paper["rows"].items():
        for name in ("intention", "grasp", "success"):
            assert len(metrics[name]) == len(P.SUBCATEGORY_NAMES), model
            assert all(0 <= v <= 100 for v in metrics[name]), model
