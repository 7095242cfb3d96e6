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

Connections (`ClientGate`): the public port is a small gate in front of the SDK's server (which
listens on a private loopback port).

* Subprotocols: the SDK speaks ``foxglove.sdk.v1`` only, and answers any other request with
  "400 Missing expected sec-websocket-protocol header". Foxglove's older app releases,
  Lichtblick and every example client of ``@foxglove/ws-protocol-examples`` ask for
  ``foxglove.websocket.v1``, whose messages the SDK's server speaks too (``foxglove.sdk.v1`` is
  its successor, read by the same ``@foxglove/ws-protocol`` client). So the gate passes such a
  handshake on as ``foxglove.sdk.v1`` and hands the client back the subprotocol it asked for
  (`negotiate_subprotocol`, `answer_subprotocol`); a request that asks for neither is answered
  400 with the two names to use, in one line.
* It admits at most ``max_clients`` WebSocket clients at a
time (each costs the SDK a few MB: 200 clients took the node from 160 to 814 MB) and refuses the
next one at the handshake (HTTP 503, one log line); a socket that sends no handshake within
HANDSHAKE_S is closed. A client that is idle, leaves, or drops its socket without a WebSocket
close is normal: at most an INFO line (the SDK logs those as ERROR; `ClientGoneIsNormal`).
The launcher treats the viewer as an observer (launch_args.VIEWER): its death never stops the run.
"""
from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from dataclasses import dataclass

import foxglove
from rclpy.node import Node

from vla_bridge.data.foxglove_channels import (MESSAGE_ENCODING, SCHEMA_ENCODING, Throttle,
                                                     ViewedTopic, ros2msg_schema, viewed_topics)
from vla_bridge.ros import messages
from vla_bridge.ros.node_config import declare, param

# follow client subscriptions and release held-back frames this often (idle: 0.5 % of a core)
POLL_S = 0.1
# Outgoing messages buffered per client (the SDK drops the oldest data beyond it): bounds a
# slow client's memory to about 64 x 230 KB images instead of the SDK's 1024.
BACKLOG = 64
HANDSHAKE_S = 10.0  # a connection that sends no complete handshake request by then is closed
MAX_PENDING = 32  # connections still in their handshake at a time; more are closed at once
MAX_HEAD_BYTES = 16384  # the handshake request (an HTTP head)
LOG = logging.getLogger("vla_bridge.viewer")
#: SDK loggers (Rust targets) that report a client's connection ending as an ERROR
SDK_CONNECTION_LOGGERS = ("foxglove.websocket.server", "foxglove.websocket.connected_client",
                          "foxglove.websocket.connected_client.poller")
#: what those lines say when a client merely went away (idle socket closed, tab closed, ...)
CLIENT_GONE = ("handshake failed", "without closing handshake", "Connection reset",
               "Broken pipe", "Connection closed", "ConnectionClosed", "AlreadyClosed")


class ClientGoneIsNormal(logging.Filter):
    """A client that leaves without a WebSocket close, or a socket that never completes a
    handshake, is no server error: the SDK's ERROR line about it becomes an INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO and any(s in record.getMessage() for s in CLIENT_GONE):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def quiet_client_departures() -> None:
    """Install ClientGoneIsNormal on the SDK's connection loggers (once)."""
    for name in SDK_CONNECTION_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ClientGoneIsNormal) for f in logger.filters):
            logger.addFilter(ClientGoneIsNormal())


def _refusal(text: str, status: bytes = b"503 Service Unavailable") -> bytes:
    body = (text + "\n").encode()
    return (b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n"
            b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)) + body


#: the subprotocol the SDK's server speaks, and the older name of the same protocol
SDK_SUBPROTOCOL = "foxglove.sdk.v1"
LEGACY_SUBPROTOCOL = "foxglove.websocket.v1"
SUBPROTOCOLS = (SDK_SUBPROTOCOL, LEGACY_SUBPROTOCOL)
_PROTOCOL_HEADER = b"sec-websocket-protocol"


def _requested_subprotocols(head: bytes) -> list[str]:
    """The subprotocols a handshake request offers (every Sec-WebSocket-Protocol line,
    comma-separated, in order)."""
    offered = []
    for line in head.split(b"\r\n")[1:]:
        name, sep, value = line.partition(b":")
        if sep and name.strip().lower() == _PROTOCOL_HEADER:
            offered += [p.strip() for p in value.decode("latin-1").split(",") if p.strip()]
    return offered


def _with_protocol_header(head: bytes, protocol: str) -> bytes:
    """`head` with its Sec-WebSocket-Protocol line(s) replaced by one naming `protocol`."""
    lines = head.rstrip(b"\r\n").split(b"\r\n")
    kept = [line for line in lines
            if line.partition(b":")[0].strip().lower() != _PROTOCOL_HEADER]
    return b"\r\n".join(kept + [b"Sec-WebSocket-Protocol: " + protocol.encode()]) + b"\r\n\r\n"


def negotiate_subprotocol(head: bytes) -> tuple[bytes, str | None] | str:
    """A client's handshake request -> (the request for the SDK's server, the subprotocol to
    give the client back, or None when the SDK's answer stands), or the reason for refusing it.

    ``foxglove.sdk.v1`` offered: the request goes on unchanged (the SDK picks it). Only
    ``foxglove.websocket.v1`` offered: the request goes on asking for ``foxglove.sdk.v1`` and the
    client is answered with ``foxglove.websocket.v1``."""
    offered = _requested_subprotocols(head)
    if SDK_SUBPROTOCOL in offered:
        return head, None
    if LEGACY_SUBPROTOCOL in offered:
        return _with_protocol_header(head, SDK_SUBPROTOCOL), LEGACY_SUBPROTOCOL
    asked = ", ".join(offered) if offered else "no Sec-WebSocket-Protocol header"
    return (f"the viewer speaks the Foxglove WebSocket protocol: open the WebSocket with "
            f"subprotocol {SDK_SUBPROTOCOL} or {LEGACY_SUBPROTOCOL} (this request: {asked})")


def answer_subprotocol(response_head: bytes, protocol: str) -> bytes:
    """The SDK's handshake response with the subprotocol the client asked for: only a
    ``101 Switching Protocols`` answer is changed (an error answer goes back as it is)."""
    if b" 101 " not in response_head.split(b"\r\n", 1)[0]:
        return response_head
    return _with_protocol_header(response_head, protocol)


class ClientGate:
    """The viewer's public port, in front of the SDK's server on 127.0.0.1:`upstream_port`.

    Each connection's handshake request is read first (at most HANDSHAKE_S): with
    `max_clients` clients already connected it is answered 503 (one WARNING line), else it is
    passed on and the bytes flow both ways until either side closes. Runs an asyncio loop in
    a thread of its own; `clients` is the number of connected clients."""

    def __init__(self, host: str, port: int, upstream_port: int, max_clients: int):
        if max_clients < 1:
            raise ValueError(f"max_clients must be >= 1, got {max_clients}")
        self.upstream_port, self.max_clients = upstream_port, max_clients
        self.clients = self.pending = self.refused = 0
        self._tasks: set[asyncio.Task] = set()
        self.loop = asyncio.new_event_loop()
        try:  # bind here, so a port in use is an error of the constructor
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self._connection, host, port, limit=MAX_HEAD_BYTES))
        except BaseException:
            self.loop.close()
            raise
        self.port = self.server.sockets[0].getsockname()[1]
        self.thread = threading.Thread(target=self.loop.run_forever, name="viewer-gate",
                                       daemon=True)
        self.thread.start()

    async def _connection(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        peer = _peer(writer)
        try:
            head = await self._handshake(reader, writer, peer)
            if head is None:
                return
            if self.clients >= self.max_clients:
                self.refused += 1
                LOG.warning("viewer: refused client %s at the handshake: %d clients already "
                            "connected (max_clients %d)", peer, self.clients, self.max_clients)
                writer.write(_refusal(f"the viewer serves at most {self.max_clients} clients "
                                      "at a time (viewer_node max_clients)"))
                await writer.drain()
                return
            negotiated = negotiate_subprotocol(head)
            if isinstance(negotiated, str):
                LOG.warning("viewer: refused client %s at the handshake: %s", peer, negotiated)
                writer.write(_refusal(negotiated, b"400 Bad Request"))
                await writer.drain()
                return
            await self._forward(*negotiated, reader, writer, peer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client went away
        except asyncio.CancelledError:
            pass  # stop(): end quietly (asyncio's stream callback reads a cancelled task's
            #       exception and logs a traceback)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _handshake(self, reader, writer, peer: str) -> bytes | None:
        """The handshake request, or None (the connection is dropped, at most a DEBUG line)."""
        if self.pending >= MAX_PENDING:
            LOG.debug("viewer: %s dropped: %d connections already in their handshake", peer,
                      self.pending)
            return None
        self.pending += 1
        try:
            return await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HANDSHAKE_S)
        except TimeoutError:
            why = f"no handshake within {HANDSHAKE_S:g} s"
        except asyncio.IncompleteReadError:
            why = "closed before a handshake"
        except (asyncio.LimitOverrunError, ValueError):
            why = f"handshake request over {MAX_HEAD_BYTES} bytes"
        except OSError as exc:
            why = f"{type(exc).__name__} before a handshake"
        finally:
            self.pending -= 1
        LOG.debug("viewer: connection from %s dropped (%s)", peer, why)
        return None

    async def _forward(self, head: bytes, protocol: str | None, reader, writer,
                       peer: str) -> None:
        self.clients += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
            LOG.debug("viewer: client %s admitted (%d of at most %d)", peer, self.clients,
                      self.max_clients)
            up_writer.write(head)
            if protocol is not None:  # the client asked for the protocol's older name
                response = await asyncio.wait_for(up_reader.readuntil(b"\r\n\r\n"),
                                                  HANDSHAKE_S)
                writer.write(answer_subprotocol(response, protocol))
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            self.clients -= 1

    def stop(self) -> None:
        async def shut() -> None:
            self.server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(timeout=5)
        except Exception:  # noqa: BLE001 - stopping anyway
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    """Copy until `src` ends, then close `dst` (which ends the other direction too)."""
    try:
        while data := await src.read(1 << 16):
            dst.write(data)
            await dst.drain()  # a slow client holds the SDK back; the SDK drops old data
    except OSError:
        pass
    finally:
        dst.close()


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else str(peer)


@dataclass
class _Forward:
    """One topic on its way to Foxglove: its channel, rate limit and ROS subscription."""
    viewed: ViewedTopic
    channel: foxglove.Channel
    throttle: Throttle
    subscription: object = None  # rclpy subscription while a client watches, else None
    forwarded: int = 0


@dataclass(frozen=True)
class ViewerConfig:
    """The viewer node's parameters (``vla-bridge params viewer_node``)."""
    host: str = param("127.0.0.1", "address of the WebSocket server (localhost only: anyone "
                                   "who reaches the port sees the run)")
    port: int = param(8765, "port of the WebSocket server (Foxglove's default; 0: the system "
                            "chooses)")
    max_clients: int = param(8, "WebSocket clients at a time; the next is refused at the "
                                "handshake (each costs the SDK a few MB)")


class ViewerNode(Node):
    def __init__(self):
        super().__init__("viewer_node")
        self.config = declare(self, ViewerConfig)
        host, port, max_clients = self.config.host, self.config.port, self.config.max_clients
        if max_clients < 1:
            raise RuntimeError(f"viewer_node: max_clients must be >= 1, got {max_clients}")
        quiet_client_departures()
        self.sink = foxglove.Context()  # own channels: two viewers in one process stay apart
        self.forwards = [self._forward(v) for v in viewed_topics()]
        # the SDK's server on a private loopback port; clients reach it through the gate
        self.server = foxglove.start_server(name="vla_bridge", host="127.0.0.1", port=0,
                                            context=self.sink, message_backlog_size=BACKLOG)
        try:
            self.gate = ClientGate(host, port, self.server.port, max_clients)
        except OSError as exc:
            self.server.stop()
            raise RuntimeError(f"cannot serve Foxglove on {host}:{port}: {exc} (port in use? "
                               "--viewer_port chooses another)") from exc
        self.port = self.gate.port  # the bound port (port 0: the system chose it)
        self.create_timer(POLL_S, self.poll)
        self.get_logger().info(f"Foxglove viewer on ws://{host}:{self.port} serving "
                               f"{len(self.forwards)} topics to at most {max_clients} clients "
                               "(Foxglove: Open connection -> Foxglove WebSocket)")

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
        self.gate.stop()
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
