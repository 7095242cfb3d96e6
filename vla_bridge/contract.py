"""The topic contract: every topic name, message type, QoS, joint name, camera name and unit.

This is the one module that owns these conventions. Sim nodes, robot nodes, the policy node
and the evaluator import names from here and never spell a topic string themselves.

It is deliberately free of rclpy: QoS is described as data (`QosSpec`) and turned into an
rclpy profile by `vla_bridge.ros.messages.qos_profile`, so pure-logic code and tests can import it.

Conventions
-----------
* Units: metres, radians, seconds; quaternions (w, x, y, z); world frame of the RoboFollow
  scenes (+x robot's right, +y away from the robot, +z up, table top at z = 0.74).
* Joint vector (ALOHA order, 14-D for two arms, 7-D for one arm):
  ``left_joint1..6, left_gripper, right_joint1..6, right_gripper``.
* Gripper: **normalised opening, 1.0 = fully open, 0.0 = closed** (RoboTwin / RoboFollow
  convention). Edges convert: openpi's ALOHA convention and piper_sdk's stroke in 0.001 mm
  are converted where those protocols are spoken, never inside the graph.
* Action chunk: ``trajectory_msgs/JointTrajectory`` of absolute joint targets in the joint
  order above; ``header.stamp`` echoes the stamp of the observation it answers;
  ``points[k].time_from_start`` = (k + 1) * control period.
* Joint commands: every tick a sim or robot node also publishes the target it is executing
  on ``joint_commands`` (``sensor_msgs/JointState``), so scorers can read the commanded
  gripper, exactly as RoboFollow's recorder does.
* World state: ``visualization_msgs/MarkerArray``; one marker per object (namespace
  ``objects``) and per tool centre point (namespace ``tcp``); ``marker.text`` carries the
  name, ``scale`` the full size (x, y, z) in metres, ``color`` the RGBA colour, ``pose`` the
  centre pose in the world frame. The TCP's local +x axis is the gripper approach axis.
* World state is published at episode start and with every observation (same stamp as the
  images), which is all a privileged policy or a viewer needs.
* Frames: the sim/robot node records the scoring record of every tick and publishes it on
  ``frames`` (``std_msgs/Float64MultiArray``): ``layout.dim[0]`` is ``ticks`` (rows in this
  message), the following dims name the fields of a row in order, each with a ``label`` and
  ``size``: ``stamp`` (1, seconds), ``command`` (the executed joint target, contract order),
  then ``tcp:<arm>`` and ``obj:<name>`` poses (7: x, y, z, qw, qx, qy, qz). Lock-step sends
  one message per executed chunk, real time one per tick: flat rows keep the bridge cheap.
  A sim's rows also carry ``state:<embodiment>`` (the measured joints, that embodiment's
  ``state_names``) and ``published`` (1: which of the tick's own messages went out on their
  topics, a sum of TICK_TOPIC_BITS). In lock-step the sim sends a tick's /clock,
  /joint_states and /joint_commands only to nodes other than FRAME_EXPANDERS (and
  OBSERVATION_READERS for /joint_states); a recorder rebuilds the ones not published from the
  rows, so its bag holds every tick's messages as the sim would have sent them. A parser skips
  the fields it does not know (a robot node's rows carry neither).
* Episode control (evaluator <-> sim/robot/policy) uses ``std_msgs/String`` carrying JSON,
  so the graph needs no custom interface package.
* Charged latency (sim, ``latency:=charged``): the chunk answering the observation at tick
  ``s`` with a charged latency of ``L`` ms takes over at tick ``s + charged_ticks(L, dt)``;
  until then the robot keeps executing the previous chunk (or holds), and the new chunk's
  actions due by then (``k < charged_ticks(L, dt)``) are dropped, as late actions are in
  real time. The sim and an async policy node both use ``charged_ticks``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# ----------------------------------------------------------------------------- joints
ARMS = ("left", "right")
ARM_JOINTS = tuple(f"joint{i}" for i in range(1, 7))
GRIPPER = "gripper"
JOINTS_PER_ARM = len(ARM_JOINTS) + 1  # six arm joints + one gripper


def arm_joint_names(arm: str) -> list[str]:
    """Joint names of one arm in contract order (6 joints then the gripper)."""
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; expected one of {ARMS}")
    return [f"{arm}_{j}" for j in ARM_JOINTS] + [f"{arm}_{GRIPPER}"]


def joint_names(arms: tuple[str, ...] = ARMS) -> list[str]:
    """Full joint vector names: 14 for the ALOHA pair, 7 for one arm."""
    names: list[str] = []
    for arm in arms:
        names += arm_joint_names(arm)
    return names


GRIPPER_INDEX = {arm: i * JOINTS_PER_ARM + len(ARM_JOINTS) for i, arm in enumerate(ARMS)}  # 6, 13
GRIPPER_OPEN = 1.0
GRIPPER_CLOSED = 0.0

# ---------------------------------------------------------------------------- cameras
# Each embodiment names its cameras and image size (`Embodiment.cameras`, `image_size`); the
# topics below accept the cameras any declared embodiment names (`camera_names()`).
IMAGE_ENCODING = "rgb8"

# ------------------------------------------------------------------------------- QoS


@dataclass(frozen=True)
class QosSpec:
    reliable: bool
    depth: int
    transient_local: bool = False


QOS_SENSOR = QosSpec(reliable=False, depth=5)  # streaming images in real-time mode
QOS_STATE = QosSpec(reliable=True, depth=100)  # per-tick state: the scorer needs every tick
QOS_IMAGES = QosSpec(reliable=True, depth=10)  # lock-step: an observation must never be lost
QOS_COMMAND = QosSpec(reliable=True, depth=10)
QOS_LATEST = QosSpec(reliable=True, depth=1)  # consumers that only need the newest tick
QOS_LATCHED = QosSpec(reliable=True, depth=1, transient_local=True)
QOS_EVENTS = QosSpec(reliable=True, depth=50, transient_local=False)

# ----------------------------------------------------------------------------- topics
NS = "/vla_bridge"
TOPIC_CLOCK = "/clock"  # rosgraph_msgs/Clock
TOPIC_JOINT_STATES = "/joint_states"  # sensor_msgs/JointState (measured)
#: The graph's nodes that read /joint_states only at observations in lock-step (the policy's
#: observation, the cue overlay's joints of a cued frame): a lock-step sim publishes a joint
#: state at every tick only while some other node (a recorder, the viewer, `ros2 bag record`,
#: a test) subscribes; each observation's joint state always goes out. Node names as the
#: launchers give them; a renamed node is just another listener (every tick, as before).
OBSERVATION_READERS = frozenset({"policy_node", "evaluator_node"})
TOPIC_JOINT_COMMANDS = "/joint_commands"  # sensor_msgs/JointState (target being executed)
#: The nodes that rebuild a lock-step sim's per-tick /clock, /joint_states and
#: /joint_commands from its frames' rows (the frames contract above): the sim sends a tick's
#: messages only when some other node subscribes. Sending three small messages a tick to a
#: second process was most of what recording cost (#26).
FRAME_EXPANDERS = frozenset({"recorder_node"})
#: A frame row's ``published`` field: the sum of the bits of the tick's messages that went
#: out on their topics.
TICK_TOPIC_BITS = {TOPIC_CLOCK: 1, TOPIC_JOINT_STATES: 2, TOPIC_JOINT_COMMANDS: 4}
TOPIC_ACTION_CHUNK = f"{NS}/action_chunk"  # trajectory_msgs/JointTrajectory
TOPIC_INSTRUCTION = f"{NS}/instruction"  # std_msgs/String, latched
TOPIC_WORLD_STATE = f"{NS}/world_state"  # visualization_msgs/MarkerArray, per observation
TOPIC_FRAMES = f"{NS}/frames"  # std_msgs/Float64MultiArray, batches of per-tick scoring records
TOPIC_EPISODE_CONTROL = f"{NS}/episode/control"  # std_msgs/String JSON, evaluator -> all
TOPIC_EPISODE_STATUS = f"{NS}/episode/status"  # std_msgs/String JSON, sim/robot -> evaluator
TOPIC_POLICY_STATUS = f"{NS}/policy/status"  # std_msgs/String JSON, policy -> evaluator
#: std_msgs/Header (stamp: the policy node's clock), 50 Hz from the policy node's own thread:
#: the robot node holds the arms when it goes silent (robot_nodes/piper/piper_node.py)
TOPIC_POLICY_HEARTBEAT = f"{NS}/policy/heartbeat"
#: Real graph: the tracker node's readiness, std_msgs/String JSON, latched, sent again on every
#: change: {"calibrated": bool, "calibration_required": bool (it tracks objects),
#: "objects": [names tracked so far], "camera": str, "image_topic": str, "board": [marker ids]}.
#: The PiPER node owns the real graph's episode protocol on TOPIC_EPISODE_STATUS and
#: TOPIC_FRAMES (robot_nodes/piper/episode.py) and reads it when it answers a begin.
TOPIC_TRACKER_STATUS = f"{NS}/tracker/status"
#: Teleoperated demonstrations (`vla-bridge record-demos`, the PiPER node's ``teleop``), fake
#: hardware only: trajectory_msgs/JointTrajectory of absolute targets (contract names, points
#: at time_from_start) that the fake leader arms play, as a hand moves a real leader.
TOPIC_FAKE_LEADER_PLAN = f"{NS}/teleop/fake_leader_plan"


def image_topic(camera: str) -> str:
    """Raw camera image (sensor_msgs/Image, rgb8)."""
    _check_camera(camera)
    return f"/{camera}/image_raw"


def camera_info_topic(camera: str) -> str:
    _check_camera(camera)
    return f"/{camera}/camera_info"


def cued_image_topic(camera: str) -> str:
    """What the policy sees after the evaluator's visual-cue overlay."""
    _check_camera(camera)
    return f"{NS}/cued/{camera}/image_raw"


#: RealSense extras beside the contract's images (realsense-ros names): depth registered to the
#: colour image (16UC1), and colour at the stream's own size (for the marker tracker)
DEPTH_SUFFIX = "aligned_depth_to_color"


def depth_image_topic(camera: str) -> str:
    """`/<camera>/aligned_depth_to_color/image_raw` (16UC1, registered to the colour image)."""
    _check_camera(camera)
    return f"/{camera}/{DEPTH_SUFFIX}/image_raw"


def depth_camera_info_topic(camera: str) -> str:
    _check_camera(camera)
    return f"/{camera}/{DEPTH_SUFFIX}/camera_info"


def full_image_topic(camera: str) -> str:
    """`/<camera>/color/image_raw`: colour at the stream's own size (for the marker tracker)."""
    _check_camera(camera)
    return f"/{camera}/color/image_raw"


def full_camera_info_topic(camera: str) -> str:
    _check_camera(camera)
    return f"/{camera}/color/camera_info"


def camera_names() -> tuple[str, ...]:
    """The contract cameras (topic names) of every declared embodiment, in declaration order."""
    return tuple(dict.fromkeys(c for e in EMBODIMENTS.values() for c in e.camera_names))


def _check_camera(camera: str) -> None:
    if camera not in camera_names():
        raise ValueError(f"unknown camera {camera!r}; expected one of {camera_names()}")


WORLD_FRAME = "world"
WORLD_NS_OBJECTS = "objects"
WORLD_NS_TCP = "tcp"
WORLD_NS_CAMERAS = "cameras"  # a camera's pose (ARROW), when the sim publishes it

# -------------------------------------------------------------------- episode control
# JSON messages on TOPIC_EPISODE_CONTROL ("kind" field):
#   {"kind": "begin", "episode": str, "task": {...}, "seed": int, "instruction": str,
#    "max_policy_calls": int, "max_actions_per_call": int,
#    "charged_latency_ms": [float, ...] | "measured"}   (optional: charged latency, sim only;
#        one value per policy call in ms, or the sim's own wall-clock wait for each chunk)
#   {"kind": "start", "episode": str}   (sim publishes its first observation)
#   {"kind": "end", "episode": str}
# JSON messages on TOPIC_EPISODE_STATUS ("kind" field):
#   {"kind": "ready", "episode": str, "tick": 0, "stamp": float}   (sim: reset done)
#   {"kind": "chunk_done", "episode": str, "tick": int, "calls": int}
#   {"kind": "done", "episode": str, "ticks": int, "calls": int, "reason": str,
#    "charged_latency_ms": [float, ...], "observation_period": int}   (charged latency: what
#        each call was charged, and the sim's observation period, 0 = when a chunk is used up)
#   {"kind": "error", "episode": str, "message": str}
# JSON messages on TOPIC_POLICY_STATUS ("kind" field):
#   {"kind": "ready", "episode": str}   (policy reset and instructed)
#   {"kind": "predicted", "episode": str, "call": int, "latency_ms": float}
#   {"kind": "error", "episode": str, "message": str}
CONTROL_BEGIN = "begin"
CONTROL_START = "start"
CONTROL_END = "end"
STATUS_READY = "ready"
STATUS_CHUNK_DONE = "chunk_done"
STATUS_DONE = "done"
STATUS_ERROR = "error"
STATUS_PREDICTED = "predicted"
#: an end's "demo" field in teleop (record-demos): "save" (the robot node sends the episode's
#: done first, so its bag is complete) or "discard" (no done: its bag is not filed)
DEMO_SAVE, DEMO_DISCARD = "save", "discard"


def charged_ticks(latency_ms: float, dt: float) -> int:
    """Control ticks a policy call of ``latency_ms`` occupies: ``ceil(L / dt)`` (an exact
    multiple of the period is that many ticks, 0 ms is none)."""
    return max(0, math.ceil(float(latency_ms) / (1000.0 * dt) - 1e-9))


def validate_chunk(chunk, dim: int | None = None) -> np.ndarray:
    """[H, dim] finite absolute targets, else ValueError naming the expected shape."""
    dim = ALOHA_PIPER.action_dim if dim is None else dim
    arr = np.asarray(chunk, dtype=float)
    if arr.ndim != 2 or arr.shape[1] != dim or arr.shape[0] == 0:
        raise ValueError(f"action chunk must have shape [H, {dim}] with H >= 1, got {list(arr.shape)}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"action chunk contains NaN or Inf (expected finite [H, {dim}] targets)")
    return arr

# -------------------------------------------------------------------- message schemas
# What a node checks BEFORE it adopts anything from an episode control/status message: a
# malformed one is logged and ignored (vla_bridge.ros.messages.parse_control/parse_status).
CONTROL_KINDS = (CONTROL_BEGIN, CONTROL_START, CONTROL_END)
_NUMBER = (int, float)
_OPTIONAL_STR = (str, type(None))
#: the begin message's fields and their types (checked when present; a node requires those it
#: reads), and the smallest value of its integers
BEGIN_FIELDS = {"task": (dict,), "seed": (int,), "instruction": (str,),
                "max_policy_calls": (int,), "max_actions_per_call": (int,), "max_steps": (int,),
                "cue_protocol": _OPTIONAL_STR, "cue_task": (dict, type(None)),
                "cue_family": _OPTIONAL_STR, "cue_variant": _OPTIONAL_STR,
                "cue_placement": _OPTIONAL_STR, "charged_latency_ms": (list, str, type(None))}
CHARGED_MEASURED = "measured"  # charged_latency_ms: the sim's wall-clock wait for each chunk
#: the longest latency a policy call may be charged (ms): a minute of sim time per call is
#: already twice RoboFollow's whole default episode; beyond it a value is a typo or a unit
#: slip, refused in one line (``latency_ms 10000000`` would hold the sim for days)
MAX_CHARGED_LATENCY_MS = 60_000.0
BEGIN_MINIMUM = {"seed": 0, "max_policy_calls": 1, "max_actions_per_call": 1, "max_steps": 1}
#: per status source: its kinds and the fields each must carry (beyond kind and episode)
STATUS_KINDS = {
    "sim": {STATUS_READY: {"stamp": _NUMBER}, STATUS_CHUNK_DONE: {},
            STATUS_DONE: {"ticks": (int,), "calls": (int,)}, STATUS_ERROR: {}},
    "policy": {STATUS_READY: {}, STATUS_PREDICTED: {}, STATUS_ERROR: {}},
}
#: status fields checked when present
STATUS_FIELDS = {"message": (str,), "reason": (str,), "timing": (dict,), "latency_ms": (dict,),
                 "inference_ms": _NUMBER, "overhead_ms": _NUMBER, "tick": (int,),
                 "calls": (int,), "call": (int,), "charged_latency_ms": (list,),
                 "observation_period": (int,), "note": (str,)}


def check_control(payload: dict, require=(), task_keys=()) -> dict:
    """``payload`` if it is a well-formed episode-control message, else ValueError saying why:
    a known kind, a non-empty episode id and, for ``begin``, BEGIN_FIELDS' types, the fields
    in ``require`` and the string fields ``task_keys`` of its task."""
    kind = payload.get("kind")
    if kind not in CONTROL_KINDS:
        raise ValueError(f"unknown control kind {kind!r}; expected one of {list(CONTROL_KINDS)}")
    _check_episode(payload)
    if kind == CONTROL_BEGIN:
        _check_fields(payload, BEGIN_FIELDS, require)
        for key, low in BEGIN_MINIMUM.items():
            if payload.get(key, low) < low:
                raise ValueError(f"field {key!r} must be >= {low}, got {payload[key]}")
        _check_fields(payload.get("task") or {}, dict.fromkeys(task_keys, (str,)), task_keys,
                      "task.")
        check_charged_latency(payload.get("charged_latency_ms"))
    return payload


def check_charged_latency(value) -> None:
    """None, "measured" or a list of finite latencies of 0 .. MAX_CHARGED_LATENCY_MS ms (bool
    is not a number)."""
    if value is None or value == CHARGED_MEASURED:
        return
    if isinstance(value, str):
        raise ValueError(f"field 'charged_latency_ms' must be a list of ms or "
                         f"{CHARGED_MEASURED!r}, got {value!r:.80}")
    bad = [v for v in value if isinstance(v, bool) or not isinstance(v, _NUMBER)
           or not math.isfinite(v) or v < 0]
    if bad:
        raise ValueError(f"field 'charged_latency_ms' must hold finite latencies >= 0 ms, "
                         f"got {bad[0]!r:.80}")
    long = [v for v in value if v > MAX_CHARGED_LATENCY_MS]
    if long:
        raise ValueError(f"field 'charged_latency_ms' holds {long[0]!r:.40} ms, more than "
                         f"{MAX_CHARGED_LATENCY_MS:.0f} ms per policy call")


def check_status(payload: dict, source: str) -> dict:
    """``payload`` if it is a well-formed status of ``source`` ("sim" or "policy"), else
    ValueError: a kind of STATUS_KINDS[source], an episode id and the fields that kind needs."""
    kinds = STATUS_KINDS[source]
    kind = payload.get("kind")
    if kind not in kinds:
        raise ValueError(f"unknown {source} status kind {kind!r}; expected one of {list(kinds)}")
    _check_episode(payload)
    _check_fields(payload, {**STATUS_FIELDS, **kinds[kind]}, tuple(kinds[kind]))
    return payload


def _check_episode(payload: dict) -> None:
    episode = payload.get("episode")
    if not isinstance(episode, str) or not episode:
        raise ValueError(f"{payload['kind']!r} message needs a non-empty string 'episode', "
                         f"got {episode!r}")


def _check_fields(payload: dict, types: dict, require=(), prefix: str = "") -> None:
    missing = [f"{prefix}{key}" for key in require if key not in payload]
    if missing:
        raise ValueError(f"the message lacks {', '.join(missing)}")
    for key, allowed in types.items():
        value = payload.get(key)
        if key in payload and (not isinstance(value, allowed)
                               or (isinstance(value, bool) and bool not in allowed)):
            names = " or ".join(t.__name__ for t in allowed)
            raise ValueError(f"field {prefix}{key!r} must be {names}, got {value!r:.80}")


# ------------------------------------------------------------------------- recording
# What `record:=true` writes into each episode's rosbag2 bag (data/recorder_node.py):
# every topic an episode uses, with its ROS 2 message type. Status of the recorder itself:
#   {"kind": "recording", "episode": str}   (the episode's bag is open)
#   {"kind": "recorded", "episode": str, "bag": str, "messages": int}   (closed and complete)
TOPIC_RECORDER_STATUS = f"{NS}/recorder/status"  # std_msgs/String JSON, recorder -> evaluator
RECORDER_RECORDING = "recording"
RECORDER_RECORDED = "recorded"
RECORDER_INCOMPLETE = "incomplete"  # the bag is kept under bags/.partial/: its episode did not end
RECORDER_FAILED = "failed"  # the recorder cannot write bags (a full disk): it records no more


# Dense frames for datasets (sim `record_fps`): the cameras, the measured joints and the
# executed target at a fixed rate on the physics clock, all with one stamp per frame. They have
# topics of their own so that no policy takes them for observations.
TOPIC_RECORD_JOINT_STATES = f"{NS}/record/joint_states"  # sensor_msgs/JointState
TOPIC_RECORD_JOINT_COMMANDS = f"{NS}/record/joint_commands"  # sensor_msgs/JointState


def record_image_topic(camera: str) -> str:
    """`/vla_bridge/record/<camera>/image_raw`: the camera at the recording rate."""
    _check_camera(camera)
    return f"{NS}/record/{camera}/image_raw"


def recorded_topics() -> dict[str, str]:
    """Topic -> message type ("pkg/msg/Type") of everything an episode's bag holds."""
    topics = {
        TOPIC_CLOCK: "rosgraph_msgs/msg/Clock",
        TOPIC_JOINT_STATES: "sensor_msgs/msg/JointState",
        TOPIC_JOINT_COMMANDS: "sensor_msgs/msg/JointState",
        TOPIC_ACTION_CHUNK: "trajectory_msgs/msg/JointTrajectory",
        TOPIC_INSTRUCTION: "std_msgs/msg/String",
        TOPIC_WORLD_STATE: "visualization_msgs/msg/MarkerArray",
        TOPIC_FRAMES: "std_msgs/msg/Float64MultiArray",
        TOPIC_EPISODE_CONTROL: "std_msgs/msg/String",
        TOPIC_EPISODE_STATUS: "std_msgs/msg/String",
        TOPIC_POLICY_STATUS: "std_msgs/msg/String",
        TOPIC_POLICY_HEARTBEAT: "std_msgs/msg/Header",
        TOPIC_RECORD_JOINT_STATES: "sensor_msgs/msg/JointState",
        TOPIC_RECORD_JOINT_COMMANDS: "sensor_msgs/msg/JointState",
    }
    for camera in camera_names():
        topics[image_topic(camera)] = "sensor_msgs/msg/Image"
        topics[camera_info_topic(camera)] = "sensor_msgs/msg/CameraInfo"
        topics[cued_image_topic(camera)] = "sensor_msgs/msg/Image"
        topics[record_image_topic(camera)] = "sensor_msgs/msg/Image"
    return topics


#: Recorded topics whose publisher is latched (transient local): the recorder subscribes
#: the same way, so a message sent just before the bag opened still reaches it.
LATCHED_TOPICS = frozenset({TOPIC_INSTRUCTION})
STATUS_KINDS["recorder"] = {RECORDER_RECORDING: {},
                            RECORDER_RECORDED: {"bag": (str,), "messages": (int,)},
                            RECORDER_INCOMPLETE: {"bag": (str,), "messages": (int,),
                                                  "reason": (str,)},
                            RECORDER_FAILED: {"reason": (str,)}}


# ------------------------------------------------------------------------- embodiments
# The same topic names carry every embodiment; what differs is declared here, once per
# embodiment, and every node of a graph states the one it speaks. A graph agrees on one
# embodiment when it starts (`agree_embodiment`), or it refuses to start with a message that
# names both sides. On the topics:
# * joint_states / joint_commands carry the embodiment's `state_names` / `action_names` (a
#   JointState is a named float vector; for an end-effector embodiment the "joints" are the
#   named components, in the order and units declared here);
# * action_chunk (JointTrajectory) carries `action_names`; for `eef_delta` actions each
#   point is one control step's delta command, not an absolute target;
# * images go out on the contract cameras named in `cameras` (topic name -> the simulator's
#   own camera), upright, at `image_size`;
# * the gripper action is the contract's normalised opening everywhere (1 = open, 0 =
#   closed); each embodiment's `gripper` says how its edge converts it.
ACTION_JOINT_ABSOLUTE = "joint_absolute"  # absolute joint targets, radians (+ gripper)
ACTION_EEF_DELTA = "eef_delta"  # end-effector deltas per control step (+ gripper)


@dataclass(frozen=True)
class Embodiment:
    """What a graph's nodes must agree on: names, action kind, dimensions, units, gripper
    convention and cameras (see the block comment above)."""
    name: str
    description: str
    action_kind: str  # ACTION_JOINT_ABSOLUTE or ACTION_EEF_DELTA
    action_names: tuple[str, ...]
    action_units: tuple[str, ...]  # one per action component
    state_names: tuple[str, ...]
    state_units: tuple[str, ...]  # one per state component
    gripper: str  # the convention on the wire and how the embodiment's edge converts it
    cameras: tuple[tuple[str, str], ...]  # (contract camera = topic name, simulator camera)
    image_size: tuple[int, int]  # (width, height) of the published images
    control_period: float  # seconds per executed action
    #: the published images are the cameras' views mirrored left-right (LIBERO's renders
    #: turned as openpi's LIBERO client turns them: a cue projection must mirror too)
    mirrored_images: bool = False

    @property
    def action_dim(self) -> int:
        return len(self.action_names)

    @property
    def state_dim(self) -> int:
        return len(self.state_names)

    @property
    def camera_names(self) -> tuple[str, ...]:
        """The contract cameras (topic names) this embodiment publishes, in order."""
        return tuple(c for c, _ in self.cameras)

    def summary(self) -> str:
        """One line naming what differs between embodiments (for refusal messages)."""
        w, h = self.image_size
        return (f"{self.name}: {self.action_dim}-D {self.action_kind} actions, "
                f"{self.state_dim}-D state, cameras {', '.join(self.camera_names)} at {w}x{h}")


_PAIR_UNITS = tuple("normalised" if n.endswith(GRIPPER) else "rad" for n in joint_names())
ALOHA_PIPER = Embodiment(
    name="aloha_piper",
    description="the PiPER pair in ALOHA order (sim: MuJoCo RoboFollow; real: piper_sdk)",
    action_kind=ACTION_JOINT_ABSOLUTE,
    action_names=tuple(joint_names()),
    action_units=_PAIR_UNITS,
    state_names=tuple(joint_names()),
    state_units=_PAIR_UNITS,
    gripper="normalised opening, 1 = open, 0 = closed (state and action); openpi ALOHA and "
            "piper_sdk convert at their edges",
    cameras=tuple((c, c) for c in ("cam_high", "cam_left_wrist", "cam_right_wrist")),
    image_size=(320, 240),
    control_period=0.06,
)

#: LIBERO's Panda with robosuite's OSC_POSE controller (libero 0.1.1, robosuite 1.4.0): 20 Hz
#: control; an action is [dx, dy, dz, droll, dpitch, dyaw, gripper] where the six deltas are
#: normalised to [-1, 1] (the controller scales them to +-0.05 m and +-0.5 rad per step, in
#: the robot base frame); the state is openpi's LIBERO state: end-effector position (m),
#: orientation as an axis-angle vector (rad) and the two finger joint positions (m).
LIBERO_PANDA = Embodiment(
    name="libero_panda",
    description="LIBERO's Panda arm with robosuite's OSC_POSE controller (LIBERO task suites)",
    action_kind=ACTION_EEF_DELTA,
    action_names=("eef_dx", "eef_dy", "eef_dz", "eef_droll", "eef_dpitch", "eef_dyaw",
                  "gripper"),
    action_units=("normalised [-1, 1] (x 0.05 m)",) * 3
    + ("normalised [-1, 1] (x 0.5 rad)",) * 3 + ("normalised",),
    state_names=("eef_x", "eef_y", "eef_z", "eef_axis_angle_x", "eef_axis_angle_y",
                 "eef_axis_angle_z", "finger_left", "finger_right"),
    state_units=("m",) * 3 + ("rad",) * 3 + ("m",) * 2,
    gripper="action: normalised opening, 1 = open, 0 = closed; the LIBERO edge sends "
            "1 - 2 g (LIBERO's -1 = open, +1 = close); state: the two finger joints in m, as "
            "LIBERO reports them",
    cameras=(("cam_high", "agentview"), ("cam_left_wrist", "robot0_eye_in_hand")),
    image_size=(256, 256),
    control_period=0.05,
    # robosuite renders bottom-up (OpenGL rows) and openpi's client sends img[::-1, ::-1]:
    # rows upright again, columns reversed, so the image is the view mirrored left-right
    mirrored_images=True,
)

EMBODIMENTS = {e.name: e for e in (ALOHA_PIPER, LIBERO_PANDA)}
DEFAULT_EMBODIMENT = ALOHA_PIPER.name


def get_embodiment(name: str) -> Embodiment:
    """The declared embodiment called `name`, else ValueError listing the known ones."""
    if name not in EMBODIMENTS:
        raise ValueError(f"unknown embodiment {name!r}; declared: {sorted(EMBODIMENTS)}")
    return EMBODIMENTS[name]


class EmbodimentMismatch(ValueError):
    """Two nodes of one graph declared different embodiments."""


def agree_embodiment(declared: dict[str, str]) -> Embodiment:
    """The one embodiment every side declares ({side: embodiment name}, e.g. {"sim_node":
    "libero_panda", "policy_node": "aloha_piper"}), else EmbodimentMismatch naming both
    sides of the first disagreement and what each declared."""
    if not declared:
        raise ValueError("no side declared an embodiment")
    sides = list(declared.items())
    first_side, first = sides[0]
    reference = get_embodiment(first)
    for side, name in sides[1:]:
        if name != first:
            other = get_embodiment(name)
            raise EmbodimentMismatch(
                f"embodiment mismatch: {first_side} speaks {reference.summary()}; {side} "
                f"speaks {other.summary()}. A graph runs one embodiment: launch a policy for "
                f"{first!r} or a sim for {name!r}")
    return reference


#: The sim's and the policy's `ready` status name the embodiment they speak (the LIBERO
#: evaluator checks that they agree before its first episode runs).
STATUS_FIELDS["embodiment"] = (str,)
