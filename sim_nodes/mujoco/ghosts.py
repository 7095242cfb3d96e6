"""F3 ghost trajectories rendered by the simulator (the paper's simulator-state overlay).

The ghost of the manipulated object at its future poses is rendered by MuJoCo from the very
camera that took the image, and each render is differenced against the scene rendered
without the object, so the layers carry the object's true shape, shading and occlusion
(``insertion.ghost_layers``). Needs MuJoCo, not rclpy.

* ``render_ghost_layers(sim, source, poses, camera)``: on a MuJoCo backend posed at the
  current state (the VQA runner's own sim);
* ``MirrorGhostRenderer``: a MuJoCo copy of the episode's scene for code that only sees the
  messages (the graph's cue overlay, the report's replays): each call poses the copy from the
  observation's world state and joint state, then renders as above. Without it the overlay
  falls back to projected box silhouettes (``replay.projected_ghost_layers``), e.g. on the
  real robot, which has no simulator to render from.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from vla_bridge.benchmarks.vifo.families import GhostLayer
from vla_bridge.benchmarks.vifo.insertion import ghost_layers

__all__ = ["render_ghost_layers", "MirrorGhostRenderer", "GHOST_THRESHOLD"]

GHOST_THRESHOLD = 12  # grey-level change that counts as the object's pixels
_OUT_OF_VIEW = (0.0, 0.0, -5.0)  # under the floor: the scene rendered without the object


def render_ghost_layers(sim, source: str, poses: Sequence, camera: str) -> list[GhostLayer]:
    """One layer per future pose of ``source`` (a free body of ``sim``, a MujocoBackend
    at the current state; a pose is a position or a (position, quat) pair): its render
    there, masked to where it differs from the scene without it. [] when ``source`` is not a free body (nothing to move). The sim's state is
    restored afterwards."""
    import mujoco
    m, d = sim.model, sim.data
    try:
        joint = m.joint(source).id
    except KeyError:
        return []
    if m.jnt_type[joint] != mujoco.mjtJoint.mjJNT_FREE:
        return []
    adr, saved = m.jnt_qposadr[joint], d.qpos.copy()

    def render_at(pose):
        pos, quat = pose if len(pose) == 2 else (pose, None)
        d.qpos[adr:adr + 3] = pos
        if quat is not None:
            d.qpos[adr + 3:adr + 7] = quat
        mujoco.mj_forward(m, d)
        return sim.render(camera)

    try:
        reference = render_at(_OUT_OF_VIEW)
        renders = [render_at(p) for p in poses]
    finally:
        d.qpos[:] = saved
        mujoco.mj_forward(m, d)
    return ghost_layers(reference, renders, threshold=GHOST_THRESHOLD)


class MirrorGhostRenderer:
    """Renders F3 ghost layers on a MuJoCo copy of the episode's scene.

    ``reset(scene, layout, seed)`` builds the copy as the sim node did for the episode;
    ``renderer(world, joints, path, images)`` -> {camera: [GhostLayer]} poses it from the
    observation (object poses from the WorldState, arms from the contract joint vector) and
    renders the source object at the poses of ``path`` (``replay.ghost_path``) in each camera
    of ``images`` (their size sets the render size).
    """

    def __init__(self):
        self._sim = None
        self._episode: tuple | None = None

    def reset(self, scene: str, layout: str, seed: int) -> None:
        self._episode = (scene, layout, int(seed))
        if self._sim is not None:
            self._sim.reset(*self._episode)

    def _sim_for(self, width: int, height: int):
        if self._episode is None:
            raise RuntimeError("MirrorGhostRenderer.reset(scene, layout, seed) first")
        if self._sim is None or (self._sim.width, self._sim.height) != (width, height):
            from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
            self.close()
            self._sim = MujocoBackend(width=width, height=height)
            self._sim.reset(*self._episode)
        return self._sim

    def __call__(self, world, joints, path, images) -> dict[str, list[GhostLayer]]:
        if not path or path[0][1] is None:
            return {c: [] for c in images}
        source = path[0][1].name
        poses = [(np.asarray(pos, float), np.asarray(obj.quat, float))
                 if getattr(obj, "quat", None) is not None else np.asarray(pos, float)
                 for pos, obj in path]
        height, width = next(iter(images.values())).shape[:2]
        sim = self._sim_for(width, height)
        sim.pose(world, joints)
        return {c: render_ghost_layers(sim, source, poses, c) for c in images}

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None
