"""Evaluator node: runs a suite of episodes over the node graph and scores them.

Per trial: publish the instruction and `begin` (task, seed, budget); wait until the sim has
reset and the policy is instructed; `start`; record one frame per executed action (world
state + joint command) until the sim reports the budget spent; score; append the result.
A node error or silence marks the episode failed with the reason and the run continues;
if a node is gone entirely the run stops with a clear error instead of hanging.
"""
from __future__ import annotations

import os
import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray, String

from vla_bridge import contract as C
from vla_bridge import ros_io
from vla_bridge.evaluation import (RunDirectory, call_latency, format_latency, format_table,
                                   latency_summary, result_row, trial_key)
from vla_bridge.recording import FrameRecorder
from vla_bridge.scoring import score_episode, summarize
from vla_bridge.tasks import Trial, load_suite, plan_trials, select_tasks


class EpisodeFailed(RuntimeError):
    pass


class GraphBroken(RuntimeError):
    """A node the run depends on is gone: stop the run instead of failing every episode."""


class EvaluatorNode(Node):
    PARAMS = {"scene": "scene1", "levels": "L0", "tasks": "", "rounds": 1, "base_seed": 42,
              "output": "runs/latest", "max_policy_calls": 10, "max_actions_per_call": 50,
              "resume": True, "empty_language": False, "episode_timeout": 300.0,
              "discovery_timeout": 60.0, "save_episodes": True}
    # visual-cue protocols (LIBERO-VIFO): see the "visual-cue protocols" methods below
    PARAMS = {**PARAMS, "cue_protocol": "", "cue_family": "", "cue_variant": "",
              "cue_placement": "overlay",
              # F3 ghosts rendered on a MuJoCo copy of the scene (sim graphs only; the real
              # robot has no simulator, so its ghosts are projected box silhouettes)
              "cue_render_ghosts": False}

    def __init__(self):
        super().__init__("evaluator_node")
        self.p = {k: self.declare_parameter(k, v).value for k, v in self.PARAMS.items()}
        q = ros_io.qos_profile
        self.pub_control = self.create_publisher(String, C.TOPIC_EPISODE_CONTROL, q(C.QOS_EVENTS))
        self.pub_instruction = self.create_publisher(String, C.TOPIC_INSTRUCTION, q(C.QOS_LATCHED))
        self.create_subscription(String, C.TOPIC_EPISODE_STATUS, self.on_sim_status, q(C.QOS_EVENTS))
        self.create_subscription(String, C.TOPIC_POLICY_STATUS, self.on_policy_status, q(C.QOS_EVENTS))
        self.create_subscription(Float64MultiArray, C.TOPIC_FRAMES, self.on_frame, q(C.QOS_STATE))
        self.episode: str | None = None
        self._reset_episode_state()
        self.cue_init()

    # ------------------------------------------------------------------ subscriptions
    def _reset_episode_state(self) -> None:
        self.sim_ready = self.policy_ready = False
        self.sim_done: dict | None = None
        self.error: str | None = None
        self.frames: list = []  # this episode's frames messages (parsed after the episode)
        self.frame_count = 0
        self.episode_start: float | None = None
        self.latencies: list[dict] = []  # per policy call: evaluation.call_latency
        self.sim_timing: dict = {}  # where the sim's wall time went (from its done status)
        self.last_progress = time.monotonic()

    def _status_of_this_episode(self, msg: String) -> dict | None:
        """The status in `msg` if it belongs to the running episode (it counts as progress)."""
        status = ros_io.parse_json_msg(msg)
        if self.episode is None or status.get("episode") != self.episode:
            return None
        self.last_progress = time.monotonic()
        return status

    def on_sim_status(self, msg: String) -> None:
        status = self._status_of_this_episode(msg)
        kind = status["kind"] if status else None
        if kind == C.STATUS_READY:
            self.sim_ready = True
            self.episode_start = float(status["stamp"])
        elif kind == C.STATUS_DONE:
            self.sim_done = status
        elif kind == C.STATUS_ERROR:
            self.error = f"sim: {status.get('message')}"

    def on_policy_status(self, msg: String) -> None:
        status = self._status_of_this_episode(msg)
        kind = status["kind"] if status else None
        if kind == C.STATUS_READY:
            self.policy_ready = True
        elif kind == C.STATUS_PREDICTED:
            self.latencies.append(call_latency(status))
        elif kind == C.STATUS_ERROR:
            self.error = f"policy: {status.get('message')}"

    def on_frame(self, msg: Float64MultiArray) -> None:
        if self.episode is not None and msg.layout.dim:  # parsed after the episode
            self.frames.append(msg)
            self.frame_count += msg.layout.dim[0].size
            self.last_progress = time.monotonic()

    # ------------------------------------------------------------------ waiting
    def spin_until(self, condition, timeout: float, what: str) -> None:
        """Spin until `condition()`; fail on a reported error, on `timeout` seconds without
        progress, or when a node the run needs has left the graph."""
        while not condition():
            rclpy.spin_once(self, timeout_sec=0.05)
            if self.error:
                raise EpisodeFailed(self.error)
            self.check_graph()
            if time.monotonic() - self.last_progress > timeout:
                raise EpisodeFailed(f"timed out after {timeout:.0f} s waiting for {what}")

    def check_graph(self) -> None:
        if self.count_publishers(C.TOPIC_EPISODE_STATUS) == 0:
            raise GraphBroken("the sim/robot node is gone (nobody publishes episode status)")
        if self.count_publishers(C.TOPIC_ACTION_CHUNK) == 0:
            raise GraphBroken("the policy node is gone (nobody publishes action chunks)")
        self.check_single_graph()

    def check_single_graph(self) -> None:
        """Two graphs on one ROS domain would mix their frames and observations."""
        sims = self.count_publishers(C.TOPIC_EPISODE_STATUS)
        policies = self.count_publishers(C.TOPIC_ACTION_CHUNK)
        evaluators = self.count_publishers(C.TOPIC_EPISODE_CONTROL)
        if sims > 1 or policies > 1 or evaluators > 1:
            raise GraphBroken(f"another graph shares ROS_DOMAIN_ID {os.environ.get('ROS_DOMAIN_ID', '0')} "
                              f"({sims} sim/robot nodes, {policies} policy nodes, {evaluators} "
                              "evaluators): give each run its own ROS_DOMAIN_ID")

    def wait_for_graph(self) -> None:
        deadline = time.monotonic() + self.p["discovery_timeout"]
        while time.monotonic() < deadline:
            rclpy.spin_once(self, timeout_sec=0.05)
            if (self.count_subscribers(C.TOPIC_EPISODE_CONTROL) >= 2
                    and self.count_publishers(C.TOPIC_EPISODE_STATUS) >= 1
                    and self.count_publishers(C.TOPIC_ACTION_CHUNK) >= 1):
                self.check_single_graph()
                return
        raise GraphBroken(f"no sim and policy node appeared within {self.p['discovery_timeout']:.0f} s "
                          f"(is the graph launched on the same ROS_DOMAIN_ID?)")

    # ------------------------------------------------------------------ one episode
    def run_trial(self, trial: Trial, instruction: str):
        self.episode = f"{trial_key(trial)}@{time.time_ns()}"
        self._reset_episode_state()
        budget = {"max_policy_calls": self.p["max_policy_calls"],
                  "max_actions_per_call": self.p["max_actions_per_call"]}
        task = self.cues.begin_task(trial)  # trial.task unless a cue protocol says otherwise
        self.pub_instruction.publish(String(data=instruction))
        self.send(C.CONTROL_BEGIN, task=task.to_dict(), seed=trial.seed,
                  instruction=instruction, **budget, **self.cues.begin_fields())
        timeout = self.p["episode_timeout"]
        try:
            self.spin_until(lambda: self.sim_ready and self.policy_ready, timeout, "sim and policy reset")
            self.send(C.CONTROL_START)
            self.spin_until(lambda: self.sim_done is not None, timeout, "the episode to finish")
            n = self.sim_done["ticks"] + 1
            self.spin_until(lambda: self.frame_count >= n, 10.0, f"all {n} recorded frames")
            record = self.build_record()
            self.sim_timing = self.sim_done.get("timing", {})
            self.last_record = record
            return record, self.sim_done["calls"]
        finally:
            if self.context.ok():  # not after Ctrl-C has shut the context down
                self.send(C.CONTROL_END)
            self.episode = None

    def send(self, kind: str, **fields) -> None:
        self.pub_control.publish(ros_io.json_msg({"kind": kind, "episode": self.episode, **fields}))

    def build_record(self):
        """Frames of this episode (stamps from the sim's ready stamp on), in tick order."""
        parsed = sorted((f for m in self.frames for f in ros_io.parse_frames(m)), key=lambda f: f[0])
        parsed = [f for f in parsed if f[0] >= self.episode_start - 1e-9]
        recorder = FrameRecorder()
        for _, command, world in parsed:
            recorder.add(world, command)
        return recorder.record()

    # ------------------------------------------------------------------ the suite
    def trials(self) -> list[Trial]:
        tasks = select_tasks(load_suite(), self.p["scene"], self.p["levels"], self.p["tasks"])
        if not tasks:
            raise ValueError("the selection matches no task")
        return plan_trials(tasks, int(self.p["rounds"]), int(self.p["base_seed"]))

    def run(self) -> int:
        trials = self.trials()
        run_dir = RunDirectory(self.p["output"])
        if self.p["resume"]:  # resuming into another protocol's directory would mix metrics
            try:
                self.cues.check_output(run_dir.results())
            except ValueError as exc:
                raise ValueError(f"{run_dir.path}: {exc}") from None
        todo = run_dir.start(dict(self.p), trials, resume=bool(self.p["resume"]))
        log = self.get_logger()
        log.info(f"{len(trials)} trials, {len(trials) - len(todo)} already done -> {run_dir.path}")
        self.wait_for_graph()
        self.cue_check_graph()
        t_run = time.monotonic()
        status = "finished"
        try:
            for i, trial in enumerate(todo, 1):
                self.run_one(run_dir, trial, i, len(todo), t_run)
        except GraphBroken as exc:
            log.error(f"run stopped: {exc}")
            status = f"stopped: {exc}"
        rows = run_dir.results()
        summary, latency = summarize(rows), latency_summary(rows)
        run_dir.finish(status, summary, latency)
        print(format_table(summary), flush=True)
        if latency:
            print(format_latency(latency), flush=True)
        table = self.cues.finish(run_dir.path, rows)
        if table:
            print(table, flush=True)
        print(f"results: {run_dir.path}", flush=True)
        return 0 if status == "finished" else 3

    def run_one(self, run_dir: RunDirectory, trial: Trial, i: int, total: int, t_run: float) -> None:
        instruction = "" if self.p["empty_language"] else trial.task.instruction
        instruction = self.cue_prepare_trial(trial, instruction)  # a cue protocol's language
        t0 = time.monotonic()
        try:
            record, calls = self.run_trial(trial, instruction)
        except EpisodeFailed as exc:
            row = result_row(trial, None, status="failed", error=str(exc), instruction=instruction,
                             wall_s=time.monotonic() - t0)
        else:
            row = self.scored_row(run_dir, trial, record, calls, instruction, t0)
        self.cue_annotate_row(row, trial, run_dir)
        run_dir.append(row)
        elapsed = time.monotonic() - t_run
        eta = elapsed / i * (total - i)
        outcome = (f"IS {row['intent_score']:.2f} ES {row['exec_score']:.2f} "
                   f"CR {'yes' if row['complete'] else 'no '}" if row["status"] == "ok"
                   else f"FAILED: {row['error']}")
        print(f"[{i}/{total}] {trial.task.id} r{trial.round} seed {trial.seed}: {outcome}"
              f"{self.cues.outcome(row)} ({row['wall_s']:.1f} s, ETA {eta / 60:.1f} min)", flush=True)

    def scored_row(self, run_dir: RunDirectory, trial: Trial, record, calls: int,
                   instruction: str, t0: float) -> dict:
        """The results row of a finished episode. A scorer error (e.g. a task object missing
        from the record) fails this episode with the reason, not the run; the episode file is
        saved either way, so it can be re-scored once the scorer is fixed."""
        fields = dict(instruction=instruction, frames=record.n, policy_calls=calls,
                      policy_latency_ms=self.latencies)
        try:
            score = score_episode(self.cues.begin_task(trial), record)
            row = result_row(trial, score, wall_s=time.monotonic() - t0, **fields)
        except Exception as exc:  # noqa: BLE001 - any scorer bug: record it, keep going
            self.get_logger().error(f"scoring {trial.task.id} failed: {exc!r}")
            row = result_row(trial, None, status="failed", error=f"scoring failed: {exc!r}",
                             wall_s=time.monotonic() - t0, **fields)
        row["sim_timing_s"] = self.sim_timing
        if self.p["save_episodes"]:
            row["episode_file"] = run_dir.save_episode(trial, record, row)
        return row

    # ------------------------------------------------------------------ visual-cue protocols
    # LIBERO-VIFO protocols: the pure part (plans, begin fields, row annotation, metrics) is
    # vla_bridge.cues.run.CueRun; here only the ROS side. A CueOverlay conditions the camera
    # images (raw -> contract.cued_image_topic) when the cue is drawn (cue_placement overlay;
    # the policy must then read image_source:=cued); with cue_placement scene the sim node
    # stands the cue in the scene and the images pass through.
    CUE_WAIT_S = 5.0  # how long to wait for the policy's subscription to the cued images
    CUE_EXAMPLES = "cue_examples"  # raw | cued PNG per camera of the run's first cue episode

    def cue_init(self) -> None:
        from vla_bridge.cues.run import CueRun
        self.cues = CueRun(self.p["cue_protocol"], self.p["cue_family"], self.p["cue_variant"],
                           self.p["cue_placement"])
        self.cue_overlay = None
        self.cue_ghosts = None  # sim_ghosts.MirrorGhostRenderer, made for the first F3 cue

    def cue_attach_overlay(self) -> None:
        if self.cue_overlay is None:
            from vla_bridge.cues.ros_overlay import CueOverlay
            self.cue_overlay = CueOverlay(self, C.CAMERAS)

    def cue_check_graph(self) -> None:
        """Attach the overlay when a protocol is on, or when someone reads the cued images
        anyway (pass-through); a protocol that draws a cue for a policy reading raw images is
        an error (its results would be the cue-free ones)."""
        if self.cues.protocol:
            self.cue_attach_overlay()

        def readers() -> int:
            return min(self.count_subscribers(C.cued_image_topic(c)) for c in C.CAMERAS)

        deadline = time.monotonic() + (self.CUE_WAIT_S if self.cues.protocol else 0.3)
        found = readers()
        while not found and time.monotonic() < deadline:
            rclpy.spin_once(self, timeout_sec=0.05)
            found = readers()
        if found:
            self.cue_attach_overlay()  # also without a protocol: policy image_source:=cued
        elif self.cues.needs_cued_images:
            raise ValueError(f"cue_protocol {self.cues.protocol!r}: nobody subscribes to the cued "
                             f"images ({C.cued_image_topic(C.CAMERAS[0])}, ...); launch the "
                             "policy with image_source:=cued (--image_source cued)")

    def cue_prepare_trial(self, trial: Trial, instruction: str) -> str:
        """Plan the trial's protocol, set the overlay's cue; returns the policy's language."""
        language, drawn = self.cues.prepare(trial, instruction)
        if self.cue_overlay is not None:
            self.cue_overlay.set_cue(drawn, ghost_renderer=self.cue_ghost_renderer(drawn, trial))
        return language

    def cue_ghost_renderer(self, cue, trial: Trial):
        """For an F3 cue in a sim graph: a MuJoCo copy of the episode's scene to render the
        ghosts on (reset as the sim node resets for the begin task)."""
        from vla_bridge.cues.families import STATE_OVERLAY
        if cue is None or cue.mode != STATE_OVERLAY or not self.p["cue_render_ghosts"]:
            return None
        if self.cue_ghosts is None:
            from vla_bridge.cues.sim_ghosts import MirrorGhostRenderer
            self.cue_ghosts = MirrorGhostRenderer()
        task = self.cues.begin_task(trial)
        self.cue_ghosts.reset(task.scene, task.layout, trial.seed)
        return self.cue_ghosts

    def cue_annotate_row(self, row: dict, trial: Trial, run_dir: RunDirectory) -> None:
        self.cues.annotate(row, lambda task: score_episode(task, self.last_record).to_dict())
        if "cue" in row and self.cue_overlay is not None and self.cue_overlay.cue is not None:
            row["cue"]["overlay"] = self.cue_overlay.stats.to_dict()
            from vla_bridge.cues.families import STATE_OVERLAY
            if self.cue_overlay.cue.mode == STATE_OVERLAY:  # F3: how its ghosts were made
                rendered = self.cue_overlay.conditioner.ghost_renderer is not None
                row["cue"]["ghosts"] = "rendered" if rendered else "projected"
            self.cue_save_examples(run_dir, trial)

    def cue_save_examples(self, run_dir: RunDirectory, trial: Trial) -> None:
        out = run_dir.path / self.CUE_EXAMPLES
        snap = self.cue_overlay.snapshot
        if out.exists() or not snap:
            return
        import cv2
        import numpy as np
        out.mkdir(parents=True, exist_ok=True)
        for cam, (raw, cued) in snap.items():
            pair = np.concatenate([raw, np.full((raw.shape[0], 4, 3), 255, np.uint8), cued], axis=1)
            cv2.imwrite(str(out / f"{trial.task.id}_r{trial.round}_{cam}.png"),
                        cv2.cvtColor(pair, cv2.COLOR_RGB2BGR))


def main(args=None) -> int:
    ros_io.enable_stack_dumps()
    rclpy.init(args=args)
    node = None
    try:
        node = EvaluatorNode()
        return node.run()
    except (KeyboardInterrupt, ExternalShutdownException):
        print("evaluator_node: interrupted; finished episodes are kept in results.jsonl", file=sys.stderr)
        return 130
    except (ValueError, FileExistsError, FileNotFoundError, GraphBroken) as exc:
        print(f"evaluator_node: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if node is not None:
            if node.cue_ghosts is not None:
                node.cue_ghosts.close()  # its MuJoCo renderer, before the process exits
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    sys.exit(main())
