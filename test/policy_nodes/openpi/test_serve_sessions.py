"""`vla-bridge serve`: one episode state per connection (issue #29, point 10), and error
replies that always say something (point 15).

Before, one policy object, prompt and call counter served every connection: a second client
reset the first one's episode. Now each connection drives its own instance of the backend
(made by the same factory; pooled, so sequential clients reuse one). Real clients (the
`websockets` package) on a real server process; the stateful backends live in this module
(the server loads "test_serve_sessions:EpisodeCounter").
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from support.serve_process import ServeProcess
from vla_bridge.policy_nodes.backend import PolicyBackend
from vla_bridge.policy_nodes.openpi import wire

pytest.importorskip("websockets")
# the clients close explicitly (the test needs them open across steps, not in a `with`)
pytestmark = pytest.mark.filterwarnings(
    "ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")


class EpisodeCounter(PolicyBackend):
    """Stateful, as the oracle and temporal ensembling are: each chunk says (column 0) how
    many chunks this episode had before it, (1) how many episodes this instance began, and
    (2) the length of the episode's instruction."""

    def __init__(self, chunk_size: int = 50):
        self.chunk_size = chunk_size
        self.calls, self.episodes, self.instruction = 0, 0, ""

    def reset(self) -> None:
        self.calls = 0
        self.episodes += 1

    def set_instruction(self, instruction, task=None):
        self.instruction = instruction

    def predict(self, observation):
        chunk = np.zeros((self.chunk_size, 14))
        chunk[:, 0], chunk[:, 1], chunk[:, 2] = self.calls, self.episodes, len(self.instruction)
        self.calls += 1
        return chunk


class Mute(PolicyBackend):
    """Fails every request with an exception that carries no message."""

    def set_instruction(self, instruction, task=None):
        pass

    def predict(self, observation):
        raise RuntimeError()


class Client:
    """A plain openpi-protocol client: the metadata frame, then request -> reply."""

    def __init__(self, port: int):
        from websockets.sync.client import connect
        self.ws = connect(f"ws://127.0.0.1:{port}", max_size=None, compression=None,
                          open_timeout=30)
        self.metadata = wire.unpackb(self.ws.recv(timeout=30))

    def chunk(self, prompt: str) -> tuple[int, int, int]:
        """(calls before, episodes of the instance, instruction length) of the next chunk."""
        self.ws.send(wire.packb({"state": np.zeros(14, np.float32), "prompt": prompt}))
        reply = self.ws.recv(timeout=30)
        assert not isinstance(reply, str), reply
        first = wire.unpackb(reply)["actions"][0]
        return int(first[0]), int(first[1]), int(first[2])

    def error(self, frame) -> str:
        self.ws.send(frame)
        reply = self.ws.recv(timeout=30)
        assert isinstance(reply, str), "expected an error text frame"
        return reply

    def close(self) -> None:
        self.ws.close()


@pytest.fixture
def server():
    started = []

    def start(policy: str) -> ServeProcess:
        started.append(ServeProcess(policy=policy, warm=True))  # forked warm: cli_process
        return started[-1]
    yield start
    for s in started:
        s.stop()


def test_a_second_client_never_touches_the_first_ones_episode(server):
    srv = server("test_serve_sessions:EpisodeCounter")
    a = Client(srv.port)
    assert [a.chunk("pick")[0] for _ in range(3)] == [0, 1, 2]
    b = Client(srv.port)  # connects while a's episode runs
    assert b.chunk("place the cube") == (0, 1, 14)  # its own episode, its own prompt
    assert a.chunk("pick") == (3, 1, 4)  # a's episode went on: not reset, not re-prompted
    for n in range(1, 4):  # interleaved requests stay apart
        assert b.chunk("place the cube") == (n, 1, 14)
        assert a.chunk("pick") == (3 + n, 1, 4)
    assert a.chunk("lift") == (0, 2, 4)  # a new prompt: a new episode, on a's instance only
    assert b.chunk("place the cube") == (4, 1, 14)
    b.close()
    c = Client(srv.port)  # after b left: b's instance, as a new episode
    assert c.chunk("pick") == (0, 2, 4)
    assert a.chunk("lift") == (1, 2, 4)
    a.close()
    c.close()
    made = [line for line in srv.log if "policy instance" in line]
    assert len(made) == 1 and "2 connections at once: policy instance 2 of" in made[0], srv.log


def test_error_replies_through_the_server_always_say_what_went_wrong(server):
    """A garbage frame's error names what msgpack found (it was `FormatError:` and nothing);
    an exception without a message still says where it came from."""
    counter = server("test_serve_sessions:EpisodeCounter")
    empty = re.compile(r"\w+:\s*(\)|$)")  # a name with nothing after it
    for frame in (b"\xc1\xc1\xc1", b"\x01\x02", b"", "a text frame"):
        client = Client(counter.port)
        reply = client.error(frame)
        client.close()
        assert reply.startswith("WireError: not a msgpack-numpy frame ("), reply
        assert not empty.search(reply), reply
    mute = server("test_serve_sessions:Mute")
    client = Client(mute.port)
    reply = client.error(wire.packb({"state": np.zeros(14, np.float32), "prompt": "x"}))
    client.close()
    assert reply.startswith("RuntimeError: ") and not empty.search(reply), reply
    assert reply == "RuntimeError: (raised without a message in predict())"
