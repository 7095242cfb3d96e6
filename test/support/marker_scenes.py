"""Synthetic camera images of ArUco markers at known world poses (test_tracker.py, and
test_real_graph.py's camera recording of a real trial): `render_scene` draws the table's board
markers and the objects' markers as a camera at `world_from_camera` with intrinsics `intr` sees
them; `layout_poses` gives Scene 1's default layout."""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.embodiment.workcell import TABLE_TOP_Z
from vla_bridge.robot_nodes.realsense.realsense_io import Intrinsics
from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig, invert, marker_image

# cam_high's pose and field of view as in the sim (45 degrees vertical), at 1280 x 960: 3 cm
# markers ~0.9 m away span ~38 px there (at 640 x 480 the depth of such a small marker is only
# good to ~2 cm; see docs/real_hardware.md on resolution and marker size)
W, H = 1280, 960
FOCAL = (H / 2) / np.tan(np.deg2rad(22.5))
INTR = Intrinsics(W, H, FOCAL, FOCAL, (W - 1) / 2, (H - 1) / 2)
EYE = np.array([0.0, -0.75, 1.38])  # the sim's cam_high pose
TARGET = np.array([0.0, -0.08, TABLE_TOP_Z])


def look_at(eye, target) -> np.ndarray:
    """world_from_camera with OpenCV's camera axes (x right, y down, z forward)."""
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    T = np.eye(4)
    T[:3, :3] = np.column_stack([right, down, forward])
    T[:3, 3] = eye
    return T


WORLD_FROM_CAMERA = look_at(EYE, TARGET)


def pose(x, y, z, yaw_deg=0.0) -> np.ndarray:
    c, s = np.cos(np.deg2rad(yaw_deg)), np.sin(np.deg2rad(yaw_deg))
    T = np.eye(4)
    T[:3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
    T[:3, 3] = (x, y, z)
    return T


def draw_marker(image, config, marker_id, length, world_from_marker, world_from_camera,
                intr=INTR):
    """Warp a printed marker (black square of `length` m plus a white quiet zone of one
    module) lying at world_from_marker into `image` (RGB), seen from world_from_camera."""
    px = 240
    printed = marker_image(config, marker_id, px)  # inner px, border px // 6 each side
    full = printed.shape[0]
    half = length / 2.0 * full / px  # half side of the printed square incl. the quiet zone
    corners = np.array([[-half, half, 0, 1], [half, half, 0, 1], [half, -half, 0, 1],
                        [-half, -half, 0, 1]])
    world = (world_from_marker @ corners.T).T[:, :3]
    camera_from_world = invert(world_from_camera)
    rvec = cv2.Rodrigues(camera_from_world[:3, :3])[0]
    dst, _ = cv2.projectPoints(world.reshape(-1, 1, 3), rvec, camera_from_world[:3, 3],
                               intr.camera_matrix(), intr.opencv_distortion())
    dst = dst.reshape(4, 2)
    h, w = image.shape[:2]
    x0, y0 = np.clip(np.floor(dst.min(axis=0)).astype(int) - 1, 0, [w, h])
    x1, y1 = np.clip(np.ceil(dst.max(axis=0)).astype(int) + 2, 0, [w, h])
    if x1 <= x0 or y1 <= y0:
        return
    src = np.float32([[0, 0], [full, 0], [full, full], [0, full]])
    homography = cv2.getPerspectiveTransform(src, (dst - [x0, y0]).astype(np.float32))
    size = (int(x1 - x0), int(y1 - y0))  # warp only the marker's bounding box
    warped = cv2.warpPerspective(printed, homography, size, flags=cv2.INTER_LINEAR)
    mask = cv2.warpPerspective(np.full_like(printed, 255), homography, size,
                               flags=cv2.INTER_LINEAR).astype(np.float32)[..., None] / 255.0
    roi = image[y0:y1, x0:x1]
    roi[:] = (roi * (1 - mask) + warped[..., None] * mask).astype(np.uint8)


def render_scene(config: TrackerConfig, objects: dict[str, np.ndarray],
                 world_from_camera=WORLD_FROM_CAMERA, intr=INTR, board=True,
                 board_ids=None, supersample: int = 2) -> np.ndarray:
    """An RGB image of a wooden-brown table with the board markers and object markers (on the
    objects' top faces); `objects`: name -> world_from_object-centre transform. Drawn at
    `supersample` times the resolution and area-averaged down, as a camera's pixels integrate
    light (plain warping of a foreshortened marker aliases its edges by up to a pixel)."""
    big = intr.scaled(intr.width * supersample, intr.height * supersample)
    image = np.empty((big.height, big.width, 3), np.uint8)
    image[:] = (150, 120, 90)
    image = _draw_markers(image, config, objects, world_from_camera, big, board, board_ids)
    image = cv2.resize(image, (intr.width, intr.height), interpolation=cv2.INTER_AREA)
    rng = np.random.default_rng(0)  # a little sensor noise
    return np.clip(image + rng.integers(-4, 5, image.shape), 0, 255).astype(np.uint8)


def _draw_markers(image, config, objects, world_from_camera, intr, board, board_ids):
    if board:
        for marker in config.board.values():
            if board_ids is None or marker.id in board_ids:
                draw_marker(image, config, marker.id, config.board_marker_length,
                            marker.world_from_marker(), world_from_camera, intr)
    by_name = {o.name: o for o in config.objects.values()}
    for name, world_from_object in objects.items():
        obj = by_name[name]
        world_from_marker = world_from_object @ pose(*(-obj.center_offset))
        draw_marker(image, config, obj.id, obj.marker_length, world_from_marker,
                    world_from_camera, intr)
    return image


def layout_poses(config: TrackerConfig, yaw_deg: float = 0.0) -> dict[str, np.ndarray]:
    """The Scene 1 default layout: object centres resting on the table."""
    scene = load_scene("scene1")
    by_name = {o.name: o for o in config.objects.values()}
    out = {}
    for placement in scene.layouts["default"].placements:
        obj = by_name[placement.name]
        out[placement.name] = pose(*placement.xy, TABLE_TOP_Z + obj.size[2] / 2, yaw_deg)
    return out
