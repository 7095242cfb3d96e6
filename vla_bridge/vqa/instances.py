"""What Part I-A asks about: cue instances (task x cue x seed) and their cued renders.

``parse_cues`` picks the (family, variant) pairs, ``plan_instances`` crosses them with tasks
and seeds, and ``cued_image`` renders one instance: the MuJoCo frame of the task's layout with
the cue built exactly as the closed-loop protocols build it, drawn in (or, under placement
``scene``, standing in the scene as a card). Pure logic, no rclpy; the simulator is passed in.
"""
from __future__ import annotations

import tempfile
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from vla_bridge.benchmarks.robofollow.tasks import TaskSpec, episode_seed

from vla_bridge.benchmarks.vifo.compatibility import missing
from vla_bridge.benchmarks.vifo.families import FAMILIES, STATE_OVERLAY, family
from vla_bridge.benchmarks.vifo.insertion import insert
from vla_bridge.benchmarks.vifo.protocols import DEFAULT_VARIANTS, UNSUPPORTED_IN_GRAPH, build_cue, resolve_family_variant
from vla_bridge.benchmarks.vifo.scene_cards import episode_scene_cues
from vla_bridge.benchmarks.vifo.replay import GHOST_POSES, ghost_path
from vla_bridge.sim_nodes.mujoco.ghosts import render_ghost_layers
from vla_bridge.evaluation.cues.plan_rollout import PlanRollouts

__all__ = ["parse_cues", "VqaInstance", "plan_instances", "ghost_poses", "sim_ghost_layers",
           "VqaScene", "cued_image", "scene_card_image"]


def parse_cues(families: str | Sequence[str] = "", variant: str = "") -> list[tuple[str, str]]:
    """(family code, variant) pairs. ``families``: comma-separated codes or names (default: all
    eight). ``variant``: "" (each family's default), "all" (every variant the runner can
    draw), a name (valid for every chosen family) or "F2=curved_path,F6=hazard"."""
    names = families.split(",") if isinstance(families, str) else list(families)
    codes = (list(dict.fromkeys(family(n.strip()).code for n in names if n.strip()))
             or list(FAMILIES))
    variant = (variant or "").strip()
    if variant == "all":
        return [(c, v) for c in codes for v in FAMILIES[c].variants
                if (c, v) not in UNSUPPORTED_IN_GRAPH]
    if "=" in variant:
        chosen = {family(k.strip()).code: v.strip()
                  for k, v in (p.split("=", 1) for p in variant.split(",") if p.strip())}
        return [resolve_family_variant(c, chosen.get(c, "")) for c in codes]
    return [resolve_family_variant(c, variant) for c in codes]


@dataclass(frozen=True)
class VqaInstance:
    """One cue instance: a task shown with one cue (family, variant) at one seed."""
    task: TaskSpec
    family: str
    variant: str
    seed: int

    def key(self, camera: str, placement: str = "overlay") -> str:
        base = f"{self.task.id}|{self.family}|{self.variant}|{self.seed}|{camera}"
        return base if placement == "overlay" else f"{base}|{placement}"

    @property
    def question_seed(self) -> int:
        """Seed of the option order: differs per cue, so the correct option's position does
        not repeat across the families of one episode (a position bias stays a bias)."""
        return zlib.crc32(f"{self.seed}|{self.family}|{self.variant}".encode())

    @property
    def cue_free_detection(self) -> bool:
        """Whether the detection question shows the render without the cue (answer: "no
        cue"). Every other cue of a (task, seed), counting families F1..F8 and then each
        family's variants from its default one, starting from a coin flip per (task, seed):
        half of the instances, exactly 4 of the 8 families at their default variants."""
        fam = family(self.family)
        variants = list(fam.variants)
        default = DEFAULT_VARIANTS.get(fam.code, variants[0])
        step = (variants.index(self.variant) - variants.index(default)) % len(variants)
        flip = zlib.crc32(f"{self.task.id}|{self.seed}".encode())
        return (int(fam.code[1:]) + step + flip) % 2 == 1


def plan_instances(tasks: Iterable[TaskSpec], cues: Sequence[tuple[str, str]],
                   rounds: int = 1, seeds: Sequence[int] | None = None,
                   base_seed: int = 42) -> list[VqaInstance]:
    """Task-major instances; seeds are explicit or the benchmark's ``episode_seed`` per round
    (so instance s matches episode s of the closed-loop protocols). Only compatible pairs:
    a variant that cannot show what the task needs (``vifo.compatibility``) gives no
    instance of it, as in the paper."""
    out = []
    for task in tasks:
        task_seeds = list(seeds) if seeds else [episode_seed(task.id, r, base_seed)
                                                for r in range(1, rounds + 1)]
        out += [VqaInstance(task, f, v, s) for s in task_seeds for f, v in cues
                if not missing(task, f, v)]
    return out


# ----------------------------------------------------------------------------- scene + cue

def ghost_poses(cue, world, k: int = GHOST_POSES) -> list[tuple[np.ndarray, np.ndarray]]:
    """K future (position, quat) of the cue's source object (``replay.ghost_path``, the path
    the graph's overlay draws)."""
    return [(pos, np.asarray(obj.quat, float)) for pos, obj in ghost_path(cue, world, k)]


def sim_ghost_layers(sim, cue, world, camera: str) -> list:
    """F3 simulator-state overlay: the source object re-rendered at its future poses
    (``sim_nodes.mujoco.ghosts.render_ghost_layers``). [] when the source is not a free body (nothing
    moves, so there is no trajectory) or the sim is not MuJoCo."""
    src = cue.anchors.get("source")
    if getattr(sim, "model", None) is None or src is None or src.entity is None:
        return []
    return render_ghost_layers(sim, src.entity, ghost_poses(cue, world), camera)


class VqaScene:
    """Resets the sim only when (scene, layout, seed) changes; the frame is reused by every
    cue of that reset."""

    def __init__(self, sim, camera: str, placement: str = "overlay"):
        self.sim, self.camera, self._key, self.frame = sim, camera, None, None
        self.placement = placement
        self.rollouts = PlanRollouts()  # F3 / F4 goal_image: one rollout per episode, reused
        # scene placement: the card textures (rewritten per instance)
        self.textures = tempfile.TemporaryDirectory(prefix="vla_bridge_vqa_") \
            if placement == "scene" else None

    @property
    def model(self):
        """The CameraModel of the last frame (position words in the options come from it)."""
        return self.frame[2]

    def shoot(self, inst: "VqaInstance"):
        """(raw, cued, world, cue) of one instance (``cued_image``)."""
        return cued_image(self, inst)

    def question_args(self, inst: "VqaInstance") -> dict:
        """``vqa_questions``' keyword arguments besides the cue and world: the camera model."""
        return {"camera": self.model}

    def close(self) -> None:
        self.rollouts.close()
        if self.textures is not None:
            self.textures.cleanup()

    def get(self, task: TaskSpec, seed: int):
        key = (task.scene, task.layout, seed)
        if key != self._key:
            self.sim.reset(task.scene, task.layout, seed)
            world = self.sim.world_state()
            self.frame = (world, self.sim.render(self.camera), self.sim.camera_model(self.camera))
            self._key = key
        return self.frame


def cued_image(scene: VqaScene, inst: VqaInstance):
    """(raw, cued, world, cue) for one instance; ValueError when the cue draws nothing.

    The cue is built exactly as the evaluator builds it for the closed-loop protocols
    (grounded against the layout's spawn positions for the seed: the cue specification is
    held fixed across protocols); its anchors name objects, so the live world places it."""
    world, raw, cam = scene.get(inst.task, inst.seed)
    from vla_bridge.evaluation.cues.run import plan_params  # F3 / F4 goal_image: the plan
    extra = plan_params(inst.task, inst.seed, inst.family, inst.variant, plan_ghosts=True,
                        rollouts=scene.rollouts)
    cue = build_cue(inst.task, inst.family, inst.variant, inst.seed, **extra)
    if scene.placement == "scene":
        return scene_card_image(scene, inst, raw, cue)
    layers = (sim_ghost_layers(scene.sim, cue, world, scene.camera)
              if cue.mode == STATE_OVERLAY else None)
    if layers == []:
        raise ValueError(f"{inst.family} {inst.variant}: no ghost trajectory (the source is not "
                         "a movable object, or the sim cannot re-render it)")
    cued = insert(raw, cue, world, cam, layers)
    if np.array_equal(cued, raw):
        raise ValueError(f"{inst.family} {inst.variant} draws nothing in {scene.camera} "
                         "(anchors off-image or hidden)")
    return raw, cued, world, cue


def scene_card_image(scene: VqaScene, inst: VqaInstance, raw: np.ndarray, cue):
    """(raw, image, world, cue) with the cue standing in the scene as the sim node places it
    under cue_placement scene (``scene_cards.episode_scene_cues``), rendered by the sim."""
    cards = episode_scene_cues(inst.task, inst.family, inst.variant, inst.seed,
                               out_dir=scene.textures.name)
    scene.sim.reset(inst.task.scene, inst.task.layout, inst.seed, cards)
    image = scene.sim.render(scene.camera)
    if np.array_equal(image, raw):
        raise ValueError(f"{inst.family} {inst.variant}: the card is not visible in {scene.camera}")
    return raw, image, scene.sim.world_state(), cue
