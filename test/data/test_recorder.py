"""record:=true: the recorder node writes one rosbag2 bag (MCAP) per episode, over real DDS,
and two independent readers (rosbags and mcap + mcap-ros2-support) read it back."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.data import bags as B

rclpy = pytest.importorskip("rclpy")


def test_bag_name_is_the_trial_key_and_filesystem_safe():
    assert B.bag_name("scene1/S1_L0_001/r1@1700000000") == "scene1__S1_L0_001__r1"
    assert B.bag_name("../x y@3") == "x_y"
    with pytest.raises(ValueError, match="no usable bag name"):
        B.bag_name("@12")


class _Graph:
    """A recorder node and a publisher node on one context, spun by one executor."""

    def __init__(self, output: Path):
        from rclpy.executors import SingleThreadedExecutor
        from sensor_msgs.msg import Image, JointState
        from std_msgs.msg import String

        from vla_bridge.data.recorder_node import RecorderNode
        from vla_bridge.ros import messages
        self.context = rclpy.Context()
        rclpy.init(context=self.context, args=["--ros-args", "-p", f"output:={output}"])
        init = rclpy.node.Node.__init__
        self.recorder = _in_context(RecorderNode, self.context, init)
        self.node = rclpy.node.Node("test_publisher", context=self.context)
        q = messages.qos_profile
        self.pub_control = self.node.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_sim_status = self.node.create_publisher(String, C.TOPIC_EPISODE_STATUS,
                                                         q(C.QOS_EVENTS))
        self.pub_instruction = self.node.create_publisher(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.pub_image = self.node.create_publisher(Image, C.image_topic("cam_high"), q(C.QOS_IMAGES))
        self.pub_joints = self.node.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
        self.status: list[dict] = []
        self.node.create_subscription(String, C.TOPIC_RECORDER_STATUS,
                                      lambda m: self.status.append(json.loads(m.data)), q(C.QOS_EVENTS))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.recorder)
        self.executor.add_node(self.node)
        self.messages = messages
        self.spin_until(lambda: all(p.get_subscription_count() > 0 for p in (
            self.pub_control, self.pub_sim_status, self.pub_image, self.pub_joints)),
            "recorder subscriptions")

    def spin_until(self, condition, what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            self.executor.spin_once(timeout_sec=0.05)

    def control(self, kind: str, episode: str) -> None:
        # a begin carries what the sim and the policy read, or the recorder ignores it too
        begin = {"task": {"scene": "scene1", "layout": "L0"}, "seed": 1, "instruction": "x"}
        self.pub_control.publish(self.messages.json_msg(
            {"kind": kind, "episode": episode, **(begin if kind == C.CONTROL_BEGIN else {})}))

    def sim_done(self, episode: str) -> None:
        """The sim's done: the episode ended normally, so its bag is complete."""
        self.pub_sim_status.publish(self.messages.json_msg(
            {"kind": C.STATUS_DONE, "episode": episode, "ticks": 1, "calls": 1}))

    def episode(self, episode: str, images: list[np.ndarray], ticks: int) -> dict:
        m = self.messages
        self.pub_instruction.publish(m.json_msg({"text": f"instruction of {episode}"}))
        self.control(C.CONTROL_BEGIN, episode)
        self.spin_until(lambda: any(s["kind"] == C.RECORDER_RECORDING and s["episode"] == episode
                                    for s in self.status), f"the bag of {episode} to open")
        for i, image in enumerate(images):
            self.pub_image.publish(m.image_to_msg(image, 0.06 * i, "cam_high"))
        for t in range(ticks):
            self.pub_joints.publish(m.joint_state_msg(C.ALOHA_PIPER.action_names, np.full(14, t * 0.01), 0.06 * t))
        self.sim_done(episode)
        self.control(C.CONTROL_END, episode)
        self.spin_until(lambda: any(s["kind"] == C.RECORDER_RECORDED and s["episode"] == episode
                                    for s in self.status), f"the bag of {episode} to close")
        return next(s for s in self.status if s["kind"] == C.RECORDER_RECORDED
                    and s["episode"] == episode)

    def close(self) -> None:
        self.recorder.close()
        self.recorder.destroy_node()
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


def _in_context(make_node, context, init):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rclpy.node.Node, "__init__",
                   lambda self, *a, **k: init(self, *a, **{**k, "context": context}))
        return make_node()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two episodes recorded over DDS: (run dir, the images sent, the recorder's statuses)."""
    run = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), dtype=np.uint8)
              for _ in range(3)]
    graph = _Graph(run)
    try:
        done = [graph.episode("scene1/S1_L0_001/r1@1", images, ticks=40),
                graph.episode("scene1/S1_L0_002/r1@2", images[:1], ticks=7)]
    finally:
        graph.close()
    return run, images, done


def test_one_complete_bag_per_episode_with_the_metadata_ros2_bag_writes(recorded):
    run, _, done = recorded
    bags = sorted(p.name for p in (run / B.BAGS_DIR).iterdir() if p.name != B.PARTIAL_DIR)
    assert bags == ["scene1__S1_L0_001__r1", "scene1__S1_L0_002__r1"]
    for name in bags:
        files = sorted(p.name for p in (run / B.BAGS_DIR / name).iterdir())
        assert files == ["metadata.yaml", f"{name}.mcap"]
        import yaml
        info = yaml.safe_load((run / B.BAGS_DIR / name / "metadata.yaml").read_text())
        assert info["rosbag2_bagfile_information"]["storage_identifier"] == "mcap"
    assert not (run / B.BAGS_DIR / B.PARTIAL_DIR).exists()  # removed once empty
    assert [d["bag"] for d in done] == [str(run / B.BAGS_DIR / n) for n in bags]


def test_each_topic_carries_its_publishers_offered_qos_as_ros2_bag_record_writes_it(recorded):
    """#27 point 5: metadata.yaml gives each topic's offered QoS, so `ros2 bag play` replays
    the instruction transient-local (a late policy still gets it) and the rest volatile."""
    import yaml
    from rosbags.interfaces import QosDurability, QosHistory, QosReliability
    run, _, _ = recorded
    bag = run / B.BAGS_DIR / "scene1__S1_L0_001__r1"
    offered = B.read_offered_qos(bag)
    (instruction,) = offered[C.TOPIC_INSTRUCTION]
    assert instruction.durability == QosDurability.TRANSIENT_LOCAL
    assert instruction.reliability == QosReliability.RELIABLE
    # DDS discovery carries no history or depth: rosbag2 writes them as unknown and 0 too,
    # and `ros2 bag play` replays with keep-last and its own depth
    assert (instruction.history, instruction.depth) == (QosHistory.UNKNOWN, 0)
    assert instruction.deadline.sec == 9223372036  # rmw's "infinite", as rosbag2 writes it
    (image,) = offered[C.image_topic("cam_high")]
    assert image.durability == QosDurability.VOLATILE
    assert image.reliability == QosReliability.RELIABLE
    # written the way rosbag2 (metadata version 9) writes it: a list of profiles per topic
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["version"] == 9
    by_topic = {t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
                for t in info["topics_with_message_count"]}
    assert by_topic[C.TOPIC_INSTRUCTION][0]["durability"] == "transient_local"
    assert by_topic[C.image_topic("cam_high")][0]["durability"] == "volatile"


def test_rosbags_reads_every_message_of_the_episode_and_nothing_of_the_next(recorded):
    run, _, done = recorded
    first = B.read_counts(run / B.BAGS_DIR / "scene1__S1_L0_001__r1")
    assert first == {C.TOPIC_INSTRUCTION: 1, C.TOPIC_EPISODE_CONTROL: 2, C.TOPIC_EPISODE_STATUS: 1,
                     C.image_topic("cam_high"): 3, C.TOPIC_JOINT_STATES: 40}
    second = B.read_counts(run / B.BAGS_DIR / "scene1__S1_L0_002__r1")
    assert second == {C.TOPIC_INSTRUCTION: 1, C.TOPIC_EPISODE_CONTROL: 2, C.TOPIC_EPISODE_STATUS: 1,
                      C.image_topic("cam_high"): 1, C.TOPIC_JOINT_STATES: 7}
    assert [d["messages"] for d in done] == [sum(first.values()), sum(second.values())]


def test_mcap_reader_decodes_the_images_pixel_for_pixel_and_the_instruction(recorded):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    run, images, _ = recorded
    name = "scene1__S1_L0_001__r1"
    got, texts = [], []
    with open(run / B.BAGS_DIR / name / f"{name}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for _, channel, _, msg in reader.iter_decoded_messages():
            if channel.topic == C.image_topic("cam_high"):
                got.append(np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3))
            elif channel.topic == C.TOPIC_INSTRUCTION:
                texts.append(json.loads(msg.data)["text"])
    assert len(got) == 3 and all(np.array_equal(a, b) for a, b in zip(got, images))
    assert texts == ["instruction of scene1/S1_L0_001/r1@1"]


def test_a_crash_mid_episode_leaves_only_a_partial_bag_that_the_rerun_replaces(tmp_path):
    topics = {C.TOPIC_EPISODE_CONTROL: "std_msgs/msg/String"}
    from rclpy.serialization import serialize_message
    from std_msgs.msg import String
    raw = serialize_message(String(data="{}"))
    bags = B.EpisodeBags(tmp_path, topics)
    bags.begin("scene1/T/r1@1")
    bags.write(C.TOPIC_EPISODE_CONTROL, 1, raw)
    bags.close()  # the recorder stopped mid-episode
    assert not (tmp_path / B.BAGS_DIR / "scene1__T__r1").exists()
    assert (tmp_path / B.BAGS_DIR / B.PARTIAL_DIR / "scene1__T__r1").exists()
    rerun = B.EpisodeBags(tmp_path, topics)
    rerun.begin("scene1/T/r1@2")
    rerun.write(C.TOPIC_EPISODE_CONTROL, 2, raw)
    path, count = rerun.end("scene1/T/r1@2")
    assert count == 1 and B.read_counts(path) == {C.TOPIC_EPISODE_CONTROL: 1}
    assert not (tmp_path / B.BAGS_DIR / B.PARTIAL_DIR / "scene1__T__r1").exists()


def test_a_repeated_begin_keeps_the_open_bag_and_is_answered_again(tmp_path):
    """The evaluator sends a begin again when an answer is late: the recorder says again that
    it records, keeps the bag it opened (with what arrived between the two begins) and
    records both begins."""
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, (C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0], 3), dtype=np.uint8)
    graph = _Graph(tmp_path)
    episode = "scene1/S1_L0_003/r1@3"
    try:
        graph.control(C.CONTROL_BEGIN, episode)
        graph.spin_until(lambda: len(graph.status) == 1, "the bag to open")
        graph.pub_image.publish(graph.messages.image_to_msg(image, 0.0, "cam_high"))
        graph.control(C.CONTROL_BEGIN, episode)
        graph.spin_until(lambda: len(graph.status) == 2, "the repeated begin's answer")
        graph.sim_done(episode)
        graph.control(C.CONTROL_END, episode)
        graph.spin_until(lambda: any(s["kind"] == C.RECORDER_RECORDED for s in graph.status),
                         "the bag to close")
    finally:
        graph.close()
    assert [s["kind"] for s in graph.status] == [C.RECORDER_RECORDING, C.RECORDER_RECORDING,
                                                 C.RECORDER_RECORDED]
    (bag,) = [p for p in (tmp_path / B.BAGS_DIR).iterdir() if not p.name.startswith(".")]
    counts = B.read_counts(bag)
    assert counts[C.TOPIC_EPISODE_CONTROL] == 3 and counts[C.image_topic("cam_high")] == 1


def test_the_batching_pause_happens_only_on_an_executor_of_its_own(tmp_path):
    """The pause between takes holds the executor's thread: alone (its own process) the node
    pauses, beside other nodes (the in-process teleop graph) it must not (it held their
    callbacks back by seconds there)."""
    from rclpy.executors import SingleThreadedExecutor

    graph = _Graph(tmp_path / "run")  # the recorder beside a publisher node
    try:
        assert graph.recorder.config.batch_s > 0
        assert not graph.recorder.spun_alone()
        graph.executor.remove_node(graph.node)
        assert graph.recorder.spun_alone()
        graph.executor.remove_node(graph.recorder)
        assert not graph.recorder.spun_alone()  # on no executor at all
        alone = SingleThreadedExecutor(context=graph.context)
        alone.add_node(graph.recorder)
        assert graph.recorder.spun_alone()
    finally:
        graph.close()
