"""`hold` backend: keep the current joints (a do-nothing baseline and a safe default)."""
from __future__ import annotations

import numpy as np

from vla_bridge.embodiment.world import Observation
from vla_bridge.policy_nodes.backend import PolicyBackend


class HoldPolicy(PolicyBackend):
    def __init__(self, chunk_size: int = 50):
        self.chunk_size = chunk_size

    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        pass

    def predict(self, observation: Observation) -> np.ndarray:
        return np.tile(np.asarray(observation.state, float), (self.chunk_size, 1))
