"""Marker tracker for real trials: ArUco markers -> object poses in RoboFollow's world frame.

Pure (numpy + OpenCV, no rclpy), so it is testable on synthetic images and reusable offline.

* Detection: `cv2.aruco.ArucoDetector` with the dictionary named in the config.
* Table calibration: a board of markers lying flat on the table at known world poses
  (`board.markers` in config/real_objects.yaml) gives the camera's pose: every visible board
  corner (world point, image point) goes into one `cv2.solvePnP`, refined by Levenberg-Marquardt;
  the fit's RMS reprojection error is reported and bounded.
* Objects: each object carries a marker on its top face; `cv2.solvePnPGeneric` with
  SOLVEPNP_IPPE_SQUARE returns both planar solutions, and the one whose marker normal points
  up in the world is kept (a small marker's flip ambiguity, resolved by the table); with
  `upright_objects` the pose is then levelled (`level`: face up, yaw kept). The object's
  centre is `center_offset_m` (default: half its height below the marker) in the marker frame.
* Robot: `tcp_states` gives both arms' tool-centre poses in the world frame from joint angles
  (forward kinematics of `vla_bridge.embodiment.kinematics`, mounts of `vla_bridge.embodiment.workcell`), the same
  functions the simulator's model is checked against.

Frames: the marker frame is OpenCV's (x right, y up, z out of the printed face; corners in the
order top-left, top-right, bottom-right, bottom-left). A board marker with yaw 0 lies with its
x along world +x and its y along world +y (pointing away from the robot).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import yaml

from vla_bridge import contract as C
from vla_bridge.embodiment.kinematics import PiperKinematics, mat_to_quat
from vla_bridge.paths import config_path
from vla_bridge.robot_nodes.realsense.realsense_io import Intrinsics
from vla_bridge.embodiment.workcell import MOUNTS, arm_slice, home_command
from vla_bridge.embodiment.world import ObjectState, TcpState

DEFAULT_CONFIG = "real_objects.yaml"
SHAPES = ("box", "sphere", "cylinder")


class CalibrationError(RuntimeError):
    """The board is not visible well enough to give the camera's pose."""

# ------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class BoardMarker:
    id: int
    center: np.ndarray  # (3,) world frame
    yaw: float  # rad about world +z

    def world_from_marker(self) -> np.ndarray:
        c, s = np.cos(self.yaw), np.sin(self.yaw)
        T = np.eye(4)
        T[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
        T[:3, 3] = self.center
        return T


@dataclass(frozen=True)
class TrackedObject:
    id: int
    name: str
    shape: str
    size: np.ndarray  # (3,) full extent, metres
    rgba: np.ndarray
    marker_length: float
    center_offset: np.ndarray  # (3,) marker frame -> object centre


@dataclass(frozen=True)
class TrackerConfig:
    dictionary: str
    board_marker_length: float
    board: dict[int, BoardMarker]
    objects: dict[int, TrackedObject]
    min_board_markers: int = 2
    max_calibration_rms_px: float = 2.0
    upright_objects: bool = True
    corner_refinement: str = "subpix"  # cv2.aruco CORNER_REFINE_*: subpix, apriltag, contour, none

    @classmethod
    def load(cls, path: str | Path | None = None) -> TrackerConfig:
        """From a YAML file (default: the package's config/real_objects.yaml)."""
        path = Path(path) if path else config_path(DEFAULT_CONFIG)
        data = yaml.safe_load(Path(path).read_text())
        try:
            return cls.from_dict(data)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    @classmethod
    def from_dict(cls, data: dict) -> TrackerConfig:
        board_data = data["board"]
        board = {int(i): BoardMarker(int(i), np.asarray(m["center"], float),
                                     np.deg2rad(float(m.get("yaw_deg", 0.0))))
                 for i, m in (board_data.get("markers") or {}).items()}
        objects = {}
        for i, o in (data.get("objects") or {}).items():
            shape = o.get("shape", "box")
            if shape not in SHAPES:
                raise ValueError(f"object {o.get('name')!r}: shape must be one of {SHAPES}")
            size = np.asarray(o["size"], float)
            offset = o.get("center_offset_m")
            offset = np.array([0.0, 0.0, -size[2] / 2.0]) if offset is None \
                else np.asarray(offset, float)
            objects[int(i)] = TrackedObject(int(i), str(o["name"]), shape, size,
                                            np.asarray(o.get("rgba", [0.5, 0.5, 0.5, 1.0]), float),
                                            float(o["marker_length_m"]), offset)
        clash = sorted(set(board) & set(objects))
        if clash:
            raise ValueError(f"marker ids {clash} are both board and object markers")
        names = [o.name for o in objects.values()]
        if len(set(names)) != len(names):
            raise ValueError(f"object names repeat: {names}")
        return cls(dictionary=str(data.get("dictionary", "DICT_4X4_50")),
                   board_marker_length=float(board_data["marker_length_m"]),
                   board=board, objects=objects,
                   min_board_markers=int(board_data.get("min_markers", 2)),
                   max_calibration_rms_px=float(board_data.get("max_rms_px", 2.0)),
                   upright_objects=bool(data.get("upright_objects", True)),
                   corner_refinement=str(data.get("corner_refinement", "subpix")))

    def __post_init__(self):
        if not hasattr(cv2.aruco, f"CORNER_REFINE_{self.corner_refinement.upper()}"):
            raise ValueError(f"corner_refinement must be subpix, apriltag, contour or none, got "
                             f"{self.corner_refinement!r}")

    def aruco_dictionary(self):
        if not hasattr(cv2.aruco, self.dictionary):
            raise ValueError(f"unknown ArUco dictionary {self.dictionary!r}")
        return cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))

    def object_names(self) -> list[str]:
        return [o.name for o in self.objects.values()]

# ----------------------------------------------------------------------------- geometry


def marker_corners(length: float) -> np.ndarray:
    """(4, 3) corners in the marker frame, OpenCV's order (TL, TR, BR, BL)."""
    h = length / 2.0
    return np.array([[-h, h, 0.0], [h, h, 0.0], [h, -h, 0.0], [-h, -h, 0.0]])


def to_transform(rvec, tvec) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = cv2.Rodrigues(np.asarray(rvec, float).reshape(3, 1))[0]
    T[:3, 3] = np.asarray(tvec, float).reshape(3)
    return T


def invert(T: np.ndarray) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def project(points_world: np.ndarray, camera_from_world: np.ndarray, intr: Intrinsics) -> np.ndarray:
    """World points (N, 3) -> pixels (N, 2) with the camera's distortion."""
    rvec = cv2.Rodrigues(camera_from_world[:3, :3])[0]
    pixels, _ = cv2.projectPoints(np.asarray(points_world, float).reshape(-1, 1, 3), rvec,
                                  camera_from_world[:3, 3], intr.camera_matrix(),
                                  intr.opencv_distortion())
    return pixels.reshape(-1, 2)

# ---------------------------------------------------------------------------- detection


@dataclass(frozen=True)
class Detection:
    id: int
    corners: np.ndarray  # (4, 2) pixels, TL TR BR BL


@dataclass
class TableCalibration:
    world_from_camera: np.ndarray  # (4, 4)
    rms_px: float
    markers: list[int] = field(default_factory=list)

    @property
    def camera_from_world(self) -> np.ndarray:
        return invert(self.world_from_camera)

    def to_dict(self) -> dict:
        return {"world_from_camera": np.round(self.world_from_camera, 9).tolist(),
                "rms_px": round(float(self.rms_px), 4), "markers": list(self.markers)}

    @classmethod
    def from_dict(cls, data: dict) -> TableCalibration:
        T = np.asarray(data["world_from_camera"], float)
        if T.shape != (4, 4):
            raise ValueError("world_from_camera must be a 4x4 matrix")
        return cls(T, float(data.get("rms_px", 0.0)), [int(m) for m in data.get("markers", [])])

    def save(self, path: str | Path, camera: str = "") -> None:
        data = {"camera": camera, **self.to_dict()}
        Path(path).write_text("# camera pose in the world frame, from tracker calibration\n" +
                              yaml.safe_dump(data, sort_keys=False))

    @classmethod
    def load(cls, path: str | Path) -> TableCalibration:
        return cls.from_dict(yaml.safe_load(Path(path).read_text()))


class MarkerTracker:
    def __init__(self, config: TrackerConfig):
        self.config = config
        params = cv2.aruco.DetectorParameters()
        params.cornerRefinementMethod = getattr(
            cv2.aruco, f"CORNER_REFINE_{config.corner_refinement.upper()}")
        # decode small, foreshortened markers (objects seen obliquely) from 8 px per bit
        # instead of 4: fewer of them are missed
        params.perspectiveRemovePixelPerCell = 8
        self.detector = cv2.aruco.ArucoDetector(config.aruco_dictionary(), params)

    def detect(self, image: np.ndarray) -> list[Detection]:
        """Markers in an RGB (or grey) image."""
        grey = image if image.ndim == 2 else cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        corners, ids, _ = self.detector.detectMarkers(grey)
        if ids is None:
            return []
        return [Detection(int(i), c.reshape(4, 2).astype(float))
                for i, c in zip(ids.reshape(-1), corners)]

    # ------------------------------------------------------------------ calibration
    def calibrate(self, detections: list[Detection], intr: Intrinsics) -> TableCalibration:
        """Camera pose in the world from the visible board markers (CalibrationError if the
        board is not seen well enough)."""
        cfg = self.config
        seen = [d for d in detections if d.id in cfg.board]
        if len(seen) < cfg.min_board_markers:
            raise CalibrationError(
                f"{len(seen)} of the board's markers {sorted(cfg.board)} visible "
                f"({[d.id for d in seen]}); need {cfg.min_board_markers}")
        local = marker_corners(cfg.board_marker_length)
        world = np.vstack([(cfg.board[d.id].world_from_marker() @
                            np.c_[local, np.ones(4)].T).T[:, :3] for d in seen])
        image = np.vstack([d.corners for d in seen])
        K, D = intr.camera_matrix(), intr.opencv_distortion()
        if len(seen) == 1:  # four coplanar corners of a square: IPPE is exact for it
            marker_pose = self._marker_pose(seen[0], cfg.board_marker_length, K, D)[0]
            camera_from_world = marker_pose @ invert(cfg.board[seen[0].id].world_from_marker())
            rvec = cv2.Rodrigues(camera_from_world[:3, :3])[0]
            tvec = camera_from_world[:3, 3].reshape(3, 1)
        else:
            ok, rvec, tvec = cv2.solvePnP(world, image, K, D, flags=cv2.SOLVEPNP_ITERATIVE)
            if not ok:
                raise CalibrationError("solvePnP found no camera pose for the board")
        rvec, tvec = cv2.solvePnPRefineLM(world, image, K, D, rvec, tvec)
        camera_from_world = to_transform(rvec, tvec)
        residual = project(world, camera_from_world, intr) - image
        rms = float(np.sqrt(np.mean(np.sum(residual ** 2, axis=1))))
        if rms > cfg.max_calibration_rms_px:
            raise CalibrationError(f"board fit RMS {rms:.2f} px exceeds "
                                   f"{cfg.max_calibration_rms_px} px (wrong board layout or "
                                   "intrinsics?)")
        if camera_from_world[2, 3] <= 0:
            raise CalibrationError("the board fit puts the table behind the camera")
        return TableCalibration(invert(camera_from_world), rms, sorted(d.id for d in seen))

    # ------------------------------------------------------------------ objects
    def _marker_pose(self, det: Detection, length: float, K, D,
                     world_from_camera: np.ndarray | None = None) -> tuple[np.ndarray, float]:
        """camera_from_marker of one marker and its reprojection error. With the camera's
        world pose and upright objects, the IPPE solution whose normal points up wins."""
        n, rvecs, tvecs, errors = cv2.solvePnPGeneric(
            marker_corners(length), det.corners, K, D, flags=cv2.SOLVEPNP_IPPE_SQUARE)
        if not n:
            raise ValueError(f"no pose for marker {det.id}")
        candidates = [(to_transform(r, t), float(np.ravel(e)[0]) if e is not None else 0.0)
                      for r, t, e in zip(rvecs, tvecs, np.asarray(errors).reshape(-1, 1))]
        if world_from_camera is not None and self.config.upright_objects:
            up = [(world_from_camera @ T)[2, 2] for T, _ in candidates]
            return candidates[int(np.argmax(up))]
        return min(candidates, key=lambda c: c[1])

    def locate(self, detections: list[Detection], intr: Intrinsics,
               calibration: TableCalibration, stamp: float = 0.0) -> dict[str, ObjectState]:
        """World poses of the configured objects whose markers are visible."""
        K, D = intr.camera_matrix(), intr.opencv_distortion()
        out: dict[str, ObjectState] = {}
        for det in detections:
            obj = self.config.objects.get(det.id)
            if obj is None:
                continue
            camera_from_marker, _ = self._marker_pose(det, obj.marker_length, K, D,
                                                      calibration.world_from_camera)
            world_from_marker = calibration.world_from_camera @ camera_from_marker
            if self.config.upright_objects:
                world_from_marker = level(world_from_marker)
            centre = world_from_marker @ np.append(obj.center_offset, 1.0)
            out[obj.name] = ObjectState(name=obj.name, pos=centre[:3],
                                        quat=mat_to_quat(world_from_marker[:3, :3]),
                                        size=obj.size.copy(), rgba=obj.rgba.copy(),
                                        shape=obj.shape)
        return out


def level(world_from_marker: np.ndarray) -> np.ndarray:
    """An upright object's marker pose with its face turned exactly up, its yaw kept, so that
    a tilt error in a small marker's pose does not move a centre several centimetres away (a
    tall object's, a bowl's beside its card); docs/intact.md gives what it changed."""
    x = world_from_marker[:3, 0]
    yaw = float(np.arctan2(x[1], x[0]))
    c, s = np.cos(yaw), np.sin(yaw)
    out = world_from_marker.copy()
    out[:3, :3] = [[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]
    return out


def marker_image(config: TrackerConfig, marker_id: int, pixels: int = 400) -> np.ndarray:
    """A printable marker (white quiet zone of one module around it), grey uint8."""
    inner = cv2.aruco.generateImageMarker(config.aruco_dictionary(), int(marker_id), pixels)
    return cv2.copyMakeBorder(inner, pixels // 6, pixels // 6, pixels // 6, pixels // 6,
                              cv2.BORDER_CONSTANT, value=255)

# --------------------------------------------------------------------------------- robot

_KINEMATICS: PiperKinematics | None = None


def tcp_states(joints: np.ndarray, arms=C.ARMS) -> dict[str, TcpState]:
    """World-frame TCP poses of `arms` from a contract joint vector (14 values)."""
    global _KINEMATICS
    if _KINEMATICS is None:
        _KINEMATICS = PiperKinematics()
    joints = np.asarray(joints, float)
    out = {}
    for arm in arms:
        q = joints[arm_slice(arm)][:6]
        T = MOUNTS[arm].world_from_base() @ _KINEMATICS.tcp(q)
        out[arm] = TcpState(pos=T[:3, 3].copy(), quat=mat_to_quat(T[:3, :3]))
    return out


def contract_vector(names, values) -> np.ndarray:
    """The 14-value contract joint vector from a (possibly one-arm) JointState's names and
    values; an arm the message lacks stays at home (its gripper open)."""
    out = home_command()
    index = {n: i for i, n in enumerate(C.ALOHA_PIPER.action_names)}
    for name, value in zip(names, values):
        if name in index:
            out[index[name]] = float(value)
    return out
