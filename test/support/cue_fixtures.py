"""Shared helpers of the LIBERO-VIFO cue tests (test_cues.py, test_cue_families_*.py).

Pure logic (no simulator): the Scene 1 layout seen by a synthetic overhead camera, blank
frames, hand-placed anchors and ghost layers, and small pixel checks
(``from support.cue_fixtures import ...``).
"""
import cv2
import numpy as np

from vla_bridge.perf.cues import EXAMPLE_INSTRUCTION, cam_high_model, synthetic_frame
from vla_bridge.benchmarks.vifo import Anchor2D, CueContext, GhostLayer
from vla_bridge.benchmarks.vifo.instructions.grounding import ground, layout_world
from vla_bridge.benchmarks.vifo.instructions.parser import parse

W, H = 320, 240


def cue_scene():
    """(image, world objects, camera, grounded task) of the example instruction in Scene 1."""
    objects, _ = layout_world("scene1", "default", 1)
    cam = cam_high_model()
    img = synthetic_frame(objects, cam)
    task = ground(parse(EXAMPLE_INSTRUCTION), objects)
    return img, objects, cam, task


def grey(w=W, h=H, value=120):
    return np.full((h, w, 3), value, np.uint8)


def changed(a, b):
    return np.any(a != b, axis=2)


def bbox(mask):
    ys, xs = np.nonzero(mask)
    return xs.min(), ys.min(), xs.max() + 1, ys.max() + 1


def is_magenta(img):
    r, g, b = (img[..., i].astype(int) for i in range(3))
    return (r > 180) & (b > 180) & (g < 90)


def ctx(**anchors):
    return CueContext({k: (None if v is None else Anchor2D(np.asarray(v[:2], float), v[2]))
                       for k, v in anchors.items()})


def ghost_layer(center, color=(0, 0, 255), r=12):
    g = grey()
    m = np.zeros((H, W), np.float32)
    cv2.circle(g, center, r, color, -1)
    cv2.circle(m, center, r, 1.0, -1)
    return GhostLayer(g, m)
