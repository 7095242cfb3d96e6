"""Policy node: assembles observations from the contract's topics, asks a policy backend for
an action chunk, and publishes it as a JointTrajectory that echoes the observation's stamp.

An observation is complete when the joint state and every camera image with the same stamp
have arrived (plus the world state for privileged backends such as the oracle).

A heartbeat on contract.TOPIC_POLICY_HEARTBEAT (50 Hz) tells the robot node the policy
process is alive; the PiPER node holds the arms when it stops. It is beaten by a small child
process (`vla_bridge.policy_nodes.heartbeat_node`), so a predict that holds the GIL does not
silence it, and it stops when this process dies (SIGKILL included). Parameter
``heartbeat_process`` (default true): false beats from a thread of this process instead.
"""
from __future__ import annotations

import inspect
import sys
import time
from dataclasses import dataclass

from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.ros import messages, reach
from vla_bridge.ros.node_config import declare, param
from vla_bridge.ros.stamp_sync import StampSync
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.chunking import ChunkRunner, ChunkScheduler
from vla_bridge.policy_nodes.heartbeat_node import Heartbeat
from vla_bridge.policy_nodes.registry import make_policy

KEEP_STAMPS = 64  # observation parts kept while waiting for the rest
WORLD_SYNC = ("stamp", "latest")  # PolicyConfig.world_state_sync
HEARTBEAT_PERIOD_S = 0.02  # 50 Hz; the PiPER node holds after 0.15 s of silence (piper_safety.yaml)
BEGIN_NEEDS = ("task", "instruction")  # begin fields the node reads (contract.check_control)


@dataclass(frozen=True)
class PolicyConfig:
    """The policy node's parameters (``vla-bridge params policy_node``)."""
    backend: str = param("oracle", "policy backend spec: oracle, hold, openpi?..., torch?..., "
                                   "lerobot?..., replay?..., package.module:Class")
    chunk_size: int = param(50, "actions the policy returns per call")
    action_horizon: int = param(50, "actions of each chunk the node publishes")
    control_period: float = param(0.06, "seconds between a chunk's actions (time_from_start); "
                                         "must equal the sim's")
    image_source: str = param("raw", "images the policy reads: raw, or cued (the evaluator's "
                                     "cue overlay)")
    follow: str = param("language", "task a privileged backend (the oracle) plans under a cue "
                                    "protocol: language or cue")
    temporal_ensemble: bool = param(False, "ACT temporal ensembling of overlapping chunks "
                                           "(needs action_horizon < chunk_size)")
    async_inference: bool = param(False, "predict the next chunk while the current one "
                                         "executes and splice them")
    embodiment: str = param(C.DEFAULT_EMBODIMENT, "the graph's embodiment; a backend that "
                                                  "declares another is refused at start")
    heartbeat_process: bool = param(True, "beat the heartbeat from a child process (false: "
                                          "from a thread of this one)")
    world_state_sync: str = param("stamp", "world state a privileged backend (the oracle) gets "
                                           "with an observation: stamp (the world state of the "
                                           "observation's own stamp, as a sim publishes it) or "
                                           "latest (the newest one: the tracker on real arms "
                                           "stamps its own camera frames)")


class PolicyNode(Node):
    def __init__(self):
        super().__init__("policy_node")
        p = self.config = declare(self, PolicyConfig)
        self.policy = make_policy(p.backend, chunk_size=p.chunk_size,
                                  control_period=p.control_period, follow=p.follow)
        self._pass_cue_task = _accepts(self.policy.set_instruction, "cue_task")
        # the graph's embodiment (names, cameras, action width); a backend that declares
        # another one is refused here, naming both (contract.agree_embodiment)
        self.embodiment = C.agree_embodiment({
            "the graph (policy_node.embodiment)": p.embodiment,
            f"policy backend {p.backend!r}": getattr(self.policy, "embodiment",
                                                     C.DEFAULT_EMBODIMENT)})
        self.dt = p.control_period
        self.action_horizon = int(p.action_horizon)  # actions executed per call
        self.episode: str | None = None
        self.calls = 0
        self.parts = StampSync(KEEP_STAMPS)  # stamp_ns -> {"state", "images": {...}, "world"}
        if p.world_state_sync not in WORLD_SYNC:
            raise ValueError(f"world_state_sync must be one of {', '.join(WORLD_SYNC)}, got "
                             f"{p.world_state_sync!r}")
        self.latest_world = p.world_state_sync == "latest"
        self.world: MarkerArray | None = None  # latest: the newest world state of the episode
        self.waiting: int | None = None  # latest: an observation waiting for a first world state
        self._make_io(p.image_source)
        # chunk execution hook (vla_bridge.policy_nodes.chunking): action horizon, temporal
        # ensembling, async inference with splicing, per-call latency breakdown
        self.chunking = ChunkRunner(
            self.policy, ChunkScheduler(self.dt, self.action_horizon, p.temporal_ensemble,
                                        p.async_inference),
            self._publish_chunk, self.status, self.get_logger().error, p.async_inference)
        self.chunking.action_dim = self.embodiment.action_dim
        self.heartbeat = Heartbeat(self, HEARTBEAT_PERIOD_S, process=bool(p.heartbeat_process))
        self.ready_gate = reach.ReadyGate(self, self.reach_checks)
        self.ready_fields: dict | None = None  # the episode's ready, once its reset worked
        self.get_logger().info(f"policy node ready: backend={p.backend}")

    def _make_io(self, image_source: str) -> None:
        q = messages.qos_profile
        topic = {"raw": C.image_topic, "cued": C.cued_image_topic}.get(image_source)
        if topic is None:
            raise ValueError(f"image_source must be 'raw' or 'cued', got {image_source!r}")
        self.pub_chunk = self.create_publisher(JointTrajectory, C.TOPIC_ACTION_CHUNK, q(C.QOS_COMMAND))
        self.pub_status = self.create_publisher(String, C.TOPIC_POLICY_STATUS, q(C.QOS_EVENTS))
        sub = self._subscribe
        sub(String, C.TOPIC_EPISODE_CONTROL, self.on_control, C.QOS_EVENTS)
        # per-tick streams: only the newest sample matters (the sim waits while we think),
        # so depth 1 keeps this node from replaying every tick of the chunk it just sent
        sub(JointState, C.TOPIC_JOINT_STATES, self.on_joints, C.QOS_LATEST)
        for cam in self.embodiment.camera_names:
            sub(Image, topic(cam), lambda m, c=cam: self.on_image(c, m), C.QOS_IMAGES)
        if self.policy.needs_world_state:
            sub(MarkerArray, C.TOPIC_WORLD_STATE, self.on_world, C.QOS_LATEST)

    def _subscribe(self, msg_type, topic: str, callback, qos: C.QosSpec) -> None:
        """A subscription whose callback logs, rather than dies of, an exception."""
        self.create_subscription(msg_type, topic, messages.guarded(self, callback, topic),
                                 messages.qos_profile(qos))

    def status(self, kind: str, **fields) -> None:
        fields.setdefault("episode", self.episode)
        self.pub_status.publish(messages.json_msg({"kind": kind, **fields}))

    # ------------------------------------------------------------------ episodes
    def on_control(self, msg: String) -> None:
        """A well-formed ``begin`` resets the policy for its episode; a malformed control
        message is logged and changes nothing (messages.parse_control)."""
        ctl = messages.parse_control(msg, self.get_logger(), require=BEGIN_NEEDS)
        if ctl is None or ctl["kind"] != C.CONTROL_BEGIN:
            return
        if ctl["episode"] == self.episode and self.ready_fields is not None:
            self.answer_ready()  # asked again (a lost begin or ready): no second reset
            return
        try:
            self.begin(ctl)
        except Exception as exc:  # noqa: BLE001 - never die on one request
            self.get_logger().error(f"episode begin {ctl['episode']!r} failed: {exc!r}")

    def begin(self, ctl: dict) -> None:
        self.episode, self.calls = ctl["episode"], 0
        self.parts.clear()
        self.world, self.waiting = None, None  # latest: a world state heard after the begin
        self.ready_fields = None

        def prepare():
            self.policy.reset()
            task = ctl["task"] if self.policy.needs_world_state else None
            extra = {}  # a visual-cue protocol's task, for privileged backends that take it
            if self.policy.needs_world_state and self._pass_cue_task and ctl.get("cue_task"):
                extra["cue_task"] = ctl["cue_task"]
            self.policy.set_instruction(ctl["instruction"], task, **extra)
        try:
            self.chunking.begin_episode(ctl["episode"], prepare,
                                        charged=ctl.get("charged_latency_ms"))
        except Exception as exc:
            self.status(C.STATUS_ERROR, message=f"policy reset failed: {exc}")
            return
        note = getattr(self.policy, "note", "")  # e.g. a goal a scripted policy cannot plan
        self.ready_fields = {"embodiment": self.embodiment.name,
                             **({"note": note} if isinstance(note, str) and note else {})}
        self.answer_ready()

    def answer_ready(self) -> None:
        """Send ``ready`` once the status reaches the evaluator and the chunks the sim
        (``vla_bridge.ros.reach``)."""
        self.ready_gate.send_ready(self.status, self.episode, self.ready_fields)

    def reach_checks(self) -> list:
        return [(self.pub_status, reach.publishing_nodes(self, C.TOPIC_EPISODE_CONTROL)),
                (self.pub_chunk, reach.publishing_nodes(self, C.TOPIC_JOINT_STATES))]

    # ------------------------------------------------------------------ observation parts
    def on_joints(self, msg: JointState) -> None:
        key = messages.stamp_ns(msg.header.stamp)
        self.parts.add(key, "state", msg)
        self.chunking.note_tick(key * 1e-9)
        self.maybe_predict(key)

    def on_world(self, msg: MarkerArray) -> None:
        if not msg.markers:
            return
        if self.latest_world:  # the newest one goes with the next observation
            self.world = msg
            if self.waiting is not None:
                key, self.waiting = self.waiting, None
                self.maybe_predict(key)
            return
        key = messages.stamp_ns(msg.markers[0].header.stamp)
        self.parts.add(key, "world", msg)
        self.maybe_predict(key)

    def on_image(self, camera: str, msg: Image) -> None:
        key = messages.stamp_ns(msg.header.stamp)
        self.parts.add(key, "images", messages.msg_to_image(msg), camera=camera)
        self.maybe_predict(key)

    def maybe_predict(self, key: int) -> None:
        part = self.parts.get(key)
        observed = "state" in part and len(part["images"]) == len(self.embodiment.cameras)
        has_world = self.world is not None if self.latest_world else "world" in part
        if observed and self.policy.needs_world_state and not has_world:
            self.waiting = key if self.latest_world else None
        if not observed or (self.policy.needs_world_state and not has_world) or \
                self.episode is None:
            return
        t0 = time.perf_counter()
        part = self.parts.take(key)  # and nothing older can be needed now
        world = self.world if self.latest_world else part.get("world")
        stamp = part["state"].header.stamp
        obs = Observation(state=messages.joint_state_to_array(part["state"],
                                                              self.embodiment.state_names),
                          images=part["images"], stamp=messages.stamp_to_sec(stamp),
                          world=messages.msg_to_world_state(world) if world is not None else None)
        self.predict_and_publish(obs, stamp, time.perf_counter() - t0)

    def predict_and_publish(self, obs: Observation, stamp, preprocess_s: float = 0.0) -> None:
        """Predict, validate, schedule and publish (in a worker thread when async_inference);
        status `predicted` carries inference_ms, publish_ms and the latency breakdown."""
        self.chunking.on_observation(obs, stamp, self.episode, preprocess_s)

    def _publish_chunk(self, chunk, stamp) -> None:
        msg = messages.chunk_to_msg(chunk, self.embodiment.action_names, 0.0, self.dt)
        msg.header.stamp = stamp
        self.pub_chunk.publish(msg)
        self.calls = self.chunking.calls + 1

    def close(self) -> None:
        self.heartbeat.stop()
        self.chunking.close()
        getattr(self.policy, "close", lambda: None)()


def _accepts(function, name: str) -> bool:
    """True when ``function`` takes a keyword ``name`` (or **kwargs)."""
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def main(args=None) -> int:
    return messages.spin_node(PolicyNode, "policy_node", args)


if __name__ == "__main__":
    sys.exit(main())
