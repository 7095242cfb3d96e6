"""RoboFollow task suites and scene layouts: the project's own data files and their loaders.

Tests marked ``needs_shared`` cross-check config/robofollow against the extracted benchmark spec
in ``../shared/robofollow`` (relative to the repo root). That folder only exists in the
development workspace, so they skip elsewhere.
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
if str(REPO_ROOT) not in sys.path:  # run from a plain checkout, without installing
    sys.path.insert(0, str(REPO_ROOT))

from vla_bridge.paths import config_path  # noqa: E402
from vla_bridge.benchmarks.robofollow.scenes import (SCENES, load_benchmark_facts, load_scene,  # noqa: E402
                               load_scenes, sample_layout)
from vla_bridge.benchmarks.robofollow.tasks import (TaskSpec, episode_seed, load_suite,  # noqa: E402
                              plan_trials)

SHARED = REPO_ROOT.parent / "shared" / "robofollow"
needs_shared = pytest.mark.skipif(
    not (SHARED / "eval_tasks.json").is_file(),
    reason=f"benchmark spec not found at {SHARED} (it only exists in the development workspace)")

EXPECTED_COUNTS = {
    "scene1": {"L0": 16, "L1": 8, "L2": 16, "L3": 76},
    "scene2": {"L0": 16, "L1": 24, "L2": 68, "L3": 24},
    "scene3": {"L0": 16, "L1": 40, "L2": 64, "L3": 96},
    "scene4": {"L0": 27, "L1": 14, "L2": 25, "L3": 24},
}
RELATION_VECTORS = {"place_behind": (0.0, 1.0), "place_in_front": (0.0, -1.0),
                    "place_left_of": (-1.0, 0.0), "place_beside": (1.0, 0.0)}
# Their target keys -> ours (tools/import_robofollow.py restates them; checked independently here).
TARGET_KEYS = {
    "target_object": "target_object", "target_label": "target_label",
    "route_mode": "route_mode", "route_reference_object": "route_reference",
    "scored_correct_route_object": "route_correct", "scored_wrong_route_object": "route_wrong",
    "place_mode": "place_mode", "target_yaw_rad_mod_pi": "target_yaw",
    "is_conditional": "conditional", "place_slot": "place_slot",
    "second_source_object": "second_source", "second_arm": "second_arm",
    "expected_branch_derived": "expected_branch_derived",
    "branch_reason_derived": "branch_reason_derived",
}
SEEDS = [539, 1097, 1016, 0, 1, 42, 2**31 - 1] + list(range(100, 130))


@pytest.fixture(scope="module")
def suite():
    return load_suite()


@pytest.fixture(scope="module")
def scenes():
    return load_scenes()


@pytest.fixture(scope="module")
def shared_tasks():
    return json.loads((SHARED / "eval_tasks.json").read_text())["tasks"]


@pytest.fixture(scope="module")
def shared_scenes():
    return json.loads((SHARED / "scenes.json").read_text())["scenes"]


# ----------------------------------------------------------------------------- counts


def test_counts_per_scene_and_level(suite):
    counts = suite.counts()
    assert counts["by_scene"] == EXPECTED_COUNTS
    assert counts["by_level"] == {"L0": 75, "L1": 86, "L2": 173, "L3": 220}
    assert counts["total"] == len(suite) == 554


def test_training_task_and_instruction_counts(suite):
    counts = suite.counts()
    assert counts["training_tasks"] == 75
    assert counts["training_instructions"] == 229
    per_scene = {s: len(suite.training_tasks(s)) for s in SCENES}
    assert per_scene == {"scene1": 16, "scene2": 16, "scene3": 16, "scene4": 27}


def test_training_tasks_are_the_l0_definitions(suite):
    for scene in SCENES:
        for tt in suite.training_tasks(scene):
            assert tt.spec.level == "L0" and tt.spec.scene == scene
            assert tt.spec.base_task == tt.id == tt.spec.training_task
            assert tt.instructions[0] == tt.spec.instruction
            assert tt.layout == tt.spec.layout
            assert len(set(tt.instructions)) == len(tt.instructions) >= 3


def test_load_suite_rejects_inconsistent_file(tmp_path):
    data = json.loads(config_path("robofollow/tasks.json").read_text())
    data["eval_tasks"]["scene1"].pop()
    broken = tmp_path / "tasks.json"
    broken.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="counts"):
        load_suite(broken)


# ----------------------------------------------------------------------------- lookups


def test_filters_and_lookup(suite):
    assert len(suite.eval_tasks(scenes="scene1", levels="L0")) == 16
    assert len(suite.eval_tasks(scenes=["scene2", "scene3"], levels=["L1", "L3"])) == 184
    ids = ["L0_pickup_red_cylinder", "L0_pickup_yellow_block_1_left"]
    assert [t.id for t in suite.eval_tasks(ids=ids)] == ids  # keeps the caller's order
    assert suite.eval_tasks(ids=ids, scenes="scene1") == [suite.get(ids[1])]
    task = suite.get("L0_pickup_yellow_block_1_left")
    assert (task.scene, task.level, task.layout, task.arm, task.source) == (
        "scene1", "L0", "default", "left", "yellow_block_1")


def test_unknown_task_id_lists_close_matches(suite):
    with pytest.raises(ValueError, match="close matches: L0_pickup_yellow_block_1_left"):
        suite.eval_tasks(ids=["L0_pickup_yellow_block_1_lft"])
    with pytest.raises(KeyError):  # get() also behaves like a mapping lookup
        suite.get("no_such_task")


def test_unknown_scene_or_level_rejected(suite):
    with pytest.raises(ValueError, match="valid: scene1"):
        suite.eval_tasks(scenes="scene5")
    with pytest.raises(ValueError, match="L4"):
        suite.eval_tasks(levels=["L4"])
    with pytest.raises(ValueError):
        suite.training_tasks("scene9")


def test_taskspec_round_trip(suite):
    for task in suite.eval_tasks():
        again = TaskSpec.from_dict(json.loads(json.dumps(task.to_dict())))
        assert again == task and again.target == task.target


# ----------------------------------------------------------------------------- seeds


def test_episode_seed_formula():
    assert [episode_seed("L0_pickup_yellow_block_1_left", r) for r in (1, 10)] == [539, 1439]
    assert episode_seed("L0_pickup_red_cylinder", 1) == 1097
    assert episode_seed("L0_s41_l_pick_cube_in_bowl", 1, base_seed=0) == 1016 - 42


def test_plan_trials_covers_the_protocol(suite):
    trials = suite.trials()
    assert len(trials) == 5540
    assert len({(t.task.id, t.round) for t in trials}) == 5540
    assert {t.round for t in trials} == set(range(1, 11))
    assert all(t.seed == episode_seed(t.task.id, t.round) for t in trials)
    task = suite.get("L0_pickup_red_cylinder")
    # round 1 with base 42 is 1097, so round 3 with base 0 is 1097 - 42 + 200.
    assert [(t.round, t.seed) for t in plan_trials([task], [3], base_seed=0)] == [(3, 1255)]


# ----------------------------------------------------------------------------- task content


def test_scene1_relation_vectors_match_action_names(suite):
    for task in suite.eval_tasks(scenes="scene1"):
        if task.action == "pickup":
            assert task.relation is None and task.anchor is None
        else:
            assert task.relation == RELATION_VECTORS[task.action], task.id
            assert task.anchor not in (None, task.source), task.id
    assert all(t.relation is None for t in suite.eval_tasks(scenes=["scene2", "scene3", "scene4"]))


def test_tasks_name_bodies_of_their_layout(suite, scenes):
    for task in suite.eval_tasks():
        scene = scenes[task.scene]
        layout = scene.layout(task.layout)
        placed = {p.name for p in layout.placements}
        assert task.level in layout.levels, task.id
        named = [task.source, task.anchor] + [task.target.get(k) for k in (
            "target_object", "target_label", "route_reference", "route_correct", "route_wrong",
            "second_source")]
        assert {n for n in named if n} <= placed, task.id
        if "place_slot" in task.target:
            assert str(task.target["place_slot"]) in scene.extras["slots"]


def test_scene3_route_and_orientation_fields(suite, scenes):
    pairs = scenes["scene3"].extras["pair_object"]
    modes = scenes["scene3"].extras["orientation_modes"]
    for task in suite.eval_tasks(scenes="scene3"):
        t = task.target
        assert t["route_wrong"] == pairs[t["route_correct"]]
        via = t["route_mode"] == "via"
        assert t["route_reference"] == (t["route_correct"] if via else t["route_wrong"])
        assert t["target_yaw"] == modes[t["place_mode"]]["target_yaw"]


# ----------------------------------------------------------------------------- scenes


def test_scene_objects_sizes_and_physics(scenes):
    s1, s2, s3, s4 = (scenes[s] for s in SCENES)
    assert s1.objects["yellow_block_1"].full_size.tolist() == pytest.approx([0.04] * 3)
    assert s1.objects["red_cylinder"].full_size.tolist() == pytest.approx([0.05, 0.05, 0.05])
    assert (s1.objects["red_cylinder"].friction, s2.objects["small_blue_cylinder"].friction) == (
        0.1, 0.12)
    assert (s1.objects["red_sphere"].mass, s1.objects["red_sphere"].friction) == (0.05, 2.0)
    assert s2.objects["large_blue_cube"].full_size.tolist() == pytest.approx([0.06] * 3)
    assert s3.objects["red_bar_2"].full_size.tolist() == pytest.approx([0.036, 0.056, 0.026])
    assert s4.objects["blue_sphere"].full_size.tolist() == pytest.approx([0.048] * 3)
    assert s4.objects["yellow_cylinder"].half_z == pytest.approx(0.025)
    assert s3.fixtures["blue_label_6"].full_size.tolist() == pytest.approx([0.0695, 0.0695, 0.002])
    assert s2.fixtures["green_bowl"].mesh["model_id"] == 3 and s4.fixtures["green_bowl"].static


def test_spawn_height_rule(scenes):
    s1, s2, s3, s4 = (scenes[s] for s in SCENES)
    assert s1.objects["red_sphere"].spawn_z() == pytest.approx(0.76)  # table + radius
    assert s1.objects["red_cylinder"].spawn_z() == pytest.approx(0.765)  # table + half height
    assert s1.objects["yellow_block_1"].spawn_z() == pytest.approx(0.761)  # + 1 mm for boxes
    assert s2.fixtures["yellow_bowl"].spawn_z() == pytest.approx(0.76)
    assert s3.objects["red_bar_2"].spawn_z() == pytest.approx(0.754)
    assert s3.fixtures["green_label_1"].spawn_z() == pytest.approx(0.741)
    assert s4.objects["blue_sphere"].spawn_z() == pytest.approx(0.765)  # scene 4: + 1 mm for all
    assert s1.objects["red_sphere"].spawn_z(0.70) == pytest.approx(0.72)


def _upstream_scene1(layout_xy: dict, seed: int) -> dict:
    """The benchmark's Scene 1 spawn, written out independently of scenes.json's rule format."""
    rng = np.random.RandomState(seed)
    back_row = {"red_sphere", "yellow_block_1", "red_cylinder"}  # rows named by object
    out = {}
    for name, (cx, cy) in layout_xy.items():
        x = cx + rng.uniform(-0.015, 0.015)
        y = cy - rng.uniform(0, 0.015) if name in back_row else cy + rng.uniform(0, 0.015)
        out[name] = (x, y)
    return out


def test_sample_layout_scene1_is_exact(scenes):
    s1 = scenes["scene1"]
    order = ["red_sphere", "yellow_block_1", "red_cylinder", "yellow_block_2", "green_sphere",
             "yellow_block_3"]
    for key, layout in s1.layouts.items():
        assert [p.name for p in layout.placements] == order
        nominal = {p.name: p.xy for p in layout.placements}
        for seed in SEEDS:
            got = sample_layout(s1, key, seed)
            want = _upstream_scene1(nominal, seed)
            for name in order:
                assert tuple(got[name][:2]) == want[name]  # bit-exact, not approx
                assert got[name][2] == s1.objects[name].spawn_z()


def test_jitter_stays_within_ranges(scenes):
    for scene in scenes.values():
        for key, layout in scene.layouts.items():
            for seed in SEEDS:
                positions = sample_layout(scene, key, seed)
                assert list(positions) == [p.name for p in layout.placements]
                for p in layout.placements:
                    _check_placement(scene, p, positions, np.asarray(p.xy))


def _check_placement(scene, p, positions, nominal):
    pos = positions[p.name]
    if p.support or p.container:  # follows the body below / the bowl
        assert pos[:2].tolist() == positions[p.support or p.container][:2].tolist()
        return
    offset = pos[:2] - nominal
    rule = scene.jitter.get(p.name)
    if rule is None:
        assert offset.tolist() == [0.0, 0.0], p.name
        return
    for value, axis in zip(offset, (rule.x, rule.y)):
        low, high = axis.bounds
        assert low - 1e-12 <= value <= high + 1e-12, (scene.name, p.name)


def test_jitter_is_deterministic_per_seed(scenes):
    for scene in scenes.values():
        for key in scene.layouts:
            a, b = sample_layout(scene, key, 1234), sample_layout(scene, key, 1234)
            c = sample_layout(scene, key, 1235)
            assert all(np.array_equal(a[n], b[n]) for n in a)
            assert any(not np.array_equal(a[n], c[n]) for n in a)


def test_jitter_rule_follows_the_object(scenes):
    s1 = scenes["scene1"]
    # scene1_1 moves red_sphere into the front row; it keeps its own "towards the robot" rule.
    nominal_y = s1.layout("scene1_1").placement("red_sphere").xy[1]
    assert nominal_y == pytest.approx(-0.18)
    offsets = [sample_layout(s1, "scene1_1", seed)["red_sphere"][1] - nominal_y for seed in SEEDS]
    assert max(offsets) <= 0.0 < -min(offsets)


def test_scene4_stacks_and_bowl_contents(scenes):
    s4 = scenes["scene4"]
    layout = s4.layout("scene4.1")
    assert layout.placement("green_cylinder_top").support == "blue_cube_right"
    assert layout.placement("red_cube_in_bowl").container == "green_bowl"
    pos = sample_layout(s4, "scene4.1", 7)
    gap = s4.extras["spawn"]["stack_gap"]
    assert pos["green_cylinder_top"][2] == pytest.approx(pos["blue_cube_right"][2] + 0.024
                                                         + 0.025 + gap)
    assert pos["red_cube_in_bowl"][2] > pos["green_bowl"][2]
    assert "red_cube_in_bowl" not in sample_layout(s4, "scene4.4", 7)  # bowl emptied
    assert s4.extras["slots"]["6"] == [0.1, -0.18]


def test_unknown_layout_lists_valid_ones(scenes):
    with pytest.raises(ValueError, match="valid: default, scene1_1, scene1_2, scene1_3"):
        sample_layout(scenes["scene1"], "scene1.1", 0)
    s4 = scenes["scene4"]
    alias, key = sample_layout(s4, "scene4_2", 5), sample_layout(s4, "scene4.2", 5)
    assert all(np.array_equal(alias[n], key[n]) for n in key)
    with pytest.raises(ValueError, match="unknown scene"):
        load_scene("scene5")


def test_global_facts():
    facts = load_benchmark_facts()
    assert facts["frame"]["table_top_z"] == 0.74
    assert facts["operation_box"]["x"] == [-0.2, 0.15]
    assert facts["operation_box"]["z"] == [0.74, 1.0]
    proto = facts["protocol"]
    assert (proto["rounds"], proto["base_seed"]) == (10, 42)
    assert (proto["policy_calls_per_episode"], proto["actions_per_call"]) == (10, 50)
    assert "md5" in proto["seed_formula"]


# ----------------------------------------------------------------------------- paths


def test_config_path_finds_the_checkout_copy():
    assert config_path("robofollow/scenes.json") == REPO_ROOT / "config/robofollow/scenes.json"


def test_config_path_finds_installed_copies(tmp_path, monkeypatch):
    relative = "robofollow/only_installed.json"  # not in the checkout, so (a) misses
    prefix_file = tmp_path / "prefix/share/vla_bridge/config" / relative
    prefix_file.parent.mkdir(parents=True)
    prefix_file.write_text("{}")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    assert config_path(relative) == prefix_file

    pytest.importorskip("ament_index_python")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "elsewhere"))
    ament = tmp_path / "install"
    (ament / "share/ament_index/resource_index/packages").mkdir(parents=True)
    (ament / "share/ament_index/resource_index/packages/vla_bridge").write_text("")
    ament_file = ament / "share/vla_bridge/config" / relative
    ament_file.parent.mkdir(parents=True)
    ament_file.write_text("{}")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(ament))
    assert config_path(relative) == ament_file


def test_config_path_lists_places_tried(monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)  # a sourced ROS install may set it
    with pytest.raises(FileNotFoundError) as err:
        config_path("robofollow/missing.json")
    message = str(err.value)
    assert str(REPO_ROOT / "config/robofollow/missing.json") in message
    assert "share/vla_bridge/config/robofollow/missing.json" in message
    assert "ament" in message


# ----------------------------------------------------------------------------- shared spec


@needs_shared
def test_every_task_matches_the_spec(suite, shared_tasks):
    assert [t["id"] for t in shared_tasks] == [t.id for t in suite.eval_tasks()]
    for theirs in shared_tasks:
        ours = suite.get(theirs["id"])
        target = theirs["target"]
        relation = target.get("desired_unit_vector_source_minus_anchor_xy")
        assert (ours.scene, ours.level, ours.layout, ours.instruction, ours.arm, ours.action) == (
            theirs["scene"], theirs["level"], theirs["layout"]["variant"], theirs["instruction"],
            theirs["arm"], theirs["action"])
        assert (ours.source, ours.anchor, ours.relation) == (
            target["source_object"], target.get("anchor_object"),
            tuple(relation) if relation else None)
        assert (ours.training_task, ours.base_task, ours.variant) == (
            theirs["training_task"], theirs["base_task_type"], theirs["instruction_variant"])
        for their_key, our_key in TARGET_KEYS.items():
            assert ours.target.get(our_key) == target.get(their_key), (ours.id, our_key)
        wording = target.get("instruction_wording")
        if wording:
            assert ours.target["wording"] == {k.removesuffix("_in_text"): v
                                              for k, v in wording.items()}
        assert ours.target.get("reference_check_derived") == theirs.get("reference_check_derived")


@needs_shared
def test_all_5540_seeds_match_the_spec(suite, shared_tasks):
    seeds = {(t.task.id, t.round): t.seed for t in suite.trials()}
    checked = 0
    for theirs in shared_tasks:
        for round_, seed in enumerate(theirs["episode_seeds_base42_rounds1to10"], start=1):
            assert seeds[(theirs["id"], round_)] == seed
            checked += 1
    assert checked == len(seeds) == 5540


@needs_shared
def test_training_instructions_match_the_spec(suite):
    for scene in SCENES:
        theirs = json.loads((SHARED / "instructions" / f"{scene}.json").read_text())
        ours = {t.id: list(t.instructions) for t in suite.training_tasks(scene)}
        assert ours == theirs
        assert [t.id for t in suite.training_tasks(scene)] == list(theirs)


@needs_shared
def test_layouts_match_the_spec(scenes, shared_scenes):
    for name in SCENES:
        ours, theirs = scenes[name], shared_scenes[name]
        assert set(ours.layouts) == set(theirs["layouts"])
        assert ours.aliases == theirs.get("layout_aliases", {})
        for key, lay in theirs["layouts"].items():
            mine = ours.layout(key)
            assert mine.paper_name == lay["paper_name"]
            assert list(mine.levels) == sorted(lay["used_by_levels"])
            assert _their_placements(name, lay, theirs) == [
                (p.name, list(p.xy), p.slot, p.support, p.container) for p in mine.placements]


def _their_placements(scene: str, lay: dict, theirs: dict) -> list[tuple]:
    if scene == "scene4":
        bowl = theirs["bowl"]
        first = [(bowl["name"], theirs["slot_xy"][str(bowl["slot"])], bowl["slot"], None, None)]
        return first + [(o["name"], o["nominal_xy"], o["slot"], o.get("on_top_of"),
                         o.get("in_container")) for o in lay["objects"]]
    if scene == "scene3":
        xy = {**lay["slabs_xy"], **lay["labels_xy"]}
    elif scene == "scene2":
        xy = {**lay["objects_xy"], **{b: v[:2] for b, v in lay["bowls_xyz"].items()}}
    else:
        xy = lay["objects_xy"]
    return [(n, v, None, None, None) for n, v in xy.items()]


@needs_shared
def test_objects_match_the_spec(scenes, shared_scenes):
    for name in ("scene1", "scene2"):
        physics = shared_scenes[name]["physics"]
        for o in shared_scenes[name]["objects_default"]:
            mine = scenes[name].objects[o["name"]]
            _check_size(mine, o["size_m"])
            assert (list(mine.rgb), mine.mass, mine.friction) == (
                o["rgb"], physics[o["shape"]]["mass_kg"], physics[o["shape"]]["friction"])
    for o in shared_scenes["scene3"]["objects_default"]:
        mine = scenes["scene3"].objects[o["name"]]
        assert (list(mine.half_extents), list(mine.rgb), mine.mass, mine.friction, mine.yaw) == (
            o["half_extents_xyz_m"], o["rgb"], o["mass_kg"], o["friction"], o["yaw_rad"])
    for lay in shared_scenes["scene4"]["layouts"].values():
        for o in lay["objects"]:
            mine = scenes["scene4"].objects[o["name"]]
            _check_size(mine, o["size_m"])
            assert (list(mine.rgb), mine.mass, mine.friction) == (
                o["rgb"], o["mass_kg"], o["friction"])


def _check_size(mine, size_m: dict) -> None:
    half = size_m.get("half_size")
    assert (mine.radius, mine.half_height) == (size_m.get("radius"), size_m.get("half_height"))
    assert mine.half_extents == ((half,) * 3 if half else None)


@needs_shared
def test_jitter_rules_match_the_spec(scenes, shared_scenes):
    for name in ("scene1", "scene2"):
        for body, rule in shared_scenes[name]["jitter"]["rules_by_object"].items():
            mine = scenes[name].jitter[body]
            assert (list(mine.x.bounds), list(mine.y.bounds)) == (rule["x"], rule["y"])
    both = shared_scenes["scene3"]["jitter"]["all_objects_and_labels"]
    for body, mine in scenes["scene3"].jitter.items():
        assert (list(mine.x.bounds), list(mine.y.bounds)) == (both["x"], both["y"])
    assert set(scenes["scene3"].jitter) == set(scenes["scene3"].objects) | set(
        scenes["scene3"].fixtures)
    per_slot = shared_scenes["scene4"]["jitter"]["per_slot_sample"]
    for mine in scenes["scene4"].jitter.values():
        assert (list(mine.x.bounds), list(mine.y.bounds)) == (per_slot["x"], per_slot["y"])


@needs_shared
def test_import_script_reproduces_the_config(tmp_path):
    spec = importlib.util.spec_from_file_location(
        "import_robofollow", REPO_ROOT / "tools" / "import_robofollow.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main([str(SHARED), "--out", str(tmp_path)]) == 0
    for name in ("scenes.json", "tasks.json"):
        committed = config_path(f"robofollow/{name}").read_bytes()
        assert (tmp_path / name).read_bytes() == committed, (
            f"{name} is stale: run tools/import_robofollow.py")


def test_every_task_needs_only_objects_its_scene_has_and_the_scorer_refuses_a_record_without_them():
    """scoring.needed_objects is the list a real trial's readiness checks (robot_nodes.piper)
    and the one each scorer requires in its record: every RoboFollow task and INT-ACT probe
    names objects its table holds, and a record missing one is refused with its name."""
    from vla_bridge.benchmarks.intact.probes import probes
    from vla_bridge.benchmarks.robofollow.scoring import needed_objects, score_episode
    from vla_bridge.embodiment.episode_record import EpisodeRecord
    tasks = list(load_suite().eval_tasks()) + [p.task for p in probes()]
    for task in tasks:
        scene = load_scene(task.scene)
        on_table = set(scene.objects) | set(scene.fixtures)
        replace = (task.edits or {}).get("replace") or {}
        on_table |= {v if isinstance(v, str) else v[0] for v in replace.values()}
        on_table |= {a[0] for a in (task.edits or {}).get("add") or []}
        needed = needed_objects(task)
        assert needed and needed[0] == task.source and set(needed) <= on_table, (task.id, needed)
    place = next(t for t in tasks if t.action == "place_bowl")
    n = 3
    arms = ("left", "right")
    record = EpisodeRecord(tcp_pos={arm: np.zeros((n, 3)) for arm in arms},
                           tcp_rot={arm: np.tile(np.eye(3), (n, 1, 1)) for arm in arms},
                           grip={arm: np.ones(n) for arm in arms},
                           pos={name: np.zeros((n, 3)) for name in needed_objects(place)[:-1]})
    with pytest.raises(ValueError, match=rf"{needed_objects(place)[-1]}.*not in the record"):
        score_episode(place, record)
