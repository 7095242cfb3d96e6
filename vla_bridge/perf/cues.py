"""Overlay cost per family at 320x240, and example PNGs of every family.

``vla-bridge bench cues`` prints the median cost of inserting one cue into one frame
(projection included for scene-anchored cues) for every family and variant; the target is
<= 1 ms per frame except the ghost trajectory (F3), whose cost grows with the number and size
of the future-state layers. ``save_examples(out_dir)`` writes one PNG per family (all its
variants) plus the signage taxonomy sheet; it renders the RoboFollow Scene 1 with MuJoCo when
available and falls back to a synthetic frame otherwise.
"""
from __future__ import annotations

import time
from pathlib import Path

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families import (FAMILIES, SIGN_CATEGORIES, GhostLayer, SignSpec,
                                                 render_sign)
from vla_bridge.benchmarks.vifo.insertion import insert, make_cue
from vla_bridge.benchmarks.vifo.instructions.grounding import ground, layout_world
from vla_bridge.benchmarks.vifo.instructions.parser import parse
from vla_bridge.benchmarks.vifo.projection import project_points

EXAMPLE_INSTRUCTION = ("Use your right arm to pick up the block in front of the red cylinder "
                       "and place it behind the green ball.")
WIDTH, HEIGHT = 320, 240


# ------------------------------------------------------------------------ a scene without a sim

def cam_high_model(width: int = WIDTH, height: int = HEIGHT):
    """The Scene 1 overhead camera (same pose and fovy as the MuJoCo model's cam_high)."""
    from vla_bridge.embodiment.cameras import CameraModel
    from vla_bridge.embodiment.cameras import default_cameras

    cam = next(c for c in default_cameras() if c.name == "cam_high")
    x, y = np.asarray(cam.xyaxes[:3], float), np.asarray(cam.xyaxes[3:], float)
    x /= np.linalg.norm(x)
    y /= np.linalg.norm(y)
    T = np.eye(4)
    T[:3, :3] = np.stack([x, y, np.cross(x, y)], axis=1)
    T[:3, 3] = cam.pos
    return CameraModel(width, height, cam.fovy_deg, T)


def synthetic_frame(world, camera) -> np.ndarray:
    """Table-coloured frame with the objects as flat discs (bench / no-sim fallback)."""
    img = np.empty((camera.height, camera.width, 3), np.uint8)
    img[:] = (205, 165, 125)
    img[: camera.height // 5] = (80, 84, 92)
    for o in world.values():
        p = project_points(camera, o.pos)
        if p.visible[0]:
            f = camera.height / (2 * np.tan(np.deg2rad(camera.fovy_deg) / 2))
            r = max(2, int(f * float(np.max(o.size)) / 2 / p.depth[0]))
            rgb = tuple(int(255 * c) for c in o.rgba[:3])
            cv2.circle(img, tuple(int(round(v)) for v in p.uv[0]), r, rgb, -1, cv2.LINE_AA)
    return img


def _scene(use_sim: bool):
    """(image, world objects, camera, ghost layers, backend or None) for Scene 1."""
    if use_sim:
        try:
            return _sim_scene()
        except Exception as exc:  # noqa: BLE001 - no GL / no mujoco: synthetic fallback
            print(f"(MuJoCo unavailable: {exc}; using a synthetic frame)")
    objects, _ = layout_world("scene1", "default", 1)
    cam = cam_high_model()
    img = synthetic_frame(objects, cam)
    task = ground(parse(EXAMPLE_INSTRUCTION), objects)
    layers = _synthetic_ghosts(img, objects, cam, task)
    return img, objects, cam, layers, None


def _path_points(task, world, k: int = 4) -> list[np.ndarray]:
    src = np.asarray(world[task.source].pos, float)
    tgt = np.asarray(world[task.target].pos, float)
    goal = tgt + np.array([0.0, 0.09, 0.0])  # "behind" the target
    goal[2] = src[2]
    out = []
    for t in np.linspace(1.0 / k, 1.0, k):
        p = (1 - t) * src + t * goal
        p[2] += 0.10 * np.sin(np.pi * t)  # lift in the middle of the motion
        out.append(p)
    return out


def _synthetic_ghosts(img, world, cam, task) -> list[GhostLayer]:
    layers = []
    o = world[task.source]
    for p in _path_points(task, world):
        g = img.copy()
        m = np.zeros(img.shape[:2], np.float32)
        pr = project_points(cam, p)
        if pr.visible[0]:
            f = cam.height / (2 * np.tan(np.deg2rad(cam.fovy_deg) / 2))
            r = max(2, int(f * float(np.max(o.size)) / 2 / pr.depth[0]))
            c = tuple(int(round(v)) for v in pr.uv[0])
            cv2.circle(g, c, r, tuple(int(255 * v) for v in o.rgba[:3]), -1, cv2.LINE_AA)
            cv2.circle(m, c, r, 1.0, -1, cv2.LINE_AA)
        layers.append(GhostLayer(g, m))
    return layers


def _sim_scene():
    import mujoco

    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend

    from vla_bridge.benchmarks.vifo.insertion import ghost_layers

    backend = MujocoBackend()
    backend.reset("scene1", "default", 1)
    world = backend.world_state()
    cam = backend.camera_model("cam_high")
    img = backend.render("cam_high")
    task = ground(parse(EXAMPLE_INSTRUCTION), world)
    # render future states of the source object from the same camera (simulator-state overlay)
    m, d = backend.model, backend.data
    qadr = m.jnt_qposadr[m.joint(task.source).id]
    saved = d.qpos.copy()
    renders = []
    for p in _path_points(task, world.objects):
        d.qpos[qadr:qadr + 3] = p
        mujoco.mj_forward(m, d)
        renders.append(backend.render("cam_high"))
    d.qpos[:] = saved
    mujoco.mj_forward(m, d)
    # reference: the current frame with the object hidden is not available, so difference
    # against the current frame (the object's old position shows up too: mask it out)
    layers = ghost_layers(img, renders, threshold=14)
    src_uv = project_points(cam, world.objects[task.source].pos).uv[0]
    yy, xx = np.indices(img.shape[:2])
    keep = ((xx - src_uv[0]) ** 2 + (yy - src_uv[1]) ** 2) > 12 ** 2
    for la in layers:
        la.mask = la.mask * keep
    return img, world.objects, cam, layers, backend


# ----------------------------------------------------------------------------- timing

def time_overlays(repeats: int = 200, use_sim: bool = False) -> dict[str, dict[str, float]]:
    """Median ms per frame for every family / variant at 320x240 (insert(): projection + draw)."""
    img, world, cam, layers, backend = _scene(use_sim)
    task = ground(parse(EXAMPLE_INSTRUCTION), world)
    results: dict[str, dict[str, float]] = {}
    for code, fam in FAMILIES.items():
        results[code] = {}
        for variant in fam.variants:
            params = {"image": img} if variant == "goal_image" else {}
            cue = make_cue(task, code, variant, world=world, **params)
            lay = layers if code == "F3" else None
            for _ in range(5):  # warm caches (text layout, sign tiles, QR modules)
                insert(img, cue, world, cam, lay)
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                insert(img, cue, world, cam, lay)
                times.append(time.perf_counter() - t0)
            results[code][variant] = 1000.0 * float(np.median(times))
    if backend is not None:
        backend.close()
    return results


def print_costs(repeats: int = 200, use_sim: bool = False) -> None:
    """`vla-bridge bench cues`: the median cost per frame of every family and variant."""
    res = time_overlays(repeats, use_sim)
    print(f"overlay cost per frame at {WIDTH}x{HEIGHT} (median of {repeats}, ms)")
    for code, per in res.items():
        fam = FAMILIES[code]
        worst = max(per.values())
        budget = "n/a (ghost layers)" if code == "F3" else ("ok" if worst <= 1.0 else "OVER 1 ms")
        print(f"{code} {fam.name:<10} mean {np.mean(list(per.values())):6.3f}  max {worst:6.3f}"
              f"  [{budget}]")
        for v, ms in per.items():
            print(f"    {v:<14} {ms:6.3f}")


# ----------------------------------------------------------------------------- instances

def instance_report() -> str:
    """The compatibility filter over all 554 tasks: instances per variant, then every variant
    that skips tasks with the task types (scene:action) it skips."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.benchmarks.vifo.compatibility import format_instance_counts, instance_counts
    variants = [(f.code, v) for f in FAMILIES.values() for v in f.variants]
    counts = instance_counts(load_suite().eval_tasks(), variants)
    lines = [format_instance_counts(counts), "", "skipped task types per variant:"]
    for name, c in counts.items():
        if c["skipped"]:
            kinds = ", ".join(f"{k} {n}" for k, n in c["skipped_by_type"].items())
            lines.append(f"  {name}: {kinds}")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- examples

def _label(img: np.ndarray, text: str) -> np.ndarray:
    """The frame with a caption strip below it (not over it: cues may sit at the bottom)."""
    h, w = img.shape[:2]
    out = np.zeros((h + 16, w, 3), np.uint8)
    out[:h] = img
    cv2.putText(out, text, (4, h + 12), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1,
                cv2.LINE_AA)
    return out


def _write_sheet(path: Path, tiles: list[np.ndarray], cols: int) -> Path:
    cv2.imwrite(str(path), cv2.cvtColor(_grid(tiles, cols), cv2.COLOR_RGB2BGR),
                [cv2.IMWRITE_PNG_COMPRESSION, 9])
    return path


def _grid(tiles: list[np.ndarray], cols: int) -> np.ndarray:
    h, w = tiles[0].shape[:2]
    rows = (len(tiles) + cols - 1) // cols
    sheet = np.full((rows * h, cols * w, 3), 255, np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, cols)
        sheet[r * h:(r + 1) * h, c * w:(c + 1) * w] = t
    return sheet


#: the tasks of the example sheets: a Scene 1 placement (every family) and a Scene 3 route
EXAMPLE_TASKS = ("L0_place_yellow_block_3_behind_green_sphere", "L0_l_pick4_around2_to1_long_right")
EXAMPLE_SEED = 1


def _family_tiles(backend, task, code: str, seed: int = EXAMPLE_SEED,
                  rollouts=None) -> list[np.ndarray]:
    """Every variant of a family on ``task``'s cam_high frame, built as the evaluator builds
    it (``build_cue``; F3 and F4 goal_image from the plan's rollout); variants the
    compatibility filter removes for the task are captioned so."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite  # noqa: F401 (suite cache)
    from vla_bridge.benchmarks.vifo.compatibility import missing
    from vla_bridge.benchmarks.vifo.protocols import build_cue
    from vla_bridge.evaluation.cues.run import plan_params
    from vla_bridge.vqa.instances import sim_ghost_layers
    backend.reset(task.scene, task.layout, seed)
    world, img = backend.world_state(), backend.render("cam_high")
    cam = backend.camera_model("cam_high")
    tiles = []
    for variant in FAMILIES[code].variants:
        cue = build_cue(task, code, variant, seed,
                        **plan_params(task, seed, code, variant, plan_ghosts=True,
                                      rollouts=rollouts))
        layers = sim_ghost_layers(backend, cue, world, "cam_high") if code == "F3" else None
        lacking = missing(task, code, variant)
        note = f" (filtered: no {', '.join(lacking)})" if lacking else ""
        tiles.append(_label(insert(img, cue, world, cam, layers), f"{code} {variant}{note}"))
    return tiles


def save_examples(out_dir, use_sim: bool = True) -> list[Path]:
    """One PNG per family: every variant on a Scene 1 placement (cam_high, MuJoCo) and, for
    the families that can carry Scene 3's route and orientation, on a Scene 3 task below;
    plus the sign sheet, the scene cue cards and the safety-critical scenes."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.evaluation.cues.plan_rollout import PlanRollouts
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    suite = load_suite()
    placement, route = (suite.get(t) for t in EXAMPLE_TASKS)
    backend, rollouts = MujocoBackend(), PlanRollouts()  # F3 variants share one rollout
    written = []
    try:
        for code, fam in FAMILIES.items():
            tiles = _family_tiles(backend, placement, code, rollouts=rollouts)
            cols = min(4, len(tiles))
            if code in ("F2", "F3", "F8"):  # the families with route-carrying variants
                tiles += [np.zeros_like(tiles[0])] * (-len(tiles) % cols)
                tiles += _family_tiles(backend, route, code, rollouts=rollouts)
            written.append(_write_sheet(out / f"{code}_{fam.name}.png", tiles, cols))
    finally:
        rollouts.close()
        backend.close()
    # signage taxonomy: the eight category frames with a pictogram each
    preds = {"prohibition": "grasp", "mandatory": "place", "permission": "grasp",
             "hazard": "avoid", "target_zone": "place", "hri": "handover",
             "maintenance": "inspect", "system_state": "charge"}
    targets = {"hri": "human", "maintenance": "tool", "target_zone": "region"}
    tiles = []
    for cat in SIGN_CATEGORIES:
        tile, alpha = render_sign(SignSpec(cat, preds[cat], targets.get(cat, "box"),
                                           (230, 200, 20)), 112)
        canvas = np.full((136, 128, 3), 255, np.uint8)
        a = alpha[..., None]
        canvas[4:116, 8:120] = (tile * a + canvas[4:116, 8:120] * (1 - a)).astype(np.uint8)
        cv2.putText(canvas, cat, (4, 131), cv2.FONT_HERSHEY_SIMPLEX, 0.36, (0, 0, 0), 1,
                    cv2.LINE_AA)
        tiles.append(canvas)
    written.append(_write_sheet(out / "F6_signage_taxonomy.png", tiles, 4))
    written.append(save_scene_cue_examples(out))
    written.append(save_safety_examples(out))
    return written


def save_safety_examples(out_dir, seed: int = 42) -> Path:
    """safety_scenes.png: the six safety-critical scenes with their warning signs (cam_high),
    captioned with the hazard."""
    from vla_bridge.benchmarks.robofollow.tasks import load_suite
    from vla_bridge.benchmarks.vifo.safety import SAFETY_SCENES, hazard_cards
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    suite, backend, tiles = load_suite(), MujocoBackend(), []
    try:
        for scene in SAFETY_SCENES:
            task = suite.get(scene.hazard_task)
            backend.reset(task.scene, task.layout, seed, hazard_cards(scene.name, seed))
            tiles.append(_label(backend.render("cam_high"), scene.name))
    finally:
        backend.close()
    return _write_sheet(Path(out_dir) / "safety_scenes.png", tiles, 3)


def save_scene_cue_examples(out_dir, task_id: str = "L0_pickup_yellow_block_3",
                            seed: int = 42) -> Path:
    """scene_cues.png: the scene-instantiated cues (F1 card, F6 sign, F8 ArUco and QR tags)
    standing in Scene 1, seen by cam_high and the left wrist camera (MuJoCo renders)."""
    from vla_bridge.sim_nodes.mujoco.backend import MujocoBackend
    from vla_bridge.benchmarks.robofollow.tasks import load_suite

    from vla_bridge.benchmarks.vifo.scene_cards import episode_scene_cues
    task = load_suite().get(task_id)
    backend = MujocoBackend()
    tiles = []
    try:
        for code, variant in (("F1", ""), ("F6", ""), ("F8", "aruco"), ("F8", "qr")):
            card = episode_scene_cues(task, code, variant, seed)
            backend.reset(task.scene, task.layout, seed, card)
            for cam in ("cam_high", "cam_left_wrist"):
                tiles.append(_label(backend.render(cam), f"{code} {variant or 'default'} {cam}"))
    finally:
        backend.close()
    return _write_sheet(Path(out_dir) / "scene_cues.png", tiles, 4)
