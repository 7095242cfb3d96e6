"""Cue conditioning of one observation, shared by the graph's overlay and the report's replays.

Pure (numpy / OpenCV), no rclpy, no MuJoCo. ``CueConditioner`` is the one code path that
turns raw camera images into what a policy under a visual-cue protocol sees:

* ``evaluation.cues.overlay.CueOverlay`` (inside the node graph) calls it once per observation stamp
  with the images, world state, joint state and ``camera_info`` focal lengths of that stamp;
* ``vla-bridge report --videos`` (``evaluation.report.videos.render_episode_video``) calls it
  for every replayed frame with the replayed world state, joint state and the sim's focal
  lengths, so the video shows the cue the policy saw.

Per call: camera models come from ``embodiment.cameras`` (``cam_high`` fixed, wrist cameras from
the joint state), or from the world state's ``cameras`` when the sim publishes its cameras'
poses (LIBERO); intrinsics from the focal length when given, else the camera spec; scene
anchors are re-resolved against the given world state and reprojected, and F3 ghost layers are
projected along the path that ``ghost_path`` fixes at the first call that has a world state
(the episode's first observation). One ``CueInserter`` per episode conditions the images.

``episode_cue`` rebuilds the ``CueSpec`` of a finished episode from its results row's ``cue``
field exactly as the evaluator built it (``protocols.build_cue(cue task, family, variant,
episode seed)``: anchors and rendering parameters from the layout's spawn positions for that
seed; the live world state resolves the anchors every frame). A cue placed in the scene
(``cue_placement`` "scene": a card the sim node stands on the table) is not drawn: it is a
body of the sim, and ``episode_scene_objects`` rebuilds that card for the replay's reset
(``scene_cards.episode_scene_cues``, as the sim node does).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

import cv2
import numpy as np

from vla_bridge.embodiment.cameras import camera_model, needs_joints
from vla_bridge.benchmarks.vifo.families import SCENE_ANCHORED, STATE_OVERLAY, CueSpec, GhostLayer
from vla_bridge.benchmarks.vifo.insertion import CueInserter, resolve_anchor
from vla_bridge.benchmarks.vifo.projection import box_corners, project_points

__all__ = ["CueConditioner", "ghost_path", "projected_ghost_layers", "shows_cue", "episode_cue",
           "cue_placement", "episode_scene_objects", "cue_label", "GHOST_POSES", "GHOST_LIFT_M"]

GHOST_POSES = 4
GHOST_LIFT_M = 0.10


# ----------------------------------------------------------------------------- ghosts

def ghost_path(cue: CueSpec, world, k: int = GHOST_POSES) -> list[tuple[np.ndarray, object]]:
    """K future (position, ObjectState of the source) of the manipulated object.

    With ``cue.params["plan_path"]`` ((position, quat) states of the planned episode,
    ``sim_nodes.plan_rollout``) those states: the real path, route and final orientation.
    Without (no simulator to roll the plan out): from its pose in ``world`` to the cue's
    target point, lifted in the middle of the motion; with ``cue.params["ghost_steps"]``
    ([(source role, target role)], several objects that move) one such path per object."""
    if cue.params.get("ghost_steps"):  # several objects move (a LIBERO task of two steps)
        return [pose for src, tgt in cue.params["ghost_steps"]
                for pose in _straight_path(cue, cue.anchors[src], cue.anchors[tgt], world, k)]
    src_ref, tgt_ref = cue.anchors.get("source"), cue.anchors.get("target")
    if src_ref is None or tgt_ref is None:
        return []
    if cue.params.get("plan_path"):
        _, _, obj = resolve_anchor(src_ref, world)
        return [(np.asarray(pos, float), replace(obj, quat=np.asarray(quat, float)))
                for pos, quat in cue.params["plan_path"]]
    return _straight_path(cue, src_ref, tgt_ref, world, k)


def _straight_path(cue: CueSpec, src_ref, tgt_ref, world, k: int) -> list:
    """K poses from the source's pose in ``world`` to the target point, lifted in between."""
    start, _, obj = resolve_anchor(src_ref, world)
    goal, _, _ = resolve_anchor(tgt_ref, world)
    goal = goal.copy()
    relation = cue.params.get("relation")
    action = cue.params.get("action")
    if action != "pick" and relation not in ("on", "above", "in"):
        goal[2] = start[2]  # placed beside the target: rests on the table like it started
    out = []
    for t in np.linspace(1.0 / k, 1.0, k):
        p = (1 - t) * start + t * goal
        if action != "pick":
            p[2] += GHOST_LIFT_M * np.sin(np.pi * t)
        out.append((p, obj))
    return out


def projected_ghost_layers(image: np.ndarray, path, camera) -> list[GhostLayer]:
    """One layer per future pose: the object's box silhouette, shaded in its colour (poses
    behind the camera or off-image give no layer)."""
    layers = []
    fills: dict[tuple, np.ndarray] = {}
    for pos, obj in path:
        if obj is None:
            continue
        proj = project_points(camera, box_corners(pos, obj.size, obj.quat))
        if not np.all(proj.in_front):
            continue
        hull = np.round(cv2.convexHull(proj.uv.astype(np.float32)).reshape(-1, 2)).astype(np.int32)
        mask = np.zeros(image.shape[:2], np.float32)
        cv2.fillConvexPoly(mask, hull, 1.0, cv2.LINE_AA)
        if not mask.any():
            continue
        rgb = tuple(int(v) for v in np.clip(np.asarray(obj.rgba[:3], float) * 255.0, 0, 255))
        if rgb not in fills:  # shaded so the ghost reads as a solid: darker towards the bottom
            shade = np.linspace(1.0, 0.75, image.shape[0], dtype=np.float32)[:, None, None]
            fill = (shade * np.asarray(rgb, np.float32)).astype(np.uint8)
            fills[rgb] = np.broadcast_to(fill, image.shape)
        layers.append(GhostLayer(fills[rgb], mask))
    return layers


# ----------------------------------------------------------------------------- conditioning

class CueConditioner:
    """Per-episode state of conditioning observations with one cue (see the module docstring).

    ``conditioner(images, world, joints, focal)`` -> cue-conditioned images, keyed like
    ``images`` (camera name -> RGB uint8). ``world`` (WorldState) is needed when
    ``needs_world``; ``joints`` (contract-order joint vector) when a camera rides on an arm
    (``needs_joints``); ``focal`` (camera -> focal length in px, or None) sets the intrinsics
    (``camera_info``), else the camera spec's field of view is used.
    """

    def __init__(self, cue: CueSpec, ghost_renderer=None, mirrored: bool = False):
        self.cue = cue
        self.mirrored = bool(mirrored)  # mirrored views (contract.Embodiment.mirrored_images)
        self.inserter = CueInserter(cue)
        self.ghost: list | None = None  # F3: fixed at the first call with a world state
        # F3: renders the future states (sim_nodes.mujoco.ghosts.MirrorGhostRenderer); None: projected
        # box silhouettes (no simulator to render from, e.g. the real robot)
        self.ghost_renderer = ghost_renderer

    @property
    def needs_world(self) -> bool:
        """Scene-anchored cues and ghosts resolve their anchors in the world state."""
        return bool(self.cue.anchors) and self.cue.mode in (SCENE_ANCHORED, STATE_OVERLAY)

    def needs_joints(self, cameras, world=None) -> bool:
        """A camera rides on an arm and the world state does not carry its pose."""
        posed = getattr(world, "cameras", None) or {}
        return self.needs_world and any(needs_joints(c) for c in cameras if c not in posed)

    def camera_models(self, images: Mapping[str, np.ndarray], joints=None,
                      focal: Mapping[str, float | None] | None = None, world=None) -> dict:
        """Each camera's model: its pose from the world state when the sim published it
        (``WorldState.cameras``, e.g. LIBERO), else from the camera spec and the joints."""
        focal = focal or {}
        posed = getattr(world, "cameras", None) or {}
        return {c: camera_model(c, joints if needs_joints(c) and c not in posed else None,
                                img.shape[1], img.shape[0], focal.get(c), pose=posed.get(c),
                                mirrored=self.mirrored)
                for c, img in images.items()}

    def __call__(self, images: Mapping[str, np.ndarray], world=None, joints=None,
                 focal: Mapping[str, float | None] | None = None) -> dict[str, np.ndarray]:
        cameras = None
        if self.needs_world:
            if world is None:
                raise ValueError(f"{self.cue.code} {self.cue.variant} is anchored in the scene: "
                                 "pass the world state")
            cameras = self.camera_models(images, joints, focal, world)
        else:
            world = None
        layers = None
        if self.cue.mode == STATE_OVERLAY:
            if self.ghost is None and world is not None:
                self.ghost = ghost_path(self.cue, world)
            if self.ghost_renderer is not None and world is not None:
                layers = self.ghost_renderer(world, joints, self.ghost or [], images)
            else:
                layers = {c: projected_ghost_layers(images[c], self.ghost or [], cameras[c])
                          if cameras else [] for c in images}
        return self.inserter(images, world, cameras, layers)


# ----------------------------------------------------------------------------- episodes

def shows_cue(cue_info: Mapping | None) -> bool:
    """A results row's ``cue`` field describes an episode that showed a cue."""
    return bool(cue_info) and bool(cue_info.get("family")) and bool(cue_info.get("cue_task"))


def episode_cue(cue_info: Mapping | None, seed: int, suite=None) -> CueSpec | None:
    """The CueSpec the evaluator showed in one episode (None when it showed none).

    ``cue_info`` is the results row's ``cue`` (``TrialCue.row_fields`` and scores), ``seed``
    the row's (the trial's) seed. Same call as the evaluator's ``CueRun.prepare``.
    """
    if not shows_cue(cue_info):
        return None
    from vla_bridge.benchmarks.robofollow.tasks import load_suite

    from vla_bridge.benchmarks.vifo.protocols import build_cue, resolve_family_variant
    suite = suite or load_suite()
    fam, variant = resolve_family_variant(str(cue_info["family"]), str(cue_info.get("variant") or ""))
    return build_cue(suite.get(str(cue_info["cue_task"])), fam, variant, int(seed))


def cue_placement(cue_info: Mapping | None) -> str | None:
    """Where the episode's cue was: "overlay" (drawn into the policy's images; rows written
    before placements existed), "scene" (a card in the sim) or None (no cue shown)."""
    if not shows_cue(cue_info):
        return None
    return str(cue_info.get("placement") or "overlay")


def episode_scene_objects(cue_info: Mapping | None, seed: int, out_dir, suite=None) -> list:
    """The scene cue card(s) the sim node built for one episode (``[]`` unless its cue was
    placed in the scene); textures are written to ``out_dir``, which must outlive the reset."""
    if cue_placement(cue_info) != "scene":
        return []
    from vla_bridge.benchmarks.robofollow.tasks import load_suite

    from vla_bridge.benchmarks.vifo.scene_cards import episode_scene_cues
    suite = suite or load_suite()
    return episode_scene_cues(suite.get(str(cue_info["cue_task"])), str(cue_info["family"]),
                              str(cue_info.get("variant") or ""), int(seed), out_dir=out_dir)


def cue_label(cue_info: Mapping | None) -> str:
    """Short ASCII description, e.g. "authorized | F8 Code / qr | cue task L0_..." ('' if none)."""
    if not shows_cue(cue_info):
        return ""
    from vla_bridge.benchmarks.vifo.protocols import FAMILY_LABELS
    fam = str(cue_info["family"])
    return (f"{cue_info.get('protocol') or '?'} | {FAMILY_LABELS.get(fam, fam)} / "
            f"{cue_info.get('variant') or 'default'} | cue task {cue_info['cue_task']}")
