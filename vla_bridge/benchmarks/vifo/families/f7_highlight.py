"""F7 visual highlight (scene-anchored): spotlight, dimming, outline, glow, light beam."""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (SCENE_ANCHORED, CueContext, CueSpec, Family,
                                                      register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (AA, DARK, arm_badges, color_param,
                                                         img_scale, ipt, shift_pts, stroke)

#: the placement point's highlight colour where a variant draws a colour (the source's is the
#: variant's own): source and target stay distinguishable
TARGET_COLOR = (0, 200, 255)


def _soft_mask_small(shape_hw, centers_r, feather: float, down: int = 4) -> np.ndarray:
    """Float32 mask at 1/down resolution: 1 inside the discs, Gaussian-feathered edge."""
    H, W = shape_hw
    h, w = max(1, -(-H // down)), max(1, -(-W // down))
    m = np.zeros((h, w), np.float32)
    for (u, v), r in centers_r:
        cv2.circle(m, ipt(((u + 0.5) / down - 0.5, (v + 0.5) / down - 0.5)),
                   max(1, int(round(r / down))), 1.0, -1, AA)
    return cv2.GaussianBlur(m, (0, 0), max(0.5, feather / down))


def _upsample3(small: np.ndarray, W: int, H: int) -> np.ndarray:
    """(h, w) uint8 -> (H, W, 3) uint8, bilinear."""
    return cv2.resize(cv2.cvtColor(small, cv2.COLOR_GRAY2RGB), (W, H),
                      interpolation=cv2.INTER_LINEAR)


def _draw_highlight(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    v, p = cue.variant, cue.params
    roles = p.get("roles", ["source"])
    present = [r for r in roles if ctx.get(r) is not None]
    anchors = [ctx.get(r) for r in present]
    if not anchors:
        return
    H, W = img.shape[:2]
    sc = img_scale(img)
    if v in ("spotlight", "dim"):
        def r_of(a):
            return max(10 * sc, float(p.get("radius_scale", 2.2)) * a.radius_px)
        m = _soft_mask_small((H, W), [(a.uv, r_of(a)) for a in anchors], 6 * sc)
        if v == "spotlight":
            # per-pixel gain k..boost, stored as uint8 gain * 128 and applied with cv2.multiply
            k = float(p.get("darkness", 0.3))
            boost = float(p.get("boost", 1.15))
            gain = (k + (1.0 - k) * m) * (1.0 + (boost - 1.0) * m)
            g8 = np.clip(gain * 128.0 + 0.5, 0, 255).astype(np.uint8)
            cv2.multiply(img, _upsample3(g8, W, H), dst=img, scale=1.0 / 128.0)
        else:
            # img * m + dimmed_grey * (1 - m), in place on uint8 buffers (few allocations)
            gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
            cv2.convertScaleAbs(gray, dst=gray, alpha=float(p.get("darkness", 0.55)))
            dimmed = cv2.cvtColor(gray, cv2.COLOR_GRAY2RGB)
            m3 = _upsample3(np.clip(m * 255.0 + 0.5, 0, 255).astype(np.uint8), W, H)
            cv2.multiply(img, m3, dst=img, scale=1.0 / 255.0)
            cv2.bitwise_not(m3, dst=m3)
            cv2.multiply(dimmed, m3, dst=dimmed, scale=1.0 / 255.0)
            cv2.add(img, dimmed, dst=img)
    elif v == "outline":
        for role, a in zip(present, anchors):
            color = (color_param(p, "color", (255, 235, 0)) if role != "target"
                     else TARGET_COLOR)
            shape = a.outline if a.outline is not None else a.region
            if shape is not None and len(shape) >= 3:
                pts = shape.astype(np.float32)
                c = pts.mean(axis=0)
                pts = c + (pts - c) * 1.12 + np.sign(pts - c) * 2 * sc
                P = shift_pts(pts)
                cv2.polylines(img, [P], True, DARK, stroke(img, 4), AA, shift=4)
                cv2.polylines(img, [P], True, color, stroke(img, 2), AA, shift=4)
            else:
                r = int(round(1.35 * a.radius_px + 2 * sc))
                cv2.circle(img, a.pt, r, DARK, stroke(img, 4), AA)
                cv2.circle(img, a.pt, r, color, stroke(img, 2), AA)
    elif v == "glow":
        for role, a in zip(present, anchors):
            color = np.asarray(color_param(p, "color", (255, 240, 120)) if role != "target"
                               else TARGET_COLOR, np.float32)
            r = max(8 * sc, 1.8 * a.radius_px)
            pad = int(np.ceil(r * 1.8))
            u, vv = a.pt
            x0, y0 = max(0, u - pad), max(0, vv - pad)
            x1, y1 = min(W, u + pad + 1), min(H, vv + pad + 1)
            if x1 <= x0 or y1 <= y0:
                continue
            m = np.zeros((y1 - y0, x1 - x0), np.float32)
            cv2.circle(m, (u - x0, vv - y0), int(round(r)), 1.0, max(2, int(r * 0.5)), AA)
            m = cv2.GaussianBlur(m, (0, 0), max(1.0, r * 0.25)) * float(p.get("strength", 1.6))
            roi = img[y0:y1, x0:x1].astype(np.float32)
            img[y0:y1, x0:x1] = np.clip(roi + (color - roi * 0.3) * np.clip(m, 0, 1)[..., None],
                                        0, 255).astype(np.uint8)
    elif v == "beam":
        for a in anchors:
            r = max(8 * sc, 1.6 * a.radius_px)
            u, vv = a.uv
            top_w = r * 0.35
            poly = np.array([[u - top_w, 0], [u + top_w, 0], [u + r, vv], [u - r, vv]])
            y1 = int(min(H, vv + r * 0.6 + 2))
            x0 = int(max(0, u - r - 2))
            x1 = int(min(W, u + r + 3))
            if x1 <= x0 or y1 <= 0:
                continue
            roi = img[0:y1, x0:x1]
            over = roi.copy()
            cv2.fillPoly(over, [shift_pts(poly - [x0, 0])], (255, 250, 215), AA, shift=4)
            cv2.ellipse(over, ipt((u - x0, vv)), ipt((r, r * 0.45)), 0, 0, 360, (255, 250, 215),
                        -1, AA)
            alpha = float(p.get("alpha", 0.4))
            cv2.addWeighted(over, alpha, roi, 1 - alpha, 0, dst=roi)
    else:  # pragma: no cover
        raise ValueError(v)
    arm_badges(img, ctx, p)


register_family(Family(
    "F7", "highlight", "Visual Highlight", SCENE_ANCHORED,
    {"spotlight": "darken the scene outside soft spotlights on the source and the placement "
                   "point, arm tag",
     "dim": "desaturate and dim everything except the source and the placement point, arm tag",
     "outline": "outline around the source's silhouette (yellow) and the placement region "
                "(cyan), arm tag",
     "glow": "additive halo around the source (yellow) and the placement point (cyan), arm tag",
     "beam": "translucent light beams onto the source and the placement point, arm tag"},
    _draw_highlight, {"*": (0.0, 0.0, 1.0, 1.0)},
))
