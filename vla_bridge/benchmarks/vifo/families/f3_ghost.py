"""F3 ghost trajectory (simulator-state overlay): future object states alpha-composited.

``composite_layers`` blends foreground layers G_i into a frame; ``foreground_mask`` finds a
layer's mask from a render and a reference frame of the same camera.
"""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (STATE_OVERLAY, CueContext, CueSpec, Family,
                                                      GhostLayer, register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (DARK, arm_badges, arrow_head, color_param,
                                                         img_scale, polyline, stroke)


def composite_layers(image: np.ndarray, layers, alphas=None, tint=None,
                     tint_strength: float = 0.5) -> np.ndarray:
    """I~ = Composite(I, {(G_i, alpha_i)})  (LIBERO-VIFO eq. 7), layers in order (oldest first).

    Each layer is a ``GhostLayer`` or an (image, mask) pair; the mask is bool or float in [0, 1].
    Work is restricted to each mask's bounding box. Returns a new uint8 image.
    """
    out = np.asarray(image).copy()
    layers = [la if isinstance(la, GhostLayer) else GhostLayer(*la) for la in layers]
    if alphas is None:
        alphas = [la.alpha if la.alpha is not None else 0.5 for la in layers]
    if len(alphas) != len(layers):
        raise ValueError(f"{len(layers)} layers but {len(alphas)} alphas")
    for la, a in zip(layers, alphas):
        if la.image.shape != out.shape:
            raise ValueError(f"ghost layer {la.image.shape} does not match image {out.shape}")
        m8 = la.mask if la.mask.dtype == np.uint8 else (np.asarray(la.mask, np.float32) * 255)
        m8 = np.asarray(m8).astype(np.uint8, copy=False)
        x, y, w, h = cv2.boundingRect(m8)
        if w == 0 or h == 0 or a <= 0:
            continue
        roi = out[y:y + h, x:x + w].astype(np.float32)
        g = la.image[y:y + h, x:x + w].astype(np.float32)
        if tint is not None:
            g = (1 - tint_strength) * g + tint_strength * np.asarray(tint, np.float32)
        m = (m8[y:y + h, x:x + w].astype(np.float32) * (float(a) / 255.0))[..., None]
        out[y:y + h, x:x + w] = np.clip(roi + (g - roi) * m + 0.5, 0, 255).astype(np.uint8)
    return out


def foreground_mask(render: np.ndarray, background: np.ndarray, threshold: int = 12,
                    dilate: int = 1, feather: float = 0.0) -> np.ndarray:
    """Soft mask (float32 0..1) of the pixels where ``render`` differs from ``background``.

    The caller renders a future object state and a reference frame from the same camera (for
    example the current frame, or the scene with the object removed); the difference is the
    object's foreground layer G_i.
    """
    diff = cv2.absdiff(render, background).max(axis=2)
    m = (diff > threshold).astype(np.uint8)
    if dilate > 0:
        m = cv2.dilate(m, np.ones((2 * dilate + 1, 2 * dilate + 1), np.uint8))
    m = m.astype(np.float32)
    if feather > 0:
        m = cv2.GaussianBlur(m, (0, 0), feather)
    return m


def _ghost_alphas(variant: str, k: int, p: dict) -> list[float]:
    if "alphas" in p:
        return [float(a) for a in p["alphas"]]
    base = float(p.get("alpha", 0.45))
    if variant == "fade":
        lo, hi = p.get("alpha_range", (0.15, 0.65))
        return list(np.linspace(lo, hi, k)) if k > 1 else [hi]
    if variant == "final":
        return [0.0] * (k - 1) + [float(p.get("alpha", 0.6))]
    return [base] * k


def _draw_ghost(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    arm_badges(img, ctx, cue.params)  # the arm that moves the ghosted object
    layers = ctx.layers
    if not layers:
        return
    v, p = cue.variant, cue.params
    alphas = [la.alpha if la.alpha is not None else a
              for la, a in zip(layers, _ghost_alphas(v, len(layers), p))]
    tint = color_param(p, "tint", (80, 200, 255)) if v == "tinted" else None
    img[:] = composite_layers(img, layers, alphas, tint=tint)
    if v == "trail":
        cents = []
        for la in layers:
            mo = cv2.moments(np.asarray(la.mask, np.float32))
            if mo["m00"] > 0:
                cents.append((mo["m10"] / mo["m00"], mo["m01"] / mo["m00"]))
        if len(cents) >= 2:
            pts = np.asarray(cents)
            color = color_param(p)
            polyline(img, pts, color, stroke(img, 2), dashed=True)
            arrow_head(img, pts[-1], pts[-1] - pts[-2], 8 * img_scale(img), color, outline=DARK)


register_family(Family(
    "F3", "ghost", "Ghost Trajectory", STATE_OVERLAY,
    {"uniform": "every future state at the same opacity",
     "fade": "opacity rising towards the final state",
     "final": "only the final (goal) state",
     "tinted": "future states tinted in a cue colour",
     "trail": "uniform ghosts plus a dashed trail through their centres"},
    _draw_ghost, {"*": (0.0, 0.0, 1.0, 1.0)},
))
