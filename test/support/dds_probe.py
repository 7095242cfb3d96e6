"""Two-process DDS probe for test_dds_profile.py: sends/receives large rgb8 images.

    python test/support/dds_probe.py sub --count N --timeout S
    python test/support/dds_probe.py pub --count N --width 640 --height 480 --period 0.05

Each image carries "<seq>:<crc32 of its bytes>" in header.frame_id, so the subscriber can
tell an intact image from a damaged one. Both print one JSON line (prefix "RESULT ") at the
end; the subscriber prints "READY" once its subscriptions exist.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib

import numpy as np
import rclpy
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from vla_bridge.ros.messages import image_to_msg

TOPICS = {
    "best_effort": ("/vla_bridge_test/image_best_effort", ReliabilityPolicy.BEST_EFFORT),
    "reliable": ("/vla_bridge_test/image_reliable", ReliabilityPolicy.RELIABLE),
}


def _qos(reliability) -> QoSProfile:
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=10, reliability=reliability)


def _result(payload: dict) -> None:
    print("RESULT " + json.dumps(payload), flush=True)


def run_sub(args) -> int:
    rclpy.init()
    node = rclpy.create_node("dds_probe_sub")
    got = {kind: set() for kind in TOPICS}
    corrupt = {kind: 0 for kind in TOPICS}
    first_at: dict[str, float] = {}
    start = time.monotonic()
    last_rx = [start]

    def on_image(kind: str, msg: Image) -> None:
        seq, crc = (int(v) for v in msg.header.frame_id.split(":"))
        if zlib.crc32(msg.data) != crc or len(msg.data) != msg.step * msg.height:
            corrupt[kind] += 1
            return
        got[kind].add(seq)
        last_rx[0] = time.monotonic()
        first_at.setdefault(kind, last_rx[0] - start)

    for kind, (topic, reliability) in TOPICS.items():
        node.create_subscription(Image, topic, lambda m, k=kind: on_image(k, m), _qos(reliability))
    print("READY", flush=True)
    deadline = start + args.timeout
    while time.monotonic() < deadline and any(len(s) < args.count for s in got.values()):
        rclpy.spin_once(node, timeout_sec=0.05)
        # all reliable images in and the stream went quiet: the rest were lost, stop early
        if len(got["reliable"]) == args.count and time.monotonic() - last_rx[0] > args.idle:
            break
    _result({"received": {k: len(v) for k, v in got.items()}, "corrupt": corrupt,
             "first_sample_s": first_at, "elapsed_s": time.monotonic() - start})
    node.destroy_node()
    rclpy.shutdown()
    return 0


def _wait_for_match(node, publishers, timeout: float) -> float | None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if all(p.get_subscription_count() > 0 for p in publishers):
            return time.monotonic() - start
        rclpy.spin_once(node, timeout_sec=0.005)
    return None


def run_pub(args) -> int:
    t0 = time.monotonic()
    rclpy.init()
    node = rclpy.create_node("dds_probe_pub")
    pubs = {kind: node.create_publisher(Image, topic, _qos(rel))
            for kind, (topic, rel) in TOPICS.items()}
    discovery_s = _wait_for_match(node, list(pubs.values()), args.match_timeout)
    startup_s = time.monotonic() - t0
    if discovery_s is None:
        _result({"discovery_s": None, "sent": 0})
        return 2
    time.sleep(args.settle)  # let the subscriber's side of discovery finish too
    rng = np.random.default_rng(0)
    for seq in range(args.count):
        img = rng.integers(0, 256, (args.height, args.width, 3), dtype=np.uint8)
        for kind, pub in pubs.items():
            msg = image_to_msg(img, 0.0, "")
            msg.header.frame_id = f"{seq}:{zlib.crc32(msg.data)}"
            pub.publish(msg)
        time.sleep(args.period)
    time.sleep(args.linger)  # reliable repairs happen after the last publish
    _result({"discovery_s": discovery_s, "startup_to_match_s": startup_s, "sent": args.count})
    node.destroy_node()
    rclpy.shutdown()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["pub", "sub"])
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--width", type=int, default=640)
    parser.add_argument("--height", type=int, default=480)
    parser.add_argument("--period", type=float, default=0.05)
    parser.add_argument("--settle", type=float, default=0.5)
    parser.add_argument("--linger", type=float, default=1.5)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--idle", type=float, default=2.0)
    parser.add_argument("--match-timeout", type=float, default=10.0)
    args = parser.parse_args(argv)
    return run_sub(args) if args.mode == "sub" else run_pub(args)


if __name__ == "__main__":
    sys.exit(main())
