"""Tracker node: the real robot's world state and scoring frames, so the same stage scorer runs
on real trials as in sim.

Subscribes
  one camera's image + camera_info (`image_topic`, `camera_info_topic`; default the contract
  topics of `camera`; the real graph reads cam_high at full resolution), `/joint_states`,
  `/joint_commands`, and the robot's own episode status (`robot_status_topic`).
Publishes
  world_state   MarkerArray (contract layout) per processed image: the tracked objects
                (`robot_nodes.tracker`, markers from config/real_objects.yaml) at their last
                seen pose, and both TCPs from forward kinematics of the newest joint state;
                stamped with the image's stamp (an observation's stamp for observation images)
  frames        during an episode, one row per `/joint_commands` message: stamp, executed
                command, FK TCPs of the newest measured joints, tracked object poses (fields
                fixed when the episode starts)
  episode status  the full protocol for the evaluator, from the robot's minimal one:
                ready (first frame's stamp) / chunk_done / done with `ticks` = frames - 1 /
                error, and an error at begin when, `ready_wait_s` after the robot's ready,
                the table is still not calibrated, no joint commands arrived, or an object
                the task names is not tracked. The publisher
                appears only once the robot node is up (the evaluator starts on seeing it);
                a robot status that overtakes its `begin` is kept for it; a robot that makes
                no progress for `stall_timeout_s` fails the episode (the continuous frames
                would otherwise keep the evaluator's progress timeout from firing).
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

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.robot_nodes.tracker import tracker as T
from vla_bridge.robot_nodes.realsense.realsense_io import intrinsics_from_camera_info
from vla_bridge.embodiment.world import WorldState

DEFAULTS = {
    "camera": "cam_high",
    "image_topic": "",  # empty: the contract's image topic of `camera`
    "camera_info_topic": "",
    "objects_file": "",  # empty: config/real_objects.yaml
    "calibration_file": "",
    "recalibrate": False,  # ignore an existing calibration file
    "arms": ",".join(C.ARMS),
    "robot_status_topic": C.TOPIC_ROBOT_EPISODE_STATUS,  # empty: no episode relay, world state only
    "frame_flush_period_s": 0.25,
    "require_task_objects": True,
    # a recording episode in which the robot reports no progress (ready / chunk_done) for this
    # long fails with an error: the frames it keeps sending would otherwise count as progress
    "stall_timeout_s": 60.0,
    "robot_settle_s": 1.0,  # robot node seen this long before the evaluator may start
    # the robot is ready but the table is not calibrated yet (the cameras have just started)
    # or a task object is not seen: wait this long for it before the trial fails
    "ready_wait_s": 5.0,
}
TASK_OBJECT_KEYS = ("source", "anchor")  # task fields that name tracked objects


class TrackerNode(Node):
    def __init__(self, **node_kwargs):
        super().__init__("tracker_node", **node_kwargs)
        p = {k: self.declare_parameter(k, v).value for k, v in DEFAULTS.items()}
        self.p = p
        C.image_topic(p["camera"])  # validates the camera name
        self.config = T.TrackerConfig.load(p["objects_file"] or None)
        self.tracker = T.MarkerTracker(self.config)
        self.arms = tuple(a.strip() for a in str(p["arms"]).split(",") if a.strip())
        self.intr = None
        self.calibration: T.TableCalibration | None = None
        self.last_detections: list[T.Detection] = []
        self.objects: dict = {}  # name -> ObjectState (last seen)
        self.seen_at: dict[str, float] = {}
        self.joints: np.ndarray | None = None
        self.command: tuple[float, np.ndarray] | None = None  # newest (stamp, 14-vector)
        self._calib_fail_logged = 0.0
        self._load_calibration()
        # episode relay
        self.relay = bool(p["robot_status_topic"])
        self.episode: str | None = None
        self.task: dict = {}
        self.recording = False
        self.ready_stamp = 0.0  # the stamp of the episode's ready (sent again on a repeat)
        self.ready_asked: float | None = None  # when the robot said ready, while not yet ours
        self.fields = None
        self.object_order: list[str] = []
        self.pending: list[np.ndarray] = []
        self.rows = 0
        self.last_row_stamp = -1.0
        self.robot_progress = time.monotonic()
        self.early: dict[str, list[dict]] = {}  # robot statuses that came before their begin
        self._make_io()
        self.get_logger().info(
            f"tracker node ready: camera {p['camera']} on {self.image_topic}, "
            f"{len(self.config.objects)} objects, board {sorted(self.config.board)}, "
            f"calibration {'loaded' if self.calibration else 'from the first board view'}, "
            f"episode relay {'from ' + p['robot_status_topic'] if self.relay else 'off'}")

    # ------------------------------------------------------------------ set-up
    def _load_calibration(self) -> None:
        path = self.p["calibration_file"]
        if path and os.path.isfile(path) and not self.p["recalibrate"]:
            self.calibration = T.TableCalibration.load(path)
            self.get_logger().info(f"table calibration loaded from {path} "
                                   f"(markers {self.calibration.markers}, "
                                   f"{self.calibration.rms_px:.2f} px)")

    def _make_io(self) -> None:
        q = messages.qos_profile
        cam = self.p["camera"]
        self.image_topic = self.p["image_topic"] or C.image_topic(cam)
        info_topic = self.p["camera_info_topic"] or (
            self.image_topic.rsplit("/", 1)[0] + "/camera_info")
        self.create_subscription(Image, self.image_topic, self.on_image, q(C.QOS_LATEST))
        self.create_subscription(CameraInfo, info_topic, self.on_camera_info, q(C.QOS_LATEST))
        self.create_subscription(JointState, C.TOPIC_JOINT_STATES, self.on_joints, q(C.QOS_LATEST))
        self.create_subscription(JointState, C.TOPIC_JOINT_COMMANDS, self.on_command,
                                 q(C.QOS_STATE))
        self.pub_world = self.create_publisher(MarkerArray, C.TOPIC_WORLD_STATE, q(C.QOS_STATE))
        self.create_service(Trigger, "~/calibrate", self.on_calibrate)
        if self.relay:
            self.pub_frames = self.create_publisher(Float64MultiArray, C.TOPIC_FRAMES,
                                                    q(C.QOS_STATE))
            # the episode-status publisher is what tells the evaluator the robot is up, so it
            # is created only once the robot node is (see await_robot)
            self.pub_status = None
            self._robot_seen_at: float | None = None
            self._await_timer = self.create_timer(0.2, self.await_robot)
            self.create_subscription(String, C.TOPIC_EPISODE_CONTROL, self.on_control,
                                     q(C.QOS_EVENTS))
            self.create_subscription(String, self.p["robot_status_topic"], self.on_robot_status,
                                     q(C.QOS_EVENTS))
            self.create_timer(float(self.p["frame_flush_period_s"]), self.flush)
            self.create_timer(1.0, self.check_stall)
            self.create_timer(0.1, self.retry_ready)

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
        if self.p["calibration_file"]:
            calib.save(self.p["calibration_file"], self.p["camera"])
            text += f", saved to {self.p['calibration_file']}"
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
        return response

    # ------------------------------------------------------------------ robot
    def on_joints(self, msg: JointState) -> None:
        self.joints = T.contract_vector(msg.name, msg.position)

    def on_command(self, msg: JointState) -> None:
        stamp = messages.stamp_to_sec(msg.header.stamp)
        self.command = (stamp, T.contract_vector(msg.name, msg.position))
        if self.recording and stamp > self.last_row_stamp:
            self.record_row()

    def world(self, stamp: float, names=None) -> WorldState:
        joints = self.joints if self.joints is not None else (
            self.command[1] if self.command else T.contract_vector([], []))
        objects = self.objects if names is None else {n: self.objects[n] for n in names}
        return WorldState(stamp=stamp, objects=dict(objects), tcp=T.tcp_states(joints))

    def publish_world(self, stamp: float) -> None:
        self.pub_world.publish(messages.world_state_to_msg(self.world(stamp)))

    # ------------------------------------------------------------------ episode relay
    def await_robot(self) -> None:
        """Create the episode-status publisher once the robot node publishes its status and
        listens to episode control, plus `robot_settle_s` for the evaluator to discover it
        too: the evaluator starts when it sees an episode-status publisher, and a `begin`
        sent before the robot node listens would be lost."""
        robots = {(i.node_namespace, i.node_name) for i in
                  self.get_publishers_info_by_topic(self.p["robot_status_topic"])}
        listening = {(i.node_namespace, i.node_name) for i in
                     self.get_subscriptions_info_by_topic(C.TOPIC_EPISODE_CONTROL)}
        if not robots & listening:
            self._robot_seen_at = None
            return
        now = time.monotonic()
        if self._robot_seen_at is None:
            self._robot_seen_at = now
        if now - self._robot_seen_at < float(self.p["robot_settle_s"]):
            return
        self._await_timer.cancel()
        self.pub_status = self.create_publisher(String, C.TOPIC_EPISODE_STATUS,
                                                messages.qos_profile(C.QOS_EVENTS))
        names = ", ".join(name for _, name in sorted(robots & listening))
        self.get_logger().info(f"robot node {names} is up: relaying its episodes")

    def status(self, kind: str, **fields) -> None:
        if self.pub_status is None:
            self.get_logger().error(f"episode status {kind!r} dropped: no robot node yet")
            return
        self.pub_status.publish(messages.json_msg({"kind": kind, "episode": self.episode, **fields}))

    def on_control(self, msg: String) -> None:
        ctl = messages.parse_control(msg, self.get_logger())
        if ctl is None:
            return
        kind = ctl.get("kind")
        if kind == C.CONTROL_BEGIN and str(ctl.get("episode")) == self.episode:
            return  # asked again (a lost begin or ready): the robot node answers it
        if kind == C.CONTROL_BEGIN:
            self.flush()
            self.episode = str(ctl.get("episode"))
            self.task = ctl.get("task") or {}
            self.recording, self.fields, self.rows, self.pending = False, None, 0, []
            self.ready_asked = None
            for status in self.early.pop(self.episode, []):
                self.handle_robot_status(status)
        elif kind == C.CONTROL_END and ctl.get("episode") == self.episode:
            self.flush()
            self.recording, self.ready_asked = False, None
            self.episode = None

    def on_robot_status(self, msg: String) -> None:
        try:
            status = messages.parse_json_msg(msg)
        except ValueError:
            return
        if self.episode is None or status.get("episode") != self.episode:
            # the robot's status and the evaluator's control are different topics, so the
            # robot's `ready` may arrive before the `begin` it answers: keep it for then
            self.early.setdefault(str(status.get("episode")), []).append(status)
            while len(self.early) > 8:
                del self.early[next(iter(self.early))]
            return
        self.handle_robot_status(status)

    def handle_robot_status(self, status: dict) -> None:
        kind = status.get("kind")
        self.robot_progress = time.monotonic()
        if kind == C.STATUS_READY and self.recording:  # the robot answered a begin again
            self.status(C.STATUS_READY, tick=0, stamp=self.ready_stamp)
        elif kind == C.STATUS_READY and self.ready_asked is None:
            self.ready_asked = time.monotonic()
            self.retry_ready()
        elif kind == C.STATUS_CHUNK_DONE and self.recording:
            self.flush()
            self.status(C.STATUS_CHUNK_DONE, tick=max(self.rows - 1, 0),
                        calls=status.get("calls", 0))
        elif kind == C.STATUS_DONE and self.recording:
            if self.command is not None and self.command[0] > self.last_row_stamp:
                self.record_row()
            self.recording = False
            self.flush()
            self.status(C.STATUS_DONE, ticks=self.rows - 1, calls=status.get("calls", 0),
                        reason=status.get("reason", "robot done"))
        elif kind == C.STATUS_ERROR:
            self.status(C.STATUS_ERROR, message=f"robot: {status.get('message')}")

    def check_stall(self) -> None:
        idle = time.monotonic() - self.robot_progress
        if self.recording and idle > float(self.p["stall_timeout_s"]):
            self.recording = False
            self.flush()
            message = (f"the robot reported no progress for {idle:.0f} s (no policy chunk "
                       "executed: is the policy answering the observations?)")
            self.get_logger().error(f"episode {self.episode}: {message}")
            self.status(C.STATUS_ERROR, message=message)

    def retry_ready(self) -> None:
        """The robot is ready: start recording once the tracker is too (calibrated, joint
        commands heard, the task's objects seen), or fail the trial after `ready_wait_s`."""
        if self.ready_asked is None:
            return
        problem = self.readiness_problem()
        waited = time.monotonic() - self.ready_asked
        if problem and waited < float(self.p["ready_wait_s"]):
            return
        self.ready_asked = None
        if problem:
            self.get_logger().error(f"episode {self.episode}: {problem} (waited {waited:.0f} s)")
            self.status(C.STATUS_ERROR, message=problem)
            return
        self.start_recording()

    def start_recording(self) -> None:
        self.object_order = [n for n in self.config.object_names() if n in self.objects]
        stamp = self.command[0]
        self.fields = messages.frame_fields(len(C.JOINT_NAMES), self.world(stamp, self.object_order))
        self.rows, self.pending, self.last_row_stamp = 0, [], -1.0
        self.recording = True
        self.record_row()
        self.flush()
        self.ready_stamp = stamp
        self.status(C.STATUS_READY, tick=0, stamp=stamp)

    def readiness_problem(self) -> str:
        if self.command is None:
            return "no /joint_commands from the robot node yet"
        if self.config.objects and self.calibration is None:
            return (f"the table is not calibrated: board markers {sorted(self.config.board)} "
                    f"must be visible to {self.p['camera']} ({self.image_topic})")
        if self.p["require_task_objects"]:
            wanted = [self.task.get(k) for k in TASK_OBJECT_KEYS]
            wanted = [w for w in wanted if isinstance(w, str) and w]
            missing = [w for w in wanted if w not in self.objects]
            if missing:
                return (f"task objects {missing} are not tracked (seen: {sorted(self.objects)}); "
                        f"check their markers are visible to {self.p['camera']}")
        return ""

    def record_row(self) -> None:
        stamp, command = self.command
        world = self.world(stamp, self.object_order)
        self.pending.append(messages.frame_row(stamp, command, world))
        self.rows += 1
        self.last_row_stamp = stamp

    def flush(self) -> None:
        if self.pending and self.fields is not None:
            self.pub_frames.publish(messages.frames_msg(np.array(self.pending), self.fields))
        self.pending = []


def main(args=None) -> int:
    return messages.spin_node(TrackerNode, "tracker_node", args)


if __name__ == "__main__":
    sys.exit(main())
