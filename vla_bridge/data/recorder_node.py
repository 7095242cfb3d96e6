"""Recorder node (`record:=true`): one rosbag2 bag (MCAP) per episode in the run directory.

It subscribes to every topic of ``contract.recorded_topics()`` in serialized form (no
deserialisation cost) and hands the bytes to ``bags.EpisodeBags``. The evaluator's episode
control opens and closes the bags:

* ``begin``: a new bag opens; the messages held in the last HELD_WINDOW_S before it (the
  instruction sent just before ``begin``, a reset status that overtook it) go in first; the
  node answers ``recording`` on its status topic, and the evaluator starts the episode only
  after that, so no observation of the episode can miss the bag;
* ``end``: the bag closes once no message has arrived for QUIET_S (messages still queued in
  this process land in their own episode's bag). It is complete, and filed under ``bags/``
  with the answer ``recorded`` (its path and message count), only when the episode ended
  normally: the sim's ``done`` of that episode came before the bag closed. Otherwise (the
  episode failed or was stopped) the bag is kept under ``bags/.partial`` and the answer is
  ``incomplete`` with the reason; so is a bag whose episode another ``begin`` replaced.

Control messages are read as every other node reads them (``messages.parse_control``, with
the begin fields the sim and the policy need, BEGIN_NEEDS): a malformed one is logged in one
line, neither acted on nor recorded. A ``begin`` of a finished trial (its bag complete and its
results row written, ``EpisodeBags.finished``) is refused the same way: its bag is never
replaced.

A bag that cannot be written (a full disk: an OSError opening, writing or closing it) is
removed, the error logged in one line with its errno, and the node answers ``failed`` with
the reason; it stays up but records nothing more (every later ``begin`` gets the same
``failed``), and the evaluator ends the run with that reason (``evaluation.bag_watch``).

Bag log times are receive times on the wall clock, as ``ros2 bag record`` writes them (the
middleware's ``received_timestamp`` of each message taken from a queue, the take's time for
the one the executor hands over); the messages' own header stamps carry the sim time.

Tick messages from the frames (#26): a lock-step sim sends this node no per-tick /clock,
/joint_states or /joint_commands (contract.FRAME_EXPANDERS); each frames message's rows carry
the tick's stamp, executed command and measured joints, and say which of the three went out
anyway (to a viewer, say). The node writes the others into the bag as the sim would have
built them (``tick_frames.unpublished_ticks``), in the CDR layout DDS carries
(``bags.cdr_bytes``), logged just before their frames
message. So a bag holds every tick, and the sim no longer sends ~1,500 small messages an
episode to a second process.

Taking in batches: each executor wake-up costs ~0.2 ms of CPU here (a wait set of every
recorded topic), a take from a queue ~0.04 ms. After a wake-up the node takes everything
queued on that topic, then lets the queues fill for ``batch_s`` (10 ms) before it waits
again, so a sim sending three per-tick messages every millisecond wakes it a few times per
batch instead of once per message. Nothing is lost (the state topics keep 100 messages), the
log times stay the middleware's, and only the bags' closing and the answers to the evaluator
come up to ``batch_s`` later. The pause holds the executor's thread, so the node pauses only
when it has its executor to itself (its own process, ``main()``); on an executor shared with
other nodes (an in-process graph) it takes what is queued and never pauses: a 10 ms pause per
wake-up there held back the other nodes' callbacks by seconds (measured: the teleop graph's
recorder answered a begin after more than 15 s).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import Float64MultiArray, String

from vla_bridge import contract as C
from vla_bridge.data.bags import EndpointQos, EpisodeBags, cdr_bytes, os_error_text, typestore
from vla_bridge.ros import messages, tick_frames
from vla_bridge.ros.node_config import declare, param

QUIET_S = 0.05  # an ending bag closes after this long without a message...
MAX_DRAIN_S = 2.0  # ...or after this long at most
DONE_GRACE_S = 0.5  # ...and not before this long after its end while the sim's done is not in
HELD_LIMIT = 500  # messages held between episodes...
HELD_WINDOW_S = 2.0  # ...and only those of the last 2 s: what was sent for the next episode
#: the begin fields the sim (task, seed; the task's scene and layout) and the policy (task,
#: instruction) require: a begin either of them refuses opens no bag
BEGIN_NEEDS = ("task", "seed", "instruction")
TASK_KEYS = ("scene", "layout")


@dataclass(frozen=True)
class RecorderConfig:
    """The recorder node's parameters (``vla-bridge params recorder_node``)."""
    output: str = param("runs/latest", "the run directory: bags go to <output>/bags/<episode>/")
    batch_s: float = param(0.01, "seconds the queues fill after a wake-up before the next wait "
                                 "(0: wake up for every message; no pause on an executor "
                                 "shared with other nodes)")


def _endpoint_qos(profile) -> EndpointQos:
    """An rclpy QoSProfile (a discovered publisher's) -> bags.EndpointQos."""
    return EndpointQos(
        history=int(profile.history), depth=int(profile.depth),
        reliability=int(profile.reliability), durability=int(profile.durability),
        deadline_ns=profile.deadline.nanoseconds, lifespan_ns=profile.lifespan.nanoseconds,
        liveliness=int(profile.liveliness),
        liveliness_lease_ns=profile.liveliness_lease_duration.nanoseconds,
        avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions))


class RecorderNode(Node):
    def __init__(self):
        super().__init__("recorder_node")
        self.config = declare(self, RecorderConfig)
        typestore()  # message definitions built now, not when the first episode begins
        self.bags = EpisodeBags(self.config.output, C.recorded_topics(), C.LATCHED_TOPICS,
                                offered_qos=self.offered_qos)
        self.held: list[tuple[str, int, bytes]] = []  # between episodes, see module doc
        self.ending: str | None = None  # episode whose bag closes once the topics are quiet
        self.end_asked = self.last_message = 0.0
        self.done = False  # the sim's done of the open bag's episode was heard
        self.failure: str | None = None  # a bag could not be written: nothing more is recorded
        self.unreadable_frames: set[str] = set()  # episodes whose frames' ticks were not rebuilt
        self.last_tick_log_ns = 0  # log time of the last rebuilt tick message (write_ticks)
        q = messages.qos_profile
        self.pub_status = self.create_publisher(String, C.TOPIC_RECORDER_STATUS, q(C.QOS_EVENTS))
        self.subscriptions_by_topic = {}
        for topic, type_name in C.recorded_topics().items():
            qos = C.QOS_LATCHED if topic in C.LATCHED_TOPICS else C.QOS_STATE
            self.subscriptions_by_topic[topic] = self.create_subscription(
                messages.message_class(type_name), topic, self._on_message(topic), q(qos),
                raw=True)
        self.create_timer(0.02, self.close_when_quiet)
        self.get_logger().info(f"recording {len(C.recorded_topics())} topics into "
                               f"{self.bags.root}/<episode>/ (MCAP)")

    def offered_qos(self, topic: str) -> list[EndpointQos]:
        """What the topic's publishers offer now (from discovery, as `ros2 bag record` reads
        it); asked once per topic per bag, when the bag first writes the topic."""
        return [_endpoint_qos(info.qos_profile)
                for info in self.get_publishers_info_by_topic(topic)]

    def _on_message(self, topic: str):
        def handle(raw: bytes) -> None:
            now = time.time_ns()
            queued = self.take_queued(topic)
            # the handed-over message came before the queued ones: never a later log time
            self.receive(topic, raw, min([now] + [ts for _, ts in queued[:1] if ts]))
            for raw_next, received_ns in queued:
                self.receive(topic, raw_next, received_ns)
            if self.config.batch_s > 0 and self.spun_alone():
                time.sleep(self.config.batch_s)  # the queues fill; no CPU meanwhile
        return handle

    def spun_alone(self) -> bool:
        """Whether this node is the only one its executor spins (see module doc, batching)."""
        executor = self.executor
        return executor is not None and list(executor.get_nodes()) == [self]

    def receive(self, topic: str, raw: bytes, received_ns: int | None = None) -> None:
        now = received_ns or time.time_ns()
        self.last_message = time.monotonic()
        if topic == C.TOPIC_EPISODE_CONTROL:
            self.on_control(raw, now)
        elif self.failure is not None:
            return  # recording stopped
        elif self.bags.bag is not None:
            if topic == C.TOPIC_EPISODE_STATUS:
                self.note_done(raw)
            self.write(topic, now, raw)
        else:
            self.hold(topic, now, raw)

    def take_queued(self, topic: str) -> list[tuple[bytes, int | None]]:
        """Take the topic's other queued messages now, in order, with their receive times
        (the middleware's). The sim sends a chunk's ticks in a burst (50 x /clock, joint
        states, commands); one executor wake-up per message costs ~0.2 ms of CPU here, a take
        in this loop ~0.04 ms (measured with 12 subscriptions). The take is the call rclpy's
        executor itself makes."""
        subscription = self.subscriptions_by_topic[topic]
        out = []
        with subscription.handle:
            while (taken := subscription.handle.take_message(subscription.msg_type,
                                                             subscription.raw)) is not None:
                out.append((taken[0], taken[1].get("received_timestamp")))
        return out

    def hold(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        """Keep a message that arrived between episodes; the next bag starts with the recent
        ones (e.g. the instruction sent just before `begin`), not with a calibration's worth
        of camera frames."""
        self.held.append((topic, stamp_ns, raw))
        oldest = stamp_ns - int(HELD_WINDOW_S * 1e9)
        while self.held and (self.held[0][1] < oldest or len(self.held) > HELD_LIMIT):
            self.held.pop(0)

    def write(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        episode = self.bags.episode
        try:
            self.write_raw(topic, stamp_ns, raw)
        except OSError as exc:
            self.fail(episode, exc)

    def write_raw(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        """One message into the open bag, and a frames message's unsent ticks after it
        (OSError from the bag)."""
        self.bags.write(topic, stamp_ns, raw)
        if topic == C.TOPIC_FRAMES:
            self.write_ticks(stamp_ns, raw)

    def write_ticks(self, received_ns: int, raw: bytes) -> None:
        """The tick messages a lock-step sim did not send to this node, rebuilt from the
        frames' rows (``tick_frames.unpublished_ticks``, the contract's FRAME_EXPANDERS). Their
        log time is the frames' receive time, less a nanosecond per later message, so they
        keep their order (never before the last frames' ticks: two frames messages taken in
        one batch may share a log time); their stamps are the sim's. Frames that cannot be
        read are logged once per bag and kept as they are (the rows are in the bag either
        way)."""
        try:
            ticks = tick_frames.unpublished_ticks(deserialize_message(raw, Float64MultiArray))
        except Exception as exc:  # noqa: BLE001 - bytes from outside: junk, not ours to trust
            if self.bags.episode not in self.unreadable_frames:
                self.unreadable_frames.add(self.bags.episode)
                self.get_logger().error(f"episode {self.bags.episode!r}: a frames message's "
                                        f"ticks were not rebuilt (it is recorded as it came): "
                                        f"{exc}")
            return
        log_ns = max(received_ns - len(ticks), self.last_tick_log_ns + 1)
        for k, (topic, _, msg) in enumerate(ticks):
            self.bags.write(topic, log_ns + k, cdr_bytes(msg))
        if ticks:
            self.last_tick_log_ns = log_ns + len(ticks) - 1

    def note_done(self, raw: bytes) -> None:
        """Whether this sim status is the ``done`` of the open bag's episode."""
        try:
            status = C.check_status(json.loads(deserialize_message(raw, String).data), "sim")
        except (ValueError, TypeError, AttributeError):  # not ours to judge (the evaluator does)
            return
        if status["kind"] == C.STATUS_DONE and status["episode"] == self.bags.episode:
            self.done = True

    def read_control(self, raw: bytes) -> dict | None:
        """The control message checked as the sim and the policy check it; None (one log line)
        when they would refuse it."""
        try:
            msg = deserialize_message(raw, String)
        except Exception as exc:  # noqa: BLE001 - bytes that are no std_msgs/String
            self.get_logger().error(f"ignored an unreadable episode control message: {exc!r}")
            return None
        return messages.parse_control(msg, self.get_logger(), require=BEGIN_NEEDS,
                                      task_keys=TASK_KEYS)

    def on_control(self, raw: bytes, stamp_ns: int) -> None:
        ctl = self.read_control(raw)
        if ctl is None:
            return
        kind, episode = ctl["kind"], ctl["episode"]
        if kind == C.CONTROL_BEGIN and not self.begin(episode):
            return
        if self.failure is not None:
            return
        if self.bags.bag is not None:
            self.write(C.TOPIC_EPISODE_CONTROL, stamp_ns, raw)
        else:
            self.hold(C.TOPIC_EPISODE_CONTROL, stamp_ns, raw)
        if kind == C.CONTROL_END and episode == self.bags.episode and self.bags.bag is not None:
            self.ending, self.end_asked = episode, time.monotonic()

    def begin(self, episode: str) -> bool:
        """Open the episode's bag and answer ``recording``; False when the begin is refused
        (logged) or the bag cannot be opened (answered ``failed``)."""
        if self.failure is not None:
            self.status(C.RECORDER_FAILED, episode, reason=self.failure)
            return False
        if self.bags.bag is not None and self.bags.episode == episode:
            self.status(C.RECORDER_RECORDING, episode)  # asked again: its answer was lost
            return True
        try:
            self.bags.check_begin(episode)  # a usable name, not a finished trial
        except ValueError as exc:
            self.get_logger().error(f"ignored a begin of episode {episode!r}: {exc}")
            return False
        if self.bags.bag is not None:  # the previous bag is still open: close it now
            ended = self.ending == self.bags.episode and self.done  # ended normally, not quiet yet
            self.close_bag(ended, f"a begin of {episode!r} came before its end")
            if self.failure is not None:
                self.status(C.RECORDER_FAILED, episode, reason=self.failure)
                return False
        try:
            self.bags.begin(episode)
            for topic, stamp_ns, raw in self.held:
                self.write_raw(topic, stamp_ns, raw)
        except OSError as exc:
            self.fail(episode, exc)
            return False
        self.held, self.done = [], False
        self.status(C.RECORDER_RECORDING, episode)
        return True

    def close_when_quiet(self) -> None:
        if self.ending is None:
            return
        now = time.monotonic()
        waited, quiet = now - self.end_asked, now - self.last_message >= QUIET_S
        if waited >= MAX_DRAIN_S or (quiet and (self.done or waited >= DONE_GRACE_S)):
            self.close_bag(self.done, "its episode did not end normally (no done from the sim "
                                      "before its end)")

    def close_bag(self, complete: bool, reason: str = "") -> None:
        episode, self.ending = self.bags.episode, None
        try:
            closed = self.bags.end(episode, complete=complete)
        except OSError as exc:
            self.fail(episode, exc)
            return
        if closed is None:
            return
        path, count = closed
        if complete:
            self.status(C.RECORDER_RECORDED, episode, bag=str(path), messages=count)
        else:
            self.get_logger().warning(f"the bag of episode {episode!r} is incomplete, kept as "
                                      f"{path}: {reason}")
            self.status(C.RECORDER_INCOMPLETE, episode, bag=str(path), messages=count,
                        reason=reason)

    def fail(self, episode: str | None, exc: OSError) -> None:
        """A bag could not be written: drop it, say why (one line, and ``failed`` to the
        evaluator), record nothing more."""
        self.bags.abandon()
        self.ending, self.held = None, []
        self.failure = f"cannot write the bag of episode {episode!r}: {os_error_text(exc)}"
        self.get_logger().error(f"{self.failure}; recording stopped (the bag is removed; "
                                "every later begin is answered 'failed')")
        if episode is not None:
            self.status(C.RECORDER_FAILED, episode, reason=self.failure)

    def status(self, kind: str, episode: str, **fields) -> None:
        self.pub_status.publish(messages.json_msg({"kind": kind, "episode": episode, **fields}))

    def close(self) -> None:
        self.bags.close()


def main(args=None) -> int:
    return messages.spin_node(RecorderNode, "recorder_node", args)


if __name__ == "__main__":
    raise SystemExit(main())
