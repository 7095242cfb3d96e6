"""`openpi` backend: a client of an openpi policy server (pi0, pi0-FAST, pi0.5 ...).

The wire protocol is openpi's (``openpi_client.WebsocketClientPolicy``, used when the
``openpi-client`` package is installed; otherwise a built-in client speaks the identical
protocol): a websocket; on connect the server sends its metadata; each request is one
msgpack-numpy frame with the observation dict, each reply one frame with ``actions``
(``[H, action_dim]``) and ``server_timing`` (``infer_ms``, ``prev_total_ms``); a server
error arrives as a text frame carrying the traceback, then the server closes. Servers
answer ``GET /healthz`` with 200, which this client uses to test reachability quickly.

Observation mapping (``key_map``), presets:

* ``aloha`` (default; openpi's ``examples/aloha_real`` and ``AlohaInputs``):
  ``state`` = 14-D joints in our contract order (the ALOHA order), ``images`` =
  ``{cam_high, cam_left_wrist, cam_right_wrist}`` (+ ``cam_low`` when the observation has
  it) as **uint8 CHW** ``[3, H, W]`` after ``resize_with_pad`` to ``image_size`` (224),
  ``prompt`` = the instruction; reply ``actions`` ``[H, 14]`` absolute targets.
* ``libero`` (openpi's ``examples/libero``; the ``libero_panda`` embodiment of the contract,
  so the backend declares it and a graph of another embodiment refuses it at start):
  ``observation/image`` (cam_high = LIBERO's agentview) and ``observation/wrist_image``
  (cam_left_wrist = the eye-in-hand camera), both **uint8 HWC** ``[224, 224, 3]`` after
  ``resize_with_pad`` (the LIBERO sim publishes them upright, rotated 180 degrees from
  LIBERO's render, as openpi's LIBERO client sends them), ``observation/state`` ``[8]``
  float64 (end-effector position, axis-angle, two finger joints) and ``prompt``; reply
  ``actions`` ``[H, 7]`` (six OSC deltas in [-1, 1], gripper in LIBERO's convention,
  -1 = open, +1 = close, converted to ours as ``(1 - a) / 2``: ``gripper="libero"``).

A custom ``key_map`` is a dict (or JSON) ``{"state": KEY, "prompt": KEY, "actions": KEY,
"images": {camera: KEY}, "optional_images": [camera, ...], "image_layout": "chw"|"hwc"}``;
a KEY is a top-level key (a string, may contain "/") or a list of keys into nested dicts.

Gripper convention (``gripper``). Ours: normalised opening, 1 = open, 0 = closed. openpi's
ALOHA runtime (what pi0 ALOHA checkpoints expect, ``adapt_to_pi``) uses two spaces:

* state: the puppet gripper *finger position* normalised between
  ``POS_CLOSE = 0.01844 m`` and ``POS_OPEN = 0.05800 m`` (1 = open): the same as ours, so
  the state gripper passes through unchanged;
* actions: the puppet gripper *joint angle* normalised between ``JOINT_CLOSE = -0.6213``
  and ``JOINT_OPEN = 1.4910`` rad (1 = open). We convert it to a finger position through
  the Interbotix horn linkage (``h = 0.022 m`` horn radius, ``L = 0.036 m`` arm length):
  ``theta = JOINT_CLOSE + a (JOINT_OPEN - JOINT_CLOSE)``,
  ``x = h sin(theta) + sqrt(L^2 - h^2 cos^2(theta))``,
  ``g = clip((x - X_CLOSE) / (X_OPEN - X_CLOSE), 0, 1)``, where ``X_CLOSE = 0.018435 m`` and
  ``X_OPEN = 0.057887 m`` are the linkage's positions at JOINT_CLOSE and JOINT_OPEN; the
  exact inverse is ``theta = arcsin((h^2 + x^2 - L^2) / (2 h x))`` (what openpi's
  ``gripper_to_angular`` applies to the state). a = 0 <-> g = 0 and a = 1 <-> g = 1 (fully
  open) exactly, so an open gripper goes out as 1.0, never beyond [0, 1]. (Normalised
  between POS_CLOSE and POS_OPEN, as the state is, the linkage would reach only 0.997 at
  JOINT_OPEN and our open 1.0 would go out as 1.038.)

Actions are float32 on the wire, as openpi's servers send them. The state goes out float64
(STATE_DTYPE), as openpi's own clients send it: ``examples/libero/main.py`` concatenates
robosuite's float64 observations, ``examples/aloha_real`` sends ``qpos`` (``np.concatenate`` of
the ROS joint positions, float64) and ``examples/aloha_sim`` gym_aloha's float64 ``agent_pos``;
the server's normalisation then sees the same numbers (pi0-FAST discretises the state: a
float32 rounding can move it across a bin edge).

``gripper="identity"`` passes both through: use it for checkpoints fine-tuned on data in
our convention (e.g. AgileX / RoboTwin data with ``adapt_to_pi=False``). Arm joints always
pass through unchanged (radians, contract order).

Errors are explicit: an unreachable server fails ``reset()`` (the episode) with
"openpi server unreachable at ..." after ``connect_timeout``; a connection that drops
mid-episode fails ``predict`` with "... dropped the connection mid-episode"; no reply
within ``infer_timeout`` fails with "did not answer within"; a wrong action shape names
the expected ``[H, 14]``. The next episode reconnects.
"""
from __future__ import annotations

import http.client
import threading
import time
import urllib.parse
from importlib import import_module

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend
from vla_bridge.policy_nodes.openpi.wire import (GRIPPERS, KEY_MAPS, actions_from_wire, get, packb,
                                                  put, resolve_key_map, unpackb)

#: the observation state's dtype on the wire (openpi's LIBERO and ALOHA clients send float64)
STATE_DTYPE = np.float64


def resize_with_pad(image: np.ndarray, height: int, width: int) -> np.ndarray:
    """Scale to fit (height, width) keeping the aspect ratio, bilinear, centred on zeros: the
    semantics of openpi's image_tools.resize_with_pad (tf.image.resize_with_pad)."""
    try:
        from openpi_client import image_tools
        return image_tools.resize_with_pad(image, height, width)
    except ImportError:
        pass
    from PIL import Image
    h, w = image.shape[:2]
    if (h, w) == (height, width):
        return image
    ratio = max(w / width, h / height)
    rw, rh = int(w / ratio), int(h / ratio)
    resized = Image.fromarray(image).resize((rw, rh), resample=Image.BILINEAR)
    canvas = Image.new(resized.mode, (width, height), 0)
    canvas.paste(resized, (max(0, int((width - rw) / 2)), max(0, int((height - rh) / 2))))
    return np.asarray(canvas)


def _callable(spec):
    if spec is None or callable(spec):
        return spec
    module, name = str(spec).split(":", 1)
    return getattr(import_module(module), name)


# ---------------------------------------------------------------------------- clients


class _WireClient:
    """openpi's client protocol, for when the openpi-client package is not installed."""

    def __init__(self, uri: str, api_key: str | None, open_timeout: float):
        import websockets.sync.client

        headers = {"Authorization": f"Api-Key {api_key}"} if api_key else None
        kwargs = {"compression": None, "max_size": None, "additional_headers": headers,
                  "open_timeout": open_timeout}
        try:  # websockets >= 16 wants `legacy=True` to return the connection itself
            self._ws = websockets.sync.client.connect(uri, legacy=True, **kwargs)
        except TypeError:
            self._ws = websockets.sync.client.connect(uri, **kwargs)
        self._metadata = unpackb(self._ws.recv())

    def get_server_metadata(self) -> dict:
        return self._metadata

    def infer(self, obs: dict) -> dict:
        self._ws.send(packb(obs))
        reply = self._ws.recv()
        if isinstance(reply, str):
            raise RuntimeError(f"Error in inference server:\n{reply}")
        return unpackb(reply)


def _connection_closed_types() -> tuple:
    try:
        from websockets.exceptions import ConnectionClosed
        return (ConnectionClosed, OSError, EOFError)
    except ImportError:  # pragma: no cover
        return (OSError, EOFError)


class OpenPIPolicy(PolicyBackend):
    """Drives an openpi policy server; see the module docstring for keys and conventions."""

    def __init__(self, host: str = "localhost", port: int | None = 8000, api_key: str | None = None,
                 image_size: int | None = 224, key_map="aloha", gripper: str | None = None,
                 connect_timeout: float = 5.0, infer_timeout: float = 60.0,
                 chunk_size: int | None = None, state_fn=None, action_fn=None,
                 use_openpi_client: bool = True, embodiment: str | None = None):
        self.host, self.port, self.api_key = str(host), port, api_key
        self.uri = self.host if self.host.startswith("ws") else f"ws://{self.host}"
        if port not in (None, ""):
            self.uri += f":{int(port)}"
        self.image_size = image_size
        self.key_map = resolve_key_map(key_map)
        preset = key_map if isinstance(key_map, str) and key_map in KEY_MAPS else None
        default_gripper = {"aloha": "aloha", "libero": "libero"}.get(preset, "identity")
        self.gripper = gripper or default_gripper
        #: the contract embodiment this backend speaks (the policy node checks the graph's)
        self.embodiment = C.get_embodiment(
            embodiment or (C.LIBERO_PANDA.name if preset == "libero" else C.DEFAULT_EMBODIMENT)).name
        if self.gripper not in GRIPPERS:
            raise ValueError(f"gripper must be one of {GRIPPERS}, got {self.gripper!r}")
        self.connect_timeout = float(connect_timeout)
        self.infer_timeout = float(infer_timeout)
        self.chunk_size = int(chunk_size) if chunk_size else None
        self.state_fn = _callable(state_fn)
        self.action_fn = _callable(action_fn)
        self.use_openpi_client = bool(use_openpi_client)
        self.instruction = ""
        self.client = None
        self.metadata: dict = {}
        self.calls = 0  # calls in this episode
        self.last_timing: dict = {}
        self._aborted = False

    # ------------------------------------------------------------------ connection
    def check_reachable(self) -> None:
        """GET /healthz within connect_timeout, else ConnectionError (any HTTP answer counts:
        older servers without /healthz still answer the request)."""
        parts = urllib.parse.urlparse(self.uri)
        secure = parts.scheme == "wss"
        port = parts.port or (443 if secure else 80)
        cls = http.client.HTTPSConnection if secure else http.client.HTTPConnection
        conn = cls(parts.hostname, port, timeout=self.connect_timeout)
        try:
            conn.request("GET", "/healthz")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionError(
                f"openpi server unreachable at {self.uri} ({type(exc).__name__}: {exc}; connect "
                f"timeout {self.connect_timeout:g} s): start the server (e.g. openpi's "
                "scripts/serve_policy.py, or `vla-bridge serve`) or fix --policy "
                "'openpi?host=...&port=...'") from None
        finally:
            conn.close()

    def connect(self) -> None:
        self.close()
        self.check_reachable()
        try:
            if self.use_openpi_client:
                try:
                    from openpi_client.websocket_client_policy import WebsocketClientPolicy
                except ImportError:
                    WebsocketClientPolicy = None
            else:
                WebsocketClientPolicy = None
            if WebsocketClientPolicy is not None:
                port = int(self.port) if self.port not in (None, "") else None
                self.client = WebsocketClientPolicy(self.host, port, self.api_key)
            else:
                self.client = _WireClient(self.uri, self.api_key, self.connect_timeout)
            self.metadata = dict(self.client.get_server_metadata() or {})
        except Exception as exc:  # noqa: BLE001 - one clear message for every way it fails
            self.client = None
            raise ConnectionError(f"openpi server at {self.uri} answered HTTP but the websocket "
                                  f"connection failed: {type(exc).__name__}: {exc}") from None

    def close(self) -> None:
        ws = getattr(self.client, "_ws", None)
        self.client = None
        if ws is not None:
            try:
                ws.close()
            except Exception:  # noqa: BLE001 - closing a broken socket
                pass

    def _abort(self) -> None:
        """Watchdog: unblock a recv that waits past infer_timeout."""
        self._aborted = True
        ws = getattr(self.client, "_ws", None)
        if ws is not None:
            try:
                ws.close()
            except Exception:  # noqa: BLE001
                pass

    # ------------------------------------------------------------------ backend
    def reset(self) -> None:
        self.calls = 0
        if self.client is None:
            self.connect()

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        self.instruction = instruction or ""

    def encode(self, obs: Observation) -> dict:
        km = self.key_map
        payload: dict = {}
        # the state gripper is the same quantity in every convention (wire.state_to_wire is a
        # cast, to the actions' float32): the contract's state goes out as it is, float64
        state = self.state_fn(obs) if self.state_fn else obs.state
        put(payload, km["state"], np.asarray(state, dtype=STATE_DTYPE))
        optional = set(km.get("optional_images") or ())
        for camera, key in km["images"].items():
            image = obs.images.get(camera)
            if image is None:
                if camera in optional:
                    continue
                raise ValueError(f"openpi key map needs camera {camera!r}; the observation has "
                                 f"{sorted(obs.images)}")
            image = np.asarray(image)
            if np.issubdtype(image.dtype, np.floating):
                image = (255 * image).astype(np.uint8)
            if self.image_size:
                size = self.image_size
                h, w = (size, size) if isinstance(size, int) else tuple(size)
                image = resize_with_pad(image, h, w)
            if km["image_layout"] == "chw":
                image = np.ascontiguousarray(image.transpose(2, 0, 1))
            put(payload, key, image)
        if km.get("prompt"):
            put(payload, km["prompt"], self.instruction)
        return payload

    def decode(self, reply: dict, obs: Observation) -> np.ndarray:
        key = self.key_map["actions"]
        actions = get(reply, key)
        emb = C.get_embodiment(self.embodiment)
        if actions is None:
            raise ValueError(f"openpi server reply has no {key!r} (keys: {sorted(reply)}); "
                             f"expected actions of shape [H, {emb.action_dim}]")
        actions = np.asarray(actions)
        if self.action_fn:
            actions = np.asarray(self.action_fn(actions, obs))
        if actions.ndim != 2 or actions.shape[1] != emb.action_dim or actions.shape[0] == 0:
            raise ValueError(
                f"openpi server returned actions of shape {list(actions.shape)}; expected "
                f"[H, {emb.action_dim}] ({emb.name}: {', '.join(emb.action_names)}). A server "
                "for another embodiment needs action_fn (and state_fn) adapters.")
        actions = actions_from_wire(actions, self.gripper)
        return actions[: self.chunk_size] if self.chunk_size else actions

    def predict(self, observation: Observation) -> np.ndarray:
        t0 = time.perf_counter()
        if self.client is None:
            self.connect()
        payload = self.encode(observation)
        t1 = time.perf_counter()
        reply = self._infer(payload)
        t2 = time.perf_counter()
        actions = self.decode(reply, observation)
        t3 = time.perf_counter()
        self.calls += 1
        server = reply.get("server_timing") or {}
        infer_ms = float(server.get("infer_ms", (t2 - t1) * 1e3))
        self.last_timing = {"preprocess": (t1 - t0) * 1e3, "inference": infer_ms,
                            "transport": max(0.0, (t2 - t1) * 1e3 - infer_ms),
                            "postprocess": (t3 - t2) * 1e3}
        return actions

    def _infer(self, payload: dict) -> dict:
        closed = _connection_closed_types()
        for attempt in (0, 1):
            self._aborted = False
            timer = threading.Timer(self.infer_timeout, self._abort)
            timer.daemon = True
            timer.start()
            try:
                return self.client.infer(payload)
            except closed as exc:
                self.close()
                if self._aborted:
                    raise TimeoutError(f"openpi server at {self.uri} did not answer within "
                                       f"{self.infer_timeout:g} s") from None
                if attempt == 0 and self.calls == 0:  # a stale connection from before: retry once
                    self.connect()
                    continue
                raise ConnectionError(
                    f"openpi server at {self.uri} dropped the connection mid-episode (after "
                    f"{self.calls} calls this episode): {type(exc).__name__}: {exc}") from None
            except RuntimeError as exc:  # the server sent its traceback as text, then closed
                self.close()
                lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
                raise RuntimeError(f"openpi server error: {lines[-1] if lines else exc}") from None
            finally:
                timer.cancel()
        raise AssertionError("unreachable")  # pragma: no cover
