"""PiPER arm kinematics: forward kinematics from the arm's chain, the SDK's modified-DH
forward kinematics, joint limits, and a damped-least-squares inverse kinematics.

Pure numpy, no rclpy. The MuJoCo arm is generated from the same chain data
(`config/piper/kinematics.json`), so a joint vector means the same pose here, in sim and on
the real arm (a test checks this against MuJoCo's own forward kinematics).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vla_bridge.paths import config_path

#: distance from the link6 (flange) origin to the tool centre point between the finger pads
TCP_DEPTH = 0.16
#: fully open finger gap (normalised gripper 1.0); each finger travels half of it
GRIPPER_OPENING_M = 0.08


def quat_to_mat(wxyz) -> np.ndarray:
    w, x, y, z = np.asarray(wxyz, dtype=float) / np.linalg.norm(wxyz)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ])


def mat_to_quat(R: np.ndarray) -> np.ndarray:
    """Rotation matrix -> (w, x, y, z), w >= 0."""
    m = np.asarray(R, dtype=float)
    t = np.trace(m)
    if t > 0:
        s = 2.0 * np.sqrt(t + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0] * 4
        q[0] = (m[k, j] - m[j, k]) / s
        q[i + 1] = 0.25 * s
        q[j + 1] = (m[j, i] + m[i, j]) / s
        q[k + 1] = (m[k, i] + m[i, k]) / s
    q = np.array(q)
    return q if q[0] >= 0 else -q


def transform(pos, R) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = pos
    return T


def rot_z(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class Link:
    name: str
    joint: str
    origin: np.ndarray  # (4, 4) parent -> link frame at joint zero


@lru_cache(maxsize=1)
def load_piper_data() -> dict:
    with open(config_path("piper/kinematics.json")) as f:
        return json.load(f)


class PiperKinematics:
    """One PiPER arm. Frames: base (mount) -> link1..link6 -> tool centre point (TCP).

    TCP frame: +x is the approach axis (link6 +z), +y the finger closing axis (link6 +y),
    the RoboTwin convention the RoboFollow scorer assumes.
    """

    def __init__(self, data: dict | None = None):
        data = data or load_piper_data()
        self.links = [
            Link(c["link"], c["joint"], transform(c["xyz"], quat_to_mat(c["wxyz"])))
            for c in data["chain"]
        ]
        self.limits = self._tightest_limits(data)
        # link6 -> TCP: along link6 z by TCP_DEPTH; columns = TCP axes expressed in link6
        self.link6_to_tcp = transform([0.0, 0.0, TCP_DEPTH],
                                      np.array([[0, 0, -1], [0, 1, 0], [1, 0, 0]], dtype=float))
        self.dh = data["sdk_modified_dh"]

    @staticmethod
    def _tightest_limits(data: dict) -> np.ndarray:
        """The model's and the SDK's joint ranges disagree for joints 3, 4, 6: take the tighter."""
        lim = []
        for c in data["chain"]:
            lo, hi = c["limits_model"]
            slo, shi = data["sdk_limits"][c["joint"]]
            lim.append((max(lo, slo), min(hi, shi)))
        return np.array(lim)

    # ------------------------------------------------------------------ forward kinematics
    def link_frames(self, q) -> list[np.ndarray]:
        """Base-frame transforms of link1..link6 for joint vector q (6,)."""
        T = np.eye(4)
        frames = []
        for link, angle in zip(self.links, q):
            T = T @ link.origin
            c, s = np.cos(angle), np.sin(angle)
            # right-multiplying by a rotation about local z only mixes the first two columns
            x, y = T[:3, 0].copy(), T[:3, 1].copy()
            T[:3, 0], T[:3, 1] = c * x + s * y, c * y - s * x
            frames.append(T.copy())
        return frames

    def tcp(self, q) -> np.ndarray:
        """(4, 4) base -> TCP transform."""
        return self.link_frames(q)[-1] @ self.link6_to_tcp

    def dh_flange(self, q) -> np.ndarray:
        """(4, 4) base -> flange using the SDK's modified DH table (metres)."""
        T = np.eye(4)
        for i, angle in enumerate(q):
            a = self.dh["a_mm"][i] / 1000.0
            d = self.dh["d_mm"][i] / 1000.0
            alpha = self.dh["alpha_rad"][i]
            theta = angle + np.deg2rad(self.dh["theta_offset_deg"][i])
            ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
            T = T @ np.array([[ct, -st, 0, a],
                              [st * ca, ct * ca, -sa, -d * sa],
                              [st * sa, ct * sa, ca, d * ca],
                              [0, 0, 0, 1]])
        return T

    def clip(self, q) -> np.ndarray:
        return np.clip(q, self.limits[:, 0], self.limits[:, 1])

    def within_limits(self, q, tol: float = 1e-6) -> bool:
        q = np.asarray(q)
        return bool(np.all(q >= self.limits[:, 0] - tol) and np.all(q <= self.limits[:, 1] + tol))

    # ------------------------------------------------------------------ inverse kinematics
    def jacobian(self, q) -> tuple[np.ndarray, np.ndarray]:
        """Geometric Jacobian (6, 6) of the TCP in the base frame, and the TCP transform."""
        frames = self.link_frames(q)
        T_tcp = frames[-1] @ self.link6_to_tcp
        axes = np.array([F[:3, 2] for F in frames])  # (6, 3) joint axes
        arms = T_tcp[:3, 3] - np.array([F[:3, 3] for F in frames])  # joint origin -> TCP
        J = np.empty((6, 6))
        J[0] = axes[:, 1] * arms[:, 2] - axes[:, 2] * arms[:, 1]  # z x r, all joints at once
        J[1] = axes[:, 2] * arms[:, 0] - axes[:, 0] * arms[:, 2]
        J[2] = axes[:, 0] * arms[:, 1] - axes[:, 1] * arms[:, 0]
        J[3:] = axes.T
        return J, T_tcp

    def solve_ik(self, target: np.ndarray, q_init, *, iterations: int = 200,
                 pos_tol: float = 5e-4, rot_tol: float = 5e-3, damping: float = 1e-2):
        """Damped least squares to a full TCP pose `target` (4, 4, base frame).

        Returns (q, ok, position_error). Joint limits are enforced by clipping each step.
        """
        q = self.clip(np.asarray(q_init, dtype=float).copy())
        R_goal, p_goal = target[:3, :3], target[:3, 3]
        err_p, best = np.inf, np.inf
        for i in range(iterations):
            J, T = self.jacobian(q)
            err_p_vec = p_goal - T[:3, 3]
            err_r_vec = rotation_error(T[:3, :3], R_goal)
            err_p, err_r = np.linalg.norm(err_p_vec), np.linalg.norm(err_r_vec)
            if err_p < pos_tol and err_r < rot_tol:
                return q, True, err_p
            if i % 20 == 19:  # stuck against a joint limit: stop early, it will not converge
                total = err_p + 0.1 * err_r
                if total > 0.98 * best:
                    break
                best = total
            e = np.concatenate([err_p_vec, 0.5 * err_r_vec])
            JJt = J @ J.T + damping ** 2 * np.eye(6)
            dq = J.T @ np.linalg.solve(JJt, e)
            q = self.clip(q + np.clip(dq, -0.3, 0.3))
        return q, False, err_p


def rotation_error(R: np.ndarray, R_goal: np.ndarray) -> np.ndarray:
    """Axis-angle vector (base frame) that rotates R onto R_goal."""
    dR = R_goal @ R.T
    angle = np.arccos(np.clip((np.trace(dR) - 1) / 2, -1.0, 1.0))
    if angle < 1e-9:
        return np.zeros(3)
    axis = np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0], dR[1, 0] - dR[0, 1]])
    n = np.linalg.norm(axis)
    if n < 1e-9:  # 180 degrees: pick the eigenvector axis
        w, v = np.linalg.eigh(dR + dR.T)
        axis = v[:, np.argmax(w)]
        return axis * angle
    return axis / n * angle


@dataclass(frozen=True)
class ArmMount:
    """Where an arm's base sits in the world (position and yaw about +z)."""
    pos: tuple[float, float, float]
    yaw: float

    def world_from_base(self) -> np.ndarray:
        return transform(np.array(self.pos), rot_z(self.yaw))
