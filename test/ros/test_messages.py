"""Round trips and error messages of vla_bridge.ros.messages (no DDS needed)."""
from __future__ import annotations

import array
import time

import numpy as np
import pytest
from rclpy.qos import DurabilityPolicy, ReliabilityPolicy
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from visualization_msgs.msg import Marker

from vla_bridge import contract
from vla_bridge.ros import messages
from vla_bridge.embodiment.world import CameraPose, ObjectState, TcpState, WorldState

NAMES = list(contract.ALOHA_PIPER.action_names)


def _image(h=240, w=320, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)

# ------------------------------------------------------------------------------ QoS


def test_qos_profile_maps_contract_specs():
    latched = messages.qos_profile(contract.QOS_LATCHED)
    assert latched.reliability == ReliabilityPolicy.RELIABLE
    assert latched.durability == DurabilityPolicy.TRANSIENT_LOCAL
    assert latched.depth == 1
    sensor = messages.qos_profile(contract.QOS_SENSOR)
    assert sensor.reliability == ReliabilityPolicy.BEST_EFFORT
    assert sensor.durability == DurabilityPolicy.VOLATILE
    assert sensor.depth == contract.QOS_SENSOR.depth

# ----------------------------------------------------------------------------- time


@pytest.mark.parametrize("t", [0.0, 0.06, 1.5, 12345.999999999, 3.9999999999])
def test_stamp_round_trip(t):
    stamp = messages.sec_to_stamp(t)
    assert 0 <= stamp.nanosec < 1_000_000_000
    assert messages.stamp_to_sec(stamp) == pytest.approx(t, abs=1e-9)


def test_stamp_rejects_negative_and_nan():
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="stamp"):
            messages.sec_to_stamp(bad)


def test_clock_msg():
    assert messages.stamp_to_sec(messages.clock_msg(2.5).clock) == 2.5

# --------------------------------------------------------------------------- images


def test_image_round_trip_is_exact_and_zero_copy_on_read():
    img = _image()
    msg = messages.image_to_msg(img, 1.25, "cam_high")
    assert (msg.height, msg.width, msg.step, msg.encoding) == (240, 320, 960, "rgb8")
    assert msg.header.frame_id == "cam_high"
    assert messages.stamp_to_sec(msg.header.stamp) == 1.25
    assert isinstance(msg.data, array.array)
    back = messages.msg_to_image(msg)
    np.testing.assert_array_equal(back, img)
    assert np.shares_memory(back, np.frombuffer(msg.data, dtype=np.uint8))


def test_image_with_row_padding():
    img = _image(5, 7)
    pad = 3
    padded = np.zeros((5, 7 * 3 + pad), np.uint8)
    padded[:, :21] = img.reshape(5, 21)
    padded[:, 21:] = 255  # garbage in the padding must not leak into the pixels
    msg = Image(height=5, width=7, encoding="rgb8", step=21 + pad)
    msg.data = array.array("B", padded.tobytes())
    back = messages.msg_to_image(msg)
    assert back.shape == (5, 7, 3)
    np.testing.assert_array_equal(back, img)


def test_image_non_contiguous_input_and_other_encodings():
    img = _image(8, 10)[:, ::-1]  # negative strides
    np.testing.assert_array_equal(messages.msg_to_image(messages.image_to_msg(img, 0, "f")), img)
    depth = np.arange(12, dtype=np.uint16).reshape(3, 4) * 1000
    msg = messages.image_to_msg(depth, 0, "f", encoding="16UC1")
    np.testing.assert_array_equal(messages.msg_to_image(msg), depth)
    mono = np.arange(12, dtype=np.uint8).reshape(3, 4)
    np.testing.assert_array_equal(
        messages.msg_to_image(messages.image_to_msg(mono, 0, "f", encoding="mono8")), mono)


def test_image_errors_are_clear():
    with pytest.raises(ValueError, match=r"rgb8 image must be \(H, W, 3\) uint8"):
        messages.image_to_msg(np.zeros((4, 4, 4), np.uint8), 0, "f")
    with pytest.raises(ValueError, match="unsupported image encoding 'yuv422'"):
        messages.image_to_msg(np.zeros((4, 4, 3), np.uint8), 0, "f", encoding="yuv422")
    short = Image(height=4, width=4, encoding="rgb8", step=12)
    short.data = array.array("B", bytes(20))
    with pytest.raises(ValueError, match="needs step >= 12"):
        messages.msg_to_image(short)


def test_camera_info():
    info = messages.camera_info_msg(320, 240, 200.0, 1.0, "cam_high")
    assert info.k[0] == 200.0 and info.k[2] == pytest.approx(159.5)


def test_image_conversion_benchmark():
    """Printed, not asserted: conversion cost per frame (run pytest -s to see it)."""
    for h, w in ((240, 320), (480, 640)):
        img = _image(h, w)
        n = 200
        t0 = time.perf_counter()
        for _ in range(n):
            msg = messages.image_to_msg(img, 0.0, "cam")
        t1 = time.perf_counter()
        for _ in range(n):
            messages.msg_to_image(msg)
        t2 = time.perf_counter()
        print(f"\n{w}x{h} rgb8: image_to_msg {(t1 - t0) / n * 1e3:.3f} ms, "
              f"msg_to_image {(t2 - t1) / n * 1e6:.1f} us")

# --------------------------------------------------------------------------- joints


def test_joint_state_round_trip_reorders_by_name():
    q = np.arange(14, dtype=float) * 0.1
    msg = messages.joint_state_msg(NAMES, q, 3.0)
    np.testing.assert_array_equal(messages.joint_state_to_array(msg, NAMES), q)
    shuffled = JointState(name=list(reversed(NAMES)), position=list(reversed(q.tolist())))
    np.testing.assert_array_equal(messages.joint_state_to_array(shuffled, NAMES), q)
    left = contract.arm_joint_names("left")
    np.testing.assert_array_equal(messages.joint_state_to_array(msg, left), q[:7])


def test_joint_state_errors_name_missing_joints():
    msg = messages.joint_state_msg(NAMES[:7], np.zeros(7), 0.0)
    with pytest.raises(ValueError, match=r"lacks joints \['right_joint1'"):
        messages.joint_state_to_array(msg, NAMES)
    with pytest.raises(ValueError, match="needs 14 positions"):
        messages.joint_state_msg(NAMES, np.zeros(3), 0.0)

# --------------------------------------------------------------------------- chunks


def test_chunk_round_trip_and_times():
    chunk = np.random.default_rng(1).normal(size=(50, 14))
    msg = messages.chunk_to_msg(chunk, NAMES, 7.0, 0.06)
    assert len(msg.points) == 50
    assert messages.stamp_to_sec(msg.points[0].time_from_start) == pytest.approx(0.06)
    assert messages.stamp_to_sec(msg.points[49].time_from_start) == pytest.approx(3.0)
    assert messages.stamp_to_sec(msg.header.stamp) == 7.0
    np.testing.assert_array_equal(messages.msg_to_chunk(msg, NAMES), chunk)


def test_chunk_with_permuted_joint_names_is_reordered():
    chunk = np.arange(2 * 14, dtype=float).reshape(2, 14)
    perm = np.random.default_rng(2).permutation(14)
    msg = messages.chunk_to_msg(chunk[:, perm], [NAMES[i] for i in perm], 0.0, 0.1)
    np.testing.assert_array_equal(messages.msg_to_chunk(msg, NAMES), chunk)


def test_chunk_errors_are_clear():
    good = messages.chunk_to_msg(np.zeros((3, 14)), NAMES, 0.0, 0.1)
    empty = messages.chunk_to_msg(np.zeros((3, 14)), NAMES, 0.0, 0.1)
    empty.points = []
    with pytest.raises(ValueError, match=r"empty action chunk.*shape \[H, 14\]"):
        messages.msg_to_chunk(empty, NAMES)
    seven = messages.chunk_to_msg(np.zeros((3, 7)), NAMES[:7], 0.0, 0.1)
    with pytest.raises(ValueError, match=r"expected an action chunk of shape \[H, 14\]"):
        messages.msg_to_chunk(seven, NAMES)
    renamed = messages.chunk_to_msg(np.zeros((3, 14)), NAMES[:13] + ["bogus"], 0.0, 0.1)
    with pytest.raises(ValueError, match=r"unknown: \['bogus'\]"):
        messages.msg_to_chunk(renamed, NAMES)
    good.points[1].positions = good.points[1].positions[:5]
    with pytest.raises(ValueError, match="point 1 has 5 positions"):
        messages.msg_to_chunk(good, NAMES)
    nan = messages.chunk_to_msg(np.zeros((3, 14)), NAMES, 0.0, 0.1)
    nan.points[2].positions[13] = float("nan")
    with pytest.raises(ValueError, match="non-finite.*step 2, joint 'right_gripper'"):
        messages.msg_to_chunk(nan, NAMES)
    with pytest.raises(ValueError, match=r"shape \[H, 14\]"):
        messages.chunk_to_msg(np.zeros(14), NAMES, 0.0, 0.1)
    with pytest.raises(ValueError, match="non-finite"):
        messages.chunk_to_msg(np.full((2, 14), np.inf), NAMES, 0.0, 0.1)

# ---------------------------------------------------------------------- world state


def _world():
    objects = {
        "yellow_block": ObjectState("yellow_block", np.array([0.1, 0.2, 0.76]),
                                    np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.04, 0.04, 0.04]),
                                    np.array([1.0, 1.0, 0.0, 1.0]), "box"),
        "ball": ObjectState("ball", np.array([-0.1, 0.3, 0.77]),
                            np.array([0.7071, 0.0, 0.7071, 0.0]), np.array([0.05, 0.05, 0.05]),
                            np.array([0.0, 0.0, 1.0, 1.0]), "sphere"),
        "cup": ObjectState("cup", np.array([0.0, 0.4, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]),
                           np.array([0.08, 0.08, 0.1]), shape="cylinder"),
        "mug": ObjectState("mug", np.array([0.2, 0.4, 0.8]), np.array([1.0, 0.0, 0.0, 0.0]),
                           np.array([0.1, 0.08, 0.1]), shape="mesh"),
    }
    tcp = {"left": TcpState(np.array([-0.3, 0.0, 1.0]), np.array([0.0, 0.0, 1.0, 0.0])),
           "right": TcpState(np.array([0.3, 0.0, 1.0]), np.array([1.0, 0.0, 0.0, 0.0]))}
    return WorldState(stamp=4.2, objects=objects, tcp=tcp)


def test_world_state_round_trip():
    world = _world()
    msg = messages.world_state_to_msg(world, "world")
    adds = [m for m in msg.markers if m.action == Marker.ADD]
    assert [m.ns for m in adds] == ["objects"] * 4 + ["tcp"] * 2
    assert [m.type for m in adds[:3]] == [Marker.CUBE, Marker.SPHERE, Marker.CYLINDER]
    assert adds[0].text == "yellow_block" and adds[0].header.frame_id == "world"
    assert adds[0].scale.x == pytest.approx(0.04)
    back = messages.msg_to_world_state(msg)
    assert back.stamp == pytest.approx(4.2)
    assert list(back.objects) == list(world.objects)
    for name, obj in world.objects.items():
        got = back.objects[name]
        for field in ("pos", "quat", "size", "rgba"):
            np.testing.assert_allclose(getattr(got, field), getattr(obj, field))
        assert got.shape == obj.shape
    for arm, tcp in world.tcp.items():
        np.testing.assert_allclose(back.tcp[arm].pos, tcp.pos)
        np.testing.assert_allclose(back.tcp[arm].quat, tcp.quat)


def test_world_state_carries_camera_poses_when_the_sim_publishes_them():
    """LIBERO's cameras are placed by the sim, not our kinematics: their poses ride in the
    world state's `cameras` namespace, through the full and the per-tick fast path."""
    world = _world()
    world.cameras = {"cam_high": CameraPose(np.array([0.66, 0.0, 1.61]),
                                            np.array([0.5, 0.5, 0.5, 0.5]))}
    msg = messages.world_state_to_msg(world)
    assert [m.ns for m in msg.markers if m.action == Marker.ADD][-1] == "cameras"
    back = messages.msg_to_world_state(msg)
    np.testing.assert_allclose(back.cameras["cam_high"].pos, [0.66, 0.0, 1.61])
    np.testing.assert_allclose(back.cameras["cam_high"].quat, [0.5, 0.5, 0.5, 0.5])
    world.cameras["cam_high"] = CameraPose(np.array([0.7, 0.1, 1.5]), np.array([1.0, 0, 0, 0]))
    world.stamp = 5.0
    again = messages.msg_to_world_state(messages.refresh_world_state_msg(msg, world))
    np.testing.assert_allclose(again.cameras["cam_high"].pos, [0.7, 0.1, 1.5])
    assert again.stamp == pytest.approx(5.0)
    assert messages.msg_to_world_state(messages.world_state_to_msg(_world())).cameras == {}


def test_world_state_unknown_shape():
    world = _world()
    world.objects["ball"].shape = "blob"
    with pytest.raises(ValueError, match="unknown shape 'blob'"):
        messages.world_state_to_msg(world)

# ----------------------------------------------------------------------------- JSON


def test_json_round_trip_and_errors():
    payload = {"kind": "begin", "episode": "e1", "seed": 3, "task": {"id": "x"}}
    assert messages.parse_json_msg(messages.json_msg(payload)) == payload
    with pytest.raises(ValueError, match="not JSON"):
        messages.parse_json_msg(String(data="{nope"))
    with pytest.raises(ValueError, match="expected a JSON object"):
        messages.parse_json_msg(String(data="[1, 2]"))
    with pytest.raises(ValueError):
        messages.json_msg({"x": float("nan")})


def test_frames_round_trip_in_batches():
    from vla_bridge.embodiment.world import ObjectState, TcpState, WorldState
    world = WorldState(stamp=0.0, tcp={"left": TcpState(np.array([0.1, 0.2, 0.9]), np.array([1.0, 0, 0, 0])),
                                       "right": TcpState(np.array([-0.1, 0.2, 0.9]), np.array([0, 1.0, 0, 0]))},
                       objects={"cube": ObjectState("cube", np.array([0.0, -0.1, 0.76]),
                                                    np.array([0.7071, 0, 0, 0.7071]), np.full(3, 0.04))})
    command = np.arange(14, dtype=float) / 10
    fields = messages.frame_fields(14, world)
    assert [f[0] for f in fields] == ["stamp", "command", "tcp:left", "tcp:right", "obj:cube"]
    rows = np.array([messages.frame_row(3.25, command, world), messages.frame_row(3.31, command * 2, world)])
    frames = messages.parse_frames(messages.frames_msg(rows, fields))
    assert [f[0] for f in frames] == [3.25, 3.31]
    assert np.array_equal(frames[1][1], command * 2)
    assert np.array_equal(frames[0][2].tcp["right"].quat, [0, 1.0, 0, 0])
    assert np.array_equal(frames[1][2].objects["cube"].pos, [0.0, -0.1, 0.76])


def test_frames_with_inconsistent_layout_are_rejected():
    from vla_bridge.embodiment.world import WorldState
    world = WorldState(0.0, {}, {})
    fields = messages.frame_fields(14, world)
    with pytest.raises(ValueError, match="fields describe 15"):
        messages.frames_msg(np.zeros((2, 14)), fields)
    msg = messages.frames_msg(np.zeros((2, 15)), fields)
    msg.data = msg.data[:-1]
    with pytest.raises(ValueError, match="describes 2 x 15"):
        messages.parse_frames(msg)


def _sim_frames(embodiment, published: list[int]):
    """A sim's frames message (state and published fields) of len(published) ticks, and the
    tick messages the sim builds for each tick."""
    from vla_bridge import contract as C
    from vla_bridge.embodiment.world import TcpState, WorldState
    world = WorldState(0.0, {}, {"left": TcpState(np.array([0.1, 0.2, 0.9]), np.array([1.0, 0, 0, 0]))})
    fields = messages.frame_fields(embodiment.action_dim, world, embodiment)
    rows, built = [], []
    for k, bits in enumerate(published):
        t = 3.0 + 0.06 * k
        state = np.linspace(-1, 1, embodiment.state_dim) * (k + 1) / 3
        command = np.linspace(0, 1, embodiment.action_dim) + k
        rows.append(messages.frame_row(t, command, world, state, bits))
        built.append({C.TOPIC_CLOCK: messages.clock_msg(t),
                      C.TOPIC_JOINT_STATES: messages.joint_state_msg(embodiment.state_names, state, t),
                      C.TOPIC_JOINT_COMMANDS: messages.joint_state_msg(embodiment.action_names,
                                                                       command, t)})
    return messages.frames_msg(np.array(rows), fields), built


@pytest.mark.parametrize("name", ["aloha_piper", "libero_panda"])
def test_the_ticks_a_sim_did_not_publish_are_rebuilt_from_its_frames_as_the_sim_builds_them(name):
    """#26: the recorder writes what the sim would have sent (the same messages), for the
    ticks and topics the rows mark unpublished, in tick order; the scorer's parse is
    unchanged by the extra fields."""
    from rclpy.serialization import serialize_message

    from vla_bridge import contract as C
    from vla_bridge.ros import tick_frames
    embodiment = C.get_embodiment(name)
    bits = C.TICK_TOPIC_BITS
    published = [0, bits[C.TOPIC_CLOCK], bits[C.TOPIC_JOINT_STATES] | bits[C.TOPIC_JOINT_COMMANDS], 7]
    msg, built = _sim_frames(embodiment, published)
    expected = [(topic, built[k][topic]) for k, flags in enumerate(published)
                for topic in (C.TOPIC_CLOCK, C.TOPIC_JOINT_STATES, C.TOPIC_JOINT_COMMANDS)
                if not flags & bits[topic]]
    rebuilt = tick_frames.unpublished_ticks(msg)
    assert [topic for topic, _, _ in rebuilt] == [topic for topic, _ in expected]
    assert [serialize_message(m) for _, _, m in rebuilt] == [serialize_message(m) for _, m in expected]
    assert [round(t, 2) for t, _, _ in messages.parse_frames(msg)] == [3.0, 3.06, 3.12, 3.18]
    assert len(messages.parse_frames(msg)[0][1]) == embodiment.action_dim


def test_frames_that_cannot_be_expanded_say_why():
    from vla_bridge import contract as C
    from vla_bridge.ros import tick_frames
    from vla_bridge.embodiment.world import WorldState
    robot = messages.frames_msg(np.zeros((2, 15)), messages.frame_fields(14, WorldState(0.0, {}, {})))
    assert tick_frames.unpublished_ticks(robot) == []  # a robot node's rows: no state, nothing to rebuild
    msg, _ = _sim_frames(C.ALOHA_PIPER, [0, 0])
    unknown = messages.frames_msg(np.frombuffer(msg.data).reshape(2, -1), [
        (d.label.replace("aloha_piper", "nobody"), d.size) for d in msg.layout.dim[1:]])
    with pytest.raises(ValueError, match="unknown embodiment 'nobody'"):
        tick_frames.unpublished_ticks(unknown)
    rows = np.frombuffer(msg.data).reshape(2, -1).copy()
    rows[1, 1 + 14 + 14] = 9.5  # the published field
    junk = messages.frames_msg(rows, [(d.label, d.size) for d in msg.layout.dim[1:]])
    with pytest.raises(ValueError, match="published field holds"):
        tick_frames.unpublished_ticks(junk)
    narrow = messages.frames_msg(np.zeros((1, 1 + 7 + 8 + 1)), [
        ("stamp", 1), ("command", 7), ("state:aloha_piper", 8), ("published", 1)])
    with pytest.raises(ValueError, match="carry 8 joints and a 7-D command"):
        tick_frames.unpublished_ticks(narrow)
