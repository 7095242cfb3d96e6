"""Cue projection against MuJoCo renders: projected object centres vs rendered blob centroids.

Every camera of the RoboFollow workcell (cam_high, both wrist cameras after moving the arms so
the wrist cameras look at the objects), plus a custom MJCF with tiny emissive markers spread
to the image corners (the projection must hold off-axis, where principal-point or focal errors
show most). Also: anchors behind the camera are dropped, and a ghost layer rendered from a
future simulator state lands where the projection says.
"""
import os

import numpy as np
import pytest

os.environ.setdefault("MUJOCO_GL", "egl")
cv2 = pytest.importorskip("cv2")
mujoco = pytest.importorskip("mujoco")
mujoco_backend = pytest.importorskip("vla_bridge.sim_nodes.mujoco.backend")

from vla_bridge.benchmarks.vifo import (AnchorRef, CueSpec, draw, ghost_layers, ground, insert, make_cue,  # noqa: E402
                             parse, project_point, project_points)
from vla_bridge.benchmarks.vifo.families import CueContext  # noqa: E402
from vla_bridge.embodiment.cameras import CameraModel  # noqa: E402
from vla_bridge.embodiment.workcell import home_command  # noqa: E402

TOL_PX = 1.5
COLOUR = {"green_sphere": "green", "red_sphere": "red", "red_cylinder": "red",
          "yellow_block_1": "yellow", "yellow_block_2": "yellow", "yellow_block_3": "yellow"}
#: joint offsets that turn both wrist cameras towards the objects (left arm: joints 0-5,
#: right arm: joints 7-12; the right arm's base yaw is mirrored)
WRIST_OFFSETS = {0: -0.7, 1: 0.3, 2: -0.5, 7: 0.7, 8: 0.3, 9: -0.5}


def colour_masks(img):
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return {"green": (g > r + 60) & (g > b + 60),
            "red": (r > g + 60) & (r > b + 60),
            "yellow": (r > b + 60) & (g > b + 60) & (np.abs(r - g) < 60)}


def blob_errors(backend, camera):
    """{object: (error_px, blob_area, expected_area)} for fully visible, isolated blobs."""
    img = backend.render(camera)
    cam = backend.camera_model(camera)
    masks = colour_masks(img)
    comps = {}
    for colour, m in masks.items():
        n, _, stats, cents = cv2.connectedComponentsWithStats(m.astype(np.uint8))
        comps[colour] = [(cents[i], stats[i]) for i in range(1, n)]
    H, W = img.shape[:2]
    f = cam.focal_px
    out = {}
    for name, obj in backend.world_state().objects.items():
        uv = project_point(cam, obj.pos)
        if uv is None or not comps[COLOUR[name]]:
            continue
        cent, st = min(comps[COLOUR[name]], key=lambda c: np.linalg.norm(c[0] - uv))
        x, y, w, h, area = st
        if x == 0 or y == 0 or x + w == W or y + h == H:
            continue  # cut by the image border: its centroid is not the object's
        depth = project_points(cam, obj.pos).depth[0]
        expected = np.pi * (f * 0.02 / depth) ** 2  # 2 cm radius objects
        if not 0.6 * expected <= area <= 3.0 * expected:
            continue  # partly hidden (e.g. by the gripper) or merged with a neighbour
        out[name] = (float(np.linalg.norm(cent - uv)), int(area), float(expected))
    return out


@pytest.fixture(scope="module")
def backend():
    b = mujoco_backend.MujocoBackend()
    b.reset("scene1", "default", 1)
    yield b
    b.close()


def _wrist_pose(backend):
    backend.reset("scene1", "default", 1)
    target = home_command()
    for i, d in WRIST_OFFSETS.items():
        target[i] += d
    for _ in range(40):
        backend.apply(target)
        backend.step()


def test_cam_high_projects_every_object_onto_its_blob(backend):
    backend.reset("scene1", "default", 1)
    errs = blob_errors(backend, "cam_high")
    assert set(errs) == set(COLOUR), f"not every object checked: {errs}"
    worst = max(e for e, _, _ in errs.values())
    assert worst < TOL_PX, errs


@pytest.mark.parametrize("camera", ["cam_left_wrist", "cam_right_wrist"])
def test_wrist_cameras_project_objects_onto_their_blobs(backend, camera):
    _wrist_pose(backend)
    errs = blob_errors(backend, camera)
    assert "green_sphere" in errs and len(errs) >= 4, errs
    assert max(e for e, _, _ in errs.values()) < TOL_PX, errs


def test_wrist_camera_drops_objects_outside_its_view(backend):
    backend.reset("scene1", "default", 1)  # home: the wrist cameras see only the table edge
    cam = backend.camera_model("cam_right_wrist")
    world = backend.world_state()
    p = project_points(cam, np.stack([o.pos for o in world.objects.values()]))
    assert not p.visible.all()
    img = backend.render("cam_high")
    behind = CameraModel(cam.width, cam.height, cam.fovy_deg, cam.world_from_camera)
    # a point 0.3 m behind the wrist camera (its +z axis in the OpenGL convention)
    back_pt = cam.world_from_camera[:3, 3] + 0.3 * cam.world_from_camera[:3, 2]
    assert project_point(behind, back_pt) is None
    cue = CueSpec("F2", "arrow", anchors={"source": AnchorRef(entity="green_sphere"),
                                          "target": AnchorRef(point=tuple(back_pt))})
    out = insert(img, cue, world, behind)
    assert np.array_equal(out, img)


def test_overlay_follows_the_object_in_every_camera(backend):
    _wrist_pose(backend)
    world = backend.world_state()
    task = ground(parse("Use your left arm to pick up the block to the left of the green ball."), world)
    assert task.source == "yellow_block_2"
    cue = make_cue(task, "F2", "crosshair", world=world, color=(255, 0, 255), arms=())
    for camera in ("cam_high", "cam_left_wrist", "cam_right_wrist"):
        img = backend.render(camera)
        cam = backend.camera_model(camera)
        out = insert(img, cue, world, cam)
        uv = project_point(cam, world.objects["yellow_block_2"].pos)
        if uv is None:
            assert np.array_equal(out, img)
            continue
        magenta = (out[..., 0] > 200) & (out[..., 1] < 80) & (out[..., 2] > 200)
        ys, xs = np.nonzero(magenta)
        assert len(xs) > 20, camera
        H, W = img.shape[:2]
        if min(uv[0], uv[1], W - uv[0], H - uv[1]) > 30:  # whole reticle inside the image
            centre = np.array([xs.mean(), ys.mean()])
            assert np.linalg.norm(centre - uv) < 2.0, (camera, centre, uv)
        else:  # clipped by the border: the reticle still surrounds the anchor
            d = np.hypot(xs - uv[0], ys - uv[1])
            assert d.min() < 20 and (d < 40).mean() > 0.9, camera


# --------------------------------------------------------------------------- custom markers

#: where the markers should appear (fractions of width / height) and their depth (m)
MARKER_TARGETS = [(0.04, 0.05, 0.5), (0.96, 0.06, 0.7), (0.05, 0.94, 0.4), (0.95, 0.95, 0.9),
                  (0.5, 0.5, 0.6), (0.27, 0.3, 0.8), (0.7, 0.72, 0.35)]
CAMERA_XML = '<camera name="c" pos="0.02 -0.05 0.45" xyaxes="0.999 0.04 0 -0.03 0.6 0.8" fovy="58"/>'


def marker_mjcf(w, h, points=()):
    spheres = "".join(
        f'<geom name="m{i}" type="sphere" size="{r:.5f}" pos="{x:.6f} {y:.6f} {z:.6f}" '
        f'rgba="1 0 1 1" material="glow" contype="0" conaffinity="0"/>'
        for i, ((x, y, z), r) in enumerate(points))
    return f"""<mujoco><visual><global offwidth="{w}" offheight="{h}"/></visual>
<asset><material name="glow" emission="1" specular="0" shininess="0"/></asset>
<worldbody><light pos="0 0 3"/>{CAMERA_XML}{spheres}</worldbody></mujoco>"""


def camera_of(model, data, w, h):
    cid = model.camera("c").id
    T = np.eye(4)
    T[:3, :3] = data.cam_xmat[cid].reshape(3, 3)
    T[:3, 3] = data.cam_xpos[cid]
    return CameraModel(w, h, float(model.cam_fovy[cid]), T)


@pytest.mark.parametrize("size", [(320, 240), (640, 360)])
def test_tiny_markers_project_to_their_centroids_up_to_the_corners(size):
    w, h = size
    # place markers where the pinhole model says the target pixels are (back-projection)...
    model = mujoco.MjModel.from_xml_string(marker_mjcf(w, h))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    cam = camera_of(model, data, w, h)
    f = cam.focal_px
    R = cam.world_from_camera[:3, :3]
    pts = []
    for fu, fv, depth in MARKER_TARGETS:
        u, v = fu * (w - 1), fv * (h - 1)
        ray_cv = np.array([(u - (w - 1) / 2) / f, (v - (h - 1) / 2) / f, 1.0]) * depth
        pts.append(cam.world_from_camera[:3, 3] + R @ (ray_cv * [1, -1, -1]))
    radii = [0.009 * depth for _, _, depth in MARKER_TARGETS]  # about 2 px at 320 x 240
    # ...render them with MuJoCo, and compare where they really are with project_points
    model = mujoco.MjModel.from_xml_string(marker_mjcf(w, h, zip(pts, radii)))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, h, w) as r:
        r.update_scene(data, camera="c")
        img = r.render()
    cam = camera_of(model, data, w, h)
    mask = ((img[..., 0] > 150) & (img[..., 2] > 150) & (img[..., 1] < 100)).astype(np.uint8)
    n, _, stats, cents = cv2.connectedComponentsWithStats(mask)
    blobs = [cents[i] for i in range(1, n) if stats[i, 4] >= 3]
    proj = project_points(cam, np.asarray(pts))
    assert proj.visible.all()
    assert len(blobs) == len(MARKER_TARGETS)
    errs = [min(np.linalg.norm(b - p) for b in blobs) for p in proj.uv]
    assert max(errs) < 0.75, errs
    spread = proj.uv.max(axis=0) - proj.uv.min(axis=0)
    assert spread[0] > 0.85 * w and spread[1] > 0.85 * h  # the markers reach the corners


def test_a_mirrored_image_projects_to_the_mirrored_column():
    """LIBERO's published images are the camera's view mirrored left-right: the same point
    lands in column W - 1 - u, the same row."""
    T = np.eye(4)
    T[:3, 3] = [0.0, 0.0, 1.0]
    plain = CameraModel(256, 200, 60.0, T)
    mirrored = CameraModel(256, 200, 60.0, T, mirrored=True)
    pts = np.array([[0.1, 0.05, 0.0], [-0.2, -0.1, 0.3], [0.0, 0.0, 0.5]])
    a, b = project_points(plain, pts), project_points(mirrored, pts)
    np.testing.assert_allclose(b.uv[:, 0], 255 - a.uv[:, 0])
    np.testing.assert_allclose(b.uv[:, 1], a.uv[:, 1])
    assert a.uv[0, 0] > 127.5 > b.uv[0, 0]  # +x is right in the view, left in the mirror
    np.testing.assert_array_equal(a.visible, b.visible)


# --------------------------------------------------------------------------- ghost trajectory

def test_ghost_layer_from_a_future_sim_state_lands_on_the_projection(backend):
    backend.reset("scene1", "default", 1)
    world = backend.world_state()
    cam = backend.camera_model("cam_high")
    img = backend.render("cam_high")
    m, d = backend.model, backend.data
    qadr = m.jnt_qposadr[m.joint("green_sphere").id]
    saved = d.qpos.copy()
    future = world.objects["green_sphere"].pos + np.array([0.10, 0.05, 0.0])
    d.qpos[qadr:qadr + 3] = future
    mujoco.mj_forward(m, d)
    render = backend.render("cam_high")
    d.qpos[:] = saved
    mujoco.mj_forward(m, d)
    layers = ghost_layers(img, [render], threshold=14)
    # keep only the future appearance (drop the vacated old position)
    old_uv = project_point(cam, world.objects["green_sphere"].pos)
    yy, xx = np.indices(img.shape[:2])
    layers[0].mask *= ((xx - old_uv[0]) ** 2 + (yy - old_uv[1]) ** 2) > 10 ** 2
    out = draw(img, CueSpec("F3", "uniform", {"alpha": 0.5}), CueContext(layers=layers))
    greenish = (out[..., 1].astype(int) - out[..., 0] > 40) & (out[..., 1].astype(int) - out[..., 2] > 40)
    greenish &= ((xx - old_uv[0]) ** 2 + (yy - old_uv[1]) ** 2) > 10 ** 2
    ys, xs = np.nonzero(greenish)
    assert len(xs) > 20
    uv = project_point(cam, future)
    assert np.linalg.norm([xs.mean() - uv[0], ys.mean() - uv[1]]) < 1.5
    assert np.array_equal(out[0:20], img[0:20])  # nothing else changed
