"""`vla-bridge serve` is closed by default: loopback bind, optional API key (openpi's header),
a frame-size limit, and error replies without tracebacks unless --debug.

A real server process and the real openpi client, on 127.0.0.1 only.
"""
from __future__ import annotations

import importlib.util
import time
import urllib.request

import numpy as np
import pytest

from support.serve_process import ServeProcess  # noqa: E402
from vla_bridge import contract as C
from vla_bridge.policy_nodes.openpi.serve import DEFAULT_MAX_FRAME_BYTES

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("openpi_client") is None,
                       reason="openpi-client not installed"),
    # openpi-client 0.1.2 calls websockets' connect() the pre-16 way (still supported)
    pytest.mark.filterwarnings(
        "ignore:connect\\(\\) must be used as a context manager:DeprecationWarning"),
    pytest.mark.graph,  # a real `vla-bridge serve` process per test (~2 s each)
]
KEY = "s3cret-key-for-the-test"


@pytest.fixture
def servers():
    started: list[ServeProcess] = []

    def start(*args: str, env_extra: dict | None = None) -> ServeProcess:
        started.append(ServeProcess(*args, env_extra=env_extra))
        return started[-1]
    yield start
    for server in started:
        server.stop()


def _obs(width: int = 320, height: int = 240) -> dict:
    return {"state": np.zeros(14), "prompt": "pick up the block",
            "images": {c: np.zeros((3, height, width), np.uint8) for c in C.ALOHA_PIPER.camera_names}}


def _listening_addresses(port: int) -> set[str]:
    """Local addresses (hex, as in /proc/net/tcp*) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for row in fh.read().splitlines()[1:]:
                local, state = row.split()[1], row.split()[3]
                address, hex_port = local.split(":")
                if state == "0A" and int(hex_port, 16) == port:  # 0A = LISTEN
                    found.add(address)
    return found


def test_default_bind_is_loopback_only(servers):
    server = servers()
    assert server.host == "127.0.0.1"
    assert _listening_addresses(server.port) == {"0100007F"}  # 127.0.0.1, not 0.0.0.0


def test_api_key_from_the_environment_is_required_and_not_in_ps(servers):
    from websockets.exceptions import InvalidStatus
    server = servers(env_extra={"VLA_BRIDGE_API_KEY": KEY})
    with open(f"/proc/{server.proc.pid}/cmdline", "rb") as fh:
        assert KEY.encode() not in fh.read()
    for wrong in (None, "wrong-key", KEY + "x"):
        with pytest.raises(InvalidStatus, match="401"):
            server.client(wrong)
    assert any("refused: missing or wrong API key" in line for line in server.log)
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=5) as r:
        assert r.status == 200  # health checks need no key
    assert server.client(KEY).infer(_obs())["actions"].shape == (50, 14)


def test_api_key_flag_works_too(servers):
    from websockets.exceptions import InvalidStatus
    server = servers("--api-key", KEY)
    with pytest.raises(InvalidStatus, match="401"):
        server.client()
    assert server.client(KEY).infer(_obs())["actions"].shape == (50, 14)


def test_oversize_frame_is_refused_and_the_server_keeps_serving(servers):
    from websockets.exceptions import ConnectionClosedError
    server = servers()  # the default limit
    assert DEFAULT_MAX_FRAME_BYTES >= 4 * 3 * 640 * 480  # three 640x480 RGB images fit
    client = server.client()
    assert client.infer(_obs())["actions"].shape == (50, 14)  # three 320x240 images
    big = _obs(width=1024, height=1024)  # 3 x 3 MiB > 8 MiB
    with pytest.raises(ConnectionClosedError, match="1009"):
        client.infer(big)
    assert server.proc.poll() is None
    assert server.client().infer(_obs())["actions"].shape == (50, 14)


def test_smaller_frame_limit_from_the_flag(servers):
    from websockets.exceptions import ConnectionClosedError
    server = servers("--max-frame-bytes", "100000")
    with pytest.raises(ConnectionClosedError, match="1009"):
        server.client().infer(_obs())  # 691 kB of images
    assert server.client().infer({"state": np.zeros(14)})["actions"].shape == (50, 14)


def test_error_reply_has_no_traceback_unless_debug(servers):
    quiet, debug = servers(), servers("--debug")
    with pytest.raises(RuntimeError) as err:
        quiet.client().infer({"prompt": "no state"})
    message = str(err.value)
    assert "ValueError: observation has no state key 'state'" in message
    assert "Traceback" not in message and ".py" not in message and "/" not in message
    time.sleep(0.2)  # the server logs the traceback itself
    assert any("Traceback" in line for line in quiet.log)
    with pytest.raises(RuntimeError) as err:
        debug.client().infer({"prompt": "no state"})
    assert "Traceback" in str(err.value) and "serve.py" in str(err.value)
