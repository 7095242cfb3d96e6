"""The workcell's cameras: where they are mounted, and their models at a joint state.

Pure numpy, no rclpy, no MuJoCo. ``default_cameras()`` is the one description of the three
cameras (field of view, mount body, position, orientation); the MuJoCo model is generated
from it, and nodes outside the simulator compute camera poses from it (the sim publishes
images, ``camera_info`` and joint states, but no camera poses):

* ``cam_high`` is fixed in the world: its position and ``xyaxes`` in ``default_cameras()``;
* a wrist camera rides on ``<arm>_link6``: world <- arm base (``workcell.MOUNTS``) <- link6
  (``PiperKinematics.link_frames`` at the measured joints) <- camera (its mount's position and
  ``xyaxes`` in link6).

``xyaxes`` follow MuJoCo: x is normalised, y is made orthogonal to x and normalised, z = x × y;
the camera looks along its -z with +y up (OpenGL), the convention of
``CameraModel`` and ``benchmarks.vifo.projection``. A test checks every camera against
``MujocoBackend.camera_model()`` for random joint vectors.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import PiperKinematics, quat_to_mat
from vla_bridge.embodiment.workcell import MOUNTS, TABLE_TOP_Z

ALOHA = contract.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

__all__ = ["CameraModel", "CameraSpec", "default_cameras", "look_at_xyaxes", "camera_spec",
           "xyaxes_matrix", "link6_pose", "camera_pose", "camera_model", "camera_models",
           "fovy_from_focal", "needs_joints"]


@dataclass
class CameraModel:
    """Pinhole model of one camera at the current sim state (for cue projection)."""
    width: int
    height: int
    fovy_deg: float
    world_from_camera: np.ndarray  # (4, 4); camera looks along its -z, y up (OpenGL)
    #: the image is the camera's view mirrored left-right (LIBERO's renders turned the way
    #: openpi's LIBERO client turns them, `contract.Embodiment.mirrored_images`)
    mirrored: bool = False

    @property
    def focal_px(self) -> float:
        return 0.5 * self.height / np.tan(np.deg2rad(self.fovy_deg) / 2)


@dataclass(frozen=True)
class CameraSpec:
    """Where a camera is mounted: on a body (``<arm>_link6``) or fixed in the world (None)."""
    name: str
    fovy_deg: float
    body: str | None  # None = fixed in the world
    pos: tuple[float, float, float]
    xyaxes: tuple[float, ...]


def look_at_xyaxes(eye, target) -> tuple[float, ...]:
    """MuJoCo `xyaxes` for a camera at `eye` looking at `target` (camera looks along -z, y up)."""
    forward = np.asarray(target, float) - np.asarray(eye, float)
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    return tuple(np.round(np.concatenate([right, up]), 6))


def default_cameras() -> list[CameraSpec]:
    """The workcell's three cameras (the MuJoCo model is generated from these)."""
    eye = (0.0, -0.75, 1.38)
    return [
        CameraSpec("cam_high", 45.0, None, eye, look_at_xyaxes(eye, (0.0, -0.08, TABLE_TOP_Z))),
        # wrist cameras ride on link6, looking along the approach axis (+z of link6)
        CameraSpec("cam_left_wrist", 60.0, "left_link6", (0.06, 0.0, 0.04), (0, 1, 0, 1, 0, 0)),
        CameraSpec("cam_right_wrist", 60.0, "right_link6", (0.06, 0.0, 0.04), (0, 1, 0, 1, 0, 0)),
    ]


@lru_cache(maxsize=1)
def _specs() -> dict[str, CameraSpec]:
    return {c.name: c for c in default_cameras()}


@lru_cache(maxsize=1)
def _kinematics() -> PiperKinematics:
    return PiperKinematics()


def camera_spec(camera: str) -> CameraSpec:
    specs = _specs()
    if camera not in specs:
        raise ValueError(f"unknown camera {camera!r}; expected one of {sorted(specs)}")
    return specs[camera]


def needs_joints(camera: str) -> bool:
    """True when the camera moves with an arm (its pose needs the joint state)."""
    return camera_spec(camera).body is not None


def xyaxes_matrix(xyaxes) -> np.ndarray:
    """MuJoCo ``xyaxes`` -> rotation whose columns are the camera's x, y, z in the parent frame."""
    v = np.asarray(xyaxes, float)
    x = v[:3] / np.linalg.norm(v[:3])
    y = v[3:] - x * float(x @ v[3:])
    y /= np.linalg.norm(y)
    return np.stack([x, y, np.cross(x, y)], axis=1)


def link6_pose(arm: str, arm_q) -> np.ndarray:
    """(4, 4) world <- ``<arm>_link6`` for the six arm joints ``arm_q``."""
    if arm not in MOUNTS:
        raise ValueError(f"unknown arm {arm!r}; expected one of {sorted(MOUNTS)}")
    q = np.asarray(arm_q, float)[:6]
    return MOUNTS[arm].world_from_base() @ _kinematics().link_frames(q)[-1]


def _body_arm(body: str) -> str:
    arm, _, link = body.partition("_")
    if link != "link6" or arm not in contract.ARMS:
        raise ValueError(f"camera mounted on {body!r}: only <arm>_link6 mounts are modelled")
    return arm


def camera_pose(camera: str, joints=None) -> np.ndarray:
    """(4, 4) world <- camera (OpenGL axes). ``joints``: contract-order joint vector (14, or a
    dict arm -> 6+ joints); needed only for cameras that ride on an arm."""
    spec = camera_spec(camera)
    local = np.eye(4)
    local[:3, :3] = xyaxes_matrix(spec.xyaxes)
    local[:3, 3] = spec.pos
    if spec.body is None:
        return local
    arm = _body_arm(spec.body)
    if joints is None:
        raise ValueError(f"{camera} rides on {spec.body}: its pose needs the joint state")
    if isinstance(joints, dict):
        arm_q = joints[arm]
    else:
        q = np.asarray(joints, float)
        if q.shape[0] == ALOHA.action_dim:
            i = contract.ARMS.index(arm) * contract.JOINTS_PER_ARM
            arm_q = q[i:i + 6]
        elif q.shape[0] in (6, contract.JOINTS_PER_ARM):
            arm_q = q[:6]
        else:
            raise ValueError(f"joint vector must have {ALOHA.action_dim} (contract order) or "
                             f"6/7 (one arm) entries, got {q.shape[0]}")
    return link6_pose(arm, arm_q) @ local


def fovy_from_focal(height: int, focal_px: float) -> float:
    """Vertical field of view (degrees) of a pinhole camera with square pixels."""
    return float(np.rad2deg(2.0 * np.arctan(0.5 * height / focal_px)))


def camera_model(camera: str, joints=None, width: int = ALOHA.image_size[0],
                 height: int = ALOHA.image_size[1], focal_px: float | None = None,
                 pose=None, mirrored: bool = False) -> CameraModel:
    """``CameraModel`` of one camera. Intrinsics: ``focal_px`` (e.g. CameraInfo.k[4]) when
    given, else the spec's vertical field of view. Pose: ``pose`` (a ``world.CameraPose`` the
    sim published, e.g. LIBERO's cameras) when given, else the spec and the joint state;
    ``mirrored``: the image is the view mirrored left-right (``CameraModel.mirrored``)."""
    fovy = camera_spec(camera).fovy_deg if focal_px is None else fovy_from_focal(height, focal_px)
    world_from_camera = camera_pose(camera, joints) if pose is None else pose_matrix(pose)
    return CameraModel(int(width), int(height), float(fovy), world_from_camera, mirrored)


def pose_matrix(pose) -> np.ndarray:
    """(4, 4) world <- camera of a ``world.CameraPose`` (position, w-x-y-z quaternion)."""
    out = np.eye(4)
    out[:3, :3] = quat_to_mat(pose.quat)
    out[:3, 3] = np.asarray(pose.pos, float)
    return out


def camera_models(joints=None, cameras=ALOHA.camera_names, width: int = ALOHA.image_size[0],
                  height: int = ALOHA.image_size[1]) -> dict[str, CameraModel]:
    """Every camera's model at one joint state."""
    return {c: camera_model(c, joints, width, height) for c in cameras}
