"""A PiPER leader (master) arm emulator on a CAN bus (python-can; a virtual bus by default).

On a real AgileX leader/follower pair the leader arm, configured as the teaching input arm
(``MasterSlaveConfig(0xFA, ...)``) and moved by hand, puts its joint positions on the CAN bus
as the follower's control frames, and the follower (``MasterSlaveConfig(0xFC, ...)``, no
enable needed) obeys them. ``FakeLeader`` sends the same frames, in the layout the installed
``piper_sdk`` encodes them (big-endian, protocol V2), every tick (``rate_hz``):

* 0x151 MotionCtrl_2: CAN command mode, MOVE J, ``speed_percent``;
* 0x155..0x157 JointCtrl: the joint targets (0.001 deg);
* 0x159 GripperCtrl: the gripper stroke (0.001 mm), ``effort`` (0.001 N*m), enable code 0x01.

``piper_sdk`` reads them back on that bus as ``GetArmJointCtrl()`` / ``GetArmGripperCtrl()``;
the fake follower (``fake_piper.FakePiper(linked=True)``) obeys them as a linked follower does.

Instead of a hand it follows a scripted plan: ``play(targets, times)`` moves from the target
being sent through ``targets[k]`` (six joints in rad and the contract's normalised gripper,
1 = open) at ``times[k]`` seconds after the call, interpolating linearly at every tick, and
then holds the last one; between plans it holds. Every target it put on the bus is kept
(``sent``: bus time, the 7 values exactly as the frames carry them, i.e. quantised to
0.001 deg and 0.001 mm), so a test can compare what was recorded with what was commanded.

Fault injection: ``silent`` (nothing is sent, like a leader that is off or unlinked).
No rclpy here; the PiPER node starts one per arm with fake hardware in teleop mode.
"""
from __future__ import annotations

import struct
import threading
import time
from collections import deque

import can
import numpy as np

from vla_bridge.robot_nodes.piper.arm import (GRIPPER_STROKE_MAX_M, gripper_to_sdk_stroke,
                                              rad_to_sdk_joints, sdk_joints_to_rad,
                                              sdk_stroke_to_gripper)
from vla_bridge.robot_nodes.piper.fake_piper import (CTRL_CAN, ID_GRIPPER_CTRL, ID_JOINT_CTRL,
                                                     ID_MOTION_CTRL_2)

MOVE_J = 0x01
GRIPPER_ENABLE = 0x01


def interpolate(start: np.ndarray, targets: np.ndarray, times: np.ndarray, t: float) -> np.ndarray:
    """The plan's target at `t` seconds after it began: linear from `start` (time 0) through
    targets[k] at times[k]; the last target after the end."""
    knots_t = np.concatenate([[0.0], times])
    knots = np.vstack([start, targets])
    if t >= knots_t[-1]:
        return knots[-1].copy()
    k = max(int(np.searchsorted(knots_t, t, side="right")) - 1, 0)
    t_a, t_b = knots_t[k], knots_t[k + 1]
    w = 0.0 if t_b <= t_a else (t - t_a) / (t_b - t_a)
    return (1.0 - w) * knots[k] + w * knots[k + 1]


def frames_for(target: np.ndarray, speed_percent: int, effort: int,
               stroke_max_m: float = GRIPPER_STROKE_MAX_M) -> tuple[list, np.ndarray]:
    """The leader's frames of one tick for a 7-value target, and the 7 values they carry."""
    units = rad_to_sdk_joints(target[:6])
    stroke = gripper_to_sdk_stroke(float(target[6]), stroke_max_m)
    frames = [(ID_MOTION_CTRL_2, bytes([CTRL_CAN, MOVE_J, int(speed_percent), 0, 0, 0, 0, 0]))]
    frames += [(can_id, struct.pack(">ii", units[2 * k], units[2 * k + 1]))
               for k, can_id in enumerate(ID_JOINT_CTRL)]
    frames.append((ID_GRIPPER_CTRL, struct.pack(">iHBB", stroke, effort, GRIPPER_ENABLE, 0)))
    gripper = sdk_stroke_to_gripper(stroke, stroke_max_m)
    carried = np.concatenate([sdk_joints_to_rad(units), [gripper]])
    return frames, carried


class FakeLeader:
    """Leader arm emulator on CAN channel `channel` (see the module docstring). Use
    start()/stop() or `with`."""

    def __init__(self, channel: str, *, interface: str = "virtual", rate_hz: float = 100.0,
                 initial=None, speed_percent: int = 100, effort_nm: float = 1.0,
                 stroke_max_m: float = GRIPPER_STROKE_MAX_M, max_recorded: int = 200_000):
        self.channel, self.interface = channel, interface
        self.period = 1.0 / float(rate_hz)
        self.speed_percent = int(speed_percent)
        self.effort = int(min(max(round(effort_nm * 1000.0), 0), 5000))
        self.stroke_max_m = float(stroke_max_m)
        start = np.zeros(7) if initial is None else np.asarray(initial, dtype=float)
        if start.shape != (7,):
            raise ValueError(f"initial must have 7 values (6 joints, gripper), got {start.shape}")
        self.silent = False
        self._lock = threading.Lock()
        self._target = start.copy()
        self._plan: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None
        self._plan_end = 0.0  # monotonic time the last plan ends
        self._sent: deque[tuple[float, np.ndarray]] = deque(maxlen=max_recorded)
        self._bus: can.BusABC | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeLeader:
        if self._thread is not None:
            return self
        kwargs = {"receive_own_messages": False}
        if self.interface == "virtual":
            kwargs["rx_queue_size"] = 10_000
        self._bus = can.Bus(channel=self.channel, interface=self.interface, **kwargs)
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"fake_leader[{self.channel}]",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._bus is not None:
            self._bus.shutdown()
            self._bus = None

    def __enter__(self) -> FakeLeader:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ the plan
    def play(self, targets, times) -> float:
        """Follow `targets` [N, 7] reached at `times` [N] s (increasing) from now; returns the
        plan's duration."""
        targets = np.asarray(targets, dtype=float)
        times = np.asarray(times, dtype=float)
        if targets.ndim != 2 or targets.shape[1] != 7 or len(targets) == 0:
            raise ValueError(f"a leader plan is [N, 7] targets, got {list(targets.shape)}")
        if times.shape != (len(targets),) or not np.all(np.diff(times) > 0) or times[0] <= 0:
            raise ValueError("a leader plan needs one increasing time (> 0 s) per target")
        if not np.all(np.isfinite(targets)):
            raise ValueError("a leader plan must be finite")
        now = time.monotonic()
        with self._lock:
            self._plan = (self._target.copy(), targets, times, now)
            self._plan_end = now + float(times[-1])
        return float(times[-1])

    def hold(self, target) -> None:
        """Stop any plan and send `target` (7 values) from now on."""
        with self._lock:
            self._plan, self._target = None, np.asarray(target, dtype=float).copy()
            self._plan_end = time.monotonic()

    @property
    def playing(self) -> bool:
        return time.monotonic() < self._plan_end

    @property
    def target(self) -> np.ndarray:
        with self._lock:
            return self._target.copy()

    def sent(self, since: float | None = None) -> list[tuple[float, np.ndarray]]:
        """(bus time, 7 values carried) of every tick's frames sent (after `since`)."""
        out = list(self._sent)
        return out if since is None else [s for s in out if s[0] > since]

    # ------------------------------------------------------------------ the tick
    def _current(self, now: float) -> np.ndarray:
        with self._lock:
            if self._plan is not None:
                start, targets, times, t0 = self._plan
                self._target = interpolate(start, targets, times, now - t0)
                if now - t0 >= times[-1]:
                    self._plan = None
            return self._target.copy()

    def _loop(self) -> None:
        bus, next_t = self._bus, time.monotonic()
        while not self._stop.is_set():
            target = self._current(time.monotonic())
            try:  # the follower's feedback reaches this bus too: a leader reads none of it
                while bus.recv(timeout=0.0) is not None:
                    pass
            except can.CanError:
                break
            if not self.silent:
                frames, carried = frames_for(target, self.speed_percent, self.effort,
                                             self.stroke_max_m)
                # logged before it goes out: a follower never holds a frame sent() lacks
                self._sent.append((time.time(), carried))
                try:
                    for can_id, data in frames:
                        bus.send(can.Message(arbitration_id=can_id, data=data,
                                             is_extended_id=False))
                except can.CanError:
                    pass  # a full receiver queue: the next tick sends again
            next_t += self.period
            delay = next_t - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_t = time.monotonic()
