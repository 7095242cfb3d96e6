"""The teleop graph of `vla-bridge record-demos` in one process, over real DDS: the PiPER node
in teleop mode on fake hardware (two linked fake followers, each with a fake leader on its
virtual CAN bus, read through the real piper_sdk), the recorder node, the console's
DemoNode, and a stand-in for the cameras and the tracker (three 320x240 camera streams at
10 Hz, the tracker's latched status and the world state of the task's layout), all on one
rclpy context spun by one executor thread (test/data/test_record_demos.py).
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from vla_bridge import contract as C

TRACKER_STATUS = {"calibrated": True, "calibration_required": True, "camera": "cam_high",
                  "image_topic": C.full_image_topic("cam_high"), "board": [20, 21, 22, 23]}


def layout_world(task):
    """The task's layout as the tracker would report it (objects at their nominal places)."""
    from vla_bridge.benchmarks.vifo.instructions.grounding import layout_world as objects_of
    from vla_bridge.embodiment.world import WorldState
    objects, _ = objects_of(task.scene, task.layout, 0)
    return WorldState(stamp=0.0, objects=objects, tcp={})


class TeleopGraph:
    def __init__(self, output: Path, task):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter
        from sensor_msgs.msg import Image
        from std_msgs.msg import String
        from visualization_msgs.msg import MarkerArray

        from vla_bridge.data import recorder_node
        from vla_bridge.data.demo_node import DemoNode
        from vla_bridge.robot_nodes.piper.piper_node import PiperNode
        from vla_bridge.ros import messages
        self.rclpy, self.messages = rclpy, messages
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.piper = PiperNode(context=self.context, parameter_overrides=[
            Parameter(k, value=v) for k, v in {
                "arms": "left,right", "use_fake_hardware": True, "teleop": True,
                "fake_feedback_timeout_s": 2.0, "stall_timeout_s": 3600.0}.items()])
        init, context = recorder_node.Node.__init__, self.context

        def in_context(node, *args, **kwargs):
            kwargs.setdefault("context", context)
            kwargs.setdefault("parameter_overrides", [Parameter("output", value=str(output))])
            init(node, *args, **kwargs)
        recorder_node.Node.__init__ = in_context
        try:
            self.recorder = recorder_node.RecorderNode()
        finally:
            recorder_node.Node.__init__ = init
        self.demo = DemoNode(context=self.context)
        self.standin = rclpy.node.Node("cameras_and_tracker", context=self.context)
        q = messages.qos_profile
        pub = self.standin.create_publisher
        self.pub_images = {cam: pub(Image, C.image_topic(cam), q(C.QOS_IMAGES))
                           for cam in C.ALOHA_PIPER.camera_names}
        self.pub_world = pub(MarkerArray, C.TOPIC_WORLD_STATE, q(C.QOS_STATE))
        self.pub_tracker = pub(String, C.TOPIC_TRACKER_STATUS, q(C.QOS_LATCHED))
        self.world = layout_world(task)
        self.pub_tracker.publish(messages.json_msg(
            {**TRACKER_STATUS, "objects": sorted(self.world.objects)}))
        self.frame = 0
        self.standin.create_timer(0.1, self._publish_sensors)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        for node in (self.piper, self.recorder, self.demo, self.standin):
            self.executor.add_node(node)
        self.spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self.spinner.start()
        self.wait_until(lambda: self.demo.state() is not None and self.demo.world() is not None
                        and self.demo.problem() is None
                        and self.demo.pub_control.get_subscription_count() >= 2
                        and self.recorder.pub_status.get_subscription_count() >= 1,
                        "the graph's nodes to see each other")

    def _publish_sensors(self) -> None:
        t = time.time()
        self.frame += 1
        w, h = C.ALOHA_PIPER.image_size
        for i, (cam, pub) in enumerate(self.pub_images.items()):
            image = np.full((h, w, 3), (self.frame * 7 + 40 * i) % 256, np.uint8)
            pub.publish(self.messages.image_to_msg(image, t, cam))
        self.pub_world.publish(self.messages.world_state_to_msg(self.world))

    @property
    def leaders(self):
        return self.piper.teleop.fake_leaders

    @staticmethod
    def wait_until(condition, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    def close(self) -> None:
        self.piper.close()
        self.recorder.close()
        self.executor.shutdown(timeout_sec=5.0)
        self.spinner.join(timeout=5.0)
        for node in (self.piper, self.recorder, self.demo, self.standin):
            node.destroy_node()
        self.rclpy.shutdown(context=self.context)
