"""Synthetic cameras: MuJoCo renders of the workcell in place of the RealSense cameras.

For fake hardware on a machine without cameras (`realsense_node` parameter `source:
synthetic`, or `auto` with `use_fake_hardware` and neither serials nor recordings). Pure: no
rclpy; the node hands in the joint states and publishes what comes out.

The scene is the RoboFollow scene's layout (scene1, default layout, without jitter; or an
INT-ACT probe's table: Scene 2 with the probe's LIBERO objects, `scene_layout`) built by
the simulator's model generator (vla_bridge/embodiment/mjcf.py) with the workcell's cameras
(embodiment/cameras.py `default_cameras`), plus the marker tracker's ArUco markers where
config/real_objects.yaml puts them: the calibration board on the table and one marker on top
of each object. The tracker therefore calibrates the table and finds the objects in these
images as it does on the real table, and a fake-hardware trial is scored end to end.

No physics runs: the objects stay where the layout puts them, and each frame poses the arms
at the newest joint state (forward kinematics only), so the cameras see where the fake arms
are. A frame whose joints did not change reuses the last renders (a holding arm costs no CPU).
"""
from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.scenes import load_scene, sample_layout
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.robot_nodes.realsense.realsense_io import Intrinsics
from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig, marker_image
from vla_bridge.embodiment.mjcf import FINGER_TRAVEL, build_mjcf

ALOHA = C.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

MARKER_TEXTURE_PX = 120  # marker texture: 20 px per module of a 4x4 marker with its border
PLATE_HALF_THICKNESS = 0.0002  # a printed marker lies 0.4 mm proud of its surface
SAME_JOINTS_RAD = 1e-5  # joints closer than this to the last render's: reuse the images


def _mujoco():
    os.environ.setdefault("MUJOCO_GL", "egl")  # offscreen, before mujoco is imported
    import mujoco

    return mujoco

# ------------------------------------------------------------------------------ the model


def scene_layout(scene: str, layout: str, edits: dict | None = None):
    """(objects, fixtures, spawn, LIBERO bodies) of a scene's layout at its nominal places (no
    jitter), with a probe's scene edits (``benchmarks.intact.scene_edits``): the LIBERO objects
    [(body name, LiberoAsset)] stand in the spawn, the bodies they replace are left out."""
    from vla_bridge.benchmarks.intact import scene_edits
    from vla_bridge.embodiment import libero_assets
    spec = load_scene(scene)
    spawn = sample_layout(dataclasses.replace(spec, jitter={}), layout, seed=0)
    edited, removed = scene_edits.resolve(scene_edits.check(edits, libero_assets.NAMES), spawn)
    libero = scene_edits.stand(edited, spawn, spec.table_z)  # LiberoAssetsMissing: at start
    objects = [o for o in spec.layout_objects(layout) if o.name not in removed]
    fixtures = [spec.fixtures[name] for name in spawn
                if name in spec.fixtures and name not in removed]
    return objects, fixtures, spawn, libero


def _add_marker(spec, parent, markers: TrackerConfig, marker_id: int, length: float,
                pos, yaw: float = 0.0) -> None:
    """A printed marker (quiet zone included) as a thin textured plate: its top face shows the
    marker with the image's top row towards the parent's +y, as the tracker's frame expects."""
    mujoco = _mujoco()
    printed = marker_image(markers, marker_id, MARKER_TEXTURE_PX)
    name = f"aruco_{marker_id}"
    texture = spec.add_texture(name=name, type=mujoco.mjtTexture.mjTEXTURE_2D,
                               width=printed.shape[1], height=printed.shape[0], nchannel=3)
    texture.data = np.repeat(printed[:, :, None], 3, axis=2).tobytes()
    material = spec.add_material(name=name)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = name
    half = length / 2.0 * printed.shape[0] / MARKER_TEXTURE_PX
    parent.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[half, half, PLATE_HALF_THICKNESS],
                    pos=list(pos), quat=[np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)],
                    material=name, contype=0, conaffinity=0)


def build_model(scene: str = "scene1", layout: str = "default",
                markers: TrackerConfig | None = None, max_size: tuple[int, int] = (1280, 960),
                edits: dict | None = None):
    """The compiled MjModel: the layout (with a probe's ``edits``) and the board and object
    markers of `markers` (default: config/real_objects.yaml); offscreen buffer at least
    `max_size` (w, h). Each tracked body carries its marker where the tracker expects it: at
    minus its ``center_offset`` from the body's centre (the bodies stand unrotated, so the
    marker frame's axes are the body's)."""
    mujoco = _mujoco()
    markers = markers or TrackerConfig.load()
    objects, fixtures, spawn, libero = scene_layout(scene, layout, edits)
    bodies = [asset.mjcf(name, spawn[name]) for name, asset in libero]
    spec = mujoco.MjSpec.from_string(build_mjcf(objects, spawn, fixtures=fixtures,
                                                extra_bodies=bodies))
    for marker_id, board in markers.board.items():
        # centred in the table top: the printed face sits just above it
        _add_marker(spec, spec.worldbody, markers, marker_id, markers.board_marker_length,
                    board.center, board.yaw)
    by_name = {obj.name: obj for obj in markers.objects.values()}
    names = [o.name for o in objects] + [f.name for f in fixtures] + [n for n, _ in libero]
    for name in names:
        tracked = by_name.get(name)
        if tracked is not None:  # riding with the body (centred in its surface, as the board's)
            _add_marker(spec, spec.body(name), markers, tracked.id, tracked.marker_length,
                        -np.asarray(tracked.center_offset, float))
    spec.visual.global_.offwidth = max(spec.visual.global_.offwidth, int(max_size[0]))
    spec.visual.global_.offheight = max(spec.visual.global_.offheight, int(max_size[1]))
    return spec.compile()


class SyntheticWorkcell:
    """The workcell model posed at a contract joint vector and rendered per camera. Render
    from one thread only: each renderer's GL context belongs to the thread that made it."""

    def __init__(self, scene: str = "scene1", layout: str = "default",
                 markers: TrackerConfig | None = None, max_size: tuple[int, int] = (1280, 960),
                 edits: dict | None = None):
        mujoco = _mujoco()
        self.model = build_model(scene, layout, markers, max_size, edits)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._arm_qadr = {arm: [m.jnt_qposadr[m.joint(f"{arm}_{j}").id] for j in C.ARM_JOINTS]
                          for arm in C.ARMS}
        self._finger_qadr = {arm: [m.jnt_qposadr[m.joint(f"{arm}_finger_{s}").id] for s in "ab"]
                             for arm in C.ARMS}
        self._renderers: dict[tuple[int, int], object] = {}
        self.set_joints(home_command())

    def set_joints(self, joints) -> None:
        """Pose both arms at a 14-value contract joint vector (grippers normalised)."""
        q = np.asarray(joints, float)
        if q.shape != (ALOHA.action_dim,) or not np.all(np.isfinite(q)):
            raise ValueError(f"joints must be {ALOHA.action_dim} finite values, got {q.shape}")
        for i, arm in enumerate(C.ARMS):
            base = i * C.JOINTS_PER_ARM
            self.data.qpos[self._arm_qadr[arm]] = q[base:base + 6]
            self.data.qpos[self._finger_qadr[arm]] = np.clip(q[base + 6], 0.0, 1.0) * FINGER_TRAVEL
        _mujoco().mj_forward(self.model, self.data)

    def render(self, camera: str, width: int, height: int) -> np.ndarray:
        """(height, width, 3) uint8 RGB of `camera` at the current pose."""
        key = (int(width), int(height))
        if key not in self._renderers:
            self._renderers[key] = _mujoco().Renderer(self.model, key[1], key[0])
        renderer = self._renderers[key]
        renderer.update_scene(self.data, camera=camera)
        return renderer.render()

    def intrinsics(self, camera: str, width: int, height: int) -> Intrinsics:
        """Pinhole intrinsics of a render (square pixels, no distortion)."""
        fovy = float(self.model.cam_fovy[self.model.camera(camera).id])
        focal = 0.5 * height / np.tan(np.deg2rad(fovy) / 2.0)
        return Intrinsics(int(width), int(height), focal, focal, (width - 1) / 2.0,
                          (height - 1) / 2.0)

    def close(self) -> None:
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()

# ----------------------------------------------------------------------------- the source


class SyntheticCameras:
    """All cameras from one thread, `fps` frame sets a second at the newest joint state.

    `joints()` returns the newest 14-value contract vector, or None before the first joint
    state (the arms are then drawn at the workcell's home pose). `on_frame(camera, rgb, None,
    intrinsics)` is the realsense node's frame handler, as for a device."""

    def __init__(self, cameras, sizes: dict[str, tuple[int, int]], joints: Callable,
                 on_frame: Callable, log, *, fps: float = 10.0, scene: str = "scene1",
                 layout: str = "default", markers: TrackerConfig | None = None,
                 edits: dict | None = None):
        self.cameras = tuple(cameras)
        self.sizes = {cam: (int(sizes[cam][0]), int(sizes[cam][1])) for cam in self.cameras}
        self.joints, self.on_frame, self.log = joints, on_frame, log
        self.period = 1.0 / float(fps)
        self.scene, self.layout, self.edits = scene, layout, edits or {}
        largest = (max(w for w, _ in self.sizes.values()), max(h for _, h in self.sizes.values()))
        # compiled here, so a bad scene or markers file fails the node's start
        self.workcell = SyntheticWorkcell(scene, layout, markers, largest, edits)
        self.intrinsics = {cam: self.workcell.intrinsics(cam, *self.sizes[cam])
                           for cam in self.cameras}
        self.frames = self.renders = self.errors = 0
        self.restarts, self.finished = 0, False  # CameraWorker's counters, for diagnostics
        self._last_joints: np.ndarray | None = None
        self._images: dict[str, np.ndarray] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="synthetic-cameras", daemon=True)

    def describe(self) -> str:
        sizes = ", ".join(f"{cam} {w}x{h}" for cam, (w, h) in self.sizes.items())
        edited = f", edited: {self.edits}" if self.edits else ""
        return (f"synthetic cameras: MuJoCo renders of {self.scene} ({self.layout} layout"
                f"{edited}, with the tracker's markers) at the joint states on {C.TOPIC_JOINT_STATES}, "
                f"{1.0 / self.period:g} fps ({sizes})")

    def start(self) -> SyntheticCameras:
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        next_t = time.monotonic()
        try:
            while not self._stop.is_set():
                self.step()
                next_t += self.period
                delay = next_t - time.monotonic()
                if delay < 0:  # rendering is slower than fps: don't burst to catch up
                    next_t, delay = time.monotonic(), 0.0
                self._stop.wait(delay)
        finally:
            self.workcell.close()  # the renderers belong to this thread

    def step(self) -> None:
        """Render (when the joints moved) and hand one frame of every camera to on_frame."""
        try:
            self._render(self.joints())
            for cam in self.cameras:
                self.on_frame(cam, self._images[cam], None, self.intrinsics[cam])
            self.frames += 1
        except Exception as exc:  # noqa: BLE001 - keep streaming; count and log sparsely
            if self._stop.is_set():
                return
            self.errors += 1
            if self.errors in (1, 10, 100) or self.errors % 1000 == 0:
                self.log.error(f"synthetic cameras: a frame failed ({self.errors}x): {exc!r}")

    def _render(self, joints) -> None:
        q = home_command() if joints is None else np.asarray(joints, float)
        if self._images and self._last_joints is not None and \
                np.allclose(q, self._last_joints, rtol=0.0, atol=SAME_JOINTS_RAD):
            return
        self.workcell.set_joints(q)
        self._images = {cam: self.workcell.render(cam, *self.sizes[cam]) for cam in self.cameras}
        self._last_joints = q.copy()
        self.renders += 1
