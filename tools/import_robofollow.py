#!/usr/bin/env python3
"""Import the RoboFollow benchmark spec into the project's own data files.

Reads the extracted spec folder (default: ``../shared/robofollow`` next to the repo root) and
writes, in our own compact format:

* ``config/robofollow/scenes.json``: objects, fixtures (bowls, labels), spawn and jitter rules and
  every layout variant of the four scenes, plus frame / operation box / protocol facts.
* ``config/robofollow/tasks.json``: the 554 evaluation tasks and the 75 training tasks with their
  229 instruction variants.

Each file explains itself in a top-level ``format`` field. Output is deterministic (sorted keys,
fixed indentation, no timestamps), so re-running on the same input gives identical bytes.

Usage: python tools/import_robofollow.py [SOURCE_DIR] [--out OUT_DIR]
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO_ROOT.parent / "shared" / "robofollow"
DEFAULT_OUT = REPO_ROOT / "config" / "robofollow"

SCENES = ("scene1", "scene2", "scene3", "scene4")
LEVELS = ("L0", "L1", "L2", "L3")
EXPECTED_COUNTS = {
    "scene1": {"L0": 16, "L1": 8, "L2": 16, "L3": 76},
    "scene2": {"L0": 16, "L1": 24, "L2": 68, "L3": 24},
    "scene3": {"L0": 16, "L1": 40, "L2": 64, "L3": 96},
    "scene4": {"L0": 27, "L1": 14, "L2": 25, "L3": 24},
}
# (training tasks, instruction sentences) per scene
EXPECTED_TRAINING = {"scene1": (16, 48), "scene2": (16, 52), "scene3": (16, 48),
                     "scene4": (27, 81)}

# Scene 1 relation actions -> desired unit vector (source - anchor) in world xy.
RELATION_VECTORS = {
    "place_behind": [0.0, 1.0],
    "place_in_front": [0.0, -1.0],
    "place_left_of": [-1.0, 0.0],
    "place_beside": [1.0, 0.0],
}

# Their target-record keys -> ours. Keys not listed are dropped because they are restated at the
# top level of the task (source, anchor, relation) or equal the task's own arm/action.
TARGET_KEYS = {
    "target_object": "target_object",
    "target_label": "target_label",
    "route_mode": "route_mode",
    "route_reference_object": "route_reference",
    "scored_correct_route_object": "route_correct",
    "scored_wrong_route_object": "route_wrong",
    "place_mode": "place_mode",
    "target_yaw_rad_mod_pi": "target_yaw",
    "instruction_wording": "wording",
    "is_conditional": "conditional",
    "place_slot": "place_slot",
    "second_source_object": "second_source",
    "second_arm": "second_arm",
    "expected_branch_derived": "expected_branch_derived",
    "branch_reason_derived": "branch_reason_derived",
}
TOP_LEVEL_TARGET_KEYS = {"source_object", "anchor_object", "relation",
                         "desired_unit_vector_source_minus_anchor_xy", "action", "arm"}
WORDING_KEYS = {"route_mode_in_text": "route_mode", "route_object_in_text": "route_object",
                "place_mode_in_text": "place_mode"}

SHAPE_NAMES = {"cube": "box", "sphere": "sphere", "cylinder": "cylinder"}

SCENES_FORMAT = {
    "version": 1,
    "units": "metres, radians, kilograms; rgb in 0..1; quaternions (w, x, y, z)",
    "objects": "movable primitives a task can name, listed in spawn order. shape is box | "
               "sphere | cylinder. Size: sphere -> radius; cylinder -> radius and half_height "
               "(axis vertical); box -> half_extents [x, y, z]. All are HALF sizes, as physics "
               "engines take them; full extents are twice these. yaw (about +z) is 0 unless "
               "given.",
    "fixtures": "bowls and labels: scored or drawn, never a task source. kind is bowl | label. "
                "Bowls are meshes (asset, model_id, scale) whose metric size is not known; labels "
                "are static thin boxes.",
    "spawn_z": "object centre z = table_z + half height along z + spawn_clearance[shape]; "
               "label centre z = table_z + half height + spawn_clearance['label']; a bowl's pose "
               "origin z = table_z + center_z_above_table. "
               "Scene 4 stacked and in-bowl objects follow scenes.scene4.spawn.",
    "jitter": "rules keyed by body name; a rule follows its body when a layout moves it. "
              "Per axis: offset = sign * U(range[0], range[1]), drawn with "
              "numpy.random.RandomState(episode_seed).uniform, x then y, body by body in the "
              "layout's placement order. Bodies without a rule are not jittered. sign -1 "
              "reproduces the benchmark's 'down' rows: a magnitude U(0, r) is subtracted, which "
              "is not the same draw as U(-r, 0).",
    "layouts": "placements list every spawned body in spawn order with its nominal xy. Scene 4 "
               "adds slot, and support (stacked on that body) or container (dropped into that "
               "bowl); such bodies take the support's / container's xy instead of drawing jitter. "
               "levels: evaluation levels whose tasks use the layout.",
}

TASKS_FORMAT = {
    "version": 1,
    "eval_tasks": "per scene, in registry order: id (exact registry name, also the seed hash "
                  "input), scene, level, layout (key into scenes.json), instruction (the one "
                  "sentence given to the policy), arm, action, source (object the scorer treats "
                  "as correct), anchor and relation (Scene 1 relation tasks: anchor object and "
                  "the desired unit vector source - anchor in world xy), training_task "
                  "(training task this one derives from, absent for new compositions; for "
                  "Scene 1/4 L1 it is the training task whose sentence is reused verbatim in a "
                  "changed layout, so its source can differ), base_task and variant (registry "
                  "base task type and instruction variant tag), target (scene-specific record, "
                  "see target_fields). Absent keys mean null.",
    "target_fields": {
        "target_object": "scene 2: object or bowl to stack on / push towards / place in; scene 4: "
                         "stack target",
        "target_label": "scene 3: label to place the slab on",
        "route_mode": "scene 3: via | around, of the base task (what the scorer uses)",
        "route_reference": "scene 3: the route object named by the base task",
        "route_correct": "scene 3: slab the source must pass over",
        "route_wrong": "scene 3: slab the source must not pass over",
        "place_mode": "scene 3: orientation mode of the base task",
        "target_yaw": "scene 3: target yaw (rad), compared modulo pi",
        "wording": "scene 3 L2/L3: route_mode / route_object / place_mode as worded in the "
                   "rewritten sentence (same path and yaw as the base task)",
        "conditional": "scene 4: instruction is an if/else",
        "place_slot": "scene 4 unstack: slot number, see scenes.json scene4.slots",
        "second_source": "scene 4 sequence: second object to pick",
        "second_arm": "scene 4 sequence: arm for the second pick",
        "expected_branch_derived": "scene 4 conditionals: then | else; our reading, not "
                                   "benchmark data",
        "branch_reason_derived": "scene 4 conditionals: why; our reading",
        "reference_check_derived": "scene 2: positional phrases that are ambiguous or name the "
                                   "other object at nominal positions; our reading",
    },
    "training_tasks": "per scene, in registry order: id, layout, eval_task (the L0 task with the "
                      "same definition) and instructions (all paraphrases; the first is the L0 "
                      "sentence).",
    "seeds": "not stored: seed = base_seed + 100 * round + int(md5(id).hexdigest()[:8], 16) % "
             "1000, rounds 1..10, base_seed 42 (vla_bridge.benchmarks.robofollow.tasks.episode_seed).",
}


# ----------------------------------------------------------------------------- output


def dump_json(value, depth: int = 0) -> str:
    """JSON with sorted keys and 2-space indent; short flat lists/dicts stay on one line."""
    if _is_short_flat(value):
        return json.dumps(value, sort_keys=True)
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        body = ",\n".join(f"{pad}{json.dumps(k)}: {dump_json(value[k], depth + 1)}"
                          for k in sorted(value))
        return "{\n" + body + "\n" + "  " * depth + "}"
    if isinstance(value, list):
        body = ",\n".join(pad + dump_json(v, depth + 1) for v in value)
        return "[\n" + body + "\n" + "  " * depth + "]"
    return json.dumps(value)


def _is_short_flat(value) -> bool:
    """Scalars, empty containers, and short containers of scalars or scalar lists."""
    if not isinstance(value, (dict, list)) or not value:
        return True
    items = value.values() if isinstance(value, dict) else value
    flat = all(not isinstance(v, (dict, list)) or _is_scalar_list(v) for v in items)
    return flat and len(json.dumps(value)) <= 100


def _is_scalar_list(value) -> bool:
    return isinstance(value, list) and all(not isinstance(v, (dict, list)) for v in value)


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dump_json(data) + "\n", encoding="ascii")


# ----------------------------------------------------------------------------- scenes


def axis_rule(low: float, high: float) -> dict:
    """Their [low, high] offset range -> our signed draw (see SCENES_FORMAT['jitter'])."""
    if high == 0.0 and low < 0.0:
        return {"range": [0.0, -low], "sign": -1}
    return {"range": [low, high], "sign": 1}


def size_fields(shape: str, size_m: dict) -> dict:
    if shape == "sphere":
        return {"radius": size_m["radius"]}
    if shape == "cylinder":
        return {"radius": size_m["radius"], "half_height": size_m["half_height"]}
    if shape == "cube":
        h = size_m["half_size"]
        return {"half_extents": [h, h, h]}
    raise ValueError(f"unknown shape {shape!r}")


def primitive(name: str, shape: str, size_m: dict, rgb, mass: float, friction: float) -> dict:
    return {"name": name, "shape": SHAPE_NAMES[shape], "rgb": list(rgb), "mass": mass,
            "friction": friction, **size_fields(shape, size_m)}


def layout_levels(eval_src: dict) -> dict[tuple[str, str], list[str]]:
    used = defaultdict(set)
    for t in eval_src["tasks"]:
        used[(t["scene"], t["layout"]["variant"])].add(t["level"])
    return {key: sorted(levels) for key, levels in used.items()}


def check_levels(scene: str, key: str, layout_src: dict, levels: dict) -> list[str]:
    found = levels.get((scene, key), [])
    if found != sorted(layout_src["used_by_levels"]):
        raise ValueError(f"{scene}/{key}: tasks use levels {found}, "
                         f"scenes.json says {layout_src['used_by_levels']}")
    return found


def expect_spawn_rules(found: dict, expected: dict, scene: str) -> None:
    # The clearances below restate these strings; fail loudly if the source ever changes.
    if found != expected:
        raise ValueError(f"{scene}: spawn_height_rule changed: {found}")


def build_scene1(src: dict, levels: dict) -> dict:
    physics = src["physics"]
    objects = [primitive(o["name"], o["shape"], o["size_m"], o["rgb"],
                         physics[o["shape"]]["mass_kg"], physics[o["shape"]]["friction"])
               for o in src["objects_default"]]
    expect_spawn_rules(src["spawn_height_rule"], {
        "sphere": "table_z + radius",
        "cylinder": "table_z + half_height (standing, axis vertical)",
        "cube": "table_z + half_size + 0.001"}, "scene1")
    order = [o["name"] for o in src["objects_default"]]
    layouts = {}
    for key, lay in src["layouts"].items():
        moved = [f"{n} {tuple(m['from_xy'])} -> {tuple(m['to_xy'])}"
                 for n, m in lay["moved_vs_default"].items()]
        layouts[key] = {
            "paper_name": lay["paper_name"],
            "levels": check_levels("scene1", key, lay, levels),
            "note": "moved: " + "; ".join(moved) if moved else "training layout",
            "placements": [{"name": n, "xy": lay["objects_xy"][n]} for n in order],
        }
    return {
        "objects": objects,
        "fixtures": [],
        "spawn_clearance": {"box": 0.001, "sphere": 0.0, "cylinder": 0.0},
        "jitter": {n: {"x": axis_rule(*r["x"]), "y": axis_rule(*r["y"])}
                   for n, r in src["jitter"]["rules_by_object"].items()},
        "jitter_note": "back row (y = -0.04) shifts only towards the robot, front row (y = -0.18) "
                       "only away from it, so rows never overlap. The upstream fallback rule "
                       "(+-0.01) is unused: every object has its own rule.",
        "layouts": layouts,
        "layout_note": src["layout_notes"],
    }


def bowl_fixture(b: dict, table_z: float) -> dict:
    return {
        "name": b["name"], "kind": "bowl", "shape": "mesh",
        "mesh": {"asset": b["asset"], "model_id": b["asset_model_id"],
                 "scale": b["scale_multiplier"], "collision": b["collision"]},
        "quat_wxyz": b["quat_wxyz"], "static": b["static"],
        "center_z_above_table": round(b["position_xyz"][2] - table_z, 9),
    }


def build_scene2(src: dict, levels: dict, table_z: float) -> dict:
    physics = src["physics"]
    objects = [primitive(o["name"], o["shape"], o["size_m"], o["rgb"],
                         physics[o["shape"]]["mass_kg"], physics[o["shape"]]["friction"])
               for o in src["objects_default"]]
    expect_spawn_rules(src["spawn_height_rule"], {
        "sphere": "table_z + radius", "cylinder": "table_z + half_height",
        "cube": "table_z + half_size + 0.001"}, "scene2")
    order = [o["name"] for o in src["objects_default"]]
    bowls = [b["name"] for b in src["bowls_default"]]
    layouts = {}
    for key, lay in src["layouts"].items():
        swaps = lay["swaps_vs_default"]["objects"] + lay["swaps_vs_default"]["bowls"]
        layouts[key] = {
            "paper_name": lay["paper_name"],
            "levels": check_levels("scene2", key, lay, levels),
            "note": "; ".join(f"swap {a} <-> {b}" for a, b in swaps) or "training layout",
            "placements": [{"name": n, "xy": lay["objects_xy"][n]} for n in order]
            + [{"name": b, "xy": lay["bowls_xyz"][b][:2]} for b in bowls],
        }
    return {
        "objects": objects,
        "fixtures": [bowl_fixture(b, table_z) for b in src["bowls_default"]],
        "fixture_note": src["bowl_notes"],
        "spawn_clearance": {"box": 0.001, "sphere": 0.0, "cylinder": 0.0},
        "settle_steps_after_spawn": src["settle_steps_after_spawn"],
        "jitter": {n: {"x": axis_rule(*r["x"]), "y": axis_rule(*r["y"])}
                   for n, r in src["jitter"]["rules_by_object"].items()},
        "jitter_note": "red objects (back row) shift only towards the robot, blue ones only away "
                       "from it; bowls are not jittered.",
        "layouts": layouts,
    }


def build_scene3(src: dict, levels: dict) -> dict:
    objects = [{"name": o["name"], "shape": "box", "half_extents": o["half_extents_xyz_m"],
                "rgb": o["rgb"], "mass": o["mass_kg"], "friction": o["friction"],
                "yaw": o["yaw_rad"]} for o in src["objects_default"]]
    labels = [{"name": lb["name"], "kind": "label", "shape": "box",
               "half_extents": lb["half_extents_xyz_m"], "rgb": lb["rgb"], "static": True}
              for lb in src["labels_default"]]
    expect_spawn_rules(src["spawn_height_rule"], {
        "slab": "table_z + 0.013 + 0.001", "label": "table_z + 0.001"}, "scene3")
    slab_order = [o["name"] for o in objects]
    label_order = [lb["name"] for lb in labels]
    both = src["jitter"]["all_objects_and_labels"]
    layouts = {}
    for key, lay in src["layouts"].items():
        layouts[key] = {
            "paper_name": lay["paper_name"],
            "levels": check_levels("scene3", key, lay, levels),
            "note": "; ".join(f"swap {a} <-> {b}" for a, b in lay["swaps_vs_default"])
            or "training layout",
            "placements": [{"name": n, "xy": lay["slabs_xy"][n]} for n in slab_order]
            + [{"name": n, "xy": lay["labels_xy"][n]} for n in label_order],
        }
    return {
        "objects": objects,
        "fixtures": labels,
        "spawn_clearance": {"box": 0.001, "label": 0.0},
        "jitter": {n: {"x": axis_rule(*both["x"]), "y": axis_rule(*both["y"])}
                   for n in slab_order + label_order},
        "jitter_note": "slabs first, then labels; every body +-0.01 in x and y.",
        "pair_object": src["pair_object"],
        "orientation_modes": {k: {"target_yaw": v["target_yaw_rad"], "same_as": v["equivalent"]}
                              for k, v in src["orientation_modes"].items() if k != "note"},
        "orientation_note": src["orientation_modes"]["note"],
        "layouts": layouts,
    }


def scene4_objects(src: dict) -> list[dict]:
    """Union of the objects of every layout; a name must mean the same object everywhere."""
    catalog: dict[str, dict] = {}
    for lay in src["layouts"].values():
        for o in lay["objects"]:
            spec = primitive(o["name"], o["shape"], o["size_m"], o["rgb"], o["mass_kg"],
                             o["friction"])
            if catalog.setdefault(o["name"], spec) != spec:
                raise ValueError(f"scene4: {o['name']} differs between layouts")
    return list(catalog.values())


def scene4_placement(o: dict, slots: dict) -> dict:
    if o["nominal_xy"] != slots[str(o["slot"])]:
        raise ValueError(f"scene4: {o['name']} nominal xy is not its slot's")
    place = {"name": o["name"], "slot": o["slot"], "xy": o["nominal_xy"]}
    if o.get("on_top_of"):
        place["support"] = o["on_top_of"]
    if o.get("in_container"):
        place["container"] = o["in_container"]
    return place


def build_scene4(src: dict, levels: dict) -> dict:
    bowl_src = src["bowl"]
    slots = src["slot_xy"]
    bowl = {
        "name": bowl_src["name"], "kind": "bowl", "shape": "mesh",
        "mesh": {"asset": bowl_src["asset"], "model_id": bowl_src["asset_model_id"],
                 "scale": bowl_src["scale_multiplier"]},
        "quat_wxyz": bowl_src["quat_wxyz"], "static": bowl_src["static"],
        "center_z_above_table": 0.02,
    }
    if bowl_src["center_z"] != "table_z + 0.02":
        raise ValueError("scene4: bowl centre height changed")
    bowl_slot = bowl_src["slot"]
    bowl_place = {"name": bowl["name"], "slot": bowl_slot, "xy": slots[str(bowl_slot)]}
    layouts = {}
    for key, lay in src["layouts"].items():
        layouts[key] = {
            "paper_name": lay["paper_name"],
            "levels": check_levels("scene4", key, lay, levels),
            "note": lay["note"],
            "placements": [bowl_place] + [scene4_placement(o, slots) for o in lay["objects"]],
        }
    objects = scene4_objects(src)
    on_table = sorted({p["name"] for lay in layouts.values() for p in lay["placements"]
                       if "support" not in p and "container" not in p})
    per_slot = src["jitter"]["per_slot_sample"]
    return {
        "objects": objects,
        "fixtures": [bowl],
        "fixture_note": bowl_src["note"],
        "slots": slots,
        "slot_note": src["slot_note"],
        "colors": src["colors_rgb"],
        "aliases": src["layout_aliases"],
        "spawn_clearance": {"box": 0.001, "sphere": 0.001, "cylinder": 0.001},
        "spawn": {
            "stack_gap": 0.002,
            "bowl_drop_margin": 0.015,
            "bowl_rim_z_min_above_table": 0.02,
            "min_exposed_above_rim": 0.012,
            "settle_steps": 180,
            "post_reposition_settle_steps": 40,
            "procedure": src["spawn_procedure"],
        },
        "jitter": {n: {"x": axis_rule(*per_slot["x"]), "y": axis_rule(*per_slot["y"])}
                   for n in on_table},
        "jitter_note": "one draw per body standing on the table (bowl first, then table objects "
                       "in listed order); stacked objects take their support's xy, in-bowl "
                       "objects the bowl's xy.",
        "layouts": layouts,
    }


def build_scenes(scenes_src: dict, eval_src: dict) -> dict:
    frame = scenes_src["frame"]
    table_z = frame["table_top_z_m"]
    levels = layout_levels(eval_src)
    src = scenes_src["scenes"]
    proto = scenes_src["protocol"]
    box = scenes_src["operation_area_for_finish_check"]
    return {
        "format": SCENES_FORMAT,
        "source": {**scenes_src["source"], "imported_by": "tools/import_robofollow.py"},
        "frame": {
            "table_top_z": table_z,
            "table_z_bias": 0.0,
            "table_z_bias_note": frame["table_z_bias"],
            "axes": {"x": "robot's right (the left arm works at x < 0)",
                     "y": "away from the robot ('behind'); -y is towards it ('in front')",
                     "z": "up"},
            "origin": frame["origin"],
        },
        "operation_box": {"x": box["x"], "y": box["y"], "z": box["z"], "bounds": "inclusive",
                          "use": "finish stage: the other arm's end effector must stay outside "
                                 "this box at every frame"},
        "physics": {"restitution": 0.0,
                    "friction_note": "friction is used as both the static and the dynamic "
                                     "coefficient of every primitive"},
        "protocol": {
            "rounds": proto["rounds_per_task"],
            "base_seed": proto["base_seed"],
            "seed_formula": "seed = base_seed + 100 * round + "
                            "int(md5(task_id).hexdigest()[:8], 16) % 1000, round = 1..rounds",
            "rng_seeding": proto["env_rng_seeding"],
            "policy_calls_per_episode": proto["max_policy_calls_per_episode"],
            "actions_per_call": proto["max_actions_per_call"],
            "max_actions_per_episode": proto["max_actions_per_episode"],
            "recorded_frames": proto["recorded_frames"],
            "early_termination": False,
            "physics_rate_hz": proto["physics_rate_hz"],
            "total_trials": proto["total_trials_full_protocol"],
            "cameras": {"names": scenes_src["cameras"]["names"],
                        "resolution_wh": scenes_src["cameras"]["resolution_wh"],
                        "note": scenes_src["cameras"]["note"]},
            "end_effector": {"tcp": scenes_src["robot"]["end_effector_points"]["tcp"],
                             "scene1_fingertip_offset": 0.04,
                             "scene1_note": "Scene 1 scores a fingertip proxy: tcp position + "
                                            "R_tcp @ (0.04, 0, 0), for both arms"},
        },
        "paper_layout_note": scenes_src["paper_layout_tables_note"],
        "scenes": {
            "scene1": build_scene1(src["scene1"], levels),
            "scene2": build_scene2(src["scene2"], levels, table_z),
            "scene3": build_scene3(src["scene3"], levels),
            "scene4": build_scene4(src["scene4"], levels),
        },
    }


# ----------------------------------------------------------------------------- tasks


def convert_target(task: dict) -> dict:
    src = task["target"]
    unknown = set(src) - set(TARGET_KEYS) - TOP_LEVEL_TARGET_KEYS
    if unknown:
        raise ValueError(f"{task['id']}: unknown target fields {sorted(unknown)}")
    if src["action"] != task["action"] or src.get("arm", task["arm"]) != task["arm"]:
        raise ValueError(f"{task['id']}: target action/arm differ from the task's")
    target = {ours: src[theirs] for theirs, ours in TARGET_KEYS.items()
              if src.get(theirs) is not None}
    if "wording" in target:
        target["wording"] = {WORDING_KEYS[k]: v for k, v in target["wording"].items()}
    if task.get("reference_check_derived"):
        target["reference_check_derived"] = task["reference_check_derived"]
    return target


def convert_task(task: dict) -> dict:
    src = task["target"]
    relation = src.get("desired_unit_vector_source_minus_anchor_xy")
    if relation is not None and relation != RELATION_VECTORS[task["action"]]:
        raise ValueError(f"{task['id']}: relation vector does not match {task['action']}")
    record = {
        "id": task["id"], "scene": task["scene"], "level": task["level"],
        "layout": task["layout"]["variant"], "instruction": task["instruction"],
        "arm": task["arm"], "action": task["action"], "source": src["source_object"],
        "anchor": src.get("anchor_object"), "relation": relation,
        "training_task": task["training_task"], "base_task": task["base_task_type"],
        "variant": task["instruction_variant"], "target": convert_target(task),
    }
    return {k: v for k, v in record.items() if v not in (None, {})}


def build_training(scene: str, instructions: dict, eval_tasks: list[dict]) -> list[dict]:
    l0_by_base = {t["base_task_type"]: t for t in eval_tasks
                  if t["scene"] == scene and t["level"] == "L0"}
    if set(l0_by_base) != set(instructions):
        raise ValueError(f"{scene}: training tasks and L0 tasks differ")
    training = []
    for key, sentences in instructions.items():
        l0 = l0_by_base[key]
        if l0["instruction"] != sentences[0]:
            raise ValueError(f"{l0['id']}: L0 sentence is not the first training paraphrase")
        training.append({"id": key, "layout": l0["layout"]["variant"], "eval_task": l0["id"],
                         "instructions": sentences})
    return training


def check_counts(eval_src: dict, instructions: dict) -> None:
    found = Counter((t["scene"], t["level"]) for t in eval_src["tasks"])
    for scene, per_level in EXPECTED_COUNTS.items():
        for level, n in per_level.items():
            if found[(scene, level)] != n:
                raise ValueError(f"{scene}/{level}: {found[(scene, level)]} tasks, expected {n}")
    for scene, (n_tasks, n_sentences) in EXPECTED_TRAINING.items():
        got = instructions[scene]
        if (len(got), sum(len(v) for v in got.values())) != (n_tasks, n_sentences):
            raise ValueError(f"{scene}: training task / sentence counts changed")
    ids = [t["id"] for t in eval_src["tasks"]]
    if len(set(ids)) != len(ids):
        raise ValueError("evaluation task ids are not unique")


def build_tasks(eval_src: dict, instructions: dict, protocol: dict) -> dict:
    check_counts(eval_src, instructions)
    by_scene = {s: [convert_task(t) for t in eval_src["tasks"] if t["scene"] == s]
                for s in SCENES}
    training = {s: build_training(s, instructions[s], eval_src["tasks"]) for s in SCENES}
    counts = {
        "by_scene": EXPECTED_COUNTS,
        "by_level": {lv: sum(EXPECTED_COUNTS[s][lv] for s in SCENES) for lv in LEVELS},
        "total": len(eval_src["tasks"]),
        "training_tasks": sum(len(v) for v in training.values()),
        "training_instructions": sum(len(t["instructions"]) for v in training.values()
                                     for t in v),
    }
    return {
        "format": TASKS_FORMAT,
        "source": {**eval_src["source"], "imported_by": "tools/import_robofollow.py"},
        "protocol": {"rounds": protocol["rounds_per_task"], "base_seed": protocol["base_seed"]},
        "counts": counts,
        "eval_tasks": by_scene,
        "training_tasks": training,
    }


# ----------------------------------------------------------------------------- main


def load_source(source: Path) -> tuple[dict, dict, dict]:
    def read(name: str) -> dict:
        return json.loads((source / name).read_text(encoding="utf-8"))

    instructions = {s: read(f"instructions/scene{s[-1]}.json") for s in SCENES}
    return read("scenes.json"), read("eval_tasks.json"), instructions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?", type=Path, default=DEFAULT_SOURCE,
                        help=f"spec folder (default: {DEFAULT_SOURCE})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if not (args.source / "eval_tasks.json").is_file():
        parser.error(f"no eval_tasks.json under {args.source}")

    scenes_src, eval_src, instructions = load_source(args.source)
    write_json(args.out / "scenes.json", build_scenes(scenes_src, eval_src))
    tasks = build_tasks(eval_src, instructions, scenes_src["protocol"])
    write_json(args.out / "tasks.json", tasks)
    print(f"wrote {args.out / 'scenes.json'} and {args.out / 'tasks.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
