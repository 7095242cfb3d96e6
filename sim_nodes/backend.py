"""The simulator-backend protocol that MuJoCo (now), SAPIEN and LIBERO (later) implement."""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.cameras import CameraModel
from vla_bridge.embodiment.world import WorldState


class SimBackend(ABC):
    """One simulated bimanual workcell. All joint vectors follow the contract order."""

    #: seconds of simulated time per control tick (one executed action)
    control_period: float
    #: the action and state names, cameras and action width the sim node speaks for this
    #: backend (contract.Embodiment; the RoboFollow workcell: the ALOHA-ordered PiPER pair)
    embodiment: contract.Embodiment = contract.ALOHA_PIPER

    @abstractmethod
    def reset(self, scene: str, layout: str, seed: int, cue_objects=()) -> None:
        """Build/restore the scene with the layout's objects jittered by `seed`; arms at home.

        `cue_objects`: scene-instantiated visual cues for this episode
        (`benchmarks.vifo.scene_cards.SceneCueObject`, e.g. from `episode_scene_cues`); a backend that
        cannot show them raises NotImplementedError when any are given."""

    @abstractmethod
    def apply(self, target: np.ndarray) -> None:
        """Set absolute joint targets (contract order, gripper normalised 1 = open)."""

    @abstractmethod
    def step(self) -> None:
        """Advance one control period."""

    #: seconds per physics step, the grid recorded frames fall on (None: the backend cannot
    #: split a control period, so it records no frames between ticks)
    physics_dt: float | None = None

    def step_physics(self, steps: int) -> None:
        """Advance `steps` physics steps; `step()` is control_period / physics_dt of them, and
        any split of a period into parts gives exactly the same state."""
        raise NotImplementedError(f"{type(self).__name__} cannot split a control period")

    @abstractmethod
    def joint_positions(self) -> np.ndarray:
        """Measured joint vector (contract order, gripper normalised opening)."""

    @abstractmethod
    def world_state(self) -> WorldState:
        """Privileged object and tool-centre-point poses."""

    @abstractmethod
    def render(self, camera: str) -> np.ndarray:
        """RGB image (H, W, 3) uint8 from a contract camera."""

    @abstractmethod
    def camera_model(self, camera: str) -> CameraModel:
        """Intrinsics and current pose of a contract camera."""

    @property
    @abstractmethod
    def time(self) -> float:
        """Simulated seconds since reset."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release renderer resources."""
