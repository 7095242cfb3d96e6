"""Evaluator node: the ROS shell of ``episodes.SuiteRun``, the one engine that runs any
benchmark's episodes over the node graph and scores them (``benchmark``: robofollow, libero).

The node declares the engine's parameters and the chosen benchmark's, publishes the
instruction and episode control, and hands the run the sim's and the policy's statuses, the
recorded frames and, under the package's launcher, its news of the node processes
(``vla_bridge.ros.node_events``). The visual-cue overlay (LIBERO-VIFO) hangs off the run as a
subscriber (``CueOverlayHook`` on RoboFollow's scenes, ``LiberoOverlayHook`` in LIBERO's), as
does charged latency (``charged_latency.ChargedLatency``, with ``latency:=charged``).
"""
from __future__ import annotations

import dataclasses
import functools
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, String

from vla_bridge import contract as C
from vla_bridge.ros import cpu_profile, messages
from vla_bridge.ros.node_config import combine, declare
from vla_bridge.ros.node_events import NodeEvents
from vla_bridge.evaluation import charged_latency
from vla_bridge.evaluation.benchmark import DEFAULT_BENCHMARK, benchmark_class
from vla_bridge.evaluation.cues.run import CueRun
from vla_bridge.evaluation.episodes import (SPIN_S, EngineConfig, GraphBroken,
                                            LatencyCollector, Subscriber, SuiteRun)
from vla_bridge.evaluation.perturbation import PerturbationHook
from vla_bridge.evaluation.run_dir import RunDirectory, RunDirError

ALOHA = C.ALOHA_PIPER  # the PiPER pair's names, cameras and image size


@functools.lru_cache(maxsize=None)
def _evaluator_config(benchmark: str) -> type:
    cls = benchmark_class(benchmark)  # ValueError: an unknown benchmark
    return combine(f"{cls.Config.__name__.removesuffix('Config')}EvaluatorConfig",
                   EngineConfig, cls.Config)


def evaluator_config(values: dict | None = None) -> type:
    """The evaluator node's config: the engine's parameters (``episodes.EngineConfig``), then
    those of the benchmark its ``benchmark`` value names (default robofollow; ``values``: its
    params-file values), one frozen dataclass (``node_config.combine``)."""
    return _evaluator_config(str((values or {}).get("benchmark", DEFAULT_BENCHMARK)))


class EvaluatorNode(Node):
    """The run's Graph over DDS: ``send``, ``instruct``, ``spin`` and rclpy's publisher and
    subscriber counts."""

    def __init__(self):
        super().__init__("evaluator_node")
        engine = declare(self, EngineConfig)  # its benchmark says which config comes next
        cls = benchmark_class(str(engine.benchmark))  # ValueError: an unknown benchmark
        self.config = declare(self, evaluator_config({"benchmark": engine.benchmark}))
        self.p = dataclasses.asdict(self.config)  # a plain dict: run.json records it
        q = messages.qos_profile
        self.pub_control = self.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_instruction = self.create_publisher(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.benchmark = cls(self.p, self.get_logger())
        self.hooks = self.make_hooks()
        self.suite = SuiteRun(self.p, self, benchmark=self.benchmark, log=self.get_logger(),
                              subscribers=[LatencyCollector(), *self.hooks],
                              node_events=NodeEvents.from_env())
        self.create_subscription(String, C.TOPIC_EPISODE_STATUS, self.on_sim_status,
                                 q(C.QOS_EVENTS))
        self.create_subscription(String, C.TOPIC_POLICY_STATUS, self.on_policy_status,
                                 q(C.QOS_EVENTS))
        if self.benchmark.records_frames:  # else the sim builds no frame rows for it
            self.create_subscription(Float64MultiArray, C.TOPIC_FRAMES, self.on_frame,
                                     q(C.QOS_STATE))
        self.create_subscription(String, C.TOPIC_RECORDER_STATUS, self.on_recorder_status,
                                 q(C.QOS_EVENTS))

    def make_hooks(self) -> list[Subscriber]:
        """The benchmark's subscribers: its cue overlay, on RoboFollow charged latency, and
        the perturbation axis (both, when ``--perturb`` names one)."""
        perturb = [PerturbationHook(self.p["perturb"],  # ValueError: a bad --perturb
                                    seed_of=self.benchmark.perturbation_seed)
                   ] if self.p["perturb"] else []
        if self.benchmark.name == "libero":
            return [LiberoOverlayHook(self, self.benchmark), *perturb]
        latency = charged_latency.from_params(self.p)  # None: off; ValueError: a bad value
        return [CueOverlayHook(self, self.benchmark.cues, self.p["cue_render_ghosts"]),
                *([latency] if latency else []), *perturb]

    # ------------------------------------------------------------------ messages in
    def on_sim_status(self, msg: String) -> None:
        self.hand_status(msg, "sim", self.suite.on_sim_status)

    def on_policy_status(self, msg: String) -> None:
        self.hand_status(msg, "policy", self.suite.on_policy_status)

    def on_recorder_status(self, msg: String) -> None:
        self.hand_status(msg, "recorder", self.suite.on_recorder_status)

    def hand_status(self, msg: String, source: str, handler) -> None:
        """Hand the run a well-formed status (contract.check_status: a kind, the episode id and
        the fields the run reads); a malformed one, or one the run fails on, is logged and
        dropped, so the evaluator never dies of one message."""
        status = messages.parse_status(msg, source, self.get_logger())
        if status is None:
            return
        try:
            handler(status)
        except Exception as exc:  # noqa: BLE001 - one bad message must not stop the run
            self.get_logger().error(f"{source} status {status['kind']!r} dropped: {exc!r}; "
                                    f"{messages.excerpt(msg.data)}")

    def on_frame(self, msg: Float64MultiArray) -> None:
        if msg.layout.dim:  # parsed after the episode
            parse = functools.partial(messages.parse_frames, msg)
            self.suite.on_frames(msg.layout.dim[0].size, parse)

    # ------------------------------------------------------------------ the run's Graph
    def send(self, message: dict) -> None:
        if self.context.ok():  # not after Ctrl-C has shut the context down
            self.pub_control.publish(messages.json_msg(message))

    def instruct(self, text: str) -> None:
        self.pub_instruction.publish(String(data=text))

    def spin(self) -> None:
        rclpy.spin_once(self, timeout_sec=SPIN_S)

    def publisher_ids(self, topic: str) -> set[bytes]:
        """The endpoint ids of ``topic``'s publishers (a restarted node gets new ones)."""
        return {bytes(info.endpoint_gid) for info in self.get_publishers_info_by_topic(topic)}


RECORDER_NODE = "recorder_node"  # launch_args.RECORDER
UNKNOWN_NODE = "_NODE_NAME_UNKNOWN_"  # rclpy's name for an endpoint not yet matched to a node


class CueOverlayHook(Subscriber):
    """The visual-cue overlay as a run subscriber. A CueOverlay conditions the camera images
    (raw -> contract.cued_image_topic) when the cue is drawn (cue_placement overlay; the policy
    must then read image_source:=cued); with cue_placement scene the sim node stands the cue
    in the scene and the images pass through."""
    WAIT_S = 5.0  # how long to wait for the policy's subscription to the cued images
    EXAMPLES = "cue_examples"  # raw | cued PNG per camera of the run's first cue episode

    def __init__(self, node: Node, cues: CueRun, render_ghosts: bool):
        self.node, self.cues, self.render_ghosts = node, cues, render_ghosts
        self.overlay = None
        self.ghosts = None  # mujoco.ghosts.MirrorGhostRenderer, made for the first F3 cue

    def on_run_start(self) -> None:
        """Attach the overlay when a protocol is on, or when someone reads the cued images
        anyway (pass-through); a protocol that draws a cue for a policy reading raw images is
        an error (its results would be the cue-free ones)."""
        if self.cues.protocol:
            self.attach()

        def readers() -> tuple[int, bool]:
            """(readers of every cued topic, whether a reader is not identified yet): the
            recorder only records what a policy would read, so it does not count, and
            discovery names a node a moment after it reports its subscription."""
            infos = [self.node.get_subscriptions_info_by_topic(C.cued_image_topic(c))
                     for c in ALOHA.camera_names]
            names = [[info.node_name for info in per_camera] for per_camera in infos]
            known = min(sum(n not in (RECORDER_NODE, UNKNOWN_NODE) for n in per_camera)
                        for per_camera in names)
            return known, any(UNKNOWN_NODE in per_camera for per_camera in names)

        start = time.monotonic()
        wait = self.WAIT_S if self.cues.protocol else 0.3
        found, unnamed = readers()
        while not found and time.monotonic() - start < (self.WAIT_S if unnamed else wait):
            rclpy.spin_once(self.node, timeout_sec=SPIN_S)
            found, unnamed = readers()
        if found:
            self.attach()  # also without a protocol: policy image_source:=cued
        elif self.cues.needs_cued_images:
            raise ValueError(f"cue_protocol {self.cues.protocol!r}: nobody subscribes to the cued "
                             f"images ({C.cued_image_topic(ALOHA.camera_names[0])}, ...); launch "
                             "the policy with image_source:=cued (--image_source cued)")

    def attach(self) -> None:
        if self.overlay is None:
            from vla_bridge.evaluation.cues.overlay import CueOverlay
            self.overlay = CueOverlay(self.node, ALOHA.camera_names)

    def on_episode_start(self, trial, cue) -> None:
        if self.overlay is not None:
            self.overlay.set_cue(cue, ghost_renderer=self.ghost_renderer(cue, trial))

    def ghost_renderer(self, cue, trial):
        """For an F3 cue in a sim graph: a MuJoCo copy of the episode's scene to render the
        ghosts on (reset as the sim node resets for the begin task)."""
        from vla_bridge.benchmarks.vifo.families import STATE_OVERLAY
        if cue is None or cue.mode != STATE_OVERLAY or not self.render_ghosts:
            return None
        if self.ghosts is None:
            from vla_bridge.sim_nodes.mujoco.ghosts import MirrorGhostRenderer
            self.ghosts = MirrorGhostRenderer()
        task = self.cues.begin_task(trial)
        self.ghosts.reset(task.scene, task.layout, trial.seed)
        return self.ghosts

    def on_episode_end(self, trial, row: dict, run_dir: RunDirectory) -> None:
        """What the overlay drew, in row["cue"]; the run's first cued images as PNGs."""
        if "cue" not in row or self.overlay is None or self.overlay.cue is None:
            return
        row["cue"]["overlay"] = self.overlay.stats.to_dict()
        from vla_bridge.benchmarks.vifo.families import STATE_OVERLAY
        if self.overlay.cue.mode == STATE_OVERLAY:  # F3: how its ghosts were made
            rendered = self.overlay.conditioner.ghost_renderer is not None
            row["cue"]["ghosts"] = "rendered" if rendered else "projected"
        self.save_examples(run_dir, trial)

    def save_examples(self, run_dir: RunDirectory, trial) -> None:
        out = run_dir.path / self.EXAMPLES
        snap = self.overlay.snapshot
        if out.exists() or not snap:
            return
        import cv2
        import numpy as np
        out.mkdir(parents=True, exist_ok=True)
        for cam, (raw, cued) in snap.items():
            pair = np.concatenate([raw, np.full((raw.shape[0], 4, 3), 255, np.uint8), cued], axis=1)
            cv2.imwrite(str(out / f"{trial.task.id}_r{trial.round}_{cam}.png"),
                        cv2.cvtColor(pair, cv2.COLOR_RGB2BGR))

    def close(self) -> None:
        if self.ghosts is not None:
            self.ghosts.close()  # its MuJoCo renderer, before the process exits


class LiberoOverlayHook(Subscriber):
    """LIBERO's cue overlay: always on (without a cue the cued topics pass the images through),
    in LIBERO's two cameras, mirrored as the LIBERO sim publishes them. Each row of a cued
    episode says how many observations were cued and how much of each image changed;
    ``cue_frames/`` keeps each task's first cued observation beside the raw one."""

    def __init__(self, node: Node, benchmark):
        from vla_bridge.evaluation.cues.overlay import CueOverlay
        emb = C.LIBERO_PANDA
        self.overlay = CueOverlay(node, emb.camera_names, emb.state_names,
                                  mirrored=emb.mirrored_images)

    def on_episode_start(self, trial, cue) -> None:
        self.overlay.set_cue(cue)

    def on_episode_end(self, trial, row: dict, run_dir: RunDirectory) -> None:
        if trial.family and row.get("status") == "ok":
            row["overlay"] = self.overlay.stats.to_dict()  # what the policy was shown
            self.save_cue_frames(run_dir, trial)
        self.overlay.set_cue(None)

    def save_cue_frames(self, run_dir: RunDirectory, ct) -> None:
        """cue_frames/<suite>_<task>_<camera>.png: the first cued observation of each task
        (the first episode that shows it), raw beside cued, so a reader sees what the policy
        saw."""
        import cv2
        import numpy as np
        out = run_dir.path / "cue_frames"
        for cam, (raw, cued) in self.overlay.snapshot.items():
            path = out / f"{ct.trial.suite}_{ct.trial.task_index}_{cam}.png"
            if path.exists():
                continue
            out.mkdir(parents=True, exist_ok=True)
            side_by_side = np.concatenate([raw, cued], axis=1)
            cv2.imwrite(str(path), cv2.cvtColor(side_by_side, cv2.COLOR_RGB2BGR))

    def close(self) -> None:
        pass


def main(args=None) -> int:
    """Run the suite. Every way out is one line on stderr, never a traceback: a node's death
    is the run's stop reason (see SuiteRun.watch_nodes), Ctrl-C closes the run."""
    try:
        return _run(args)
    except KeyboardInterrupt:  # another Ctrl-C while closing down
        print("evaluator_node: interrupted", file=sys.stderr)
        return 130


def _run(args) -> int:
    messages.enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    try:
        node = EvaluatorNode()
        if cpu_profile.enabled():  # VLA_BRIDGE_CPU_PROFILE: `vla-bridge bench cpu`
            cpu_profile.install(node, messages)
        return node.suite.run()
    except (KeyboardInterrupt, ExternalShutdownException):
        return _interrupted(node)
    except (ValueError, FileExistsError, FileNotFoundError, GraphBroken, RunDirError) as exc:
        print(f"evaluator_node: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            for hook in node.hooks:
                if hasattr(hook, "close"):
                    hook.close()
            node.benchmark.close()  # e.g. the plan rollouts' MuJoCo copies
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        cpu_profile.write("evaluator_node")


def _interrupted(node: EvaluatorNode | None) -> int:
    """Stopped from outside (Ctrl-C, the launcher): close the open run, say so in one line."""
    try:
        if node is not None:
            node.suite.interrupted()
    except RunDirError as exc:
        print(f"evaluator_node: interrupted; {exc}", file=sys.stderr)
        return 130
    print("evaluator_node: interrupted; finished episodes are kept, resume runs the rest",
          file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
