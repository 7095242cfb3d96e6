"""Pre-flight checks of a PiPER arm for `vla-bridge doctor`. Pure: python-can and piper_sdk, no
rclpy; the same code runs against a real arm (socketcan) and the firmware emulator (virtual).

Every check gives one `Check`: ``PASS|WARN|FAIL <name>: <what was seen> — <the fix>``.
`check_arm` runs them for one arm, in this order:

``can``       the interface: on socketcan its sysfs operstate and the bitrate and bus state
              ``ip -details link show`` reports (1 Mbit/s expected); the virtual bus says so.
``frames``    a python-can listener of its own on the channel (beside the SDK's socket): no
              frame at all within the timeout, only error frames, and frames without the
              arm's feedback ids (0x2A1..0x2A8) are three different failures.
``firmware``  the SDK's firmware read (0x4AF) and piper_sdk's version.
``status``    the arm status byte of 0x2A1 (emergency stop, joint faults).
``mode``      the control mode of 0x2A1 (0x06: the leader of a leader/follower pair, which
              obeys no joint command) and joint-control frames on the bus that doctor did
              not send (a leader, or another program, commanding the arm).
``limits``    the joint limits the firmware reports (one 0x472 query -> 0x473 answer per
              motor) against the SDK table (config/piper/kinematics.json) and the safety
              filter's ranges (config/piper_safety.yaml).
``rate``      joint feedback (0x2A5..0x2A7) frames per second on the bus and as the SDK reads
              them, against the arm's 200 Hz; ``gripper`` the same for 0x2A8.
``joints``    every joint reading exactly 0 while the motors' own positions (0x251..0x256)
              or the end pose say the arm is elsewhere (piper_sdk #101).
``enable``    the drivers' enable flags (read only); with ``enable_test`` the motors are
              enabled (no motion command: they hold where they are) and disabled again.
``estop``     the emergency stop (0x150) sent through `PiperArm.emergency_stop`, the node's
              own path: seen on the bus and the arm reporting it; then resumed.

Safety: by default nothing that moves the arm is sent: the listener only listens; the SDK
sends its queries (0x472 limits, 0x4AF firmware). The e-stop test runs only on an arm whose
motors are off (a resting arm: stopping it changes nothing; the resume that follows leaves
the motors off) and is skipped with a WARN otherwise, e.g. while a graph drives the arm. The
enable test is opt-in: it enables motors that were off, so the arm must rest on its stops (a
disabled arm does), and it never runs on an arm that was already enabled.
"""
from __future__ import annotations

import logging
import math
import os
import re
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from vla_bridge.embodiment.kinematics import PiperKinematics, load_piper_data
from vla_bridge.embodiment.limits import load_joint_limits
from vla_bridge.robot_nodes.piper.arm import ARM_STATUS_NAMES, PiperArm, PiperArmError

STATUSES = ("PASS", "WARN", "FAIL")
EXPECTED_RATE_HZ = 200.0  # the arm's feedback rate
RATE_PASS, RATE_WARN = 0.75, 0.5  # of the expected rate: at least PASS / WARN, else FAIL
EXPECTED_BITRATE = 1_000_000
TESTED_SDK = "0.6.2"  # requirements.txt
FEEDBACK_IDS = tuple(range(0x2A1, 0x2A9))
JOINT_IDS = (0x2A5, 0x2A6, 0x2A7)
GRIPPER_ID = 0x2A8
CONTROL_IDS = (0x151, 0x155, 0x156, 0x157, 0x159)  # what a leader sends its follower
ID_ESTOP = 0x150
CTRL_MODES = {0x00: "standby", 0x01: "CAN command", 0x02: "teaching (drag)", 0x03: "Ethernet",
              0x04: "Wi-Fi", 0x05: "remote controller", 0x06: "linkage teaching input (leader)",
              0x07: "offline trajectory"}
LIMIT_TOL_DEG = 0.5  # 0x473 is in 0.1 deg; the SDK table is rounded
LIMIT_WILD_DEG = 20.0  # an end this far beyond the SDK table: corrupted
LIMIT_WARN_DEG = 1.0
ZERO_ELSEWHERE_RAD = math.radians(2.0)
LIMITS_FIX = ("reset the firmware's joint limits to the factory defaults: piper_sdk "
              "ArmParamEnquiryAndConfig(param_setting=0x02) (its demo piper_set_init_default.py), "
              "power-cycle and run doctor again; if they stay wrong re-flash the arm's "
              "parameters with AgileX's tool")
FOLLOWER_FIX = ("make it a follower again: piper_sdk MasterSlaveConfig(0xFC, 0, 0, 0) (demo "
                "piper_set_slave.py), then power-cycle the arm")


@dataclass(frozen=True)
class Check:
    status: str  # PASS | WARN | FAIL
    name: str
    seen: str
    fix: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def line(self) -> str:
        """``STATUS name: seen — fix`` (the fix only for WARN and FAIL)."""
        text = f"{self.status} {self.name}: {self.seen}"
        return f"{text} — {self.fix}" if self.fix and self.status != "PASS" else text


def exit_code(checks, strict: bool = False) -> int:
    """1 when a check failed (or, with `strict`, warned), else 0."""
    bad = ("FAIL", "WARN") if strict else ("FAIL",)
    return int(any(c.status in bad for c in checks))


def _rate_status(hz: float, expected: float = EXPECTED_RATE_HZ) -> str:
    return ("PASS" if hz >= RATE_PASS * expected else
            "WARN" if hz >= RATE_WARN * expected else "FAIL")

# ------------------------------------------------------------------------- the interface


def parse_ip_details(text: str) -> tuple[int | None, str | None]:
    """(bitrate, CAN state) from ``ip -details link show <if>`` (None where absent)."""
    bitrate = re.search(r"\bbitrate (\d+)", text)
    state = re.search(r"\bcan (?:<[^>]*> )?state (\S+)", text)
    return (int(bitrate.group(1)) if bitrate else None, state.group(1) if state else None)


def _ip_details(port: str) -> str:
    return subprocess.run(["ip", "-details", "link", "show", port], capture_output=True,
                          text=True, timeout=5, check=True).stdout


def check_can_interface(name: str, port: str, interface: str, *, sys_root: str = "/sys/class/net",
                        ip_details=_ip_details) -> Check:
    """The CAN interface: exists, up, at 1 Mbit/s, not bus-off (socketcan); virtual: says so."""
    if interface == "virtual":
        return Check("PASS", name, f"{port} is a python-can virtual bus (fake hardware: no "
                                   "bitrate, no wire)")
    if interface != "socketcan":
        return Check("WARN", name, f"{port} on python-can interface {interface!r}: doctor "
                                   "reads state and bitrate of socketcan ports only",
                     "check the adapter's bitrate is 1 Mbit/s by hand")
    up = f"sudo ip link set {port} up type can bitrate {EXPECTED_BITRATE}"
    state_file = os.path.join(sys_root, port, "operstate")
    if not os.path.exists(state_file):
        return Check("FAIL", name, f"{port} does not exist",
                     "plug in the USB-CAN adapter and name it (piper_sdk's can_activate.sh, "
                     "docs/real_hardware.md section 3)")
    with open(state_file) as f:
        operstate = f.read().strip()
    if operstate not in ("up", "unknown"):
        return Check("FAIL", name, f"{port} is {operstate}", f"bring it up: {up}")
    try:
        bitrate, bus_state = parse_ip_details(ip_details(port))
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("WARN", name, f"{port} is {operstate}; bitrate unknown ({exc})",
                     f"check `ip -details link show {port}` says bitrate {EXPECTED_BITRATE}")
    seen = f"{port} is {operstate}, bitrate {bitrate or 'unknown'}, bus {bus_state or 'unknown'}"
    if bitrate != EXPECTED_BITRATE:
        return Check("FAIL", name, seen, f"the arm talks at 1 Mbit/s: sudo ip link set {port} "
                                         f"down, then {up}")
    if bus_state in ("BUS-OFF", "STOPPED"):
        return Check("FAIL", name, seen, f"restart the port (sudo ip link set {port} down, then "
                                         f"{up}); check CAN-H/CAN-L and the 120 ohm termination")
    if bus_state in ("ERROR-PASSIVE", "ERROR-WARNING"):
        return Check("WARN", name, seen, "frames are not acknowledged: arm off, CAN-H/CAN-L "
                                         "swapped or no termination")
    return Check("PASS", name, seen)

# ------------------------------------------------------------------------- the listener


class BusListener:
    """Every frame on a CAN channel, counted per id, on a python-can bus of its own (a second
    socket on socketcan, a second end of the channel on the virtual bus)."""

    def __init__(self, channel: str, interface: str):
        import can

        kwargs = {"rx_queue_size": 100_000} if interface == "virtual" else {}
        self.bus = can.Bus(channel=channel, interface=interface, receive_own_messages=False,
                           **kwargs)
        self.stamps: dict[int, list[float]] = defaultdict(list)
        self.last: dict[int, bytes] = {}
        self.error_frames = 0
        self.started = time.time()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"doctor_listen[{channel}]",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import can

        while not self._stop.is_set():
            try:
                msg = self.bus.recv(timeout=0.05)
            except can.CanError:
                break
            if msg is None:
                continue
            with self._lock:
                if msg.is_error_frame:
                    self.error_frames += 1
                else:
                    self.stamps[msg.arbitration_id].append(time.time())
                    self.last[msg.arbitration_id] = bytes(msg.data)

    def ids(self) -> set[int]:
        with self._lock:
            return set(self.stamps)

    def count(self, can_id: int, since: float = 0.0, until: float = math.inf) -> int:
        with self._lock:
            return sum(since <= t < until for t in self.stamps.get(can_id, ()))

    def first(self, can_id: int, since: float = 0.0, data0: int | None = None,
              timeout: float = 1.0) -> float | None:
        """Time of the first frame `can_id` (first data byte `data0`) after `since`."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                hits = [t for t in self.stamps.get(can_id, ()) if t > since]
                if hits and (data0 is None or self.last.get(can_id, b"\xff")[:1] == bytes([data0])):
                    return hits[0]
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        self.bus.shutdown()


def _wait(condition, timeout_s: float, poll_s: float = 0.005):
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(poll_s)


def check_frames(name: str, port: str, listener: BusListener, timeout_s: float) -> Check:
    """Feedback ids within the timeout; else what there was (nothing, error frames, other ids)."""
    _wait(lambda: listener.ids() & set(FEEDBACK_IDS), timeout_s)
    ids = listener.ids()
    if ids & set(JOINT_IDS):
        return Check("PASS", name, f"arm feedback (0x2A1..0x2A8) on {port} within "
                                   f"{time.time() - listener.started:.2f} s")
    if not ids:
        what = (f"only {listener.error_frames} error frames" if listener.error_frames
                else "no frames at all")
        return Check("FAIL", name, f"{what} on {port} in {timeout_s:.1f} s (the SDK would read "
                                   "0 on every joint, piper_sdk #101)",
                     "power the arm, check its CAN cable is on this adapter (CAN-H/CAN-L, "
                     "termination) and the port's bitrate (piper_sdk #112, #92)")
    offset = sorted(i for i in ids if 0x2B1 <= i <= 0x2C8)
    shown = ", ".join(f"0x{i:03X}" for i in (offset + sorted(ids - set(offset)))[:8])
    fix = ("the feedback ids are offset (MasterSlaveConfig feedback offset, left from "
           "leader/follower use): reset it with piper_sdk MasterSlaveConfig(0xFC, 0, 0, 0) and "
           "power-cycle" if offset else
           "another device talks on this bus but no PiPER feedback arrives: check which arm is "
           "on this adapter and that it is powered")
    return Check("FAIL", name, f"frames on {port} but no feedback ids 0x2A1..0x2A8 (seen "
                               f"{shown})", fix)

# ------------------------------------------------------------------------- arm checks


@dataclass(frozen=True)
class ArmCheckOptions:
    timeout_s: float = 2.0  # first frames, SDK answers
    rate_window_s: float = 1.0
    enable_test: bool = False
    estop_test: bool = True
    enable_timeout_s: float = 2.0
    safety_params_file: str | None = None


def check_arm(arm: str, port: str, interface: str, options: ArmCheckOptions = ArmCheckOptions(),
              *, logger: logging.Logger | None = None, **can_kwargs) -> list[Check]:
    """Every check of one arm (see the module docstring); later ones are left out when the
    arm can't be reached."""
    log = logger or logging.getLogger("vla_bridge.doctor")
    checks = [check_can_interface(f"{arm}.can", port, interface, **can_kwargs)]
    if checks[-1].status == "FAIL":
        return checks
    try:
        listener = BusListener(port, interface)
    except Exception as exc:  # noqa: BLE001 - python-can's errors differ per interface
        return checks + [Check("FAIL", f"{arm}.frames", f"cannot listen on {port}: {exc}",
                               "check the port exists and is up")]
    try:
        checks.append(check_frames(f"{arm}.frames", port, listener, options.timeout_s))
        if checks[-1].status == "FAIL":
            return checks
        hw = PiperArm(port, interface=interface, has_gripper=False, disable_on_close=False,
                      logger=log)
        try:
            hw.connect(options.timeout_s)
        except PiperArmError as exc:
            return checks + [Check("FAIL", f"{arm}.firmware", f"piper_sdk could not connect: {exc}",
                                   "see the frames check; restart the arm")]
        try:
            checks += _sdk_checks(arm, hw, listener, options)
        finally:
            hw.close()
    finally:
        listener.close()
    return checks


def _sdk_checks(arm: str, hw: PiperArm, listener: BusListener,
                options: ArmCheckOptions) -> list[Check]:
    sdk = hw.sdk
    window_start = time.time()
    checks = [check_firmware(f"{arm}.firmware", hw, options.timeout_s)]
    status = sdk.GetArmStatus().arm_status
    checks.append(check_status(f"{arm}.status", int(status.arm_status)))
    checks.append(check_limits(f"{arm}.limits", query_limits(hw, options.timeout_s),
                               options.safety_params_file))
    time.sleep(max(0.0, window_start + options.rate_window_s - time.time()))
    window_end = time.time()
    # connecting sent queries only (0x472, 0x4AF): control frames are someone else's
    checks.insert(2, check_mode(f"{arm}.mode", int(sdk.GetArmStatus().arm_status.ctrl_mode),
                                {i: listener.count(i) for i in CONTROL_IDS}))
    span = window_end - window_start
    joint_hz = min(listener.count(i, window_start, window_end) for i in JOINT_IDS) / span
    grip_hz = listener.count(GRIPPER_ID, window_start, window_end) / span
    checks.append(check_rate(f"{arm}.rate", "joint feedback 0x2A5..0x2A7", joint_hz,
                             float(sdk.GetArmJointMsgs().Hz)))
    checks.append(check_rate(f"{arm}.gripper", "gripper feedback 0x2A8", grip_hz,
                             float(sdk.GetArmGripperMsgs().Hz)))
    checks.append(check_zero_joints(f"{arm}.joints", hw))
    enabled = [bool(v) for v in sdk.GetArmEnableStatus()]
    checks.append(check_enable(f"{arm}.enable", hw, enabled, options, checks))
    checks.append(check_estop(f"{arm}.estop", hw, listener, options, enabled))
    return checks


def check_firmware(name: str, hw: PiperArm, timeout_s: float) -> Check:
    from importlib.metadata import PackageNotFoundError, version

    try:
        sdk_version = version("piper_sdk")
    except PackageNotFoundError:
        sdk_version = "unknown"
    firmware = _wait(lambda: hw.firmware_version() if hw.firmware_version() != "unknown" else None,
                     timeout_s / 2)
    if not firmware:  # ask again: ConnectPort's request may have gone out too early
        hw.sdk.SearchPiperFirmwareVersion()
        firmware = _wait(lambda: hw.firmware_version() if hw.firmware_version() != "unknown"
                         else None, timeout_s / 2)
    seen = f"firmware {firmware or 'unknown'}, piper_sdk {sdk_version}"
    if not firmware:
        return Check("WARN", name, seen + " (no answer to the firmware read 0x4AF)",
                     "power-cycle the arm; an arm that answers nothing but feedback may need "
                     "AgileX's firmware update")
    if sdk_version != TESTED_SDK:
        return Check("WARN", name, seen, f"vla_bridge is tested with piper_sdk {TESTED_SDK}: "
                                         "pip install -r requirements.txt")
    return Check("PASS", name, seen)


def check_status(name: str, arm_status: int) -> Check:
    what = ARM_STATUS_NAMES.get(arm_status, f"0x{arm_status:02X}")
    if arm_status == 0x00:
        return Check("PASS", name, "arm status normal")
    if arm_status == 0x01:
        return Check("WARN", name, f"arm status: {what}",
                     "release the e-stop button and resume (piper_node ~/resume, or piper_sdk "
                     "EmergencyStop(0x02))")
    return Check("FAIL", name, f"arm status: {what} (0x{arm_status:02X})",
                 "clear the fault: piper_sdk EmergencyStop(0x02) (reset), else power-cycle")


def check_mode(name: str, ctrl_mode: int, control_frames: dict[int, int]) -> Check:
    mode = CTRL_MODES.get(ctrl_mode, f"0x{ctrl_mode:02X}")
    seen = [i for i, n in control_frames.items() if n]
    sent = (f"; control frames {', '.join(f'0x{i:03X}' for i in seen)} on the bus that "
            "doctor did not send") if seen else ""
    if ctrl_mode == 0x06:
        return Check("FAIL", name, f"control mode {mode}{sent}: it obeys no joint command",
                     FOLLOWER_FIX)
    if seen:
        return Check("WARN", name, f"control mode {mode}{sent}",
                     "a leader arm or another program is commanding this arm: unplug the "
                     "leader, stop the other program (is a graph running?)")
    if ctrl_mode in (0x00, 0x01):
        return Check("PASS", name, f"control mode {mode} (follower: takes CAN commands)")
    return Check("WARN", name, f"control mode {mode}",
                 "the arm takes no CAN joint commands in this mode: leave it (teach button, "
                 "the other controller), or power-cycle")


def query_limits(hw: PiperArm, timeout_s: float) -> dict[int, tuple[float, float]]:
    """{motor: (min, max) in degrees} the firmware answers, one 0x472 query per motor (the
    SDK's all-motor table shows the last answer in every entry, see test_fake_piper)."""
    sdk, out = hw.sdk, {}
    for motor in range(1, 7):
        asked = time.time()
        with hw._tx:
            sdk.SearchMotorMaxAngleSpdAccLimit(motor, 0x01)

        def answer(motor=motor, asked=asked):
            msg = sdk.GetCurrentMotorAngleLimitMaxVel()
            lim = msg.current_motor_angle_limit_max_vel
            return msg.time_stamp > asked and lim.motor_num == motor and lim

        lim = _wait(answer, min(0.5, timeout_s))
        if lim:
            out[motor] = (lim.min_angle_limit / 10.0, lim.max_angle_limit / 10.0)
    return out


def check_limits(name: str, reported: dict[int, tuple[float, float]],
                 safety_params_file: str | None = None) -> Check:
    """The firmware's limits against the SDK table and the safety filter's ranges (degrees)."""
    table = load_piper_data()["sdk_limits"]
    sdk_deg = np.degrees([table[f"joint{j}"] for j in range(1, 7)])
    filt_deg = np.degrees(load_joint_limits(safety_params_file).joint_limits)
    missing = [j for j in range(1, 7) if j not in reported]
    if len(missing) == 6:
        return Check("WARN", name, "no answer to the joint-limit query (0x472 -> 0x473)",
                     "power-cycle the arm and run doctor again")
    bad, odd = [], []
    for j, (lo, hi) in sorted(reported.items()):
        s_lo, s_hi = sdk_deg[j - 1]
        f_lo, f_hi = filt_deg[j - 1]
        text = f"joint{j} [{lo:g}, {hi:g}] deg (SDK table [{s_lo:.1f}, {s_hi:.1f}])"
        if hi - lo < 0.5 * (s_hi - s_lo):
            bad.append(f"{text} collapsed")
        elif lo < s_lo - LIMIT_WILD_DEG or hi > s_hi + LIMIT_WILD_DEG:
            bad.append(f"{text} far wider: the firmware would not stop the arm at its ends")
        elif lo > f_lo + LIMIT_TOL_DEG or hi < f_hi - LIMIT_TOL_DEG:
            bad.append(f"{text} narrower than the safety filter's [{f_lo:.1f}, {f_hi:.1f}]")
        elif abs(lo - s_lo) > LIMIT_WARN_DEG or abs(hi - s_hi) > LIMIT_WARN_DEG:
            odd.append(text)
    gap = f"; no answer for joint {', '.join(map(str, missing))}" if missing else ""
    if bad:
        return Check("FAIL", name, "corrupted firmware joint limits: " + "; ".join(bad) + gap,
                     LIMITS_FIX)
    if odd or missing:
        return Check("WARN", name, "firmware joint limits differ from the SDK table: "
                     + "; ".join(odd) + gap, LIMITS_FIX)
    return Check("PASS", name, "firmware joint limits match the SDK table and cover the safety "
                               "filter's ranges (the SDK's soft limits cover joint commands, not "
                               "EndPoseCtrl, piper_sdk #96: vla_bridge sends joint commands only)")


def check_rate(name: str, what: str, bus_hz: float, sdk_hz: float,
               expected: float = EXPECTED_RATE_HZ) -> Check:
    seen = f"{what} at {bus_hz:.0f} Hz on the bus, {sdk_hz:.0f} Hz read by the SDK " \
           f"(expected {expected:.0f} Hz)"
    bus, host = _rate_status(bus_hz, expected), _rate_status(sdk_hz, expected)
    if bus != "PASS":
        return Check(bus, name, seen, "the arm sends it slowly: power-cycle it; check the CAN "
                                      "bus load (one arm per adapter) and the firmware "
                                      "(piper_sdk #85, #34)")
    if host != "PASS":
        return Check(host, name, seen, "the bus is fine but this host reads it late: CPU load "
                                       "or a starved SDK reader thread (piper_sdk #85; "
                                       "docs/real_hardware.md, Scheduling)")
    return Check("PASS", name, seen)


def check_zero_joints(name: str, hw: PiperArm) -> Check:
    """Every joint exactly 0 while the motors' positions or the end pose say otherwise."""
    sdk = hw.sdk
    j = sdk.GetArmJointMsgs().joint_state
    units = [j.joint_1, j.joint_2, j.joint_3, j.joint_4, j.joint_5, j.joint_6]
    if any(units):
        return Check("PASS", name, "joint feedback " + ", ".join(f"{u / 1000:.1f}" for u in units)
                     + " deg")
    high = sdk.GetArmHighSpdInfoMsgs()
    motors = np.array([getattr(high, f"motor_{i}").pos for i in range(1, 7)], float) / 1000.0
    pose = sdk.GetArmEndPoseMsgs().end_pose
    flange = np.array([pose.X_axis, pose.Y_axis, pose.Z_axis], float) * 1e-6
    at_zero = PiperKinematics().dh_flange(np.zeros(6))[:3, 3]
    elsewhere = []
    if high.time_stamp and np.max(np.abs(motors)) > ZERO_ELSEWHERE_RAD:
        elsewhere.append("motor positions " + ", ".join(f"{math.degrees(v):.0f}" for v in motors)
                         + " deg")
    if np.linalg.norm(flange - at_zero) > 0.02 and sdk.GetArmEndPoseMsgs().time_stamp:
        elsewhere.append(f"end pose {np.round(flange, 3).tolist()} m")
    if not elsewhere and high.time_stamp:
        return Check("PASS", name, "joint feedback exactly 0, as the motors' own positions "
                                   "(the arm rests at zero)")
    return Check("WARN", name, "every joint reads exactly 0 while "
                 + (" and ".join(elsewhere) or "nothing else tells where the arm is")
                 + " (piper_sdk #101)",
                 "do not enable (the safety filter would start from a wrong position): "
                 "power-cycle the arm; if it persists the joint feedback is broken (AgileX "
                 "support, firmware)")


def check_enable(name: str, hw: PiperArm, enabled: list[bool], options: ArmCheckOptions,
                 earlier: list[Check]) -> Check:
    on = [f"joint{i + 1}" for i, e in enumerate(enabled) if e]
    if on and len(on) < 6:
        return Check("WARN", name, f"only {', '.join(on)} enabled",
                     "a driver dropped out: disable, power-cycle, enable again (piper_sdk #72)")
    if len(on) == 6:
        return Check("PASS", name, "motors enabled (holding); enable test skipped: doctor "
                                   "never disables a holding arm")
    if not options.enable_test:
        return Check("PASS", name, "motors off (standby); not enabled (read only; "
                                   "--enable-test enables and disables them)")
    blocked = [c for c in earlier if c.status == "FAIL" and c.name.endswith((".mode", ".status"))]
    if blocked:
        return Check("WARN", name, f"enable test skipped: {blocked[0].name} failed",
                     "fix that first")
    return enable_test(name, hw, options.enable_timeout_s)


def _fresh_enable_flags(sdk, since: float) -> list[bool] | None:
    return [bool(v) for v in sdk.GetArmEnableStatus()] \
        if sdk.GetArmLowSpdInfoMsgs().time_stamp > since else None


def enable_test(name: str, hw: PiperArm, timeout_s: float) -> Check:
    """EnableArm(7), re-sent every 0.1 s as the SDK's examples do, until every driver reports
    enabled; then DisableArm(7). No mode change, no motion command, no gripper."""
    sdk, asked, last = hw.sdk, time.time(), 0.0

    def all_on():
        nonlocal last
        flags = _fresh_enable_flags(sdk, asked)
        if flags and all(flags):
            return True
        if time.monotonic() - last > 0.1:
            with hw._tx:
                sdk.EnableArm(7)
            last = time.monotonic()
        return False

    ok = _wait(all_on, timeout_s, poll_s=0.01)
    took = time.time() - asked
    flags = _fresh_enable_flags(sdk, asked) or [False] * 6
    off_asked = time.time()
    with hw._tx:
        sdk.DisableArm(7)
    off = _wait(lambda: (f := _fresh_enable_flags(sdk, off_asked)) is not None and not any(f), 1.0)
    if not ok:
        missing = [f"joint{i + 1}" for i, e in enumerate(flags) if not e]
        return Check("FAIL", name, f"EnableArm: {', '.join(missing)} did not report enabled "
                                   f"within {timeout_s:.1f} s",
                     "release the e-stop button, check the 24 V supply and that the arm is not "
                     "in teach or leader mode, power-cycle (piper_sdk #72)")
    if not off:
        return Check("FAIL", name, f"enabled in {took:.2f} s but DisableArm was not obeyed",
                     "support the arm and power it off")
    return Check("PASS", name, f"enable test: every driver enabled in {took:.2f} s (no motion "
                               "command) and disabled again")


def check_estop(name: str, hw: PiperArm, listener: BusListener, options: ArmCheckOptions,
                enabled: list[bool]) -> Check:
    """The node's e-stop path on a resting arm: the frame on the bus, the arm's status."""
    if not options.estop_test:
        return Check("WARN", name, "e-stop test skipped (--no-estop-test)",
                     "run doctor without --no-estop-test while the motors are off")
    sdk = hw.sdk
    if any(_fresh_enable_flags(sdk, 0.0) or enabled):
        return Check("WARN", name, "e-stop test skipped: motors enabled (a graph driving the "
                                   "arm?); doctor stops only a resting arm",
                     "disable the arm (stop the graph) and run doctor again")
    if int(sdk.GetArmStatus().arm_status.arm_status) == 0x01:
        return Check("WARN", name, "the arm is already in emergency stop: the path can't be tested",
                     "resume it (piper_sdk EmergencyStop(0x02)) and run doctor again")
    sent = time.time()
    hw.emergency_stop()  # the SDK call piper_node's ~/emergency_stop makes
    on_bus = listener.first(ID_ESTOP, sent, data0=0x01, timeout=options.timeout_s / 2)

    def stopped():
        msg = sdk.GetArmStatus()
        return msg.time_stamp > sent and msg.arm_status.arm_status == 0x01

    obeyed = _wait(stopped, options.timeout_s)
    took = time.time() - sent
    with hw._tx:  # resume: the firmware resets to standby; the motors were off and stay off
        sdk.EmergencyStop(0x02)
    _wait(lambda: sdk.GetArmStatus().arm_status.arm_status != 0x01, options.timeout_s / 2)
    if obeyed:
        return Check("PASS", name, f"EmergencyStop 0x150 {'seen on the bus, ' if on_bus else ''}"
                                   f"arm reported emergency stop in {took * 1000:.0f} ms; resumed "
                                   "(motors off)")
    where = "seen on the bus" if on_bus else "not seen on the bus"
    return Check("FAIL", name, f"EmergencyStop 0x150 sent ({where}) but the arm never reported "
                               f"an emergency stop in {options.timeout_s:.1f} s",
                 "the arm ignores the software e-stop: no trials (piper_node's ~/emergency_stop "
                 "would not stop it); check the firmware and the CAN ids, keep the hardware "
                 "e-stop in reach")
