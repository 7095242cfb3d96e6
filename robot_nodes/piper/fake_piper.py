"""A PiPER firmware emulator on a CAN bus (python-can; a virtual bus by default).

It speaks the CAN protocol that ``piper_sdk`` (V2 interface, protocol V2) speaks to a real
PiPER arm, so the real SDK, our driver (`piper.arm`) and the ROS node can be exercised
end to end without hardware. Every frame layout below is the one the installed SDK encodes
and decodes (big-endian fields, see ``piper_sdk/protocol/protocol_v2``).

What it answers
---------------
* periodic feedback, every tick (``rate_hz``, 200 Hz like the arm): arm status 0x2A1,
  end pose 0x2A2..0x2A4 (flange pose from the SDK's modified-DH table, 0.001 mm / 0.001 deg,
  ZYX Euler as the SDK's own FK reports it), joint angles 0x2A5..0x2A7 (0.001 deg), gripper
  0x2A8 (stroke 0.001 mm, effort 0.001 N*m, driver status bits);
* driver info: high speed 0x251..0x256 (every ``high_speed_every`` ticks) and low speed
  0x261..0x266 (every ``low_speed_every`` ticks) whose status bit 6 is the per-motor
  "driver enabled" flag ``GetArmEnableStatus`` / ``EnablePiper`` read;
* queries: 0x472 (angle limits / max speed -> 0x473; max acceleration -> 0x47C) and the
  firmware-version request 0x4AF (an ASCII ``S-V...`` string in 0x4AF frames), which the SDK
  sends from ``ConnectPort`` (``PiperInit``).

What it obeys
-------------
* 0x471 motor enable / disable (motor 1..6, or 7 / 0xFF for all motors and the gripper),
  after ``enable_delay_s``; enabling holds the current position;
* 0x151 MotionCtrl_2: control mode (0x01 = CAN command mode), move mode, speed percent;
* 0x155..0x157 JointCtrl: joint targets (0.001 deg), obeyed only when every joint is
  enabled, the arm is in CAN command mode and not emergency-stopped; targets outside the
  firmware's joint range are clamped and flagged (arm status 0x04 + per-joint limit bits);
* 0x159 GripperCtrl: stroke target (0.001 mm, clamped to the stroke), effort, enable code;
* 0x150 MotionCtrl_1 emergency stop: 0x01 freezes the arm where it is (status 0x01) and
  ignores motion commands; 0x02 (resume / reset) clears it, drops to standby mode and
  disables the motors, so a driver has to enable and re-enter CAN mode, as on the arm.

Motion model: each joint follows its target with a first-order lag (``joint_time_constant_s``)
whose speed is capped at ``max_joint_speed_rad_s`` times the MotionCtrl_2 speed percent; the
gripper likewise (``gripper_time_constant_s``). No gravity, contact or collision model.

Every frame the fake receives is recorded (`frames`) with the sender's bus timestamp and the
time the fake handled it, so tests can assert exactly what reached the bus and measure latency.

Fault injection for tests: ``refuse_enable`` (drivers never report enabled) and ``silent``
(no feedback at all, like a powered-off arm), and the bring-up faults `vla-bridge doctor`
names, by name in `FAULTS` (``faults=`` of the constructor, `inject()`, or piper_node's
``fake_faults`` parameter): silent bus, feedback on offset ids, enable refused, zero joints
in standby, lagging gripper feedback, corrupted firmware limits, leader mode, e-stop
dropped, low feedback rate.
"""
from __future__ import annotations

import math
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import can
import numpy as np

from vla_bridge.embodiment.kinematics import PiperKinematics, load_piper_data
from vla_bridge.robot_nodes.piper.fake_faults import (FAULT_SETTINGS, FAULTS,  # noqa: F401
                                                       corrupted_limits, parse_faults)

# ----------------------------------------------------------------------- CAN ids (SDK V2)
ID_MOTION_CTRL_1 = 0x150
ID_MOTION_CTRL_2 = 0x151
ID_JOINT_CTRL = (0x155, 0x156, 0x157)
ID_GRIPPER_CTRL = 0x159
ID_MASTER_SLAVE_CONFIG = 0x470
ID_MOTOR_ENABLE = 0x471
ID_QUERY_MOTOR_LIMITS = 0x472
ID_MOTOR_LIMITS_FEEDBACK = 0x473
ID_MOTOR_MAX_ACC_FEEDBACK = 0x47C
ID_FIRMWARE_READ = 0x4AF
ID_STATUS = 0x2A1
ID_END_POSE = (0x2A2, 0x2A3, 0x2A4)
ID_JOINT_FEEDBACK = (0x2A5, 0x2A6, 0x2A7)
ID_GRIPPER_FEEDBACK = 0x2A8
ID_HIGH_SPEED = tuple(range(0x251, 0x257))
ID_LOW_SPEED = tuple(range(0x261, 0x267))

FRAME_NAMES = {
    ID_MOTION_CTRL_1: "motion_ctrl_1", ID_MOTION_CTRL_2: "motion_ctrl_2",
    0x155: "joint_ctrl_12", 0x156: "joint_ctrl_34", 0x157: "joint_ctrl_56",
    ID_GRIPPER_CTRL: "gripper_ctrl", ID_MASTER_SLAVE_CONFIG: "master_slave_config",
    ID_MOTOR_ENABLE: "motor_enable", ID_QUERY_MOTOR_LIMITS: "query_motor_limits",
    ID_FIRMWARE_READ: "firmware_read",
}
JOINT_CTRL_NAMES = ("joint_ctrl_12", "joint_ctrl_34", "joint_ctrl_56")

# arm status codes (0x2A1 byte 1) and control modes (byte 0)
STATUS_NORMAL = 0x00
STATUS_EMERGENCY_STOP = 0x01
STATUS_JOINT_LIMIT = 0x04
CTRL_STANDBY = 0x00
CTRL_CAN = 0x01
CTRL_LINKAGE_TEACHING = 0x06  # a leader (teaching input) arm of a leader/follower pair
ESTOP_STOP = 0x01
ESTOP_RESUME = 0x02
ENABLE_FLAG = 0x02
DISABLE_FLAG = 0x01

#: what the fake reports for 0x473 / 0x47C (the arm's factory defaults as the SDK documents
#: them: max joint speed 3 rad/s in 0.001 rad/s, max acceleration in 0.01 rad/s^2)
FACTORY_MAX_JOINT_SPEED = 3000
FACTORY_MAX_JOINT_ACC = 500
DRIVER_VOLTAGE_DV = 240  # 24.0 V in 0.1 V
DRIVER_TEMP_C = 35
MOTOR_TEMP_C = 30
STATUS_BIT_ENABLED = 1 << 6
STATUS_BIT_HOMED = 1 << 7


@dataclass(frozen=True)
class Frame:
    """One CAN frame the fake received, decoded."""
    can_id: int
    data: bytes
    name: str
    fields: dict
    sent_at: float  # sender's bus timestamp (time.time() on a virtual bus, kernel on socketcan)
    received_at: float  # time.time() when the fake handled it

    @property
    def latency_s(self) -> float:
        return self.received_at - self.sent_at


@dataclass
class FakePiperState:
    """A snapshot of the emulated arm (SI units)."""
    joints: np.ndarray
    joint_targets: np.ndarray
    gripper_m: float
    gripper_target_m: float
    joints_enabled: list[bool]
    gripper_enabled: bool
    ctrl_mode: int
    move_mode: int
    speed_percent: int
    arm_status: int
    emergency_stopped: bool
    limit_flags: list[bool] = field(default_factory=lambda: [False] * 6)


def decode_frame(can_id: int, data: bytes) -> tuple[str, dict]:
    """Name and fields of a host -> arm frame, as the firmware reads it."""
    data = bytes(data).ljust(8, b"\0")
    name = FRAME_NAMES.get(can_id, f"unknown_0x{can_id:03X}")
    if can_id == ID_MOTION_CTRL_1:
        return name, {"emergency_stop": data[0], "track_ctrl": data[1], "drag_teach_ctrl": data[2]}
    if can_id == ID_MOTION_CTRL_2:
        return name, {"ctrl_mode": data[0], "move_mode": data[1], "speed_percent": data[2],
                      "mit_mode": data[3], "residence_time": data[4], "installation_pos": data[5]}
    if can_id in ID_JOINT_CTRL:
        first = 1 + 2 * ID_JOINT_CTRL.index(can_id)
        a, b = struct.unpack(">ii", data[:8])
        return name, {f"joint_{first}": a, f"joint_{first + 1}": b}
    if can_id == ID_GRIPPER_CTRL:
        stroke, effort, code, set_zero = struct.unpack(">iHBB", data[:8])
        return name, {"stroke": stroke, "effort": effort, "code": code, "set_zero": set_zero}
    if can_id == ID_MOTOR_ENABLE:
        return name, {"motor_num": data[0], "enable_flag": data[1]}
    if can_id == ID_QUERY_MOTOR_LIMITS:
        return name, {"motor_num": data[0], "search_content": data[1]}
    if can_id == ID_FIRMWARE_READ:
        return name, {"request": data[0]}
    return name, {"raw": data.hex()}


def zyx_euler_deg(R: np.ndarray) -> tuple[float, float, float]:
    """(roll, pitch, yaw) in degrees, R = Rz(yaw) Ry(pitch) Rx(roll), as the SDK's FK reports."""
    if R[2, 0] < -1 + 1e-4:  # pitch +90 deg: yaw folded into roll
        return math.degrees(math.atan2(R[0, 1], R[1, 1])), 90.0, 0.0
    if R[2, 0] > 1 - 1e-4:  # pitch -90 deg
        return -math.degrees(math.atan2(R[0, 1], R[1, 1])), -90.0, 0.0
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    roll = math.atan2(R[2, 1], R[2, 2])
    yaw = math.atan2(R[1, 0], R[0, 0])
    return math.degrees(roll), math.degrees(pitch), math.degrees(yaw)


class FakePiper:
    """PiPER firmware emulator on CAN channel `channel`. Use start()/stop() or `with`."""

    def __init__(self, channel: str, *, interface: str = "virtual", rate_hz: float = 200.0,
                 joint_time_constant_s: float = 0.05, gripper_time_constant_s: float = 0.08,
                 max_joint_speed_rad_s: float = 3.0, initial_joints=None,
                 initial_gripper_m: float = 0.0, gripper_stroke_max_m: float | None = None,
                 enable_delay_s: float = 0.02, high_speed_every: int = 2,
                 low_speed_every: int = 4, firmware_version: str = "S-V1.6-3",
                 max_recorded: int = 200_000, faults=()):
        data = load_piper_data()
        self.channel = channel
        self.interface = interface
        self.period = 1.0 / float(rate_hz)
        self.joint_tau = float(joint_time_constant_s)
        self.gripper_tau = float(gripper_time_constant_s)
        self.max_joint_speed = float(max_joint_speed_rad_s)
        self.limits = np.array([data["sdk_limits"][f"joint{i}"] for i in range(1, 7)], dtype=float)
        self.stroke_max_m = float(gripper_stroke_max_m if gripper_stroke_max_m is not None
                                  else data["fingers"]["sdk_stroke_max_m"])
        self.enable_delay_s = float(enable_delay_s)
        self.high_speed_every = max(1, int(high_speed_every))
        self.low_speed_every = max(1, int(low_speed_every))
        self.firmware_version = firmware_version
        self.kin = PiperKinematics(data)
        # fault injection (FAULTS; `inject` sets these by name)
        self.refuse_enable = False
        self.silent = False
        self.feedback_id_offset = 0  # added to 0x2A1..0x2A8
        self.zero_joints_in_standby = False
        self.gripper_feedback_every = 1  # ticks
        self.feedback_every = 1  # ticks, every feedback frame
        self.leader_mode = False
        self.drop_estop = False
        # emulated state (guarded by _lock)
        self._lock = threading.Lock()
        q0 = np.zeros(6) if initial_joints is None else np.asarray(initial_joints, dtype=float)
        if q0.shape != (6,):
            raise ValueError(f"initial_joints must have 6 values, got {q0.shape}")
        self._q = q0.copy()
        self._qd = np.zeros(6)
        self._q_target = q0.copy()
        self._g = float(np.clip(initial_gripper_m, 0.0, self.stroke_max_m))
        self._g_target = self._g
        self._g_effort = 0  # 0.001 N*m, as commanded
        self._enabled = [False] * 7  # six joints + gripper
        self._pending_enable: dict[int, tuple[float, bool]] = {}  # motor -> (due time, enable)
        self._ctrl_mode = CTRL_STANDBY
        self._move_mode = 0x01
        self._speed_percent = 50
        self._estop = False
        self._limit_flags = [False] * 6
        self._outbox: deque[tuple[int, bytes]] = deque()  # query answers, sent on the next tick
        self._frames: deque[Frame] = deque(maxlen=max_recorded)
        self._frames_cond = threading.Condition()
        self._bus: can.BusABC | None = None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.ticks = 0
        self.tick_overruns = 0
        self.inject(*parse_faults(faults))

    def inject(self, *faults: str) -> FakePiper:
        """Turn on faults by name (`fake_faults.FAULTS`); also while running."""
        for name in parse_faults(faults):
            with self._lock:
                if name == "corrupt_limits":
                    self.limits = corrupted_limits(self.limits)
                else:
                    setattr(self, *FAULT_SETTINGS[name])
        return self

    def link(self) -> FakePiper:
        """Make this a follower linked to a leader arm (MasterSlaveConfig 0xFC, which the arm
        keeps): its motors are driven and it takes CAN commands with no host enabling it, so it
        obeys the leader's control frames on its bus (`fake_leader.FakeLeader`) at once."""
        with self._lock:
            self._enabled, self._ctrl_mode = [True] * 7, CTRL_CAN
        return self

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakePiper:
        if self._threads:
            return self
        kwargs = {"receive_own_messages": False}
        if self.interface == "virtual":
            kwargs["rx_queue_size"] = 10_000
        self._bus = can.Bus(channel=self.channel, interface=self.interface, **kwargs)
        self._stop.clear()
        self._threads = [threading.Thread(target=self._rx_loop, name=f"fake_piper_rx[{self.channel}]",
                                          daemon=True),
                         threading.Thread(target=self._tick_loop, name=f"fake_piper_tick[{self.channel}]",
                                          daemon=True)]
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=2.0)
        self._threads = []
        if self._bus is not None:
            try:  # obey what was already on the wire before "power off"
                while (msg := self._bus.recv(timeout=0.0)) is not None:
                    self.handle(msg.arbitration_id, bytes(msg.data), msg.timestamp)
            except can.CanError:
                pass
            self._bus.shutdown()
            self._bus = None

    def __enter__(self) -> FakePiper:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return bool(self._threads)

    # ------------------------------------------------------------------ what reached the bus
    def frames(self, name: str | None = None, since: float | None = None) -> list[Frame]:
        """Recorded frames, optionally of one kind (`Frame.name`) and received after `since`."""
        with self._frames_cond:
            out = list(self._frames)
        if name is not None:
            out = [f for f in out if f.name == name]
        if since is not None:
            out = [f for f in out if f.received_at > since]
        return out

    def joint_commands(self, since: float | None = None) -> list[np.ndarray]:
        """Complete joint targets (rad) that reached the bus: one per 0x157 frame, combined
        with the preceding 0x155/0x156 frames (JointCtrl sends them in that order)."""
        out, current = [], [None] * 6
        for f in self.frames(since=since):
            if f.name in JOINT_CTRL_NAMES:
                for key, value in f.fields.items():
                    current[int(key.split("_")[1]) - 1] = value
                if f.name == "joint_ctrl_56" and None not in current:
                    out.append(np.radians(np.array(current, dtype=float) / 1000.0))
        return out

    def clear_frames(self) -> None:
        with self._frames_cond:
            self._frames.clear()

    def wait_for_frame(self, name: str, timeout: float = 1.0, since: float | None = None,
                       predicate=None) -> Frame | None:
        """The first frame named `name` (received after `since`, matching `predicate`)."""
        deadline = time.monotonic() + timeout
        with self._frames_cond:
            while True:
                for f in self._frames:
                    if f.name == name and (since is None or f.received_at > since) and \
                            (predicate is None or predicate(f)):
                        return f
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._frames_cond.wait(left)

    def state(self) -> FakePiperState:
        with self._lock:
            return FakePiperState(
                joints=self._q.copy(), joint_targets=self._q_target.copy(), gripper_m=self._g,
                gripper_target_m=self._g_target, joints_enabled=list(self._enabled[:6]),
                gripper_enabled=self._enabled[6], ctrl_mode=self._ctrl_mode,
                move_mode=self._move_mode, speed_percent=self._speed_percent,
                arm_status=self._arm_status(), emergency_stopped=self._estop,
                limit_flags=list(self._limit_flags))

    # ------------------------------------------------------------------ receiving commands
    def _rx_loop(self) -> None:
        bus = self._bus
        while not self._stop.is_set():
            try:
                msg = bus.recv(timeout=0.05)
            except can.CanError:
                break
            if msg is None or msg.is_error_frame or msg.is_remote_frame:
                continue
            self.handle(msg.arbitration_id, bytes(msg.data), msg.timestamp)

    def handle(self, can_id: int, data: bytes, sent_at: float | None = None) -> Frame:
        """Decode, record and obey one host frame (also callable directly in unit tests)."""
        now = time.time()
        name, fields = decode_frame(can_id, data)
        frame = Frame(can_id, bytes(data), name, fields, sent_at if sent_at else now, now)
        with self._lock:
            self._obey(frame)
        with self._frames_cond:
            self._frames.append(frame)
            self._frames_cond.notify_all()
        return frame

    def _obey(self, f: Frame) -> None:  # called with _lock held
        x = f.fields
        if (self.drop_estop and f.name == "motion_ctrl_1") or (self.leader_mode and f.name in (
                "motion_ctrl_2", "gripper_ctrl", *JOINT_CTRL_NAMES)):
            return  # injected faults: the stop lost; a leader arm takes no motion commands
        if f.name == "motion_ctrl_1":
            if x["emergency_stop"] == ESTOP_STOP:
                self._estop = True
                self._q_target = self._q.copy()
                self._g_target = self._g
                self._qd[:] = 0.0
            elif x["emergency_stop"] == ESTOP_RESUME:
                # resume/reset: clears the stop and errors, motors off, back to standby
                self._estop = False
                self._limit_flags = [False] * 6
                self._ctrl_mode = CTRL_STANDBY
                self._enabled = [False] * 7
                self._pending_enable.clear()
                self._q_target = self._q.copy()
                self._g_target = self._g
        elif f.name == "motion_ctrl_2":
            if not self._estop:
                self._ctrl_mode = x["ctrl_mode"]
                self._move_mode = x["move_mode"]
                self._speed_percent = min(100, x["speed_percent"])
        elif f.name in JOINT_CTRL_NAMES:
            if self._accepts_motion():
                for key, value in x.items():
                    i = int(key.split("_")[1]) - 1
                    target = math.radians(value / 1000.0)
                    lo, hi = self.limits[i]
                    self._limit_flags[i] = not (lo - 1e-4 <= target <= hi + 1e-4)
                    self._q_target[i] = min(max(target, lo), hi)
        elif f.name == "gripper_ctrl":
            code = x["code"]
            if code in (0x01, 0x03):
                self._enabled[6] = True
            elif code in (0x00, 0x02):
                self._enabled[6] = False
            if x["set_zero"] == 0xAE:
                self._g = self._g_target = 0.0
            if self._enabled[6] and not self._estop:
                self._g_target = min(max(x["stroke"] * 1e-6, 0.0), self.stroke_max_m)
                self._g_effort = x["effort"]
        elif f.name == "motor_enable":
            motor, flag = x["motor_num"], x["enable_flag"]
            motors = range(7) if motor in (7, 0xFF) else ([motor - 1] if 1 <= motor <= 6 else [])
            enable = flag == ENABLE_FLAG
            if enable and self.refuse_enable:
                return
            due = f.received_at + (self.enable_delay_s if enable else 0.0)
            for m in motors:
                pending = self._pending_enable.get(m)
                if pending is not None and pending[1] == enable:
                    continue  # a repeated request doesn't postpone the one in progress
                if pending is None and self._enabled[m] == enable:
                    continue  # already there
                self._pending_enable[m] = (due, enable)
        elif f.name == "query_motor_limits":
            motor = x["motor_num"]
            if 1 <= motor <= 6:
                if x["search_content"] == 0x01:
                    lo, hi = self.limits[motor - 1]
                    self._outbox.append((ID_MOTOR_LIMITS_FEEDBACK, struct.pack(
                        ">BhhHB", motor, round(math.degrees(hi) * 10), round(math.degrees(lo) * 10),
                        FACTORY_MAX_JOINT_SPEED, 0)))
                elif x["search_content"] == 0x02:
                    self._outbox.append((ID_MOTOR_MAX_ACC_FEEDBACK,
                                         struct.pack(">BH5x", motor, FACTORY_MAX_JOINT_ACC)))
        elif f.name == "firmware_read":
            text = self.firmware_version.encode("ascii")
            for k in range(0, len(text), 8):
                self._outbox.append((ID_FIRMWARE_READ, text[k:k + 8].ljust(8, b"\0")))

    def _accepts_motion(self) -> bool:
        return (not self._estop and self._ctrl_mode == CTRL_CAN and all(self._enabled[:6]))

    def _arm_status(self) -> int:
        if self._estop:
            return STATUS_EMERGENCY_STOP
        if any(self._limit_flags):
            return STATUS_JOINT_LIMIT
        return STATUS_NORMAL

    # ------------------------------------------------------------------ the firmware tick
    def _tick_loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            now = time.time()
            with self._lock:
                self._apply_pending_enables(now)
                self._step(self.period)
                frames = [] if self.silent or self.ticks % self.feedback_every \
                    else self._feedback_frames()
                if not self.silent:  # a powered-off arm answers no query either
                    frames += list(self._outbox)
                self._outbox.clear()
            for can_id, data in frames:
                try:
                    self._bus.send(can.Message(arbitration_id=can_id, data=data, is_extended_id=False))
                except can.CanError:
                    pass  # a full or closed receiver queue: the firmware doesn't care either
            self.ticks += 1
            next_t += self.period
            delay = next_t - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)
            else:
                self.tick_overruns += 1
                next_t = time.monotonic()  # fell behind: don't try to catch up in a burst

    def _apply_pending_enables(self, now: float) -> None:
        for m, (due, enable) in list(self._pending_enable.items()):
            if now >= due:
                del self._pending_enable[m]
                was = self._enabled[m]
                self._enabled[m] = enable
                if enable and not was and m < 6:
                    self._q_target[m] = self._q[m]  # enabling holds the current position

    def _step(self, dt: float) -> None:
        if self._estop or not all(self._enabled[:6]):
            self._qd[:] = 0.0
        else:
            alpha = 1.0 - math.exp(-dt / self.joint_tau)
            dq = (self._q_target - self._q) * alpha
            vmax = self.max_joint_speed * max(self._speed_percent, 1) / 100.0
            dq = np.clip(dq, -vmax * dt, vmax * dt)
            self._q = self._q + dq
            self._qd = dq / dt
        if self._enabled[6] and not self._estop:
            alpha = 1.0 - math.exp(-dt / self.gripper_tau)
            self._g += (self._g_target - self._g) * alpha

    def _feedback_frames(self) -> list[tuple[int, bytes]]:
        q_units = [round(math.degrees(v) * 1000.0) for v in self._q]
        if self.zero_joints_in_standby and not all(self._enabled[:6]):
            q_units = [0] * 6  # the injected fault: zeros wherever the arm is
        out = [(ID_STATUS, self._status_payload())]
        out += self._end_pose_frames()
        for k, can_id in enumerate(ID_JOINT_FEEDBACK):
            out.append((can_id, struct.pack(">ii", q_units[2 * k], q_units[2 * k + 1])))
        g_status = (STATUS_BIT_ENABLED if self._enabled[6] else 0) | STATUS_BIT_HOMED
        effort = self._g_effort if self._enabled[6] else 0
        if self.ticks % self.gripper_feedback_every == 0:
            out.append((ID_GRIPPER_FEEDBACK, struct.pack(
                ">ihBx", round(self._g * 1e6), min(effort, 0x7FFF), g_status)))
        if self.feedback_id_offset:
            out = [(i + self.feedback_id_offset if ID_STATUS <= i <= ID_GRIPPER_FEEDBACK else i, d)
                   for i, d in out]
        if self.leader_mode:  # a leader sends what it is dragged to, for its follower
            out += [(can_id, struct.pack(">ii", q_units[2 * k], q_units[2 * k + 1]))
                    for k, can_id in enumerate(ID_JOINT_CTRL)]
            out.append((ID_GRIPPER_CTRL, struct.pack(">iHBB", round(self._g * 1e6), 1000, 0x01, 0)))
        if self.ticks % self.high_speed_every == 0:
            for i, can_id in enumerate(ID_HIGH_SPEED):
                speed = int(np.clip(round(self._qd[i] * 1000.0), -32768, 32767))
                out.append((can_id, struct.pack(">hHi", speed, 0, round(self._q[i] * 1000.0))))
        if self.ticks % self.low_speed_every == 0:
            for i, can_id in enumerate(ID_LOW_SPEED):
                status = STATUS_BIT_ENABLED if self._enabled[i] else 0
                out.append((can_id, struct.pack(">HhbBH", DRIVER_VOLTAGE_DV, DRIVER_TEMP_C,
                                                 MOTOR_TEMP_C, status, 0)))
        return out

    def _status_payload(self) -> bytes:
        moving = bool(np.any(np.abs(self._q_target - self._q) > math.radians(0.1)))
        err = sum(1 << (8 + i) for i, flag in enumerate(self._limit_flags) if flag)
        mode = CTRL_LINKAGE_TEACHING if self.leader_mode else self._ctrl_mode
        return struct.pack(">BBBBBBH", mode, self._arm_status(), self._move_mode,
                           0, int(moving), 0, err)

    def _end_pose_frames(self) -> list[tuple[int, bytes]]:
        T = self.kin.dh_flange(self._q)
        x, y, z = (round(v * 1e6) for v in T[:3, 3])  # metres -> 0.001 mm
        rx, ry, rz = (round(v * 1000.0) for v in zyx_euler_deg(T[:3, :3]))
        return [(ID_END_POSE[0], struct.pack(">ii", x, y)),
                (ID_END_POSE[1], struct.pack(">ii", z, rx)),
                (ID_END_POSE[2], struct.pack(">ii", ry, rz))]
