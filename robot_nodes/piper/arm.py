"""Driver for one AgileX PiPER arm around ``piper_sdk`` (V2 interface). No rclpy.

Units at this edge: the SDK speaks joint angles in 0.001 deg, gripper stroke in 0.001 mm and
gripper effort in 0.001 N*m; the rest of vla_bridge speaks radians and the contract's
normalised gripper opening (1 = open, 0 = closed) over the SDK's stroke (0.07 m).

Lifecycle: ``connect()`` opens the CAN port and waits for the arm's feedback;
``enable()`` enables the motors (with a timeout and an error that says what is missing) and
enters CAN joint mode (MotionCtrl_2: CAN command mode, MOVE J); ``command()`` sends joint and
gripper targets; ``emergency_stop()`` / ``resume()``; ``close()`` disables and disconnects.

Teleoperation: ``read_leader()`` reads what a linked leader arm commands this (follower) arm
on their shared bus; it sends nothing.

Safety is NOT here: put `robot_nodes.safety.SafetyFilter` in front of `command()`.

SDK notes (piper_sdk 0.6.2, verified against its source): ``C_PiperInterface_V2`` is a
per-port singleton, so a second driver on the same port in one process shares the SDK object
and its last feedback; feedback is therefore only trusted when newer than the request that
needs it. The SDK's frame encoder shares one buffer, so sends are serialised here.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.kinematics import load_piper_data

LOG = logging.getLogger("vla_bridge.piper_arm")

#: the SDK's gripper stroke for a fully open gripper (normalised 1.0)
GRIPPER_STROKE_MAX_M = float(load_piper_data()["fingers"]["sdk_stroke_max_m"])
#: GripperCtrl effort range accepted by the SDK (0.001 N*m)
SDK_EFFORT_MAX = 5000
CTRL_MODE_CAN = 0x01
MOVE_MODE_J = 0x01
ARM_STATUS_NAMES = {0x00: "normal", 0x01: "emergency stop", 0x02: "no solution",
                    0x03: "singularity", 0x04: "target angle over limit",
                    0x05: "joint communication error", 0x06: "joint brake not released",
                    0x07: "collision", 0x08: "overspeed while teaching", 0x09: "joint fault",
                    0x0A: "other fault", 0x0E: "controller over-temperature",
                    0x0F: "discharge resistor over-temperature"}


class PiperArmError(RuntimeError):
    """The arm can't be reached, enabled or commanded; the message says what to check."""

# ------------------------------------------------------------------------ unit conversions


def rad_to_sdk_joints(q) -> list[int]:
    """Joint angles (rad) -> SDK integers (0.001 deg)."""
    return [round(math.degrees(float(v)) * 1000.0) for v in q]


def sdk_joints_to_rad(units) -> np.ndarray:
    """SDK integers (0.001 deg) -> joint angles (rad)."""
    return np.radians(np.asarray(units, dtype=float) / 1000.0)


def gripper_to_sdk_stroke(opening: float, stroke_max_m: float = GRIPPER_STROKE_MAX_M) -> int:
    """Normalised opening (1 = open, 0 = closed; clipped) -> stroke in 0.001 mm."""
    return round(min(max(float(opening), 0.0), 1.0) * stroke_max_m * 1e6)


def sdk_stroke_to_gripper(units: int, stroke_max_m: float = GRIPPER_STROKE_MAX_M) -> float:
    """Stroke in 0.001 mm -> normalised opening (not clipped: it shows what the arm reports)."""
    return float(units) * 1e-6 / stroke_max_m


def effort_to_sdk(effort_nm: float) -> int:
    """Gripper effort (N*m) -> SDK integer (0.001 N*m), clipped to the SDK's 0..5000."""
    return int(min(max(round(float(effort_nm) * 1000.0), 0), SDK_EFFORT_MAX))


@dataclass(frozen=True)
class ArmFeedback:
    """What the arm reported last. Stamps are bus timestamps (seconds, time.time() clock)."""
    joints: np.ndarray  # (6,) rad
    gripper: float  # normalised opening
    gripper_stroke_m: float
    gripper_effort_nm: float
    joint_stamp: float
    enabled: tuple[bool, ...]  # six joint drivers
    gripper_enabled: bool
    ctrl_mode: int
    arm_status: int
    err_code: int

    def vector(self) -> np.ndarray:
        """(7,) contract order: six joints then the gripper."""
        return np.concatenate([self.joints, [self.gripper]])

    @property
    def emergency_stopped(self) -> bool:
        return self.arm_status == 0x01


#: a leader's frames of one tick arrive within this long of each other (see read_leader)
LEADER_SETTLE_S = 0.002


@dataclass(frozen=True)
class LeaderCommand:
    """What a leader arm commands its linked follower, read on their CAN bus."""
    joints: np.ndarray  # (6,) rad
    gripper: float | None  # normalised opening; None: the leader sent no gripper control
    stamp: float  # bus time of the newest joint control frame
    gripper_stamp: float  # of the newest gripper control frame (0: none)


class PiperArm:
    """One PiPER arm on CAN port `can_port` (`interface`: "socketcan", or "virtual" with the
    fake firmware in `robot_nodes.fake_piper`)."""

    def __init__(self, can_port: str, *, interface: str = "socketcan",
                 speed_percent: int = 50, gripper_effort_nm: float = 1.0,
                 stroke_max_m: float = GRIPPER_STROKE_MAX_M, has_gripper: bool = True,
                 disable_on_close: bool = True, logger: logging.Logger | None = None):
        if not 1 <= int(speed_percent) <= 100:
            raise ValueError(f"speed_percent must be 1..100, got {speed_percent}")
        self.can_port = can_port
        self.interface = interface
        self.speed_percent = int(speed_percent)
        self.gripper_effort_nm = float(gripper_effort_nm)
        self.stroke_max_m = float(stroke_max_m)
        self.has_gripper = has_gripper
        self.disable_on_close = disable_on_close
        self.log = logger or LOG
        self.sdk = None
        self._tx = threading.Lock()
        self._enabled = False
        self._mode_sent_at = 0.0

    # ------------------------------------------------------------------ connection
    def connect(self, timeout_s: float = 2.0) -> None:
        """Open the CAN port and wait until the arm's joint feedback arrives."""
        if self.sdk is not None:
            return
        try:
            from piper_sdk import C_PiperInterface_V2
        except ImportError as exc:
            raise PiperArmError("piper_sdk is not installed (pip install -r requirements.txt)") from exc
        if self.interface == "socketcan":
            self._check_socketcan_port()
        started = time.time()
        sdk = C_PiperInterface_V2(self.can_port, judge_flag=False, can_auto_init=False)
        with warnings.catch_warnings():  # piper_sdk 0.6.2 passes python-can's old `bustype`
            warnings.filterwarnings("ignore", message="The 'bustype' argument is deprecated",
                                    category=DeprecationWarning)
            try:
                sdk.CreateCanBus(self.can_port, bustype=self.interface, judge_flag=False)
            except ConnectionError as exc:
                raise PiperArmError(f"PiPER on {self.can_port}: could not open the "
                                    f"{self.interface} CAN bus ({exc})") from exc
            can_io = sdk.GetCanBus()
            if getattr(can_io, "recv_bus", None) is None:
                raise PiperArmError(f"PiPER on {self.can_port}: could not open the "
                                    f"{self.interface} CAN bus (python-can refused the channel)")
            if self.interface == "virtual" and getattr(can_io, "send_bus", None) is not can_io.recv_bus:
                # the SDK opens a second, send-only bus on Linux; on a virtual channel that
                # bus would queue every feedback frame forever, so use one bus both ways as
                # the SDK itself does on Windows/macOS
                can_io.Close()
                can_io._share_bus_between_rx_tx = True
                can_io.Init()
        sdk.ConnectPort()  # starts the SDK's reader thread, queries limits and firmware
        self.sdk = sdk
        if not self._wait(lambda: self._joint_stamp() > started, timeout_s):
            self.sdk = None
            sdk.DisconnectPort()
            raise PiperArmError(
                f"PiPER on {self.can_port}: no joint feedback within {timeout_s:.1f} s. Is the arm "
                f"powered, its CAN cable on this adapter, and the port up at 1 Mbit/s "
                f"(sudo ip link set {self.can_port} up type can bitrate 1000000)?")
        self.log.info("PiPER on %s connected (firmware %s)", self.can_port, self.firmware_version())

    def _check_socketcan_port(self) -> None:
        state_file = f"/sys/class/net/{self.can_port}/operstate"
        if not os.path.exists(state_file):
            raise PiperArmError(f"CAN port {self.can_port!r} does not exist: plug in the USB-CAN "
                                f"adapter and name it (piper_sdk's can_activate.sh)")
        with open(state_file) as f:
            state = f.read().strip()
        if state not in ("up", "unknown"):
            raise PiperArmError(f"CAN port {self.can_port!r} is {state}: bring it up with "
                                f"sudo ip link set {self.can_port} up type can bitrate 1000000")

    @property
    def connected(self) -> bool:
        return self.sdk is not None

    @property
    def enabled(self) -> bool:
        return self._enabled

    def firmware_version(self) -> str:
        v = self._require().GetPiperFirmwareVersion()
        return v if isinstance(v, str) else "unknown"

    def _require(self):
        if self.sdk is None:
            raise PiperArmError(f"PiPER on {self.can_port} is not connected (call connect())")
        return self.sdk

    @staticmethod
    def _wait(condition, timeout_s: float, poll_s: float = 0.005) -> bool:
        deadline = time.monotonic() + timeout_s
        while True:
            if condition():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)

    # ------------------------------------------------------------------ enable / disable
    def enable(self, timeout_s: float = 5.0) -> None:
        """Enable every motor (and the gripper), then enter CAN joint mode.

        Raises PiperArmError naming the motors that did not report enabled in time.
        """
        sdk = self._require()
        asked = time.time()
        last_request = -1.0

        def all_enabled() -> bool:
            nonlocal last_request
            low = sdk.GetArmLowSpdInfoMsgs()
            fresh = low.time_stamp > asked
            if fresh and all(sdk.GetArmEnableStatus()) and (not self.has_gripper or self._gripper_enabled()):
                return True
            now = time.monotonic()
            if now - last_request > 0.1:  # re-send, as the SDK's own examples do
                with self._tx:
                    sdk.EnableArm(7)
                    if self.has_gripper:
                        sdk.GripperCtrl(self._stroke_units(), effort_to_sdk(self.gripper_effort_nm), 0x01, 0)
                last_request = now
            return False

        if not self._wait(all_enabled, timeout_s, poll_s=0.01):
            flags = sdk.GetArmEnableStatus()
            missing = [f"joint{i + 1}" for i, ok in enumerate(flags) if not ok]
            if self.has_gripper and not self._gripper_enabled():
                missing.append("gripper")
            status = sdk.GetArmStatus().arm_status
            raise PiperArmError(
                f"PiPER on {self.can_port}: {', '.join(missing) or 'drivers'} did not report "
                f"enabled within {timeout_s:.1f} s (arm status: "
                f"{ARM_STATUS_NAMES.get(status.arm_status, hex(status.arm_status))}). Release the "
                f"emergency stop / check the arm's power, or resume after an emergency stop.")
        self.enter_joint_mode()
        self._enabled = True
        self.log.info("PiPER on %s enabled, CAN joint mode at %d%% speed", self.can_port,
                      self.speed_percent)

    def _gripper_enabled(self) -> bool:
        return bool(self._require().GetArmGripperMsgs().gripper_state.foc_status.driver_enable_status)

    def _stroke_units(self) -> int:
        return int(self._require().GetArmGripperMsgs().gripper_state.grippers_angle)

    def enter_joint_mode(self) -> None:
        """MotionCtrl_2: CAN command mode, MOVE J, the configured speed percent, position mode."""
        with self._tx:
            self._require().MotionCtrl_2(CTRL_MODE_CAN, MOVE_MODE_J, self.speed_percent, 0x00)
        self._mode_sent_at = time.monotonic()

    def disable(self) -> None:
        """Disable the motors (the arm goes limp: park it first) and the gripper."""
        sdk = self._require()
        with self._tx:
            if self.has_gripper:
                sdk.GripperCtrl(self._stroke_units(), 0, 0x00, 0)
            sdk.DisableArm(7)
        self._enabled = False

    # ------------------------------------------------------------------ state
    def _joint_stamp(self) -> float:
        return float(self._require().GetArmJointMsgs().time_stamp)

    def read(self) -> ArmFeedback:
        sdk = self._require()
        joints_msg = sdk.GetArmJointMsgs()
        j = joints_msg.joint_state
        grip = sdk.GetArmGripperMsgs().gripper_state
        status = sdk.GetArmStatus().arm_status
        return ArmFeedback(
            joints=sdk_joints_to_rad([j.joint_1, j.joint_2, j.joint_3, j.joint_4, j.joint_5, j.joint_6]),
            gripper=sdk_stroke_to_gripper(grip.grippers_angle, self.stroke_max_m),
            gripper_stroke_m=grip.grippers_angle * 1e-6,
            gripper_effort_nm=grip.grippers_effort / 1000.0,
            joint_stamp=float(joints_msg.time_stamp),
            enabled=tuple(bool(v) for v in sdk.GetArmEnableStatus()),
            gripper_enabled=bool(grip.foc_status.driver_enable_status),
            ctrl_mode=int(status.ctrl_mode), arm_status=int(status.arm_status),
            err_code=int(status.err_code))

    def feedback_age(self) -> float:
        """Seconds since the last joint feedback frame."""
        return time.time() - self._joint_stamp()

    def read_leader(self) -> LeaderCommand | None:
        """The newest command a linked leader arm put on this arm's bus (piper_sdk
        GetArmJointCtrl: 0x155..0x157, GetArmGripperCtrl: 0x159), in contract units; None
        before any joint control frame was heard. A leader sends a tick's frames back to back
        and the SDK updates them one by one, so a read within LEADER_SETTLE_S of the newest
        frame is taken again after a pause: the joints and gripper returned are one tick's."""
        sdk = self._require()
        for _ in range(5):
            joints, grip = sdk.GetArmJointCtrl(), sdk.GetArmGripperCtrl()
            stamps = (float(joints.time_stamp), float(grip.time_stamp))
            j, g = joints.joint_ctrl, grip.gripper_ctrl
            units = [j.joint_1, j.joint_2, j.joint_3, j.joint_4, j.joint_5, j.joint_6]
            stroke = int(g.grippers_angle)
            after = (float(joints.time_stamp), float(grip.time_stamp))
            if after == stamps and time.time() - max(stamps) > LEADER_SETTLE_S:
                break
            time.sleep(LEADER_SETTLE_S)
        if stamps[0] <= 0.0:
            return None
        return LeaderCommand(joints=sdk_joints_to_rad(units),
                             gripper=sdk_stroke_to_gripper(stroke, self.stroke_max_m)
                             if stamps[1] > 0.0 else None,
                             stamp=stamps[0], gripper_stamp=stamps[1])

    # ------------------------------------------------------------------ commands
    def command(self, joints_rad, gripper: float | None = None,
                effort_nm: float | None = None) -> None:
        """Send joint targets (6, rad) and optionally a gripper opening (normalised)."""
        q = np.asarray(joints_rad, dtype=float)
        if q.shape != (6,) or not np.all(np.isfinite(q)):
            raise ValueError(f"joint command must be 6 finite angles (rad), got {q!r}")
        if gripper is not None and not math.isfinite(float(gripper)):
            raise ValueError(f"gripper command must be finite, got {gripper!r}")
        sdk = self._require()
        units = rad_to_sdk_joints(q)
        # Re-enter CAN joint mode if the arm dropped out of it (teach button, reset), at most
        # every 0.2 s; the official ROS driver re-sends it with every command instead.
        if sdk.GetArmStatus().arm_status.ctrl_mode != CTRL_MODE_CAN and \
                time.monotonic() - self._mode_sent_at > 0.2:
            self.enter_joint_mode()
        effort = effort_to_sdk(self.gripper_effort_nm if effort_nm is None else effort_nm)
        with self._tx:
            sdk.JointCtrl(*units)
            if gripper is not None and self.has_gripper:
                sdk.GripperCtrl(gripper_to_sdk_stroke(gripper, self.stroke_max_m), effort, 0x01, 0)

    def emergency_stop(self) -> None:
        """SDK EmergencyStop(0x01): the arm stops where it is and ignores motion commands."""
        with self._tx:
            self._require().EmergencyStop(0x01)
        self.log.warning("PiPER on %s: emergency stop sent", self.can_port)

    def resume(self, timeout_s: float = 5.0) -> None:
        """Clear an emergency stop (EmergencyStop(0x02): the firmware resets and may drop the
        motors, so support the arm), then enable and re-enter CAN joint mode."""
        with self._tx:
            self._require().EmergencyStop(0x02)
        self._enabled = False
        time.sleep(0.05)  # let the reset land before asking for the motors again
        self.enable(timeout_s)

    # ------------------------------------------------------------------ shutdown
    def close(self) -> None:
        """Disable (unless disable_on_close is False) and disconnect; safe to call twice."""
        sdk = self.sdk
        if sdk is None:
            return
        try:
            if self.disable_on_close and self._enabled:
                self.disable()
                time.sleep(0.02)  # give the frames time to leave before the bus closes
        except Exception as exc:  # never let shutdown raise
            self.log.error("PiPER on %s: disable on close failed: %s", self.can_port, exc)
        finally:
            self.sdk = None
            try:
                sdk.DisconnectPort()
            except Exception as exc:
                self.log.error("PiPER on %s: disconnect failed: %s", self.can_port, exc)

    def __enter__(self) -> PiperArm:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
