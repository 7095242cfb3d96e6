"""F8 machine-readable code: QR (cv2.QRCodeEncoder) and ArUco (cv2.aruco) codes OpenCV decodes.

A QR code carries the task (``qr_payload``); an ArUco 4x4_50 marker's id indexes it
(``marker_id_for``). ``code_tile`` is the tile, also used for the codes placed in the scene.
A QR module is a whole number of pixels (crisp, decodable): the one that fits the region at
the 240 px reference height, times the image's scale (``qr_layout``, ``_code_square``), so
the code keeps its size and place in the region at any resolution.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache

import cv2
import numpy as np

from vla_bridge.benchmarks.vifo.families.base import (FIXED_REGION, CueContext, CueSpec, Family,
                                                      region_to_pixels, register_family, task_text)
from vla_bridge.benchmarks.vifo.families.drawing import AA, img_scale, ipt, stroke


@lru_cache(maxsize=1)
def aruco_dictionary():
    """The ArUco dictionary of the F8 markers (4x4, 50 ids)."""
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


def qr_layout(n: int, side: int, ref_side: int = 0) -> tuple[int, int]:
    """(px per module, offset px) of an ``n``-module QR code centred in a ``side`` px square:
    the largest whole-pixel module that fits ``ref_side`` (the square at the 240 px reference;
    0: ``side``) and its centring offset, scaled to ``side``, so the code keeps its place at
    any resolution."""
    ref_side = ref_side or side
    k_ref = ref_side // n
    f = side / ref_side
    k = min(side // n, max(1, int(round(k_ref * f))))
    offset = int(round((ref_side - n * k_ref) // 2 * f))
    return k, max(0, min(offset, side - n * k))


@lru_cache(maxsize=256)
def code_tile(kind: str, payload: str, marker_id: int, side: int,
              ref_side: int = 0) -> np.ndarray:
    """Read-only RGB ``side`` x ``side`` tile: a QR code of ``payload`` (laid out by
    ``qr_layout``) or ArUco ``marker_id`` (its quiet zone: the one of ``ref_side``, scaled)."""
    if kind == "qr":
        q = _qr_modules(payload)
        n = q.shape[0]
        if side < n:
            raise ValueError(f"QR region of {side} px is too small for {payload!r}: it needs at "
                             f"least {n} px (2+ px per module to decode reliably)")
        k, o = qr_layout(n, side, ref_side)
        code = cv2.resize(q, (n * k, n * k), interpolation=cv2.INTER_NEAREST)
        tile = np.full((side, side), 255, np.uint8)  # the code on white
        tile[o:o + n * k, o:o + n * k] = code
    else:
        ref = ref_side or side
        quiet = int(round(max(2, ref // 8) * side / ref))  # the reference's, scaled
        inner = side - 2 * quiet
        marker = cv2.aruco.generateImageMarker(aruco_dictionary(), int(marker_id), max(6, inner),
                                               borderBits=1)
        tile = np.full((side, side), 255, np.uint8)
        tile[quiet:quiet + marker.shape[0], quiet:quiet + marker.shape[1]] = marker
    tile = cv2.cvtColor(tile, cv2.COLOR_GRAY2RGB)
    tile.setflags(write=False)
    return tile


def qr_payload(cue: CueSpec) -> str:
    """What a cue's QR code says: ``params['payload']``, else the task."""
    if "payload" in cue.params:
        return str(cue.params["payload"])
    task = cue.task
    if task is not None and hasattr(task, "summary"):
        return task.summary()
    return task_text(cue)


def marker_id_for(cue: CueSpec) -> int:
    """The ArUco id of a cue: ``params['marker_id']``, else a hash of the payload."""
    if "marker_id" in cue.params:
        return int(cue.params["marker_id"])
    digest = hashlib.md5(qr_payload(cue).encode()).hexdigest()
    return int(digest[:6], 16) % 50


def _code_square(box, img: np.ndarray) -> tuple[int, int, int, int]:
    """(x, y, side, reference side) of a fixed code: the largest square centred in the region,
    placed at the 240 px reference and scaled, so it keeps its place at any resolution."""
    H, W = img.shape[:2]
    f = img_scale(img)
    x0, y0, x1, y1 = region_to_pixels(box, int(round(W / f)), 240)
    ref = min(x1 - x0, y1 - y0)
    x, y = x0 + (x1 - x0 - ref) // 2, y0 + (y1 - y0 - ref) // 2
    x, y = int(round(x * f)), int(round(y * f))
    side = min(int(round(ref * f)), W - x, H - y)
    return x, y, side, ref


def _draw_code(img: np.ndarray, cue: CueSpec, ctx: CueContext) -> None:
    H, W = img.shape[:2]
    v, p = cue.variant, cue.params
    if v in ("qr", "aruco"):
        x, y, side, ref_side = _code_square(cue.box, img)
        payload = qr_payload(cue) if v == "qr" else ""
        img[y:y + side, x:x + side] = code_tile(v, payload, marker_id_for(cue) if v == "aruco"
                                                else 0, side, ref_side)
    elif v == "aruco_tags":
        ids = p.get("marker_ids", {"source": 1, "target": 2})
        side = int(round(float(p.get("size", 40)) * img_scale(img)))
        for role, mid in ids.items():
            a = ctx.get(role)
            if a is None:
                continue
            tile = code_tile("aruco", "", int(mid), side)
            cx = float(np.clip(a.uv[0], side / 2, W - side / 2))
            cy = a.uv[1] - a.radius_px - 3 * img_scale(img) - side / 2
            if cy - side / 2 < 0:
                cy = a.uv[1] + a.radius_px + 3 * img_scale(img) + side / 2
            cy = float(np.clip(cy, side / 2, H - side / 2))
            x, y = int(round(cx - side / 2)), int(round(cy - side / 2))
            cv2.line(img, ipt((cx, cy)), a.pt, (40, 40, 40), stroke(img, 1.5), AA)
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
