"""The eight LIBERO-VIFO visual cue families (F1-F8) drawn with OpenCV / numpy.

Common interface: a ``CueSpec`` (family, variant, rendering parameters, anchors / region,
insertion mode, the task it conveys) and ``draw(image, cue, context) -> image``. ``context`` is a
``CueContext`` with the anchors already projected into this image (``Anchor2D``, or None where
an anchor was dropped because it is behind the camera or off-image) and, for the ghost
trajectory, the pre-rendered future-state layers. ``draw`` never modifies its input; it returns
a new RGB uint8 image. Colours are RGB (MuJoCo renders RGB).

    F1 text        text overlay in a fixed region
    F2 geometric   arrows, paths, target regions, markers (scene-anchored)
    F3 ghost       future object states alpha-composited (simulator-state overlay)
    F4 pictorial   small inset panel demonstrating the task (fixed region)
    F5 gesture     drawn hand / pointing glyph (scene-anchored)
    F6 signage     robot-oriented signs: 8 categories, frame/actor/predicate/target/modifier
    F7 highlight   spotlight, dimming, outline, glow, light beam (scene-anchored)
    F8 code        QR (cv2.QRCodeEncoder) and ArUco (cv2.aruco) codes that OpenCV decodes

Scene-anchored elements whose anchors were dropped are not drawn (an arrow needs both ends).
Sizes scale with the image height (reference 240 px), fixed regions are normalised boxes.
"""
from __future__ import annotations

import hashlib
import textwrap
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Callable

import cv2
import numpy as np

__all__ = [
    "SCENE_ANCHORED", "FIXED_REGION", "STATE_OVERLAY", "AnchorRef", "Anchor2D", "CueSpec",
    "CueContext", "GhostLayer", "Family", "FAMILIES", "register_family", "family", "draw",
    "composite_layers", "foreground_mask", "SignSpec", "SIGN_CATEGORIES", "render_sign",
    "region_to_pixels", "list_variants", "qr_payload", "aruco_dictionary",
]

SCENE_ANCHORED = "scene_anchored"
FIXED_REGION = "fixed_region"
STATE_OVERLAY = "state_overlay"
INSERTION_MODES = (SCENE_ANCHORED, FIXED_REGION, STATE_OVERLAY)

_FONT = cv2.FONT_HERSHEY_SIMPLEX
_AA = cv2.LINE_AA
CUE_COLOR = (255, 0, 255)  # magenta: absent from the RoboFollow scenes
DARK = (20, 20, 20)
WHITE = (255, 255, 255)


# ----------------------------------------------------------------------------- data types

@dataclass(frozen=True)
class AnchorRef:
    """A 3D anchor: a world object (by name; "tcp:left" for a tool centre point) or a point.

    ``offset`` is added in the world frame (e.g. the placement point "behind" the target).
    ``radius_m`` sets the anchor's apparent size; ``outline`` asks for the projected outline of
    the object's box (highlights, boxes); ``ground_radius_m`` projects a horizontal circle
    around the anchor (target regions on the table).
    """
    entity: str | None = None
    point: tuple[float, float, float] | None = None
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius_m: float | None = None
    outline: bool = False
    ground_radius_m: float | None = None


@dataclass
class Anchor2D:
    """An anchor projected into one image (pixel-index coordinates)."""
    uv: np.ndarray  # (2,) float
    radius_px: float = 8.0
    depth: float = 1.0
    outline: np.ndarray | None = None  # (M, 2) convex outline of the object
    region: np.ndarray | None = None  # (M, 2) projected ground circle

    @property
    def pt(self) -> tuple[int, int]:
        return int(round(self.uv[0])), int(round(self.uv[1]))


@dataclass
class GhostLayer:
    """One future-state foreground layer G_i: an RGB image and its soft mask in [0, 1]."""
    image: np.ndarray  # (H, W, 3) uint8
    mask: np.ndarray  # (H, W) float32 in [0, 1] (bool accepted)
    alpha: float | None = None  # overrides the variant's opacity schedule


@dataclass
class CueSpec:
    """C = (e_src, e_tgt, r_task, f_cue, v_cue, m_insert, phi)  (LIBERO-VIFO eq. 2).

    ``task`` carries e_src / e_tgt / r_task (a ``GroundedTask`` or ``ParsedTask``),
    ``family`` / ``variant`` are f_cue / v_cue, ``insertion`` is m_insert (None: the family's
    default) and ``params`` is phi. ``anchors`` (role -> AnchorRef; roles "source", "target",
    "target_object", "step1", ...) are used by scene-anchored cues, ``region`` (normalised
    x/W, y/H, w/W, h/H) by fixed-region cues (None: the family's default region).
    """
    family: str
    variant: str
    params: dict = field(default_factory=dict)
    anchors: dict[str, AnchorRef] = field(default_factory=dict)
    region: tuple[float, float, float, float] | None = None
    insertion: str | None = None
    task: object = None

    @property
    def code(self) -> str:
        return family(self.family).code

    @property
    def mode(self) -> str:
        return self.insertion or family(self.family).default_insertion

    @property
    def box(self) -> tuple[float, float, float, float]:
        f = family(self.family)
        return self.region or f.default_regions.get(self.variant) or f.default_regions["*"]


@dataclass
class CueContext:
    anchors: dict[str, Anchor2D | None] = field(default_factory=dict)
    layers: list[GhostLayer] = field(default_factory=list)
    frame_index: int = 0

    def get(self, role: str) -> Anchor2D | None:
        return self.anchors.get(role)


@dataclass(frozen=True)
class Family:
    code: str  # "F1"
    name: str  # "text"
    title: str
    default_insertion: str
    variants: dict[str, str]  # variant -> one-line description
    draw: Callable[[np.ndarray, CueSpec, CueContext], None]  # draws in place on a copy
    default_regions: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)


FAMILIES: dict[str, Family] = {}
_ALIASES: dict[str, str] = {}


def register_family(fam: Family) -> Family:
    FAMILIES[fam.code] = fam
    for key in (fam.code, fam.code.lower(), fam.name, fam.title.lower()):
        _ALIASES[key] = fam.code
    return fam


def family(key: str) -> Family:
    code = _ALIASES.get(key) or _ALIASES.get(str(key).lower())
    if code is None:
        raise ValueError(f"unknown cue family {key!r}; valid: "
                         + ", ".join(f"{f.code} ({f.name})" for f in FAMILIES.values()))
    return FAMILIES[code]


def list_variants() -> dict[str, list[str]]:
    return {f"{f.code} {f.name}": list(f.variants) for f in FAMILIES.values()}


def draw(image: np.ndarray, cue: CueSpec, context: CueContext | None = None) -> np.ndarray:
    """Draw ``cue`` on a copy of ``image`` (H, W, 3 uint8 RGB) and return it."""
    fam = family(cue.family)
    if cue.variant not in fam.variants:
        raise ValueError(f"unknown variant {cue.variant!r} for {fam.code} {fam.name}; valid: "
                         + ", ".join(fam.variants))
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"image must be (H, W, 3) uint8, got {img.shape} {img.dtype}")
    out = np.ascontiguousarray(img).copy()
    fam.draw(out, cue, context or CueContext())
    return out


# ----------------------------------------------------------------------------- helpers

def region_to_pixels(box, width: int, height: int) -> tuple[int, int, int, int]:
    """Normalised (x/W, y/H, w/W, h/H) -> integer pixel box (x0, y0, x1, y1), x1/y1 exclusive."""
    x, y, w, h = (float(v) for v in box)
    if w <= 0 or h <= 0:
        raise ValueError(f"region {box} has no area")
    x0 = int(np.clip(round(x * width), 0, width - 1))
    y0 = int(np.clip(round(y * height), 0, height - 1))
    x1 = int(np.clip(round((x + w) * width), x0 + 1, width))
    y1 = int(np.clip(round((y + h) * height), y0 + 1, height))
    return x0, y0, x1, y1


def _scale(img: np.ndarray) -> float:
    return img.shape[0] / 240.0


def _th(img: np.ndarray, base: float) -> int:
    return max(1, int(round(base * _scale(img))))


def _blend_rect(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, color, alpha: float) -> None:
    roi = img[y0:y1, x0:x1]
    if roi.size:
        fill = np.empty_like(roi)
        fill[:] = color
        cv2.addWeighted(fill, alpha, roi, 1.0 - alpha, 0.0, dst=roi)


def _ipt(p) -> tuple[int, int]:
    return int(round(float(p[0]))), int(round(float(p[1])))


def _shift_pts(pts: np.ndarray) -> np.ndarray:
    """Float points -> int32 with 4 fractional bits (sub-pixel drawing with shift=4)."""
    return np.round(np.asarray(pts, float) * 16).astype(np.int32)


def _text_block(img, lines, org_xy, scale, thickness, color, outline=None, line_h=None):
    x, y = org_xy
    lh = line_h or int(cv2.getTextSize("Ag", _FONT, scale, thickness)[0][1] * 1.6) + 2
    for i, line in enumerate(lines):
        yy = y + i * lh
        if outline is not None:  # same thickness, shifted: Hershey advance depends on thickness
            for dx, dy in ((-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)):
                cv2.putText(img, line, (x + dx, yy + dy), _FONT, scale, outline, thickness, _AA)
        cv2.putText(img, line, (x, yy), _FONT, scale, color, thickness, _AA)


@lru_cache(maxsize=512)
def _fit_text(text: str, w: int, h: int, max_scale: float = 1.0):
    """Largest font scale whose word-wrapped text fits w x h: (lines, scale, thickness, line_h)."""
    scale = max_scale
    while True:
        th = max(1, int(round(scale * 1.6)))
        (cw, ch), base = cv2.getTextSize("n", _FONT, scale, th)
        line_h = int(ch * 1.45) + 2
        chars = max(1, int(w / max(cw, 1)))
        lines = textwrap.wrap(text, width=chars) or [""]
        while lines and max(cv2.getTextSize(s, _FONT, scale, th)[0][0] for s in lines) > w \
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


def _anchors(ctx: CueContext, *roles: str) -> list[Anchor2D] | None:
    out = [ctx.get(r) for r in roles]
    return None if any(a is None for a in out) else out


def _trim(a: np.ndarray, b: np.ndarray, ra: float, rb: float):
    d = b - a
    n = float(np.hypot(*d))
    if n < 1e-6:
        return a, b, n
    u = d / n
    ra, rb = min(ra, 0.35 * n), min(rb, 0.35 * n)
    return a + u * ra, b - u * rb, n


def _bezier(a: np.ndarray, b: np.ndarray, bend: float = 0.3, n: int = 24) -> np.ndarray:
    """Quadratic curve a -> b bulging towards the top of the image by ``bend`` x length."""
    d = b - a
    perp = np.array([d[1], -d[0]])
    if perp[1] > 0:
        perp = -perp
    ctrl = (a + b) / 2 + bend * perp
    t = np.linspace(0.0, 1.0, n)[:, None]
    return (1 - t) ** 2 * a + 2 * (1 - t) * t * ctrl + t ** 2 * b


def _arrow_head(img, tip, direction, size, color, outline=None):
    d = np.asarray(direction, float)
    n = np.hypot(*d)
    if n < 1e-6:
        return
    d /= n
    p = np.array([-d[1], d[0]])
    tip = np.asarray(tip, float)
    tri = np.array([tip, tip - d * size + p * size * 0.55, tip - d * size - p * size * 0.55])
    if outline is not None:
        cv2.polylines(img, [_shift_pts(tri)], True, outline, 2, _AA, shift=4)
    cv2.fillConvexPoly(img, _shift_pts(tri), color, _AA, shift=4)


def _polyline(img, pts, color, thickness, outline=DARK, dashed=False):
    P = _shift_pts(pts)
    if dashed:
        segs = [P[i:i + 2] for i in range(0, len(P) - 1, 2)]
        if outline is not None:
            cv2.polylines(img, segs, False, outline, thickness + 2, _AA, shift=4)
        cv2.polylines(img, segs, False, color, thickness, _AA, shift=4)
        return
    if outline is not None:
        cv2.polylines(img, [P], False, outline, thickness + 2, _AA, shift=4)
    cv2.polylines(img, [P], False, color, thickness, _AA, shift=4)


def _col(params: dict, key: str = "color", default=CUE_COLOR) -> tuple[int, int, int]:
    c = params.get(key, default)
    return tuple(int(v) for v in c[:3])


def _task_text(cue: CueSpec) -> str:
    if "text" in cue.params:
        return str(cue.params["text"])
    task = cue.task
    parsed = getattr(task, "parsed", task)
    if parsed is not None and hasattr(parsed, "instruction"):
        return parsed.instruction.strip()
    raise ValueError("text cue needs params['text'] or a task")


# ============================================================================ F1 text overlay

def _draw_text(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    text = _task_text(cue)
    v = cue.variant
    pad = max(2, int(round(4 * _scale(img))))
    if v == "caps":
        text = text.upper()
    lines, scale, th, line_h, ch = _fit_text(text, x1 - x0 - 2 * pad, y1 - y0 - 2 * pad,
                                             float(cue.params.get("max_scale", 0.6 * _scale(img))))
    block_h = line_h * len(lines)
    ty = y0 + pad + max(0, (y1 - y0 - 2 * pad - block_h) // 2) + ch + (line_h - ch) // 2 - 1
    fg = _col(cue.params, "text_color", WHITE)
    if v == "banner":
        bg = _col(cue.params, "background", (25, 35, 80))
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), bg, -1)
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), WHITE, 1)
        _text_block(img, lines, (x0 + pad, ty), scale, th, fg, line_h=line_h)
    elif v == "sticky_note":
        sh = max(1, pad // 2)
        _blend_rect(img, x0 + sh, y0 + sh, x1, y1, (0, 0, 0), 0.35)
        cv2.rectangle(img, (x0, y0), (x1 - 1 - sh, y1 - 1 - sh), (252, 232, 100), -1)
        cv2.rectangle(img, (x0 + (x1 - x0) // 3, y0), (x0 + 2 * (x1 - x0) // 3, y0 + pad),
                      (215, 215, 200), -1)
        ink = _col(cue.params, "text_color", (30, 30, 90))
        _text_block(img, lines, (x0 + pad, ty), scale, th, ink, line_h=line_h)
    elif v == "subtitle":
        _blend_rect(img, x0, y0, x1, y1, (0, 0, 0), float(cue.params.get("alpha", 0.6)))
        _text_block(img, lines, (x0 + pad, ty), scale, th, fg, line_h=line_h)
    elif v in ("outlined", "caps"):
        _text_block(img, lines, (x0 + pad, ty), scale, th, fg, outline=DARK, line_h=line_h)
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


# ============================================================================ F2 geometric

def _draw_geometric(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    v, p = cue.variant, cue.params
    color = _col(p)
    th = _th(img, p.get("thickness", 3))
    head = 9 * _scale(img)
    if v in ("arrow", "curved_path", "dashed_path"):
        ab = _anchors(ctx, "source", "target")
        if ab is None:
            return
        a, b = ab
        s, e, n = _trim(a.uv, b.uv, a.radius_px * 1.1, b.radius_px * 0.3)
        if n < 3:
            cv2.circle(img, a.pt, max(3, int(a.radius_px)), color, th, _AA)
            return
        if v == "arrow":
            pts = np.array([s, e])
        else:
            pts = _bezier(s, e, float(p.get("bend", 0.3)))
        tip_dir = pts[-1] - pts[-2]
        body = pts.copy()
        body[-1] = pts[-1] - tip_dir / max(np.hypot(*tip_dir), 1e-6) * head * 0.8
        _polyline(img, body, color, th, dashed=(v == "dashed_path"))
        _arrow_head(img, pts[-1], tip_dir, head * 1.3, color, outline=DARK)
    elif v == "target_region":
        t = ctx.get(p.get("role", "target"))
        if t is None:
            return
        overlay = img.copy()
        if t.region is not None and len(t.region) >= 3:
            poly = _shift_pts(t.region)
            cv2.fillPoly(overlay, [poly], color, _AA, shift=4)
            cv2.addWeighted(overlay, 0.35, img, 0.65, 0, dst=img)
            cv2.polylines(img, [poly], True, color, th, _AA, shift=4)
        else:
            r = max(4.0, 1.6 * t.radius_px)
            axes = (int(round(r)), int(round(r * 0.6)))
            cv2.ellipse(overlay, t.pt, axes, 0, 0, 360, color, -1, _AA)
            cv2.addWeighted(overlay, 0.35, img, 0.65, 0, dst=img)
            cv2.ellipse(img, t.pt, axes, 0, 0, 360, color, th, _AA)
    elif v == "crosshair":
        a = ctx.get(p.get("role", "source"))
        if a is None:
            return
        r = max(6.0, 1.6 * a.radius_px)
        c = a.uv
        cv2.circle(img, _ipt(c), int(round(r)), DARK, th + 2, _AA)
        cv2.circle(img, _ipt(c), int(round(r)), color, th, _AA)
        for d in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            d = np.asarray(d, float)
            seg = np.array([c + d * r * 0.55, c + d * r * 1.45])
            _polyline(img, seg, color, th)
    elif v == "bbox":
        a = ctx.get(p.get("role", "source"))
        if a is None:
            return
        if a.outline is not None:
            lo, hi = a.outline.min(axis=0), a.outline.max(axis=0)
        else:
            lo, hi = a.uv - a.radius_px, a.uv + a.radius_px
        m = 3 * _scale(img)
        p0, p1 = _ipt(lo - m), _ipt(hi + m)
        cv2.rectangle(img, p0, p1, DARK, th + 2, _AA)
        cv2.rectangle(img, p0, p1, color, th, _AA)
    elif v == "numbered":
        roles = p.get("roles") or sorted(r for r in ctx.anchors if r.startswith("step")) \
            or ["source", "target"]
        for i, role in enumerate(roles, 1):
            a = ctx.get(role)
            if a is None:
                continue
            r = int(round(max(7 * _scale(img), 0.9 * a.radius_px)))
            c = _ipt(a.uv - np.array([0.0, a.radius_px + r + 2]))
            cv2.circle(img, c, r + 1, DARK, -1, _AA)
            cv2.circle(img, c, r, color, -1, _AA)
            sc = 0.45 * _scale(img)
            (tw, tht), _ = cv2.getTextSize(str(i), _FONT, sc, _th(img, 1.5))
            cv2.putText(img, str(i), (c[0] - tw // 2, c[1] + tht // 2), _FONT, sc, WHITE,
                        _th(img, 1.5), _AA)
            cv2.line(img, (c[0], c[1] + r), a.pt, color, 1, _AA)
    else:  # pragma: no cover
        raise ValueError(v)


register_family(Family(
    "F2", "geometric", "Geometric Symbol", SCENE_ANCHORED,
    {"arrow": "straight arrow from the source to the target placement point",
     "curved_path": "curved path with an arrow head, source -> target",
     "dashed_path": "dashed curved path with an arrow head",
     "target_region": "translucent region on the table at the target",
     "crosshair": "reticle on the source object",
     "bbox": "box around the source object",
     "numbered": "numbered markers (1 = source / first step, 2 = target / next step)"},
    _draw_geometric, {"*": (0.0, 0.0, 1.0, 1.0)},
))


# ============================================================================ F3 ghost trajectory

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
    layers = ctx.layers
    if not layers:
        return
    v, p = cue.variant, cue.params
    alphas = [la.alpha if la.alpha is not None else a
              for la, a in zip(layers, _ghost_alphas(v, len(layers), p))]
    tint = _col(p, "tint", (80, 200, 255)) if v == "tinted" else None
    img[:] = composite_layers(img, layers, alphas, tint=tint)
    if v == "trail":
        cents = []
        for la in layers:
            mo = cv2.moments(np.asarray(la.mask, np.float32))
            if mo["m00"] > 0:
                cents.append((mo["m10"] / mo["m00"], mo["m01"] / mo["m00"]))
        if len(cents) >= 2:
            pts = np.asarray(cents)
            _polyline(img, pts, _col(p), _th(img, 2), dashed=True)
            _arrow_head(img, pts[-1], pts[-1] - pts[-2], 8 * _scale(img), _col(p), outline=DARK)


register_family(Family(
    "F3", "ghost", "Ghost Trajectory", STATE_OVERLAY,
    {"uniform": "every future state at the same opacity",
     "fade": "opacity rising towards the final state",
     "final": "only the final (goal) state",
     "tinted": "future states tinted in a cue colour",
     "trail": "uniform ghosts plus a dashed trail through their centres"},
    _draw_ghost, {"*": (0.0, 0.0, 1.0, 1.0)},
))


# ============================================================================ glyphs (F4, F6)

def _glyph(img, shape: str, rgb, center, size: float, outline=DARK) -> None:
    """Small oblique icon of a primitive object (box / sphere / cylinder / bowl / region)."""
    cx, cy = float(center[0]), float(center[1])
    s = float(size)
    rgb = tuple(int(c) for c in rgb)
    dark = tuple(int(c * 0.65) for c in rgb)
    light = tuple(int(min(255, c * 0.6 + 100)) for c in rgb)
    if shape == "sphere":
        cv2.circle(img, _ipt((cx, cy)), int(round(s / 2)), outline, -1, _AA)
        cv2.circle(img, _ipt((cx, cy)), max(1, int(round(s / 2 - 1))), rgb, -1, _AA)
        shine = max(1, int(round(s * 0.12)))
        cv2.circle(img, _ipt((cx - s * 0.15, cy - s * 0.15)), shine, light, -1, _AA)
    elif shape == "cylinder":
        w, h, e = s * 0.8, s, s * 0.15  # e: ellipse half height of the caps
        y_top, y_bot = cy - h / 2 + e, cy + h / 2 - e
        axes = _ipt((w / 2, e))
        cv2.rectangle(img, _ipt((cx - w / 2, y_top)), _ipt((cx + w / 2, y_bot)), rgb, -1)
        cv2.ellipse(img, _ipt((cx, y_bot)), axes, 0, 0, 180, rgb, -1, _AA)
        cv2.ellipse(img, _ipt((cx, y_top)), axes, 0, 0, 360, light, -1, _AA)
        cv2.ellipse(img, _ipt((cx, y_top)), axes, 0, 0, 360, outline, 1, _AA)
        for sx in (-1, 1):
            cv2.line(img, _ipt((cx + sx * w / 2, y_top)), _ipt((cx + sx * w / 2, y_bot)), outline,
                     1, _AA)
    elif shape in ("bowl", "mesh"):
        cv2.ellipse(img, _ipt((cx, cy)), _ipt((s * 0.55, s * 0.35)), 0, 0, 180, rgb, -1, _AA)
        cv2.ellipse(img, _ipt((cx, cy)), _ipt((s * 0.55, s * 0.14)), 0, 0, 360, dark, -1, _AA)
        cv2.ellipse(img, _ipt((cx, cy)), _ipt((s * 0.55, s * 0.35)), 0, 0, 180, outline, 1, _AA)
    elif shape == "region":
        pts = np.array([[cx - s / 2, cy - s / 3], [cx + s / 2, cy - s / 3],
                        [cx + s / 2, cy + s / 3], [cx - s / 2, cy + s / 3]])
        for i in range(4):
            a, b = pts[i], pts[(i + 1) % 4]
            for t in np.arange(0, 1, 0.25):
                cv2.line(img, _ipt(a + (b - a) * t), _ipt(a + (b - a) * (t + 0.14)), rgb, 2, _AA)
    else:  # box: oblique cube
        h = s * 0.8
        d = s * 0.22
        front = np.array([[cx - h / 2, cy - h / 2 + d / 2], [cx + h / 2 - d, cy - h / 2 + d / 2],
                          [cx + h / 2 - d, cy + h / 2], [cx - h / 2, cy + h / 2]])
        top = np.array([front[0], front[0] + [d, -d], front[1] + [d, -d], front[1]])
        side = np.array([front[1], front[1] + [d, -d], front[2] + [d, -d], front[2]])
        for poly, c in ((front, rgb), (top, light), (side, dark)):
            cv2.fillConvexPoly(img, _shift_pts(poly), c, _AA, shift=4)
            cv2.polylines(img, [_shift_pts(poly)], True, outline, 1, _AA, shift=4)


# ============================================================================ F4 pictorial

_REL_PANEL_DIR = {"left_of": (-1, 0), "right_of": (1, 0), "behind": (0, -1), "in_front_of": (0, 1),
                  "beside": (1, 0), "near": (1, 0), "towards": (-1, 0)}


def _glyph_params(p: dict, key: str, default_shape="box", default_rgb=(150, 150, 150)):
    g = p.get(key) or {}
    return g.get("shape", default_shape), tuple(int(c) for c in g.get("rgb", default_rgb))


def _panel_scene(img, rect, p, after: bool, show_motion: bool) -> None:
    """Top-down-ish schematic of the task inside rect (x0, y0, x1, y1)."""
    x0, y0, x1, y1 = rect
    w, h = x1 - x0, y1 - y0
    s = min(w, h) * 0.3
    relation = p.get("relation")
    action = p.get("action", "place" if relation else "pick")
    src_shape, src_rgb = _glyph_params(p, "source_glyph")
    tgt_shape, tgt_rgb = _glyph_params(p, "target_glyph", "box", (120, 120, 120))
    center = np.array([x0 + w * 0.5, y0 + h * 0.55])
    start = np.array([x0 + w * 0.2, y0 + h * 0.78])
    if action in ("pick",) or relation is None:
        goal = np.array([center[0], y0 + h * 0.3])
        start = np.array([center[0], y0 + h * 0.72])
        cur = goal if after else start
        if after:
            _glyph(img, src_shape, (200, 200, 200), start, s * 0.9, outline=(150, 150, 150))
        _glyph(img, src_shape, src_rgb, cur, s)
        # gripper above the object
        gy = cur[1] - s * 0.95
        gx = cur[0]
        col = (60, 60, 60)
        cv2.line(img, _ipt((gx - s * 0.5, gy)), _ipt((gx + s * 0.5, gy)), col, 2, _AA)
        cv2.line(img, _ipt((gx - s * 0.5, gy)), _ipt((gx - s * 0.5, gy + s * 0.45)), col, 2, _AA)
        cv2.line(img, _ipt((gx + s * 0.5, gy)), _ipt((gx + s * 0.5, gy + s * 0.45)), col, 2, _AA)
        cv2.line(img, _ipt((gx, gy)), _ipt((gx, gy - s * 0.4)), col, 2, _AA)
        if show_motion:
            a = start + np.array([s * 0.95, 0])
            b = goal + np.array([s * 0.95, 0])
            _polyline(img, np.array([a, b + [0, s * 0.3]]), CUE_COLOR, 2, outline=None)
            _arrow_head(img, b, b - a, s * 0.45, CUE_COLOR)
        return
    tgt_c = center.copy()
    if relation in ("on", "in", "above"):
        goal = tgt_c - np.array([0, s * (0.55 if relation == "on" else 0.2)])
    else:
        d = np.asarray(_REL_PANEL_DIR.get(relation, (1, 0)), float)
        goal = tgt_c + d * s * 1.25
        if relation == "towards":
            goal = tgt_c + np.array([-s * 1.05, 0])
    _glyph(img, tgt_shape, tgt_rgb, tgt_c, s * 1.1)
    if after:
        _glyph(img, src_shape, src_rgb, goal, s * 0.9)
    else:
        _glyph(img, src_shape, src_rgb, start, s * 0.9)
        if show_motion:
            cv2.circle(img, _ipt(goal), int(s * 0.5), CUE_COLOR, 1, _AA)
            pts = _bezier(start + (goal - start) * 0.12, goal + (start - goal) * 0.2, 0.25, 12)
            _polyline(img, pts, CUE_COLOR, 2, outline=None, dashed=True)
            _arrow_head(img, pts[-1], pts[-1] - pts[-2], s * 0.45, CUE_COLOR)


def _panel_frame(img, rect, title=None):
    x0, y0, x1, y1 = rect
    cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), (238, 236, 228), -1)
    cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), (60, 60, 60), 1)
    if title:
        sc = max(0.28, (y1 - y0) / 240.0)
        org = (x0 + 3, y0 + max(8, int(round(30 * sc))))
        cv2.putText(img, title, org, _FONT, sc, (60, 60, 60), 1, _AA)


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
        gap = max(6, w // 16)
        _panel_frame(panel, (0, 0, half - gap // 2, h), "1")
        _panel_frame(panel, (half + gap // 2, 0, w, h), "2")
        panel[:, half - gap // 2:half + gap // 2] = (255, 255, 255)
        _panel_scene(panel, (0, 0, half - gap // 2, h), p, after=False, show_motion=False)
        _panel_scene(panel, (half + gap // 2, 0, w, h), p, after=True, show_motion=False)
        _arrow_head(panel, (half + gap // 2 - 1, h / 2), (1, 0), gap * 0.9, CUE_COLOR)
    elif variant == "before_after":
        _panel_frame(panel, (0, 0, w, h))
        _panel_scene(panel, (0, 0, w, h), p, after=True, show_motion=False)
        cv2.putText(panel, "GOAL", (3, max(10, h // 7)), _FONT, max(0.3, h / 260), (40, 120, 40),
                    1, _AA)
    return panel


def _hashable(p: dict) -> tuple:
    out = []
    for k in ("relation", "action", "source_glyph", "target_glyph"):
        v = p.get(k)
        if isinstance(v, dict):
            v = tuple(sorted((kk, tuple(vv) if isinstance(vv, (list, np.ndarray)) else vv)
                             for kk, vv in v.items()))
        out.append((k, v))
    return tuple(out)


def _draw_pictorial(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
    w, h = x1 - x0, y1 - y0
    if cue.variant == "goal_image":
        src = cue.params.get("image")
        if src is None:
            raise ValueError("F4 goal_image needs params['image'] (e.g. a rendered goal state)")
        inset = cv2.resize(np.asarray(src, np.uint8), (w - 4, h - 4), interpolation=cv2.INTER_AREA)
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), (255, 255, 255), -1)
        img[y0 + 2:y1 - 2, x0 + 2:x1 - 2] = inset
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), (40, 160, 40), 2)
        sc = max(0.3, h / 200)
        org = (x0 + 4, y0 + int(14 * sc / 0.4))
        cv2.putText(img, "GOAL", org, _FONT, sc, (255, 255, 255), 3, _AA)
        cv2.putText(img, "GOAL", org, _FONT, sc, (40, 160, 40), 1, _AA)
        return
    p = dict(cue.params)
    task = cue.task
    if "relation" not in p and task is not None:
        p["relation"] = getattr(task, "relation", None)
        p["action"] = getattr(task, "action", None)
    img[y0:y1, x0:x1] = _panel_cached(cue.variant, _hashable(p), w, h)


register_family(Family(
    "F4", "pictorial", "Pictorial Demonstration", FIXED_REGION,
    {"schematic": "inset diagram: source object, target, dashed motion arrow to the goal",
     "storyboard": "two panels, before -> after",
     "before_after": "single 'GOAL' panel with the final arrangement",
     "goal_image": "inset of a caller-provided goal image (e.g. a rendered goal state)"},
    _draw_pictorial, {"*": (0.64, 0.02, 0.34, 0.30), "storyboard": (0.50, 0.02, 0.48, 0.28)},
))


# ============================================================================ F5 hand gesture

SKIN = (238, 196, 160)
SKIN_EDGE = (120, 70, 40)
SLEEVE = (60, 90, 170)


def _rot(theta: float) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s], [s, c]])


def _draw_hand(img, tip, direction, size: float, pose: str = "point") -> None:
    """A hand glyph; for "point" the index fingertip is at ``tip`` pointing along ``direction``.

    Local frame: +x along the pointing direction, fingertip at the origin, hand behind it.
    """
    d = np.asarray(direction, float)
    d = d / max(np.hypot(*d), 1e-9)
    theta = np.arctan2(d[1], d[0])
    R = _rot(theta)
    L = float(size)
    tip = np.asarray(tip, float)

    def P(x, y):
        return tip + R @ np.array([x * L, y * L])

    edge_t = max(1, int(round(L * 0.04)))
    side = 1.0 if np.cos(theta) >= 0 else -1.0  # keep the thumb on the upper side
    if pose == "point":
        parts = [
            ("line", P(-0.45, 0), P(-0.05, 0), 0.15),  # index finger
            ("circle", P(-0.5, 0.14 * side), 0.085),  # curled fingers (knuckles)
            ("circle", P(-0.53, 0.25 * side), 0.08),
            ("circle", P(-0.57, 0.34 * side), 0.075),
            ("ellipse", P(-0.74, 0.12 * side), (0.25, 0.24)),  # palm
            ("line", P(-0.78, -0.1 * side), P(-0.52, -0.16 * side), 0.13),  # thumb
        ]
        cuff = (P(-1.12, 0.1 * side), P(-0.95, 0.1 * side), 0.34)
    else:  # "open" (grasp): fingers spread towards the tip
        parts = [("ellipse", P(-0.6, 0), (0.26, 0.27))]
        for k, y in enumerate((-0.21, -0.07, 0.07, 0.21)):
            reach = -0.05 if k in (1, 2) else -0.1  # middle fingers are longer
            parts.append(("line", P(-0.48, y), P(reach, y * 1.3), 0.11))
        parts.append(("line", P(-0.66, -0.27 * side), P(-0.38, -0.48 * side), 0.12))
        cuff = (P(-1.0, 0), P(-0.82, 0), 0.36)

    a, b, w = cuff
    cv2.line(img, _ipt(a), _ipt(b), SKIN_EDGE, max(2, int(round(w * L)) + 2 * edge_t), cv2.LINE_AA)
    cv2.line(img, _ipt(a), _ipt(b), SLEEVE, max(1, int(round(w * L))), cv2.LINE_AA)
    for layer, grow in ((SKIN_EDGE, edge_t), (SKIN, 0)):
        for part in parts:
            if part[0] == "line":
                _, a, b, w = part
                cv2.line(img, _ipt(a), _ipt(b), layer, max(1, int(round(w * L)) + 2 * grow), _AA)
            elif part[0] == "circle":
                _, c, r = part
                cv2.circle(img, _ipt(c), max(1, int(round(r * L)) + grow), layer, -1, _AA)
            else:
                _, c, (rx, ry) = part
                axes = (max(1, int(round(rx * L)) + grow), max(1, int(round(ry * L)) + grow))
                cv2.ellipse(img, _ipt(c), axes, float(np.degrees(theta)), 0, 360, layer, -1, _AA)


def _hand_direction(img, anchor: Anchor2D, prefer=None) -> np.ndarray:
    """The hand comes from below and from the image side nearer the anchor."""
    H, W = img.shape[:2]
    if prefer is not None:
        return np.asarray(prefer, float)
    sx = 1.0 if anchor.uv[0] >= W / 2 else -1.0  # hand on the outer side (covers less scene)
    sy = 1.0 if anchor.uv[1] < H * 0.6 else -1.0  # hand below unless the anchor is low
    return np.array([-sx * 0.8, -sy * 0.6])  # direction from the hand towards the anchor


def _draw_gesture(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    v, p = cue.variant, cue.params
    L = float(p.get("size", 46)) * _scale(img)
    if v in ("point", "point_target"):
        a = ctx.get("source" if v == "point" else p.get("role", "target"))
        if a is None:
            return
        direction = _hand_direction(img, a, p.get("direction"))
        direction = direction / np.hypot(*direction)
        tip = a.uv - direction * (a.radius_px + 2 * _scale(img))
        _draw_hand(img, tip, direction, L, "point")
    elif v == "grasp":
        a = ctx.get("source")
        if a is None:
            return
        direction = np.array([0.0, 1.0])  # from above, fingers down
        tip = a.uv - direction * (a.radius_px * 0.6)
        _draw_hand(img, tip, direction, L, "open")
    elif v == "point_and_move":
        ab = _anchors(ctx, "source", "target")
        if ab is None:
            return
        a, b = ab
        s, e, n = _trim(a.uv, b.uv, a.radius_px * 1.2, b.radius_px * 0.3)
        if n >= 3:
            pts = _bezier(s, e, 0.35)
            _polyline(img, pts[:-1], WHITE, _th(img, 2), outline=DARK, dashed=True)
            _arrow_head(img, pts[-1], pts[-1] - pts[-2], 9 * _scale(img), WHITE, outline=DARK)
        direction = _hand_direction(img, a, p.get("direction"))
        direction = direction / np.hypot(*direction)
        tip = a.uv - direction * (a.radius_px + 2 * _scale(img))
        _draw_hand(img, tip, direction, L, "point")
    else:  # pragma: no cover
        raise ValueError(v)


register_family(Family(
    "F5", "gesture", "Hand Gesture", SCENE_ANCHORED,
    {"point": "hand pointing its index finger at the source object",
     "point_target": "hand pointing at the target placement point",
     "grasp": "open hand over the source, fingers down, as if to grasp",
     "point_and_move": "pointing hand at the source plus a dashed motion arrow to the target"},
    _draw_gesture, {"*": (0.0, 0.0, 1.0, 1.0)},
))


# ============================================================================ F6 signage

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
        cv2.circle(img, _ipt((cx, ty - tsz * 0.35)), int(tsz * 0.22), fg, -1, _AA)
        body = _ipt((tsz * 0.35, tsz * 0.3))
        cv2.ellipse(img, _ipt((cx, ty + tsz * 0.25)), body, 0, 180, 360, fg, -1, _AA)
    elif sign.target_shape == "tool":
        cv2.line(img, _ipt((cx - tsz * 0.5, ty + tsz * 0.4)), _ipt((cx + tsz * 0.3, ty - tsz * 0.3)),
                 fg, 2 * t, _AA)
        cv2.circle(img, _ipt((cx + tsz * 0.35, ty - tsz * 0.35)), int(tsz * 0.2), fg, t, _AA)
    else:
        _glyph(img, sign.target_shape, sign.target_rgb, (cx, ty), tsz, outline=fg)
    # actor a: a two-finger gripper at the top
    if sign.actor != "none":
        ay = c - s * 0.36
        g = s * 0.13
        closing = sign.predicate in ("grasp", "handover")
        spread = g * (0.55 if closing else 0.9)
        cv2.line(img, _ipt((cx, ay - g * 0.8)), _ipt((cx, ay)), fg, 2 * t, _AA)
        cv2.line(img, _ipt((cx - spread, ay)), _ipt((cx + spread, ay)), fg, 2 * t, _AA)
        for sx in (-1, 1):
            finger = (_ipt((cx + sx * spread, ay)), _ipt((cx + sx * spread * 0.8, ay + g)))
            cv2.line(img, *finger, fg, 2 * t, _AA)
    # predicate p: between actor and target
    py = c - s * 0.08
    a = s * 0.12
    pred = sign.predicate
    if pred in ("place", "move"):
        _polyline(img, np.array([[cx, py - a], [cx, py + a * 0.3]]), fg, 2 * t, outline=None)
        _arrow_head(img, (cx, py + a), (0, 1), a * 0.9, fg)
    elif pred == "grasp":
        for sx in (-1, 1):
            _arrow_head(img, (cx + sx * a * 0.4, py), (-sx, 0), a * 0.8, fg)
    elif pred == "avoid":
        pts = np.array([[cx - a * 1.3, py + a * 0.5], [cx - a * 0.6, py - a * 0.5],
                        [cx + a * 0.6, py - a * 0.5], [cx + a * 1.2, py + a * 0.3]])
        _polyline(img, pts, fg, 2 * t, outline=None)
        _arrow_head(img, (cx + a * 1.35, py + a * 0.6), (1, 1), a * 0.7, fg)
    elif pred == "handover":
        _arrow_head(img, (cx + a * 1.2, py - a * 0.3), (1, 0), a * 0.7, fg)
        _arrow_head(img, (cx - a * 1.2, py + a * 0.3), (-1, 0), a * 0.7, fg)
    elif pred == "inspect":
        cv2.circle(img, _ipt((cx - a * 0.2, py)), int(a * 0.6), fg, 2 * t, _AA)
        cv2.line(img, _ipt((cx + a * 0.2, py + a * 0.4)), _ipt((cx + a * 0.8, py + a)), fg, 2 * t,
                 _AA)
    elif pred == "charge":
        bolt = np.array([[cx + a * 0.2, py - a], [cx - a * 0.5, py + a * 0.1], [cx, py + a * 0.1],
                         [cx - a * 0.2, py + a], [cx + a * 0.5, py - a * 0.1], [cx, py - a * 0.1]])
        cv2.fillPoly(img, [_shift_pts(bolt)], fg, _AA, shift=4)
    elif pred == "calibrate":
        cv2.circle(img, _ipt((cx, py)), int(a * 0.7), fg, t, _AA)
        cv2.line(img, _ipt((cx - a, py)), _ipt((cx + a, py)), fg, t, _AA)
        cv2.line(img, _ipt((cx, py - a)), _ipt((cx, py + a)), fg, t, _AA)
    elif pred == "push":
        _arrow_head(img, (cx + a, py), (1, 0), a * 0.9, fg)
        cv2.line(img, _ipt((cx - a, py)), _ipt((cx + a * 0.2, py)), fg, 2 * t, _AA)
    elif pred == "stop":
        cv2.line(img, _ipt((cx - a, py)), _ipt((cx + a, py)), fg, 3 * t, _AA)
    # modifier m
    mod = sign.modifier
    if mod in ("left", "right", "front", "back"):
        d = {"left": (-1, 0), "right": (1, 0), "front": (0, 1), "back": (0, -1)}[mod]
        base = np.array([cx + s * 0.34, c + s * 0.28])
        _arrow_head(img, base + np.array(d) * a * 0.8, d, a * 0.8, fg)
    elif mod == "caution":
        cv2.putText(img, "!", _ipt((cx + s * 0.28, c + s * 0.38)), _FONT, s / 90, fg, 2 * t, _AA)
    elif mod == "ok":
        pts = np.array([[cx + s * 0.22, c + s * 0.22], [cx + s * 0.28, c + s * 0.3],
                        [cx + s * 0.4, c + s * 0.12]])
        _polyline(img, pts, fg, 2 * t, outline=None)


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
        cv2.circle(mask, _ipt((c, c)), int(r), 255, -1, _AA)
        if shape == "disk":
            cv2.circle(img, _ipt((c, c)), int(r), color, -1, _AA)
            cv2.circle(img, _ipt((c, c)), int(r), (255, 255, 255), border // 2, _AA)
        else:
            cv2.circle(img, _ipt((c, c)), int(r), (255, 255, 255), -1, _AA)
    else:
        cv2.fillPoly(mask, [_shift_pts(poly)], 255, _AA, shift=4)
        fill = color
        cv2.fillPoly(img, [_shift_pts(poly)], fill, _AA, shift=4)
        edge = (20, 20, 20) if shape == "triangle" else (255, 255, 255)
        inner = c + (poly - c) * (0.9 if shape != "triangle" else 0.86)
        cv2.polylines(img, [_shift_pts(inner)], True, edge, border, _AA, shift=4)
    pict_s = S * (0.62 if shape in ("triangle", "diamond") else 0.78)
    pc = c + (S * 0.06 if shape == "triangle" else 0.0)
    _sign_pictogram(img, sign, (c, pc), pict_s, fg)
    if shape == "circle_slash":
        cv2.circle(img, _ipt((c, c)), int(r - border * 1.5), color, border * 2, _AA)
        d = (r - border * 2.5) / np.sqrt(2)
        cv2.line(img, _ipt((c - d, c - d)), _ipt((c + d, c + d)), color, border * 2, _AA)
    elif sign.modifier == "not":
        d = r * 0.6
        cv2.line(img, _ipt((c - d, c - d)), _ipt((c + d, c + d)), (210, 30, 30), border * 2, _AA)
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
    shape, rgb = _glyph_params(p, "source_glyph")
    default_pred = {"prohibition": "grasp", "mandatory": "grasp", "permission": "grasp",
                    "hazard": "avoid", "target_zone": "place", "hri": "handover",
                    "maintenance": "inspect", "system_state": "charge"}[cue.variant]
    default_target = {"hri": "human", "maintenance": "tool"}.get(cue.variant, shape)
    return SignSpec(cue.variant, p.get("predicate", default_pred),
                    p.get("target_shape", default_target), tuple(p.get("target_rgb", rgb)),
                    p.get("actor", "gripper"), p.get("modifier"))


def _draw_signage(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    p = cue.params
    role = p.get("role") or ("target" if cue.variant == "target_zone" else "source")
    a = ctx.get(role)
    if a is None:
        return
    H, W = img.shape[:2]
    size = int(round(float(p.get("size", 46)) * _scale(img)))
    tile, alpha = render_sign(sign_for_cue(cue), size)
    gap = 4 * _scale(img)
    cx = a.uv[0]
    cy = a.uv[1] - a.radius_px - gap - size / 2
    if cy - size / 2 < 0:  # no room above: put it below
        cy = a.uv[1] + a.radius_px + gap + size / 2
    cx = float(np.clip(cx, size / 2, W - size / 2))
    cy = float(np.clip(cy, size / 2, H - size / 2))
    # leader line (post) from the sign to the anchor
    edge_y = cy + size / 2 if cy < a.uv[1] else cy - size / 2
    cv2.line(img, _ipt((cx, edge_y)), a.pt, (60, 60, 60), _th(img, 2), _AA)
    cv2.circle(img, a.pt, _th(img, 2), (60, 60, 60), -1, _AA)
    _paste(img, tile, alpha, int(round(cx - size / 2)), int(round(cy - size / 2)))


register_family(Family(
    "F6", "signage", "Visual Signage", SCENE_ANCHORED,
    {k: f"{SIGN_CATEGORIES[k][0]} frame, robot-oriented '{k}' sign" for k in SIGN_CATEGORIES},
    _draw_signage, {"*": (0.0, 0.0, 1.0, 1.0)},
))


# ========================================================================= F7 highlight / lighting

def _soft_mask_small(shape_hw, centers_r, feather: float, down: int = 4) -> np.ndarray:
    """Float32 mask at 1/down resolution: 1 inside the discs, Gaussian-feathered edge."""
    H, W = shape_hw
    h, w = max(1, -(-H // down)), max(1, -(-W // down))
    m = np.zeros((h, w), np.float32)
    for (u, v), r in centers_r:
        cv2.circle(m, _ipt(((u + 0.5) / down - 0.5, (v + 0.5) / down - 0.5)),
                   max(1, int(round(r / down))), 1.0, -1, _AA)
    return cv2.GaussianBlur(m, (0, 0), max(0.5, feather / down))


def _upsample3(small: np.ndarray, W: int, H: int) -> np.ndarray:
    """(h, w) uint8 -> (H, W, 3) uint8, bilinear."""
    return cv2.resize(cv2.cvtColor(small, cv2.COLOR_GRAY2RGB), (W, H),
                      interpolation=cv2.INTER_LINEAR)


def _draw_highlight(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    v, p = cue.variant, cue.params
    roles = p.get("roles", ["source"])
    anchors = [ctx.get(r) for r in roles]
    anchors = [a for a in anchors if a is not None]
    if not anchors:
        return
    H, W = img.shape[:2]
    sc = _scale(img)
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
        color = _col(p, "color", (255, 235, 0))
        for a in anchors:
            if a.outline is not None and len(a.outline) >= 3:
                pts = a.outline.astype(np.float32)
                c = pts.mean(axis=0)
                pts = c + (pts - c) * 1.12 + np.sign(pts - c) * 2 * sc
                P = _shift_pts(pts)
                cv2.polylines(img, [P], True, DARK, _th(img, 4), _AA, shift=4)
                cv2.polylines(img, [P], True, color, _th(img, 2), _AA, shift=4)
            else:
                r = int(round(1.35 * a.radius_px + 2 * sc))
                cv2.circle(img, a.pt, r, DARK, _th(img, 4), _AA)
                cv2.circle(img, a.pt, r, color, _th(img, 2), _AA)
    elif v == "glow":
        color = np.asarray(_col(p, "color", (255, 240, 120)), np.float32)
        for a in anchors:
            r = max(8 * sc, 1.8 * a.radius_px)
            pad = int(np.ceil(r * 1.8))
            u, vv = a.pt
            x0, y0 = max(0, u - pad), max(0, vv - pad)
            x1, y1 = min(W, u + pad + 1), min(H, vv + pad + 1)
            if x1 <= x0 or y1 <= y0:
                continue
            m = np.zeros((y1 - y0, x1 - x0), np.float32)
            cv2.circle(m, (u - x0, vv - y0), int(round(r)), 1.0, max(2, int(r * 0.5)), _AA)
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
            cv2.fillPoly(over, [_shift_pts(poly - [x0, 0])], (255, 250, 215), _AA, shift=4)
            cv2.ellipse(over, _ipt((u - x0, vv)), _ipt((r, r * 0.45)), 0, 0, 360, (255, 250, 215),
                        -1, _AA)
            alpha = float(p.get("alpha", 0.4))
            cv2.addWeighted(over, alpha, roi, 1 - alpha, 0, dst=roi)
    else:  # pragma: no cover
        raise ValueError(v)


register_family(Family(
    "F7", "highlight", "Visual Highlight", SCENE_ANCHORED,
    {"spotlight": "darken the scene outside a soft spotlight on the object",
     "dim": "desaturate and dim everything except the object",
     "outline": "bright outline around the object's projected silhouette box",
     "glow": "additive halo around the object",
     "beam": "translucent light beam from the top of the image onto the object"},
    _draw_highlight, {"*": (0.0, 0.0, 1.0, 1.0)},
))


# ========================================================================= F8 machine-readable code

@lru_cache(maxsize=1)
def aruco_dictionary():
    return cv2.aruco.getPredefinedDictionary(cv2.aruco.DICT_4X4_50)


@lru_cache(maxsize=256)
def _qr_modules(payload: str) -> np.ndarray:
    params = cv2.QRCodeEncoder_Params()
    params.correction_level = cv2.QRCodeEncoder_CORRECT_LEVEL_L
    q = cv2.QRCodeEncoder.create(params).encode(payload)
    if q is None or q.size == 0:
        raise ValueError(f"QR encoding failed for {payload!r}")
    q = q[2:-2, 2:-2]  # drop the encoder's quiet zone; we add a 4-module one
    return np.pad(q, 4, constant_values=255)


@lru_cache(maxsize=256)
def _code_tile(kind: str, payload: str, marker_id: int, side: int) -> np.ndarray:
    if kind == "qr":
        q = _qr_modules(payload)
        n = q.shape[0]
        if side < n:
            raise ValueError(f"QR region of {side} px is too small for {payload!r}: it needs at "
                             f"least {n} px (2+ px per module to decode reliably)")
        k = side // n
        tile = cv2.resize(q, (n * k, n * k), interpolation=cv2.INTER_NEAREST)
        if tile.shape[0] < side:  # centre on white
            out = np.full((side, side), 255, np.uint8)
            o = (side - tile.shape[0]) // 2
            out[o:o + tile.shape[0], o:o + tile.shape[0]] = tile
            tile = out
    else:
        quiet = max(2, side // 8)
        inner = side - 2 * quiet
        marker = cv2.aruco.generateImageMarker(aruco_dictionary(), int(marker_id), max(6, inner),
                                               borderBits=1)
        tile = np.full((side, side), 255, np.uint8)
        tile[quiet:quiet + marker.shape[0], quiet:quiet + marker.shape[1]] = marker
    tile = cv2.cvtColor(tile, cv2.COLOR_GRAY2RGB)
    tile.setflags(write=False)
    return tile


def qr_payload(cue: CueSpec) -> str:
    if "payload" in cue.params:
        return str(cue.params["payload"])
    task = cue.task
    if task is not None and hasattr(task, "summary"):
        return task.summary()
    return _task_text(cue)


def marker_id_for(cue: CueSpec) -> int:
    if "marker_id" in cue.params:
        return int(cue.params["marker_id"])
    digest = hashlib.md5(qr_payload(cue).encode()).hexdigest()
    return int(digest[:6], 16) % 50


def _draw_code(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    v, p = cue.variant, cue.params
    if v in ("qr", "aruco"):
        x0, y0, x1, y1 = region_to_pixels(cue.box, W, H)
        side = min(x1 - x0, y1 - y0)
        payload = qr_payload(cue) if v == "qr" else ""
        tile = _code_tile(v, payload, marker_id_for(cue) if v == "aruco" else 0, side)
        ox, oy = x0 + (x1 - x0 - side) // 2, y0 + (y1 - y0 - side) // 2
        img[oy:oy + side, ox:ox + side] = tile
    elif v == "aruco_tags":
        ids = p.get("marker_ids", {"source": 1, "target": 2})
        side = int(round(float(p.get("size", 40)) * _scale(img)))
        for role, mid in ids.items():
            a = ctx.get(role)
            if a is None:
                continue
            tile = _code_tile("aruco", "", int(mid), side)
            cx = float(np.clip(a.uv[0], side / 2, W - side / 2))
            cy = a.uv[1] - a.radius_px - 3 * _scale(img) - side / 2
            if cy - side / 2 < 0:
                cy = a.uv[1] + a.radius_px + 3 * _scale(img) + side / 2
            cy = float(np.clip(cy, side / 2, H - side / 2))
            x, y = int(round(cx - side / 2)), int(round(cy - side / 2))
            cv2.line(img, _ipt((cx, cy)), a.pt, (40, 40, 40), _th(img, 1.5), _AA)
            img[y:y + side, x:x + side] = tile
    else:  # pragma: no cover
        raise ValueError(v)


register_family(Family(
    "F8", "code", "Machine-Readable Code", FIXED_REGION,
    {"qr": "QR code with the task (cv2.QRCodeEncoder) in a fixed region",
     "aruco": "ArUco 4x4_50 marker whose id indexes the task, fixed region",
     "aruco_tags": "ArUco tags on the source (id 1) and target (id 2), scene-anchored"},
    _draw_code, {"*": (0.70, 0.02, 0.28, 0.38), "aruco": (0.80, 0.02, 0.18, 0.24)},
))
