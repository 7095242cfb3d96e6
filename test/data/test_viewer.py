"""viewer:=foxglove: the viewer node serves the graph to a Foxglove WebSocket client, over
real DDS and a real WebSocket connection (the `websockets` package as the client)."""
from __future__ import annotations

import contextlib
import json
import logging
import shutil
import subprocess
import struct
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.data import foxglove_channels as F

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("foxglove")
from websockets.sync.client import connect  # noqa: E402

SUBPROTOCOL = "foxglove.sdk.v1"  # what foxglove-sdk 0.30 accepts (the old name gets HTTP 400)
CAMERA = C.image_topic("cam_high")
OP_MESSAGE_DATA = 1  # binary server opcode: u32 subscription id, u64 log time, payload

# ----------------------------------------------------------------------------- pure parts


def test_throttle_lets_max_hz_through_and_releases_the_newest_held_item():
    t = F.Throttle(10.0)
    assert t.offer(0.0, "a") == "a"
    assert t.offer(0.02, "b") is None and t.offer(0.05, "c") is None  # c replaces b
    assert t.flush(0.08) is None  # not its turn yet
    assert t.flush(0.1) == "c" and t.flush(0.5) is None
    assert t.dropped == 1
    everything = F.Throttle(0.0)
    assert [everything.offer(0.0, i) for i in range(3)] == [0, 1, 2]


def test_every_recorded_topic_is_served_with_its_ros2msg_definition():
    viewed = {v.topic: v for v in F.viewed_topics()}
    assert set(viewed) == set(C.recorded_topics())
    assert viewed[CAMERA].max_hz == F.IMAGE_HZ == 10.0
    assert viewed[C.TOPIC_JOINT_STATES].max_hz == F.STREAM_HZ
    assert viewed[C.TOPIC_EPISODE_STATUS].max_hz == 0  # every status message
    assert viewed[C.TOPIC_INSTRUCTION].qos == C.QOS_LATCHED
    schema = F.ros2msg_schema("sensor_msgs/msg/Image").decode()
    assert schema.startswith("std_msgs/Header header\n") and "uint8[] data" in schema
    assert "MSG: builtin_interfaces/Time" in schema  # dependencies included, as in MCAP

# ------------------------------------------------------------------- a viewer over DDS


class _Graph:
    """A viewer node (port 0: any free port) and a publisher node on a context of their own,
    spun by an executor thread while the test talks WebSocket."""

    def __init__(self):
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import Image
        from std_msgs.msg import String

        from vla_bridge.ros import messages
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=["--ros-args", "-p", "port:=0"])
        self.viewer = _viewer_in(self.context)
        self.node = rclpy.node.Node("test_publisher", context=self.context)
        q = messages.qos_profile
        self.pub_image = self.node.create_publisher(Image, CAMERA, q(C.QOS_IMAGES))
        self.pub_status = self.node.create_publisher(String, C.TOPIC_EPISODE_STATUS,
                                                     q(C.QOS_EVENTS))
        self.messages = messages
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.viewer)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def image(self, value: int, stamp: float = 0.0):
        pixels = np.full((C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), value, np.uint8)
        pixels[0, 0] = (1, 2, 3)
        return pixels, self.messages.image_to_msg(pixels, stamp, "cam_high")

    def close(self) -> None:
        self.executor.shutdown()
        self.thread.join(timeout=5)
        self.viewer.close()
        self.viewer.destroy_node()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def _viewer_in(context):
    """A ViewerNode built on `context` (its parameters come from the context's arguments)."""
    from vla_bridge.data import viewer_node
    init = viewer_node.Node.__init__
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(viewer_node.Node, "__init__",
                   lambda node, *a, **k: init(node, *a, **{**k, "context": context}))
        return viewer_node.ViewerNode()


@pytest.fixture(scope="module")
def graph():
    g = _Graph()
    yield g
    g.close()


@contextlib.contextmanager
def _client(graph):
    """A connected client and the server's channels by topic (from its advertise)."""
    with connect(f"ws://127.0.0.1:{graph.viewer.port}", subprotocols=[SUBPROTOCOL],
                 open_timeout=5) as ws:
        info = json.loads(ws.recv(timeout=5))
        assert info["op"] == "serverInfo" and info["capabilities"] == []  # subscribe-only
        channels = {}
        while len(channels) < len(C.recorded_topics()):
            advert = json.loads(ws.recv(timeout=5))
            assert advert["op"] == "advertise"
            channels.update({c["topic"]: c for c in advert["channels"]})
        yield ws, channels


def _subscribe(ws, channel: dict, sub_id: int) -> None:
    ws.send(json.dumps({"op": "subscribe", "subscriptions": [{"id": sub_id,
                                                             "channelId": channel["id"]}]}))


def _next_data(ws, timeout: float, texts: list | None = None):
    """(subscription id, log time, payload) of the next binary message; JSON messages on the
    way go to `texts`. None on timeout."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            frame = ws.recv(timeout=left)
        except TimeoutError:
            return None
        if isinstance(frame, str):
            (texts if texts is not None else []).append(json.loads(frame))
            continue
        assert frame[0] == OP_MESSAGE_DATA
        sub_id, log_time = struct.unpack_from("<IQ", frame, 1)
        return sub_id, log_time, frame[13:]
    return None


def _wait(condition, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _decode_image(payload: bytes) -> np.ndarray:
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import Image
    msg = deserialize_message(payload, Image)
    assert (msg.encoding, msg.width, msg.height) == ("rgb8", C.ALOHA_PIPER.image_size[0], C.ALOHA_PIPER.image_size[1])
    return np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)


def test_a_client_receives_camera_images_pixel_for_pixel_and_throttled(graph):
    with _client(graph) as (ws, channels):
        camera = channels[CAMERA]
        assert (camera["encoding"], camera["schemaEncoding"], camera["schemaName"]) == (
            "cdr", "ros2msg", "sensor_msgs/msg/Image")
        assert graph.pub_image.get_subscription_count() == 0  # nobody watches yet
        _subscribe(ws, camera, 7)
        _wait(lambda: graph.pub_image.get_subscription_count() == 1, "the viewer to subscribe")
        pixels, msg = graph.image(200)
        got = None
        for _ in range(50):  # until DDS has matched both ends
            graph.pub_image.publish(msg)
            if got := _next_data(ws, 0.2):
                break
        assert got is not None, "no image reached the client"
        sub_id, log_time, payload = got
        assert sub_id == 7 and abs(log_time - time.time_ns()) < 5e9
        assert np.array_equal(_decode_image(payload), pixels)

        # a burst of 30 frames in ~0.3 s: about 10 Hz pass, and the last one always does
        time.sleep(0.15)
        start = time.monotonic()
        for i in range(30):
            graph.pub_image.publish(graph.image(i)[1])
            time.sleep(0.01)
        received = []
        while got := _next_data(ws, 0.5):
            received.append(int(_decode_image(got[2])[1, 1, 0]))
        elapsed = time.monotonic() - start
        assert received and received[-1] == 29, received
        assert len(received) <= elapsed * F.IMAGE_HZ + 2, (len(received), elapsed)
        assert received == sorted(received)


def test_garbled_client_messages_are_logged_once_each_and_the_viewer_goes_on(graph, caplog):
    caplog.set_level(logging.INFO, logger="foxglove")
    with _client(graph) as (ws, channels):
        junk = ["{not json", json.dumps({"op": "explode"}), json.dumps([1, 2]),
                b"\x07binary junk", b"\x01\x00",
                json.dumps({"op": "subscribe", "subscriptions": "x"})]
        for frame in junk:
            ws.send(frame)
        texts = []
        _subscribe(ws, channels[C.TOPIC_EPISODE_STATUS], 3)
        _wait(lambda: graph.pub_status.get_subscription_count() == 1, "the status subscription")
        got = None
        for _ in range(50):
            graph.pub_status.publish(graph.messages.json_msg({"kind": "ready", "episode": "e"}))
            if got := _next_data(ws, 0.2, texts):
                break
        assert got is not None, "the viewer stopped serving after junk"
        from rclpy.serialization import deserialize_message
        from std_msgs.msg import String
        assert json.loads(deserialize_message(got[2], String).data)["kind"] == "ready"
    statuses = [t for t in texts if t["op"] == "status"]
    assert len(statuses) == len(junk), texts  # each one answered, none dropped the client
    invalid = [r for r in caplog.records if "Invalid message" in r.getMessage()]
    assert len(invalid) == len(junk), [r.getMessage() for r in caplog.records]
    assert graph.thread.is_alive()


def test_a_client_asking_for_the_legacy_subprotocol_name_is_served_under_that_name(graph):
    """foxglove-sdk 0.30 speaks `foxglove.sdk.v1` only; older Foxglove / Lichtblick releases
    and Foxglove's example clients ask for `foxglove.websocket.v1`. The gate serves them and
    answers with the name they asked for (a WebSocket client must get one it offered)."""
    with connect(f"ws://127.0.0.1:{graph.viewer.port}",
                 subprotocols=["foxglove.websocket.v1"], open_timeout=5) as ws:
        assert ws.subprotocol == "foxglove.websocket.v1"
        assert json.loads(ws.recv(timeout=5))["op"] == "serverInfo"
        advert = json.loads(ws.recv(timeout=5))
        assert advert["op"] == "advertise" and advert["channels"]
    with connect(f"ws://127.0.0.1:{graph.viewer.port}",
                 subprotocols=["foxglove.websocket.v1", SUBPROTOCOL], open_timeout=5) as ws:
        assert ws.subprotocol == SUBPROTOCOL  # both offered: the SDK's own name


def test_a_request_for_no_foxglove_subprotocol_is_told_which_to_use(graph, caplog):
    from websockets.exceptions import InvalidStatus
    for offered in ([], ["ros1"]):
        with pytest.raises(InvalidStatus, match="HTTP 400") as refused:
            with connect(f"ws://127.0.0.1:{graph.viewer.port}", subprotocols=offered or None,
                         open_timeout=5):
                pass
        body = refused.value.response.body.decode()
        assert "foxglove.sdk.v1 or foxglove.websocket.v1" in body, body
        assert ("ros1" if offered else "no Sec-WebSocket-Protocol header") in body, body
    refusals = [r for r in caplog.records if "refused client" in r.getMessage()]
    assert len(refusals) == 2 and all(r.levelno == logging.WARNING for r in refusals)


def test_negotiation_rewrites_only_the_protocol_line():
    from vla_bridge.data.viewer_node import answer_subprotocol, negotiate_subprotocol
    head = (b"GET / HTTP/1.1\r\nHost: h\r\nsec-websocket-protocol: foxglove.websocket.v1\r\n"
            b"Sec-WebSocket-Key: k\r\n\r\n")
    upstream, answer = negotiate_subprotocol(head)
    assert answer == "foxglove.websocket.v1"
    assert upstream == (b"GET / HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Key: k\r\n"
                        b"Sec-WebSocket-Protocol: foxglove.sdk.v1\r\n\r\n")
    sdk = head.replace(b"foxglove.websocket.v1", b"a, foxglove.sdk.v1")
    assert negotiate_subprotocol(sdk) == (sdk, None)
    switched = b"HTTP/1.1 101 Switching Protocols\r\nsec-websocket-protocol: foxglove.sdk.v1\r\n\r\n"
    assert answer_subprotocol(switched, "foxglove.websocket.v1") == (
        b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n")
    error = b"HTTP/1.1 400 Bad Request\r\n\r\n"
    assert answer_subprotocol(error, "foxglove.websocket.v1") == error


# ---------------------------------------------- Foxglove's own npm clients (issue #27, point 4)
FOXGLOVE_CLIENTS = Path(__file__).resolve().parents[2] / ".foxglove-clients"
NODE_SCRIPT = Path(__file__).resolve().parents[1] / "support" / "foxglove" / "subscribe_all.js"


def _npm_clients() -> Path:
    if shutil.which("node") is None or not (FOXGLOVE_CLIENTS / ".stamp").exists():
        pytest.skip("Foxglove's npm clients are not installed (bash scripts/setup.sh test "
                    "installs them into .foxglove-clients/ when npm is there)")
    return FOXGLOVE_CLIENTS


def _publish_while(graph, process, seconds: float) -> None:
    """Publish camera images and an episode status until `process` ends (at most `seconds`)."""
    from std_msgs.msg import String
    deadline = time.monotonic() + seconds
    value = 0
    while process.poll() is None and time.monotonic() < deadline:
        graph.pub_image.publish(graph.image(value % 250)[1])
        graph.pub_status.publish(String(data=json.dumps({"event": "ready"})))
        value += 1
        time.sleep(0.05)


@pytest.mark.parametrize("subprotocol", ["foxglove.sdk.v1", "foxglove.websocket.v1"])
def test_foxglove_npm_client_decodes_every_channel_under_either_subprotocol(graph, subprotocol):
    """@foxglove/ws-protocol's FoxgloveClient (Foxglove's own npm client) sees every recorded
    topic advertised with its ros2msg schema and receives the images and status published."""
    clients = _npm_clients()
    script = clients / NODE_SCRIPT.name
    shutil.copyfile(NODE_SCRIPT, script)  # require() resolves beside the script
    process = subprocess.Popen(["node", str(script), f"ws://127.0.0.1:{graph.viewer.port}",
                                subprotocol, "4"], stdout=subprocess.PIPE, text=True)
    _publish_while(graph, process, 15)
    out, _ = process.communicate(timeout=15)
    assert process.returncode == 0, out
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["protocol"] == subprotocol
    assert set(seen["channels"]) == set(C.recorded_topics())
    assert {c["encoding"] for c in seen["channels"].values()} == {F.MESSAGE_ENCODING}
    assert seen["messages"].get(CAMERA, 0) >= 1 and seen["messages"].get(
        C.TOPIC_EPISODE_STATUS, 0) >= 1, seen["messages"]
    width, height = C.ALOHA_PIPER.image_size
    assert seen["firstBytes"][CAMERA] > width * height * 3  # the whole rgb8 image arrived


def test_foxglove_example_simple_client_connects_and_sees_the_channels(graph):
    """The stock example client of @foxglove/ws-protocol-examples 0.10.0 (`simple-client`, which
    asks for foxglove.websocket.v1) connects; it decodes json/protobuf channels only, so it
    names each of ours as an unsupported (cdr) encoding and stays connected."""
    clients = _npm_clients()
    cli = clients / "node_modules" / "@foxglove" / "ws-protocol-examples" / "dist" / "cjs" / \
        "ws-protocol-examples" / "src" / "index.js"
    process = subprocess.Popen(["node", str(cli), "simple-client",
                                f"ws://127.0.0.1:{graph.viewer.port}"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(4)
        assert process.poll() is None, process.communicate()[0]  # still connected
    finally:
        process.terminate()
        out = process.communicate(timeout=10)[0]
    assert "Missing expected" not in out and "400" not in out, out
    assert out.count(f"Unsupported encoding {F.MESSAGE_ENCODING}") == len(C.recorded_topics()), out


def test_a_topic_is_unsubscribed_once_its_last_client_leaves(graph):
    with _client(graph) as (ws, channels):
        _subscribe(ws, channels[CAMERA], 1)
        _wait(lambda: graph.pub_image.get_subscription_count() == 1, "the viewer to subscribe")
    _wait(lambda: graph.pub_image.get_subscription_count() == 0, "the viewer to unsubscribe")
    assert graph.viewer.counts()[CAMERA][0] >= 1

def test_a_port_in_use_is_a_one_line_start_error(graph):
    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "-p", f"port:={graph.viewer.port}"])
    try:
        with pytest.raises(RuntimeError, match=rf"cannot serve Foxglove on 127.0.0.1:"
                                               rf"{graph.viewer.port}: .*--viewer_port"):
            _viewer_in(context)
    finally:
        rclpy.try_shutdown(context=context)

# ------------------------------------------------------------------------ launch table


def test_the_viewer_runs_only_with_viewer_foxglove(capsys):
    from vla_bridge import cli
    from vla_bridge.ros.launch_args import ROBOFOLLOW_REAL, resolve_nodes

    assert cli.main(["launch", "robofollow_sim", "--dry-run"]) == 0
    assert "viewer_node" not in capsys.readouterr().out
    assert cli.main(["launch", "robofollow_sim", "--dry-run", "--viewer", "foxglove",
                     "--viewer_port", "9001"]) == 0
    out = capsys.readouterr().out
    assert "-m vla_bridge.data.viewer_node --ros-args" in out
    assert "'port': 9001" in out.split("viewer_node:", 1)[1]
    assert cli.main(["launch", "robofollow_sim", "--dry-run", "viewer:=rviz"]) == 2
    assert "argument 'viewer' must be one of ['', 'foxglove'], got 'rviz'" in (
        capsys.readouterr().err)
    real = [n.spec.name for n in resolve_nodes(ROBOFOLLOW_REAL, {"viewer": "foxglove"})]
    assert real[-1] == "viewer_node"
    assert "viewer_node" not in [n.spec.name for n in resolve_nodes(ROBOFOLLOW_REAL, {})]
