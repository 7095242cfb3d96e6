"""A recorder node and a stand-in for the rest of the graph (the evaluator's control, the sim's
status, an instruction, a camera and the joints) on one rclpy context, over real DDS, spun by
one executor (test/data/test_recorder_refusals.py, test_recorder_full_disk.py).

The recorder's log lines are kept (``RecorderGraph.log``, a junk_messages.RecordingLogger) and
its statuses are collected as the evaluator hears them; ``episode(...)`` plays one episode as
the evaluator and the sim do: begin, messages, the sim's done, end.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from support.junk_messages import RecordingLogger
from vla_bridge import contract as C

TASK = {"id": "L0_pickup_yellow_block_3", "scene": "scene1", "layout": "L0_pickup_yellow_block_3"}


def begin_message(episode: str, **fields) -> dict:
    """A begin as the evaluator sends it (every field the sim and the policy read)."""
    return {"kind": C.CONTROL_BEGIN, "episode": episode, "task": TASK, "seed": 3,
            "instruction": f"instruction of {episode}", "max_policy_calls": 2,
            "max_actions_per_call": 50, **fields}


class RecorderGraph:
    def __init__(self, output: Path):
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import Image, JointState
        from std_msgs.msg import String

        from vla_bridge.data import recorder_node
        from vla_bridge.ros import messages
        self.rclpy, self.messages = rclpy, messages
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=["--ros-args", "-p", f"output:={output}"])
        init = recorder_node.Node.__init__
        context = self.context

        def in_context(node, *args, **kwargs):
            kwargs.setdefault("context", context)
            init(node, *args, **kwargs)

        recorder_node.Node.__init__ = in_context
        try:
            self.recorder = recorder_node.RecorderNode()
        finally:
            recorder_node.Node.__init__ = init
        self.log = RecordingLogger()
        self.recorder.get_logger = lambda: self.log
        self.node = rclpy.node.Node("test_graph", context=self.context)
        q = messages.qos_profile
        pub = self.node.create_publisher
        self.pub_control = pub(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_sim_status = pub(String, C.TOPIC_EPISODE_STATUS, q(C.QOS_EVENTS))
        self.pub_instruction = pub(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.pub_image = pub(Image, C.image_topic("cam_high"), q(C.QOS_IMAGES))
        self.pub_joints = pub(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
        self.status: list[dict] = []
        self.node.create_subscription(String, C.TOPIC_RECORDER_STATUS,
                                      lambda m: self.status.append(json.loads(m.data)),
                                      q(C.QOS_EVENTS))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.recorder)
        self.executor.add_node(self.node)
        self.spin_until(lambda: all(p.get_subscription_count() > 0 for p in (
            self.pub_control, self.pub_sim_status, self.pub_image, self.pub_joints)),
            "the recorder's subscriptions")
        self.spin_until(lambda: self.recorder.pub_status.get_subscription_count() > 0,
                        "the status subscription")

    # ------------------------------------------------------------------ spinning
    def spin_until(self, condition, what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            self.executor.spin_once(timeout_sec=0.05)

    def spin_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.executor.spin_once(timeout_sec=0.02)

    def answer(self, episode: str, kinds=None) -> dict:
        """Wait for the recorder's first status of ``episode`` of one of ``kinds``."""
        kinds = kinds or (C.RECORDER_RECORDED, "incomplete", "failed")
        found = lambda: [s for s in self.status if s["episode"] == episode  # noqa: E731
                         and s["kind"] in kinds]
        self.spin_until(lambda: found(), f"the recorder's {kinds} of {episode}")
        return found()[0]

    # ------------------------------------------------------------------ publishing
    def raw(self, text: str) -> None:
        """Anything on the control topic."""
        from std_msgs.msg import String
        self.pub_control.publish(String(data=text))

    def control(self, kind: str, episode: str, **fields) -> None:
        message = begin_message(episode, **fields) if kind == C.CONTROL_BEGIN else {
            "kind": kind, "episode": episode, **fields}
        self.pub_control.publish(self.messages.json_msg(message))

    def sim_done(self, episode: str, ticks: int = 10) -> None:
        self.pub_sim_status.publish(self.messages.json_msg(
            {"kind": C.STATUS_DONE, "episode": episode, "ticks": ticks, "calls": 2}))

    def send_data(self, images: list[np.ndarray], ticks: int) -> None:
        m = self.messages
        for i, image in enumerate(images):
            self.pub_image.publish(m.image_to_msg(image, 0.06 * i, "cam_high"))
        for t in range(ticks):
            self.pub_joints.publish(m.joint_state_msg(C.ALOHA_PIPER.action_names, np.full(14, t * 0.01),
                                                      0.06 * t))

    def open_bag(self, episode: str) -> dict:
        self.pub_instruction.publish(self.messages.json_msg({"text": f"instruction of {episode}"}))
        self.control(C.CONTROL_BEGIN, episode)
        return self.answer(episode, (C.RECORDER_RECORDING, "failed"))

    def episode(self, episode: str, images: list[np.ndarray], ticks: int,
                done: bool = True) -> dict:
        """One episode as the evaluator runs it; the recorder's closing answer."""
        opened = self.open_bag(episode)
        if opened["kind"] != C.RECORDER_RECORDING:
            return opened
        self.send_data(images, ticks)
        if done:
            self.sim_done(episode, ticks)
        self.control(C.CONTROL_END, episode)
        return self.answer(episode)

    def close(self) -> None:
        self.recorder.close()
        self.recorder.destroy_node()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)


def images(n: int, seed: int = 3) -> list[np.ndarray]:
    """``n`` random camera images (random pixels: zstd cannot shrink them, ~230 kB each)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), dtype=np.uint8)
            for _ in range(n)]
