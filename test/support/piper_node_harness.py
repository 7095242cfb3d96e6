"""Shared by the PiPER node tests that spin the node and a helper node on an executor thread."""
from __future__ import annotations

import time


def shut_down(node, helper, executor, spinner) -> None:
    """Stop the PiPER node first (its timers and the arm), then the executor, then destroy
    both nodes."""
    node.close()
    executor.remove_node(helper)
    executor.remove_node(node)
    time.sleep(0.05)  # let callbacks in flight finish (rclpy destroys its guard early)
    executor.shutdown(timeout_sec=5.0)
    spinner.join(timeout=5.0)
    node.destroy_node()
    helper.destroy_node()
