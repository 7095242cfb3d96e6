"""PiPER node: one PiPER arm or an ALOHA-style pair behind the contract's topics.

Publishes (contract names and units, `rate_hz`):
  joint_states   measured joints (rad) and gripper opening (1 = open, 0 = closed)
  joint_commands the safe target being executed
  episode status, frames  the real graph's episode protocol, which this node owns
                 (`robot_nodes.piper.episode`): ready / chunk_done / done with `ticks` =
                 frames - 1 / error, and one scoring frame per joint_commands message from the
                 ready to the done. The status publisher appears once the tracker node's
                 status has been heard (the evaluator starts on seeing it).
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
  episode control  begin -> "ready" once the tracker is ready too (or "error" after
                 `ready_wait_s`), end -> stop the chunk; each accepted chunk is a policy
                 call, each finished one -> "chunk_done" (and "done" once the begin message's
                 max_policy_calls are spent). The real arm runs on the wall clock: chunks are
                 not matched to observation stamps, a new chunk replaces the playing one.
  tracker status, world_state  the tracker node's readiness (latched: calibrated, the
                 objects tracked) and the tracked objects' poses, for the frames.
Services (std_srvs/Trigger):
  ~/emergency_stop  latches every arm's safety filter and sends the SDK emergency stop
  ~/resume          SDK resume + enable + CAN joint mode, then releases the latch

Stops latch for every arm at once: the e-stop service, an arm that stops answering for
`feedback_timeout_s` (`fake_feedback_timeout_s` for the emulator), or an arm that reports an emergency stop (also at start-up: then call
~/resume). While latched nothing is sent; the arms hold their last target.

One arm ("arms: right") uses that arm's 7 contract names only; two arms use all 14.

``teleop`` (vla-bridge record-demos): the arms obey their linked leader arms; the node sends
them nothing (no enable, no chunk) and publishes the leaders' commands as joint_commands
(robot_nodes/piper/teleop.py; with fake hardware, fake leaders play the plans on
contract.TOPIC_FAKE_LEADER_PLAN). An end with "demo": "save" sends the episode's done first.

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
from dataclasses import dataclass
import threading
import time
import uuid

import numpy as np
import rclpy
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, Header, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.ros.node_config import declare, param
from vla_bridge.robot_nodes.piper.fake_piper import FakePiper
from vla_bridge.robot_nodes.piper.arm import GRIPPER_STROKE_MAX_M, PiperArm, PiperArmError
from vla_bridge.robot_nodes.piper.episode import EpisodeProtocol
from vla_bridge.robot_nodes.piper.teleop import TeleopLeaders
from vla_bridge.robot_nodes.piper.safety import (EventLogLimiter, SafetyEvent, SafetyFilter,
                                           load_safety_params)
from vla_bridge.robot_nodes.tracker.tracker import contract_vector
from vla_bridge.embodiment.workcell import HOME_ARM_Q



@dataclass(frozen=True)
class PiperConfig:
    """piper_node's parameters (config/robofollow_real.yaml's piper_node section)."""
    arms: str = param("left,right", "arms driven: left,right | left | right (contract order)")
    left_can_port: str = param("can_left", "CAN interface of the left arm (named with `ip link "
                               "set canX name can_left`)")
    right_can_port: str = param("can_right", "CAN interface of the right arm")
    can_interface: str = param("socketcan", "python-can interface of the arms' CAN ports")
    use_fake_hardware: bool = param(False, "drive the PiPER firmware emulator on virtual CAN "
                                    "instead of the arms")
    fake_faults: str = param("", "use_fake_hardware: bring-up faults the emulator injects, "
                             "comma-separated (fake_faults.FAULTS; `vla-bridge doctor` names them)")
    rate_hz: float = param(50.0, "joint_states / joint_commands rate (one scoring frame per "
                           "joint_commands message in an episode)")
    command_rate_hz: float = param(100.0, "rate of the commands sent to the arms (chunk "
                                   "interpolation, safety filter)")
    safety_params_file: str = param("", "safety limits file (empty: config/piper_safety.yaml)")
    speed_percent: int = param(50, "piper_sdk motion speed, percent")
    gripper_effort_nm: float = param(1.0, "gripper effort, N m")
    connect_timeout_s: float = param(2.0, "wait this long for an arm's first CAN feedback")
    enable_timeout_s: float = param(5.0, "wait this long for an arm's motors to enable")
    feedback_timeout_s: float = param(0.25, "an arm silent this long latches the stop of "
                                      "every arm")
    fake_feedback_timeout_s: float = param(1.0, "feedback_timeout_s of the emulator, which "
                                           "shares the node's process and pauses under load")
    default_chunk_period_s: float = param(0.06, "seconds per chunk point when the points "
                                          "carry no increasing time_from_start")
    disable_on_shutdown: bool = param(True, "disable the arms' motors when the node stops")
    teleop: bool = param(False, "leader/follower teleoperation: send the arms nothing, publish "
                         "their leaders' commands (read on the CAN bus) as joint_commands")
    leader_timeout_s: float = param(0.5, "teleop: a leader silent this long gets no joint_commands")
    frame_flush_period_s: float = param(0.25, "an episode's scoring frames go out in batches "
                                        "this often (and with every status)")
    require_task_objects: bool = param(True, "a trial whose task objects are not tracked "
                                       "fails at begin")
    stall_timeout_s: float = param(60.0, "an episode with no progress (ready, chunk done) for "
                                   "this long fails")
    ready_wait_s: float = param(5.0, "at begin, wait this long for the tracker (table "
                                "calibrated, task objects seen) before the trial fails")


EPISODE_POLL_S = 0.1  # the episode protocol's timer (ready retry, stall, frame batches)
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
        self.cfg = p = declare(self, PiperConfig)
        self.feedback_timeout_s = float(p.fake_feedback_timeout_s if p.use_fake_hardware
                                        else p.feedback_timeout_s)
        self.arms = parse_arms(p.arms)
        self.names = C.joint_names(self.arms)
        self.slices = {arm: slice(i * C.JOINTS_PER_ARM, (i + 1) * C.JOINTS_PER_ARM)
                       for i, arm in enumerate(self.arms)}
        params = load_safety_params(p.safety_params_file or None)
        self.safety = {arm: SafetyFilter(arm, params) for arm in self.arms}
        self.heartbeat_timeout_s = params.policy_heartbeat_timeout_s
        self.policy_alive_at: float | None = None  # monotonic; None until a heartbeat came
        self._silence_seen = False  # the last tick found the heartbeat too old
        self._lock = threading.RLock()
        self.player: ChunkPlayer | None = None
        self.commanded: dict[str, np.ndarray | None] = {arm: None for arm in self.arms}
        self.feedback: dict[str, np.ndarray | None] = {arm: None for arm in self.arms}
        self.protocol = EpisodeProtocol(
            self.send_status, self.send_frames, ready_wait_s=p.ready_wait_s,
            stall_timeout_s=p.stall_timeout_s, require_task_objects=p.require_task_objects,
            flush_period_s=p.frame_flush_period_s, log=self.get_logger())
        self.calls = 0
        self.max_calls: int | None = None
        self._event_log = EventLogLimiter(EVENT_LOG_PERIOD_S)
        self.fakes: dict[str, FakePiper] = {}
        self.teleop = TeleopLeaders(p.leader_timeout_s, self.get_logger())
        self.hw: dict[str, PiperArm] = {}
        self._closed = False
        try:
            self._start_hardware()
        except Exception:
            self.close()
            raise
        self._make_io()
        mode = "fake hardware (virtual CAN)" if p.use_fake_hardware else p.can_interface
        self.get_logger().info(
            f"piper node ready: arms={','.join(self.arms)} on {mode}, joint_states at "
            f"{p.rate_hz} Hz, commands at {p.command_rate_hz} Hz")

    # ------------------------------------------------------------------ hardware
    def _start_hardware(self) -> None:
        p = self.cfg
        for arm in self.arms:
            port = getattr(p, f"{arm}_can_port")
            if p.use_fake_hardware:
                # unique channel: the SDK keeps one interface object per port name per process
                port = f"fake_{port}_{uuid.uuid4().hex[:8]}"
                # at home, not folded on the range ends the filter clips (a real arm's rest)
                self.fakes[arm] = FakePiper(port, initial_joints=HOME_ARM_Q,
                                            initial_gripper_m=GRIPPER_STROKE_MAX_M,
                                            faults=p.fake_faults).start()
                interface = "virtual"
            else:
                interface = p.can_interface
            hw = PiperArm(port, interface=interface, speed_percent=int(p.speed_percent),
                          gripper_effort_nm=float(p.gripper_effort_nm),
                          disable_on_close=bool(p.disable_on_shutdown))
            self.hw[arm] = hw
            hw.connect(float(p.connect_timeout_s))
            if p.teleop:  # the follower obeys its leader: nothing is sent to it
                self.teleop.add(arm, hw, self.fakes.get(arm))
            else:
                hw.enable(float(p.enable_timeout_s))
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
        self.teleop.close()
        for fake in self.fakes.values():
            fake.stop()

    # ------------------------------------------------------------------ ROS I/O
    def _make_io(self) -> None:
        q = messages.qos_profile
        control = MutuallyExclusiveCallbackGroup()
        services = MutuallyExclusiveCallbackGroup()
        self.pub_joints = self.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
        self.pub_cmd = self.create_publisher(JointState, C.TOPIC_JOINT_COMMANDS, q(C.QOS_STATE))
        self.pub_frames = self.create_publisher(Float64MultiArray, C.TOPIC_FRAMES, q(C.QOS_STATE))
        # the episode-status publisher is what tells the evaluator the robot is up, so it is
        # made once the tracker is up too (on_tracker_status): a trial needs both
        self.pub_status = None
        self._tracker_checked = 0.0
        self.create_subscription(JointTrajectory, C.TOPIC_ACTION_CHUNK, self.on_chunk,
                                 q(C.QOS_COMMAND), callback_group=control)
        self.create_subscription(String, C.TOPIC_EPISODE_CONTROL, self.on_control,
                                 q(C.QOS_EVENTS), callback_group=control)
        # its own group: a heartbeat must never wait behind a chunk being unpacked
        self.create_subscription(Header, C.TOPIC_POLICY_HEARTBEAT, self.on_heartbeat,
                                 q(C.QOS_LATEST), callback_group=MutuallyExclusiveCallbackGroup())
        episode = MutuallyExclusiveCallbackGroup()  # the protocol's inputs and timer
        self.create_subscription(String, C.TOPIC_TRACKER_STATUS, self.on_tracker_status,
                                 q(C.QOS_LATCHED), callback_group=episode)
        self.create_subscription(MarkerArray, C.TOPIC_WORLD_STATE, self.on_world,
                                 q(C.QOS_LATEST), callback_group=episode)
        self.create_service(Trigger, "~/emergency_stop", self.on_emergency_stop,
                            callback_group=services)
        self.create_service(Trigger, "~/resume", self.on_resume, callback_group=services)
        if self.cfg.teleop and self.fakes:
            self.create_subscription(JointTrajectory, C.TOPIC_FAKE_LEADER_PLAN, self.on_leader_plan,
                                     q(C.QOS_COMMAND), callback_group=control)
        self._timers_owned = [
            self.create_timer(1.0 / float(self.cfg.command_rate_hz), self.command_tick,
                              callback_group=control),
            self.create_timer(1.0 / float(self.cfg.rate_hz), self.publish_state,
                              callback_group=MutuallyExclusiveCallbackGroup()),
            self.create_timer(EPISODE_POLL_S, self.poll_episode, callback_group=episode),
        ]

    def stamp(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    @property
    def episode(self) -> str | None:
        return self.protocol.episode

    # ------------------------------------------------------------------ episode protocol
    def send_status(self, payload: dict) -> None:
        if self.pub_status is None:
            self.get_logger().error(f"episode status {payload['kind']!r} dropped: no tracker "
                                    "node yet")
            return
        self.pub_status.publish(messages.json_msg(payload))

    def send_frames(self, rows: np.ndarray, fields: list) -> None:
        self.pub_frames.publish(messages.frames_msg(rows, fields))

    def on_tracker_status(self, msg: String) -> None:
        try:
            status = messages.parse_json_msg(msg)
        except ValueError as exc:
            self.get_logger().error(f"tracker status dropped: {exc}")
            return
        if self.pub_status is None:
            self.pub_status = self.create_publisher(String, C.TOPIC_EPISODE_STATUS,
                                                    messages.qos_profile(C.QOS_EVENTS))
            self.get_logger().info("tracker node is up: answering episodes")
        self.protocol.on_tracker(status)

    def on_world(self, msg: MarkerArray) -> None:
        try:
            world = messages.msg_to_world_state(msg)
        except ValueError as exc:
            self.get_logger().error(f"world state dropped: {exc}", throttle_duration_sec=5.0)
            return
        self.protocol.on_world(world)

    def poll_episode(self) -> None:
        """The protocol's timer; once a second, whether the tracker node is still there."""
        now = time.monotonic()
        if self.protocol.tracker is not None and now - self._tracker_checked >= 1.0:
            self._tracker_checked = now
            if self.count_publishers(C.TOPIC_TRACKER_STATUS) == 0:
                self.protocol.on_tracker(None)  # its latched status comes again on a restart
        self.protocol.poll()

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
                cmd = self.teleop.command(arm, fb) if self.cfg.teleop else self.commanded[arm]
                commanded.append(fb if cmd is None else cmd)
        t = self.stamp()
        measured, commanded = np.concatenate(measured), np.concatenate(commanded)
        self.pub_joints.publish(messages.joint_state_msg(self.names, measured, t))
        if self.cfg.teleop and not self.teleop.heard(self.arms):
            return  # no command from a leader: none is made up
        self.pub_cmd.publish(messages.joint_state_msg(self.names, commanded, t))
        # every joint_commands message is an episode's scoring frame (while it records)
        self.protocol.on_state(t, contract_vector(self.names, commanded),
                               contract_vector(self.names, measured))

    # ------------------------------------------------------------------ commands
    def command_tick(self) -> None:
        if self.cfg.teleop:
            return  # the leaders command the arms
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
            self._chunk_finished()

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

    def on_leader_plan(self, msg: JointTrajectory) -> None:
        """Teleop, fake hardware: the fake leaders play this plan (absolute targets)."""
        try:
            times = ChunkPlayer.times_from_msg(msg, float(self.cfg.default_chunk_period_s))[0]
            self.teleop.play(self.arms, messages.msg_to_chunk(msg, self.names), times)
        except ValueError as exc:
            self.get_logger().error(f"fake leader plan rejected: {exc}")

    def on_heartbeat(self, msg: Header) -> None:
        self.policy_alive_at = time.monotonic()

    def _latch_all(self, reason: str, now: float) -> None:
        """A fault on one arm stops both: latch every filter, drop the chunk (caller holds
        the lock). The arms hold their last target; ~/resume clears it."""
        self.player = None
        for arm in self.arms:
            if not self.safety[arm].latched:
                self._log_events(self.safety[arm].estop(reason, now), force=True)

    def _chunk_finished(self) -> None:
        """A chunk played to its end or cut (the safety events say why)."""
        if self.episode is None:
            return
        self.protocol.chunk_done(self.calls)
        if self.max_calls is not None and self.calls >= self.max_calls:
            self.protocol.done(self.calls, "policy-call budget spent")

    def on_chunk(self, msg: JointTrajectory) -> None:
        try:
            chunk = messages.msg_to_chunk(msg, self.names)
        except ValueError as exc:
            self.get_logger().error(f"rejected action chunk: {exc}")
            self.protocol.error(f"rejected action chunk: {exc}")
            return
        times, timed = ChunkPlayer.times_from_msg(msg, float(self.cfg.default_chunk_period_s))
        if not timed:
            self.get_logger().warning("action chunk without increasing time_from_start; using "
                                      f"{self.cfg.default_chunk_period_s} s per point")
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
                self.protocol.repeat()
            elif kind == C.CONTROL_BEGIN:
                self.calls = 0
                self.max_calls = int(ctl["max_policy_calls"]) if "max_policy_calls" in ctl else None
                self.player = None
                self.protocol.begin(str(ctl.get("episode")), ctl.get("task"))
            elif kind == C.CONTROL_END and ctl.get("episode") == self.episode:
                self.player = None
                if self.cfg.teleop and ctl.get("demo") == C.DEMO_SAVE:
                    self.protocol.done(self.calls, "demonstration saved by the operator")
                self.protocol.end()

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
                self.hw[arm].resume(float(self.cfg.enable_timeout_s))
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
