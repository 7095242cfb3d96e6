"""#26: a lock-step sim sends the recorder no per-tick /clock, /joint_states or
/joint_commands; the recorder rebuilds them from the frames' rows (contract.FRAME_EXPANDERS),
so the bag holds every tick's messages as the sim would have sent them. Over real DDS, with
the recorder node in this process (support.recorder_graph)."""
from __future__ import annotations

import numpy as np
import pytest

from support.recorder_graph import RecorderGraph
from vla_bridge import contract as C

rclpy = pytest.importorskip("rclpy")

EPISODE = "scene1/S1_L0_001/r1@1"


def _frames(messages, ticks: range, published: int, embodiment=C.ALOHA_PIPER, name=None):
    from vla_bridge.embodiment.world import WorldState
    world = WorldState(0.0, {}, {})
    fields = messages.frame_fields(embodiment.action_dim, world, embodiment)
    if name:
        fields = [(label.replace(embodiment.name, name), size) for label, size in fields]
    rows = [messages.frame_row(1.0 + 0.06 * k, np.full(embodiment.action_dim, k / 100), world,
                               np.full(embodiment.state_dim, -k / 100), published) for k in ticks]
    return messages.frames_msg(np.array(rows), fields)


def _decoded(bag) -> list[tuple[str, int, object]]:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory
    with open(bag / f"{bag.name}.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        return [(ch.topic, m.log_time, msg) for _, ch, m, msg in
                reader.iter_decoded_messages(log_time_order=True)]


def test_the_bag_gets_the_ticks_from_the_frames_and_junk_frames_are_kept_as_they_came(tmp_path):
    from std_msgs.msg import Float64MultiArray
    graph = RecorderGraph(tmp_path)
    try:
        m = graph.messages
        pub = graph.node.create_publisher(Float64MultiArray, C.TOPIC_FRAMES, m.qos_profile(C.QOS_STATE))
        graph.spin_until(lambda: pub.get_subscription_count() > 0, "the frames subscription")
        assert graph.open_bag(EPISODE)["kind"] == C.RECORDER_RECORDING
        pub.publish(_frames(m, range(0, 3), published=0))  # nothing sent: all three rebuilt
        pub.publish(_frames(m, range(3, 5), published=C.TICK_TOPIC_BITS[C.TOPIC_CLOCK]))
        pub.publish(_frames(m, range(5, 6), published=0, name="nobody"))  # unknown embodiment
        pub.publish(_frames(m, range(6, 7), published=0, name="nobody"))
        graph.spin_for(0.3)
        graph.sim_done(EPISODE)
        graph.control(C.CONTROL_END, EPISODE)
        answer = graph.answer(EPISODE)
    finally:
        graph.close()
    assert answer["kind"] == C.RECORDER_RECORDED, answer
    records = _decoded(tmp_path / answer["bag"])
    by_topic = {t: [(log, msg) for topic, log, msg in records if topic == t]
                for t in (C.TOPIC_CLOCK, C.TOPIC_JOINT_STATES, C.TOPIC_JOINT_COMMANDS, C.TOPIC_FRAMES)}
    assert len(by_topic[C.TOPIC_FRAMES]) == 4  # every frames message, the junk ones too
    stamp = lambda msg: round(msg.sec + msg.nanosec / 1e9, 6)  # noqa: E731
    assert [stamp(msg.clock) for _, msg in by_topic[C.TOPIC_CLOCK]] == [1.0, 1.06, 1.12]
    joints = by_topic[C.TOPIC_JOINT_STATES]
    assert [stamp(msg.header.stamp) for _, msg in joints] == [1.0, 1.06, 1.12, 1.18, 1.24]
    assert list(joints[1][1].name) == list(C.ALOHA_PIPER.state_names)
    assert np.allclose(joints[4][1].position, -0.04)
    commands = by_topic[C.TOPIC_JOINT_COMMANDS]
    assert np.allclose([msg.position[0] for _, msg in commands], [0, 0.01, 0.02, 0.03, 0.04])
    first_frames = by_topic[C.TOPIC_FRAMES][0][0]  # the rebuilt ticks come just before their frames
    assert all(log < first_frames for log, _ in by_topic[C.TOPIC_CLOCK])
    errors = graph.log.lines["error"]
    assert len(errors) == 1 and "unknown embodiment 'nobody'" in errors[0], errors
