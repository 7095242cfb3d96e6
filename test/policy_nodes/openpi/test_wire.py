"""openpi's msgpack-numpy wire refuses what is not a plain numeric array (issue #29, point 1).

Before, ``np.ndarray(buffer=..., dtype=<from the request>)`` built an object array over the
request's bytes and the server died with SIGSEGV when it was read; one frame killed every
client's session. Now only bool / integer / float arrays cross, in both directions, and an
array's shape must be exactly what its bytes fill.
"""
from __future__ import annotations

import re
import time

import msgpack
import numpy as np
import pytest

from support.cli_process import spawn_cli
from vla_bridge.policy_nodes.openpi import client, serve, wire


def _frame(dtype: str, shape, data: bytes) -> bytes:
    return msgpack.packb({"state": {b"__ndarray__": True, b"data": data, b"dtype": dtype,
                                    b"shape": shape}})


def test_numeric_arrays_and_scalars_round_trip():
    obj = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([True, False]),
           "c": np.int64(-3), "d": np.zeros((0, 4), np.uint8)}
    back = wire.unpackb(wire.packb(obj))
    for key in ("a", "b", "d"):
        np.testing.assert_array_equal(back[key], obj[key])
        assert back[key].dtype == obj[key].dtype
    assert back["c"] == -3 and back["c"].dtype == np.int64


@pytest.mark.parametrize("dtype", ["|O", "<U4", "|V8", "<c16", "|S4", "<M8[s]",
                                   "[('a', '<f8')]", "not-a-dtype"])
def test_a_frame_with_a_non_numeric_dtype_is_refused(dtype):
    with pytest.raises(wire.WireError, match="dtype"):
        wire.unpackb(_frame(dtype, [2], b"\x00" * 16))


@pytest.mark.parametrize("shape,data", [([3], b"\x00" * 16), ([1 << 40, 1 << 40], b"\x00" * 8),
                                        ([-2], b""), ([2.0], b"\x00" * 16), ("2", b"\x00" * 16),
                                        ([1] * 9, b"\x00" * 8)])
def test_a_shape_its_bytes_do_not_fill_exactly_is_refused(shape, data):
    with pytest.raises(wire.WireError, match="shape|bytes"):
        wire.unpackb(_frame("<f8", shape, data))


def test_scalars_and_garbage_are_refused_with_a_message():
    with pytest.raises(wire.WireError, match="dtype"):
        wire.unpackb(msgpack.packb({b"__npgeneric__": True, b"data": 1, b"dtype": "|O"}))
    with pytest.raises(wire.WireError, match="not a msgpack-numpy frame .+"):
        wire.unpackb(b"\xc1\xc1\xc1")  # 0xc1 is never used by msgpack


def test_sending_a_non_numeric_array_is_refused_too():
    for bad in (np.array([object()], dtype=object), np.array([1j]), np.array(["x"])):
        with pytest.raises(wire.WireError):
            wire.packb({"x": bad})


def test_client_and_server_decode_with_the_same_checked_code():
    assert client.unpackb is wire.unpackb and serve.unpackb is wire.unpackb
    assert client.packb is wire.packb and serve.packb is wire.packb


def _start_server():
    proc = spawn_cli("serve", "--policy", "hold", "--port", "0")  # its own process, forked warm
    deadline, log = time.monotonic() + 60, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        log.append(line)
        found = re.search(r"on ws://([^:]+):(\d+)", line)
        if found:
            return proc, int(found.group(2))
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError("server did not start:\n" + "".join(log))


def test_an_object_dtype_request_fails_that_connection_only_and_the_server_lives():
    """The frame that killed `vla-bridge serve` (SIGSEGV) now gets an error reply on its own
    connection; another client's session goes on."""
    import websockets.sync.client as ws_client
    proc, port = _start_server()
    try:
        with ws_client.connect(f"ws://127.0.0.1:{port}", max_size=None) as good, \
                ws_client.connect(f"ws://127.0.0.1:{port}", max_size=None) as attacker:
            wire.unpackb(good.recv())  # the metadata frame
            attacker.recv()
            attacker.send(_frame("|O", [4], b"\x41" * 32))
            reply = attacker.recv(timeout=30)
            assert isinstance(reply, str) and "WireError" in reply and "dtype" in reply
            time.sleep(0.5)
            assert proc.poll() is None, "the server died"
            good.send(wire.packb({"state": np.zeros(14), "prompt": "hold", "images": {}}))
            actions = wire.unpackb(good.recv(timeout=30))["actions"]
            assert actions.dtype == np.float32 and actions.shape[1] == 14
    finally:
        proc.terminate()
        proc.wait(timeout=30)
