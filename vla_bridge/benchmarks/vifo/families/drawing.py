"""Drawing helpers shared by the cue families: sizes, colours, text, curves, arrows, glyphs.

Sizes scale with the image height (reference 240 px, ``img_scale``); points are pixel-index
(u, v) floats, drawn with 4 fractional bits (``shift_pts``) for sub-pixel anti-aliasing.
"""
from __future__ import annotations

import textwrap
from functools import lru_cache

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import Anchor2D, CueContext

FONT = cv2.FONT_HERSHEY_SIMPLEX
AA = cv2.LINE_AA
CUE_COLOR = (255, 0, 255)  # magenta: absent from the RoboFollow scenes
DARK = (20, 20, 20)
WHITE = (255, 255, 255)


# ----------------------------------------------------------------------------- sizes, text

def img_scale(img: np.ndarray) -> float:
    """Size factor of an image: its height over the 240 px reference."""
    return img.shape[0] / 240.0


def stroke(img: np.ndarray, base: float) -> int:
    """Line thickness ``base`` (at 240 px) scaled to the image, at least 1 px."""
    return max(1, int(round(base * img_scale(img))))


def blend_rect(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, color, alpha: float) -> None:
    """Blend a filled rectangle of ``color`` at opacity ``alpha`` into ``img`` in place."""
    roi = img[y0:y1, x0:x1]
    if roi.size:
        fill = np.empty_like(roi)
        fill[:] = color
        cv2.addWeighted(fill, alpha, roi, 1.0 - alpha, 0.0, dst=roi)


def ipt(p) -> tuple[int, int]:
    """A float point as rounded integer pixel coordinates."""
    return int(round(float(p[0]))), int(round(float(p[1])))


def shift_pts(pts: np.ndarray) -> np.ndarray:
    """Float points -> int32 with 4 fractional bits (sub-pixel drawing with shift=4)."""
    return np.round(np.asarray(pts, float) * 16).astype(np.int32)


def text_block(img, lines, org_xy, scale, thickness, color, outline=None, line_h=None):
    """Draw ``lines`` from the baseline ``org_xy`` down, optionally with a 1 px outline."""
    x, y = org_xy
    lh = line_h or int(cv2.getTextSize("Ag", FONT, scale, thickness)[0][1] * 1.6) + 2
    for i, line in enumerate(lines):
        yy = y + i * lh
        if outline is not None:  # same thickness, shifted: Hershey advance depends on thickness
            for dx, dy in ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)):
                cv2.putText(img, line, (x + dx, yy + dy), FONT, scale, outline, thickness, AA)
        cv2.putText(img, line, (x, yy), FONT, scale, color, thickness, AA)


@lru_cache(maxsize=512)
def fit_text(text: str, w: int, h: int, max_scale: float = 1.0):
    """Largest font scale whose word-wrapped text fits w x h: (lines, scale, thickness, line_h)."""
    scale = max_scale
    while True:
        th = max(1, int(round(scale * 1.6)))
        (cw, ch), base = cv2.getTextSize("n", FONT, scale, th)
        line_h = int(ch * 1.45) + 2
        chars = max(1, int(w / max(cw, 1)))
        lines = textwrap.wrap(text, width=chars) or [""]
        while lines and max(cv2.getTextSize(s, FONT, scale, th)[0][0] for s in lines) > w \
                and chars > 1:
            chars -= 1
            lines = textwrap.wrap(text, width=chars)
        height = line_h * len(lines)
        if height <= h or scale <= 0.26:
            max_lines = max(1, h // line_h)
            if len(lines) > max_lines:
                lines = lines[:max_lines]
                lines[-1] = lines[-1][: max(1, len(lines[-1]) - 2)] + ".."
            return tuple(lines), scale, th, line_h, ch
        scale = round(scale - 0.025, 3)


# ----------------------------------------------------------------------------- lines, arrows

def anchors_of(ctx: CueContext, *roles: str) -> list[Anchor2D] | None:
    """The anchors of ``roles`` in order, or None when any of them was dropped."""
    out = [ctx.get(r) for r in roles]
    return None if any(a is None for a in out) else out


def trim(a: np.ndarray, b: np.ndarray, ra: float, rb: float):
    """Segment a -> b shortened by the end radii (at most 35 % each): (start, end, length)."""
    d = b - a
    n = float(np.hypot(*d))
    if n < 1e-6:
        return a, b, n
    u = d / n
    ra, rb = min(ra, 0.35 * n), min(rb, 0.35 * n)
    return a + u * ra, b - u * rb, n


def bezier(a: np.ndarray, b: np.ndarray, bend: float = 0.3, n: int = 24) -> np.ndarray:
    """Quadratic curve a -> b bulging towards the top of the image by ``bend`` x length."""
    d = b - a
    perp = np.array([d[1], -d[0]])
    if perp[1] > 0:
        perp = -perp
    ctrl = (a + b) / 2 + bend * perp
    t = np.linspace(0.0, 1.0, n)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * ctrl + t ** 2 * b


def arrow_head(img, tip, direction, size, color, outline=None):
    """Filled triangular arrow head with its tip at ``tip`` pointing along ``direction``."""
    d = np.asarray(direction, float)
    n = np.hypot(*d)
    if n < 1e-6:
        return
    d /= n
    p = np.array([-d[1], d[0]])
    tip = np.asarray(tip, float)
    tri = np.array([tip, tip - d * size + p * size * 0.55, tip - d * size - p * size * 0.55])
    if outline is not None:
        cv2.polylines(img, [shift_pts(tri)], True, outline, 2, AA, shift=4)
    cv2.fillConvexPoly(img, shift_pts(tri), color, AA, shift=4)


def polyline(img, pts, color, thickness, outline=DARK, dashed=False):
    """Open polyline through float points (dashed: every other segment), outlined unless None."""
    P = shift_pts(pts)
    if dashed:
        segs = [P[i:i + 2] for i in range(0, len(P) - 1, 2)]
        if outline is not None:
            cv2.polylines(img, segs, False, outline, thickness + 2, AA, shift=4)
        cv2.polylines(img, segs, False, color, thickness, AA, shift=4)
        return
    if outline is not None:
        cv2.polylines(img, [P], False, outline, thickness + 2, AA, shift=4)
    cv2.polylines(img, [P], False, color, thickness, AA, shift=4)


def color_param(params: dict, key: str = "color", default=CUE_COLOR) -> tuple[int, int, int]:
    """An RGB colour parameter of a cue as an int tuple."""
    c = params.get(key, default)
    return tuple(int(v) for v in c[:3])


# ----------------------------------------------------------------------------- glyphs (F4, F6)

def glyph(img, shape: str, rgb, center, size: float, outline=DARK) -> None:
    """Small oblique icon of a primitive object (box / sphere / cylinder / bowl / region)."""
    cx, cy = float(center[0]), float(center[1])
    s = float(size)
    rgb = tuple(int(c) for c in rgb)
    dark = tuple(int(c * 0.65) for c in rgb)
    light = tuple(int(min(255, c * 0.6 + 100)) for c in rgb)
    if shape == "sphere":
        cv2.circle(img, ipt((cx, cy)), int(round(s / 2)), outline, -1, AA)
        cv2.circle(img, ipt((cx, cy)), max(1, int(round(s / 2 - 1))), rgb, -1, AA)
        shine = max(1, int(round(s * 0.12)))
        cv2.circle(img, ipt((cx - s * 0.15, cy - s * 0.15)), shine, light, -1, AA)
    elif shape == "cylinder":
        w, h, e = s * 0.8, s, s * 0.15  # e: ellipse half height of the caps
        y_top, y_bot = cy - h / 2 + e, cy + h / 2 - e
        axes = ipt((w / 2, e))
        cv2.rectangle(img, ipt((cx - w / 2, y_top)), ipt((cx + w / 2, y_bot)), rgb, -1)
        cv2.ellipse(img, ipt((cx, y_bot)), axes, 0, 0, 180, rgb, -1, AA)
        cv2.ellipse(img, ipt((cx, y_top)), axes, 0, 0, 360, light, -1, AA)
        cv2.ellipse(img, ipt((cx, y_top)), axes, 0, 0, 360, outline, 1, AA)
        for sx in (-1, 1):
            cv2.line(img, ipt((cx + sx * w / 2, y_top)), ipt((cx + sx * w / 2, y_bot)), outline,
                     1, AA)
    elif shape in ("bowl", "mesh"):
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.35)), 0, 0, 180, rgb, -1, AA)
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.14)), 0, 0, 360, dark, -1, AA)
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.35)), 0, 0, 180, outline, 1, AA)
    elif shape == "region":
        pts = np.array([[cx - s / 2, cy - s / 3], [cx + s / 2, cy - s / 3],
                        [cx + s / 2, cy + s / 3], [cx - s / 2, cy + s / 3]])
        for i in range(4):
            a, b = pts[i], pts[(i + 1) % 4]
            for t in np.arange(0, 1, 0.25):
                cv2.line(img, ipt(a + (b - a) * t), ipt(a + (b - a) * (t + 0.14)), rgb, 2, AA)
    else:  # box: oblique cube
        h = s * 0.8
        d = s * 0.22
        front = np.array([[cx - h / 2, cy - h / 2 + d / 2], [cx + h / 2 - d, cy - h / 2 + d / 2],
                          [cx + h / 2 - d, cy + h / 2], [cx - h / 2, cy + h / 2]])
        top = np.array([front[0], front[0] + [d, -d], front[1] + [d, -d], front[1]])
        side = np.array([front[1], front[1] + [d, -d], front[2] + [d, -d], front[2]])
        for poly, c in ((front, rgb), (top, light), (side, dark)):
            cv2.fillConvexPoly(img, shift_pts(poly), c, AA, shift=4)
            cv2.polylines(img, [shift_pts(poly)], True, outline, 1, AA, shift=4)


def glyph_params(p: dict, key: str, default_shape="box", default_rgb=(150, 150, 150)):
    """(shape, rgb) of a glyph parameter (``{"shape": ..., "rgb": ...}``) of a cue."""
    g = p.get(key) or {}
    return g.get("shape", default_shape), tuple(int(c) for c in g.get("rgb", default_rgb))
