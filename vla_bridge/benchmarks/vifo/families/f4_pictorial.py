"""F4 pictorial demonstration: a small inset panel showing the task (fixed region).

Schematic, storyboard (before -> after) and goal panels are drawn from the task's action and
relation with object glyphs; ``goal_image`` insets a caller-provided image. Every panel is
drawn at the canonical resolution (``drawing.CANON`` times the 240 px reference; line widths
and text too) and resized to the region, so it keeps its layout at any image size.
"""
from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (FIXED_REGION, CueContext, CueSpec, Family,
                                                      region_to_pixels, register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (AA, ARM_COLORS, CANON, CUE_COLOR, FONT,
                                                         arrow_head, bezier, canonical_size,
                                                         fit_tile, glyph, glyph_params, ipt,
                                                         polyline)

LW = CANON  # a 1 px line at the reference size


_REL_PANEL_DIR = {"left_of": (-1, 0), "right_of": (1, 0), "behind": (0, -1), "in_front_of": (0, 1),
                  "beside": (1, 0), "near": (1, 0), "towards": (-1, 0)}


def _panel_scene(img, rect, p, after: bool, show_motion: bool) -> None:
    """Top-down-ish schematic of the task inside rect (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = rect
    w, h = x1 - x0, y1 - y0
    s = min(w, h) * 0.3
    relation = p.get("relation")
    action = p.get("action", "place" if relation else "pick")
    src_shape, src_rgb = glyph_params(p, "source_glyph")
    tgt_shape, tgt_rgb = glyph_params(p, "target_glyph", "box", (120, 120, 120))
    center = np.array([x0 + w * 0.5, y0 + h * 0.55])
    start = np.array([x0 + w * 0.2, y0 + h * 0.78])
    if action in ("pick",) or relation is None:
        goal = np.array([center[0], y0 + h * 0.3])
        start = np.array([center[0], y0 + h * 0.72])
        cur = goal if after else start
        if after:
            glyph(img, src_shape, (200, 200, 200), start, s * 0.9, outline=(150, 150, 150),
                  lw=LW)
        glyph(img, src_shape, src_rgb, cur, s, lw=LW)
        # gripper above the object
        gy = cur[1] - s * 0.95
        gx = cur[0]
        col = (60, 60, 60)
        for a, b in (((gx - s * 0.5, gy), (gx + s * 0.5, gy)),
                     ((gx - s * 0.5, gy), (gx - s * 0.5, gy + s * 0.45)),
                     ((gx + s * 0.5, gy), (gx + s * 0.5, gy + s * 0.45)),
                     ((gx, gy), (gx, gy - s * 0.4))):
            cv2.line(img, ipt(a), ipt(b), col, 2 * LW, AA)
        if show_motion:
            a = start + np.array([s * 0.95, 0])
            b = goal + np.array([s * 0.95, 0])
            polyline(img, np.array([a, b + [0, s * 0.3]]), CUE_COLOR, 2 * LW, outline=None)
            arrow_head(img, b, b - a, s * 0.45, CUE_COLOR)
        return
    tgt_c = center.copy()
    if relation in ("on", "in", "above"):
        goal = tgt_c - np.array([0, s * (0.55 if relation == "on" else 0.2)])
    else:
        d = np.asarray(_REL_PANEL_DIR.get(relation, (1, 0)), float)
        goal = tgt_c + d * s * 1.25
        if relation == "towards":
            goal = tgt_c + np.array([-s * 1.05, 0])
    glyph(img, tgt_shape, tgt_rgb, tgt_c, s * 1.1, lw=LW)
    if after:
        glyph(img, src_shape, src_rgb, goal, s * 0.9, lw=LW)
    else:
        glyph(img, src_shape, src_rgb, start, s * 0.9, lw=LW)
        if show_motion:
            cv2.circle(img, ipt(goal), int(s * 0.5), CUE_COLOR, LW, AA)
            pts = bezier(start + (goal - start) * 0.12, goal + (start - goal) * 0.2, 0.25, 12)
            polyline(img, pts, CUE_COLOR, 2 * LW, outline=None, dashed=True)
            arrow_head(img, pts[-1], pts[-1] - pts[-2], s * 0.45, CUE_COLOR)


def _arm_tag(panel, arm: str | None) -> None:
    """The acting arm in the panel's top-right corner: "L" / "R" on the arm's colour."""
    if arm not in ARM_COLORS:
        return
    h, w = panel.shape[:2]
    side = max(12 * CANON, h // 5)
    x1, y0 = w - 3 * CANON, 3 * CANON
    cv2.rectangle(panel, (x1 - side, y0), (x1, y0 + side), ARM_COLORS[arm], -1, AA)
    sc = side / 34.0
    (tw, th), _ = cv2.getTextSize(arm[0].upper(), FONT, sc, 2 * CANON)
    org = (x1 - side // 2 - tw // 2, y0 + side // 2 + th // 2)
    cv2.putText(panel, arm[0].upper(), org, FONT, sc, (255, 255, 255), 2 * CANON, AA)


def _panel_frame(img, rect, title=None):
    x0, y0, x1, y1 = rect
    cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), (60, 60, 60), -1)
    cv2.rectangle(img, (x0 + LW, y0 + LW), (x1 - 1 - LW, y1 - 1 - LW), (238, 236, 228), -1)
    if title:
        sc = max(0.28 * CANON, (y1 - y0) / 240.0)
        org = (x0 + 3 * CANON, y0 + max(8 * CANON, int(round(30 * sc))))
        cv2.putText(img, title, org, FONT, sc, (60, 60, 60), 1, AA)


@lru_cache(maxsize=64)
def _panel_cached(variant: str, key: tuple, w: int, h: int) -> np.ndarray:
    p = {k: (dict(v) if isinstance(v, tuple) and v and isinstance(v[0], tuple) else v)
         for k, v in key}
    panel = np.zeros((h, w, 3), np.uint8)
    if variant == "schematic":
        _panel_frame(panel, (0, 0, w, h))
        _panel_scene(panel, (0, 0, w, h), p, after=False, show_motion=True)
    elif variant == "storyboard":
        half = w // 2
        gap = max(6 * CANON, w // 16)
        _panel_frame(panel, (0, 0, half - gap // 2, h), "1")
        _panel_frame(panel, (half + gap // 2, 0, w, h), "2")
        panel[:, half - gap // 2:half + gap // 2] = (255, 255, 255)
        _panel_scene(panel, (0, 0, half - gap // 2, h), p, after=False, show_motion=False)
        _panel_scene(panel, (half + gap // 2, 0, w, h), p, after=True, show_motion=False)
        arrow_head(panel, (half + gap // 2 - 1, h / 2), (1, 0), gap * 0.9, CUE_COLOR)
    elif variant == "before_after":
        _panel_frame(panel, (0, 0, w, h))
        _panel_scene(panel, (0, 0, w, h), p, after=True, show_motion=False)
        cv2.putText(panel, "GOAL", (3 * CANON, max(10 * CANON, h // 7)), FONT,
                    max(0.3 * CANON, h / 260), (40, 120, 40), 1, AA)
    _arm_tag(panel, p.get("arm"))
    return panel


def _hashable(p: dict) -> tuple:
    out = []
    for k in ("relation", "action", "source_glyph", "target_glyph", "arm"):
        v = p.get(k)
        if isinstance(v, dict):
            v = tuple(sorted((kk, tuple(vv) if isinstance(vv, (list, np.ndarray)) else vv)
                             for kk, vv in v.items()))
        out.append((k, v))
    return tuple(out)


def _first_arm(p: dict) -> str | None:
    arms = p.get("arms") or ()
    return arms[0][1] if arms else None


def _goal_panel(src: np.ndarray, w: int, h: int, arm: str | None = None) -> np.ndarray:
    """A caller's goal image inset in a white frame with a green border and "GOAL"."""
    m = 2 * CANON
    panel = np.full((h, w, 3), 255, np.uint8)
    panel[m:h - m, m:w - m] = cv2.resize(np.asarray(src, np.uint8), (w - 2 * m, h - 2 * m),
                                         interpolation=cv2.INTER_AREA)
    cv2.rectangle(panel, (0, 0), (w - 1, h - 1), (40, 160, 40), m)
    sc = max(0.3 * CANON, h / 200)
    org = (4 * CANON, int(14 * sc / 0.4))
    cv2.putText(panel, "GOAL", org, FONT, sc, (255, 255, 255), 3 * CANON, AA)
    cv2.putText(panel, "GOAL", org, FONT, sc, (40, 160, 40), 1, AA)
    _arm_tag(panel, arm)
    return panel


def _draw_pictorial(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    cw, ch = canonical_size(cue.box, img)
    if cue.variant == "goal_image":
        src = cue.params.get("image")
        if src is None:
            raise ValueError("F4 goal_image needs params['image'] (e.g. a rendered goal state)")
        panel = _goal_panel(src, cw, ch, _first_arm(cue.params))
        img[y0:y1, x0:x1] = _fit_panel(panel, x1 - x0, y1 - y0)
        return
    p = dict(cue.params)
    p["arm"] = _first_arm(p)
    task = cue.task
    if "relation" not in p and task is not None:
        p["relation"] = getattr(task, "relation", None)
        p["action"] = getattr(task, "action", None)
    img[y0:y1, x0:x1] = _fitted_panel(cue.variant, _hashable(p), cw, ch, x1 - x0, y1 - y0)


def _fit_panel(panel: np.ndarray, w: int, h: int) -> np.ndarray:
    """An opaque canonical panel resized to the region."""
    return fit_tile(panel.astype(np.float32), np.ones(panel.shape[:2], np.float32), w, h)[0]


@lru_cache(maxsize=64)
def _fitted_panel(variant: str, key: tuple, cw: int, ch: int, w: int, h: int) -> np.ndarray:
    return _fit_panel(_panel_cached(variant, key, cw, ch), w, h)


register_family(Family(
    "F4", "pictorial", "Pictorial Demonstration", FIXED_REGION,
    {"schematic": "inset diagram: source object, target, dashed motion arrow to the goal",
     "storyboard": "two panels, before -> after",
     "before_after": "single 'GOAL' panel with the final arrangement",
     "goal_image": "inset of a caller-provided goal image (e.g. a rendered goal state)"},
    _draw_pictorial, {"*": (0.64, 0.02, 0.34, 0.30), "storyboard": (0.50, 0.02, 0.48, 0.28)},
))
