"""vla-eval's wire (protocol version 1, as vla-eval 0.8.0 speaks it) and its handshake's
declarations mapped onto our embodiments.

Frames. Every websocket frame is one binary msgpack map ``{"type", "payload", "seq",
"timestamp"}``; ``type`` is one of ``hello``, ``observation``, ``action``, ``episode_start``,
``episode_end``, ``error``. A numpy array is the map ``{"__ndarray__": true, "data": raw
bytes, "dtype": dtype.str, "shape": [...]}`` (string keys); only bool, integer and float
arrays cross the wire, and an array's shape must match its bytes exactly (``WireError``
otherwise). vla-eval's clients may also send HWC uint8 images PNG/JPEG-encoded
(``{"__image__": true, ...}``); we send them raw (``__ndarray__``, lossless, what its
decoder reads either way), and a model server's reply never carries one.

Handshake (`plan_handshake`). The client sends ``hello``; the server answers ``hello`` with
``model_server`` (its class), ``protocol_version`` and, when it declares them:

* ``observation_params``: the benchmark-constructor parameters it wants (vla-eval's
  orchestrator merges them into the benchmark's): ``send_wrist_image``, ``send_state``,
  ``absolute_action``, ``quat_no_antipodal`` (LIBERO's state axis-angle without antipodal
  normalisation), ``send_video_history``, and run settings (``seed``, ``env_seed``,
  ``num_steps_wait``, ``max_steps``, ``max_episode_steps``, ``ep_len``, ``success_mode``);
* ``observation_spec`` / ``action_spec``: ``{component: {"name", "dims", "format", ...}}``
  (vla-eval's ``DimSpec``): what it reads (``rgb_hwc_uint8`` images, ``language``, a state
  format) and what it answers (e.g. ``position: delta_xyz``, ``rotation: axis_angle``,
  ``gripper: binary_close_positive``, or one ``actions``/``joints`` component).

`plan_handshake` turns that into what we send (cameras under which keys, the state or not,
the state's rotation convention) and how we read the reply, or raises `Refused`: one line
naming every declaration the embodiment cannot meet. Run settings are ignored (our evaluator
owns seeds, budgets and success) and listed in the plan.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from vla_bridge import contract as C

PROTOCOL_VERSION = 1
HELLO, OBSERVATION, ACTION = "hello", "observation", "action"
EPISODE_START, EPISODE_END, ERROR = "episode_start", "episode_end", "error"
MESSAGE_TYPES = (HELLO, OBSERVATION, ACTION, EPISODE_START, EPISODE_END, ERROR)
WIRE_KINDS = "biuf"  # numpy dtype kinds on the wire: bool, int, uint, float
MAX_NDIM = 8


class WireError(ValueError):
    """A frame that is not a valid vla-eval message."""


class Refused(ValueError):
    """The server declares what the embodiment cannot provide or execute."""


# ------------------------------------------------------------------------ frames
def _encode(obj):
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in WIRE_KINDS:
            raise TypeError(f"refused dtype {obj.dtype.str!r} on the wire")
        return {"__ndarray__": True, "data": np.ascontiguousarray(obj).tobytes(),
                "dtype": obj.dtype.str, "shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot send a {type(obj).__name__}")


def _decode(obj):
    if "__image__" in obj:
        raise WireError("an encoded image (__image__) where a model server's reply has none")
    if "__ndarray__" not in obj:
        return obj
    spec, shape, data = obj.get("dtype"), obj.get("shape"), obj.get("data")
    try:
        dtype = np.dtype(spec) if isinstance(spec, str) else None
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in WIRE_KINDS or dtype.fields is not None \
            or dtype.subdtype is not None:
        raise WireError(f"ndarray dtype {str(spec)[:40]!r} refused: only bool, integer and "
                        "float arrays")
    if not isinstance(shape, (list, tuple)) or len(shape) > MAX_NDIM or not all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise WireError(f"ndarray shape {str(shape)[:60]} is not a list of sizes")
    if not isinstance(data, bytes):
        raise WireError("ndarray data is not bytes")
    size = math.prod(shape) * dtype.itemsize
    if size != len(data):
        raise WireError(f"ndarray of shape {list(shape)} and dtype {dtype.str} needs {size} "
                        f"bytes, the frame has {len(data)}")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def pack(kind: str, payload: dict, seq: int) -> bytes:
    """One message frame."""
    import msgpack
    return msgpack.packb({"type": kind, "payload": payload, "seq": int(seq),
                          "timestamp": time.time()}, default=_encode, use_bin_type=True)


def unpack(data) -> tuple[str, dict, int]:
    """(type, payload, seq) of a frame; WireError when it is not a valid message."""
    import msgpack
    if isinstance(data, str):
        raise WireError(f"a text frame ({data[:60]!r}) where a msgpack message belongs")
    try:
        raw = msgpack.unpackb(data, object_hook=_decode, raw=False, strict_map_key=False)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - msgpack raises many types on junk
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise WireError(f"not msgpack ({len(data)} bytes, {detail})") from None
    if not isinstance(raw, dict):
        raise WireError(f"a msgpack {type(raw).__name__} where a message map belongs")
    missing = [k for k in ("type", "payload", "seq") if k not in raw]
    if missing:
        raise WireError(f"message without {missing} (keys: {sorted(map(str, raw))[:8]})")
    kind, payload, seq = raw["type"], raw["payload"], raw["seq"]
    if kind not in MESSAGE_TYPES:
        raise WireError(f"unknown message type {str(kind)[:40]!r}")
    if not isinstance(payload, dict):
        raise WireError(f"{kind} payload is a {type(payload).__name__}, not a map")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise WireError(f"{kind} seq is {seq!r:.40}, not an integer")
    return kind, payload, seq


# -------------------------------------------------------------------- key mapping
#: where our observation goes in vla-eval's observation dict, per preset: images (our
#: camera -> vla-eval camera key, primary camera first: servers that read images by position
#: take the first as the main view), the state key, and the instruction (task_description)
KEY_PRESETS = {
    # the contract's ALOHA names, as vla-eval's RoboDojo benchmark (and its pi0.5 server) use
    "aloha": {"embodiment": C.ALOHA_PIPER.name, "state": "state",
              "images": {"cam_high": "cam_high", "cam_left_wrist": "cam_left_wrist",
                         "cam_right_wrist": "cam_right_wrist"}},
    # vla-eval's RoboTwin benchmark (aloha-agilex): its camera names and `joint_state`
    "robotwin": {"embodiment": C.ALOHA_PIPER.name, "state": "joint_state",
                 "images": {"cam_high": "head_camera", "cam_left_wrist": "left_camera",
                            "cam_right_wrist": "right_camera"}},
    # vla-eval's LIBERO benchmark: agentview, wrist (eye-in-hand), `states`
    "libero": {"embodiment": C.LIBERO_PANDA.name, "state": "states",
               "images": {"cam_high": "agentview", "cam_left_wrist": "wrist"}},
}
PROMPT_KEY = "task_description"
DEFAULT_PRESET = {C.ALOHA_PIPER.name: "aloha", C.LIBERO_PANDA.name: "libero"}

IMAGE_FORMAT, LANGUAGE_FORMAT, RAW_FORMAT = "rgb_hwc_uint8", "language", "raw"
#: the state each embodiment publishes, in vla-eval's format names
STATE_FORMAT = {C.ALOHA_PIPER.name: "joint_positions",
                C.LIBERO_PANDA.name: "eef_pos3_axisangle3_gripper2"}
STATE_FORMATS = {"joint_positions", "eef_pos3_quat4_gripper1", "eef_pos3_axisangle3_gripper2",
                 "eef_pos3_euler3_gripper2", "rot6d_interleaved_proprio_20d"}
STATE_NAMES = {"state", "states", "joint_state", "proprio", "controller_states"}
#: observation_params that configure vla-eval's own benchmark run, not the observation
RUN_SETTINGS = {"seed", "env_seed", "num_steps_wait", "max_steps", "max_episode_steps",
                "ep_len", "success_mode"}
ABSOLUTE_JOINT_FORMATS = {"joint_positions", "absolute_joint_positions_with_grippers"}
#: vla-eval gripper formats -> our opening (1 = open, 0 = closed); binary as vla-eval's
#: LIBERO benchmark executes them (sign of the value)
GRIPPER_FORMATS = {
    "binary_close_positive": lambda a: np.where(a < 0, 1.0, 0.0),  # -1 open, +1 close
    "binary_close_negative": lambda a: np.where(a < 0, 0.0, 1.0),  # -1 close, +1 open
    "binary_close_01": lambda a: np.where(a >= 0.5, 0.0, 1.0),  # 1 close, 0 open
}
LIBERO_COMPONENTS = (("position", "delta_xyz", 3), ("rotation", "axis_angle", 3))


def resolve_keys(keys, embodiment: str | None) -> tuple[str, dict]:
    """(embodiment, {"images": {camera: key}, "state": key}) of a preset name or a dict."""
    if keys is None:
        keys = DEFAULT_PRESET[C.get_embodiment(embodiment or C.DEFAULT_EMBODIMENT).name]
    if isinstance(keys, str):
        if keys not in KEY_PRESETS:
            raise ValueError(f"vla_eval keys must be one of {sorted(KEY_PRESETS)} or a JSON "
                             f"map {{\"images\": {{camera: key}}, \"state\": key}}, got {keys!r}")
        preset = KEY_PRESETS[keys]
        emb = C.get_embodiment(embodiment or preset["embodiment"])
        return emb.name, {"images": dict(preset["images"]), "state": preset["state"]}
    if not isinstance(keys, dict) or not isinstance(keys.get("images"), dict):
        raise ValueError(f"vla_eval keys map needs 'images' {{camera: key}}, got {keys!r:.80}")
    emb = C.get_embodiment(embodiment or C.DEFAULT_EMBODIMENT)
    unknown = [c for c in keys["images"] if c not in emb.camera_names]
    if unknown:
        raise ValueError(f"vla_eval keys name cameras {unknown} that {emb.name} does not have "
                         f"({', '.join(emb.camera_names)})")
    return emb.name, {"images": dict(keys["images"]), "state": str(keys.get("state", "state"))}


@dataclass
class Plan:
    """What the handshake settled: the observation we send and how we read the reply."""
    embodiment: str
    server: str
    images: list = field(default_factory=list)  # [(our camera, vla-eval key)], in send order
    state_key: str | None = None
    state_antipodal: bool = False  # libero: vla-eval's default axis-angle (angle <= pi)
    actions: str = "absolute"  # "absolute", "delta_state" (+ joint state) or "eef_delta"
    gripper: str | None = None  # libero: the server's gripper format
    ignored: dict = field(default_factory=dict)  # run settings we do not apply

    def describe(self) -> str:
        sent = [f"{cam}->{key}" for cam, key in self.images]
        sent += [f"state->{self.state_key}"] if self.state_key else []
        ignored = (f"; ignores {', '.join(f'{k}={v!r}' for k, v in self.ignored.items())}"
                   if self.ignored else "")
        return (f"{self.server}: sends {', '.join(sent + [PROMPT_KEY])}; reads {self.actions}"
                f"{' actions, gripper ' + self.gripper if self.gripper else ' actions'}"
                f"{ignored}")


def _spec_items(info: dict, key: str, problems: list) -> list[tuple[str, str, int]]:
    spec = info.get(key) or {}
    if not isinstance(spec, dict):
        problems.append(f"{key} is a {type(spec).__name__}, not a map")
        return []
    items = []
    for name, d in spec.items():
        d = d if isinstance(d, dict) else {}
        dims = d.get("dims", 0)
        items.append((str(name), str(d.get("format")),
                      dims if isinstance(dims, int) and not isinstance(dims, bool) else 0))
    return items


def plan_handshake(info: dict, embodiment: str, keys: dict, ignore=(),
                   delta_reference: str | None = None) -> Plan:
    """The observation and reply plan for a server's ``hello`` payload (module doc), or
    Refused naming, in one line, every declaration the embodiment cannot meet."""
    emb = C.get_embodiment(embodiment)
    libero = emb.action_kind == C.ACTION_EEF_DELTA
    plan = Plan(embodiment=emb.name, server=str(info.get("model_server") or "model server"))
    problems: list[str] = []
    version = info.get("protocol_version", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        problems.append(f"protocol_version {version!r} (this client speaks {PROTOCOL_VERSION})")

    # observation_params
    params = info.get("observation_params") or {}
    if not isinstance(params, dict):
        problems.append(f"observation_params is a {type(params).__name__}, not a map")
        params = {}
    unknown = []
    for name, value in params.items():
        if name in ("send_wrist_image", "send_state", "quat_no_antipodal"):
            continue
        if name == "absolute_action":
            if value and libero:
                problems.append("observation_params absolute_action=True (libero_panda "
                                "executes OSC deltas, not absolute end-effector poses)")
            continue
        if name == "send_video_history":
            if value:
                problems.append("observation_params send_video_history=True (no frame "
                                "history is kept)")
            continue
        if name in RUN_SETTINGS or name in ignore:
            plan.ignored[name] = value
            continue
        unknown.append(name)
    if unknown:
        problems.append(f"observation_params {', '.join(f'{n}={params[n]!r}' for n in unknown)}"
                        f" (unknown here; ignore_params={list(unknown)} runs without them)")

    # observation_spec
    images, wants_state = [], False
    our_state = STATE_FORMAT[emb.name]
    for name, fmt, dims in _spec_items(info, "observation_spec", problems):
        if fmt == IMAGE_FORMAT:
            images.append(name)
        elif fmt == LANGUAGE_FORMAT:
            continue
        elif name in STATE_NAMES or fmt in STATE_FORMATS:
            wants_state = True
            if fmt not in (our_state, RAW_FORMAT):
                problems.append(f"observation_spec {name!r} is {fmt} ({emb.name} has "
                                f"{our_state}, {emb.state_dim}-D)")
            elif dims and dims != emb.state_dim:
                problems.append(f"observation_spec {name!r} is {dims}-D {fmt} ({emb.name}'s "
                                f"state is {emb.state_dim}-D)")
        else:
            problems.append(f"observation_spec {name!r} ({fmt}) is nothing {emb.name} has")
    cameras = [(c, k) for c, k in keys["images"].items() if c in emb.camera_names]
    if len(images) > len(cameras):
        problems.append(f"observation_spec wants {len(images)} images ({', '.join(images)}); "
                        f"{emb.name} has {len(cameras)} cameras "
                        f"({', '.join(c for c, _ in cameras)})")
    if libero:  # vla-eval's LIBERO: agentview, the wrist only when asked for
        wrist = bool(params.get("send_wrist_image")) or len(images) > 1 or "images" in images
        plan.images = cameras[: 2 if wrist else 1]
        send_state = bool(params.get("send_state")) or wants_state
        plan.state_antipodal = not params.get("quat_no_antipodal", False)
    else:  # vla-eval's RoboTwin and RoboDojo always send every camera and the joint state
        plan.images = cameras
        send_state = params.get("send_state", True) is not False or wants_state
    plan.state_key = keys["state"] if send_state else None

    # action_spec
    actions = _spec_items(info, "action_spec", problems)
    listed = ", ".join(f"{n}: {f}" for n, f, _ in actions)
    single = actions[0] if len(actions) == 1 else None
    if single and single[2] and single[2] != emb.action_dim:
        problems.append(f"action_spec {single[0]!r} is {single[2]}-D ({emb.name} executes "
                        f"{emb.action_dim}-D actions)")
    elif not libero:
        if not actions or (single and single[1] in ABSOLUTE_JOINT_FORMATS | {RAW_FORMAT}):
            plan.actions = "absolute"
        elif single and "delta" in single[1]:
            if delta_reference == "state":
                plan.actions = "delta_state"
            else:
                problems.append(
                    f"action_spec {single[0]!r} is {single[1]}: delta joint actions, and "
                    "vla-eval does not say what they are relative to (aloha_piper executes "
                    "absolute joint targets; delta_reference=state adds each action's arm "
                    "joints to the observation's joint state)")
        else:
            problems.append(f"action_spec {listed} ({emb.name} executes {emb.action_dim}-D "
                            "absolute joint targets)")
    else:
        plan.actions = "eef_delta"
        if not actions or (single and single[1] == RAW_FORMAT):
            plan.gripper = "binary_close_positive"  # vla-eval's LIBERO benchmark convention
        else:
            names = [n for n, _, _ in actions]
            want = [n for n, _, _ in LIBERO_COMPONENTS] + ["gripper"]
            wrong = [f"{n}: {f}" for (n, f, _), (wn, wf, _) in zip(actions, LIBERO_COMPONENTS)
                     if (n, f) != (wn, wf)]
            gripper = actions[-1][1] if names == want else None
            if names != want or wrong or gripper not in GRIPPER_FORMATS:
                problems.append(f"action_spec {listed} (libero_panda executes position: "
                                "delta_xyz, rotation: axis_angle, gripper: one of "
                                f"{sorted(GRIPPER_FORMATS)})")
            plan.gripper = gripper
    if problems:
        raise Refused(f"vla-eval {plan.server} declares what {emb.name} cannot meet: "
                      + "; ".join(problems))
    return plan


# -------------------------------------------------------------------- conversions
def antipodal_axis_angle(aa) -> np.ndarray:
    """robosuite's axis-angle (angle in [0, 2 pi), what our LIBERO state holds) as vla-eval's
    default LIBERO state has it (the quaternion made w >= 0 first: angle in [0, pi])."""
    aa = np.asarray(aa, float)
    angle = float(np.linalg.norm(aa))
    return aa * ((angle - 2 * math.pi) / angle) if angle > math.pi else aa


def state_to_wire(state, plan: Plan) -> np.ndarray:
    state = np.asarray(state, dtype=np.float64)
    if plan.state_antipodal and plan.embodiment == C.LIBERO_PANDA.name:
        state = state.copy()
        state[3:6] = antipodal_axis_angle(state[3:6])
    return state


def actions_from_wire(raw, plan: Plan, state) -> np.ndarray:
    """A reply's ``actions`` ([D] or [H, D]) -> our [H, D] chunk (float64), else ValueError
    naming what is wrong (shape, non-numbers, NaN/Inf)."""
    emb = C.get_embodiment(plan.embodiment)
    try:
        actions = np.asarray(raw, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"actions are not numbers ({type(raw).__name__})") from None
    if actions.ndim == 1:
        actions = actions[None]
    if actions.ndim != 2 or actions.shape[1] != emb.action_dim or actions.shape[0] == 0:
        raise ValueError(f"actions of shape {list(np.shape(raw))}; expected [{emb.action_dim}] or "
                         f"[H, {emb.action_dim}] ({emb.name}: {', '.join(emb.action_names)})")
    if not np.all(np.isfinite(actions)):
        bad = int(np.sum(~np.isfinite(actions)))
        raise ValueError(f"actions containing NaN or Inf ({bad} of {actions.size} values)")
    actions = actions.copy()
    if plan.actions == "delta_state":
        arm = [i for i, n in enumerate(emb.action_names) if not n.endswith(C.GRIPPER)]
        actions[:, arm] += np.asarray(state, float)[arm]
    if plan.gripper:
        actions[:, -1] = GRIPPER_FORMATS[plan.gripper](actions[:, -1])
    return actions
