"""`lerobot_async` backend: a LeRobot policy served by LeRobot's own gRPC policy server
(``python -m lerobot.async_inference.policy_server --host=... --port=...``, LeRobot >= 0.5),
spoken to the way its robot client (``lerobot.async_inference.robot_client``) does.

``lerobot_async?host=127.0.0.1&port=8080&checkpoint=DIR``: ``checkpoint`` is the
``pretrained_model`` directory (or Hub id) *as the server sees it*; ``policy_type`` (act,
diffusion, smolvla, pi0, pi05, groot, ... as the server supports them) and the cameras the
policy reads are taken from ``DIR/config.json`` when that is readable here, else given
(``policy_type=act&cameras=["cam_high"]``). ``camera_map`` maps the checkpoint's camera names
to ours (``{"top": "cam_high"}``), ``device`` is the server's (cpu), ``actions_per_chunk``
defaults to the node's ``chunk_size``. ``gripper``: "identity" or "aloha", as for ``lerobot``.

The exchange, LeRobot's (services.proto ``AsyncInference``; LeRobot's own generated stubs,
``lerobot.transport.services_pb2*``): on first use, ``Ready`` then ``SendPolicyInstructions``
with a pickled ``RemotePolicyConfig`` (policy type, checkpoint, device, actions per chunk, the
LeRobot features of our observation: ``hw_to_dataset_features`` of our 14 joints and the
cameras, as the robot client builds them from its robot); ``Ready`` again at every episode's
``reset`` (the server forgets the previous episode's timesteps). Each ``predict``: one
``SendObservations`` stream of a pickled ``TimedObservation`` (wall-clock ``timestamp``,
``timestep`` = the control step since the episode's first observation, ``must_go=True`` so the
server never filters it as "too similar", the raw observation: each joint by name, each camera
``HxWx3`` uint8, ``task``), then ``GetActions``: the pickled ``TimedAction`` chunk the server's
policy predicted for that observation (timesteps from ours), returned as ``[H, 14]`` absolute
targets. One observation in flight at a time, so the chunk is the server's answer to exactly
that observation (the server keeps only the latest observation; we never send a second before
the first is answered).

LeRobot's wire format is pickle: connect only to a server you trust. This needs grpcio and
LeRobot >= 0.5 (``.venv-lerobot``); from another interpreter (the node's ``.venv``) the client
runs in a worker there (``lerobot.worker``). A dead server, a non-LeRobot one or an answer that
is not an action chunk is one RuntimeError naming the server; the node survives it (the
episode fails) and the next episode connects afresh.
"""
from __future__ import annotations

import importlib.util
import json
import pickle  # nosec - LeRobot's own wire format (module docstring)
import time
from pathlib import Path

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend
from vla_bridge.policy_nodes.lerobot import worker

TARGET = "vla_bridge.policy_nodes.lerobot_async.client:LeRobotAsyncPolicy"


def _runs_here() -> bool:
    """grpcio and a LeRobot whose async_inference speaks the current protocol (>= 0.5)."""
    if worker.in_worker() or worker.is_this_interpreter(worker.venv_python()):
        return True
    import importlib.metadata
    try:
        major, minor = (int(x) for x in importlib.metadata.version("lerobot").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return importlib.util.find_spec("grpc") is not None and (major, minor) >= (0, 5)


def _as(value, kind):
    return kind(json.loads(value) if isinstance(value, str) and value[:1] in "[{" else value or kind())


class LeRobotAsyncPolicy(PolicyBackend):
    def __init__(self, host: str = "127.0.0.1", port: int = 8080, checkpoint: str | None = None,
                 policy_type: str | None = None, cameras: list | str | None = None,
                 camera_map: dict | str | None = None, device: str = "cpu",
                 actions_per_chunk: int | None = None, chunk_size: int = 50,
                 gripper: str = "identity", control_period: float = 0.06,
                 connect_timeout: float = 10.0, timeout: float = 60.0):
        if not checkpoint:
            raise ValueError("the lerobot_async policy needs the server-side checkpoint: "
                             "--policy 'lerobot_async?host=H&port=P&checkpoint=DIR'")
        if gripper not in ("identity", "aloha"):
            raise ValueError(f"gripper must be 'identity' or 'aloha', got {gripper!r}")
        self._remote = None
        if not _runs_here():  # grpcio / LeRobot 0.6 live in .venv-lerobot
            self._remote = worker.WorkerPolicy(TARGET, dict(
                host=host, port=port, checkpoint=checkpoint, policy_type=policy_type,
                cameras=cameras, camera_map=camera_map, device=device,
                actions_per_chunk=actions_per_chunk, chunk_size=chunk_size, gripper=gripper,
                control_period=control_period, connect_timeout=connect_timeout,
                timeout=timeout), "LeRobot's gRPC client (lerobot_async)")
            return
        self.address = f"{host}:{int(port)}"
        self.checkpoint, self.device = str(checkpoint), device
        self.chunk_size = int(chunk_size)
        self.actions_per_chunk = int(actions_per_chunk or chunk_size)
        self.gripper, self.dt = gripper, float(control_period)
        self.connect_timeout, self.timeout = float(connect_timeout), float(timeout)
        camera_map = _as(camera_map, dict)
        config = Path(checkpoint) / "config.json"
        saved = json.loads(config.read_text()) if config.is_file() else {}
        self.policy_type = policy_type or saved.get("type")
        if not self.policy_type:
            raise ValueError(f"lerobot_async: {config} is not readable here: give policy_type "
                             "(act, diffusion, smolvla, pi0, ...)")
        if cameras is None:
            cameras = [k.removeprefix("observation.images.") for k, f in
                       saved.get("input_features", {}).items() if f.get("type") == "VISUAL"]
            cameras = cameras or list(C.ALOHA_PIPER.camera_names)
        # the checkpoint's camera name -> ours
        self.cameras = {name: camera_map.get(name, name) for name in _as(cameras, list)}
        self.channel = self.stub = None
        self.instruction, self._t0 = "", None

    # ------------------------------------------------------------------ connection

    def _connect(self) -> None:
        import grpc
        from lerobot.async_inference.helpers import RemotePolicyConfig
        from lerobot.transport import services_pb2, services_pb2_grpc
        from lerobot.transport.utils import grpc_channel_options
        from lerobot.utils.feature_utils import hw_to_dataset_features
        self._close_channel()
        self.channel = grpc.insecure_channel(self.address, grpc_channel_options())
        try:
            grpc.channel_ready_future(self.channel).result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError:
            self._close_channel()
            raise RuntimeError(f"LeRobot policy server unreachable at {self.address} (no gRPC "
                               f"connection in {self.connect_timeout:g} s: nothing listening, "
                               "or not a gRPC server)") from None
        self.stub = services_pb2_grpc.AsyncInferenceStub(self.channel)
        h, w = C.ALOHA_PIPER.image_size[1], C.ALOHA_PIPER.image_size[0]
        hardware = {name: float for name in C.ALOHA_PIPER.state_names}
        hardware.update({name: (h, w, 3) for name in self.cameras})
        features = hw_to_dataset_features(hardware, "observation", use_video=False)
        setup = RemotePolicyConfig(self.policy_type, self.checkpoint, features,
                                   self.actions_per_chunk, self.device)
        self._rpc("Ready", services_pb2.Empty())
        self._rpc("SendPolicyInstructions", services_pb2.PolicySetup(data=pickle.dumps(setup)),
                  timeout=max(self.timeout, 300.0))  # the server loads the policy meanwhile

    def _rpc(self, name: str, request, timeout: float | None = None):
        import grpc
        try:
            return getattr(self.stub, name)(request, timeout=timeout or self.timeout)
        except grpc.RpcError as exc:
            self._close_channel()
            detail = exc.details() if hasattr(exc, "details") else str(exc)
            code = exc.code().name if hasattr(exc, "code") else "?"
            raise RuntimeError(f"LeRobot policy server at {self.address}: {name} failed "
                               f"({code}: {str(detail)[:300]})") from None

    def _close_channel(self) -> None:
        if self.channel is not None:
            self.channel.close()
        self.channel = self.stub = None

    # ------------------------------------------------------------------ the backend

    def reset(self) -> None:
        if self._remote:
            return self._remote.reset()
        self._t0 = None
        if self.stub is not None:  # a new episode: the server forgets the last one's steps
            from lerobot.transport import services_pb2
            self._rpc("Ready", services_pb2.Empty())

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        if self._remote:
            return self._remote.set_instruction(instruction, task)
        self.instruction = instruction or ""

    def predict(self, observation: Observation) -> np.ndarray:
        if self._remote:
            return self._remote.predict(observation)
        from lerobot.async_inference.helpers import TimedObservation
        from lerobot.transport import services_pb2
        from lerobot.transport.utils import send_bytes_in_chunks
        if self.stub is None:
            self._connect()
        if self._t0 is None:
            self._t0 = observation.stamp
        raw = {name: float(v) for name, v in zip(C.ALOHA_PIPER.state_names, observation.state)}
        for name, ours in self.cameras.items():
            if ours not in observation.images:
                raise ValueError(f"lerobot_async: the policy reads camera {name!r} (ours: "
                                 f"{ours!r}); the observation has {sorted(observation.images)}")
            raw[name] = np.ascontiguousarray(observation.images[ours])
        raw["task"] = self.instruction
        step = round((observation.stamp - self._t0) / self.dt)
        timed = TimedObservation(timestamp=time.time(), timestep=step, observation=raw,
                                 must_go=True)
        self._rpc("SendObservations", send_bytes_in_chunks(
            pickle.dumps(timed), services_pb2.Observation, silent=True))
        answer = self._rpc("GetActions", services_pb2.Empty())
        return self._chunk(answer.data, step)

    def _chunk(self, data: bytes, step: int) -> np.ndarray:
        where = f"LeRobot policy server at {self.address}"
        if not data:
            raise RuntimeError(f"{where} returned no actions for observation #{step} (its "
                               "policy failed, or the observation did not reach it: see its log)")
        try:
            timed = pickle.loads(data)  # nosec - LeRobot's protocol
            actions = np.stack([np.asarray(a.get_action().detach().cpu().double().numpy())
                                for a in timed])
            first = timed[0].get_timestep()
        except Exception as exc:  # noqa: BLE001 - anything else is not LeRobot's answer
            raise RuntimeError(f"{where} sent something that is not a chunk of LeRobot "
                               f"TimedActions ({type(exc).__name__}: {str(exc)[:200]})") from None
        actions = actions.reshape(len(actions), -1)
        if actions.shape[1] != C.ALOHA_PIPER.action_dim:
            raise RuntimeError(f"{where} sent {actions.shape[1]}-D actions; the contract has "
                               f"{C.ALOHA_PIPER.action_dim}")
        if first != step:
            raise RuntimeError(f"{where} answered observation #{first}, not #{step}")
        if self.gripper == "aloha":
            from vla_bridge.policy_nodes.openpi.wire import actions_from_wire
            actions = actions_from_wire(actions, "aloha")
        return actions[: self.chunk_size]

    def close(self) -> None:
        if self._remote:
            return self._remote.close()
        self._close_channel()
