"""Tracker node: the real robot's tracked objects in the world frame, so the same stage scorer
runs on real trials as in sim. It only tracks: the episode protocol (statuses and scoring
frames) belongs to the PiPER node (robot_nodes/piper/episode.py), which reads this node's
world state and status.

Subscribes
  one camera's image + camera_info (`image_topic`, `camera_info_topic`; default the contract
  topics of `camera`; the real graph reads cam_high at full resolution) and `/joint_states`.
Publishes
  world_state   MarkerArray (contract layout) per processed image: the tracked objects
                (`robot_nodes.tracker`, markers from config/real_objects.yaml) at their last
                seen pose, and both TCPs from forward kinematics of the newest joint state
                (home before the first); stamped with the image's stamp
  tracker status  contract.TOPIC_TRACKER_STATUS, latched, sent again on every change: whether
                the table is calibrated (and needs to be: there are objects to track), the
                objects tracked so far (config order), the camera, its image topic and the
                board's marker ids (for the messages of a trial that cannot start)
Services (std_srvs/Trigger)
  ~/calibrate   recompute the camera's table calibration from the newest image's board markers

Calibration: loaded from `calibration_file` when it exists, else computed from the first
images that show the board well enough (and written there). Objects keep their last seen
pose while hidden (a grasped object occluded by the gripper stays where it was last seen:
see docs/real_hardware.md for what the tracker cannot see).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.ros.node_config import declare, param
from vla_bridge.robot_nodes.tracker import tracker as T
from vla_bridge.robot_nodes.realsense.realsense_io import intrinsics_from_camera_info
from vla_bridge.embodiment.world import WorldState


@dataclass(frozen=True)
class TrackerNodeConfig:
    """tracker_node's parameters (config/robofollow_real.yaml's tracker_node section)."""
    camera: str = param("cam_high", "the contract camera whose images are tracked")
    image_topic: str = param("", "its image topic (empty: the contract's image topic of "
                             "`camera`; the real graph reads the full-resolution one)")
    camera_info_topic: str = param("", "its camera_info topic (empty: beside image_topic)")
    objects_file: str = param("", "board and object markers (empty: config/real_objects.yaml)")
    calibration_file: str = param("", "table calibration: loaded if it exists, written after "
                                  "calibrating; empty: calibrate at each start")
    recalibrate: bool = param(False, "ignore an existing calibration_file and calibrate again")
    arms: str = param(",".join(C.ARMS), "the PiPER node's arms (the world state holds both "
                      "TCPs, an arm it does not drive at home)")


class TrackerNode(Node):
    def __init__(self, **node_kwargs):
        super().__init__("tracker_node", **node_kwargs)
        self.cfg = p = declare(self, TrackerNodeConfig)
        C.image_topic(p.camera)  # validates the camera name
        self.markers = T.TrackerConfig.load(p.objects_file or None)
        self.tracker = T.MarkerTracker(self.markers)
        self.arms = tuple(a.strip() for a in str(p.arms).split(",") if a.strip())
        self.intr = None
        self.calibration: T.TableCalibration | None = None
        self.last_detections: list[T.Detection] = []
        self.objects: dict = {}  # name -> ObjectState (last seen)
        self.seen_at: dict[str, float] = {}
        self.joints: np.ndarray | None = None
        self._calib_fail_logged = 0.0
        self._status_sent: dict | None = None
        self._load_calibration()
        self._make_io()
        self.publish_status()
        self.get_logger().info(
            f"tracker node ready: camera {p.camera} on {self.image_topic}, "
            f"{len(self.markers.objects)} objects, board {sorted(self.markers.board)}, "
            f"calibration {'loaded' if self.calibration else 'from the first board view'}")

    # ------------------------------------------------------------------ set-up
    def _load_calibration(self) -> None:
        path = self.cfg.calibration_file
        if path and os.path.isfile(path) and not self.cfg.recalibrate:
            self.calibration = T.TableCalibration.load(path)
            self.get_logger().info(f"table calibration loaded from {path} "
                                   f"(markers {self.calibration.markers}, "
                                   f"{self.calibration.rms_px:.2f} px)")

    def _make_io(self) -> None:
        q = messages.qos_profile
        self.image_topic = self.cfg.image_topic or C.image_topic(self.cfg.camera)
        info_topic = self.cfg.camera_info_topic or (
            self.image_topic.rsplit("/", 1)[0] + "/camera_info")
        self.create_subscription(Image, self.image_topic, self.on_image, q(C.QOS_LATEST))
        self.create_subscription(CameraInfo, info_topic, self.on_camera_info, q(C.QOS_LATEST))
        self.create_subscription(JointState, C.TOPIC_JOINT_STATES, self.on_joints, q(C.QOS_LATEST))
        self.pub_world = self.create_publisher(MarkerArray, C.TOPIC_WORLD_STATE, q(C.QOS_STATE))
        self.pub_status = self.create_publisher(String, C.TOPIC_TRACKER_STATUS, q(C.QOS_LATCHED))
        self.create_service(Trigger, "~/calibrate", self.on_calibrate)

    # ------------------------------------------------------------------ status
    def status(self) -> dict:
        """What a trial needs of the tracker (contract.TOPIC_TRACKER_STATUS)."""
        return {"calibrated": self.calibration is not None,
                "calibration_required": bool(self.markers.objects),
                "objects": [n for n in self.markers.object_names() if n in self.objects],
                "camera": self.cfg.camera, "image_topic": self.image_topic,
                "board": sorted(self.markers.board)}

    def publish_status(self) -> None:
        """The status, when it changed since the last one sent (latched: late readers get it)."""
        status = self.status()
        if status != self._status_sent:
            self.pub_status.publish(messages.json_msg(status))
            self._status_sent = status

    # ------------------------------------------------------------------ camera
    def on_camera_info(self, msg: CameraInfo) -> None:
        self.intr = intrinsics_from_camera_info(msg)

    def on_image(self, msg: Image) -> None:
        if self.intr is None:
            return
        image = messages.msg_to_image(msg)
        if (image.shape[1], image.shape[0]) != (self.intr.width, self.intr.height):
            return  # camera_info of another size (not yet updated)
        if msg.encoding in ("bgr8", "bgra8", "rgba8"):
            image = image[..., :3][..., ::-1] if msg.encoding.startswith("bgr") else image[..., :3]
        detections = self.tracker.detect(image)
        self.last_detections = detections
        if self.calibration is None:
            self._try_calibrate(detections)
        if self.calibration is not None:
            t = messages.stamp_to_sec(msg.header.stamp)
            for name, obj in self.tracker.locate(detections, self.intr, self.calibration).items():
                self.objects[name] = obj
                self.seen_at[name] = t
        self.publish_world(messages.stamp_to_sec(msg.header.stamp))
        self.publish_status()  # after the world state that holds the objects it names

    def _try_calibrate(self, detections) -> str:
        try:
            calib = self.tracker.calibrate(detections, self.intr)
        except T.CalibrationError as exc:
            if time.monotonic() - self._calib_fail_logged > 5.0:
                self.get_logger().warning(f"table calibration: {exc}")
                self._calib_fail_logged = time.monotonic()
            return str(exc)
        self.calibration = calib
        cam = calib.world_from_camera[:3, 3]
        text = (f"table calibrated from board markers {calib.markers}: RMS {calib.rms_px:.2f} px, "
                f"camera at ({cam[0]:.3f}, {cam[1]:.3f}, {cam[2]:.3f}) m")
        if self.cfg.calibration_file:
            calib.save(self.cfg.calibration_file, self.cfg.camera)
            text += f", saved to {self.cfg.calibration_file}"
        self.get_logger().info(text)
        return text

    def on_calibrate(self, request, response):
        if self.intr is None or not self.last_detections:
            response.success, response.message = False, "no image with markers received yet"
            return response
        previous, self.calibration = self.calibration, None
        message = self._try_calibrate(self.last_detections)
        if self.calibration is None:
            self.calibration = previous
            response.success = False
            response.message = f"calibration failed (kept the old one): {message}"
        else:
            response.success, response.message = True, message
        self.publish_status()
        return response

    # ------------------------------------------------------------------ robot
    def on_joints(self, msg: JointState) -> None:
        self.joints = T.contract_vector(msg.name, msg.position)

    def world(self, stamp: float) -> WorldState:
        joints = self.joints if self.joints is not None else T.contract_vector([], [])
        return WorldState(stamp=stamp, objects=dict(self.objects), tcp=T.tcp_states(joints))

    def publish_world(self, stamp: float) -> None:
        self.pub_world.publish(messages.world_state_to_msg(self.world(stamp)))


def main(args=None) -> int:
    return messages.spin_node(TrackerNode, "tracker_node", args)


if __name__ == "__main__":
    sys.exit(main())
