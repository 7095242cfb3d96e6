"""Joint-limit and per-command step rules of one PiPER arm, shared by the real arm's safety
filter (robot_nodes/piper/safety.py) and the simulator's episode loop (sim_nodes/session.py),
and the action rules a simulated embodiment applies to every target (``PairLimits`` for the
ALOHA PiPER pair, ``ActionRange`` for normalised actions such as LIBERO's).

Pure numpy. The numbers come from one parameter file, config/piper_safety.yaml (keys under
``piper_node: ros__parameters: safety:``). An arm's target is 7 values: six joints in rad and
the gripper opening (1 = open, 0 = closed).

Rules (each reports a `LimitNote` naming the rule when it acts):

``joint_limit``
    joints are clipped to the tightest of the SDK's and the model's ranges
    (`PiperKinematics.limits`), optionally tightened by ``joint_limits_rad``, shrunk by
    ``joint_limit_margin_rad`` (the real arm; the sim uses the ranges without the margin).
``gripper_range``
    the gripper opening is clipped to [gripper_min, gripper_max].
``max_speed`` / ``max_step``
    the joint step from the reference (the last command) is scaled down, direction kept, so
    no joint moves faster than max_joint_speed over ``dt`` nor more than max_step in one
    command (``dt=None``: the step rule alone). The real arm uses the file's conservative
    speed caps; the sim (`load_sim_limits`) the arm's own top speed over its control period.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.kinematics import PiperKinematics
from vla_bridge.embodiment.workcell import arm_slice
from vla_bridge.paths import config_path

SAFETY_FILE = "piper_safety.yaml"
ARM_DIM = 7  # six joints + gripper

RULE_JOINT_LIMIT = "joint_limit"
RULE_GRIPPER = "gripper_range"
RULE_SPEED = "max_speed"
RULE_STEP = "max_step"
RULE_ACTION_RANGE = "action_range"

LIMIT_KEYS = frozenset({"joint_limit_margin_rad", "joint_limits_rad", "max_joint_speed_rad_s",
                        "max_step_rad", "gripper_min", "gripper_max", "arm_max_joint_speed_rad_s"})
ARM_MAX_JOINT_SPEED = 3.0  # rad/s, the PiPER's own factory cap


@dataclass(frozen=True)
class LimitNote:
    """A rule that changed a target, and how."""
    rule: str
    detail: str


def read_safety_file(path: str | Path | None = None) -> dict:
    """The safety mapping of a params file: plain keys, or under ``<node>: ros__parameters:
    safety:`` (the ROS 2 params-file layout config/piper_safety.yaml uses)."""
    import yaml

    path = Path(path) if path else config_path(SAFETY_FILE)
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    for value in data.values():  # <node name>: {ros__parameters: {...}}
        if isinstance(value, dict) and "ros__parameters" in value:
            data = value["ros__parameters"] or {}
            break
    return dict(data.get("safety", data))


def joint_ranges(d: dict, kin: PiperKinematics | None = None, margin: bool = True) -> np.ndarray:
    """(6, 2) joint ranges (rad) from the file's keys; ``margin=False`` leaves the margin out."""
    limits = (kin or PiperKinematics()).limits.copy()  # tightest of the SDK table and the model
    extra = d.get("joint_limits_rad")
    if extra:
        extra = np.asarray(extra, dtype=float).reshape(6, 2)
        limits[:, 0] = np.maximum(limits[:, 0], extra[:, 0])  # only ever tightens
        limits[:, 1] = np.minimum(limits[:, 1], extra[:, 1])
    if margin:
        m = float(d.get("joint_limit_margin_rad", 0.02))
        limits = limits + np.array([m, -m])
    if np.any(limits[:, 0] >= limits[:, 1]):
        raise ValueError(f"joint limits are empty after the margin: {limits.tolist()}")
    return limits


@dataclass(frozen=True)
class JointLimits:
    """The limit and step rules of one arm; see the module docstring."""
    joint_limits: np.ndarray  # (6, 2) rad, effective
    max_joint_speed: np.ndarray  # (6,) rad/s
    max_step: float  # rad per command
    gripper_min: float = 0.0
    gripper_max: float = 1.0

    @classmethod
    def from_dict(cls, d: dict, kin: PiperKinematics | None = None,
                  margin: bool = True) -> JointLimits:
        """From the limit keys of config/piper_safety.yaml (others are ignored here)."""
        speed = np.broadcast_to(np.asarray(d.get("max_joint_speed_rad_s", 1.0), dtype=float),
                                (6,)).copy()
        limits = cls(joint_limits=joint_ranges(d, kin, margin), max_joint_speed=speed,
                     max_step=float(d.get("max_step_rad", 0.1)),
                     gripper_min=float(d.get("gripper_min", 0.0)),
                     gripper_max=float(d.get("gripper_max", 1.0)))
        limits.validate()
        return limits

    def validate(self) -> None:
        if np.any(self.max_joint_speed <= 0) or self.max_step <= 0:
            raise ValueError("max_joint_speed_rad_s and max_step_rad must be positive")
        if not 0.0 <= self.gripper_min < self.gripper_max <= 1.0:
            raise ValueError(f"need 0 <= gripper_min < gripper_max <= 1, got "
                             f"{self.gripper_min}, {self.gripper_max}")

    def within(self, target, tol: float = 1e-9) -> bool:
        """Whether an arm target (7,) is inside the joint and gripper ranges."""
        t = np.asarray(target, dtype=float)
        lo, hi = self.joint_limits[:, 0], self.joint_limits[:, 1]
        return bool(np.all(t[:6] >= lo - tol) and np.all(t[:6] <= hi + tol)
                    and self.gripper_min - tol <= t[6] <= self.gripper_max + tol)

    def clip(self, cand: np.ndarray) -> tuple[np.ndarray, list[LimitNote]]:
        """The arm target (7,) clipped to the joint and gripper ranges, and what was clipped."""
        notes: list[LimitNote] = []
        lim = self.joint_limits
        clipped = np.array(cand, dtype=float)
        clipped[:6] = np.clip(cand[:6], lim[:, 0], lim[:, 1])
        over = np.flatnonzero(clipped[:6] != cand[:6])
        if over.size:
            parts = [f"joint{i + 1} {cand[i]:+.4f} -> {clipped[i]:+.4f}" for i in over]
            notes.append(LimitNote(RULE_JOINT_LIMIT, "clipped " + ", ".join(parts)))
        g = min(max(cand[6], self.gripper_min), self.gripper_max)
        if g != cand[6]:
            notes.append(LimitNote(RULE_GRIPPER, f"gripper {cand[6]:.4f} -> {g:.4f}"))
            clipped[6] = g
        return clipped, notes

    def limit_step(self, cand: np.ndarray, reference: np.ndarray,
                   dt: float | None) -> tuple[np.ndarray, LimitNote | None]:
        """The arm target (7,) with its joint step from `reference` scaled down (direction
        kept) to the step and speed rules; `dt` None: no speed rule (no time since a command)."""
        delta = cand[:6] - reference[:6]
        step_allow = np.full(6, self.max_step)
        if dt is not None:
            dt = max(dt, 0.0)
            speed_allow = self.max_joint_speed * dt
        else:
            speed_allow = np.full(6, np.inf)
        allow = np.minimum(step_allow, speed_allow)
        mag = np.abs(delta)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(mag > 0, np.where(allow > 0, mag / allow, np.inf), 0.0)
        worst = int(np.argmax(ratios))
        ratio = float(ratios[worst])
        if ratio <= 1.0 + 1e-12:
            return cand, None
        out = np.array(cand, dtype=float)
        out[:6] = reference[:6] + (delta / ratio if np.isfinite(ratio) else 0.0)
        return out, self._step_note(worst, mag[worst], ratio, dt, speed_allow, step_allow)

    def _step_note(self, j: int, mag: float, ratio: float, dt, speed_allow,
                   step_allow) -> LimitNote:
        if speed_allow[j] < step_allow[j]:
            speed = mag / dt if dt else np.inf
            return LimitNote(RULE_SPEED, f"joint{j + 1} asked {speed:.3f} rad/s over {dt:.4f} s "
                                         f"(max {self.max_joint_speed[j]:.3f}); step scaled by "
                                         f"{1 / ratio:.3f}")
        return LimitNote(RULE_STEP, f"joint{j + 1} step {mag:.4f} rad > max {self.max_step} "
                                    f"rad per command; step scaled by {1 / ratio:.3f}")


def load_joint_limits(path: str | Path | None = None, margin: bool = True) -> JointLimits:
    """The limit rules of `path` (default: the package's config/piper_safety.yaml)."""
    return JointLimits.from_dict(read_safety_file(path), margin=margin)


def load_sim_limits(path: str | Path | None = None) -> JointLimits:
    """The rules the simulator applies, from the same file: the joint ranges without the
    hardware margin, the gripper range, and the speed rule at the arm's own top speed
    (``arm_max_joint_speed_rad_s``) instead of the filter's conservative caps; no per-command
    max_step (the sim's commands come one per control period, so the speed rule covers it)."""
    d = read_safety_file(path)
    lim = JointLimits.from_dict(d, margin=False)
    speed = np.broadcast_to(np.asarray(d.get("arm_max_joint_speed_rad_s", ARM_MAX_JOINT_SPEED),
                                       dtype=float), (6,)).copy()
    sim = replace(lim, max_joint_speed=speed, max_step=np.inf)
    sim.validate()
    return sim


# ------------------------------------------------------------------ a sim embodiment's rule
# What every simulated target passes before it is applied (`SimBackend.action_limits`, used
# by `SimSession`): ``enforce(target, last_command, dt)`` returns the command to execute and a
# (part, LimitNote) for each rule that changed it.

class PairLimits:
    """The ALOHA PiPER pair: each arm's 7 values clipped to its ranges, then step-limited
    from the last executed command (`JointLimits`, the sim's `load_sim_limits`)."""

    def __init__(self, joints: JointLimits | None = None):
        self.joints = joints if joints is not None else load_sim_limits()

    def enforce(self, target, last, dt: float) -> tuple[np.ndarray, list[tuple[str, LimitNote]]]:
        target = np.asarray(target, dtype=float)
        out, notes = target.copy(), []
        for arm in contract.ARMS:
            sl = arm_slice(arm)
            cand, arm_notes = self.joints.clip(target[sl])
            cand, note = self.joints.limit_step(cand, last[sl], dt)
            notes += [(arm, n) for n in arm_notes + ([note] if note is not None else [])]
            out[sl] = cand
        return out, notes


@dataclass(frozen=True)
class ActionRange:
    """Normalised actions: each value clipped to [low, high] (no step rule: the actions are
    deltas or openings, not positions); `part` names them in the notes."""
    part: str
    names: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    def enforce(self, target, last, dt: float) -> tuple[np.ndarray, list[tuple[str, LimitNote]]]:
        target = np.asarray(target, dtype=float)
        out = np.clip(target, self.low, self.high)
        return out, [(self.part, LimitNote(RULE_ACTION_RANGE, f"{name} {a:g} -> {b:g}"))
                     for name, a, b in zip(self.names, target, out) if a != b]
