"""The checks every simulator backend passes, run for MuJoCo and SAPIEN alike: joint tracking
and the gripper, malformed targets, rendering, the camera model against the image, and every
scene layout settling at its jittered xy with stacked objects on their support. What only one
backend has stays in mujoco/test_mujoco_backend.py / sapien/test_sapien_backend.py."""
import numpy as np
import pytest

from vla_bridge import contract
from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
from vla_bridge.embodiment.workcell import home_command

BACKENDS = ("mujoco", "sapien")
LAYOUTS = [(scene, layout) for scene in ("scene1", "scene2", "scene3", "scene4")
           for layout in load_scene(scene).layouts]
TABLE_TOP = 0.74


@pytest.fixture(scope="module", params=BACKENDS)
def backend(request):
    if request.param == "sapien":
        pytest.importorskip("sapien", reason="sapien is not installed: `bash scripts/setup.sh` "
                                             "installs it (requirements-sapien.txt) and Mesa's "
                                             "Vulkan driver")
        b = pytest.importorskip("vla_bridge.sim_nodes.sapien.backend").SapienBackend()
    else:
        b = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend").MujocoBackend()
    yield b
    b.close()


def test_joint_targets_are_tracked_and_the_gripper_closes(backend):
    backend.reset("scene1", "default", 1)
    target = home_command()
    target[0:6] += [0.2, 0.1, -0.1, 0.2, -0.2, 0.3]
    target[6] = 0.0  # close the left gripper
    for _ in range(20):
        backend.apply(target)
        backend.step()
    q = backend.joint_positions()
    assert np.allclose(q[0:6], target[0:6], atol=0.01)
    assert q[6] < 0.05 and q[13] > 0.95  # left closed, right still open
    assert backend.time == pytest.approx(20 * 0.06)


def test_apply_rejects_malformed_targets(backend):
    backend.reset("scene1", "default", 1)
    with pytest.raises(ValueError, match=r"shape \(14,\)"):
        backend.apply(np.zeros(7))
    bad = home_command()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="finite"):
        backend.apply(bad)


def test_cameras_render_the_scene(backend):
    backend.reset("scene1", "default", 539)
    for cam in contract.ALOHA_PIPER.camera_names:
        img = backend.render(cam)
        assert img.shape == (contract.ALOHA_PIPER.image_size[1], contract.ALOHA_PIPER.image_size[0], 3) and img.dtype == np.uint8
        assert img.std() > 10, cam  # not a blank frame


def project(model, point):
    """World point -> pixel (u, v) with the contract's camera convention (looks along -z,
    y up)."""
    cam_from_world = np.linalg.inv(model.world_from_camera)
    p = cam_from_world[:3, :3] @ point + cam_from_world[:3, 3]
    f = model.focal_px
    return model.width / 2 + f * p[0] / -p[2] - 0.5, model.height / 2 - f * p[1] / -p[2] - 0.5


@pytest.mark.parametrize("camera", ["cam_high", "cam_left_wrist"])
def test_camera_model_projects_objects_onto_their_pixels(backend, camera):
    """Every object the camera model puts inside the image has its dominant colour channels
    at that pixel of the rendered image (cue projection relies on it); cam_high sees the
    spheres and the yellow block."""
    backend.reset("scene1", "default", 539)
    img = backend.render(camera)
    model = backend.camera_model(camera)
    seen = set()
    for obj in backend.world_state().objects.values():
        u, v = project(model, obj.pos)
        if not (2 <= u < model.width - 2 and 2 <= v < model.height - 2):
            continue
        pixel = img[int(round(v)), int(round(u))].astype(float) / 255
        expected = obj.rgba[:3]
        assert np.argmax(pixel) in np.flatnonzero(expected == expected.max()), (obj.name, pixel)
        seen.add(obj.name)
    assert len(seen) >= 2
    if camera == "cam_high":
        assert {"red_sphere", "green_sphere", "yellow_block_1"} <= seen, seen


def test_layout_moves_objects(backend):
    backend.reset("scene1", "scene1_2", 7)
    pos = {k: v.pos for k, v in backend.world_state().objects.items()}
    # scene1_2 swaps the red and green balls
    assert np.linalg.norm(pos["red_sphere"][:2] - [-0.02, -0.18]) < 0.025
    assert np.linalg.norm(pos["green_sphere"][:2] - [-0.14, -0.04]) < 0.025


@pytest.mark.parametrize("scene, layout", LAYOUTS)
def test_every_layout_builds_with_fixtures_and_stacks(backend, scene, layout):
    """Bowls and labels are in the world state; after settling every body is at the layout's
    jittered xy, stacked objects rest on their support and the others on the table."""
    spec = load_scene(scene)
    backend.reset(scene, layout, 3)
    world = backend.world_state().objects
    spawn = sample_layout(spec, layout, 3)
    assert set(world) == set(spawn)
    for name, obj in world.items():
        assert np.linalg.norm(obj.pos[:2] - spawn[name][:2]) < 0.01, name
    for p in spec.layout(layout).placements:
        pos = world[p.name].pos
        if p.support:  # resting on top of its support
            gap = pos[2] - world[p.support].pos[2]
            want = spec.objects[p.name].half_z + spec.objects[p.support].half_z
            assert abs(gap - want) < 0.006, (p.name, gap, want)
        elif p.name in spec.objects and not p.container:  # on the table
            assert abs(pos[2] - (TABLE_TOP + spec.objects[p.name].half_z)) < 0.004, p.name
