"""Drawing helpers shared by the cue families: sizes, colours, text, curves, arrows, glyphs.

Sizes scale with the image height (reference 240 px, ``img_scale``); points are pixel-index
(u, v) floats, drawn with 4 fractional bits (``shift_pts``) for sub-pixel anti-aliasing.

Fixed-region tiles (F1 text, F4 panels) are drawn once at a canonical resolution, ``CANON``
times the reference (``canonical_size``; a ``Layer`` holds the premultiplied colour and the
opacity), then resized to the region (``fit_tile``) and blended in (``composite``): the
layout is the same at every resolution, which OpenCV's text (its glyph widths do not scale
linearly with the font scale) would not give if drawn at each image's own size.
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


def ipt(p) -> tuple[int, int]:
    """A float point as rounded integer pixel coordinates."""
    return int(round(float(p[0]))), int(round(float(p[1])))


def shift_pts(pts: np.ndarray) -> np.ndarray:
    """Float points -> int32 with 4 fractional bits (sub-pixel drawing with shift=4)."""
    return np.round(np.asarray(pts, float) * 16).astype(np.int32)


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


# ----------------------------------------------------------------------------- fixed-region tiles

CANON = 4  # fixed-region tiles are drawn at 4x the 240 px reference (960 px high)


def canonical_size(box, img: np.ndarray) -> tuple[int, int]:
    """(w, h) of the tile of a normalised region at the canonical resolution: the same for
    every image of one aspect ratio."""
    x, y, w, h = (float(v) for v in box)
    bw = min(x + w, 1.0) - max(x, 0.0)
    bh = min(y + h, 1.0) - max(y, 0.0)
    ref_w = img.shape[1] * 240.0 / img.shape[0]
    return max(1, int(round(bw * ref_w * CANON))), max(1, int(round(bh * 240 * CANON)))


class Layer:
    """A tile painted over a transparent canvas: premultiplied RGB and opacity (float32)."""

    def __init__(self, w: int, h: int):
        self.rgb = np.zeros((h, w, 3), np.float32)
        self.alpha = np.zeros((h, w), np.float32)

    def paint(self, mask: np.ndarray, color, opacity: float = 1.0) -> None:
        """Paint ``color`` where ``mask`` (float in [0, 1]) is, at ``opacity``."""
        x = mask.astype(np.float32) * float(opacity)
        self.rgb = self.rgb * (1.0 - x[..., None]) + np.asarray(color, np.float32) * x[..., None]
        self.alpha = self.alpha * (1.0 - x) + x

    def rect(self, x0: int, y0: int, x1: int, y1: int, color, opacity: float = 1.0) -> None:
        """Fill the box (x1, y1 exclusive)."""
        mask = np.zeros(self.alpha.shape, np.float32)
        mask[max(0, y0):y1, max(0, x0):x1] = 1.0
        self.paint(mask, color, opacity)

    def frame(self, x0: int, y0: int, x1: int, y1: int, color, width: int) -> None:
        """A ``width`` px border just inside the box."""
        mask = np.zeros(self.alpha.shape, np.float32)
        mask[y0:y1, x0:x1] = 1.0
        mask[y0 + width:y1 - width, x0 + width:x1 - width] = 0.0
        self.paint(mask, color)

    def text(self, lines, org_xy, scale: float, thickness: int, color, line_h: float,
             outline=None, outline_px: int = 0) -> None:
        """``lines`` from the baseline ``org_xy`` down, with an ``outline_px`` outline."""
        mask = np.zeros(self.alpha.shape, np.uint8)
        x, y = org_xy
        for i, line in enumerate(lines):
            org = (int(round(x)), int(round(y + i * line_h)))
            cv2.putText(mask, line, org, FONT, scale, 255, thickness, AA)
        if outline is not None and outline_px > 0:
            ring = cv2.dilate(mask, np.ones((2 * outline_px + 1,) * 2, np.uint8))
            self.paint(ring / 255.0, outline)
        self.paint(mask / 255.0, color)


def fit_tile(rgb: np.ndarray, alpha: np.ndarray, w: int, h: int):
    """A canonical tile (premultiplied RGB, alpha) resized to w x h (area-averaged down):
    read-only (colour uint8, alpha, 1 - alpha) for ``composite``."""
    interp = cv2.INTER_AREA if w <= rgb.shape[1] else cv2.INTER_LINEAR
    rgb = cv2.resize(rgb, (w, h), interpolation=interp)
    alpha = np.clip(cv2.resize(alpha, (w, h), interpolation=interp), 0.0, 1.0)
    colour = rgb / np.maximum(alpha, 1e-6)[..., None]
    out = (np.clip(colour + 0.5, 0, 255).astype(np.uint8), alpha, 1.0 - alpha)
    for a in out:
        a.setflags(write=False)
    return out


def composite(img: np.ndarray, tile, x0: int, y0: int) -> None:
    """Blend a ``fit_tile`` tile into ``img`` in place, its top-left corner at (x0, y0)."""
    colour, alpha, inv = tile
    h, w = alpha.shape
    roi = img[y0:y0 + h, x0:x0 + w]
    roi[:] = cv2.blendLinear(colour, roi, alpha, inv)


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

def glyph(img, shape: str, rgb, center, size: float, outline=DARK, lw: int = 1) -> None:
    """Small oblique icon of a primitive object (box / sphere / cylinder / bowl / region);
    ``lw``: width of its outlines (px)."""
    cx, cy = float(center[0]), float(center[1])
    s = float(size)
    rgb = tuple(int(c) for c in rgb)
    dark = tuple(int(c * 0.65) for c in rgb)
    light = tuple(int(min(255, c * 0.6 + 100)) for c in rgb)
    if shape == "sphere":
        cv2.circle(img, ipt((cx, cy)), int(round(s / 2)), outline, -1, AA)
        cv2.circle(img, ipt((cx, cy)), max(1, int(round(s / 2 - lw))), rgb, -1, AA)
        shine = max(1, int(round(s * 0.12)))
        cv2.circle(img, ipt((cx - s * 0.15, cy - s * 0.15)), shine, light, -1, AA)
    elif shape == "cylinder":
        w, h, e = s * 0.8, s, s * 0.15  # e: ellipse half height of the caps
        y_top, y_bot = cy - h / 2 + e, cy + h / 2 - e
        axes = ipt((w / 2, e))
        cv2.rectangle(img, ipt((cx - w / 2, y_top)), ipt((cx + w / 2, y_bot)), rgb, -1)
        cv2.ellipse(img, ipt((cx, y_bot)), axes, 0, 0, 180, rgb, -1, AA)
        cv2.ellipse(img, ipt((cx, y_top)), axes, 0, 0, 360, light, -1, AA)
        cv2.ellipse(img, ipt((cx, y_top)), axes, 0, 0, 360, outline, lw, AA)
        for sx in (-1, 1):
            cv2.line(img, ipt((cx + sx * w / 2, y_top)), ipt((cx + sx * w / 2, y_bot)), outline,
                     lw, AA)
    elif shape in ("bowl", "mesh"):
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.35)), 0, 0, 180, rgb, -1, AA)
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.14)), 0, 0, 360, dark, -1, AA)
        cv2.ellipse(img, ipt((cx, cy)), ipt((s * 0.55, s * 0.35)), 0, 0, 180, outline, lw, AA)
    elif shape == "region":
        pts = np.array([[cx - s / 2, cy - s / 3], [cx + s / 2, cy - s / 3],
                        [cx + s / 2, cy + s / 3], [cx - s / 2, cy + s / 3]])
        for i in range(4):
            a, b = pts[i], pts[(i + 1) % 4]
            for t in np.arange(0, 1, 0.25):
                cv2.line(img, ipt(a + (b - a) * t), ipt(a + (b - a) * (t + 0.14)), rgb, 2 * lw,
                         AA)
    else:  # box: oblique cube
        h = s * 0.8
        d = s * 0.22
        front = np.array([[cx - h / 2, cy - h / 2 + d / 2], [cx + h / 2 - d, cy - h / 2 + d / 2],
                          [cx + h / 2 - d, cy + h / 2], [cx - h / 2, cy + h / 2]])
        top = np.array([front[0], front[0] + [d, -d], front[1] + [d, -d], front[1]])
        side = np.array([front[1], front[1] + [d, -d], front[2] + [d, -d], front[2]])
        for poly, c in ((front, rgb), (top, light), (side, dark)):
            cv2.fillConvexPoly(img, shift_pts(poly), c, AA, shift=4)
            cv2.polylines(img, [shift_pts(poly)], True, outline, lw, AA, shift=4)


def glyph_params(p: dict, key: str, default_shape="box", default_rgb=(150, 150, 150)):
    """(shape, rgb) of a glyph parameter (``{"shape": ..., "rgb": ...}``) of a cue."""
    g = p.get(key) or {}
    return g.get("shape", default_shape), tuple(int(c) for c in g.get("rgb", default_rgb))


# ----------------------------------------------------------------------------- the arm

#: colour of each arm's badge: the letter says it, the colour repeats it for small images
ARM_COLORS = {"left": (30, 110, 235), "right": (245, 125, 20)}


def arm_badge(img, anchor: Anchor2D | None, arm: str | None, step: int | None = None) -> None:
    """The arm that must act, as a rounded tag ("L" / "R", "1L" with a step number) beside
    the anchor's right edge (left edge when there is no room). Nothing without an arm."""
    if anchor is None or arm not in ARM_COLORS:
        return
    label = (f"{step}" if step else "") + arm[0].upper()
    sc = img_scale(img)
    font_scale, th = 0.42 * sc, stroke(img, 1.4)
    (tw, tht), _ = cv2.getTextSize(label, FONT, font_scale, th)
    pad = 3 * sc
    w, h = tw + 2 * pad, tht + 2 * pad
    x = anchor.uv[0] + anchor.radius_px + 3 * sc
    if x + w > img.shape[1]:
        x = anchor.uv[0] - anchor.radius_px - 3 * sc - w
    y = float(np.clip(anchor.uv[1] - h / 2, 0, img.shape[0] - h))
    x = float(np.clip(x, 0, img.shape[1] - w))
    cv2.rectangle(img, ipt((x - 1, y - 1)), ipt((x + w + 1, y + h + 1)), DARK, -1, AA)
    cv2.rectangle(img, ipt((x, y)), ipt((x + w, y + h)), ARM_COLORS[arm], -1, AA)
    cv2.putText(img, label, ipt((x + pad, y + pad + tht)), FONT, font_scale, WHITE, th, AA)


def arm_badges(img, ctx: CueContext, params: dict) -> None:
    """Badges of every step's arm: ``params['arms']`` ([(role, arm, step)]), drawn at the
    roles' anchors (a one-step task: ("source", arm, None))."""
    for role, arm, step in params.get("arms") or ():
        arm_badge(img, ctx.get(role), arm, step)
