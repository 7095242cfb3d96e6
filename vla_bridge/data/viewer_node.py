"""Viewer node (`viewer:=foxglove`): the running graph, live in the Foxglove app.

It serves every topic of ``contract.recorded_topics()`` through foxglove-sdk's WebSocket
server (``ws://<host>:<port>``, 127.0.0.1:8765 by default), as the ROS 2 messages themselves
(CDR with their ``ros2msg`` schema, see data/foxglove_channels.py), so a user without
a ROS install watches cameras, joint states, world-state markers, action chunks and episode
status in Foxglove (Open connection -> Foxglove WebSocket).

Cost: a topic is subscribed only while some Foxglove client subscribes to its channel
(polled every POLL_S), since the sim publishes its per-tick topics only to subscribers; an
unwatched viewer costs the graph nothing. Messages are taken raw (no deserialisation) and
images and per-tick streams are throttled (foxglove_channels.Throttle).

Clients can only subscribe (no capabilities are advertised): the server publishes nothing
into the graph. A garbled or unknown client message is answered by the SDK with a status
message and one log line; the connection and the node go on.
"""
from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass

import foxglove
from rclpy.node import Node

from vla_bridge.data.foxglove_channels import (MESSAGE_ENCODING, SCHEMA_ENCODING, Throttle,
                                                     ViewedTopic, ros2msg_schema, viewed_topics)
from vla_bridge.ros import messages

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# follow client subscriptions and release held-back frames this often (idle: 0.5 % of a core)
POLL_S = 0.1
# Outgoing messages buffered per client (the SDK drops the oldest data beyond it): bounds a
# slow client's memory to about 64 x 230 KB images instead of the SDK's 1024.
BACKLOG = 64


@dataclass
class _Forward:
    """One topic on its way to Foxglove: its channel, rate limit and ROS subscription."""
    viewed: ViewedTopic
    channel: foxglove.Channel
    throttle: Throttle
    subscription: object = None  # rclpy subscription while a client watches, else None
    forwarded: int = 0


class ViewerNode(Node):
    def __init__(self):
        super().__init__("viewer_node")
        host = self.declare_parameter("host", DEFAULT_HOST).value
        port = self.declare_parameter("port", DEFAULT_PORT).value
        self.sink = foxglove.Context()  # own channels: two viewers in one process stay apart
        self.forwards = [self._forward(v) for v in viewed_topics()]
        try:
            self.server = foxglove.start_server(name="vla_bridge", host=host, port=port,
                                                context=self.sink, message_backlog_size=BACKLOG)
        except (RuntimeError, OSError) as exc:
            raise RuntimeError(f"cannot serve Foxglove on {host}:{port}: {exc} (port in use? "
                               "--viewer_port chooses another)") from exc
        self.port = self.server.port  # the bound port (port 0: the system chose it)
        self.create_timer(POLL_S, self.poll)
        self.get_logger().info(f"Foxglove viewer on ws://{host}:{self.port} serving "
                               f"{len(self.forwards)} topics (Foxglove: Open connection -> "
                               "Foxglove WebSocket)")

    def _forward(self, viewed: ViewedTopic) -> _Forward:
        schema = foxglove.Schema(name=viewed.type_name, encoding=SCHEMA_ENCODING,
                                 data=ros2msg_schema(viewed.type_name))
        channel = foxglove.Channel(viewed.topic, schema=schema, message_encoding=MESSAGE_ENCODING,
                                   context=self.sink)
        return _Forward(viewed, channel, Throttle(viewed.max_hz))

    def poll(self) -> None:
        now = time.monotonic()
        for fwd in self.forwards:
            self.follow(fwd)
            held = fwd.throttle.flush(now)
            if held is not None:
                self.send(fwd, held)

    def follow(self, fwd: _Forward) -> None:
        """Subscribe the topic while a client watches its channel, and only then."""
        watched = fwd.channel.has_sinks()
        if watched and fwd.subscription is None:
            v = fwd.viewed
            fwd.subscription = self.create_subscription(
                messages.message_class(v.type_name), v.topic, self._on_message(fwd),
                messages.qos_profile(v.qos), raw=True)
        elif not watched and fwd.subscription is not None:
            self.destroy_subscription(fwd.subscription)
            fwd.subscription = None

    def _on_message(self, fwd: _Forward):
        def handle(raw: bytes) -> None:
            item = fwd.throttle.offer(time.monotonic(), (time.time_ns(), raw))
            if item is not None:
                self.send(fwd, item)
        return handle

    @staticmethod
    def send(fwd: _Forward, item: tuple[int, bytes]) -> None:
        log_time, raw = item  # receive time on the wall clock, as the bags' log times
        fwd.channel.log(raw, log_time=log_time)
        fwd.forwarded += 1

    def counts(self) -> dict[str, tuple[int, int]]:
        """topic -> (messages forwarded, messages throttled away), for topics that had any."""
        return {f.viewed.topic: (f.forwarded, f.throttle.dropped) for f in self.forwards
                if f.forwarded or f.throttle.dropped}

    def close(self) -> None:
        self.server.stop()
        counts = self.counts().values()
        # stderr, not the ROS logger: on Ctrl-C the context is already shut down here
        print(f"viewer_node: stopped; {sum(f for f, _ in counts)} messages forwarded, "
              f"{sum(d for _, d in counts)} throttled", file=sys.stderr)


def main(args=None) -> int:
    # the SDK logs through Python logging: client connections, invalid client messages
    logging.basicConfig(level=logging.INFO, format="[%(levelname)s] [%(name)s]: %(message)s")
    return messages.spin_node(ViewerNode, "viewer_node", args)


if __name__ == "__main__":
    raise SystemExit(main())
