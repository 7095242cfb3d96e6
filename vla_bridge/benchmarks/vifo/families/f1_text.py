"""F1 text overlay: the instruction as text in a fixed region (banner, sticky note, subtitle...).

The cue is drawn once at the canonical resolution (``drawing.CANON`` times the 240 px
reference: font scale, line breaks, padding, border, outline) and resized to the region, so
it keeps its layout at any image size. ``params["max_scale"]``: the largest font scale at the
reference (default 0.6); ``text_color``, ``background`` (banner) and ``alpha`` (subtitle).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (FIXED_REGION, CueContext, CueSpec, Family,
                                                      region_to_pixels, register_family, task_text)
from vla_bridge.benchmarks.vifo.families.drawing import (CANON, DARK, WHITE, Layer,
                                                         canonical_size, color_param, composite,
                                                         fit_text, fit_tile)

_NOTE_INK = (30, 30, 90)


def _style(cue: CueSpec) -> tuple:
    """(text colour, banner background, subtitle opacity, max font scale) of a cue."""
    p = cue.params
    ink = _NOTE_INK if cue.variant == "sticky_note" else WHITE
    return (color_param(p, "text_color", ink), color_param(p, "background", (25, 35, 80)),
            float(p.get("alpha", 0.6)), float(p.get("max_scale", 0.6)))


def _background(layer: Layer, variant: str, w: int, h: int, style: tuple, pad: int) -> None:
    if variant == "banner":
        layer.rect(0, 0, w, h, style[1])
        layer.frame(0, 0, w, h, WHITE, CANON)
    elif variant == "sticky_note":
        sh = pad // 2
        layer.rect(sh, sh, w, h, (0, 0, 0), 0.35)  # shadow
        layer.rect(0, 0, w - sh, h - sh, (252, 232, 100))
        layer.rect(w // 3, 0, 2 * w // 3, pad, (215, 215, 200))  # tape
    elif variant == "subtitle":
        layer.rect(0, 0, w, h, (0, 0, 0), style[2])


@lru_cache(maxsize=64)
def _tile(variant: str, text: str, size: tuple[int, int], style: tuple):
    """The cue at the canonical resolution: (premultiplied RGB, alpha)."""
    w, h = size
    pad = 4 * CANON
    lines, scale, th, line_h, cap = fit_text(text, w - 2 * pad, h - 2 * pad, style[3] * CANON)
    free = max(0.0, (h - 2 * pad - line_h * len(lines)) / 2)
    org = (pad, pad + free + cap + (line_h - cap) / 2 - CANON)
    layer = Layer(w, h)
    _background(layer, variant, w, h, style, pad)
    outline = DARK if variant in ("outlined", "caps") else None
    layer.text(lines, org, scale, th, style[0], line_h, outline, CANON)
    return layer.rgb, layer.alpha


@lru_cache(maxsize=64)
def _fitted(variant: str, text: str, size: tuple[int, int], style: tuple, w: int, h: int):
    return fit_tile(*_tile(variant, text, size, style), w, h)


def _draw_text(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    text = task_text(cue)
    if cue.variant == "caps":
        text = text.upper()
    tile = _fitted(cue.variant, text, canonical_size(cue.box, img), _style(cue), x1 - x0, y1 - y0)
    composite(img, tile, x0, y0)


register_family(Family(
    "F1", "text", "Text Overlay", FIXED_REGION,
    {"banner": "white text on a dark banner",
     "sticky_note": "dark text on a yellow sticky note with a shadow",
     "subtitle": "white text on a translucent black subtitle bar",
     "outlined": "white text with a black outline, no background",
     "caps": "upper-case outlined text"},
    _draw_text,
    {"*": (0.02, 0.02, 0.72, 0.28), "subtitle": (0.0, 0.80, 1.0, 0.20),
     "sticky_note": (0.58, 0.03, 0.40, 0.40)},
))
