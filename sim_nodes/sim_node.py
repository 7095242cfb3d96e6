"""Sim node: a simulator backend behind the contract's topics, for every backend of
`sim_nodes/registry.py` (MuJoCo and SAPIEN: the RoboFollow workcell; LIBERO: LIBERO's task
suites, run from `.venv-libero`). It speaks the backend's embodiment (names, cameras, action
width) and ends an episode by the session's rule: the policy-call budget, the step budget
(LIBERO's suites have one), or the task's success (`SimBackend.finished`).

Lock-step (default): after `start` the node publishes an observation (joint state + camera
images with one stamp) and waits; each action chunk that answers that stamp is executed
action by action (one tick each: /clock, joint_states, joint_commands; the chunk's scoring
frames follow in one message), then the next observation is published. The sim never advances without the action for the tick, so a
seed gives the same episode whatever the machine load.

Real time (`lock_step:=false`): the sim ticks on a wall-clock timer whether or not actions
arrived, as hardware would; it publishes an observation every `observation_period` ticks,
holds the last target when its queue runs dry, and a chunk that arrives late has the
actions whose time has already passed dropped (action k of a chunk is due at the
observation's stamp + (k + 1) * control_period). Use it to study latency; it is not
deterministic.

Charged latency (lock-step, a begin message with `charged_latency_ms`, the evaluator's
`latency:=charged`): still lock-step and deterministic, but each chunk's latency is charged
in sim time (`SimSession.execute_charged`): while the policy "thinks" the robot executes the
rest of the previous chunk (or holds), the new chunk's late actions are dropped, and the next
observation goes out after `observation_period` ticks of the new chunk (0: when it is used
up, as plain lock-step). The latency per call comes from the begin message (a list of ms) or,
with "measured", is the wall-clock wait from the observation to its chunk; the done status
reports what each call was charged.

A backend that renders only observed steps (LIBERO: `images_every_step` False) runs
lock-step only: `lock_step:=false` or `image_every_tick:=true` is refused at start.

Begin fields it reads: `task` ({"scene", "layout"}, and for LIBERO-VIFO the `goals` to watch
and `end_on`), `seed`, `max_policy_calls`, `max_actions_per_call`, `max_steps` (default: the
scene's own budget, if any), `charged_latency_ms`, the cue fields of a scene-placed cue, and
`perturbation` ({"axis", "level"}: `benchmarks.perturbations`). The `ready` status names the
embodiment and carries the backend's episode fields (LIBERO: the instruction, which goals
held at the start, the step budget) and the perturbation as applied; `done` carries the
backend's outcome (LIBERO: `success`, per role `goals`, `steps`).

Dense frames (`record_fps` > 0, for datasets): every 1/record_fps s of sim time, on the
physics clock between control ticks (`session.FrameSampler`), the node publishes every camera,
the measured joints and the executed target on the contract's /vla_bridge/record/* topics.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time

from dataclasses import dataclass

import numpy as np
from rclpy.node import Node
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory
from visualization_msgs.msg import MarkerArray

from vla_bridge import contract as C
from vla_bridge.benchmarks.perturbations import EpisodePerturbation
from vla_bridge.ros import messages
from vla_bridge.ros.episode_control import control_handler, sim_ready_gate
from vla_bridge.ros.node_config import declare, param
from vla_bridge.sim_nodes.registry import make_backend
from vla_bridge.sim_nodes.session import Budget, SimSession, summarize_events

BEGIN_NEEDS = ("task", "seed")  # begin fields the node reads (contract.check_control)
REAL_TIME_OBSERVATION_PERIOD = 10  # observation_period 0 in real time


@dataclass(frozen=True)
class SimConfig:
    backend: str = param("mujoco", "simulator backend (sim_nodes/registry.py): mujoco, sapien "
                         "or libero")
    embodiment: str = param("", "the embodiment the graph speaks; refused unless the "
                            "backend's (empty: the backend's)")
    lock_step: bool = param(True, "advance only when the action for the current tick arrived "
                            "(false: real time on a wall-clock timer)")
    control_period: float = param(0.0, "seconds of sim time per executed action (0: the "
                                  "embodiment's own: 0.06 PiPER pair, 0.05 LIBERO)")
    image_width: int = param(0, "width of the published images (0: the embodiment's)")
    image_height: int = param(0, "height of the published images (0: the embodiment's)")
    image_every_tick: bool = param(False, "render every tick (false: only when the policy "
                                   "needs an observation)")
    observation_period: int = param(0, "ticks of a chunk between observations; 0: real time "
                                    "10, charged latency when the chunk is used up")
    record_fps: int = param(0, "dense frames for datasets (/vla_bridge/record/*): 0 off, else "
                            "a divisor of the physics rate (250 Hz in MuJoCo)")


def backend_options(config: SimConfig) -> dict:
    """The backend's constructor arguments the node's config sets (0: the backend's own)."""
    options = {"control_period": config.control_period, "width": config.image_width,
               "height": config.image_height}
    return {k: v for k, v in options.items() if v}


class SimNode(Node):
    def __init__(self):
        super().__init__("sim_node")
        p = declare(self, SimConfig)
        self.lock_step = bool(p.lock_step)
        period = max(0, int(p.observation_period))  # 0: the mode's own default
        self.observation_period = period or REAL_TIME_OBSERVATION_PERIOD  # real time
        self.charged_period = period or None  # charged latency; None: when the chunk is used up
        backend = make_backend(p.backend, **backend_options(p))
        self.dt = backend.control_period
        self.embodiment = backend.embodiment  # the names, cameras and action width it speaks
        if p.embodiment and p.embodiment != self.embodiment.name:
            raise ValueError(f"sim backend {p.backend!r} speaks embodiment "
                             f"{self.embodiment.name!r}, the graph declares {p.embodiment!r}")
        if not backend.images_every_step and (not self.lock_step or p.image_every_tick):
            raise ValueError(f"sim backend {p.backend!r} renders only the steps before an "
                             "observation: it runs lock-step (lock_step:=true, "
                             "image_every_tick:=false)")
        self.session = SimSession(backend)
        self.record_fps = int(p.record_fps)
        if self.record_fps:
            self.session.record_frames(self.record_fps, self.publish_record_frame)
        self.image_every_tick = p.image_every_tick
        self.episode: str | None = None
        self.pending_stamp_ns: int | None = None  # observation awaiting its chunk
        self.clock_offset = 0.0  # sim time keeps growing across episodes (no /clock jumps)
        self.frame_fields = None  # field layout of a frame row (fixed within an episode)
        self.listened: dict = {}  # per-tick publisher -> has subscribers (refresh_listeners)
        # topic -> (subscribers, whether any reads every tick): refresh_listeners
        self._tick_readers: dict[str, tuple[int, bool]] = {}
        self.published_bits = 0  # the frames' `published`: which tick messages go out
        self.frame_rows: list = []  # frames not yet published
        self.queue: list[tuple[float, object]] = []  # real time: (due sim time, target)
        self.running = False
        # scene cue cards' textures (rewritten each episode; the backend keys models by content)
        self.cue_texture_dir = tempfile.mkdtemp(prefix="vla_bridge_sim_cues_")
        self._make_io()
        self.ready_gate = sim_ready_gate(self, self.episode_writers)
        self.ready_fields: dict = {}  # the current episode's ready (a repeated begin gets it again)
        if not self.lock_step:
            self.create_timer(self.dt, self.real_time_tick)
        self.get_logger().info(f"sim node ready: backend={p.backend} "
                               f"embodiment={self.embodiment.name} lock_step={self.lock_step} "
                               f"period={self.dt}s")

    def _make_io(self) -> None:
        q = messages.qos_profile
        self.pub_clock = self.create_publisher(Clock, C.TOPIC_CLOCK, q(C.QOS_STATE))
        self.pub_joints = self.create_publisher(JointState, C.TOPIC_JOINT_STATES, q(C.QOS_STATE))
        self.pub_cmd = self.create_publisher(JointState, C.TOPIC_JOINT_COMMANDS, q(C.QOS_STATE))
        self.pub_world = self.create_publisher(MarkerArray, C.TOPIC_WORLD_STATE, q(C.QOS_STATE))
        self.pub_frames = self.create_publisher(Float64MultiArray, C.TOPIC_FRAMES, q(C.QOS_STATE))
        self.tick_publishers = {C.TOPIC_CLOCK: self.pub_clock, C.TOPIC_JOINT_STATES: self.pub_joints,
                                C.TOPIC_JOINT_COMMANDS: self.pub_cmd}
        self.pub_status = self.create_publisher(String, C.TOPIC_EPISODE_STATUS, q(C.QOS_EVENTS))
        self.pub_images = {c: self.create_publisher(Image, C.image_topic(c), q(C.QOS_IMAGES))
                           for c in self.embodiment.camera_names}
        self.pub_info = {c: self.create_publisher(CameraInfo, C.camera_info_topic(c), q(C.QOS_IMAGES))
                         for c in self.embodiment.camera_names}
        self.pub_record = {c: self.create_publisher(Image, C.record_image_topic(c), q(C.QOS_IMAGES))
                           for c in self.embodiment.camera_names}
        self.pub_record_joints = self.create_publisher(JointState, C.TOPIC_RECORD_JOINT_STATES,
                                                       q(C.QOS_STATE))
        self.pub_record_cmd = self.create_publisher(JointState, C.TOPIC_RECORD_JOINT_COMMANDS,
                                                    q(C.QOS_STATE))
        # episode control (ros.episode_control: a bad request is logged or reported, never fatal)
        self.on_control = control_handler(self, BEGIN_NEEDS, ("scene", "layout"))
        self.create_subscription(String, C.TOPIC_EPISODE_CONTROL, self.on_control, q(C.QOS_EVENTS))
        self.create_subscription(JointTrajectory, C.TOPIC_ACTION_CHUNK,
                                 messages.guarded(self, self.on_chunk, "action chunk"),
                                 q(C.QOS_COMMAND))

    # ------------------------------------------------------------------ time
    def now(self) -> float:
        return self.clock_offset + self.session.backend.time

    # ------------------------------------------------------------------ episode control
    def start(self) -> None:
        self.running = True
        if self.record_fps:
            self.publish_record_frame()  # frame 0: the reset state
        self.publish_observation()

    def end(self) -> None:
        self.episode, self.pending_stamp_ns, self.running = None, None, False
        self.ready_gate.cancel()

    def answer_ready(self) -> None:
        """Send the episode's ``ready`` once this node's writers reach their readers."""
        self.ready_gate.send_ready(self.status, self.episode, self.ready_fields)

    def episode_writers(self) -> list:
        """The writers an episode needs delivered (the ready gate waits for their readers)."""
        return [self.pub_clock, self.pub_cmd, self.pub_world, self.pub_frames,
                *self.pub_images.values(), *self.pub_info.values(), *self.pub_record.values(),
                self.pub_record_joints, self.pub_record_cmd]

    def begin(self, ctl: dict) -> None:
        """Reset the scene for a begin request; the episode is adopted only once the reset
        worked (an unknown scene or layout leaves the running episode as it was)."""
        task = ctl["task"]
        budget = Budget(ctl.get("max_policy_calls", 10), ctl.get("max_actions_per_call", 50),
                        ctl.get("max_steps"))
        charged = ctl.get("charged_latency_ms")
        if charged is not None and not self.lock_step:
            raise ValueError("charged latency needs the lock-step sim (lock_step:=true); real "
                             "time already pays the policy's latency on the wall clock")
        offset = self.now() + 1.0  # a clear gap between episodes on /clock
        self.session.begin(task["scene"], task["layout"], ctl["seed"], budget,
                           cue_objects=self.scene_cues(ctl), charged=charged, task=task,
                           perturbation=EpisodePerturbation.from_begin(ctl))
        self.clock_offset = offset
        self.episode = ctl["episode"]
        self.pending_stamp_ns = None
        self.running = False
        self.queue = []
        self.frame_fields = None  # the scene's bodies may differ from the last episode
        self.frame_rows = []
        self.timing = {"wait_s": 0.0, "step_s": 0.0, "publish_s": 0.0}  # where wall time goes
        self.refresh_listeners()
        self.publish_tick()
        self.flush_frames()
        self.publish_world(self.now())
        self.ready_fields = {"tick": 0, "stamp": self.now(), "embodiment": self.embodiment.name,
                             **self.session.ready_info()}
        self.answer_ready()

    def scene_cues(self, ctl: dict) -> list:
        """The episode's scene-instantiated cue (cue_placement "scene" in the begin message):
        a card built from the cue task, family, variant and seed, exactly as a replay will;
        and a safety-critical scene's warning sign ("safety_scene")."""
        cards = []
        if ctl.get("safety_scene"):  # a safety-critical scene's warning sign (vifo.safety)
            from vla_bridge.benchmarks.vifo.safety import hazard_cards
            cards += hazard_cards(str(ctl["safety_scene"]), int(ctl["seed"]),
                                  out_dir=self.cue_texture_dir)
        if ctl.get("cue_placement") != "scene" or not ctl.get("cue_task"):
            return cards
        from vla_bridge.benchmarks.vifo.scene_cards import episode_scene_cues
        from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
        return cards + episode_scene_cues(TaskSpec.from_dict(ctl["cue_task"]),
                                          ctl.get("cue_family") or "", ctl.get("cue_variant") or "",
                                          int(ctl["seed"]), out_dir=self.cue_texture_dir)

    def status(self, kind: str, **fields) -> None:
        fields.setdefault("episode", self.episode)
        self.pub_status.publish(messages.json_msg({"kind": kind, **fields}))

    # ------------------------------------------------------------------ publishing
    def refresh_listeners(self) -> None:
        """Which per-tick streams have subscribers (checked once per chunk, not per tick): a
        message nobody reads is not built or sent, which is most of the bridge's cost. In
        lock-step the policy and the evaluator read /joint_states only at observations
        (contract.OBSERVATION_READERS), which publish_observation sends anyway, and a recorder
        rebuilds the tick messages from the frames' rows (contract.FRAME_EXPANDERS); the rows
        say which went out (``published``)."""
        self.listened = {pub: pub.get_subscription_count() > 0
                         for pub in (self.pub_clock, self.pub_joints, self.pub_cmd,
                                     self.pub_frames)}
        if self.lock_step:
            for pub, topic, excluded in (
                    (self.pub_clock, C.TOPIC_CLOCK, C.FRAME_EXPANDERS),
                    (self.pub_cmd, C.TOPIC_JOINT_COMMANDS, C.FRAME_EXPANDERS),
                    (self.pub_joints, C.TOPIC_JOINT_STATES,
                     C.FRAME_EXPANDERS | C.OBSERVATION_READERS)):
                if self.listened[pub]:
                    self.listened[pub] = self.tick_readers(pub, topic, excluded)
        self.published_bits = sum(bit for topic, bit in C.TICK_TOPIC_BITS.items()
                                  if self.listened[self.tick_publishers[topic]])

    def tick_readers(self, pub, topic: str, excluded: frozenset) -> bool:
        """Whether a node not in `excluded` subscribes to `topic` (the graph query is made
        again only when the number of subscribers changes)."""
        count = pub.get_subscription_count()
        known = self._tick_readers.get(topic)
        if known is None or known[0] != count:
            names = {info.node_name for info in self.get_subscriptions_info_by_topic(topic)}
            known = self._tick_readers[topic] = (count, bool(names - excluded))
        return known[1]

    def publish_tick(self) -> None:
        t = self.now()
        listened = self.listened
        if listened[self.pub_clock]:
            self.pub_clock.publish(messages.clock_msg(t))
        if listened[self.pub_joints]:
            self.pub_joints.publish(messages.joint_state_msg(self.embodiment.state_names, self.session.backend.joint_positions(), t))
        if listened[self.pub_cmd]:
            self.pub_cmd.publish(messages.joint_state_msg(self.embodiment.action_names, self.session.command, t))
        if listened[self.pub_frames]:  # the scorer (LIBERO's evaluator reads none) or a bag
            backend = self.session.backend
            world = backend.world_state()
            if self.frame_fields is None:  # same bodies all episode
                self.frame_fields = messages.frame_fields(len(self.session.command), world,
                                                          self.embodiment)
            self.frame_rows.append(messages.frame_row(t, self.session.command, world,
                                                      backend.joint_positions(),
                                                      self.published_bits))
        if not self.lock_step:
            self.flush_frames()
        if self.image_every_tick:
            self.publish_images(t)

    def flush_frames(self) -> None:
        """Publish the frames recorded since the last flush as one message (lock-step: one
        per chunk, so the evaluator handles 10 messages an episode instead of 500)."""
        if self.frame_rows:
            self.pub_frames.publish(messages.frames_msg(np.array(self.frame_rows), self.frame_fields))
            self.frame_rows = []

    def publish_world(self, t: float) -> None:
        world = self.session.backend.world_state()
        world.stamp = t
        self.pub_world.publish(messages.world_state_to_msg(world))

    def publish_images(self, t: float) -> None:
        backend = self.session.backend
        for cam in self.embodiment.camera_names:
            self.pub_images[cam].publish(messages.image_to_msg(self.session.render(cam), t, cam))
            model = backend.camera_model(cam)
            self.pub_info[cam].publish(messages.camera_info_msg(model.width, model.height,
                                                              model.focal_px, t, cam))

    def publish_record_frame(self) -> None:
        """One dense frame (record_fps): every camera, the measured joints and the executed
        target, with one stamp. Rendering reads the state only, so it changes no result."""
        t, backend = self.now(), self.session.backend
        for cam in self.embodiment.camera_names:
            self.pub_record[cam].publish(messages.image_to_msg(self.session.render(cam), t, cam))
        self.pub_record_joints.publish(messages.joint_state_msg(self.embodiment.state_names, backend.joint_positions(), t))
        self.pub_record_cmd.publish(messages.joint_state_msg(self.embodiment.action_names, self.session.command, t))

    def publish_observation(self) -> None:
        """Joint state, world state and images of the current tick, all with its stamp; the
        chunk answering this stamp may then run. The joint state is sent again although the
        tick already sent it: a policy that reset after that tick (new episode) still gets
        a complete observation."""
        t = self.now()
        self.publish_world(t)
        self.pub_joints.publish(messages.joint_state_msg(self.embodiment.state_names, self.session.backend.joint_positions(), t))
        if not self.image_every_tick:
            self.publish_images(t)
        self.pending_stamp_ns = messages.stamp_ns(messages.sec_to_stamp(t))
        self.session.awaiting(self.pending_stamp_ns)  # its first answer is a policy call
        self.observed_at = time.perf_counter()

    # ------------------------------------------------------------------ actions
    def on_chunk(self, msg: JointTrajectory) -> None:
        if not self.lock_step:
            self.on_chunk_real_time(msg)
            return
        if self.episode is None or self.pending_stamp_ns is None:
            self.get_logger().warning("action chunk arrived while no observation is pending; dropped")
            return
        if messages.stamp_ns(msg.header.stamp) != self.pending_stamp_ns:
            self.get_logger().warning("stale action chunk (answers an older observation); dropped")
            return
        chunk = self.accept_chunk(msg)
        if chunk is None:  # hold position; the evaluator was told
            return
        self.pending_stamp_ns = None
        timing = self.timing
        waited = time.perf_counter() - self.observed_at
        timing["wait_s"] += waited
        t0 = time.perf_counter()
        self.refresh_listeners()
        for _ in self.steps(chunk, waited):
            t1 = time.perf_counter()
            self.publish_tick()
            timing["publish_s"] += time.perf_counter() - t1
        self.log_limit_events()
        self.flush_frames()
        timing["step_s"] += time.perf_counter() - t0
        self.status(C.STATUS_CHUNK_DONE, tick=self.session.ticks, calls=self.session.calls)
        if self.session.done:
            timing["step_s"] -= timing["publish_s"]
            self.status(C.STATUS_DONE, ticks=self.session.ticks, calls=self.session.calls,
                        reason=self.session.reason,
                        timing={k: round(v, 4) for k, v in timing.items()},
                        **self.charged_fields(), **self.session.backend.outcome())
        else:
            self.publish_observation()

    def accept_chunk(self, msg: JointTrajectory):
        """The chunk of a message, validated once at this edge (`messages.msg_to_chunk`: the
        embodiment's names, the width, finite values); None, with one error line and an
        error status, when it is malformed."""
        try:
            return messages.msg_to_chunk(msg, self.embodiment.action_names)
        except ValueError as exc:
            self.get_logger().error(f"rejected action chunk: {exc}")
            self.status(C.STATUS_ERROR, message=f"rejected action chunk: {exc}")
            return None

    def steps(self, chunk, waited_s: float):
        """The session's ticks for a lock-step chunk: plain, or with its latency charged (the
        wall-clock wait counts when the episode charges what was measured)."""
        if self.session.charged is None:
            return self.session.execute(chunk)
        return self.session.execute_charged(chunk, measured_ms=waited_s * 1e3,
                                            period=self.charged_period)

    def charged_fields(self) -> dict:
        """The done status' record of charged latency (none when the episode charges none)."""
        if self.session.charged is None:
            return {}
        return {"charged_latency_ms": list(self.session.charged_ms),
                "observation_period": self.charged_period or 0}

    def log_limit_events(self) -> None:
        """One warning for the targets the session clamped to the arm's limits since the last."""
        events = self.session.drain_events()
        if events:
            self.get_logger().warning(summarize_events(events))

    def close(self) -> None:
        self.session.backend.close()
        shutil.rmtree(self.cue_texture_dir, ignore_errors=True)

    # ------------------------------------------------------------------ real time
    def on_chunk_real_time(self, msg: JointTrajectory) -> None:
        if not self.running:
            return
        chunk = self.accept_chunk(msg)
        if chunk is None:
            return
        t_obs = messages.stamp_to_sec(msg.header.stamp)
        now = self.now()
        due = [(t_obs + (k + 1) * self.dt, a) for k, a in enumerate(chunk)]
        self.queue = [(t, a) for t, a in due if t > now + 1e-9]  # the newest chunk wins
        self.session.count_call(messages.stamp_ns(msg.header.stamp))  # once per observation

    def real_time_tick(self) -> None:
        if not self.running:
            return
        target = self.queue.pop(0)[1] if self.queue else self.session.command  # hold when dry
        self.session.step_action(target)
        self.publish_tick()
        if self.session.ticks % self.observation_period == 0:
            self.log_limit_events()
        if self.session.ticks >= self.session.max_ticks:
            self.running = False
            self.status(C.STATUS_DONE, ticks=self.session.ticks, calls=self.session.calls,
                        reason="episode length reached (real time)")
        elif self.session.ticks % self.observation_period == 0:
            self.refresh_listeners()
            self.publish_observation()


def main(args=None) -> int:
    return messages.spin_node(SimNode, "sim_node", args)


if __name__ == "__main__":
    sys.exit(main())
