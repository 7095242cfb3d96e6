"""The operator console's node for teleoperated demonstrations (`vla-bridge record-demos`):
the graph side of ``teleop.DemoSession`` (its ``DemoGraph``).

It plays the evaluator's part on the real graph's topics: the instruction (latched) and the
episode control (begin, end with "demo": save | discard) out; the recorder's and the PiPER
node's statuses, the joints, the leaders' commands (``joint_commands``) and the tracker's
world state in. With fake hardware it sends the fake leaders their plan
(contract.TOPIC_FAKE_LEADER_PLAN). It never commands an arm: it publishes no action chunk.
Spin it on an executor thread; the console calls it from its own thread (everything here is
guarded by one lock).
"""
from __future__ import annotations

import math
import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages

NAMES = tuple(C.ALOHA_PIPER.action_names)


class DemoNode(Node):
    def __init__(self, name: str = "demo_console", **node_kwargs):
        super().__init__(name, **node_kwargs)
        q = messages.qos_profile
        self._lock = threading.Lock()
        self._state: np.ndarray | None = None
        self._world = None
        self._commands: list[float] = []  # monotonic receive times of joint_commands
        self._robot: dict[str, dict] = {}  # episode -> newest PiPER-node status
        self._recorder: dict[str, dict] = {}  # episode -> newest recorder status
        self.pub_control = self.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_instruction = self.create_publisher(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.pub_plan = self.create_publisher(JointTrajectory, C.TOPIC_FAKE_LEADER_PLAN,
                                              q(C.QOS_COMMAND))
        self.create_subscription(String, C.TOPIC_RECORDER_STATUS, self._on_recorder,
                                 q(C.QOS_EVENTS))
        self.create_subscription(String, C.TOPIC_EPISODE_STATUS, self._on_robot, q(C.QOS_EVENTS))
        self.create_subscription(JointState, C.TOPIC_JOINT_STATES, self._on_joints, q(C.QOS_LATEST))
        self.create_subscription(JointState, C.TOPIC_JOINT_COMMANDS, self._on_commands,
                                 q(C.QOS_STATE))
        self.create_subscription(MarkerArray, C.TOPIC_WORLD_STATE, self._on_world, q(C.QOS_LATEST))

    # ------------------------------------------------------------------ in
    def _on_recorder(self, msg: String) -> None:
        status = messages.parse_status(msg, "recorder", self.get_logger())
        if status is not None:
            with self._lock:
                self._recorder[status["episode"]] = status

    def _on_robot(self, msg: String) -> None:
        status = messages.parse_status(msg, "sim", self.get_logger())
        if status is not None:
            with self._lock:
                self._robot[status["episode"]] = status

    def _on_joints(self, msg: JointState) -> None:
        try:
            state = messages.joint_state_to_array(msg, NAMES)
        except ValueError:
            return  # one arm only: the console needs both (the dataset's 14 values)
        with self._lock:
            self._state = state

    def _on_commands(self, msg: JointState) -> None:
        with self._lock:
            self._commands.append(time.monotonic())
            if len(self._commands) > 200_000:
                del self._commands[:100_000]

    def _on_world(self, msg: MarkerArray) -> None:
        try:
            world = messages.msg_to_world_state(msg)
        except ValueError:
            return
        with self._lock:
            self._world = world

    # ------------------------------------------------------------------ DemoGraph
    def send(self, message: dict) -> None:
        self.pub_control.publish(messages.json_msg(message))

    def instruct(self, text: str) -> None:
        self.pub_instruction.publish(String(data=text))

    def play_plan(self, plan: np.ndarray, period: float) -> None:
        self.pub_plan.publish(messages.chunk_to_msg(plan, NAMES, time.time(), period))

    def commands_age(self) -> float:
        with self._lock:
            return time.monotonic() - self._commands[-1] if self._commands else math.inf

    def commands_since(self, t: float) -> int:
        with self._lock:
            return sum(1 for c in self._commands if c > t)

    def state(self) -> np.ndarray | None:
        with self._lock:
            return None if self._state is None else self._state.copy()

    def world(self):
        with self._lock:
            return self._world

    def robot_status(self, episode: str) -> dict | None:
        with self._lock:
            return self._robot.get(episode)

    def recorder_status(self, episode: str) -> dict | None:
        with self._lock:
            return self._recorder.get(episode)

    def problem(self) -> str | None:
        if self.count_publishers(C.TOPIC_RECORDER_STATUS) == 0:
            return f"no recorder node on the graph (nobody publishes {C.TOPIC_RECORDER_STATUS})"
        if self.count_publishers(C.TOPIC_JOINT_STATES) == 0:
            return f"no PiPER node on the graph (nobody publishes {C.TOPIC_JOINT_STATES})"
        return None
