"""Fake hardware without cameras: the realsense node's synthetic source (MuJoCo renders of the
workcell at the joint states) on the contract's camera topics, how the source is chosen, and
that the marker tracker calibrates and finds the objects in those renders."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.embodiment.cameras import default_cameras
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.robot_nodes.realsense import realsense_io as rio
from vla_bridge.robot_nodes.tracker.tracker import MarkerTracker, TrackerConfig

SERIALS = {"cam_high": "1", "cam_left_wrist": "2", "cam_right_wrist": "3"}

# ------------------------------------------------------------------ choosing the source


def test_fake_hardware_without_serials_or_recordings_gets_synthetic_cameras():
    plan = rio.plan_sources
    assert plan("auto", C.ALOHA_PIPER.camera_names, {}, {}, fake_hardware=True) == ("synthetic", {})
    # serials or recordings win on fake hardware too
    assert plan("auto", C.ALOHA_PIPER.camera_names, SERIALS, {}, fake_hardware=True) == ("pipelines", {})
    files = {c: f"/rec/{c}.db3" for c in C.ALOHA_PIPER.camera_names}
    assert plan("auto", C.ALOHA_PIPER.camera_names, {}, files, fake_hardware=True) == ("pipelines", files)
    # chosen explicitly, whatever else is configured
    assert plan("synthetic", C.ALOHA_PIPER.camera_names, SERIALS, files, fake_hardware=False)[0] == "synthetic"
    assert plan("devices", C.ALOHA_PIPER.camera_names, SERIALS, files, fake_hardware=True) == ("pipelines", {})
    with pytest.raises(ValueError, match=r"no recording for \['cam_right_wrist'\]"):
        plan("playback", C.ALOHA_PIPER.camera_names, {}, {c: files[c] for c in C.ALOHA_PIPER.camera_names[:2]}, False)
    with pytest.raises(ValueError, match="source must be one of"):
        plan("webcam", C.ALOHA_PIPER.camera_names, {}, {}, False)


def test_real_hardware_without_serials_fails_saying_how_to_give_serials_or_recordings():
    with pytest.raises(ValueError) as err:
        rio.plan_sources("auto", C.ALOHA_PIPER.camera_names, {}, {}, fake_hardware=False)
    text = str(err.value)
    assert text.startswith("no camera serial numbers and no recordings")
    assert "serials:='cam_high:SERIAL" in text and "camera_serials" in text
    assert "playback_dir:=DIR" in text and "camera_playback_dir" in text
    assert "\n" not in text  # one line
    with pytest.raises(ValueError, match=r"cameras \['cam_right_wrist'\] have no serial"):
        rio.plan_sources("devices", C.ALOHA_PIPER.camera_names, {c: SERIALS[c] for c in C.ALOHA_PIPER.camera_names[:2]}, {}, True)
    # one camera without a serial: the only connected device, as before
    assert rio.plan_sources("auto", ("cam_high",), {}, {}, False) == ("pipelines", {})

# ------------------------------------------------------------------ the renders


@pytest.fixture(scope="module")
def workcell():
    from vla_bridge.robot_nodes.realsense.synthetic_cameras import SyntheticWorkcell

    cell = SyntheticWorkcell()
    yield cell
    cell.close()


def test_the_tracker_calibrates_and_finds_the_objects_in_the_renders(workcell):
    from vla_bridge.robot_nodes.realsense.synthetic_cameras import scene_layout

    config = TrackerConfig.load()
    tracker = MarkerTracker(config)
    workcell.set_joints(home_command())
    image = workcell.render("cam_high", 640, 480)
    assert image.shape == (480, 640, 3) and image.dtype == np.uint8
    intr = workcell.intrinsics("cam_high", 640, 480)
    detections = tracker.detect(image)
    assert set(config.board) <= {d.id for d in detections}
    calibration = tracker.calibrate(detections, intr)
    assert calibration.rms_px < 1.0
    eye = default_cameras()[0].pos  # cam_high, where embodiment/cameras.py mounts it
    np.testing.assert_allclose(calibration.world_from_camera[:3, 3], eye, atol=0.01)
    _, _, spawn, _ = scene_layout("scene1", "default")
    found = tracker.locate(detections, intr, calibration)
    assert len(found) >= 5, sorted(found)
    for name, obj in found.items():  # 3 cm markers at 640 x 480: ~1-2 cm (docs/real_hardware.md)
        assert np.linalg.norm(obj.pos - spawn[name]) < 0.035, (name, obj.pos, spawn[name])


def test_the_renders_follow_the_joint_states(workcell):
    home = home_command()
    workcell.set_joints(home)
    before = {c: workcell.render(c, 320, 240) for c in ("cam_high", "cam_left_wrist",
                                                         "cam_right_wrist")}
    moved = home.copy()
    moved[0] += 0.5  # left joint1: the left wrist camera turns, the right one doesn't
    workcell.set_joints(moved)
    after = {c: workcell.render(c, 320, 240) for c in before}
    changed = {c: float(np.mean(before[c] != after[c])) for c in before}
    assert changed["cam_left_wrist"] > 0.2 and changed["cam_right_wrist"] == 0.0
    assert 0.0 < changed["cam_high"] < 0.5  # the left arm moved in the head camera's view

# ------------------------------------------------------------------ the node


@pytest.mark.graph
def test_fake_hardware_node_without_cameras_publishes_synthetic_images(ros_context):
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import CameraInfo, Image, JointState

    from vla_bridge.robot_nodes.realsense.realsense_node import RealsenseNode
    from vla_bridge.ros import messages

    params = [Parameter("use_fake_hardware", value=True),  # no serials, no playback_dir
              Parameter("full_resolution_cameras", value="cam_high"),
              Parameter("synthetic_fps", value=20.0)]
    node = RealsenseNode(context=ros_context, parameter_overrides=params)
    probe = rclpy.create_node("synthetic_probe", context=ros_context)
    q = messages.qos_profile
    got: dict[str, list] = {}
    lock = threading.Lock()

    def keep(key):
        def callback(msg):
            with lock:
                got.setdefault(key, []).append(msg)
        return callback

    for cam in C.ALOHA_PIPER.camera_names:
        probe.create_subscription(Image, C.image_topic(cam), keep(cam), q(C.QOS_IMAGES))
    probe.create_subscription(CameraInfo, C.camera_info_topic("cam_high"), keep("info"),
                              q(C.QOS_IMAGES))
    probe.create_subscription(Image, C.full_image_topic("cam_high"), keep("full"),
                              q(C.QOS_LATEST))
    pub_joints = probe.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
    executor = MultiThreadedExecutor(num_threads=2, context=ros_context)
    executor.add_node(node)
    executor.add_node(probe)
    spinner = threading.Thread(target=executor.spin, daemon=True)
    spinner.start()

    def newest(key, after=0.0, timeout=20.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with lock:
                fresh = [m for m in got.get(key, [])
                         if messages.stamp_to_sec(m.header.stamp) > after]
            if fresh:
                return fresh[-1]
            time.sleep(0.05)
        raise AssertionError(f"no {key} image after {after}")

    try:
        assert node.source_kind == "synthetic" and node.sources == []
        for cam in C.ALOHA_PIPER.camera_names:  # the realsense node's contract topics, size and encoding
            msg = newest(cam)
            assert (msg.encoding, msg.width, msg.height) == (C.IMAGE_ENCODING, C.ALOHA_PIPER.image_size[0],
                                                             C.ALOHA_PIPER.image_size[1])
            assert msg.header.frame_id == cam
        full = newest("full")
        assert (full.encoding, full.width, full.height) == ("rgb8", 640, 480)
        info = newest("info")
        assert (info.width, info.height) == (C.ALOHA_PIPER.image_size[0], C.ALOHA_PIPER.image_size[1])
        assert info.k[0] == pytest.approx(0.5 * 240 / np.tan(np.deg2rad(22.5)), rel=1e-6)
        # the images follow the joint states on /joint_states (a one-arm message is enough)
        before = messages.msg_to_image(newest("cam_right_wrist")).copy()
        right = home_command()[7:]
        right[0] += 0.6
        t_sent = node.get_clock().now().nanoseconds * 1e-9
        deadline = time.monotonic() + 20.0
        changed = 0.0
        while changed < 0.2 and time.monotonic() < deadline:
            pub_joints.publish(messages.joint_state_msg(C.arm_joint_names("right"), right,
                                                        node.get_clock().now().nanoseconds * 1e-9))
            after = messages.msg_to_image(newest("cam_right_wrist", t_sent))
            changed = float(np.mean(after != before))
        assert changed > 0.2
    finally:
        node.close()
        executor.shutdown(timeout_sec=5.0)
        spinner.join(timeout=5.0)
        node.destroy_node()
        probe.destroy_node()
