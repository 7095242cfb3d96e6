"""Part I-A on LIBERO's tasks (vla_bridge.vqa.libero): objects and regions named
as LIBERO's instructions name them, state changes asked as such, and (with .venv-libero) the
whole run on real LIBERO frames: every instance's cue drawn, the oracle right on every
question, the skipped variants listed, a rerun resumed."""
from __future__ import annotations

import json

import numpy as np
import pytest

from support.libero_venv import needs_libero_venv

from vla_bridge.benchmarks.libero import vifo
from vla_bridge.benchmarks.libero.protocol import STANDARD_SUITES, load_catalog
from vla_bridge.embodiment.world import (CameraPose, ObjectState, TcpState, WorldState,
                                         world_from_dict, world_to_dict)
from vla_bridge.vqa.instances import parse_cues
from vla_bridge.vqa.libero import (LOOKS, plan_libero_instances, region_name,
                                              run_libero_vqa)
from vla_bridge.vqa.questions import HOLD, vqa_questions

CATALOG = load_catalog()


def test_every_object_of_the_forty_tasks_has_a_look():
    categories = {c for s in STANDARD_SUITES for e in CATALOG[s]
                  for c in {**e["objects"], **e["fixtures"]}.values()} - {"floor"}
    assert categories <= set(LOOKS), sorted(categories - set(LOOKS))


@pytest.mark.parametrize("suite, index, region, name", [
    ("libero_goal", 0, "wooden_cabinet_1_middle_region", "the middle drawer of the wooden cabinet"),
    ("libero_goal", 1, "flat_stove_1_cook_region", "the stove"),
    ("libero_goal", 2, "wooden_cabinet_1_top_side", "the top of the wooden cabinet"),
    ("libero_goal", 5, "main_table_stove_front_region", "the table in front of the stove"),
    ("libero_goal", 9, "wine_rack_1_top_region", "the wine rack"),
    ("libero_object", 0, "basket_1_contain_region", "the basket"),
    ("libero_10", 3, "white_cabinet_1_bottom_region", "the bottom drawer of the white cabinet"),
    ("libero_10", 5, "desk_caddy_1_back_contain_region", "the back compartment of the desk caddy"),
    ("libero_10", 6, "living_room_table_plate_right_region", "the table to the right of the plate"),
    ("libero_10", 9, "microwave_1_heating_region", "the microwave"),
])
def test_goal_regions_read_as_the_instructions_say(suite, index, region, name):
    assert region_name(region, CATALOG[suite][index]) == name


def test_the_world_state_survives_json():
    world = WorldState(1.5, {"plate_1": ObjectState("plate_1", np.array([0.1, 0.2, 0.9]),
                                                    np.array([1.0, 0, 0, 0]),
                                                    np.array([0.2, 0.2, 0.02]), shape="mesh")},
                       {"left": TcpState(np.zeros(3), np.array([0.0, 1, 0, 0]))},
                       {"cam_high": CameraPose(np.array([1.0, 0, 1.5]), np.array([0.5] * 4))})
    back = world_from_dict(json.loads(json.dumps(world_to_dict(world))))
    assert back.stamp == 1.5 and back.objects["plate_1"].shape == "mesh"
    np.testing.assert_allclose(back.objects["plate_1"].size, [0.2, 0.2, 0.02])
    np.testing.assert_allclose(back.cameras["cam_high"].quat, [0.5] * 4)
    with pytest.raises(ValueError, match="3 finite numbers"):
        world_from_dict({**world_to_dict(world), "objects": {"x": {
            "pos": [0, float("nan"), 0], "quat": [1, 0, 0, 0], "size": [0, 0, 0],
            "rgba": [0, 0, 0, 1], "shape": "box"}}})


def test_a_state_change_is_asked_what_to_do_not_where_to_put():
    """libero_goal 7, "turn on the stove": the decision is "turn it on", the semantics'
    distractors change the action or the object."""
    entry = CATALOG["libero_goal"][7]
    cue = vifo.build_cue(entry, "F7", "outline")
    objects = {n: ObjectState(n, np.array([0.1 * i, 0.0, 0.9]), np.array([1.0, 0, 0, 0]),
                              np.full(3, 0.05), shape="mesh")
               for i, n in enumerate(["flat_stove_1", "akita_black_bowl_1", "plate_1"])}
    world = WorldState(0.0, objects, {})
    from vla_bridge.embodiment.cameras import camera_model
    camera = camera_model("cam_high", None, 256, 256, None,
                          pose=CameraPose(np.array([0.1, -1.0, 1.5]),
                                          np.array([0.924, 0.383, 0.0, 0.0])))
    looks = {"flat_stove_1": "stove", "akita_black_bowl_1": "black bowl", "plate_1": "plate"}
    qs = {q["stage"]: q for q in vqa_questions(cue, world, camera, 3, looks=looks)}
    right = {stage: q["options"][q["answer"]] for stage, q in qs.items()}
    assert right["semantics"] == "turn on the stove"
    assert right["grounding"] == "the stove"
    assert right["decision"] == "turn it on"
    assert set(qs["decision"]["options"]) == {"turn it on", "open it", HOLD, "close it"}
    semantics = qs["semantics"]["options"]
    assert {"open the stove", "close the stove"} <= set(semantics)
    assert any(o.startswith("pick up the ") for o in semantics)  # another object's task


def test_the_plan_lists_what_libero_vifo_does_not_build():
    cues = parse_cues("F3,F4", "all")
    plan, skipped = plan_libero_instances(CATALOG, "libero_goal", "0,7", cues)
    planned = {(i.task.id, i.family, i.variant) for i in plan}
    assert ("libero_goal/0", "F3", "uniform") not in planned  # opening a drawer moves no object
    assert ("libero_goal/0", "F4", "schematic") in planned
    reasons = {(s["instance"].task.id, s["instance"].variant): s["reason"] for s in skipped}
    assert reasons[("libero_goal/7", "goal_image")] == vifo.NOT_ON_LIBERO[("F4", "goal_image")]
    assert all(i.seed == 0 for i in plan)  # the seed is the initial state


@pytest.mark.graph
@needs_libero_venv
def test_part_i_a_on_libero_frames_oracle_and_resume(tmp_path):
    """Real LIBERO frames (rendered by .venv-libero): every planned instance's cue draws
    something; the privileged oracle answers all four questions right (the wiring, not a
    measurement); the skipped variants are listed; a rerun asks nothing again."""
    frames, out = tmp_path / "frames", tmp_path / "vqa"
    cues = parse_cues("", "all")
    first = run_libero_vqa("oracle", frames, "libero_goal,libero_object", "0", cues,
                           output=out)
    assert sorted(p.name for p in frames.iterdir()) == ["libero_goal__0__i0.npz",
                                                        "libero_object__0__i0.npz"]
    plan, not_built = plan_libero_instances(CATALOG, "libero_goal,libero_object", "0", cues)
    rows = [json.loads(line) for line in (out / "vqa_results.jsonl").read_text().splitlines()]
    drawn = len(plan) - (len(first["skipped"]) - len(not_built))
    assert len(rows) == 4 * drawn and drawn >= 0.9 * len(plan)
    assert all(r["correct"] for r in rows) and first["overall"]["fca"] == 100.0
    assert {r["scene"] for r in rows} == {"libero_goal", "libero_object"}
    object_rows = [r for r in rows if r["task"] == "libero_object/0" and r["stage"] == "grounding"]
    assert object_rows[0]["options"][object_rows[0]["correct_index"]] == "the alphabet soup"
    again = run_libero_vqa("oracle", frames, "libero_goal,libero_object", "0", cues,
                           output=out)
    assert again["new"] == 0 and again["resumed"] == len(plan)
    assert len((out / "vqa_results.jsonl").read_text().splitlines()) == len(rows)


@pytest.mark.parametrize("args, message", [
    (["--suites", "libero_99"], "unknown LIBERO suite(s) ['libero_99']"),
    (["--tasks", "0-12"], "tasks '0-12' out of range 0..9"),
    (["--camera", "cam_right_wrist"], "unknown LIBERO camera 'cam_right_wrist'"),
    (["--placement", "scene"], "LIBERO's scenes take no cue cards"),
])
def test_cli_refuses_bad_libero_arguments_before_rendering(tmp_path, capsys, args, message):
    from vla_bridge.cli import main as cli_main
    frames = tmp_path / "frames"
    rc = cli_main(["vqa", "--benchmark", "libero", "--backend", "random", "--frames",
                   str(frames), "--output", str(tmp_path / "out"), *args])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not frames.exists()  # nothing rendered


def test_table2_puts_part_i_a_above_the_closed_loop_parts():
    from vla_bridge.evaluation.cues.metrics import format_table2
    cues = {"by_family": {"F1": {"avf": 50.0, "uvf": 0.0}}, "average": {"avf": 50.0},
            "overall": {"avf": 50.0, "uvf": 0.0}}
    vqa = {"by_family": {"F1": {"vqa": 25.0}, "F7": {"vqa": 30.0, "fca": 1.0}},
           "average": {"vqa": 27.5}, "overall": {"vqa": 27.2, "fca": 0.5}}
    lines = format_table2(cues, vqa).splitlines()
    assert lines[0].split() == ["Table", "2", "F1", "Text", "F7", "Light.", "Avg.", "All"]
    labels = [line[:11].strip() for line in lines[2:]]
    assert labels == ["VQA Det.", "VQA Sem.", "VQA Gnd.", "VQA Dec.", "VQA FCA", "VQA",
                      "Orig. SR", "AVF", "VTR", "LFR", "UVF", "UVI"]
    assert lines[2 + labels.index("VQA")].split()[1:] == ["25.0", "30.0", "27.5", "27.2"]
    assert lines[2 + labels.index("AVF")].split()[1:] == ["50.0", "-", "50.0", "50.0"]
    assert [line[:11].strip() for line in format_table2(cues, None).splitlines()[2:]] == \
        ["Orig. SR", "AVF", "VTR", "LFR", "UVF", "UVI"]
