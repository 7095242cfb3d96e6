"""Marker tracker: ArUco markers drawn with OpenCV at known world poses into synthetic images with
known intrinsics (support/marker_scenes.py); the table calibration and the object poses must
come back within tolerance.
"""
from __future__ import annotations

import numpy as np
import pytest

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


def test_config_names_are_robofollow_scene_objects(config):
    names = set(config.object_names())
    assert set(load_scene("scene1").objects) <= names
    scene2 = load_scene("scene2")
    assert set(scene2.objects) | set(scene2.fixtures) <= names  # INT-ACT's probe tables
    assert len(config.board) == 4 and config.min_board_markers == 2


def test_an_upright_objects_marker_pose_is_levelled_with_its_yaw_kept():
    from vla_bridge.robot_nodes.tracker.tracker import level
    yaw, tilt = np.deg2rad(30.0), np.deg2rad(8.0)
    Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
    Rx = np.array([[1, 0, 0], [0, np.cos(tilt), -np.sin(tilt)], [0, np.sin(tilt), np.cos(tilt)]])
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = Rz @ Rx, (0.1, -0.2, 0.8)
    out = level(T)
    np.testing.assert_allclose(out[:3, :3], Rz, atol=1e-12)
    np.testing.assert_array_equal(out[:3, 3], T[:3, 3])
    # a card 7 cm from a bowl's centre: the tilt no longer moves the centre by ~1 cm
    offset = np.array([0.0, 0.07, 0.02, 1.0])
    assert np.linalg.norm((T @ offset)[:3] - (out @ offset)[:3]) > 0.005


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

# ------------------------------------------------------------------- the node's status


def test_tracker_node_reports_calibration_and_tracked_objects(config):
    """The tracker only tracks: world state per image and a latched status of what a trial
    needs (calibrated, the objects tracked so far), sent again when it changes; the episode
    protocol is the PiPER node's (test/robot_nodes/piper/test_piper_episode.py)."""
    import rclpy
    from rclpy.parameter import Parameter

    from vla_bridge import contract as C
    from vla_bridge.ros import messages
    from vla_bridge.robot_nodes.tracker.tracker_node import TrackerNode

    rclpy.init()
    try:
        node = TrackerNode(parameter_overrides=[
            Parameter("image_topic", value="/cam_high/color/image_raw")])
        topics = {name for name, _ in node.get_publisher_names_and_types_by_node(
            "tracker_node", node.get_namespace())}
        assert C.TOPIC_EPISODE_STATUS not in topics and C.TOPIC_FRAMES not in topics
        assert node.pub_status.qos_profile.durability == \
            messages.qos_profile(C.QOS_LATCHED).durability
        first = node.status()
        assert first == {"calibrated": False, "calibration_required": True, "objects": [],
                         "camera": "cam_high", "image_topic": "/cam_high/color/image_raw",
                         "board": sorted(config.board)}
        sent, worlds = [], []
        node.pub_status.publish = lambda msg: sent.append(messages.parse_json_msg(msg))
        node.pub_world.publish = worlds.append
        node.intr = INTR
        truth = layout_poses(config)
        del truth["yellow_block_2"]
        image = messages.image_to_msg(render_scene(config, truth), 5.0, "cam_high")
        node.on_image(image)
        assert len(sent) == 1 and sent[0]["calibrated"]
        assert sent[0]["objects"] == [n for n in config.object_names() if n in truth]
        world = messages.msg_to_world_state(worlds[-1])
        assert set(world.objects) == set(truth) and world.stamp == 5.0
        node.on_image(image)  # nothing changed: nothing sent
        assert len(sent) == 1 and len(worlds) == 2
        node.destroy_node()
    finally:
        rclpy.shutdown()
