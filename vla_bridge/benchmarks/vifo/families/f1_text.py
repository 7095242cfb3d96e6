"""F1 text overlay: the instruction as text in a fixed region (banner, sticky note, subtitle...)."""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (FIXED_REGION, CueContext, CueSpec, Family,
                                                      region_to_pixels, register_family, task_text)
from vla_bridge.benchmarks.vifo.families.drawing import (DARK, WHITE, blend_rect, color_param,
                                                         fit_text, img_scale, text_block)


def _draw_text(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    text = task_text(cue)
    v = cue.variant
    pad = max(2, int(round(4 * img_scale(img))))
    if v == "caps":
        text = text.upper()
    max_scale = float(cue.params.get("max_scale", 0.6 * img_scale(img)))
    lines, scale, th, line_h, ch = fit_text(text, x1 - x0 - 2 * pad, y1 - y0 - 2 * pad, max_scale)
    block_h = line_h * len(lines)
    ty = y0 + pad + max(0, (y1 - y0 - 2 * pad - block_h) // 2) + ch + (line_h - ch) // 2 - 1
    fg = color_param(cue.params, "text_color", WHITE)
    if v == "banner":
        bg = color_param(cue.params, "background", (25, 35, 80))
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), bg, -1)
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), WHITE, 1)
        text_block(img, lines, (x0 + pad, ty), scale, th, fg, line_h=line_h)
    elif v == "sticky_note":
        sh = max(1, pad // 2)
        blend_rect(img, x0 + sh, y0 + sh, x1, y1, (0, 0, 0), 0.35)
        cv2.rectangle(img, (x0, y0), (x1 - 1 - sh, y1 - 1 - sh), (252, 232, 100), -1)
        cv2.rectangle(img, (x0 + (x1 - x0) // 3, y0), (x0 + 2 * (x1 - x0) // 3, y0 + pad),
                      (215, 215, 200), -1)
        ink = color_param(cue.params, "text_color", (30, 30, 90))
        text_block(img, lines, (x0 + pad, ty), scale, th, ink, line_h=line_h)
    elif v == "subtitle":
        blend_rect(img, x0, y0, x1, y1, (0, 0, 0), float(cue.params.get("alpha", 0.6)))
        text_block(img, lines, (x0 + pad, ty), scale, th, fg, line_h=line_h)
    elif v in ("outlined", "caps"):
        text_block(img, lines, (x0 + pad, ty), scale, th, fg, outline=DARK, line_h=line_h)
    else:  # pragma: no cover - variants are checked by draw()
        raise ValueError(v)


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
