"""openpi's wire, shared by our client (``openpi.client``) and our server (``openpi.serve``).

* msgpack-numpy frames (openpi's ``msgpack_numpy``): an ndarray is the map
  ``{b"__ndarray__": True, b"data": raw bytes, b"dtype": dtype.str, b"shape": shape}``, a
  numpy scalar ``{b"__npgeneric__": True, b"data": item, b"dtype": dtype.str}``. Only numeric
  dtypes (bool, integers, floats) cross the wire, in both directions; an array's shape must
  match its bytes exactly. Anything else is a ``WireError`` (a ValueError): a frame from
  outside never builds an object array over its bytes.
* the gripper conventions (ALOHA's normalised joint angle, LIBERO's -1/+1, ours 0..1);
* the key maps that say where each observation field sits in openpi's dicts.
"""
from __future__ import annotations

import json

import numpy as np

from vla_bridge import contract as C

# --------------------------------------------------------------------- msgpack-numpy
WIRE_KINDS = "biuf"  # numpy dtype kinds allowed on the wire: bool, int, uint, float
MAX_NDIM = 8


class WireError(ValueError):
    """A frame that is not valid msgpack-numpy (or carries a dtype we refuse)."""


def wire_dtype(spec) -> np.dtype:
    """The numeric numpy dtype named by a frame's ``dtype`` field; WireError otherwise."""
    if isinstance(spec, bytes):
        spec = spec.decode("ascii", "replace")
    if not isinstance(spec, str):
        raise WireError(f"dtype must be a string, got {type(spec).__name__}")
    try:
        dtype = np.dtype(spec)
    except (TypeError, ValueError) as exc:
        raise WireError(f"unknown dtype {spec[:40]!r}") from exc
    if dtype.kind not in WIRE_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise WireError(f"refused dtype {dtype.str!r}: only bool, integer and float arrays "
                        "cross the wire")
    return dtype


def _encode(obj):
    if isinstance(obj, (np.ndarray, np.generic)):
        wire_dtype(obj.dtype.str)
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": np.ascontiguousarray(obj).tobytes(),
                b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    return obj


def _shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, (list, tuple)) or len(shape) > MAX_NDIM:
        raise WireError(f"shape must be a list of at most {MAX_NDIM} sizes")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise WireError("shape must hold non-negative integers")
    return tuple(shape)


def _decode(obj):
    if b"__ndarray__" in obj:
        dtype, shape, data = wire_dtype(obj.get(b"dtype")), _shape(obj.get(b"shape")), obj.get(b"data")
        if not isinstance(data, bytes):
            raise WireError("ndarray data must be bytes")
        if int(np.prod(shape, dtype=object)) * dtype.itemsize != len(data):
            raise WireError(f"ndarray of shape {shape} and dtype {dtype.str} needs "
                            f"{int(np.prod(shape, dtype=object)) * dtype.itemsize} bytes, "
                            f"the frame has {len(data)}")
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    if b"__npgeneric__" in obj:
        dtype, item = wire_dtype(obj.get(b"dtype")), obj.get(b"data")
        if not isinstance(item, (bool, int, float)):
            raise WireError("numpy scalar data must be a number")
        try:
            return dtype.type(item)
        except (OverflowError, ValueError) as exc:
            raise WireError(f"numpy scalar {item!r} does not fit {dtype.str}") from exc
    return obj


def packb(obj) -> bytes:
    """msgpack-numpy bytes of obj; WireError for a refused dtype."""
    import msgpack
    return msgpack.packb(obj, default=_encode)


def unpackb(data: bytes):
    """The object of a msgpack-numpy frame; WireError when the frame is not valid."""
    import msgpack
    try:
        return msgpack.unpackb(data, object_hook=_decode)
    except WireError:
        raise
    except (ValueError, TypeError, msgpack.UnpackException) as exc:
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise WireError(f"not a msgpack-numpy frame ({detail})") from exc


# ------------------------------------------------------------------ gripper conventions
POS_OPEN, POS_CLOSE = 0.05800, 0.01844  # ALOHA puppet finger position, m
JOINT_OPEN, JOINT_CLOSE = 1.4910, -0.6213  # ALOHA puppet gripper joint, rad
HORN_RADIUS, ARM_LENGTH = 0.022, 0.036  # Interbotix gripper linkage, m
GRIPPERS = ("aloha", "identity", "libero")
WIRE_DTYPE = np.float32  # what openpi servers and clients send (actions and state)


def finger_position(theta):
    """Finger position (m) of the Interbotix horn linkage at gripper joint angle theta (rad)."""
    h, L = HORN_RADIUS, ARM_LENGTH
    return h * np.sin(theta) + np.sqrt(L * L - (h * np.cos(theta)) ** 2)


# The linkage's finger positions at the ALOHA joint limits (0.018435 m and 0.057887 m):
# our action opening is normalised between these, so a = 0 <-> g = 0 and a = 1 <-> g = 1.
X_CLOSE, X_OPEN = float(finger_position(JOINT_CLOSE)), float(finger_position(JOINT_OPEN))


def aloha_action_gripper_to_contract(a):
    """ALOHA action gripper (normalised joint angle, 1 = open) -> ours (opening, 1 = open)."""
    theta = JOINT_CLOSE + np.asarray(a, float) * (JOINT_OPEN - JOINT_CLOSE)
    return np.clip((finger_position(theta) - X_CLOSE) / (X_OPEN - X_CLOSE), 0.0, 1.0)


def contract_gripper_to_aloha_action(g):
    """Inverse of aloha_action_gripper_to_contract (ours -> ALOHA normalised joint angle):
    [0, 1] maps onto [0, 1] exactly."""
    h, L = HORN_RADIUS, ARM_LENGTH
    x = X_CLOSE + np.clip(np.asarray(g, float), 0.0, 1.0) * (X_OPEN - X_CLOSE)
    theta = np.arcsin(np.clip((h * h + x * x - L * L) / (2 * h * x), -1.0, 1.0))
    return np.clip((theta - JOINT_CLOSE) / (JOINT_OPEN - JOINT_CLOSE), 0.0, 1.0)


def actions_from_wire(actions: np.ndarray, gripper: str) -> np.ndarray:
    """Server actions -> contract actions (float64; grippers at contract.GRIPPER_INDEX)."""
    out = np.array(actions, dtype=float)
    if gripper == "aloha":
        for i in C.GRIPPER_INDEX.values():
            out[:, i] = aloha_action_gripper_to_contract(out[:, i])
    elif gripper == "libero":  # the last column: -1 = open, +1 = close -> 1 = open, 0 = closed
        out[:, -1] = np.clip((1.0 - out[:, -1]) / 2.0, 0.0, 1.0)
    return out


def actions_to_wire(actions: np.ndarray, gripper: str) -> np.ndarray:
    """Contract actions -> what a server sends: float32, as openpi's servers do."""
    out = np.array(actions, dtype=float)
    if gripper == "aloha":
        for i in C.GRIPPER_INDEX.values():
            out[:, i] = contract_gripper_to_aloha_action(out[:, i])
    elif gripper == "libero":
        out[:, -1] = 1.0 - 2.0 * np.clip(out[:, -1], 0.0, 1.0)
    return out.astype(WIRE_DTYPE)


# The state gripper is the same quantity in both conventions (normalised finger opening).
def state_to_wire(state: np.ndarray, gripper: str) -> np.ndarray:
    return np.asarray(state, dtype=WIRE_DTYPE)


def state_from_wire(state: np.ndarray, gripper: str) -> np.ndarray:
    return np.asarray(state, dtype=float)


# ---------------------------------------------------------------------------- key maps
KEY_MAPS: dict[str, dict] = {
    "aloha": {
        "state": "state", "prompt": "prompt", "actions": "actions", "image_layout": "chw",
        "images": {"cam_high": ["images", "cam_high"], "cam_low": ["images", "cam_low"],
                   "cam_left_wrist": ["images", "cam_left_wrist"],
                   "cam_right_wrist": ["images", "cam_right_wrist"]},
        "optional_images": ["cam_low"],
    },
    "libero": {
        "state": "observation/state", "prompt": "prompt", "actions": "actions",
        "image_layout": "hwc",
        "images": {"cam_high": "observation/image", "cam_left_wrist": "observation/wrist_image"},
        "optional_images": [],
    },
}


def resolve_key_map(key_map) -> dict:
    """A preset name, a dict or a JSON string -> a complete key map."""
    if isinstance(key_map, str):
        if key_map in KEY_MAPS:
            key_map = KEY_MAPS[key_map]
        else:
            try:
                key_map = json.loads(key_map)
            except json.JSONDecodeError:
                raise ValueError(f"unknown key_map {key_map!r}: a preset {sorted(KEY_MAPS)} "
                                 "or a JSON object") from None
    if not isinstance(key_map, dict):
        raise ValueError(f"key_map must be a preset name or a dict, got {type(key_map).__name__}")
    base = dict(KEY_MAPS["aloha"])
    base.update(key_map)
    if base["image_layout"] not in ("chw", "hwc"):
        raise ValueError(f"image_layout must be 'chw' or 'hwc', got {base['image_layout']!r}")
    return base


def put(d: dict, key, value) -> None:
    """d[key] = value, where a list key walks (and creates) nested dicts."""
    if isinstance(key, (list, tuple)):
        for k in key[:-1]:
            d = d.setdefault(k, {})
        key = key[-1]
    d[key] = value


def get(d: dict, key, default=None):
    if isinstance(key, (list, tuple)):
        for k in key:
            if not isinstance(d, dict) or k not in d:
                return default
            d = d[k]
        return d
    return d.get(key, default)
