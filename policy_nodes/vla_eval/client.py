"""`vla_eval` backend: a client of a vla-eval model server (vla-eval's ``ModelServer`` /
``PredictModelServer``: OpenVLA, pi0, OFT, GR00T, X-VLA, CogACT, LeRobot policies, ...).

It speaks vla-eval's protocol as vla-eval's own benchmark client (``vla_eval.connection``)
does: one websocket (no compression, no keepalive pings: a server may hold the GIL for a long
JIT warmup), ``hello`` both ways, then per episode ``episode_start`` {"task": {"name":
instruction}}, one ``observation`` per policy call answered by one ``action`` (its ``seq``
echoing the observation's) and ``episode_end`` (sent at the next reset or at close).
Frames and the handshake's mapping: `vla_bridge.policy_nodes.vla_eval.wire`.

Observation sent (keys per ``keys`` preset, `wire.KEY_PRESETS`): ``images`` {camera key:
HWC uint8} (primary camera first), the state under the preset's key (float64, contract
order; LIBERO's axis-angle made antipodal unless the server declares quat_no_antipodal),
``task_description`` (the instruction). What the server does not ask for is not sent.

Reply: ``actions`` (or ``action``) of shape [D] (one action: a chunk of one, as servers with
server-side chunking answer: they expect one observation per control step) or [H, D]; cut
to ``chunk_size``. aloha_piper: absolute joint targets (delta joint actions only with
``delta_reference=state``); libero_panda: OSC deltas as the contract carries them, the
gripper converted from the declared format to our opening.

Errors are one line each and fail the call (the policy node reports ``policy failed: ...``
or ``policy reset failed: ...`` and the episode fails; nothing reaches the sim or arm):
unreachable server, a handshake the embodiment cannot meet (`wire.Refused`), a malformed
frame, a reply of the wrong shape or with NaN/Inf, a server ``error`` message, no reply
within ``infer_timeout``, a connection dropped mid-episode. After a protocol failure the
connection is closed; the next call reconnects (hello and episode_start again).
vla-eval's protocol has no authentication: keep the server on a trusted network.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from vla_bridge import __version__
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend
from vla_bridge.policy_nodes.vla_eval import wire

MAX_FRAME_BYTES = 64 * 2**20  # a reply larger than this closes the connection


def _closed_types() -> tuple:
    from websockets.exceptions import ConnectionClosed
    return (ConnectionClosed, OSError, EOFError)


def _names(value) -> tuple[str, ...]:
    if value in (None, ""):
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    return tuple(str(v) for v in value)


class VlaEvalPolicy(PolicyBackend):
    """Drives a vla-eval model server; see the module docstring."""

    def __init__(self, host: str = "localhost", port: int | None = 8000, keys=None,
                 embodiment: str | None = None, ignore_params=(), delta_reference=None,
                 connect_timeout: float = 5.0, infer_timeout: float = 60.0,
                 chunk_size: int | None = None):
        self.host, self.port = str(host), port
        self.uri = self.host if self.host.startswith("ws") else f"ws://{self.host}"
        if port not in (None, ""):
            self.uri += f":{int(port)}"
        #: the contract embodiment this backend speaks (the policy node checks the graph's)
        self.embodiment, self.keys = wire.resolve_keys(keys, embodiment)
        self.ignore_params = _names(ignore_params)
        if delta_reference not in (None, "state"):
            raise ValueError(f"delta_reference must be 'state' or unset, got {delta_reference!r}")
        self.delta_reference = delta_reference
        self.connect_timeout = float(connect_timeout)
        self.infer_timeout = float(infer_timeout)
        self.chunk_size = int(chunk_size) if chunk_size else None
        self.instruction = ""
        self.ws = None
        self.server_info: dict = {}  # the server's hello payload
        self.plan: wire.Plan | None = None  # what the handshake settled
        self.calls = 0  # observations answered this episode
        self.last_timing: dict = {}
        self._seq = 0
        self._episode_open = False

    # ------------------------------------------------------------------ connection
    def _where(self) -> str:
        server = self.plan.server if self.plan else "model server"
        return f"vla-eval {server} at {self.uri}"

    def connect(self) -> None:
        """Open the websocket and do the handshake; ConnectionError when the server cannot be
        reached or answers it wrongly, wire.Refused when it declares what we cannot meet."""
        import websockets.sync.client

        self.close()
        self.plan = None
        kwargs = {"compression": None, "max_size": MAX_FRAME_BYTES, "ping_interval": None,
                  "open_timeout": self.connect_timeout}
        try:
            try:  # websockets >= 16 wants `legacy=True` to return the connection itself
                self.ws = websockets.sync.client.connect(self.uri, legacy=True, **kwargs)
            except TypeError:
                self.ws = websockets.sync.client.connect(self.uri, **kwargs)
        except Exception as exc:  # noqa: BLE001 - one clear message for every way it fails
            self.ws = None
            raise ConnectionError(
                f"vla-eval model server unreachable at {self.uri} ({type(exc).__name__}: {exc}; "
                f"connect timeout {self.connect_timeout:g} s): start it (a vla-eval model-server "
                "script with --port) or fix --policy 'vla_eval?host=...&port=...'") from None
        try:
            self._send(wire.HELLO, {"harness_version": f"vla_bridge {__version__}",
                                    "protocol_version": wire.PROTOCOL_VERSION,
                                    "benchmark": f"vla_bridge/{self.embodiment}"})
            kind, info, _ = self._recv(self.infer_timeout)
            if kind != wire.HELLO:
                raise wire.WireError(f"answered hello with {kind!r}")
        except Exception as exc:  # noqa: BLE001
            self.close()
            raise ConnectionError(f"vla-eval model server at {self.uri} failed the handshake: "
                                  f"{type(exc).__name__}: {exc}") from None
        self.server_info = info
        try:
            self.plan = wire.plan_handshake(info, self.embodiment, self.keys, self.ignore_params,
                                            self.delta_reference)
        except wire.Refused:
            self.close()
            raise
        print(f"[vla_eval] {self.uri}: {self.plan.describe()}", file=sys.stderr, flush=True)

    def close(self) -> None:
        ws, self.ws = self.ws, None
        if ws is None:
            return
        if self._episode_open:
            try:
                ws.send(wire.pack(wire.EPISODE_END, {"steps": self.calls}, self._next_seq()))
            except Exception:  # noqa: BLE001 - the connection may be gone already
                pass
        self._episode_open = False
        try:
            ws.close()
        except Exception:  # noqa: BLE001 - closing a broken socket
            pass

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _send(self, kind: str, payload: dict) -> int:
        seq = self._next_seq()
        self.ws.send(wire.pack(kind, payload, seq))
        return seq

    def _recv(self, timeout: float):
        return wire.unpack(self.ws.recv(timeout=timeout))

    def _start_episode(self) -> None:
        self._send(wire.EPISODE_START, {"task": {"name": self.instruction}})
        self._episode_open = True

    # ------------------------------------------------------------------ backend
    def reset(self) -> None:
        if self.ws is not None and self._episode_open:
            try:
                self._send(wire.EPISODE_END, {"steps": self.calls})
            except _closed_types():
                self.close()  # gone between episodes: reconnect below
            self._episode_open = False
        self.calls = 0
        if self.ws is None:
            self.connect()

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        self.instruction = instruction or ""
        if self.ws is None:
            self.connect()
        try:
            self._start_episode()
        except _closed_types():  # a stale connection from before: once more on a fresh one
            self.connect()
            self._start_episode()

    def encode(self, observation: Observation) -> dict:
        images = {}
        for camera, key in self.plan.images:
            image = observation.images.get(camera)
            if image is None:
                raise ValueError(f"the observation has no camera {camera!r} "
                                 f"({sorted(observation.images)})")
            image = np.asarray(image)
            if np.issubdtype(image.dtype, np.floating):
                image = np.clip(255 * image, 0, 255)
            images[key] = np.ascontiguousarray(image, dtype=np.uint8)
        payload = {"images": images, wire.PROMPT_KEY: self.instruction}
        if self.plan.state_key:
            payload[self.plan.state_key] = wire.state_to_wire(observation.state, self.plan)
        return payload

    def predict(self, observation: Observation) -> np.ndarray:
        t0 = time.perf_counter()
        if self.ws is None:  # the connection failed earlier (or never opened): a fresh one
            self.connect()
            self._start_episode()
        payload = self.encode(observation)
        t1 = time.perf_counter()
        reply = self._exchange(payload)
        t2 = time.perf_counter()
        actions = reply.get("actions", reply.get("action"))
        if actions is None:
            raise ValueError(f"{self._where()} answered without 'actions' (keys: "
                             f"{sorted(map(str, reply))[:8]})")
        try:
            chunk = wire.actions_from_wire(actions, self.plan, observation.state)
        except ValueError as exc:
            raise ValueError(f"{self._where()} returned {exc}") from None
        if self.chunk_size:
            chunk = chunk[: self.chunk_size]
        self.calls += 1
        self.last_timing = {"preprocess": (t1 - t0) * 1e3, "inference": (t2 - t1) * 1e3,
                            "transport": 0.0, "postprocess": (time.perf_counter() - t2) * 1e3}
        return chunk

    def _exchange(self, payload: dict) -> dict:
        """Send one observation, return its action payload (module doc: errors)."""
        closed = _closed_types()
        for attempt in (0, 1):
            try:
                seq = self._send(wire.OBSERVATION, payload)
                kind, reply, reply_seq = self._recv(self.infer_timeout)
            except TimeoutError:  # (an OSError: before the closed types)
                self.close()
                raise TimeoutError(f"{self._where()} did not answer within "
                                   f"{self.infer_timeout:g} s") from None
            except closed as exc:
                self.close()
                if attempt == 0 and self.calls == 0:  # stale from before the episode: retry
                    self.connect()
                    self._start_episode()
                    continue
                raise ConnectionError(
                    f"{self._where()} dropped the connection mid-episode (after {self.calls} "
                    f"calls this episode): {type(exc).__name__}: {exc}") from None
            except wire.WireError as exc:
                self.close()
                raise ValueError(f"{self._where()} sent a malformed reply: {exc}") from None
            if kind == wire.ERROR:
                self.close()
                detail = reply.get("error", reply)
                raise RuntimeError(f"{self._where()} error: {str(detail)[:300]}")
            if kind != wire.ACTION or reply_seq != seq:
                self.close()
                raise ValueError(f"{self._where()} sent a malformed reply: {kind} seq "
                                 f"{reply_seq} to observation seq {seq}")
            return reply
        raise AssertionError("unreachable")  # pragma: no cover
