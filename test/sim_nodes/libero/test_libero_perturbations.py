"""The scene perturbation axes in LIBERO's own environments (`sim_nodes/libero/perturb.py`).

At openpi's seed 7, on libero_spatial task 0 initial state 0 (LIBERO's plain tabletop scene)
and, for the texture, libero_object task 0 (the floor scene, whose surfaces are the floor and
the walls), each axis at its top level against the unperturbed reset: what it changes changes,
nothing else does; a reset without a perturbation gives the unperturbed episode back, bit for
bit; a rerun with the same seed and axis is identical. One subprocess runs it all (making a
LIBERO environment takes seconds). Runs with .venv-libero's interpreter; skips without it.
"""
from __future__ import annotations

import numpy as np
import pytest

from support.libero_venv import needs_libero_venv, run_in_libero_venv

pytestmark = [pytest.mark.graph, needs_libero_venv]

SCRIPT = """
import hashlib, json
import numpy as np
from vla_bridge.benchmarks.perturbations import AXES, EpisodePerturbation, Perturbation
from vla_bridge.sim_nodes.libero import perturb
from vla_bridge.sim_nodes.libero.backend import LiberoBackend

SEED = 7
b = LiberoBackend()

def snap():
    sim, w = b.env.sim, b.world_state()
    images = {c: b.render(c) for c in b.cameras}
    cam = b.camera_model("cam_high").world_from_camera
    return {"digest": {c: hashlib.sha1(im.tobytes()).hexdigest() for c, im in images.items()},
            "images": images,
            "qpos": sim.data.qpos.copy(), "qvel": sim.data.qvel.copy(),
            "state": b.joint_positions(),
            "objects": {n: np.concatenate([o.pos, o.quat]) for n, o in w.objects.items()},
            "cam": cam.copy()}

def diff(a, b_):
    return {"image": {c: float(np.abs(a["images"][c].astype(int) - b_["images"][c]).mean())
                      for c in a["images"]},
            "qpos_same": bool(np.array_equal(a["qpos"], b_["qpos"])
                              and np.array_equal(a["qvel"], b_["qvel"])),
            "state_same": bool(np.array_equal(a["state"], b_["state"])),
            "objects_max": max(float(np.abs(a["objects"][n] - b_["objects"][n]).max())
                               for n in a["objects"]),
            "same": a["digest"] == b_["digest"] and bool(np.array_equal(a["qpos"], b_["qpos"]))}

def top(axis):
    return EpisodePerturbation(Perturbation(axis, AXES[axis][0]), SEED)

out = {"axes": sorted(b.perturbation_axes)}
b.reset("libero_spatial", "0:0", SEED)
base = snap()
runs = {}
for axis in ("camera", "lighting", "texture", "initial_joints", "object_jitter"):
    b.reset("libero_spatial", "0:0", SEED, perturbation=top(axis))
    runs[axis] = snap()
    out[axis] = diff(runs[axis], base)

# camera: the model's agentview moved by the drawn shift and turn, as camera_model reports it
shift, turn = top("camera").camera_offset()
w, x, y, z = turn
turn_mat = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])
cam = runs["camera"]["cam"]
out["camera"]["pos_err"] = float(np.abs(cam[:3, 3] - base["cam"][:3, 3] - shift).max())
out["camera"]["rot_err"] = float(np.abs(cam[:3, :3] - turn_mat @ base["cam"][:3, :3]).max())

# initial_joints: the arm starts at the initial state's joints + the offsets, and is held there
state0 = b.init_state("libero_spatial", 0, 0)
arm = perturb.arm_qpos_indexes(b.env.env)
start = state0[1:][arm] + top("initial_joints").joint_offsets(7)
out["initial_joints"]["held_err"] = float(np.abs(runs["initial_joints"]["qpos"][arm] - start).max())
out["initial_joints"]["vs_offsets_err"] = float(np.abs(
    runs["initial_joints"]["qpos"][arm] - base["qpos"][arm]
    - top("initial_joints").joint_offsets(7)).max())
out["initial_joints"]["arm_moved"] = float(np.abs(
    runs["initial_joints"]["qpos"][arm] - base["qpos"][arm]).max())
out["initial_joints"]["arm_drift_unperturbed"] = float(np.abs(base["qpos"][arm] - state0[1:][arm]).max())

# object_jitter: each free object moved in x/y by its offset (or the part of it _jitter kept)
free = perturb.free_objects(b.env.env)
offsets = top("object_jitter").object_offsets(list(free))
shifted = perturb.perturb_state(b.env.env, state0, top("object_jitter"))
jit = {}
for name, adr in free.items():
    applied = shifted[1 + adr:3 + adr] - state0[1 + adr:3 + adr]
    moved = runs["object_jitter"]["objects"][name][:2] - base["objects"][name][:2]
    jit[name] = {"err": float(np.linalg.norm(moved - applied)),
                 "scale": float(np.linalg.norm(applied) / np.linalg.norm(offsets[name])),
                 "along": float(abs(applied[0] * offsets[name][1] - applied[1] * offsets[name][0]))}
out["object_jitter"]["objects"] = jit
out["object_jitter"]["arm_same"] = bool(np.array_equal(runs["object_jitter"]["qpos"][arm],
                                                       base["qpos"][arm]))
fixtures = list(b.env.env.fixtures_dict)
out["object_jitter"]["fixtures_max"] = max(
    float(np.abs(runs["object_jitter"]["objects"][n] - base["objects"][n]).max()) for n in fixtures)

# back without a perturbation; reruns with the same seed and axis
b.reset("libero_spatial", "0:0", SEED)
out["back"] = diff(snap(), base)
for axis in ("camera", "object_jitter"):
    b.reset("libero_spatial", "0:0", SEED, perturbation=top(axis))
    out[f"rerun_{axis}"] = diff(snap(), runs[axis])

# texture in the floor scene (libero_object: the floor and the walls)
b.reset("libero_object", "0:0", SEED)
floor_base = snap()
b.reset("libero_object", "0:0", SEED, perturbation=top("texture"))
out["floor_texture"] = diff(snap(), floor_base)
out["floor_surfaces"] = {s: perturb.SURFACES[type(b.env.env).__name__][s] for s in ("table", "floor")}
b.reset("libero_object", "0:0", SEED)
out["floor_back"] = diff(snap(), floor_base)
b.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def got():
    return run_in_libero_venv(SCRIPT, timeout=900)


def test_libero_declares_the_five_scene_axes(got):
    assert got["axes"] == ["camera", "initial_joints", "lighting", "object_jitter", "texture"]


def _unchanged_physics(run):
    assert run["qpos_same"] and run["state_same"]  # bit-identical state: rendering only
    assert run["objects_max"] == 0.0


def test_camera_moves_only_the_agentview_image(got):
    run = got["camera"]
    assert run["image"]["cam_high"] > 5.0
    assert run["image"]["cam_left_wrist"] == 0.0
    _unchanged_physics(run)
    assert run["pos_err"] < 1e-9  # camera_model reports the moved camera
    assert run["rot_err"] < 1e-6


def test_lighting_and_texture_change_the_images_only(got):
    for axis in ("lighting", "texture"):
        run = got[axis]
        assert run["image"]["cam_high"] > 5.0 and run["image"]["cam_left_wrist"] > 1.0, axis
        _unchanged_physics(run)
    floor = got["floor_texture"]
    assert got["floor_surfaces"] == {"table": "floorplane", "floor": "walls_mat"}
    assert floor["image"]["cam_high"] > 5.0
    _unchanged_physics(floor)
    assert got["floor_back"]["same"]


def test_initial_joints_start_the_arm_off_home_and_hold_it(got):
    run = got["initial_joints"]
    # the settle steps' idle actions hold the perturbed start (robosuite's OSC would turn the
    # hand back to the reset's orientation without perturb.hold_start: 0.2 rad in 10 steps)
    assert run["held_err"] < 0.005
    assert run["arm_moved"] > 0.1  # top level: up to 0.2 rad per joint
    # vs the unperturbed arm after its settle steps: the offsets, up to that arm's own drift
    assert run["vs_offsets_err"] < run["arm_drift_unperturbed"] + 0.005
    # the objects do not feel the arm (it touches none); the contact solver is one problem for
    # the whole scene, so allow round-off
    assert run["objects_max"] < 1e-6


def test_object_jitter_moves_the_free_objects_by_their_offsets(got):
    run = got["object_jitter"]
    objects = run["objects"]
    assert set(objects) == {"akita_black_bowl_1", "akita_black_bowl_2", "cookies_1",
                            "glazed_rim_porcelain_ramekin_1", "plate_1"}
    for name, o in objects.items():
        assert o["err"] < 0.003, name  # after the settle steps, within 3 mm
        assert o["scale"] in (1.0, 0.75, 0.5, 0.25, 0.0) or np.isclose(
            o["scale"], [1.0, 0.75, 0.5, 0.25, 0.0]).any(), name
        assert o["along"] < 1e-12, name  # along the drawn direction
    assert sum(np.isclose(o["scale"], 1.0) for o in objects.values()) >= 3
    assert run["arm_same"]
    assert run["fixtures_max"] < 1e-6  # the cabinet and the stove stay
    assert run["image"]["cam_high"] > 1.0


def test_unperturbed_again_and_reruns_are_identical(got):
    assert got["back"]["same"] and got["back"]["state_same"] and got["back"]["objects_max"] == 0
    for axis in ("camera", "object_jitter"):
        run = got[f"rerun_{axis}"]
        assert run["same"] and run["objects_max"] == 0.0, axis
