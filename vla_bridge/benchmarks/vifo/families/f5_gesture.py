"""F5 hand gesture (scene-anchored): a drawn hand pointing at or grasping the objects."""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (SCENE_ANCHORED, Anchor2D, CueContext, CueSpec,
                                                      Family, register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (AA, DARK, WHITE, anchors_of, arm_badges,
                                                         arrow_head, bezier, img_scale, ipt,
                                                         polyline, stroke, trim)


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
    cv2.line(img, ipt(a), ipt(b), SKIN_EDGE, max(2, int(round(w * L)) + 2 * edge_t), cv2.LINE_AA)
    cv2.line(img, ipt(a), ipt(b), SLEEVE, max(1, int(round(w * L))), cv2.LINE_AA)
    for layer, grow in ((SKIN_EDGE, edge_t), (SKIN, 0)):
        for part in parts:
            if part[0] == "line":
                _, a, b, w = part
                cv2.line(img, ipt(a), ipt(b), layer, max(1, int(round(w * L)) + 2 * grow), AA)
            elif part[0] == "circle":
                _, c, r = part
                cv2.circle(img, ipt(c), max(1, int(round(r * L)) + grow), layer, -1, AA)
            else:
                _, c, (rx, ry) = part
                axes = (max(1, int(round(rx * L)) + grow), max(1, int(round(ry * L)) + grow))
                cv2.ellipse(img, ipt(c), axes, float(np.degrees(theta)), 0, 360, layer, -1, AA)


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
    L = float(p.get("size", 46)) * img_scale(img)
    if v in ("point", "point_target"):
        a = ctx.get("source" if v == "point" else p.get("role", "target"))
        if a is None:
            return
        direction = _hand_direction(img, a, p.get("direction"))
        direction = direction / np.hypot(*direction)
        tip = a.uv - direction * (a.radius_px + 2 * img_scale(img))
        _draw_hand(img, tip, direction, L, "point")
    elif v == "grasp":
        a = ctx.get("source")
        if a is None:
            return
        direction = np.array([0.0, 1.0])  # from above, fingers down
        tip = a.uv - direction * (a.radius_px * 0.6)
        _draw_hand(img, tip, direction, L, "open")
    elif v == "point_and_move":
        ab = anchors_of(ctx, "source", "target")
        if ab is None:
            return
        a, b = ab
        s, e, n = trim(a.uv, b.uv, a.radius_px * 1.2, b.radius_px * 0.3)
        if n >= 3:
            pts = bezier(s, e, 0.35)
            polyline(img, pts[:-1], WHITE, stroke(img, 2), outline=DARK, dashed=True)
            arrow_head(img, pts[-1], pts[-1] - pts[-2], 9 * img_scale(img), WHITE, outline=DARK)
        direction = _hand_direction(img, a, p.get("direction"))
        direction = direction / np.hypot(*direction)
        tip = a.uv - direction * (a.radius_px + 2 * img_scale(img))
        _draw_hand(img, tip, direction, L, "point")
    else:  # pragma: no cover
        raise ValueError(v)
    if v != "point_target":  # the others name the source: show the arm that takes it
        arm_badges(img, ctx, p)


register_family(Family(
    "F5", "gesture", "Hand Gesture", SCENE_ANCHORED,
    {"point": "hand pointing its index finger at the source object, arm tag",
     "point_target": "hand pointing at the target placement point",
     "grasp": "open hand over the source, fingers down, as if to grasp, arm tag",
     "point_and_move": "pointing hand at the source plus a dashed motion arrow to the target, "
                       "arm tag"},
    _draw_gesture, {"*": (0.0, 0.0, 1.0, 1.0)},
))
