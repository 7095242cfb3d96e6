"""Teleoperated demonstrations (`vla-bridge record-demos`): the operator console's episodes,
without rclpy (the graph side is ``demo_node.DemoNode``; tests give a stand-in).

The graph is the real one's robot nodes with the recorder: the PiPER node in ``teleop`` mode
(it sends the arms nothing; each follower obeys its linked leader arm on their CAN bus and the
node publishes the leaders' commands, read through piper_sdk, as ``joint_commands``), the
cameras, the tracker and the recorder node. This console plays the evaluator's part:

* **start** (``s`` or Enter): checks that the leaders are heard (``joint_commands``), sends
  the instruction and a ``begin`` (task, seed, instruction) and waits for the recorder's
  ``recording`` and the PiPER node's ``ready`` (table calibrated, task objects tracked). With
  fake hardware it then sends the fake leaders the oracle's plan of the task, made from the
  tracker's world state and the followers' joints, as the oracle policy plans it.
* **save** (``k``, keep): an ``end`` with ``"demo": "save"``; the PiPER node sends the
  episode's ``done`` first, so the recorder files the bag complete; then the results row is
  appended (``results.jsonl``: the bag, the instruction, the task), flushed at once. A saved
  episode is never lost: the console writes nothing more about it.
* **discard** (``d``): an ``end`` with ``"demo": "discard"``: no ``done``, the recorder keeps
  the bag under ``bags/.partial``, and the console removes it: a discarded episode leaves no
  bag and no row. **redo** (``r``): discard the episode in progress (if any) and start the
  same task and instruction again.
* ``t TASK`` names the task (a RoboFollow suite task id; its instruction becomes the
  instruction), ``i TEXT`` the instruction; ``w`` (scripts, fake hardware) waits until the
  fake leaders' plan has played; ``q`` quits (an episode in progress is discarded), ``?`` help.

Each saved demonstration is round r of its task (1, 2, ... continuing the run directory's
rows), with the episode id ``<scene>/<task>/r<round>@<ns>`` the evaluator would give it, so
its bag is ``bags/<scene>__<task>__r<round>`` and ``vla-bridge export lerobot RUN --fps N``
reads it like a real trial's: ``observation.state`` = the followers' measured joints,
``action`` = the leaders' commands (``joint_commands``), ``task`` = the instruction.

Bad input is one line: an unknown task, silent leaders (no ``joint_commands`` within
``leader_wait_s``: nothing is begun), a robot or recorder that does not answer, a plan the
oracle cannot make. Keys come from ``read(prompt)`` (``input``, or a script), which raises
EOFError at the end of its input; Ctrl-C (KeyboardInterrupt) discards the episode in progress.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from vla_bridge import contract as C
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec, Trial, episode_seed, load_suite
from vla_bridge.data.bags import BAGS_DIR, PARTIAL_DIR
from vla_bridge.embodiment.world import Observation, WorldState
from vla_bridge.evaluation.run_dir import RunDirectory, result_row, trial_key

LOG = "[demos]"
SOURCE = "teleop"  # results rows of demonstrations say so ("source")
HELP = ("keys: s/Enter start | k save | d discard | r redo | t TASK | i TEXT | w wait (fake "
        "plan played) | q quit | ? help")


class DemoError(RuntimeError):
    """Something the operator must fix; the message is one line."""


class DemoGraph(Protocol):
    """What the console needs of the graph (``demo_node.DemoNode``)."""

    def send(self, message: dict) -> None: ...
    def instruct(self, text: str) -> None: ...
    def play_plan(self, plan: np.ndarray, period: float) -> None: ...
    def commands_age(self) -> float: ...  # seconds since the last joint_commands (inf: none)
    def commands_since(self, t: float) -> int: ...  # joint_commands heard after monotonic t
    def state(self) -> np.ndarray | None: ...  # newest joint_states (contract order)
    def world(self) -> WorldState | None: ...  # newest tracked world state
    def robot_status(self, episode: str) -> dict | None: ...  # newest episode status of it
    def recorder_status(self, episode: str) -> dict | None: ...
    def problem(self) -> str | None: ...  # why the graph cannot record (a node is gone)


@dataclass
class DemoSettings:
    output: Path
    fake_hardware: bool = False
    hardware: str = "piper"  # recorded in the rows
    operator: str = ""
    leader_wait_s: float = 3.0  # joint_commands must have come within this long to start
    answer_wait_s: float = 15.0  # the recorder's and the robot's answers to a begin
    bag_wait_s: float = 15.0  # the recorder's closed bag after an end
    plan_period_s: float = 0.06  # the oracle's control period: seconds per plan row
    clock: Callable[[], float] = field(default=time.monotonic)
    sleep: Callable[[float], None] = field(default=time.sleep)


def resolve_task(task_id: str) -> TaskSpec:
    """The suite task `task_id`; DemoError (one line, the known ids hinted) otherwise."""
    try:
        return load_suite().get(task_id.strip())
    except (KeyError, ValueError) as exc:
        raise DemoError(str(exc)) from None


def oracle_plan(task: TaskSpec, world: WorldState, state: np.ndarray) -> np.ndarray:
    """The oracle's whole-episode plan [T, 14] of `task` from `state` in `world` (the oracle
    policy's own planner: policy_nodes.oracle)."""
    from vla_bridge.policy_nodes.oracle import OraclePolicy, PlanningError
    policy = OraclePolicy()
    policy.set_instruction(task.instruction, task.to_dict())
    try:
        return policy.plan_episode(Observation(state=np.asarray(state, float), world=world))
    except (PlanningError, KeyError, NotImplementedError) as exc:
        raise DemoError(f"the oracle cannot plan {task.id} in the tracked scene: {exc}") from None


class DemoSession:
    """The console (see the module docstring): `run(read)` until quit or end of input."""

    def __init__(self, graph: DemoGraph, settings: DemoSettings, task: TaskSpec,
                 instruction: str | None = None, echo: Callable[[str], None] = print):
        self.graph, self.s, self.echo = graph, settings, echo
        self.run_dir = RunDirectory(settings.output)
        self.task = task
        self.instruction = instruction or task.instruction
        self.episode: str | None = None  # the episode being recorded
        self.trial: Trial | None = None
        self.started_at = 0.0
        self.plan_ends_at = 0.0  # fake hardware: when the leaders' plan has played
        self.saved: list[dict] = []  # rows written by this session
        self.errors = 0  # inputs that failed (said in one line each)

    # ------------------------------------------------------------------ the console
    def run(self, read: Callable[[str], str], strict: bool = False) -> int:
        """The console until quit, end of input (0) or Ctrl-C (130). ``strict`` (scripted
        keys): any input that failed makes the exit status 1, so a script that saved less
        than it asked for does not pass for done."""
        code = self._run(read)
        if strict and code == 0 and self.errors:
            self.say(f"{self.errors} scripted input(s) failed (said above): exit status 1")
            return 1
        return code

    def _run(self, read: Callable[[str], str]) -> int:
        self._open_run_dir()
        self.say(f"task {self.task.id}: {self.instruction!r}; {HELP}")
        try:
            while True:
                state = f"recording r{self.trial.round}" if self.episode else "idle"
                try:
                    line = read(f"{LOG} [{state}] > ").strip()
                except EOFError:
                    self.quit("end of input")
                    return 0
                if not self.key(line):
                    return 0
        except KeyboardInterrupt:
            self.quit("interrupted (Ctrl-C)")
            return 130

    def key(self, line: str) -> bool:
        """Act on one line of input; False once the operator quits."""
        word, _, rest = line.partition(" ")
        word = word.lower()
        try:
            if word in ("", "s", "start"):
                if self.episode is None:
                    self.start()
                else:
                    self.say(f"already recording r{self.trial.round}: k save, d discard, r redo")
            elif word in ("k", "save", "keep"):
                self.save()
            elif word in ("d", "discard"):
                self.discard()
            elif word in ("r", "redo"):
                if self.episode is not None:
                    self.discard()
                self.start()
            elif word in ("t", "task"):
                self.name_task(rest)
            elif word in ("i", "instruction"):
                self.name_instruction(rest)
            elif word in ("w", "wait"):
                self.wait_for_plan()
            elif word in ("q", "quit"):
                self.quit("quit")
                return False
            else:
                self.say(HELP)
        except DemoError as exc:
            self.errors += 1
            self.say(f"error: {exc}")
        return True

    def say(self, text: str) -> None:
        self.echo(f"{LOG} {text}")

    # ------------------------------------------------------------------ naming
    def name_task(self, task_id: str) -> None:
        if self.episode is not None:
            raise DemoError("save or discard the episode in progress before naming another task")
        self.task = resolve_task(task_id)
        self.instruction = self.task.instruction
        self.say(f"task {self.task.id}: {self.instruction!r}")

    def name_instruction(self, text: str) -> None:
        if self.episode is not None:
            raise DemoError("save or discard the episode in progress before naming another "
                            "instruction")
        if not text.strip():
            raise DemoError("an instruction needs text: i Pick up the yellow block.")
        self.instruction = text.strip()
        self.say(f"instruction {self.instruction!r}")

    # ------------------------------------------------------------------ an episode
    def next_round(self) -> int:
        rounds = [int(r.get("round", 0)) for r in self.run_dir.results()
                  if r.get("task_id") == self.task.id]
        return max(rounds, default=0) + 1

    def start(self) -> None:
        problem = self.graph.problem()
        if problem:
            raise DemoError(problem)
        if not self._wait(lambda: self.graph.commands_age() <= self.s.leader_wait_s,
                          self.s.leader_wait_s):
            raise DemoError(f"no command from the leader arm(s) for {self.s.leader_wait_s:g} s "
                            f"(nothing on {C.TOPIC_JOINT_COMMANDS}): is each leader on, in "
                            "teaching mode and linked to its follower's CAN bus?")
        round_ = self.next_round()
        self.trial = Trial(self.task, round_, episode_seed(self.task.id, round_))
        episode = f"{trial_key(self.trial)}@{time.time_ns()}"
        self.graph.instruct(self.instruction)
        self.graph.send({"kind": C.CONTROL_BEGIN, "episode": episode, "task": self.task.to_dict(),
                         "seed": self.trial.seed, "instruction": self.instruction,
                         "max_policy_calls": 1, "max_actions_per_call": 1})
        self.episode, self.started_at = episode, self.s.clock()
        recorder = self._answer(self.graph.recorder_status, (C.RECORDER_RECORDING,
                                                             C.RECORDER_FAILED))
        robot = self._answer(self.graph.robot_status, (C.STATUS_READY, C.STATUS_ERROR))
        why = None
        if recorder is None or robot is None:
            who = "recorder node" if recorder is None else "PiPER node"
            why = f"the {who} did not answer the begin within {self.s.answer_wait_s:g} s"
        elif recorder["kind"] == C.RECORDER_FAILED:
            why = f"the recorder cannot record: {recorder.get('reason')}"
        elif robot["kind"] == C.STATUS_ERROR:
            why = f"the robot refused the episode: {robot.get('message')}"
        if why:
            self._end(C.DEMO_DISCARD)
            raise DemoError(why)
        self.say(f"recording {self.task.id} r{round_}: {self.instruction!r}")
        if self.s.fake_hardware:
            self.play_oracle()

    def play_oracle(self) -> None:
        world, state = self.graph.world(), self.graph.state()
        if world is None or state is None:
            self._end(C.DEMO_DISCARD)
            raise DemoError(f"no {'world state' if world is None else 'joint state'} to plan "
                            "the fake leaders' moves from (is the tracker running?)")
        try:
            plan = oracle_plan(self.task, world, state)
        except DemoError:
            self._end(C.DEMO_DISCARD)
            raise
        self.graph.play_plan(plan, self.s.plan_period_s)
        duration = len(plan) * self.s.plan_period_s
        self.plan_ends_at = self.s.clock() + duration
        self.say(f"fake leaders play the oracle's plan: {len(plan)} targets, {duration:.1f} s")

    def wait_for_plan(self) -> None:
        if not self.s.fake_hardware:
            raise DemoError("w waits for the fake leaders' plan: fake hardware only")
        self._wait(lambda: self.s.clock() >= self.plan_ends_at + 0.3, 1e9)

    def save(self) -> None:
        if self.episode is None:
            raise DemoError("nothing to save: s starts an episode")
        episode, trial, duration = self.episode, self.trial, self.s.clock() - self.started_at
        commands = self.graph.commands_since(self.started_at)
        status = self._end(C.DEMO_SAVE)
        if status is None or status["kind"] != C.RECORDER_RECORDED:
            why = "no closed bag" if status is None else status.get("reason", status["kind"])
            raise DemoError(f"episode {trial_key(trial)} was not saved: its bag is not complete "
                            f"({why}); r redoes it")
        row = result_row(trial, instruction=self.instruction, wall_s=duration, frames=commands)
        row.update(complete=True, source=SOURCE, hardware=self.s.hardware,
                   operator=self.s.operator, episode=episode, bag=self._relative(status["bag"]),
                   bag_messages=status["messages"])
        self.run_dir.append(row)
        self.saved.append(row)
        self.say(f"saved {row['key']}: {row['bag']} ({status['messages']} messages, "
                 f"{duration:.1f} s); {len(self.saved)} saved this session")

    def discard(self) -> None:
        if self.episode is None:
            raise DemoError("nothing to discard")
        key = trial_key(self.trial)
        self._end(C.DEMO_DISCARD)
        self.say(f"discarded {key}: no bag, no row")

    def quit(self, why: str) -> None:
        if self.episode is not None:
            key = trial_key(self.trial)
            try:
                self._end(C.DEMO_DISCARD)
            finally:
                self.say(f"{why}: the episode in progress ({key}) is discarded")
        rows = len([r for r in self.run_dir.results() if r.get("source") == SOURCE])
        self.say(f"{len(self.saved)} demonstrations saved this session; {rows} in "
                 f"{self.run_dir.results_path}")

    # ------------------------------------------------------------------ plumbing
    def _end(self, what: str) -> dict | None:
        """End the episode (`what`: save or discard); the recorder's closing status. A bag
        not filed complete (every discard) is removed."""
        episode, self.episode = self.episode, None
        self.graph.send({"kind": C.CONTROL_END, "episode": episode, "demo": what})
        closed = (C.RECORDER_RECORDED, C.RECORDER_INCOMPLETE, C.RECORDER_FAILED)
        status = self._answer(self.graph.recorder_status, closed, episode, self.s.bag_wait_s)
        if status is not None and status["kind"] == C.RECORDER_INCOMPLETE:
            self._remove_partial(status["bag"])
        return status

    def _answer(self, get, kinds, episode: str | None = None, timeout: float | None = None):
        episode = episode or self.episode
        found = []

        def heard() -> bool:
            status = get(episode)
            if status is not None and status["kind"] in kinds:
                found.append(status)
            return bool(found)
        self._wait(heard, self.s.answer_wait_s if timeout is None else timeout)
        return found[0] if found else None

    def _wait(self, condition, timeout: float) -> bool:
        deadline = self.s.clock() + timeout
        while not condition():
            if self.s.clock() >= deadline:
                return False
            problem = self.graph.problem()
            if problem:
                raise DemoError(problem)
            self.s.sleep(0.02)
        return True

    def _relative(self, path: str) -> str:
        return Path(os.path.relpath(Path(path).resolve(), self.s.output.resolve())).as_posix()

    def _remove_partial(self, path: str) -> None:
        """Remove a bag the recorder kept under bags/.partial (and .partial once empty)."""
        bag = Path(path).resolve()
        partial = (self.s.output / BAGS_DIR / PARTIAL_DIR).resolve()
        if bag.parent == partial:  # never anything else
            shutil.rmtree(bag, ignore_errors=True)
            try:
                partial.rmdir()
            except OSError:
                pass

    def _open_run_dir(self) -> None:
        self.s.output.mkdir(parents=True, exist_ok=True)
        started = self.run_dir.info().get("started") or time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.run_dir.update_info(kind="teleop demonstrations", embodiment=C.ALOHA_PIPER.name,
                                 hardware=self.s.hardware, started=started)
