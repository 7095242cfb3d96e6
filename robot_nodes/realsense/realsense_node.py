"""RealSense node: Intel RealSense cameras (or their recordings) on the contract's camera topics.

One pyrealsense2 pipeline per contract camera, each in its own thread:
  * a device chosen by serial number (`serials`: "cam_high:SERIAL,cam_left_wrist:SERIAL,..."),
    colour as RGB8 and, with `enable_depth`, depth aligned to the colour image;
  * or a recording (`<camera>.playback_file`, or `playback_dir`/<camera>.db3), played back
    through the very same pipeline code (`rs.config.enable_device_from_file`);
  * or, without any camera, MuJoCo renders of the workcell at the joint states on
    `/joint_states` (`robot_nodes.synthetic_cameras`), one thread for all cameras.

`source` picks: `devices`, `playback`, `synthetic`, or `auto` (default): synthetic when
`use_fake_hardware` is set and neither serials nor recordings are given (logged in one line),
else the recordings given and devices for the rest. Real hardware without serials or
recordings fails at start with one error saying how to give them.

Publishes (contract names): `/<camera>/image_raw` (rgb8) and `/<camera>/camera_info` (from the
colour stream's intrinsics, scaled to the published size `image_width` x `image_height`), plus
`/<camera>/aligned_depth_to_color/image_raw` + camera_info (16UC1) with depth, and for the
cameras in `full_resolution_cameras` `/<camera>/color/image_raw` + camera_info at the stream's
own size (what the marker tracker reads).

Two publishing modes, both on the same topics:
  * `stream` (default): every frame, stamped with the node's clock on arrival; for viewers and
    the marker tracker;
  * `observe_on_episode`: the real-robot observation. At the episode's `start` and after every
    `chunk_done`, the newest frame of every camera is published again stamped with the newest
    `/joint_states` stamp, and that joint state is published again with them, as the sim node
    does with its observations. The policy node assembles an observation from a joint state and
    one image per camera with the same stamp, so it gets exactly one observation per policy
    call, as the sim gives it in lock-step. Its joint-state queue is one deep and the robot
    publishes at 50 Hz, so a busy policy node can lose that joint state to the next one: it is
    sent again every 50 ms until the action chunk answering the stamp arrives (the arm holds
    still meanwhile, so the repeats say nothing wrong; images go out once, so there is never
    a second observation of one stamp).

Unplugging a camera: `wait_for_frames` times out or the pipeline raises; the worker logs it,
stops the pipeline and starts it again with exponential backoff (`retry_first_s` doubling to
`retry_max_s`) until the device is back, logging each failure and the recovery.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

from vla_bridge import contract as C
from vla_bridge.ros import messages
from vla_bridge.ros.node_config import declare, param
from vla_bridge.robot_nodes.realsense import realsense_io as rio
from vla_bridge.robot_nodes.tracker.tracker import TrackerConfig, contract_vector

@dataclass(frozen=True)
class RealSenseConfig:
    """realsense_node's parameters (config/robofollow_real.yaml's realsense_node section); each
    camera's `<camera>.playback_file` is declared beside them."""
    cameras: str = param(",".join(C.ALOHA_PIPER.camera_names), "contract cameras to publish")
    source: str = param("auto", "auto | devices | playback | synthetic (MuJoCo renders, no "
                        "camera; rio.plan_sources)")
    use_fake_hardware: bool = param(False, "auto: fake hardware without serials or "
                                    "recordings gets synthetic cameras")
    serials: str = param("", "cam_high:SERIAL,cam_left_wrist:SERIAL,...; an empty entry: the "
                         "only connected device")
    playback_dir: str = param("", "DIR/<camera>.db3 recordings for every camera without its "
                              "own playback_file")
    repeat_playback: bool = param(True, "play a recording again from its start when it ends")
    playback_real_time: bool = param(True, "play recordings at their recorded rate")
    width: int = param(640, "stream width asked of the devices (the tracker needs the pixels)")
    height: int = param(480, "stream height asked of the devices")
    fps: int = param(30, "stream rate asked of the devices")
    image_width: int = param(C.ALOHA_PIPER.image_size[0], "contract width of "
                             "/<camera>/image_raw, what the policy sees (0: the stream's)")
    image_height: int = param(C.ALOHA_PIPER.image_size[1], "contract height of "
                              "/<camera>/image_raw (0: the stream's)")
    enable_depth: bool = param(False, "also publish depth aligned to the colour image")
    full_resolution_cameras: str = param("", "cameras also published at the stream's size on "
                                         "/<camera>/color/image_raw, for the marker tracker")
    wait_timeout_s: float = param(2.0, "no frame for this long: the camera is treated as gone "
                                  "and restarted")
    retry_first_s: float = param(0.5, "first restart backoff of a failed camera")
    retry_max_s: float = param(5.0, "longest restart backoff (it doubles up to this)")
    stream: bool = param(True, "publish every frame (viewers, the marker tracker)")
    observe_on_episode: bool = param(False, "one observation per policy call (the episode's "
                                     "start, each chunk_done)")
    observation_max_age_s: float = param(0.5, "a camera frame older than this is not fresh "
                                         "enough for an observation")
    observation_wait_s: float = param(5.0, "an observation waits this long for a joint state "
                                      "and fresh frames before it is given up with an error")
    observation_resend_s: float = param(10.0, "an observation's joint state is repeated until "
                                        "the policy answers, at most this long")
    synthetic_fps: float = param(10.0, "synthetic cameras: frame sets per second (a still arm "
                                 "is not re-rendered)")
    synthetic_width: int = param(640, "synthetic render width of full_resolution_cameras (the "
                                 "others: image_width)")
    synthetic_height: int = param(480, "synthetic render height of full_resolution_cameras")
    synthetic_scene: str = param("scene1", "the scene the synthetic cameras show")
    synthetic_layout: str = param("default", "the layout of that scene")
    synthetic_intact: str = param("", "INT-ACT probes (an --intact selection) whose table the "
                                  "synthetic cameras show instead of synthetic_scene and "
                                  "synthetic_layout; they must share one table")
    objects_file: str = param("", "the tracker's markers drawn in the synthetic scene (empty: "
                              "config/real_objects.yaml)")


class CameraWorker:
    """Runs one source's pipeline in a thread; reconnects with backoff after errors."""

    def __init__(self, source: rio.CameraSource, on_frame: Callable, log, *,
                 wait_timeout_s: float = 2.0, backoff: rio.Backoff | None = None):
        """`on_frame(camera, rgb, depth or None, intrinsics)` gets every frame at the stream's
        size; the arrays view librealsense's buffers and are valid during the call only."""
        self.source = source
        self.on_frame = on_frame
        self.log = log
        self.wait_timeout_ms = max(1, int(wait_timeout_s * 1000))
        self.backoff = backoff or rio.Backoff()
        self.frames = 0
        self.restarts = 0
        self.errors = 0  # frames whose handling (conversion, publishing) failed
        self.playback = None
        self.finished = False  # a recording played to its end (repeat_playback false)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rs-{source.camera}", daemon=True)

    def start(self) -> CameraWorker:
        self._thread.start()
        return self

    def describe(self) -> str:
        return self.source.describe()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        rs = rio.import_pyrealsense2()

        cam = self.source.camera
        while not self._stop.is_set():
            pipeline = rs.pipeline()
            started = False
            try:
                self._check_device()
                profile = pipeline.start(rio.pipeline_config(self.source))
                started = True
                if self._stream(rs, pipeline, profile) == "finished":
                    self.finished = True
                    self.log.info(f"{cam}: recording {self.source.playback_file} finished "
                                  f"({self.frames} frames)")
                    return
            except RuntimeError as exc:
                if self._stop.is_set():
                    return
                delay = self.backoff.next()
                self.restarts += 1
                what = "cannot start the pipeline" if not started else "pipeline error"
                self.log.warning(f"{cam}: {what} for {self.source.describe()}: {exc}; "
                                 f"retrying in {delay:.1f} s (failure {self.backoff.failures})")
                self._stop.wait(delay)
            finally:
                if started:
                    try:
                        pipeline.stop()
                    except RuntimeError:
                        pass

    def _check_device(self) -> None:
        """Fail fast when the device is absent (pipeline.start would wait 15 s for it)."""
        if self.source.is_playback:
            return
        connected = rio.device_serials()
        if (self.source.serial and self.source.serial not in connected) or not connected:
            raise RuntimeError(f"device {self.source.serial or '(any)'} not connected "
                               f"(connected: {', '.join(connected) or 'none'})")

    def _stream(self, rs, pipeline, profile) -> str:
        cam = self.source.camera
        device = profile.get_device()
        playback = device.as_playback() if self.source.is_playback else None
        self.playback = playback  # the recording being played (diagnostics, tests)
        if playback is not None:
            playback.set_real_time(bool(self.source.real_time))
            recorded = _serial(rs, device)
            if self.source.serial and recorded and recorded != self.source.serial:
                self.log.warning(f"{cam}: recording {self.source.playback_file} is of device "
                                 f"{recorded}, not the configured {self.source.serial}")
        colour = profile.get_stream(rs.stream.color).as_video_stream_profile()
        intr = rio.Intrinsics.from_rs(colour.get_intrinsics())
        has_depth = any(s.stream_type() == rs.stream.depth for s in profile.get_streams())
        if self.source.depth and not has_depth:
            self.log.warning(f"{cam}: depth requested but {self.source.describe()} has none")
        align = rs.align(rs.stream.color) if self.source.depth and has_depth else None
        recovered = self.backoff.failures > 0
        while not self._stop.is_set():
            ok, frames = pipeline.try_wait_for_frames(self.wait_timeout_ms)
            if not ok:
                if playback is not None and playback.current_status() == rs.playback_status.stopped:
                    return "finished"
                raise RuntimeError(f"no frame within {self.wait_timeout_ms} ms "
                                   "(camera unplugged or stalled?)")
            if align is not None:
                frames = align.process(frames)
            colour_frame = frames.get_color_frame()
            if not colour_frame:
                continue
            fmt = colour_frame.get_profile().format().name
            rgb = rio.colour_to_rgb(rio.frame_to_array(colour_frame), fmt)
            depth = None
            if align is not None:
                depth_frame = frames.get_depth_frame()
                if depth_frame:
                    depth = rio.frame_to_array(depth_frame)
            if recovered:
                self.log.info(f"{cam}: streaming again ({self.source.describe()}) after "
                              f"{self.backoff.failures} failed attempts")
                recovered = False
            self.backoff.reset()
            self.frames += 1
            try:
                self.on_frame(cam, rgb, depth, intr)
            except Exception as exc:  # noqa: BLE001 - publishing failed, not the camera
                if self._stop.is_set():
                    return "stopped"
                self.errors += 1
                if self.errors in (1, 10, 100) or self.errors % 1000 == 0:
                    self.log.error(f"{cam}: handling a frame failed ({self.errors}x): {exc!r}")
        return "stopped"


def _serial(rs, device) -> str:
    try:
        return device.get_info(rs.camera_info.serial_number)
    except RuntimeError:
        return ""


def source_plan(p: RealSenseConfig, files: dict[str, str]) -> tuple[str, dict[str, str]]:
    """(source kind, recordings to play) of a config and its cameras' playback files (see
    rio.plan_sources; ValueError as it gives)."""
    cameras = rio.parse_cameras(p.cameras)
    playback = {cam: f for cam, f in files.items() if f}
    if p.playback_dir:
        for cam in cameras:
            playback.setdefault(cam, os.path.join(p.playback_dir, f"{cam}.db3"))
    return rio.plan_sources(str(p.source), cameras, rio.parse_camera_map(p.serials, "serials"),
                            playback, bool(p.use_fake_hardware))


def preflight(params: dict) -> None:
    """The launcher's check before any node starts (launch_args.NodeSpec.preflight; `params`:
    this node's defaults, params file and overrides): synthetic cameras show one INT-ACT probe
    table, so a selection of probes that needs several is refused (ValueError, one line)
    before the graph starts, not by this node once the evaluator has printed its plan. A
    camera set-up the node would refuse is left for the node to report."""
    known = {k: v for k, v in params.items() if k in RealSenseConfig.__dataclass_fields__}
    config = RealSenseConfig(**known)
    files = {}
    for cam in C.ALOHA_PIPER.camera_names:  # "cam.playback_file", or nested as YAML gives it
        nested = params.get(cam) if isinstance(params.get(cam), dict) else {}
        files[cam] = str(params.get(f"{cam}.playback_file", nested.get("playback_file", "")) or "")
    try:
        kind, _ = source_plan(config, files)
    except ValueError:
        return
    if kind == "synthetic" and str(config.synthetic_intact).strip():
        from vla_bridge.benchmarks.intact.pilot_cards import table_setup
        table_setup(str(config.synthetic_intact))


class RealsenseNode(Node):
    def __init__(self, **node_kwargs):
        super().__init__("realsense_node", **node_kwargs)
        self.cfg = p = declare(self, RealSenseConfig)
        self.cameras = rio.parse_cameras(p.cameras)
        self.full_resolution = set(rio.parse_cameras(p.full_resolution_cameras))
        self.out_size = (int(p.image_width), int(p.image_height))
        files = {cam: self.declare_parameter(f"{cam}.playback_file", "").value
                 for cam in C.ALOHA_PIPER.camera_names}
        self.source_kind, playback = self._plan(p, files)
        self.sources = [] if self.source_kind == "synthetic" else self._sources(p, playback)
        self._lock = threading.Lock()
        self._closing = False
        self.latest: dict[str, tuple] = {}  # camera -> (image, info, depth, depth_info, t_mono)
        self.joint_state: JointState | None = None
        self.episode: str | None = None
        self.max_calls: int | None = None
        self.observations = 0
        self.pending: tuple[str, float] | None = None  # (why, give-up time) of an observation
        self.unanswered: tuple[JointState, int, float] | None = None  # (state, stamp ns, until)
        self._make_io()
        self.workers = self._workers(p)
        self.get_logger().info("realsense node ready: " +
                               "; ".join(w.describe() for w in self.workers) +
                               f" (stream={p.stream}, observe_on_episode="
                               f"{p.observe_on_episode}, depth={p.enable_depth})")

    def _plan(self, p: RealSenseConfig, files: dict[str, str]) -> tuple[str, dict[str, str]]:
        """(source kind, recordings to play): see rio.plan_sources."""
        self.serials = rio.parse_camera_map(p.serials, "serials")
        kind, playback = source_plan(p, files)
        if kind == "synthetic" and p.source == "auto":
            self.get_logger().info("fake hardware without camera serials or recordings: "
                                   "synthetic cameras (MuJoCo renders of the workcell at the "
                                   "fake arms' joint states); give serials or playback_dir "
                                   "for real images")
        return kind, playback

    def _workers(self, p: RealSenseConfig) -> list:
        if self.source_kind == "synthetic":
            return [self._synthetic(p).start()]
        return [CameraWorker(src, self.on_frame, self.get_logger(),
                             wait_timeout_s=float(p.wait_timeout_s),
                             backoff=rio.Backoff(p.retry_first_s, p.retry_max_s)).start()
                for src in self.sources]

    def _synthetic(self, p: RealSenseConfig):
        from vla_bridge.robot_nodes.realsense.synthetic_cameras import SyntheticCameras  # loads MuJoCo

        full = (int(p.synthetic_width), int(p.synthetic_height))
        sizes = {cam: full if cam in self.full_resolution else self.out_size
                 for cam in self.cameras}
        markers = TrackerConfig.load(p.objects_file or None)
        scene, layout, edits = str(p.synthetic_scene), str(p.synthetic_layout), None
        if str(p.synthetic_intact).strip():  # one probe table (ValueError: several, or unknown)
            from vla_bridge.benchmarks.intact.pilot_cards import table_setup
            scene, layout, edits = table_setup(str(p.synthetic_intact))
        return SyntheticCameras(self.cameras, sizes, self.latest_joints, self.on_frame,
                                self.get_logger(), fps=float(p.synthetic_fps), scene=scene,
                                layout=layout, markers=markers, edits=edits)

    def latest_joints(self) -> np.ndarray | None:
        """The newest joint state as a contract vector (a missing arm at home), or None."""
        msg = self.joint_state
        return None if msg is None else contract_vector(msg.name, msg.position)

    def _sources(self, p: RealSenseConfig,
                 playback: dict[str, str]) -> list[rio.CameraSource]:
        for cam in self.cameras:
            if cam in playback and not os.path.isfile(playback[cam]):
                raise FileNotFoundError(f"{cam}: playback file {playback[cam]} not found")
        return rio.camera_sources(self.cameras, self.serials, playback, width=int(p.width),
                                  height=int(p.height), fps=int(p.fps),
                                  depth=bool(p.enable_depth),
                                  repeat_playback=bool(p.repeat_playback),
                                  real_time=bool(p.playback_real_time))

    def _make_io(self) -> None:
        q = messages.qos_profile
        # reliable, like the sim's images: the policy node subscribes reliably
        self.pub_image = {c: self.create_publisher(Image, C.image_topic(c), q(C.QOS_IMAGES))
                          for c in self.cameras}
        self.pub_info = {c: self.create_publisher(CameraInfo, C.camera_info_topic(c),
                                                  q(C.QOS_IMAGES)) for c in self.cameras}
        self.pub_full = {c: self.create_publisher(Image, C.full_image_topic(c), q(C.QOS_LATEST))
                         for c in self.cameras if c in self.full_resolution}
        self.pub_full_info = {c: self.create_publisher(CameraInfo, C.full_camera_info_topic(c),
                                                       q(C.QOS_LATEST))
                              for c in self.cameras if c in self.full_resolution}
        self.pub_depth, self.pub_depth_info = {}, {}
        if self.cfg.enable_depth:
            self.pub_depth = {c: self.create_publisher(Image, C.depth_image_topic(c),
                                                       q(C.QOS_IMAGES)) for c in self.cameras}
            self.pub_depth_info = {c: self.create_publisher(
                CameraInfo, C.depth_camera_info_topic(c), q(C.QOS_IMAGES)) for c in self.cameras}
        if self.cfg.observe_on_episode or self.source_kind == "synthetic":
            # observations are stamped with it; synthetic cameras pose the arms at it
            self.create_subscription(JointState, C.TOPIC_JOINT_STATES, self.on_joints,
                                     q(C.QOS_LATEST))
        if self.cfg.observe_on_episode:
            self.pub_joints = self.create_publisher(JointState, C.TOPIC_JOINT_STATES,
                                                    q(C.QOS_STATE))
            self.create_subscription(String, C.TOPIC_EPISODE_CONTROL, self.on_control,
                                     q(C.QOS_EVENTS))
            self.create_subscription(String, C.TOPIC_EPISODE_STATUS, self.on_status,
                                     q(C.QOS_EVENTS))
            self.create_subscription(JointTrajectory, C.TOPIC_ACTION_CHUNK, self.on_chunk,
                                     q(C.QOS_COMMAND))
            self.create_timer(0.05, self.observation_tick)

    def stamp(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    # ------------------------------------------------------------------ frames (worker threads)
    def on_frame(self, camera: str, rgb: np.ndarray, depth: np.ndarray | None,
                 intr: rio.Intrinsics) -> None:
        if self._closing or not self.context.ok():
            return  # shutting down: the workers are being stopped
        try:
            self._handle_frame(camera, rgb, depth, intr)
        except Exception:
            if self._closing or not self.context.ok():
                return  # rclpy shut down while this frame was being published (Ctrl-C)
            raise

    def _handle_frame(self, camera: str, rgb: np.ndarray, depth: np.ndarray | None,
                      intr: rio.Intrinsics) -> None:
        t = self.stamp()
        if camera in self.pub_full and self.cfg.stream:
            self.pub_full_info[camera].publish(rio.camera_info_msg(intr, t, camera))
            self.pub_full[camera].publish(messages.image_to_msg(rgb, t, camera))
        width, height = rio.output_size(intr.width, intr.height, *self.out_size)
        intr_out = intr.scaled(width, height)
        image = messages.image_to_msg(rio.resize_image(rgb, width, height), t, camera)
        info = rio.camera_info_msg(intr_out, t, camera)
        depth_msg = depth_info = None
        if depth is not None and camera in self.pub_depth:
            depth = rio.resize_image(depth, width, height, depth=True)
            depth_msg = messages.image_to_msg(np.ascontiguousarray(depth), t, camera, "16UC1")
            depth_info = rio.camera_info_msg(intr_out, t, camera)
        with self._lock:
            self.latest[camera] = (image, info, depth_msg, depth_info, time.monotonic())
        if self.cfg.stream:
            self._publish(camera, image, info, depth_msg, depth_info)

    def _publish(self, camera, image, info, depth_msg, depth_info) -> None:
        self.pub_info[camera].publish(info)
        self.pub_image[camera].publish(image)
        if depth_msg is not None:
            self.pub_depth_info[camera].publish(depth_info)
            self.pub_depth[camera].publish(depth_msg)

    # ------------------------------------------------------------------ observations
    def on_joints(self, msg: JointState) -> None:
        self.joint_state = msg

    def on_control(self, msg: String) -> None:
        ctl = messages.parse_control(msg, self.get_logger())
        if ctl is None:
            return
        kind = ctl.get("kind")
        if kind == C.CONTROL_BEGIN:
            self.episode = str(ctl.get("episode"))
            self.max_calls = int(ctl["max_policy_calls"]) if "max_policy_calls" in ctl else None
        elif kind == C.CONTROL_START and ctl.get("episode") == self.episode:
            self.observe("start")
        elif kind == C.CONTROL_END and ctl.get("episode") == self.episode:
            self.episode = None
            self.pending = self.unanswered = None

    def on_status(self, msg: String) -> None:
        try:
            status = messages.parse_json_msg(msg)
        except ValueError:
            return
        if status.get("kind") != C.STATUS_CHUNK_DONE or status.get("episode") != self.episode:
            return
        calls = int(status.get("calls", 0))
        if self.max_calls is None or calls < self.max_calls:
            self.observe(f"chunk {calls} done")

    def observe(self, why: str) -> bool:
        """Publish the newest frame of every camera stamped with the newest joint state, now or
        (when a joint state or a fresh frame is still missing) as soon as they are there."""
        self.pending = (why, time.monotonic() + float(self.cfg.observation_wait_s))
        return self.try_observe()

    def observation_tick(self) -> None:
        """20 Hz: send a pending observation; repeat an unanswered observation's joint state."""
        self.try_observe()
        if self.unanswered is not None:
            joint_state, _, until = self.unanswered
            if time.monotonic() > until:
                self.unanswered = None
            else:
                self.pub_joints.publish(joint_state)

    def on_chunk(self, msg: JointTrajectory) -> None:
        if self.unanswered is not None and messages.stamp_ns(msg.header.stamp) == self.unanswered[1]:
            self.unanswered = None

    def try_observe(self) -> bool:
        if self.pending is None:
            return False
        why, deadline = self.pending
        joint_state = self.joint_state
        now = time.monotonic()
        with self._lock:
            latest = dict(self.latest)
        missing = [c for c in self.cameras if c not in latest]
        stale = [c for c in self.cameras if c in latest
                 and now - latest[c][4] > float(self.cfg.observation_max_age_s)]
        if joint_state is None or missing or stale:
            if now > deadline:
                self.pending = None
                self.get_logger().error(
                    f"observation ({why}) not sent after {self.cfg.observation_wait_s} s: "
                    + ("no /joint_states; " if joint_state is None else "")
                    + f"no frame from {missing}, stale frames from {stale}")
            return False
        self.pending = None
        self.pub_joints.publish(joint_state)
        stamp = joint_state.header.stamp
        self.unanswered = (joint_state, messages.stamp_ns(stamp),
                           now + float(self.cfg.observation_resend_s))
        for cam in self.cameras:
            image, info, depth_msg, depth_info, _ = latest[cam]
            self._publish(cam, *(_restamped(m, stamp) if m is not None else None
                                 for m in (image, info, depth_msg, depth_info)))
        self.observations += 1
        return True

    def close(self) -> None:
        self._closing = True
        for worker in getattr(self, "workers", []):
            worker.stop()


def _restamped(msg, stamp):
    """A copy of an Image / CameraInfo with another stamp; the pixel buffer is shared."""
    out = type(msg)()
    for name in msg.get_fields_and_field_types():
        if name != "header":
            setattr(out, name, getattr(msg, name))
    out.header.frame_id = msg.header.frame_id
    out.header.stamp = stamp
    return out


def main(args=None) -> int:
    return messages.spin_node(RealsenseNode, "realsense_node", args)


if __name__ == "__main__":
    sys.exit(main())
