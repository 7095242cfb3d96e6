"""The policy-backend protocol (RoboFollow's policy interface; openpi ALOHA keys map onto it)."""
from __future__ import annotations

from abc import ABC, abstractmethod
import numpy as np

from vla_bridge.embodiment.world import Observation

__all__ = ["Observation", "PolicyBackend"]  # Observation lives in embodiment.world


class PolicyBackend(ABC):
    """Turns observations into chunks of absolute joint targets."""

    #: True if the backend reads the privileged world state (the oracle)
    needs_world_state: bool = False

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget the previous episode."""

    @abstractmethod
    def set_instruction(self, instruction: str, task: dict | None = None) -> None:
        """Language instruction; `task` is the privileged task spec (oracle only)."""

    @abstractmethod
    def predict(self, observation: Observation) -> np.ndarray:
        """Return an [H, D] chunk of absolute joint targets."""
