"""rclpy-side helpers: QoS from the contract, and message <-> numpy/data conversions.

The contract (`vla_bridge.contract`) describes topics as data; this module is where that data
meets rclpy. Every node converts through here, so the conventions (units, joint order,
quaternion order, world-state markers) are applied in one place.

Speed: image conversion never loops over pixels in Python. `image_to_msg` hands the message a
ready `array.array('B')` (the generated setter accepts it without inspecting each element) and
`msg_to_image` is a zero-copy `np.frombuffer` view over the message's buffer.
"""
from __future__ import annotations

import array
import json
import math
import sys
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import ColorRGBA, Float64MultiArray, MultiArrayDimension, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from visualization_msgs.msg import Marker, MarkerArray

from vla_bridge.contract import (WORLD_FRAME, WORLD_NS_CAMERAS, WORLD_NS_OBJECTS, WORLD_NS_TCP,
                                 Embodiment, QosSpec, check_control, check_status)
from vla_bridge.embodiment.world import CameraPose, ObjectState, TcpState, WorldState

# ------------------------------------------------------------------------------- QoS


def qos_profile(spec: QosSpec) -> QoSProfile:
    """The rclpy QoS profile for a contract `QosSpec` (keep-last history of `depth`)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=spec.depth,
        reliability=ReliabilityPolicy.RELIABLE if spec.reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=(DurabilityPolicy.TRANSIENT_LOCAL if spec.transient_local
                    else DurabilityPolicy.VOLATILE),
    )

# ------------------------------------------------------------------------------ time

_NS_PER_S = 1_000_000_000


def sec_to_stamp(t: float) -> Time:
    """Seconds (float, >= 0) -> builtin_interfaces/Time, rounded to the nanosecond."""
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"a stamp must be a finite, non-negative number of seconds, got {t!r}")
    sec, nanosec = divmod(round(t * _NS_PER_S), _NS_PER_S)
    return Time(sec=int(sec), nanosec=int(nanosec))


def stamp_ns(stamp: Time) -> int:
    """Integer nanoseconds of a stamp: exact keys for matching messages of one tick."""
    return stamp.sec * 10**9 + stamp.nanosec


def stamp_to_sec(stamp: Time | Duration) -> float:
    """builtin_interfaces/Time (or Duration) -> float seconds."""
    return stamp.sec + stamp.nanosec * 1e-9


def sec_to_duration(t: float) -> Duration:
    sec, nanosec = divmod(round(t * _NS_PER_S), _NS_PER_S)
    return Duration(sec=int(sec), nanosec=int(nanosec))


def clock_msg(t: float) -> Clock:
    """rosgraph_msgs/Clock for simulated time `t` seconds (published on /clock)."""
    return Clock(clock=sec_to_stamp(t))

# ---------------------------------------------------------------------------- images

# encoding -> (channels, numpy dtype); the encodings the graph uses or is likely to meet
_ENCODINGS: dict[str, tuple[int, np.dtype]] = {
    "rgb8": (3, np.dtype(np.uint8)),
    "bgr8": (3, np.dtype(np.uint8)),
    "rgba8": (4, np.dtype(np.uint8)),
    "bgra8": (4, np.dtype(np.uint8)),
    "mono8": (1, np.dtype(np.uint8)),
    "16UC1": (1, np.dtype(np.uint16)),
    "32FC1": (1, np.dtype(np.float32)),
}


def _encoding_layout(encoding: str) -> tuple[int, np.dtype]:
    try:
        return _ENCODINGS[encoding]
    except KeyError:
        raise ValueError(
            f"unsupported image encoding {encoding!r}; supported: {sorted(_ENCODINGS)}") from None


def image_to_msg(image: np.ndarray, stamp_s: float, frame_id: str,
                 encoding: str = "rgb8") -> Image:
    """(H, W, C) or (H, W) array -> sensor_msgs/Image, one memory copy, no Python pixel loop."""
    channels, dtype = _encoding_layout(encoding)
    want_shape = ("H", "W") if channels == 1 else ("H", "W", channels)
    if image.dtype != dtype or image.ndim != len(want_shape) or image.shape[2:] != want_shape[2:]:
        raise ValueError(f"{encoding} image must be ({', '.join(map(str, want_shape))}) {dtype}, "
                         f"got {image.shape} {image.dtype}")
    image = np.ascontiguousarray(image)
    height, width = image.shape[:2]
    data = array.array("B")
    data.frombytes(image.reshape(-1).view(np.uint8))  # buffer protocol: a single memcpy
    msg = Image(height=height, width=width, encoding=encoding,
                is_bigendian=int(dtype.itemsize > 1 and sys.byteorder == "big"),
                step=width * channels * dtype.itemsize)
    msg.header.stamp = sec_to_stamp(stamp_s)
    msg.header.frame_id = frame_id
    msg.data = data  # the setter keeps an array.array('B') as is
    return msg


def msg_to_image(msg: Image) -> np.ndarray:
    """sensor_msgs/Image -> (H, W, C) or (H, W) array that VIEWS the message's buffer.

    Rows padded to `step` bytes are handled by strides (still no copy). Channels stay in
    the message's order (bgr8 stays BGR). Copy the result if you keep it after the message
    may change.
    """
    channels, dtype = _encoding_layout(msg.encoding)
    row_bytes = msg.width * channels * dtype.itemsize
    if msg.step < row_bytes or len(msg.data) < msg.step * msg.height:
        raise ValueError(
            f"{msg.encoding} image {msg.width}x{msg.height} needs step >= {row_bytes} and "
            f">= {row_bytes * msg.height} bytes; got step {msg.step}, {len(msg.data)} bytes")
    if dtype.itemsize > 1 and bool(msg.is_bigendian) != (sys.byteorder == "big"):
        dtype = dtype.newbyteorder()
    if channels == 1:
        shape, strides = (msg.height, msg.width), (msg.step, dtype.itemsize)
    else:
        shape = (msg.height, msg.width, channels)
        strides = (msg.step, channels * dtype.itemsize, dtype.itemsize)
    return np.ndarray(shape=shape, dtype=dtype, buffer=msg.data, strides=strides)


def camera_info_msg(width: int, height: int, focal_px: float, stamp_s: float,
                    frame_id: str) -> CameraInfo:
    """Pinhole CameraInfo (square pixels, centred principal point, no distortion)."""
    cx, cy = (width - 1) / 2.0, (height - 1) / 2.0
    msg = CameraInfo(width=width, height=height, distortion_model="plumb_bob")
    msg.header.stamp = sec_to_stamp(stamp_s)
    msg.header.frame_id = frame_id
    msg.d = [0.0] * 5
    msg.k = [focal_px, 0.0, cx, 0.0, focal_px, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [focal_px, 0.0, cx, 0.0, 0.0, focal_px, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg

# ---------------------------------------------------------------------------- joints


def _float64_array(values: np.ndarray) -> array.array:
    out = array.array("d")
    out.frombytes(np.ascontiguousarray(values, dtype=np.float64).reshape(-1).view(np.uint8))
    return out


def joint_state_msg(names: Sequence[str], positions: np.ndarray | Sequence[float],
                    stamp_s: float, velocities: np.ndarray | None = None) -> JointState:
    """sensor_msgs/JointState with `positions` in the order of `names`."""
    positions = np.asarray(positions, dtype=np.float64)
    if positions.shape != (len(names),):
        raise ValueError(f"JointState needs {len(names)} positions for joints {list(names)}, "
                         f"got shape {positions.shape}")
    msg = JointState(name=list(names))
    msg.header.stamp = sec_to_stamp(stamp_s)
    msg.position = _float64_array(positions)
    if velocities is not None:
        msg.velocity = _float64_array(np.asarray(velocities, dtype=np.float64))
    return msg


def _name_order(got: Sequence[str], expected: Sequence[str], what: str) -> np.ndarray:
    """Indices into `got` that produce `expected` order; clear error if names don't match."""
    index = {name: i for i, name in enumerate(got)}
    missing = [n for n in expected if n not in index]
    if missing:
        raise ValueError(f"{what} lacks joints {missing}; expected names {list(expected)}, "
                         f"got {list(got)}")
    return np.fromiter((index[n] for n in expected), dtype=np.intp, count=len(expected))


def joint_state_to_array(msg: JointState, expected_names: Sequence[str]) -> np.ndarray:
    """Positions of `expected_names` (in that order) from a JointState of any order."""
    if len(msg.position) != len(msg.name):
        raise ValueError(f"JointState has {len(msg.name)} names but {len(msg.position)} "
                         f"positions")
    order = _name_order(msg.name, expected_names, "JointState")
    return np.asarray(msg.position, dtype=np.float64)[order]

# ---------------------------------------------------------------------- action chunks


def chunk_to_msg(chunk: np.ndarray, names: Sequence[str], stamp_s: float,
                 dt: float) -> JointTrajectory:
    """[H, D] absolute joint targets -> JointTrajectory; point k at (k + 1) * dt."""
    chunk = np.asarray(chunk, dtype=np.float64)
    _check_chunk(chunk, names)
    msg = JointTrajectory(joint_names=list(names))
    msg.header.stamp = sec_to_stamp(stamp_s)
    msg.points = [
        JointTrajectoryPoint(positions=_float64_array(row),
                             time_from_start=sec_to_duration((k + 1) * dt))
        for k, row in enumerate(chunk)
    ]
    return msg


def msg_to_chunk(msg: JointTrajectory, expected_names: Sequence[str]) -> np.ndarray:
    """JointTrajectory -> [H, D] array in `expected_names` order.

    Raises ValueError naming the expected shape and joints on an empty chunk, missing or
    unknown joint names, points of the wrong length, or non-finite targets.
    """
    want = f"an action chunk of shape [H, {len(expected_names)}] for joints {list(expected_names)}"
    if not msg.points:
        raise ValueError(f"empty action chunk (no points); expected {want}")
    unknown = sorted(set(msg.joint_names) - set(expected_names))
    if unknown or len(msg.joint_names) != len(expected_names):
        raise ValueError(f"action chunk has joint names {list(msg.joint_names)} "
                         f"(unknown: {unknown}); expected {want}")
    order = _name_order(msg.joint_names, expected_names, "action chunk")
    width = len(msg.joint_names)
    for k, point in enumerate(msg.points):
        if len(point.positions) != width:
            raise ValueError(f"action chunk point {k} has {len(point.positions)} positions; "
                             f"expected {want}")
    chunk = np.array([p.positions for p in msg.points], dtype=np.float64)[:, order]
    _check_chunk(chunk, expected_names)
    return chunk


def _check_chunk(chunk: np.ndarray, names: Sequence[str]) -> None:
    want = f"[H, {len(names)}] for joints {list(names)}"
    if chunk.ndim != 2 or chunk.shape[1] != len(names):
        raise ValueError(f"action chunk must have shape {want}, got {chunk.shape}")
    if chunk.shape[0] == 0:
        raise ValueError(f"empty action chunk; expected shape {want} with H >= 1")
    bad = ~np.isfinite(chunk)
    if bad.any():
        step, joint = map(int, np.argwhere(bad)[0])
        raise ValueError(f"action chunk has {int(bad.sum())} non-finite targets (NaN/Inf), "
                         f"first at step {step}, joint {names[joint]!r}")

# ------------------------------------------------------------------------ world state

_SHAPE_TO_MARKER = {"box": Marker.CUBE, "sphere": Marker.SPHERE,
                    "cylinder": Marker.CYLINDER, "mesh": Marker.MESH_RESOURCE}
_MARKER_TO_SHAPE = {v: k for k, v in _SHAPE_TO_MARKER.items()}
# TCPs are drawn as arrows along their local +x (the approach axis): length, shaft, head
_TCP_ARROW_SCALE = (0.08, 0.01, 0.015)
_TCP_COLOUR = (1.0, 0.5, 0.0, 1.0)
# cameras as arrows along their local +x (a viewer shows where they sit; the pose is the data)
_CAMERA_ARROW_SCALE = (0.05, 0.008, 0.012)
_CAMERA_COLOUR = (0.2, 0.6, 1.0, 1.0)


def _pose(pos: np.ndarray, quat_wxyz: np.ndarray) -> Pose:
    x, y, z = (float(v) for v in pos)
    w, qx, qy, qz = (float(v) for v in quat_wxyz)
    return Pose(position=Point(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=w))


def _pos_quat(pose: Pose) -> tuple[np.ndarray, np.ndarray]:
    p, q = pose.position, pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z])


def _marker(ns: str, marker_id: int, name: str, kind: int, pose: Pose, scale, rgba,
            header) -> Marker:
    r, g, b, a = (float(v) for v in rgba)
    sx, sy, sz = (float(v) for v in scale)
    return Marker(header=header, ns=ns, id=marker_id, type=kind, action=Marker.ADD, pose=pose,
                  scale=Vector3(x=sx, y=sy, z=sz), color=ColorRGBA(r=r, g=g, b=b, a=a),
                  text=name)


def world_state_to_msg(world: WorldState, frame: str = WORLD_FRAME,
                       clear: bool = True) -> MarkerArray:
    """WorldState -> MarkerArray per the contract (namespaces `objects`, `tcp` and, when the
    sim publishes its cameras' poses, `cameras`).

    With `clear`, a leading DELETEALL marker makes viewers drop the previous episode's
    objects; parsers ignore it.
    """
    msg = MarkerArray()
    template = Marker()
    template.header.stamp = sec_to_stamp(world.stamp)
    template.header.frame_id = frame
    if clear:
        msg.markers.append(Marker(header=template.header, action=Marker.DELETEALL))
    for i, obj in enumerate(world.objects.values()):
        if obj.shape not in _SHAPE_TO_MARKER:
            raise ValueError(f"object {obj.name!r} has unknown shape {obj.shape!r}; "
                             f"expected one of {sorted(_SHAPE_TO_MARKER)}")
        msg.markers.append(_marker(WORLD_NS_OBJECTS, i, obj.name, _SHAPE_TO_MARKER[obj.shape],
                                   _pose(obj.pos, obj.quat), obj.size, obj.rgba,
                                   template.header))
    for i, (arm, tcp) in enumerate(world.tcp.items()):
        msg.markers.append(_marker(WORLD_NS_TCP, i, arm, Marker.ARROW, _pose(tcp.pos, tcp.quat),
                                   _TCP_ARROW_SCALE, _TCP_COLOUR, template.header))
    for i, (name, cam) in enumerate(world.cameras.items()):
        msg.markers.append(_marker(WORLD_NS_CAMERAS, i, name, Marker.ARROW,
                                   _pose(cam.pos, cam.quat), _CAMERA_ARROW_SCALE,
                                   _CAMERA_COLOUR, template.header))
    return msg


def refresh_world_state_msg(msg: MarkerArray, world: WorldState) -> MarkerArray:
    """Update `msg` (made by world_state_to_msg for the same objects and arms) in place with
    the poses and stamp of `world`: the per-tick fast path, ~4x cheaper than rebuilding.
    Falls back to a rebuild when the bodies differ."""
    markers = [m for m in msg.markers if m.action == Marker.ADD]
    bodies = [(WORLD_NS_OBJECTS, name) for name in world.objects] + \
             [(WORLD_NS_TCP, arm) for arm in world.tcp] + \
             [(WORLD_NS_CAMERAS, cam) for cam in world.cameras]
    if [(m.ns, m.text) for m in markers] != bodies:
        return world_state_to_msg(world, clear=False)
    stamp = sec_to_stamp(world.stamp)
    poses = [(o.pos, o.quat) for o in world.objects.values()] + \
            [(t.pos, t.quat) for t in world.tcp.values()] + \
            [(c.pos, c.quat) for c in world.cameras.values()]
    for marker, (pos, quat) in zip(markers, poses):
        marker.header.stamp = stamp
        p, q = marker.pose.position, marker.pose.orientation
        p.x, p.y, p.z = float(pos[0]), float(pos[1]), float(pos[2])
        q.w, q.x, q.y, q.z = float(quat[0]), float(quat[1]), float(quat[2]), float(quat[3])
    return msg


# ------------------------------------------------------------------- scoring frames
_FRAME_POSE = 7  # x, y, z, qw, qx, qy, qz


def frame_fields(command_dim: int, world: WorldState,
                 embodiment: Embodiment | None = None) -> list[tuple[str, int]]:
    """Fields of one frame row: stamp, command, then (a sim's rows, `embodiment` given) the
    measured joints and the tick's ``published`` bits, then one pose per TCP and per object."""
    fields = [("stamp", 1), ("command", command_dim)]
    if embodiment is not None:
        fields += [(f"state:{embodiment.name}", embodiment.state_dim), ("published", 1)]
    fields += [(f"tcp:{arm}", _FRAME_POSE) for arm in world.tcp]
    fields += [(f"obj:{name}", _FRAME_POSE) for name in world.objects]
    return fields


def frame_row(stamp_s: float, command: np.ndarray, world: WorldState,
              state: np.ndarray | None = None, published: int = 0) -> np.ndarray:
    """One tick's scoring record as a flat row, in the order of frame_fields() (`state` and
    `published` when the fields name an embodiment)."""
    poses = [np.concatenate([t.pos, t.quat]) for t in world.tcp.values()]
    poses += [np.concatenate([o.pos, o.quat]) for o in world.objects.values()]
    head = [[stamp_s], np.asarray(command, float)]
    if state is not None:
        head += [np.asarray(state, float), [float(published)]]
    return np.concatenate([*head, *poses])


def frames_msg(rows: np.ndarray, fields: list[tuple[str, int]]) -> Float64MultiArray:
    """A batch of frame rows [k, F] as std_msgs/Float64MultiArray (see contract TOPIC_FRAMES):
    dim[0] is ("ticks", k), the following dims name the fields of a row."""
    rows = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    width = sum(size for _, size in fields)
    if rows.shape[1] != width:
        raise ValueError(f"frame rows have {rows.shape[1]} values, the fields describe {width}")
    msg = Float64MultiArray()
    msg.layout.dim = [MultiArrayDimension(label="ticks", size=len(rows), stride=rows.size)]
    msg.layout.dim += [MultiArrayDimension(label=label, size=size, stride=size) for label, size in fields]
    msg.data = _float64_array(rows)
    return msg


def frame_table(msg: Float64MultiArray) -> tuple[np.ndarray, list]:
    """A frames message's rows [ticks, width] and its field dims, checked."""
    dims = list(msg.layout.dim)
    if not dims or dims[0].label != "ticks":
        raise ValueError("frames message must start with a 'ticks' dimension")
    data = np.frombuffer(msg.data, dtype=np.float64) if isinstance(msg.data, array.array) \
        else np.asarray(msg.data, dtype=np.float64)
    width = sum(d.size for d in dims[1:])
    if data.size != dims[0].size * width:
        raise ValueError(f"frames message has {data.size} values but its layout describes "
                         f"{dims[0].size} x {width}")
    return data.reshape(dims[0].size, width), dims[1:]


def parse_frames(msg: Float64MultiArray) -> list[tuple[float, np.ndarray, WorldState]]:
    """[(stamp, executed command, world poses)] for every tick in a frames message."""
    rows, dims = frame_table(msg)
    return [_parse_row(row, dims) for row in rows]


def _parse_row(row: np.ndarray, dims) -> tuple[float, np.ndarray, WorldState]:
    stamp, command, objects, tcp, offset = 0.0, np.zeros(0), {}, {}, 0
    for dim in dims:
        values = row[offset:offset + dim.size]
        offset += dim.size
        kind, _, name = dim.label.partition(":")
        if dim.label == "stamp":
            stamp = float(values[0])
        elif dim.label == "command":
            command = values.copy()
        elif kind == "tcp":
            tcp[name] = TcpState(pos=values[:3].copy(), quat=values[3:].copy())
        elif kind == "obj":
            objects[name] = ObjectState(name=name, pos=values[:3].copy(), quat=values[3:].copy(),
                                        size=np.zeros(3))
    return stamp, command, WorldState(stamp=stamp, objects=objects, tcp=tcp)


def msg_to_world_state(msg: MarkerArray) -> WorldState:
    """MarkerArray (contract layout) -> WorldState; markers of other namespaces are ignored."""
    objects: dict[str, ObjectState] = {}
    tcp: dict[str, TcpState] = {}
    cameras: dict[str, CameraPose] = {}
    stamp = 0.0
    for marker in msg.markers:
        if marker.action != Marker.ADD:
            continue
        stamp = stamp_to_sec(marker.header.stamp)
        pos, quat = _pos_quat(marker.pose)
        if marker.ns == WORLD_NS_OBJECTS:
            objects[marker.text] = _object_from_marker(marker, pos, quat)
        elif marker.ns == WORLD_NS_TCP:
            tcp[marker.text] = TcpState(pos=pos, quat=quat)
        elif marker.ns == WORLD_NS_CAMERAS:
            cameras[marker.text] = CameraPose(pos=pos, quat=quat)
    return WorldState(stamp=stamp, objects=objects, tcp=tcp, cameras=cameras)


def _object_from_marker(marker: Marker, pos: np.ndarray, quat: np.ndarray) -> ObjectState:
    if marker.type not in _MARKER_TO_SHAPE:
        raise ValueError(f"world-state object {marker.text!r} has marker type {marker.type}; "
                         f"expected CUBE, SPHERE, CYLINDER or MESH_RESOURCE")
    s, c = marker.scale, marker.color
    return ObjectState(name=marker.text, pos=pos, quat=quat, size=np.array([s.x, s.y, s.z]),
                       rgba=np.array([c.r, c.g, c.b, c.a]), shape=_MARKER_TO_SHAPE[marker.type])

# ------------------------------------------------------------------------------ JSON


def message_class(type_name: str):
    """The Python class of a ROS 2 message type named "pkg/msg/Type"."""
    from importlib import import_module
    package, _, name = type_name.split("/")
    return getattr(import_module(f"{package}.msg"), name)


def json_msg(payload: dict) -> String:
    """std_msgs/String carrying a JSON object (episode control/status)."""
    if not isinstance(payload, dict):
        raise TypeError(f"json_msg expects a dict, got {type(payload).__name__}")
    return String(data=json.dumps(payload, separators=(",", ":"), allow_nan=False))


def parse_json_msg(msg: String) -> dict:
    """The JSON object in a std_msgs/String; ValueError if it is not a JSON object."""
    try:
        return _json_object(msg.data)
    except ValueError as exc:
        raise ValueError(f"{exc}: {msg.data[:200]!r}") from None


def _json_object(data: str) -> dict:
    try:
        payload = json.loads(data)
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: '[' * 10**6
        raise ValueError(f"message is not JSON ({type(exc).__name__}: {exc})"[:200]) from None
    if not isinstance(payload, dict):
        raise ValueError(f"expected a JSON object, got {type(payload).__name__}")
    return payload


def excerpt(data: str, limit: int = 120) -> str:
    """The start of a message for a log line (the length when it is cut)."""
    return repr(data[:limit]) + (f"... ({len(data)} characters)" if len(data) > limit else "")


def parse_control(msg: String, logger, require=(), task_keys=()) -> dict | None:
    """An episode-control message checked against the contract (`contract.check_control`,
    with the begin fields this node reads); a malformed one is logged in one line and gives
    None, so a node never dies on, nor adopts anything from, a bad request."""
    return _parse(msg, logger, "episode control",
                  lambda payload: check_control(payload, require, task_keys))


def parse_status(msg: String, source: str, logger) -> dict | None:
    """A ``source`` ("sim" or "policy") status checked against the contract
    (`contract.check_status`); a malformed one is logged in one line and gives None."""
    return _parse(msg, logger, f"{source} status",
                  lambda payload: check_status(payload, source))


def _parse(msg: String, logger, what: str, check) -> dict | None:
    try:
        return check(_json_object(msg.data))
    except ValueError as exc:
        logger.error(f"ignored a malformed {what} message ({exc}): {excerpt(msg.data)}")
        return None


def guarded(node, callback, what: str):
    """``callback`` for a subscription of ``node``: an exception it raises on one message is
    logged (one line) instead of killing the node."""
    def handle(msg) -> None:
        try:
            callback(msg)
        except Exception as exc:  # noqa: BLE001 - one bad message must not stop the node
            node.get_logger().error(f"{what}: failed on a message: {exc!r}"[:500],
                                    throttle_duration_sec=1.0)
    return handle


# ------------------------------------------------------------------------ node main


def enable_stack_dumps() -> None:
    """SIGUSR1 prints every thread's Python stack to stderr (the launcher's --timeout asks a
    hung node where it is); a no-op where the signal does not exist."""
    import faulthandler
    import signal
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)


def spin_node(make_node, name: str, args=None) -> int:
    """Run a node until Ctrl-C or shutdown: the `main()` of every long-running node.

    Returns the process exit code: 0 on a clean stop, 1 (with the reason on stderr) when the
    node fails, so a launcher can report which node died and why. `make_node()` builds the
    node; a `close()` method, if the node has one, runs before it is destroyed.
    """
    import rclpy
    from rclpy.executors import ExternalShutdownException

    from vla_bridge.ros import cpu_profile

    enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        if cpu_profile.enabled():  # VLA_BRIDGE_CPU_PROFILE: `vla-bridge bench cpu`
            cpu_profile.install(node, sys.modules[__name__])
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except Exception as exc:  # noqa: BLE001 - the process boundary: report, exit non-zero
        print(f"{name}: fatal: {exc!r}", file=sys.stderr)
        return 1
    finally:
        if node is not None:
            getattr(node, "close", lambda: None)()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        cpu_profile.write(name)
    return 0
