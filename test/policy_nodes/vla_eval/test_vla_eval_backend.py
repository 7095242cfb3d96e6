"""The `vla_eval` backend against vla-eval's own model-server classes (its PyPI package;
support/vla_eval_servers.py serves a deterministic model with vla-eval's serve_async in a
thread): the handshake and what it refuses, one RoboFollow episode in sim and one on the fake
PiPER pair with every published chunk checked against the model's known function of the
observation it answered, and junk from the server."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from support.graph_runs import child_pythonpath, launch, results, wait_until
from support.libero_venv import launch_libero_graph, needs_libero_venv
from support.vla_eval_servers import ModelServer, ramp_chunk, serve_in_thread
from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.registry import make_policy
from vla_bridge.policy_nodes.vla_eval import wire

TASK = "L0_place_yellow_block_1_behind_red_sphere"
FAKE_TASK = "L0_pickup_yellow_block_3"
H = 10  # actions per chunk
IMG, LANG = "rgb_hwc_uint8", "language"
#: a RoboDojo-like ALOHA server: every camera, the 14-D joint state, absolute joint targets
ALOHA = dict(observation_params={"send_state": True, "seed": 7},
             observation_spec={"images": (0, IMG), "state": (14, "joint_positions"),
                               "language": (0, LANG)},
             action_spec={"joints": (14, "joint_positions")})


@pytest.fixture
def serve():
    stops = []

    def start(server) -> int:
        port, stop = serve_in_thread(server)
        stops.append(stop)
        return port
    yield start
    for stop in stops:
        stop()


def _obs(dim=14, seed=0, state=None) -> Observation:
    rng = np.random.default_rng(seed)
    emb = C.ALOHA_PIPER if dim == 14 else C.LIBERO_PANDA
    w, h = emb.image_size
    if state is None:
        state = np.linspace(-0.5, 0.5, dim)
    return Observation(state=np.asarray(state, float), stamp=1.0,
                       images={c: rng.integers(0, 255, (h, w, 3), np.uint8)
                               for c in emb.camera_names})


# ------------------------------------------------------------------------- handshake


def test_handshake_learns_the_declared_parameters_and_sends_only_what_is_asked(serve):
    server = ModelServer(**ALOHA)
    policy = make_policy(f"vla_eval?host=127.0.0.1&port={serve(server)}", chunk_size=50)
    policy.reset()
    policy.set_instruction("pick up the block")
    info = policy.server_info
    assert info["model_server"] == "ModelServer" and info["protocol_version"] == 1
    assert info["observation_params"] == {"send_state": True, "seed": 7}
    assert info["observation_spec"]["state"] == {"name": "state", "dims": 14,
                                                 "format": "joint_positions"}
    plan = policy.plan
    assert plan.images == [(c, c) for c in C.ALOHA_PIPER.camera_names]
    assert plan.state_key == "state" and plan.actions == "absolute"
    assert plan.ignored == {"seed": 7}  # a vla-eval run setting: our evaluator owns seeds
    obs = _obs()
    chunk = policy.predict(obs)
    np.testing.assert_array_equal(chunk, ramp_chunk(obs.state, H).astype(np.float32))
    (call,) = server.calls
    sent = call["obs"]
    assert list(sent) == ["images", "task_description", "state"]
    assert list(sent["images"]) == list(C.ALOHA_PIPER.camera_names)  # primary first
    for camera, image in obs.images.items():
        np.testing.assert_array_equal(sent["images"][camera], image)
    np.testing.assert_array_equal(sent["state"], obs.state)
    assert sent["state"].dtype == np.float64 and sent["task_description"] == "pick up the block"
    policy.reset()  # ends the episode on the server
    policy.close()
    assert server.episodes == [{"task": {"name": "pick up the block"}}]
    assert wait_until(lambda: server.ended) and server.ended[0] == {"steps": 1}


def test_libero_keys_send_agentview_and_the_antipodal_state_and_read_one_action(serve):
    """vla-eval's LIBERO benchmark keys; no send_wrist_image: the wrist camera is not sent;
    quat_no_antipodal not declared: the axis-angle goes out with angle <= pi; one 7-D action
    (a server with server-side chunking) is a chunk of one, its gripper +1 = close -> 0."""
    server = ModelServer(fn=lambda o: np.r_[0.1 * o["states"][:6], 1.0],
                         observation_params={"send_state": True},
                         action_spec={"position": (3, "delta_xyz"),
                                      "rotation": (3, "axis_angle"),
                                      "gripper": (1, "binary_close_positive")})
    policy = make_policy(f"vla_eval?port={serve(server)}&keys=libero")  # host: localhost
    assert policy.embodiment == "libero_panda" and policy.uri.startswith("ws://localhost:")
    policy.reset()
    policy.set_instruction("open the drawer")
    state = np.array([0.1, 0.2, 1.0, 0.0, 0.0, 3.5, 0.04, -0.04])  # angle 3.5 rad > pi
    chunk = policy.predict(_obs(8, state=state))
    sent = server.calls[0]["obs"]
    assert list(sent["images"]) == ["agentview"] and "wrist" not in sent["images"]
    np.testing.assert_allclose(sent["states"][3:6], [0.0, 0.0, 3.5 - 2 * np.pi])
    np.testing.assert_array_equal(sent["states"][[0, 1, 2, 6, 7]], state[[0, 1, 2, 6, 7]])
    assert chunk.shape == (1, 7) and chunk[0, 6] == 0.0  # closed
    np.testing.assert_array_equal(chunk[0, :6], (0.1 * sent["states"][:6]).astype(np.float32))
    policy.close()


@pytest.mark.parametrize("keys, declared, named", [
    ("aloha", {"observation_spec": {"state": (8, "eef_pos3_quat4_gripper1")}},
     "observation_spec 'state' is eef_pos3_quat4_gripper1 (aloha_piper has joint_positions, 14-D)"),
    ("aloha", {"observation_spec": {n: (0, IMG) for n in ("a", "b", "c", "d")}},
     "observation_spec wants 4 images (a, b, c, d); aloha_piper has 3 cameras"),
    ("aloha", {"observation_params": {"send_video_history": True, "control_mode": "ee"}},
     "send_video_history=True (no frame history is kept); observation_params "
     "control_mode='ee' (unknown here; ignore_params=['control_mode']"),
    ("aloha", {"action_spec": {"joints": (14, "delta_joint_positions")}},
     "action_spec 'joints' is delta_joint_positions: delta joint actions"),
    ("aloha", {"action_spec": {"position": (3, "delta_xyz"), "rotation": (3, "axis_angle"),
                               "gripper": (1, "binary_close_positive")}},
     "(aloha_piper executes 14-D absolute joint targets)"),
    ("libero", {"observation_params": {"send_state": True, "absolute_action": True}},
     "absolute_action=True (libero_panda executes OSC deltas"),
    ("libero", {"action_spec": {"position": (3, "delta_xyz"), "rotation": (3, "euler_xyz"),
                                "gripper": (1, "binary_close_positive")}},
     "action_spec position: delta_xyz, rotation: euler_xyz, gripper: binary_close_positive"),
])
def test_a_server_declaring_what_we_cannot_provide_is_refused_in_one_line(
        serve, keys, declared, named):
    server = ModelServer(**declared)
    policy = make_policy(f"vla_eval?host=127.0.0.1&port={serve(server)}&keys={keys}")
    with pytest.raises(wire.Refused) as refused:
        policy.reset()
    line = str(refused.value)
    assert "\n" not in line and line.startswith("vla-eval ModelServer declares what ")
    assert named in line, line
    assert policy.ws is None and server.episodes == [] and server.calls == []


def test_delta_joint_actions_are_added_to_the_joint_state_when_asked(serve):
    server = ModelServer(fn=lambda o: np.full((3, 14), 0.01),
                         action_spec={"joints": (14, "delta_joint_positions")})
    port = serve(server)
    policy = make_policy(f"vla_eval?host=127.0.0.1&port={port}&delta_reference=state")
    policy.reset()
    policy.set_instruction("x")
    obs = _obs()
    chunk = policy.predict(obs)
    want = np.tile(obs.state, (3, 1)) + np.float32(0.01)
    want[:, [6, 13]] = np.float32(0.01)  # grippers absolute
    np.testing.assert_allclose(chunk, want, rtol=0, atol=1e-12)
    policy.close()


def test_unreachable_and_silent_servers_are_one_clear_line(serve):
    policy = make_policy("vla_eval?host=127.0.0.1&port=9&connect_timeout=1")
    with pytest.raises(ConnectionError, match=r"^vla-eval model server unreachable at "
                                              r"ws://127\.0\.0\.1:9 \(ConnectionRefusedError"):
        policy.reset()
    server = ModelServer(fn=lambda o: (time.sleep(1.5), ramp_chunk(o["state"], H))[1])
    policy = make_policy(f"vla_eval?host=127.0.0.1&port={serve(server)}&infer_timeout=0.3")
    policy.reset()
    policy.set_instruction("x")
    with pytest.raises(TimeoutError, match=r"did not answer within 0.3 s"):
        policy.predict(_obs())
    assert policy.ws is None  # closed: the next call reconnects

# ------------------------------------------------------------------- through the graph


def _bag_chunks_and_states(bag: Path):
    """The bag's action chunks [(stamp_ns, [H, 14])] and joint states {stamp_ns: [[14]...]}."""
    from rosbags.rosbag2 import Reader

    from vla_bridge.data.bags import typestore
    store, names = typestore(), list(C.ALOHA_PIPER.state_names)
    chunks, states = [], {}
    with Reader(bag) as reader:
        wanted = [c for c in reader.connections
                  if c.topic in (C.TOPIC_ACTION_CHUNK, C.TOPIC_JOINT_STATES)]
        for conn, _, raw in reader.messages(connections=wanted):
            msg = store.deserialize_cdr(raw, conn.msgtype)
            stamp = msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec
            if conn.topic == C.TOPIC_ACTION_CHUNK:
                order = [list(msg.joint_names).index(n) for n in names]
                chunks.append((stamp, np.array([np.asarray(p.positions)[order]
                                                for p in msg.points])))
            else:
                order = [list(msg.name).index(n) for n in names]
                states.setdefault(stamp, []).append(np.asarray(msg.position)[order])
    return chunks, states


def _check_episode(server, row, run: Path, calls: int, image_shapes: dict) -> None:
    """Every published chunk is the model's function of the observation it answered, and
    that observation is the graph's: the joint state at the chunk's stamp, every camera,
    the instruction."""
    assert row["status"] == "ok", row.get("error")
    assert row["policy_calls"] == calls and len(server.calls) == calls
    chunks, states = _bag_chunks_and_states(run / row["bag"])
    assert len(chunks) == calls
    for call, (stamp, chunk) in zip(server.calls, chunks):
        sent = call["obs"]
        np.testing.assert_array_equal(chunk, ramp_chunk(sent["state"], H).astype(np.float32))
        assert any(np.array_equal(sent["state"], s) for s in states[stamp]), stamp
        assert {k: v.shape for k, v in sent["images"].items()} == image_shapes
        assert all(v.dtype == np.uint8 and np.ptp(v) > 0 for v in sent["images"].values())
        assert sent["task_description"] == row["instruction"]
    assert [s for s, _ in chunks] == sorted({s for s, _ in chunks})  # one per observation
    assert server.episodes == [{"task": {"name": row["instruction"]}}]


GRAPH_ARGS = ("--levels", "", "--max_policy_calls", "3", "--max_actions_per_call", str(H),
              "--action_horizon", str(H), "--chunk_size", str(H), "--record", "true",
              "--episode_timeout", "30")


@pytest.mark.graph
def test_a_vla_eval_server_drives_one_sim_episode_chunk_for_chunk(serve, tmp_path):
    server = ModelServer(**ALOHA)
    out = tmp_path / "run"
    proc = launch("--tasks", TASK, "--output", str(out), *GRAPH_ARGS,
                  "--policy", f"vla_eval?host=127.0.0.1&port={serve(server)}", timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "[vla_eval] ws://127.0.0.1:" in proc.stdout + proc.stderr  # the plan, once
    (row,) = results(out)
    w, h = C.ALOHA_PIPER.image_size
    _check_episode(server, row, out, 3, {c: (h, w, 3) for c in C.ALOHA_PIPER.camera_names})
    # lock-step: the sim executes each chunk as published (the ramp is within every limit)
    commands = np.load(out / row["episode_file"])["commands"]
    for k, call in enumerate(server.calls):
        np.testing.assert_allclose(commands[1 + k * H: 1 + (k + 1) * H], call["actions"],
                                   atol=1e-9)


@pytest.mark.graph
@pytest.mark.slow
def test_a_vla_eval_server_drives_the_fake_piper_pair_chunk_for_chunk(serve, tmp_path):
    """The real graph's nodes on fake hardware (firmware emulator, synthetic cameras)."""
    server = ModelServer(**ALOHA)
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim",
           "--hardware", "fake_piper", "--tasks", FAKE_TASK, "--output", str(out), *GRAPH_ARGS,
           "--policy", f"vla_eval?host=127.0.0.1&port={serve(server)}", "--timeout", "100"]
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (row,) = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    w, h = C.ALOHA_PIPER.image_size
    _check_episode(server, row, out, 3, {c: (h, w, 3) for c in C.ALOHA_PIPER.camera_names})


@pytest.mark.graph
@pytest.mark.slow
@needs_libero_venv
def test_a_libero_model_server_drives_a_libero_episode(serve, tmp_path):
    """vla-eval's LIBERO keys through the LIBERO graph (an OFT-like declaration): agentview and
    wrist at 256 x 256, the 8-D state with vla-eval's antipodal axis-angle, one action per
    observation (server-side chunking's answer) executed each step."""
    server = ModelServer(fn=lambda o: np.r_[np.zeros(6), -1.0],  # hold, gripper open
                         observation_params={"send_wrist_image": True, "send_state": True,
                                             "seed": 7, "num_steps_wait": 10},
                         observation_spec={"image": (0, IMG), "wrist_image": (0, IMG),
                                           "state": (8, "eef_pos3_axisangle3_gripper2"),
                                           "language": (0, LANG)},
                         action_spec={"position": (3, "delta_xyz"),
                                      "rotation": (3, "axis_angle"),
                                      "gripper": (1, "binary_close_positive")})
    (row,) = launch_libero_graph(
        tmp_path / "run", "--suite", "libero_object", "--tasks", "0", "--inits", "0",
        "--max_steps", "6", "--actions_per_call", "1", "--chunk_size", "1",
        "--policy", f"vla_eval?host=127.0.0.1&port={serve(server)}&keys=libero")
    assert row["status"] == "ok" and row["steps"] == row["calls"] == len(server.calls) == 6
    for call in server.calls:
        sent = call["obs"]
        assert {k: v.shape for k, v in sent["images"].items()} == {"agentview": (256, 256, 3),
                                                                   "wrist": (256, 256, 3)}
        assert sent["states"].shape == (8,) and np.linalg.norm(sent["states"][3:6]) <= np.pi
        assert 0.0 < sent["states"][6] == pytest.approx(-sent["states"][7], abs=1e-3)
        assert sent["task_description"] == row["instruction"]


@pytest.mark.graph
def test_junk_from_the_server_fails_its_episode_in_one_line_and_the_node_survives(
        serve, tmp_path):
    """Five episodes, one per behaviour: a [H, 5] chunk, NaN, bytes that are not msgpack,
    a connection dropped at the second call, then a good one: each junk episode fails with
    one line naming what was wrong, no chunk of junk is published, and the same policy node
    runs the last episode to its end."""
    modes = ["shape", "nan", "bytes", "drop", "ok"]
    server = ModelServer(**ALOHA, modes=modes)
    out = tmp_path / "run"
    proc = launch("--tasks", TASK, "--rounds", str(len(modes)), "--output", str(out),
                  *GRAPH_ARGS, "--policy", f"vla_eval?host=127.0.0.1&port={serve(server)}",
                  timeout=150)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows = sorted(results(out), key=lambda r: r["round"])
    assert [r["status"] for r in rows] == ["failed"] * 4 + ["ok"], [r["error"] for r in rows]
    where = "policy: policy failed: vla-eval ModelServer at ws://127.0.0.1:"
    expected = ["returned actions of shape [10, 5]; expected [14] or [H, 14]",
                "returned actions containing NaN or Inf (1 of 140 values)",
                "sent a malformed reply: not msgpack (22 bytes, FormatError)",
                "dropped the connection mid-episode (after 1 calls this episode)"]
    for row, text in zip(rows, expected):
        assert row["error"].startswith(where) and text in row["error"], row["error"]
        assert "\n" not in row["error"]
    # what reached the sim: the episodes' bags (a failed episode's is kept in bags/.partial)
    # hold no chunk of junk; the drop episode holds its first (good) chunk, the last three
    assert [c["mode"] for c in server.calls] == ["shape", "nan", "bytes", "drop", "drop",
                                                 "ok", "ok", "ok"]
    assert rows[4]["policy_calls"] == 3
    bags = [next((out / "bags" / ".partial").glob(f"*__r{r['round']}")) for r in rows[:4]]
    published = [_bag_chunks_and_states(bag)[0] for bag in bags + [out / rows[4]["bag"]]]
    assert [len(chunks) for chunks in published] == [0, 0, 0, 1, 3]
    good = [server.calls[3]] + server.calls[5:]
    for call, (_, chunk) in zip(good, published[3] + published[4]):
        np.testing.assert_array_equal(chunk, ramp_chunk(call["obs"]["state"], H).astype(np.float32))
