"""F3 ghosts rendered by MuJoCo (sim_nodes.mujoco_ghosts): a scene copy posed from messages renders
what the sim rendered, and a ghost has the object's true silhouette, unlike a projected box."""
from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
mujoco = pytest.importorskip("mujoco")

from vla_bridge import contract as C  # noqa: E402
from vla_bridge.embodiment.cameras import camera_model  # noqa: E402
from vla_bridge.benchmarks.vifo.replay import projected_ghost_layers  # noqa: E402
from vla_bridge.sim_nodes.mujoco.ghosts import MirrorGhostRenderer  # noqa: E402
from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend  # noqa: E402
from vla_bridge.embodiment.workcell import home_command  # noqa: E402

SCENE, LAYOUT, SEED = "scene1", "default", 3


@pytest.fixture(scope="module")
def moved_sim():
    """The 'sim node': an episode a few actions in, arms away from home, objects settled."""
    sim = MujocoBackend()
    sim.reset(SCENE, LAYOUT, SEED)
    target = home_command()
    target[[0, 7]] += (0.3, -0.2)  # swing both bases so the wrist cameras move
    for _ in range(15):
        sim.apply(target)
        sim.step()
    yield sim
    sim.close()


def test_a_posed_copy_renders_what_the_sim_rendered(moved_sim):
    world, joints = moved_sim.world_state(), moved_sim.joint_positions()
    mirror = MujocoBackend()
    try:
        mirror.reset(SCENE, LAYOUT, SEED)
        mirror.pose(world, joints)
        for cam in C.ALOHA_PIPER.camera_names:
            diff = np.abs(mirror.render(cam).astype(int) - moved_sim.render(cam).astype(int))
            assert (diff.max(axis=2) > 12).mean() < 0.002, cam  # only sub-pixel edge noise
    finally:
        mirror.close()


def test_rendered_ghost_has_the_true_silhouette_unlike_a_projected_box(moved_sim):
    """Ghost of the red sphere at its own position: its mask matches the sphere's pixels in
    MuJoCo's segmentation render; the projected bounding box covers the corners too."""
    world, joints = moved_sim.world_state(), moved_sim.joint_positions()
    source = world.objects["red_sphere"]
    path = [(np.asarray(source.pos, float), source)]
    image = moved_sim.render("cam_high")
    renderer = MirrorGhostRenderer()
    renderer.reset(SCENE, LAYOUT, SEED)
    try:
        (layer,) = renderer(world, joints, path, {"cam_high": image})["cam_high"]
    finally:
        renderer.close()
    seg = mujoco.Renderer(moved_sim.model, C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0])
    try:
        seg.enable_segmentation_rendering()
        seg.update_scene(moved_sim.data, camera="cam_high")
        ids = seg.render()[..., 0]
    finally:
        seg.close()
    truth = np.isin(ids, _body_geoms(moved_sim, "red_sphere"))
    rendered = layer.mask > 0.5
    (box,) = projected_ghost_layers(image, path, camera_model("cam_high", None))
    projected = box.mask > 0.5
    # the renders are anti-aliased, segmentation is not: allow a 2-pixel rim
    rim = cv2.dilate(truth.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    assert truth.sum() > 30
    assert (rendered & truth).sum() / truth.sum() > 0.95  # covers the sphere ...
    assert (rendered & rim).sum() / rendered.sum() > 0.95  # ... and nothing beyond its rim
    assert (projected & rim).sum() / projected.sum() < 0.9  # the box covers its corners too
    # the ghost's pixels are the sphere's own colours (red), not a flat fill
    assert np.mean(layer.image[rendered][:, 0]) > 2 * np.mean(layer.image[rendered][:, 1])


def _body_geoms(sim, body: str) -> list[int]:
    b = sim.model.body(body).id
    return [g for g in range(sim.model.ngeom) if sim.model.geom_bodyid[g] == b]


def test_renderer_needs_a_reset_and_passes_on_an_empty_path():
    renderer = MirrorGhostRenderer()
    img = np.zeros((C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), np.uint8)
    assert renderer(None, None, [], {"cam_high": img}) == {"cam_high": []}
    with pytest.raises(RuntimeError, match="reset"):
        renderer(None, None, [(np.zeros(3), type("O", (), {"name": "red_sphere"})())],
                 {"cam_high": img})
