"""INT-ACT's real-pilot probe cards (benchmarks.intact.pilot_cards): every object a probe puts on
the table has a marker in the tracker's objects file, at the simulator's size; a card says what
goes where; a selection of probes shares one table or is refused; and the synthetic cameras'
render of every probe table is calibrated and tracked."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from vla_bridge.benchmarks.intact import pilot_cards, probes
from vla_bridge.benchmarks.intact.probes import SPOT
from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.embodiment import libero_assets
from vla_bridge.embodiment.mjcf import fixture_size
from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig

needs_assets = pytest.mark.skipif(not libero_assets.available(),
                                  reason="LIBERO's assets (bash scripts/setup.sh libero)")


def _sim_size(name: str) -> np.ndarray:
    scene = load_scene("scene2")
    for obj in scene.objects.values():
        if obj.name == name:
            return np.asarray(obj.full_size, float)
    if name in scene.fixtures:
        return fixture_size(scene.fixtures[name])
    return libero_assets.load_asset(name).size


@needs_assets
def test_every_probe_object_has_a_marker_at_the_simulators_size():
    by_name = {o.name: o for o in TrackerConfig.load().objects.values()}
    names = {o["name"] for p in probes.probes() for o in pilot_cards.table_objects(p)}
    assert len(names) == 6 + 17  # Scene 2's six bodies and the probes' LIBERO objects
    for name in sorted(names):
        assert name in by_name, f"{name}: no marker in config/real_objects.yaml"
        np.testing.assert_allclose(by_name[name].size, _sim_size(name), atol=0.001,
                                   err_msg=name)


@needs_assets
def test_a_card_says_what_replaces_what_where_and_with_which_marker():
    c = pilot_cards.card("intact_ood_source_pudding_green", TrackerConfig.load())
    assert (c["source"], c["target"], c["arm"]) == ("chocolate_pudding", "green_bowl", "right")
    objects = {o["name"]: o for o in c["objects"]}
    assert "small_red_cube" not in objects  # the pudding stands in its place
    pudding = objects["chocolate_pudding"]
    assert (pudding["role"], pudding["replaces"], pudding["xy_cm"]) == ("source", "small_red_cube",
                                                                        [-3.0, -4.0])
    assert pudding["marker"]["id"] == 16 and not pudding["marker"]["beside"]
    assert objects["green_bowl"]["role"] == "target" and objects["green_bowl"]["marker"]["beside"]
    assert [o["role"] for o in c["objects"]][:2] == ["source", "target"]
    assert c["missing_markers"] == []
    text = pilot_cards.card_text(c)
    assert '"Use your right arm to pick up the chocolate pudding' in text
    assert "Leave small_red_cube out; stand chocolate_pudding (8 x 4.6 x 2.7 cm) at (-3.0, -4.0)" in text
    assert "green_bowl: marker 10 (30 mm) on a card lying on the table" in text
    assert "(+0.0, -6.3) cm from the bowl's centre" in text  # on the camera's side
    # an added look-alike is a distractor at its place, and the note says which counts
    c = pilot_cards.card("intact_commonsense_distractor_soup_can", TrackerConfig.load())
    soup = next(o for o in c["objects"] if o["name"] == "alphabet_soup")
    assert soup["role"] == "distractor" and soup["xy_m"] == list(SPOT["back_mid"])
    assert "the blue cylinder counts" in pilot_cards.card_text(c)


def test_an_object_without_a_marker_is_named_on_the_card():
    config = TrackerConfig.load()
    less = TrackerConfig(**{**config.__dict__, "objects": {
        i: o for i, o in config.objects.items() if o.name != "yellow_bowl"}})
    c = pilot_cards.card("intact_language_negation_not_green_bowl", less)
    assert c["missing_markers"] == ["yellow_bowl"]
    assert "yellow_bowl: NO MARKER in the tracker's objects file" in pilot_cards.card_text(c)


def test_a_selection_shares_one_table_or_is_refused():
    assert pilot_cards.table_setup("language") == ("scene2", "default", {})
    scene, layout, edits = pilot_cards.table_setup("intact_object_distractor_ketchup")
    assert edits == {"replace": {}, "add": [["ketchup", *SPOT["back_mid"]]]}
    with pytest.raises(ValueError, match=r"needs 24 different tables .* synthetic cameras show "
                                         r"one"):
        pilot_cards.table_setup("all")
    with pytest.raises(ValueError, match="unknown INT-ACT probe"):
        pilot_cards.table_setup("intact_nope")


@needs_assets
def test_tasks_prints_the_cards_and_refuses_them_for_libero():
    run = [sys.executable, "-m", "vla_bridge.cli", "tasks", "--intact"]
    out = subprocess.run(run + ["ood_target", "--card", "--json"], capture_output=True,
                         text=True, check=True)
    cards = json.loads(out.stdout)
    assert [c["subcategory"] for c in cards] == ["ood_target"] * 5
    assert all(c["missing_markers"] == [] for c in cards)
    bad = subprocess.run(run + ["--benchmark", "libero", "--card"], capture_output=True, text=True)
    assert bad.returncode == 2 and "pilot cards are for the Scene 2 probes" in bad.stderr


@needs_assets
def test_the_tracker_finds_every_probe_tables_source_and_target_in_the_synthetic_renders():
    """1280 x 960, about the real cameras' 1280 x 720: at 640 x 480 the popcorn's marker, where
    the red cube stood, merges with the blue cylinder's in front of it."""
    from vla_bridge.embodiment.workcell import home_command
    from vla_bridge.robot_nodes.realsense.synthetic_cameras import SyntheticWorkcell, scene_layout
    from vla_bridge.robot_nodes.tracker.tracker import MarkerTracker

    config = TrackerConfig.load()
    tracker = MarkerTracker(config)
    tables = {}
    for p in probes.probes():
        tables.setdefault(pilot_cards.setup_key(p), []).append(p)
    assert len(tables) == 24
    worst = 0.0
    for group in tables.values():
        edits = group[0].task.edits
        cell = SyntheticWorkcell("scene2", "default", config, (1280, 960), edits)
        try:
            cell.set_joints(home_command())
            image, intr = cell.render("cam_high", 1280, 960), cell.intrinsics("cam_high", 1280, 960)
        finally:
            cell.close()
        detections = tracker.detect(image)
        found = tracker.locate(detections, intr, tracker.calibrate(detections, intr))
        _, _, spawn, _ = scene_layout("scene2", "default", edits)
        for p in group:
            wanted = [p.source_object] + [v for k, v in (p.task.target or {}).items()
                                          if k == "target_object"]
            for name in wanted:
                assert name in found, (p.id, name, sorted(found))
                err = float(np.linalg.norm(found[name].pos - spawn[name]))
                worst = max(worst, err)
                assert err < 0.025, (p.id, name, round(err, 3))
    print(f"worst source/target tracking error over the 24 tables: {worst * 100:.1f} cm")
