"""`lerobot_async`: LeRobot's own gRPC policy server (``python -m
lerobot.async_inference.policy_server``, LeRobot 0.6.1 in .venv-lerobot) serving a random tiny
ACT checkpoint, spoken to as LeRobot's robot client does (policy_nodes/lerobot_async/client.py).

Through the graph, every chunk the node published equals that checkpoint's own
``select_action`` queue on the observation the node saw (read back from the bag): one
observation is in flight at a time and sent with ``must_go``, so the server's timing never
changes which observation a chunk answers (its ``timestep`` is checked too). A dead port and a
server that does not speak gRPC are one clear error, again on the next call (the backend
survives), and the graph's node survives a dead server: the episode fails, the run goes on.
"""
from __future__ import annotations

import os
import socket
import subprocess
import threading
import time

import numpy as np
import pytest

from support.graph_runs import launch, results
from support.lerobot_venv import LEROBOT_PYTHON, in_lerobot_venv, needs_lerobot_venv, policy_calls
from vla_bridge.embodiment.world import Observation

pytestmark = [needs_lerobot_venv, pytest.mark.graph]
TASK = "L0_place_yellow_block_1_behind_red_sphere"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def act06(tmp_path_factory):
    from support.lerobot_checkpoints import SIM_IMAGE
    return in_lerobot_venv("support.lerobot_checkpoints:save_tiny_checkpoint", "act",
                           tmp_path_factory.mktemp("act06") / "pretrained_model", image=SIM_IMAGE)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """LeRobot's policy server, started as LeRobot documents it, on a free localhost port."""
    port, cwd = free_port(), tmp_path_factory.mktemp("server")  # it writes logs/ into its cwd
    proc = subprocess.Popen([str(LEROBOT_PYTHON), "-m", "lerobot.async_inference.policy_server",
                             "--host=127.0.0.1", f"--port={port}", "--fps=30",
                             "--inference_latency=0", "--obs_queue_timeout=5"], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    assert proc.poll() is None, "LeRobot's policy server exited"
    yield port
    proc.terminate()
    proc.wait(timeout=20)


def test_lerobots_policy_server_drives_the_graph_with_its_checkpoints_chunks(act06, server,
                                                                             tmp_path):
    out = tmp_path / "run"
    spec = f"lerobot_async?host=127.0.0.1&port={server}&checkpoint={act06}"
    proc = launch("--tasks", TASK, "--levels", "", "--output", str(out), "--record", "true",
                  "--policy", spec, "--max_policy_calls", "3", "--episode_timeout", "150",
                  timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (row,) = results(out)
    assert row["status"] == "ok", row.get("error")
    calls = policy_calls(out / row["bag"])
    assert row["policy_calls"] == len(calls) == 3
    expected = in_lerobot_venv("support.lerobot_checkpoints:rollout", act06,
                               [(s, i) for s, i, _ in calls], calls_per_observation=20,
                               reset_each=True)
    for (_, _, chunk), want in zip(calls, expected):
        assert chunk.shape == (20, 14)  # actions_per_chunk: the node's chunk_size (its ACT's 20)
        np.testing.assert_allclose(chunk, want, atol=1e-6)
    assert np.abs(calls[0][2] - calls[-1][2]).max() > 1e-5


def _observation() -> Observation:
    rng = np.random.default_rng(0)
    return Observation(state=np.zeros(14), stamp=0.0,
                       images={"cam_high": rng.integers(0, 256, (240, 320, 3), np.uint8)})


@pytest.fixture
def junk_port():
    """A TCP server that answers every connection with bytes that are not HTTP/2 (gRPC)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\nnot grpc\n" * 10)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


def test_a_dead_or_junk_server_is_one_clear_error_and_the_backend_survives(act06, junk_port):
    from vla_bridge.policy_nodes.registry import make_policy
    for port, expected in [(free_port(), "unreachable at 127.0.0.1:"),
                           (junk_port, "unreachable at 127.0.0.1:")]:
        policy = make_policy(f"lerobot_async?port={port}&checkpoint={act06}&connect_timeout=2")
        try:
            policy.reset()
            for _ in range(2):  # the same one line again: nothing died
                with pytest.raises(RuntimeError, match=expected) as err:
                    policy.predict(_observation())
                assert "\n" not in str(err.value)
        finally:
            policy.close()


def test_a_dead_server_fails_the_episode_and_the_node_survives(act06, tmp_path):
    out = tmp_path / "run"
    spec = f"lerobot_async?port={free_port()}&checkpoint={act06}&connect_timeout=2"
    proc = launch("--tasks", TASK, "--levels", "", "--rounds", "2", "--output", str(out),
                  "--policy", spec, "--episode_timeout", "60", timeout=240)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = results(out)
    assert len(rows) == 2 and all(r["status"] == "failed" for r in rows)
    assert "LeRobot policy server unreachable at 127.0.0.1:" in rows[1]["error"], rows[1]["error"]
