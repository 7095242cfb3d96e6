"""Test node (the graph's end node): publishes chatter until the listener acks, records the
ack, then exits with its `exit_code` parameter (or keeps running if `wait_forever`)."""
from __future__ import annotations

import json
import os
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from std_msgs.msg import String

from support.launch_test_nodes.common import ACK, CHATTER, declare, write_report

DEFAULTS = {"greeting": "", "file_only": "", "report_dir": "", "exit_code": 0,
            "wait_forever": False}


def main() -> int:
    rclpy.init()
    node = rclpy.create_node("talker_probe")
    params = declare(node, DEFAULTS)
    heard: list[dict] = []
    chatter = node.create_publisher(String, CHATTER, 10)
    node.create_subscription(String, ACK, lambda msg: heard.append(json.loads(msg.data)), 10)
    node.create_timer(0.1, lambda: chatter.publish(String(data=params["greeting"])))
    write_report(params, node.get_name())
    print(f"talker up as {node.get_name()} (pid {os.getpid()})", flush=True)
    try:
        while rclpy.ok() and (params["wait_forever"] or not heard):
            rclpy.spin_once(node, timeout_sec=0.05)
    except (KeyboardInterrupt, ExternalShutdownException):
        print("talker stopped by signal", flush=True)
        return 0
    write_report(params, node.get_name(), {"heard": heard[0]})
    print(f"talker heard the listener; exiting with {params['exit_code']}", flush=True)
    node.destroy_node()
    rclpy.shutdown()
    return params["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
