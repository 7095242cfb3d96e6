"""The viewer's connections (issue #29, point 6): at most `max_clients` Foxglove clients at a
time (200 clients took the node from 160 to 814 MB), the next one refused at the handshake in
one log line; idle sockets and clients that vanish are normal (no ERROR line, the idle socket
is closed). Real WebSocket and TCP clients against a real viewer node (port 0)."""
from __future__ import annotations

import contextlib
import json
import logging
import socket
import time

import pytest

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("foxglove")
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from vla_bridge.data import viewer_node  # noqa: E402

# the vanished client is a bare connection (no `with`), as a closed browser tab leaves it
pytestmark = pytest.mark.filterwarnings(
    "ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")
SUBPROTOCOL = "foxglove.sdk.v1"


def _viewer(*params: str):
    """A ViewerNode on a context of its own, with `params` ("name:=value") set."""
    context = rclpy.Context()
    args = ["--ros-args"] + [a for p in ("port:=0", *params) for a in ("-p", p)]
    rclpy.init(context=context, args=args)
    init = viewer_node.Node.__init__
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(viewer_node.Node, "__init__",
                       lambda node, *a, **k: init(node, *a, **{**k, "context": context}))
            viewer = viewer_node.ViewerNode()
    except BaseException:
        rclpy.try_shutdown(context=context)
        raise
    return viewer, context


@contextlib.contextmanager
def _running(*params: str):
    viewer, context = _viewer(*params)
    try:
        yield viewer
    finally:
        viewer.close()
        viewer.destroy_node()
        rclpy.try_shutdown(context=context)


def _client(port: int):
    ws = connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], open_timeout=5)
    assert json.loads(ws.recv(timeout=5))["op"] == "serverInfo"
    return ws


def _wait(condition, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _loud(records) -> list[str]:
    """WARNING and worse lines of the viewer and the SDK."""
    return [f"{r.name} {r.levelname}: {r.getMessage()}" for r in records
            if r.levelno >= logging.WARNING and r.name.startswith(("foxglove", "vla_bridge"))]


def test_the_client_past_max_clients_is_refused_at_the_handshake_in_one_line(caplog):
    caplog.set_level(logging.INFO)
    assert viewer_node.ViewerConfig().max_clients == 8
    with _running() as viewer, contextlib.ExitStack() as clients:
        for _ in range(8):
            clients.enter_context(_client(viewer.port))
        assert viewer.gate.clients == 8
        with pytest.raises(InvalidStatus, match="HTTP 503"):
            _client(viewer.port)
        refusals = [r for r in caplog.records if r.name == "vla_bridge.viewer"
                    and r.levelno == logging.WARNING]
        assert len(refusals) == 1, [r.getMessage() for r in refusals]
        assert "refused client 127.0.0.1:" in refusals[0].getMessage()
        assert "8 clients already connected (max_clients 8)" in refusals[0].getMessage()
        assert (viewer.gate.clients, viewer.gate.refused) == (8, 1)  # the SDK never saw it
        # a client that leaves frees its place
        clients.close()
        _wait(lambda: viewer.gate.clients == 0, "the clients to leave")
        with _client(viewer.port):
            assert viewer.gate.clients == 1


def test_max_clients_is_a_parameter_and_stopping_with_clients_is_quiet(caplog):
    from websockets.exceptions import ConnectionClosed
    caplog.set_level(logging.INFO)
    with _running("max_clients:=2") as viewer:
        watching = [_client(viewer.port), _client(viewer.port)]
        with pytest.raises(InvalidStatus, match="HTTP 503"):
            _client(viewer.port)
    for ws in watching:  # the viewer stopped under them
        with pytest.raises(ConnectionClosed):
            while True:
                ws.recv(timeout=5)
        ws.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    with pytest.raises(RuntimeError, match="max_clients must be >= 1, got 0"):
        _viewer("max_clients:=0")


def test_idle_and_vanished_clients_are_normal_no_error_line(caplog, monkeypatch):
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="vla_bridge.viewer")  # (the handler's level too)
    monkeypatch.setattr(viewer_node, "HANDSHAKE_S", 0.5)
    with _running() as viewer:
        for _ in range(3):  # a port scan: connect and close
            socket.create_connection(("127.0.0.1", viewer.port), timeout=5).close()
        idle = socket.create_connection(("127.0.0.1", viewer.port), timeout=5)
        t0 = time.monotonic()
        assert idle.recv(1) == b""  # the viewer closes a socket that sends no handshake
        assert time.monotonic() - t0 < 3
        idle.close()
        vanished = _client(viewer.port)  # a tab closed: no WebSocket close
        vanished.socket.shutdown(socket.SHUT_RDWR)
        vanished.socket.close()
        with _client(viewer.port):  # and one that says goodbye
            pass
        _wait(lambda: viewer.gate.clients == 0 and viewer.gate.pending == 0,
              "the connections to end")
        # (the SDK's INFO lines are not asserted: its log bridge caches levels across tests)
        time.sleep(0.5)  # the SDK's lines about both clients
        assert _loud(caplog.records) == []
        dropped = [r.getMessage() for r in caplog.records if r.name == "vla_bridge.viewer"
                   and "dropped" in r.getMessage()]
        assert len(dropped) == 4 and all("DEBUG" == r.levelname for r in caplog.records
                                         if r.name == "vla_bridge.viewer"), dropped
        assert any("no handshake within 0.5 s" in m for m in dropped)
        with _client(viewer.port):  # still serving
            pass
