"""The evaluator's episode engine, without ROS (the evaluator node is its shell): one engine
for every benchmark (``evaluation.benchmark``: RoboFollow, LIBERO).

``SuiteRun.run()`` has the benchmark plan its trials, skips those the run directory already
holds (resume), waits for the sim and policy nodes, then runs each trial:

1. ``begin``: publish the instruction, send ``begin`` (the benchmark's fields: task, seed,
   budget, cue fields; the subscribers' fields such as the charged latency);
2. wait for the ``ready`` statuses of the sim (reset) and the policy (instructed); the first
   episode's say each side's embodiment, and a graph that disagrees is refused;
3. ``start``; wait for the sim's ``done``, then (benchmarks that score frames) for every
   recorded frame;
4. the benchmark scores it; append the results row, print the progress line; ``end``.

A reported error, or ``episode_timeout`` seconds without progress, fails the episode with the
reason (the log names a policy node that stalled: in the graph, but not answering) and the
run goes on; so does a policy node the launcher restarted (only the episode in flight fails).
A restart, and a timeout while it was not the policy's turn (the sim did not reset or advance,
the frames did not arrive), are infrastructure failures (``InfrastructureFailure``): the row
says so (``"failure": "infrastructure"``), the scores leave it out and a resume runs the trial
again, once (``benchmarks.result_rows``: its second infrastructure failure counts). A node
leaving the graph or dying for good (the launcher's news, ``node_watch``), or a second graph
on the ROS domain, stops the run. The run ends, stopped or not, with summary.json,
latency.json, run.json's status and the printed tables; its status is "finished" only when
every planned trial has its row in results.jsonl.

run.json records the run's provenance (policy spec, checkpoint fingerprint, sim or hardware,
cue protocol, seed, budget, git commit; ``provenance``) and every row names the policy; a
resume into a directory of other such settings is refused, naming what differs.

The node feeds it parsed messages (``on_sim_status``, ``on_policy_status``, ``on_frames``)
and lends it the graph (``Graph``). ``Subscriber``s hear each episode's start, statuses and
end, as in openpi's runtime loop: latency collection here, the cue overlay and charged
latency (``charged_latency``) in the node.
"""
from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Protocol

from vla_bridge import contract as C
from vla_bridge.benchmarks.result_rows import (INFRASTRUCTURE, INFRASTRUCTURE_RERUNS, counted,
                                               excluded, is_infrastructure_failure)
from vla_bridge.embodiment.episode_record import EpisodeRecord, FrameRecorder
from vla_bridge.evaluation.bag_watch import BagWatch
from vla_bridge.evaluation.benchmark import (DEFAULT_BENCHMARK, Benchmark, EpisodeOutcome,
                                             EpisodePlan)
from vla_bridge.evaluation.node_watch import NodeWatch
from vla_bridge.evaluation.provenance import perturbation_of, resume_differences
from vla_bridge.evaluation.run_dir import (RunDirectory, call_latency, completion_status,
                                           trial_key)
from vla_bridge.ros.node_config import param

__all__ = ["EngineConfig", "EpisodeFailed", "InfrastructureFailure", "GraphBroken", "RunRefused",
           "Graph", "Subscriber", "LatencyCollector", "SuiteRun"]


@dataclass(frozen=True)
class EngineConfig:
    """The engine's parameters, for every benchmark (the evaluator node declares them and the
    chosen benchmark's ``Config``: ``evaluator_node.evaluator_config``; run.json records them)."""
    benchmark: str = param(DEFAULT_BENCHMARK, "what is run and scored: robofollow or libero")
    output: str = param("runs/latest", "run directory (results, summary, report); created "
                                       "with missing parents")
    resume: bool = param(True, "skip episodes already in the output's results.jsonl")
    episode_timeout: float = param(300.0, "seconds without progress before an episode fails")
    discovery_timeout: float = param(60.0, "seconds to wait for the sim and policy nodes")
    record: bool = param(False, "a recorder node writes each episode's bag: wait for it "
                                "(record:=true, evaluation.bag_watch)")
    policy: str = param("oracle", "provenance (run.json): the policy node's backend spec, set "
                                  "by the policy launch argument")
    perturb: str = param("", "a perturbation axis and level, AXIS:LEVEL (e.g. camera:2; "
                             "benchmarks.perturbations); '' = none")


SPIN_S = 0.05  # how long one Graph.spin() waits for a message
RESTART_SETTLE_S = 1.0  # after a restarted policy node appears, for its other endpoints
FRAMES_TIMEOUT_S = 10.0  # the frames still on their way after the sim's done
BEGIN_RESEND_S = 2.0  # begin again while a node has not answered it (a lost begin or ready)


class EpisodeFailed(RuntimeError):
    """A node reported an error or went silent: the episode's row says why, the run goes on."""


class InfrastructureFailure(EpisodeFailed):
    """The episode failed for a reason that is not the policy's (a restarted policy node, a
    sim that stopped answering, lost frames): its row is marked and not scored, and a resume
    runs the trial again (``benchmarks.result_rows``)."""


class GraphBroken(RuntimeError):
    """A node the run depends on is gone: stop the run instead of failing every episode."""


class RunRefused(GraphBroken):
    """The graph cannot run this benchmark (its nodes disagree on the embodiment)."""


class Graph(Protocol):
    """What the run needs from the node graph (the evaluator node over DDS)."""

    def send(self, message: dict) -> None:
        """Publish an episode-control message."""

    def instruct(self, text: str) -> None:
        """Publish the instruction (latched)."""

    def spin(self) -> None:
        """Handle the messages that arrived, waiting up to SPIN_S for one."""

    def count_publishers(self, topic: str) -> int:
        """How many publishers ``topic`` has (rclpy.Node's own method)."""

    def count_subscribers(self, topic: str) -> int:
        """How many subscriptions ``topic`` has (rclpy.Node's own method)."""

    # optional: publisher_ids(topic) -> set of endpoint ids (tells a restarted node's
    # endpoints from the dead one's, see node_watch)


class Subscriber:
    """Hears a suite run's events (openpi's runtime subscribers); every hook is optional."""

    def on_run_start(self) -> None:
        """The graph is up, before the first trial; may raise ValueError to refuse the run."""

    def on_episode_start(self, trial, cue) -> None:
        """Before ``begin``; ``cue``: the CueSpec to draw into the images (None: none)."""

    def begin_fields(self, trial) -> dict:
        """Extra fields of the trial's ``begin`` message; EpisodeFailed fails the trial
        unrun, with the reason in its row (e.g. a replay that lacks it)."""
        return {}

    def on_status(self, source: str, status: dict) -> None:
        """A status of the running episode from ``source`` ("sim" or "policy")."""

    def row_fields(self) -> dict:
        """Extra ``result_row`` keyword fields for an episode that reached scoring."""
        return {}

    def on_episode_end(self, trial, row: dict, run_dir: RunDirectory) -> None:
        """The episode's row, before it is appended (a subscriber may annotate it)."""


class LatencyCollector(Subscriber):
    """Per policy call, the timings of its ``predicted`` status (``run_dir.call_latency``);
    they land in the row as ``policy_latency_ms``."""

    def __init__(self):
        self.calls: list[dict] = []

    def on_episode_start(self, trial, cue) -> None:
        self.calls = []

    def on_status(self, source: str, status: dict) -> None:
        if source == "policy" and status["kind"] == C.STATUS_PREDICTED:
            self.calls.append(call_latency(status))

    def row_fields(self) -> dict:
        return {"policy_latency_ms": self.calls}


@dataclass
class Episode:
    """What the run has heard of the running episode."""
    id: str
    last_progress: float  # clock time of the last status or frames of this episode
    sim_ready: bool = False
    policy_ready: bool = False
    start_stamp: float | None = None  # the sim's ready stamp: older frames are not this episode's
    done: dict | None = None  # the sim's done status
    error: str | None = None
    batches: list = field(default_factory=list)  # frames batches, parsed after the episode
    frame_count: int = 0
    predicted: int = 0  # the policy's predicted statuses ...
    chunks_done: int = 0  # ... and the sim's chunk_done: whose turn it is (stalled_policy)
    waiting_for: str = ""  # what the run waits for now (said when it is interrupted)
    resends: int = 0  # begins sent again while waiting for the nodes' ready
    ready: dict = field(default_factory=dict)  # source -> its ready status

    def progress(self) -> str:
        """Where the episode stands, in one line (an interrupted or stalled run says it)."""
        yes = {True: "yes", False: "no"}
        return (f"sim ready: {yes[self.sim_ready]}, policy ready: {yes[self.policy_ready]}, "
                f"policy calls answered: {self.predicted}, chunks run: {self.chunks_done}, "
                f"frames: {self.frame_count}, begin sent again: {self.resends}x")


def _print(line: str) -> None:
    print(line, flush=True)


class SuiteRun:
    """One benchmark's trials through the graph (see the module docstring).

    ``params``: EngineConfig's fields and the benchmark's; ``benchmark``: what is run and scored
    (``evaluation.benchmark``); ``log``: has ``info`` / ``error``; ``echo``: prints a console
    line; ``clock``: has ``monotonic()`` (timeouts) and ``time_ns()`` (episode ids), by default
    the time module.
    """

    def __init__(self, params: dict, graph: Graph, *, benchmark: Benchmark, subscribers=(),
                 log=None, echo: Callable[[str], None] = _print, clock=time, node_events=None):
        self.p = params
        self.graph = graph
        self.benchmark = benchmark
        self.subscribers = list(subscribers)
        self.log = log if log is not None else logging.getLogger(__name__)
        self.echo = echo
        self.clock = clock
        self.episode: Episode | None = None
        self.nodes = NodeWatch(graph, node_events)  # node_events: the launcher's, or None
        self.closing: tuple | None = None  # (run_dir, trials) while the run is open
        self.bags = BagWatch(params.get("record", False))
        self.last_episode_id = ""
        self.infrastructure_failures: Counter = Counter()  # trial key -> such rows so far
        self.stopped_episode: Episode | None = None  # the one in flight when the run was stopped
        self.embodiment: C.Embodiment | None = None  # what the graph agreed on (first ready)

    # ------------------------------------------------------------------ messages in
    def on_sim_status(self, status: dict) -> None:
        episode = self._heard("sim", status)
        if episode is None:
            return
        if status["kind"] == C.STATUS_READY:
            episode.sim_ready = True
            episode.ready["sim"] = status
            episode.start_stamp = float(status["stamp"])
        elif status["kind"] == C.STATUS_DONE:
            episode.done = status
        elif status["kind"] == C.STATUS_CHUNK_DONE:
            episode.chunks_done += 1
        elif status["kind"] == C.STATUS_ERROR:
            episode.error = f"sim: {status.get('message')}"

    def on_policy_status(self, status: dict) -> None:
        episode = self._heard("policy", status)
        if episode is None:
            return
        if status["kind"] == C.STATUS_READY:
            episode.policy_ready = True
            episode.ready["policy"] = status
        elif status["kind"] == C.STATUS_PREDICTED:
            episode.predicted += 1
        elif status["kind"] == C.STATUS_ERROR:
            episode.error = f"policy: {status.get('message')}"

    def on_recorder_status(self, status: dict) -> None:
        self.bags.on_status(status)

    def on_frames(self, ticks: int, parse: Callable[[], list]) -> None:
        """A batch of ``ticks`` frames; ``parse()`` gives its [(stamp, command, WorldState)],
        called after the episode (parsing is left out of the episode's busy time)."""
        if self.episode is not None:
            self.episode.batches.append(parse)
            self.episode.frame_count += ticks
            self.episode.last_progress = self.clock.monotonic()

    def _heard(self, source: str, status: dict) -> Episode | None:
        """The running episode if ``status`` is one of its (that counts as progress); a
        ``ready`` heard already (the answer to a begin sent again) is not news."""
        episode = self.episode
        if episode is None or status.get("episode") != episode.id:
            return None
        if status.get("kind") == C.STATUS_READY and (
                episode.sim_ready if source == "sim" else episode.policy_ready):
            return None
        episode.last_progress = self.clock.monotonic()
        for subscriber in self.subscribers:
            subscriber.on_status(source, status)
        return episode

    # ------------------------------------------------------------------ the graph
    def wait_for_graph(self) -> None:
        deadline = self.clock.monotonic() + self.p["discovery_timeout"]
        graph = self.graph
        while self.clock.monotonic() < deadline:
            graph.spin()
            self.watch_nodes()
            # the sim, the policy and (recording) the recorder each read the controls
            if (graph.count_subscribers(C.TOPIC_EPISODE_CONTROL) >= 2 + self.bags.enabled
                    and graph.count_publishers(C.TOPIC_EPISODE_STATUS) >= 1
                    and self.nodes.policies() >= 1
                    and not self.bags.missing_node(graph.count_publishers)):
                self.check_single_graph()
                return
        raise GraphBroken(f"no sim and policy node appeared within "
                          f"{self.p['discovery_timeout']:.0f} s "
                          f"(is the graph launched on the same ROS_DOMAIN_ID?)")

    def check_graph(self) -> None:
        if self.graph.count_publishers(C.TOPIC_EPISODE_STATUS) == 0:
            raise GraphBroken("the sim/robot node is gone (nobody publishes episode status)")
        if not self.nodes.restarting and self.nodes.policies() == 0:
            raise GraphBroken(self.nodes.policy_missing())  # stalled or gone
        missing = self.bags.missing_node(self.graph.count_publishers)
        if missing:
            raise GraphBroken(missing)
        self.check_single_graph()

    def check_single_graph(self) -> None:
        """Two graphs on one ROS domain would mix their frames and observations."""
        sims = self.graph.count_publishers(C.TOPIC_EPISODE_STATUS)
        policies = self.nodes.policies()
        evaluators = self.graph.count_publishers(C.TOPIC_EPISODE_CONTROL)
        if sims > 1 or policies > 1 or evaluators > 1:
            raise GraphBroken(f"another graph shares ROS_DOMAIN_ID "
                              f"{os.environ.get('ROS_DOMAIN_ID', '0')} ({sims} sim/robot nodes, "
                              f"{policies} policy nodes, {evaluators} evaluators): give each run "
                              "its own ROS_DOMAIN_ID")

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str,
                   resend: Callable[[], None] | None = None) -> None:
        """Spin until ``condition()``; fail on a reported error, on ``timeout`` seconds without
        progress, or when a node the run needs has left the graph. ``resend()`` is called
        every BEGIN_RESEND_S meanwhile."""
        self.episode.waiting_for = what
        next_resend = self.clock.monotonic() + BEGIN_RESEND_S
        while not condition():
            self.graph.spin()
            if resend is not None and self.clock.monotonic() >= next_resend:
                resend()
                self.episode.resends += 1
                next_resend = self.clock.monotonic() + BEGIN_RESEND_S
            if self.episode.error:
                raise EpisodeFailed(self.episode.error)
            self.watch_nodes()
            self.check_graph()
            if self.clock.monotonic() - self.episode.last_progress > timeout:
                reason = f"timed out after {timeout:.0f} s waiting for {what}"
                if self.policy_stalled():  # alive but silent on its turn: the policy's failure
                    self.log.error(f"episode {self.episode.id}: the policy node stalled (still "
                                   f"in the graph, but no answer for {timeout:.0f} s)")
                    raise EpisodeFailed(reason)
                raise InfrastructureFailure(reason)  # the sim's turn, or frames lost

    def policy_stalled(self) -> bool:
        """Whether a wait that timed out was for the policy's answer (the sim is reset but the
        policy is not; or the sim waits for its next chunk) while the policy node is still in
        the graph: alive, but silent."""
        e = self.episode
        if not (e.sim_ready and e.policy_ready):
            turn = e.sim_ready  # reset: the sim is ready, the policy is not
        else:  # running: lock-step, the sim waits for the chunk of its last observation
            turn = e.done is None and e.predicted <= e.chunks_done
        return turn and self.nodes.policies() > 0

    def watch_nodes(self) -> None:
        """The launcher's news (node_watch): a node that died for good stops the run; a
        restarted policy node fails the episode in flight (the next one waits for it)."""
        died, restarted = self.nodes.news()
        if died:
            raise GraphBroken(died)
        if restarted:
            self.log.error(restarted)
            if self.episode is not None:
                raise InfrastructureFailure(restarted)

    def await_restarted_policy(self) -> None:
        """Before a begin: after a restart, wait for the new policy node on the graph, then
        let discovery settle, so that it hears the begin and the sim's observations."""
        deadline = self.clock.monotonic() + self.p["discovery_timeout"]
        while self.nodes.restarting and self.nodes.policies() == 0:
            if self.clock.monotonic() > deadline:
                raise GraphBroken(f"the restarted policy node did not appear within "
                                  f"{self.p['discovery_timeout']:.0f} s")
            self.graph.spin()
            self.watch_nodes()
        settle = self.clock.monotonic() + (RESTART_SETTLE_S if self.nodes.restarting else 0.0)
        while self.clock.monotonic() < settle:
            self.graph.spin()
        self.nodes.restarting = False

    # ------------------------------------------------------------------ one episode
    def run_episode(self, trial, plan: EpisodePlan) -> EpisodeOutcome:
        """Begin, start and (when the benchmark scores frames) record one episode."""
        self.watch_nodes()  # news from between the episodes: no episode to fail yet
        self.await_restarted_policy()
        extra = {}  # the subscribers' begin fields (may fail the trial before it begins)
        for subscriber in self.subscribers:
            extra.update(subscriber.begin_fields(trial))
        episode_id = self.last_episode_id = f"{trial_key(trial)}@{self.clock.time_ns()}"
        episode = self.episode = Episode(episode_id, last_progress=self.clock.monotonic())
        self.graph.instruct(plan.instruction)
        begin = dict(plan.begin, instruction=plan.instruction, **extra)
        self.send(C.CONTROL_BEGIN, **begin)
        timeout = self.p["episode_timeout"]
        t0 = self.clock.monotonic()
        try:
            # a node that missed the begin, or whose ready was lost, hears it again (see
            # vla_bridge.ros.reach): nodes answer a repeated begin without resetting again
            self.wait_until(lambda: episode.sim_ready and episode.policy_ready
                            and self.bags.ready(episode.id), timeout,
                            "sim and policy reset" + (" and the bag" if self.bags.enabled else ""),
                            resend=lambda: self.send(C.CONTROL_BEGIN, **begin))
            if self.embodiment is None:
                self.check_embodiment(episode.ready)
            t1 = self.clock.monotonic()
            self.send(C.CONTROL_START)
            self.wait_until(lambda: episode.done is not None, timeout, "the episode to finish")
            t2 = self.clock.monotonic()
            record = None
            if self.benchmark.records_frames:
                n = episode.done["ticks"] + 1
                self.wait_until(lambda: episode.frame_count >= n, FRAMES_TIMEOUT_S,
                                f"all {n} recorded frames")
                record = self.build_record(episode)
            return EpisodeOutcome(episode.done, dict(episode.ready), record,
                                  reset_s=t1 - t0, run_s=t2 - t1)
        except EpisodeFailed:
            raise
        except BaseException:  # stopped from outside (Ctrl-C, the launcher's stop) or broken
            self.stopped_episode = episode
            raise
        finally:
            self.send(C.CONTROL_END)
            self.episode = None

    def check_embodiment(self, ready: dict[str, dict]) -> None:
        """The graph agrees on one embodiment (each side's ready names its own; none named:
        the default), else RunRefused naming both sides."""
        declared = {f"{source}_node": ready.get(source, {}).get("embodiment",
                                                              C.DEFAULT_EMBODIMENT)
                    for source in ("sim", "policy")}
        try:
            self.embodiment = C.agree_embodiment(declared)
        except C.EmbodimentMismatch as exc:
            raise RunRefused(f"refusing to run: {exc}") from None

    def send(self, kind: str, **fields) -> None:
        self.graph.send({"kind": kind, "episode": self.episode.id, **fields})

    @staticmethod
    def build_record(episode: Episode) -> EpisodeRecord:
        """Frames of the episode (stamps from the sim's ready stamp on), in tick order."""
        frames = sorted((f for parse in episode.batches for f in parse()), key=lambda f: f[0])
        recorder = FrameRecorder()
        for stamp, command, world in frames:
            if stamp >= episode.start_stamp - 1e-9:
                recorder.add(world, command)
        return recorder.record()

    # ------------------------------------------------------------------ the suite
    def run(self) -> int:
        """Run the benchmark's trials; the exit code: 0 finished, 3 stopped (a node left the
        graph), refused (the graph disagrees on the embodiment) or incomplete (a planned trial
        is missing from results.jsonl)."""
        trials = self.benchmark.plan()
        run_dir = RunDirectory(self.p["output"], log=self.log)
        provenance = {**self.benchmark.provenance(), "perturbation": perturbation_of(self.p)}
        if self.p["resume"]:
            self.check_resume(run_dir, provenance)
        todo = run_dir.start(dict(self.p), trials, resume=bool(self.p["resume"]),
                             provenance=provenance, skipped=self.benchmark.skipped)
        self.infrastructure_failures = Counter(
            row.get("key") for row in run_dir.results() if is_infrastructure_failure(row))
        again = sum(1 for t in todo if self.infrastructure_failures[trial_key(t)])
        self.log.info(f"{len(trials)} trials, {len(trials) - len(todo)} already done "
                      + (f"({again} to run again after an infrastructure failure) " if again
                         else "") + f"-> {run_dir.path}")
        self.closing = (run_dir, trials)
        try:
            self.wait_for_graph()
        except GraphBroken as exc:  # e.g. a node died during start-up: close the run too
            self.finish(run_dir, f"stopped: {exc}", trials)
            raise
        try:
            for subscriber in self.subscribers:
                subscriber.on_run_start()
        except ValueError:  # refused before any episode: run.json goes back as it was
            self.closing = None
            run_dir.undo_start()
            raise
        t_run = self.clock.monotonic()
        status = "finished"
        try:
            for i, trial in enumerate(todo, 1):
                self.run_one(run_dir, trial, i, len(todo), t_run)
        except RunRefused as exc:
            self.log.error(str(exc))
            status = f"refused: {exc}"
        except GraphBroken as exc:
            self.log.error(f"run stopped: {exc}")
            status = f"stopped: {exc}"
        return self.finish(run_dir, status, trials)

    def check_resume(self, run_dir: RunDirectory, provenance: dict) -> None:
        """Resuming into a directory of another policy, checkpoint, hardware, cue protocol,
        seed or budget would mix two setups' metrics: ValueError naming what differs. Other
        levels, scenes or rounds only add trials."""
        rows = run_dir.results()
        if not rows:
            return
        try:
            self.benchmark.check_resume(rows)
        except ValueError as exc:
            raise ValueError(f"{run_dir.path}: {exc}") from None
        old = run_dir.info().get("provenance")
        differences = resume_differences(old, provenance, rows)
        if differences:
            raise ValueError(f"{run_dir.path}: cannot resume, this run's settings differ from "
                             f"the run directory's: {'; '.join(differences)} (run directory -> "
                             "this run); use the same settings or another output directory")
        if old is None:
            self.log.info(f"{run_dir.path}: its run.json recorded no provenance (an older run); "
                          "resuming without checking policy, seed and settings")

    def run_one(self, run_dir: RunDirectory, trial, i: int, total: int, t_run: float) -> None:
        plan = self.benchmark.prepare(trial)
        for subscriber in self.subscribers:
            subscriber.on_episode_start(trial, plan.cue)
        t0 = self.clock.monotonic()
        outcome = None
        try:
            outcome = self.run_episode(trial, plan)
        except EpisodeFailed as exc:
            row = self.benchmark.failed_row(trial, plan, str(exc), self.clock.monotonic() - t0)
            if isinstance(exc, InfrastructureFailure):
                self.mark_infrastructure(trial, row)
        else:
            fields = {}
            for subscriber in self.subscribers:
                fields.update(subscriber.row_fields())
            outcome.wall_s = self.clock.monotonic() - t0
            row = self.benchmark.scored_row(run_dir, trial, plan, outcome, fields)
        row["policy"] = self.p["policy"]
        row.update(self.bags.row_fields(self.last_episode_id, run_dir.path, self.graph.spin,
                                        self.clock.monotonic))
        self.benchmark.annotate(row, outcome)
        for subscriber in self.subscribers:
            subscriber.on_episode_end(trial, row, run_dir)
        run_dir.append(row)
        line = self.benchmark.progress_line(trial, row, i, total, self.clock.monotonic() - t_run)
        if excluded(row):
            line += " [infrastructure failure: not scored, a resume runs it again]"
        elif is_infrastructure_failure(row):
            line += " [second infrastructure failure of this trial: counted]"
        self.echo(line)

    def mark_infrastructure(self, trial, row: dict) -> None:
        """Mark the row of an episode the infrastructure failed (``benchmarks.result_rows``):
        left out of the scores and run again on resume, unless the trial already failed so
        INFRASTRUCTURE_RERUNS times; then this failure is counted like any other."""
        key = trial_key(trial)
        row["failure"] = INFRASTRUCTURE
        if self.infrastructure_failures[key] >= INFRASTRUCTURE_RERUNS:
            row["counted"] = True
            self.log.error(f"{key}: failed for infrastructure reasons again "
                           f"({row.get('error') or row.get('reason')}); this time it counts")
        self.infrastructure_failures[key] += 1

    def interrupted(self) -> None:
        """Ctrl-C or the launcher's stop while the run is open: close it all the same, with the
        reason (a node the launcher reported dead, else "interrupted"); resume runs the rest."""
        if self.closing is None:
            return
        try:
            died = self.nodes.news()[0]
        except (OSError, ValueError):  # the events file is gone with the launcher
            died = None
        run_dir, trials = self.closing
        episode = self.stopped_episode
        if episode is not None:  # one line on where the graph stood (a hang shows its cause)
            what = episode.waiting_for or "its begin"
            self.log.warning(f"episode {episode.id} was waiting for {what} ({episode.progress()})")
        self.finish(run_dir, f"stopped: {died or 'interrupted'}", trials)

    def finish(self, run_dir: RunDirectory, status: str, trials: list) -> int:
        """summary.json, latency.json, run.json's status and the printed tables."""
        self.closing = None
        rows = run_dir.results()
        status = completion_status(status, trials, rows)
        if status.startswith("incomplete"):
            self.log.error(f"run {status}")
        rows = counted(rows)  # an infrastructure failure not counted is no result
        summary = self.benchmark.summarize(rows)
        latency = self.benchmark.latency(rows)
        run_dir.finish(status, summary, latency or None)
        if self.embodiment is not None:
            run_dir.update_info(embodiment=self.embodiment.name)
        for line in self.benchmark.report(run_dir, rows, summary, latency):
            self.echo(line)
        self.echo(f"results: {run_dir.path}")
        return 0 if status == "finished" else 3
