"""RealSense node: recordings made with librealsense's own recorder from a software device, played
back through the node's pipeline code path onto the contract's camera topics.

The recordings are real librealsense files (rosbag2 .db3): a `rs.software_device` with a colour
(and depth) sensor is fed synthetic frames, `rs.recorder` writes them, and the node opens them
with `rs.config.enable_device_from_file`, exactly as it opens a device by serial number.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from vla_bridge import contract as C
from vla_bridge.robot_nodes.realsense import realsense_io as rio

try:
    rs = rio.import_pyrealsense2()  # after rclpy: see realsense_io's notes
except ImportError:
    pytest.skip("pyrealsense2 is not installed", allow_module_level=True)

from support.realsense_recordings import FX, PPY, H, W, pattern, record_synthetic  # noqa: E402


class _Log:
    def __init__(self):
        self.lines = []

    def warning(self, text):
        self.lines.append(text)

    info = error = warning


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    root = tmp_path_factory.mktemp("rs")
    files = {}
    for seed, cam in enumerate(C.ALOHA_PIPER.camera_names, 1):
        images = [pattern(i, seed) for i in range(12)]
        depth = [np.full((H, W), 500 + 10 * i, np.uint16) for i in range(12)] if seed == 1 else None
        files[cam] = record_synthetic(root / f"{cam}.db3", images, f"90000000000{seed}", depth)
    return root, files

# ------------------------------------------------------------------------- pure helpers


def test_recording_plays_back_through_a_plain_pipeline(recordings):
    """The file is a real librealsense recording: serial, intrinsics and pixels survive."""
    _, files = recordings
    pipe = rs.pipeline()
    cfg = rio.pipeline_config(rio.CameraSource("cam_high", playback_file=str(files["cam_high"]),
                                               depth=True, repeat_playback=False))
    profile = pipe.start(cfg)
    try:
        device = profile.get_device()
        device.as_playback().set_real_time(False)
        assert device.get_info(rs.camera_info.serial_number) == "900000000001"
        intr = rio.Intrinsics.from_rs(profile.get_stream(rs.stream.color)
                                      .as_video_stream_profile().get_intrinsics())
        assert (intr.width, intr.height, intr.fx, intr.ppy) == (W, H, FX, PPY)
        assert intr.model == "brown_conrady" and intr.coeffs[0] == pytest.approx(0.05)
        frames = pipe.wait_for_frames(2000)
        colour = rio.frame_to_array(frames.get_color_frame())
        number = frames.get_color_frame().get_frame_number()
        np.testing.assert_array_equal(colour, pattern(number, 1))
        assert rio.frame_to_array(frames.get_depth_frame()).dtype == np.uint16
    finally:
        pipe.stop()


def test_intrinsics_to_camera_info_and_back():
    intr = rio.Intrinsics(640, 480, 600.0, 601.0, 319.5, 239.5, "brown_conrady",
                          (0.05, -0.01, 0.001, 0.0, 0.002))
    msg = rio.camera_info_msg(intr, 12.5, "cam_high")
    assert msg.distortion_model == "plumb_bob" and list(msg.d) == pytest.approx(intr.coeffs)
    assert list(msg.k) == [600.0, 0.0, 319.5, 0.0, 601.0, 239.5, 0.0, 0.0, 1.0]
    assert msg.p[0] == 600.0 and msg.p[6] == 239.5 and msg.header.stamp.sec == 12
    assert rio.intrinsics_from_camera_info(msg) == intr
    half = intr.scaled(320, 240)  # pixel centres: (c + 0.5) * s - 0.5
    assert (half.fx, half.fy, half.ppx, half.ppy) == pytest.approx((300.0, 300.5, 159.5, 119.5))


def test_camera_map_parsing_is_strict():
    assert rio.parse_camera_map("cam_high:1, cam_right_wrist:2") == {"cam_high": "1",
                                                                     "cam_right_wrist": "2"}
    assert rio.parse_camera_map("") == {}
    for bad, match in [("cam_top:1", "unknown camera"), ("cam_high", "CAMERA:VALUE"),
                       ("cam_high:1,cam_high:2", "twice")]:
        with pytest.raises(ValueError, match=match):
            rio.parse_camera_map(bad)


@pytest.mark.graph
def test_missing_device_is_retried_with_backoff_and_logged():
    """No such serial: start fails, is logged, retried after 0.1, 0.2, 0.4, 0.4 ... s."""
    from vla_bridge.robot_nodes.realsense.realsense_node import CameraWorker

    log = _Log()
    worker = CameraWorker(rio.CameraSource("cam_high", serial="000000000000"), lambda *a: None,
                          log, backoff=rio.Backoff(0.1, 0.4)).start()
    time.sleep(1.0)
    worker.stop()
    assert len(log.lines) >= 3 and worker.restarts == len(log.lines)
    assert "cam_high: cannot start the pipeline" in log.lines[0]
    assert [line.split("retrying in ")[1][:5] for line in log.lines[:3]] == \
        ["0.1 s", "0.2 s", "0.4 s"]

def test_a_stalled_camera_is_restarted_and_streams_again(recordings):
    """A camera that stops delivering (here: its recording paused, as an unplugged device
    stops) fails wait_for_frames; the worker logs it, restarts the pipeline, logs the recovery."""
    from vla_bridge.robot_nodes.realsense.realsense_node import CameraWorker

    _, files = recordings
    log, frames = _Log(), []
    worker = CameraWorker(rio.CameraSource("cam_left_wrist", playback_file=str(files["cam_left_wrist"])),
                          lambda cam, rgb, depth, intr: frames.append(rgb[0, 0].copy()), log,
                          wait_timeout_s=0.3, backoff=rio.Backoff(0.1, 0.4)).start()
    try:
        deadline = time.monotonic() + 5
        while len(frames) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        worker.playback.pause()  # the camera goes quiet
        deadline = time.monotonic() + 5
        while not any("streaming again" in line for line in log.lines) \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        before = len(frames)
        time.sleep(0.3)
        assert len(frames) > before, log.lines  # frames flow again
    finally:
        worker.stop()
    assert "cam_left_wrist: pipeline error" in log.lines[0]
    assert "no frame within 300 ms" in log.lines[0] and "retrying in 0.1 s" in log.lines[0]
    assert any("cam_left_wrist: streaming again" in line for line in log.lines)
    assert worker.restarts == 1


# ---------------------------------------------------------------- the node on real topics


def _spin(executor, stop):
    while not stop.is_set():
        executor.spin_once(timeout_sec=0.02)


@pytest.fixture
def ros():
    import rclpy

    rclpy.init()
    yield rclpy
    rclpy.shutdown()


@pytest.mark.graph
def test_node_plays_recordings_on_the_contract_topics(recordings, ros):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import CameraInfo, Image, JointState
    from std_msgs.msg import String
    from trajectory_msgs.msg import JointTrajectory
    from vla_bridge.robot_nodes.realsense.realsense_node import RealsenseNode

    from vla_bridge.ros import messages

    root, _ = recordings
    params = [Parameter("playback_dir", value=str(root)),
              Parameter("serials", value="cam_high:900000000001"),
              Parameter("enable_depth", value=True),
              Parameter("observe_on_episode", value=True),
              Parameter("full_resolution_cameras", value="cam_high"),
              Parameter("playback_real_time", value=True)]
    node = RealsenseNode(parameter_overrides=params)
    probe = ros.create_node("rs_probe")
    q = messages.qos_profile
    got = {"image": {}, "info": {}, "depth": [], "full": [], "joints": []}
    lock = threading.Lock()

    def keep(kind, cam):
        def callback(msg):
            with lock:
                got[kind].setdefault(cam, []).append(msg)
        return callback

    for cam in C.ALOHA_PIPER.camera_names:
        probe.create_subscription(Image, C.image_topic(cam), keep("image", cam), q(C.QOS_IMAGES))
        probe.create_subscription(CameraInfo, C.camera_info_topic(cam), keep("info", cam),
                                  q(C.QOS_IMAGES))
    probe.create_subscription(Image, C.depth_image_topic("cam_high"),
                              lambda m: got["depth"].append(m), q(C.QOS_IMAGES))
    probe.create_subscription(Image, C.full_image_topic("cam_high"),
                              lambda m: got["full"].append(m), q(C.QOS_LATEST))
    probe.create_subscription(JointState, C.TOPIC_JOINT_STATES,
                              lambda m: got["joints"].append(m), q(C.QOS_STATE))
    pub_joints = probe.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
    pub_control = probe.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
    pub_status = probe.create_publisher(String, C.TOPIC_EPISODE_STATUS, q(C.QOS_EVENTS))
    pub_chunk = probe.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK, q(C.QOS_COMMAND))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    executor.add_node(probe)
    stop = threading.Event()
    spinner = threading.Thread(target=_spin, args=(executor, stop), daemon=True)
    spinner.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with lock:
                if all(len(got["image"].get(c, [])) >= 5 for c in C.ALOHA_PIPER.camera_names) and got["depth"] \
                        and got["full"]:
                    break
            time.sleep(0.05)
        with lock:
            counts = {c: len(got["image"].get(c, [])) for c in C.ALOHA_PIPER.camera_names}
        assert all(n >= 5 for n in counts.values()), counts
        for seed, cam in enumerate(C.ALOHA_PIPER.camera_names, 1):
            msg = got["image"][cam][-1]
            assert (msg.encoding, msg.width, msg.height) == ("rgb8", C.ALOHA_PIPER.image_size[0], C.ALOHA_PIPER.image_size[1])
            assert msg.header.frame_id == cam
            img = messages.msg_to_image(msg)
            # the camera's colour block (top-left quarter) survives the 640 -> 320 resize
            assert img[10:100, 10:140, 2].mean() == pytest.approx(40 * seed, abs=2)
            info = got["info"][cam][-1]
            assert (info.width, info.height, info.distortion_model) == (320, 240, "plumb_bob")
            assert list(info.k) == pytest.approx([300.0, 0, 159.5, 0, 300.5, 119.5, 0, 0, 1])
            assert list(info.d) == pytest.approx([0.05, -0.01, 0.001, 0.0, 0.002])
        full = got["full"][-1]  # the tracker's view: the stream's own size
        assert (full.encoding, full.width, full.height) == ("rgb8", W, H)
        np.testing.assert_array_equal(messages.msg_to_image(full)[:, :, :2], pattern(0, 1)[:, :, :2])
        depth = got["depth"][-1]
        assert depth.encoding == "16UC1" and (depth.width, depth.height) == (320, 240)
        assert 500 <= int(messages.msg_to_image(depth)[120, 160]) <= 610

        # an observation: newest frames stamped with the newest joint state, on start (here
        # before any joint state arrived: it goes out as soon as one does)
        pub_control.publish(messages.json_msg({"kind": "begin", "episode": "e1",
                                             "max_policy_calls": 2}))
        pub_control.publish(messages.json_msg({"kind": "start", "episode": "e1"}))
        time.sleep(0.3)
        assert node.observations == 0 and node.pending is not None
        joint = messages.joint_state_msg(C.ALOHA_PIPER.action_names, np.zeros(14), 1234.5)
        want = messages.stamp_ns(joint.header.stamp)
        pub_joints.publish(joint)

        def count(kind):
            with lock:
                if kind == "joints":
                    return sum(messages.stamp_ns(m.header.stamp) == want for m in got["joints"])
                return {c: sum(messages.stamp_ns(m.header.stamp) == want for m in got["image"][c])
                        for c in C.ALOHA_PIPER.camera_names}

        def wait_for(condition, timeout=5.0):
            deadline = time.monotonic() + timeout
            while not condition() and time.monotonic() < deadline:
                time.sleep(0.02)

        wait_for(lambda: node.observations == 1 and count("joints") >= 4)
        assert count("image") == {c: 1 for c in C.ALOHA_PIPER.camera_names}
        # its joint state is repeated (ours, the observation's, resends) until the policy's
        # chunk answers the stamp
        chunk = messages.chunk_to_msg(np.zeros((2, 14)), C.ALOHA_PIPER.action_names, 0.0, 0.06)
        chunk.header.stamp = joint.header.stamp
        pub_chunk.publish(chunk)
        wait_for(lambda: node.unanswered is None)
        time.sleep(0.1)
        settled = count("joints")
        time.sleep(0.3)
        assert count("joints") == settled
        # the next call's observation after the first chunk_done; none after the last one's
        pub_status.publish(messages.json_msg({"kind": "chunk_done", "episode": "e1", "calls": 1}))
        pub_status.publish(messages.json_msg({"kind": "chunk_done", "episode": "e1", "calls": 2}))
        wait_for(lambda: all(n >= 2 for n in count("image").values()))
        time.sleep(0.3)
        assert count("image") == {c: 2 for c in C.ALOHA_PIPER.camera_names} and node.observations == 2
        pub_control.publish(messages.json_msg({"kind": "end", "episode": "e1"}))
        wait_for(lambda: node.unanswered is None)
    finally:
        stop.set()
        spinner.join()
        node.close()
        executor.shutdown()
        node.destroy_node()
        probe.destroy_node()
