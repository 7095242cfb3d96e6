"""Scene-instantiated cues (LIBERO-VIFO paper section 4.2): a cue printed on a physical object.

``scene_cue_objects`` turns a cue into textured thin boxes (text card F1, sign F6, ArUco / QR
tag F8) for ``embodiment.mjcf.build_mjcf(cue_objects=...)``; ``episode_scene_cues``
places the episode's cue as a light free card standing on the table's most open spot (the sim
node builds it from the ``begin`` message when ``cue_placement`` is ``scene``). Pure logic
(no rclpy, no MuJoCo); ``protocols`` re-exports every public name.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from vla_bridge.benchmarks.robofollow.tasks import TaskSpec
from vla_bridge.benchmarks.vifo.families import SignSpec, marker_id_for, qr_payload, render_sign
from vla_bridge.benchmarks.vifo.instructions.grounding import layout_world
from vla_bridge.benchmarks.vifo.protocols import build_cue, resolve_family_variant

__all__ = [
    "SceneCueObject", "scene_cue_texture", "scene_cue_objects", "card_quat_facing",
    "CUE_PLACEMENTS", "SCENE_CUE_FAMILIES", "SCENE_CUE_WIDTH_M", "SCENE_CUE_THICKNESS_M",
    "SCENE_CUE_TENT_DEG", "check_placement", "free_table_spot", "episode_scene_cues",
    "yaw_quat_facing",
]


# ----------------------------------------------------------------------------- scene objects (4.2)

@dataclass(frozen=True)
class SceneCueObject:
    """A textured thin box for ``build_mjcf(cue_objects=...)``.

    ``size`` is the full extent (width along local x, height along local y, thickness along
    local z); the texture covers the +z face with its top row towards local +y. ``quat``
    (w, x, y, z) orients the card (``card_quat_facing``); ``free`` makes it a light free body
    that the arms can push, otherwise it is fixed in the world. ``tent_deg`` > 0 folds it
    into a standing table tent (two such panels leaning that far from vertical, the printed
    one facing the body's -y; ``quat`` is then the yaw).
    """
    name: str
    texture: str  # PNG path
    pos: tuple[float, float, float]
    size: tuple[float, float, float]
    quat: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)
    free: bool = False
    mass: float = 0.02
    tent_deg: float = 0.0  # > 0: a folded table tent; pos = its footprint centre on the table


def card_quat_facing(pos, eye, up=(0.0, 0.0, 1.0)) -> tuple[float, float, float, float]:
    """Quaternion that turns a card at ``pos`` so its face (+z) looks at ``eye``, text upright."""
    from vla_bridge.embodiment.kinematics import mat_to_quat
    z = np.asarray(eye, float) - np.asarray(pos, float)
    z /= np.linalg.norm(z)
    x = np.cross(-z, np.asarray(up, float))
    if np.linalg.norm(x) < 1e-9:  # looking straight down: keep the world's x
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return tuple(float(v) for v in mat_to_quat(np.stack([x, y, z], axis=1)))


def scene_cue_texture(cue, kind: str | None = None, px: int = 256) -> np.ndarray:
    """RGB texture of a scene-instantiated cue: "card" (F1 text), "sign" (F6), "aruco" / "qr"
    (F8). ``kind`` defaults from the cue's family (F8: its variant)."""
    kind = kind or {"F1": "card", "F6": "sign"}.get(cue.code) or (
        "qr" if cue.variant == "qr" else "aruco")
    if kind == "sign":
        sign = cue.params.get("sign")
        if not isinstance(sign, SignSpec) and cue.params.get("signs"):  # the task's own sign
            sign = cue.params["signs"][0][1]
        if not isinstance(sign, SignSpec):
            from vla_bridge.benchmarks.vifo.families import sign_for_cue
            sign = sign_for_cue(cue)
        rgb, alpha = render_sign(sign, px)
        out = np.full((px, px, 3), 255, np.uint8)
        a = (np.asarray(alpha, np.float32) / (255.0 if np.max(alpha) > 1 else 1.0))[..., None]
        return (out * (1 - a) + np.asarray(rgb, np.float32) * a).astype(np.uint8)
    if kind == "card":
        from vla_bridge.benchmarks.vifo.families.base import task_text
        return _text_card(task_text(cue), px)
    if kind in ("aruco", "qr"):
        from vla_bridge.benchmarks.vifo.families.f8_code import code_tile
        payload = qr_payload(cue) if kind == "qr" else ""
        return np.array(code_tile(kind, payload, marker_id_for(cue), px))
    raise ValueError(f"unknown scene cue kind {kind!r}; valid: card, sign, aruco, qr")


def _text_card(text: str, px: int) -> np.ndarray:
    """White card, dark border, the text wrapped to fill it (a written note)."""
    import textwrap
    h = px // 2 if px >= 128 else px
    img = np.full((h, px, 3), 250, np.uint8)
    cv2.rectangle(img, (2, 2), (px - 3, h - 3), (30, 30, 30), max(2, px // 96))
    best = None
    for width in range(12, 60, 2):
        lines = textwrap.wrap(text, width)
        scale = min((px - 16) / max(cv2.getTextSize(ln, cv2.FONT_HERSHEY_SIMPLEX, 1.0, 2)[0][0]
                                    for ln in lines),
                    (h - 16) / (len(lines) * 34.0))
        if best is None or scale > best[0]:
            best = (scale, lines)
    scale, lines = best
    th = max(1, int(round(2 * scale)))
    y = 8 + int(26 * scale)
    for ln in lines:
        cv2.putText(img, ln, (8, y), cv2.FONT_HERSHEY_SIMPLEX, scale, (20, 20, 20), th, cv2.LINE_AA)
        y += int(34 * scale)
    return img


def scene_cue_objects(cue, pos, eye=None, width_m: float = 0.10, thickness_m: float = 0.004,
                      kind: str | None = None, out_dir: str | Path | None = None,
                      name: str = "cue_card", free: bool = False,
                      quat=None, tent_deg: float = 0.0) -> list[SceneCueObject]:
    """One textured card showing ``cue`` at ``pos`` (its centre), facing ``eye`` when given
    (else lying flat, text towards +y); the PNG goes to ``out_dir`` (default: a new temp dir,
    which must outlive the model compilation)."""
    tex = scene_cue_texture(cue, kind)
    out = Path(out_dir or tempfile.mkdtemp(prefix="vla_bridge_cue_"))
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    if not cv2.imwrite(str(path), cv2.cvtColor(tex, cv2.COLOR_RGB2BGR)):
        raise OSError(f"could not write {path}")
    h_m = width_m * tex.shape[0] / tex.shape[1]
    if quat is None:
        quat = card_quat_facing(pos, eye) if eye is not None else (1.0, 0.0, 0.0, 0.0)
    return [SceneCueObject(name, str(path), tuple(float(v) for v in pos),
                           (float(width_m), float(h_m), float(thickness_m)),
                           tuple(float(v) for v in quat), free, tent_deg=float(tent_deg))]


# ------------------------------------------------------------- scene-instantiated cues

#: where the cue appears: drawn into the policy's images, or a physical object in the scene
CUE_PLACEMENTS = ("overlay", "scene")
#: families that exist as scene objects (paper section 4.2) -> card kind (F8: by variant)
SCENE_CUE_FAMILIES = {"F1": "card", "F6": "sign", "F8": None}
#: card widths (m): big enough to read or decode from cam_high at 320x240
SCENE_CUE_WIDTH_M = {"card": 0.20, "sign": 0.10, "aruco": 0.09, "qr": 0.10}  # card: A5-like
SCENE_CUE_THICKNESS_M = 0.004
SCENE_CUE_TENT_DEG = 25.0  # panels' lean from vertical: stands, and faces cam_high well
#: candidate card centres on the table (x, y), in front of the arms and inside cam_high's view
_SPOT_XS = np.linspace(-0.36, 0.36, 13)
_SPOT_YS = np.linspace(-0.22, 0.26, 9)


def check_placement(placement: str, fam: str | None) -> str:
    """Validate ``cue_placement`` (and that the family exists as a scene object)."""
    placement = placement or "overlay"
    if placement not in CUE_PLACEMENTS:
        raise ValueError(f"unknown cue_placement {placement!r}; valid: {', '.join(CUE_PLACEMENTS)}")
    if placement == "scene" and fam is not None and fam not in SCENE_CUE_FAMILIES:
        raise ValueError(f"cue family {fam} has no scene object; cue_placement scene supports "
                         f"{', '.join(SCENE_CUE_FAMILIES)} (text card, sign, code tag)")
    return placement


def _footprint_clearance(point, bodies, half_extent: float) -> float:
    """Smallest xy gap between a square card (half side ``half_extent``) at ``point`` and the
    axis-aligned footprints of ``bodies`` (negative = overlap)."""
    gaps = [np.max(np.abs(point - np.asarray(b.pos, float)[:2])
                   - np.asarray(b.size, float)[:2] / 2) - half_extent for b in bodies]
    return float(min(gaps)) if gaps else np.inf


def free_table_spot(bodies, half_extent: float, enough_m: float = 0.06) -> np.ndarray:
    """A card centre (x, y) on the table: among candidates with at least ``enough_m`` clearance
    from every body (or, when none has, the most open ones), the one nearest the middle of
    the workspace, so the card is clear of the objects yet well inside the cameras' view."""
    best, best_key = None, None
    for y in _SPOT_YS:
        for x in _SPOT_XS:
            point = np.array([x, y])
            clearance = min(_footprint_clearance(point, bodies, half_extent), enough_m)
            key = (round(clearance, 3), -round(float(np.hypot(x, y)), 4))
            if best_key is None or key > best_key:
                best, best_key = point, key
    return best


def yaw_quat_facing(pos, eye) -> tuple[float, float, float, float]:
    """Yaw about +z that turns a body's -y towards ``eye`` (in the xy plane)."""
    d = np.asarray(eye, float)[:2] - np.asarray(pos, float)[:2]
    yaw = np.arctan2(d[0], -d[1])
    return (float(np.cos(yaw / 2)), 0.0, 0.0, float(np.sin(yaw / 2)))


def episode_scene_cues(task: TaskSpec, fam: str, variant: str, seed: int,
                       out_dir: str | Path | None = None) -> list[SceneCueObject]:
    """The episode's cue as a scene object: the same CueSpec the overlay would draw
    (``build_cue`` at the layout's spawn positions), printed on a light folded card (a table
    tent, ``SCENE_CUE_TENT_DEG``) standing on the table's most open spot and facing cam_high.
    Nothing holds it: an arm can knock it over or push it away (paper section 4.2).
    Deterministic in (task, family, variant, seed), so a replay rebuilds it."""
    from vla_bridge.embodiment.cameras import camera_model
    from vla_bridge.embodiment.workcell import TABLE_TOP_Z
    fam, variant = resolve_family_variant(fam, variant)
    check_placement("scene", fam)
    objects, fixtures = layout_world(task.scene, task.layout, seed)
    cue = build_cue(task, fam, variant, seed, objects, fixtures)
    kind = SCENE_CUE_FAMILIES[fam] or ("qr" if cue.variant == "qr" else "aruco")
    width = SCENE_CUE_WIDTH_M[kind]
    xy = free_table_spot([*objects.values(), *fixtures.values()], width / 2)
    pos = (round(float(xy[0]), 4), round(float(xy[1]), 4), TABLE_TOP_Z + 0.002)
    eye = camera_model("cam_high").world_from_camera[:3, 3]
    return scene_cue_objects(cue, pos, width_m=width, thickness_m=SCENE_CUE_THICKNESS_M,
                             kind=kind, out_dir=out_dir, name="cue_card", free=True,
                             quat=yaw_quat_facing(pos, eye), tent_deg=SCENE_CUE_TENT_DEG)
