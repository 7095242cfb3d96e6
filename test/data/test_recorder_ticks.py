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
    # rosbags' reader (what the export and the tests use) takes every message of the bag
    from rosbags.rosbag2 import Reader

    from vla_bridge.data.bags import typestore
    store, read = typestore(), 0
    with Reader(tmp_path / answer["bag"]) as reader:
        for conn, _, raw in reader.messages():
            store.deserialize_cdr(raw, conn.msgtype)
            read += 1
    assert read == len(records)


def _fields(msg):
    """A rosbags message as plain data (arrays as lists)."""
    if hasattr(msg, "__msgtype__"):
        return {k: _fields(v) for k, v in vars(msg).items() if k != "__msgtype__"}
    return msg.tolist() if isinstance(msg, np.ndarray) else msg


def test_rebuilt_messages_are_the_messages_dds_carries(tmp_path):
    """bags.cdr_bytes gives the message a subscription takes raw from DDS, in the same CDR
    layout (rclpy's serialize_message appends 8 bytes to a joint state, which rosbags' reader
    refuses), for both embodiments' joint states and the clock."""
    import time

    import rclpy
    import rclpy.executors
    from rclpy.serialization import serialize_message
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    from vla_bridge.data.bags import cdr_bytes, typestore
    from vla_bridge.ros import messages as m
    store = typestore()
    type_of = {"joints": "sensor_msgs/msg/JointState", "clock": "rosgraph_msgs/msg/Clock"}
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("cdr_probe", context=context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        taken: dict[str, list] = {"joints": [], "clock": []}
        node.create_subscription(JointState, "/cdr_probe/joints", taken["joints"].append, 10, raw=True)
        node.create_subscription(Clock, "/cdr_probe/clock", taken["clock"].append, 10, raw=True)
        pubs = {"joints": node.create_publisher(JointState, "/cdr_probe/joints", 10),
                "clock": node.create_publisher(Clock, "/cdr_probe/clock", 10)}
        sent = [("clock", m.clock_msg(3.42))] + [
            ("joints", m.joint_state_msg(e.state_names, np.linspace(-1, 1, e.state_dim), 3.42))
            for e in (C.ALOHA_PIPER, C.LIBERO_PANDA)] + [
            ("joints", m.joint_state_msg(C.LIBERO_PANDA.action_names, np.arange(7) / 7, 1.06))]
        deadline = time.monotonic() + 20
        while pubs["joints"].get_subscription_count() == 0 or pubs["clock"].get_subscription_count() == 0:
            assert time.monotonic() < deadline
            executor.spin_once(timeout_sec=0.05)
        for kind, msg in sent:
            before = len(taken[kind])
            pubs[kind].publish(msg)
            while len(taken[kind]) == before:
                assert time.monotonic() < deadline, "no message came back"
                executor.spin_once(timeout_sec=0.05)
            mine, theirs = cdr_bytes(msg), bytes(taken[kind][-1])
            # the same length and layout; the alignment padding DDS leaves unset (Fast DDS
            # reuses its buffer: a byte of the last message shows through), rosbags zeroes it
            assert len(mine) == len(theirs), kind
            assert _fields(store.deserialize_cdr(mine, type_of[kind])) \
                == _fields(store.deserialize_cdr(theirs, type_of[kind])), kind
            if kind == "joints":  # why cdr_bytes exists: rclpy pads a variable-size message
                assert len(serialize_message(msg)) == len(theirs) + 8
                with pytest.raises(Exception, match="size mismatch"):
                    store.deserialize_cdr(serialize_message(msg), type_of[kind])
    finally:
        node.destroy_node()
        rclpy.shutdown(context=context)
