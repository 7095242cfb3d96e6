"""PiPER node: one PiPER arm or an ALOHA-style pair behind the contract's topics.

Publishes (contract names and units, `rate_hz`):
  joint_states   measured joints (rad) and gripper opening (1 = open, 0 = closed)
  joint_commands the safe target being executed
Subscribes:
  action_chunk   JointTrajectory of absolute targets; played back by linear interpolation
                 over each point's time_from_start at `command_rate_hz`, every command
                 through the safety filter (`robot_nodes.safety`). A new chunk replaces the
                 one playing, starting from the command being executed (no jump).
  policy heartbeat  the policy node's sign of life (contract.TOPIC_POLICY_HEARTBEAT, 50 Hz).
                 Once one has arrived, a heartbeat (or chunk) older than the safety file's
                 policy_heartbeat_timeout_s (0.15 s) stops the chunk being played and holds
                 the arms at their last commanded target (not the measured position, which
                 trails a moving arm: no step back; a dead policy's chunk is not played to its
                 end; the cut chunk reports "chunk_done", so a policy that was only late goes
                 on). The heartbeat comes from a child process of the policy node and means
                 "the policy process lives"; docs/real_hardware.md says how to schedule both.
  episode control  begin -> "ready", end -> stop the chunk; each accepted chunk is a policy
                 call, each finished one -> "chunk_done" (and "done" once the begin message's
                 max_policy_calls are spent). The real arm runs on the wall clock: chunks are
                 not matched to observation stamps, a new chunk replaces the playing one.
Services (std_srvs/Trigger):
  ~/emergency_stop  latches every arm's safety filter and sends the SDK emergency stop
  ~/resume          SDK resume + enable + CAN joint mode, then releases the latch

Stops latch for every arm at once: the e-stop service, an arm that stops answering for
`feedback_timeout_s` (`fake_feedback_timeout_s` for the emulator), or an arm that reports an emergency stop (also at start-up: then call
~/resume). While latched nothing is sent; the arms hold their last target.

One arm ("arms: right") uses that arm's 7 contract names only; two arms use all 14.
With use_fake_hardware the node starts the PiPER firmware emulator (`fake_piper`) on
in-process virtual CAN buses and drives it through the real piper_sdk; the fake arms power up
at the workcell's home pose with open grippers, inside the safety limits (a real arm rests
folded, on its joint2/joint3 range ends).

Each arm's step is sized right before its send, by the time since its previous send returned
(`SafetyFilter.sent`), so the speed cap holds for the commands on the wire even when a loaded
CPU delays a send long after its tick started.
"""
from __future__ import annotations

import sys
import threading
import time
import uuid

import numpy as np
import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper
from vla_bridge.robot_nodes.piper.arm import GRIPPER_STROKE_MAX_M, PiperArm, PiperArmError
from vla_bridge.robot_nodes.piper.safety import (EventLogLimiter, SafetyEvent, SafetyFilter,
                                           load_safety_params)
from vla_bridge.embodiment.workcell import HOME_ARM_Q

DEFAULTS = {
    "arms": "left,right",
    "left_can_port": "can_left",
    "right_can_port": "can_right",
    "can_interface": "socketcan",
    "use_fake_hardware": False,
    "rate_hz": 50.0,
    "command_rate_hz": 100.0,
    "safety_params_file": "",  # empty: the package's config/piper_safety.yaml
    "speed_percent": 50,
    "gripper_effort_nm": 1.0,
    "connect_timeout_s": 2.0,
    "enable_timeout_s": 5.0,
    "feedback_timeout_s": 0.25,
    # The emulator's feedback thread shares this process (and its GIL) with the node: on a
    # loaded machine it can pause longer than a real arm's CAN stream ever does.
    "fake_feedback_timeout_s": 1.0,
    "default_chunk_period_s": 0.06,  # when a chunk's points carry no time_from_start
    "disable_on_shutdown": True,
}
EVENT_LOG_PERIOD_S = 5.0  # repeats of a rule on an arm: one log line per 5 s, with a count


def parse_arms(text: str) -> tuple[str, ...]:
    """"left,right" / "right" -> arms in contract order; ValueError on unknown or repeats."""
    arms = [a.strip() for a in str(text).split(",") if a.strip()]
    unknown = [a for a in arms if a not in C.ARMS]
    if not arms or unknown or len(set(arms)) != len(arms):
        raise ValueError(f"arms must be a comma-separated subset of {list(C.ARMS)} without "
                         f"repeats, got {text!r}")
    return tuple(a for a in C.ARMS if a in arms)


class ChunkPlayer:
    """Absolute targets of one chunk, interpolated linearly in time from `start` (the command
    being executed when the chunk arrived) through point k at t0 + times[k]."""

    def __init__(self, start, points, times, t0: float):
        self.points = np.asarray(points, dtype=float)
        self.times = np.concatenate([[0.0], np.asarray(times, dtype=float)])
        self.knots = np.vstack([np.asarray(start, dtype=float), self.points])
        self.t0 = t0

    @staticmethod
    def times_from_msg(msg: JointTrajectory, default_period: float) -> tuple[np.ndarray, bool]:
        """Point times (s); (k + 1) * default_period when they are missing or not increasing."""
        t = np.array([messages.stamp_to_sec(p.time_from_start) for p in msg.points])
        if t.size and t[0] > 0 and np.all(np.diff(t) > 0):
            return t, True
        return default_period * np.arange(1, len(msg.points) + 1), False

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def sample(self, now: float) -> np.ndarray:
        t = min(max(now - self.t0, 0.0), self.duration)
        k = int(np.searchsorted(self.times, t, side="right")) - 1
        k = min(k, len(self.times) - 2)
        t_a, t_b = self.times[k], self.times[k + 1]
        w = 0.0 if t_b <= t_a else (t - t_a) / (t_b - t_a)
        return (1.0 - w) * self.knots[k] + w * self.knots[k + 1]

    def done(self, now: float) -> bool:
        return now - self.t0 >= self.duration


class PiperNode(Node):
    def __init__(self, **node_kwargs):
        super().__init__("piper_node", **node_kwargs)
        p = {k: self.declare_parameter(k, v).value for k, v in DEFAULTS.items()}
        self.p = p
        self.feedback_timeout_s = float(p["fake_feedback_timeout_s" if p["use_fake_hardware"]
                                          else "feedback_timeout_s"])
        self.arms = parse_arms(p["arms"])
        self.names = C.joint_names(self.arms)
        self.slices = {arm: slice(i * C.JOINTS_PER_ARM, (i + 1) * C.JOINTS_PER_ARM)
                       for i, arm in enumerate(self.arms)}
        params = load_safety_params(p["safety_params_file"] or None)
        self.safety = {arm: SafetyFilter(arm, params) for arm in self.arms}
        self.heartbeat_timeout_s = params.policy_heartbeat_timeout_s
        self.policy_alive_at: float | None = None  # monotonic; None until a heartbeat came
        self._silence_seen = False  # the last tick found the heartbeat too old
        self._lock = threading.RLock()
        self.player: ChunkPlayer | None = None
        self.commanded: dict[str, np.ndarray | None] = {arm: None for arm in self.arms}
        self.feedback: dict[str, np.ndarray | None] = {arm: None for arm in self.arms}
        self.episode: str | None = None
        self.calls = 0
        self.max_calls: int | None = None
        self.ticks = 0
        self._event_log = EventLogLimiter(EVENT_LOG_PERIOD_S)
        self.fakes: dict[str, FakePiper] = {}
        self.hw: dict[str, PiperArm] = {}
        self._closed = False
        try:
            self._start_hardware()
        except Exception:
            self.close()
            raise
        self._make_io()
        mode = "fake hardware (virtual CAN)" if p["use_fake_hardware"] else p["can_interface"]
        self.get_logger().info(
            f"piper node ready: arms={','.join(self.arms)} on {mode}, joint_states at "
            f"{p['rate_hz']} Hz, commands at {p['command_rate_hz']} Hz")

    # ------------------------------------------------------------------ hardware
    def _start_hardware(self) -> None:
        p = self.p
        for arm in self.arms:
            port = p[f"{arm}_can_port"]
            if p["use_fake_hardware"]:
                # unique channel: the SDK keeps one interface object per port name per process
                port = f"fake_{port}_{uuid.uuid4().hex[:8]}"
                # at home, not folded on the range ends the filter clips (a real arm's rest)
                self.fakes[arm] = FakePiper(port, initial_joints=HOME_ARM_Q,
                                            initial_gripper_m=GRIPPER_STROKE_MAX_M).start()
                interface = "virtual"
            else:
                interface = p["can_interface"]
            hw = PiperArm(port, interface=interface, speed_percent=int(p["speed_percent"]),
                          gripper_effort_nm=float(p["gripper_effort_nm"]),
                          disable_on_close=bool(p["disable_on_shutdown"]))
            self.hw[arm] = hw
            hw.connect(float(p["connect_timeout_s"]))
            hw.enable(float(p["enable_timeout_s"]))
            self.feedback[arm] = hw.read().vector()

    def close(self) -> None:
        """Stop commanding, disable (unless disable_on_shutdown is false), stop fake firmware."""
        with self._lock:  # waits for a command tick in flight; later ones see _closed
            if self._closed:
                return
            self._closed = True
            self.player = None
            for timer in getattr(self, "_timers_owned", []):
                timer.cancel()
        for hw in self.hw.values():
            hw.close()
        for fake in self.fakes.values():
            fake.stop()

    # ------------------------------------------------------------------ ROS I/O
    def _make_io(self) -> None:
        q = messages.qos_profile
        control = MutuallyExclusiveCallbackGroup()
        services = MutuallyExclusiveCallbackGroup()
        self.pub_joints = self.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
        self.pub_cmd = self.create_publisher(JointState, C.TOPIC_JOINT_COMMANDS, q(C.QOS_STATE))
        self.pub_status = self.create_publisher(String, C.TOPIC_EPISODE_STATUS, q(C.QOS_EVENTS))
        self.create_subscription(JointTrajectory, C.TOPIC_ACTION_CHUNK, self.on_chunk,
                                 q(C.QOS_COMMAND), callback_group=control)
        self.create_subscription(String, C.TOPIC_EPISODE_CONTROL, self.on_control,
                                 q(C.QOS_EVENTS), callback_group=control)
        # its own group: a heartbeat must never wait behind a chunk being unpacked
        self.create_subscription(Header, C.TOPIC_POLICY_HEARTBEAT, self.on_heartbeat,
                                 q(C.QOS_LATEST), callback_group=MutuallyExclusiveCallbackGroup())
        self.create_service(Trigger, "~/emergency_stop", self.on_emergency_stop,
                            callback_group=services)
        self.create_service(Trigger, "~/resume", self.on_resume, callback_group=services)
        self._timers_owned = [
            self.create_timer(1.0 / float(self.p["command_rate_hz"]), self.command_tick,
                              callback_group=control),
            self.create_timer(1.0 / float(self.p["rate_hz"]), self.publish_state,
                              callback_group=MutuallyExclusiveCallbackGroup()),
        ]

    def stamp(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def status(self, kind: str, **fields) -> None:
        self.pub_status.publish(messages.json_msg({"kind": kind, "episode": self.episode, **fields}))

    # ------------------------------------------------------------------ state out
    def publish_state(self) -> None:
        measured, commanded = [], []
        with self._lock:
            if self._closed:
                return
            for arm in self.arms:
                fb = self.hw[arm].read().vector()
                self.feedback[arm] = fb
                measured.append(fb)
                cmd = self.commanded[arm]
                commanded.append(fb if cmd is None else cmd)
        t = self.stamp()
        self.pub_joints.publish(messages.joint_state_msg(self.names, np.concatenate(measured), t))
        self.pub_cmd.publish(messages.joint_state_msg(self.names, np.concatenate(commanded), t))

    # ------------------------------------------------------------------ commands
    def command_tick(self) -> None:
        now = time.monotonic()
        with self._lock:
            if self._closed:
                return
            self._check_arms(now)
            self._check_heartbeat(now)
            player = self.player
            target = player.sample(now) if player is not None else None
            for arm in self.arms:
                self._command_arm(arm, None if target is None else target[self.slices[arm]])
            self.ticks += 1
            if player is not None and player.done(now):
                self.player = None
                self._chunk_finished()

    def _check_arms(self, now: float) -> None:
        """Read both arms; latch both on a silent or emergency-stopped arm."""
        readings = {arm: self.hw[arm].read() for arm in self.arms}
        for arm, fb in readings.items():
            self.feedback[arm] = fb.vector()
            if self.safety[arm].latched:
                continue
            age = self.hw[arm].feedback_age()
            if age > self.feedback_timeout_s:
                self._latch_all(f"no feedback from the {arm} arm for {age:.2f} s", now)
            elif fb.emergency_stopped:
                self._latch_all(f"the {arm} arm reports an emergency stop", now)

    def _check_heartbeat(self, now: float) -> None:
        """Stop the chunk and hold every arm once the policy went silent (caller holds the
        lock). Checked only after a first heartbeat: a publisher without one (a test, a tool)
        keeps the chunk-based watchdog alone. Silence must be seen on two ticks in a row: a
        heartbeat queued while this process itself was starved gets one tick to arrive."""
        alive = self.policy_alive_at
        stale = bool(self.heartbeat_timeout_s) and alive is not None and \
            now - alive > self.heartbeat_timeout_s
        confirmed, self._silence_seen = stale and self._silence_seen, stale
        if not confirmed:
            return
        reason = (f"policy heartbeat silent for {now - alive:.3f} s "
                  f"(> {self.heartbeat_timeout_s} s)")
        cut = self.player is not None
        self.player = None
        for arm in self.arms:
            self._log_events(self.safety[arm].hold_last_command(now, reason))
        if cut:
            self._chunk_finished(reason="chunk cut: " + reason)

    def _command_arm(self, arm: str, target: np.ndarray | None) -> None:
        """Filter and send one arm's command. The step is sized by the clock read right here,
        not at the tick's start: on a loaded CPU the send can come tens of ms after that, and
        the speed cap is about the commands on the wire (SafetyFilter.sent)."""
        safety = self.safety[arm]
        out = safety.step(target, self.feedback[arm], time.monotonic())
        self._log_events(out.events)
        if out.command is None:
            return
        try:
            self.hw[arm].command(out.command[:6], out.command[6])
        except (PiperArmError, ValueError) as exc:
            self.get_logger().error(f"[{arm}] command failed: {exc}")
            return
        safety.sent(out.command, time.monotonic())
        self.commanded[arm] = out.command

    def on_heartbeat(self, msg: Header) -> None:
        self.policy_alive_at = time.monotonic()

    def _latch_all(self, reason: str, now: float) -> None:
        """A fault on one arm stops both: latch every filter, drop the chunk (caller holds
        the lock). The arms hold their last target; ~/resume clears it."""
        self.player = None
        for arm in self.arms:
            if not self.safety[arm].latched:
                self._log_events(self.safety[arm].estop(reason, now), force=True)

    def _chunk_finished(self, **fields) -> None:
        if self.episode is None:
            return
        self.status(C.STATUS_CHUNK_DONE, tick=self.ticks, calls=self.calls, **fields)
        if self.max_calls is not None and self.calls >= self.max_calls:
            self.status(C.STATUS_DONE, ticks=self.ticks, calls=self.calls,
                        reason="policy-call budget spent")

    def on_chunk(self, msg: JointTrajectory) -> None:
        try:
            chunk = messages.msg_to_chunk(msg, self.names)
        except ValueError as exc:
            self.get_logger().error(f"rejected action chunk: {exc}")
            if self.episode is not None:
                self.status(C.STATUS_ERROR, message=f"rejected action chunk: {exc}")
            return
        times, timed = ChunkPlayer.times_from_msg(msg, float(self.p["default_chunk_period_s"]))
        if not timed:
            self.get_logger().warning("action chunk without increasing time_from_start; using "
                                      f"{self.p['default_chunk_period_s']} s per point")
        with self._lock:
            if any(s.latched for s in self.safety.values()):
                self.get_logger().warning("action chunk ignored: emergency stop is latched "
                                          "(call ~/resume)", throttle_duration_sec=1.0)
                return
            if self.episode is not None:
                if self.max_calls is not None and self.calls >= self.max_calls:
                    self.get_logger().warning("action chunk ignored: the episode's policy-call "
                                              "budget is spent", throttle_duration_sec=1.0)
                    return
                self.calls += 1
            start = np.concatenate([self.commanded[a] if self.commanded[a] is not None
                                    else self.feedback[a] for a in self.arms])
            now = time.monotonic()
            if self.policy_alive_at is not None:  # a chunk is a sign of life too
                self.policy_alive_at = now
            self.player = ChunkPlayer(start, chunk, times, now)

    def on_control(self, msg: String) -> None:
        ctl = messages.parse_control(msg, self.get_logger())
        if ctl is None:
            return
        kind = ctl.get("kind")
        with self._lock:
            if kind == C.CONTROL_BEGIN and str(ctl.get("episode")) == self.episode:
                # asked again (a lost begin or ready): answer, reset nothing mid-episode
                self.status(C.STATUS_READY, tick=self.ticks, stamp=self.stamp())
            elif kind == C.CONTROL_BEGIN:
                self.episode = str(ctl.get("episode"))
                self.calls = 0
                self.max_calls = int(ctl["max_policy_calls"]) if "max_policy_calls" in ctl else None
                self.player = None
                self.status(C.STATUS_READY, tick=self.ticks, stamp=self.stamp())
            elif kind == C.CONTROL_END and ctl.get("episode") == self.episode:
                self.player = None
                self.episode = None

    # ------------------------------------------------------------------ services
    def emergency_stop(self, reason: str = "emergency_stop service") -> list[str]:
        """Latch every arm's filter (nothing more is sent) and send the SDK emergency stop."""
        now = time.monotonic()
        with self._lock:
            self.player = None
            for arm in self.arms:
                self._log_events(self.safety[arm].estop(reason, now), force=True)
        errors = []
        for arm in self.arms:
            try:
                self.hw[arm].emergency_stop()
            except Exception as exc:  # keep stopping the other arm
                errors.append(f"{arm}: {exc}")
        return errors

    def on_emergency_stop(self, request, response):
        errors = self.emergency_stop()
        response.success = not errors
        response.message = ("emergency stop latched on " + ",".join(self.arms) if not errors
                            else "emergency stop latched, but the SDK call failed: " + "; ".join(errors))
        return response

    def resume(self) -> list[str]:
        errors = []
        for arm in self.arms:
            try:
                self.hw[arm].resume(float(self.p["enable_timeout_s"]))
            except Exception as exc:
                errors.append(f"{arm}: {exc}")
        if errors:
            return errors
        now = time.monotonic()
        with self._lock:
            for arm in self.arms:
                measured = self.hw[arm].read().vector()
                self.commanded[arm] = None
                self._log_events(self.safety[arm].resume(measured, now), force=True)
        return errors

    def on_resume(self, request, response):
        errors = self.resume()
        response.success = not errors
        response.message = ("resumed " + ",".join(self.arms) if not errors
                            else "resume failed (still latched): " + "; ".join(errors))
        return response

    # ------------------------------------------------------------------ logging
    def _log_events(self, events: list[SafetyEvent], force: bool = False) -> None:
        for line in self._event_log.lines(events, time.monotonic(), force):
            self.get_logger().warning(line)


def main(args=None) -> int:
    messages.enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    executor = MultiThreadedExecutor(num_threads=3)
    try:
        node = PiperNode()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PiperArmError as exc:
        print(f"piper_node: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"piper_node: fatal: {exc!r}", file=sys.stderr)
        return 1
    finally:
        if node is not None:
            node.close()
            node.destroy_node()
        executor.shutdown()
        if rclpy.ok():
            rclpy.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
