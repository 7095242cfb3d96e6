"""Each perturbation axis in the MuJoCo backend changes what it says and nothing else, at a
fixed seed; a rerun is identical and the next unperturbed reset restores the scene."""
import numpy as np
import pytest

from vla_bridge.benchmarks.perturbations import AXES, CAMERA, EpisodePerturbation, Perturbation
from vla_bridge.embodiment.limits import load_sim_limits
from vla_bridge.embodiment.workcell import home_command

mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")
CAMERAS = ("cam_high", "cam_left_wrist", "cam_right_wrist")
SEED = 42


@pytest.fixture(scope="module")
def backend():
    b = mujoco_backend.MujocoBackend()
    yield b
    b.close()


def snapshot(backend, axis=None, level=None, seed=SEED):
    p = EpisodePerturbation(Perturbation(axis, level), seed) if axis else None
    backend.reset("scene1", "default", seed, perturbation=p)
    world = backend.world_state()
    return {"images": {c: backend.render(c) for c in CAMERAS},
            "objects": {n: np.concatenate([o.pos, o.quat]) for n, o in world.objects.items()},
            "tcp": {a: t.pos.copy() for a, t in world.tcp.items()},
            "joints": backend.joint_positions(), "start": backend.start_command(),
            "camera": {c: backend.camera_model(c).world_from_camera.copy() for c in CAMERAS}}


@pytest.fixture(scope="module")
def base(backend):
    return snapshot(backend)


def changed_images(a, b) -> set:
    return {c for c in CAMERAS if not np.array_equal(a["images"][c], b["images"][c])}


def same_poses(a, b) -> bool:
    return (all(np.array_equal(a["objects"][n], b["objects"][n]) for n in a["objects"])
            and np.array_equal(a["joints"], b["joints"]))


def test_camera_moves_the_high_camera_only(backend, base):
    got = snapshot(backend, "camera", 3)
    assert changed_images(base, got) == {CAMERA}
    assert same_poses(base, got)
    p = EpisodePerturbation(Perturbation("camera", 3), SEED)
    shift, _ = p.camera_offset()
    moved = got["camera"][CAMERA][:3, 3] - base["camera"][CAMERA][:3, 3]
    np.testing.assert_allclose(moved, shift, atol=1e-9)  # camera_model reports the moved camera
    turned = got["camera"][CAMERA][:3, :3] @ base["camera"][CAMERA][:3, :3].T
    angle = np.degrees(np.arccos(np.clip((np.trace(turned) - 1) / 2, -1, 1)))
    assert angle == pytest.approx(7.5, abs=1e-6)
    for cam in CAMERAS[1:]:
        np.testing.assert_array_equal(got["camera"][cam], base["camera"][cam])


@pytest.mark.parametrize("axis", ["lighting", "texture"])
def test_appearance_axes_change_pixels_not_poses(backend, base, axis):
    got = snapshot(backend, axis, AXES[axis][0])
    assert changed_images(base, got) == set(CAMERAS)
    assert same_poses(base, got)
    for cam in CAMERAS:
        np.testing.assert_array_equal(got["camera"][cam], base["camera"][cam])


def test_texture_level_one_changes_the_table_not_the_floor(backend, base):
    """Level 1 retextures the table only: the top rows of cam_high (floor beyond the table)
    stay as they were, the table's middle does not."""
    got = snapshot(backend, "texture", 1)
    top, middle = slice(0, 8), slice(150, 170)
    np.testing.assert_array_equal(got["images"]["cam_high"][top], base["images"]["cam_high"][top])
    assert not np.array_equal(got["images"]["cam_high"][middle], base["images"]["cam_high"][middle])
    two = snapshot(backend, "texture", 2)
    assert not np.array_equal(two["images"]["cam_high"][top], base["images"]["cam_high"][top])


def test_initial_joints_move_the_arms_start_not_the_objects(backend, base):
    got = snapshot(backend, "initial_joints", 4)
    offsets = EpisodePerturbation(Perturbation("initial_joints", 4), SEED).joint_offsets(12)
    expected = home_command()
    expected[0:6] += offsets[:6]
    expected[7:13] += offsets[6:]
    lo, hi = load_sim_limits().joint_limits.T
    for arm in (slice(0, 6), slice(7, 13)):  # joint 5 sits near its limit at home
        expected[arm] = np.clip(expected[arm], lo, hi)
    assert not np.allclose(expected, home_command() + np.insert(np.insert(offsets, 6, 0), 13, 0))
    np.testing.assert_allclose(got["start"], expected)  # the command held until the policy acts
    np.testing.assert_allclose(got["joints"], expected, atol=0.02)  # after settling on it
    assert np.abs(got["joints"] - base["joints"]).max() > 0.1
    for name in base["objects"]:
        np.testing.assert_allclose(got["objects"][name], base["objects"][name], atol=1e-6)


def test_object_jitter_moves_objects_by_their_offsets(backend, base):
    got = snapshot(backend, "object_jitter", 4)
    offsets = EpisodePerturbation(Perturbation("object_jitter", 4), SEED).object_offsets(
        [o.name for o in backend._object_specs])
    assert offsets
    for name, off in offsets.items():
        np.testing.assert_allclose(got["objects"][name][:2] - base["objects"][name][:2], off,
                                   atol=3e-3)
    for name in set(base["objects"]) - set(offsets):  # fixtures stay
        np.testing.assert_allclose(got["objects"][name], base["objects"][name], atol=1e-6)
    np.testing.assert_array_equal(got["joints"], base["joints"])


def test_rerun_is_identical_and_an_unperturbed_reset_restores_the_scene(backend, base):
    for axis in ("camera", "lighting", "texture", "initial_joints", "object_jitter"):
        first, again = snapshot(backend, axis, 2), snapshot(backend, axis, 2)
        assert not changed_images(first, again) and same_poses(first, again), axis
        restored = snapshot(backend)
        assert not changed_images(base, restored) and same_poses(base, restored), axis
        np.testing.assert_array_equal(restored["start"], home_command())
