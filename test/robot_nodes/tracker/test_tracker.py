"""Marker tracker: ArUco markers drawn with OpenCV at known world poses into synthetic images with
known intrinsics (support/marker_scenes.py); the table calibration and the object poses must
come back within tolerance.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from vla_bridge.embodiment.kinematics import PiperKinematics, quat_to_mat
from vla_bridge.robot_nodes.tracker.tracker import (CalibrationError, MarkerTracker, TableCalibration,
                                            TrackerConfig, contract_vector, tcp_states)
from vla_bridge.benchmarks.robofollow.scenes import load_scene
from vla_bridge.embodiment.workcell import MOUNTS, TABLE_TOP_Z, home_command

from support.marker_scenes import EYE, INTR, WORLD_FROM_CAMERA, layout_poses, pose, render_scene


@pytest.fixture(scope="module")
def config():
    return TrackerConfig.load()


def rotation_deg(Ra, Rb) -> float:
    return float(np.rad2deg(np.arccos(np.clip((np.trace(Ra.T @ Rb) - 1) / 2, -1, 1))))

# ---------------------------------------------------------------------------------- tests


def test_config_names_are_robofollow_scene1_objects(config):
    assert set(config.object_names()) == set(load_scene("scene1").objects)
    assert len(config.board) == 4 and config.min_board_markers == 2


def test_table_calibration_recovers_the_camera_pose(config):
    tracker = MarkerTracker(config)
    image = render_scene(config, {})
    detections = tracker.detect(image)
    assert sorted(d.id for d in detections) == sorted(config.board)
    calib = tracker.calibrate(detections, INTR)
    assert calib.markers == sorted(config.board) and calib.rms_px < 0.5
    assert np.linalg.norm(calib.world_from_camera[:3, 3] - EYE) < 0.005  # 5 mm
    assert rotation_deg(calib.world_from_camera[:3, :3], WORLD_FROM_CAMERA[:3, :3]) < 0.3


@pytest.mark.parametrize("yaw_deg, refinement, tolerance_m", [
    (0.0, "subpix", 0.015), (30.0, "subpix", 0.015),
    (30.0, "apriltag", 0.005),  # ~4x more accurate, ~50x slower (0.4 s a frame here)
])
def test_object_poses_are_recovered_in_the_world_frame(config, yaw_deg, refinement, tolerance_m):
    tracker = MarkerTracker(TrackerConfig(**{**config.__dict__, "corner_refinement": refinement}))
    truth = layout_poses(config, yaw_deg)
    truth["yellow_block_3"] = pose(0.15, -0.27, TABLE_TOP_Z + 0.10, yaw_deg)  # lifted 8 cm
    image = render_scene(config, truth)
    detections = tracker.detect(image)
    calib = tracker.calibrate(detections, INTR)
    found = tracker.locate(detections, INTR, calib, stamp=1.0)
    assert set(found) == set(truth)
    for name, T in truth.items():
        err = np.linalg.norm(found[name].pos - T[:3, 3])
        assert err < tolerance_m, f"{name}: {err * 1000:.1f} mm"  # ~0.9 m from the camera
        R = quat_to_mat(found[name].quat)
        assert R[2, 2] > 0.99  # upright: the marker normal points up
        yaw = np.rad2deg(np.arctan2(R[1, 0], R[0, 0]))
        assert abs(yaw - yaw_deg) < 3.0, f"{name}: yaw {yaw:.1f}"
    assert found["yellow_block_3"].size.tolist() == [0.04, 0.04, 0.04]
    assert found["red_cylinder"].shape == "cylinder"


def test_calibration_from_a_single_board_marker_and_its_limits(config):
    tracker = MarkerTracker(config)
    one = tracker.detect(render_scene(config, {}, board_ids={21}))
    with pytest.raises(CalibrationError, match="1 of the board's markers"):
        tracker.calibrate(one, INTR)
    relaxed = MarkerTracker(TrackerConfig(**{**config.__dict__, "min_board_markers": 1}))
    calib = relaxed.calibrate(one, INTR)
    assert np.linalg.norm(calib.world_from_camera[:3, 3] - EYE) < 0.03
    # a board glued elsewhere than the config says: the fit is inconsistent and refused
    moved = dict(config.board)
    moved[20] = type(moved[20])(20, moved[20].center + [0.05, 0.0, 0.0], moved[20].yaw)
    wrong = MarkerTracker(TrackerConfig(**{**config.__dict__, "board": moved}))
    with pytest.raises(CalibrationError, match="RMS"):
        wrong.calibrate(tracker.detect(render_scene(config, {})), INTR)


def test_calibration_file_round_trip(tmp_path):
    calib = TableCalibration(WORLD_FROM_CAMERA, 0.21, [20, 21])
    calib.save(tmp_path / "cal.yaml", camera="cam_high")
    back = TableCalibration.load(tmp_path / "cal.yaml")
    np.testing.assert_allclose(back.world_from_camera, WORLD_FROM_CAMERA, atol=1e-8)
    assert back.markers == [20, 21] and back.rms_px == 0.21


def test_tcp_states_are_forward_kinematics_in_the_world(config):
    q = home_command()
    q[0], q[8] = 0.3, -0.2
    tcp = tcp_states(q)
    kin = PiperKinematics()
    for arm, sl in (("left", slice(0, 6)), ("right", slice(7, 13))):
        T = MOUNTS[arm].world_from_base() @ kin.tcp(q[sl])
        np.testing.assert_allclose(tcp[arm].pos, T[:3, 3], atol=1e-12)
        np.testing.assert_allclose(quat_to_mat(tcp[arm].quat), T[:3, :3], atol=1e-9)
    # a one-arm joint state: the other arm stays at home
    right = contract_vector([f"right_joint{i}" for i in range(1, 7)] + ["right_gripper"],
                            [0.1] * 6 + [0.0])
    assert right[7:13].tolist() == [0.1] * 6 and right[13] == 0.0
    np.testing.assert_array_equal(right[:7], home_command()[:7])

# ------------------------------------------------------------------- the node's episode relay


def test_tracker_node_relays_the_robot_episode_with_its_frames(tmp_path):
    """The robot's minimal status becomes the evaluator's full protocol: a `ready` that arrives
    before its `begin` is kept, every joint command is a frame, `done` counts the frames, a
    robot that stops making progress fails the episode."""
    import rclpy
    from rclpy.parameter import Parameter
    from std_msgs.msg import String

    from vla_bridge import contract as C
    from vla_bridge.ros import messages
    from vla_bridge.robot_nodes.tracker.tracker_node import TrackerNode

    objects = tmp_path / "objects.yaml"  # a board but no objects: no calibration needed
    objects.write_text(yaml.safe_dump({"board": {"marker_length_m": 0.08, "markers": {}}}))
    rclpy.init()
    try:
        node = TrackerNode(parameter_overrides=[Parameter("objects_file", value=str(objects)),
                                                Parameter("stall_timeout_s", value=0.2)])
        sent, frames = [], []
        node.status = lambda kind, **fields: sent.append((kind, fields))
        node.pub_frames.publish = frames.append

        def robot(kind, episode="e1", **fields):
            node.on_robot_status(messages.json_msg({"kind": kind, "episode": episode, **fields}))

        def command(t):
            node.on_command(messages.joint_state_msg(C.JOINT_NAMES, home_command(), t))

        command(10.0)
        robot("ready")  # before the begin it answers
        assert sent == []
        node.on_control(String(data=json.dumps({"kind": "begin", "episode": "e1",
                                                "task": {"source": None}})))
        assert sent == [("ready", {"tick": 0, "stamp": 10.0})]
        # the evaluator asks again (its begin or our ready was late): the same ready once
        # more, the recording not restarted (one frame 0)
        node.on_control(String(data=json.dumps({"kind": "begin", "episode": "e1",
                                                "task": {"source": None}})))
        robot("ready")
        assert sent == [("ready", {"tick": 0, "stamp": 10.0})] * 2 and len(frames) == 1
        sent.pop()
        for t in (10.02, 10.04, 10.04, 10.06):  # a repeated stamp is not a new tick
            command(t)
        robot("chunk_done", calls=1)
        robot("done", calls=1, reason="policy-call budget spent")
        assert sent[1:] == [("chunk_done", {"tick": 3, "calls": 1}),
                            ("done", {"ticks": 3, "calls": 1,
                                      "reason": "policy-call budget spent"})]
        rows = [row for msg in frames for row in messages.parse_frames(msg)]
        assert [r[0] for r in rows] == [10.0, 10.02, 10.04, 10.06]
        assert set(rows[0][2].tcp) == {"left", "right"}

        # a robot that goes quiet mid-episode: the episode fails instead of hanging
        node.on_control(String(data=json.dumps({"kind": "begin", "episode": "e2", "task": {}})))
        robot("ready", episode="e2")
        node.robot_progress -= 1.0
        node.check_stall()
        assert sent[-1][0] == "error" and "no progress" in sent[-1][1]["message"]

        # the robot is ready before the tracker is (here: no joint command heard yet; on a
        # real start, the cameras' first board view): wait for it, up to ready_wait_s
        def episode(name):
            node.on_control(String(data=json.dumps({"kind": "begin", "episode": name,
                                                    "task": {}})))
            node.command, heard = None, len(sent)
            robot("ready", episode=name)
            node.retry_ready()
            return heard

        heard = episode("e3")
        assert len(sent) == heard  # not yet
        command(20.0)
        node.retry_ready()
        assert sent[heard:] == [("ready", {"tick": 0, "stamp": 20.0})]
        node.p["ready_wait_s"] = 0.0
        heard = episode("e4")
        assert sent[heard:] == [("error", {"message": "no /joint_commands from the robot node yet"})]
        node.destroy_node()
    finally:
        rclpy.shutdown()
