"""F6 visual signage (scene-anchored): robot-oriented signs over the objects.

A sign s = (g, a, p, t, m) (``SignSpec``): one of eight category frames (``SIGN_CATEGORIES``,
grouped in ``CATEGORY_GROUPS``), an actor, a predicate, a target and a modifier.
``render_sign`` draws the tile, ``sign_for_cue`` composes the sign a cue shows.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (SCENE_ANCHORED, CueContext, CueSpec, Family,
                                                      register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (AA, FONT, arm_badges, arrow_head, glyph,
                                                         glyph_params, img_scale, ipt, polyline,
                                                         shift_pts, stroke)


#: category -> (frame shape, frame colour, pictogram colour); robot-oriented taxonomy (App. B)
SIGN_CATEGORIES: dict[str, tuple[str, tuple[int, int, int], tuple[int, int, int]]] = {
    "prohibition": ("circle_slash", (210, 30, 30), (20, 20, 20)),
    "mandatory": ("disk", (20, 80, 190), (255, 255, 255)),
    "permission": ("square", (20, 150, 70), (255, 255, 255)),
    "hazard": ("triangle", (250, 205, 0), (20, 20, 20)),
    "target_zone": ("diamond", (120, 40, 170), (255, 255, 255)),
    "hri": ("hexagon", (240, 120, 0), (255, 255, 255)),
    "maintenance": ("pentagon", (0, 150, 160), (255, 255, 255)),
    "system_state": ("octagon", (70, 70, 80), (120, 230, 255)),
}
CATEGORY_GROUPS = {
    "action governance": ("prohibition", "mandatory", "permission"),
    "task and environment grounding": ("hazard", "target_zone"),
    "interaction and infrastructure": ("hri", "maintenance", "system_state"),
}
PREDICATES = ("grasp", "place", "avoid", "handover", "inspect", "charge", "calibrate", "move",
              "push", "stop")


@dataclass(frozen=True)
class SignSpec:
    """s = (g, a, p, t, m): category frame, robot actor, predicate, target, modifier."""
    category: str  # key of SIGN_CATEGORIES (frame g)
    predicate: str = "grasp"  # p
    target_shape: str = "box"  # t: box | sphere | cylinder | bowl | region | human | tool
    target_rgb: tuple[int, int, int] = (150, 150, 150)
    actor: str = "gripper"  # a: gripper | arm | none
    modifier: str | None = None  # m: not | left | right | front | back | caution | ok | None


def _frame_poly(shape: str, c: float, r: float) -> np.ndarray | None:
    n, rot = {"triangle": (3, -90), "diamond": (4, 0), "square": (4, 45), "pentagon": (5, -90),
              "hexagon": (6, 0), "octagon": (8, 22.5)}.get(shape, (0, 0))
    if n == 0:
        return None
    ang = np.deg2rad(rot + np.arange(n) * 360.0 / n)
    rr = r * (1.2 if shape == "triangle" else 1.0)
    pts = np.stack([c + rr * np.cos(ang), c + rr * np.sin(ang)], axis=1)
    if shape == "triangle":
        pts[:, 1] += r * 0.22
    return pts


def _sign_pictogram(img, sign: SignSpec, center, s: float, fg) -> None:
    """Actor (gripper) on top, predicate in the middle, target at the bottom."""
    t = max(1, int(round(s / 22)))
    cx, c = float(center[0]), float(center[1])
    # target t
    ty = c + s * 0.24
    tsz = s * 0.26
    if sign.target_shape == "human":
        cv2.circle(img, ipt((cx, ty - tsz * 0.35)), int(tsz * 0.22), fg, -1, AA)
        body = ipt((tsz * 0.35, tsz * 0.3))
        cv2.ellipse(img, ipt((cx, ty + tsz * 0.25)), body, 0, 180, 360, fg, -1, AA)
    elif sign.target_shape == "tool":
        cv2.line(img, ipt((cx - tsz * 0.5, ty + tsz * 0.4)), ipt((cx + tsz * 0.3, ty - tsz * 0.3)),
                 fg, 2 * t, AA)
        cv2.circle(img, ipt((cx + tsz * 0.35, ty - tsz * 0.35)), int(tsz * 0.2), fg, t, AA)
    else:
        glyph(img, sign.target_shape, sign.target_rgb, (cx, ty), tsz, outline=fg)
    # actor a: a two-finger gripper at the top
    if sign.actor != "none":
        ay = c - s * 0.36
        g = s * 0.13
        closing = sign.predicate in ("grasp", "handover")
        spread = g * (0.55 if closing else 0.9)
        cv2.line(img, ipt((cx, ay - g * 0.8)), ipt((cx, ay)), fg, 2 * t, AA)
        cv2.line(img, ipt((cx - spread, ay)), ipt((cx + spread, ay)), fg, 2 * t, AA)
        for sx in (-1, 1):
            finger = (ipt((cx + sx * spread, ay)), ipt((cx + sx * spread * 0.8, ay + g)))
            cv2.line(img, *finger, fg, 2 * t, AA)
    # predicate p: between actor and target
    py = c - s * 0.08
    a = s * 0.12
    pred = sign.predicate
    if pred in ("place", "move"):
        polyline(img, np.array([[cx, py - a], [cx, py + a * 0.3]]), fg, 2 * t, outline=None)
        arrow_head(img, (cx, py + a), (0, 1), a * 0.9, fg)
    elif pred == "grasp":
        for sx in (-1, 1):
            arrow_head(img, (cx + sx * a * 0.4, py), (-sx, 0), a * 0.8, fg)
    elif pred == "avoid":
        pts = np.array([[cx - a * 1.3, py + a * 0.5], [cx - a * 0.6, py - a * 0.5],
                        [cx + a * 0.6, py - a * 0.5], [cx + a * 1.2, py + a * 0.3]])
        polyline(img, pts, fg, 2 * t, outline=None)
        arrow_head(img, (cx + a * 1.35, py + a * 0.6), (1, 1), a * 0.7, fg)
    elif pred == "handover":
        arrow_head(img, (cx + a * 1.2, py - a * 0.3), (1, 0), a * 0.7, fg)
        arrow_head(img, (cx - a * 1.2, py + a * 0.3), (-1, 0), a * 0.7, fg)
    elif pred == "inspect":
        cv2.circle(img, ipt((cx - a * 0.2, py)), int(a * 0.6), fg, 2 * t, AA)
        cv2.line(img, ipt((cx + a * 0.2, py + a * 0.4)), ipt((cx + a * 0.8, py + a)), fg, 2 * t,
                 AA)
    elif pred == "charge":
        bolt = np.array([[cx + a * 0.2, py - a], [cx - a * 0.5, py + a * 0.1], [cx, py + a * 0.1],
                         [cx - a * 0.2, py + a], [cx + a * 0.5, py - a * 0.1], [cx, py - a * 0.1]])
        cv2.fillPoly(img, [shift_pts(bolt)], fg, AA, shift=4)
    elif pred == "calibrate":
        cv2.circle(img, ipt((cx, py)), int(a * 0.7), fg, t, AA)
        cv2.line(img, ipt((cx - a, py)), ipt((cx + a, py)), fg, t, AA)
        cv2.line(img, ipt((cx, py - a)), ipt((cx, py + a)), fg, t, AA)
    elif pred == "push":
        arrow_head(img, (cx + a, py), (1, 0), a * 0.9, fg)
        cv2.line(img, ipt((cx - a, py)), ipt((cx + a * 0.2, py)), fg, 2 * t, AA)
    elif pred == "stop":
        cv2.line(img, ipt((cx - a, py)), ipt((cx + a, py)), fg, 3 * t, AA)
    # modifier m
    mod = sign.modifier
    if mod in ("left", "right", "front", "back"):
        d = {"left": (-1, 0), "right": (1, 0), "front": (0, 1), "back": (0, -1)}[mod]
        base = np.array([cx + s * 0.34, c + s * 0.28])
        arrow_head(img, base + np.array(d) * a * 0.8, d, a * 0.8, fg)
    elif mod == "caution":
        cv2.putText(img, "!", ipt((cx + s * 0.28, c + s * 0.38)), FONT, s / 90, fg, 2 * t, AA)
    elif mod == "ok":
        pts = np.array([[cx + s * 0.22, c + s * 0.22], [cx + s * 0.28, c + s * 0.3],
                        [cx + s * 0.4, c + s * 0.12]])
        polyline(img, pts, fg, 2 * t, outline=None)


@lru_cache(maxsize=128)
def render_sign(sign: SignSpec, size: int) -> tuple[np.ndarray, np.ndarray]:
    """(RGB tile, float32 alpha mask) of a sign, ``size`` x ``size`` px, drawn at 4x and reduced."""
    if sign.category not in SIGN_CATEGORIES:
        raise ValueError(f"unknown sign category {sign.category!r}; "
                         f"valid: {', '.join(SIGN_CATEGORIES)}")
    S = 4 * int(size)
    img = np.zeros((S, S, 3), np.uint8)
    mask = np.zeros((S, S), np.uint8)
    shape, color, fg = SIGN_CATEGORIES[sign.category]
    c, r = S / 2, S * 0.47
    poly = _frame_poly(shape, c, r)
    border = max(2, S // 24)
    if shape in ("disk", "circle_slash"):
        cv2.circle(mask, ipt((c, c)), int(r), 255, -1, AA)
        if shape == "disk":
            cv2.circle(img, ipt((c, c)), int(r), color, -1, AA)
            cv2.circle(img, ipt((c, c)), int(r), (255, 255, 255), border // 2, AA)
        else:
            cv2.circle(img, ipt((c, c)), int(r), (255, 255, 255), -1, AA)
    else:
        cv2.fillPoly(mask, [shift_pts(poly)], 255, AA, shift=4)
        fill = color
        cv2.fillPoly(img, [shift_pts(poly)], fill, AA, shift=4)
        edge = (20, 20, 20) if shape == "triangle" else (255, 255, 255)
        inner = c + (poly - c) * (0.9 if shape != "triangle" else 0.86)
        cv2.polylines(img, [shift_pts(inner)], True, edge, border, AA, shift=4)
    pict_s = S * (0.62 if shape in ("triangle", "diamond") else 0.78)
    pc = c + (S * 0.06 if shape == "triangle" else 0.0)
    _sign_pictogram(img, sign, (c, pc), pict_s, fg)
    if shape == "circle_slash":
        cv2.circle(img, ipt((c, c)), int(r - border * 1.5), color, border * 2, AA)
        d = (r - border * 2.5) / np.sqrt(2)
        cv2.line(img, ipt((c - d, c - d)), ipt((c + d, c + d)), color, border * 2, AA)
    elif sign.modifier == "not":
        d = r * 0.6
        cv2.line(img, ipt((c - d, c - d)), ipt((c + d, c + d)), (210, 30, 30), border * 2, AA)
    tile = cv2.resize(img, (size, size), interpolation=cv2.INTER_AREA)
    alpha = cv2.resize(mask, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    tile.setflags(write=False)
    alpha.setflags(write=False)
    return tile, alpha


def _paste(img, tile, alpha, x: int, y: int) -> None:
    """Alpha-paste ``tile`` with its top-left corner at (x, y), clipped to the image."""
    H, W = img.shape[:2]
    h, w = tile.shape[:2]
    x0, y0, x1, y1 = max(0, x), max(0, y), min(W, x + w), min(H, y + h)
    if x1 <= x0 or y1 <= y0:
        return
    t = tile[y0 - y:y1 - y, x0 - x:x1 - x].astype(np.float32)
    a = alpha[y0 - y:y1 - y, x0 - x:x1 - x][..., None]
    roi = img[y0:y1, x0:x1].astype(np.float32)
    img[y0:y1, x0:x1] = (roi + (t - roi) * a + 0.5).astype(np.uint8)


def sign_for_cue(cue: CueSpec) -> SignSpec:
    p = cue.params
    sign = p.get("sign")
    if isinstance(sign, SignSpec):  # keep the composition, take the frame from the variant
        return sign if sign.category == cue.variant else replace(sign, category=cue.variant)
    shape, rgb = glyph_params(p, "source_glyph")
    default_pred = {"prohibition": "grasp", "mandatory": "grasp", "permission": "grasp",
                    "hazard": "avoid", "target_zone": "place", "hri": "handover",
                    "maintenance": "inspect", "system_state": "charge"}[cue.variant]
    default_target = {"hri": "human", "maintenance": "tool"}.get(cue.variant, shape)
    return SignSpec(cue.variant, p.get("predicate", default_pred),
                    p.get("target_shape", default_target), tuple(p.get("target_rgb", rgb)),
                    p.get("actor", "gripper"), p.get("modifier"))


def _place_sign(img: np.ndarray, a, sign: SignSpec, size: int) -> None:
    """A sign tile above the anchor (below when there is no room) on a post down to it."""
    H, W = img.shape[:2]
    tile, alpha = render_sign(sign, size)
    gap = 4 * img_scale(img)
    cx = a.uv[0]
    cy = a.uv[1] - a.radius_px - gap - size / 2
    if cy - size / 2 < 0:  # no room above: put it below
        cy = a.uv[1] + a.radius_px + gap + size / 2
    cx = float(np.clip(cx, size / 2, W - size / 2))
    cy = float(np.clip(cy, size / 2, H - size / 2))
    edge_y = cy + size / 2 if cy < a.uv[1] else cy - size / 2
    cv2.line(img, ipt((cx, edge_y)), a.pt, (60, 60, 60), stroke(img, 2), AA)
    cv2.circle(img, a.pt, stroke(img, 2), (60, 60, 60), -1, AA)
    _paste(img, tile, alpha, int(round(cx - size / 2)), int(round(cy - size / 2)))


#: categories whose signs name the source or its placement: they also show the acting arm
_TASK_SIGNS = ("mandatory", "permission", "target_zone")


def _draw_signage(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    p = cue.params
    size = int(round(float(p.get("size", 46)) * img_scale(img)))
    signs = p.get("signs")
    if signs is None:  # one sign composed from the parameters (library use)
        role = p.get("role") or ("target" if cue.variant == "target_zone" else "source")
        signs = [(role, sign_for_cue(cue))]
    for role, sign in signs:
        a = ctx.get(role)
        if a is not None:
            _place_sign(img, a, sign, size)
    if cue.variant in _TASK_SIGNS:
        arm_badges(img, ctx, p)


register_family(Family(
    "F6", "signage", "Visual Signage", SCENE_ANCHORED,
    {k: f"{SIGN_CATEGORIES[k][0]} frame, robot-oriented '{k}' sign" for k in SIGN_CATEGORIES},
    _draw_signage, {"*": (0.0, 0.0, 1.0, 1.0)},
))
