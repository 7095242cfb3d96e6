"""`hold` backend: keep still (a do-nothing baseline, the floor of a benchmark's table, and a
safe default). ``hold`` holds the current joints (ALOHA-PiPER's absolute joint targets);
``hold?embodiment=libero_panda`` sends zero end-effector deltas with the gripper open."""
from __future__ import annotations

import numpy as np

from vla_bridge import contract as C
from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend


class HoldPolicy(PolicyBackend):
    def __init__(self, chunk_size: int = 50, embodiment: str = C.DEFAULT_EMBODIMENT):
        self.chunk_size = chunk_size
        spec = C.get_embodiment(str(embodiment))  # ValueError naming the known ones
        self.embodiment = spec.name
        self._still = None  # eef deltas: the one action that keeps still
        if spec.action_kind == C.ACTION_EEF_DELTA:
            self._still = np.zeros(spec.action_dim)
            self._still[spec.action_names.index("gripper")] = C.GRIPPER_OPEN

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        pass

    def predict(self, observation: Observation) -> np.ndarray:
        if self._still is not None:
            return np.tile(self._still, (self.chunk_size, 1))
        return np.tile(np.asarray(observation.state, float), (self.chunk_size, 1))
