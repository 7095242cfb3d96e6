"""Recorder node (`record:=true`): one rosbag2 bag (MCAP) per episode in the run directory.

It subscribes to every topic of ``contract.recorded_topics()`` in serialized form (no
deserialisation cost) and hands the bytes to ``bags.EpisodeBags``. The evaluator's episode
control opens and closes the bags:

* ``begin``: a new bag opens; the messages held in the last HELD_WINDOW_S before it (the
  instruction sent just before ``begin``, a reset status that overtook it) go in first; the
  node answers ``recording`` on its status topic, and the evaluator starts the episode only
  after that, so no observation of the episode can miss the bag;
* ``end``: the bag closes once no message has arrived for QUIET_S (messages still queued in
  this process land in their own episode's bag), then the node answers ``recorded`` with the
  bag's path and message count.

Bag log times are receive times on the wall clock, as ``ros2 bag record`` writes them; the
messages' own header stamps carry the sim time.
"""
from __future__ import annotations

import json
import time

from rclpy.node import Node
from rclpy.serialization import deserialize_message
from std_msgs.msg import String

from vla_bridge import contract as C
from vla_bridge.data.bags import EpisodeBags, typestore
from vla_bridge.ros import messages

QUIET_S = 0.05  # an ending bag closes after this long without a message...
MAX_DRAIN_S = 2.0  # ...or after this long at most
HELD_LIMIT = 500  # messages held between episodes...
HELD_WINDOW_S = 2.0  # ...and only those of the last 2 s: what was sent for the next episode


class RecorderNode(Node):
    def __init__(self):
        super().__init__("recorder_node")
        output = self.declare_parameter("output", "runs/latest").value
        typestore()  # message definitions built now, not when the first episode begins
        self.bags = EpisodeBags(output, C.recorded_topics(), C.LATCHED_TOPICS)
        self.held: list[tuple[str, int, bytes]] = []  # between episodes, see module doc
        self.ending: str | None = None  # episode whose bag closes once the topics are quiet
        self.end_asked = self.last_message = 0.0
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

    def _on_message(self, topic: str):
        def handle(raw: bytes) -> None:
            self.receive(topic, raw)
            self.drain(topic)
        return handle

    def receive(self, topic: str, raw: bytes) -> None:
        now = time.time_ns()
        self.last_message = time.monotonic()
        if topic == C.TOPIC_EPISODE_CONTROL:
            self.on_control(raw, now)
        elif self.bags.bag is not None:
            self.bags.write(topic, now, raw)
        else:
            self.hold(topic, now, raw)

    def drain(self, topic: str) -> None:
        """Take the topic's other queued messages now, in order. The sim sends a chunk's ticks
        in a burst (50 x /clock, joint states, commands); one executor wake-up per message
        costs ~0.2 ms of CPU here, a take in this loop ~0.04 ms (measured with 12
        subscriptions). The take is the call rclpy's executor itself makes."""
        subscription = self.subscriptions_by_topic[topic]
        with subscription.handle:
            while (taken := subscription.handle.take_message(subscription.msg_type,
                                                             subscription.raw)) is not None:
                self.receive(topic, taken[0])

    def hold(self, topic: str, stamp_ns: int, raw: bytes) -> None:
        """Keep a message that arrived between episodes; the next bag starts with the recent
        ones (e.g. the instruction sent just before `begin`), not with a calibration's worth
        of camera frames."""
        self.held.append((topic, stamp_ns, raw))
        oldest = stamp_ns - int(HELD_WINDOW_S * 1e9)
        while self.held and (self.held[0][1] < oldest or len(self.held) > HELD_LIMIT):
            self.held.pop(0)

    def on_control(self, raw: bytes, stamp_ns: int) -> None:
        try:
            control = json.loads(deserialize_message(raw, String).data)
            kind, episode = control["kind"], control["episode"]
        except (ValueError, TypeError, KeyError) as exc:  # not ours to judge: keep it, log once
            self.get_logger().warning(f"unreadable episode control message recorded as is: {exc}")
            kind = episode = None
        if kind == C.CONTROL_BEGIN and isinstance(episode, str):
            self.begin(episode)
        if self.bags.bag is not None:
            self.bags.write(C.TOPIC_EPISODE_CONTROL, stamp_ns, raw)
        else:
            self.hold(C.TOPIC_EPISODE_CONTROL, stamp_ns, raw)
        if kind == C.CONTROL_END and episode == self.bags.episode:
            self.ending, self.end_asked = episode, time.monotonic()

    def begin(self, episode: str) -> None:
        if self.bags.bag is not None and self.bags.episode == episode:
            self.status(C.RECORDER_RECORDING, episode)  # asked again: its answer was lost
            return
        if self.bags.bag is not None:
            self.close_bag()  # the previous episode never sent its end
        try:
            self.bags.begin(episode)
        except (OSError, ValueError) as exc:
            self.get_logger().error(f"cannot open the bag of episode {episode!r}: {exc}")
            return
        for topic, stamp_ns, raw in self.held:
            self.bags.write(topic, stamp_ns, raw)
        self.held = []
        self.status(C.RECORDER_RECORDING, episode)

    def close_when_quiet(self) -> None:
        if self.ending is None:
            return
        now = time.monotonic()
        if now - self.last_message >= QUIET_S or now - self.end_asked >= MAX_DRAIN_S:
            self.close_bag()

    def close_bag(self) -> None:
        episode, self.ending = self.bags.episode, None
        try:
            closed = self.bags.end(episode)
        except OSError as exc:
            self.get_logger().error(f"cannot finish the bag of episode {episode!r}: {exc}")
            return
        if closed is not None:
            path, count = closed
            self.status(C.RECORDER_RECORDED, episode, bag=str(path), messages=count)

    def status(self, kind: str, episode: str, **fields) -> None:
        self.pub_status.publish(messages.json_msg({"kind": kind, "episode": episode, **fields}))

    def close(self) -> None:
        self.bags.close()


def main(args=None) -> int:
    return messages.spin_node(RecorderNode, "recorder_node", args)


if __name__ == "__main__":
    raise SystemExit(main())
