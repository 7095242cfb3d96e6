"""`vla-bridge serve --policy NAME`: any of our backends behind openpi's websocket protocol.

So the real ``openpi_client.WebsocketClientPolicy`` (and openpi's own robot runtimes) can
drive our policies, and our ``openpi`` backend can drive a policy in another process or on
another machine. The protocol, as openpi's ``WebsocketPolicyServer`` speaks it:

* websocket at ``ws://HOST:PORT`` (no compression); ``GET /healthz`` -> 200 (never needs a key);
* with an API key set, the websocket handshake must carry ``Authorization: Api-Key KEY`` (what
  ``openpi_client.WebsocketClientPolicy(api_key=KEY)`` sends), else it is answered 401;
* a frame over ``max_frame_bytes`` closes that connection with code 1009 (message too big);
* on connect the server sends one msgpack-numpy frame with its metadata (here: policy,
  action_dim 14, action_horizon, control_period, joint names, cameras, key map, gripper);
* each request is a msgpack-numpy frame with the observation dict; the reply is a frame
  with ``actions`` ``[H, 14]`` and ``server_timing`` = ``{"infer_ms": ..., "prev_total_ms":
  ...}`` (``prev_total_ms``: the previous request's receive-to-sent time);
* a failing request is answered with a text frame ``ErrorType: message`` (with ``debug``: the
  traceback, as openpi's server sends it; the traceback is always logged by the server), then
  the server closes the connection with code 1011 (internal error).

msgpack-numpy encoding: ``openpi.wire`` (only bool, integer and float arrays cross it, in
both directions; a frame with any other dtype, or a shape its bytes do not fill, is refused
as a bad request).

Observations are read with the same key maps and gripper conventions as the ``openpi``
client (``vla_bridge.policy_nodes.openpi.client``; default ``aloha``: ``state``,
``images/{cam_high, cam_left_wrist, cam_right_wrist}`` as uint8 CHW or HWC, ``prompt``).
Optional extension keys (never needed by openpi clients): ``vla_bridge/stamp`` (seconds,
the observation stamp; default: calls x action_horizon x control_period since the
episode began), ``vla_bridge/reset`` (true: a new episode), and for privileged backends
(the oracle) ``vla_bridge/task`` (the task dict) and ``vla_bridge/world`` (see
``vla_bridge.embodiment.world.world_to_dict``). A new connection or a new prompt starts a new episode (reset +
instruction), as openpi's clients have no reset message.

One episode state per connection (`PolicySession`): every connection drives a policy instance
of its own, made by the same factory (``registry.make_policy`` with the server's spec), so a
second client never resets, re-prompts or advances the first one's episode. That is what
stateful backends need: the oracle's plan, a replayed episode's clock, LeRobot's action queue
and ACT's temporal ensemble all belong to one episode of one robot. (Refusing a second client
would break reconnects, and campaign workers that share one server.) Instances are pooled: a
connection that ends returns its instance (reset by the next connection's first request), so
sequential clients reuse one and the server holds as many as clients were ever connected at
once; a heavy model costs its memory once per concurrent client.
"""
from __future__ import annotations

import asyncio
import functools
import hmac
import http
import logging
import threading
import time
import traceback

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.embodiment.world import world_from_dict
from vla_bridge.policy_nodes.openpi.wire import (GRIPPERS, KEY_MAPS, actions_to_wire, get, packb,
                                                  resolve_key_map, state_from_wire, unpackb)

LOG = logging.getLogger("vla_bridge.serve")
DEFAULT_MAX_FRAME_BYTES = 8 * 1024 * 1024  # three 320x240 RGB images are 0.7 MB

# --------------------------------------------------------------------------- server


def _image_hwc(image) -> np.ndarray:
    image = np.asarray(image)
    if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] not in (1, 3):
        image = image.transpose(1, 2, 0)  # CHW -> HWC
    if np.issubdtype(image.dtype, np.floating):
        image = (255 * np.clip(image, 0.0, 1.0)).astype(np.uint8)
    return np.ascontiguousarray(image)


class PolicyServer:
    """openpi-style ``infer(obs) -> {"actions": ...}`` around one of our backends: the
    metadata, and one `PolicySession` per connection (`open_session` / `close_session`)."""

    def __init__(self, policy_spec: str, chunk_size: int = 50, control_period: float = 0.06,
                 key_map="aloha", gripper: str | None = None, follow: str = "language"):
        from vla_bridge.policy_nodes.registry import make_policy
        self.spec = policy_spec
        self.make_policy = functools.partial(make_policy, policy_spec, chunk_size=chunk_size,
                                             control_period=control_period, follow=follow)
        self.policy = self.make_policy()  # the first instance: its spec and embodiment checked
        self.chunk_size = int(chunk_size)
        self.dt = float(control_period)
        self.key_map = resolve_key_map(key_map)
        preset = key_map if isinstance(key_map, str) and key_map in KEY_MAPS else None
        self.gripper = gripper or {"aloha": "aloha", "libero": "libero"}.get(preset, "identity")
        if self.gripper not in GRIPPERS:
            raise ValueError(f"gripper must be one of {GRIPPERS}, got {self.gripper!r}")
        # the LIBERO key map serves the libero_panda embodiment (8-D state, [H, 7] actions);
        # the backend must speak the same one (contract.agree_embodiment names both)
        self.embodiment = C.agree_embodiment({
            f"key map {key_map if preset else 'custom'!r}":
                C.LIBERO_PANDA.name if preset == "libero" else C.DEFAULT_EMBODIMENT,
            f"policy backend {policy_spec!r}": getattr(self.policy, "embodiment",
                                                        C.DEFAULT_EMBODIMENT)})
        self.lock = threading.Lock()  # the pool
        self.instances = [self.policy]  # every instance made (closed by close())
        self.idle = [self.policy]  # instances no connection uses
        self.sessions = 0  # connections open now
        self._own: PolicySession | None = None  # infer()'s, for in-process callers

    def metadata(self) -> dict:
        emb = self.embodiment
        return {"server": "vla_bridge", "policy": self.spec, "action_dim": emb.action_dim,
                "action_horizon": self.chunk_size, "control_period": self.dt,
                "embodiment": emb.name, "joint_names": list(emb.action_names),
                "cameras": list(emb.camera_names),
                "key_map": {k: v for k, v in self.key_map.items()}, "gripper": self.gripper,
                "needs_world_state": bool(self.policy.needs_world_state)}

    def open_session(self) -> PolicySession:
        """A new connection's episode state, on an idle instance or a new one (this may load
        a model: call it off the event loop)."""
        with self.lock:
            policy = self.idle.pop() if self.idle else None
            self.sessions += 1
        if policy is None:
            try:
                policy = self.make_policy()
            except BaseException:
                with self.lock:
                    self.sessions -= 1
                raise
            with self.lock:
                self.instances.append(policy)
            LOG.info("%d connections at once: policy instance %d of %r made", self.sessions,
                     len(self.instances), self.spec)
        return PolicySession(self, policy)

    def close_session(self, session: PolicySession) -> None:
        """A connection ended: its instance waits for the next one."""
        with self.lock:
            self.sessions -= 1
            self.idle.append(session.policy)

    def infer(self, obs: dict) -> dict:
        """One request of an in-process caller (its own session; the websocket server gives
        every connection one of its own instead)."""
        if self._own is None:
            self._own = self.open_session()
        return self._own.infer(obs)

    def close(self) -> None:
        for policy in self.instances:
            getattr(policy, "close", lambda: None)()


class PolicySession:
    """One connection's episode: its policy instance, prompt and calls; a new connection, a
    new prompt or ``vla_bridge/reset`` starts a new episode on it."""

    def __init__(self, server: PolicyServer, policy):
        self.server, self.policy = server, policy
        self.lock = threading.Lock()
        self.new_episode = True
        self.prompt: str | None = None
        self.calls = 0

    def infer(self, obs: dict) -> dict:
        with self.lock:
            return self._infer(obs)

    def _infer(self, obs: dict) -> dict:
        server = self.server
        if not isinstance(obs, dict):
            raise ValueError(f"an observation must be a map, got {type(obs).__name__}")
        km = server.key_map
        state = get(obs, km["state"])
        if state is None:
            raise ValueError(f"observation has no state key {km['state']!r} (keys: {sorted(obs)})")
        state = state_from_wire(np.asarray(state, dtype=float).reshape(-1), server.gripper)
        emb = server.embodiment
        if state.shape != (emb.state_dim,):
            raise ValueError(f"state must have shape [{emb.state_dim}] ({emb.name}: "
                             f"{', '.join(emb.state_names)}), got {list(state.shape)}")
        images = {cam: _image_hwc(get(obs, key)) for cam, key in km["images"].items()
                  if get(obs, key) is not None}
        prompt = get(obs, km["prompt"], "") if km.get("prompt") else ""
        prompt = prompt.decode() if isinstance(prompt, bytes) else str(prompt)
        task = obs.get("vla_bridge/task")
        if self.new_episode or obs.get("vla_bridge/reset") or prompt != self.prompt:
            self.policy.reset()
            if task is not None and self.policy.needs_world_state:
                self.policy.set_instruction(prompt, task)
            else:
                self.policy.set_instruction(prompt)
            self.new_episode, self.prompt, self.calls = False, prompt, 0
        world = obs.get("vla_bridge/world")
        if self.policy.needs_world_state and world is None:
            raise ValueError(f"backend {server.spec!r} reads the privileged world state: send "
                             "'vla_bridge/world' (and 'vla_bridge/task') with the observation")
        stamp = obs.get("vla_bridge/stamp")
        stamp = float(stamp) if stamp is not None else self.calls * server.chunk_size * server.dt
        chunk = C.validate_chunk(self.policy.predict(Observation(
            state=state, images=images, stamp=stamp,
            world=world_from_dict(world) if world is not None else None)), emb.action_dim)
        self.calls += 1
        return {"actions": actions_to_wire(chunk, server.gripper)}


def _check_request(api_key: str | None, connection, request):
    """``/healthz`` -> 200; without the API key (when one is set) -> 401; else the handshake."""
    if request.path == "/healthz":
        return connection.respond(http.HTTPStatus.OK, "OK\n")
    if api_key and not _key_matches(request.headers.get("Authorization"), api_key):
        LOG.warning("connection from %s refused: missing or wrong API key",
                    connection.remote_address)
        return connection.respond(http.HTTPStatus.UNAUTHORIZED, "missing or wrong API key\n")
    return None


def _key_matches(header: str | None, api_key: str) -> bool:
    """Whether ``header`` is ``Api-Key <api_key>`` (compared in constant time)."""
    expected = f"Api-Key {api_key}".encode()
    return hmac.compare_digest((header or "").encode(), expected)


def _error_text(exc: BaseException, debug: bool) -> str:
    """What a client is told of a failed request: the traceback only in debug mode. Never an
    empty message: an exception without one is named with where it was raised (and its cause)."""
    if debug:
        return traceback.format_exc()
    return f"{type(exc).__name__}: {_message(exc)}"


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    if text:
        return text
    cause = exc.__cause__ or exc.__context__
    if cause is not None and str(cause).strip():
        return f"(no message; caused by {type(cause).__name__}: {str(cause).strip()})"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" in {frames[-1].name}()" if frames else ""
    return f"(raised without a message{where})"


async def _report_error(websocket, exc: BaseException, debug: bool) -> None:
    import websockets
    import websockets.frames
    LOG.error("request failed:\n%s", traceback.format_exc())
    reason = "Internal server error." + (" Traceback included in previous frame." if debug else "")
    try:
        await websocket.send(_error_text(exc, debug))
        await websocket.close(code=websockets.frames.CloseCode.INTERNAL_ERROR, reason=reason)
    except websockets.ConnectionClosed:
        pass


async def _handler(server: PolicyServer, debug: bool, websocket) -> None:
    LOG.info("connection from %s opened", websocket.remote_address)
    open_session = getattr(server, "open_session", None)
    if open_session is None:  # a plain server object (metadata, connection_opened, infer)
        server.connection_opened()
        await _serve_connection(server, debug, websocket)
        return
    try:
        session = await asyncio.to_thread(open_session)
    except Exception as exc:  # noqa: BLE001 - e.g. no memory for another model instance
        await _report_error(websocket, exc, debug)
        return
    try:
        await _serve_connection(session, debug, websocket, server.metadata())
    finally:
        server.close_session(session)


async def _serve_connection(session, debug: bool, websocket, metadata: dict | None = None):
    """The metadata frame, then request after request on `session` (its own state)."""
    import websockets
    await websocket.send(packb(session.metadata() if metadata is None else metadata))
    prev_total_s = None
    while True:
        try:
            data = await websocket.recv()
            start = time.monotonic()
            obs = unpackb(data)
            t0 = time.monotonic()
            reply = await asyncio.to_thread(session.infer, obs)
            reply["server_timing"] = {"infer_ms": (time.monotonic() - t0) * 1e3}
            if prev_total_s is not None:
                reply["server_timing"]["prev_total_ms"] = prev_total_s * 1e3
            await websocket.send(packb(reply))
            prev_total_s = time.monotonic() - start
        except websockets.ConnectionClosed as exc:
            LOG.info("connection from %s closed: %s", websocket.remote_address, exc)
            return
        except Exception as exc:  # noqa: BLE001 - report to the client, as openpi's server does
            await _report_error(websocket, exc, debug)
            return


async def serve_async(server: PolicyServer, host: str, port: int, ready=None,
                      stop: asyncio.Event | None = None, *, api_key: str | None = None,
                      max_frame_bytes: int | None = DEFAULT_MAX_FRAME_BYTES,
                      debug: bool = False) -> None:
    """Serve until ``stop`` is set (or forever); ``ready(port)`` once listening.

    ``api_key``: required of every websocket client (None: open); ``max_frame_bytes``: the
    largest frame accepted (None: no limit); ``debug``: send tracebacks to clients."""
    from websockets.asyncio.server import serve
    stop = stop or asyncio.Event()
    async with serve(functools.partial(_handler, server, debug), host, port, compression=None,
                     max_size=max_frame_bytes or None,
                     process_request=functools.partial(_check_request, api_key)) as ws_server:
        bound = ws_server.sockets[0].getsockname()[1] if ws_server.sockets else port
        if ready:
            ready(bound)
        await stop.wait()
