"""Test node: answers every chatter message with an ack carrying its pid and parameters.

Parameters: greeting, count, file_only, report_dir, die_after (s; < 0 = never),
ignore_sigint (to check the launcher escalates to SIGTERM).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from std_msgs.msg import String

from support.launch_test_nodes.common import ACK, CHATTER, declare, write_report

DEFAULTS = {"greeting": "", "count": 0, "file_only": "", "report_dir": "", "die_after": -1.0,
            "ignore_sigint": False}


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("listener_probe")  # the launcher renames it with __node:=
    params = declare(node, DEFAULTS)
    if params["ignore_sigint"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    ack = node.create_publisher(String, ACK, 10)
    reply = json.dumps({"pid": os.getpid(), "name": node.get_name(), "params": params})
    node.create_subscription(String, CHATTER, lambda _msg: ack.publish(String(data=reply)), 10)
    write_report(params, node.get_name())
    print(f"listener up as {node.get_name()} (pid {os.getpid()})", flush=True)
    started = time.monotonic()
    try:
        while rclpy.ok():
            rclpy.spin_once(node, timeout_sec=0.05)
            if 0 <= params["die_after"] < time.monotonic() - started:
                print("listener dying on purpose with code 3", flush=True)
                return 3
    except (KeyboardInterrupt, ExternalShutdownException):
        print("listener stopped by signal", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
