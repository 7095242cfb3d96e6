"""One episode on a simulator backend, independent of ROS: reset, observations, chunk
execution under the policy-call budget. The sim node and the in-process runner both use it,
so the node graph and the direct run execute exactly the same steps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vla_bridge import contract
from vla_bridge.policy_nodes.backend import Observation
from vla_bridge.sim_nodes.backend import SimBackend
from vla_bridge.embodiment.workcell import home_command


@dataclass
class Budget:
    max_policy_calls: int = 10
    max_actions_per_call: int = 50


class SimSession:
    def __init__(self, backend: SimBackend, cameras=contract.CAMERAS):
        self.backend = backend
        self.cameras = tuple(cameras)
        self.budget = Budget()
        self.calls = 0
        self.ticks = 0
        self.command = home_command()

    def begin(self, scene: str, layout: str, seed: int, budget: Budget | None = None,
              cue_objects=()) -> None:
        self.backend.reset(scene, layout, seed, cue_objects)
        self.budget = budget or Budget()
        self.calls = 0
        self.ticks = 0
        self.command = home_command()

    @property
    def done(self) -> bool:
        return self.calls >= self.budget.max_policy_calls

    def observation(self, images: bool = True, world: bool = True) -> Observation:
        return Observation(
            state=self.backend.joint_positions(),
            images={c: self.backend.render(c) for c in self.cameras} if images else {},
            stamp=self.backend.time,
            world=self.backend.world_state() if world else None,
        )

    def execute(self, chunk):
        """Run one policy call's chunk (truncated to the per-call budget); yields after each
        executed action so callers can record/publish the tick."""
        if self.done:
            raise RuntimeError("policy-call budget already spent")
        actions = contract.validate_chunk(chunk)[: self.budget.max_actions_per_call]
        self.calls += 1
        for target in actions:
            self.step_action(target)
            yield target

    def step_action(self, target) -> None:
        """Apply one absolute joint target and advance one control period."""
        self.backend.apply(target)
        self.command = np.asarray(target, dtype=float)
        self.backend.step()
        self.ticks += 1

    @property
    def max_ticks(self) -> int:
        """Episode length in ticks when the sim runs in real time (same frame count as lock-step)."""
        return self.budget.max_policy_calls * self.budget.max_actions_per_call
