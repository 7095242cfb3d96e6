"""Scripted expert ("oracle"): reads the privileged world state and the task spec, plans the
whole episode with inverse kinematics and motion primitives, and serves it chunk by chunk.
One planning module per scene; `OraclePolicy` dispatches on the task's scene."""
from __future__ import annotations

import hashlib
from importlib import import_module

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend
from vla_bridge.policy_nodes.oracle.primitives import PlanningError
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec

__all__ = ["OraclePolicy", "PlanningError", "PLANNERS"]

#: scene -> "module:function" returning the whole-episode plan [T, 14]
PLANNERS = {
    "scene1": "vla_bridge.policy_nodes.oracle.scene1:plan_scene1",
    "scene2": "vla_bridge.policy_nodes.oracle.scene2:plan_scene2",
    "scene3": "vla_bridge.policy_nodes.oracle.scene3:plan_scene3",
    "scene4": "vla_bridge.policy_nodes.oracle.scene4:plan_scene4",
}


class OraclePolicy(PolicyBackend):
    """Privileged scripted expert.

    ``follow`` chooses the task it plans: "language" (default) the begin message's ``task``
    (what the language specifies), "cue" the begin message's ``cue_task`` when the evaluator
    runs a visual-cue protocol (the task the cue shows), else ``task``. A cue-following oracle
    is the upper bound of visual cue following (UVF = UVI = AVF = 100 %), a language-following
    one the lower bound of unauthorized following (UVF = 0 % under conflict).
    """

    needs_world_state = True
    FOLLOW = ("language", "cue")

    def __init__(self, chunk_size: int = 50, control_period: float = 0.06,
                 follow: str = "language"):
        if follow not in self.FOLLOW:
            raise ValueError(f"oracle follow must be one of {self.FOLLOW}, got {follow!r}")
        self.follow = follow
        self.chunk_size = chunk_size
        self.control_period = control_period
        self.task: TaskSpec | None = None
        self.plan: np.ndarray | None = None
        self.plan_start = 0.0  # observation stamp the plan starts from

    def reset(self) -> None:
        self.plan = None

    def set_instruction(self, instruction: str, task: dict | None = None,
                        cue_task: dict | None = None) -> None:
        if self.follow == "cue" and cue_task is not None:
            task = cue_task
        if task is None:
            raise ValueError("the oracle needs the privileged task spec, not only the instruction")
        self.task = TaskSpec.from_dict(task)
        if not instruction.strip() and cue_task is None:
            # Empty-language control: the task is withheld from the policy, so the oracle does
            # not read it either; it acts like a policy that learned the scene's training tasks
            # but cannot tell which one is asked, and performs one of them (chosen per episode).
            self.task = self._blind_guess(self.task)
        self.reset()

    @staticmethod
    def _blind_guess(task: TaskSpec) -> TaskSpec:
        from vla_bridge.benchmarks.robofollow.scenes import load_scene
        from vla_bridge.benchmarks.robofollow.tasks import load_suite
        scene = load_scene(task.scene)
        present = {p.name for p in scene.layout(task.layout).placements}
        known = set(scene.objects) | set(scene.fixtures)

        def doable(spec: TaskSpec) -> bool:  # every body it names is in this layout
            values = [v for v in spec.target.values() if isinstance(v, str)]
            named = {spec.source, spec.anchor, *values} & known
            return named <= present

        training = [t.spec for t in load_suite().training_tasks(task.scene) if doable(t.spec)]
        if not training:
            return task
        digest = hashlib.md5(f"{task.id}|{task.layout}".encode()).digest()
        guess = training[digest[0] % len(training)]
        # the guess is executed in this episode's layout; only its behaviour is borrowed
        return TaskSpec.from_dict({**guess.to_dict(), "layout": task.layout, "level": task.level})

    def predict(self, observation: Observation) -> np.ndarray:
        if self.task is None:
            raise RuntimeError("set_instruction() must be called before predict()")
        if observation.world is None:
            raise ValueError("the oracle needs the privileged world state in the observation")
        if self.plan is None:
            self.plan, self.plan_start = self._plan(observation), observation.stamp
        # index the plan by time, so it also holds when the sim runs in real time and
        # observations come more often than once per chunk
        cursor = int(round((observation.stamp - self.plan_start) / self.control_period))
        chunk = self.plan[cursor:cursor + self.chunk_size]
        if len(chunk) < self.chunk_size:  # plan finished: hold the last pose
            last = self.plan[-1] if len(self.plan) else observation.state
            chunk = np.vstack([chunk, np.tile(last, (self.chunk_size - len(chunk), 1))])
        return chunk

    def plan_episode(self, observation: Observation) -> np.ndarray:
        """The whole episode's plan [T, 14] from `observation` (its joints and world), one row
        per control period: what ``predict`` serves chunk by chunk (teleop's fake leaders
        play it, vla_bridge.data.teleop)."""
        if self.task is None:
            raise RuntimeError("set_instruction() must be called before plan_episode()")
        return self._plan(observation)

    def _plan(self, observation: Observation) -> np.ndarray:
        if self.task.scene not in PLANNERS:
            raise NotImplementedError(f"the oracle has no planner for {self.task.scene} yet "
                                      f"(known: {sorted(PLANNERS)})")
        module, function = PLANNERS[self.task.scene].split(":")
        state = np.asarray(observation.state, float).copy()
        for arm in contract.ARMS:  # command what the arm is at; grippers start open
            state[contract.GRIPPER_INDEX[arm]] = contract.GRIPPER_OPEN
        return getattr(import_module(module), function)(self.task, observation.world, state)
