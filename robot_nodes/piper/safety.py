"""The safety filter in front of every PiPER command. Pure numpy, no rclpy, no SDK.

One `SafetyFilter` per arm. Each command tick the node calls ``step(target, measured, now)``
with the target it wants to send (7 values: six joints in rad, gripper opening 0..1) or None
when it has no new target (the filter then keeps heading for the last valid target), and
sends what comes back (or nothing when it returns None).

Rules, in the order they apply (each returns a `SafetyEvent` naming the rule when it acts):

``wrong_length`` / ``non_finite``
    a target that is not 7 finite numbers is rejected whole, as if none had arrived.
``joint_limit`` / ``gripper_range`` / ``max_speed`` / ``max_step``
    the rules shared with the sim (`vla_bridge.embodiment.limits.JointLimits`): joints
    clipped to the tightest of the SDK's and the model's ranges shrunk by a margin, the
    gripper to [gripper_min, gripper_max], and the joint step from the last command scaled
    down (direction kept) so no joint moves faster than its max speed over the time since
    the last command, nor more than max_step in one command.
``workspace``
    the flange and the tool centre point, by the SDK's modified-DH forward kinematics placed
    at the arm's mount (`workcell.MOUNTS`), must stay inside a world-frame box; a command
    that would take them further outside is replaced by the last command (a command that
    brings an outside arm back towards the box is allowed).
``watchdog``
    when no valid target has arrived for longer than watchdog_timeout_s, the arm holds where
    it is measured (joints) with the last gripper command (so a grasp is kept) instead of
    heading on for the last target. ``hold()`` starts the same hold at once;
    ``hold_last_command()`` starts one at the last command sent instead of the measured
    joints: the node calls it when the policy's heartbeat is older than
    policy_heartbeat_timeout_s, even while a chunk still has actions (a dead policy's chunk
    is not played to its end, and the arm does not step back to where it trails).
``max_speed`` against the sends
    a node that reports its sends (``sent(command, t_done)``, ``t_done`` read when the send
    returned) gets its steps measured from the last command sent and sized by the time from
    that send's return to ``now``; read ``now`` right before ``step`` and send right after,
    and two sends are at least that far apart on the wire, so no joint there is faster than
    its cap however late a loaded CPU makes a send after its tick started.
``estop`` / ``estop_latched`` / ``resume``
    ``estop()`` latches: every later step returns None (send nothing) until ``resume()``,
    which restarts from the measured position.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vla_bridge.embodiment.kinematics import TCP_DEPTH, ArmMount, PiperKinematics
from vla_bridge.embodiment.limits import (LIMIT_KEYS, RULE_GRIPPER, RULE_JOINT_LIMIT,  # noqa: F401
                                          RULE_SPEED, RULE_STEP, SAFETY_FILE, JointLimits,
                                          read_safety_file)
from vla_bridge.embodiment.workcell import MOUNTS

DIM = 7  # six joints + gripper

RULE_LENGTH = "wrong_length"
RULE_NON_FINITE = "non_finite"
RULE_WORKSPACE = "workspace"
RULE_WATCHDOG = "watchdog"
RULE_ESTOP = "estop"
RULE_ESTOP_LATCHED = "estop_latched"
RULE_RESUME = "resume"


@dataclass(frozen=True)
class SafetyEvent:
    rule: str
    detail: str
    arm: str = ""
    stamp: float = 0.0

    def __str__(self) -> str:
        return f"[{self.arm}] {self.rule}: {self.detail}"


@dataclass
class SafetyOutput:
    command: np.ndarray | None  # (7,) what to send, or None: send nothing
    events: list[SafetyEvent] = field(default_factory=list)
    holding: bool = False  # the watchdog (or a rejected target) is holding position

    def rules(self) -> set[str]:
        return {e.rule for e in self.events}


@dataclass(frozen=True)
class SafetyParams:
    joint_limits: np.ndarray  # (6, 2) rad, effective (margin applied)
    max_joint_speed: np.ndarray  # (6,) rad/s
    max_step: float  # rad per command
    gripper_min: float = 0.0
    gripper_max: float = 1.0
    workspace_check: bool = True
    workspace_min: np.ndarray = field(default_factory=lambda: np.array([-0.70, -0.60, 0.755]))
    workspace_max: np.ndarray = field(default_factory=lambda: np.array([0.70, 0.35, 1.30]))
    watchdog_timeout_s: float = 0.5
    # hold when the policy's heartbeat is older than this (0: no heartbeat check)
    policy_heartbeat_timeout_s: float = 0.15
    tcp_depth: float = TCP_DEPTH

    @classmethod
    def from_dict(cls, d: dict, kin: PiperKinematics | None = None) -> SafetyParams:
        """From the keys of config/piper_safety.yaml (missing keys take the defaults below)."""
        known = LIMIT_KEYS | {"workspace_check", "workspace_min_m", "workspace_max_m",
                              "watchdog_timeout_s", "policy_heartbeat_timeout_s", "tcp_depth_m"}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown safety parameters {unknown}; known: {sorted(known)}")
        lim = JointLimits.from_dict(d, kin or PiperKinematics())
        wmin = np.asarray(d.get("workspace_min_m", [-0.70, -0.60, 0.755]), dtype=float)
        wmax = np.asarray(d.get("workspace_max_m", [0.70, 0.35, 1.30]), dtype=float)
        params = cls(joint_limits=lim.joint_limits, max_joint_speed=lim.max_joint_speed,
                     max_step=lim.max_step, gripper_min=lim.gripper_min,
                     gripper_max=lim.gripper_max,
                     workspace_check=bool(d.get("workspace_check", True)),
                     workspace_min=wmin, workspace_max=wmax,
                     watchdog_timeout_s=float(d.get("watchdog_timeout_s", 0.5)),
                     policy_heartbeat_timeout_s=float(d.get("policy_heartbeat_timeout_s", 0.15)),
                     tcp_depth=float(d.get("tcp_depth_m", TCP_DEPTH)))
        params.validate()
        return params

    @property
    def limits(self) -> JointLimits:
        """The joint-limit and step rules (shared with the sim: embodiment/limits.py)."""
        return JointLimits(self.joint_limits, self.max_joint_speed, self.max_step,
                           self.gripper_min, self.gripper_max)

    def validate(self) -> None:
        self.limits.validate()
        if self.workspace_min.shape != (3,) or self.workspace_max.shape != (3,) or \
                np.any(self.workspace_min >= self.workspace_max):
            raise ValueError(f"workspace box needs 3 values each with min < max, got "
                             f"{self.workspace_min.tolist()} .. {self.workspace_max.tolist()}")
        if self.watchdog_timeout_s <= 0:
            raise ValueError("watchdog_timeout_s must be positive")
        if self.policy_heartbeat_timeout_s < 0:
            raise ValueError("policy_heartbeat_timeout_s must be >= 0 (0: no heartbeat check)")

    def replace(self, **changes) -> SafetyParams:
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        values.update(changes)
        params = SafetyParams(**values)
        params.validate()
        return params


def load_safety_params(path: str | Path | None = None) -> SafetyParams:
    """Safety parameters from `path` (default: the package's config/piper_safety.yaml)."""
    return SafetyParams.from_dict(read_safety_file(path))


class EventLogLimiter:
    """Which safety events become log lines: the first of each (arm, rule), then at most one
    per `period_s` carrying the count of those not logged since (an arm resting on a limit
    would otherwise log every command tick)."""

    def __init__(self, period_s: float = 5.0):
        self.period_s = float(period_s)
        self._state: dict[tuple[str, str], tuple[float, int]] = {}  # -> (logged at, skipped)

    def lines(self, events: list[SafetyEvent], now: float, force: bool = False) -> list[str]:
        """The log lines for `events` at time `now`; `force` logs each of them."""
        out = []
        for e in events:
            key = (e.arm, e.rule)
            last, skipped = self._state.get(key, (None, 0))
            if force or last is None or now - last >= self.period_s:
                more = f" (+{skipped} more in the last {now - last:.1f} s)" if skipped else ""
                out.append(f"safety {e}{more}")
                self._state[key] = (now, 0)
            else:
                self._state[key] = (last, skipped + 1)
        return out


class SafetyFilter:
    """Safety rules for one arm; see the module docstring."""

    def __init__(self, arm: str, params: SafetyParams | None = None,
                 kin: PiperKinematics | None = None, mount: ArmMount | None = None):
        self.arm = arm
        self.kin = kin or PiperKinematics()
        self.params = params or SafetyParams.from_dict({}, self.kin)
        self.mount = mount or MOUNTS[arm]
        self._world_from_base = self.mount.world_from_base()
        self.last_command: np.ndarray | None = None
        self.last_command_time: float | None = None
        self.last_input_time: float | None = None
        self.last_target: np.ndarray | None = None  # last valid target, before the rules
        self.holding = False
        self._hold_target: np.ndarray | None = None
        self.latched = False
        self.latch_reason = ""
        self.rejected_while_latched = 0
        self.last_sent: np.ndarray | None = None  # the last command sent (sent())
        self.last_sent_done: float | None = None  # when that send returned

    # ------------------------------------------------------------------ e-stop latch
    def estop(self, reason: str = "emergency stop", now: float = 0.0) -> list[SafetyEvent]:
        self.latched = True
        self.latch_reason = reason
        self.rejected_while_latched = 0
        return [self._event(RULE_ESTOP, f"latched: {reason}; no command is sent until resume", now)]

    def resume(self, measured=None, now: float = 0.0) -> list[SafetyEvent]:
        """Release the latch; the next command starts from the measured position."""
        was = self.latched
        self.reset()
        detail = (f"released after {self.rejected_while_latched} rejected targets "
                  f"({self.latch_reason})" if was else "not latched")
        self.latched = False
        return [self._event(RULE_RESUME, detail, now)]

    def reset(self) -> None:
        """Forget the command history (after enabling or resuming)."""
        self.last_command = None
        self.last_command_time = None
        self.last_input_time = None
        self.last_target = None
        self.holding = False
        self._hold_target = None
        self.last_sent = None
        self.last_sent_done = None

    # ------------------------------------------------------------------ holds
    def hold(self, measured, now: float, reason: str) -> list[SafetyEvent]:
        """Hold the measured joints (with the last gripper command) until a new target comes,
        whatever target was still ahead. Nothing happens when the arm was never commanded
        (nothing to stop), already holds, or is latched."""
        if self.latched or self.holding or self.last_command is None:
            return []
        return [self._start_hold(np.asarray(measured, dtype=float), now,
                                 f"{reason}; holding the measured position")]

    def hold_last_command(self, now: float, reason: str) -> list[SafetyEvent]:
        """Hold the last command sent (``sent()``; else the last one returned) until a new
        target comes, whatever target was still ahead: the arm stops where it was told to be,
        never stepping back to the measured position that trails the command (on a moving
        arm that trails by tens of mrad). The node calls this when the policy's heartbeat
        went silent. Nothing happens when the arm was never commanded, already holds, or is
        latched."""
        if self.latched or self.holding or self.last_command is None:
            return []
        last = self.last_sent if self.last_sent is not None else self.last_command
        self.holding = True
        self._hold_target = np.asarray(last, dtype=float).copy()
        return [self._event(RULE_WATCHDOG, f"{reason}; holding the last commanded target", now)]

    def _start_hold(self, measured, now: float, detail: str) -> SafetyEvent:
        self.holding = True
        gripper = self.last_command[6] if self.last_command is not None else measured[6]
        self._hold_target = np.concatenate([measured[:6], [gripper]])
        return self._event(RULE_WATCHDOG, detail, now)

    # ------------------------------------------------------------------ the filter
    def step(self, target, measured, now: float) -> SafetyOutput:
        """The command to send for `target` (None: no new target) given the measured (7,)."""
        events: list[SafetyEvent] = []
        measured = np.asarray(measured, dtype=float)
        if self.latched:
            if target is not None:
                self.rejected_while_latched += 1
                events.append(self._event(RULE_ESTOP_LATCHED,
                                          f"target rejected: {self.latch_reason}", now))
            return SafetyOutput(None, events)

        fresh = None
        if target is not None:
            fresh = self._validate(target, events, now)
        if fresh is not None:
            self.last_input_time = now
            self.last_target = fresh.copy()
            self.holding = False
            candidate = fresh
        else:
            candidate = self._no_input(measured, now, events)
            if candidate is None:
                return SafetyOutput(None, events)

        reference = self._reference(measured)
        candidate = self._clip_limits(candidate, events, now)
        candidate = self._limit_speed(candidate, reference, now, events)
        candidate = self._check_workspace(candidate, reference, events, now)
        self.last_command = candidate
        self.last_command_time = now
        return SafetyOutput(candidate.copy(), events, holding=self.holding)

    def _validate(self, target, events, now) -> np.ndarray | None:
        try:
            arr = np.asarray(target, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            events.append(self._event(RULE_NON_FINITE, f"target is not numeric: {target!r}", now))
            return None
        if arr.shape != (DIM,):
            events.append(self._event(
                RULE_LENGTH, f"target has {arr.size} values, expected {DIM} "
                             f"(joint1..6 in rad, gripper 0..1); rejected", now))
            return None
        bad = ~np.isfinite(arr)
        if bad.any():
            events.append(self._event(
                RULE_NON_FINITE, f"target has NaN/Inf at indices {np.flatnonzero(bad).tolist()}; "
                                 f"rejected", now))
            return None
        return arr.copy()

    def _no_input(self, measured, now, events) -> np.ndarray | None:
        """What to aim for when no valid target arrived: the watchdog hold, else the last
        valid target (a speed-limited move keeps going), else nothing."""
        if self.last_input_time is not None and not self.holding and \
                now - self.last_input_time > self.params.watchdog_timeout_s:
            events.append(self._start_hold(
                measured, now, f"no target for {now - self.last_input_time:.3f} s "
                               f"(> {self.params.watchdog_timeout_s} s); holding the measured "
                               f"position"))
        if self.holding:
            return self._hold_target.copy()
        if self.last_target is not None:
            return self.last_target.copy()
        return None  # never commanded: nothing to send

    def _reference(self, measured) -> np.ndarray:
        if self.last_sent is not None:  # what is on the wire, when the node reports sends
            return self.last_sent
        if self.last_command is not None:
            return self.last_command
        if measured.shape != (DIM,):
            raise ValueError(f"measured state must have {DIM} values, got {measured.shape}")
        return measured

    def _clip_limits(self, cand, events, now) -> np.ndarray:
        clipped, notes = self.params.limits.clip(cand)
        events.extend(self._event(n.rule, n.detail, now) for n in notes)
        return clipped

    def _limit_speed(self, cand, reference, now, events) -> np.ndarray:
        since = self.last_sent_done if self.last_sent is not None else self.last_command_time
        dt = None if since is None else now - since
        out, note = self.params.limits.limit_step(cand, reference, dt)
        if note is not None:
            events.append(self._event(note.rule, note.detail, now))
        return out

    def sent(self, command, t_done: float) -> None:
        """`command` went to the arm; the send returned at `t_done`. Later steps start from
        it, their time counted from `t_done` (see the module notes on max_speed)."""
        self.last_sent = np.asarray(command, dtype=float).copy()
        self.last_sent_done = float(t_done)

    # ------------------------------------------------------------------ workspace
    def workspace_points(self, q) -> np.ndarray:
        """(2, 3) world positions of the flange and the TCP for joints q (6,)."""
        T = self._world_from_base @ self.kin.dh_flange(np.asarray(q, dtype=float)[:6])
        tcp = T @ np.array([0.0, 0.0, self.params.tcp_depth, 1.0])
        return np.stack([T[:3, 3], tcp[:3]])

    def outside_distance(self, q) -> float:
        """Summed distance (m) of the flange and TCP outside the workspace box (0 inside)."""
        pts = self.workspace_points(q)
        below = np.maximum(self.params.workspace_min - pts, 0.0)
        above = np.maximum(pts - self.params.workspace_max, 0.0)
        return float(np.linalg.norm(below + above, axis=1).sum())

    def _check_workspace(self, cand, reference, events, now) -> np.ndarray:
        if not self.params.workspace_check:
            return cand
        out_c = self.outside_distance(cand[:6])
        if out_c <= 0.0:
            return cand
        out_r = self.outside_distance(reference[:6])
        if out_c <= out_r + 1e-9:
            return cand  # already outside and not getting worse: let it come back
        pts = self.workspace_points(cand[:6])
        which = ["flange", "tcp"]
        where = "; ".join(f"{which[k]} at ({p[0]:+.3f}, {p[1]:+.3f}, {p[2]:+.3f})"
                          for k, p in enumerate(pts))
        events.append(self._event(
            RULE_WORKSPACE, f"target leaves the box {self.params.workspace_min.tolist()}..."
                            f"{self.params.workspace_max.tolist()} by {out_c:.3f} m ({where}); "
                            f"joints kept at the last command", now))
        out = reference.copy()
        out[6] = cand[6]  # the gripper doesn't move the flange
        return out

    def _event(self, rule: str, detail: str, now: float) -> SafetyEvent:
        return SafetyEvent(rule, detail, self.arm, now)
