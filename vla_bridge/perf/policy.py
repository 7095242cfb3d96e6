"""Policy-node benchmark: what the node itself costs per call, and observation-to-action
latency through DDS, at the contract's camera set (three 320x240 rgb8 images).

    vla-bridge bench policy [--calls 200] [--policy hold] [--async]

The real policy node runs as its own process (``python -m
vla_bridge.policy_nodes.policy_node``); this process plays the sim: it publishes an
observation (joint state + three images, one stamp), waits for the action chunk that
echoes the stamp, and reads the node's ``predicted`` status of that call. Figures:

* **round trip**: observation published -> chunk received here (DDS both ways, the node's
  callbacks, the backend, the publish), and the same **minus model time** (the backend's
  predict call), i.e. the whole bridge overhead of a call;
* **node overhead**: the node's own share of a call excluding model time, as it reports
  it in ``overhead_ms`` (observation assembly + validation/scheduling + building and
  publishing the chunk), and the ``latency_ms`` breakdown (preprocess / inference /
  postprocess / transport). Target: <= 2 ms per call;
* **through the graph** (unless ``--no-graph``): one robofollow_sim episode (sim node,
  policy node, evaluator as separate processes) with the same backend; the sim node's
  wait per call (observation published -> its chunk received) and the policy's latency.

Run it on an idle machine: it prints figures, it asserts nothing.
"""
from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time

import numpy as np

from vla_bridge import contract as C

ALOHA = C.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

TARGET_MS = 2.0


def _stats(values: list[float]) -> str:
    v = sorted(values)
    def p(q):
        return v[min(len(v) - 1, int(q * len(v)))]
    return (f"mean {statistics.mean(v):7.3f}  p50 {p(0.50):7.3f}  p95 {p(0.95):7.3f}  "
            f"max {v[-1]:7.3f} ms")


def measure(args) -> int:
    """The benchmark; ``args``: `vla-bridge bench policy`'s flags (calls, warmup, policy,
    chunk_size, async_inference, temporal_ensemble, graph)."""
    from vla_bridge.ros.launcher import find_share_dir, node_env
    os.environ.setdefault("ROS_DOMAIN_ID", str(random.SystemRandom().randint(1, 200)))
    env = node_env(find_share_dir(), sys.executable)
    os.environ.update({k: env[k] for k in ("FASTDDS_DEFAULT_PROFILES_FILE", "RMW_IMPLEMENTATION")})
    params = {"backend": args.policy, "chunk_size": args.chunk_size,
              "action_horizon": args.chunk_size, "control_period": 0.06,
              "async_inference": args.async_inference, "temporal_ensemble": args.temporal_ensemble}
    rules = []
    for k, v in params.items():
        value = str(v).lower() if isinstance(v, bool) else str(v)
        rules += ["-p", f"{k}:={value}" if k != "backend" else f"{k}:='{value}'"]
    node = subprocess.Popen([sys.executable, "-m", "vla_bridge.policy_nodes.policy_node",
                             "--ros-args", *rules], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        _bench(args, node)
    finally:
        node.terminate()
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
    if args.graph:
        _graph(args.policy)
    return 0


def _graph(policy: str, calls: int = 10) -> None:
    import json
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        cmd = [sys.executable, "-m", "vla_bridge.cli", "launch", "robofollow_sim", "--tasks",
               "L0_place_yellow_block_1_behind_red_sphere", "--output", str(out),
               "--policy", policy, "--max_policy_calls", str(calls)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not (out / "results.jsonl").exists():
            print(f"through the graph: run failed ({proc.returncode}): {proc.stdout[-1500:]}")
            return
        row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    wait = row.get("sim_timing_s", {}).get("wait_s")
    n = max(1, int(row.get("policy_calls") or calls))
    print(f"through the graph ({n} calls, one episode, {row['frames']} frames, status {row['status']}):")
    if wait is not None:
        print(f"  sim node: observation published -> chunk received : {wait / n * 1e3:7.3f} ms per call")
    print(f"  policy predict call (evaluator's mean)             : "
          f"{row.get('policy_latency_ms_mean', float('nan')):7.3f} ms")


def _bench(args, node) -> int:
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image, JointState
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory

    from vla_bridge.ros import messages

    rclpy.init()
    sim = Node("bench_policy_sim")
    q = messages.qos_profile
    pub_joints = sim.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
    pub_images = {c: sim.create_publisher(Image, C.image_topic(c), q(C.QOS_IMAGES))
                  for c in ALOHA.camera_names}
    pub_control = sim.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
    got = {"chunk": {}, "status": {}, "ready": False, "error": None}

    def on_chunk(msg):
        got["chunk"][messages.stamp_ns(msg.header.stamp)] = time.perf_counter()

    def on_status(msg):
        status = messages.parse_json_msg(msg)
        if status.get("kind") == C.STATUS_READY:
            got["ready"] = True
        elif status.get("kind") == C.STATUS_PREDICTED:
            got["status"][status["call"]] = status
        elif status.get("kind") == C.STATUS_ERROR:
            got["error"] = status.get("message")

    sim.create_subscription(JointTrajectory, C.TOPIC_ACTION_CHUNK, on_chunk, q(C.QOS_COMMAND))
    sim.create_subscription(String, C.TOPIC_POLICY_STATUS, on_status, q(C.QOS_EVENTS))

    def spin_until(cond, timeout, what):
        deadline = time.monotonic() + timeout
        while not cond():
            rclpy.spin_once(sim, timeout_sec=0.001)
            if node.poll() is not None:
                raise SystemExit(f"policy node exited ({node.returncode}): {node.stderr.read()[-2000:]}")
            if got["error"]:
                raise SystemExit(f"policy node reported: {got['error']}")
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out waiting for {what}")

    spin_until(lambda: sim.count_subscribers(C.TOPIC_EPISODE_CONTROL) >= 1
               and sim.count_publishers(C.TOPIC_ACTION_CHUNK) >= 1
               and all(sim.count_subscribers(C.image_topic(c)) >= 1 for c in ALOHA.camera_names),
               60, "the policy node")
    time.sleep(0.5)  # let the reliable endpoints match both ways
    pub_control.publish(messages.json_msg({"kind": C.CONTROL_BEGIN, "episode": "bench",
                                         "task": {}, "instruction": "pick up the block"}))
    spin_until(lambda: got["ready"], 30, "the policy's ready status")

    rng = np.random.default_rng(0)
    width, height = ALOHA.image_size
    images = {c: rng.integers(0, 255, (height, width, 3), np.uint8) for c in ALOHA.camera_names}
    state = np.zeros(ALOHA.action_dim)
    state[[6, 13]] = 1.0
    dt, round_trip, publish = 0.06, [], []
    total = args.warmup + args.calls
    for i in range(total):
        t = 1.0 + i * dt * args.chunk_size
        joint = messages.joint_state_msg(ALOHA.action_names, state, t)
        msgs = {c: messages.image_to_msg(images[c], t, c) for c in ALOHA.camera_names}
        key = messages.stamp_ns(messages.sec_to_stamp(t))
        t0 = time.perf_counter()
        for c in ALOHA.camera_names:
            pub_images[c].publish(msgs[c])
        pub_joints.publish(joint)
        t1 = time.perf_counter()
        spin_until(lambda k=key: k in got["chunk"], 30, f"the chunk of call {i + 1}")
        spin_until(lambda n=i + 1: n in got["status"], 5, f"the status of call {i + 1}")
        if i >= args.warmup:
            round_trip.append((got["chunk"][key] - t0) * 1e3)
            publish.append((t1 - t0) * 1e3)
    statuses = [got["status"][i + 1] for i in range(args.warmup, total)]
    model = [s["latency_ms"]["inference"] for s in statuses]
    predict = [s["inference_ms"] for s in statuses]
    overhead = [s["overhead_ms"] for s in statuses]
    bridge = [r - p for r, p in zip(round_trip, predict)]
    print(f"policy node benchmark: backend {args.policy!r}, {args.calls} calls after {args.warmup} "
          f"warm-up, {len(ALOHA.camera_names)} cameras {width}x{height} rgb8, chunk "
          f"{args.chunk_size}x{ALOHA.action_dim}, async={args.async_inference}, "
          f"temporal_ensemble={args.temporal_ensemble}")
    print(f"obs -> action round trip        : {_stats(round_trip)}")
    print(f"  minus the predict call        : {_stats(bridge)}   (DDS both ways + node)")
    print(f"  of which publishing the obs   : {_stats(publish)}   (this process)")
    print(f"predict call (backend)          : {_stats(predict)}")
    print(f"model time (backend's own)      : {_stats(model)}")
    print(f"node overhead excl. model time  : {_stats(overhead)}   (target <= {TARGET_MS:g} ms: "
          f"{'met' if statistics.median(overhead) <= TARGET_MS else 'MISSED'} at p50)")
    for part in ("preprocess", "inference", "postprocess", "transport"):
        print(f"  latency_ms.{part:<12}        : "
              f"{_stats([s['latency_ms'][part] for s in statuses])}")
    sim.destroy_node()
    rclpy.shutdown()
