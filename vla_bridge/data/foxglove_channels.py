"""What the live viewer (viewer:=foxglove, data/viewer_node.py) serves, as pure data.

Every topic an episode's bag holds (``contract.recorded_topics()``) becomes one Foxglove
channel that carries the ROS 2 message exactly as DDS delivered it: CDR bytes with the
message's ``ros2msg`` definition as schema, the same encoding the MCAP bags use. Nothing is
converted, so forwarding a 230 KB camera image costs a copy, not a decode, and one Foxglove
layout shows a live run and its recorded bags alike (Image panel for sensor_msgs/Image, 3D
panel for the world-state MarkerArray in frame ``world``, Plot for joint states, Raw
Messages for the JSON status strings).

Throttled (per topic, the newest message wins, see `Throttle`):
* camera images (raw, cued, dense recording frames): at most IMAGE_HZ each;
* per-tick streams (``/clock``, joint states and commands, frames, the policy heartbeat):
  at most STREAM_HZ each.
Everything else (episode control and status, policy and recorder status, instruction,
action chunks, world state, camera info) is forwarded message by message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vla_bridge import contract as C

IMAGE_HZ = 10.0  # a camera panel needs no more; 3 x 230 KB x 10 Hz = 7 MB/s per client
STREAM_HZ = 30.0  # smooth plots; the sim publishes these every 4-60 ms of sim time
SCHEMA_ENCODING = "ros2msg"  # the schema: the message definition, as in the MCAP bags
MESSAGE_ENCODING = "cdr"  # the payload: ROS 2's own serialization, as DDS delivered it
IMAGE_TYPE = "sensor_msgs/msg/Image"
STREAM_TOPICS = frozenset({
    C.TOPIC_CLOCK, C.TOPIC_JOINT_STATES, C.TOPIC_JOINT_COMMANDS, C.TOPIC_FRAMES,
    C.TOPIC_POLICY_HEARTBEAT, C.TOPIC_RECORD_JOINT_STATES, C.TOPIC_RECORD_JOINT_COMMANDS})


@dataclass(frozen=True)
class ViewedTopic:
    topic: str
    type_name: str  # "pkg/msg/Type"
    max_hz: float  # 0: every message
    qos: C.QosSpec  # how the viewer subscribes


def viewed_topics() -> list[ViewedTopic]:
    """One entry per recorded topic, with its rate limit and subscription QoS.

    Throttled topics are read with QOS_LATEST (reliable, depth 1): the newest message always
    arrives and a slow viewer never queues old frames. Events keep QOS_EVENTS' depth so no
    status is lost in a burst; the latched instruction is read latched."""
    out = []
    for topic, type_name in C.recorded_topics().items():
        if type_name == IMAGE_TYPE:
            max_hz, qos = IMAGE_HZ, C.QOS_LATEST
        elif topic in STREAM_TOPICS:
            max_hz, qos = STREAM_HZ, C.QOS_LATEST
        else:
            max_hz = 0.0
            qos = C.QOS_LATCHED if topic in C.LATCHED_TOPICS else C.QOS_EVENTS
        out.append(ViewedTopic(topic, type_name, max_hz, qos))
    return out


def ros2msg_schema(type_name: str) -> bytes:
    """The ``ros2msg`` definition of "pkg/msg/Type" (with its dependencies), as MCAP and the
    Foxglove WebSocket protocol carry it."""
    from vla_bridge.data.bags import typestore
    text, _ = typestore().generate_msgdef(type_name, ros_version=2)
    return text.encode()


class Throttle:
    """At most `max_hz` items pass per second; the newest item held back is released by
    `flush` once its turn comes, so the last frame of a burst (an episode's final state) is
    always shown. max_hz 0 lets everything through."""

    def __init__(self, max_hz: float):
        self.period = 1.0 / max_hz if max_hz > 0 else 0.0
        self.last = float("-inf")  # when the last item passed
        self.pending: Any = None
        self.dropped = 0  # items replaced by a newer one before their turn

    def offer(self, now: float, item: Any) -> Any:
        """`item` if it may pass at `now`, else None (it is held, replacing an older one)."""
        if self.pending is not None:
            self.dropped += 1  # a newer item replaces it, now or below
        if now - self.last >= self.period:
            self.last, self.pending = now, None
            return item
        self.pending = item
        return None

    def flush(self, now: float) -> Any:
        """The item held back, once its turn has come; else None."""
        if self.pending is None or now - self.last < self.period:
            return None
        item, self.pending, self.last = self.pending, None, now
        return item
