"""The simulator-backend protocol that MuJoCo, SAPIEN and LIBERO implement, so one sim node
and one `SimSession` drive them all (`sim_nodes/registry.py` names them).

A backend declares what differs between simulated embodiments: the names, cameras and action
width (`embodiment`), the rule every target passes (`action_limits`), where the arms start
(`home_command`), and the rule that ends an episode besides the policy-call budget: a scene's
own step budget (`step_budget`) and a task's success (`finished`, with the goals a begin asks
it to watch). The defaults are the RoboFollow workcell's: the ALOHA PiPER pair, its joint
limits, no step budget, and no task that ends an episode early.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from vla_bridge import contract
from vla_bridge.embodiment.cameras import CameraModel
from vla_bridge.embodiment.limits import PairLimits
from vla_bridge.embodiment.workcell import home_command
from vla_bridge.embodiment.world import WorldState


class SimBackend(ABC):
    """One simulated bimanual workcell. All joint vectors follow the contract order."""

    #: seconds of simulated time per control tick (one executed action)
    control_period: float
    #: the action and state names, cameras and action width the sim node speaks for this
    #: backend (contract.Embodiment; the RoboFollow workcell: the ALOHA-ordered PiPER pair)
    embodiment: contract.Embodiment = contract.ALOHA_PIPER

    #: the scene perturbation axes (`benchmarks.perturbations`) this backend's `reset` applies;
    #: the image axes the session applies to every backend's images
    perturbation_axes: frozenset = frozenset()
    #: whether `reset` takes ``edits=``: an INT-ACT probe's LIBERO objects
    #: (`benchmarks.intact.scene_edits`)
    scene_edits: bool = False

    @abstractmethod
    def reset(self, scene: str, layout: str, seed: int, cue_objects=(),
              perturbation=None) -> None:
        """Build/restore the scene with the layout's objects jittered by `seed`; arms at home.

        `cue_objects`: scene-instantiated visual cues for this episode
        (`benchmarks.vifo.scene_cards.SceneCueObject`, e.g. from `episode_scene_cues`); a backend that
        cannot show them raises NotImplementedError when any are given.
        `perturbation`: the episode's `perturbations.EpisodePerturbation` (None: none), one of
        `perturbation_axes` or an image axis (which the backend leaves to the session); the
        next reset without one restores the unperturbed scene."""

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

    # ------------------------------------------------------------------ the embodiment's rules
    #: `render()` shows the state after every step; False: only after a step announced by
    #: `observe_next()` (LIBERO renders only observed steps), so the sim runs lock-step only
    images_every_step: bool = True

    def observe_next(self) -> None:  # noqa: B027 - optional hook
        """The next `step()` is followed by an observation (a backend that renders only
        observed steps renders that one)."""

    def action_limits(self):
        """The rule every target passes before it is applied (`embodiment.limits`: an object
        with ``enforce(target, last_command, dt)``); the PiPER pair's joint limits."""
        return PairLimits()

    def home_command(self) -> np.ndarray:
        """The RoboFollow home pose."""
        return home_command()

    def start_command(self) -> np.ndarray:
        """The command the arms hold when an episode begins: home, unless the episode's
        perturbation moved the arms' start (``initial_joints``)."""
        return self.home_command()

    def step_budget(self, scene: str) -> int | None:
        """The scene's own step budget (ticks) when the begin names none (None: only the
        policy-call budget ends an episode); an unknown scene is a ValueError."""
        return None

    def check_watch(self, task: dict):
        """The begin task's goals to watch during the episode, checked for shape before any
        reset (ValueError naming the problem); None when it names none. This backend checks
        no goals, so a task that names some is refused."""
        if task.get("goals") is not None or task.get("end_on") is not None:
            raise ValueError(f"the {type(self).__name__} checks no task goals (goals / end_on)")
        return None

    def watch(self, goals) -> None:  # noqa: B027 - optional hook
        """Watch `check_watch`'s goals from now on (called after `reset`)."""

    @property
    def finished(self) -> str | None:
        """Why the task has ended the episode (its success), or None while it goes on."""
        return None

    def episode_info(self) -> dict:
        """Fields of the episode's `ready` status beyond the tick, stamp and embodiment."""
        return {}

    def outcome(self) -> dict:
        """Fields of the episode's `done` status beyond ticks, calls and reason."""
        return {}

