"""F2 geometric symbols, scene-anchored: arrows, paths, target regions, reticles, boxes, numbers."""
from __future__ import annotations

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (SCENE_ANCHORED, CueContext, CueSpec, Family,
                                                      register_family)
from vla_bridge.benchmarks.vifo.families.drawing import (AA, DARK, FONT, WHITE, anchors_of,
                                                         arm_badges, arrow_head, bezier,
                                                         color_param, img_scale, ipt, polyline,
                                                         shift_pts, stroke, trim)

AVOID_COLOR = (230, 30, 30)
#: variants that name the source, so they also show the acting arm beside it
_SHOWS_ARM = ("arrow", "curved_path", "dashed_path", "crosshair", "bbox", "numbered")


def _path_points(a, b, via, p) -> np.ndarray:
    """Source -> target: through the route's waypoint when the task has one, else a curve."""
    if via is None:
        return bezier(a, b, float(p.get("bend", 0.3)))
    first = bezier(a, via.uv, 0.15, 14)
    return np.concatenate([first, bezier(via.uv, b, 0.15, 14)[1:]])


def _route_marks(img, ctx: CueContext, color, th) -> None:
    """The final footprint of the source (its orientation) and a cross on the object the
    route must not pass over."""
    final = ctx.get("final")
    if final is not None and final.outline is not None and len(final.outline) >= 3:
        cv2.polylines(img, [shift_pts(final.outline)], True, DARK, th + 2, AA, shift=4)
        cv2.polylines(img, [shift_pts(final.outline)], True, color, th, AA, shift=4)
    avoid = ctx.get("avoid")
    if avoid is not None:
        r = max(5.0, 0.8 * avoid.radius_px)
        c = avoid.uv
        for d in ((1, 1), (1, -1)):
            seg = np.array([c - np.array(d) * r, c + np.array(d) * r])
            polyline(img, seg, AVOID_COLOR, th)


def _draw_geometric(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    v, p = cue.variant, cue.params
    color = color_param(p)
    th = stroke(img, p.get("thickness", 3))
    head = 9 * img_scale(img)
    if v in ("arrow", "curved_path", "dashed_path"):
        ab = anchors_of(ctx, "source", "target")
        if ab is None:
            return
        a, b = ab
        s, e, n = trim(a.uv, b.uv, a.radius_px * 1.1, b.radius_px * 0.3)
        if n < 3:
            cv2.circle(img, a.pt, max(3, int(a.radius_px)), color, th, AA)
            return
        if v == "arrow":
            pts = np.array([s, e])
        else:
            pts = _path_points(s, e, ctx.get("via"), p)
            _route_marks(img, ctx, color, th)
        tip_dir = pts[-1] - pts[-2]
        body = pts.copy()
        body[-1] = pts[-1] - tip_dir / max(np.hypot(*tip_dir), 1e-6) * head * 0.8
        polyline(img, body, color, th, dashed=(v == "dashed_path"))
        arrow_head(img, pts[-1], tip_dir, head * 1.3, color, outline=DARK)
    elif v == "target_region":
        t = ctx.get(p.get("role", "target"))
        if t is None:
            return
        overlay = img.copy()
        if t.region is not None and len(t.region) >= 3:
            poly = shift_pts(t.region)
            cv2.fillPoly(overlay, [poly], color, AA, shift=4)
            cv2.addWeighted(overlay, 0.35, img, 0.65, 0, dst=img)
            cv2.polylines(img, [poly], True, color, th, AA, shift=4)
        else:
            r = max(4.0, 1.6 * t.radius_px)
            axes = (int(round(r)), int(round(r * 0.6)))
            cv2.ellipse(overlay, t.pt, axes, 0, 0, 360, color, -1, AA)
            cv2.addWeighted(overlay, 0.35, img, 0.65, 0, dst=img)
            cv2.ellipse(img, t.pt, axes, 0, 0, 360, color, th, AA)
    elif v == "crosshair":
        a = ctx.get(p.get("role", "source"))
        if a is None:
            return
        r = max(6.0, 1.6 * a.radius_px)
        c = a.uv
        cv2.circle(img, ipt(c), int(round(r)), DARK, th + 2, AA)
        cv2.circle(img, ipt(c), int(round(r)), color, th, AA)
        for d in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            d = np.asarray(d, float)
            seg = np.array([c + d * r * 0.55, c + d * r * 1.45])
            polyline(img, seg, color, th)
    elif v == "bbox":
        a = ctx.get(p.get("role", "source"))
        if a is None:
            return
        if a.outline is not None:
            lo, hi = a.outline.min(axis=0), a.outline.max(axis=0)
        else:
            lo, hi = a.uv - a.radius_px, a.uv + a.radius_px
        m = 3 * img_scale(img)
        p0, p1 = ipt(lo - m), ipt(hi + m)
        cv2.rectangle(img, p0, p1, DARK, th + 2, AA)
        cv2.rectangle(img, p0, p1, color, th, AA)
    elif v == "numbered":
        roles = p.get("roles") or sorted(r for r in ctx.anchors if r.startswith("step")) \
            or ["source", "target"]
        for i, role in enumerate(roles, 1):
            a = ctx.get(role)
            if a is None:
                continue
            r = int(round(max(7 * img_scale(img), 0.9 * a.radius_px)))
            c = ipt(a.uv - np.array([0.0, a.radius_px + r + 2]))
            cv2.circle(img, c, r + 1, DARK, -1, AA)
            cv2.circle(img, c, r, color, -1, AA)
            sc = 0.45 * img_scale(img)
            (tw, tht), _ = cv2.getTextSize(str(i), FONT, sc, stroke(img, 1.5))
            cv2.putText(img, str(i), (c[0] - tw // 2, c[1] + tht // 2), FONT, sc, WHITE,
                        stroke(img, 1.5), AA)
            cv2.line(img, (c[0], c[1] + r), a.pt, color, 1, AA)
    else:  # pragma: no cover
        raise ValueError(v)
    if v in _SHOWS_ARM:
        arm_badges(img, ctx, p)


register_family(Family(
    "F2", "geometric", "Geometric Symbol", SCENE_ANCHORED,
    {"arrow": "straight arrow from the source to the target placement point, arm tag",
     "curved_path": "curved path source -> target through the route's waypoint, the final "
                    "footprint, a cross on the object not to pass over, arm tag",
     "dashed_path": "dashed curved_path",
     "target_region": "translucent region on the table at the target",
     "crosshair": "reticle on the source object, arm tag",
     "bbox": "box around the source object, arm tag",
     "numbered": "numbered markers (1 = source / first step, 2 = target / next step), arm tags"},
    _draw_geometric, {"*": (0.0, 0.0, 1.0, 1.0)},
))
