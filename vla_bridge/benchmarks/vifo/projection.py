"""Pinhole projection of world points into a simulator camera (LIBERO-VIFO eq. 3-5).

Pure numpy. The camera is a ``CameraModel`` (``vla_bridge.sim_nodes.backend``): width, height,
vertical field of view and ``world_from_camera`` in the OpenGL/MuJoCo convention (the camera
looks along its -z axis, +y is up, +x is right). Points are converted to the computer-vision
convention (``S = diag(1, -1, -1)``: +z forward, +y down) and projected with square pixels:

    f = H / (2 tan(fovy / 2)),   cx = (W - 1) / 2,   cy = (H - 1) / 2,
    u = f x / z + cx,            v = f y / z + cy.

``(u, v)`` are *pixel-index* coordinates: ``(0, 0)`` is the centre of the top-left pixel, so
``image[int(round(v)), int(round(u))]`` is the pixel the point falls in. MuJoCo renders pixel
``(i, j)`` through the continuous image point ``(i + 0.5, j + 0.5)``, hence the ``(W - 1) / 2``
principal point. A point is *visible* when it is in front of the camera (``z > near``) and its
pixel-index coordinates lie inside ``[-0.5, W - 0.5) x [-0.5, H - 0.5)`` (optionally shrunk by
a margin); anything else is dropped by the callers.

Only ``width``, ``height``, ``fovy_deg``, ``world_from_camera`` and an optional ``mirrored`` are
read, so any object with those attributes works (the real-arm camera calibration can provide
the same fields). ``mirrored`` images are the camera's view flipped left-right (LIBERO's images
as openpi's client turns them): ``u`` becomes ``W - 1 - u``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: OpenGL camera axes (x right, y up, looking along -z) -> vision axes (x right, y down, +z ahead)
GL_TO_CV = np.diag([1.0, -1.0, -1.0])
#: points closer than this (metres, along the viewing axis) count as behind the camera
NEAR_M = 1e-4


@dataclass(frozen=True)
class Projection:
    """Projection of N world points. Arrays are (N, ...) in the input order."""
    uv: np.ndarray  # (N, 2) float pixel-index coordinates (garbage where depth <= NEAR_M)
    depth: np.ndarray  # (N,) z in the vision convention, metres (negative = behind)
    in_front: np.ndarray  # (N,) bool
    in_image: np.ndarray  # (N,) bool: inside the image (margin applied); False when behind
    width: int
    height: int

    @property
    def visible(self) -> np.ndarray:
        """In front of the camera and inside the image: the anchors a cue may use."""
        return self.in_front & self.in_image

    def __len__(self) -> int:
        return len(self.depth)


def intrinsics(camera) -> np.ndarray:
    """3x3 K with fx = fy = H / (2 tan(fovy/2)) and the principal point at ((W-1)/2, (H-1)/2)."""
    f = 0.5 * camera.height / np.tan(np.deg2rad(camera.fovy_deg) / 2.0)
    return np.array([[f, 0.0, (camera.width - 1) / 2.0],
                     [0.0, f, (camera.height - 1) / 2.0],
                     [0.0, 0.0, 1.0]])


def camera_from_world(camera) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) such that x_cv = R @ X_world + t  (R = S R_wc^T, t = -R c)."""
    T = np.asarray(camera.world_from_camera, dtype=float)
    R = GL_TO_CV @ T[:3, :3].T
    return R, -R @ T[:3, 3]


def to_camera(camera, points) -> np.ndarray:
    """World points (N, 3) or (3,) -> vision-convention camera coordinates (N, 3)."""
    P = np.atleast_2d(np.asarray(points, dtype=float))
    if P.shape[-1] != 3:
        raise ValueError(f"points must have shape (N, 3) or (3,), got {np.shape(points)}")
    R, t = camera_from_world(camera)
    return P @ R.T + t


def project_points(camera, points, margin: float = 0.0) -> Projection:
    """Project world points (N, 3) or (3,); ``margin`` (px) shrinks the accepted image area."""
    xc = to_camera(camera, points)
    z = xc[:, 2]
    in_front = z > NEAR_M
    K = intrinsics(camera)
    safe_z = np.where(in_front, z, 1.0)
    uv = np.empty((len(z), 2))
    uv[:, 0] = K[0, 0] * xc[:, 0] / safe_z + K[0, 2]
    uv[:, 1] = K[1, 1] * xc[:, 1] / safe_z + K[1, 2]
    W, H = camera.width, camera.height
    if getattr(camera, "mirrored", False):
        uv[:, 0] = (W - 1) - uv[:, 0]
    in_image = (in_front
                & (uv[:, 0] >= -0.5 + margin) & (uv[:, 0] < W - 0.5 - margin)
                & (uv[:, 1] >= -0.5 + margin) & (uv[:, 1] < H - 0.5 - margin))
    return Projection(uv=uv, depth=z, in_front=in_front, in_image=in_image, width=W, height=H)


def project_point(camera, point, margin: float = 0.0) -> np.ndarray | None:
    """Pixel-index (u, v) of one world point, or None when it is behind the camera or off-image."""
    p = project_points(camera, point, margin)
    return p.uv[0].copy() if p.visible[0] else None


def pixel_radius(camera, point, radius_m: float) -> float | None:
    """Apparent radius in pixels of a sphere of ``radius_m`` at ``point`` (None when behind)."""
    z = to_camera(camera, point)[0, 2]
    if z <= NEAR_M:
        return None
    return float(intrinsics(camera)[0, 0] * radius_m / z)


_BOX_SIGNS = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], float)


def box_corners(center, size, quat_wxyz=(1.0, 0.0, 0.0, 0.0)) -> np.ndarray:
    """The 8 world corners of a box with full extents ``size`` at ``center`` / ``quat``."""
    half = 0.5 * np.asarray(size, dtype=float)
    return (_BOX_SIGNS * half) @ quat_matrix(quat_wxyz).T + np.asarray(center, dtype=float)


def ground_circle(center, radius_m: float, n: int = 24, z: float | None = None) -> np.ndarray:
    """(n, 3) points of a horizontal circle (a target region on the table)."""
    c = np.asarray(center, dtype=float)
    out = np.empty((n, 3))
    out[:, :2] = c[:2] + radius_m * _unit_circle(n)
    out[:, 2] = c[2] if z is None else z
    return out


_CIRCLES: dict[int, np.ndarray] = {}


def _unit_circle(n: int) -> np.ndarray:
    if n not in _CIRCLES:
        a = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
        _CIRCLES[n] = np.stack([np.cos(a), np.sin(a)], axis=1)
    return _CIRCLES[n]


def quat_matrix(wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(wxyz, dtype=float) / np.linalg.norm(wxyz)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def project_outline(camera, points) -> np.ndarray | None:
    """Convex hull (M, 2) of projected points, or None if any point is behind the camera.

    Points may lie partly off-image (the hull is clipped by the drawing call).
    """
    p = project_points(camera, points)
    if not np.all(p.in_front):
        return None
    import cv2  # local: keeps the module importable for pure-math users

    hull = cv2.convexHull(p.uv.astype(np.float32))
    return hull.reshape(-1, 2).astype(float)
