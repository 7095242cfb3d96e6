"""The oracle's plan of an episode, rolled out on a MuJoCo copy: F3 ghosts and F4 goal images.

LIBERO-VIFO's ghost trajectories are future states of the episode, and a goal image is its
final state. ``rollout(task, seed)`` resets a MuJoCo scene as the sim node does for the
episode, plans it with the privileged oracle (``policy_nodes.oracle``), executes the whole
plan and keeps the source object's pose at every tick, so the ghosts follow the real path
(Scene 3's route over the right slab) and end in the real final orientation, and
``goal_image`` is the scene at the end, rendered from ``cam_high``.

Costs about a second per episode here (physics of a few hundred ticks, one render); the
evaluator does it once per episode, only for F3 and F4 goal_image. Needs MuJoCo, not rclpy.

``PlanRollouts`` keeps the MuJoCo copies and the recent rollouts of one owner (the
evaluator's ``CueRun``, a VQA scene, the example sheets), so two owners never share state;
its ``close()`` frees them. The module's ``rollout`` is a one-off on a copy of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

import numpy as np

from vla_bridge import contract
from vla_bridge.benchmarks.robofollow.tasks import TaskSpec

ALOHA = contract.ALOHA_PIPER  # the PiPER pair's names, cameras and image size

__all__ = ["PlanRollout", "PlanRollouts", "rollout", "keyframes", "MOVED_M"]

MOVED_M = 0.005  # the source counts as moving once it is this far from where it stood
_SETTLE_TICKS = 10  # ticks simulated after the plan so the released object comes to rest


@dataclass
class PlanRollout:
    source: str
    positions: np.ndarray  # (T, 3) the source's centre at every tick
    quats: np.ndarray  # (T, 4) w, x, y, z
    goal_image: np.ndarray | None = None  # cam_high at the end (when asked for)

    def keyframes(self, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return keyframes(self.positions, self.quats, k)


def keyframes(positions: np.ndarray, quats: np.ndarray, k: int):
    """``k`` (position, quat) states along the moving part of the path, equally spaced by
    arc length, the last being the final state ([] when the source never moved)."""
    moved = np.linalg.norm(positions - positions[0], axis=1) > MOVED_M
    if not moved.any():
        return []
    first = int(np.argmax(moved))
    pos, quat = positions[first:], quats[first:]
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pos, axis=0), axis=1))])
    picks = [int(np.searchsorted(arc, arc[-1] * t)) for t in np.linspace(1.0 / k, 1.0, k)]
    picks[-1] = len(pos) - 1
    return [(pos[min(i, len(pos) - 1)].copy(), quat[min(i, len(pos) - 1)].copy())
            for i in picks]


class PlanRollouts:
    """The plan rollouts of one owner: one MuJoCo copy per image size, reused across episodes
    (models are cached per scene; a renderer exists only while a goal image is drawn), and the
    last ``keep`` rollouts (deterministic, so reused: a VQA run asks for the same episode once
    per variant). ``close()`` (or the end of a ``with`` block) frees both; a later rollout
    starts afresh."""

    def __init__(self, keep: int = 32):
        self.keep = max(1, int(keep))
        self._sims: dict = {}  # (width, height) -> MujocoBackend
        self._done: dict = {}  # (task, layout, seed, goal_image, width, height) -> PlanRollout

    def rollout(self, task: TaskSpec, seed: int, goal_image: bool = False,
                width: int = ALOHA.image_size[0],
                height: int = ALOHA.image_size[1]) -> PlanRollout:
        """Plan ``task`` with the oracle from the episode's reset and execute the whole plan
        (deterministic, so the last few are kept and reused)."""
        key = (task.id, task.layout, int(seed), goal_image, width, height)
        if key not in self._done:
            if len(self._done) >= self.keep:
                self._done.pop(next(iter(self._done)))
            self._done[key] = _rollout(self._sim(width, height), task, seed, goal_image)
        return self._done[key]

    def _sim(self, width: int, height: int):
        key = (width, height)
        if key not in self._sims:
            from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
            self._sims[key] = MujocoBackend(width=width, height=height)
        return self._sims[key]

    def close(self) -> None:
        """Free the MuJoCo copies (renderers and models) and the kept rollouts."""
        for sim in self._sims.values():
            sim.close()
        self._sims.clear()
        self._done.clear()

    def __enter__(self) -> PlanRollouts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def rollout(task: TaskSpec, seed: int, goal_image: bool = False,
            width: int = ALOHA.image_size[0], height: int = ALOHA.image_size[1]) -> PlanRollout:
    """One rollout on a MuJoCo copy made for it and freed after (nothing is kept: a caller
    that asks again holds a ``PlanRollouts``)."""
    with PlanRollouts(keep=1) as rollouts:
        return rollouts.rollout(task, seed, goal_image, width, height)


def _rollout(sim, task: TaskSpec, seed: int, goal_image: bool) -> PlanRollout:
    from vla_bridge.policy_nodes.oracle import PLANNERS
    sim.reset(task.scene, task.layout, int(seed))
    module, function = PLANNERS[task.scene].split(":")
    state = np.asarray(sim.joint_positions(), float).copy()
    for arm in contract.ARMS:  # as the oracle starts: grippers open
        state[contract.GRIPPER_INDEX[arm]] = contract.GRIPPER_OPEN
    plan = getattr(import_module(module), function)(task, sim.world_state(), state)
    positions, quats = [], []

    def keep():
        obj = sim.world_state().objects[task.source]
        positions.append(np.asarray(obj.pos, float).copy())
        quats.append(np.asarray(obj.quat, float).copy())

    keep()
    for target in list(plan) + [plan[-1]] * _SETTLE_TICKS:
        sim.apply(np.asarray(target, float))
        sim.step()
        keep()
    image = None
    if goal_image:
        image = sim.render("cam_high")
        sim.close()  # no GL context outlives the call (the model stays for the next rollout)
    return PlanRollout(task.source, np.asarray(positions), np.asarray(quats), image)
